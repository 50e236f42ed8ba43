import os

import pytest

from asrkit.data.fix import fix_data_dir
from asrkit.data.validate import validate_data_dir
from asrkit.errors import DataDirError


def read(directory, name):
    with open(os.path.join(directory, name), encoding="utf-8") as handle:
        return handle.read()


def test_fix_sorts_drops_and_regenerates(tmp_path, write_text_file):
    directory = tmp_path / "data"
    directory.mkdir()
    write_text_file(directory / "wav.scp", "b-1 b1.wav\na-2 a2.wav\na-1 a1.wav\nc-1 c1.wav\n")
    write_text_file(directory / "text", "a-1 HELLO\nb-1 HI\na-2 X\na-2 X\n")
    write_text_file(directory / "utt2spk", "a-1 a\na-2 a\nb-1 b\nc-1 c\nd-1 d\n")
    write_text_file(directory / "spk2utt", "a a-1\n")  # stale, rebuilt from utt2spk

    report = fix_data_dir(directory)

    assert read(directory, "wav.scp") == "a-1 a1.wav\na-2 a2.wav\nb-1 b1.wav\n"
    assert read(directory, "text") == "a-1 HELLO\na-2 X\nb-1 HI\n"
    assert read(directory, "utt2spk") == "a-1 a\na-2 a\nb-1 b\n"
    assert read(directory, "spk2utt") == "a a-1 a-2\nb b-1\n"
    assert report.kept_utterances == 3
    assert report.removed_utterances == {"missing from text": ["c-1"],
                                         "missing from wav.scp": ["d-1"]}
    assert report.duplicate_lines == {"text": 1}
    assert report.removed_speakers == 2 and report.removed_recordings == 1
    # The originals are kept, byte for byte.
    assert read(directory / ".backup", "text") == "a-1 HELLO\nb-1 HI\na-2 X\na-2 X\n"
    assert validate_data_dir(directory, require_text=True) == []


def test_fix_drops_bad_segments_and_unused_recordings(tmp_path, write_text_file):
    write_text_file(tmp_path / "wav.scp", "r1 r1.wav\nr2 r2.wav\nr3 r3.wav\n")
    write_text_file(tmp_path / "segments", "s-1 r1 0 1\ns-2 r2 2 1\ns-3 r9 0 1\n")
    write_text_file(tmp_path / "utt2spk", "s-1 s\ns-2 s\ns-3 s\n")
    report = fix_data_dir(tmp_path)
    assert report.removed_utterances == {"segment times not 0 <= start < end": ["s-2"],
                                         "segment's recording not in wav.scp": ["s-3"]}
    assert read(tmp_path, "wav.scp") == "r1 r1.wav\n"
    assert read(tmp_path, "segments") == "s-1 r1 0.0 1.0\n"
    assert report.removed_recordings == 2
    assert validate_data_dir(tmp_path) == []


def test_fix_refuses_what_it_cannot_repair(small_data_dir, write_text_file):
    text = os.path.join(small_data_dir, "text")
    write_text_file(text, b"A-1 X\nA-2 \xe9\nB-1 Y\n")
    with pytest.raises(DataDirError) as caught:
        fix_data_dir(small_data_dir)
    assert f"{text}:2:" in str(caught.value) and "cannot repair" in str(caught.value)
    assert not os.path.exists(os.path.join(small_data_dir, ".backup"))


def test_fix_of_valid_dir_changes_nothing(small_data_dir):
    before = {name: read(small_data_dir, name) for name in ("wav.scp", "text", "utt2spk", "spk2utt")}
    report = fix_data_dir(small_data_dir)
    assert report.total_removed_utterances == 0 and report.kept_utterances == 3
    assert {name: read(small_data_dir, name) for name in before} == before
