"""Fixtures shared across the test tree: synthetic speech-like audio and small Kaldi data dirs."""

import os
import shutil
import subprocess

import numpy as np
import pytest
import soundfile


def speech_like(seconds, sample_rate=16000, seed=0, f0=120.0):
    """A voiced/unvoiced/silent signal with a moving pitch and formant-like colouring.

    Deterministic in `seed`; spans the dynamic range real speech has (loud vowels,
    quiet fricatives, digital silence), which is what the front end must handle.
    """
    rng = np.random.default_rng(seed)
    n = int(seconds * sample_rate)
    t = np.arange(n) / sample_rate
    pitch = f0 * (1.0 + 0.1 * np.sin(2 * np.pi * 0.7 * t + seed))
    phase = 2 * np.pi * np.cumsum(pitch) / sample_rate
    voiced = sum(np.sin(k * phase) / k for k in range(1, 30))
    envelope = 0.5 * (1 + np.sin(2 * np.pi * 2.5 * t + rng.uniform(0, 6)))
    noise = rng.standard_normal(n) * 0.02
    signal = 0.2 * voiced * envelope + noise
    signal[: n // 10] = 0.0  # leading digital silence
    return (signal / max(1.0, np.abs(signal).max() * 1.1)).astype(np.float32)


@pytest.fixture(name="speech_like")
def speech_like_fixture():
    """The speech_like() generator, for tests that need raw signals."""
    return speech_like


@pytest.fixture
def make_data_dir(tmp_path):
    """make_data_dir(durations: dict utt -> seconds, name='data') -> path of a valid Kaldi data dir.

    Utterance ids are `<speaker>-<n>`; audio is 16 kHz 16-bit WAV in <tmp>/wav.
    """

    def make(durations, name="data", sample_rate=16000, text=None):
        data_dir = tmp_path / name
        wav_dir = tmp_path / f"{name}_wav"
        data_dir.mkdir()
        wav_dir.mkdir()
        utterances = sorted(durations, key=lambda u: u.encode())
        with open(data_dir / "wav.scp", "w") as wav_scp, open(data_dir / "utt2spk", "w") as utt2spk:
            for index, utt in enumerate(utterances):
                path = wav_dir / f"{utt}.wav"
                soundfile.write(path, speech_like(durations[utt], sample_rate, seed=index), sample_rate,
                                subtype="PCM_16")
                wav_scp.write(f"{utt} {path}\n")
                utt2spk.write(f"{utt} {utt.split('-')[0]}\n")
        speakers = {}
        for utt in utterances:
            speakers.setdefault(utt.split("-")[0], []).append(utt)
        with open(data_dir / "spk2utt", "w") as spk2utt:
            for speaker in sorted(speakers):
                spk2utt.write(f"{speaker} {' '.join(speakers[speaker])}\n")
        if text is not None:
            with open(data_dir / "text", "w") as text_file:
                for utt in utterances:
                    text_file.write(f"{utt} {text[utt]}\n")
        return str(data_dir)

    return make


@pytest.fixture(scope="session")
def espeak_wav(tmp_path_factory):
    """A real synthesised English sentence at 16 kHz (skips when espeak-ng is not installed)."""
    if shutil.which("espeak-ng") is None:
        pytest.skip("espeak-ng is not installed (bin/setup-env installs it as root)")
    directory = tmp_path_factory.mktemp("espeak")
    raw = os.path.join(directory, "raw.wav")
    subprocess.run(["espeak-ng", "-w", raw, "directions to the nearest coffee shop in Boston"], check=True)
    samples, rate = soundfile.read(raw, dtype="float32")
    if rate != 16000:
        from scipy.signal import resample_poly

        samples = resample_poly(samples, 16000, rate).astype(np.float32)
    return samples


@pytest.fixture
def featurized_corpus(make_data_dir, tmp_path):
    """featurized_corpus(durations, num_pdfs) -> (data_dir, ali_dir): a featurized data dir with CMVN and
    an ali dir whose labels the features carry (each frame's loudness, in num_pdfs levels)."""

    def make(durations, num_pdfs=6, cmvn_mean="global"):
        from asrkit.frontend.featurize import FeaturizeOptions, featurize_data_dir
        from asrkit.io.table import ShardWriter, TableReader, write_scp

        data_dir = make_data_dir(durations)
        featurize_data_dir(data_dir, str(tmp_path / "feats"),
                           options=FeaturizeOptions(compute_cmvn=True, cmvn_mean=cmvn_mean))
        ali_dir = tmp_path / "ali"
        shard = str(ali_dir / "ali.1.h5")
        with TableReader(os.path.join(data_dir, "feats.scp")) as feats, ShardWriter(shard) as ali:
            for utt, features in feats.items():
                energy = features.mean(axis=1)
                edges = np.quantile(energy, np.linspace(0, 1, num_pdfs + 1)[1:-1])
                ali.write(utt, np.searchsorted(edges, energy).astype(np.int32))
        write_scp(str(ali_dir / "ali.scp"), [shard])
        (ali_dir / "num_pdfs").write_text(f"{num_pdfs}\n")
        return data_dir, str(ali_dir)

    return make


@pytest.fixture
def train_ivectors(tmp_path):
    """train_ivectors(data_dir, period=4, use_dims=128) -> (extractor dir, i-vector dir): a tiny extractor (4
    Gaussians, 3-dim i-vectors on the first 128 dims: the first of the front end's stacked frames) trained on the
    data dir's features and online i-vectors of every utterance extracted per utterance."""

    def make(data_dir, period=4, use_dims=128):
        from asrkit.ivector.extract_dir import ExtractOptions, extract_ivectors
        from asrkit.ivector.online import OnlineOptions
        from asrkit.ivector.stats import PosteriorOptions
        from asrkit.ivector.train_dir import TrainOptions, train_extractor
        from asrkit.ivector.tv_train import TvOptions
        from asrkit.ivector.ubm import UbmOptions

        extractor_dir, ivector_dir = tmp_path / "extractor", tmp_path / "ivectors"
        options = TrainOptions(ubm=UbmOptions(num_gauss=4, num_iters=2), tv=TvOptions(ivector_dim=3, num_iters=2),
                               posterior=PosteriorOptions(num_gselect=2), use_dims=use_dims)
        train_extractor(data_dir, str(extractor_dir), options)
        extract_ivectors(data_dir, str(extractor_dir / "final.ie"), str(ivector_dir),
                         ExtractOptions(OnlineOptions(ivector_period=period)))
        return str(extractor_dir), str(ivector_dir)

    return make
