#!/usr/bin/env python3
"""Structured fuzz of every wire message type through the trainer's receiver (issue #42 item 3).

CE and seq examples, the handshake fields they carry, end messages and the multipart framing, each a valid
message with one to three fields made hostile (tests/example_servers/wire_fuzzer.py, which the test suite runs on 10^4
messages). Prints the outcome counts: `crashed` (an exception other than WireError) and `meaningless` (accepted
although no asrkit server can mean it) must both be 0; a few of each kind of failure are shown.

Usage:

    .venv/bin/python bench/wire_fuzz.py [--messages 100000] [--seed 0]
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "example_servers"))

import wire_fuzzer  # noqa: E402  (after the path above)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    started = time.monotonic()
    outcomes, samples = wire_fuzzer.run(args.messages, args.seed)
    seconds = time.monotonic() - started
    for what, message in sorted(samples.items())[:20]:
        print(f"{what}: {message}")
    print(f"wire fuzz: messages={args.messages} seed={args.seed} refused={outcomes['refused']} "
          f"accepted={outcomes['accepted']} crashed={outcomes['crashed']} meaningless={outcomes['meaningless']} "
          f"seconds={seconds:.1f}")
    return 1 if outcomes["crashed"] or outcomes["meaningless"] else 0


if __name__ == "__main__":
    sys.exit(main())
