"""asrkit-noisify as a library: a data dir in, a noisified copy (audio shards + a new data dir) out.

Layout of the output (audio under <out-data-dir>/audio unless audio_dir is given):

    <audio-dir>/shard.JOB/<utt>.wav      one file per utterance, written under a
                                         temporary name and renamed when complete
    <audio-dir>/shard.JOB/params.jsonl   one record per finished utterance (the
                                         style, its parameters, or why it was skipped)
    <out-data-dir>/wav.scp text utt2spk spk2utt utt2dur [utt2uniq ...]
    <out-data-dir>/utt2style             <utt> <style name>
    <out-data-dir>/noisify_params.jsonl  every utterance's record, sorted by id
    <out-data-dir>/conf/noisify.json     seed, options and the style config used
    <out-data-dir>/log/noisify.JOB.log

A job's utterances are done one by one; a rerun (same seed, styles and
options) skips every utterance whose record and audio exist, so a killed run
is simply run again.  Input with segments becomes one file per utterance and
the output has no segments.  Output ids are the input ids, with an optional
suffix (speakers unchanged: a suffix keeps the speaker prefix) or an optional
prefix on utterances and speakers alike (Kaldi's reverberate_data_dir style).
Noise is drawn per (seed, input utterance id), so outputs do not depend on
--nj or on the order of utterances.
"""

import dataclasses
import hashlib
import json
import logging
import os
import time

import soundfile

from asrkit.augment.noise import BabblePool, SilentUtteranceError
from asrkit.augment.noisifier import Noisifier
from asrkit.augment.styles import parse_style_config, utterance_rng
from asrkit.data.audio import AudioOptions, load_utterance_audio
from asrkit.data.data_dir import DataDir
from asrkit.data.kaldi_files import c_sorted, spk2utt_from_utt2spk, write_kaldi_map
from asrkit.data.validate import validate_data_dir
from asrkit.errors import AsrkitError, AudioError
from asrkit.io.atomic import atomic_output, atomic_path
from asrkit.parallel import remove_outputs_of_extra_jobs, run_jobs, split_evenly

logger = logging.getLogger("asrkit.noisify")

AUDIO_FORMATS = {"wav": ("WAV", "PCM_16"), "flac": ("FLAC", "PCM_16")}
PARAMS_FILE = "params.jsonl"


@dataclasses.dataclass
class NoisifyOptions:
    seed: int = 0
    nj: int = 1
    max_fail_ratio: float = 0.05
    utt_suffix: str = ""
    id_prefix: str = ""
    audio_dir: str | None = None
    audio_format: str = "wav"
    babble_pool_size: int = 100
    overwrite: bool = False
    audio: AudioOptions = dataclasses.field(default_factory=AudioOptions)

    def __post_init__(self):
        if self.audio_format not in AUDIO_FORMATS:
            raise AsrkitError(f"audio format must be one of {', '.join(AUDIO_FORMATS)}, got {self.audio_format!r}")
        for name in ("utt_suffix", "id_prefix"):
            value = getattr(self, name)
            if any(char.isspace() for char in value) or "/" in value:
                raise AsrkitError(f"{name} {value!r} may not contain whitespace or '/'")


@dataclasses.dataclass
class NoisifyJob:
    """Everything one job needs; picklable for spawned processes."""

    index: int
    data_dir: str
    out_dir: str
    audio_dir: str
    utterance_ids: list
    babble_ids: list
    config_data: dict
    config_source: str
    config_fingerprint: str
    options: NoisifyOptions

    @property
    def shard_dir(self):
        return os.path.join(self.audio_dir, f"shard.{self.index}")

    @property
    def log_file(self):
        return os.path.join(self.out_dir, "log", f"noisify.{self.index}.log")


@dataclasses.dataclass
class NoisifyResult:
    num_utterances: int
    num_done: int
    num_reused: int
    silent: dict  # input utterance id -> reason
    failed: dict
    num_clip_scaled: int
    audio_seconds: float
    wall_seconds: float
    records: dict  # output utterance id -> record


def output_utterance_id(utterance_id, options):
    return f"{options.id_prefix}{utterance_id}{options.utt_suffix}"


def output_speaker_id(speaker_id, options):
    return f"{options.id_prefix}{speaker_id}"


