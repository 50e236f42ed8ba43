"""asrkit.inference.resample against scipy.signal.resample_poly, which asrkit.data.audio uses."""

import numpy as np
import pytest
from scipy.signal import resample_poly

from asrkit.inference.resample import resample
from tests.conftest import speech_like


@pytest.mark.parametrize("rate,target", [(11025, 8000), (16000, 8000), (8000, 16000), (44100, 16000),
                                         (48000, 8000), (22050, 16000), (12000, 8000)])
def test_equals_resample_poly(rate, target):
    rng = np.random.default_rng(rate)
    for signal in (speech_like(0.7, rate, seed=1), rng.uniform(-1, 1, 997).astype(np.float32),
                   rng.uniform(-1, 1, 3).astype(np.float32)):
        expected = resample_poly(signal, target // np.gcd(rate, target), rate // np.gcd(rate, target))
        ours = resample(signal, rate, target)
        assert ours.dtype == np.float32 and ours.shape == expected.shape
        np.testing.assert_allclose(ours, expected, atol=2e-6)


def test_same_rate_and_long_signals():
    signal = speech_like(0.3, 8000)
    assert np.array_equal(resample(signal, 8000, 8000), signal)
    long = np.random.default_rng(0).uniform(-1, 1, 70000).astype(np.float32)  # several output chunks
    np.testing.assert_allclose(resample(long, 11025, 8000), resample_poly(long, 320, 441), atol=2e-6)


@pytest.mark.parametrize("rate, target", [(16000, 8000), (44100, 8000), (8000, 16000), (11025, 8000), (8000, 8000)])
def test_a_stream_in_pieces_resamples_as_the_whole(rate, target):
    """StreamResampler over pieces of any size (empty ones too) gives resample()'s samples of the whole, keeping
    only the filter's span of input."""
    from asrkit.inference.resample import StreamResampler

    rng = np.random.default_rng(rate + target)
    samples = (rng.standard_normal(int(rng.integers(5000, 20000))) * 0.3).astype(np.float32)
    resampler, pieces, start = StreamResampler(rate, target), [], 0
    while start < len(samples):
        size = int(rng.integers(0, 2000))
        pieces.append(resampler.accept(samples[start : start + size]))
        start += size
        assert len(resampler.buffer) <= resampler.phases + size
    pieces.append(resampler.finish())
    np.testing.assert_array_equal(np.concatenate(pieces), resample(samples, rate, target))
