"""egs/librispeech/local/prepare_librispeech.py (linked from egs/voicesearch/local) on a tiny corpus in LibriSpeech's layout (synthetic FLAC)."""

import os
import subprocess
import sys

import numpy as np
import pytest
import soundfile

from asrkit.data.audio import load_recording
from asrkit.data.validate import validate_data_dir

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RECIPE = os.path.join(ROOT, "egs", "librispeech")
SCRIPT = os.path.join(RECIPE, "local", "prepare_librispeech.py")
VOICESEARCH_LINK = os.path.join(ROOT, "egs", "voicesearch", "local", "prepare_librispeech.py")

SPEAKERS_TXT = """\
; This is a file containing information about the speakers in the LibriSpeech corpus
; ID  |SEX| SUBSET           |MINUTES| NAME
19    | F | train-clean-100  | 25.19 | Kara Shallenberg
60    | M | train-clean-100  | 20.18 | |CBW|Simon
198   | F | dev-clean        | 25.05 | Some Reader
"""

# speaker -> chapter -> {utterance number: transcript}
CHAPTERS = {
    "19": {"198": {0: "NORTHANGER ABBEY", 1: "THAT THEY WERE"}, "227": {0: "CHAPTER ONE"}},
    "60": {"121082": {0: "HE SAID IT'S FINE"}},
    "198": {"129977": {0: "ALL GOOD", 2: "NO DOUBT"}},
}


def write_flac(path, seed, seconds=0.3, sample_rate=16000):
    noise = np.random.default_rng(seed).uniform(-0.3, 0.3, int(seconds * sample_rate)).astype(np.float32)
    soundfile.write(path, noise, sample_rate, format="FLAC", subtype="PCM_16")


@pytest.fixture
def librispeech(tmp_path):
    """A LibriSpeech root with SPEAKERS.TXT and a subset `dev-clean` in the corpus's layout."""
    root = tmp_path / "LibriSpeech"
    subset = root / "dev-clean"
    seed = 0
    for speaker, chapters in CHAPTERS.items():
        for chapter, lines in chapters.items():
            chapter_dir = subset / speaker / chapter
            chapter_dir.mkdir(parents=True)
            with open(chapter_dir / f"{speaker}-{chapter}.trans.txt", "w") as transcript:
                for number, words in lines.items():
                    utterance = f"{speaker}-{chapter}-{number:04d}"
                    transcript.write(f"{utterance} {words}\n")
                    write_flac(chapter_dir / f"{utterance}.flac", seed)
                    seed += 1
    (root / "SPEAKERS.TXT").write_text(SPEAKERS_TXT)
    return subset


def prepare(subset, data_dir, *options):
    result = subprocess.run([sys.executable, SCRIPT, *options, str(subset), str(data_dir)], capture_output=True,
                            text=True, timeout=120)
    return result.returncode, result.stderr


def lines(path):
    with open(path, encoding="utf-8") as handle:
        return handle.read().splitlines()


def test_prepares_a_valid_data_dir(librispeech, tmp_path):
    data_dir = tmp_path / "data" / "dev_clean"
    code, output = prepare(librispeech, data_dir)
    assert code == 0, output
    utterances = ["19-198-0000", "19-198-0001", "19-227-0000", "198-129977-0000", "198-129977-0002",
                  "60-121082-0000"]
    # C order: '-' sorts before the digits, so speaker 19's utterances come before speaker 198's.
    assert [line.split()[0] for line in lines(data_dir / "wav.scp")] == utterances
    assert lines(data_dir / "wav.scp")[0] == f"19-198-0000 {librispeech}/19/198/19-198-0000.flac"
    assert lines(data_dir / "text")[3:5] == ["198-129977-0000 ALL GOOD", "198-129977-0002 NO DOUBT"]
    assert "60-121082-0000 HE SAID IT'S FINE" in lines(data_dir / "text")
    assert lines(data_dir / "utt2spk")[2] == "19-227-0000 19"
    assert lines(data_dir / "spk2utt") == ["19 19-198-0000 19-198-0001 19-227-0000",
                                           "198 198-129977-0000 198-129977-0002", "60 60-121082-0000"]
    assert lines(data_dir / "spk2gender") == ["19 f", "198 f", "60 m"]
    assert validate_data_dir(str(data_dir), require_text=True) == []
    samples = load_recording(lines(data_dir / "wav.scp")[0].split()[1])
    assert samples.dtype == np.float32 and len(samples) == 4800
    assert "prepare_librispeech summary: status=ok" in output and "utterances=6 speakers=3 chapters=4" in output
    assert "audio_without_transcript=0" in output


