"""prepare_lang: Kaldi's lang dir files, disambiguation symbols, L.fst paths, and bad dict dirs."""

import os

import kaldifst
import pytest

from asrkit.decode.synthetic import write_dict_dir
from asrkit.errors import AsrkitError
from asrkit.graph.lexicon_fst import add_disambiguation
from asrkit.graph.dict_dir import Pronunciation
from asrkit.graph.prepare_lang import LangOptions, prepare_lang
from asrkit.graph.symbols import SymbolTable

LEXICON = {
    "BAT": ["B", "AA", "T"], "BATS": ["B", "AA", "T"], "BE": ["B", "IY"], "BEAT": ["B", "IY", "T"],
    "CAT": ["K", "AA", "T"], "TEA": ["T", "IY"],
}


@pytest.fixture
def lang(tmp_path):
    dict_dir = write_dict_dir(str(tmp_path / "dict"), LEXICON)
    prepare_lang(dict_dir, "<UNK>", str(tmp_path / "lang"))
    return str(tmp_path / "lang")


def read(path):
    with open(path) as handle:
        return handle.read().split("\n")[:-1]


def test_files_in_kaldi_formats(lang):
    words = SymbolTable.read(os.path.join(lang, "words.txt"))
    assert words.items()[0] == ("<eps>", 0)
    assert [w for w, _ in words.items()][-3:] == ["#0", "<s>", "</s>"]
    assert [w for w, _ in words.items()][1:-3] == ["<UNK>", "BAT", "BATS", "BE", "BEAT", "CAT", "TEA"]
    phones = SymbolTable.read(os.path.join(lang, "phones.txt"))
    assert [p for p, _ in phones.items()][:3] == ["<eps>", "SIL", "SPN"]
    assert read(os.path.join(lang, "oov.txt")) == ["<UNK>"]
    assert read(os.path.join(lang, "oov.int")) == [str(words["<UNK>"])]
    assert read(os.path.join(lang, "phones", "silence.txt")) == ["SIL", "SPN"]
    assert read(os.path.join(lang, "phones", "optional_silence.int")) == [str(phones["SIL"])]
    assert read(os.path.join(lang, "phones", "disambig.txt")) == ["#0", "#1", "#2", "#3"]
    assert read(os.path.join(lang, "phones", "silence.csl")) == [f"{phones['SIL']}:{phones['SPN']}"]
    topo = open(os.path.join(lang, "topo")).read()
    assert topo.startswith("<Topology>") and "<PdfClass> 0 <Transition> 0 0.5 <Transition> 1 0.5" in topo
    for name in ("L.fst", "L_disambig.fst"):
        assert kaldifst.StdVectorFst.read(os.path.join(lang, name)).num_states > 3


def test_disambiguation_of_homophones_and_prefixes():
    lexicon = [Pronunciation(w, tuple(p)) for w, p in LEXICON.items()]
    entries, highest = add_disambiguation(lexicon)
    marked = {pron.word: phones[len(pron.phones):] for pron, phones in entries}
    assert marked == {"BAT": ("#1",), "BATS": ("#2",), "BE": ("#1",), "BEAT": (), "CAT": (), "TEA": ()}
    assert highest == 2


def phone_ids(lang, phones):
    table = SymbolTable.read(os.path.join(lang, "phones.txt"))
    return [table[p] for p in phones]


def words_of(fst, phone_sequence, lang):
    lexicon = kaldifst.StdVectorFst.read(os.path.join(lang, fst))
    kaldifst.arcsort(lexicon, sort_type="ilabel")
    composed = kaldifst.compose(kaldifst.make_linear_acceptor(phone_ids(lang, phone_sequence)), lexicon)
    if composed.num_states == 0:
        return None
    words = SymbolTable.read(os.path.join(lang, "words.txt"))
    paths = kaldifst.convert_nbest_to_vector(kaldifst.shortest_path(composed, n=10))
    results = set()
    for path in paths:
        _, _, out, _ = kaldifst.get_linear_symbol_sequence(path)
        results.add(tuple(words.symbol_of[w] for w in out))
    return results


