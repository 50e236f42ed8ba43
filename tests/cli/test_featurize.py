import json
import os

import h5py
import numpy as np
import pytest
import soundfile
from click.testing import CliRunner

from asrkit.cli.featurize import main
from asrkit.errors import TableError
from asrkit.frontend.cmvn import CmvnStats
from asrkit.io.table import TableReader


def run(args):
    result = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    return result


def test_featurize_writes_table_scp_num_frames_config_and_cmvn(make_data_dir, tmp_path):
    data = make_data_dir({"spkA-1": 1.0, "spkA-2": 0.5, "spkB-1": 1.37})
    feats = tmp_path / "feats"
    result = run([data, feats, "--compute-cmvn"])
    assert result.exit_code == 0, result.output

    with TableReader(os.path.join(data, "feats.scp")) as table:
        assert table.keys() == ["spkA-1", "spkA-2", "spkB-1"]
        assert table.shape("spkA-1") == (33, 512)  # ceil((1 + (16000 - 512) // 160) / 3)
        assert table["spkA-1"].dtype == np.float32
        all_frames = np.concatenate([value for _, value in table.items()])
    num_frames = dict(line.split() for line in open(os.path.join(data, "utt2num_frames")))
    assert num_frames == {"spkA-1": "33", "spkA-2": "16", "spkB-1": "45"}
    config = json.load(open(os.path.join(data, "conf", "featurize.json")))
    assert config["num_mel_bins"] == 128 and config["frame_shift_ms"] == 10.0
    cmvn = CmvnStats.read(os.path.join(data, "cmvn.h5"))
    assert cmvn.count == len(all_frames)
    np.testing.assert_allclose(cmvn.mean, all_frames.mean(axis=0), rtol=1e-5, atol=1e-5)
    assert os.path.exists(feats / "log" / "featurize.1.log")
    with h5py.File(feats / "feats.1.h5") as shard:
        assert json.loads(shard.attrs["config"])["compression"] == "log"


def test_parallel_jobs_match_one_job_and_rerun_reuses_shards(make_data_dir, tmp_path):
    data = make_data_dir({f"spk{s}-{u}": 0.4 + 0.1 * u for s in range(2) for u in range(3)})
    assert run([data, tmp_path / "one", "--nj", 1]).exit_code == 0
    single = dict(TableReader(os.path.join(data, "feats.scp")).items())
    result = run([data, tmp_path / "two", "--nj", 2])
    assert result.exit_code == 0
    assert "reused_jobs=0" in result.output
    with TableReader(os.path.join(data, "feats.scp")) as table:
        assert {os.path.basename(table._index[k][0]) for k in table} == {"feats.1.h5", "feats.2.h5"}
        for key, value in table.items():
            np.testing.assert_allclose(value, single[key], atol=1e-4)
    rerun = run([data, tmp_path / "two", "--nj", 2])
    assert "reused_jobs=2" in rerun.output
    changed = run([data, tmp_path / "two", "--nj", 2, "--compression", "root15"])
    assert "reused_jobs=0" in changed.output


def test_a_set_featurized_with_the_utterance_mean_and_no_statistics_is_reused_on_a_rerun(make_data_dir, tmp_path):
    # A dev or test set: its own utterances' means, no cmvn.h5 (the training set's is used).  The
    # rerun used to fail on online CMN's raw statistics, which only --compute-cmvn writes.
    data = make_data_dir({"spkA-1": 0.5, "spkB-1": 0.5})
    assert run([data, tmp_path / "f", "--nj", 2, "--cmvn-mean", "utterance"]).exit_code == 0
    rerun = run([data, tmp_path / "f", "--nj", 2, "--cmvn-mean", "utterance"])
    assert rerun.exit_code == 0, rerun.output
    assert "reused_jobs=2" in rerun.output


