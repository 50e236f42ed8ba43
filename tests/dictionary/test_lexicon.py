"""Lexicons for word lists and transcripts, and the words they lack."""

from asrkit.dictionary.lexicon import build_lexicon, out_of_lexicon, read_word_list, word_counts

PRONUNCIATIONS = {"CALL": [("K", "AO", "L")], "MOM": [("M", "AA", "M")],
                  "READ": [("R", "EH", "D"), ("R", "IY", "D")]}


def test_build_lexicon_normalises_case_and_reports_missing_words_once():
    result = build_lexicon(["call", "Mom", "CALL", "zorblax", "Zorblax", "read"], PRONUNCIATIONS)
    assert result.lexicon == {"CALL": [("K", "AO", "L")], "MOM": [("M", "AA", "M")],
                              "READ": [("R", "EH", "D"), ("R", "IY", "D")]}
    assert result.missing_words == ["ZORBLAX"]
    assert result.num_pronunciations == 4


def test_out_of_lexicon_names_utterances_and_counts_words():
    texts = {"u1": "CALL MOM", "u2": "CALL ZORBLAX ZORBLAX", "u3": "<UNK> MOM", "u4": "QUUX"}
    bad, missing = out_of_lexicon(texts, PRONUNCIATIONS, ignore=["<unk>"])
    assert bad == ["u2", "u4"]
    assert missing == {"ZORBLAX": 2, "QUUX": 1}


def test_word_counts_and_word_list(tmp_path):
    assert word_counts(["call mom", "CALL"]) == {"CALL": 2, "MOM": 1}
    path = tmp_path / "words.txt"
    path.write_text("HELLO 1\n\nWORLD\n")
    assert read_word_list(path) == ["HELLO", "WORLD"]
