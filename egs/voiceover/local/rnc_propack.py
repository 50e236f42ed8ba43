"""Unpacking Rob Northen Computing's ProPack, method 1 (the compression of Beneath a Steel Sky's files).

A packed stream is an 18-byte big-endian header -- b"RNC\\x01", the unpacked and packed lengths
(32 bits each), the CRCs of the unpacked and of the packed data (16 bits each), a leeway byte
(how far the packed data may overlap the output when unpacked in place) and the number of blocks --
then the packed data.  The CRC is CRC-16 with the reflected polynomial 0xA001 (as ARC's), from 0.

The packed data mixes two streams: bits, read from little-endian 16-bit words least significant bit
first, a word fetched only when the bits already fetched do not suffice; and literal bytes, taken
from the byte after the last word fetched.  The first 2 bits are flags (unused here).  Each block
then holds three Huffman tables -- literal run lengths, match distances, match lengths -- and a
16-bit count of chunks.  A table is a 5-bit count of symbols and a 4-bit code length per symbol
(0: no code); codes are canonical (shorter first, then by symbol), and as bits arrive least
significant first a code is matched bit-reversed.  A symbol s < 2 is the value s; a larger one is
2^(s-1) plus s-1 more bits.  A chunk is a literal run (the run-length table's value, possibly 0,
copied from the byte stream), then -- except in a block's last chunk -- a match: distance (table
value + 1) back in the output, length (table value + 2), copied byte by byte (a match may overlap
its own output).

Written from the format's description in ScummVM's engines/sky/rnc_deco.cpp (read, not copied).
"""

import struct

import numba
import numpy as np

SIGNATURE = b"RNC\x01"
HEADER_SIZE = 18
MIN_MATCH = 2


class RncError(ValueError):
    """A ProPack stream that does not unpack; the message names the file and the offset."""


def _crc16_table():
    """The CRC after feeding each byte value into a zero CRC, so that a byte takes one lookup, not 8 shifts."""
    table = np.zeros(256, dtype=np.uint16)
    for value in range(256):
        crc = value
        for _ in range(8):
            crc = (crc >> 1) ^ 0xA001 if crc & 1 else crc >> 1
        table[value] = crc
    return table


_CRC16_TABLE = _crc16_table()


@numba.njit(cache=True)
def _crc16_of_bytes(data, table):
    crc = 0
    for byte in data:
        crc = (crc >> 8) ^ table[(crc ^ byte) & 0xFF]
    return crc


def crc16(data):
    """CRC-16 (reflected polynomial 0xA001, initial value 0) of `data` (bytes-like).  Compiled, since the
    recipe checks the packed and the unpacked CRC of every Beneath a Steel Sky speech file: over 100 MB."""
    return int(_crc16_of_bytes(np.frombuffer(data, dtype=np.uint8), _CRC16_TABLE))


def is_packed(data):
    return data[:4] == SIGNATURE


class _Reader:
    """The two interleaved streams of the packed data, `data[start:end]`."""

    def __init__(self, data, start, end, where):
        self.data, self.position, self.end, self.where = data, start, end, where
        self.bits = 0  # fetched, unread bits; the next one is the least significant
        self.count = 0  # how many

    def _fetch(self):
        # The packer may leave out the high byte of the last word (taken as 0).
        if self.position >= self.end:
            raise RncError(f"{self.where}: packed data ends at offset {self.end}, mid-stream")
        high = self.data[self.position + 1] if self.position + 1 < self.end else 0
        self.bits |= (self.data[self.position] | high << 8) << self.count
        self.count += 16
        self.position = min(self.position + 2, self.end)

    def peek(self, count):
        """The next `count` bits, left unread."""
        while self.count < count:
            self._fetch()
        return self.bits & ((1 << count) - 1)

    def skip(self, count):
        self.bits >>= count
        self.count -= count

    def read(self, count):
        value = self.peek(count)
        self.skip(count)
        return value

    def literal(self, length):
        if self.position + length > self.end:
            raise RncError(f"{self.where}: literal run of {length} bytes at offset {self.position} runs past "
                           f"the packed data's end (offset {self.end})")
        run = self.data[self.position:self.position + length]
        self.position += length
        return run


def read_table(reader):
    """A Huffman table: {(code length, bit-reversed code): symbol}."""
    lengths = [reader.read(4) for _ in range(reader.read(5))]
    table = {}
    code = 0  # canonical code, left-aligned in 16 bits
    for length in range(1, 17):
        for symbol, symbol_length in enumerate(lengths):
            if symbol_length == length:
                value = code >> (16 - length)
                table[(length, int(format(value, f"0{length}b")[::-1], 2))] = symbol
                code += 1 << (16 - length)
    return table


def read_value(reader, table, name):
    """The next value coded with `table` (a symbol, then its extra bits)."""
    # Codes are tried shortest first on bits peeked, not read one at a time: a word is fetched exactly when
    # a bit-by-bit reader would fetch it, and the decoding is twice as fast.
    for length in range(1, 17):
        symbol = table.get((length, reader.peek(length)))
        if symbol is not None:
            reader.skip(length)
            break
    else:
        raise RncError(f"{reader.where}: no {name} code matches the bits before offset {reader.position}")
    if symbol < 2:
        return symbol
    return (1 << (symbol - 1)) | reader.read(symbol - 1)


def unpack(data, where="data", offset=0):
    """The unpacked bytes of the ProPack method 1 stream at data[offset:]; `where` names the file."""
    if len(data) - offset < HEADER_SIZE or not is_packed(data[offset:]):
        raise RncError(f"{where}: no ProPack method 1 header (RNC\\x01) at offset {offset}")
    unpacked_size, packed_size, unpacked_crc, packed_crc = struct.unpack_from(">IIHH", data, offset + 4)
    blocks = data[offset + 17]
    start = offset + HEADER_SIZE
    if start + packed_size > len(data):
        raise RncError(f"{where}: {packed_size} packed bytes at offset {start} run past the end ({len(data)} bytes)")
    if crc16(data[start:start + packed_size]) != packed_crc:
        raise RncError(f"{where}: packed data at offset {start} fails its CRC (truncated or corrupt)")
    output = _unpack_blocks(_Reader(data, start, start + packed_size, where), blocks, unpacked_size)
    if len(output) != unpacked_size or crc16(output) != unpacked_crc:
        raise RncError(f"{where}: the stream at offset {offset} unpacks to {len(output)} bytes failing the "
                       f"header's length ({unpacked_size}) or CRC")
    return bytes(output)


def _unpack_blocks(reader, blocks, unpacked_size):
    output = bytearray()
    reader.read(2)  # flags
    for _ in range(blocks):
        lengths, distances, match_lengths = (read_table(reader) for _ in range(3))
        chunks = reader.read(16)
        for chunk in range(chunks):
            output += reader.literal(read_value(reader, lengths, "literal run"))
            if chunk == chunks - 1:
                break
            distance = read_value(reader, distances, "distance") + 1
            length = read_value(reader, match_lengths, "match length") + MIN_MATCH
            if distance > len(output):
                raise RncError(f"{reader.where}: a match at offset {reader.position} reaches {distance} bytes "
                               f"back, before the start of the output ({len(output)} bytes)")
            _copy_match(output, distance, length)
            if len(output) > unpacked_size:
                break
        if len(output) > unpacked_size:
            break
    return output


def _copy_match(output, distance, length):
    """Appends `length` bytes starting `distance` back; a match longer than its distance repeats."""
    start = len(output) - distance
    if distance >= length:
        output += output[start:start + length]
    else:
        pattern = output[start:]
        output += (pattern * (length // distance + 1))[:length]
