"""asrkit-featurize as a library: a data directory in, a feature table and CMVN statistics out.

The utterances are split into `nj` contiguous jobs; each job featurizes its
utterances in padded batches with the TensorFlow front end and writes one
shard `feats.JOB.h5` (with its own CMVN sums and failed utterances as shard
attributes, so a finished job is exactly one file that exists or not).  A job
whose shard exists with the same config and utterance list, and no failures,
is skipped on a rerun: a killed run is simply run again.

With the speaker mean (--cmvn-mean speaker) each job also writes the sums of
its utterances per speaker, `spk_cmvn.JOB.h5`, before its shard; a speaker
whose utterances fall into several jobs gets the sum of those jobs' sums, so
the data dir's spk_cmvn.h5 holds whole speakers whatever nj is.  The global
statistics of speaker-mean-removed frames follow from those sums alone
(CmvnStats.from_speakers), without a second pass over the features.
"""

import dataclasses
import hashlib
import json
import logging
import os
import time


from asrkit.data.audio import AudioOptions, UtteranceAudio
from asrkit.data.data_dir import DataDir
from asrkit.data.kaldi_features import refuse_kaldi_features
from asrkit.data.kaldi_files import write_kaldi_map
from asrkit.data.validate import validate_data_dir
from asrkit.errors import AsrkitError, AudioError
from asrkit.frontend.cmvn import SPEAKER_CMVN_FILE, CmvnStats, Moments, SpeakerCmvn
from asrkit.frontend.config import FeatureConfig
from asrkit.frontend.features import FeatureExtractor
from asrkit.frontend.online_cmvn import OnlineCmvnOptions
from asrkit.frontend.warp import WARP_MAP, warped_audio
from asrkit.io.atomic import atomic_output
from asrkit.io.table import ShardWriter, TableReader, read_shard_attrs, shard_path, write_scp
from asrkit.parallel import remove_outputs_of_extra_jobs, run_jobs, split_evenly

logger = logging.getLogger("asrkit.featurize")

TABLE_NAME = "feats"
SPEAKER_SUMS = "spk_cmvn.{}.h5"  # a job's per-speaker sums, in the feat dir beside its shard


@dataclasses.dataclass
class FeaturizeOptions:
    nj: int = 1
    max_fail_ratio: float = 0.05
    compute_cmvn: bool = False
    cmvn_mean: str = "global"  # CmvnStats.mean_norm of the statistics written with compute_cmvn
    cmvn_variance: str = "global"  # CmvnStats.var_norm: "speaker" divides by each speaker's own stddev
    # CmvnStats.online_options, recorded with cmvn_mean "online": the running mean every stage then removes
    cmvn_online: OnlineCmvnOptions = dataclasses.field(default_factory=OnlineCmvnOptions)
    batch_seconds: float = 60.0
    num_threads: int = 1
    overwrite: bool = False
    audio: AudioOptions = dataclasses.field(default_factory=AudioOptions)


@dataclasses.dataclass
class FeaturizeJob:
    """Everything one job needs; picklable, so it can run in a spawned process."""

    index: int
    data_dir: str
    feat_dir: str
    utterance_ids: list
    config: dict
    options: FeaturizeOptions
    input_fingerprint: str = ""
    utt2spk: dict = None  # this job's utterances' speakers, with the speaker mean

    @property
    def shard(self):
        return shard_path(self.feat_dir, TABLE_NAME, self.index)

    @property
    def speaker_sums(self):
        return os.path.join(self.feat_dir, SPEAKER_SUMS.format(self.index))

    @property
    def speaker_fingerprint(self):
        """What the job's speaker sums depend on: the audio, the front end, and which speaker each utterance is
        (a shard reused from a run with another mean has no sums of its own, so its config must match too)."""
        lines = "".join(f"{utterance}\t{self.utt2spk[utterance]}\n" for utterance in self.utterance_ids)
        config = json.dumps(self.config, sort_keys=True)
        return hashlib.sha1((self.input_fingerprint + config + lines).encode("utf-8")).hexdigest()

    @property
    def log_file(self):
        return os.path.join(self.feat_dir, "log", f"featurize.{self.index}.log")



