"""The style config: named combinations of VTLP, reverberation and noise, with parameter ranges and weights.

A config is a JSON file:

    {
      "noise_lists": {"music": "musan_music/wav.scp"},       # optional; paths relative to the file
      "rir_lists": {"measured": "rirs/wav.scp"},             # optional
      "styles": [
        {"name": "clean", "weight": 1},
        {"name": "pink_reverb", "weight": 2,
         "vtlp": {"alpha": [0.8, 1.2]},
         "reverb": {"rt60": [0.2, 0.8], "room": [[3, 10], [3, 8], [2.4, 4]],
                    "distance": [0.5, 3.0], "absorption_formula": "eyring"},
         "noise": {"type": "pink", "snr_db": [0, 20]}}
      ]
    }

A range is a number (fixed) or [low, high] (uniform).  Each of speed, vtlp,
reverb and noise is optional in a style; they are applied in that order (speaker
variability before the room, the room before the noise).  "speed" is a range of
speed-perturbation factors (asrkit.augment.speed: 1.1 plays the utterance 10%
faster, shorter and higher, as sox speed does), e.g. "speed": [0.9, 1.1]; it is
the one step that changes an utterance's length.  reverb "type" is
"image" (generated per utterance, the default) or "list" with "list": a name
in rir_lists.  noise "type" is white, pink, brown, babble (with "talkers", a
range of integers, default [3, 7]) or "list" with "list": a name in
noise_lists.  "channel" is a list of transmission effects applied last, in
order (asrkit.augment.channel): {"type": "bandpass", "low_hz": [200, 400],
"high_hz": [3000, 3600]}, {"type": "mulaw"}, {"type": "alaw"}, {"type":
"quantize", "bits": [6, 8]}, {"type": "mp3", "compression_level": [0.5, 1]}.
Unknown keys are errors: a typo must not silently turn a style off.

Sampling is deterministic: the random generator of an utterance is seeded by a
hash of (seed, utterance id), so the same seed gives the same style and
parameters for an utterance whichever job, process or order it is seen in.
"""

import dataclasses
import hashlib
import json
import os

import numpy as np

from asrkit.augment.noise import NOISE_COLORS
from asrkit.augment.rir import ABSORPTION_FORMULAS
from asrkit.errors import AsrkitError

NOISE_TYPES = NOISE_COLORS + ("babble", "list")
STYLE_KEYS = {"name", "weight", "speed", "vtlp", "reverb", "noise", "channel"}
CHANNEL_KEYS = {"bandpass": {"type", "low_hz", "high_hz"}, "mulaw": {"type"}, "alaw": {"type"},
                "quantize": {"type", "bits"}, "mp3": {"type", "compression_level"}}
VTLP_KEYS = {"alpha", "window_seconds"}
REVERB_KEYS = {"type", "list", "rt60", "room", "distance", "absorption_formula", "early_seconds", "wall_margin"}
NOISE_KEYS = {"type", "list", "snr_db", "talkers"}
TOP_KEYS = {"styles", "noise_lists", "rir_lists", "description"}


class StyleConfigError(AsrkitError):
    """A style config that cannot be used; the message names the file and the place in it."""


@dataclasses.dataclass(frozen=True)
class Range:
    """A parameter range: uniform in [low, high]; low == high is a fixed value."""

    low: float
    high: float

    def sample(self, rng):
        return self.low if self.low == self.high else float(rng.uniform(self.low, self.high))

    def sample_int(self, rng):
        return int(rng.integers(int(self.low), int(self.high) + 1))

    def to_json(self):
        return self.low if self.low == self.high else [self.low, self.high]


@dataclasses.dataclass(frozen=True)
class VtlpStyle:
    alpha: Range
    window_seconds: float = 0.05


@dataclasses.dataclass(frozen=True)
class ReverbStyle:
    type: str = "image"
    list: str | None = None
    rt60: Range = Range(0.2, 0.8)
    room: tuple = (Range(3.0, 10.0), Range(3.0, 8.0), Range(2.4, 4.0))
    distance: Range = Range(0.5, 3.0)
    absorption_formula: str = "eyring"
    early_seconds: float = 0.05
    wall_margin: float = 0.3


@dataclasses.dataclass(frozen=True)
class NoiseStyle:
    type: str
    snr_db: Range
    list: str | None = None
    talkers: Range = Range(3, 7)


