"""Papers are cited by the short names of docs/references.md, each of which is defined there; the numbers of the
papers' files beside the project mean nothing to a reader of the repository and appear nowhere."""

import os
import re
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CITATION = re.compile(r"\[([A-Z][A-Za-z]+[0-9]{4}(?:-[0-9a-z]+)?)\]")
NUMBERING = re.compile("seeds? 00[0-9]", re.IGNORECASE)


def tracked_text_files():
    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    for path in listed.split():
        full = os.path.join(ROOT, path)
        if path == "tests/test_references.py" or not os.path.isfile(full):
            continue
        try:
            with open(full, encoding="utf-8") as handle:
                yield path, handle.read()
        except UnicodeDecodeError:
            continue


def defined_short_names():
    with open(os.path.join(ROOT, "docs", "references.md"), encoding="utf-8") as handle:
        return {match.group(1) for match in re.finditer(r"^\| ([A-Za-z]+[0-9]{4}(?:-[0-9a-z]+)?) \|", handle.read(),
                                                       re.MULTILINE)}


def test_every_cited_paper_is_in_the_references():
    defined = defined_short_names()
    assert {"Variani2017", "McDermott2014", "Mohamed2015", "Kim2019"} <= defined
    undefined = sorted({f"{path}: [{name}]" for path, text in tracked_text_files()
                        for name in CITATION.findall(text) if name not in defined})
    assert not undefined, "\n".join(undefined)


def test_the_source_files_numbering_is_never_cited():
    cited = [f"{path}: {match.group(0)}" for path, text in tracked_text_files() for match in NUMBERING.finditer(text)]
    assert not cited, "\n".join(cited[:20])


def test_the_checks_see_a_bad_citation():
    assert CITATION.findall("as in [Nobody1999]'s paper") == ["Nobody1999"]
    assert NUMBERING.search("Seed " + "003's jitter")  # written in two pieces, so that this file passes too
