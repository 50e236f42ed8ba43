#!/usr/bin/env python3
"""The trainer's side of the example servers at the papers' scale, with simulated servers (#63).

Simulated servers (tests/example_servers/simulated_servers.py) speak asrkit's wire
protocol from canned examples, hundreds per process, so that one real client can be
fed by 16 to 1,024 servers on this machine.  Each measurement prints one JSON line.

- feed: a real ServerExamples (the trainer's client: receiving thread, checks,
  rotation over the shards) fed by N servers, its consumer a simulated training step
  (--batch examples, then --step-seconds of sleep).  Examples/s reaching the
  consumer, the receiving thread's CPU per message and per step (as a share of the
  step), memory and file descriptors over time, each server's share of what was
  received, the queue's and the rotation's high-water marks, and the time until
  every server has been heard from.  --slow and --die-after make some servers slow
  or dead.
- train: the real asrkit-train-ce (recipe model) fed by N servers given with
  --example-servers @FILE; t_session, frames/s and the client's share of the wall
  time from its log; the trainer's memory and file descriptors sampled from /proc.
- snapshots: N simulated seq servers following a snapshot dir (the newest snapshot,
  looked for every --check-seconds), drained by a real client; the bench publishes
  a model dir --snapshots times, --every seconds apart; for each, the time from its
  publish to the last server's load, and the time TensorFlow takes to read one
  into a real network (ExportedModel.reload_weights).
- ps: asrkit-train-ce --strategy ps with 1 to 16 workers, the chief, the parameter
  server and each worker on a network-namespace host of its own (as root), the chief
  fed by --ps-servers simulated servers on another host: steps/s, and the chief's CPU
  per step (what it costs to pull a batch and dispatch a step), from which the chief's
  ceiling in steps/s follows.  --servers is the number of workers here.

Usage:

    .venv/bin/python bench/scale.py feed --servers 16,64,256,1024 [--seconds 30]
    .venv/bin/python bench/scale.py train --servers 256 --steps 300
    .venv/bin/python bench/scale.py snapshots --servers 256 --snapshots 5 --model-dir EXP/final
    .venv/bin/python bench/scale.py ps --servers 1,2,4,8 --ps-servers 64 --steps 200   (as root; --servers: workers)
"""

import argparse
import contextlib
import dataclasses
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "example_servers"))

from serve import cpu_seconds, make_corpus  # noqa: E402
from simulated_servers import read_loads, running  # noqa: E402

PDFS = 200


def corpus(work, num_utts=20):
    """bench/serve.py's synthetic corpus (featurized, with alignments), made once under `work`."""
    root = os.path.join(work, "corpus")
    if not os.path.exists(os.path.join(root, "ali", "num_pdfs")):
        shutil.rmtree(root, ignore_errors=True)
        os.makedirs(root)
        make_corpus(root, num_utts, PDFS)
    return root


def process_memory(pid="self"):
    """(resident MiB, open file descriptors) of a process."""
    with open(f"/proc/{pid}/status") as handle:
        rss = next(int(line.split()[1]) for line in handle if line.startswith("VmRSS:")) / 1024
    return rss, len(os.listdir(f"/proc/{pid}/fd"))


def simulated_servers(root, num_servers, work, extra=(), producers=None):
    """simulated_servers.running on the corpus under `root`; `producers` gets producer_pids."""
    started = {}
    producers = {} if producers is None else producers

    @contextlib.contextmanager
    def run():
        with running(os.path.join(root, "data"), os.path.join(root, "ali"), num_servers, work, extra,
                     started=started) as endpoints:
            producers["producer_pids"] = started["pids"]
            producers["started"] = started
            yield endpoints

    return run()


def _sampler(samples, stop, pid="self", every=1.0):
    started = time.monotonic()
    while not stop.wait(every):
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):
            samples.append((time.monotonic() - started, *process_memory(pid)))


