"""What an aligner needs from a Kaldi lang dir: phones, words, pronunciations, silence and topology.

Pronunciation probabilities come from lexiconp.txt (lexicon.txt gives 1.0);
the optional-silence probability from lang_options.json (asrkit's
prepare_lang writes it; a lang dir from elsewhere gets --sil-prob's default,
0.5, with a warning), the optional silence phone from
phones/optional_silence.txt.
"""

import dataclasses
import json
import logging
import math
import os

from asrkit.errors import AsrkitError
from asrkit.graph.symbols import SymbolTable
from asrkit.hmm.topology import Topology

logger = logging.getLogger("asrkit.align")

DEFAULT_SIL_PROB = 0.5


class TranscriptError(AsrkitError):
    """A transcript the lang dir cannot spell out in phones (out-of-vocabulary words)."""


@dataclasses.dataclass
class AlignLang:
    lang_dir: str
    phones: SymbolTable
    words: SymbolTable
    pronunciations: dict  # word -> list of (cost = -log prob, tuple of phone ids), lexicon order
    optional_silence: int  # phone id
    silence_phones: set  # phone ids
    sil_prob: float
    oov_word: str | None
    topology: Topology

    def phone_name(self, phone_id):
        return self.phones.symbol_of[phone_id]

    def words_of(self, transcript, map_oov=False):
        """The words of a transcript; OOV words raise TranscriptError naming them, or become the OOV word."""
        words = transcript.split()
        unknown = [word for word in words if word not in self.pronunciations]
        if not unknown:
            return words
        if map_oov and self.oov_word in self.pronunciations:
            return [self.oov_word if word in unknown else word for word in words]
        raise TranscriptError(f"out-of-vocabulary words: {' '.join(dict.fromkeys(unknown))}")


def _read_lexicon(lang_dir, phones):
    with_probs = os.path.join(lang_dir, "lexiconp.txt")
    plain = os.path.join(lang_dir, "lexicon.txt")
    path = with_probs if os.path.exists(with_probs) else plain
    if not os.path.exists(path):
        raise AsrkitError(f"{lang_dir} has neither lexiconp.txt nor lexicon.txt; make it with utils/prepare_lang")
    pronunciations = {}
    phone_ids = phones.id_of
    with open(path, encoding="utf-8") as handle:
        for line_number, line in enumerate(handle, 1):
            fields = line.split()
            if not fields:
                continue
            word, rest = fields[0], fields[1:]
            probability = 1.0
            if path == with_probs:
                try:
                    probability = float(rest[0])
                except (IndexError, ValueError):
                    raise AsrkitError(f"{path}:{line_number}: expected 'word prob phone ...'") from None
                rest = rest[1:]
            if not 0.0 < probability <= 1.0:
                raise AsrkitError(f"{path}:{line_number}: pronunciation probability {probability} is not in (0, 1]")
            try:
                # One dict lookup per phone (a recognizer reads a 60,000-word lexicon at its first word times).
                pronunciation = tuple(map(phone_ids.__getitem__, rest))
            except KeyError:
                unknown = [phone for phone in rest if phone not in phones]
                raise AsrkitError(f"{path}:{line_number}: phones {unknown} are not in {lang_dir}/phones.txt") from None
            pronunciations.setdefault(word, []).append((-math.log(probability), pronunciation))
    return pronunciations


def _read_phone_list(path):
    with open(path, encoding="utf-8") as handle:
        return handle.read().split()


def read_align_lang(lang_dir):
    lang_dir = os.fspath(lang_dir)
    phones = SymbolTable.read(os.path.join(lang_dir, "phones.txt"))
    words = SymbolTable.read(os.path.join(lang_dir, "words.txt"))
    optional = _read_phone_list(os.path.join(lang_dir, "phones", "optional_silence.txt"))
    if len(optional) != 1:
        raise AsrkitError(f"{lang_dir}/phones/optional_silence.txt must name one phone, not {optional}")
    silence = {phones[name] for name in _read_phone_list(os.path.join(lang_dir, "phones", "silence.txt"))}
    options_path = os.path.join(lang_dir, "lang_options.json")
    sil_prob = DEFAULT_SIL_PROB
    if os.path.exists(options_path):
        with open(options_path, encoding="utf-8") as handle:
            sil_prob = float(json.load(handle).get("sil_prob", DEFAULT_SIL_PROB))
    else:
        logger.warning("%s has no lang_options.json; optional silence probability %g", lang_dir, sil_prob)
    oov_path = os.path.join(lang_dir, "oov.txt")
    oov_word = _read_phone_list(oov_path)[0] if os.path.exists(oov_path) else None
    return AlignLang(
        lang_dir=lang_dir, phones=phones, words=words, pronunciations=_read_lexicon(lang_dir, phones),
        optional_silence=phones[optional[0]], silence_phones=silence, sil_prob=sil_prob, oov_word=oov_word,
        topology=Topology.read(os.path.join(lang_dir, "topo")),
    )
