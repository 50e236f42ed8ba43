"""Feature configuration: every option declared once, with its default and what it means.

The defaults are the papers' front end (docs/design.md): 32 ms windows
every 10 ms, a 512-point FFT, 128 mel bands from 125 Hz, log compression, then
four frames stacked and every third kept, giving 480-dimensional frames every
30 ms.  Where an option also exists in Kaldi's fbank it has Kaldi's meaning and
Kaldi's default, so that kaldi-native-fbank with the same options is a reference.
"""

import dataclasses
import json

from asrkit.data.audio import AudioOptions

COMPRESSIONS = ("log", "root15", "root10")


def _option(default, help_text):
    return dataclasses.field(default=default, metadata={"help": help_text})


@dataclasses.dataclass(frozen=True)
class FeatureConfig:
    sample_rate: int = _option(16000, "Sampling rate of the audio in Hz; other rates are converted or refused when read.")
    allow_downsample: bool = _option(False, "Audio at a higher rate is resampled to sample_rate (polyphase FIR, Kaiser window) instead of refused (Kaldi).")
    allow_upsample: bool = _option(False, "Audio at a lower rate is resampled to sample_rate instead of refused (Kaldi); it has nothing above its own Nyquist frequency.")
    frame_length_ms: float = _option(32.0, "Analysis window length in milliseconds.")
    frame_shift_ms: float = _option(10.0, "Hop between analysis windows in milliseconds.")
    fft_length: int = _option(512, "FFT size; must be at least the window length in samples.")
    num_mel_bins: int = _option(128, "Number of triangular mel filters.")
    low_freq: float = _option(125.0, "Low edge of the first mel filter in Hz.")
    high_freq: float = _option(0.0, "High edge of the last mel filter in Hz; <= 0 means Nyquist plus this value (Kaldi).")
    window_type: str = _option("povey", "Analysis window, named as in Kaldi: povey (the default, Hann to the power 0.85), hanning (symmetric Hann), hamming.")
    preemphasis: float = _option(0.97, "Pre-emphasis coefficient applied within each frame (Kaldi's convention); 0 disables it.")
    remove_dc_offset: bool = _option(True, "Subtract each frame's mean before pre-emphasis (Kaldi).")
    compression: str = _option("log", "Mel energy compression: log (with floor), root15 = x^(1/15) (power-mel), root10 = x^(1/10).")
    log_floor: float = _option(1.1920929e-07, "Floor applied to mel energies before the log (Kaldi's FLT_EPSILON).")
    sample_scale: float = _option(32768.0, "Audio in [-1, 1) is multiplied by this before analysis; 32768 gives Kaldi's 16-bit integer scale.")
    stack_frames: int = _option(4, "Number of consecutive frames stacked into one output frame (lower frame rate).")
    subsample: int = _option(3, "Keep every n-th stacked frame: 3 with 10 ms frames gives 30 ms output frames.")

    def __post_init__(self):
        if self.compression not in COMPRESSIONS:
            raise ValueError(f"compression must be one of {', '.join(COMPRESSIONS)}, not {self.compression!r}")
        if self.window_type not in ("povey", "hanning", "hamming"):
            raise ValueError(f"window_type must be povey, hanning or hamming, not {self.window_type!r}")
        if self.fft_length < self.window_length:
            raise ValueError(
                f"fft_length {self.fft_length} is shorter than the window ({self.window_length} samples)"
            )
        if self.stack_frames < 1 or self.subsample < 1:
            raise ValueError("stack_frames and subsample must be >= 1")
        if self.num_mel_bins < 1 or self.low_freq < 0:
            raise ValueError("num_mel_bins must be >= 1 and low_freq >= 0")

    @property
    def window_length(self):
        """Window length in samples."""
        return int(round(self.sample_rate * self.frame_length_ms / 1000.0))

    @property
    def window_shift(self):
        """Hop in samples."""
        return int(round(self.sample_rate * self.frame_shift_ms / 1000.0))

    @property
    def feature_dim(self):
        """Dimension of the output frames (after stacking)."""
        return self.num_mel_bins * self.stack_frames

    @property
    def output_frame_shift_ms(self):
        return self.frame_shift_ms * self.subsample

    def num_analysis_frames(self, num_samples):
        """Frames before stacking; windows lie wholly inside the signal (Kaldi's snip_edges=true)."""
        if num_samples < self.window_length:
            return 0
        return 1 + (num_samples - self.window_length) // self.window_shift

    def num_output_frames(self, num_samples):
        """Frames after stacking and subsampling: ceil(analysis frames / subsample)."""
        frames = self.num_analysis_frames(num_samples)
        return -(-frames // self.subsample)

    @property
    def on_rate_mismatch(self):
        """What asrkit.data.audio does with audio at another rate: the feature config decides, so that
        every stage that reads audio for this front end (featurize, example servers, decoding) agrees."""
        if self.allow_downsample and self.allow_upsample:
            return "resample"
        if self.allow_downsample:
            return "downsample"
        return "upsample" if self.allow_upsample else "error"

    def audio_options(self):
        """asrkit.data.audio.AudioOptions for reading audio into this front end."""
        return AudioOptions(sample_rate=self.sample_rate, on_rate_mismatch=self.on_rate_mismatch)

    def to_dict(self):
        return dataclasses.asdict(self)

    def to_json(self):
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, values):
        known = {field.name for field in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"unknown feature options: {', '.join(unknown)}")
        return cls(**values)

    @classmethod
    def from_json(cls, text):
        return cls.from_dict(json.loads(text))

    @classmethod
    def describe(cls):
        """(name, default, help) for each option, for documentation and --help texts."""
        return [(f.name, f.default, f.metadata["help"]) for f in dataclasses.fields(cls)]
