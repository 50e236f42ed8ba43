"""What asrkit-lattice gets out of a decode dir's lattices, and how fast (issue #18).

    .venv/bin/python bench/lattice_words.py --graph EXP/M/graph_bigram --decode-dir EXP/M/decode_test_bigram \
        --old-lm DATA/local/lm/bigram.arpa --new-lm DATA/local/lm/test.arpa --text DATA/test/text \
        [--lm-weight W] [--work-dir DIR]

The decode dir holds lattices of the bigram graph (asrkit-decode --write-lattices).
Reported, each with its seconds and utterances/s on one core:
- the 1-best WER of the lattices as they are, and after rescoring them with the
  trigram (asrkit-lattice rescore), with the lattice expansion that took;
- the N-best oracle WER (the best of the first N sequences per utterance) at
  N = 1, 2, 5, 10, 50 of the rescored lattices;
- the word confidences of the rescored 1-best against the reference: mean
  confidence of correct and of wrong words, and the normalised cross entropy (NCE,
  NIST's measure: above 0 when they say more than the overall word accuracy does).
"""

import argparse
import math
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def read_text(path):
    from asrkit.scoring.kaldi_text import read_kaldi_text

    return {utt: list(words) for utt, words in read_kaldi_text(path).items()}


def _errors(counts):
    return counts.substitutions + counts.deletions + counts.insertions


def wer(refs, hyps):
    from asrkit.scoring.alignment import count_edits

    errors = sum(_errors(count_edits(refs[utt], hyps.get(utt, []))) for utt in refs)
    return 100.0 * errors / sum(len(words) for words in refs.values())


def nbest_oracle(refs, nbest_path, limits):
    from asrkit.scoring.alignment import count_edits

    entries = {}
    for utt_rank, words in read_text(nbest_path).items():
        utt, rank = utt_rank.rsplit("-", 1)
        entries.setdefault(utt, []).append((int(rank), words))
    total = sum(len(words) for words in refs.values())
    result = {}
    for limit in limits:
        errors = 0
        for utt, ref in refs.items():
            candidates = [words for rank, words in sorted(entries.get(utt, [])) if rank <= limit] or [[]]
            errors += min(_errors(count_edits(ref, words)) for words in candidates)
        result[limit] = 100.0 * errors / total
    return result


def confidence_quality(refs, confidence_path):
    """(mean confidence of correct words, of wrong words, NCE, words) of the 1-best's words."""
    from asrkit.scoring.alignment import align_words

    correct, wrong = [], []
    with open(confidence_path, encoding="utf-8") as handle:
        for line in handle:
            fields = line.split()
            utt, words, values = fields[0], fields[1::2], [float(value) for value in fields[2::2]]
            hyp_index = 0
            for pair in align_words(refs.get(utt, []), words):
                if pair.hyp is None:
                    continue  # a deletion: no hypothesis word to judge
                (correct if pair.hyp == pair.ref else wrong).append(values[hyp_index])
                hyp_index += 1
    count = len(correct) + len(wrong)
    share = len(correct) / count
    clip = lambda value: min(max(value, 1e-6), 1 - 1e-6)  # noqa: E731
    baseline = -(len(correct) * math.log2(share) + len(wrong) * math.log2(1 - share)) if 0 < share < 1 else 0.0
    model = -(sum(math.log2(clip(v)) for v in correct) + sum(math.log2(1 - clip(v)) for v in wrong))
    nce = (baseline - model) / baseline if baseline else float("nan")
    mean = lambda values: sum(values) / len(values) if values else float("nan")  # noqa: E731
    return mean(correct), mean(wrong), nce, count


def main():
    from asrkit.decode.lattice_dir import write_confidences, write_nbest, write_rescored

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--graph", required=True)
    parser.add_argument("--decode-dir", required=True)
    parser.add_argument("--old-lm", required=True)
    parser.add_argument("--new-lm", required=True)
    parser.add_argument("--text", required=True)
    parser.add_argument("--lm-weight", type=float, default=None)
    parser.add_argument("--work-dir", default=None)
    args = parser.parse_args()
    work = args.work_dir or tempfile.mkdtemp(prefix="lattice_words.")
    words_txt = os.path.join(args.graph, "words.txt")
    refs = read_text(args.text)

    def timed(label, function, *function_args):
        start = time.process_time()
        result = function(*function_args)
        seconds = time.process_time() - start
        print(f"{label}: {seconds:.1f} s CPU, {result.utterances / seconds:.1f} utterances/s")
        return result

    timed("1-best of the lattices", write_confidences, args.decode_dir, words_txt, os.path.join(work, "plain"),
          args.lm_weight)
    rescored = os.path.join(work, "rescored")
    timed("rescore", write_rescored, args.decode_dir, words_txt, args.old_lm, args.new_lm, rescored, args.lm_weight)
    timed("nbest (50)", write_nbest, rescored, words_txt, os.path.join(work, "nbest"), 50, args.lm_weight)
    timed("confidence", write_confidences, rescored, words_txt, os.path.join(work, "conf"), args.lm_weight)
    print(f"WER of the lattices' 1-best: {wer(refs, read_text(os.path.join(work, 'plain', 'hyp.txt'))):.2f}")
    print(f"WER after rescoring: {wer(refs, read_text(os.path.join(rescored, 'hyp.txt'))):.2f}")
    for limit, value in nbest_oracle(refs, os.path.join(work, "nbest", "nbest.txt"), (1, 2, 5, 10, 50)).items():
        print(f"N-best oracle WER, N = {limit}: {value:.2f}")
    correct, wrong, nce, count = confidence_quality(refs, os.path.join(work, "conf", "confidence.txt"))
    print(f"confidence: correct words {correct:.3f}, wrong words {wrong:.3f}, NCE {nce:.3f} over {count} words")
    print(f"outputs in {work}")


if __name__ == "__main__":
    main()
