"""Training: the run (trainer.py) and its loop (loop.py), the criteria (criteria/: CE, CTC, LF-MMI, sMBR and MMI
behind one protocol), table example sources, truncated and bucketed batchers, steps, optimisers, distribution
strategies."""
