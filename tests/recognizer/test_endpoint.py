"""Kaldi's endpoint rules, one by one, on partial paths made by hand; the package's silence pdfs."""

import math
import os
import shutil

import numpy as np
import pytest

from asrkit.recognizer.endpoint import EndpointConfig, EndpointDetector, EndpointRule, silence_pdfs_of_package
from asrkit.recognizer.online_decoder import PartialPath

SILENCE, SPEECH = 0, 3  # pdfs: 0 and 1 are silence
FRAMES_PER_SECOND = 1 / 0.03


def path(speech_seconds, silence_seconds, relative_cost=math.inf):
    pdfs = [SPEECH] * round(speech_seconds * FRAMES_PER_SECOND) + [SILENCE] * round(silence_seconds * FRAMES_PER_SECOND)
    return PartialPath([7] if speech_seconds else [], np.array(pdfs, np.int32), 0.0, relative_cost)


@pytest.fixture
def detector():
    return EndpointDetector(EndpointConfig(), silence_pdfs=[0, 1], num_pdfs=5)


def test_rule1_five_seconds_of_silence_with_nothing_said(detector):
    assert detector.rule_fired(path(0, 5.01)) == 1
    assert detector.rule_fired(path(0, 4.8)) == 0
    assert detector.rule_fired(path(0, 4.8, relative_cost=0.0)) == 0  # rules 2-4 want speech first


def test_rule2_half_a_second_after_speech_when_the_segment_may_end(detector):
    assert detector.rule_fired(path(1.0, 0.51, relative_cost=1.5)) == 2
    assert detector.rule_fired(path(1.0, 0.45, relative_cost=1.5)) == 0
    assert detector.rule_fired(path(1.0, 0.51, relative_cost=2.5)) == 0


def test_rule3_one_second_after_speech_when_the_segment_might_end(detector):
    assert detector.rule_fired(path(1.0, 1.02, relative_cost=7.0)) == 3
    assert detector.rule_fired(path(1.0, 0.9, relative_cost=7.0)) == 0
    assert detector.rule_fired(path(1.0, 1.02, relative_cost=9.0)) == 0


def test_rule4_two_seconds_after_speech_whatever_the_cost(detector):
    assert detector.rule_fired(path(1.0, 2.01)) == 4
    assert detector.rule_fired(path(1.0, 1.9)) == 0


def test_rule5_twenty_seconds_whatever_was_said(detector):
    assert detector.rule_fired(path(20.01, 0)) == 5
    assert detector.rule_fired(path(19.9, 0)) == 0
    # Silence in the middle of speech is not trailing silence.
    pdfs = np.array([SPEECH] * 10 + [SILENCE] * 100 + [SPEECH] * 3, np.int32)
    assert detector.rule_fired(PartialPath([7], pdfs, 0.0, 0.0)) == 0


def test_without_silence_pdfs_only_the_length_rule_fires():
    detector = EndpointDetector(EndpointConfig(), silence_pdfs=[], num_pdfs=5)
    assert detector.rule_fired(path(1.0, 6.0, relative_cost=0.0)) == 0
    assert detector.rule_fired(path(15.0, 6.0)) == 5
    assert detector.rule_fired(path(0, 0)) == 0


def test_rules_and_the_frame_shift_are_configurable():
    config = EndpointConfig.with_max_length(3.0, frame_shift=0.01, min_trailing_silence=0.2)
    detector = EndpointDetector(config, silence_pdfs=[0], num_pdfs=5)
    pdfs = np.array([SPEECH] * 50 + [SILENCE] * 21, np.int32)  # 0.5 s then 0.21 s at 10 ms
    assert detector.rule_fired(PartialPath([7], pdfs, 0.0, 1.0)) == 2
    assert detector.rule_fired(PartialPath([7], np.full(301, SPEECH, np.int32), 0.0, 1.0)) == 5
    only = EndpointDetector(EndpointConfig((EndpointRule(True, 0.1),), 0.01), [0], 5)
    assert only.rule_fired(PartialPath([7], pdfs, 0.0, math.inf)) == 1


def test_silence_pdfs_of_a_package_come_from_its_tree_and_silence_phones(tmp_path):
    from asrkit.decode.synthetic import build_toy_task
    from asrkit.hmm.tree import ContextDependency

    task = build_toy_task(str(tmp_path / "toy"))
    package = tmp_path / "package"
    assert silence_pdfs_of_package(str(package)) == []
    os.makedirs(package / "align" / "phones")
    shutil.copyfile(os.path.join(task["model"], "tree.json"), package / "align" / "tree.json")
    shutil.copyfile(os.path.join(task["lang"], "phones", "silence.txt"), package / "align" / "phones" / "silence.txt")
    tree = ContextDependency.read(os.path.join(task["model"], "tree.json"))
    expected = [tree.pdf([tree.phones["SIL"]], 0), tree.pdf([tree.phones["SPN"]], 0)]
    assert silence_pdfs_of_package(str(package)) == sorted(expected)
    (package / "silence_pdfs.txt").write_text("4 2\n")
    assert silence_pdfs_of_package(str(package)) == [2, 4]
