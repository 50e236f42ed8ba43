#!/usr/bin/env python3
"""How close asrkit's alignments are to the synthesisers' own timings.

  local/alignment_accuracy.py [--lexicon FILE] [--by-voice] <data-dir-split> <timings-file> <ali-dir> [<ali-dir> ...]

  e.g. local/alignment_accuracy.py data/train data/local/corpus/timings/train.jsonl exp/mono_ali0 exp/tree_ali

Over the utterances of the data dir that have truth (flite and festival; see local/timings.py)
and an alignment, per ali dir (one row per alignment pass, in the order given):
  word boundaries  the end time of every word, as the share within 1 frame and within 2 frames
                   of the truth, the mean absolute error and the bias (mean signed error);
  final words      the same share and bias for the last word of each utterance alone: its end
                   borders the final silence, where a model trained on its own alignments is most
                   free to move the boundary (a final phone that grows into the silence pass after
                   pass shows here first);
  phone boundaries the end time of every non-silence phone, in utterances whose non-silence
                   phone sequence is the truth's (engine phones mapped to CMUdict's: ax -> AH);
then the word-end bias of every pass by synthesiser voice (engine:voice): a bias that differs by
voice is not the aligner's frame timing but something the models learnt (or the truth's).

asrkit's phones are not word-position dependent, so word ends come from the phone alignment
(phone_ali and its phone_starts) and the lexicon: the non-silence phones are split into the
transcript's words, each taking one of its pronunciations (an exact split; utterances where
none exists, which an alignment through the lexicon graph never gives, are counted and left out).

Frame times follow the front end in <data-dir-split>/conf/featurize.json (asrkit-featurize writes
it; asrkit's defaults without it): output frame f stacks the analysis windows that start at
(f x subsample + k) x shift, k < stack_frames, so its centre is at f x subsample x shift +
((stack_frames - 1) x shift + window) / 2, and the boundary between frames f-1 and f lies half an
output frame before that.  With the defaults (32 ms windows every 10 ms, 4 stacked, every 3rd
kept) a boundary at frame f is at f x 30 ms + 16 ms, and 1 frame is 30 ms.

--lexicon defaults to <data-dir-split>/../local/dict/lexicon.txt; --by-voice adds a full row per
voice under each ali dir.  The last line is a summary of the last ali dir.  Exit status 1 on bad
input.
"""

import argparse
import dataclasses
import functools
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(HERE))))  # the asrkit checkout

import timings  # noqa: E402

SILENCE_PHONES = {"SIL", "SPN", "<eps>"}


class InputError(Exception):
    pass


@dataclasses.dataclass(frozen=True)
class FrameTiming:
    """Where the alignment's frames lie in the audio: the boundary before frame f is at
    f x frame_s + offset_s seconds."""

    frame_s: float
    offset_s: float

    @classmethod
    def from_feature_options(cls, options):
        """From asrkit's feature options (a FeatureConfig or its dict, as in conf/featurize.json)."""
        from asrkit.frontend.config import FeatureConfig

        config = options if isinstance(options, FeatureConfig) else FeatureConfig.from_dict(options)
        shift_s = config.frame_shift_ms / 1000.0
        frame_s = shift_s * config.subsample
        centre_s = ((config.stack_frames - 1) * shift_s + config.frame_length_ms / 1000.0) / 2.0
        return cls(frame_s, centre_s - frame_s / 2.0)

    @classmethod
    def of_data_dir(cls, data_dir):
        path = os.path.join(data_dir, "conf", "featurize.json")
        if not os.path.exists(path):
            return DEFAULT_TIMING
        try:
            with open(path, encoding="utf-8") as handle:
                return cls.from_feature_options(json.load(handle))
        except (OSError, ValueError, TypeError) as error:
            raise InputError(f"cannot read the feature options in {path}: {error}") from None

    def describe(self):
        return (f"a boundary at frame f is at f x {1000 * self.frame_s:g} ms + {1000 * self.offset_s:g} ms; "
                f"1 frame = {1000 * self.frame_s:g} ms")


def _default_timing():
    from asrkit.frontend.config import FeatureConfig

    return FrameTiming.from_feature_options(FeatureConfig())


DEFAULT_TIMING = _default_timing()
FRAME_S = DEFAULT_TIMING.frame_s


