#!/usr/bin/env python3
"""How close asrkit's alignments are to the synthesisers' own timings.

  local/alignment_accuracy.py [--lexicon FILE] [--by-voice] <data-dir-split> <timings-file> <ali-dir> [<ali-dir> ...]

  e.g. local/alignment_accuracy.py data/train data/local/corpus/timings/train.jsonl exp/mono_ali0 exp/tree_ali

Over the utterances of the data dir that have truth (flite and festival; see local/timings.py)
and an alignment, per ali dir:
  word boundaries  the end time of every word, as the share within 1 frame (30 ms) and within
                   2 frames of the truth, and the mean absolute error;
  phone boundaries the end time of every non-silence phone, in utterances whose non-silence
                   phone sequence is the truth's (engine phones mapped to CMUdict's: ax -> AH).

asrkit's phones are not word-position dependent, so word ends come from the phone alignment
(phone_ali and its phone_starts) and the lexicon: the non-silence phones are split into the
transcript's words, each taking one of its pronunciations (an exact split; utterances where
none exists, which an alignment through the lexicon graph never gives, are counted and left out).
A boundary at frame f is at f x 30 ms + 12.5 ms: output frame f stacks the 10 ms analysis
frames 3f..3f+3 (25 ms windows), so frames f-1 and f meet half-way between their centres.

--lexicon defaults to <data-dir-split>/../local/dict/lexicon.txt; --by-voice adds a row per
synthesiser voice (engine:voice) under each ali dir.  Exit status 1 on bad input.
"""

import argparse
import functools
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(HERE))))  # the asrkit checkout

import timings  # noqa: E402

FRAME_S = 0.030
BOUNDARY_OFFSET_S = 0.0125
SILENCE_PHONES = {"SIL", "SPN", "<eps>"}


class InputError(Exception):
    pass


def frame_to_time(frame):
    return frame * FRAME_S + BOUNDARY_OFFSET_S


def read_lexicon(path):
    """{WORD: [(phone, ...), ...]} from a Kaldi lexicon.txt."""
    lexicon = {}
    try:
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                fields = line.split()
                if len(fields) >= 2:
                    lexicon.setdefault(fields[0], []).append(tuple(fields[1:]))
    except OSError as error:
        raise InputError(f"cannot read the lexicon {path}: {error.strerror}") from None
    if not lexicon:
        raise InputError(f"{path} holds no pronunciations")
    return lexicon


def read_text(path):
    """{utt: [WORD, ...]} from a Kaldi text file."""
    texts = {}
    try:
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                fields = line.split()
                if fields:
                    texts[fields[0]] = fields[1:]
    except OSError as error:
        raise InputError(f"cannot read {path}: {error.strerror} (is the first argument a data dir?)") from None
    return texts


def word_end_frames(phone_segments, words, lexicon):
    """End frames of the words, from [(phone name, first frame, end frame)] of an alignment, or None
    when the non-silence phones cannot be split into the words' pronunciations."""
    spoken = [(phone, end) for phone, _, end in phone_segments if phone not in SILENCE_PHONES]
    names = tuple(phone for phone, _ in spoken)

    @functools.lru_cache(maxsize=None)
    def split_from(word_index, phone_index):
        # The phone indexes where words word_index.. end, or None.
        if word_index == len(words):
            return () if phone_index == len(names) else None
        for variant in lexicon.get(words[word_index], ()):
            end = phone_index + len(variant)
            if names[phone_index:end] == variant:
                rest = split_from(word_index + 1, end)
                if rest is not None:
                    return (end - 1,) + rest
        return None

    ends = split_from(0, 0)
    split_from.cache_clear()
    return None if ends is None else [spoken[index][1] for index in ends]


class Tally:
    """Boundary errors of one ali dir."""

    def __init__(self):
        self.utterances = 0
        self.no_alignment = 0
        self.no_word_split = 0
        self.word_errors = []
        self.phone_utterances = 0
        self.phone_errors = []

    def add(self, truth, segments, words, lexicon):
        self.utterances += 1
        ends = word_end_frames(segments, words, lexicon)
        if ends is None:
            self.no_word_split += 1
        else:
            truth_ends = [end for _, end in truth["words"]]
            if len(truth_ends) != len(ends):
                raise InputError(f"{truth['utt']}: the truth has {len(truth_ends)} words, the text {len(ends)}")
            self.word_errors += [frame_to_time(frame) - true for frame, true in zip(ends, truth_ends)]
        truth_phones = [(timings.cmu_phone(name), end) for name, end in truth["phones"]]
        truth_phones = [(phone, end) for phone, end in truth_phones if phone is not None]
        aligned = [(phone, end) for phone, _, end in segments if phone not in SILENCE_PHONES]
        if [phone for phone, _ in truth_phones] == [phone for phone, _ in aligned]:
            self.phone_utterances += 1
            self.phone_errors += [frame_to_time(frame) - true for (_, frame), (_, true) in zip(aligned, truth_phones)]

    @staticmethod
    def shares(errors):
        """Share within 1 and 2 frames, mean absolute error and mean signed error (ms), as table cells."""
        if not errors:
            return "-", "-", "-", "-"
        count = len(errors)
        within = [100.0 * sum(abs(e) <= frames * FRAME_S + 1e-9 for e in errors) / count for frames in (1, 2)]
        mean_ms = 1000.0 * sum(abs(e) for e in errors) / count
        # A bias far from 0 points at a constant offset (frame timing, label delay), not at the aligner.
        bias_ms = 1000.0 * sum(errors) / count
        return f"{within[0]:.1f}%", f"{within[1]:.1f}%", f"{mean_ms:.0f}", f"{bias_ms:+.0f}"


