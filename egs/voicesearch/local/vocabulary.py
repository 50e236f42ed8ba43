"""The corpus vocabulary and the offline word lists that fill the query templates.

Vocabulary: the N most frequent English words by wordfreq that CMUdict can
pronounce (asrkit.dictionary.frequent_words).  Word lists
(first and last names, US states, countries from Faker's en_US data; nouns,
verbs and adjectives from WordNet; WordNet's example sentences) are filtered to
that vocabulary, so that every generated word can be pronounced and modelled.
"""

import os
import re

WORDNET_DIR = "/usr/share/wordnet"  # Debian's wordnet-base
WORDNET_PARTS_OF_SPEECH = {"noun": "noun", "verb": "verb", "adj": "adjective", "adv": "adverb"}
_LETTERS_ONLY = re.compile(r"^[a-z]+$")


def in_vocabulary(phrase, vocabulary):
    """The phrase upper-cased when every word of it is in the vocabulary, else None."""
    words = phrase.upper().replace("-", " ").split()
    if words and all(word in vocabulary for word in words):
        return " ".join(words)
    return None


def _filtered(phrases, vocabulary):
    kept = []
    for phrase in phrases:
        normalized = in_vocabulary(phrase, vocabulary)
        if normalized is not None and normalized not in kept:
            kept.append(normalized)
    return kept


def faker_word_lists(vocabulary):
    """First names, last names, US states and countries from Faker's en_US data, in the vocabulary."""
    from faker.providers.address.en_US import Provider as AddressProvider
    from faker.providers.person.en_US import Provider as PersonProvider

    return {
        "first_name": _filtered(list(PersonProvider.first_names), vocabulary),
        "last_name": _filtered(list(PersonProvider.last_names), vocabulary),
        "state": _filtered(list(AddressProvider.states), vocabulary),
        "country": _filtered(list(AddressProvider.countries), vocabulary),
    }


def wordnet_parts_of_speech(vocabulary, wordnet_dir=WORDNET_DIR):
    """{"noun": [...], "verb": [...], "adjective": [...]}: each vocabulary word under its most used part of speech.

    `vocabulary` is a list in frequency order (not a set: the lists keep its
    order, and a set's order changes from one process to the next).

    WordNet's index files give, per lemma and part of speech, how many of its
    senses were seen in the tagged SemCor corpus; the part of speech with the
    most wins, so that FIND is a verb and TABLE a noun, and templates read well.
    """
    known = set(vocabulary)
    best = {}
    for suffix, part in WORDNET_PARTS_OF_SPEECH.items():
        with open(os.path.join(wordnet_dir, f"index.{suffix}"), encoding="latin-1") as handle:
            for line in handle:
                if line.startswith(" "):
                    continue  # the licence header
                fields = line.split()
                word = fields[0].upper()
                if word not in known:
                    continue
                pointer_count = int(fields[3])
                tagged_senses = int(fields[5 + pointer_count])
                if word not in best or tagged_senses > best[word][0]:
                    best[word] = (tagged_senses, part)
    lists = {part: [] for part in ("noun", "verb", "adjective")}
    for word in vocabulary:  # frequency order, so that lists start with common words
        if word in best and best[word][1] in lists and best[word][0] > 0:
            lists[best[word][1]].append(word)
    return lists


def wordnet_example_sentences(vocabulary, min_words=3, max_words=10, wordnet_dir=WORDNET_DIR):
    """WordNet's example sentences (the quoted parts of glosses) whose words are all in the vocabulary.

    Hyphens and slashes separate words; other punctuation is dropped; a
    sentence with digits, apostrophes or a word outside the vocabulary is left
    out rather than mended.
    """
    sentences, seen = [], set()
    for suffix in WORDNET_PARTS_OF_SPEECH:
        with open(os.path.join(wordnet_dir, f"data.{suffix}"), encoding="latin-1") as handle:
            for line in handle:
                if line.startswith(" ") or "|" not in line:
                    continue
                gloss = line.split("|", 1)[1]
                for quoted in re.findall(r'"([^"]+)"', gloss):
                    text = re.sub(r"[-/]", " ", quoted.lower())
                    text = re.sub(r"[,;:.!?()]", " ", text)
                    words = text.split()
                    if not min_words <= len(words) <= max_words:
                        continue
                    if not all(_LETTERS_ONLY.match(word) for word in words):
                        continue
                    sentence = in_vocabulary(" ".join(words), vocabulary)
                    if sentence is not None and sentence not in seen:
                        seen.add(sentence)
                        sentences.append(sentence)
    return sentences
