"""asrkit: a Kaldi-style toolkit that trains hybrid LSTM-HMM acoustic models on TensorFlow."""

__version__ = "0.1.0"


def __getattr__(name):
    # Recognizer is imported on first use, so that `import asrkit` stays light (no NumPy networks, no numba).
    if name == "Recognizer":
        # deferred: the package's one lazy export (tests/test_layers.py LAZY_EXPORTS)
        from asrkit.recognizer.recognizer import Recognizer

        return Recognizer
    raise AttributeError(f"module 'asrkit' has no attribute {name!r}")
