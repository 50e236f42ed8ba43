"""Online i-vectors of every utterance of a feature table, written as a table (Kaldi's ivector_online.scp).

Each entry is [ceil(frames / period), R]: row k is the i-vector of frames
[kN, (k+1)N), estimated from the frames so far (see asrkit.ivector.online);
with `per_frame` each frame gets its own row.  The period is stored in the
file `ivector_period` and as each shard's config, as Kaldi does.  With speaker
carry-over, a speaker's utterances are taken in order and each starts from the
statistics of the ones before it.
"""

import dataclasses
import json
import logging
import os
import time

from asrkit.errors import IvectorError
from asrkit.io.atomic import atomic_output
from asrkit.io.table import ShardWriter, shard_path, write_scp
from asrkit.ivector.extractor import IvectorExtractor
from asrkit.ivector.feature_source import FeatureSource
from asrkit.ivector.online import OnlineOptions, SpeakerState, expand_to_frames, online_ivectors
from asrkit.parallel import remove_outputs_of_extra_jobs, run_jobs, split_evenly

logger = logging.getLogger("asrkit.ivector.extract")

TABLE_NAME = "ivector_online"
# How the table's i-vectors were made (the online options, the extractor): what a model trained on them
# carries, so that decoding extracts its i-vectors the same way.
CONFIG_FILE = "ivector.json"


@dataclasses.dataclass
class ExtractOptions:
    online: OnlineOptions = dataclasses.field(default_factory=OnlineOptions)
    per_speaker: bool = False
    per_frame: bool = False
    # With per_speaker: a speaker's utterances in runs of at most this many, each run a speaker of its own
    # (Kaldi's --utts-per-spk-max 2 for training data), so the network also learns from the short histories
    # it meets at the start of a speaker in decoding; 0: no limit.
    utts_per_speaker_max: int = 0


@dataclasses.dataclass
class ExtractResult:
    utterances: int
    frames: int
    ivector_dim: int
    extract_seconds: float  # in the extractor alone, not reading or writing
    audio_seconds: float  # None when the frame shift is unknown


def utterance_order(source, per_speaker, utts_per_speaker_max=0):
    """(utterance, speaker) pairs: by speaker, then utterance, with carry-over (a speaker cut into runs of
    utts_per_speaker_max, named speaker#run); else table order with no speakers."""
    keys = source.keys()
    if not per_speaker:
        return [(key, None) for key in keys]
    utt2spk = source.utt2spk()
    missing = [key for key in keys if key not in utt2spk]
    if missing:
        raise IvectorError(f"utterance {missing[0]} (and {len(missing) - 1} more) of {source.scp} has no speaker "
                           "in utt2spk; extract without --per-speaker or fix the data dir")
    order = sorted(((key, utt2spk[key]) for key in keys), key=lambda pair: (pair[1], pair[0]))
    if utts_per_speaker_max <= 0:
        return order
    runs, seen = [], {}
    for key, speaker in order:
        position = seen[speaker] = seen.get(speaker, -1) + 1
        runs.append((key, f"{speaker}#{position // utts_per_speaker_max}"))
    return runs


def speaker_parts(order, nj):
    """`order` cut into at most nj contiguous jobs, never splitting a speaker (None: each utterance alone)."""
    groups = []
    for key, speaker in order:
        if groups and speaker is not None and groups[-1][-1][1] == speaker:
            groups[-1].append((key, speaker))
        else:
            groups.append([(key, speaker)])
    return [[pair for group in part for pair in group] for part in split_evenly(groups, nj)] or [[]]


@dataclasses.dataclass
class ExtractJob:
    """One job's utterances (with speakers, in order) and where they go; picklable for a spawned process."""

    index: int
    feats: str
    extractor_path: str
    out_dir: str
    utterances: list
    options: ExtractOptions
    config: dict

    @property
    def shard(self):
        return shard_path(self.out_dir, TABLE_NAME, self.index)

    @property
    def log_file(self):
        return os.path.join(self.out_dir, "log", f"extract.{self.index}.log")


def run_extract_job(job, context):
    """Extract one job's i-vectors into its shard; returns (frames, seconds in the extractor)."""
    extractor = IvectorExtractor.load(job.extractor_path)
    options = job.options
    frames = 0
    seconds = 0.0
    states = {}
    context.logger.info("job %d: %d utterances -> %s", job.index, len(job.utterances), job.shard)
    with FeatureSource(job.feats) as source, ShardWriter(job.shard, config=job.config) as writer:
        for key, speaker in job.utterances:
            features = source.read(key)
            begin = time.perf_counter()
            state = states.setdefault(speaker, SpeakerState(extractor, options.online)) if speaker else None
            ivectors, stats = online_ivectors(extractor, features, options.online,
                                              state.stats if state else None, where=f"utterance {key} in {source.scp}")
            if state is not None:
                state.update(stats)
            if options.per_frame:
                ivectors = expand_to_frames(ivectors, len(features), options.online.ivector_period)
            seconds += time.perf_counter() - begin
            writer.write(key, ivectors.astype("float32"), attrs={"num_frames": len(features)})
            frames += len(features)
            context.advance(1)
    return frames, seconds


def extract_ivectors(feats, extractor_path, out_dir, options, nj=1):
    """Write out_dir/ivector_online.JOB.h5, ivector_online.scp, ivector_period and ivector.json, with `nj` jobs
    (a speaker's utterances stay in one job; logs in out_dir/log/extract.JOB.log); returns ExtractResult."""
    extractor = IvectorExtractor.load(extractor_path)
    config = {"ivector_period": options.online.ivector_period, "per_frame": options.per_frame,
              "per_speaker": options.per_speaker, "utts_per_speaker_max": options.utts_per_speaker_max,
              "online": options.online.to_dict(),
              "extractor": os.path.abspath(extractor_path), "ivector_dim": extractor.ivector_dim}
    with FeatureSource(feats) as source:
        order = utterance_order(source, options.per_speaker, options.utts_per_speaker_max)
        shift = source.frame_shift_seconds()
    os.makedirs(out_dir, exist_ok=True)
    jobs = [ExtractJob(index, os.fspath(feats), os.fspath(extractor_path), os.fspath(out_dir), part, options, config)
            for index, part in enumerate(speaker_parts(order, nj), 1)]
    remove_outputs_of_extra_jobs(out_dir, len(jobs), [f"{TABLE_NAME}.{{}}.h5", "log/extract.{}.log"])
    results = run_jobs(run_extract_job, jobs, nj, "extract-ivectors", lambda job: len(job.utterances), logger)
    write_scp(os.path.join(out_dir, f"{TABLE_NAME}.scp"), [job.shard for job in jobs])
    with atomic_output(os.path.join(out_dir, "ivector_period")) as handle:
        handle.write(f"{1 if options.per_frame else options.online.ivector_period}\n")
    with atomic_output(os.path.join(out_dir, CONFIG_FILE)) as handle:
        json.dump(config, handle, indent=2, sort_keys=True)
        handle.write("\n")
    frames = sum(result[0] for result in results)
    return ExtractResult(len(order), frames, extractor.ivector_dim, sum(result[1] for result in results),
                         None if shift is None else frames * shift)
