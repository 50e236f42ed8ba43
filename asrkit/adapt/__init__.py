"""Speaker adaptation of a trained acoustic model from a first decoding pass (asrkit-adapt)."""
