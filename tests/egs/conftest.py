"""Fixtures shared by the tests of egs/voiceover's game readers."""

import struct

import pytest


@pytest.fixture
def queen_bundle(tmp_path):
    """Writes queen.1c with the given {name: bytes} files after a QTBL table; returns its path."""
    def write(files):
        header_size, entry_size = 15, 21
        offset = header_size + entry_size * len(files)
        table, data = b"", b""
        for name, content in files.items():
            table += name.encode().ljust(12, b"\0") + b"\x01" + struct.pack(">II", offset + len(data), len(content))
            data += content
        path = tmp_path / "queen.1c"
        path.write_bytes(b"QTBL" + b"CEM10\0" + b"\0\0\x01" + struct.pack(">H", len(files)) + table + data)
        return str(path)
    return write
