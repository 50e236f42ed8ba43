"""asrkit.recognizer.tuning: a data dir transcribed as the package hears it, each lattice read at every LM weight;
update_decode_params: a package's decode.json changed in place."""

import json
import os

import pytest
import soundfile

from asrkit.data.data_dir import DataDir
from asrkit.decode.word_lattice import nbest
from asrkit.errors import AsrkitError
from asrkit.recognizer.package import load_package, update_decode_params
from asrkit.recognizer.recognizer import Recognizer
from asrkit.recognizer.tuning import sweep_lm_weights
from tests.conftest import speech_like
from tests.recognizer.conftest import (copy_package, distinct_acoustics, model_dirs, package_dir,  # noqa: F401
                                      toy_task)

WEIGHTS = [0.5, 1.0, 2.0, 4.0]


def wide_lattices(package):
    """A Recognizer of the package at LM weight 1 whose lattices keep many paths."""
    return Recognizer(package, lm_weight=1.0, beam=30.0, lattice_beam=30.0)


def write_data_dir(root, count=4, segments=False):
    """A data dir of `count` speech-like recordings at 8 kHz (wav.scp; with segments, one recording cut in two
    per utterance pair) -> its path."""
    os.makedirs(root, exist_ok=True)
    wav_lines, segment_lines = [], []
    for index in range(count):
        path = os.path.join(root, f"rec{index}.wav")
        soundfile.write(path, speech_like(1.5, 8000, seed=40 + index, f0=90.0 + 30 * index), 8000, subtype="PCM_16")
        wav_lines.append(f"rec{index} {path}\n")
        segment_lines += [f"rec{index}-a rec{index} 0.0 0.7\n", f"rec{index}-b rec{index} 0.7 1.5\n"]
    with open(os.path.join(root, "wav.scp"), "w") as out:
        out.writelines(wav_lines)
    if segments:
        with open(os.path.join(root, "segments"), "w") as out:
            out.writelines(segment_lines)
    return root


def test_each_lattice_is_read_at_every_weight_and_at_the_package_s_own_it_is_transcribe_s_result(package_dir,  # noqa: F811
                                                                                                 tmp_path,
                                                                                                 distinct_acoustics):
    data = DataDir.load(write_data_dir(str(tmp_path / "data")))
    recognizer = wide_lattices(package_dir)
    sweep = sweep_lm_weights(recognizer, data, data.utterance_ids, WEIGHTS)
    assert sweep.searched_at == 1.0 and sorted(sweep.words) == WEIGHTS and sweep.frames > 0
    for utterance in data.utterance_ids:
        transcribed = recognizer.transcribe(data.wav_scp[utterance], details=False).text.split()
        assert sweep.words[1.0][utterance] == transcribed, utterance
        decoded = recognizer.decode(recognizer.acoustic.log_likelihoods(recognizer.load_audio(data.wav_scp[utterance])))
        for weight in WEIGHTS:  # word_lattice.nbest, another reading of the same lattice
            expected = [recognizer.package.words[word] for word in nbest(decoded.lattice, 1, weight)[0].words]
            assert sweep.words[weight][utterance] == expected, (utterance, weight)
    assert len({tuple(map(tuple, sweep.words[weight].values())) for weight in WEIGHTS}) > 1  # the weights matter


def test_a_package_tuned_so_searches_at_its_old_weight_and_says_what_its_lattice_reads_at_the_new(
        copy_package, tmp_path, distinct_acoustics):  # noqa: F811
    data = DataDir.load(write_data_dir(str(tmp_path / "data")))
    package = copy_package()
    update_decode_params(package, {"lm_weight": 1.0, "beam": 30.0, "lattice_beam": 30.0})
    sweep = sweep_lm_weights(Recognizer(package), data, data.utterance_ids, WEIGHTS)
    update_decode_params(package, {"lm_weight": 4.0, "search_lm_weight": 1.0})
    tuned = Recognizer(package)
    assert tuned.package.search_acoustic_scale == 1.0 and tuned.package.acoustic_scale == 0.25
    for utterance in data.utterance_ids:
        assert tuned.transcribe(data.wav_scp[utterance], details=False).text.split() == sweep.words[4.0][utterance]
    assert sweep_lm_weights(tuned, data, data.utterance_ids, [4.0]).searched_at == 1.0
    # A weight asked for at transcription is searched at too, unless the search's is asked for as well.
    assert Recognizer(package, lm_weight=2.0).package.search_acoustic_scale == 0.5
    assert Recognizer(package, lm_weight=2.0, search_lm_weight=4.0).package.search_acoustic_scale == 0.25
    for bad in (0.0, "1", float("nan")):
        with pytest.raises(AsrkitError, match="the search's LM weight .or null. must be positive"):
            update_decode_params(package, {"search_lm_weight": bad})


def test_segments_are_read_from_their_recordings(package_dir, tmp_path):  # noqa: F811
    data = DataDir.load(write_data_dir(str(tmp_path / "data"), count=2, segments=True))
    recognizer = Recognizer(package_dir)
    sweep = sweep_lm_weights(recognizer, data, data.utterance_ids, [2.0])
    whole = recognizer.load_audio(data.wav_scp["rec1"])
    expected = recognizer.transcribe(whole[int(0.7 * 8000):], details=False).text.split()
    assert sorted(sweep.words[2.0]) == ["rec0-a", "rec0-b", "rec1-a", "rec1-b"]
    assert sweep.words[2.0]["rec1-b"] == expected


def test_an_unreadable_recording_is_named_with_its_utterance(package_dir, tmp_path):  # noqa: F811
    root = write_data_dir(str(tmp_path / "data"), count=2)
    with open(os.path.join(root, "rec1.wav"), "wb") as out:
        out.write(b"RIFF not a wave file")
    data = DataDir.load(root)
    with pytest.raises(AsrkitError, match="utterance rec1: file .*rec1.wav: not audio"):
        sweep_lm_weights(Recognizer(package_dir), data, data.utterance_ids, [2.0])


def test_decode_params_are_changed_in_place_and_checked_first(copy_package):  # noqa: F811
    path = copy_package()
    before = load_package(path).params
    after = update_decode_params(path, {"lm_weight": 0.9, "chosen_on": "/somewhere/package_tuning_dev"})
    assert after == load_package(path).params == before | {"lm_weight": 0.9, "chosen_on": "/somewhere/package_tuning_dev"}
    with open(os.path.join(path, "decode.json")) as handle:
        written = handle.read()
    for bad, message in (({"lm_weight": -1.0}, "LM weight must be positive"), ({"beams": 3}, "unknown decoding")):
        with pytest.raises(AsrkitError, match=message):
            update_decode_params(path, bad)
        with open(os.path.join(path, "decode.json")) as handle:
            assert handle.read() == written  # refused before anything is written
    assert json.loads(written)["lm_weight"] == 0.9
    assert not [name for name in os.listdir(path) if name.startswith(".")]  # no temporary file left
