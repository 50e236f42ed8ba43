import os

import pytest

from asrkit.data.validate import validate_data_dir
from asrkit.errors import DataDirError


def messages(problems):
    return [str(problem) for problem in problems]


def only_problem(problems):
    assert len(problems) == 1, messages(problems)
    return problems[0]


def test_valid_dir_has_no_problems(small_data_dir):
    assert validate_data_dir(small_data_dir, require_text=True) == []


def test_missing_utterance_in_text(small_data_dir, write_text_file):
    text = write_text_file(os.path.join(small_data_dir, "text"), "A-1 HELLO\nB-1 HI\n")
    problem = only_problem(validate_data_dir(small_data_dir))
    assert problem.path == text
    assert "1 utterance(s) of wav.scp are missing from text: A-2" in str(problem)
    assert f"utils/fix_data_dir {small_data_dir}" in problem.fix


def test_extra_utterance_in_text_names_its_line(small_data_dir, write_text_file):
    write_text_file(os.path.join(small_data_dir, "text"), "A-1 X\nA-2 Y\nA-3 Z\nB-1 W\n")
    problem = only_problem(validate_data_dir(small_data_dir))
    assert problem.line == 3 and "utterance(s) in text are not in wav.scp: A-3" in str(problem)


def test_duplicate_id(small_data_dir, write_text_file):
    utt2spk = write_text_file(os.path.join(small_data_dir, "utt2spk"), "A-1 A\nA-1 A\nA-2 A\nB-1 B\n")
    problem = only_problem(validate_data_dir(small_data_dir))
    assert str(problem).startswith(f"{utt2spk}:2: duplicate key 'A-1'")


def test_unsorted_file(small_data_dir, write_text_file):
    write_text_file(os.path.join(small_data_dir, "utt2dur"), "A-2 0.5\nA-1 1.0\nB-1 0.8\n")
    problem = only_problem(validate_data_dir(small_data_dir))
    assert problem.line == 2 and "not sorted" in str(problem) and "LC_ALL=C sort" in problem.fix


def test_non_utf8_text(small_data_dir, write_text_file):
    write_text_file(os.path.join(small_data_dir, "text"), b"A-1 X\nA-2 \xff\xfe\nB-1 Y\n")
    problems = validate_data_dir(small_data_dir)
    assert problems[0].line == 2 and "not valid UTF-8" in str(problems[0])
    # The unreadable line also leaves A-2 without a transcript.
    assert any("missing from text: A-2" in message for message in messages(problems))


def test_required_text(small_data_dir):
    os.remove(os.path.join(small_data_dir, "text"))
    assert validate_data_dir(small_data_dir) == []
    problem = only_problem(validate_data_dir(small_data_dir, require_text=True))
    assert "no text" in str(problem) and "--no-text" in problem.fix


def test_speaker_not_prefix(small_data_dir, write_text_file):
    write_text_file(os.path.join(small_data_dir, "utt2spk"), "A-1 A\nA-2 A\nB-1 Z\n")
    write_text_file(os.path.join(small_data_dir, "spk2utt"), "A A-1 A-2\nZ B-1\n")
    problem = only_problem(validate_data_dir(small_data_dir))
    assert problem.line == 3
    assert "speaker id 'Z' is not a prefix of utterance id 'B-1'" in str(problem)
    assert validate_data_dir(small_data_dir, allow_non_prefix_speakers=True) == []


def test_speaker_order_inconsistent_with_utterance_order(tmp_path, write_text_file):
    # Prefixes hold, yet sorting by speaker puts a-c (speaker a) before a-b-1 (speaker a-b).
    write_text_file(tmp_path / "wav.scp", "a-b-1 x.wav\na-c y.wav\n")
    write_text_file(tmp_path / "utt2spk", "a-b-1 a-b\na-c a\n")
    write_text_file(tmp_path / "spk2utt", "a a-c\na-b a-b-1\n")
    problem = only_problem(validate_data_dir(tmp_path))
    assert "not in the same order when sorted on speaker id" in str(problem)


def test_spk2utt_inconsistent(small_data_dir, write_text_file):
    spk2utt = write_text_file(os.path.join(small_data_dir, "spk2utt"), "A A-1\nB B-1 A-2\n")
    problems = validate_data_dir(small_data_dir)
    assert {problem.path for problem in problems} == {spk2utt}
    assert "utterances of speaker 'A' differ from utt2spk" in str(problems[0])
    assert problems[0].line == 1 and "regenerates spk2utt" in problems[0].fix


