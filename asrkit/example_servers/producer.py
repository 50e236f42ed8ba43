"""Making one training example: audio -> noisified -> features -> normalised, paired with its targets.

An ExampleProducer owns everything an example server reads: the data dir, the
feature config (the data dir's conf/featurize.json, so features match the ones
the model was set up for), the CMVN statistics, the alignment table and,
optionally, a style config for on-the-fly noisification.  With `from_feats` it
reads the features table instead of audio (no noisification then).

With `ivectors` (an asrkit.ivector.append.OnlineIvectorAppender) every
example's normalised features get the online i-vectors of the features served
(the noisy ones when noisifying, before CMVN, as the table path's
asrkit-extract-ivectors reads feats.scp) appended.  They are extracted per
utterance: a server serves its shard in a shuffled order, so the speaker's
earlier utterances that carry-over (asrkit-extract-ivectors --per-speaker)
would start from are not at hand, and in a later epoch they would carry other
noise; every utterance starting afresh is also what a decoder without speaker
history sees.

`produce(utterance_id, epoch)` returns (features, targets) or raises
SkipUtterance with the reason; the server counts and logs skips.
"""

import json
import logging
import os

import numpy as np

from asrkit.augment.speed import stretch_alignment
from asrkit.data.audio import load_utterance_audio
from asrkit.data.data_dir import DataDir
from asrkit.errors import AsrkitError, AudioError
from asrkit.training_examples.alignments import alignment_targets, fit_alignment, read_alignment, target_problem
from asrkit.frontend.apply_cmvn import UtteranceCmvn
from asrkit.frontend.cmvn import CmvnStats
from asrkit.frontend.config import FeatureConfig
from asrkit.frontend.features import FeatureExtractor
from asrkit.frontend.warp import warped_audio
from asrkit.io.table import TableReader

logger = logging.getLogger("asrkit.example_servers")


class SkipUtterance(Exception):
    """This utterance gives no example (unreadable audio, alignment off, ...); `permanent` ones are not retried."""

    def __init__(self, reason, permanent=True):
        super().__init__(reason)
        self.permanent = permanent


def epoch_seed(seed, epoch):
    """The noisifier's seed in an epoch: each pass gets other styles and noise for the same utterance."""
    return int(seed) * 1_000_003 + int(epoch)


def read_feature_config(data_dir):
    path = os.path.join(data_dir, "conf", "featurize.json")
    try:
        with open(path, encoding="utf-8") as handle:
            return FeatureConfig.from_dict(json.load(handle))
    except FileNotFoundError:
        raise AsrkitError(f"{path} does not exist (fix: featurize {data_dir} with asrkit-featurize "
                          "--compute-cmvn; the servers use its feature config and CMVN)") from None
    except ValueError as error:
        raise AsrkitError(f"{path}: {error}") from None


