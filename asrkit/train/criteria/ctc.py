"""Connectionist temporal classification ([Variani2017] and [Variani2017-15k], section 3): `asrkit-train-ce --criterion ctc`.

The network's outputs are phones plus a blank: output k is phone id k of the
alignment dir's phones.txt, and output 0 (phones.txt's <eps>) is the blank, so
the per-frame phone alignments (phone_ali.scp) are the targets as they are and
travel through the same batchers, example servers and wire format as pdf
alignments.  A step turns each utterance's frame phones into its label sequence
(a run of frames of one phone is one label) and minimises tf.nn.ctc_loss over
whole utterances: CTC needs the complete label sequence, so only --mode full
trains it.  Two instances of the same phone back to back (across a word
boundary, say) are one run in a frame alignment and become one label; the loss
is then that of a sequence one label short, which the blank-free transition
between them allows.

The loss and the gradients are per label (the loss sum over the labels of the
step), and what the logs call frame accuracy is the label accuracy of greedy
(best-path) decoding, 1 - edits / labels.

The exported model (asrkit.nn.model_dir) says `"outputs": "ctc-phones"` in
model.json and holds phones.txt; its priors are the CTC label frequencies, the
blank's being one per frame that is not a label's first (Eesen's practice of
dividing posteriors by label priors).  utils/mkgraph builds its decoding graph
with the CTC topology (asrkit.graph.ctc_topology).
"""

import logging

import numpy as np

from asrkit.errors import AsrkitError
from asrkit.training_examples.alignments import fit_alignment, read_alignment
from asrkit.graph.ctc_topology import BLANK
from asrkit.graph.graph_dir import CTC_OUTPUTS
from asrkit.io.table import TableReader
from asrkit.tf_runtime import import_tensorflow
from asrkit.train.steps import Steps, _time_major_targets
from asrkit.train.criteria.ce import CrossEntropyCriterion

tf = import_tensorflow()

logger = logging.getLogger("asrkit.train")



def label_sequence(frame_phones):
    """The CTC labels of one utterance's per-frame phones: one label per run (numpy, [T] -> [L])."""
    frame_phones = np.asarray(frame_phones)
    if len(frame_phones) == 0:
        return frame_phones
    starts = np.concatenate([[True], frame_phones[1:] != frame_phones[:-1]])
    return frame_phones[starts]


def label_counts(ali_scp, utterance_ids, num_outputs, num_frames_of, tolerance=1):
    """Occurrences of each label in the training utterances' label sequences; the blank's count is the frames
    that start no label.  num_frames_of(utterance id) gives the features' frame count."""
    counts = np.zeros(num_outputs, np.int64)
    with TableReader(ali_scp) as alignments:
        for utterance_id in utterance_ids:
            fitted = fit_alignment(read_alignment(alignments, utterance_id, ali_scp), num_frames_of(utterance_id),
                                   tolerance)
            labels = label_sequence(fitted)
            counts += np.bincount(labels, minlength=num_outputs)
            counts[BLANK] += len(fitted) - len(labels)
    return counts


def ctc_sums(logits, targets, mask, label_delay=0):
    """(CTC loss sum, labels minus greedy-decoding edits, labels) of a batch of whole utterances.

    logits [T, b, K] time-major; targets [T, b] per-frame phone ids (< 0 where unlabelled: padding and the
    first label_delay frames); mask [T, b] 1 on real frames.  With a label delay d, the output at frame t + d
    is the one decoding keeps for frame t (asrkit.nn.label_delay), so the first d outputs are left out.
    """
    logits, targets, mask = logits[label_delay:], targets[label_delay:], mask[label_delay:]
    labelled = targets >= 0
    previous = tf.concat([tf.fill([1, tf.shape(targets)[1]], -1), targets[:-1]], axis=0)
    starts = tf.logical_and(labelled, tf.not_equal(targets, previous))
    labels = tf.ragged.boolean_mask(tf.transpose(targets), tf.transpose(starts))  # [b, (L)]
    label_length = tf.cast(labels.row_lengths(), tf.int32)
    logit_length = tf.cast(tf.reduce_sum(mask, axis=0), tf.int32)
    losses = tf.nn.ctc_loss(labels=labels.to_tensor(default_value=0), logits=logits, label_length=label_length,
                            logit_length=logit_length, logits_time_major=True, blank_index=BLANK)
    # A row without labels (a padding row of a short batch) adds nothing.
    loss_sum = tf.reduce_sum(tf.where(label_length > 0, losses, tf.zeros_like(losses)))
    decoded, _ = tf.nn.ctc_greedy_decoder(logits, logit_length, blank_index=BLANK)
    edits = tf.edit_distance(decoded[0], tf.cast(labels.to_sparse(), tf.int64), normalize=False)
    count = tf.cast(tf.reduce_sum(label_length), tf.float32)
    return loss_sum, count - tf.reduce_sum(edits), count


class CtcSteps(Steps):
    """Steps with the CTC loss in place of the frame cross-entropy; whole utterances only."""

    def _full_sums(self, features, targets, mask):
        logits = self.net.sequence_time_major(tf.transpose(features, [1, 0, 2]))
        return ctc_sums(logits, _time_major_targets(targets), tf.transpose(mask), self.net.label_delay)

    def _truncated(self, features, targets, mask, reset):
        raise AsrkitError("CTC trains on whole utterances: use --mode full")

    def _evaluate(self, features, targets, mask):
        return self._full_sums(features, targets, mask)


class CtcCriterion(CrossEntropyCriterion):
    """asrkit-train-ce's loop with phone targets and the CTC loss (see the module docstring)."""

    name = "ctc"
    targets = "phones"
    model_outputs = CTC_OUTPUTS
    context_files = ("phones.txt",)  # no tree.json: the outputs are phones, not the tree's pdfs

    def __init__(self, params, init_model=None):
        if params.mode != "full":
            raise AsrkitError("--criterion ctc needs whole utterances (the loss is over an utterance's label "
                              "sequence): add --mode full")
        super().__init__(params, init_model)

    def steps_class(self):
        return CtcSteps

    def server_options(self):
        return ["--targets", self.targets]

    def pdf_counts(self, data):
        with TableReader(data.train.feats_scp) as feats:
            counts = label_counts(data.train.ali_scp, data.train.utterance_ids, data.num_pdfs,
                                  lambda utterance_id: feats.shape(utterance_id)[0], self.params.max_length_mismatch)
        logger.info("CTC label priors: blank %.3f of %d frames", counts[BLANK] / max(counts.sum(), 1), counts.sum())
        return counts