def quarter_medians(samples, column):
    """The median of `column` (1: RSS MiB, 2: file descriptors) in each quarter of the samples (the last quarter
    is the last samples), the first quarter's for a quarter too short to have any."""
    quarter = max(len(samples) // 4, 1)
    parts = [samples[index * quarter:(index + 1) * quarter] for index in range(3)] + [samples[-quarter:]]
    return [statistics.median(sample[column] for sample in part or samples[:1]) for part in parts]


def growth(samples):
    """(MiB, fds) from the median of the second quarter of the samples to that of the last: growth after the
    warm-up, when the queues have filled."""
    rss, fds = quarter_medians(samples, 1), quarter_medians(samples, 2)
    return rss[3] - rss[1], fds[3] - fds[1]


def rss_by_quarter(samples):
    """The median RSS (MiB) of each quarter of the samples: whether a growth levels off."""
    return [round(value, 1) for value in quarter_medians(samples, 1)]


def import_protobufs():
    """TensorFlow's protobufs, imported before a client starts: the first message would otherwise pay for the
    import (~6 s of CPU) in the receiving thread, as no trainer does (it has imported TensorFlow already)."""
    from asrkit.example_servers.wire import _example_pb2

    _example_pb2()


class Window:
    """What the client and the servers did from one moment to the next: the measurement after the warm-up."""

    def __init__(self, client, producers):
        self.client, self.producers = client, producers
        self.started = time.monotonic()
        self.stats = client.stats()
        self.producer_cpu = sum(cpu_seconds(pid) for pid in producers)

    def since(self):
        """The window's deltas: wall seconds, messages, receiver CPU, per-server counts, producers' CPU."""
        stats = self.client.stats()
        producer_cpu = 0.0  # the producers gone before the window's end (a dead server's run) count nothing
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):
            producer_cpu = sum(cpu_seconds(pid) for pid in self.producers) - self.producer_cpu
        received = {server: count - self.stats["received"].get(server, 0)
                    for server, count in stats["received"].items()}
        return {"wall": time.monotonic() - self.started, "messages": stats["messages"] - self.stats["messages"],
                "cpu": stats["receiver_cpu_seconds"] - self.stats["receiver_cpu_seconds"], "received": received,
                "producer_cpu": producer_cpu, "stats": stats}


def consume(client, args, until):
    """Takes examples as a trainer would (a step of --step-seconds every --batch examples) until `until()` is
    true at a step's end; returns the examples taken."""
    examples = 0
    step_started = time.monotonic()
    for _ in client:
        examples += 1
        if examples % args.batch == 0:
            # The step: what a TensorFlow step would take, less what the consumer took to gather the batch.
            time.sleep(max(args.step_seconds - (time.monotonic() - step_started), 0))
            step_started = time.monotonic()
            if until():
                break
    return examples


def bench_feed(root, num_servers, args):
    from asrkit.example_servers import client as client_module
    from asrkit.example_servers.client import ServerExamples
    from simulated_servers import load_canned

    _, handshake = load_canned(os.path.join(root, "data"), os.path.join(root, "ali"), 1)
    import_protobufs()
    extra = ["--num-epochs", "0", "--seconds-per-example", str(args.seconds_per_example)]
    if args.slow:
        extra += ["--slow", args.slow]
    if args.die_after:
        extra += ["--die-after", args.die_after]
    if args.per_connection_queue:  # the client before #63 queued its whole capacity on each connection
        client_module.receive_high_water_mark = lambda capacity, servers: args.per_connection_queue
    result = {"bench": "feed", "servers": num_servers, "step_seconds": args.step_seconds, "batch": args.batch,
              "per_connection_queue": client_module.receive_high_water_mark(args.capacity, num_servers),
              "message_bytes": round(frames_per_message(root) * handshake.feature_dim * 4)}
    with tempfile.TemporaryDirectory(dir=args.work) as work, \
            simulated_servers(root, num_servers, work, extra, producers=result) as endpoints:
        client = ServerExamples(handshake, endpoints, capacity=args.capacity, num_servers=num_servers,
                                receive_timeout=args.receive_timeout)
        samples, stop = [], threading.Event()
        started = time.monotonic()
        try:
            # Warm-up: until every server has been heard from and the queues have filled.
            consume(client, args, lambda: len(client.received) == num_servers or time.monotonic() - started > 120)
            result["all_heard_after_s"] = round(time.monotonic() - started, 2)
            consume(client, args, lambda: time.monotonic() - started > result["all_heard_after_s"] + args.warm_up)
            result.pop("started")
            window = Window(client, result.pop("producer_pids"))
            threading.Thread(target=_sampler, args=(samples, stop), daemon=True).start()
            examples = consume(client, args, lambda: time.monotonic() - window.started > args.seconds)
            result["error"] = None
        except Exception as failure:  # noqa: BLE001 -- a dead server's timeout is a result here
            result["error"] = f"{type(failure).__name__}: {failure}"
            window, examples = Window(client, []), 0
        measured = window.since()
        stop.set()  # before the client closes its connections: the samples are of the client serving
        client.close()
    return {**result, **feed_figures(measured, examples, samples, args)}


