"""The flat start with its end silences placed by frame energy (asrkit.align.equal.speech_span)."""

import json
import os

import numpy as np
import pytest

from asrkit.align.ali_dir import AliDir, phone_segments
from asrkit.align.align_dir import AlignOptions, flat_start_data_dir
from asrkit.align.equal import SpeechSpanOptions, equal_alignment, log_mel_energy, reference_phones, speech_span
from asrkit.align.lang import read_align_lang
from asrkit.align.synthetic import make_lang_dir, write_data_dir, write_table
from asrkit.errors import AsrkitError
from asrkit.hmm.tree import monophone_tree

SILENT, LOUD = 5.0, 16.0


@pytest.fixture(scope="module")
def lang(tmp_path_factory):
    return read_align_lang(make_lang_dir(str(tmp_path_factory.mktemp("lang"))))


@pytest.fixture(scope="module")
def tree(lang):
    return monophone_tree(lang.phones, lang.topology)


def contour(lead, speech, trail, rng=None):
    """Frame energies: `lead` silent frames, `speech` loud ones, `trail` silent ones (log mel, natural log)."""
    energy = np.concatenate([np.full(lead, SILENT), np.full(speech, LOUD), np.full(trail, SILENT)])
    if rng is not None:
        energy += rng.normal(0.0, 0.5, len(energy))
    return energy


def test_speech_span_finds_the_loud_frames():
    assert speech_span(contour(10, 20, 6)) == (10, 30)
    assert speech_span(contour(7, 40, 12, np.random.default_rng(3))) == (7, 47)
    assert speech_span(contour(0, 30, 0) - np.linspace(0, 1, 30)) is None  # no silence to tell from
    assert speech_span(np.array([])) is None
    # A quiet dip inside the speech (a closure) does not end it.
    energy = contour(5, 30, 5)
    energy[15:18] = SILENT
    assert speech_span(energy) == (5, 35)
    assert speech_span(energy, SpeechSpanOptions(min_contrast=20.0)) is None


def test_energy_is_log_mel_whatever_the_compression():
    log_mel = np.random.default_rng(0).normal(10.0, 3.0, (20, 12))
    expected = log_mel.mean(axis=1)
    np.testing.assert_allclose(log_mel_energy(log_mel, "log"), expected)
    np.testing.assert_allclose(log_mel_energy(np.exp(log_mel / 15.0), "root15"), expected)
    np.testing.assert_allclose(log_mel_energy(np.exp(log_mel / 10.0), "root10"), expected)
    with pytest.raises(AsrkitError, match="cubic"):
        log_mel_energy(log_mel, "cubic")


def test_end_silences_take_the_silent_frames(lang, tree):
    phones = reference_phones(["TOMATO", "SAUCE"], lang)  # SIL, 9 phones, SIL
    silence = lang.optional_silence
    segments = phone_segments(*_phones(equal_alignment(phones, 60, tree, lang.topology, speech=(12, 50))))
    assert [phone for phone, _, _ in segments] == phones
    assert segments[0] == (silence, 0, 12) and segments[-1] == (silence, 50, 60)
    lengths = [end - start for _, start, end in segments[1:-1]]
    assert sum(lengths) == 38 and max(lengths) - min(lengths) <= 1
    # Plain equal alignment gives each silence 1/11 of the utterance instead (5 of 60 frames).
    plain = phone_segments(*_phones(equal_alignment(phones, 60, tree, lang.topology)))
    assert plain[0] == (silence, 0, 5)
    # Speech to the very ends: each silence keeps one frame.
    segments = phone_segments(*_phones(equal_alignment(phones, 60, tree, lang.topology, speech=(0, 60))))
    assert segments[0] == (silence, 0, 1) and segments[-1] == (silence, 59, 60)
    # A span too short for the phones between the silences: the plain equal alignment.
    short = equal_alignment(phones, 60, tree, lang.topology, speech=(20, 25))
    np.testing.assert_array_equal(short.pdfs, equal_alignment(phones, 60, tree, lang.topology).pdfs)


def _phones(alignment):
    return alignment.phones, alignment.phone_starts


def test_flat_start_by_energy_reads_the_features(tmp_path):
    lang_dir = make_lang_dir(str(tmp_path / "lang_root"))
    texts = {"a-1": "TOMATO SAUCE", "a-2": "HOT SOUP"}
    spans = {"a-1": (9, 41), "a-2": (3, 30)}
    frames = {"a-1": 50, "a-2": 36}
    data_dir = write_data_dir(str(tmp_path / "data"), texts, frames)
    rng = np.random.default_rng(5)
    features = {}
    for utt, (first, end) in spans.items():
        energy = contour(first, end - first, frames[utt] - end, rng)
        features[utt] = (energy[:, None] + rng.normal(0.0, 0.1, (frames[utt], 16))).astype(np.float32)
    scp = write_table(data_dir, "feats", features)
    assert scp == os.path.join(data_dir, "feats.scp")
    with pytest.raises(AsrkitError, match="conf/featurize.json"):
        flat_start_data_dir(data_dir, lang_dir, tmp_path / "ali", AlignOptions(speech_span=SpeechSpanOptions()))
    os.makedirs(os.path.join(data_dir, "conf"))
    with open(os.path.join(data_dir, "conf", "featurize.json"), "w") as out:
        json.dump({"compression": "log"}, out)
    result = flat_start_data_dir(data_dir, lang_dir, tmp_path / "ali",
                                 AlignOptions(nj=2, speech_span=SpeechSpanOptions()))
    assert result.aligned == 2
    ali = AliDir(tmp_path / "ali")
    for utt, (first, end) in spans.items():
        segments = ali.phone_segments(utt)
        assert segments[0][2] == first and segments[-1][1] == end
    with open(tmp_path / "ali" / "ali_info.json") as handle:
        assert handle.read().count("silence_by_energy") == 1
    ali.close()
    # Without the option the same data dir gets the plain equal alignment.
    flat_start_data_dir(data_dir, lang_dir, tmp_path / "plain", AlignOptions())
    plain = AliDir(tmp_path / "plain")
    assert plain.phone_segments("a-1")[0][2] == 50 // 11
    plain.close()
