"""asrkit.Recognizer: the same words asrkit-decode's path gives, word times from forced alignment, confidences,
n-best lists, and the API's edges."""

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
import soundfile

from asrkit.errors import AsrkitError
from asrkit.recognizer.package import load_package
from asrkit.recognizer.recognizer import Recognizer, Result, Word
from asrkit.recognizer.word_times import WordAligner, lattice_word_frames, match_words
from tests.conftest import speech_like


def _reference_words(model_dir, graph_dir, samples, acoustic_scale, prior_scale):
    """asrkit-decode's path: TensorFlow front end and network, GraphDecoder with lattices, words as strings."""
    from asrkit.decode.decoder import DecoderOptions, GraphDecoder
    from asrkit.frontend.config import FeatureConfig
    from asrkit.frontend.features import FeatureExtractor
    from asrkit.graph.symbols import SymbolTable
    from asrkit.nn.model_dir import load_acoustic_model

    model = load_acoustic_model(model_dir)
    features = FeatureExtractor(FeatureConfig.from_dict(model.feature_config))(samples)
    loglikes = model.log_likelihoods(features, prior_scale=prior_scale)
    decoder = GraphDecoder.from_file(os.path.join(graph_dir, "HCLG.fst"),
                                     DecoderOptions(acoustic_scale=acoustic_scale), lattices=True)
    words = SymbolTable.read(os.path.join(graph_dir, "words.txt"))
    return [words.symbol_of[word] for word in decoder.decode(loglikes).words]


def test_transcribe_gives_the_words_of_asrkit_decodes_path(package_dir, model_dirs, toy_task):
    recognizer = Recognizer(package_dir)
    texts = set()
    for seed in range(4):
        samples = speech_like(1.5, 8000, seed=seed)
        result = recognizer.transcribe(samples, nbest=3)
        expected = _reference_words(model_dirs["wblstm"], toy_task["graph"], samples, 0.5, 0.5)
        assert result.text.split() == expected
        assert [word.word for word in result.words] == expected
        texts.add(result.text)
        assert result.start == 0.0 and result.end == pytest.approx(1.5) and result.is_final
        previous_end = 0.0
        for word in result.words:
            assert previous_end <= word.start < word.end <= result.end + 1e-9
            assert 0.0 <= word.confidence <= 1.0
            previous_end = word.end
        assert 1 <= len(result.nbest) <= 3 and result.nbest[0].text == result.text
        costs = [entry.cost for entry in result.nbest]
        assert costs == sorted(costs) and len({entry.text for entry in result.nbest}) == len(result.nbest)
        json.dumps(result.to_dict())
    assert texts - {""}  # the random network says something: the comparison above compared words


def test_paths_int16_and_other_rates(package_dir, tmp_path):
    from scipy.signal import resample_poly

    recognizer = Recognizer(package_dir)
    samples = speech_like(1.2, 16000, seed=2)
    path = tmp_path / "sixteen.flac"
    soundfile.write(path, samples, 16000, subtype="PCM_16")
    read_back, _ = soundfile.read(path, dtype="float32")
    expected = recognizer.transcribe(resample_poly(read_back, 1, 2).astype(np.float32))
    assert recognizer.transcribe(str(path)).to_dict() == expected.to_dict()
    assert recognizer.transcribe(path).text == expected.text  # os.PathLike
    assert recognizer.transcribe(read_back, sample_rate=16000).text == expected.text
    pcm = np.round(speech_like(1.0, 8000, seed=3) * 32767).astype(np.int16)
    assert recognizer.transcribe(pcm).text == recognizer.transcribe(pcm.astype(np.float32) / 32768).text
    empty = recognizer.transcribe(np.zeros(10, np.float32))
    assert (empty.text, empty.words) == ("", [])


def test_overrides_and_refusals(package_dir):
    recognizer = Recognizer(package_dir, lm_weight=4.0, beam=8.0)
    assert recognizer.package.params["lm_weight"] == 4.0 and recognizer.package.acoustic_scale == 0.25
    with pytest.raises(AsrkitError, match="unknown decoding parameters: acoustic_weight"):
        Recognizer(package_dir, acoustic_weight=1)
    with pytest.raises(AsrkitError, match="LM weight must be positive"):
        Recognizer(package_dir, lm_weight=0.0)
    with pytest.raises(ValueError, match="nbest"):
        recognizer.transcribe(np.zeros(800, np.float32), nbest=0)
    with pytest.raises(ValueError, match="mono"):
        recognizer.transcribe(np.zeros((800, 2), np.float32))
    with pytest.raises(AsrkitError, match="nothing.wav"):
        recognizer.transcribe("/nonexistent/nothing.wav")


