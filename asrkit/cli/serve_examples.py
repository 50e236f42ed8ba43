"""asrkit-serve-examples: stream one shard of a data dir as training examples on a ZeroMQ socket."""

import logging
import os
import signal
import threading

import click

from asrkit.cli.common import CONTEXT_SETTINGS, asrkit_command, option_group
from asrkit.cli.options_file import options_file
from asrkit.cli.sequence_options import sequence_options
from asrkit.logs import summary_line
from asrkit.example_servers.security import check_bind_allowed, write_key_pair
from asrkit.example_servers.wire import MAX_SHARDS
from asrkit.tf_runtime import import_tensorflow


def _parse_shard(ctx, param, value):
    try:
        index, count = (int(part) for part in value.split("/"))
    except ValueError:
        raise click.BadParameter(f"{value!r}: expected r/R, e.g. 1/4") from None
    if not 1 <= index <= count <= MAX_SHARDS:
        raise click.BadParameter(f"{value!r}: expected 1 <= r <= R <= {MAX_SHARDS} (what a trainer accepts)")
    return index, count


def _write_key_pair(ctx, param, value):
    if not value or ctx.resilient_parsing:
        return
    public, secret = write_key_pair(value)
    click.echo(f"wrote {public} (give it to trainers: --server-public-key) and {secret} (keep it: "
               "--curve-secret-key)")
    ctx.exit(0)


def _watch_parent(server, logger):
    parent = os.getppid()

    def watch():
        while not server.stop_requested.wait(1.0):
            if os.getppid() != parent:  # re-parented: whoever started us is gone
                logger.warning("the parent process %d exited; stopping", parent)
                server.request_stop()

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


@click.command(context_settings=CONTEXT_SETTINGS)
@click.argument("data_dir", type=click.Path(exists=True, file_okay=False))
@click.argument("ali_dir", type=click.Path(exists=True, file_okay=False))
@option_group("socket", [
    click.option("--bind", required=True, metavar="ENDPOINT",
                 help="Address of the PUSH socket, e.g. tcp://127.0.0.1:5570 (tcp://127.0.0.1:* picks a free port; "
                      "see --endpoint-file). Anything but loopback needs --allow-remote and --curve-secret-key."),
    click.option("--queue-capacity", default=32, type=click.IntRange(min=1),
                 help="Messages queued for the trainer before sends block (the socket's high-water mark)."),
    click.option("--send-buffer-bytes", default=0, type=click.IntRange(min=0),
                 help="The kernel's send buffer of each connection (ZMQ_SNDBUF; 0: the system's, which grows to "
                      "megabytes). With a small --queue-capacity it bounds how far a seq-mode server decodes ahead "
                      "of the trainer: docs/scaling.md."),
    click.option("--allow-remote", is_flag=True,
                 help="Allow binding a non-loopback address (requires --curve-secret-key)."),
    click.option("--curve-secret-key", type=click.Path(exists=True, dir_okay=False),
                 help="ZeroMQ CURVE secret key file (.key_secret): encrypt and authenticate the stream."),
    click.option("--endpoint-file", type=click.Path(dir_okay=False),
                 help="Write the bound address and the pid here (JSON) once listening; removed on exit."),
])
@option_group("stream", [
    click.option("--shard", default="1/1", callback=_parse_shard, metavar="r/R",
                 help="Serve utterances r, r+R, r+2R, ... (1-based) of the sorted utterance list."),
    click.option("--seed", default=1, type=click.IntRange(min=0),
                 help="Seed of the epoch orders and of the noisification."),
    click.option("--randomisation", type=click.Choice(["shuffle", "rolling"]), default="shuffle", show_default=True,
                 help="Epoch order: a permutation of the shard, or [Mohamed2015]'s rolling window over blocks of "
                 "--rolling-block-utts consecutive utterances (asrkit.training_examples.randomisation)."),
    click.option("--rolling-block-utts", default=450, show_default=True, type=click.IntRange(min=1),
                 help="Rolling randomisation: utterances per block."),
    click.option("--rolling-window-blocks", default=20, show_default=True, type=click.IntRange(min=1),
                 help="Rolling randomisation: blocks in the window (each emits 1/this of itself per step)."),
    click.option("--utt-list", type=click.Path(exists=True, dir_okay=False),
                 help="Serve only these utterances (first field of each line), e.g. the trainer's training set."),
    click.option("--num-epochs", default=0, type=click.IntRange(min=0),
                 help="Passes over the shard, then an end message and exit (0: until stopped)."),
    click.option("--start-epoch", default=0, type=click.IntRange(min=0),
                 help="Epoch to start at (a restarted server continues where its predecessor was)."),
    click.option("--start-after", metavar="UTT",
                 help="Start the first epoch after this utterance of its order: the last one the trainer received "
                      "from a server that died, so its successor resumes there."),
    click.option("--start-index", default=0, type=click.IntRange(min=0),
                 help="The number of the first example served in the shard's stream (with --snapshot-schedule): the "
                      "examples the trainer accepted from a server that died, so its successor resumes the schedule."),
    click.option("--max-utterances", default=0, type=click.IntRange(min=0),
                 help="Stop after serving this many utterances (0: no limit); for tests and benchmarks."),
])
@option_group("examples", [
    click.option("--styles", type=click.Path(exists=True, dir_okay=False),
                 help="Noise style config (JSON, as asrkit-noisify's --styles): noisify every utterance on the fly."),
    click.option("--from-feats", is_flag=True, help="Read DATA_DIR/feats.scp instead of featurizing the audio."),
    click.option("--targets", type=click.Choice(["pdfs", "phones"]), default="pdfs", show_default=True,
                 help="The targets served: pdfs (ALI_DIR/ali.scp) or phones (ALI_DIR/phone_ali.scp, for "
                      "asrkit-train-ce --criterion ctc, which asks its local:N servers for them)."),
    click.option("--cmvn", type=click.Path(exists=True, dir_okay=False),
                 help="CMVN statistics [default: DATA_DIR/cmvn.h5]."),
    click.option("--online-ivectors", type=click.Path(exists=True), metavar="DIR",
                 help="Append online i-vectors, extracted per utterance from the features served (the noisy ones "
                      "with --styles), to every example: DIR is the trainer's --online-ivector-dir (how its i-vectors "
                      "were made), a model dir trained with i-vectors, or an asrkit-train-ivector-extractor dir."),
    click.option("--max-length-mismatch", default=1, type=click.IntRange(min=0),
                 help="Frames an alignment may differ from the features; more and the utterance is skipped."),
])
@option_group("sequence", [
    click.option("--mode", type=click.Choice(["ce", "seq"]), default="ce", show_default=True,
                 help="ce: features and alignment targets; seq: also sMBR/MMI outer derivatives from lattices made "
                      "with the newest model snapshot (needs --model-dir and --graph)."),
    click.option("--model-dir", type=click.Path(exists=True, file_okay=False),
                 help="Seq: the model to start from (asrkit-train-ce's final/)."),
    click.option("--snapshot-dir", type=click.Path(file_okay=False),
                 help="Seq: where the trainer publishes snapshots (its <exp-dir>/snapshots); the newest is loaded."),
    click.option("--snapshot-schedule", is_flag=True,
                 help="Seq: decode each example with the snapshot the trainer's schedule (SNAPSHOT_DIR/schedule) gives "
                      "it, rather than the newest: the run then repeats itself whatever the machine's load "
                      "(asrkit.sequence.schedule; asrkit-train-seq's local:N servers use it)."),
    click.option("--graph", "graph_dir", type=click.Path(exists=True, file_okay=False),
                 help="Seq: graph dir with the lattice-generation HCLG (utils/mkgraph on the bigram lang dir)."),
])
@click.option("--write-key-pair", type=click.Path(file_okay=False), callback=_write_key_pair, is_eager=True,
              expose_value=False, metavar="DIR",
              help="Write a CURVE key pair DIR/server.key (public) and DIR/server.key_secret, and exit.")
