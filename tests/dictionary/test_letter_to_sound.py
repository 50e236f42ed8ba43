import shutil

import pytest

from asrkit.dictionary import letter_to_sound
from asrkit.dictionary.letter_to_sound import (LetterToSoundError, festival_pronunciations,
                                               write_generated_lexicon)


def test_entry_parsing_maps_reduced_vowel_and_drops_stress():
    entry = '("hello" nil (((hh ax) 0) ((l ow) 1)))'
    assert letter_to_sound._phones(entry, "HELLO") == ("HH", "AH", "L", "OW")
    with pytest.raises(LetterToSoundError, match="HELLO phones outside CMUdict's set: PAU"):
        letter_to_sound._phones('("hello" nil (((pau hh) 0)))', "HELLO")


def test_words_that_cannot_be_spelled_are_refused():
    with pytest.raises(LetterToSoundError, match="letters and apostrophes; got A-B, hello"):
        festival_pronunciations(["hello", "A-B", "OK"])


def test_missing_festival_is_named():
    with pytest.raises(LetterToSoundError, match="no-such-festival is not installed"):
        festival_pronunciations(["KLUNK"], festival="no-such-festival")


@pytest.mark.skipif(shutil.which("festival") is None, reason="festival is not installed")
def test_festival_gives_lexicon_and_rule_pronunciations(tmp_path):
    found = festival_pronunciations(["HELLO", "KLUNK", "IRONSTEIN", "SPARKY'S"])
    assert found["HELLO"] == ("HH", "AH", "L", "OW")  # from its CMU lexicon
    assert found["KLUNK"] == ("K", "L", "AH", "NG", "K")  # from the letter-to-sound rules
    assert found["SPARKY'S"][-1] == "Z" and found["IRONSTEIN"][0] == "AY"
    path = tmp_path / "generated.txt"
    write_generated_lexicon(path, found)
    lines = path.read_text().splitlines()
    assert lines[0] == "HELLO  HH AH L OW" and len(lines) == 4


def test_transcripts_with_digits_are_named_with_their_line_and_the_fix(tmp_path):
    text = tmp_path / "text"
    text.write_text("u1 HELLO <UNK> WORLD\nu2 GOT 00 AND 10\n")
    with pytest.raises(LetterToSoundError, match=r"text:2: utterance u2: '00' is not a word .*utils/normalize_text"):
        letter_to_sound.check_transcripts_spellable(str(text))
    text.write_text("u1 HELLO don't\n")
    letter_to_sound.check_transcripts_spellable(str(text))