@dataclasses.dataclass(frozen=True)
class ChannelStyle:
    """One transmission effect; the ranges a type does not use stay None."""

    type: str
    low_hz: Range | None = None
    high_hz: Range | None = None
    bits: Range | None = None
    compression_level: Range | None = None


@dataclasses.dataclass(frozen=True)
class Style:
    name: str
    weight: float
    vtlp: VtlpStyle | None = None
    reverb: ReverbStyle | None = None
    noise: NoiseStyle | None = None
    channel: tuple = ()
    speed: Range | None = None


@dataclasses.dataclass
class StyleConfig:
    """The parsed config: styles, and noise and RIR lists (name -> wav.scp path, absolute)."""

    styles: list
    noise_lists: dict = dataclasses.field(default_factory=dict)
    rir_lists: dict = dataclasses.field(default_factory=dict)
    source: str = "<config>"
    raw: dict = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        weights = np.array([style.weight for style in self.styles], dtype=np.float64)
        self._probabilities = weights / weights.sum()

    def choose(self, rng):
        """A style drawn with probability proportional to its weight."""
        return self.styles[int(rng.choice(len(self.styles), p=self._probabilities))]

    def uses_babble(self):
        return any(style.noise is not None and style.noise.type == "babble" for style in self.styles)

    def to_json(self):
        """The config as JSON text (lists as given, resolved to absolute paths), for provenance files."""
        raw = dict(self.raw)
        raw["noise_lists"] = dict(self.noise_lists)
        raw["rir_lists"] = dict(self.rir_lists)
        return json.dumps(raw, indent=2, sort_keys=True)


def utterance_rng(seed, utterance_id):
    """The random generator of one utterance: a function of (seed, utterance id) only.

    Python's hash() is salted per process, so a cryptographic hash of both
    seeds NumPy's PCG64 instead.
    """
    digest = hashlib.blake2b(f"{int(seed)}\0{utterance_id}".encode("utf-8"), digest_size=16).digest()
    return np.random.Generator(np.random.PCG64(int.from_bytes(digest, "little")))


class _Parser:
    def __init__(self, source):
        self.source = source

    def fail(self, where, message):
        raise StyleConfigError(f"{self.source}: {where}: {message}")

    def check_keys(self, where, mapping, allowed):
        if not isinstance(mapping, dict):
            self.fail(where, f"must be an object ({{...}}), got {type(mapping).__name__}")
        unknown = sorted(set(mapping) - allowed)
        if unknown:
            self.fail(where, f"unknown key(s) {', '.join(map(repr, unknown))}; allowed: {', '.join(sorted(allowed))}")

    def number(self, where, value, minimum=None, maximum=None, exclusive_minimum=False):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value):
            self.fail(where, f"must be a number, got {value!r}")
        if minimum is not None and (value < minimum or (exclusive_minimum and value == minimum)):
            self.fail(where, f"must be {'>' if exclusive_minimum else '>='} {minimum:g}, got {value!r}")
        if maximum is not None and value > maximum:
            self.fail(where, f"must be <= {maximum:g}, got {value!r}")
        return float(value)

    def range(self, where, value, minimum=None, maximum=None, exclusive_minimum=False):
        if isinstance(value, list):
            if len(value) != 2:
                self.fail(where, f"a range is [low, high], got {len(value)} values")
            low = self.number(where, value[0], minimum, maximum, exclusive_minimum)
            high = self.number(where, value[1], minimum, maximum, exclusive_minimum)
            if low > high:
                self.fail(where, f"low {low:g} is greater than high {high:g}")
            return Range(low, high)
        number = self.number(where, value, minimum, maximum, exclusive_minimum)
        return Range(number, number)

    def choice(self, where, value, choices):
        if value not in choices:
            self.fail(where, f"must be one of {', '.join(choices)}, got {value!r}")
        return value

    def named_list(self, where, value, lists):
        if not isinstance(value, str) or value not in lists:
            known = ", ".join(sorted(lists)) or "none are defined"
            self.fail(where, f"names no list in the config ({known}), got {value!r}")
        return value


