"""Frequency warp factors of a data dir (spk2warp, utt2warp): read, checked, applied by the front end's reader."""

import os

import numpy as np
import pytest

from asrkit.augment.vtlp import Vtlp
from asrkit.data.audio import AudioOptions, load_utterance_audio
from asrkit.data.data_dir import DataDir
from asrkit.errors import DataDirError
from asrkit.frontend.featurize import input_fingerprint
from asrkit.frontend.warp import KaldiVtlnMap, warped_audio


def test_an_utterance_factor_overrides_its_speaker_factor_and_the_rest_keep_1(small_data_dir, write_text_file):
    write_text_file(os.path.join(small_data_dir, "spk2warp"), "A 1.1\nB 0.95\n")
    write_text_file(os.path.join(small_data_dir, "utt2warp"), "A-2 1.05\n")
    data = DataDir.load(small_data_dir)
    assert [data.warp_factor(utt) for utt in ("A-1", "A-2", "B-1")] == [1.1, 1.05, 0.95]
    assert DataDir.load(small_data_dir).subset(["A-1"]).extra_tables["spk2warp"] == {"A": "1.1"}
    os.remove(os.path.join(small_data_dir, "spk2warp"))
    assert DataDir.load(small_data_dir).warp_factor("A-1") == 1.0


@pytest.mark.parametrize("value", ["fast", "2.5", "0", "nan"])
def test_a_bad_factor_is_an_error_naming_its_file_and_line(small_data_dir, write_text_file, value):
    write_text_file(os.path.join(small_data_dir, "spk2warp"), f"A 1.1\nB {value}\n")
    data = DataDir.load(small_data_dir)
    with pytest.raises(DataDirError, match=r"spk2warp:2: warp factor of 'B' is .* must be a number in \(0, 2\)"):
        data.warp_factor("A-1")


def test_speaker_factors_need_utt2spk(small_data_dir, write_text_file):
    write_text_file(os.path.join(small_data_dir, "spk2warp"), "A 1.1\n")
    data = DataDir.load(small_data_dir)
    data.utt2spk = None
    with pytest.raises(DataDirError, match="spk2warp needs utt2spk"):
        data.warp_factor("A-1")


def test_the_front_end_warps_and_the_plain_reader_does_not(small_data_dir, write_text_file):
    write_text_file(os.path.join(small_data_dir, "spk2warp"), "A 1.1\nB 1\n")
    data = DataDir.load(small_data_dir)
    options = AudioOptions(sample_rate=16000)
    plain = load_utterance_audio(data, "A-1", options)
    warped = warped_audio(data, "A-1", plain, 16000)
    kaldi_map = KaldiVtlnMap(16000)  # the front end's VTLN map (tests/frontend/test_warp.py)
    assert np.allclose(warped, Vtlp(16000, frequency_map=kaldi_map).apply(plain, 1.1))
    assert not np.allclose(warped, plain, atol=1e-3)
    b_samples = load_utterance_audio(data, "B-1", options)
    assert warped_audio(data, "B-1", b_samples, 16000) is b_samples  # factor 1: untouched


def test_the_features_of_warped_audio_are_made_again(small_data_dir, write_text_file):
    options = AudioOptions(sample_rate=16000)
    both_before = input_fingerprint(DataDir.load(small_data_dir), ["A-1", "B-1"], options)
    b_before = input_fingerprint(DataDir.load(small_data_dir), ["B-1"], options)
    write_text_file(os.path.join(small_data_dir, "spk2warp"), "A 1.1\n")
    assert input_fingerprint(DataDir.load(small_data_dir), ["A-1", "B-1"], options) != both_before
    assert input_fingerprint(DataDir.load(small_data_dir), ["B-1"], options) == b_before  # B keeps 1


@pytest.mark.parametrize("name,lines,message", [
    ("spk2warp", "A 1.1\nC 0.9\nZ 1.05\n", r"spk2warp:2: 2 speaker\(s\) with a warp factor are not in the data dir: "
                                            r"'C', 'Z'"),
    ("utt2warp", "A-1 1.1\nA-9 0.9\n", r"utt2warp:2: 1 utterance\(s\) with a warp factor are not in the data dir: "
                                       r"'A-9'"),
])
def test_a_factor_for_a_speaker_or_utterance_the_data_dir_lacks_is_named(small_data_dir, write_text_file, name,
                                                                         lines, message):
    write_text_file(os.path.join(small_data_dir, name), lines)
    data = DataDir.load(small_data_dir)
    with pytest.raises(DataDirError, match=message + r" \(fix: correct the ids, or run utils/fix_data_dir"):
        data.warp_factor("A-1")
    assert DataDir.load(small_data_dir).subset(["A-1", "A-2", "B-1"]).warp_factor("A-1") == 1.1  # fixed: its own