def feed_figures(measured, examples, samples, args):
    """The JSON figures of a feed window."""
    received = list(measured["received"].values())
    mean_share = statistics.mean(received) if received else 0
    cpu_per_message = measured["cpu"] / max(measured["messages"], 1)
    mem_growth, fd_growth = growth(samples) if samples else (0, 0)
    stats = measured["stats"]
    return {
        "seconds": round(measured["wall"], 1), "examples_per_second": round(examples / measured["wall"], 1),
        "client_cpu_ms_per_message": round(1e3 * cpu_per_message, 3),
        "client_share_of_step": round(cpu_per_message * args.batch / args.step_seconds, 4) if args.step_seconds
        else None,
        "servers_heard": len(stats["received"]),
        "share_min_over_mean": round(min(received) / mean_share, 3) if mean_share else None,
        "share_max_over_mean": round(max(received) / mean_share, 3) if mean_share else None,
        "queue_high_water": stats["queue_high_water"], "held_high_water": stats["held_high_water"],
        "rss_mib_end": round(samples[-1][1], 1) if samples else None,
        "rss_mib_max": round(max(s[1] for s in samples), 1) if samples else None,
        "fds_end": samples[-1][2] if samples else None,
        "rss_growth_mib": round(mem_growth, 1), "fd_growth": fd_growth,
        "rss_mib_quarters": rss_by_quarter(samples) if samples else None,
        "producer_cpu_share": round(measured["producer_cpu"] / measured["wall"], 3),
    }


def frames_per_message(root, data_dir=None, ali_dir=None):
    """The mean frames of the canned examples the simulated servers cycle through."""
    from simulated_servers import load_canned

    canned, _ = load_canned(data_dir or os.path.join(root, "data"), ali_dir or os.path.join(root, "ali"))
    return round(statistics.mean(len(example.targets) for example in canned), 1)


