"""steps/prepare_dict.py: the dict dir for transcripts' words, plus the most frequent English words."""

import os
import subprocess
import sys

from asrkit.dictionary.dict_dir import check_dict_dir, read_lexicon

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "steps", "prepare_dict.py")


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *map(str, args)], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)


def test_transcript_words_plus_frequent_words(tmp_path):
    (tmp_path / "cmudict.txt").write_text("THE  DH AH0\nOF  AH1 V\nAND  AH0 N D\nWEATHER  W EH1 DH ER0\n"
                                          "ZORBLAX  Z AO1 R B L AE0 K S\n")
    (tmp_path / "text").write_text("utt1 ZORBLAX THE\n")
    result = run("--text", tmp_path / "text", "--frequent-words", 2, "--pronunciations", tmp_path / "cmudict.txt",
                 "--max-missing", 0, tmp_path / "dict")
    assert result.returncode == 0, result.stdout
    assert "2 of the most frequent English words added (1 not already listed)" in result.stdout
    assert check_dict_dir(tmp_path / "dict") == []
    lexicon = read_lexicon(tmp_path / "dict" / "lexicon.txt")
    # THE and one of AND/OF (their order moves between wordfreq's releases) are the two most frequent.
    words = set(lexicon) - {"!SIL", "<UNK>"}
    assert len(words) == 3 and {"ZORBLAX", "THE"} <= words and "WEATHER" not in words


def test_nothing_to_list_is_an_error(tmp_path):
    result = run(tmp_path / "dict")
    assert result.returncode == 1
    assert "give at least one --word-list, --text or --frequent-words" in result.stdout


def test_frequent_words_with_an_apostrophe_on_request(tmp_path):
    (tmp_path / "cmudict.txt").write_text("THE  DH AH0\nDON'T  D OW1 N T\nIT'S  IH1 T S\n")
    (tmp_path / "text").write_text("utt1 THE\n")
    words = {}
    for flags in ([], ["--frequent-apostrophes"]):
        result = run("--text", tmp_path / "text", "--frequent-words", 3, *flags, "--pronunciations",
                     tmp_path / "cmudict.txt", tmp_path / f"dict{len(flags)}")
        assert result.returncode == 0, result.stdout
        words[len(flags)] = set(read_lexicon(tmp_path / f"dict{len(flags)}" / "lexicon.txt")) - {"!SIL", "<UNK>"}
    assert words[0] == {"THE"} and words[1] == {"THE", "DON'T", "IT'S"}
