"""asrkit-serve-recognizer: a WebSocket recognition server for a model package (asrkit.recognizer.server)."""

import asyncio
import logging
import signal

import click

from asrkit.cli.common import (CONTEXT_SETTINGS, asrkit_command, endpoint_options, option_group, stream_options,
                               vocabulary_options)
from asrkit.logs import summary_line


@click.command(context_settings=CONTEXT_SETTINGS)
@click.argument("package_dir", type=click.Path(exists=True, file_okay=False))
@option_group("listen", [
    click.option("--host", default="127.0.0.1",
                 help="Address to listen on; anything but loopback needs --allow-remote."),
    click.option("--port", default=2700, type=click.IntRange(0, 65535), help="Port (0: a free one, logged)."),
    click.option("--allow-remote", is_flag=True,
                 help="Allow a non-loopback --host. The server has no authentication or encryption: put it behind a "
                      "proxy that has."),
])
@option_group("limits", [
    click.option("--max-connections", default=32, type=click.IntRange(min=1),
                 help="Streams open at once; more are refused with close code 1013 (try again later)."),
    click.option("--max-queue", default=8, type=click.IntRange(min=1),
                 help="Incoming messages buffered per connection before the server stops reading its socket."),
    click.option("--max-message-bytes", default=1 << 20, type=click.IntRange(min=2),
                 help="Largest binary message (16-bit PCM); larger ones end the connection with close code 1009."),
    click.option("--max-stream-seconds", default=3600.0, type=click.FloatRange(min=0.0, min_open=True),
                 help="Most audio one connection may send (close code 1008 past it)."),
    click.option("--idle-timeout", default=30.0, type=click.FloatRange(min=0.0, min_open=True),
                 help="Seconds without audio (other messages do not count) before the connection is closed "
                      "(code 1008)."),
    click.option("--send-timeout", default=10.0, type=click.FloatRange(min=0.0, min_open=True),
                 help="Seconds a result may wait for a client that does not read before it is dropped."),
    click.option("--workers", default=0, type=click.IntRange(min=0), help="Recognition threads (0: one per core)."),
])
@option_group("segmenting", [
    endpoint_options(""),
    click.option("--final-pass", type=click.Choice(["online", "batch"]), default=None,
                 help="How a segment's final result is made (asrkit.recognizer.stream): online, from the incremental "
                      "decoder's lattice (least CPU and latency); batch, a fresh decode of the segment as batch "
                      "transcription would (its CMVN mean too).  [default: batch for models trained with the "
                      "utterance's mean, else online]"),
    stream_options(""),
])
@click.option("--batch/--no-batch", default=True, show_default=True,
              help="Evaluate the acoustic network of the streams whose audio arrived meanwhile in one batched call "
                   "(the same results; less CPU per stream with many streams), or each stream's alone.")
@option_group("decoding", [
    click.option("--lm-weight", type=click.FloatRange(min=0.0, min_open=True),
                 help="Override the package's LM weight (acoustic scale 1 / this)."),
    click.option("--beam", type=click.FloatRange(min=0.0, min_open=True), help="Override the package's beam."),
    click.option("--max-active", type=click.IntRange(min=1), help="Override the package's max-active."),
])
@vocabulary_options
@asrkit_command("asrkit-serve-recognizer")
def main(package_dir, listen, limits, segmenting, batch, decoding, hotwords):
    """Serve recognition of PACKAGE_DIR (made by asrkit-export) over WebSockets until SIGINT or SIGTERM.

    A client sends binary 16-bit mono PCM at the package's sample rate and {"eof": 1} (or EOF) at the
    end; it gets {"partial": ...} after each message and {"text", "result": [{word, start, end, conf}]}
    for each segment the endpoint rules end (Vosk's protocol; asrkit.recognizer.server documents it).
    """
    # deferred: the recognizer and the server bring numpy, numba and websockets; --help imports none of them
    from threadpoolctl import threadpool_limits
    from asrkit.recognizer.recognizer import Recognizer
    from asrkit.recognizer.server import ServerConfig, check_host_allowed, serve_forever
    from asrkit.recognizer.stream import default_endpoint, default_final_pass

    logger = logging.getLogger("asrkit-serve-recognizer")
    logging.getLogger("websockets").setLevel(logging.WARNING)  # a line per connection opened and closed: too many
    check_host_allowed(listen.host, listen.allow_remote)  # before loading the package
    # The pool's threads (one per core) are the parallelism: BLAS threads of each on top would oversubscribe.
    threadpool_limits(1)
    recognizer = hotwords(Recognizer(package_dir, **decoding.as_dict()))
    final_pass = segmenting.final_pass
    endpoint = default_endpoint(final_pass or default_final_pass(recognizer), recognizer.package.frame_shift_s,
                                segmenting.max_utterance_seconds, segmenting.endpoint_silence)
    config = ServerConfig(**listen.as_dict(), **limits.as_dict(), endpoint=endpoint, final_pass=final_pass,
                          batch=batch, windows=segmenting.windows, early_endpoints=segmenting.early_endpoints)

    async def run():
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        return await serve_forever(recognizer, config, stop)

    server = asyncio.run(run())
    batched = {} if server.batcher is None else \
        {"network_calls": server.batcher.calls, "streams_per_call": f"{server.batcher.mean_streams:.2f}"}
    logger.info(summary_line("asrkit-serve-recognizer", "ok", served=server.served, errors=server.errors,
                             refused=server.refused, **batched))


if __name__ == "__main__":
    main()
