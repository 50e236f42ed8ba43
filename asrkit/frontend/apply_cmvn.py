"""Normalising a data dir's utterances as a model was trained: Kaldi's apply-cmvn, one utterance at a time.

`UtteranceCmvn(cmvn, data_dir)` binds the statistics a model was trained with
(its cmvn.h5, a CmvnStats) to the data dir whose utterances are normalised.
With the global or utterance mean nothing of the data dir is needed.  With the
speaker mean, the speaker's statistics are those of *this* data dir's speakers
(its spk_cmvn.h5, written by asrkit-featurize --cmvn-mean speaker, and its
utt2spk), as Kaldi computes per-speaker CMVN for the test set from the test set;
or, with `online`, the running estimate of asrkit.frontend.online_cmvn, which
needs nothing but the utterance itself and the training statistics.

Every stage that normalises (training from tables, the example servers, tree
statistics, alignment and decoding) goes through this class, so they agree.
"""

import os

from asrkit.data.kaldi_files import read_kaldi_map
from asrkit.errors import AsrkitError
from asrkit.frontend.cmvn import SPEAKER_CMVN_FILE, SpeakerCmvn
from asrkit.frontend.online_cmvn import normalize_online


class UtteranceCmvn:
    def __init__(self, cmvn, data_dir=None, online=None):
        """cmvn: CmvnStats; online: an OnlineCmvnOptions to use online CMN instead of whole-speaker or
        whole-utterance statistics (None: the statistics cmvn names; a model trained with online CMN keeps
        its own options)."""
        self.cmvn = cmvn
        self.data_dir = None if data_dir is None else os.fspath(data_dir)
        self.online = online
        self.speakers = self.utt2spk = None
        if cmvn.mean_norm == "speaker" and online is None:
            self.speakers, self.utt2spk = read_speaker_cmvn(self.data_dir, cmvn.dim)

    def describe(self):
        if self.cmvn.mean_norm == "online":  # the model's own options, whatever --cmvn-online's
            options = self.cmvn.online_options
            return (f"online CMN as trained (window {options.window}, {options.prior_frames} prior frames), "
                    f"{self.cmvn.var_norm} variance")
        if self.online is not None and self.cmvn.mean_norm != "global":
            rule = f", {self.online.rule}'s rule"
            return (f"online CMN (window {self.online.window}, {self.online.prior_frames} prior frames{rule}), "
                    f"{self.cmvn.var_norm} variance")
        if self.cmvn.mean_norm == "speaker":
            return f"speaker mean ({self.speakers.path}), {self.cmvn.var_norm} variance"
        return f"{self.cmvn.mean_norm} mean, global variance"

    def speaker_moments(self, utterance_id):
        """The Moments of the utterance's speaker in this data dir (speaker CMVN only)."""
        try:
            speaker = self.utt2spk[utterance_id]
        except KeyError:
            raise AsrkitError(f"utterance {utterance_id} has no speaker in {self.utt2spk.path} (speaker CMVN "
                              "needs one; fix: add it to utt2spk and featurize the data dir again)") from None
        return self.speakers.moments(speaker, utterance_id)

    def __call__(self, utterance_id, features, clean_features=None):
        """features [T, D] of `utterance_id` normalised, float32.

        clean_features: the utterance before noisification, when `features` were noisified on the fly.
        The speaker's statistics (of clean audio) are then moved into this utterance's condition by what
        the noise did to this utterance's own statistics (Moments.in_condition): at test time a speaker's
        statistics are measured in the speaker's own (noisy) condition, so removing the clean mean from
        noisy frames would leave in training an offset that test features never have.
        """
        if self.online is not None and self.cmvn.mean_norm != "online":
            return normalize_online(self.cmvn, features, self.online)
        if self.cmvn.mean_norm != "speaker":
            return self.cmvn.normalize(features)
        speaker = self.speaker_moments(utterance_id)
        if clean_features is not None and len(clean_features):
            speaker = speaker.in_condition(clean_features, features)
        return self.cmvn.normalize(features, speaker=speaker)


def read_speaker_cmvn(data_dir, dim):
    """(SpeakerCmvn, utt2spk) of a data dir featurized with --cmvn-mean speaker, checked."""
    if data_dir is None:
        raise AsrkitError("speaker CMVN needs the data dir's per-speaker statistics, and no data dir was given")
    path, utt2spk_path = os.path.join(data_dir, SPEAKER_CMVN_FILE), os.path.join(data_dir, "utt2spk")
    if not os.path.exists(path):
        raise AsrkitError(f"{path} does not exist: the model normalises with each speaker's mean (fix: "
                          f"asrkit-featurize --cmvn-mean speaker {data_dir} <feat-dir>, or decode with --cmvn-online)")
    if not os.path.exists(utt2spk_path):
        raise AsrkitError(f"{utt2spk_path} does not exist: speaker CMVN needs each utterance's speaker")
    speakers = SpeakerCmvn.read(path)
    if speakers.dim != dim:
        raise AsrkitError(f"{path} holds {speakers.dim}-dim statistics, the model's CMVN {dim}-dim")
    return speakers, read_kaldi_map(utt2spk_path)
