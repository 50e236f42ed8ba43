"""The acoustic front end: one TensorFlow implementation shared by asrkit-featurize and the example servers."""
