"""What the criteria of the outer-derivative computer read about phones from a graph dir and a model dir."""

import os
import shutil

import numpy as np
import pytest

from asrkit.decode.synthetic import build_toy_task
from asrkit.errors import AsrkitError
from asrkit.hmm.tree import ContextDependency
from asrkit.sequence.outer import read_criterion_phones


@pytest.fixture(scope="module")
def task(tmp_path_factory):
    return build_toy_task(str(tmp_path_factory.mktemp("outer")))


def test_boosted_mmi_gets_the_phone_of_every_pdf_and_the_silence_phones(task):
    tree = ContextDependency.read(os.path.join(task["model"], "tree.json"))
    with open(os.path.join(task["graph"], "phones", "silence.txt")) as handle:
        silence = handle.read().split()
    phones = read_criterion_phones(task["graph"], task["model"], "bmmi")
    np.testing.assert_array_equal(phones.pdf_phones, tree.pdf_phones())
    assert phones.silence_phones.tolist() == sorted(tree.phones[name] for name in silence)
    assert phones.silence_pdfs.tolist() == tree.pdfs_of_phones_only(silence)
    # Every pdf of the monophone tree is its phone's: SIL's pdfs map to SIL.
    assert set(phones.pdf_phones[phones.silence_pdfs].tolist()) <= set(phones.silence_phones.tolist())
    assert read_criterion_phones(task["graph"], task["model"], "smbr").pdf_phones is None


def test_boosted_mmi_without_a_tree_is_refused(task, tmp_path):
    model = str(tmp_path / "model")
    shutil.copytree(task["model"], model)
    os.remove(os.path.join(model, "tree.json"))
    with pytest.raises(AsrkitError, match="tree.json"):
        read_criterion_phones(task["graph"], model, "bmmi")
    assert len(read_criterion_phones(task["graph"], model, "smbr").silence_pdfs) == 0