def bench_train(root, num_servers, args):
    with tempfile.TemporaryDirectory(dir=args.work) as work, simulated_servers(
            root, num_servers, work, ["--num-epochs", "0", "--seconds-per-example",
                                      str(args.seconds_per_example)]) as endpoints:
        servers_file = os.path.join(work, "servers")
        with open(servers_file, "w") as out:
            out.writelines(f"{endpoint}\n" for endpoint in endpoints)
        exp_dir = args.exp_dir or os.path.join(work, "exp")
        command = [os.path.join(os.path.dirname(sys.executable), "asrkit-train-ce"), os.path.join(root, "data"),
                   os.path.join(root, "ali"), exp_dir, "--example-servers", f"@{servers_file}", "--num-epochs",
                   "0", "--max-steps", str(args.steps), "--log-every", str(args.log_every), "--valid-utts", "0",
                   "--checkpoint-every", "0", "--model", "recipe"]
        log = os.path.join(work, "train.log")
        samples, stop = [], threading.Event()
        with open(log, "w") as out:
            process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
            sampler = threading.Thread(target=_sampler, args=(samples, stop, process.pid, 5.0), daemon=True)
            sampler.start()
            started = time.monotonic()
            process.wait()
            stop.set()
        wall = time.monotonic() - started
        text = open(log).read()
        if process.returncode:
            raise RuntimeError(f"asrkit-train-ce failed:\n{text[-3000:]}")
    intervals = [line for line in text.splitlines() if " t_session " in line and "step " in line]
    shares = [float(line.split("% of the wall time")[0].rsplit(" ", 1)[1]) for line in text.splitlines()
              if "% of the wall time" in line]
    per_message = [float(line.split(" ms CPU/message")[0].rsplit(" ", 1)[1]) for line in text.splitlines()
                   if " ms CPU/message" in line]
    last = intervals[-1]

    def metric(name):
        return float(last.split(f" {name} ")[1].split()[0])

    mem_growth, fd_growth = growth(samples) if samples else (0, 0)
    return {
        "bench": "train", "servers": num_servers, "steps": args.steps, "seconds": round(wall, 1),
        "t_session": metric("t_session"), "frames_per_second": metric("frames/s"),
        "client_share_of_wall_last": shares[-1] if shares else None,
        "client_share_of_wall_median": statistics.median(shares) if shares else None,
        "client_cpu_ms_per_message_median": statistics.median(per_message) if per_message else None,
        "rss_mib_median": round(statistics.median(s[1] for s in samples), 1) if samples else None,
        "fds_median": statistics.median(s[2] for s in samples) if samples else None,
        "rss_growth_mib": round(mem_growth, 1), "fd_growth": fd_growth, "samples": len(samples),
        "rss_mib_quarters": rss_by_quarter(samples) if samples else None,
        "frames_per_message": frames_per_message(root),
    }


def tensorflow_reload_seconds(model_dir, repeats=5):
    """Median seconds of ExportedModel.reload_weights of `model_dir` into a network already built."""
    from asrkit.nn.model_dir import AcousticModel

    model = AcousticModel(model_dir)
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        model.reload_weights(model_dir)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def bench_snapshots(root, num_servers, args):
    from asrkit.example_servers.client import ServerExamples
    from asrkit.sequence.snapshots import publish_snapshot
    from simulated_servers import load_canned

    _, handshake = load_canned(os.path.join(root, "data"), os.path.join(root, "ali"), 1)
    import_protobufs()
    with tempfile.TemporaryDirectory(dir=args.work) as work:
        snapshot_dir = os.path.join(work, "snapshots")
        os.makedirs(snapshot_dir)
        extra = ["--mode", "seq", "--num-epochs", "0", "--snapshot-dir", snapshot_dir, "--check-seconds",
                 str(args.check_seconds), "--seconds-per-example", str(args.seconds_per_example),
                 "--queue-capacity", str(args.server_queue), "--send-buffer-bytes", str(args.socket_buffer_bytes)]
        published, producers = {}, {}
        with simulated_servers(root, num_servers, work, extra, producers) as endpoints:
            client = ServerExamples(dataclasses.replace(handshake, mode="seq"), endpoints, capacity=args.capacity,
                                    num_servers=num_servers, receive_buffer_bytes=args.socket_buffer_bytes)
            drained = threading.Event()

            def drain():
                for _ in client:
                    if drained.is_set():
                        return

            drainer = threading.Thread(target=drain, daemon=True)
            drainer.start()
            time.sleep(args.every)
            taken_before, started = sum(client.taken.values()), time.monotonic()
            for index in range(1, args.snapshots + 1):
                step = 100 * index
                publish_snapshot(snapshot_dir, step, lambda path: shutil.copytree(args.model_dir, path),
                                 keep=args.snapshots + 1)
                published[step] = time.time()
                time.sleep(args.every)
            taken = (sum(client.taken.values()) - taken_before) / (time.monotonic() - started)
            drained.set()
            client.close()
        loads = read_loads(producers["started"])
        gaps = sorted(gap for path in glob.glob(os.path.join(work, "simulated.*.log"))
                      for gap in json.loads(open(path).read().strip().splitlines()[-1])["longest_gaps"])
    latencies = []
    for step, when in sorted(published.items()):
        finished = [load[2] for load in loads if load[1] == step]
        latencies.append({"step": step, "servers_loaded": len(finished),
                          "last_load_after_s": round(max(finished) - when, 2) if finished else None,
                          "median_load_after_s": round(statistics.median(finished) - when, 2) if finished else None})
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(args.model_dir) for f in fs)
    return {"bench": "snapshots", "servers": num_servers, "check_seconds": args.check_seconds,
            "server_queue": args.server_queue, "socket_buffer_bytes": args.socket_buffer_bytes,
            "seconds_per_example": args.seconds_per_example, "examples_per_second": round(taken, 1),
            "snapshot_mib": round(size / 2**20, 2), "read_seconds_median": round(statistics.median(
                load[3] for load in loads), 4) if loads else None,
            "worst_last_load_after_s": max((entry["last_load_after_s"] or float("inf")) for entry in latencies),
            # a server's longest wait between two of its examples (it looks for a snapshot when it makes one)
            "longest_gap_median_s": statistics.median(gaps), "longest_gap_max_s": gaps[-1],
            "snapshots": latencies,
            "tensorflow_reload_seconds": round(tensorflow_reload_seconds(args.model_dir), 4)
            if args.tensorflow_reload else None}


