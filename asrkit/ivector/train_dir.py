"""Training an i-vector extractor from a feature table: the UBM on a random frame subset, then T on
every utterance's statistics (Kaldi's steps/online/nnet2/train_diag_ubm.sh and train_ivector_extractor.sh
in one)."""

import dataclasses
import json
import logging
import os
import time

import numpy as np

from asrkit.errors import IvectorError
from asrkit.io.atomic import atomic_output
from asrkit.ivector.extractor import ExtractorConfig, IvectorExtractor
from asrkit.ivector.feature_source import FeatureSource
from asrkit.ivector.stats import PosteriorOptions, baum_welch_stats
from asrkit.ivector.tv_train import TvOptions, train_tv
from asrkit.ivector.ubm import UbmOptions, train_ubm

logger = logging.getLogger("asrkit.ivector.train")

EXTRACTOR_FILE = "final.ie"
OBJECTIVES_FILE = "objectives.json"


@dataclasses.dataclass
class TrainOptions:
    ubm: UbmOptions = dataclasses.field(default_factory=UbmOptions)
    tv: TvOptions = dataclasses.field(default_factory=TvOptions)
    posterior: PosteriorOptions = dataclasses.field(default_factory=PosteriorOptions)
    use_dims: int = None
    ubm_frames: int = 200000  # random frames the UBM is trained on
    max_utterances: int = 0  # utterances T is trained on (a random subset); 0: all
    # T's statistics from every n-th frame, their posteriors scaled up by n (Kaldi's --subsample 2): neighbouring
    # frames are so alike that little is lost, and the statistics take 1/n of the time.
    subsample: int = 1
    seed: int = 0


@dataclasses.dataclass
class TrainResult:
    utterances: int
    frames: int
    ubm_frames: int
    ubm_log_likes: list
    tv_objectives: list
    seconds: float


def _used(features, use_dims, where):
    if use_dims is not None and features.shape[1] < use_dims:
        raise IvectorError(f"{where}: features have dimension {features.shape[1]}, fewer than --use-dims {use_dims}")
    return features if use_dims is None else features[:, :use_dims]


def sample_frames(source, keys, num_frames, use_dims, rng):
    """About num_frames frames drawn uniformly from all utterances (every frame when there are fewer)."""
    total = sum(source.num_frames(key) for key in keys)
    keep = min(1.0, num_frames / max(total, 1))
    chosen = []
    for key in keys:
        features = _used(source.read(key), use_dims, f"utterance {key} in {source.scp}")
        chosen.append(features[rng.random(len(features)) < keep] if keep < 1.0 else features)
    frames = np.concatenate(chosen) if chosen else np.zeros((0, 0))
    dims = {block.shape[1] for block in chosen}
    if len(dims) > 1:
        raise IvectorError(f"{source.scp}: utterances have features of different dimensions {sorted(dims)}")
    return frames, total


def utterance_stats(source, keys, ubm, posterior, use_dims, subsample=1):
    """zeroth [U, C] (float64) and first [U, C, D] (float32, to halve the memory) statistics per utterance,
    and each utterance's frame count."""
    zeroth = np.zeros((len(keys), ubm.num_gauss))
    first = np.zeros((len(keys), ubm.num_gauss, ubm.dim), dtype=np.float32)
    counts = np.zeros(len(keys))
    scaled = dataclasses.replace(posterior, posterior_scale=posterior.posterior_scale * subsample)
    for index, key in enumerate(keys):
        frames = _used(source.read(key), use_dims, f"utterance {key}")
        stats = baum_welch_stats(ubm, frames[::subsample], scaled)
        zeroth[index], first[index], counts[index] = stats.zeroth, stats.first, len(frames)
    return zeroth, first, counts


def train_extractor(feats, out_dir, options):
    """Train on `feats` (a featurized data dir or a feats .scp); write out_dir/final.ie and objectives.json."""
    start = time.monotonic()
    rng = np.random.default_rng(options.seed)
    with FeatureSource(feats) as source:
        keys = [key for key in source.keys() if source.num_frames(key) > 0]
        if not keys:
            raise IvectorError(f"{source.scp} has no utterances with frames to train on")
        frames, total_frames = sample_frames(source, keys, options.ubm_frames, options.use_dims, rng)
        logger.info("UBM: %d Gaussians on %d of %d frames of dimension %d", options.ubm.num_gauss, len(frames),
                    total_frames, frames.shape[1])
        ubm, ubm_history = train_ubm(frames, options.ubm)
        num_ubm_frames = len(frames)
        del frames
        if options.max_utterances and len(keys) > options.max_utterances:
            keys = sorted(rng.choice(keys, size=options.max_utterances, replace=False).tolist())
        logger.info("T: statistics of %d utterances (%.2f GB in memory)", len(keys),
                    len(keys) * ubm.num_gauss * (4 * ubm.dim + 8) / 1e9)
        zeroth, first, counts = utterance_stats(source, keys, ubm, options.posterior, options.use_dims,
                                                options.subsample)
    logger.info("T: i-vector dimension %d from %d utterances", options.tv.ivector_dim, len(keys))
    config = ExtractorConfig(options.posterior, options.use_dims)
    extractor, tv_history = train_tv(ubm, zeroth, first, counts, options.tv, config)
    os.makedirs(out_dir, exist_ok=True)
    extractor.save(os.path.join(out_dir, EXTRACTOR_FILE))
    result = TrainResult(len(keys), int(total_frames), num_ubm_frames, ubm_history, tv_history,
                         time.monotonic() - start)
    write_objectives(os.path.join(out_dir, OBJECTIVES_FILE), options, result)
    return result


def write_objectives(path, options, result):
    """The options and each iteration's objective, for the recipe's log and for comparing runs."""
    record = {
        "options": dataclasses.asdict(options),
        "ubm_log_likelihood_per_frame": result.ubm_log_likes,
        "tv_objective_per_frame": result.tv_objectives,
        "utterances": result.utterances, "frames": result.frames,
    }
    with atomic_output(path) as handle:
        json.dump(record, handle, indent=2, sort_keys=True)
        handle.write("\n")
