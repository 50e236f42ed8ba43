"""The inference core: the front end (samples to features, CMVN), the networks of every registry type and a model
dir's weights, in NumPy and numba, without TensorFlow.  Decoding, alignment, export and recognition all run it;
TensorFlow stays for training (asrkit.nn)."""