TASK_PORT = 2222


def _ps_spec(cluster, num_workers):
    return {"chief": [f"{cluster.address('chief')}:{TASK_PORT}"],
            "worker": [f"{cluster.address(f'w{index}')}:{TASK_PORT}" for index in range(num_workers)],
            "ps": [f"{cluster.address('ps')}:{TASK_PORT}"]}


def _start_task(cluster, host, module, args, spec, task, log_path):
    environment = {**os.environ, "PYTHONPATH": ROOT, "LC_ALL": "C", "PYTHONUNBUFFERED": "1",
                   "TF_CONFIG": json.dumps({"cluster": spec, "task": task})}
    with open(log_path, "w") as log:
        return cluster.popen(host, [sys.executable, "-m", f"asrkit.cli.{module}", *args], env=environment,
                             stdout=log, stderr=subprocess.STDOUT)


def seq_task(work):
    """tests/train's toy sequence-training task (graph, data, alignments, a CE model), built once under `work`."""
    import importlib.util
    import pathlib
    import pickle

    root = pathlib.Path(work) / "seq_task"
    made = root / "paths.pickle"
    if not made.exists():
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        spec = importlib.util.spec_from_file_location("train_conftest", os.path.join(ROOT, "tests", "train",
                                                                                     "conftest.py"))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        paths = module.build_seq_task(root)
        made.write_bytes(pickle.dumps({key: paths[key] for key in ("data", "ali", "ce", "graph")}))
    return pickle.loads(made.read_bytes())


def _ps_training(root, work, servers_file, args):
    """(module, data dir, ali dir, arguments) of the --strategy ps trainer: asrkit-train-ce on the corpus, or with
    --seq asrkit-train-seq (sMBR, a snapshot every --snapshot-every steps) on the toy sequence task."""
    common = ["--strategy", "ps", "--mode", "full", "--num-epochs", "0", "--max-steps", str(args.steps),
              "--log-every", str(args.log_every), "--valid-utts", "0", "--checkpoint-every", "0",
              "--example-servers", f"@{servers_file}"]
    if args.seq:
        task = seq_task(args.work)
        args.seq_frames_per_message = frames_per_message(os.path.dirname(task["data"]), task["data"], task["ali"])
        return "train_seq", task["data"], task["ali"], [
            task["data"], task["ali"], task["ce"], task["graph"], os.path.join(work, "exp"), *common,
            "--frames-per-batch", str(args.frames_per_batch), "--bucket-bounds", "20,40,80", "--snapshot-every",
            str(args.snapshot_every), "--valid-seq-utts", "0", "--acoustic-scale", "0.5"]
    return "train_ce", os.path.join(root, "data"), os.path.join(root, "ali"), [
        os.path.join(root, "data"), os.path.join(root, "ali"), os.path.join(work, "exp"), "--model", "recipe",
        *common, "--frames-per-batch", str(args.frames_per_batch), "--bucket-bounds", "80,120,170"]


