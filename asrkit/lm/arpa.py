"""ARPA back-off language model files: writing (atomically) and reading (plain or gzipped), with errors that name
the line."""

import contextlib
import gzip
import logging
import math
import os
import re

from asrkit.errors import AsrkitError
from asrkit.io.atomic import atomic_output
from asrkit.io.text_lines import utf8_lines
from asrkit.lm.model import BOS, EOS, BackoffModel


logger = logging.getLogger("asrkit.arpa")


class ArpaError(AsrkitError):
    """An ARPA file that cannot be read."""


def _sorted_grams(grams):
    """The n-grams in C (UTF-8 byte) order of their words.  Python orders strings by code point, which is the
    byte order of their UTF-8, so the tuples sort as they are (a key encoding each word took 13 s of 3.7 million
    n-grams)."""
    return sorted(grams)


def write_arpa(model, path):
    with atomic_output(path) as out:
        out.write("\n\\data\\\n")
        for k in range(1, model.order + 1):
            out.write(f"ngram {k}={len(model.ngrams[k])}\n")
        for k in range(1, model.order + 1):
            out.write(f"\n\\{k}-grams:\n")
            for gram in _sorted_grams(model.ngrams[k]):
                line = f"{model.ngrams[k][gram]:.7g}\t{' '.join(gram)}"
                if k < model.order and gram in model.backoffs:
                    line += f"\t{model.backoffs[gram]:.7g}"
                out.write(line + "\n")
        out.write("\n\\end\\\n")


GZIP_MAGIC = b"\x1f\x8b"


@contextlib.contextmanager
def open_arpa(path):
    """The ARPA file as a binary handle, decompressed when it is gzipped (known by its first bytes, not its name:
    LMs are shipped as .arpa.gz and often stored unpacked under the same name)."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise ArpaError(f"ARPA file {path} does not exist")
    with open(path, "rb") as probe:
        gzipped = probe.read(2) == GZIP_MAGIC
    with (gzip.open(path, "rb") if gzipped else open(path, "rb")) as handle:
        try:
            yield handle
        except (OSError, EOFError) as error:
            # A damaged or truncated .gz surfaces while reading, as gzip.BadGzipFile or EOFError.
            raise ArpaError(f"{path}: cannot be decompressed ({error})") from None


def arpa_lines(handle, path):
    """(line number, stripped line) of an open ARPA file, each line decoded as UTF-8 or named in an ArpaError."""
    for line_number, raw in enumerate(utf8_lines(handle, path, ArpaError), 1):
        yield line_number, raw.strip()


def arpa_words(path):
    """The words of the ARPA file's unigram section, read without the rest of the model."""
    words, in_unigrams = [], False
    with open_arpa(path) as handle:
        for line_number, line in arpa_lines(handle, os.fspath(path)):
            if line == "\\1-grams:":
                in_unigrams = True
            elif in_unigrams and line.startswith("\\"):
                break
            elif in_unigrams and line:
                fields = line.split()
                if len(fields) not in (2, 3):
                    raise ArpaError(f"{path}:{line_number}: expected 'log10p word [backoff]', got {line!r}")
                words.append(fields[1])
    return words


def require_sentence_marks(unigram_words, path):
    """An LM's 1-grams (a set of words) hold <s> and </s>, which Kaldi's arpa2fst needs (it aborts without them)."""
    missing = [mark for mark in (BOS, EOS) if mark not in unigram_words]
    if missing:
        raise ArpaError(f"{path}: no {' or '.join(missing)} among the 1-grams; an ARPA LM needs both (add e.g. "
                        f"'-99 {BOS}' and a {EOS} 1-gram, or write it with asrkit's make_lm)")


def _ngram_line(line, section, path, line_number):
    """(log10 probability, words, backoff or None) of an n-gram line of the `section`-grams.  The log-probability
    must be a finite number <= 0: NaN would reach every rescored cost, a positive one is no probability, and
    -inf (a zero) makes Kaldi's arpa2fst abort without a message (SRILM writes -99 for an n-gram that never
    occurs); a backoff weight must be finite."""
    fields = line.split()
    try:
        if len(fields) == section + 1:
            prob, words, backoff = float(fields[0]), tuple(fields[1:]), None
        elif len(fields) == section + 2:
            prob, words, backoff = float(fields[0]), tuple(fields[1:-1]), float(fields[-1])
        else:
            raise ValueError
    except ValueError:
        raise ArpaError(f"{path}:{line_number}: expected 'log10p {section} words [backoff]', got {line!r}") from None
    if not math.isfinite(prob) or prob > 0 or backoff is not None and not math.isfinite(backoff):
        raise ArpaError(f"{path}:{line_number}: expected 'log10p {section} words [backoff]' with log10p a finite "
                        f"number <= 0 (-99 for an n-gram that never occurs) and a finite backoff, got {line!r}")
    return prob, words, backoff


def read_arpa(path):
    """The BackoffModel of an ARPA file.  What stands before its \\data\\ line is skipped, as Kaldi's arpa2fst
    skips it (pocketsphinx_lm and some toolkits write a preamble there); no \\data\\ at all is an error."""
    path = os.fspath(path)
    declared, ngrams, backoffs = {}, [None], {}
    section, preamble = None, 0
    with open_arpa(path) as handle:
        for line_number, line in arpa_lines(handle, path):
            if not line:
                continue
            if line == "\\data\\":
                section = "data"
                continue
            if section is None:
                preamble += 1
                continue
            if line == "\\end\\":
                section = "end"
                break
            header = re.fullmatch(r"\\(\d+)-grams:", line)
            if header:
                section = int(header.group(1))
                if section != len(ngrams):
                    raise ArpaError(f"{path}:{line_number}: {line} out of order")
                ngrams.append({})
                continue
            if section == "data":
                match = re.fullmatch(r"ngram\s+(\d+)\s*=\s*(\d+)", line)
                if not match:
                    raise ArpaError(f"{path}:{line_number}: expected 'ngram N=COUNT', got {line!r}")
                declared[int(match.group(1))] = int(match.group(2))
                continue
            if not isinstance(section, int):
                raise ArpaError(f"{path}:{line_number}: unexpected line {line!r} outside an n-gram section")
            prob, words, backoff = _ngram_line(line, section, path, line_number)
            if words in ngrams[section]:  # a dict would keep the last one silently
                raise ArpaError(f"{path}:{line_number}: the {section}-gram {' '.join(words)!r} appears a second time")
            ngrams[section][words] = prob
            if backoff is not None:
                backoffs[words] = backoff
    if section is None:
        raise ArpaError(f"{path}: no \\data\\ line: not an ARPA LM")
    if preamble:
        logger.info("%s: skipped %d lines before \\data\\", path, preamble)
    if section != "end":
        raise ArpaError(f"{path}: no \\end\\ line; the file is truncated")
    order = len(ngrams) - 1
    for k, count in declared.items():
        if k > order or len(ngrams[k]) != count:
            found = len(ngrams[k]) if k <= order else 0
            raise ArpaError(f"{path}: header declares {count} {k}-grams, the file has {found}")
    if order < 1:
        raise ArpaError(f"{path}: no n-grams")
    return BackoffModel(order, ngrams, backoffs)
