"""egs/voicesearch truth timings (local/timings.py) and alignment accuracy (local/alignment_accuracy.py)
on small planted examples; the flite and festival parsers also on real calls (skipped without them)."""

import json
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LOCAL = os.path.join(ROOT, "egs", "voicesearch", "local")
if LOCAL not in sys.path:
    sys.path.insert(0, LOCAL)

import alignment_accuracy  # noqa: E402  (egs/voicesearch/local)
import speakers as speaker_list  # noqa: E402
import synthesis  # noqa: E402
import timings  # noqa: E402

LEXICON = {"HELLO": [("HH", "AH", "L", "OW"), ("HH", "EH", "L", "OW")], "WORLD": [("W", "ER", "L", "D")],
           "A": [("AH",), ("EY",)], "AN": [("AE", "N"), ("AH", "N")]}


def test_flite_and_festival_phones_map_to_cmudict():
    assert timings.cmu_phone("ax") == "AH"
    assert timings.cmu_phone("hh") == "HH"
    assert timings.cmu_phone("pau") is None


def test_times_are_divided_by_the_speed_factor():
    assert timings.speed_corrected([("pau", 0.2), ("hh", 1.1)], 1.1) == [("pau", 0.1818), ("hh", 1.0)]
    assert timings.speed_corrected([("hh", 0.5)], 0.92) == [("hh", 0.5435)]


def test_parsers_reject_output_without_segments():
    with pytest.raises(timings.TimingError):
        timings.parse_flite_output("Warning: something\n")
    with pytest.raises(timings.TimingError):
        timings.parse_flite_output("pau:0.5 hh:0.4\n")
    with pytest.raises(timings.TimingError):
        timings.parse_festival_output("ASRKIT-SEGMENTS pau:0.2\n")


def test_flite_word_ends_follow_the_dictionary_despite_differences():
    # flite says "hello" with ax and adds a phone in "world"; the ends still land on the right phones.
    segments = [("pau", 0.2), ("hh", 0.29), ("ax", 0.34), ("l", 0.42), ("ow", 0.59), ("w", 0.66), ("er", 0.8),
                ("r", 0.83), ("l", 0.89), ("d", 0.97), ("pau", 1.19)]
    assert timings.word_ends_from_truth_phones(segments, ["HELLO", "WORLD"], LEXICON) == [
        ("HELLO", 0.59), ("WORLD", 0.97)]
    # A word whose last phone the engine dropped ends where its previous phone ended.
    dropped = [("pau", 0.2), ("hh", 0.29), ("ax", 0.34), ("l", 0.42), ("w", 0.66), ("er", 0.8), ("l", 0.89),
               ("d", 0.97)]
    assert timings.word_ends_from_truth_phones(dropped, ["HELLO", "WORLD"], LEXICON) == [
        ("HELLO", 0.42), ("WORLD", 0.97)]


def test_truth_record_prefers_the_engine_words_when_they_are_the_transcript():
    truth = {"engine": "festival", "phones": [["pau", 0.2], ["ax", 0.3], ["pau", 0.5]], "words": [["a", 0.3]]}
    record = timings.truth_record("u1", "kal_diphone", "A", truth, LEXICON)
    assert record["words"] == [["A", 0.3]] and record["word_source"] == "engine"
    # Festival expanded or changed the words: fall back to the phones.
    truth["words"] = [["ay", 0.3]]
    record = timings.truth_record("u1", "kal_diphone", "A", truth, LEXICON)
    assert record["words"] == [["A", 0.3]] and record["word_source"] == "phones"


def test_word_end_frames_split_the_phones_into_pronunciations():
    segments = [("SIL", 0, 5), ("HH", 5, 7), ("EH", 7, 9), ("L", 9, 11), ("OW", 11, 15), ("SIL", 15, 18),
                ("AH", 18, 20), ("N", 20, 22), ("W", 22, 24), ("ER", 24, 27), ("L", 27, 29), ("D", 29, 31),
                ("SIL", 31, 35)]
    # "A N" could start "AN" or be A + something: only the full split through the lexicon counts.
    assert alignment_accuracy.word_end_frames(segments, ["HELLO", "AN", "WORLD"], LEXICON) == [15, 22, 31]
    assert alignment_accuracy.word_end_frames(segments, ["HELLO", "A", "WORLD"], LEXICON) is None