def bench_ps(root, num_workers, args):
    """--strategy ps, the chief, the parameter server and each worker on a namespace host of its own, the chief
    fed by --ps-servers simulated servers on another: steps/s, the chief's CPU per step, and with --seq the
    staleness of the derivatives."""
    sys.path.insert(0, os.path.join(ROOT, "tests", "cluster"))
    from netns_cluster import Cluster

    hosts = ["chief", "ps", "servers"] + [f"w{index}" for index in range(num_workers)]
    with tempfile.TemporaryDirectory(dir=args.work) as work, Cluster(hosts) as cluster:
        spec = _ps_spec(cluster, num_workers)
        servers_file = os.path.join(work, "servers")
        module, data_dir, ali_dir, train = _ps_training(root, work, servers_file, args)
        extra = ["--num-epochs", "0", "--bind-host", cluster.address("servers"), "--queue-capacity",
                 str(args.server_queue)]
        if args.seq:
            extra += ["--mode", "seq", "--snapshot-dir", os.path.join(work, "exp", "snapshots"), "--check-seconds",
                      str(args.check_seconds), "--seconds-per-example", str(args.seconds_per_example),
                      "--send-buffer-bytes", str(args.socket_buffer_bytes)]
        with running(data_dir, ali_dir, args.ps_servers, work, extra,
                     on_host=lambda argv: cluster.command("servers", argv)) as endpoints:
            with open(servers_file, "w") as out:
                out.writelines(f"{endpoint}\n" for endpoint in endpoints)
            for job in ("worker", "ps"):
                for index, host in enumerate([f"w{i}" for i in range(num_workers)] if job == "worker" else ["ps"]):
                    _start_task(cluster, host, module, train, spec, {"type": job, "index": index},
                                os.path.join(work, f"{job}{index}.log"))
            chief_log = os.path.join(work, "chief.log")
            chief = _start_task(cluster, "chief", module, train, spec, {"type": "chief", "index": 0}, chief_log)
            chief_cpu = []
            while chief.poll() is None:
                with contextlib.suppress(FileNotFoundError, ProcessLookupError):
                    chief_cpu.append((time.monotonic(), cpu_seconds(chief.pid)))
                time.sleep(1.0)
            text = open(chief_log).read()
            for name in ["chief.log"] + [name for name in os.listdir(work) if name.startswith("simulated.")]:
                shutil.copy(os.path.join(work, name), os.path.join(args.work, f"ps-{name}"))  # the last run's
            if chief.returncode:
                raise RuntimeError(f"the chief failed:\n{text[-3000:]}")
    return ps_figures(text, chief_cpu, num_workers, args)


