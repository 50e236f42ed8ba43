"""Data augmentation for multi-style training: VTLP, simulated reverberation, additive noise.

The same code serves the example servers (online, one utterance at a time) and
asrkit-noisify (offline, fixed noisy copies of test sets), so that a noisy
test set is noisified exactly as training data is:

    from asrkit.augment.noisifier import Noisifier
    from asrkit.augment.styles import load_style_config

    noisifier = Noisifier(load_style_config("conf/noise_styles.json"), seed=7)
    noisy, params = noisifier.apply(samples, utterance_id, sample_rate=16000)

Modules: levels (active speech power, wavelet noise floor), noise (built-in
noise colours, noise lists, babble, SNR mixing), rir (image-source room impulse
responses, FFT convolution), vtlp (bilinear frequency warping with
resynthesis), styles (the style config and per-utterance sampling), noisifier
(the per-utterance chain), noisify (the data-dir runner behind asrkit-noisify).
NumPy, SciPy and PyWavelets only: no TensorFlow is imported here.
"""