def test_accuracy_counts_boundaries_within_one_and_two_frames():
    def time(frame):
        return alignment_accuracy.frame_to_time(frame)

    segments = [("SIL", 0, 5), ("HH", 5, 7), ("AH", 7, 9), ("L", 9, 11), ("OW", 11, 15), ("W", 15, 17),
                ("ER", 17, 19), ("L", 19, 21), ("D", 21, 25), ("SIL", 25, 30)]
    # Word ends off by 0.01 s (within 1 frame) and 0.05 s (within 2 frames only).
    truth = {"utt": "u1", "words": [["HELLO", time(15) - 0.01], ["WORLD", time(25) + 0.05]],
             "phones": [["pau", 0.1], ["hh", time(7)], ["ax", time(9)], ["l", time(11)], ["ow", time(15) - 0.01],
                        ["w", time(17)], ["er", time(19) + 0.1], ["l", time(21)], ["d", time(25) + 0.05],
                        ["pau", 1.0]]}
    tally = alignment_accuracy.Tally()
    tally.add(truth, segments, ["HELLO", "WORLD"], LEXICON)
    assert tally.utterances == 1 and tally.phone_utterances == 1 and len(tally.phone_errors) == 8
    assert alignment_accuracy.Tally.shares(tally.word_errors) == ("50.0%", "100.0%", "30", "-20")
    assert alignment_accuracy.Tally.shares(tally.phone_errors)[:2] == ("75.0%", "87.5%")
    # Another phone sequence than the truth's: word boundaries still count, phone boundaries do not.
    other = dict(truth, utt="u2", phones=[["hh", 0.3], ["eh", 0.4]])
    tally.add(other, segments, ["HELLO", "WORLD"], LEXICON)
    assert tally.utterances == 2 and tally.phone_utterances == 1 and len(tally.word_errors) == 4


def test_bad_input_fails_with_a_message(tmp_path, capsys):
    split = tmp_path / "train"
    split.mkdir()
    assert alignment_accuracy.main([str(split), str(tmp_path / "t.jsonl"), str(tmp_path / "ali")]) == 1
    assert "cannot read" in capsys.readouterr().err
    (split / "text").write_text("u1 HELLO\n")
    (tmp_path / "lexicon.txt").write_text("HELLO HH AH L OW\n")
    lexicon = ["--lexicon", str(tmp_path / "lexicon.txt")]
    assert alignment_accuracy.main([*lexicon, str(split), str(tmp_path / "t.jsonl"), str(tmp_path / "ali")]) == 1
    assert "no timings file" in capsys.readouterr().err
    (tmp_path / "t.jsonl").write_text(json.dumps({"utt": "u1", "phones": [["hh", 0.1]], "words": [["HELLO", 0.1]]})
                                      + "\n")
    assert alignment_accuracy.main([*lexicon, str(split), str(tmp_path / "t.jsonl"), str(tmp_path / "ali")]) == 1
    assert "not an ali dir" in capsys.readouterr().err


@pytest.mark.skipif(shutil.which("flite") is None, reason="flite is not installed")
def test_flite_timings_from_a_real_call(tmp_path):
    # The command synthesis runs, so that the flags that make flite print its timings are checked too.
    speaker = speaker_list.Speaker("fl-kal16-01", "train", "flite", "kal16", 1.0, None, 1.0, 1.0)
    output = synthesis.run_engine_command(synthesis.flite_command(speaker, "hello world", str(tmp_path / "a.wav")), 60)
    segments = timings.parse_flite_output(output)
    assert [name for name, _ in segments] == ["pau", "hh", "ax", "l", "ow", "w", "er", "l", "d", "pau"]
    assert 0 < segments[0][1] < segments[-1][1] < 3
    ends = timings.word_ends_from_truth_phones(segments, ["HELLO", "WORLD"], LEXICON)
    assert ends == [("HELLO", segments[4][1]), ("WORLD", segments[8][1])]


@pytest.mark.skipif(shutil.which("festival") is None, reason="festival is not installed")
def test_festival_timings_from_a_real_call(tmp_path):
    script = ("(voice_kal_diphone)\n(set! u (utt.synth (Utterance Text \"hello world\")))\n"
              f"{timings.festival_timing_expression('u')}\n")
    output = subprocess.run(["festival", "--pipe"], input=script, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, timeout=60).stdout
    segments, words = timings.parse_festival_output(output)
    assert [name for name, _ in words] == ["hello", "world"]
    assert words[1][1] == dict(segments)["d"] and segments[0][0] == "pau"
