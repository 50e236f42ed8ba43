"""egs/voiceover/local/steel_sky.py: Beneath a Steel Sky's disk directory, packed files, Huffman-coded
text sections and the speech file of each line, on disks built here byte by byte (conftest.py);
malformed disks fail naming the file and offset."""

import os
import struct
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LOCAL = os.path.join(ROOT, "egs", "voiceover", "local")
if LOCAL not in sys.path:
    sys.path.insert(0, LOCAL)

import steel_sky  # noqa: E402  (egs/voiceover/local)
from steel_sky import SkyFormatError  # noqa: E402


def test_huffman_table_is_a_complete_prefix_code():
    codes = steel_sky.read_huffman_table()
    assert len(codes) == 123 and 0 in codes.values()
    assert sum(2.0 ** -len(code) for code in codes) == 1.0  # Kraft: every bit string decodes
    assert not any(a != b and b.startswith(a) for a in codes for b in codes)
    assert {chr(value) for value in codes.values()} >= set("abcxyzABCXYZ0123456789 .,!?'-")


def test_text_sections_decode_line_by_line(sky_files):
    lines = [f"Line {number}: I'm SURE!".encode() for number in range(40)]  # two blocks of 32
    lines[5] = b"?"
    lines[33] = ("A long one, " * 30).encode()  # over 127 2-bit units: the long length form
    data, _ = sky_files.text(lines)
    assert steel_sky.section_lines(data, steel_sky.read_huffman_table(), "t") == [line.decode() for line in lines]


def test_lines_map_to_speech_files_and_files_unpack(sky_game, sky_files):
    section0 = [b"?", b"Hello.", b"Not spoken.", b"Bye!"]
    section2 = [b"?", b"What YOU want?"]
    pcm = bytes(range(100, 160)) * 50
    files = {60600: sky_files.text(section0), 60602: sky_files.text(section2),
             **{60600 + section: sky_files.text([b"?"]) for section in (1, 3, 4, 5, 6)},
             50001: sky_files.speech(pcm), 50003: sky_files.speech(b"\x80" * 11025, packed=False),
             51101: sky_files.speech(pcm[:77]),  # section 2 starts at 1100
             59000: (b"not speech", 0x400000),
             59001: (sky_files.header(0x80, 30) + b"not packed", 0)}  # flagged packed, no stream
    _, game = sky_game(files, sixteen_byte_units={50003})
    disk = steel_sky.Disk(game)
    assert [(line.speech_file, line.section, line.line, line.text) for line in steel_sky.spoken_lines(disk)] == [
        (50001, 0, 1, "Hello."), (50003, 0, 3, "Bye!"), (51101, 2, 1, "What YOU want?")]
    assert disk.speech(50001) == pcm and disk.speech(51101) == pcm[:77]
    assert disk.speech(50003) == b"\x80" * 11025 and disk.speech_seconds(50003) == 1.0
    assert disk.speech_seconds(50001) == len(pcm) / 11025  # from the header, not unpacked
    assert disk.read(50001)[:22] == files[50001][0][:22]  # the header stays
    assert disk.read(59001) == files[59001][0]  # taken as it is
    with pytest.raises(SkyFormatError, match=r"file 59000 \(entry at offset \d+\) is flagged headerless"):
        disk.speech(59000)
    with pytest.raises(SkyFormatError, match="sky.dnr: no file 50002"):
        disk.speech(50002)


def test_malformed_disks_name_file_and_offset(sky_game, sky_files, tmp_path):
    _, game = sky_game({50001: sky_files.speech(b"\x80" * 1000)})
    dnr = os.path.join(game, "sky.dnr")
    good = open(dnr, "rb").read()
    open(dnr, "wb").write(struct.pack("<I", 70000) + good[4:])
    with pytest.raises(SkyFormatError, match="sky.dnr: the count at offset 0 says 70000 entries, which run past"):
        steel_sky.Disk(game)
    open(dnr, "wb").write(b"\1\0")
    with pytest.raises(SkyFormatError, match="sky.dnr: 2 bytes, too short for the entry count at offset 0"):
        steel_sky.Disk(game)
    entry = bytearray(good)
    entry[6:9] = (0x7FFFFF).to_bytes(3, "little")  # an offset far past the disk
    open(dnr, "wb").write(bytes(entry))
    with pytest.raises(SkyFormatError, match=r"sky.dnr: entry 0 \(file 50001, at offset 4\) points at bytes "
                                             r"8388607\.\.\d+, past the disk's end"):
        steel_sky.Disk(game)
    open(dnr, "wb").write(good)
    dsk = os.path.join(game, "sky.dsk")
    packed = bytearray(open(dsk, "rb").read())
    packed[-3] ^= 0x55  # corrupt the packed stream: its CRC fails
    open(dsk, "wb").write(bytes(packed))
    with pytest.raises(SkyFormatError, match=r"sky.dsk \(file 50001 at offset 0; .*\): packed data at offset 40 "
                                             r"fails its CRC"):
        steel_sky.Disk(game).speech(50001)
    os.remove(dsk)
    with pytest.raises(SkyFormatError, match="sky.dsk is missing"):
        steel_sky.Disk(game)


def test_malformed_text_sections_name_file_and_offset(sky_files):
    codes = steel_sky.read_huffman_table()
    data, _ = sky_files.text([b"One.", b"Two."])
    with pytest.raises(SkyFormatError, match="t: 3 bytes, too short for a text header at offset 0"):
        steel_sky.section_lines(data[:3], codes, "t")
    with pytest.raises(SkyFormatError, match=r"t: header at offset 0 gives table offsets 4, 9000"):
        steel_sky.section_lines(struct.pack("<HH", 4, 9000) + data[4:], codes, "t")
    with pytest.raises(SkyFormatError, match=r"t: 40 lines at offset 4 but 1 blocks of 32"):
        steel_sky.section_lines(struct.pack("<HH", 4, 44) + b"\1" * 60, codes, "t")
    with pytest.raises(SkyFormatError, match=r"t line 1: line runs past the end of the file \(byte \d+\)"):
        steel_sky.section_lines(data[:-2], codes, "t")


def test_huffman_table_entries_are_checked(tmp_path):
    path = tmp_path / "table.tsv"
    path.write_text("# comment\n0 32\n1 300\n")
    with pytest.raises(SkyFormatError, match=r"table.tsv:3: bad entry '1 300'"):
        steel_sky.read_huffman_table(str(path))