def test_lexicon_fst_paths_with_optional_silence(lang):
    assert words_of("L.fst", ["B", "IY", "T"], lang) == {("BEAT",)}
    assert words_of("L.fst", ["SIL", "B", "IY", "SIL", "K", "AA", "T", "SIL"], lang) == {("BE", "CAT")}
    assert words_of("L.fst", ["B", "AA", "T", "T", "IY"], lang) == {("BAT", "TEA"), ("BATS", "TEA")}
    assert words_of("L.fst", ["SIL", "SIL"], lang) is None  # one optional silence at a time
    assert words_of("L_disambig.fst", ["B", "AA", "T", "#1"], lang) == {("BAT",)}
    assert words_of("L_disambig.fst", ["B", "AA", "T", "#2"], lang) == {("BATS",)}


def test_no_optional_silence(tmp_path):
    dict_dir = write_dict_dir(str(tmp_path / "dict"), LEXICON)
    lang = str(tmp_path / "lang")
    prepare_lang(dict_dir, "<UNK>", lang, LangOptions(sil_prob=0.0, num_nonsil_states=3))
    assert words_of("L.fst", ["SIL", "B", "IY"], lang) is None
    assert words_of("L.fst", ["B", "IY"], lang) == {("BE",)}
    assert "<State> 2 <PdfClass> 2" in open(os.path.join(lang, "topo")).read()


@pytest.mark.parametrize("breakage, message", [
    (lambda d: open(d / "lexicon.txt", "a").write("DOG D AO G\n"), "uses phone 'D'"),
    (lambda d: open(d / "lexicon.txt", "a").write("<s> B\n"), "reserved"),
    (lambda d: open(d / "optional_silence.txt", "w").write("AA\n"), "not in silence_phones"),
    (lambda d: open(d / "nonsilence_phones.txt", "a").write("SIL\n"), "also in"),
    (lambda d: os.remove(d / "lexicon.txt"), "neither lexicon.txt"),
])
def test_bad_dict_dirs_are_refused_with_the_file_named(tmp_path, breakage, message):
    dict_dir = tmp_path / "dict"
    write_dict_dir(str(dict_dir), LEXICON)
    breakage(dict_dir)
    with pytest.raises(AsrkitError, match=message):
        prepare_lang(str(dict_dir), "<UNK>", str(tmp_path / "lang"))
    assert not (tmp_path / "lang").exists()


def test_oov_word_must_be_in_the_lexicon(tmp_path):
    dict_dir = write_dict_dir(str(tmp_path / "dict"), LEXICON)
    with pytest.raises(AsrkitError, match="'<NOISE>' is not in the lexicon"):
        prepare_lang(dict_dir, "<NOISE>", str(tmp_path / "lang"))


def test_a_lang_dir_is_replaced_but_no_other_dir_and_never_the_dict_dir(tmp_path):
    dict_dir = write_dict_dir(str(tmp_path / "dict"), LEXICON)
    prepare_lang(dict_dir, "<UNK>", str(tmp_path / "lang"))
    prepare_lang(dict_dir, "<UNK>", str(tmp_path / "lang"))  # its own earlier output
    assert sorted(os.listdir(tmp_path)) == ["dict", "lang"]
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "wav.scp").write_text("a a.wav\n")
    with pytest.raises(AsrkitError, match="is not empty and is not a lang dir"):
        prepare_lang(dict_dir, "<UNK>", str(tmp_path / "data"))
    assert os.listdir(tmp_path / "data") == ["wav.scp"]
    for out in (dict_dir, str(tmp_path)):
        with pytest.raises(AsrkitError, match="is or holds the input"):
            prepare_lang(dict_dir, "<UNK>", out)
    assert sorted(os.listdir(tmp_path)) == ["data", "dict", "lang"]
