#!/usr/bin/env python3
"""Streaming recognition and the recognition server on a real package (issue #39's streaming targets).

1. `stream` (in-process, one thread): utterances of a test set fed to RecognizerStream in pieces
   (--piece-seconds, 0.1 s) as if arriving in real time.  Per piece: the partial result's latency, i.e. when it is
   ready (the piece's arrival + the CPU of accept() and partial()) minus the end of the audio it covers; per
   segment: the final result's latency after its endpoint (the piece's arrival + compute - the endpoint's
   time) or, for the last segment, the compute of finish() after the audio's end.  Also the WER of streaming
   (Kaldi's endpoint rules, segments joined) against batch Recognizer.transcribe on the same utterances and
   references, and the real-time factor of each (CPU seconds of the thread per audio second: one stream on one
   core); with --arpa and --ps-dict, pocketsphinx's CPU per audio second on the same pieces beside it.
2. `server`: two asrkit-serve-recognizer processes, one batching the network across streams (--batch)
   and one not (--no-batch); for each N of --streams, N clients each stream an utterance paced in real
   time (0.1 s messages), then EOF, against one server and then the other (alternating, so that both
   see the same load); with --stream-seconds S, each stream sends S seconds of utterances back to back,
   so that all N are open all the time and end together (what "N concurrent streams" means).  Per stream: the time from each message to its first answer (partial round
   trip) and from EOF to the final result; the server process's CPU seconds per audio second per
   stream, and so how many cores N streams need; batched / unbatched CPU and latency side by side, and
   the batched server's streams per network call (its summary line).  First, for reference, the same
   utterances in-process (RecognizerStream, the same 0.1-s pieces with a partial result after each, one
   thread): the server's CPU beyond it is what serving costs (protocol, threads, event loop).
3. `abuse`: the same server gets 1,000 malformed or abandoned connections (odd byte counts, junk text,
   oversized messages, audio then a dropped TCP connection, audio then a close without EOF, 25 at a
   time); its RSS and thread count (from /proc) before and after, and a good stream after it all.

    .venv/bin/python bench/recognizer_server.py PACKAGE_DIR DATA_DIR [--parts stream,server,abuse]
        [--utterances 20] [--piece-seconds 0.1] [--endpoints early,wait] [--streams 4,8,16] [--stream-seconds 20] [--beam 10]
        [--server-options ...] [--bad-connections 1000] [--arpa LM --ps-dict DICT [--ps-lm-weight W]]

DATA_DIR is a Kaldi data dir (wav.scp, text).  Numbers depend on the machine's load: run it niced
beside other work and say so.
"""

import argparse
import itertools
import asyncio
import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

PIECE_SECONDS = 0.1


def percentiles(values):
    if not values:
        return "none"
    values = np.asarray(values)
    return (f"median {np.median(values):.3f} p95 {np.percentile(values, 95):.3f} max {values.max():.3f} s "
            f"(n={len(values)})")


def load_utterances(recognizer, data_dir, count):
    from asrkit.scoring.kaldi_text import read_kaldi_text

    texts = dict(read_kaldi_text(os.path.join(data_dir, "text")))
    utterances = []
    with open(os.path.join(data_dir, "wav.scp"), encoding="utf-8") as handle:
        for line in handle:
            key, path = line.split(maxsplit=1)
            if key in texts and len(utterances) < count:
                utterances.append((key, recognizer.load_audio(path.strip()), list(texts[key])))
    return utterances


def stream_one(recognizer, samples, piece, final_pass, windows, early_endpoints=True):
    """(segments, partial latencies, final latencies, CPU seconds) of one utterance streamed in pieces.  The final
    latencies: {"endpoint": after the endpoint's time in the audio, "detected": after the piece in which the
    endpoint rules fired arrived, "end": finish()'s, after the audio's end}."""
    stream = recognizer.stream(final_pass=final_pass, windows=windows, early_endpoints=early_endpoints)
    partial_lags, final_lags, segments, cpu = [], {"endpoint": [], "detected": [], "end": []}, [], 0.0
    rate = recognizer.sample_rate
    for start in range(0, len(samples), piece):
        began = time.thread_time()
        finals = stream.accept(samples[start:start + piece])
        partial = stream.partial()
        spent = time.thread_time() - began
        cpu += spent
        arrived = min(start + piece, len(samples)) / rate
        final_lags["endpoint"] += [arrived + spent - result.end for result in finals]
        final_lags["detected"] += [spent] * len(finals)
        segments += finals
        if partial.end > partial.start:
            partial_lags.append(arrived + spent - partial.end)
    began = time.thread_time()
    finals = stream.finish()
    spent = time.thread_time() - began
    cpu += spent
    final_lags["end"] += [spent] * len(finals)
    return segments + finals, partial_lags, final_lags, cpu