def parse_style_config(data, source="<config>", base_dir=None, extra_noise_lists=None, extra_rir_lists=None):
    """Check a config (already read from JSON) and build a StyleConfig; StyleConfigError names the problem.

    extra_noise_lists / extra_rir_lists: name -> path given on the command
    line; they add to or replace the config's lists.
    """
    parser = _Parser(source)
    parser.check_keys("top level", data, TOP_KEYS)
    base_dir = base_dir or os.getcwd()
    lists = {}
    for key, extra in (("noise_lists", extra_noise_lists), ("rir_lists", extra_rir_lists)):
        given = data.get(key, {})
        if not isinstance(given, dict):
            parser.fail(key, "must be an object mapping list names to wav.scp paths")
        resolved = {}
        for name, path in {**given, **(extra or {})}.items():
            if not isinstance(path, str) or not path:
                parser.fail(f"{key}.{name}", f"must be a path to a wav.scp, got {path!r}")
            resolved[name] = path if os.path.isabs(path) else os.path.normpath(os.path.join(base_dir, path))
        lists[key] = resolved
    raw_styles = data.get("styles")
    if not isinstance(raw_styles, list) or not raw_styles:
        parser.fail("styles", "must be a non-empty list of styles")
    styles, names = [], set()
    for index, raw in enumerate(raw_styles):
        where = f"styles[{index}]"
        if not isinstance(raw, dict):
            parser.fail(where, f"must be an object ({{...}}), got {type(raw).__name__}")
        name = raw.get("name")
        if not isinstance(name, str) or not name or any(char.isspace() for char in name):
            parser.fail(where, f"needs a \"name\" without spaces, got {name!r}")
        where = f"styles[{index}] ({name!r})"
        parser.check_keys(where, raw, STYLE_KEYS)
        if name in names:
            parser.fail(where, "duplicate style name")
        names.add(name)
        weight = parser.number(f"{where}.weight", raw.get("weight", 1.0), 0.0, exclusive_minimum=True)
        styles.append(Style(name, weight, _parse_vtlp(parser, where, raw.get("vtlp")),
                            _parse_reverb(parser, where, raw.get("reverb"), lists["rir_lists"]),
                            _parse_noise(parser, where, raw.get("noise"), lists["noise_lists"]),
                            _parse_channel(parser, where, raw.get("channel")),
                            parser.range(f"{where}.speed", raw["speed"], 0.5, 2.0) if "speed" in raw else None))
    return StyleConfig(styles, lists["noise_lists"], lists["rir_lists"], source, dict(data))


def _parse_vtlp(parser, where, raw):
    if raw is None:
        return None
    where += ".vtlp"
    parser.check_keys(where, raw, VTLP_KEYS)
    if "alpha" not in raw:
        parser.fail(where, "needs \"alpha\" (a warp factor or range, e.g. [0.8, 1.2])")
    alpha = parser.range(f"{where}.alpha", raw["alpha"], 0.5, 1.5)
    window = parser.number(f"{where}.window_seconds", raw.get("window_seconds", 0.05), 0.008, 0.2)
    return VtlpStyle(alpha, window)


def _parse_reverb(parser, where, raw, rir_lists):
    if raw is None:
        return None
    where += ".reverb"
    parser.check_keys(where, raw, REVERB_KEYS)
    kind = parser.choice(f"{where}.type", raw.get("type", "image"), ("image", "list"))
    if kind == "list":
        return ReverbStyle(type="list", list=parser.named_list(f"{where}.list", raw.get("list"), rir_lists))
    defaults = ReverbStyle()
    rt60 = parser.range(f"{where}.rt60", raw.get("rt60", defaults.rt60.to_json()), 0.05, 3.0)
    room_raw = raw.get("room", [r.to_json() for r in defaults.room])
    if not isinstance(room_raw, list) or len(room_raw) != 3:
        parser.fail(f"{where}.room", "must be three ranges [length, width, height] in metres")
    room = tuple(parser.range(f"{where}.room[{axis}]", value, 1.0, 100.0) for axis, value in enumerate(room_raw))
    distance = parser.range(f"{where}.distance", raw.get("distance", defaults.distance.to_json()), 0.1, 20.0)
    formula = parser.choice(f"{where}.absorption_formula", raw.get("absorption_formula", "eyring"),
                            ABSORPTION_FORMULAS)
    early = parser.number(f"{where}.early_seconds", raw.get("early_seconds", defaults.early_seconds), 0.0, 0.5)
    margin = parser.number(f"{where}.wall_margin", raw.get("wall_margin", defaults.wall_margin), 0.0, 2.0)
    return ReverbStyle("image", None, rt60, room, distance, formula, early, margin)


