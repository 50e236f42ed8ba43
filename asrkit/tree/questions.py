"""Questions about a context phone: sets of phones, from phonetics and from the data.

Three sources, as Kaldi combines them (cluster-phones plus extra_questions.txt):
- the phonetic classes of the CMUdict (ARPAbet) phone set below, each kept
  with the phones the lang dir has;
- a top-down binary clustering of the non-silence phones by the means of
  their statistics (2-means, split until single phones); every cluster is a
  question, so single phones are questions too;
- the lang dir's phones/extra_questions.txt, plus "silence or utterance
  boundary" and "utterance boundary" (phone 0, written <eps>).
Sets that are empty or hold every context phone are dropped, duplicates kept once.
"""

import numpy as np

BOUNDARY = 0

VOWELS = "AA AE AH AO AW AY EH ER EY IH IY OW OY UH UW"
PHONETIC_CLASSES = {
    "vowel": VOWELS,
    "front_vowel": "AE EH EY IH IY",
    "central_vowel": "AH ER",
    "back_vowel": "AA AO OW UH UW",
    "high_vowel": "IH IY UH UW",
    "low_vowel": "AA AE AO AW AY",
    "rounded_vowel": "AO OW OY UH UW",
    "diphthong": "AW AY EY OW OY",
    "rhotic": "ER R",
    "consonant": "B CH D DH F G HH JH K L M N NG P R S SH T TH V W Y Z ZH",
    "stop": "B D G K P T",
    "voiced_stop": "B D G",
    "voiceless_stop": "K P T",
    "affricate": "CH JH",
    "fricative": "DH F HH S SH TH V Z ZH",
    "voiced_fricative": "DH V Z ZH",
    "voiceless_fricative": "F HH S SH TH",
    "sibilant": "CH JH S SH Z ZH",
    "obstruent": "B CH D DH F G HH JH K P S SH T TH V Z ZH",
    "sonorant": VOWELS + " L M N NG R W Y",
    "nasal": "M N NG",
    "liquid": "L R",
    "glide": "W Y",
    "approximant": "L R W Y",
    "voiced": VOWELS + " B D DH G JH L M N NG R V W Y Z ZH",
    "voiceless": "CH F HH K P S SH T TH",
    "labial": "B F M P V W",
    "bilabial": "B M P",
    "labiodental": "F V",
    "dental": "DH TH",
    "alveolar": "D L N R S T Z",
    "postalveolar": "CH JH SH ZH",
    "coronal": "CH D DH JH L N R S SH T TH Z ZH",
    "velar": "G K NG",
    "glottal": "HH",
    "palatal": "Y",
}


def phonetic_questions(phone_names):
    """The CMUdict classes restricted to `phone_names` ({name: id}); (label, set of ids) pairs."""
    questions = []
    for label, members in PHONETIC_CLASSES.items():
        ids = frozenset(phone_names[name] for name in members.split() if name in phone_names)
        if ids:
            questions.append((label, ids))
    return questions


def _two_means(means, weights, iterations=20):
    """Split rows of `means` in two (boolean mask), weighted k-means started from the two farthest rows."""
    distances = ((means[:, None, :] - means[None, :, :]) ** 2).sum(-1)
    first, second = np.unravel_index(np.argmax(distances), distances.shape)
    centres = means[[first, second]]
    assignment = None
    for _ in range(iterations):
        new = ((means[:, None, :] - centres[None, :, :]) ** 2).sum(-1).argmin(axis=1) == 1
        if new.all() or not new.any():
            new = np.zeros(len(means), bool)
            new[second] = True
        if assignment is not None and (new == assignment).all():
            break
        assignment = new
        for side in (0, 1):
            chosen = assignment == bool(side)
            centres[side] = np.average(means[chosen], axis=0, weights=weights[chosen])
    return assignment


def clustered_questions(phone_ids, means, counts):
    """Every cluster of a top-down 2-means clustering of phones (by their feature means), singletons included."""
    questions = []

    def split(indices):
        questions.append(frozenset(phone_ids[i] for i in indices))
        if len(indices) < 2:
            return
        mask = _two_means(means[indices], np.maximum(counts[indices], 1e-9))
        split(indices[~mask])
        split(indices[mask])

    if len(phone_ids):
        split(np.arange(len(phone_ids)))
    return [(f"cluster_{number}", ids) for number, ids in enumerate(questions)]


def phone_means(stats, phone_ids):
    """(phones that have statistics, their mean feature vectors, their frame counts), pooled over contexts."""
    totals, counts = {}, {}
    for (left, center, right, pdf_class), count, total in zip(stats.contexts, stats.counts, stats.sums):
        if center in phone_ids:
            totals[center] = totals.get(center, 0.0) + total
            counts[center] = counts.get(center, 0.0) + count
    seen = [phone for phone in phone_ids if counts.get(phone, 0) > 0]
    means = np.array([totals[phone] / counts[phone] for phone in seen]).reshape(len(seen), stats.dim)
    return seen, means, np.array([counts[phone] for phone in seen])


def build_questions(stats, phone_names, nonsilence, silence, extra_sets=()):
    """(label, frozenset of phone ids) questions about a context position; the universe is every real
    phone and the boundary 0."""
    universe = frozenset(phone_names.values()) | {BOUNDARY}
    seen, means, counts = phone_means(stats, sorted(nonsilence))
    candidates = phonetic_questions(phone_names)
    candidates += clustered_questions(seen, means, counts)
    candidates += [(f"extra_{number}", frozenset(ids)) for number, ids in enumerate(extra_sets)]
    candidates += [("silence_or_boundary", frozenset(silence) | {BOUNDARY}), ("boundary", frozenset({BOUNDARY}))]
    questions, known = [], set()
    for label, ids in candidates:
        ids = frozenset(ids) & universe
        if not ids or ids == universe or ids in known:
            continue
        known.add(ids)
        questions.append((label, ids))
    return questions