def _read_records(path):
    """Records of a params.jsonl; a line cut short by a killed job is ignored (that utterance is redone)."""
    records = {}
    if not os.path.exists(path):
        return records
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(record, dict) and "utt" in record:
                records[record["utt"]] = record
    return records


def _audio_name(utterance_id, options):
    return f"{utterance_id}.{options.audio_format}"


def _load_babble_pool(job, data_dir, audio_options, job_logger):
    utterances = []
    for utterance_id in job.babble_ids:
        try:
            utterances.append((utterance_id, load_utterance_audio(data_dir, utterance_id, audio_options)))
        except AudioError as error:
            job_logger.warning("babble pool: skipping %s", error)
    pool = BabblePool(utterances, audio_options.sample_rate)
    job_logger.info("babble pool: %d utterances", len(pool))
    return pool


def run_job(job, context):
    """Noisify one job's utterances into its shard directory; returns the job's records by input id."""
    job_logger = context.logger
    options = job.options
    os.makedirs(job.shard_dir, exist_ok=True)
    params_path = os.path.join(job.shard_dir, PARAMS_FILE)
    fingerprint_path = os.path.join(job.shard_dir, "fingerprint")
    previous = {}
    if not options.overwrite and os.path.exists(fingerprint_path):
        with open(fingerprint_path, encoding="utf-8") as handle:
            if handle.read().strip() == job.config_fingerprint:
                previous = _read_records(params_path)
    if not previous:
        with atomic_output(fingerprint_path) as handle:
            handle.write(job.config_fingerprint + "\n")
    wanted = set(job.utterance_ids)
    kept = {}
    for utterance_id, record in previous.items():
        if utterance_id not in wanted or record.get("status") == "failed":
            continue  # failures are retried: the cause may have been fixed
        if record.get("status") == "ok" and not os.path.exists(os.path.join(job.shard_dir, record["file"])):
            continue
        kept[utterance_id] = record
    # Rewrite the record file with only what is kept, then append as utterances finish.
    with atomic_output(params_path) as handle:
        for utterance_id in job.utterance_ids:
            if utterance_id in kept:
                handle.write(json.dumps(kept[utterance_id], sort_keys=True) + "\n")
    job_logger.info("job %d: %d utterances, %d already done -> %s", job.index, len(job.utterance_ids), len(kept),
                    job.shard_dir)

    data_dir = DataDir.load(job.data_dir)
    config = parse_style_config(job.config_data, job.config_source)
    babble = None
    if config.uses_babble() and len(kept) < len(job.utterance_ids):
        babble = _load_babble_pool(job, data_dir, options.audio, job_logger)
    noisifier = Noisifier(config, options.seed, babble)
    container, subtype = AUDIO_FORMATS[options.audio_format]
    records = dict(kept)
    with open(params_path, "a", encoding="utf-8") as params_file:
        for utterance_id in job.utterance_ids:
            if utterance_id in kept:
                context.advance(1)
                continue
            record = {"utt": utterance_id}
            try:
                samples = load_utterance_audio(data_dir, utterance_id, options.audio)
                noisy, params = noisifier.apply(samples, utterance_id, options.audio.sample_rate)
                name = _audio_name(output_utterance_id(utterance_id, options), options)
                with atomic_path(os.path.join(job.shard_dir, name)) as temporary:
                    soundfile.write(temporary, noisy, options.audio.sample_rate, format=container, subtype=subtype)
                record.update(status="ok", file=name, num_samples=len(noisy), **params)
            except SilentUtteranceError as error:
                job_logger.warning("skipping silent utterance: %s", error)
                record.update(status="silent", reason=str(error))
            except AudioError as error:
                job_logger.warning("failed: %s", error)
                record.update(status="failed", reason=str(error))
            params_file.write(json.dumps(record, sort_keys=True) + "\n")
            params_file.flush()
            records[utterance_id] = record
            context.advance(1)
    # Audio of utterances that now belong to another job (a rerun with another --nj).
    expected = {record["file"] for record in records.values() if record.get("status") == "ok"}
    for name in os.listdir(job.shard_dir):
        if name.endswith("." + options.audio_format) and name not in expected:
            os.remove(os.path.join(job.shard_dir, name))
    job_logger.info("job %d done: %d ok, %d silent, %d failed", job.index,
                    sum(r["status"] == "ok" for r in records.values()),
                    sum(r["status"] == "silent" for r in records.values()),
                    sum(r["status"] == "failed" for r in records.values()))
    return {"records": records, "reused": len(kept)}