def audio_options_for(audio, config):
    """The command's audio options at the config's rate; where the command refuses other rates, the
    feature config's allow_downsample / allow_upsample decide (they travel with the model)."""
    action = audio.on_rate_mismatch if audio.on_rate_mismatch != "error" else config.on_rate_mismatch
    return dataclasses.replace(audio, sample_rate=config.sample_rate, on_rate_mismatch=action)


def input_fingerprint(data, utterance_ids, audio_options):
    """A hash of everything a job's features depend on besides the feature config.

    The utterance ids, each one's wav.scp entry, segment and warp factor (with the warp's map), the size and
    modification time of each audio file (a pipe's command line stands for
    itself), and the audio options: a shard from an earlier run is reused only
    when none of these changed, so regenerated audio under the same ids is
    featurized again.
    """
    digest = hashlib.sha1(json.dumps(dataclasses.asdict(audio_options), sort_keys=True).encode("utf-8"))
    for utterance_id in utterance_ids:
        segment = data.segments.get(utterance_id) if data.segments is not None else None
        recording = segment.recording_id if segment is not None else utterance_id
        spec = (data.wav_scp or {}).get(recording, "")
        digest.update(f"{utterance_id}\t{spec}\t{segment}\t".encode("utf-8"))
        factor = data.warp_factor(utterance_id)
        if factor != 1.0:  # only then, so that the shards of unwarped audio made before warps existed stay valid
            digest.update(f"warp {WARP_MAP} {factor!r}\t".encode("utf-8"))
        if spec and not spec.rstrip().endswith("|"):
            try:
                status = os.stat(spec)
                digest.update(f"{status.st_size}:{status.st_mtime_ns}".encode("ascii"))
            except OSError:
                digest.update(b"missing")
        digest.update(b"\n")
    return digest.hexdigest()


@dataclasses.dataclass
class JobResult:
    index: int
    num_done: int
    num_frames: int
    audio_seconds: float
    failed: dict  # utterance id -> reason
    skipped: bool
    cmvn: CmvnStats
    speakers: SpeakerCmvn = None


@dataclasses.dataclass
class FeaturizeResult:
    num_utterances: int
    num_done: int
    num_frames: int
    audio_seconds: float
    failed: dict
    skipped_jobs: int
    wall_seconds: float
    computed_audio_seconds: float  # audio of the jobs that ran (not reused), for the speed figure


def _finished_shard_result(job):
    """The result of an earlier run of this job if its shard can be reused, else None."""
    if job.options.overwrite or not os.path.exists(job.shard):
        return None
    attrs = read_shard_attrs(job.shard)
    if attrs.get("config") != json.dumps(job.config, sort_keys=True):
        return None
    if attrs.get("input_fingerprint") != job.input_fingerprint or json.loads(attrs.get("failed", "{}")):
        return None
    by_speaker = job.options.cmvn_mean == "speaker"
    if job.options.compute_cmvn and not by_speaker and (
        "cmvn_count" not in attrs or attrs.get("cmvn_mean", "global") != job.options.cmvn_mean
        or (job.options.cmvn_mean in ("utterance", "online") and "cmvn_raw_count" not in attrs)  # online CMN's prior
    ):
        return None
    speakers = _finished_speaker_sums(job) if by_speaker else None
    if by_speaker and speakers is None:
        return None
    dim = FeatureConfig.from_dict(job.config).feature_dim
    cmvn = None
    if not by_speaker:
        cmvn = CmvnStats(dim, attrs.get("cmvn_count", 0), attrs.get("cmvn_sum"), attrs.get("cmvn_sum_squares"),
                         job.options.cmvn_mean)
        if "cmvn_raw_count" in attrs:  # written with compute_cmvn and the utterance or online mean (online CMN's prior)
            cmvn.raw = Moments(dim, attrs["cmvn_raw_count"], attrs["cmvn_raw_sum"], attrs["cmvn_raw_sum_squares"])
    return JobResult(
        job.index, int(attrs["num_entries"]), int(attrs.get("num_frames", 0)), float(attrs.get("audio_seconds", 0)),
        {}, True, cmvn, speakers,
    )


