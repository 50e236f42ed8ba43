"""Decoding: log-likelihoods through HCLG to words, lattices and scores (asrkit-decode)."""
