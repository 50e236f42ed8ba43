"""The sequence-training contract (asrkit.sequence.options.SequenceOptions) is declared once: asrkit-train-seq's
parameters and asrkit-serve-examples' options have its defaults, and what the trainer hands its servers comes back
whole (issue 61 item 2)."""

import dataclasses

import click
import pytest
from click.testing import CliRunner

from asrkit.cli.serve_examples import main as serve_examples
from asrkit.cli.sequence_options import sequence_options
from asrkit.errors import AsrkitError
from asrkit.sequence.options import SequenceOptions, sequence_fields
from asrkit.train.params import seq_params


def test_every_commands_defaults_are_the_contracts():
    defaults = {field.name: field.default for field in sequence_fields()}
    trainer = seq_params()
    assert {name: getattr(trainer, name) for name in defaults} == defaults
    server = {parameter.name: parameter.default for parameter in serve_examples.params}
    assert {name: server[name] for name in defaults} == defaults
    assert "criterion" not in serve_examples.callback.__wrapped__.__code__.co_varnames  # one `seq` argument


def _echo_command():
    @click.command()
    @sequence_options()
    def command(seq):
        click.echo(seq.to_json())

    return command


def test_the_trainers_json_comes_back_whole_and_options_one_by_one_too():
    options = SequenceOptions(criterion="bmmi", acoustic_scale=0.08, beam=11.5, lattice_beam=5.0, boost=0.3,
                              frame_rejection=0.0, min_posterior=0.0, one_silence_class=False,
                              snapshot_check_seconds=0.5)
    result = CliRunner().invoke(_echo_command(), ["--seq-options", options.to_json()])
    assert result.exit_code == 0, result.output
    assert SequenceOptions.from_json(result.output) == options
    result = CliRunner().invoke(_echo_command(), ["--criterion", "mmi", "--no-one-silence-class", "--beam", "9"])
    assert SequenceOptions.from_json(result.output) == SequenceOptions(criterion="mmi", one_silence_class=False,
                                                                       beam=9.0)


def test_bad_options_are_named():
    command = _echo_command()
    both = CliRunner().invoke(command, ["--seq-options", SequenceOptions().to_json(), "--beam", "9"])
    assert both.exit_code == 2 and "--beam cannot come with it" in both.output
    for text, message in (('{"beem": 9}', "unknown sequence option(s) beem"),
                          ('{"beam": "wide"}', "beam must be a float, not 'wide'"),
                          ('{"criterion": "ce"}', "criterion must be one of smbr, mmi, mmi-fr, bmmi"),
                          ('{"acoustic_scale": 0}', "acoustic_scale must be > 0"),
                          ('{"one_silence_class": 1}', "one_silence_class must be a bool"),
                          ("[1]", "expected a JSON object"), ("{", "not JSON")):
        result = CliRunner().invoke(command, ["--seq-options", text])
        assert result.exit_code == 2 and message in result.output, (text, result.output)
        with pytest.raises(AsrkitError, match=message.replace("(", r"\(").replace(")", r"\)")):
            SequenceOptions.from_json(text)
    assert SequenceOptions.from_json('{"beam": 9}').beam == 9.0  # an integer where a float goes


def test_the_seq_trainers_server_command_line_carries_its_parameters():
    from asrkit.train.criteria.sequence import SequenceCriterion

    trainer = SequenceCriterion.__new__(SequenceCriterion)
    trainer.params = seq_params()
    trainer.params.set(criterion="mmi-fr", frame_rejection=0.01, beam=10.0)
    trainer.ce_model_dir, trainer.snapshot_dir, trainer.graph_dir, trainer.scheduled = "m", "s", "g", True
    arguments = trainer.server_options()
    sent = SequenceOptions.from_json(arguments[arguments.index("--seq-options") + 1])
    assert sent == dataclasses.replace(SequenceOptions(), criterion="mmi-fr", frame_rejection=0.01, beam=10.0)
    assert arguments[-1] == "--snapshot-schedule"


def test_servers_following_the_newest_snapshot_get_a_short_queue_and_small_socket_buffers():
    from asrkit.train.criteria.sequence import (FOLLOWER_QUEUE_CAPACITY, FOLLOWER_SOCKET_BUFFER_BYTES,
                                                SequenceCriterion)

    trainer = SequenceCriterion.__new__(SequenceCriterion)
    trainer.params = seq_params()
    trainer.ce_model_dir, trainer.snapshot_dir, trainer.graph_dir = "m", "s", "g"
    trainer.scheduled = True  # the schedule fixes each example's snapshot: the queues may be long
    scheduled = trainer.server_options()
    assert "--queue-capacity" not in scheduled and trainer.receive_buffer_bytes() == 0
    trainer.scheduled = False  # (--strategy ps, multiworker, --snapshot-lag 0): what the queues hold is stale
    following = trainer.server_options()
    assert following[following.index("--queue-capacity") + 1] == str(FOLLOWER_QUEUE_CAPACITY)
    assert following[following.index("--send-buffer-bytes") + 1] == str(FOLLOWER_SOCKET_BUFFER_BYTES)
    assert trainer.receive_buffer_bytes() == FOLLOWER_SOCKET_BUFFER_BYTES