def frame_to_time(frame, timing=DEFAULT_TIMING):
    """Seconds of the boundary between frames frame-1 and frame."""
    return frame * timing.frame_s + timing.offset_s


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
    """Boundary errors (alignment minus truth, seconds) of one ali dir."""

    def __init__(self, timing=DEFAULT_TIMING):
        self.timing = timing
        self.utterances = 0
        self.no_alignment = 0
        self.no_word_split = 0
        self.word_errors = []
        self.final_errors = []  # the word_errors of utterance-final words
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
            errors = [frame_to_time(frame, self.timing) - true for frame, true in zip(ends, truth_ends)]
            self.word_errors += errors
            self.final_errors += errors[-1:]
        truth_phones = [(timings.cmu_phone(name), end) for name, end in truth["phones"]]
        truth_phones = [(phone, end) for phone, end in truth_phones if phone is not None]
        aligned = [(phone, end) for phone, _, end in segments if phone not in SILENCE_PHONES]
        if [phone for phone, _ in truth_phones] == [phone for phone, _ in aligned]:
            self.phone_utterances += 1
            self.phone_errors += [frame_to_time(frame, self.timing) - true
                                  for (_, frame), (_, true) in zip(aligned, truth_phones)]

    @staticmethod
    def statistics(errors, frame_s=FRAME_S):
        """(share within 1 frame, share within 2 frames, mean absolute error, mean signed error): shares
        in percent, errors in ms; None without errors."""
        if not errors:
            return None
        count = len(errors)
        within = [100.0 * sum(abs(e) <= frames * frame_s + 1e-9 for e in errors) / count for frames in (1, 2)]
        return (within[0], within[1], 1000.0 * sum(abs(e) for e in errors) / count,
                1000.0 * sum(errors) / count)

    @staticmethod
    def shares(errors, frame_s=FRAME_S):
        """Tally.statistics as table cells."""
        values = Tally.statistics(errors, frame_s)
        if values is None:
            return "-", "-", "-", "-"
        return f"{values[0]:.1f}%", f"{values[1]:.1f}%", f"{values[2]:.0f}", f"{values[3]:+.0f}"


def voice_of(record):
    return f"{record.get('engine')}:{record.get('voice')}"


def measure(ali_path, texts, truths, lexicon, timing=DEFAULT_TIMING):
    """{voice: Tally} of one ali dir over the utterances of `truths`."""
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
    tallies = {}
    try:
        aligned = set(ali_dir.utterance_ids())
        for utt in sorted(truths):
            if utt not in texts:
                continue
            tally = tallies.setdefault(voice_of(truths[utt]), Tally(timing))
            if utt not in aligned:
                tally.utterances += 1
                tally.no_alignment += 1
                continue
            segments = [(phone_names.get(phone, str(phone)), start, end)
                        for phone, start, end in ali_dir.phone_segments(utt)]
            tally.add(truths[utt], segments, texts[utt], lexicon)
    except AsrkitError as error:
        raise InputError(f"{ali_path}: {error}") from None
    finally:
        ali_dir.close()
    return tallies


def merged(tallies, timing=DEFAULT_TIMING):
    """One Tally of several (the voices of an ali dir)."""
    total = Tally(timing)
    for tally in tallies:
        for name in ("utterances", "no_alignment", "no_word_split", "phone_utterances"):
            setattr(total, name, getattr(total, name) + getattr(tally, name))
        total.word_errors += tally.word_errors
        total.final_errors += tally.final_errors
        total.phone_errors += tally.phone_errors
    return total


def _layout(lines):
    widths = [max(len(line[column]) for line in lines) for column in range(len(lines[0]))]
    return "\n".join("  ".join(cell.rjust(width) if column else cell.ljust(width)
                               for column, (cell, width) in enumerate(zip(line, widths))) for line in lines)


def table(rows, frame_s=FRAME_S):
    """rows: (name, Tally); one line each."""
    header = ("ali dir", "utts", "words", "word<=1f", "word<=2f", "word_mae_ms", "word_bias_ms",
              "final<=2f", "final_bias_ms",
              "phone_utts", "phones", "phone<=1f", "phone<=2f", "phone_mae_ms", "phone_bias_ms")
    lines = [header]
    for name, tally in rows:
        final = Tally.shares(tally.final_errors, frame_s)
        lines.append((name, str(tally.utterances), str(len(tally.word_errors)),
                      *Tally.shares(tally.word_errors, frame_s), final[1], final[3], str(tally.phone_utterances),
                      str(len(tally.phone_errors)), *Tally.shares(tally.phone_errors, frame_s)))
    return _layout(lines)