def ps_figures(text, chief_cpu, num_workers, args):
    """Steps/s and the chief's CPU per step over the run's last log intervals (after the first, which compiles)."""
    import re

    stamps = [(time.mktime(time.strptime(match.group(1), "%Y-%m-%d %H:%M:%S")), int(match.group(2)))
              for match in re.finditer(r"^(\S+ \S+) INFO asrkit.train: step (\d+) epoch", text, re.M)]
    (first_time, first_step), (last_time, last_step) = stamps[0], stamps[-1]
    steps_per_second = (last_step - first_step) / max(last_time - first_time, 1e-9)
    # The chief's CPU over the same span: samples every second, matched to the log's wall clock by duration.
    span = last_time - first_time
    end_cpu = chief_cpu[-1][1]
    start_cpu = next((cpu for when, cpu in chief_cpu if chief_cpu[-1][0] - when <= span), chief_cpu[0][1])
    client = [float(value) for value in re.findall(r"([\d.]+)% of the wall time", text)]
    staleness = [float(value) for value in re.findall(r" staleness_mean ([\d.]+)", text)]
    seq = {"staleness_mean_last": staleness[-1] if staleness else None, "server_queue": args.server_queue,
           "socket_buffer_bytes": args.socket_buffer_bytes, "seconds_per_example": args.seconds_per_example,
           "snapshot_every": args.snapshot_every, "check_seconds": args.check_seconds,
           "examples_per_step": round(args.frames_per_batch / args.seq_frames_per_message, 1)} if args.seq else {}
    return {"bench": "ps-seq" if args.seq else "ps", "workers": num_workers, "servers": args.ps_servers,
            "steps": last_step, **seq,
            "steps_per_second": round(steps_per_second, 2),
            "chief_cpu_ms_per_step": round(1e3 * (end_cpu - start_cpu) / max(last_step - first_step, 1), 1),
            "client_share_of_wall_last": client[-1] if client else None,
            "frames_per_batch": args.frames_per_batch}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("what", choices=("feed", "train", "snapshots", "ps"))
    parser.add_argument("--servers", default="16,64,256,1024", help="comma-separated numbers of servers")
    parser.add_argument("--work", default=None, help="scratch dir (default: a temporary one)")
    parser.add_argument("--out", help="append each measurement's JSON line to this file too")
    parser.add_argument("--label", help="a name for the measurement, kept in its JSON line")
    parser.add_argument("--seconds", type=float, default=30.0, help="feed: how long each measurement runs")
    parser.add_argument("--warm-up", type=float, default=5.0,
                        help="feed: seconds after every server has been heard from before measuring")
    parser.add_argument("--batch", type=int, default=10, help="feed: examples a simulated step takes")
    parser.add_argument("--step-seconds", type=float, default=0.1, help="feed: a simulated step's time")
    parser.add_argument("--capacity", type=int, default=64, help="the client's queue (the trainer's default)")
    parser.add_argument("--receive-timeout", type=float, default=60.0)
    parser.add_argument("--seconds-per-example", type=float, default=0.0, help="each server's pace")
    parser.add_argument("--slow", default="", help="feed: shard:seconds_per_example,...")
    parser.add_argument("--die-after", default="", help="feed: shard:examples,...")
    parser.add_argument("--per-connection-queue", type=int, default=0,
                        help="feed: ZMQ_RCVHWM of each connection instead of the client's own choice")
    parser.add_argument("--steps", type=int, default=300, help="train: steps")
    parser.add_argument("--log-every", type=int, default=50, help="train: steps a log interval")
    parser.add_argument("--exp-dir", help="train: keep the trainer's exp dir here")
    parser.add_argument("--model-dir", help="snapshots: the model dir published as each snapshot")
    parser.add_argument("--snapshots", type=int, default=5)
    parser.add_argument("--every", type=float, default=8.0, help="snapshots: seconds between publishes")
    parser.add_argument("--check-seconds", type=float, default=2.0)
    parser.add_argument("--tensorflow-reload", action="store_true", help="snapshots: also time a real reload")
    parser.add_argument("--ps-servers", type=int, default=64, help="ps: simulated servers feeding the chief")
    parser.add_argument("--frames-per-batch", type=int, default=2000, help="ps: frames a step (--mode full)")
    parser.add_argument("--seq", action="store_true", help="ps: asrkit-train-seq on the toy sequence task")
    parser.add_argument("--server-queue", type=int, default=32, help="snapshots, ps: each simulated server's queue")
    parser.add_argument("--socket-buffer-bytes", type=int, default=0,
                        help="snapshots, ps --seq: the servers' ZMQ_SNDBUF (and the snapshots client's ZMQ_RCVBUF; "
                             "asrkit-train-seq sets its own); 0: the kernel's")
    parser.add_argument("--snapshot-every", type=int, default=4, help="ps --seq: steps between snapshots")
    args = parser.parse_args()
    print("command line:", " ".join(sys.argv), flush=True)
    scratch = tempfile.TemporaryDirectory() if args.work is None else contextlib.nullcontext(args.work)
    with scratch as work:
        args.work = work
        os.makedirs(work, exist_ok=True)
        root = corpus(work)
        bench = {"feed": bench_feed, "train": bench_train, "snapshots": bench_snapshots, "ps": bench_ps}[args.what]
        for count in (int(value) for value in args.servers.split(",")):
            line = json.dumps({**bench(root, count, args), **({"label": args.label} if args.label else {})})
            print(line, flush=True)
            if args.out:  # bench/scale_model.py fits its capacity model to these lines
                with open(args.out, "a") as out:
                    out.write(line + "\n")


if __name__ == "__main__":
    main()
