"""Synthetic alignment tasks for tests and benchmarks: a lang dir with pronunciation variants, data dirs
without audio, planted alignments with oracle-like log-likelihoods, and features with a planted context effect.
"""

import os

import numpy as np

from asrkit.graph.prepare_lang import LangOptions, prepare_lang
from asrkit.io.table import ShardWriter, write_scp

# TOMATO has two pronunciations, so an aligner must choose; no word is a prefix of another.
LEXICON = [
    ("TOMATO", "T AH M EY T OW"), ("TOMATO", "T AH M AA T OW"), ("SAUCE", "S AO S"), ("HOT", "HH AA T"),
    ("SOUP", "S UW P"), ("TO", "T UW"), ("GO", "G OW"), ("NO", "N OW"), ("MAMA", "M AA M AH"),
    ("NAP", "N AE P"), ("TAP", "T AE P"), ("SAND", "S AE N D"), ("MAP", "M AE P"), ("GAP", "G AE P"),
]


def write_dict_dir(path, lexicon=LEXICON):
    """A Kaldi dict dir (silence phones SIL, SPN; <UNK> SPN) from (word, "phones") pairs."""
    os.makedirs(path, exist_ok=True)
    phones = sorted({phone for _, pron in lexicon for phone in pron.split()})
    files = {
        "silence_phones.txt": "SIL\nSPN\n", "optional_silence.txt": "SIL\n",
        "nonsilence_phones.txt": "".join(f"{phone}\n" for phone in phones),
        "lexicon.txt": "<UNK> SPN\n" + "".join(f"{word} {pron}\n" for word, pron in lexicon),
    }
    for name, text in files.items():
        with open(os.path.join(path, name), "w", encoding="utf-8") as out:
            out.write(text)
    return path


def make_lang_dir(directory, sil_prob=0.5, lexicon=LEXICON, **lang_options):
    dict_dir = write_dict_dir(os.path.join(directory, "dict"), lexicon)
    lang_dir = os.path.join(directory, "lang")
    prepare_lang(dict_dir, "<UNK>", lang_dir, LangOptions(sil_prob=sil_prob, **lang_options))
    return lang_dir


def write_data_dir(path, texts, num_frames):
    """A data dir without audio (wav.scp points at /dev/null) with text and utt2num_frames; ids `spk-n`."""
    os.makedirs(path, exist_ok=True)
    utterances = sorted(texts, key=lambda utt: utt.encode())
    speakers = {}
    for utt in utterances:
        speakers.setdefault(utt.split("-")[0], []).append(utt)
    files = {
        "wav.scp": [f"{u} /dev/null" for u in utterances], "text": [f"{u} {texts[u]}".rstrip() for u in utterances],
        "utt2spk": [f"{u} {u.split('-')[0]}" for u in utterances],
        "spk2utt": [f"{s} {' '.join(us)}" for s, us in sorted(speakers.items())],
        "utt2num_frames": [f"{u} {num_frames[u]}" for u in utterances],
    }
    for name, lines in files.items():
        with open(os.path.join(path, name), "w", encoding="utf-8") as out:
            out.writelines(line + "\n" for line in lines)
    return path


def planted_phones(words, lang, rng, sil_prob=0.5, variant=None):
    """A phone sequence a lang dir allows: optional silences, a random (or the `variant`-th) pronunciation."""
    phones = [lang.optional_silence] if rng.random() < sil_prob else []
    for word in words:
        prons = lang.pronunciations[word]
        choice = variant if variant is not None else rng.integers(len(prons))
        phones += list(prons[min(choice, len(prons) - 1)][1])
        if rng.random() < sil_prob:
            phones.append(lang.optional_silence)
    return phones


def planted_pdfs(phones, durations, tree):
    """Frame pdfs (and phone starts) of a phone sequence with durations, single-state topology."""
    padded = [0] + list(phones) + [0]
    windows = [padded[i:i + 3] for i in range(len(phones))]
    if tree.context_width == 1:
        windows = [[phone] for phone in phones]
    pdfs = np.repeat([tree.pdf(window, 0) for window in windows], durations).astype(np.int32)
    starts = np.concatenate([[0], np.cumsum(durations)[:-1]]).astype(np.int32)
    return pdfs, starts


def oracle_loglikes(pdfs, num_pdfs, rng, correct=0.0, wrong=-8.0, noise=1.0):
    loglikes = np.full((len(pdfs), num_pdfs), wrong, np.float32)
    if noise:
        loglikes += rng.normal(0.0, noise, size=loglikes.shape).astype(np.float32)
    loglikes[np.arange(len(pdfs)), pdfs] = correct
    return loglikes


def write_table(directory, name, arrays):
    """A one-shard table {utt: array}; returns the scp path."""
    shard = os.path.join(directory, f"{name}.1.h5")
    with ShardWriter(shard) as writer:
        for key in sorted(arrays, key=lambda k: k.encode()):
            writer.write(key, arrays[key])
    scp = os.path.join(directory, f"{name}.scp")
    write_scp(scp, [shard])
    return scp


def context_features(phone_frames, phone_starts, phone_names, rng, dim=8, effect_phone="AA", effect_left=("M", "N"),
                     effect=3.0):
    """Features [T, dim]: each phone its own mean, except that `effect_phone` after a phone in `effect_left`
    is shifted by `effect` in every dimension: the planted context effect a tree must find."""
    ids = {name: phone for name, phone in phone_names.items()}
    means = {phone: np.random.default_rng(phone).normal(0.0, 2.0, dim) for phone in ids.values()}
    features = rng.normal(0.0, 1.0, (len(phone_frames), dim))
    bounds = list(phone_starts) + [len(phone_frames)]
    previous = 0
    for start, end in zip(bounds[:-1], bounds[1:]):
        phone = int(phone_frames[start])
        shift = effect if (phone == ids[effect_phone] and previous in {ids[p] for p in effect_left}) else 0.0
        features[start:end] += means[phone] + shift
        previous = phone
    return features.astype(np.float32)