def _finished_speaker_sums(job):
    """The speaker sums an earlier run of this job wrote, if they are of these utterances and speakers."""
    if not os.path.exists(job.speaker_sums):
        return None
    if read_shard_attrs(job.speaker_sums).get("fingerprint") != job.speaker_fingerprint:
        return None
    return SpeakerCmvn.read(job.speaker_sums)


def _batches(job, data_dir, audio_options, failed, job_logger, advance, lookahead=64):
    """Yield lists of (utterance id, waveform) of about batch_seconds of audio each.

    Utterances are read `lookahead` at a time and sorted by length, so that a
    padded batch wastes little computation on padding.
    """
    sample_rate = audio_options.sample_rate
    max_samples = int(job.options.batch_seconds * sample_rate)
    utterance_audio = UtteranceAudio(data_dir, job.utterance_ids, audio_options)
    for start in range(0, len(job.utterance_ids), lookahead):
        loaded = []
        for utterance_id in job.utterance_ids[start : start + lookahead]:
            try:
                samples = utterance_audio(utterance_id)
                loaded.append((utterance_id, warped_audio(data_dir, utterance_id, samples, sample_rate)))
            except AudioError as error:
                failed[utterance_id] = str(error)
                job_logger.warning("skipping: %s", error)
                advance(1)
        loaded.sort(key=lambda item: len(item[1]))
        batch, longest = [], 0
        for item in loaded:
            longest_if_added = max(longest, len(item[1]))
            if batch and longest_if_added * (len(batch) + 1) > max_samples:
                yield batch
                batch, longest_if_added = [], len(item[1])
            batch.append(item)
            longest = longest_if_added
        if batch:
            yield batch
    if utterance_audio.commands_run:
        job_logger.info("ran %d wav.scp commands for the segments of %d recordings", utterance_audio.commands_run,
                        len(utterance_audio.remaining))


def run_job(job, context):
    """Featurize one job's utterances into its shard; returns a JobResult."""
    job_logger = context.logger
    reused = _finished_shard_result(job)
    if reused is not None:
        job_logger.info("shard %s is complete for this config and utterance list; nothing to do", job.shard)
        context.advance(len(job.utterance_ids))
        return reused

    config = FeatureConfig.from_dict(job.config)
    job_logger.info("job %d: %d utterances -> %s", job.index, len(job.utterance_ids), job.shard)
    job_logger.info("feature config: %s", config.to_json())
    extractor = FeatureExtractor(config, num_threads=job.options.num_threads)
    data_dir = DataDir.load(job.data_dir)
    audio_options = audio_options_for(job.options.audio, config)
    failed = {}
    by_speaker = job.options.cmvn_mean == "speaker"
    cmvn = None if by_speaker else CmvnStats(config.feature_dim, mean_norm=job.options.cmvn_mean)
    speakers = SpeakerCmvn(config.feature_dim) if by_speaker else None
    num_done = num_frames = 0
    audio_seconds = 0.0
    with ShardWriter(job.shard, config=job.config) as writer:
        for batch in _batches(job, data_dir, audio_options, failed, job_logger, context.advance):
            features = extractor.compute_batch([waveform for _, waveform in batch])
            for (utterance_id, waveform), utterance_features in zip(batch, features):
                if utterance_features.shape[0] == 0:
                    reason = (
                        f"utterance {utterance_id}: {len(waveform)} samples is shorter than one "
                        f"{config.frame_length_ms:g} ms window"
                    )
                    failed[utterance_id] = reason
                    job_logger.warning("skipping: %s", reason)
                    continue
                writer.write(utterance_id, utterance_features)
                if by_speaker:
                    speakers.accumulate(job.utt2spk[utterance_id], utterance_features)
                elif job.options.compute_cmvn:
                    cmvn.accumulate(utterance_features)
                num_done += 1
                num_frames += utterance_features.shape[0]
                audio_seconds += len(waveform) / config.sample_rate
            context.advance(len(batch))
        writer.set_attr("input_fingerprint", job.input_fingerprint)
        writer.set_attr("failed", json.dumps(failed, sort_keys=True))
        writer.set_attr("num_frames", num_frames)
        writer.set_attr("audio_seconds", audio_seconds)
        if job.options.compute_cmvn and not by_speaker:
            _set_cmvn_attrs(writer, cmvn)
        if by_speaker:
            # Before the shard appears, so that a finished shard always has its sums beside it.
            speakers.write(job.speaker_sums, attrs={"fingerprint": job.speaker_fingerprint})
    job_logger.info(
        "job %d done: %d utterances, %d failed, %d frames, %.1f s of audio", job.index, num_done, len(failed),
        num_frames, audio_seconds,
    )
    return JobResult(job.index, num_done, num_frames, audio_seconds, failed, False, cmvn, speakers)


