"""Where the decoder's log-likelihoods come from.

A LoglikeSource gives, per utterance, a float32 matrix [frames, num_pdfs] of
log-likelihoods log p(x|pdf) up to a constant per frame (for a hybrid model:
log posterior - log prior), not yet scaled by the acoustic scale.  Two sources:
a table (asrkit-decode --loglikes) and an exported acoustic model run over a
data dir's features (ModelLoglikes) by the inference core (asrkit.inference: NumPy, no TensorFlow).
Sources are pickled into the decoding jobs, so they hold paths and open files and models lazily.
"""

import os
import typing

import numpy as np

from asrkit.data.audio import UtteranceAudio
from asrkit.data.data_dir import DataDir
from asrkit.data.kaldi_features import refuse_kaldi_features
from asrkit.decode.speaker_models import SpeakerModels
from asrkit.errors import AsrkitError
from asrkit.frontend.apply_cmvn import UtteranceCmvn
from asrkit.frontend.cmvn import CmvnStats
from asrkit.frontend.finite import check_finite
from asrkit.frontend.warp import warped_audio
from asrkit.inference.frontend import Analysis, features
from asrkit.inference.model_dir import load_inference_model
from asrkit.io.json_file import read_json
from asrkit.io.table import TableReader
from asrkit.ivector.append import OnlineIvectorAppender


class LoglikeSource(typing.Protocol):
    def num_pdfs(self) -> int:
        """Columns of every matrix this source gives."""

    def utterance_ids(self) -> list:
        """The utterances this source can give."""

    def loglikes(self, utterance_id) -> np.ndarray:
        """[frames, num_pdfs] float32 log-likelihoods of one utterance."""

    def describe(self) -> str:
        """For logs and error messages."""


class TableLoglikes:
    """Log-likelihoods read from an asrkit table (`name.scp` over HDF5 shards)."""

    def __init__(self, scp_path):
        self.scp_path = str(scp_path)
        self._table = None

    def __getstate__(self):
        return {"scp_path": self.scp_path, "_table": None}

    @property
    def table(self):
        if self._table is None:
            self._table = TableReader(self.scp_path)
        return self._table

    def utterance_ids(self):
        return self.table.keys()

    def num_pdfs(self):
        keys = self.table.keys()
        if not keys:
            raise AsrkitError(f"log-likelihood table {self.scp_path} is empty")
        shape = self.table.shape(keys[0])
        if len(shape) != 2:
            raise AsrkitError(f"{self.scp_path}: {keys[0]} has shape {shape}; log-likelihoods are [frames, num_pdfs]")
        return int(shape[1])

    def loglikes(self, utterance_id):
        matrix = np.asarray(self.table[utterance_id], dtype=np.float32)
        if matrix.ndim != 2:
            raise AsrkitError(f"{self.scp_path}: {utterance_id} has shape {matrix.shape}, not [frames, num_pdfs]")
        return check_finite(matrix, utterance_id, self.scp_path, "log-likelihoods", allow_minus_inf=True)

    def describe(self):
        return f"table {self.scp_path}"

    def close(self):
        if self._table is not None:
            self._table.close()
            self._table = None


