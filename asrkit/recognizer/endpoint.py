"""Endpoint detection for streaming recognition: when has the speaker finished a segment?

The rules are those of Kaldi's online2 (online-endpoint.h, Povey et al.'s Kaldi toolkit): a rule fires
when all of its conditions hold, and an endpoint is detected when any rule fires.  A rule's conditions:

- `must_contain_nonsilence`: the best path so far has a speech frame (not every frame is silence);
- `min_trailing_silence` (seconds): the best path ends in at least this much silence;
- `max_relative_cost`: the best path that ends in a final state of the graph costs at most this much more
  than the best path (how "final" the decoder thinks the segment is; inf when no token is final, which
  only a rule with an infinite limit accepts);
- `min_utterance_length` (seconds): the segment is at least this long.

Kaldi's defaults, kept here: rule 1, 5 s of silence with nothing decoded (the speaker said nothing);
rule 2, 0.5 s of silence after speech when the segment may well end (relative cost <= 2); rule 3, 1 s
when it might (<= 8); rule 4, 2 s whatever the cost; rule 5, a segment of 20 s whatever was said.

Silence is measured on the best partial path, frame by frame, by its pdf (asrkit's graphs have input
label pdf + 1, not Kaldi's transition ids, so the phone of a frame is not at hand): a frame is silence
when its pdf is one that only silence phones emit (asrkit.hmm.tree.ContextDependency
.pdfs_of_phones_only, as sMBR's and the confidence scores' silence pdfs are).  `silence_pdfs_of_package`
reads them from a package's tree and silence phones; a package without them has no silence pdfs, and
then only rule 5 (and rules without a trailing-silence condition) can fire.
"""

import dataclasses
import math
import os

import numpy as np

from asrkit.hmm.tree import ContextDependency


@dataclasses.dataclass(frozen=True)
class EndpointRule:
    must_contain_nonsilence: bool = True
    min_trailing_silence: float = 1.0
    max_relative_cost: float = math.inf
    min_utterance_length: float = 0.0

    def fires(self, contains_nonsilence, trailing_silence, relative_cost, utterance_length):
        return ((contains_nonsilence or not self.must_contain_nonsilence)
                and trailing_silence >= self.min_trailing_silence
                and relative_cost <= self.max_relative_cost
                and utterance_length >= self.min_utterance_length)


KALDI_MAX_UTTERANCE_LENGTH = 20.0

KALDI_RULES = (
    EndpointRule(False, 5.0, math.inf, 0.0),
    EndpointRule(True, 0.5, 2.0, 0.0),
    EndpointRule(True, 1.0, 8.0, 0.0),
    EndpointRule(True, 2.0, math.inf, 0.0),
    EndpointRule(False, 0.0, math.inf, KALDI_MAX_UTTERANCE_LENGTH),
)


@dataclasses.dataclass
class EndpointConfig:
    """The rules (Kaldi's by default) and the frame shift of the decoder's frames, in seconds."""

    rules: tuple = KALDI_RULES
    frame_shift: float = 0.03

    @classmethod
    def with_max_length(cls, max_utterance_length, frame_shift=0.03, min_trailing_silence=None):
        """Kaldi's rules with rule 5's length (and, given, rule 2's trailing silence) changed."""
        rules = list(KALDI_RULES)
        rules[4] = dataclasses.replace(rules[4], min_utterance_length=float(max_utterance_length))
        if min_trailing_silence is not None:
            rules[1] = dataclasses.replace(rules[1], min_trailing_silence=float(min_trailing_silence))
        return cls(tuple(rules), frame_shift)


class EndpointDetector:
    """Applies an EndpointConfig to a decoder's best partial path (asrkit.recognizer.online_decoder.PartialPath).

    silence_pdfs: the pdfs that count as silence; num_pdfs: how many pdfs the model has.
    """

    def __init__(self, config, silence_pdfs, num_pdfs):
        self.config = config
        self.silence = np.zeros(num_pdfs, dtype=bool)
        self.silence[np.asarray(list(silence_pdfs), dtype=np.int64)] = True

    def rule_fired(self, partial):
        """The number (1-based) of the first rule that fires on `partial`, or 0 for none."""
        frames = len(partial.pdfs)
        if frames == 0:
            return 0
        trailing, shift = partial.trailing_frames_in(self.silence), self.config.frame_shift
        for number, rule in enumerate(self.config.rules, 1):
            if rule.fires(trailing < frames, trailing * shift, partial.final_relative_cost, frames * shift):
                return number
        return 0

    def kernel_rules(self):
        """The rules as OnlineDecoder.advance's `endpoint` (asrkit.decode.lattice_faster's R_* rows, the silence
        mask, the frame shift): checked inside the decoder's frame loop as rule_fired checks partial() after
        every frame."""
        rules = np.array([[rule.must_contain_nonsilence, rule.min_trailing_silence, rule.max_relative_cost,
                           rule.min_utterance_length] for rule in self.config.rules], dtype=np.float64)
        return rules.reshape(-1, 4), self.silence, float(self.config.frame_shift)


def silence_pdfs_of_package(package_dir):
    """The silence pdfs of a package directory: its silence_pdfs.txt if it has one (pdf ids, whitespace
    separated), else those of align/tree.json that only align/phones/silence.txt's phones emit; [] when
    neither is there."""
    listed = os.path.join(package_dir, "silence_pdfs.txt")
    if os.path.exists(listed):
        with open(listed, encoding="utf-8") as handle:
            return sorted(int(pdf) for pdf in handle.read().split())
    tree_path = os.path.join(package_dir, "align", "tree.json")
    phones_path = os.path.join(package_dir, "align", "phones", "silence.txt")
    if not (os.path.exists(tree_path) and os.path.exists(phones_path)):
        return []
    with open(phones_path, encoding="utf-8") as handle:
        return ContextDependency.read(tree_path).pdfs_of_phones_only(handle.read().split())
