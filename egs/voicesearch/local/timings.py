"""Truth timings of synthesised utterances: the phone and word end times the synthesisers report.

flite prints its segments with -psdur (`pau:0.220 hh:0.295 ...`, end times in seconds);
festival reports its Segment relation and the Word relation's word_end after synthesis.
espeak-ng gives nothing usable, so its utterances have no truth.

Times are of the audio as written: the speaker's speed factor resamples the engine's audio,
which divides every time by that factor (the same fraction synthesis.to_target_rate uses).
Checked against the audio of the small corpus (energy onset of utterances that start with a
vowel, offset of those that end with one; medians per speaker, speeds 0.90-1.08): flite's
onsets are 1-6 ms after its times, festival's 3-18 ms (HTS 15-18), offsets -24..+8 ms, with no
trend with the speed.  flite's diphone voice (kal16) stops about 100 ms into the final pau,
so its audio is shorter than the last end time; no speech time is affected.
The engines' phone names are CMUdict's in lower case, with `pau` for silence and `ax` for
the schwa CMUdict writes AH; cmu_phone() maps them.

Per utterance, the truth is kept in a sidecar next to its audio (<utt>.timing.json), written
before the audio, so that a resumed run finds the truth of every file it reuses;
prepare_corpus.py gathers them into <data>/local/corpus/timings/<split>.jsonl, one JSON object
a line:
  {"utt": ID, "engine": "flite"|"festival", "voice": VOICE,
   "phones": [[engine phone, end s], ...],          in order, silences (pau) included
   "words": [[WORD, end s], ...],                   the transcript's words, upper case
   "word_source": "engine"|"phones"}                festival's Word relation, or derived from
                                                    the phones (word_ends_from_truth_phones)
"""

import json
import os
import re
from fractions import Fraction

from asrkit.io.atomic import atomic_output

SEGMENT = re.compile(r"(\S+):(-?\d+(?:\.\d+)?)")
TRUTH_SILENCES = {"pau", "h#", "sil"}
# Where the engines' phone names differ from CMUdict's (apart from case).
ENGINE_TO_CMU = {"ax": "AH"}
FESTIVAL_SEGMENTS_MARK = "ASRKIT-SEGMENTS"
FESTIVAL_WORDS_MARK = "ASRKIT-WORDS"


class TimingError(Exception):
    """An engine's output held no usable timings; synthesis goes on without them (counted)."""


def cmu_phone(engine_phone):
    """CMUdict's name of an engine phone, or None for silence."""
    if engine_phone.lower() in TRUTH_SILENCES:
        return None
    return ENGINE_TO_CMU.get(engine_phone.lower(), engine_phone.upper())


def parse_segments(text):
    """[(name, end s)] from `name:end name:end ...`; end times must not decrease."""
    segments = [(name, float(end)) for name, end in SEGMENT.findall(text)]
    if not segments:
        raise TimingError("no `phone:end` segments in the engine's output")
    for (_, previous), (name, end) in zip(segments, segments[1:]):
        if end < previous:
            raise TimingError(f"segment end times decrease at {name}:{end}")
    return segments


def parse_flite_output(output):
    """flite -psdur's segments; anything else it prints (warnings) is on other lines."""
    lines = [line for line in output.splitlines() if SEGMENT.search(line)]
    if not lines:
        raise TimingError("flite printed no segments (was -psdur given?)")
    return parse_segments(lines[-1])


def festival_timing_expression(utterance_variable):
    """Scheme that prints the segments and words of a synthesised utterance on two marked lines."""
    return (f'(format t "\\n{FESTIVAL_SEGMENTS_MARK}") '
            f'(mapcar (lambda (s) (format t " %s:%f" (item.name s) (item.feat s "end"))) '
            f"(utt.relation.items {utterance_variable} 'Segment)) "
            f'(format t "\\n{FESTIVAL_WORDS_MARK}") '
            f'(mapcar (lambda (w) (format t " %s:%f" (item.name w) (item.feat w "word_end"))) '
            f"(utt.relation.items {utterance_variable} 'Word)) "
            '(format t "\\n")')


def parse_festival_output(output):
    """(segments, words) from the lines festival_timing_expression prints."""
    segments = words = None
    for line in output.splitlines():
        if line.startswith(FESTIVAL_SEGMENTS_MARK):
            segments = parse_segments(line[len(FESTIVAL_SEGMENTS_MARK):])
        elif line.startswith(FESTIVAL_WORDS_MARK):
            words = parse_segments(line[len(FESTIVAL_WORDS_MARK):])
    if segments is None or words is None:
        raise TimingError("festival printed no segment or word timings")
    return segments, words


def speed_corrected(segments, speed):
    """End times of the audio after the speed resampling: divided by the speed fraction."""
    factor = Fraction(speed).limit_denominator(100)
    return [(name, round(end * factor.denominator / factor.numerator, 4)) for name, end in segments]


