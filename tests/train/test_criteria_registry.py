"""asrkit.train.criteria: one registry builds the criterion a run's params name, each behind the one protocol."""

import pytest

from asrkit.errors import AsrkitError
from asrkit.sequence.options import CRITERIA as SEQUENCE_CRITERIA
from asrkit.train.criteria.ce import CrossEntropyCriterion
from asrkit.train.criteria.ctc import CtcCriterion
from asrkit.train.criteria.lfmmi import LfmmiCriterion
from asrkit.train.criteria.protocol import Criterion
from asrkit.train.criteria.registry import CriterionInputs, make_criterion
from asrkit.train.criteria.sequence import SequenceCriterion
from asrkit.train.params import ce_params, seq_params


@pytest.mark.parametrize("name, kind", [("ce", CrossEntropyCriterion), ("ctc", CtcCriterion),
                                        ("lfmmi", LfmmiCriterion)])
def test_criteria_from_alignments_are_built_by_name(name, kind):
    criterion = make_criterion(ce_params().set(criterion=name, mode="full"), CriterionInputs(init_model="init"))
    assert type(criterion) is kind and isinstance(criterion, Criterion)
    assert criterion.init_model == "init"


@pytest.mark.parametrize("name", SEQUENCE_CRITERIA)
def test_sequence_criteria_continue_a_model_with_lattices(name, tmp_path):
    params = seq_params().set(criterion=name)
    criterion = make_criterion(params, CriterionInputs(init_model=str(tmp_path / "ce"), graph_dir=str(tmp_path / "g"),
                                                       exp_dir=str(tmp_path / "exp")))
    assert type(criterion) is SequenceCriterion and criterion.result_name == name
    assert criterion.snapshot_dir == str(tmp_path / "exp" / "snapshots")
    with pytest.raises(AsrkitError, match="needs the model, the graph and the experiment dir"):
        make_criterion(params, CriterionInputs(init_model="ce"))


def test_an_unknown_criterion_is_refused_with_the_known_ones():
    params = ce_params()
    params.criterion = "xent"
    with pytest.raises(AsrkitError, match="one of ce, ctc, lfmmi, smbr.*not 'xent'"):
        make_criterion(params)


def test_every_criterion_implements_the_protocol():
    for kind in (CrossEntropyCriterion, CtcCriterion, LfmmiCriterion, SequenceCriterion):
        assert issubclass(kind, Criterion) and kind.name and not kind.__abstractmethods__