@click.option("--exit-with-parent", is_flag=True,
              help="Stop when the process that started this one exits (set by a trainer's local:N servers, so a "
                   "killed trainer leaves no servers behind).")
@sequence_options()
@click.option("--num-threads", default=1, type=click.IntRange(min=1), help="TensorFlow threads of the front end.")
@click.option("--log-interval", default=30.0, type=click.FloatRange(min=0.1), help="Seconds between progress lines.")
@options_file
@asrkit_command("asrkit-serve-examples")
def main(data_dir, ali_dir, socket, stream, examples, sequence, seq, exit_with_parent, num_threads, log_interval):
    """Serve training examples of DATA_DIR with the targets in ALI_DIR (ali.scp, num_pdfs; or phone_ali.scp).

    Audio is read, noisified (--styles), featurized with DATA_DIR/conf/featurize.json and normalised
    with the CMVN statistics; one tf.train.SequenceExample per utterance goes out on a ZeroMQ PUSH
    socket.  SIGTERM finishes the message in hand and exits cleanly.

    With --mode seq each utterance also carries the outer derivatives of a sequence criterion:
    the newest snapshot of --snapshot-dir (or --model-dir before any; with --snapshot-schedule the one
    the trainer's schedule names) runs over the utterance,
    the --graph HCLG gives a lattice, and forward-backward against the alignment in ALI_DIR gives
    w(t, k) for the trainer's auxiliary loss (asrkit-train-seq starts such servers itself with
    --example-servers local:N).

    With --online-ivectors every example also carries the online i-vectors of its features (the
    noisy ones with --styles), extracted one utterance at a time: the shard is served shuffled, so a
    speaker's earlier utterances are not at hand to carry statistics over from.
    """
    # deferred: the server brings numpy, scipy, numba, h5py and the decoder (~2-6 s); --help imports none of it.
    from asrkit.training_examples.randomisation import Randomisation
    from asrkit.example_servers.server import ExampleServer, ServerOptions

    logger = logging.getLogger("asrkit-serve-examples")
    check_bind_allowed(socket.bind, socket.allow_remote, socket.curve_secret_key)  # before the slow start-up
    import_tensorflow(num_threads)
    order = stream.as_dict()
    randomisation = Randomisation(order.pop("randomisation"), order.pop("rolling_block_utts"),
                                  order.pop("rolling_window_blocks"))
    options = ServerOptions(**socket.as_dict(), **order, randomisation=randomisation, **examples.as_dict(),
                            **sequence.as_dict(), sequence=seq, num_threads=num_threads, log_interval=log_interval)
    server = ExampleServer(data_dir, ali_dir, options)

    def on_signal(signum, frame):
        logger.info("signal %d: finishing the message in hand, then exiting", signum)
        server.request_stop()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    if exit_with_parent:
        _watch_parent(server, logger)
    result = server.run()
    logger.info(summary_line(
        "asrkit-serve-examples", "ok", endpoint=result.endpoint, served=result.served, frames=result.frames,
        skipped=len(result.skipped), epochs=result.epochs_done, blocked_seconds=f"{result.blocked_seconds:.1f}",
        waiting_seconds=f"{result.waiting_seconds:.1f}", seconds=f"{result.seconds:.1f}",
        stopped="signal" if result.stopped else "done",
    ))


if __name__ == "__main__":
    main()
