"""Log-mel (or power-law mel) features with frame stacking, in TensorFlow graph ops.

This one implementation serves asrkit-featurize (batches of utterances written
to tables) and the example servers (one utterance at a time, on the fly).  The
whole computation, from samples to stacked frames, is one tf.function over a
padded batch, so utterances of a batch share the FFT and GEMM kernels.
"""

import numpy as np

from asrkit.frontend.config import FeatureConfig
from asrkit.frontend.filterbank import analysis_window, mel_filterbank
from asrkit.tf_runtime import import_tensorflow


class FeatureExtractor:
    """Turns waveforms (float32 in [-1, 1), at config.sample_rate) into [frames, feature_dim] arrays."""

    def __init__(self, config=None, num_threads=None):
        self.config = config or FeatureConfig()
        tf = import_tensorflow(num_threads)
        self._tf = tf
        c = self.config
        self._window = tf.constant(analysis_window(c.window_type, c.window_length), tf.float32)
        self._mel_matrix = tf.constant(
            mel_filterbank(c.num_mel_bins, c.fft_length, c.sample_rate, c.low_freq, c.high_freq), tf.float32
        )
        self._batch_function = tf.function(
            self._compute,
            input_signature=[
                tf.TensorSpec([None, None], tf.float32, name="waveforms"),
                tf.TensorSpec([None], tf.int32, name="num_samples"),
            ],
            autograph=False,
        )

    def _compute(self, waveforms, num_samples):
        tf = self._tf
        c = self.config
        frames = tf.signal.frame(waveforms * c.sample_scale, c.window_length, c.window_shift, pad_end=False)
        if c.remove_dc_offset:
            frames -= tf.reduce_mean(frames, axis=-1, keepdims=True)
        if c.preemphasis:
            # Kaldi pre-emphasises inside each frame; the first sample is scaled by (1 - coeff).
            frames = tf.concat(
                [frames[..., :1] * (1.0 - c.preemphasis), frames[..., 1:] - c.preemphasis * frames[..., :-1]],
                axis=-1,
            )
        frames *= self._window
        spectrum = tf.signal.rfft(frames, fft_length=[c.fft_length])
        power = tf.math.square(tf.math.real(spectrum)) + tf.math.square(tf.math.imag(spectrum))
        batch_size = tf.shape(power)[0]
        num_frames_max = tf.shape(power)[1]
        # One GEMM for all frames of the batch.
        mel = tf.matmul(tf.reshape(power, [-1, c.fft_length // 2 + 1]), self._mel_matrix)
        if c.compression == "log":
            compressed = tf.math.log(tf.maximum(mel, c.log_floor))
        else:
            root = 15.0 if c.compression == "root15" else 10.0
            compressed = tf.pow(mel, 1.0 / root)
        compressed = tf.reshape(compressed, [batch_size, num_frames_max, c.num_mel_bins])

        num_frames = tf.maximum(0, 1 + (num_samples - c.window_length) // c.window_shift)
        num_frames = tf.where(num_samples >= c.window_length, num_frames, 0)
        num_output = (num_frames + c.subsample - 1) // c.subsample
        if c.stack_frames == 1 and c.subsample == 1:
            return compressed, num_output
        # Output frame j stacks analysis frames subsample*j .. subsample*j + stack - 1; past an
        # utterance's last frame the last frame is repeated (per utterance, not per batch).
        num_output_max = (num_frames_max + c.subsample - 1) // c.subsample
        offsets = c.subsample * tf.range(num_output_max)[:, None] + tf.range(c.stack_frames)[None, :]
        last = tf.maximum(num_frames - 1, 0)[:, None, None]
        indices = tf.minimum(offsets[None, :, :], last)
        stacked = tf.gather(compressed, indices, batch_dims=1)
        stacked = tf.reshape(stacked, [batch_size, num_output_max, c.stack_frames * c.num_mel_bins])
        return stacked, num_output

    def compute_batch(self, waveforms):
        """Features of each waveform in a list, as a list of float32 [frames, dim] arrays."""
        if not waveforms:
            return []
        lengths = np.array([len(w) for w in waveforms], dtype=np.int32)
        padded = np.zeros((len(waveforms), max(int(lengths.max()), 1)), dtype=np.float32)
        for row, waveform in enumerate(waveforms):
            padded[row, : len(waveform)] = waveform
        features, num_frames = self._batch_function(padded, lengths)
        features = features.numpy()
        return [features[row, :count] for row, count in enumerate(num_frames.numpy())]

    def __call__(self, waveform):
        """Features of one waveform: float32 [frames, feature_dim]."""
        return self.compute_batch([np.asarray(waveform, dtype=np.float32)])[0]