def bias_table(passes, voices, frame_s=FRAME_S):
    """passes: (ali dir, {voice: Tally}); a line per ali dir: word-end bias (ms) and share within 2 frames
    of each voice."""
    lines = [("word end bias ms (<=2f)", *voices)]
    for name, tallies in passes:
        cells = []
        for voice in voices:
            values = Tally.statistics(tallies[voice].word_errors, frame_s) if voice in tallies else None
            cells.append("-" if values is None else f"{values[3]:+.0f} ({values[1]:.0f}%)")
        lines.append((name, *cells))
    return _layout(lines)


def summary(name, tally, frame_s=FRAME_S):
    """The parseable last line: the last ali dir's numbers."""
    fields = {"ali_dir": name, "utterances": tally.utterances, "words": len(tally.word_errors),
              "phones": len(tally.phone_errors)}
    for kind, errors in (("word", tally.word_errors), ("phone", tally.phone_errors)):
        values = Tally.statistics(errors, frame_s)
        if values is not None:
            fields.update({f"{kind}_within_1f": f"{values[0]:.1f}", f"{kind}_within_2f": f"{values[1]:.1f}",
                           f"{kind}_mae_ms": f"{values[2]:.0f}", f"{kind}_bias_ms": f"{values[3]:+.0f}"})
        if kind == "word" and tally.final_errors:
            final = Tally.statistics(tally.final_errors, frame_s)
            fields.update({"final_within_2f": f"{final[1]:.1f}", "final_bias_ms": f"{final[3]:+.0f}"})
    return "alignment_accuracy.py summary: " + " ".join(f"{key}={value}" for key, value in fields.items())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data_dir")
    parser.add_argument("timings_file")
    parser.add_argument("ali_dirs", nargs="+")
    parser.add_argument("--by-voice", action="store_true", help="also a full row per engine:voice")
    parser.add_argument("--lexicon", help="Kaldi lexicon.txt (default: <data-dir>/../local/dict/lexicon.txt)")
    args = parser.parse_args(argv)
    name = "alignment_accuracy.py"
    try:
        texts = read_text(os.path.join(args.data_dir, "text"))
        lexicon = read_lexicon(args.lexicon or os.path.join(os.path.dirname(os.path.abspath(args.data_dir)),
                                                            "local", "dict", "lexicon.txt"))
        timing = FrameTiming.of_data_dir(args.data_dir)
        if not os.path.exists(args.timings_file):
            raise InputError(f"no timings file {args.timings_file} (local/prepare_corpus.py writes it)")
        try:
            truths = timings.read_timings(args.timings_file)
        except ValueError as error:
            raise InputError(str(error)) from None
        truths = {utt: record for utt, record in truths.items() if utt in texts}
        if not truths:
            raise InputError(f"{args.timings_file} has no truth for the utterances of {args.data_dir}")
        voices = sorted({voice_of(record) for record in truths.values()})
        passes = [(ali_path, measure(ali_path, texts, truths, lexicon, timing)) for ali_path in args.ali_dirs]
    except InputError as error:
        print(f"{name}: error: {error}", file=sys.stderr)
        return 1
    rows = []
    for ali_path, tallies in passes:
        rows.append((ali_path, merged(tallies.values(), timing)))
        if args.by_voice:
            rows += [(f"  {voice}", tallies[voice]) for voice in voices if voice in tallies]
    print(f"alignment vs synthesiser timings, {len(truths)} utterances with truth in {args.data_dir} "
          f"({timing.describe()}; mae: mean absolute error; bias: mean of alignment minus truth)")
    print(table(rows, timing.frame_s))
    print(bias_table(passes, voices, timing.frame_s))
    for ali_path, tally in rows:
        if ali_path.startswith(" "):
            continue
        if tally.no_alignment or tally.no_word_split:
            print(f"{ali_path}: {tally.no_alignment} utterances with truth not aligned, "
                  f"{tally.no_word_split} whose phones could not be split into words")
    print(summary(passes[-1][0], merged(passes[-1][1].values(), timing), timing.frame_s))
    return 0


if __name__ == "__main__":
    sys.exit(main())
