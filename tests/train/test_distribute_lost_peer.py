"""A worker lost under --strategy multiworker becomes a named error (the run across hosts: tests/cluster)."""

import subprocess
import sys

from asrkit.errors import AsrkitError
from asrkit.tf_runtime import import_tensorflow
from asrkit.train.distribute import LocalDistribution, MultiWorkerDistribution

HEARTBEATS_LOST = (
    "{{function_node __inference_<lambda>_409}} Collective ops is aborted by: Error reported from /job:worker/task:1: "
    "The following tasks are unhealthy (stopped sending heartbeats):\n/job:worker/replica:0/task:1\nThe tasks have "
    "crashed. Check the task logs for an earlier error.\n\t [[{{node CollectiveReduceV2}}]]")


def test_one_process_has_no_peer_to_lose():
    assert LocalDistribution().lost_peer_errors() == ()


def test_a_lost_worker_is_named_with_the_way_on():
    tf = import_tensorflow()
    distribution = object.__new__(MultiWorkerDistribution)  # the messages need no cluster
    distribution._tf = tf
    error = tf.errors.UnavailableError(None, None, HEARTBEATS_LOST)
    assert isinstance(error, distribution.lost_peer_errors())
    named = distribution.lost_peer(error, 8)
    assert isinstance(named, AsrkitError)
    assert str(named).startswith("--strategy multiworker: worker:1 stopped answering after step 8")
    assert "Collective ops is aborted" in str(named) and "resumes from the chief's last checkpoint" in str(named)
    graph_error = ("Graph execution error:\n\nDetected at node CollectiveReduceV2 defined at (most recent call last):\n"
                   "  File \"loop.py\", line 231, in _train\n\nSocket closed\n\t [[{{node CollectiveReduceV2}}]]")
    anonymous = distribution.lost_peer(tf.errors.CancelledError(None, None, graph_error), 3)
    assert str(anonymous).startswith("--strategy multiworker: another worker stopped answering after step 3")
    assert "(TensorFlow: Socket closed)" in str(anonymous)


def test_a_reset_connection_names_its_remote_target_when_the_error_carries_it():
    tf = import_tensorflow()
    distribution = object.__new__(MultiWorkerDistribution)
    distribution._tf = tf
    reset = ("Collective ops is aborted by: recvmsg:Connection reset by peer\nAdditional GRPC error information from "
             "remote target /job:worker/replica:0/task:1 while calling /tensorflow.WorkerService/RecvBuf")
    named = distribution.lost_peer(tf.errors.UnavailableError(None, None, reset), 12)
    assert str(named).startswith("--strategy multiworker: worker:1 stopped answering after step 12")


def test_the_parameter_server_chief_ends_its_process_with_the_logs_flushed():
    """end_chief_process: --strategy ps ends the process at once, exit 0, its last log line written; other
    strategies return (a lost worker would keep a ps chief's interpreter from exiting: tests/cluster)."""
    script = ("import logging, sys\n"
              "logging.basicConfig(stream=sys.stderr, level=logging.INFO)\n"
              "from asrkit.train.distribute import end_chief_process\n"
              "end_chief_process('multiworker')\n"
              "logging.getLogger('t').info('summary logged')\n"
              "end_chief_process('ps')\n"
              "print('not reached')\n")
    ended = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert ended.returncode == 0 and "summary logged" in ended.stderr and "not reached" not in ended.stdout