def measure(ali_path, texts, truths, lexicon):
    from asrkit.align.ali_dir import AliDir
    from asrkit.errors import AsrkitError

    try:
        ali_dir = AliDir(ali_path)
    except AsrkitError as error:
        raise InputError(str(error)) from None
    phone_names = {}
    with open(os.path.join(ali_path, "phones.txt"), encoding="utf-8") as handle:
        for line in handle:
            fields = line.split()
            if len(fields) == 2:
                phone_names[int(fields[1])] = fields[0]
    tally = Tally()
    try:
        aligned = set(ali_dir.utterance_ids())
        for utt in sorted(truths):
            if utt not in texts:
                continue
            if utt not in aligned:
                tally.no_alignment += 1
                continue
            segments = [(phone_names.get(phone, str(phone)), start, end)
                        for phone, start, end in ali_dir.phone_segments(utt)]
            tally.add(truths[utt], segments, texts[utt], lexicon)
    except AsrkitError as error:
        raise InputError(f"{ali_path}: {error}") from None
    finally:
        ali_dir.close()
    return tally


def table(rows):
    header = ("ali dir", "utts", "words", "word<=1f", "word<=2f", "word_mae_ms", "word_bias_ms",
              "phone_utts", "phones", "phone<=1f", "phone<=2f", "phone_mae_ms", "phone_bias_ms")
    lines = [header]
    for name, tally in rows:
        lines.append((name, str(tally.utterances), str(len(tally.word_errors)), *Tally.shares(tally.word_errors),
                      str(tally.phone_utterances), str(len(tally.phone_errors)), *Tally.shares(tally.phone_errors)))
    widths = [max(len(line[column]) for line in lines) for column in range(len(header))]
    return "\n".join("  ".join(cell.rjust(width) if column else cell.ljust(width)
                               for column, (cell, width) in enumerate(zip(line, widths))) for line in lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data_dir")
    parser.add_argument("timings_file")
    parser.add_argument("ali_dirs", nargs="+")
    parser.add_argument("--by-voice", action="store_true", help="also a row per engine:voice")
    parser.add_argument("--lexicon", help="Kaldi lexicon.txt (default: <data-dir>/../local/dict/lexicon.txt)")
    args = parser.parse_args(argv)
    name = "alignment_accuracy.py"
    try:
        texts = read_text(os.path.join(args.data_dir, "text"))
        lexicon = read_lexicon(args.lexicon or os.path.join(os.path.dirname(os.path.abspath(args.data_dir)),
                                                            "local", "dict", "lexicon.txt"))
        if not os.path.exists(args.timings_file):
            raise InputError(f"no timings file {args.timings_file} (local/prepare_corpus.py writes it)")
        try:
            truths = timings.read_timings(args.timings_file)
        except ValueError as error:
            raise InputError(str(error)) from None
        truths = {utt: record for utt, record in truths.items() if utt in texts}
        if not truths:
            raise InputError(f"{args.timings_file} has no truth for the utterances of {args.data_dir}")
        rows = []
        for ali_path in args.ali_dirs:
            rows.append((ali_path, measure(ali_path, texts, truths, lexicon)))
            if args.by_voice:
                voices = sorted({f"{record.get('engine')}:{record.get('voice')}" for record in truths.values()})
                for voice in voices:
                    subset = {utt: record for utt, record in truths.items()
                              if f"{record.get('engine')}:{record.get('voice')}" == voice}
                    rows.append((f"  {voice}", measure(ali_path, texts, subset, lexicon)))
    except InputError as error:
        print(f"{name}: error: {error}", file=sys.stderr)
        return 1
    print(f"alignment vs synthesiser timings, {len(truths)} utterances with truth in {args.data_dir} "
          f"(boundaries within 1 frame = 30 ms, 2 frames = 60 ms; mae: mean absolute error; "
          f"bias: mean of alignment minus truth)")
    print(table(rows))
    for ali_path, tally in rows:
        if ali_path.startswith(" "):
            continue
        if tally.no_alignment or tally.no_word_split:
            print(f"{ali_path}: {tally.no_alignment} utterances with truth not aligned, "
                  f"{tally.no_word_split} whose phones could not be split into words")
    return 0


if __name__ == "__main__":
    sys.exit(main())