def _parse_noise(parser, where, raw, noise_lists):
    if raw is None:
        return None
    where += ".noise"
    parser.check_keys(where, raw, NOISE_KEYS)
    kind = parser.choice(f"{where}.type", raw.get("type"), NOISE_TYPES)
    if "snr_db" not in raw:
        parser.fail(where, "needs \"snr_db\" (an SNR or range in dB, e.g. [0, 20])")
    snr = parser.range(f"{where}.snr_db", raw["snr_db"], -20.0, 80.0)
    name = parser.named_list(f"{where}.list", raw.get("list"), noise_lists) if kind == "list" else None
    talkers = parser.range(f"{where}.talkers", raw.get("talkers", [3, 7]), 1, 50)
    return NoiseStyle(kind, snr, name, talkers)


def _parse_channel(parser, where, raw):
    if raw is None:
        return ()
    where += ".channel"
    if not isinstance(raw, list):
        parser.fail(where, "must be a list of effects, e.g. [{\"type\": \"bandpass\"}, {\"type\": \"mulaw\"}]")
    effects = []
    for index, effect in enumerate(raw):
        at = f"{where}[{index}]"
        if not isinstance(effect, dict):
            parser.fail(at, f"must be an object ({{...}}), got {type(effect).__name__}")
        kind = parser.choice(f"{at}.type", effect.get("type"), tuple(CHANNEL_KEYS))
        parser.check_keys(at, effect, CHANNEL_KEYS[kind])
        if kind == "bandpass":
            effects.append(ChannelStyle(kind, low_hz=parser.range(f"{at}.low_hz", effect.get("low_hz", [200, 400]), 20, 2000),
                                        high_hz=parser.range(f"{at}.high_hz", effect.get("high_hz", [3000, 3600]),
                                                             1000, 24000)))
        elif kind == "quantize":
            effects.append(ChannelStyle(kind, bits=parser.range(f"{at}.bits", effect.get("bits", 8), 2, 16)))
        elif kind == "mp3":
            effects.append(ChannelStyle(kind, compression_level=parser.range(
                f"{at}.compression_level", effect.get("compression_level", [0.5, 1.0]), 0.0, 1.0)))
        else:
            effects.append(ChannelStyle(kind))
    return tuple(effects)


def load_style_config(path, extra_noise_lists=None, extra_rir_lists=None):
    """Read and check a style config file (JSON); paths in it are relative to its directory."""
    path = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except FileNotFoundError:
        raise StyleConfigError(f"{path}: no such style config file") from None
    except json.JSONDecodeError as error:
        raise StyleConfigError(f"{path}:{error.lineno}:{error.colno}: not valid JSON: {error.msg}") from None
    return parse_style_config(data, path, os.path.dirname(os.path.abspath(path)), extra_noise_lists,
                              extra_rir_lists)


DEFAULT_STYLES = {
    "description": "A small default mix: clean, VTLP, simulated rooms and the built-in noises.",
    "styles": [
        {"name": "clean", "weight": 1},
        {"name": "vtlp", "weight": 1, "vtlp": {"alpha": [0.8, 1.2]}},
        {"name": "room", "weight": 1, "reverb": {"rt60": [0.2, 0.8]}},
        {"name": "white", "weight": 1, "noise": {"type": "white", "snr_db": [5, 25]}},
        {"name": "pink_room", "weight": 1, "reverb": {"rt60": [0.2, 0.6]}, "noise": {"type": "pink", "snr_db": [5, 20]}},
        {"name": "vtlp_room_brown", "weight": 1, "vtlp": {"alpha": [0.8, 1.2]}, "reverb": {"rt60": [0.2, 0.8]},
         "noise": {"type": "brown", "snr_db": [0, 20]}},
        {"name": "babble_room", "weight": 1, "reverb": {"rt60": [0.2, 0.6]},
         "noise": {"type": "babble", "snr_db": [5, 20]}},
    ],
}


def default_style_config(extra_noise_lists=None, extra_rir_lists=None):
    return parse_style_config(DEFAULT_STYLES, "<default styles>", None, extra_noise_lists, extra_rir_lists)