def test_regenerated_audio_or_other_audio_options_are_featurized_again(make_data_dir, tmp_path, speech_like):
    import soundfile

    data = make_data_dir({"spkA-1": 1.0, "spkB-1": 1.0})
    assert run([data, tmp_path / "f", "--nj", 2]).exit_code == 0
    assert "reused_jobs=2" in run([data, tmp_path / "f", "--nj", 2]).output
    # Audio regenerated under the same id (twice as long): its job is redone, the other reused.
    soundfile.write(tmp_path / "data_wav" / "spkA-1.wav", speech_like(2.0, seed=9), 16000, subtype="PCM_16")
    rerun = run([data, tmp_path / "f", "--nj", 2])
    assert "reused_jobs=1" in rerun.output
    assert TableReader(os.path.join(data, "feats.scp")).shape("spkA-1") == (66, 512)
    assert "reused_jobs=0" in run([data, tmp_path / "f", "--nj", 2, "--on-rate-mismatch", "resample"]).output


def test_bad_utterances_are_skipped_counted_and_named(make_data_dir, tmp_path):
    durations = {f"spk1-{u:02d}": 0.5 for u in range(20)}
    data = make_data_dir(durations)
    wav_dir = tmp_path / "data_wav"
    (wav_dir / "spk1-03.wav").write_bytes(b"this is not audio")
    (wav_dir / "spk1-07.wav").write_bytes(b"")
    result = run([data, tmp_path / "feats", "--max-fail-ratio", "0.2"])
    assert result.exit_code == 0, result.output
    assert "2 of 20 utterances failed" in result.output
    assert "spk1-03" in result.output and "spk1-07" in result.output
    assert "failed=2" in result.output
    keys = TableReader(os.path.join(data, "feats.scp")).keys()
    assert len(keys) == 18 and "spk1-03" not in keys

    # Above the threshold the command fails, names the utterances and writes no feats.scp.
    os.remove(os.path.join(data, "feats.scp"))
    result = run([data, tmp_path / "feats2"])
    assert result.exit_code == 1
    assert "more than --max-fail-ratio 0.05" in result.output and "spk1-03" in result.output
    assert not os.path.exists(os.path.join(data, "feats.scp"))


def test_too_short_and_wrong_rate(make_data_dir, tmp_path):
    data = make_data_dir({"spk1-a": 0.02, "spk1-b": 1.0, "spk1-c": 1.0})
    result = run([data, tmp_path / "f", "--max-fail-ratio", "0.5"])
    assert "spk1-a: 320 samples is shorter than one 32 ms window" in result.output
    rate_data = make_data_dir({"spk2-a": 1.0}, name="rate", sample_rate=8000)
    refused = run([rate_data, tmp_path / "r"])
    assert refused.exit_code == 1 and "spk2-a" in refused.output and "8000" in refused.output
    resampled = run([rate_data, tmp_path / "r", "--on-rate-mismatch", "resample"])
    assert resampled.exit_code == 0, resampled.output
    assert TableReader(os.path.join(rate_data, "feats.scp")).shape("spk2-a") == (33, 512)


def test_config_file_and_print_config(tmp_path, make_data_dir):
    config = tmp_path / "conf.json"
    config.write_text(json.dumps({"num_mel_bins": 40, "stack_frames": 1, "subsample": 1}))
    result = run([make_data_dir({"s-1": 0.3}), tmp_path / "f", "--feature-config", config, "--low-freq", 20,
                  "--print-config"])
    printed = json.loads(result.output[result.output.index("{"):])
    assert printed["num_mel_bins"] == 40 and printed["low_freq"] == 20.0 and printed["stack_frames"] == 1
    config.write_text(json.dumps({"num_mel_bin": 40}))
    bad = run([make_data_dir({"s-1": 0.3}, name="d2"), tmp_path / "f", "--feature-config", config])
    assert bad.exit_code == 1 and "unknown feature options: num_mel_bin" in bad.output


def test_options_file_is_the_kaldi_style_config_as_for_every_command(tmp_path, make_data_dir):
    options = tmp_path / "featurize.conf"
    options.write_text("# the recipe's featurize options\n--num-mel-bins=40\n--stack-frames=1\n--cmvn-mean=utterance\n")
    result = run([make_data_dir({"s-1": 0.3}), tmp_path / "f", "--config", options, "--stack-frames", 2,
                  "--print-config"])
    printed = json.loads(result.output[result.output.index("{"):])
    assert printed["num_mel_bins"] == 40 and printed["stack_frames"] == 2  # the command line wins
    options.write_text("--num-mel-bins 40\n")
    bad = run([make_data_dir({"s-1": 0.3}, name="d2"), tmp_path / "f", "--config", options])
    assert bad.exit_code != 0 and "featurize.conf:1" in bad.output


