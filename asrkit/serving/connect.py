"""`--example-servers local:N | ADDRESS,...` turned into an example source for the trainer."""

import logging
import os

from asrkit.serving.client import ServerExamples
from asrkit.serving.local import LocalServers, parse_server_spec

logger = logging.getLogger("asrkit.serving")


def open_example_servers(spec, expected, exp_dir, data_dir, ali_dir, train_utterance_ids, num_epochs=0, seed=1,
                         server_public_key=None, server_options=(), capacity=64, receive_timeout=300.0,
                         max_restarts=5):
    """A ServerExamples; with local:N also the N servers, started on its first iteration, stopped on close.

    Local servers serve exactly the training utterances the trainer kept (written to
    <exp-dir>/servers/train_utts), so held-out utterances never reach training.  Remote
    servers serve whatever they were started on; their epochs are theirs.
    """
    kind, value = parse_server_spec(spec)
    if kind == "remote":
        logger.info("pulling examples from %d example servers: %s", len(value), ", ".join(value))
        # Remote servers end the stream only if they were started with --num-epochs.
        return ServerExamples(expected, value, server_public_key, capacity,
                              expected_servers=len(value) if num_epochs else None, receive_timeout=receive_timeout,
                              num_servers=len(value))
    server_dir = os.path.join(exp_dir, "servers")
    os.makedirs(server_dir, exist_ok=True)
    utt_list = os.path.join(server_dir, "train_utts")
    with open(utt_list, "w", encoding="utf-8") as out:
        out.writelines(f"{utterance_id}\n" for utterance_id in train_utterance_ids)
    client = ServerExamples(expected, (), None, capacity, expected_servers=value if num_epochs else None,
                            receive_timeout=receive_timeout, num_servers=value)
    args = ["--utt-list", utt_list, "--seed", str(seed), "--num-epochs", str(num_epochs or 0)]
    servers = LocalServers(client, value, data_dir, ali_dir, exp_dir, args + list(server_options), max_restarts)
    client.add_starter(servers.start)
    client.add_closer(servers.stop)
    client.local_servers = servers
    return client
