"""egs/voicesearch/local/alignment_accuracy.py: frame times from the front end, and the report per pass
and per voice on a real ali dir against planted truth."""

import json
import os
import sys

import pytest

from asrkit.align.ali_dir import AliDir
from asrkit.align.align_dir import AlignOptions, flat_start_data_dir
from asrkit.align.synthetic import LEXICON, make_lang_dir, write_data_dir
from asrkit.frontend.config import FeatureConfig

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LOCAL = os.path.join(ROOT, "egs", "voicesearch", "local")
if LOCAL not in sys.path:
    sys.path.insert(0, LOCAL)

import alignment_accuracy  # noqa: E402  (egs/voicesearch/local)


def test_frame_boundaries_follow_the_default_front_end():
    # 32 ms windows every 10 ms, 4 stacked, every 3rd kept: output frame f spans 30f .. 30f + 62 ms, its
    # centre is at 30f + 31 ms, so frames f-1 and f meet at 30f + 16 ms.
    timing = alignment_accuracy.FrameTiming.from_feature_options(FeatureConfig())
    assert timing.frame_s == pytest.approx(0.030) and timing.offset_s == pytest.approx(0.016)
    assert alignment_accuracy.frame_to_time(10) == pytest.approx(0.316)
    assert alignment_accuracy.FRAME_S == pytest.approx(0.030)


def test_frame_boundaries_follow_the_data_dirs_front_end(tmp_path):
    assert alignment_accuracy.FrameTiming.of_data_dir(str(tmp_path)) == alignment_accuracy.DEFAULT_TIMING
    (tmp_path / "conf").mkdir()
    options = dict(FeatureConfig().to_dict(), frame_length_ms=25.0, stack_frames=1, subsample=1)
    (tmp_path / "conf" / "featurize.json").write_text(json.dumps(options))
    timing = alignment_accuracy.FrameTiming.of_data_dir(str(tmp_path))
    assert timing.frame_s == pytest.approx(0.010) and timing.offset_s == pytest.approx(0.0075)
    (tmp_path / "conf" / "featurize.json").write_text(json.dumps({"stack_frames": 2, "no_such_option": 1}))
    with pytest.raises(alignment_accuracy.InputError, match="no_such_option"):
        alignment_accuracy.FrameTiming.of_data_dir(str(tmp_path))


TEXTS = {"a-1": "TOMATO SAUCE", "a-2": "HOT SOUP", "b-1": "GO TO MAMA", "b-2": "NAP TAP MAP"}
FRAMES = {"a-1": 40, "a-2": 30, "b-1": 44, "b-2": 52}


def _truth_of(ali, utt, voice, shift_s, final_shift_s):
    """The alignment's own boundaries as truth, moved by shift_s (the last word's end by final_shift_s),
    in the engines' lower-case phones."""
    phone_names = {}
    with open(os.path.join(ali.path, "phones.txt")) as handle:
        for line in handle:
            name, number = line.split()
            phone_names[int(number)] = name
    segments = [(phone_names[phone], start, end) for phone, start, end in ali.phone_segments(utt)]
    phones = [["pau" if name == "SIL" else name.lower(), alignment_accuracy.frame_to_time(end) + shift_s]
              for name, _, end in segments]
    lexicon = {word: [tuple(pron.split())] for word, pron in reversed(LEXICON)}  # first variants
    ends = alignment_accuracy.word_end_frames(segments, TEXTS[utt].split(), lexicon)
    words = [[word, alignment_accuracy.frame_to_time(end) + shift_s] for word, end in zip(TEXTS[utt].split(), ends)]
    words[-1][1] += final_shift_s - shift_s
    return {"utt": utt, "engine": "flite", "voice": voice, "phones": phones, "words": words, "word_source": "phones"}


def test_report_per_pass_and_voice(tmp_path, capsys):
    root = tmp_path / "data"
    lang_dir = make_lang_dir(str(tmp_path / "lang_root"))
    data_dir = write_data_dir(str(root / "train"), TEXTS, FRAMES)
    flat_start_data_dir(data_dir, lang_dir, tmp_path / "ali0", AlignOptions())
    (root / "local" / "dict").mkdir(parents=True)
    (root / "local" / "dict" / "lexicon.txt").write_text("".join(f"{word} {pron}\n" for word, pron in LEXICON))
    ali = AliDir(tmp_path / "ali0")
    # Voice a is exact; voice b's truth is 45 ms later than the alignment (1 < 45 / 30 <= 2 frames), its
    # final word ends 90 ms later (3 frames).
    with open(tmp_path / "train.jsonl", "w") as out:
        for utt in TEXTS:
            voice, shift, final_shift = ("a", 0.0, 0.0) if utt.startswith("a") else ("b", 0.045, 0.090)
            out.write(json.dumps(_truth_of(ali, utt, voice, shift, final_shift)) + "\n")
    ali.close()
    assert alignment_accuracy.main([data_dir, str(tmp_path / "train.jsonl"), str(tmp_path / "ali0"),
                                    str(tmp_path / "ali0")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "f x 30 ms + 16 ms" in lines[0]
    rows = [line.split() for line in lines if line.startswith(str(tmp_path / "ali0"))]
    assert len(rows) == 4  # two passes in each of the two tables
    # Voice a: 4 words, 15 phones exact; voice b: 17 phones and 4 of 6 words 45 ms off (within 2 frames),
    # its 2 final words 90 ms off.  Final words: 2 of 4 within 2 frames, bias (2 x -90) / 4.
    assert rows[0][1:] == ["4", "10", "40.0%", "80.0%", "36", "-36", "50.0%", "-45",
                           "4", "32", "46.9%", "100.0%", "24", "-24"]
    assert rows[1] == rows[0]
    assert rows[2][1:] == ["+0", "(100%)", "-60", "(67%)"]  # word-end bias by voice (a, b)
    assert lines[-1].startswith("alignment_accuracy.py summary: ali_dir=") and "word_within_2f=80.0" in lines[-1]
    assert "final_within_2f=50.0 final_bias_ms=-45" in lines[-1]