def test_help_lists_feature_options_with_defaults():
    result = CliRunner().invoke(main, ["--help"], terminal_width=200)
    assert "--num-mel-bins INTEGER" in result.output and "[default: 128]" in result.output
    assert "--compression [log|root15|root10]" in result.output


def test_raw_pcm_with_stated_format(tmp_path, speech_like):
    samples = speech_like(1.0, seed=5)
    (tmp_path / "a.bin").write_bytes((samples * 32767).astype("<i2").tobytes())
    (tmp_path / "b.bin").write_bytes(samples.astype("<f4").tobytes())
    data = tmp_path / "data"
    data.mkdir()
    (data / "wav.scp").write_text(f"s-a {tmp_path}/a.bin\n")
    (data / "utt2spk").write_text("s-a s\n")
    (data / "spk2utt").write_text("s s-a\n")
    assert run([data, tmp_path / "f16", "--raw-format", "PCM_16"]).exit_code == 0
    int16_features = TableReader(str(data / "feats.scp"))["s-a"]
    (data / "wav.scp").write_text(f"s-a {tmp_path}/b.bin\n")
    assert run([data, tmp_path / "f32", "--raw-format", "FLOAT"]).exit_code == 0
    float_features = TableReader(str(data / "feats.scp"))["s-a"]
    assert int16_features.shape == (33, 512)
    np.testing.assert_allclose(int16_features, float_features, atol=0.05)
    bad = run([data, tmp_path / "f", "--raw-format", "MP3"])
    assert bad.exit_code != 0 and "MP3" in bad.output


def test_utterance_cmvn_is_recorded_and_recomputes_the_statistics(make_data_dir, tmp_path):
    data = make_data_dir({"spkA-1": 1.0, "spkB-1": 0.7})
    feats = tmp_path / "feats"
    assert run([data, feats, "--compute-cmvn"]).exit_code == 0
    assert CmvnStats.read(os.path.join(data, "cmvn.h5")).mean_norm == "global"
    result = run([data, feats, "--compute-cmvn", "--cmvn-mean", "utterance"])
    assert result.exit_code == 0, result.output
    # The shards' statistics were of the other kind, so the jobs ran again.
    assert "reused_jobs=0" in result.output
    cmvn = CmvnStats.read(os.path.join(data, "cmvn.h5"))
    assert cmvn.mean_norm == "utterance"
    with TableReader(os.path.join(data, "feats.scp")) as table:
        centred = np.concatenate([value - value.mean(axis=0) for _, value in table.items()])
    assert cmvn.count == len(centred)
    np.testing.assert_allclose(cmvn.stddev(), centred.std(axis=0), rtol=1e-4, atol=1e-4)
    assert "reused_jobs=1" in run([data, feats, "--compute-cmvn", "--cmvn-mean", "utterance"]).output


def test_online_cmvn_is_recorded_with_online_cmns_prior(make_data_dir, tmp_path):
    data = make_data_dir({"spkA-1": 1.0, "spkB-1": 0.7})
    feats = tmp_path / "feats"
    result = run([data, feats, "--compute-cmvn", "--cmvn-mean", "online"])
    assert result.exit_code == 0, result.output
    cmvn = CmvnStats.read(os.path.join(data, "cmvn.h5"))
    assert cmvn.mean_norm == "online"
    with TableReader(os.path.join(data, "feats.scp")) as table:
        utterances = [value for _, value in table.items()]
    np.testing.assert_allclose(cmvn.raw_moments.mean, np.concatenate(utterances).mean(axis=0), rtol=1e-4, atol=1e-4)
    assert (cmvn.online_options.window, cmvn.online_options.prior_frames) == (600, 200)
    rerun = run([data, feats, "--compute-cmvn", "--cmvn-mean", "online", "--cmvn-online-prior-frames", "67"])
    assert "reused_jobs=1" in rerun.output  # the sums are the same; the file records the new start
    assert CmvnStats.read(os.path.join(data, "cmvn.h5")).online_options.prior_frames == 67
    # The utterance mean's statistics are others: the jobs run again.
    assert "reused_jobs=0" in run([data, feats, "--compute-cmvn", "--cmvn-mean", "utterance"]).output


