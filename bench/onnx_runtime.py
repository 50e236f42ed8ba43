"""A package's model.onnx on onnxruntime against asrkit's NumPy core on the same utterances (issue 60).

    .venv/bin/python bench/onnx_runtime.py --package P --data D [--utterances 100]

The package is copied to a scratch directory and its model.onnx written there (asrkit.recognizer.onnx_model).
For each of --data's first --utterances utterances, in one process on one thread (one BLAS thread, one
onnxruntime thread): the network's input once, then both runtimes' log-likelihoods (timed, CPU seconds), both
decoded with the package's parameters.  Reported: the largest difference of the log-likelihoods over the pdfs
that had training frames (the target: 1e-4), the utterances whose words differ (the target: none), each
runtime's WER against the data dir's text, the network's CPU seconds per audio second of each and their ratio,
and the sizes of model.onnx and weights.npz.
"""

import argparse
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

from transcribe import load_audio, read_utterances  # noqa: E402  (bench/transcribe.py)


def _timed(function, *args):
    started = time.process_time()
    value = function(*args)
    return value, time.process_time() - started


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--package", required=True)
    parser.add_argument("--data", required=True)
    parser.add_argument("--utterances", type=int, default=100)
    args = parser.parse_args()

    from asrkit.inference.network import one_blas_thread
    from asrkit.recognizer.acoustic import AcousticModel
    from asrkit.recognizer.onnx_model import ONNX_FILE, write_package_onnx
    from asrkit.recognizer.package import load_package
    from asrkit.recognizer.recognizer import decode_loglikes
    from asrkit.scoring import read_kaldi_text, score_texts

    with tempfile.TemporaryDirectory() as scratch:
        package_dir = os.path.join(scratch, "package")
        shutil.copytree(args.package, package_dir)
        write_package_onnx(load_package(package_dir))
        package = load_package(package_dir)
        numpy_model, onnx_model = AcousticModel(package), AcousticModel(package, "onnx")
        seen = ~package.unseen if package.combined is None else ~(package.unseen | package.combined["unseen"])
        utterances = read_utterances(args.data, args.utterances)
        audio = load_audio(args.data, utterances, package.sample_rate)
        hyps = {"numpy": {}, "onnx": {}}
        seconds = {"numpy": 0.0, "onnx": 0.0}
        largest, differing, audio_seconds = 0.0, [], 0.0
        with one_blas_thread():
            for index, utterance in enumerate(utterances):
                inputs = numpy_model.network_input(audio[utterance])
                expected, numpy_seconds = _timed(lambda x: numpy_model.network.log_posteriors(x)
                                                 - numpy_model.log_priors, inputs)
                rows, onnx_seconds = _timed(onnx_model.onnx.log_likelihoods, inputs)
                if index:  # the first pays the runtimes' start
                    seconds["numpy"] += numpy_seconds
                    seconds["onnx"] += onnx_seconds
                    audio_seconds += len(audio[utterance]) / package.sample_rate
                if len(rows):
                    largest = max(largest, float(np.abs(rows[:, seen] - expected[:, seen]).max()))
                for runtime, loglikes in (("numpy", expected), ("onnx", rows)):
                    decoded = decode_loglikes(package, loglikes)
                    hyps[runtime][utterance] = [package.words[word] for word in decoded.word_ids]
                if hyps["numpy"][utterance] != hyps["onnx"][utterance]:
                    differing.append(utterance)
        sizes = {name: os.path.getsize(os.path.join(package_dir, name)) for name in (ONNX_FILE, "weights.npz")}
    refs = read_kaldi_text(os.path.join(args.data, "text"))
    print(f"{len(utterances)} utterances, {audio_seconds:.1f} s of audio after the first")
    print(f"largest log-likelihood difference (pdfs with training frames): {largest:.2e}")
    print(f"utterances whose words differ: {len(differing)} {' '.join(differing[:10])}")
    for runtime in ("numpy", "onnx"):
        wer = score_texts({utt: refs[utt] for utt in utterances}, hyps[runtime]).wer
        print(f"{runtime:<6} WER {wer:6.2f}  network CPU s / audio s {seconds[runtime] / audio_seconds:.4f}")
    print(f"onnx / numpy network CPU: {seconds['onnx'] / seconds['numpy']:.3f}x")
    print(f"sizes: {ONNX_FILE} {sizes[ONNX_FILE] / 1e6:.2f} MB, weights.npz {sizes['weights.npz'] / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
