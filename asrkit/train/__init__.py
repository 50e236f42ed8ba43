"""Training: the run (trainer.py) and its loop (loop.py), the criteria (criterion.py: CE; ctc.py; seq_trainer.py:
sMBR and MMI), table example sources, truncated and bucketed batchers, steps, optimisers, distribution strategies."""