def _set_cmvn_attrs(writer, cmvn):
    writer.set_attr("cmvn_count", cmvn.count)
    writer.set_attr("cmvn_sum", cmvn.sum)
    writer.set_attr("cmvn_sum_squares", cmvn.sum_squares)
    writer.set_attr("cmvn_mean", cmvn.mean_norm)
    if cmvn.raw is not None:
        writer.set_attr("cmvn_raw_count", cmvn.raw.count)
        writer.set_attr("cmvn_raw_sum", cmvn.raw.sum)
        writer.set_attr("cmvn_raw_sum_squares", cmvn.raw.sum_squares)


def _write_statistics(data_dir, config, options, results, scp_path):
    """spk_cmvn.h5 (with the speaker mean) and, with compute_cmvn, cmvn.h5 from the jobs' sums."""
    attrs = {"config": config.to_json(), "source": scp_path}
    cmvn = None
    if options.cmvn_mean == "speaker":
        speakers = SpeakerCmvn(config.feature_dim)
        for result in results:
            speakers.add(result.speakers)
        speakers.write(os.path.join(data_dir, SPEAKER_CMVN_FILE), attrs=attrs)
        logger.info("wrote the statistics of %d speakers to %s/%s", len(speakers.speakers), data_dir,
                    SPEAKER_CMVN_FILE)
        if options.compute_cmvn:
            cmvn = CmvnStats.from_speakers(speakers, options.cmvn_variance)
    elif options.compute_cmvn:
        cmvn = CmvnStats(config.feature_dim, mean_norm=options.cmvn_mean, online_options=options.cmvn_online)
        for result in results:
            cmvn.add(result.cmvn)
    if cmvn is not None:
        cmvn.write(os.path.join(data_dir, "cmvn.h5"), attrs=attrs)
        logger.info("wrote CMVN statistics (%s mean, %s variance) over %d frames to %s/cmvn.h5", cmvn.mean_norm,
                    cmvn.var_norm, cmvn.count, data_dir)


def _jobs(data, data_dir, feat_dir, parts, config, options):
    """One FeaturizeJob per part of the utterance ids (with their speakers when the mean is the speaker's)."""
    audio_options = audio_options_for(options.audio, config)
    by_speaker = options.cmvn_mean == "speaker"
    return [
        FeaturizeJob(index, os.fspath(data_dir), feat_dir, part, config.to_dict(), options,
                     input_fingerprint(data, part, audio_options),
                     {utterance: data.utt2spk[utterance] for utterance in part} if by_speaker else None)
        for index, part in enumerate(parts, 1)
    ]


