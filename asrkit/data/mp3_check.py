"""What an MP3's own bytes say about its damage, which libsndfile (through libmpg123) does not report.

libmpg123 decodes past damage without an error: at a damaged frame header it skips to the next frame it
recognises (the audio comes out shorter), a damaged Xing/Info tag gives libsndfile a wrong length (it reads
that many samples and drops the rest, or reads a few samples fewer after a changed delay or padding field),
and damaged audio data decodes to a glitch of the same length.  `mp3_damage` checks what the file itself can
show:

- its frames: from the first MPEG audio frame, each frame's length (ISO/IEC 11172-3 and 13818-3: from its bit
  rate, sample rate and padding bit) must lead to the next frame header, up to the end of the file, a trailing
  tag (ID3v1, APE, Lyrics3) or zero padding; the frames keep their version, layer and sample rate, and the
  last one is whole.  The frames also give the stream's length, which libsndfile's must not fall short of;
- the LAME tag that LAME and FFmpeg write after the Info/Xing tag in the first frame: a CRC-16 of that
  frame's bytes before it (frame count, delay, padding) and, in LAME's, the length and CRC-16 of the audio
  frames after it.

Damage inside the audio data of a file without LAME's tag cannot be seen (other encoders write no checksum of
it, and a frame's optional CRC covers only its side information): such a file decodes with a glitch.  A file
changed after encoding (mp3gain rewrites the frames' gain) fails LAME's audio CRC like a damaged one.
"""

import dataclasses
import struct

# Bit rates in kbit/s by index 1..14 (0 is the free format, which gives no frame length, 15 is invalid).
BITRATES = {
    (1, 1): (32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448),
    (1, 2): (32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384),
    (1, 3): (32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320),
    (2, 1): (32, 48, 56, 64, 80, 96, 112, 128, 144, 160, 176, 192, 224, 256),
    (2, 2): (8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160),
}
SAMPLE_RATES = {1: (44100, 48000, 32000), 2: (22050, 24000, 16000), 25: (11025, 12000, 8000)}
VERSIONS = {3: 1, 2: 2, 0: 25}  # the header's two version bits -> MPEG-1, MPEG-2, MPEG-2.5 (1 is reserved)
TRAILING_TAGS = (b"TAG", b"APETAGEX", b"LYRICSBEGIN")
LAME_TAG_BYTES = 36
# How far libsndfile's length may fall short of the frames' (LAME's delay and padding, libsndfile's estimate
# for an untagged file): frames, and a share of the stream.
LENGTH_SLACK_FRAMES, LENGTH_SLACK_SHARE = 4, 0.01


@dataclasses.dataclass(frozen=True)
class Frame:
    version: int  # 1, 2 or 25 (MPEG-2.5)
    layer: int
    sample_rate: int
    length: int  # bytes, header included
    samples: int  # per channel
    mono: bool


