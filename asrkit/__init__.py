"""asrkit: a Kaldi-style toolkit that trains hybrid LSTM-HMM acoustic models on TensorFlow."""

__version__ = "0.1.0"
