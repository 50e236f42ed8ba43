"""What the stages of training exchange about examples, below both the example servers and the trainers.

- messages: Example (one utterance's features and targets) and OuterDerivatives
  (sequence training's per-frame payload), as example sources yield them
- alignments: an alignment dir's targets, and an alignment fitted to its features
- randomisation: the epoch orders of the training utterances (tables and servers alike)
- queues: a bounded-queue put that a stopping consumer cannot leave hanging

asrkit.example_servers (servers, their wire format and the trainer's client),
asrkit.sequence (outer derivatives) and asrkit.train (table sources, batchers,
the loop) all build on these; nothing here imports them.
"""
