"""asrkit-noisify end to end: a valid data dir, resumable jobs, determinism, bad utterances."""

import json
import os

import numpy as np
import soundfile
from click.testing import CliRunner

from asrkit.cli.noisify import main
from asrkit.data.validate import validate_data_dir

STYLES = {"styles": [
    {"name": "clean", "weight": 1},
    {"name": "pink_room_vtlp", "weight": 2, "vtlp": {"alpha": [0.8, 1.2]}, "reverb": {"rt60": [0.2, 0.5]},
     "noise": {"type": "pink", "snr_db": [5, 15]}},
    {"name": "babble", "weight": 2, "noise": {"type": "babble", "snr_db": [5, 15], "talkers": [2, 3]}},
]}


def run(args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def styles_file(tmp_path, data=STYLES):
    path = tmp_path / "styles.json"
    path.write_text(json.dumps(data))
    return path


def read_map(path):
    with open(path) as handle:
        return dict(line.rstrip("\n").split(" ", 1) for line in handle)


def utterances(count_per_speaker=3):
    return {f"spk{s}-{u}": 0.6 + 0.1 * u for s in "ab" for u in range(count_per_speaker)}


def test_writes_a_valid_noisy_data_dir_with_params(make_data_dir, tmp_path):
    durations = utterances()
    data = make_data_dir(durations, text={u: "HELLO WORLD" for u in durations})
    out = tmp_path / "noisy"
    result = run([data, out, "--styles", styles_file(tmp_path), "--seed", 3, "--nj", 2, "--utt-suffix", "-noisy"])
    assert result.exit_code == 0, result.output
    assert "status=ok utterances=6 done=6" in result.output
    assert validate_data_dir(out) == []
    wav_scp = read_map(out / "wav.scp")
    assert sorted(wav_scp) == sorted(f"{u}-noisy" for u in durations)
    assert read_map(out / "utt2spk")["spka-1-noisy"] == "spka"
    assert read_map(out / "text")["spkb-2-noisy"] == "HELLO WORLD"
    assert read_map(out / "utt2uniq")["spka-0-noisy"] == "spka-0"
    for utt, path in wav_scp.items():
        assert os.path.dirname(path) in (str(out / "audio" / "shard.1"), str(out / "audio" / "shard.2"))
        audio, rate = soundfile.read(path, dtype="float32")
        info = soundfile.info(path)
        assert rate == 16000 and info.subtype == "PCM_16" and np.all(np.isfinite(audio))
        assert float(read_map(out / "utt2dur")[utt]) == len(audio) / 16000
        assert len(audio) == round(durations[utt[: -len("-noisy")]] * 16000)
    records = [json.loads(line) for line in open(out / "noisify_params.jsonl")]
    assert [r["utt"] for r in records] == sorted(wav_scp)
    assert {r["style"] for r in records} <= {"clean", "pink_room_vtlp", "babble"}
    assert read_map(out / "utt2style") == {r["utt"]: r["style"] for r in records}
    assert json.load(open(out / "conf" / "noisify.json"))["seed"] == 3
    assert os.path.exists(out / "log" / "noisify.2.log")


def test_speed_perturbed_audio_gets_its_own_durations(make_data_dir, tmp_path):
    durations = utterances(2)
    data = make_data_dir(durations)
    out = tmp_path / "fast"
    result = run([data, out, "--styles", styles_file(tmp_path, {"styles": [{"name": "fast", "speed": [1.1, 1.2]}]})])
    assert result.exit_code == 0, result.output
    assert validate_data_dir(out) == []
    records = {r["source_utt"]: r for r in map(json.loads, open(out / "noisify_params.jsonl"))}
    for utt, seconds in durations.items():
        assert 1.1 <= records[utt]["speed"] <= 1.2
        assert abs(float(read_map(out / "utt2dur")[utt]) - seconds / records[utt]["speed"]) < 1e-3


def test_rerun_skips_finished_utterances_and_output_does_not_depend_on_nj(make_data_dir, tmp_path):
    data = make_data_dir(utterances())
    styles = styles_file(tmp_path)
    assert run([data, tmp_path / "one", "--styles", styles, "--seed", 1]).exit_code == 0
    rerun = run([data, tmp_path / "one", "--styles", styles, "--seed", 1])
    assert "reused=6" in rerun.output
    assert run([data, tmp_path / "two", "--styles", styles, "--seed", 1, "--nj", 3]).exit_code == 0
    for utt, path in read_map(tmp_path / "one" / "wav.scp").items():
        other = read_map(tmp_path / "two" / "wav.scp")[utt]
        np.testing.assert_array_equal(soundfile.read(path)[0], soundfile.read(other)[0])
    changed = run([data, tmp_path / "one", "--styles", styles, "--seed", 2])
    assert "reused=0" in changed.output


def test_segments_become_per_utterance_audio_and_prefix_renames_speakers(make_data_dir, tmp_path):
    data = make_data_dir({"spka-rec": 2.0})
    with open(os.path.join(data, "segments"), "w") as handle:
        handle.write("spka-1 spka-rec 0.0 0.8\nspka-2 spka-rec 0.9 1.9\n")
    with open(os.path.join(data, "utt2spk"), "w") as handle:
        handle.write("spka-1 spka\nspka-2 spka\n")
    with open(os.path.join(data, "spk2utt"), "w") as handle:
        handle.write("spka spka-1 spka-2\n")
    out = tmp_path / "noisy"
    result = run([data, out, "--styles", styles_file(tmp_path, {"styles": [{"name": "w", "noise": {
        "type": "white", "snr_db": 10}}]}), "--id-prefix", "ns1-", "--audio-format", "flac"])
    assert result.exit_code == 0, result.output
    assert not os.path.exists(out / "segments") and validate_data_dir(out) == []
    assert read_map(out / "spk2utt") == {"ns1-spka": "ns1-spka-1 ns1-spka-2"}
    assert read_map(out / "wav.scp")["ns1-spka-2"].endswith("ns1-spka-2.flac")
    assert float(read_map(out / "utt2dur")["ns1-spka-2"]) == 1.0


def test_silent_and_broken_utterances_are_counted_and_threshold_applies(make_data_dir, tmp_path):
    durations = {f"spka-{u}": 0.5 for u in range(10)}
    data = make_data_dir(durations)
    wav_scp = read_map(os.path.join(data, "wav.scp"))
    soundfile.write(wav_scp["spka-3"], np.zeros(8000, np.float32), 16000, subtype="PCM_16")
    soundfile.write(wav_scp["spka-7"], np.full(8000, np.nan, np.float32), 16000, subtype="FLOAT")
    styles = styles_file(tmp_path, {"styles": [{"name": "w", "noise": {"type": "white", "snr_db": 10}}]})
    failed = run([data, tmp_path / "strict", "--styles", styles])
    assert failed.exit_code == 1
    assert "2 of 10 utterances are missing from the output (1 failed, 1 silent)" in failed.output
    result = run([data, tmp_path / "lenient", "--styles", styles, "--max-fail-ratio", 0.25])
    assert result.exit_code == 0, result.output
    assert "done=8" in result.output and "silent=1 failed=1" in result.output
    assert "spka-3" not in read_map(tmp_path / "lenient" / "wav.scp")
    assert validate_data_dir(tmp_path / "lenient") == []
    log = open(tmp_path / "lenient" / "log" / "noisify.1.log").read()
    assert "spka-3" in log and "no SNR" in log and "NaN" in log


def test_bad_style_config_is_reported_with_its_file(make_data_dir, tmp_path):
    data = make_data_dir({"spka-1": 0.5})
    styles = styles_file(tmp_path, {"styles": [{"name": "x", "noise": {"type": "pink", "snr_db": [9, 1]}}]})
    result = run([data, tmp_path / "out", "--styles", styles])
    assert result.exit_code == 1
    assert f"{styles}: styles[0] ('x').noise.snr_db: low 9 is greater than high 1" in result.output
