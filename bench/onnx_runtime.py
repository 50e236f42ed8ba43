"""A package's model.onnx and model.int8.onnx on onnxruntime against asrkit's NumPy core on the same utterances
(issue 60).

    .venv/bin/python bench/onnx_runtime.py --package P --data D [--utterances 100 (0: all)]

The package is copied to a scratch directory and its ONNX files written there (asrkit.recognizer.onnx_model).
For each of --data's first --utterances utterances, in one process on one thread (one BLAS thread, one
onnxruntime thread): the network's input once, then each runtime's log-likelihoods (timed, CPU seconds), each
decoded with the package's parameters.  Reported: the largest difference of fp32 ONNX's log-likelihoods from the
NumPy core's over the pdfs that had training frames (the target: 1e-4), the utterances whose words differ (the
target: none), each runtime's WER against the data dir's text (int8's against fp32's: the target is 2%
relative), the network's CPU seconds per audio second of each and the ratios, and the files' sizes.  And the
streaming graph of the package's (first) network, fed each utterance in 0.1-s pieces: its largest difference from
that network's whole-utterance graph (the target: the same rows).
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


RUNTIMES = ("numpy", "onnx", "onnx-int8")


def _log_likelihoods(model, inputs):
    """The runtime's log-likelihoods of the network's input (AcousticModel.log_likelihoods after the front end)."""
    if model.onnx is not None:
        return model.onnx.log_likelihoods(inputs)
    return model.network.log_posteriors(inputs) - model.log_priors


def _session(model):
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    source = model if isinstance(model, str) else model.SerializeToString()
    return onnxruntime.InferenceSession(source, options, providers=["CPUExecutionProvider"])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--package", required=True)
    parser.add_argument("--data", required=True)
    parser.add_argument("--utterances", type=int, default=100)
    args = parser.parse_args()

    from asrkit.inference.network import one_blas_thread
    from asrkit.recognizer.acoustic import AcousticModel
    from asrkit.inference.onnx_graph import INPUT_NAME, acoustic_graph
    from asrkit.recognizer.onnx_model import (INT8_FILE, ONNX_FILE, STREAM_FILE, OnnxStream, package_members,
                                              write_package_onnx)
    from asrkit.recognizer.package import load_package
    from asrkit.recognizer.recognizer import decode_loglikes
    from asrkit.scoring import read_kaldi_text, score_texts

    with tempfile.TemporaryDirectory() as scratch:
        package_dir = os.path.join(scratch, "package")
        shutil.copytree(args.package, package_dir)
        write_package_onnx(load_package(package_dir))
        package = load_package(package_dir)
        models = {runtime: AcousticModel(package, runtime) for runtime in RUNTIMES}
        first = package_members(package)[0][0]
        whole_first = _session(acoustic_graph([(first, 1.0, np.zeros(package.num_pdfs, np.float32))]))
        streaming = _session(os.path.join(package_dir, STREAM_FILE))
        piece = max(1, round(0.1 / package.frame_shift_s))
        stream_largest = 0.0
        seen = ~package.unseen if package.combined is None else ~(package.unseen | package.combined["unseen"])
        utterances = read_utterances(args.data, args.utterances or None)
        audio = load_audio(args.data, utterances, package.sample_rate)
        hyps = {runtime: {} for runtime in RUNTIMES}
        seconds = dict.fromkeys(RUNTIMES, 0.0)
        largest, differing, audio_seconds = 0.0, [], 0.0
        with one_blas_thread():
            for index, utterance in enumerate(utterances):
                inputs = models["numpy"].network_input(audio[utterance])
                rows = {}
                for runtime, model in models.items():
                    rows[runtime], spent = _timed(_log_likelihoods, model, inputs)
                    if index:  # the first pays the runtimes' start
                        seconds[runtime] += spent
                    hyps[runtime][utterance] = [package.words[word]
                                                for word in decode_loglikes(package, rows[runtime]).word_ids]
                if index:
                    audio_seconds += len(audio[utterance]) / package.sample_rate
                if len(inputs):
                    largest = max(largest, float(np.abs(rows["onnx"][:, seen] - rows["numpy"][:, seen]).max()))
                if hyps["numpy"][utterance] != hyps["onnx"][utterance]:
                    differing.append(utterance)
                stream = OnnxStream(streaming)
                pieces = [stream.accept(inputs[start:start + piece]) for start in range(0, len(inputs), piece)]
                streamed = np.concatenate(pieces + [stream.finish()])
                expected = whole_first.run(None, {INPUT_NAME: inputs})[0]
                if len(inputs):
                    stream_largest = max(stream_largest, float(np.abs(streamed - expected).max()))
        sizes = {name: os.path.getsize(os.path.join(package_dir, name)) for name in (ONNX_FILE, INT8_FILE)}
    refs = read_kaldi_text(os.path.join(args.data, "text"))
    print(f"{len(utterances)} utterances, {audio_seconds:.1f} s of audio after the first")
    print(f"largest log-likelihood difference (pdfs with training frames): {largest:.2e}")
    print(f"streaming graph in 0.1-s pieces against the whole-utterance graph: largest difference {stream_largest:.2e}")
    print(f"utterances whose words differ (NumPy, ONNX): {len(differing)} {' '.join(differing[:10])}")
    wers = {runtime: score_texts({utt: refs[utt] for utt in utterances}, hyps[runtime]).wer for runtime in RUNTIMES}
    for runtime in RUNTIMES:
        print(f"{runtime:<10} WER {wers[runtime]:6.2f}  network CPU s / audio s {seconds[runtime] / audio_seconds:.4f}"
              f"  ({seconds[runtime] / seconds['numpy']:.3f}x NumPy's)")
    print(f"int8 WER / fp32 WER: {wers['onnx-int8'] / wers['onnx']:.4f}; int8 CPU / fp32 CPU: "
          f"{seconds['onnx-int8'] / seconds['onnx']:.3f}x")
    print(f"sizes: {ONNX_FILE} {sizes[ONNX_FILE] / 1e6:.2f} MB, {INT8_FILE} {sizes[INT8_FILE] / 1e6:.2f} MB "
          f"({sizes[INT8_FILE] / sizes[ONNX_FILE]:.3f}x)")


if __name__ == "__main__":
    main()