def pocketsphinx_stream_cpu(args, utterances, sample_rate):
    """CPU seconds of pocketsphinx decoding the utterances in the same pieces with a partial hypothesis
    after each (its live mode: full_utt False, hyp() per piece), at 16 kHz as its en-us model needs."""
    import pocketsphinx

    from asrkit.data.audio import to_pcm16
    from asrkit.inference.resample import resample

    options = {"hmm": pocketsphinx.get_model_path("en-us/en-us"), "lm": args.arpa, "dict": args.ps_dict,
               "samprate": 16000, "loglevel": "FATAL"}
    if args.ps_lm_weight:
        options["lw"] = float(args.ps_lm_weight)
    decoder = pocketsphinx.Decoder(**options)
    audio = [to_pcm16(resample(samples, sample_rate, 16000)).tobytes() for _, samples, _ in utterances]
    piece = 2 * int(args.piece_seconds * 16000)
    began = time.thread_time()
    for data in audio:
        decoder.start_utt()
        for start in range(0, len(data), piece):
            decoder.process_raw(data[start:start + piece], no_search=False, full_utt=False)
            decoder.hyp()
        decoder.end_utt()
        decoder.hyp()
    return time.thread_time() - began


def stream_part(args):
    from threadpoolctl import threadpool_limits

    from asrkit.recognizer.recognizer import Recognizer
    from asrkit.scoring.alignment import count_edits

    threadpool_limits(1)  # one core's real-time factor
    recognizer = Recognizer(args.package)
    utterances = load_utterances(recognizer, args.data, args.utterances)
    recognizer.transcribe(utterances[0][1])  # load the compiled kernels and the aligner before timing
    piece = int(args.piece_seconds * recognizer.sample_rate)
    words = sum(len(reference) for _, _, reference in utterances)
    audio = sum(len(samples) for _, samples, _ in utterances) / recognizer.sample_rate
    batch_errors, batch_cpu, batch_texts = 0, 0.0, []
    for key, samples, reference in utterances:
        began = time.thread_time()
        batch_texts.append(recognizer.transcribe(samples).text.split())
        batch_cpu += time.thread_time() - began
        batch_errors += count_edits(reference, batch_texts[-1]).errors
    print(f"stream: {len(utterances)} utterances, {audio:.1f} s of audio, {words} words, "
          f"pieces of {args.piece_seconds:g} s; "
          f"batch WER {100 * batch_errors / words:.2f}%, RTF {batch_cpu / audio:.3f} (CPU of one thread / audio)")
    if args.arpa and args.ps_dict:
        ps_cpu = pocketsphinx_stream_cpu(args, utterances, recognizer.sample_rate)
        print(f"  pocketsphinx, the same pieces with a partial hypothesis after each: CPU per audio second "
              f"{ps_cpu / audio:.3f}; asrkit batch / pocketsphinx {batch_cpu / ps_cpu:.2f}x")
    else:
        ps_cpu = None
    for final_pass, windows, endpoints in itertools.product(args.final_passes.split(","), args.windows.split(","),
                                                            args.endpoints.split(",")):
        errors, cpu, differ, partial_lags, segment_counts = 0, 0.0, 0, [], []
        final_lags = {"endpoint": [], "detected": [], "end": []}
        for (key, samples, reference), batch in zip(utterances, batch_texts):
            segments, partials, finals, spent = stream_one(recognizer, samples, piece, final_pass, windows,
                                                           endpoints == "early")
            streamed = " ".join(result.text for result in segments).split()
            errors += count_edits(reference, streamed).errors
            cpu += spent
            differ += streamed != batch
            partial_lags += partials
            for kind, lags in finals.items():
                final_lags[kind] += lags
            segment_counts.append(len(segments))
        change = 100 * (errors - batch_errors) / words
        print(f"  final pass {final_pass}, windows {windows}, endpoints {endpoints}: WER {100 * errors / words:.2f}% ({change:+.2f}% "
              f"absolute against batch; {differ} utterances differ), RTF {cpu / audio:.3f}, segments per utterance "
              f"{np.bincount(segment_counts).tolist()} (utterances with 0, 1, ...)")
        if ps_cpu:
            print(f"    CPU per audio second against pocketsphinx's streaming: {cpu / ps_cpu:.2f}x")
        print(f"    partial latency (ready - end of the audio it covers): {percentiles(partial_lags)}")
        print(f"    final results of segments that endpoints ended: ready - the endpoint's time in the audio (the "
              f"network's look-ahead included) {percentiles(final_lags['endpoint'])}; ready - arrival of the "
              f"piece that showed it {percentiles(final_lags['detected'])}")
        print(f"    final results at the audio's end (finish()): {percentiles(final_lags['end'])}")


