"""Mean and variance normalisation statistics (docs/design.md).

Statistics are sums (count, sum, sum of squares, in float64) so that the
statistics of parallel jobs add up exactly; mean and standard deviation are
derived from them when features are normalised.

Four ways of removing the mean (`mean_norm`, recorded in the statistics file so
that every stage that reads it normalises alike):
- "global": the training set's mean (the papers' front end);
- "utterance": each utterance's own mean (Kaldi's per-utterance apply-cmvn),
  then the global within-utterance standard deviation.  Log-mel means carry the
  voice's and the channel's spectral envelope, so removing them per utterance
  takes away much of what separates a voice never heard in training from the
  training voices.  The statistics are then those of mean-removed frames.
- "speaker": each speaker's mean over all their utterances (Kaldi's apply-cmvn
  --utt2spk), from the per-speaker sums of the data dir being processed
  (SpeakerCmvn, spk_cmvn.h5), then the global within-speaker standard deviation,
  or with `var_norm` "speaker" the speaker's own.  A speaker's mean is estimated
  from many utterances, so it carries the voice and channel without the
  phonetic content one short utterance's mean also removes.
- "online": online CMN (asrkit.frontend.online_cmvn), in training as in decoding:
  each frame's mean is the running one of the utterance's frames so far, started
  from the training set's, then the global within-utterance standard deviation
  (as "utterance").  A model trained so sees at every frame only what a
  streaming recogniser has there, so streaming decodes with the same front end
  as training (Kaldi's chain recipes' online CMVN does the same).

Besides the statistics of mean-removed frames, the file keeps those of the raw
frames (`raw_*`): the training set's global mean that online CMN
(asrkit.frontend.online_cmvn) starts from before it has seen enough frames.
"""

import contextlib
import os

import h5py
import numpy as np

from asrkit.errors import AsrkitError, TableError
from asrkit.frontend.online_cmvn import OnlineCmvnOptions, online_moments
from asrkit.io.atomic import atomic_path


MEAN_NORMS = ("global", "utterance", "speaker", "online")
VAR_NORMS = ("global", "speaker")
SPEAKER_CMVN_FILE = "spk_cmvn.h5"  # a data dir's per-speaker sums, beside cmvn.h5


@contextlib.contextmanager
def _h5_output(path, attrs):
    """An HDF5 file to fill, written atomically at `path` with the caller's `attrs` added last."""
    with atomic_path(path) as tmp:
        with h5py.File(tmp, "w") as out:
            yield out
            for name, value in (attrs or {}).items():
                out.attrs[name] = value


@contextlib.contextmanager
def _h5_input(path, what):
    """The HDF5 file at `path`; a missing or malformed one (or a value the block refuses) is a TableError."""
    try:
        with h5py.File(path, "r") as stats:
            yield stats
    except (OSError, KeyError, ValueError) as error:
        raise TableError(f"cannot read {what} from {path}: {error}") from None


class Moments:
    """count, sum and sum of squares of some frames [.., dim], in float64."""

    def __init__(self, dim, count=0, total=None, total_squares=None):
        self.dim = dim
        self.count = int(count)
        self.sum = np.zeros(dim) if total is None else np.asarray(total, dtype=np.float64)
        self.sum_squares = np.zeros(dim) if total_squares is None else np.asarray(total_squares, dtype=np.float64)

    @classmethod
    def of(cls, features):
        features = np.asarray(features, dtype=np.float64)
        squares = np.einsum("td,td->d", features, features)
        return cls(features.shape[1], features.shape[0], features.sum(axis=0), squares)

    def add(self, other):
        self.count += other.count
        self.sum += other.sum
        self.sum_squares += other.sum_squares

    @property
    def mean(self):
        return self.sum / max(self.count, 1)

    def stddev(self, variance_floor=1e-10):
        variance = self.sum_squares / max(self.count, 1) - self.mean**2
        return np.sqrt(np.maximum(variance, variance_floor))

    def in_condition(self, clean, noisy, variance_floor=1e-10):
        """These (a speaker's clean) moments as if recorded in the condition that turned the utterance
        `clean` [T, D] into `noisy` [T', D]: the mean moved by what the noise added to the utterance's
        mean, the standard deviation scaled by how much the noise widened or squeezed its spread."""
        clean, noisy = Moments.of(clean), Moments.of(noisy)
        mean = self.mean + noisy.mean - clean.mean
        stddev = self.stddev(variance_floor) * noisy.stddev(variance_floor) / clean.stddev(variance_floor)
        return Moments(self.dim, self.count, mean * self.count, (stddev**2 + mean**2) * self.count)