def test_missing_spk2utt_and_utt2spk(small_data_dir):
    os.remove(os.path.join(small_data_dir, "spk2utt"))
    assert "no spk2utt" in str(only_problem(validate_data_dir(small_data_dir)))
    os.remove(os.path.join(small_data_dir, "utt2spk"))
    assert "no utt2spk" in str(only_problem(validate_data_dir(small_data_dir)))


@pytest.mark.parametrize("transcript, reason", [
    ("HELLO #0", "disambiguation symbol"),
    ("<eps> HELLO", "epsilon"),
    ("HELLO </s>", "sentence-end"),
    ("HELLO\tWORLD", "a tab inside the transcript"),
    ("HELLO\u00a0WORLD", "Unicode space U+00A0"),
    ("HEL\x07LO", "non-printable character U+0007"),
    ("HELLO\u200bWORLD", "U+200B"),
])
def test_illegal_words_in_text(small_data_dir, write_text_file, transcript, reason):
    text = write_text_file(os.path.join(small_data_dir, "text"),
                           f"A-1 OK\nA-2 {transcript}\nB-1 OK\n")
    problem = only_problem(validate_data_dir(small_data_dir))
    assert problem.path == text and problem.line == 2
    assert "transcript of 'A-2'" in str(problem) and reason in str(problem)


def test_ordinary_words_are_accepted(small_data_dir, write_text_file):
    write_text_file(os.path.join(small_data_dir, "text"),
                    "A-1 DON'T [NOISE] <unk>\nA-2 CAFÉ Ü-BAHN\nB-1 #HASHTAG\n")
    assert validate_data_dir(small_data_dir) == []


def test_segments_checks(tmp_path, write_text_file):
    write_text_file(tmp_path / "wav.scp", "r1 r1.wav\nr2 r2.wav\nr3 r3.wav\n")
    segments = write_text_file(tmp_path / "segments",
                               "s-1 r1 0.0 1.0\ns-2 r1 2.0 1.5\ns-3 r9 0 1\ns-4 r2 1.0 -1\n")
    write_text_file(tmp_path / "utt2spk", "s-1 s\ns-2 s\ns-3 s\ns-4 s\n")
    write_text_file(tmp_path / "spk2utt", "s s-1 s-2 s-3 s-4\n")
    problems = validate_data_dir(tmp_path)
    by_line = {(problem.path, problem.line): str(problem) for problem in problems}
    assert "start 2 and end 1.5" in by_line[(segments, 2)]
    assert "recording 'r9', which is not in wav.scp" in by_line[(segments, 3)]
    unused = [message for message in messages(problems) if "used by no segment" in message]
    assert unused and "r3" in unused[0] and "r2" not in unused[0]
    assert len(problems) == 3


def test_feats_and_num_frames_sets(small_data_dir, write_text_file):
    write_text_file(os.path.join(small_data_dir, "feats.scp"), "A-1 f.h5:/A-1\nB-1 f.h5:/B-1\n")
    problem = only_problem(validate_data_dir(small_data_dir))
    assert "missing from feats.scp: A-2" in str(problem)
    assert validate_data_dir(small_data_dir, no_feats=True) == []


def test_wav_scp_path_with_space(small_data_dir, write_text_file):
    wav_scp = os.path.join(small_data_dir, "wav.scp")
    lines = open(wav_scp).read().splitlines()
    lines[1] = "A-2 my file.wav"
    write_text_file(wav_scp, "\n".join(lines) + "\n")
    problem = only_problem(validate_data_dir(small_data_dir))
    assert problem.line == 2 and "does not end with '|'" in str(problem)


def test_raise_on_error_lists_problems(small_data_dir, write_text_file):
    write_text_file(os.path.join(small_data_dir, "text"), "A-1 X\n")
    with pytest.raises(DataDirError, match="1 problem\\(s\\) found:\n  .*missing from text: A-2, B-1"):
        validate_data_dir(small_data_dir, raise_on_error=True)


def test_many_problems_are_capped(tmp_path, write_text_file):
    count = 25
    write_text_file(tmp_path / "wav.scp", "".join(f"u{i:02d} x.wav\n" for i in range(count)))
    write_text_file(tmp_path / "utt2spk", "".join(f"u{i:02d} s{i:02d}\n" for i in range(count)))
    write_text_file(tmp_path / "spk2utt", "".join(f"s{i:02d} u{i:02d}\n" for i in range(count)))
    problems = validate_data_dir(tmp_path)
    assert len(problems) == 11
    assert "and 15 more problems of this kind (speaker prefix)" in str(problems[-1])
