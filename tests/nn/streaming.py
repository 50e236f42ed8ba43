"""Truncated training windows through a network, each output row given back to its utterance: what the
networks' streaming tests compare with each utterance run alone."""

import numpy as np

from asrkit.train.examples import ListExamples
from asrkit.train.truncated_batcher import TruncatedBatcher


def stream_windows(net, examples, streams, unroll, group=1):
    """Runs the batcher's windows of `examples` (targets set) through net.window, carrying the state.  Returns
    ({utterance id: the logits of its frames with mask 1, in order}, {utterance id: the stream position where it
    started, modulo `group`}).  Utterances start (reset = 1) in the batcher's pull order when read batch by batch,
    row by row, frame by frame."""
    batcher = TruncatedBatcher(ListExamples(examples), num_streams=streams, unroll=unroll,
                               feature_dim=examples[0].features.shape[1], label_delay=net.label_delay)
    state = net.zero_state(streams)
    pulled = iter(examples)
    current, offsets = [None] * streams, {}
    outputs = {example.utterance_id: [] for example in examples}
    for index, batch in enumerate(batcher):
        logits, state = net.window(batch.features, state, batch.reset)
        logits = logits.numpy()
        for row in range(streams):
            for t in range(unroll):
                if batch.reset[row, t]:
                    current[row] = next(pulled).utterance_id
                    offsets[current[row]] = (index * unroll + t) % group
                if batch.mask[row, t]:
                    outputs[current[row]].append(logits[row, t])
    assert next(pulled, None) is None, "the batcher left utterances out"
    return {utterance: np.stack(rows) for utterance, rows in outputs.items()}, offsets
