"""Recipe options that cannot work together are refused before any stage runs."""

import os
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.parametrize("recipe", ["voiceover", "voicesearch"])
def test_adapting_without_the_combination_is_refused_before_training(recipe, tmp_path):
    """The adaptation stage adapts the combination from its lattices: --adapt true with --combine false would
    otherwise fail there, after every model had trained."""
    data, exp = tmp_path / "data", tmp_path / "exp"
    result = subprocess.run([os.path.join(ROOT, "egs", recipe, "run.sh"), "--adapt", "true", "--combine", "false",
                             "--data", str(data), "--exp", str(exp)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert "--adapt true adapts the combination: give --combine true" in result.stderr
    assert not exp.exists() and not data.exists()


@pytest.mark.parametrize("recipe", ["voiceover", "voicesearch"])
def test_each_recipe_adapts_by_default_only_with_the_combination(recipe, tmp_path):
    """--adapt follows --combine unless given: --combine false alone runs, without the adaptation stage."""
    def run(*options):
        return subprocess.run([os.path.join(ROOT, "egs", recipe, "run.sh"), *options, "--stage", "99",
                               "--stop-stage", "99", "--data", str(tmp_path / "data"), "--exp", str(tmp_path / "exp")],
                              capture_output=True, text=True, timeout=60)

    assert run("--combine", "false").returncode == 0
    assert run().returncode == 0
    wrong = run("--adapt", "maybe")
    assert wrong.returncode != 0 and "--adapt must be true or false" in wrong.stderr


@pytest.mark.parametrize("recipe", ["voiceover", "voicesearch"])
def test_a_kaldi_baseline_without_a_built_kaldi_is_refused_before_training(recipe, tmp_path):
    """The Kaldi baseline runs after every asrkit model has trained: a directory that holds no built Kaldi is named
    before stage 0, with the first file it lacks."""
    data, exp, kaldi = tmp_path / "data", tmp_path / "exp", tmp_path / "kaldi"
    (kaldi / "egs" / "wsj" / "s5" / "steps").mkdir(parents=True)
    (kaldi / "egs" / "wsj" / "s5" / "steps" / "train_sat.sh").write_text("#!/bin/bash\n")
    os.chmod(kaldi / "egs" / "wsj" / "s5" / "steps" / "train_sat.sh", 0o755)
    result = subprocess.run([os.path.join(ROOT, "egs", recipe, "run.sh"), "--kaldi-baseline", str(kaldi),
                             "--data", str(data), "--exp", str(exp)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert (f"--kaldi-baseline {kaldi} is not a built Kaldi: src/featbin/compute-mfcc-feats is missing (build it "
            f"with bin/build-kaldi {kaldi})") in result.stderr
    assert "run.sh --kaldi-baseline" in result.stderr.splitlines()[0]  # the command line comes first
    assert not exp.exists() and not data.exists()


def test_voiceover_refuses_an_extra_training_set_that_is_no_data_dir_before_stage_0(tmp_path):
    """--extra-train is combined into the training set at stage 1: a directory without the tables it needs is named
    before anything runs; a relative path is the recipe directory's, as --data's is."""
    data, exp, extra = tmp_path / "data", tmp_path / "exp", tmp_path / "extra"
    extra.mkdir()
    (extra / "wav.scp").write_text("u1 /a.wav\n")

    def run(extra_train):
        return subprocess.run([os.path.join(ROOT, "egs", "voiceover", "run.sh"), "--extra-train", extra_train,
                               "--stage", "99", "--stop-stage", "99", "--data", str(data), "--exp", str(exp)],
                              capture_output=True, text=True, timeout=60, cwd=tmp_path)

    missing = run(str(extra))
    assert missing.returncode == 1 and f"--extra-train: {extra}/text does not exist" in missing.stderr
    assert not data.exists()
    (extra / "text").write_text("u1 HELLO\n")
    (extra / "utt2spk").write_text("u1 s1\n")
    (extra / "spk2utt").write_text("s1 u1\n")
    assert f"--extra-train: {extra}/utt2dur does not exist" in run(str(extra)).stderr
    (extra / "utt2dur").write_text("u1 1.5\n")
    assert run(str(extra)).returncode == 0
    relative = run(os.path.relpath(extra, os.path.join(ROOT, "egs", "voiceover")))
    assert relative.returncode == 0, relative.stderr


@pytest.mark.parametrize("extra_train", [None, "voicesearch", "none"])
def test_voiceover_needs_no_directory_for_the_synthesised_or_no_second_domain(extra_train, tmp_path):
    """--extra-train voicesearch (the default) synthesises its corpus at stage 1 and none trains on the games' lines
    alone: neither names a directory that must exist before stage 0."""
    options = [] if extra_train is None else ["--extra-train", extra_train]
    result = subprocess.run([os.path.join(ROOT, "egs", "voiceover", "run.sh"), *options, "--stage", "99",
                             "--stop-stage", "99", "--data", str(tmp_path / "data"), "--exp", str(tmp_path / "exp")],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "does not exist" not in result.stderr
