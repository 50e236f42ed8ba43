"""Cross-entropy training: examples, truncated and bucketed batchers, optimisers, the training loop."""