def test_narrowband_front_end_downsamples_and_records_it(make_data_dir, tmp_path):
    data = make_data_dir({"spk1-a": 1.0}, sample_rate=11025)
    narrowband = ["--sample-rate", "8000", "--fft-length", "256", "--num-mel-bins", "40", "--high-freq", "3800",
                  "--compression", "root10"]
    refused = run([data, tmp_path / "r", *narrowband])
    assert refused.exit_code == 1 and "11025 Hz but 8000 Hz is expected" in refused.output
    result = run([data, tmp_path / "f", *narrowband, "--allow-downsample"])
    assert result.exit_code == 0, result.output
    # 1 s at 8 kHz: 1 + (8000 - 256) // 80 = 97 analysis frames, every third of them stacked by 4.
    assert TableReader(os.path.join(data, "feats.scp")).shape("spk1-a") == (33, 160)
    config = json.load(open(os.path.join(data, "conf", "featurize.json")))
    assert config["allow_downsample"] is True and config["sample_rate"] == 8000
    upsampling = make_data_dir({"spk2-a": 1.0}, name="low", sample_rate=6000)
    low = run([upsampling, tmp_path / "l", *narrowband, "--allow-downsample"])
    assert low.exit_code == 1 and "only downsample is allowed" in low.output


def test_a_hanging_pipe_is_killed_after_pipe_timeout_and_counted(make_data_dir, tmp_path):
    data = make_data_dir({f"spk1-{u:02d}": 0.5 for u in range(10)})
    scp = os.path.join(data, "wav.scp")
    with open(scp) as handle:
        lines = handle.read().splitlines()
    lines[4] = lines[4].split()[0] + " sleep 30 |"
    with open(scp, "w") as handle:
        handle.write("\n".join(lines) + "\n")
    result = run([data, tmp_path / "feats", "--max-fail-ratio", "0.2", "--pipe-timeout", "0.5"])
    assert result.exit_code == 0, result.output
    assert "did not finish within 0.5 s" in result.output and "failed=1" in result.output


def test_a_data_dir_that_validation_rejects_is_refused_before_any_work(make_data_dir, tmp_path):
    data = make_data_dir({f"spk1-{u:02d}": 0.3 for u in range(3)})
    utt2spk = os.path.join(data, "utt2spk")
    with open(utt2spk) as handle:
        lines = handle.read().splitlines()
    lines[1] = lines[1].split()[0] + " spk2"  # utt2spk now disagrees with spk2utt
    with open(utt2spk, "w") as handle:
        handle.write("\n".join(lines) + "\n")
    result = run([data, tmp_path / "feats"])
    assert result.exit_code == 1
    assert "problem(s) found" in result.output and "spk2" in result.output
    assert not os.path.exists(os.path.join(data, "feats.scp"))
    assert not os.path.exists(tmp_path / "feats" / "feats.1.h5")


def _speaker_frames(data):
    """Each speaker's frames from the table, by utt2spk, in numpy."""
    utt2spk = dict(line.split() for line in open(os.path.join(data, "utt2spk")))
    frames = {}
    with TableReader(os.path.join(data, "feats.scp")) as table:
        for key, value in table.items():
            frames.setdefault(utt2spk[key], []).append(np.asarray(value, np.float64))
    return {speaker: np.concatenate(parts) for speaker, parts in frames.items()}