def start_server(args, *options):
    """The server process (at the bench's own niceness: run the bench niced; its log in a temporary file so that it
    never blocks on a full pipe) and its port."""
    import tempfile

    command = [sys.executable, "-m", "asrkit.cli.serve_recognizer", args.package, "--port", "0", *options]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    log = tempfile.NamedTemporaryFile("w+", prefix="recognizer_server.", suffix=".log", delete=False)
    process = subprocess.Popen(command, stderr=log, env={**os.environ, "PYTHONPATH": root})
    process.log_path = log.name
    while process.poll() is None:
        with open(log.name, encoding="utf-8") as handle:
            found = re.search(r"listening on ws://127\.0\.0\.1:(\d+)", handle.read())
        if found:
            return process, int(found.group(1))
        time.sleep(0.2)
    raise RuntimeError(f"the server did not start; see {log.name}")


def process_cpu_seconds(pid):
    """User + system CPU seconds of a process so far (/proc/PID/stat), robust to the machine's load as wall
    time is not."""
    with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def proc_status(pid):
    fields = {}
    with open(f"/proc/{pid}/status", encoding="utf-8") as handle:
        for line in handle:
            name, _, value = line.partition(":")
            fields[name] = value.split()[0] if value.split() else ""
    return int(fields["VmRSS"]) / 1024, int(fields["Threads"])


async def paced_stream(port, samples, rate):
    """(partial round trips, final latency) of one stream paced in real time."""
    from websockets.asyncio.client import connect

    piece = int(PIECE_SECONDS * rate)
    data = (np.clip(samples, -1, 1) * 32767).astype("<i2")
    round_trips = []
    async with connect(f"ws://127.0.0.1:{port}", max_size=None) as websocket:
        began = time.monotonic()
        for index, start in enumerate(range(0, len(data), piece)):
            due = began + (index + 1) * PIECE_SECONDS  # the piece's audio has all arrived
            await asyncio.sleep(max(0.0, due - time.monotonic()))
            sent = time.monotonic()
            await websocket.send(data[start:start + piece].tobytes())
            await websocket.recv()
            round_trips.append(time.monotonic() - sent)
        ended = time.monotonic()
        await websocket.send(json.dumps({"eof": 1}))
        async for _ in websocket:
            pass
        return round_trips, time.monotonic() - ended


async def concurrent_streams(port, utterances, count, rate):
    jobs = [paced_stream(port, utterances[index % len(utterances)][1], rate) for index in range(count)]
    return await asyncio.gather(*jobs)


def joined_streams(utterances, count, seconds, rate):
    """`count` recordings of `seconds` each, stream i the utterances from the i-th on, back to back (so that N
    streams are all open for the whole time, and all end together: the finals' worst case)."""
    length = int(seconds * rate)
    streams = []
    for first in range(count):
        pieces, total, index = [], 0, first
        while total < length:
            pieces.append(utterances[index % len(utterances)][1])
            total += len(pieces[-1])
            index += 1
        streams.append((f"stream-{first}", np.concatenate(pieces)[:length], []))
    return streams


def in_process_cpu(recognizer, utterances, windows):
    """CPU seconds of each utterance streamed in-process as the server's clients send it (0.1-s pieces, the partial
    result after each, the package's default final pass, the server's windows), on one thread."""
    from threadpoolctl import threadpool_limits

    piece = int(PIECE_SECONDS * recognizer.sample_rate)
    with threadpool_limits(1):
        stream_one(recognizer, utterances[0][1], piece, None, windows)  # the compiled kernels and the aligner loaded
        return [stream_one(recognizer, samples, piece, None, windows)[3] for _, samples, _ in utterances]