def test_speaker_per_chapter_and_no_speakers_file(librispeech, tmp_path):
    os.remove(librispeech.parent / "SPEAKERS.TXT")
    data_dir = tmp_path / "per_chapter"
    code, output = prepare(librispeech, data_dir, "--speaker-per-chapter")
    assert code == 0, output
    assert lines(data_dir / "utt2spk")[2] == "19-227-0000 19-227"
    assert not os.path.exists(data_dir / "spk2gender")
    assert validate_data_dir(str(data_dir), require_text=True) == []


def test_audio_without_transcript_is_counted(librispeech, tmp_path):
    write_flac(librispeech / "60" / "121082" / "60-121082-0009.flac", 99)
    stray_chapter = librispeech / "60" / "555"
    stray_chapter.mkdir()
    write_flac(stray_chapter / "60-555-0000.flac", 98)
    code, output = prepare(librispeech, tmp_path / "data")
    assert code == 0, output
    assert "60-555.trans.txt does not exist" in output
    assert "2 audio files have no transcript and are not used" in output
    assert "audio_without_transcript=2" in output
    assert len(lines(tmp_path / "data" / "wav.scp")) == 6


def test_missing_audio_and_malformed_lines_name_file_and_line(librispeech, tmp_path):
    os.remove(librispeech / "19" / "198" / "19-198-0001.flac")
    transcript = librispeech / "198" / "129977" / "198-129977.trans.txt"
    with open(transcript, "a") as handle:
        handle.write("198-129977-0003\n19-198-0005 WRONG CHAPTER\n")
    data_dir = tmp_path / "data"
    code, output = prepare(librispeech, data_dir)
    assert code == 1
    assert f"{librispeech}/19/198/19-198.trans.txt:2: no audio for utterance '19-198-0001'" in output
    assert f"{transcript}:3: expected `<utterance-id> TRANSCRIPT`, got '198-129977-0003'" in output
    assert f"{transcript}:4: utterance id '19-198-0005' is not 198-129977-<number>" in output
    assert "3 transcript lines are malformed or have no audio" in output and "status=failed" in output
    assert not os.path.exists(data_dir / "wav.scp")
    # Within --max-bad the lines are skipped and counted.
    code, output = prepare(librispeech, data_dir, "--max-bad", "3")
    assert code == 0, output
    assert "skipped_lines=3" in output and len(lines(data_dir / "text")) == 5


def test_malformed_speakers_file(librispeech, tmp_path):
    (librispeech.parent / "SPEAKERS.TXT").write_text("19 | X | dev-clean | 1.0 | Someone\n")
    code, output = prepare(librispeech, tmp_path / "data")
    assert code == 1
    assert "SPEAKERS.TXT:1: expected `ID | SEX | SUBSET | MINUTES | NAME`" in output


def test_not_a_librispeech_subset(tmp_path):
    code, output = prepare(tmp_path / "absent", tmp_path / "data")
    assert code == 1 and "is not a directory" in output
    (tmp_path / "empty").mkdir()
    code, output = prepare(tmp_path / "empty", tmp_path / "data")
    assert code == 1 and "no transcribed utterances found" in output


def test_voicesearch_keeps_its_link(librispeech, tmp_path):
    result = subprocess.run([sys.executable, VOICESEARCH_LINK, str(librispeech), str(tmp_path / "dev")],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert len(lines(tmp_path / "dev" / "text")) == 6