def _fingerprint(config_data, options, data_dir):
    """What the audio depends on; a shard written under another fingerprint is redone."""
    relevant = {
        "styles": config_data, "seed": options.seed, "utt_suffix": options.utt_suffix,
        "id_prefix": options.id_prefix, "audio_format": options.audio_format,
        "babble_pool_size": options.babble_pool_size, "audio": dataclasses.asdict(options.audio),
        "data_dir": os.path.abspath(data_dir),
    }
    return hashlib.sha1(json.dumps(relevant, sort_keys=True).encode("utf-8")).hexdigest()


def _babble_ids(utterance_ids, size, seed):
    """The babble pool: a fixed subset of the data set, the same for every job (so --nj changes nothing)."""
    rng = utterance_rng(seed, "\0babble-pool")
    if len(utterance_ids) <= size:
        return list(utterance_ids)
    chosen = rng.choice(len(utterance_ids), size=size, replace=False)
    return [utterance_ids[index] for index in sorted(chosen)]


def noisify_data_dir(data_dir, out_dir, config, options=None):
    """Write a noisified copy of `data_dir` to `out_dir` (see the module docstring).

    config: a StyleConfig.  Raises AsrkitError when more than
    options.max_fail_ratio of the utterances are missing from the output
    (failed or skipped as silent), or when the output does not validate.
    """
    options = options or NoisifyOptions()
    start = time.monotonic()
    data = DataDir.load(data_dir)
    utterance_ids = list(data.utterance_ids)
    if not utterance_ids:
        raise AsrkitError(f"data directory {data_dir} has no utterances")
    out_dir = os.path.abspath(out_dir)
    if os.path.abspath(data_dir) == out_dir:
        raise AsrkitError("the output data dir must differ from the input data dir")
    audio_dir = os.path.abspath(options.audio_dir or os.path.join(out_dir, "audio"))
    os.makedirs(os.path.join(out_dir, "log"), exist_ok=True)
    os.makedirs(audio_dir, exist_ok=True)
    config_data = json.loads(config.to_json())
    fingerprint = _fingerprint(config_data, options, data_dir)
    babble_ids = _babble_ids(utterance_ids, options.babble_pool_size, options.seed) if config.uses_babble() else []
    parts = split_evenly(utterance_ids, options.nj)
    jobs = [NoisifyJob(index, os.fspath(data_dir), out_dir, audio_dir, part, babble_ids, config_data, config.source,
                       fingerprint, options) for index, part in enumerate(parts, 1)]
    remove_outputs_of_extra_jobs(audio_dir, len(jobs), ["shard.{}"])
    logger.info("noisifying %d utterances of %s in %d jobs with seed %d (logs: %s/log/noisify.JOB.log)",
                len(utterance_ids), data_dir, len(jobs), options.seed, out_dir)
    results = run_jobs(run_job, jobs, len(jobs), "noisify", lambda job: len(job.utterance_ids), logger)

    records_by_input, shard_of = {}, {}
    for job, result in zip(jobs, results):
        for utterance_id, record in result["records"].items():
            records_by_input[utterance_id] = record
            shard_of[utterance_id] = job.shard_dir
    silent = {u: r["reason"] for u, r in records_by_input.items() if r["status"] == "silent"}
    failed = {u: r["reason"] for u, r in records_by_input.items() if r["status"] == "failed"}
    done = [u for u in utterance_ids if records_by_input.get(u, {}).get("status") == "ok"]
    if silent:
        logger.warning("%d utterances have no active speech and were skipped (no SNR is defined): %s",
                       len(silent), ", ".join(c_sorted(silent)[:10]))
    if failed:
        listed = "; ".join(reason for _, reason in sorted(failed.items())[:10])
        logger.warning("%d of %d utterances failed: %s", len(failed), len(utterance_ids), listed)
    missing = len(silent) + len(failed)
    if missing > options.max_fail_ratio * len(utterance_ids):
        raise AsrkitError(
            f"{missing} of {len(utterance_ids)} utterances are missing from the output ({len(failed)} failed, "
            f"{len(silent)} silent), more than --max-fail-ratio {options.max_fail_ratio:g}; first: "
            f"{c_sorted(set(failed) | set(silent))[:10]}; see {out_dir}/log/noisify.*.log")

    records = _write_data_dir(data, done, records_by_input, shard_of, out_dir, options, config)
    problems = validate_data_dir(out_dir)
    if problems:
        listing = "\n  ".join(str(problem) for problem in problems[:10])
        raise AsrkitError(f"the noisified data dir {out_dir} does not validate:\n  {listing}")
    sample_rate = options.audio.sample_rate
    return NoisifyResult(
        num_utterances=len(utterance_ids), num_done=len(done), num_reused=sum(r["reused"] for r in results),
        silent=silent, failed=failed,
        num_clip_scaled=sum("clip_scale" in records_by_input[u] for u in done),
        audio_seconds=sum(records_by_input[u]["num_samples"] for u in done) / sample_rate,
        wall_seconds=time.monotonic() - start, records=records,
    )