class CmvnStats(Moments):
    """The moments of the (mean-removed) frames that set the normalisation, and how it removes the mean."""

    def __init__(self, dim, count=0, total=None, total_squares=None, mean_norm="global", var_norm="global",
                 raw=None, online_options=None):
        """online_options: OnlineCmvnOptions of mean_norm "online" (None: the defaults), recorded in the file."""
        if mean_norm not in MEAN_NORMS:
            raise ValueError(f"mean_norm must be one of {', '.join(MEAN_NORMS)}, not {mean_norm!r}")
        if var_norm not in VAR_NORMS:
            raise ValueError(f"var_norm must be one of {', '.join(VAR_NORMS)}, not {var_norm!r}")
        if var_norm == "speaker" and mean_norm != "speaker":
            raise ValueError("var_norm 'speaker' needs mean_norm 'speaker'")
        super().__init__(dim, count, total, total_squares)
        self.mean_norm = mean_norm
        self.var_norm = var_norm
        self.online_options = online_options or OnlineCmvnOptions()
        # The raw frames' statistics; with the global mean they are the statistics themselves.
        self.raw = None if mean_norm == "global" else raw if raw is not None else Moments(dim)

    @classmethod
    def from_speakers(cls, speakers, var_norm="global"):
        """The statistics of `speakers` (SpeakerCmvn) with each speaker's mean removed: the sums of
        squares of mean-removed frames follow from the speaker's sums alone (sum of x^2 - n mean^2), so no
        second pass over the features is needed once every job's sums are in."""
        stats = cls(speakers.dim, mean_norm="speaker", var_norm=var_norm)
        for moments in speakers.speakers.values():
            stats.count += moments.count
            stats.sum_squares += moments.sum_squares - moments.count * moments.mean**2
            stats.raw.add(moments)
        return stats

    @property
    def raw_moments(self):
        """The raw (not mean-removed) frames' statistics; None for old files that did not keep them."""
        if self.mean_norm == "global":
            return Moments(self.dim, self.count, self.sum, self.sum_squares)
        return self.raw if self.raw.count else None

    def accumulate(self, features):
        """Add one utterance's frames [frames, dim] (a whole utterance when mean_norm is "utterance" or "online":
        the standard deviation of both is that of frames less their utterance's mean)."""
        features = np.asarray(features, dtype=np.float64)
        if features.ndim != 2 or features.shape[1] != self.dim:
            raise ValueError(f"expected [frames, {self.dim}] features, got shape {features.shape}")
        if self.mean_norm == "speaker":
            raise ValueError("speaker statistics are accumulated per speaker (SpeakerCmvn, then from_speakers)")
        if self.mean_norm in ("utterance", "online") and features.shape[0]:
            self.raw.add(Moments.of(features))
            features = features - features.mean(axis=0)
        self.count += features.shape[0]
        self.sum += features.sum(axis=0)
        self.sum_squares += np.einsum("td,td->d", features, features)

    def add(self, other):
        if other.dim != self.dim:
            raise ValueError(f"cannot add CMVN stats of dimension {other.dim} to {self.dim}")
        if other.mean_norm != self.mean_norm:
            raise ValueError(f"cannot add CMVN stats with {other.mean_norm} mean removal to {self.mean_norm} ones")
        super().add(other)
        if self.raw is not None and other.raw is not None:
            self.raw.add(other.raw)

    def normalize(self, features, speaker=None, variance_floor=1e-10):
        """(x - mean) / stddev, float32; features [frames, dim] are one whole utterance.

        The mean is the global one, the utterance's own, online CMN's running one (with online_options),
        or with mean_norm "speaker" the mean of `speaker` (the Moments of the utterance's speaker; its
        stddev too with var_norm "speaker").
        """
        stddev = self.stddev(variance_floor)
        if self.mean_norm == "online":
            if self.raw_moments is None:
                raise AsrkitError("these online-CMN statistics have no raw frames' statistics to start from")
            features = np.asarray(features, dtype=np.float64)
            mean, _ = online_moments(features, self.raw_moments, self.online_options)
        elif self.mean_norm == "utterance":
            features = np.asarray(features, dtype=np.float64)
            mean = features.mean(axis=0) if features.shape[0] else 0.0
        elif self.mean_norm == "speaker":
            if speaker is None:
                raise ValueError("speaker CMVN needs the statistics of the utterance's speaker")
            mean = speaker.mean
            if self.var_norm == "speaker":
                stddev = speaker.stddev(variance_floor)
        else:
            mean = self.mean
        return ((features - mean) / stddev).astype(np.float32)

    def write(self, path, attrs=None):
        """Write to an HDF5 file (atomically), with mean and stddev alongside the sums for readers."""
        with _h5_output(path, attrs) as out:
            out["count"] = self.count
            out["sum"] = self.sum
            out["sum_squares"] = self.sum_squares
            out["mean"] = self.mean
            out["stddev"] = self.stddev()
            if self.mean_norm != "global":
                out["raw_count"] = self.raw.count
                out["raw_sum"] = self.raw.sum
                out["raw_sum_squares"] = self.raw.sum_squares
            out.attrs["mean_norm"] = self.mean_norm
            out.attrs["var_norm"] = self.var_norm
            if self.mean_norm == "online":
                out.attrs["online_window"] = self.online_options.window
                out.attrs["online_prior_frames"] = self.online_options.prior_frames

    @classmethod
    def read(cls, path):
        with _h5_input(path, "CMVN statistics") as stats:
            total = stats["sum"][()]
            # Files written before the attributes existed were global.
            mean_norm, var_norm = (_text_attr(stats, name, "global") for name in ("mean_norm", "var_norm"))
            raw = None
            if "raw_count" in stats:
                raw = Moments(len(total), int(stats["raw_count"][()]), stats["raw_sum"][()],
                              stats["raw_sum_squares"][()])
            online = OnlineCmvnOptions(int(stats.attrs.get("online_window", OnlineCmvnOptions.window)),
                                       int(stats.attrs.get("online_prior_frames", OnlineCmvnOptions.prior_frames)))
            return cls(len(total), int(stats["count"][()]), total, stats["sum_squares"][()], mean_norm, var_norm,
                       raw, online)