class ExampleProducer:
    def __init__(self, data_dir, ali_dir, utterance_ids=None, cmvn_path=None, from_feats=False, styles_path=None,
                 seed=1, tolerance=1, num_threads=1, babble_pool_size=50, targets="pdfs", ivectors=None):
        if from_feats and styles_path:
            raise AsrkitError("--styles noisifies audio; it cannot be combined with --from-feats")
        self.data_dir = data_dir
        self.from_feats = from_feats
        self.seed = seed
        self.tolerance = tolerance
        self.ivectors = ivectors
        self.feature_config = read_feature_config(data_dir)
        ali_scp, self.num_pdfs = alignment_targets(ali_dir, targets)
        self.targets = targets
        self.ali_scp = ali_scp
        cmvn_path = cmvn_path or os.path.join(data_dir, "cmvn.h5")
        if not os.path.exists(cmvn_path):
            raise AsrkitError(f"{cmvn_path} does not exist (fix: featurize {data_dir} with --compute-cmvn or pass "
                              "--cmvn)")
        self.cmvn = CmvnStats.read(cmvn_path)
        self.normalize = UtteranceCmvn(self.cmvn, data_dir)
        self._alignments = TableReader(ali_scp)
        self._feats = self._data = self._extractor = self.noisifier = None
        if from_feats:
            feats_scp = os.path.join(data_dir, "feats.scp")
            if not os.path.exists(feats_scp):
                raise AsrkitError(f"{feats_scp} does not exist (--from-feats reads the features table)")
            self._feats = TableReader(feats_scp)
            available = self._feats.keys()
        else:
            self._data = DataDir.load(data_dir)
            available = list(self._data.utterance_ids)
        self.feature_dim = (self._feats.shape(available[0])[1] if from_feats and available
                            else self.feature_config.feature_dim)
        if self.cmvn.dim != self.feature_dim:
            raise AsrkitError(f"CMVN statistics {cmvn_path} are {self.cmvn.dim}-dim, the features {self.feature_dim}")
        known = set(available)
        wanted = available if utterance_ids is None else [u for u in utterance_ids if u in known]
        self.missing_alignment = [u for u in wanted if u not in self._alignments]
        self.utterance_ids = sorted((u for u in wanted if u in self._alignments), key=lambda u: u.encode())
        if not from_feats:
            self._extractor = FeatureExtractor(self.feature_config, num_threads=num_threads)
        self._styles_path = styles_path
        self._babble_pool_size = babble_pool_size

    @property
    def input_dim(self):
        """The dimension of what is served: the features, and the i-vectors appended to them."""
        return self.feature_dim + (self.ivectors.ivector_dim if self.ivectors is not None else 0)

    @property
    def frame_shift_ms(self):
        return self.feature_config.output_frame_shift_ms

    def audio_options(self):
        return self.feature_config.audio_options()

    def prepare_noisifier(self, shard_utterance_ids):
        """Load the style config and, when a style makes babble, a pool of this shard's utterances."""
        if not self._styles_path:
            return
        # deferred: the noisifier brings scipy.signal and PyWavelets (~1 s CPU), paid only by servers with --styles;
        # servers start in numbers (--example-servers local:N) while their trainer waits.
        from asrkit.augment.noise import BabblePool
        from asrkit.augment.noisifier import Noisifier
        from asrkit.augment.styles import load_style_config

        config = load_style_config(self._styles_path)
        babble = None
        if config.uses_babble():
            rng = np.random.default_rng([self.seed, 104729])
            count = min(self._babble_pool_size, len(shard_utterance_ids))
            chosen = [shard_utterance_ids[i] for i in sorted(rng.choice(len(shard_utterance_ids), count, False))]
            loaded = []
            for utterance_id in chosen:
                try:
                    loaded.append((utterance_id, load_utterance_audio(self._data, utterance_id, self.audio_options())))
                except AudioError as error:
                    logger.warning("babble pool: skipping %s", error)
            babble = BabblePool(loaded, self.feature_config.sample_rate)
            logger.info("babble pool: %d utterances of this shard", len(babble))
        self.noisifier = Noisifier(config, self.seed, babble_source=babble)
        logger.info("noisifying on the fly with %d styles from %s", len(config.styles), self._styles_path)

    def _features(self, utterance_id, epoch):
        """(features, noisification params, the clean features when these were noisified and the speaker's
        statistics need moving into the noise's condition, else None)."""
        if self.from_feats:
            try:
                return np.asarray(self._feats[utterance_id], dtype=np.float32), {}, None
            except Exception as error:  # h5py raises several kinds for a damaged shard
                raise SkipUtterance(f"cannot read its features: {error}") from None
        try:
            samples = load_utterance_audio(self._data, utterance_id, self.audio_options())
        except AudioError as error:
            raise SkipUtterance(str(error)) from None
        samples = warped_audio(self._data, utterance_id, samples, self.audio_options().sample_rate)
        params = {}
        clean_samples = samples
        if self.noisifier is not None:
            self.noisifier.seed = epoch_seed(self.seed, epoch)
            try:
                samples, params = self.noisifier.apply(samples, utterance_id, self.feature_config.sample_rate)
            except AudioError as error:
                # A silent utterance has no SNR to aim at: train on it clean rather than not at all.
                logger.debug("noisify %s: %s; serving it clean", utterance_id, error)
                params = {"style": "clean (noisify failed)"}
        features = self._extractor(samples)
        if len(features) == 0:
            raise SkipUtterance(f"{len(samples)} samples is shorter than one analysis window")
        clean_features = None
        noisified = samples is not clean_samples and not (
            len(samples) == len(clean_samples) and np.array_equal(samples, clean_samples))
        if noisified and self.normalize.speakers is not None:
            clean_features = self._extractor(clean_samples)
        return features, params, clean_features

    def produce(self, utterance_id, epoch):
        """(normalised features [T, D] float32 with the i-vectors [T, R] appended, if any, targets [T] int32,
        style or None)."""
        features, params, clean_features = self._features(utterance_id, epoch)
        raw_targets = read_alignment(self._alignments, utterance_id, self.ali_scp)
        if "speed" in params:
            # Speed perturbation re-timed the utterance: its alignment follows, frame for relative time, once
            # its length says it is this utterance's (one more frame of slack for the rounding).
            expected = len(raw_targets) / params["speed"]
            if abs(len(features) - expected) > self.tolerance + 1:
                raise SkipUtterance(f"alignment has {len(raw_targets)} frames, so about {expected:.0f} at speed "
                                    f"{params['speed']:g}, but the features have {len(features)}")
            raw_targets = stretch_alignment(raw_targets, len(features))
        targets = fit_alignment(raw_targets, len(features), self.tolerance)
        if targets is None:
            raise SkipUtterance(f"alignment has {len(raw_targets)} frames, features {len(features)} "
                                f"(more than {self.tolerance} apart)")
        problem = target_problem(targets, self.num_pdfs, self.targets)
        if problem is not None:
            raise SkipUtterance(problem)
        normalized = self.normalize(utterance_id, features, clean_features)
        if self.ivectors is not None:
            normalized = self.ivectors.append(utterance_id, features, normalized)
        return normalized, targets, params.get("style")

    def close(self):
        self._alignments.close()
        if self._feats is not None:
            self._feats.close()
