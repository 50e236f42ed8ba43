"""Which criterion a run trains with: the one its params name (params.criterion), built with what it needs."""

import dataclasses

from asrkit.errors import AsrkitError
from asrkit.sequence.options import CRITERIA as SEQUENCE
from asrkit.train.criteria.ce import CrossEntropyCriterion
from asrkit.train.criteria.ctc import CtcCriterion
from asrkit.train.criteria.lfmmi import LfmmiCriterion
from asrkit.train.criteria.sequence import SequenceCriterion

# The criteria a network is trained with from its alignments (asrkit-train-ce --criterion); SEQUENCE's continue
# a CE-trained model with lattices (asrkit-train-seq --criterion).
FROM_ALIGNMENTS = {"ce": CrossEntropyCriterion, "ctc": CtcCriterion, "lfmmi": LfmmiCriterion}


@dataclasses.dataclass(frozen=True)
class CriterionInputs:
    """What a criterion needs besides its params: the model to start from (--init-model; a sequence criterion's
    CE model), the sequence criteria's lattice graph, and the experiment dir they publish snapshots in."""

    init_model: str = None
    graph_dir: str = None
    exp_dir: str = None


def make_criterion(params, inputs=CriterionInputs()):
    """The criterion params.criterion names, built with `inputs`."""
    name = params.criterion
    if name in FROM_ALIGNMENTS:
        return FROM_ALIGNMENTS[name](params, inputs.init_model)
    if name in SEQUENCE:
        if inputs.init_model is None or inputs.graph_dir is None or inputs.exp_dir is None:
            raise AsrkitError(f"criterion {name} continues a CE model with lattices: it needs the model, the "
                              "graph and the experiment dir")
        return SequenceCriterion(params, inputs.init_model, inputs.graph_dir, inputs.exp_dir)
    raise AsrkitError(f"criterion must be one of {', '.join([*FROM_ALIGNMENTS, *SEQUENCE])}, not {name!r}")
