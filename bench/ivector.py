#!/usr/bin/env python3
"""Speed of online i-vector extraction at the recipe's size, against a plain frame-by-frame implementation.

Both compute the same i-vectors (checked): every --period frames the posterior
mean from the frames so far, Gaussian selection of the 5 best of the UBM per
frame, posteriors pruned below 0.025 and scaled by 0.1 (Kaldi's online
settings).  asrkit's (asrkit.ivector.online) takes an utterance's posteriors
in one product, each period's statistics by a cumulative sum and every
period's precision in one [periods, C] x [C, R*R] product and one batched
solve; the reference walks the frames one at a time, accumulating statistics
and solving at each period boundary, as a streaming decoder would.  The model
is random (speed does not depend on what it learnt).  One thread each.  Usage:

    .venv/bin/python bench/ivector.py [--gauss 512] [--dim 40] [--ivector-dim 100] [--frames 20000]
"""

import argparse
import os
import sys
import time

# One core each: thread pools are fixed before NumPy starts.
for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[variable] = "1"

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from asrkit.ivector.diag_gmm import DiagGmm  # noqa: E402
from asrkit.ivector.extractor import ExtractorConfig, IvectorExtractor  # noqa: E402
from asrkit.ivector.online import OnlineOptions, online_ivectors  # noqa: E402
from asrkit.ivector.stats import PosteriorOptions  # noqa: E402


def random_extractor(num_gauss, dim, ivector_dim, rng):
    ubm = DiagGmm(np.full(num_gauss, 1.0 / num_gauss), rng.normal(0, 1, (num_gauss, dim)),
                  rng.uniform(0.3, 1.0, (num_gauss, dim)))
    projections = rng.normal(0, 0.1, (num_gauss, dim, ivector_dim))
    config = ExtractorConfig(PosteriorOptions(num_gselect=5, min_post=0.025, posterior_scale=0.1))
    return IvectorExtractor(ubm, projections, config)


def plain_online(extractor, frames, period):
    """Frame by frame: diagonal log-likelihoods, the 5 best, pruning, statistics; a solve every period."""
    ubm, posterior = extractor.ubm, extractor.config.posterior
    rank = extractor.ivector_dim
    quadratic = np.einsum("cdr,cds->crs", extractor.projections, extractor.projections / ubm.variances[:, :, None])
    scaled = extractor.projections / ubm.variances[:, :, None]
    zeroth = np.zeros(ubm.num_gauss)
    first = np.zeros((ubm.num_gauss, ubm.dim))
    log_norm = np.log(ubm.weights) - 0.5 * (np.log(2 * np.pi * ubm.variances).sum(axis=1))
    ivectors = []
    for t, frame in enumerate(frames):
        scores = log_norm - 0.5 * (((frame - ubm.means) ** 2) / ubm.variances).sum(axis=1)
        best = np.argsort(-scores)[: posterior.num_gselect]
        post = np.exp(scores[best] - scores[best].max())
        post /= post.sum()
        post[1:][post[1:] < posterior.min_post] = 0.0
        post = post / post.sum() * posterior.posterior_scale
        for c, gamma in zip(best, post):
            zeroth[c] += gamma
            first[c] += gamma * (frame - ubm.means[c])
        if t % period == 0:
            precision = np.eye(rank) + np.tensordot(zeroth, quadratic, axes=1)
            linear = np.einsum("cd,cdr->r", first, scaled)
            ivectors.append(np.linalg.solve(precision, linear))
    return np.array(ivectors)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gauss", type=int, default=512)
    parser.add_argument("--dim", type=int, default=40)
    parser.add_argument("--ivector-dim", type=int, default=100)
    parser.add_argument("--period", type=int, default=10)
    parser.add_argument("--frames", type=int, default=20000, help="total, in utterances of 300-1200 frames")
    parser.add_argument("--repeats", type=int, default=3, help="interleaved timing rounds")
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    extractor = random_extractor(args.gauss, args.dim, args.ivector_dim, rng)
    utterances, total = [], 0
    while total < args.frames:
        length = int(rng.integers(300, 1200))
        utterances.append(rng.normal(0, 1.2, (length, args.dim)) + rng.normal(0, 0.5, args.dim))
        total += length
    options = OnlineOptions(ivector_period=args.period)
    fast = [online_ivectors(extractor, u, options)[0] for u in utterances[:2]]
    plain = [plain_online(extractor, u, args.period) for u in utterances[:2]]
    for a, b in zip(fast, plain):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-8)

    candidates = {
        "asrkit.ivector.online (vectorised per utterance)": lambda: [online_ivectors(extractor, u, options)
                                                                      for u in utterances],
        "plain frame-by-frame reference": lambda: [plain_online(extractor, u, args.period) for u in utterances],
    }
    rounds = {name: [] for name in candidates}
    for _ in range(args.repeats):
        for name, function in candidates.items():
            start = time.perf_counter()
            function()
            rounds[name].append(time.perf_counter() - start)
    reference = rounds["plain frame-by-frame reference"]
    print(f"{total} frames in {len(utterances)} utterances; {args.gauss} Gaussians, dim {args.dim}, i-vector dim "
          f"{args.ivector_dim}, period {args.period}; one thread; {args.repeats} interleaved rounds")
    print(f"{'':52s} {'median s':>9s} {'frames/s':>9s} {'x RT@10ms':>9s} {'x RT@30ms':>9s}  speed vs plain")
    for name, seconds in rounds.items():
        median = float(np.median(seconds))
        ratios = sorted(r / s for r, s in zip(reference, seconds))
        print(f"{name:52s} {median:9.3f} {total / median:9.0f} {total * 0.01 / median:9.0f} "
              f"{total * 0.03 / median:9.0f}  {float(np.median(ratios)):5.2f}x ({ratios[0]:.2f}-{ratios[-1]:.2f})")


if __name__ == "__main__":
    main()
