"""What the training tests across namespace hosts share: asrkit commands started on a host, example servers on a
host's own address, CURVE keys, the trainers of a --strategy cluster and their logs."""

import json
import re
import subprocess
import sys
import time

# The port of every training task (each host has its own address; a second task on a host takes the next port).
TASK_PORT = 2222
# The port of the first example server on a host (a second one takes the next port).
SERVER_PORT = 5555


def asrkit_command(module, *arguments):
    """argv of `python -m asrkit.cli.<module> arguments...`."""
    return [sys.executable, "-m", f"asrkit.cli.{module}", *arguments]


def write_key_pair(directory, asrkit_environment):
    """An example server's CURVE key pair made by asrkit-serve-examples --write-key-pair in `directory`
    (server.key, server.key_secret); returns the directory as a string."""
    made = subprocess.run(asrkit_command("serve_examples", "--write-key-pair", str(directory)),
                          env=asrkit_environment(), capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    return str(directory)


def start_server(cluster, asrkit_environment, data_dir, ali_dir, log_dir, *options, port=SERVER_PORT, name="server",
                 host="servers"):
    """asrkit-serve-examples on `host` at its own address and `port`, logging to <log_dir>/<name>.log;
    (process, endpoint) once it is bound."""
    endpoint_file = log_dir / f"{name}.endpoint.json"
    log_path = log_dir / f"{name}.log"
    with open(log_path, "w") as log:
        process = cluster.popen(host, asrkit_command(
            "serve_examples", data_dir, ali_dir, "--bind", f"tcp://{cluster.address(host)}:{port}",
            "--endpoint-file", str(endpoint_file), *options), env=asrkit_environment(), stdout=subprocess.DEVNULL,
            stderr=log)
    deadline = time.monotonic() + 120
    while not endpoint_file.exists():
        assert process.poll() is None, log_path.read_text()
        assert time.monotonic() < deadline, "the example server did not bind"
        time.sleep(0.2)
    return process, json.loads(endpoint_file.read_text())["endpoint"]


def start_task(cluster, host, module, args, log_path, tf_config, asrkit_environment):
    """asrkit.cli.<module> (train_ce, train_seq) on `host` as the task of `tf_config` (TF_CONFIG's format)."""
    with open(log_path, "w") as log:
        return cluster.popen(host, asrkit_command(module, *args),
                             env=asrkit_environment(TF_CONFIG=json.dumps(tf_config)), stdout=log,
                             stderr=subprocess.STDOUT)


def start_chief(cluster, host, module, args, log_path, spec, asrkit_environment):
    """The chief task of a --strategy ps cluster `spec` on `host`: it runs the training loop."""
    return start_task(cluster, host, module, args, log_path, {"cluster": spec, "task": {"type": "chief", "index": 0}},
                      asrkit_environment)


def start_serving_tasks(cluster, module, args, log_dir, spec, hosts, asrkit_environment):
    """The worker and ps tasks of a --strategy ps cluster `spec`, task (job, index) on host hosts[(job, index)],
    logging to <log_dir>/<job><index>.log; they serve until stopped."""
    return [start_task(cluster, hosts[job, index], module, args, log_dir / f"{job}{index}.log",
                       {"cluster": spec, "task": {"type": job, "index": index}}, asrkit_environment)
            for job in ("worker", "ps") for index in range(len(spec[job]))]


def finish(processes, logs, timeout=400):
    """Wait for `processes`; their exit codes must all be 0 (else the tails of `logs` say why)."""
    codes = [process.wait(timeout=timeout) for process in processes]
    assert codes == [0] * len(processes), "\n".join(open(log).read()[-3000:] for log in logs)


def logged(path, pattern):
    """re.findall of `pattern` in the file at `path`."""
    with open(path) as log:
        return re.findall(pattern, log.read())