def _write_data_dir(data, done, records_by_input, shard_of, out_dir, options, config):
    """The new data dir: per-utterance audio, no segments, ids mapped, stale derived files removed."""
    sample_rate = options.audio.sample_rate
    new_id = {u: output_utterance_id(u, options) for u in done}
    wav_scp = {new_id[u]: os.path.join(shard_of[u], records_by_input[u]["file"]) for u in done}
    utt2dur = {new_id[u]: records_by_input[u]["num_samples"] / sample_rate for u in done}
    text = None if data.text is None else {new_id[u]: data.text[u] for u in done if u in data.text}
    utt2spk = None
    if data.utt2spk is not None:
        utt2spk = {new_id[u]: output_speaker_id(data.utt2spk[u], options) for u in done if u in data.utt2spk}
    extra = {}
    uniq = data.extra_tables.get("utt2uniq")
    if uniq is not None or new_id and any(new_id[u] != u for u in done):
        # Copies of one recording must stay together when a set is split (Kaldi's utt2uniq).
        extra["utt2uniq"] = {new_id[u]: (uniq.get(u, u) if uniq is not None else u) for u in done}
    if "utt2lang" in data.extra_tables:
        extra["utt2lang"] = {new_id[u]: data.extra_tables["utt2lang"][u] for u in done
                             if u in data.extra_tables["utt2lang"]}
    if "spk2gender" in data.extra_tables and utt2spk is not None:
        speakers = {data.utt2spk[u] for u in done}
        extra["spk2gender"] = {output_speaker_id(s, options): g for s, g in data.extra_tables["spk2gender"].items()
                               if s in speakers}
    out = DataDir(path=None, wav_scp=wav_scp, text=text, utt2spk=utt2spk,
                  spk2utt=None if utt2spk is None else spk2utt_from_utt2spk(utt2spk), utt2dur=utt2dur,
                  extra_tables=extra)
    out.write(out_dir)
    for name in ("utt2uniq", "utt2lang", "spk2gender", "reco2dur", "reco2file_and_channel"):
        if name not in extra and os.path.exists(os.path.join(out_dir, name)):
            os.remove(os.path.join(out_dir, name))
    write_kaldi_map(os.path.join(out_dir, "utt2style"), {new_id[u]: records_by_input[u]["style"] for u in done})
    records = {}
    for u in done:
        record = dict(records_by_input[u])
        record["utt"] = new_id[u]
        record["source_utt"] = u
        record.pop("status", None)
        records[new_id[u]] = record
    with atomic_output(os.path.join(out_dir, "noisify_params.jsonl")) as handle:
        for utterance_id in c_sorted(records):
            handle.write(json.dumps(records[utterance_id], sort_keys=True) + "\n")
    os.makedirs(os.path.join(out_dir, "conf"), exist_ok=True)
    with atomic_output(os.path.join(out_dir, "conf", "noisify.json")) as handle:
        json.dump({"seed": options.seed, "utt_suffix": options.utt_suffix, "id_prefix": options.id_prefix,
                   "audio_format": options.audio_format, "babble_pool_size": options.babble_pool_size,
                   "source_data_dir": os.path.abspath(data.path), "styles_source": config.source,
                   "styles": json.loads(config.to_json())}, handle, indent=2, sort_keys=True)
        handle.write("\n")
    return records