def test_speaker_cmvn_sums_whole_speakers_across_jobs(make_data_dir, tmp_path):
    from asrkit.frontend.cmvn import SpeakerCmvn

    # Five utterances of spkA: with three jobs spkA's utterances fall into two of them.
    data = make_data_dir({**{f"spkA-{u}": 0.3 + 0.1 * u for u in range(5)}, "spkB-1": 0.6, "spkB-2": 0.4})
    result = run([data, tmp_path / "one", "--compute-cmvn", "--cmvn-mean", "speaker"])
    assert result.exit_code == 0, result.output
    frames = _speaker_frames(data)
    single = SpeakerCmvn.read(os.path.join(data, "spk_cmvn.h5"))
    assert sorted(single.speakers) == ["spkA", "spkB"]
    for speaker, own in frames.items():
        assert single.moments(speaker).count == len(own)
        np.testing.assert_allclose(single.moments(speaker).mean, own.mean(axis=0), rtol=1e-6, atol=1e-6)
    cmvn = CmvnStats.read(os.path.join(data, "cmvn.h5"))
    centred = np.concatenate([own - own.mean(axis=0) for own in frames.values()])
    assert (cmvn.mean_norm, cmvn.var_norm, cmvn.count) == ("speaker", "global", len(centred))
    np.testing.assert_allclose(cmvn.stddev(), centred.std(axis=0), rtol=1e-4, atol=1e-4)

    result = run([data, tmp_path / "three", "--nj", 3, "--compute-cmvn", "--cmvn-mean", "speaker",
                  "--cmvn-variance", "speaker"])
    assert result.exit_code == 0, result.output
    assert len([n for n in os.listdir(tmp_path / "three") if n.startswith("spk_cmvn.")]) == 3
    split = SpeakerCmvn.read(os.path.join(data, "spk_cmvn.h5"))
    for speaker in frames:
        assert split.moments(speaker).count == single.moments(speaker).count
        np.testing.assert_allclose(split.moments(speaker).sum, single.moments(speaker).sum, rtol=1e-5, atol=1e-3)
        np.testing.assert_allclose(split.moments(speaker).stddev(), single.moments(speaker).stddev(), rtol=1e-5)
    assert CmvnStats.read(os.path.join(data, "cmvn.h5")).var_norm == "speaker"
    # A rerun reuses every job, sums included; two jobs instead of three drop the third's sums.
    assert "reused_jobs=3" in run([data, tmp_path / "three", "--nj", 3, "--cmvn-mean", "speaker"]).output
    assert run([data, tmp_path / "three", "--nj", 2, "--cmvn-mean", "speaker"]).exit_code == 0
    assert not os.path.exists(tmp_path / "three" / "spk_cmvn.3.h5")


def test_speaker_sums_follow_utt2spk_and_leave_with_another_mean(make_data_dir, tmp_path):
    from asrkit.frontend.cmvn import SpeakerCmvn

    data = make_data_dir({"spkA-1": 0.5, "spkA-2": 0.5})
    feats = tmp_path / "feats"
    # Without --compute-cmvn (a dev or test set): the speakers' sums alone.
    assert run([data, feats, "--cmvn-mean", "speaker"]).exit_code == 0
    assert os.path.exists(os.path.join(data, "spk_cmvn.h5")) and not os.path.exists(os.path.join(data, "cmvn.h5"))
    # Another speaker for the same audio: the shard could be reused, but not its speaker sums.
    for name, text in (("utt2spk", "spkA-1 spkA\nspkA-2 spkA-2\n"), ("spk2utt", "spkA spkA-1\nspkA-2 spkA-2\n")):
        with open(os.path.join(data, name), "w") as out:
            out.write(text)
    result = run([data, feats, "--cmvn-mean", "speaker"])
    assert "reused_jobs=0" in result.output
    assert sorted(SpeakerCmvn.read(os.path.join(data, "spk_cmvn.h5")).speakers) == ["spkA", "spkA-2"]
    assert run([data, feats]).exit_code == 0
    assert not os.path.exists(os.path.join(data, "spk_cmvn.h5"))  # stale sums of other features go


def test_speaker_variance_needs_the_speaker_mean(make_data_dir, tmp_path):
    data = make_data_dir({"spkA-1": 0.5})
    result = CliRunner().invoke(main, [str(data), str(tmp_path / "f"), "--compute-cmvn", "--cmvn-variance", "speaker"])
    assert result.exit_code != 0
    assert "--cmvn-variance speaker needs --cmvn-mean speaker" in result.output


def test_speaker_sums_of_another_front_end_are_not_reused(make_data_dir, tmp_path):
    from asrkit.frontend.cmvn import SpeakerCmvn

    data = make_data_dir({"spkA-1": 0.5, "spkB-1": 0.4})
    feats = tmp_path / "feats"
    assert run([data, feats, "--cmvn-mean", "speaker", "--num-mel-bins", "20"]).exit_code == 0
    # A global run with another front end leaves the speaker run's sums behind; a speaker run with the
    # global run's front end reuses its shard but must not take those sums.
    assert run([data, feats]).exit_code == 0
    result = run([data, feats, "--cmvn-mean", "speaker"])
    assert result.exit_code == 0 and "reused_jobs=0" in result.output
    assert SpeakerCmvn.read(os.path.join(data, "spk_cmvn.h5")).dim == 512


