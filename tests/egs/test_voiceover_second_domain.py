"""egs/voiceover/run.sh's default second domain (--extra-train voicesearch), stage 1 at --size tiny: the games'
data dirs, a seeded third of the training set of egs/voicesearch's synthesised corpus at the same size (the only
part synthesised) and its union with the games' train, the same utterances when stage 1 runs again."""

import os
import re
import shutil
import subprocess

import pytest

from asrkit.data.validate import validate_data_dir

# Synthesises voicesearch's tiny corpus and fetches both games: left out by tests/run.sh --quick.
pytestmark = pytest.mark.slow

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _utterances(data_dir):
    return [line.split()[0] for line in open(os.path.join(data_dir, "utt2spk"))]


@pytest.mark.skipif(shutil.which("apt-get") is None or shutil.which("espeak-ng") is None,
                    reason="apt-get (to download the games from Debian) and the synthesisers are needed")
def test_the_default_second_domain_is_a_seeded_third_of_voicesearchs_training_set(tmp_path):
    data, exp = tmp_path / "data", tmp_path / "exp"
    command = [os.path.join(ROOT, "egs", "voiceover", "run.sh"), "--size", "tiny", "--stage", "1", "--stop-stage",
               "1", "--data", str(data), "--exp", str(exp)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    corpus, third = data / "voicesearch", data / "voicesearch" / "train"
    for data_dir in (third, data / "train_combined"):
        assert validate_data_dir(str(data_dir), require_text=True) == [], data_dir
    # A third of the whole training set the corpus plans, and only that synthesised (tests/egs/
    # test_voicesearch_corpus.py: the utterances subset_data_dir --seed 0 draws from the whole set's data dir).
    log = open(exp / "log" / "stage1" / "voicesearch_corpus.log").read()
    synthesised, planned = map(int, re.search(r"synthesising (\d+) of the (\d+) planned training", log).groups())
    chosen = _utterances(third)
    assert len(chosen) == synthesised == planned // 3 > 0
    assert "prepare_corpus summary: " in log and f"train_utterances={synthesised} " in log
    # Voicesearch's dev and test stay out of voiceover's training.
    assert not set(chosen) & (set(_utterances(corpus / "dev")) | set(_utterances(corpus / "test")))
    assert set(_utterances(data / "train_combined")) == set(_utterances(data / "train")) | set(chosen)
    # Run again (a killed stage 1, or a second machine): the corpus is resumed and the same third drawn.
    again = subprocess.run(command, capture_output=True, text=True, timeout=900)
    assert again.returncode == 0, again.stderr[-3000:]
    assert _utterances(third) == chosen
