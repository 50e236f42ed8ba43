"""asrkit-transcribe --adapt: each speaker's inputs transcribed, the package adapted to them, transcribed again."""

import json

import soundfile
from click.testing import CliRunner

from asrkit.cli.transcribe import main
from asrkit.recognizer.package import write_package
from tests.conftest import speech_like
from tests.recognizer.conftest import model_dirs, package_dir, speaker_cmvn_package, toy_task  # noqa: F401 (fixtures)


def _wavs(tmp_path, count=4):
    paths = []
    for index in range(count):
        path = str(tmp_path / f"rec{index}.wav")
        soundfile.write(path, speech_like(2.0, 8000, seed=30 + index, f0=100.0 + 60 * (index % 2)), 8000,
                        subtype="PCM_16")
        paths.append(path)
    return paths


def test_each_speaker_s_inputs_are_adapted_together(package_dir, tmp_path):  # noqa: F811
    wavs = _wavs(tmp_path)
    utt2spk = tmp_path / "utt2spk"
    utt2spk.write_text("".join(f"rec{index} {'low' if index % 2 == 0 else 'high'}\n" for index in range(len(wavs))))
    run = CliRunner().invoke(main, [package_dir, *wavs, "--adapt", "--utt2spk", str(utt2spk), "--format", "json",
                                    "--adapt-min-frames", "50"])
    assert run.exit_code == 0, run.output
    lines = [json.loads(line) for line in run.stdout.splitlines()]
    assert [line["key"] for line in lines] == ["rec0", "rec1", "rec2", "rec3"]  # in the order given
    for speaker in ("high", "low"):
        assert f"speaker {speaker}: 2 inputs" in run.stderr
    assert run.stderr.count("frames of first-pass targets, confidence ") == 2
    assert run.stderr.count("; loss per frame") == 2
    surer = CliRunner().invoke(main, [package_dir, *wavs, "--adapt", "--utt2spk", str(utt2spk), "--adapt-min-frames",
                                      "50", "--adapt-min-confidence", "1"])
    assert surer.exit_code == 0 and surer.stderr.count("(not adapted)") == 2, surer.output
    assert "summary: status=ok inputs=4 skipped=0 failed=0" in run.stderr


def test_without_a_speaker_map_the_inputs_are_one_session_and_wrong_uses_are_refused(package_dir,  # noqa: F811
                                                                                      tmp_path):
    wavs = _wavs(tmp_path, 2)
    run = CliRunner().invoke(main, [package_dir, *wavs, "--adapt", "--adapt-method", "lhuc+input",
                                    "--adapt-min-frames", "50"])
    assert run.exit_code == 0, run.output
    assert "speaker session: 2 inputs" in run.stderr and len(run.stdout.splitlines()) == 2
    utt2spk = tmp_path / "utt2spk"
    utt2spk.write_text("rec0 a\n")
    missing = CliRunner().invoke(main, [package_dir, *wavs, "--adapt", "--utt2spk", str(utt2spk)])
    assert missing.exit_code == 1 and "no speaker for 1 input(s), e.g. rec1" in missing.stderr
    alone = CliRunner().invoke(main, [package_dir, *wavs, "--utt2spk", str(utt2spk)])
    assert alone.exit_code == 2 and "give --adapt too" in alone.output
    streaming = CliRunner().invoke(main, [package_dir, *wavs, "--adapt", "--streaming"])
    assert streaming.exit_code == 2 and "cannot be combined with --streaming" in streaming.output


def test_a_speaker_cmvn_package_hears_each_speaker_s_own_statistics_unless_told_not(speaker_cmvn_package,  # noqa: F811
                                                                                       tmp_path):
    wavs = _wavs(tmp_path, 2)
    run = CliRunner().invoke(main, [speaker_cmvn_package, *wavs, "--adapt", "--adapt-min-frames", "50"])
    assert run.exit_code == 0, run.output
    assert "the speaker's own CMVN over 2 recordings" in run.stderr
    online = CliRunner().invoke(main, [speaker_cmvn_package, *wavs, "--adapt", "--adapt-min-frames", "50",
                                       "--no-adapt-speaker-cmvn"])
    assert online.exit_code == 0, online.output
    assert "speaker session: 2 inputs" in online.stderr and "own CMVN" not in online.stderr


def test_a_combination_fits_its_own_network_unless_told_all(model_dirs, toy_task, tmp_path):  # noqa: F811
    path = str(tmp_path / "combined")
    combination = {"weight": 0.4, "model_scale": 0.5, "combine_scale": 1.5, "combine_prior_scale": 0.0}
    write_package(model_dirs["wblstm"], toy_task["graph"], path, {"lm_weight": 1.0, "combination": combination},
                  model_dirs["lstm"])
    wavs = _wavs(tmp_path, 2)
    first = CliRunner().invoke(main, [path, *wavs, "--adapt", "--adapt-min-frames", "50"])
    assert first.exit_code == 0, first.output
    assert "adapted wblstm over 2 recordings" in first.stderr and "adapted lstm" not in first.stderr
    both = CliRunner().invoke(main, [path, *wavs, "--adapt", "--adapt-min-frames", "50", "--adapt-networks", "all"])
    assert both.exit_code == 0, both.output
    assert "adapted wblstm over 2 recordings" in both.stderr and "adapted lstm over 2 recordings" in both.stderr