def test_kaldi_features_are_never_overwritten_and_a_copy_gets_asrkits(make_data_dir, tmp_path):
    data = make_data_dir({"spkA-1": 0.5, "spkB-1": 0.6})
    kaldi_feats = "spkA-1 /kaldi/mfcc/raw_mfcc.1.ark:9\nspkB-1 /kaldi/mfcc/raw_mfcc.1.ark:4711\n"
    kaldi_cmvn = "spkA /kaldi/mfcc/cmvn.ark:5\nspkB /kaldi/mfcc/cmvn.ark:300\n"
    open(os.path.join(data, "feats.scp"), "w").write(kaldi_feats)
    open(os.path.join(data, "cmvn.scp"), "w").write(kaldi_cmvn)
    result = run([data, tmp_path / "feats"])
    assert result.exit_code == 1
    assert f"{data}/feats.scp:1: 'spkA-1 /kaldi/mfcc/raw_mfcc.1.ark:9' is an entry of Kaldi's features" in result.output
    assert "--out-data-dir" in result.output
    os.remove(os.path.join(data, "feats.scp"))  # cmvn.scp alone is Kaldi's too
    result = run([data, tmp_path / "feats"])
    assert result.exit_code == 1 and f"{data}/cmvn.scp:1:" in result.output
    open(os.path.join(data, "feats.scp"), "w").write(kaldi_feats)

    copy = tmp_path / "data_asrkit"
    for _ in range(2):  # a rerun replaces the earlier copy
        result = run([data, tmp_path / "feats", "--out-data-dir", copy])
        assert result.exit_code == 0, result.output
    assert open(os.path.join(data, "feats.scp")).read() == kaldi_feats
    assert open(os.path.join(data, "cmvn.scp")).read() == kaldi_cmvn
    assert not os.path.exists(os.path.join(data, "conf"))
    with TableReader(copy / "feats.scp") as table:
        assert table.keys() == ["spkA-1", "spkB-1"]
    assert not (copy / "cmvn.scp").exists() and (copy / "wav.scp").read_text() == open(f"{data}/wav.scp").read()
    # A Kaldi table index read as asrkit's is named with its line.
    with pytest.raises(TableError, match="feats.scp:1: .* is a Kaldi table entry"):
        TableReader(os.path.join(data, "feats.scp"))
    # The copy's place must be empty or an earlier copy: another data dir is not overwritten.
    result = run([data, tmp_path / "feats", "--out-data-dir", data])
    assert result.exit_code == 1 and open(os.path.join(data, "feats.scp")).read() == kaldi_feats


def test_segments_read_each_recording_once_per_job(tmp_path, speech_like):
    data = tmp_path / "data"
    data.mkdir()
    runs = tmp_path / "runs.txt"
    wav, segments, utt2spk = [], [], []
    for r in range(3):
        path = tmp_path / f"rec{r}.wav"
        soundfile.write(path, speech_like(2.0, seed=r), 16000, subtype="PCM_16")
        wav.append(f"rec{r} echo rec{r} >> {runs}; cat {path} |\n")
        for s in range(20):
            segments.append(f"rec{r}-{s:02d} rec{r} {0.1 * s:.2f} {0.1 * s + 0.1:.2f}\n")
            utt2spk.append(f"rec{r}-{s:02d} rec{r}\n")
    (data / "wav.scp").write_text("".join(wav))
    (data / "segments").write_text("".join(segments))
    (data / "utt2spk").write_text("".join(utt2spk))
    (data / "spk2utt").write_text("".join(f"rec{r} " + " ".join(f"rec{r}-{s:02d}" for s in range(20)) + "\n"
                                          for r in range(3)))
    result = run([data, tmp_path / "feats"])
    assert result.exit_code == 0, result.output
    assert "done=60" in result.output
    assert runs.read_text().split() == ["rec0", "rec1", "rec2"]  # 60 segments, 3 commands
    runs.unlink()
    assert run([data, tmp_path / "feats2", "--nj", "2"]).exit_code == 0
    assert sorted(runs.read_text().split()) == ["rec0", "rec1", "rec1", "rec2"]  # rec1 is split between the jobs