def sidecar_path(audio_path):
    return os.path.splitext(audio_path)[0] + ".timing.json"


def edit_alignment(reference, hypothesis):
    """Levenshtein alignment: for each reference position, the last hypothesis index aligned at or
    before it (-1 when none yet).  Substitutions count as aligned, so a word keeps the phones the
    engine said for it even where they differ from the dictionary."""
    rows, columns = len(reference) + 1, len(hypothesis) + 1
    cost = [[0] * columns for _ in range(rows)]
    for i in range(rows):
        cost[i][0] = i
    for j in range(columns):
        cost[0][j] = j
    for i in range(1, rows):
        for j in range(1, columns):
            cost[i][j] = min(cost[i - 1][j - 1] + (reference[i - 1] != hypothesis[j - 1]),
                             cost[i - 1][j] + 1, cost[i][j - 1] + 1)
    # Trace back; last_hypothesis[i] = the largest hypothesis index consumed by reference[:i+1].
    last_hypothesis = [-1] * len(reference)
    i, j = len(reference), len(hypothesis)
    while i > 0:
        if j > 0 and cost[i][j] == cost[i - 1][j - 1] + (reference[i - 1] != hypothesis[j - 1]):
            last_hypothesis[i - 1] = max(last_hypothesis[i - 1], j - 1)
            i, j = i - 1, j - 1
        elif j > 0 and cost[i][j] == cost[i][j - 1] + 1:
            # A phone the engine inserted after reference phone i-1 counts as part of it.
            last_hypothesis[i - 1] = max(last_hypothesis[i - 1], j - 1)
            j -= 1
        else:
            i -= 1
    # A deleted reference phone ends where the phone before it ended.
    for index in range(1, len(last_hypothesis)):
        last_hypothesis[index] = max(last_hypothesis[index], last_hypothesis[index - 1])
    return last_hypothesis


def word_ends_from_truth_phones(segments, words, pronunciations):
    """[(WORD, end s)] for an engine that reports only phones (flite).

    The engine's non-silence phones are aligned by edit distance to the words' dictionary
    pronunciations (the first variant); a word ends where the last engine phone aligned to it
    ends.  Engines use their own lexicon, letter-to-sound rules and post-lexical rules, so the
    sequences can differ; the alignment tolerates that.
    """
    spoken = [(cmu_phone(name), end) for name, end in segments if cmu_phone(name) is not None]
    if not spoken:
        raise TimingError("no non-silence phones")
    reference, last_phone_of_word = [], []
    for word in words:
        variants = pronunciations.get(word) or pronunciations.get(word.upper())
        if not variants:
            raise TimingError(f"no pronunciation for {word}")
        reference.extend(variants[0])
        last_phone_of_word.append(len(reference) - 1)
    aligned = edit_alignment(reference, [phone for phone, _ in spoken])
    ends = []
    for word, last in zip(words, last_phone_of_word):
        index = aligned[last]
        ends.append((word, spoken[index][1] if index >= 0 else 0.0))
    return ends


def utterance_truth(engine, output, speed):
    """The sidecar's content for one utterance from the engine's output, times speed corrected."""
    if engine == "flite":
        return {"engine": engine, "phones": speed_corrected(parse_flite_output(output), speed)}
    if engine == "festival":
        segments, words = parse_festival_output(output)
        return {"engine": engine, "phones": speed_corrected(segments, speed),
                "words": speed_corrected(words, speed)}
    raise TimingError(f"{engine} reports no timings")


def truth_record(utterance_id, voice, text, truth, pronunciations):
    """The timings/<split>.jsonl object of an utterance, with word ends from the engine when its words
    are the transcript's, else from its phones."""
    words = text.split()
    record = {"utt": utterance_id, "engine": truth["engine"], "voice": voice, "phones": truth["phones"]}
    engine_words = truth.get("words")
    if engine_words and [word.upper() for word, _ in engine_words] == words:
        record["words"] = [[word, end] for word, (_, end) in zip(words, engine_words)]
        record["word_source"] = "engine"
    else:
        record["words"] = [list(pair) for pair in word_ends_from_truth_phones(truth["phones"], words, pronunciations)]
        record["word_source"] = "phones"
    return record


def write_sidecar(path, truth):
    with atomic_output(path) as handle:
        json.dump(truth, handle)
        handle.write("\n")


def read_sidecar(path):
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def read_timings(path):
    """{utt: record} from a timings/<split>.jsonl file."""
    records = {}
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                records[record["utt"]] = record
            except (ValueError, KeyError, TypeError):
                raise ValueError(f"{path}:{number}: not a timings record (JSON with utt, phones, words)") from None
    return records
