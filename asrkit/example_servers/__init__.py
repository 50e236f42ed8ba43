"""Example servers (docs/design.md): featurize and noisify on CPUs, stream examples to trainers.

- wire: the message format (SequenceExample per utterance; the handshake fields)
- producer: one example from audio (or a feats table), CMVN and alignments
- server: ExampleServer, one shard onto a ZeroMQ PUSH socket
- client: ServerExamples, the trainer's PULL side, an example source for the batchers
- local: example servers the trainer starts itself (local:N), restarted when they die
- security: loopback by default, CURVE keys for anything else
- connect: the trainer's --example-servers option turned into a running source
"""
