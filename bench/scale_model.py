#!/usr/bin/env python3
"""The capacity model of docs/scaling.md, fitted to bench/scale.py's measurements and checked against the others.

Each part of the model is fitted on the smallest configurations measured and predicts the larger ones; the
table printed is each prediction beside its measurement, as a ratio.  Then the model's answer for the papers'
largest runs (docs/scaling.md says where their figures come from).

Usage:

    .venv/bin/python bench/scale.py feed --servers 16,64,256,1024 --out M --label feed   # and the others
    .venv/bin/python bench/scale_model.py M
"""

import json
import statistics
import sys

FILES_PER_SERVER = 4  # asrkit.example_servers.client's: a connection's TCP socket and three ZeroMQ mailboxes


def lines_of(path):
    with open(path) as handle:
        return [json.loads(line) for line in handle if line.strip()]


def labelled(lines, label):
    return [line for line in lines if line.get("label") == label]


class Table:
    def __init__(self):
        self.rows = []

    def add(self, quantity, predicted, measured):
        self.rows.append((quantity, predicted, measured))

    def print(self):
        print(f"{'quantity':66s} {'predicted':>10s} {'measured':>10s} {'ratio':>6s}")
        for quantity, predicted, measured in self.rows:
            print(f"{quantity:66s} {predicted:10.3g} {measured:10.3g} {predicted / measured:6.2f}")
        worst = max(abs(predicted / measured - 1) for _, predicted, measured in self.rows)
        print(f"largest error: {100 * worst:.0f}%")


def memory_model(feed):
    """RSS = base + servers x what one server costs the client (its connection's ZeroMQ buffers and queued
    message, the examples it may have in flight, at most AHEAD_PER_SERVER): fitted on the smallest and the
    second-largest sizes, so that it predicts one size between them and one beyond."""
    sizes = sorted(feed, key=lambda line: line["servers"])
    (n1, r1), (n2, r2) = [(line["servers"], line["rss_mib_end"]) for line in (sizes[0], sizes[-2])]
    per_server = (r2 - r1) / (n2 - n1)
    return r1 - n1 * per_server, per_server, {sizes[0]["servers"], sizes[-2]["servers"]}


def fit(lines, table):
    feed = labelled(lines, "feed")
    base, per_server, fitted_on = memory_model(feed)
    for line in sorted(feed, key=lambda line: line["servers"]):
        if line["servers"] not in fitted_on:
            table.add(f"client RSS MiB, {line['servers']} servers", base + line["servers"] * per_server,
                      line["rss_mib_end"])
    smallest = min(feed, key=lambda line: line["servers"])
    spare = smallest["fds_end"] - FILES_PER_SERVER * smallest["servers"]
    for line in sorted(feed, key=lambda line: line["servers"])[1:]:
        table.add(f"client file descriptors, {line['servers']} servers", spare + FILES_PER_SERVER * line["servers"],
                  line["fds_end"])
    # The receiving thread's share of a trainer's wall: its CPU a message, measured by the feed bench (the client
    # alone) at the same number of servers, times the messages a second the trainer's frames/s make.
    cpu_of_feed = {line["servers"]: line["client_cpu_ms_per_message"] / 1e3 for line in feed}
    train = sorted((line for line in labelled(lines, "train") + labelled(lines, "train-10min")
                    if "frames_per_message" in line), key=lambda line: (line["servers"], line["steps"]))
    cpu = cpu_of_feed[min(cpu_of_feed)]
    frames_per_message = train[0]["frames_per_message"]
    for line in train:
        messages = line["frames_per_second"] / line["frames_per_message"]
        table.add(f"client share of the wall, trainer of {line['servers']} servers, {line['steps']} steps (%)",
                  100 * cpu_of_feed[line["servers"]] * messages, line["client_share_of_wall_median"])
    for line in labelled(lines, "feed-slow-1s"):
        # The rotation takes every shard in turn: the stream runs at servers x the slowest server's rate, or at
        # what the consumer takes (batch / step) if that is less.
        consumer = line["batch"] / line["step_seconds"]
        table.add(f"examples/s, one of {line['servers']} servers at 1 s an example",
                  min(consumer, line["servers"] / 1.0), line["examples_per_second"])
    for line in labelled(lines, "snapshots"):
        # A server looks when it makes an example, at most every check_seconds; it makes one when the client
        # has taken its last, every servers / (examples/s taken) seconds, or at its own pace if it is slower.
        # (With a short send queue and small socket buffers: a long queue refills in bursts, docs/scaling.md.)
        turn = max(line["servers"] / line["examples_per_second"], line["seconds_per_example"])
        table.add(f"last server's load after a publish, {line['servers']} servers (s)",
                  line["check_seconds"] + turn + line["read_seconds_median"], line["worst_last_load_after_s"])
    for line in labelled(lines, "ps-seq"):
        table.add(f"staleness (steps), snapshot every {line['snapshot_every']}, look every "
                  f"{line['check_seconds']:g} s", staleness(line), line["staleness_mean_last"])
    ps_model(lines, table)
    return {"base_mib": base, "per_server_mib": per_server, "client_cpu_s": cpu,
            "frames_per_message": frames_per_message, "ps": ps_fitted(lines)}


