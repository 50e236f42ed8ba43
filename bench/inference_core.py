"""The inference core (NumPy, asrkit.inference) against TensorFlow's AcousticModel on a recipe's model and data.

    .venv/bin/python bench/inference_core.py --model egs/voiceover/exp/wblstm_ce/final \
        --data egs/voiceover/data/dev [--utterances 100]

Both runtimes take the same normalised features (ModelLoglikes.network_input: the data dir's feats.scp or its
audio, with the model's CMVN) and give log-likelihoods; one process, one thread each (BLAS and TensorFlow's
pools), so the figures are per core.  Reported per runtime: the start (import and model load; TensorFlow's
import measured in this process, NumPy's numba kernels loaded from the cache), the first utterance (compiles and
traces), and the network's CPU seconds per audio second over the rest; then the largest difference of the two
runtimes' log-likelihoods over the pdfs that had training frames, and whether the best pdf of each frame agrees.
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402


def _timed(function, *args):
    started = time.process_time()
    value = function(*args)
    return value, time.process_time() - started


def _run(model, inputs):
    """(outputs, first utterance's CPU seconds, CPU seconds of the rest)."""
    outputs, first = [], 0.0
    rest = 0.0
    for index, features in enumerate(inputs):
        output, seconds = _timed(model.log_likelihoods_normalized, features)
        outputs.append(output)
        if index == 0:
            first = seconds
        else:
            rest += seconds
    return outputs, first, rest


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", required=True)
    parser.add_argument("--data", required=True)
    parser.add_argument("--utterances", type=int, default=100)
    args = parser.parse_args()

    started = time.process_time()
    from asrkit.decode.loglikes import ModelLoglikes
    from asrkit.inference.model_dir import load_inference_model

    numpy_model = load_inference_model(args.model)
    numpy_start = time.process_time() - started
    source = ModelLoglikes(args.model, args.data)
    utterances = source.utterance_ids()[:args.utterances]
    inputs = [source.network_input(utterance) for utterance in utterances]
    frame_seconds = source.model.feature_config.get("subsample", 3) * 0.01
    audio_seconds = sum(len(features) for features in inputs[1:]) * frame_seconds

    started = time.process_time()
    from asrkit.nn.model_dir import load_acoustic_model
    from asrkit.tf_runtime import import_tensorflow

    import_tensorflow(1)
    tf_model = load_acoustic_model(args.model)
    tf_start = time.process_time() - started

    numpy_out, numpy_first, numpy_rest = _run(numpy_model, inputs)
    tf_out, tf_first, tf_rest = _run(tf_model, inputs)
    seen = ~numpy_model.unseen
    difference = max(float(np.abs(a[:, seen] - b[:, seen]).max()) for a, b in zip(numpy_out, tf_out) if len(a))
    agree = np.mean(np.concatenate([a.argmax(axis=1) == b.argmax(axis=1) for a, b in zip(numpy_out, tf_out)]))
    print(f"{len(inputs)} utterances, {audio_seconds:.1f} s of audio after the first")
    print(f"{'runtime':<12}{'start s':>9}{'first utt s':>13}{'CPU s / audio s':>17}")
    print(f"{'NumPy':<12}{numpy_start:>9.2f}{numpy_first:>13.3f}{numpy_rest / audio_seconds:>17.4f}")
    print(f"{'TensorFlow':<12}{tf_start:>9.2f}{tf_first:>13.3f}{tf_rest / audio_seconds:>17.4f}")
    print(f"NumPy / TensorFlow: start {numpy_start / tf_start:.3f}x, network {numpy_rest / tf_rest:.3f}x")
    print(f"largest log-likelihood difference (pdfs with training frames): {difference:.2e}; "
          f"best pdf the same on {100 * agree:.2f}% of frames")


if __name__ == "__main__":
    main()
