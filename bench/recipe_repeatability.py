"""Does a recipe repeat itself?  Two fresh runs of one recipe, the second beside a CPU-heavy job, compared to the
last error (issue #57: the same data, options and seed give the same WER whatever the machine's load).

    .venv/bin/python bench/recipe_repeatability.py --recipe voiceover --work DIR [--size tiny] [--hogs N] \
        [--compare-only] [--reference RESULTS] [-- run.sh options...]

Each run is a fresh clone of this checkout's HEAD (DIR/alone/src, DIR/loaded/src) running
egs/<recipe>/run.sh --size SIZE --data DIR/<run>/data --exp DIR/<run>/exp, its log in DIR/<run>/run.log.  The
first runs alone; the second beside --hogs busy processes at the recipe's own priority (default: one per core),
so that every example server, trainer and decoder is slowed and preempted at other moments than in the first.
Printed: every decode's best_wer of both runs side by side (the WER the recipe's RESULTS reads), whether each
model's final weights are the same to the bit (their checkpoint files' sha256), and each run's wall time.  Exit
status 1 when any WER differs or a decode is in one run only.  Start it on a quiet machine: the first run is the
reference the loaded one is held against.  --compare-only compares the two runs already in --work again.
--reference holds the loaded run against an earlier run's %WER lines instead (the first block of them in a
recipe's RESULTS file, as its results stage wrote them; e.g. a whole default run of another session), so only
the loaded run is made: each of the reference's decodes must have the same line, errors of each kind included;
decodes the reference does not list are printed and not counted, and each model's weights are held against the
digest the block's "# weights sha256" line gives it (blocks written before that line have none to compare).
"""

import argparse
import glob
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "steps"))

from asrkit.nn.model_dir import weights_digest  # noqa: E402
from make_results import WEIGHTS_LINE  # noqa: E402  (the line this reads back)


