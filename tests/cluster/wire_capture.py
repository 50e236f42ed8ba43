"""Capture every frame an interface carries into a file (a raw AF_PACKET socket: tcpdump without tcpdump).

    python wire_capture.py INTERFACE OUTPUT

Run inside a host of the test cluster, it sees that host's traffic only.  Prints `capturing` once the
socket is bound, then appends each frame's bytes to OUTPUT (unframed: the tests search the bytes) until
SIGTERM or SIGINT.
"""

import signal
import socket
import sys

ETH_P_ALL = 0x0003


def capture(interface, output_path):
    sniffer = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    sniffer.bind((interface, 0))
    sniffer.settimeout(0.2)
    stopping = []
    for number in (signal.SIGTERM, signal.SIGINT):
        signal.signal(number, lambda *_: stopping.append(True))
    print("capturing", flush=True)
    with open(output_path, "wb", buffering=0) as output:
        while not stopping:
            try:
                output.write(sniffer.recv(65536))
            except (socket.timeout, InterruptedError):
                continue


if __name__ == "__main__":
    capture(sys.argv[1], sys.argv[2])
