"""python -m asrkit.recognizer.warm_up: compile the recognizer's numba functions once, ahead of the first use.

A first transcription on a fresh install otherwise compiles the decoder, the lattice code and the LSTM
kernel while the user waits (tens of seconds of CPU, minutes on a loaded machine).  bin/setup-env runs this
instead: it writes a small package (the toy task's graph, a random windowed BLSTM of the recipes' kind) in a
temporary directory and recognises with it the ways users do (whole files with n-best and word times, and
a stream with endpoints), which compiles every function those paths call, for the same argument types a
real package gives them, into asrkit's numba cache (asrkit.numba_cache).  A rerun finds them there.
"""

import json
import logging
import os
import sys
import tempfile
import time

import numpy as np

from asrkit.numba_cache import CACHE_DIR
from asrkit.recognizer.endpoint import EndpointConfig
from asrkit.recognizer.recognizer import Recognizer

logger = logging.getLogger("asrkit.warm_up")

# A small narrowband front end, as the voiceover recipe's (stacked and subsampled to 30-ms frames).
FEATURE_CONFIG = {"sample_rate": 8000, "fft_length": 256, "num_mel_bins": 16, "high_freq": 3800.0,
                  "compression": "root10", "stack_frames": 2, "subsample": 3, "allow_downsample": True}
NETWORK = ("wblstm", {"context": 2, "group": 2, "num_layers": 2, "num_cells": 8})


def _noise(seconds, seed):
    """Speech-band noise with pauses: something for the front end and the endpoints to act on."""
    rng = np.random.default_rng(seed)
    samples = rng.standard_normal(int(seconds * FEATURE_CONFIG["sample_rate"])).astype(np.float32) * 0.1
    envelope = (np.sin(np.linspace(0, 6 * np.pi, len(samples))) > -0.3).astype(np.float32)
    return samples * envelope


def write_toy_package(directory):
    """A package of build_toy_task's graph and a random NETWORK in directory/package; returns its path."""
    # deferred: TensorFlow (~6 s) and the graph tools, needed to write the package, never to recognise with it
    from asrkit.decode.synthetic import build_toy_task
    from asrkit.frontend.cmvn import CmvnStats
    from asrkit.nn.model_dir import write_model_dir
    from asrkit.nn.registry import build_model, model_config
    from asrkit.inference.frontend import features
    from asrkit.recognizer.package import write_package

    task = build_toy_task(os.path.join(directory, "task"))
    dim = FEATURE_CONFIG["num_mel_bins"] * FEATURE_CONFIG["stack_frames"]
    stats = CmvnStats(dim)
    for seed in range(3):
        stats.accumulate(features(FEATURE_CONFIG, _noise(1.0, seed)))
    model_dir = os.path.join(directory, "model")
    os.makedirs(model_dir)
    stats.write(os.path.join(model_dir, "cmvn.h5"))
    with open(os.path.join(model_dir, "featurize.json"), "w", encoding="utf-8") as out:
        json.dump(FEATURE_CONFIG, out)
    with open(os.path.join(task["graph"], "num_pdfs"), encoding="utf-8") as handle:
        num_pdfs = int(handle.read())
    name, overrides = NETWORK
    written = write_model_dir(os.path.join(model_dir, "final"), build_model(name, dim, num_pdfs, overrides),
                              model_config(name, overrides), np.arange(1, num_pdfs + 1),
                              os.path.join(model_dir, "featurize.json"), os.path.join(model_dir, "cmvn.h5"),
                              context_files=[os.path.join(task["model"], f) for f in ("tree.json", "phones.txt")])
    package = os.path.join(directory, "package")
    write_package(written, task["graph"], package, {"lm_weight": 2.0})
    return package


def recognise_every_way(package):
    """Whole recordings (n-best, word times) and a stream with endpoints, as users recognise."""

    recognizer = Recognizer(package)
    audio = _noise(3.0, 7)
    recognizer.transcribe(audio, nbest=2)
    recognizer.transcribe((audio * 32767).astype(np.int16))
    stream = recognizer.stream(endpoint=EndpointConfig.with_max_length(1.0))
    for start in range(0, len(audio), 800):
        stream.accept(audio[start : start + 800])
    stream.finish()


def main():
    # Its own lines and the compile announcement; not the graph tools' progress while the package is written.
    logging.basicConfig(level=logging.WARNING, format="%(message)s", stream=sys.stderr)
    for name in ("asrkit.warm_up", "asrkit.numba_cache"):
        logging.getLogger(name).setLevel(logging.INFO)
    started, cpu = time.monotonic(), time.process_time()
    logger.info("asrkit.warm_up: compiling the recognizer's numba functions into %s (once per install)", CACHE_DIR)
    with tempfile.TemporaryDirectory(prefix="asrkit-warm-up-") as directory:
        recognise_every_way(write_toy_package(directory))
    logger.info("asrkit.warm_up: done in %.0f s (%.0f s of CPU)", time.monotonic() - started,
                time.process_time() - cpu)


if __name__ == "__main__":
    main()