def parse_arguments(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--recipe", required=True, help="a directory of egs/ (voiceover, voicesearch, ...)")
    parser.add_argument("--work", required=True, help="where both runs go (made; must not hold them already)")
    parser.add_argument("--size", default="tiny", help="run.sh --size (default: tiny)")
    parser.add_argument("--hogs", type=int, default=os.cpu_count(),
                        help="busy processes beside the second run (default: one per core)")
    parser.add_argument("--compare-only", action="store_true",
                        help="compare the two runs already in --work instead of running them")
    parser.add_argument("--reference", help="a RESULTS file whose first block of %%WER lines stands for the run "
                                            "alone (only the loaded run is made)")
    parser.add_argument("run_options", nargs="*", help="after --: more options for run.sh")
    return parser.parse_args(argv)


def start_hogs(count):
    """`count` processes that spin on the CPU until killed."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]


def run_recipe(args, name, hogs):
    """Clones HEAD into <work>/<name>/src and runs the recipe there; returns its wall time in seconds."""
    run_dir = os.path.join(args.work, name)
    source = os.path.join(run_dir, "src")
    subprocess.run(["git", "clone", "-q", ROOT, source], check=True)
    command = [os.path.join(source, "egs", args.recipe, "run.sh"), "--size", args.size,
               "--data", os.path.join(run_dir, "data"), "--exp", os.path.join(run_dir, "exp"), *args.run_options]
    print(f"{name}: {' '.join(command)}" + (f" (beside {hogs} busy processes)" if hogs else ""), flush=True)
    spinning = start_hogs(hogs)
    started = time.monotonic()
    try:
        with open(os.path.join(run_dir, "run.log"), "w") as log:
            status = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT,
                                    cwd=os.path.join(source, "egs", args.recipe)).returncode
    finally:
        for process in spinning:
            process.kill()
            process.wait()
    seconds = time.monotonic() - started
    if status != 0:
        sys.exit(f"{name}: run.sh failed with status {status} after {seconds:.0f} s; see {run_dir}/run.log")
    return seconds


def best_wers(exp_dir):
    """{decode dir relative to exp: its best_wer line up to the counts' closing bracket} (the rest names the file
    it was read from, under each run's own exp dir)."""
    wers = {}
    for path in glob.glob(os.path.join(exp_dir, "**", "best_wer"), recursive=True):
        with open(path) as handle:
            line = handle.read().strip()
        wers[os.path.relpath(os.path.dirname(path), exp_dir)] = line.split("]", 1)[0] + "]"
    return wers


def reference_wers(results_file):
    """best_wers' {decode dir: line} of the first block of %WER lines in a RESULTS file: each line's path after the
    counts is <exp>/<model>/<decode dir>/..., <exp> as the run named it (EXP or exp)."""
    wers = {}
    with open(results_file) as handle:
        for line in handle:
            if not line.startswith("%WER"):
                if wers:
                    break
                continue
            counts, _, rest = line.partition("]")
            parts = rest.split()[0].split("/")[1:]
            decode = next(index for index, part in enumerate(parts) if part.startswith("decode"))
            wers.setdefault("/".join(parts[:decode + 1]), counts + "]")
    if not wers:
        sys.exit(f"{results_file}: no %WER lines")
    return wers


def weight_digests(exp_dir):
    """{model dir relative to exp: asrkit.nn.model_dir.weights_digest}: a model dir is one holding final/weights
    (asrkit's exported models)."""
    return {os.path.relpath(os.path.dirname(os.path.dirname(weights)), exp_dir):
            weights_digest(os.path.dirname(weights))
            for weights in glob.glob(os.path.join(exp_dir, "**", "final", "weights"), recursive=True)}


def reference_digests(results_file):
    """{model: the first hex digits of its weights digest} of the first "# weights sha256" line after the first
    block of %WER lines in a RESULTS file (steps/make_results.py writes one per run; older blocks have none: {})."""
    seen_wers = False
    with open(results_file) as handle:
        for line in handle:
            if line.startswith("%WER"):
                seen_wers = True
            elif seen_wers and line.startswith("# egs/"):
                break  # the next run's block
            elif seen_wers and line.startswith(WEIGHTS_LINE):
                return dict(entry.split() for entry in line.split("): ", 1)[1].strip().split("; "))
    return {}


def compare(alone, loaded, reference=None):
    """Prints both runs' WERs and weights side by side (the run alone's WERs from `reference`, a RESULTS file,
    where given); returns (decodes that differ, decodes compared)."""
    wers = [reference_wers(reference) if reference else best_wers(os.path.join(alone, "exp")),
            best_wers(os.path.join(loaded, "exp"))]
    compared = set(wers[0]) if reference else set(wers[0]) | set(wers[1])
    differing = 0
    print(f"{'decode':44s} {'same':5s} {'reference' if reference else 'alone'} | loaded")
    for decode in sorted(compared):
        first, second = (run.get(decode, "(none)") for run in wers)
        same = first == second
        differing += not same
        print(f"{decode:44s} {'yes' if same else 'NO':5s} {first}" + ("" if same else f" | {second}"))
    for decode in sorted(set(wers[1]) - compared):
        print(f"{decode:44s} {'-':5s} (not in the reference) | {wers[1][decode]}")
    loaded_digests = weight_digests(os.path.join(loaded, "exp"))
    if reference:
        # The reference names each model by the first digits of its digest: the loaded run's are cut to as many.
        first_digests = reference_digests(reference)
        loaded_digests = {model: digest[:len(first_digests[model])] for model, digest in loaded_digests.items()
                          if model in first_digests}
    else:
        first_digests = weight_digests(os.path.join(alone, "exp"))
    for model in sorted(set(first_digests) | set(loaded_digests)):
        same = first_digests.get(model) == loaded_digests.get(model)
        print(f"weights {model:36s} {'same to the bit' if same else 'differ'}")
    return differing, len(compared)


def main(argv=None):
    args = parse_arguments(sys.argv[1:] if argv is None else argv)
    print("recipe_repeatability:", " ".join(sys.argv), flush=True)
    timing = ""
    if not args.compare_only:
        if os.path.exists(os.path.join(args.work, "alone")) or os.path.exists(os.path.join(args.work, "loaded")):
            sys.exit(f"{args.work} already holds a run: give a new --work, or --compare-only")
        os.makedirs(args.work, exist_ok=True)
        if args.reference:
            timing = f" loaded={run_recipe(args, 'loaded', args.hogs):.0f}s hogs={args.hogs}"
        else:
            seconds = {"alone": run_recipe(args, "alone", 0), "loaded": run_recipe(args, "loaded", args.hogs)}
            timing = (f" alone={seconds['alone']:.0f}s loaded={seconds['loaded']:.0f}s hogs={args.hogs} "
                      f"ratio={seconds['loaded'] / seconds['alone']:.2f}x")
    differing, decodes = compare(os.path.join(args.work, "alone"), os.path.join(args.work, "loaded"), args.reference)
    size = "" if args.compare_only else f" size={args.size}"  # the runs' --size, where this invocation made them
    print(f"recipe_repeatability summary: recipe={args.recipe}{size} decodes={decodes} "
          f"differing={differing}{timing}")
    return 1 if differing or not decodes else 0


if __name__ == "__main__":
    sys.exit(main())