def _oracle_loglikes(package, phones_and_frames):
    """Log-likelihoods 0 for the pdf of each frame's phone (the toy tree: one pdf per phone), -8 elsewhere."""
    from asrkit.hmm.tree import ContextDependency

    tree = ContextDependency.read(os.path.join(package.align_dir, "tree.json"))
    pdfs = np.concatenate([[tree.pdf([tree.phones[phone]], 0)] * frames for phone, frames in phones_and_frames])
    loglikes = np.full((len(pdfs), package.num_pdfs), -8.0, np.float32)
    loglikes[np.arange(len(pdfs)), pdfs] = 0.0
    return loglikes


def test_forced_alignment_finds_the_word_boundaries(package_dir):
    package = load_package(package_dir)
    aligner = WordAligner(package.align_dir)
    # SIL, ALPHA = P AA L, BRAVO = B R AA, SIL, ECHO = EH2 K OW
    layout = [("SIL", 3), ("P", 2), ("AA", 3), ("L", 2), ("B", 4), ("R", 2), ("AA", 3), ("SIL", 5), ("EH2", 2),
              ("K", 3), ("OW", 4), ("SIL", 2)]
    loglikes = _oracle_loglikes(package, layout)
    assert aligner.word_frames(["ALPHA", "BRAVO", "ECHO"], loglikes, 0.5) == [(3, 10), (10, 19), (24, 33)]
    assert aligner.word_frames([], loglikes, 0.5) == []
    assert aligner.word_frames(["NOT-A-WORD"], loglikes, 0.5) is None
    assert aligner.word_frames(["ALPHA"] * 20, loglikes[:5], 0.5) is None  # fewer frames than phones


def test_match_words_takes_pronunciation_variants_and_silence():
    pronunciations = {"A": [(0.0, (5, 6)), (0.0, (5,))], "B": [(0.0, (6,))]}
    segments = [(1, 0, 2), (5, 2, 4), (6, 4, 5), (1, 5, 7), (6, 7, 9)]
    assert match_words(["A", "B"], segments, pronunciations, 1) == [(2, 5), (7, 9)]
    assert match_words(["A", "B"], segments[:3] + segments[4:], pronunciations, 1) == [(2, 5), (7, 9)]
    assert match_words(["A", "B"], segments[1:3], pronunciations, 1) == [(2, 4), (4, 5)]
    assert match_words(["B"], segments, pronunciations, 1) is None


def test_without_alignment_files_times_come_from_the_lattice(package_dir, copy_package):
    copied = copy_package()
    shutil.rmtree(os.path.join(copied, "align"))
    recognizer = Recognizer(copied)
    assert recognizer.aligner is None
    samples = speech_like(1.5, 8000, seed=1)
    result = recognizer.transcribe(samples)
    assert result.words and result.text == Recognizer(package_dir).transcribe(samples).text
    ends = [word.end for word in result.words]
    assert ends == sorted(ends) and all(word.start < word.end for word in result.words)
    lattice = np.array([[0, 1, 3, 7, 0.5, 1.0], [1, 2, 4, 0, 0.0, 1.0], [2, 3, 4, 9, 0.0, 1.0],
                        [3, -1, 0, 0, 0.0, 0.0]])
    assert lattice_word_frames(lattice, np.arange(4), 5) == [(0, 2), (2, 5)]


def test_result_to_dict():
    result = Result("A B", [Word("A", 0.0, 0.3, 0.9), Word("B", 0.3, 0.6, 0.5)], 0.0, 0.7)
    assert result.to_dict() == {"text": "A B", "words": [{"word": "A", "start": 0.0, "end": 0.3, "confidence": 0.9},
                                                         {"word": "B", "start": 0.3, "end": 0.6, "confidence": 0.5}],
                                "start": 0.0, "end": 0.7, "nbest": [], "is_final": True}


def test_import_asrkit_stays_light():
    code = ("import sys, asrkit; heavy = [m for m in ('numpy', 'numba', 'asrkit.recognizer') if m in sys.modules]; "
            "assert not heavy, heavy; from asrkit import Recognizer; "
            "assert Recognizer.__module__ == 'asrkit.recognizer.recognizer'")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=os.environ)
    assert result.returncode == 0, result.stderr


def test_text_alone(package_dir):
    recognizer = Recognizer(package_dir)
    samples = speech_like(1.5, 8000, seed=0)
    full = recognizer.transcribe(samples)
    brief = recognizer.transcribe(samples, details=False)
    assert brief.text == full.text and full.words and brief.words == [] and recognizer._aligner is not None
    assert Recognizer(package_dir).transcribe(samples, details=False).text == full.text
