"""`--example-servers local:N | ADDRESS,...` turned into an example source for the trainer."""

import dataclasses
import logging
import os

from asrkit.example_servers.client import NAMED_SERVERS, ServerExamples
from asrkit.example_servers.local import LocalServers, parse_server_spec

logger = logging.getLogger("asrkit.example_servers")


@dataclasses.dataclass(frozen=True)
class StreamOptions:
    """How the trainer's client takes examples from its servers, and what its local:N servers are started with."""

    num_epochs: int = 0  # local servers' passes over their shards; remote ones end the stream only with theirs
    seed: int = 1
    server_public_key: str = None  # CURVE public key file of remote servers
    server_options: tuple = ()  # more asrkit-serve-examples arguments for local servers
    capacity: int = 64  # messages the client queues (asrkit.example_servers.client)
    receive_timeout: float = 300.0  # seconds without an example before the client gives up
    max_restarts: int = 5  # of a local server that dies
    receive_buffer_bytes: int = 0  # ZMQ_RCVBUF of each connection (0: the system's)


def open_example_servers(spec, expected, exp_dir, data_dir, ali_dir, train_utterance_ids, stream=StreamOptions()):
    """A ServerExamples; with local:N also the N servers, started on its first iteration, stopped on close.

    Local servers serve exactly the training utterances the trainer kept (written to
    <exp-dir>/servers/train_utts), so held-out utterances never reach training.  Remote
    servers serve whatever they were started on; their epochs are theirs.
    """
    kind, value = parse_server_spec(spec)
    if kind == "remote":
        shown = ", ".join(value[:NAMED_SERVERS]) + (f", ... {value[-1]}" if len(value) > NAMED_SERVERS else "")
        logger.info("pulling examples from %d example servers: %s", len(value), shown)
        # Remote servers end the stream only if they were started with --num-epochs.
        return ServerExamples(expected, value, stream.server_public_key, stream.capacity,
                              expected_servers=len(value) if stream.num_epochs else None,
                              receive_timeout=stream.receive_timeout, num_servers=len(value),
                              receive_buffer_bytes=stream.receive_buffer_bytes)
    server_dir = os.path.join(exp_dir, "servers")
    os.makedirs(server_dir, exist_ok=True)
    utt_list = os.path.join(server_dir, "train_utts")
    with open(utt_list, "w", encoding="utf-8") as out:
        out.writelines(f"{utterance_id}\n" for utterance_id in train_utterance_ids)
    client = ServerExamples(expected, (), None, stream.capacity, expected_servers=value if stream.num_epochs else None,
                            receive_timeout=stream.receive_timeout, num_servers=value,
                            receive_buffer_bytes=stream.receive_buffer_bytes)
    args = ["--utt-list", utt_list, "--seed", str(stream.seed), "--num-epochs", str(stream.num_epochs or 0)]
    servers = LocalServers(client, value, data_dir, ali_dir, exp_dir, args + list(stream.server_options),
                           stream.max_restarts)
    client.add_starter(servers.start)
    client.add_closer(servers.stop)
    client.local_servers = servers
    return client