def _text_attr(h5, name, default):
    value = h5.attrs.get(name, default)
    return value.decode() if isinstance(value, bytes) else str(value)


class SpeakerCmvn:
    """Per-speaker sums of a data dir's raw features (Kaldi's per-speaker cmvn.scp), in spk_cmvn.h5.

    Sums, so that jobs that each saw part of a speaker's utterances add up to the whole speaker.
    """

    def __init__(self, dim, speakers=None, path=None):
        self.dim = dim
        self.speakers = dict(speakers or {})  # speaker id -> Moments
        self.path = path  # where it was read from, for error messages

    def accumulate(self, speaker, features):
        moments = Moments.of(features)
        if moments.dim != self.dim:
            raise ValueError(f"expected [frames, {self.dim}] features, got shape {np.shape(features)}")
        self.speakers.setdefault(speaker, Moments(self.dim)).add(moments)

    def add(self, other):
        if other.dim != self.dim:
            raise ValueError(f"cannot add speaker CMVN sums of dimension {other.dim} to {self.dim}")
        for speaker, moments in other.speakers.items():
            self.speakers.setdefault(speaker, Moments(self.dim)).add(moments)

    def moments(self, speaker, utterance_id=None):
        try:
            return self.speakers[speaker]
        except KeyError:
            whose = f"utterance {utterance_id}: " if utterance_id is not None else ""
            raise AsrkitError(f"{whose}speaker {speaker} has no statistics in {self.path or 'the speaker CMVN'} "
                              "(fix: featurize the data dir again with --cmvn-mean speaker)") from None

    def write(self, path, attrs=None):
        speakers = sorted(self.speakers)
        with _h5_output(path, attrs) as out:
            out["speakers"] = np.array([s.encode("utf-8") for s in speakers], dtype=object) \
                if speakers else np.zeros(0, dtype="S1")
            out["count"] = np.array([self.speakers[s].count for s in speakers], dtype=np.int64)
            out["sum"] = np.array([self.speakers[s].sum for s in speakers]).reshape(len(speakers), self.dim)
            out["sum_squares"] = np.array([self.speakers[s].sum_squares for s in speakers]).reshape(
                len(speakers), self.dim)
            out.attrs["dim"] = self.dim

    @classmethod
    def read(cls, path):
        with _h5_input(path, "speaker CMVN statistics") as stats:
            dim = int(stats.attrs["dim"])
            names = [s.decode("utf-8") if isinstance(s, bytes) else str(s) for s in stats["speakers"][()]]
            counts, sums, squares = stats["count"][()], stats["sum"][()], stats["sum_squares"][()]
        speakers = {name: Moments(dim, counts[i], sums[i], squares[i]) for i, name in enumerate(names)}
        return cls(dim, speakers, path)


def copy_speaker_cmvn(path, out, spk_prefix=""):
    """The speakers' sums of the data dir `path`, if it has them, written to the data dir `out` with `spk_prefix`
    before each speaker id (utils/copy_data_dir's)."""
    source, target = os.path.join(path, SPEAKER_CMVN_FILE), os.path.join(out, SPEAKER_CMVN_FILE)
    if not os.path.exists(source):
        if os.path.exists(target):
            os.remove(target)
        return
    stats = SpeakerCmvn.read(source)
    SpeakerCmvn(stats.dim, {spk_prefix + name: moments for name, moments in stats.speakers.items()}).write(target)


def combine_speaker_cmvn(out, paths):
    """The speakers' sums of the data dir `out` combined from the data dirs `paths`: every dir's, added (a speaker in several dirs gets all
    their utterances'); none when some dir has none, so that a stage needing them says so."""
    target = os.path.join(out, SPEAKER_CMVN_FILE)
    sources = [os.path.join(path, SPEAKER_CMVN_FILE) for path in paths]
    if not all(os.path.exists(source) for source in sources):
        if os.path.exists(target):
            os.remove(target)
        return
    combined = SpeakerCmvn.read(sources[0])
    for source in sources[1:]:
        combined.add(SpeakerCmvn.read(source))
    combined.write(target)