def featurize_data_dir(data_dir, feat_dir, config=None, options=None):
    """Featurize every utterance of `data_dir` into the table `feat_dir/feats.*.h5`.

    Writes into the data dir: feats.scp, utt2num_frames, conf/featurize.json,
    with options.cmvn_mean "speaker" spk_cmvn.h5 (its speakers' sums), and with
    options.compute_cmvn cmvn.h5.  Raises AsrkitError when more than
    options.max_fail_ratio of the utterances failed, naming them.
    """
    config = config or FeatureConfig()
    options = options or FeaturizeOptions()
    if options.cmvn_variance == "speaker" and options.cmvn_mean != "speaker":
        raise AsrkitError("--cmvn-variance speaker needs --cmvn-mean speaker (a speaker's variance is about "
                          "the speaker's mean)")
    start = time.monotonic()
    refuse_kaldi_features(data_dir, "asrkit-featurize would replace them with its own index and leave cmvn.scp "
                                    "stale, so it leaves this data dir alone")
    # What Kaldi's validate_data_dir.sh refuses (unsorted files, speakers that do not prefix their
    # utterances, utt2spk and spk2utt that disagree, ...) is refused here too, before any work: a data
    # dir that only loads would give features that later stages cannot pair up.
    validate_data_dir(data_dir, no_feats=True, raise_on_error=True)
    data = DataDir.load(data_dir)
    utterance_ids = list(data.utterance_ids)
    if not utterance_ids:
        raise AsrkitError(f"data directory {data_dir} has no utterances")
    feat_dir = os.path.abspath(feat_dir)
    os.makedirs(os.path.join(feat_dir, "log"), exist_ok=True)
    jobs = _jobs(data, data_dir, feat_dir, split_evenly(utterance_ids, options.nj), config, options)
    # The index and config of an earlier run go first, so that a run killed half-way never
    # leaves a feats.scp pointing at a mix of old and new shards.
    for stale_output in (os.path.join(data_dir, "feats.scp"), os.path.join(data_dir, "conf", "featurize.json"),
                         os.path.join(data_dir, SPEAKER_CMVN_FILE)):
        if os.path.exists(stale_output):
            os.remove(stale_output)
    # Shards of an earlier run with more jobs would otherwise linger and be indexed.
    remove_outputs_of_extra_jobs(feat_dir, len(jobs), [f"{TABLE_NAME}.{{}}.h5", SPEAKER_SUMS])
    logger.info(
        "featurizing %d utterances of %s in %d jobs (logs: %s/log/featurize.JOB.log)",
        len(utterance_ids), data_dir, len(jobs), feat_dir,
    )
    results = run_jobs(run_job, jobs, len(jobs), "featurize", lambda job: len(job.utterance_ids), logger)

    failed = {}
    for result in results:
        failed.update(result.failed)
    num_done = sum(result.num_done for result in results)
    if failed:
        shown = sorted(failed.items())[:10]
        logger.warning(
            "%d of %d utterances failed%s:", len(failed), len(utterance_ids),
            f" (the first {len(shown)}; all are in the job logs)" if len(failed) > len(shown) else "",
        )
        for _, reason in shown:
            logger.warning("  %s", reason)
    if len(failed) > options.max_fail_ratio * len(utterance_ids):
        raise AsrkitError(
            f"{len(failed)} of {len(utterance_ids)} utterances failed, more than --max-fail-ratio "
            f"{options.max_fail_ratio:g}; first: {sorted(failed)[:10]}; see {feat_dir}/log/featurize.*.log"
        )

    scp_path = os.path.join(data_dir, "feats.scp")
    write_scp(scp_path, [job.shard for job in jobs])
    with TableReader(scp_path) as table:
        write_kaldi_map(os.path.join(data_dir, "utt2num_frames"), {key: table.shape(key)[0] for key in table})
    os.makedirs(os.path.join(data_dir, "conf"), exist_ok=True)
    with atomic_output(os.path.join(data_dir, "conf", "featurize.json")) as out:
        json.dump(config.to_dict(), out, indent=2, sort_keys=True)
        out.write("\n")
    _write_statistics(data_dir, config, options, results, scp_path)
    if failed:
        logger.warning("feats.scp lacks the failed utterances: run utils/fix_data_dir %s before training", data_dir)
    return FeaturizeResult(
        num_utterances=len(utterance_ids),
        num_done=num_done,
        num_frames=sum(result.num_frames for result in results),
        audio_seconds=sum(result.audio_seconds for result in results),
        failed=failed,
        skipped_jobs=sum(result.skipped for result in results),
        wall_seconds=time.monotonic() - start,
        computed_audio_seconds=sum(result.audio_seconds for result in results if not result.skipped),
    )
