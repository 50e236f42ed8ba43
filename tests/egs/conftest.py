"""Fixtures shared by the tests of egs/voiceover's game readers."""

import os
import struct
import types

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


class _BitWriter:
    """ProPack's two interleaved streams, as its unpacker reads them: bits into 16-bit little-endian
    words (least significant bit first), a word reserved at the end of the output only when a bit
    does not fit in the last one, and literal bytes appended after the last word reserved."""

    def __init__(self):
        self.out = bytearray()
        self.word_at = None
        self.used = 16

    def bits(self, value, count):
        for index in range(count):
            if self.used == 16:
                self.word_at, self.used = len(self.out), 0
                self.out += b"\0\0"
            if value >> index & 1:
                self.out[self.word_at + self.used // 8] |= 1 << (self.used % 8)
            self.used += 1

    def code(self, code, length):  # a Huffman code, its first bit first
        for index in range(length - 1, -1, -1):
            self.bits(code >> index & 1, 1)


def _canonical_codes(lengths):
    codes, code = {}, 0
    for length in range(1, 17):
        for symbol, symbol_length in enumerate(lengths):
            if symbol_length == length:
                codes[symbol] = (code >> (16 - length), length)
                code += 1 << (16 - length)
    return codes


def _put_value(writer, codes, value):
    symbol = value if value < 2 else value.bit_length()
    writer.code(*codes[symbol])
    if symbol >= 2:
        writer.bits(value - (1 << (symbol - 1)), symbol - 1)


def _greedy_chunks(data, start, end):
    """[(literal bytes, (distance, length) or None)] for data[start:end], longest matches first
    (brute force, distances back to the start of `data`)."""
    chunks, literal, position = [], bytearray(), start
    while position < end:
        best = (0, 0)
        for distance in range(1, position + 1):
            length = 0
            while position + length < end and data[position + length] == data[position + length - distance]:
                length += 1
            best = max(best, (length, -distance))
        if best[0] >= 2:
            chunks.append((bytes(literal), (-best[1], best[0])))
            literal = bytearray()
            position += best[0]
        else:
            literal.append(data[position])
            position += 1
    chunks.append((bytes(literal), None))
    return chunks


def rnc_pack(data, block_size=4096, chunks=None):
    """A ProPack method 1 stream of `data` (blocks of `block_size` bytes); `chunks`, if given, is the
    one block's [(literal, (distance, length) or None)] to write as is, `data` then being what they
    unpack to (its length and CRC go in the header)."""
    lengths = [4] * 16  # every symbol a 4-bit code: values up to 65,535
    codes = _canonical_codes(lengths)
    writer = _BitWriter()
    writer.bits(0, 2)
    blocks = [chunks] if chunks is not None else [
        _greedy_chunks(data, start, min(start + block_size, len(data))) for start in range(0, len(data), block_size)]
    for block in blocks:
        for _ in range(3):
            writer.bits(len(lengths), 5)
            for length in lengths:
                writer.bits(length, 4)
        writer.bits(len(block), 16)
        for literal, match in block:
            _put_value(writer, codes, len(literal))
            writer.out += literal
            if match:
                _put_value(writer, codes, match[0] - 1)
                _put_value(writer, codes, match[1] - 2)
    packed = bytes(writer.out)
    return (b"RNC\x01" + struct.pack(">IIHH", len(data), len(packed), crc16(data), crc16(packed))
            + bytes([0, len(blocks)]) + packed)


def crc16(data):
    """CRC-16/ARC bit by bit, the reference the module's table-driven CRC is checked against."""
    crc = 0
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0xA001 if crc & 1 else crc >> 1
    return crc


@pytest.fixture
def bitwise_crc16():
    return crc16


@pytest.fixture
def propack():
    """rnc_pack(data, block_size=4096, chunks=None): a ProPack method 1 stream built by a packer here."""
    return rnc_pack


SKY_GAME = "usr/share/scummvm/beneath-a-steel-sky"


def sky_header(flag, total):
    """A 22-byte file header of Beneath a Steel Sky: flag word, 5 words, total size (low 16 bits), 4 words."""
    return struct.pack("<H10xH8x", flag, total & 0xFFFF)


def sky_speech(pcm, packed=True):
    """(file bytes, dnr flags) of a speech file: header + PCM, ProPack-packed after the header or stored."""
    total = 22 + len(pcm)
    if not packed:
        return sky_header(0, total) + pcm, 0x800000
    return sky_header(0x80 | (total >> 16) << 8, total) + rnc_pack(pcm), 0


def sky_text(lines):
    """A text section file (stored) of the given lines (bytes), coded with steel_sky_huffman.tsv."""
    table = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                         "egs", "voiceover", "local", "steel_sky_huffman.tsv")
    codes = {}
    for row in open(table):
        if not row.startswith("#"):
            code, value = row.split()
            if int(value) not in codes or len(code) < len(codes[int(value)]):
                codes[int(value)] = code
    bits, lengths, block_sizes = "", b"", []
    for number, line in enumerate(lines):
        if number and number % 32 == 0:
            block_sizes.append(sum(block_units))
        if number % 32 == 0:
            block_units = []
        coded = "".join(codes[byte] for byte in line + b"\0")
        units = -(-len(coded) // 2)
        if units >= 128:  # the long form counts 8 units
            units = -(-units // 8) * 8
            lengths += bytes([0x80 | units // 8])
        else:
            lengths += bytes([units])
        bits += coded.ljust(units * 2, "0")
        block_units.append(units)
    bits = bits.ljust(-(-len(bits) // 8) * 8, "0")
    stream = bytes(int(bits[at:at + 8], 2) for at in range(0, len(bits), 8))
    lengths_at = 4 + 2 * len(block_sizes)
    header = struct.pack("<HH", lengths_at, lengths_at + len(lines)) + b"".join(
        struct.pack("<H", size) for size in block_sizes)
    return header + lengths + stream, 0x800000


def write_sky_disk(directory, files, sixteen_byte_units=()):
    """sky.dsk and sky.dnr in `directory` from {number: (bytes, dnr flags)}; the files numbered in
    `sixteen_byte_units` start on 16-byte boundaries and give their offset in that unit."""
    os.makedirs(directory, exist_ok=True)
    disk, directory_entries = bytearray(), b""
    for number, (content, flags) in files.items():
        if number in sixteen_byte_units:
            disk += b"\0" * (-len(disk) % 16)
            offset = 0x800000 | len(disk) >> 4
        else:
            offset = len(disk)
        directory_entries += struct.pack("<H", number) + offset.to_bytes(3, "little") + \
            (flags | len(content)).to_bytes(3, "little")
        disk += content
    with open(os.path.join(directory, "sky.dsk"), "wb") as handle:
        handle.write(disk)
    with open(os.path.join(directory, "sky.dnr"), "wb") as handle:
        handle.write(struct.pack("<I", len(files)) + directory_entries)
    return str(directory)


@pytest.fixture
def sky_game(tmp_path):
    """Writes a games dir holding Beneath a Steel Sky's sky.dsk/sky.dnr with the given {number: (bytes,
    flags)} (see sky_text, sky_speech); returns (games dir, game dir)."""
    def write(files, sixteen_byte_units=()):
        return str(tmp_path), write_sky_disk(tmp_path / SKY_GAME, files, sixteen_byte_units)
    return write


@pytest.fixture
def sky_files():
    """The builders of Beneath a Steel Sky's files: .text(lines), .speech(pcm, packed), .header(flag, total)."""
    return types.SimpleNamespace(text=sky_text, speech=sky_speech, header=sky_header)
