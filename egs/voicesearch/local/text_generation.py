"""Voice-search style utterance texts: templates filled from word lists, and short natural sentences.

Every text is upper case, 2-10 words, letters only, and built from the word
lists it is given (filtered to the vocabulary by vocabulary.py), so that the
dictionary covers it.  Generation is driven by a random.Random the caller seeds.
"""

import random
import re

MIN_WORDS = 2
MAX_WORDS = 10
# Small closed word lists for slots that wordfreq and WordNet do not label.
DAYS = ["today", "tomorrow", "tonight", "this weekend", "next week", "on monday", "on tuesday",
        "on wednesday", "on thursday", "on friday", "on saturday", "on sunday", "this morning"]
NUMBERS = ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
           "twelve", "fifteen", "twenty", "thirty", "forty", "fifty"]
GENRES = ["rock", "jazz", "country", "classical", "pop", "dance", "blues", "soul", "folk", "gospel",
          "metal", "christmas", "holiday", "workout", "party"]
LANGUAGES = ["spanish", "french", "german", "italian", "chinese", "japanese", "russian", "english",
             "arabic", "portuguese", "korean", "greek"]
TIMES_OF_DAY = ["in the morning", "in the evening", "at night", "tomorrow morning", "this afternoon"]

# {slot} names: first_name last_name state country noun verb adjective day number genre
# language time_of_day; {a_noun} and {a_adjective_noun} put "a" or "an" before the phrase.
TEMPLATES = [
    "call {first_name}", "call {first_name} {last_name}", "text {first_name}",
    "send a message to {first_name} {last_name}", "email {first_name} about the {noun}",
    "what is the weather in {state}", "weather in {state} {day}", "will it rain in {state} {day}",
    "how hot is it in {state}", "what time is it in {country}",
    "directions to {state}", "directions to the nearest {noun}", "how far is {state} from {state}",
    "find {a_noun} near me", "find {adjective} {noun} near me", "where can i buy {a_noun}",
    "play {adjective} {noun} by {first_name} {last_name}", "play some {genre} music",
    "play the {noun} song", "play songs by {first_name} {last_name}",
    "what is {a_noun}", "what is the {noun} of {state}", "how to {verb} {a_noun}",
    "how do i {verb} the {noun}", "who is {first_name} {last_name}", "define {noun}",
    "how do you spell {adjective}", "what does {verb} mean", "set an alarm for {number} {time_of_day}",
    "set a timer for {number} minutes", "remind me to {verb} the {noun} {day}",
    "show me pictures of {a_adjective_noun}", "translate {noun} to {language}",
    "news about {country}", "flights to {country} {day}", "best {noun} in {state}",
    "how old is {first_name} {last_name}", "is it {adjective} in {state} {day}",
    "what is the capital of {country}", "how much is {a_noun} in {state}",
    "search for {adjective} {noun}", "open {noun} settings", "turn on the {noun}",
]
_SLOT = re.compile(r"\{(\w+)\}")
VOWEL_PHONES = {"AA", "AE", "AH", "AO", "AW", "AY", "EH", "ER", "EY", "IH", "IY", "OW", "OY", "UH", "UW"}


class TextGenerator:
    """Draws utterance texts: a share `sentence_fraction` of natural sentences, the rest template queries.

    word_lists: {slot: [phrase, ...]} for the slots in TEMPLATES (first_name,
    last_name, state, country, noun, verb, adjective), with the closed lists
    above as defaults; phrases with a word outside `vocabulary` are left out.  sentences: natural
    sentences (upper case).  lexicon: {WORD: [(phone, ...)]}, to choose "a" or
    "an" by the first sound, not the first letter (AN HOUR, A UNIT).
    """

    def __init__(self, word_lists, sentences, vocabulary, lexicon, sentence_fraction=0.25):
        self.lexicon = lexicon
        self.sentences = [s for s in sentences if MIN_WORDS <= len(s.split()) <= MAX_WORDS
                          and all(word in vocabulary for word in s.split())]
        self.sentence_fraction = sentence_fraction if self.sentences else 0.0
        closed = {"day": DAYS, "number": NUMBERS, "genre": GENRES, "language": LANGUAGES,
                  "time_of_day": TIMES_OF_DAY}
        # Every phrase is checked against the vocabulary here, whoever built the lists.
        self.word_lists = {}
        for slot, phrases in {**closed, **word_lists}.items():
            self.word_lists[slot] = [" ".join(p.upper().split()) for p in phrases
                                     if p.split() and all(word in vocabulary for word in p.upper().split())]
        self.word_lists["a_noun"] = self.word_lists.get("noun", [])
        # A template is used only when its own words are in the vocabulary and its slots can be filled.
        self.templates = [t for t in TEMPLATES
                          if all(word in vocabulary for word in _SLOT.sub(" ", t).upper().split())
                          and all(self._slot_list(s) for s in _SLOT.findall(t))]
        if not self.templates:
            raise ValueError("no template can be filled: the word lists are empty for every template")

    def _slot_list(self, slot):
        if slot == "a_adjective_noun":
            return self.word_lists.get("adjective") and self.word_lists.get("noun")
        return self.word_lists.get(slot)

    def article(self, word):
        prons = self.lexicon.get(word)
        starts_with_vowel = prons[0][0] in VOWEL_PHONES if prons else word[:1] in "AEIOU"
        return "AN" if starts_with_vowel else "A"

    def _fill(self, slot, rng):
        if slot == "a_noun":
            noun = rng.choice(self.word_lists["noun"])
            return f"{self.article(noun)} {noun}"
        if slot == "a_adjective_noun":
            adjective = rng.choice(self.word_lists["adjective"])
            return f"{self.article(adjective)} {adjective} {rng.choice(self.word_lists['noun'])}"
        return rng.choice(self.word_lists[slot])

    def query(self, rng):
        """One template query (retrying until it has 2-10 words)."""
        while True:
            template = rng.choice(self.templates)
            text = _SLOT.sub(lambda match: self._fill(match.group(1), rng), template).upper()
            if MIN_WORDS <= len(text.split()) <= MAX_WORDS:
                return " ".join(text.split())

    def generate(self, rng):
        if self.sentences and rng.random() < self.sentence_fraction:
            return rng.choice(self.sentences)
        return self.query(rng)


def make_generator(vocabulary, lexicon, sentence_fraction=0.25):
    """A TextGenerator over Faker's and WordNet's lists filtered to `vocabulary` (upper-case words, frequency order)."""
    import vocabulary as vocabulary_lists  # egs/voicesearch/local/vocabulary.py

    known = set(vocabulary)
    word_lists = vocabulary_lists.faker_word_lists(known)
    word_lists.update(vocabulary_lists.wordnet_parts_of_speech(list(vocabulary)))
    sentences = vocabulary_lists.wordnet_example_sentences(known)
    return TextGenerator(word_lists, sentences, known, lexicon, sentence_fraction)


def generate_texts(generator, count, seed):
    """`count` texts, the same for the same seed."""
    rng = random.Random(seed)
    return [generator.generate(rng) for _ in range(count)]