def in_process_reference(cpu, utterances, count, rate):
    """In-process CPU seconds per audio second of the utterances that `count` streams send (concurrent_streams')."""
    used = [index % len(utterances) for index in range(count)]
    return sum(cpu[index] for index in used) / (sum(len(utterances[index][1]) for index in used) / rate)


def run_streams(process, port, utterances, count, rate):
    """(CPU seconds per audio second per stream, final latencies, partial round trips) of `count` concurrent
    real-time streams against one server."""
    cpu_before = process_cpu_seconds(process.pid)
    results = asyncio.run(concurrent_streams(port, utterances, count, rate))
    cpu = process_cpu_seconds(process.pid) - cpu_before
    audio = sum(len(utterances[index % len(utterances)][1]) for index in range(count)) / rate
    return cpu / audio, [final for _, final in results], [trip for trips, _ in results for trip in trips]


def stop_server(process):
    """Stops a server; returns its summary line's fields."""
    process.terminate()
    process.wait(timeout=60)
    with open(process.log_path, encoding="utf-8") as handle:
        found = re.findall(r"summary: (.*)", handle.read())
    return dict(field.split("=", 1) for field in found[-1].split()) if found else {}


MODES = (("batched", "--batch"), ("unbatched", "--no-batch"))


def server_part(args):
    from asrkit.recognizer.recognizer import Recognizer

    recognizer = Recognizer(args.package, beam=args.beam)
    rate = recognizer.sample_rate
    utterances = load_utterances(recognizer, args.data, args.utterances)
    if args.stream_seconds:
        utterances = joined_streams(utterances, max(args.streams), args.stream_seconds, rate)
    windows = re.search(r"--windows[ =](\w+)", args.server_options)
    in_process = in_process_cpu(recognizer, utterances, windows.group(1) if windows else None)
    options = ["--workers", "2", "--max-connections", str(max(args.streams) + 8), *args.server_options.split()]
    options += ["--beam", str(args.beam)] if args.beam else []
    servers = {}
    try:
        for name, flag in MODES:
            servers[name] = start_server(args, *options, flag)
            asyncio.run(concurrent_streams(servers[name][1], utterances, 2, rate))  # warm up
        what = f"{args.stream_seconds:g} s of utterances back to back" if args.stream_seconds else "one utterance"
        print(f"server: {' '.join(options)}; each stream {what}; load average {os.getloadavg()[0]:.1f} at the start")
        print("  in-process reference: the same utterances through RecognizerStream on one thread, the same pieces")
        for count in args.streams:
            measured = {name: run_streams(*servers[name], utterances, count, rate) for name, _ in MODES}
            print(f"  {count} concurrent real-time streams:")
            for name, (cpu, finals, trips) in measured.items():
                within = sum(final <= 0.5 for final in finals)
                print(f"    {name:9s} server CPU {cpu:.3f} s per audio second per stream ({count * cpu:.2f} cores); "
                      f"EOF -> final {percentiles(finals)}, within 0.5 s {within}/{count}; "
                      f"message -> answer median {np.median(trips):.3f} p95 {np.percentile(trips, 95):.3f} s")
            (cpu_b, finals_b, _), (cpu_u, finals_u, _) = measured["batched"], measured["unbatched"]
            reference = in_process_reference(in_process, utterances, count, rate)
            print(f"    in-process CPU {reference:.3f} s per audio second; server / in-process: batched "
                  f"{cpu_b / reference:.2f}x, unbatched {cpu_u / reference:.2f}x")
            print(f"    batched / unbatched: CPU {cpu_b / cpu_u:.2f}x, final latency median "
                  f"{np.median(finals_b) / np.median(finals_u):.2f}x, p95 "
                  f"{np.percentile(finals_b, 95) / np.percentile(finals_u, 95):.2f}x")
        print(f"  load average {os.getloadavg()[0]:.1f} at the end")
    finally:
        for name, (process, _) in servers.items():
            summary = stop_server(process)
            if name == "batched":
                print(f"  batched server: {summary.get('network_calls')} network calls, "
                      f"{summary.get('streams_per_call')} streams per call on average (warm-up included)")


async def bad_connection(port, kind, samples):
    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosed, InvalidMessage

    try:
        websocket = await connect(f"ws://127.0.0.1:{port}", max_size=None)
    except (OSError, InvalidMessage):
        return
    try:
        if kind == 0:
            await websocket.send(b"\x01\x02\x03")
        elif kind == 1:
            await websocket.send("junk, not JSON")
        elif kind == 2:
            await websocket.send(b"\x00" * 70000)  # over --max-message-bytes 65536
        elif kind == 3:
            await websocket.send(samples)
            websocket.transport.abort()
            return
        else:
            await websocket.send(samples)
        await websocket.close()
    except ConnectionClosed:
        pass


