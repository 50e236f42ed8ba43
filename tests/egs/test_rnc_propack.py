"""egs/voiceover/local/rnc_propack.py: ProPack method 1 streams from a packer written in the tests
(conftest.rnc_pack: greedy matches, fixed 4-bit codes) unpack to their data; malformed ones fail
naming the file and offset."""

import os
import random
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LOCAL = os.path.join(ROOT, "egs", "voiceover", "local")
if LOCAL not in sys.path:
    sys.path.insert(0, LOCAL)

import rnc_propack  # noqa: E402  (egs/voiceover/local)
from rnc_propack import RncError  # noqa: E402


def test_crc16_is_arc_crc(bitwise_crc16):
    assert rnc_propack.crc16(b"123456789") == 0xBB3D  # CRC-16/ARC's check value
    assert rnc_propack.crc16(b"") == 0
    data = np.random.default_rng(0).integers(0, 256, 5000, dtype=np.uint8).tobytes()
    assert rnc_propack.crc16(data) == bitwise_crc16(data)  # the table-driven CRC against the bit-by-bit one
    assert rnc_propack.crc16(bytearray(data[:77])) == bitwise_crc16(data[:77])


@pytest.mark.parametrize("data", [
    b"",
    b"x",
    b"abababababababab",  # a match longer than its distance (it repeats its own output)
    bytes(range(256)) * 3,  # literals, then matches 256 back
    bytes(random.Random(3).choice(b"\x80\x81\x7f\x82") for _ in range(3000)),  # audio-like, 2 blocks
])
def test_packed_data_unpacks(propack, data):
    packed = propack(data, block_size=2048)
    assert rnc_propack.is_packed(packed)
    assert rnc_propack.unpack(packed) == data
    assert rnc_propack.unpack(b"HEADER" + packed, offset=6) == data


def test_literal_only_and_hand_written_streams(propack):
    data = bytes(range(40))
    assert rnc_propack.unpack(propack(data, chunks=[(data, None)])) == data
    expected = data[:10] + data[:5] + data[15:]
    packed = propack(expected, chunks=[(data[:10], (10, 5)), (data[15:], None)])  # literal, match, literal
    assert rnc_propack.unpack(packed) == expected


def test_canonical_codes_are_matched_bit_reversed():
    class Bits:
        def __init__(self, bits):
            self.bits = list(bits)

        def peek(self, count):
            return sum(bit << index for index, bit in enumerate(self.bits[:count]))

        def skip(self, count):
            del self.bits[:count]

        def read(self, count):
            value = self.peek(count)
            self.skip(count)
            return value

    # 3 symbols of lengths 1, 2, 2: codes 0, 10, 11 (canonical), first bit first in the stream.
    table = rnc_propack.read_table(Bits([1, 1, 0, 0, 0] + [1, 0, 0, 0] + [0, 1, 0, 0] + [0, 1, 0, 0]))
    assert table == {(1, 0b0): 0, (2, 0b01): 1, (2, 0b11): 2}
    reader = Bits([1, 0, 1, 1, 1, 0])  # "10" -> 1; "11" -> symbol 2, + 1 bit (1) -> 3; "0" -> 0
    reader.where, reader.position = "x", 0
    assert [rnc_propack.read_value(reader, table, "v") for _ in range(3)] == [1, 3, 0]


def test_malformed_streams_name_file_and_offset(propack):
    data = bytes(range(200)) * 2
    packed = propack(data)
    with pytest.raises(RncError, match=r"f.bin: no ProPack method 1 header \(RNC\\x01\) at offset 4"):
        rnc_propack.unpack(b"\0" * 30, "f.bin", offset=4)
    with pytest.raises(RncError, match=r"f.bin: \d+ packed bytes at offset 18 run past the end"):
        rnc_propack.unpack(packed[:-5], "f.bin")
    corrupt = bytearray(packed)
    corrupt[30] ^= 0xFF
    with pytest.raises(RncError, match="f.bin: packed data at offset 18 fails its CRC"):
        rnc_propack.unpack(bytes(corrupt), "f.bin")
    # A match reaching before the output's start (the packed CRC is right: the packer wrote it).
    bad = propack(b"ab", chunks=[(b"ab", (5, 2)), (b"", None)])
    with pytest.raises(RncError, match=r"f.bin: a match at offset \d+ reaches 5 bytes back, before the start"):
        rnc_propack.unpack(bad, "f.bin")
    # Chunks that promise more than the packed data holds.
    short = propack(b"abc", chunks=[(b"abc", None)])
    claimed = bytearray(short)
    claimed[24 + 4 + 1:] = b""  # cut inside the literal run (header 18, flags and tables 6 bytes)
    claimed[8:12] = (len(claimed) - 18).to_bytes(4, "big")
    claimed[14:16] = rnc_propack.crc16(claimed[18:]).to_bytes(2, "big")
    with pytest.raises(RncError, match=r"f.bin: (literal run of 3 bytes at offset \d+ runs past|packed data ends)"):
        rnc_propack.unpack(bytes(claimed), "f.bin")
    # The unpacked length or CRC the header promises.
    wrong = bytearray(packed)
    wrong[12:14] = b"\0\0"
    with pytest.raises(RncError, match="f.bin: the stream at offset 0 unpacks to 400 bytes failing"):
        rnc_propack.unpack(bytes(wrong), "f.bin")


def test_last_word_may_lack_its_high_byte(propack):
    """The game's packer leaves out the last byte when the stream's last word needs only its low byte."""
    expected = b"abcabc"
    packed = bytearray(propack(expected, chunks=[(b"abc", (3, 3)), (b"", None)]))
    assert packed[-1] == 0  # the last word: the 4-bit code of the final, empty literal run
    del packed[-1]
    packed[8:12] = (len(packed) - 18).to_bytes(4, "big")
    packed[14:16] = rnc_propack.crc16(packed[18:]).to_bytes(2, "big")
    assert rnc_propack.unpack(bytes(packed)) == expected