def staleness(line):
    """Mean steps between the snapshot a derivative was made with and the step that uses it, when the servers
    are what limits the steps (nothing queues): the newest snapshot is half a snapshot interval old, a server
    looks for it half its look interval late, and an example waits half a batch's making for its batch."""
    steps_per_second = line["steps_per_second"]
    examples_per_second = line["servers"] / line["seconds_per_example"]
    return (line["snapshot_every"] / 2 + line["check_seconds"] / 2 * steps_per_second
            + line["examples_per_step"] / examples_per_second / 2 * steps_per_second)


CORES = 2  # of the machine the parameter-server runs shared (the workers, the chief and the parameter server)
FITTED_WORKERS = (1, 2, 8)  # the parameter-server runs the model is fitted on; it predicts the others


def ps_fitted(lines):
    """From the parameter-server runs of one, two and eight workers: a worker's steps/s alone, the CPU a step
    takes once the cores are all taken (two workers take this machine's two), what each worker's process costs
    the cores beside its steps (from the 8-worker run; not measured apart), and the chief's CPU a step."""
    ps = {line["workers"]: line for line in labelled(lines, "ps")}
    if not all(workers in ps for workers in FITTED_WORKERS):
        return None
    one, two, eight = (ps[workers]["steps_per_second"] for workers in FITTED_WORKERS)
    cpu_per_step = CORES / two  # two workers' own cost beside their steps is left out: within this fit's noise
    per_worker_cores = (CORES - eight * cpu_per_step) / 8
    return {"one_worker_steps_s": one, "cpu_s_per_step": cpu_per_step, "per_worker_cores": per_worker_cores,
            "chief_step_s": statistics.mean(ps[workers]["chief_cpu_ms_per_step"] for workers in (1, 2)) / 1e3}


def ps_steps_per_second(fitted, workers):
    """min(workers x one worker's, what the cores left by the workers' own processes run, 1 / the chief's
    CPU a step)."""
    machine = (CORES - workers * fitted["per_worker_cores"]) / fitted["cpu_s_per_step"]
    return min(workers * fitted["one_worker_steps_s"], machine, 1 / fitted["chief_step_s"])


def ps_model(lines, table):
    fitted = ps_fitted(lines)
    if fitted is None:
        return
    for line in sorted(labelled(lines, "ps"), key=lambda line: line["workers"]):
        if line["workers"] not in FITTED_WORKERS:
            table.add(f"steps/s, ps with {line['workers']} workers", ps_steps_per_second(fitted, line["workers"]),
                      line["steps_per_second"])


def papers(model):
    """The model's answer for [Variani2017]'s CE run: 32 GPU workers, 10 example servers each."""
    print("\nThe papers' largest CE run ([Variani2017]: 32 workers, 10 servers a worker):")
    worker_fps = 256 * 20 / 0.05  # b=256, u=20 in a 50-ms GPU step: 102,400 frames/s a worker
    messages = worker_fps / model["frames_per_message"]
    print(f"  a worker at {worker_fps:,.0f} frames/s takes {messages:,.0f} messages/s; its client "
          f"{100 * messages * model['client_cpu_s']:.0f}% of a core (one receiving thread: at most "
          f"{1 / model['client_cpu_s']:,.0f} messages/s)")
    print(f"  servers a worker needs at 21-25k frames/s a core (7-9k noisified): {worker_fps / 23000:.1f} clean, "
          f"{worker_fps / 8000:.1f} noisified")
    chief = 32 * messages * model["client_cpu_s"]
    print(f"  --strategy ps, one chief pulling for all 32: {chief:.1f} cores of decoding on one thread: the first "
          f"bottleneck, past about {1 / model['client_cpu_s'] / messages:.1f} workers")
    if model["ps"]:
        steps = 32 * worker_fps / (256 * 20)
        print(f"  the chief's dispatch: {1e3 * model['ps']['chief_step_s']:.0f} ms CPU a step here, at most "
              f"{1 / model['ps']['chief_step_s']:.0f} steps/s for all workers; 32 workers at 20 steps/s each "
              f"ask {steps:.0f}")
    print(f"  a ps chief's client with the 320 servers: {model['base_mib'] + 320 * model['per_server_mib']:.0f} MiB, "
          f"{FILES_PER_SERVER * 320} file descriptors")


def main():
    lines = lines_of(sys.argv[1])
    table = Table()
    model = fit(lines, table)
    table.print()
    print("\nfitted:", json.dumps({key: value for key, value in model.items() if key != "ps"}),
          json.dumps(model["ps"]))
    papers(model)


if __name__ == "__main__":
    main()