async def abuse(port, count, samples):
    for first in range(0, count, 25):
        batch = range(first, min(first + 25, count))
        await asyncio.gather(*(bad_connection(port, index % 5, samples) for index in batch))


def abuse_part(args):
    """Rounds of bad connections, so that growth that stops (the allocator's high-water mark) can be told
    from a leak (growth in every round).  --max-connections is raised above a round, so that every connection
    gets a session rather than the refusal (1013) that an overloaded server gives."""
    from asrkit.recognizer.recognizer import Recognizer

    recognizer = Recognizer(args.package)
    utterances = load_utterances(recognizer, args.data, 2)
    samples = (utterances[0][1][: recognizer.sample_rate // 5] * 32767).astype("<i2").tobytes()
    process, port = start_server(args, "--workers", "2", "--max-message-bytes", "65536", "--max-connections",
                                 str(args.bad_connections + 100), *args.server_options.split())
    try:
        asyncio.run(concurrent_streams(port, utterances, 2, recognizer.sample_rate))  # warm up
        time.sleep(1.0)
        statuses = [proc_status(process.pid)]
        for _ in range(args.abuse_rounds):
            began = time.monotonic()
            asyncio.run(abuse(port, args.bad_connections, samples))
            asyncio.run(concurrent_streams(port, utterances, 1, recognizer.sample_rate))  # after the queue drained
            time.sleep(2.0)
            statuses.append(proc_status(process.pid))
            print(f"abuse: {args.bad_connections} malformed or abandoned connections (and one good stream) in "
                  f"{time.monotonic() - began:.1f} s")
        print("  server RSS " + " -> ".join(f"{rss:.1f}" for rss, _ in statuses) + " MiB; threads "
              + " -> ".join(str(threads) for _, threads in statuses) + " (before, after each round)")
    finally:
        process.terminate()
        process.wait(timeout=60)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("package")
    parser.add_argument("data")
    parser.add_argument("--parts", default="stream,server,abuse")
    parser.add_argument("--utterances", type=int, default=20)
    parser.add_argument("--piece-seconds", type=float, default=PIECE_SECONDS,
                        help="The stream part's piece size (the partial latency's granularity).")
    parser.add_argument("--final-passes", default="online,batch", help="The stream part's final passes.")
    parser.add_argument("--windows", default="tentative,eager,grid",
                        help="The stream part's placements of a windowed BLSTM's windows "
                             "(asrkit.inference.network.WINDOWS).")
    parser.add_argument("--endpoints", default="early,wait",
                        help="The stream part's endpoint look-ahead: early (rules on the pending frames too), wait.")
    parser.add_argument("--streams", default="4,8,16", help="Comma-separated numbers of concurrent streams.")
    parser.add_argument("--stream-seconds", type=float, default=0.0,
                        help="Server part: each stream sends this much audio, utterances back to back, so that all N "
                             "streams are open for the whole time and end together (0: one utterance each, whose "
                             "lengths differ, so fewer than N are open most of the time).")
    parser.add_argument("--beam", type=float, default=None, help="The decoding beam (the package's by default).")
    parser.add_argument("--server-options", default="",
                        help="More asrkit-serve-recognizer options for the server part, e.g. '--beam 10'.")
    parser.add_argument("--bad-connections", type=int, default=1000, help="Per round.")
    parser.add_argument("--abuse-rounds", type=int, default=2)
    parser.add_argument("--arpa", default=None, help="The recipe's ARPA LM, for pocketsphinx's reference CPU.")
    parser.add_argument("--ps-dict", default=None, help="pocketsphinx dictionary of the recipe's lexicon.")
    parser.add_argument("--ps-lm-weight", default=None, help="pocketsphinx's language weight (dev's choice).")
    args = parser.parse_args()
    sys.stdout.reconfigure(line_buffering=True)  # each result as it comes, also into a log file
    args.streams = [int(count) for count in args.streams.split(",")]
    parts = {"stream": stream_part, "server": server_part, "abuse": abuse_part}
    for name in args.parts.split(","):
        parts[name](args)


if __name__ == "__main__":
    main()
