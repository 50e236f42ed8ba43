import numpy as np
import pytest

from asrkit.frontend.config import FeatureConfig
from asrkit.frontend.filterbank import analysis_window, mel_filterbank, mel_scale


def test_mel_scale_matches_kaldi_formula():
    assert mel_scale(700.0) == pytest.approx(1127.0 * np.log(2.0))
    assert mel_scale(0.0) == 0.0


def test_windows():
    povey = analysis_window("povey", 512)
    hann = analysis_window("hanning", 512)
    np.testing.assert_allclose(povey, hann**0.85)
    assert hann[0] == 0.0 and hann[-1] == pytest.approx(0.0)
    assert analysis_window("hamming", 400)[0] == pytest.approx(0.08)


def test_filters_are_triangles_in_mel_and_cover_their_band():
    matrix = mel_filterbank(40, 512, 16000, 20.0, 0.0)
    assert matrix.shape == (257, 40)
    assert np.all(matrix[-1] == 0.0)  # the Nyquist bin carries no weight, as in Kaldi
    assert np.all(matrix.max(axis=0) <= 1.0) and np.all(matrix.max(axis=0) > 0.5)
    # Each FFT bin between two filter centres is shared by exactly those two filters.
    centers = np.argmax(matrix, axis=0)
    assert np.all(np.diff(centers) > 0)


def test_narrow_filters_interpolate_instead_of_vanishing():
    # The papers' front end: 128 filters from 125 Hz with a 512-point FFT.  Kaldi refuses it
    # because the lowest filters contain no FFT bin; asrkit reads them by interpolation.
    matrix = mel_filterbank(128, 512, 16000, 125.0, 0.0)
    sums = matrix.sum(axis=0)
    assert np.all(sums > 0)
    first = matrix[:, 0]
    assert np.count_nonzero(first) == 2 and first.sum() == pytest.approx(1.0)
    # The interpolation point is the filter's centre: between bins 4 (125 Hz) and 5 (156.25 Hz).
    assert set(np.flatnonzero(first)) == {4, 5}


def test_bad_ranges_are_refused():
    with pytest.raises(ValueError, match="low_freq < high_freq"):
        mel_filterbank(40, 512, 16000, 9000.0, 0.0)
    with pytest.raises(ValueError, match="fft_length"):
        FeatureConfig(fft_length=256)
    with pytest.raises(ValueError, match="compression"):
        FeatureConfig(compression="cubic")