def parse_header(data, offset):
    """The Frame whose header starts at `offset`, or None where there is no valid (fixed bit rate) header."""
    if offset + 4 > len(data) or data[offset] != 0xFF or data[offset + 1] & 0xE0 != 0xE0:
        return None
    version = VERSIONS.get(data[offset + 1] >> 3 & 3)
    layer = 4 - (data[offset + 1] >> 1 & 3)
    bitrate_index, rate_index = data[offset + 2] >> 4, data[offset + 2] >> 2 & 3
    if version is None or layer == 4 or not 0 < bitrate_index < 15 or rate_index == 3:
        return None
    bitrate = 1000 * BITRATES[(min(version, 2), layer if version == 1 or layer == 1 else 2)][bitrate_index - 1]
    sample_rate = SAMPLE_RATES[version][rate_index]
    padding = data[offset + 2] >> 1 & 1
    if layer == 1:
        length, samples = (12 * bitrate // sample_rate + padding) * 4, 384
    else:
        samples = 576 if layer == 3 and version != 1 else 1152
        length = samples // 8 * bitrate // sample_rate + padding
    return Frame(version, layer, sample_rate, length, samples, data[offset + 3] >> 6 == 3)


def crc16(data, crc=0):
    """CRC-16 (polynomial 0x8005, bits reflected, initial value 0), the checksum of LAME's tag."""
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0xA001 if crc & 1 else crc >> 1
    return crc


def _same_stream(frame, first):
    return frame is not None and (frame.version, frame.layer, frame.sample_rate) == (
        first.version, first.layer, first.sample_rate)


def _first_frame(data):
    """Offset of the first frame (after an ID3v2 tag) whose successor is where its length says, or None."""
    start = 0
    if data[:3] == b"ID3" and len(data) >= 10:
        start = 10 + (data[6] << 21 | data[7] << 14 | data[8] << 7 | data[9]) + (10 if data[5] & 0x10 else 0)
    offset = data.find(b"\xff", start)
    while 0 <= offset < len(data):
        frame = parse_header(data, offset)
        if frame is not None:
            following = offset + frame.length
            if following >= len(data) or _same_stream(parse_header(data, following), frame):
                return offset
        offset = data.find(b"\xff", offset + 1)
    return None


def _trailer(data, offset):
    """Whether the bytes from `offset` on are zero padding and trailing tags, not audio."""
    rest = data[offset:].lstrip(b"\x00")
    return not rest or rest.startswith(TRAILING_TAGS)


def _frames_damage(data, first):
    """(problem or None, number of frames) of the chain of frames from `first`."""
    head = parse_header(data, first)
    offset, count = first, 0
    while offset < len(data):
        frame = parse_header(data, offset)
        if not _same_stream(frame, head):
            if _trailer(data, offset):
                break
            return (f"no MPEG frame header at byte {offset}, where the frame before ends: a damaged frame (the "
                    "decoder would skip audio there)"), count
        if offset + frame.length > len(data):
            return (f"its last MPEG frame (at byte {offset}) is cut off after {len(data) - offset} of its "
                    f"{frame.length} bytes: the file is truncated"), count
        count += 1
        offset += frame.length
    return None, count


def _lame_tag(data, first, frame):
    """Offset of the LAME tag in the first frame (after its Info or Xing tag), or None where it has none."""
    side_info = (17 if frame.mono else 32) if frame.version == 1 else (9 if frame.mono else 17)
    xing = first + 4 + side_info
    if frame.layer != 3 or data[xing:xing + 4] not in (b"Xing", b"Info"):
        return None
    flags = struct.unpack(">I", data[xing + 4:xing + 8])[0]
    lame = xing + 8 + 4 * (flags & 1) + 4 * (flags >> 1 & 1) + 100 * (flags >> 2 & 1) + 4 * (flags >> 3 & 1)
    encoder = data[lame:lame + 9]
    if lame + LAME_TAG_BYTES > first + frame.length or len(encoder) < 9 or not all(32 <= c < 127 for c in encoder):
        return None
    return lame


def _lame_damage(data, first, frame):
    """What the LAME tag's checksums say (None where they hold or there is no tag)."""
    lame = _lame_tag(data, first, frame)
    if lame is None:
        return None
    if crc16(data[first:lame + 34]) != struct.unpack(">H", data[lame + 34:lame + 36])[0]:
        return ("the CRC of its LAME tag (which gives the length, delay and padding) does not match: the tag is "
                "damaged")
    if data[lame:lame + 4] != b"LAME":
        return None  # FFmpeg's tag: its audio length and CRC are not LAME's
    music_length, music_crc = struct.unpack(">IH", data[lame + 28:lame + 34])
    if not music_length:
        return None
    if first + music_length > len(data):
        return (f"it is {first + music_length - len(data)} bytes shorter than its LAME tag records: the file is "
                "truncated")
    if crc16(data[first + frame.length:first + music_length]) != music_crc:
        return ("its audio frames do not match the CRC its LAME tag records: the audio is damaged (or was "
                "changed after encoding, e.g. by mp3gain)")
    return None


def mp3_damage(data, declared_samples):
    """Why the MP3 bytes `data` are damaged or truncated, or None where nothing shows it (see the module
    docstring).  declared_samples: the length libsndfile reads from its header (it reads no more)."""
    first = _first_frame(data)
    if first is None:
        return None  # no frames to follow: libsndfile decides what the file is
    frame = parse_header(data, first)
    problem, count = _frames_damage(data, first)
    problem = problem or _lame_damage(data, first, frame)
    if problem is None:
        stream = count * frame.samples
        if declared_samples < stream - LENGTH_SLACK_FRAMES * frame.samples - LENGTH_SLACK_SHARE * stream:
            problem = (f"its header gives {declared_samples} samples but its frames hold about {stream}: the "
                       "length in its header is damaged (the rest would be dropped)")
    return problem
