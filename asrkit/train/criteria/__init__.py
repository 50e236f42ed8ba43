"""The training criteria, one module each, behind one interface (protocol.Criterion) and one run
(asrkit.train.trainer.run_training), which registry.make_criterion hands the criterion a run's params name:

- ce.py: frame cross-entropy on the tree's pdfs (asrkit-train-ce --criterion ce)
- ctc.py: CTC over phones and a blank (--criterion ctc)
- lfmmi.py: lattice-free MMI from scratch (--criterion lfmmi)
- sequence.py: sMBR and the MMI family from the example servers' outer derivatives (asrkit-train-seq)
"""