class ModelLoglikes:
    """Log-likelihoods from an exported acoustic model (asrkit-train-ce's `final/`) over a data dir.

    Features come from the data dir's feats.scp when it has one, checked to be
    made with the model's front end; otherwise they are computed on the fly
    from the audio with the model's own feature config (featurize.json in the
    model dir) by the inference core's front end (asrkit.inference.frontend, equal to the example
    servers' TensorFlow one to float32 rounding).  The model and the tables are
    opened lazily, in the decoding job that uses them.  `prior_scale` scales the log priors that
    are subtracted from the log posteriors (asrkit.nn.model_dir.ExportedModel.log_likelihoods).

    The features are normalised as the model was trained (its cmvn.h5); with the speaker mean, by
    the speakers' statistics of this data dir (spk_cmvn.h5), or with `cmvn_online` (an
    OnlineCmvnOptions) by online CMN, one utterance at a time.

    A model trained with online i-vectors (its dir holds ivector.json and the extractor) gets them
    appended, extracted from each utterance's own features (before CMVN) as asrkit-extract-ivectors
    and the example servers do, each utterance afresh: an utterance decoded alone sees exactly what
    it sees in a batch.

    With `speaker_models` (an asrkit-adapt dir of this model) each utterance is run with its speaker's
    adapted weights (read into the same network when the speaker changes; the data dir's utterances are
    sorted by speaker), and a speaker that was not adapted with the model's own.

    `load_model` (a picklable function of the model dir) gives the model: by default the inference core's
    (asrkit.inference.model_dir); asrkit-adapt, which trains the model's speaker parameters, gives
    TensorFlow's.
    """

    def __init__(self, model_dir, data_dir, prior_scale=1.0, cmvn_online=None, speaker_models=None,
                 load_model=load_inference_model):
        self.model_dir = str(model_dir)
        self.data_dir = str(data_dir)
        self.load_model = load_model
        self.prior_scale = float(prior_scale)
        self.cmvn_online = cmvn_online
        self.speaker_models = None if speaker_models is None else str(speaker_models)
        self._speakers = None
        self._model = None
        self._features = None
        self._analysis = None
        self._data = None
        self._normalize = None
        self._ivectors = None

    def __getstate__(self):
        return {"model_dir": self.model_dir, "data_dir": self.data_dir, "load_model": self.load_model,
                "prior_scale": self.prior_scale, "cmvn_online": self.cmvn_online,
                "speaker_models": self.speaker_models, "_speakers": None, "_model": None, "_features": None,
                "_analysis": None, "_data": None, "_normalize": None, "_ivectors": None}

    @property
    def ivectors(self):
        """The model's OnlineIvectorAppender (asrkit.ivector.append), or None for a model trained without."""
        if self._ivectors is None:
            self._ivectors = OnlineIvectorAppender.from_model_dir(self.model_dir) or False
        return self._ivectors or None

    @property
    def normalize(self):
        """The model's CMVN for this data dir (asrkit.frontend.apply_cmvn.UtteranceCmvn); needs no network."""
        if self._normalize is None:
            cmvn = CmvnStats.read(os.path.join(self.model_dir, "cmvn.h5"))
            self._normalize = UtteranceCmvn(cmvn, self.data_dir, self.cmvn_online)
        return self._normalize

    @property
    def model(self):
        if self._model is None:
            self._model = self.load_model(self.model_dir)
        return self._model

    def _feats_scp(self):
        path = os.path.join(self.data_dir, "feats.scp")
        return path if os.path.exists(path) else None

    def check_front_end(self):
        """Refuse a model dir without a model, or a feats.scp made with another front end than the
        model's (naming the options that differ), before any job starts."""
        refuse_kaldi_features(self.data_dir, "asrkit's models read asrkit's features, or compute them from the "
                                             "audio when the data dir has no feats.scp", names=("feats.scp",))
        if not os.path.exists(os.path.join(self.model_dir, "model.json")):
            raise AsrkitError(
                f"{self.model_dir} holds no trained acoustic model (no model.json); give the log-likelihoods "
                "as a table with --loglikes, or a model dir written by asrkit-train-ce"
            )
        if self._feats_scp() is None:
            return
        model_config = read_json(os.path.join(self.model_dir, "featurize.json"))
        data_config = read_json(os.path.join(self.data_dir, "conf", "featurize.json"))
        differing = sorted(key for key in set(model_config) | set(data_config)
                           if model_config.get(key) != data_config.get(key))
        if differing:
            details = ", ".join(f"{key}: model {model_config.get(key)!r}, data {data_config.get(key)!r}"
                                for key in differing)
            raise AsrkitError(
                f"{self.data_dir}/feats.scp was made with another front end than the model in {self.model_dir} "
                f"({details}); featurize the data with the model's featurize.json (asrkit-featurize --feature-config), "
                "or remove feats.scp to featurize on the fly"
            )

    def check_cmvn(self):
        """Refuse, before any job starts, a data dir that lacks what the model's CMVN needs (the speakers'
        statistics with the speaker mean, unless online); returns its description for the log."""
        return self.normalize.describe()

    def num_pdfs(self):
        return int(read_json(os.path.join(self.model_dir, "model.json"))["num_pdfs"])

    def utterance_ids(self):
        if self._feats_scp() is not None:
            with TableReader(self._feats_scp()) as table:
                return table.keys()
        return list(DataDir.load(self.data_dir).utterance_ids)

    def _utterance_features(self, utterance_id):
        if self._feats_scp() is not None:
            if self._features is None:
                self._features = TableReader(self._feats_scp())
            return check_finite(self._features[utterance_id], utterance_id, self._feats_scp())
        if self._analysis is None:
            self._analysis = Analysis(self.model.feature_config)
            data = DataDir.load(self.data_dir)
            # Every utterance of the data dir: a recording whose last segment is another job's stays kept
            # to the end of this job (at most the two at its edges).
            self._data = UtteranceAudio(data, data.utterance_ids, self._analysis.config.audio_options())
        samples = warped_audio(self._data.data_dir, utterance_id, self._data(utterance_id),
                               self._analysis.config.sample_rate)
        computed = features(self._analysis.config, samples, self._analysis)
        return check_finite(computed, utterance_id, "the features computed from its audio")

    def network_input(self, utterance_id):
        """[frames, input dim] float32: the utterance's normalised features, with its i-vectors if the model
        takes them."""
        raw = self._utterance_features(utterance_id)
        features = self.normalize(utterance_id, raw)
        if self.ivectors is not None:
            features = self.ivectors.append(utterance_id, raw, features)
        return features

    def speakers(self):
        """(SpeakerModels, utt2spk) of --speaker-models, checked; None without."""
        if self.speaker_models is None:
            return None
        if self._speakers is None:
            utt2spk = DataDir.load(self.data_dir).utt2spk
            if not utt2spk:
                raise AsrkitError(f"{self.data_dir} has no utt2spk: speaker models need each utterance's speaker")
            self._speakers = (SpeakerModels(self.speaker_models, self.model_dir), utt2spk)
        return self._speakers

    def _use_speaker_model(self, utterance_id):
        models, utt2spk = self.speakers()
        wanted = models.model_of.get(utt2spk.get(utterance_id), self.model_dir)
        if self.model.weights_dir != wanted:
            self.model.reload_weights(wanted)

    def loglikes(self, utterance_id):
        if self.speaker_models is not None:
            self._use_speaker_model(utterance_id)
        loglikes = self.model.log_likelihoods_normalized(self.network_input(utterance_id), self.prior_scale)
        return check_finite(loglikes, utterance_id, f"the output of {self.model_dir}", "log-likelihoods",
                            allow_minus_inf=True)

    def describe(self):
        source = "feats.scp" if self._feats_scp() is not None else "features computed from the audio"
        priors = "" if self.prior_scale == 1.0 else f", prior scale {self.prior_scale:g}"
        try:
            cmvn = self.normalize.describe()
        except AsrkitError:  # described in error messages too, where the missing statistics are not the error
            cmvn = "CMVN statistics missing"
        try:
            ivectors = "" if self.ivectors is None else f", {self.ivectors.describe()}"
        except AsrkitError:
            ivectors = ", i-vector extractor missing"
        speakers = "" if self.speaker_models is None else f", speaker models {self.speaker_models}"
        return f"model {self.model_dir} on {self.data_dir} ({source}{priors}, {cmvn}{ivectors}{speakers})"

    def close(self):
        if self._features is not None:
            self._features.close()
            self._features = None
