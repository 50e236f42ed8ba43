"""A phrase list as the grammar of recognition: built from the package's align/ at run time, it outputs only
sequences of the phrases."""

import logging

import pytest

from asrkit.dictionary.letter_to_sound import LetterToSoundError
from asrkit.recognizer.package_checks import PackageError
from asrkit.recognizer.phrase_grammar import PhraseListError, phrase_words
from asrkit.recognizer.recognizer import Recognizer
from tests.conftest import speech_like
from tests.recognizer.conftest import model_dirs, package_dir, toy_task  # noqa: F401 (fixtures)

AUDIO = [speech_like(1.5, 8000, seed=seed) for seed in range(5)]


def _is_sequence_of(words, phrases):
    """Whether `words` is one phrase after another (any number of them)."""
    if not words:
        return True
    return any(words[:len(phrase)] == phrase and _is_sequence_of(words[len(phrase):], phrases) for phrase in phrases)


def test_the_words_of_phrases_as_the_package_spells_them():
    vocabulary = {"ALPHA": 1, "BRAVO": 2}
    assert phrase_words(["alpha bravo", " ", "[unk] zulu"], vocabulary, "<UNK>") == \
        [["ALPHA", "BRAVO"], ["<UNK>", "ZULU"]]
    with pytest.raises(PhraseListError, match="no words"):
        phrase_words(["", "  "], vocabulary, "<UNK>")
    with pytest.raises(PhraseListError, match=r"\[unk\] in the phrase list, but the package has no OOV word"):
        phrase_words(["[unk]"], vocabulary, None)


def test_recognition_with_a_phrase_list_outputs_only_its_phrases(package_dir, caplog):  # noqa: F811
    phrases = [["DELTA", "ECHO"], ["GOLF"], ["ALPHA", "CHARLIE", "BRAVO"]]
    recognizer = Recognizer(package_dir)
    with caplog.at_level(logging.INFO, logger="asrkit.recognizer"):
        grammar = recognizer.with_phrases([" ".join(phrase).lower() for phrase in phrases])
    assert "grammar of 3 phrases:" in caplog.text  # and how long it took to build
    results = [grammar.transcribe(samples, sample_rate=8000) for samples in AUDIO]
    assert all(_is_sequence_of(result.text.split(), phrases) for result in results)
    assert any(result.text for result in results)
    assert all(0 <= word.confidence <= 1 for result in results for word in result.words)
    one = recognizer.with_phrases(["ECHO GOLF"])
    texts = [one.transcribe(samples, sample_rate=8000, details=False).text for samples in AUDIO]
    assert all(_is_sequence_of(text.split(), [["ECHO", "GOLF"]]) for text in texts)
    stream = grammar.stream()
    finals = [result for piece in (AUDIO[0][:6000], AUDIO[0][6000:]) for result in stream.accept(piece)]
    finals += stream.finish()
    assert all(_is_sequence_of(result.text.split(), phrases) for result in finals)


def test_words_outside_the_lexicon_are_pronounced_by_letter_to_sound(package_dir):  # noqa: F811
    asked = []

    def pronounce(words):
        asked.extend(words)
        return {word: ("D", "EH", "L", "T", "AA") for word in words}  # DELTA's phones: a homophone of it

    grammar = Recognizer(package_dir).with_phrases(["foxtrot", "golf"], pronounce=pronounce)
    assert asked == ["FOXTROT"] and "FOXTROT" in grammar.package.words
    texts = [grammar.transcribe(samples, sample_rate=8000).text for samples in AUDIO]
    assert all(_is_sequence_of(text.split(), [["FOXTROT"], ["GOLF"]]) for text in texts)

    def broken(words):
        raise LetterToSoundError("festival is not installed")

    with pytest.raises(PhraseListError, match="no pronunciation for ZULU: not in the package's lexicon, and "
                                              "letter-to-sound failed \\(festival is not installed\\)"):
        Recognizer(package_dir).with_phrases(["zulu"], pronounce=broken)
    with pytest.raises(PhraseListError, match="ZULU: its pronunciation has phones the package does not know \\(XX\\)"):
        Recognizer(package_dir).with_phrases(["zulu"], pronounce=lambda words: {"ZULU": ("XX",)})


def test_a_package_without_align_cannot_have_a_grammar(copy_package):
    import shutil

    path = copy_package()
    shutil.rmtree(f"{path}/align")
    with pytest.raises(PackageError, match="has no align/"):
        Recognizer(path).with_phrases(["golf"])
