#!/usr/bin/env python3
"""README.md's results table, made from the recipes' RESULTS files so that it cannot go stale.

    steps/readme_results.py            # print the table
    steps/readme_results.py --write    # put it into README.md between its two markers
    steps/readme_results.py --check    # exit 1 when README.md's table is not this (tests/test_readme.py)

Each egs/<recipe>/RESULTS begins with the block of `%WER` lines steps/make_results.py wrote for the recipe's last
full run; the table has a row per recipe and test set of that block and a column per model kind, by the model's
name in the block (EXP/<model>/decode_<set>/...): the final model (LF-MMI combined with the sMBR model, or with
the CE model in egs/voicesearch), the same adapted to each speaker from its first pass, CE + sMBR, the CE model,
LF-MMI alone, Kaldi's tri3b and pocketsphinx.  Other models of the block (a clean-only CE model, rescored decodes)
are left to the RESULTS file.
"""

import argparse
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RECIPES = ("voicesearch", "voiceover", "librispeech")
BEGIN = "<!-- results table: steps/readme_results.py --write makes it from egs/*/RESULTS; do not edit by hand -->"
END = "<!-- end of the results table -->"
WER_LINE = re.compile(r"^%WER (\d+\.\d+) \[.*?\] (?:LF)?EXP/([^/]+)/(?:decode_([^/]+)|dev_sweep)/")
# (column title, how a model's name ends), in the table's order: the first that matches a model takes it.
COLUMNS = (("final model (LF-MMI + sMBR or CE)", ("_smbr_lfmmi", "_lfmmi_smbr", "_ce_lfmmi")),
           ("the same, adapted to each speaker", ("_smbr_lfmmi_adapted", "_ce_lfmmi_adapted")),
           ("CE + sMBR", ("_smbr",)),
           ("CE", ("_ce",)), ("LF-MMI alone", ("_lfmmi",)), ("Kaldi tri3b (SAT GMM)", ("kaldi_tri3b",)),
           ("pocketsphinx", ("pocketsphinx",)))
SET_NAMES = {"train_fit": "training utterances"}
SET_ORDER = ("dev", "test", "dev_noisy", "test_noisy", "train_fit")  # then any other, in the block's order


def first_block(path):
    """The `%WER` lines of the first block of a RESULTS file."""
    lines = []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if line.startswith("%WER"):
                lines.append(line)
            elif lines:
                break
    return lines


def column_of(model):
    for index, (_, endings) in enumerate(COLUMNS):
        if any(model.endswith(ending) for ending in endings):
            return index
    return None


def recipe_rows(recipe, lines):
    """{set: {column: WER}} of a block, sets in their first appearance's order."""
    rows = {}
    for line in lines:
        match = WER_LINE.match(line)
        if match is None:
            continue
        wer, model, decode_set = match.group(1), match.group(2), match.group(3) or "dev"
        column = column_of(model)
        if column is None or decode_set.endswith("_rescored"):
            continue
        rows.setdefault(decode_set, {})[column] = f"{float(wer):.1f}%"
    return rows


def table(root=ROOT):
    out = ["| recipe, set | " + " | ".join(title for title, _ in COLUMNS) + " |",
           "|---|" + "---|" * len(COLUMNS)]
    for recipe in RECIPES:
        path = os.path.join(root, "egs", recipe, "RESULTS")
        if not os.path.exists(path):
            continue
        rows = recipe_rows(recipe, first_block(path))
        ordered = [name for name in SET_ORDER if name in rows] + [name for name in rows if name not in SET_ORDER]
        for decode_set in ordered:
            cells = rows[decode_set]
            name = SET_NAMES.get(decode_set, decode_set)
            out.append(f"| {recipe} {name} | " + " | ".join(cells.get(index, "") for index in range(len(COLUMNS)))
                       + " |")
    return "\n".join(out) + "\n"


def with_table(readme, made):
    """README text with `made` between the markers."""
    if BEGIN not in readme or END not in readme:
        raise SystemExit(f"README.md has no results table markers ({BEGIN!r} ... {END!r})")
    head, rest = readme.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n{made}{END}{tail}"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--write", action="store_true", help="put the table into README.md")
    action.add_argument("--check", action="store_true", help="exit 1 when README.md's table differs")
    args = parser.parse_args()
    made = table()
    readme_path = os.path.join(ROOT, "README.md")
    if not (args.write or args.check):
        sys.stdout.write(made)
        return 0
    with open(readme_path, encoding="utf-8") as handle:
        readme = handle.read()
    updated = with_table(readme, made)
    if args.check:
        if updated != readme:
            print("README.md's results table is not the RESULTS files' (run steps/readme_results.py --write)",
                  file=sys.stderr)
            return 1
        return 0
    temporary = readme_path + ".tmp"
    with open(temporary, "w", encoding="utf-8") as out:
        out.write(updated)
    os.replace(temporary, readme_path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
