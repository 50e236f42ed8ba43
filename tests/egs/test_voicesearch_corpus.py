"""egs/voicesearch corpus preparation: text generation, speakers, synthesis, and the tiny corpus end to end.

The tiny corpus is built once per session, twice (to check determinism), and reused by the tests.
"""

import hashlib
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
import soundfile

from asrkit.data.data_dir import DataDir
from asrkit.data.split import subset_data_dir
from asrkit.data.validate import validate_data_dir
from asrkit.dictionary.dict_dir import check_dict_dir, read_lexicon
from asrkit.errors import AsrkitError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RECIPE = os.path.join(ROOT, "egs", "voicesearch")
LOCAL = os.path.join(RECIPE, "local")
PREPARE_CORPUS = os.path.join(LOCAL, "prepare_corpus.py")
SYNTHESISER_PACKAGES = ["flite", "festival", "festvox-kallpc16k", "festvox-kdlpc16k", "festvox-us-slt-hts",
                        "espeak-ng", "wordnet-base"]
REQUIRED = {"flite": "flite", "festival": "festival", "espeak-ng": "espeak-ng",
            "/usr/share/wordnet/index.noun": "wordnet-base"}

if LOCAL not in sys.path:
    sys.path.insert(0, LOCAL)

import speakers as speaker_list  # noqa: E402  (egs/voicesearch/local)
import synthesis  # noqa: E402
import text_generation  # noqa: E402
import vocabulary as vocabulary_selection  # noqa: E402

# Synthesising speech with three synthesisers: left out by tests/run.sh --quick.
pytestmark = pytest.mark.slow


def _missing():
    return sorted({package for need, package in REQUIRED.items()
                   if not (os.path.exists(need) if need.startswith("/") else shutil.which(need))})


@pytest.fixture(scope="session")
def synthesisers():
    """Skip (naming the packages) when the synthesisers are missing and cannot be installed here."""
    missing = _missing()
    if missing and os.geteuid() == 0 and shutil.which("apt-get"):
        subprocess.run(["apt-get", "install", "-y", "-qq", *SYNTHESISER_PACKAGES], check=False,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ,
                       "DEBIAN_FRONTEND": "noninteractive"}, timeout=600)
        missing = _missing()
    if missing:
        pytest.skip(f"synthesisers or WordNet not installed and not installable here (not root or no apt-get): "
                    f"sudo apt-get install {' '.join(SYNTHESISER_PACKAGES)}")


def build_corpus(data_dir, *options):
    """Run local/prepare_corpus.py; return (exit status, combined output)."""
    result = subprocess.run([sys.executable, PREPARE_CORPUS, *options, str(data_dir)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, cwd=RECIPE, timeout=300,
                            env={**os.environ, "LC_ALL": "C", "PYTHONUNBUFFERED": "1"})
    return result.returncode, result.stdout


@pytest.fixture(scope="session")
def tiny_corpora(synthesisers, tmp_path_factory):
    """Two tiny builds with seed 7: one with 2 jobs, one with 1 job (the audio must not depend on nj)."""
    built = []
    for name, nj in (("first", "2"), ("second", "1")):
        data_dir = tmp_path_factory.mktemp(name) / "data"
        status, output = build_corpus(data_dir, "--config", os.path.join(RECIPE, "conf", "corpus.conf"),
                                      "--size", "tiny", "--seed", "7", "--nj", nj)
        assert status == 0, output
        built.append((data_dir, output))
    return built


@pytest.fixture(scope="session")
def tiny_corpus(tiny_corpora):
    return tiny_corpora[0]

SPLITS = ("train", "dev", "test")
LEXICON = {"A": [("AH",)], "AN": [("AE", "N")], "HOUR": [("AW", "ER")], "UNIT": [("Y", "UW", "N", "IH", "T")],
           "APPLE": [("AE", "P", "AH", "L")], "DOG": [("D", "AO", "G")]}


# ---- text generation -------------------------------------------------------------------------

def small_generator(sentence_fraction=0.3):
    vocabulary = {"CALL", "JOHN", "SMITH", "WEATHER", "IN", "TEXAS", "THE", "DOG", "IS", "HAPPY", "WHAT",
                  "A", "AN", "HOUR", "UNIT", "FIND", "NEAR", "ME", "TODAY", "PLAY", "SOME", "JAZZ", "MUSIC"}
    word_lists = {"first_name": ["JOHN"], "last_name": ["SMITH"], "state": ["TEXAS", "NEW YORK"],
                  "noun": ["HOUR", "UNIT", "DOG"], "adjective": ["HAPPY"], "verb": ["FIND"], "country": []}
    sentences = ["THE DOG IS HAPPY", "WHAT", "THE DOG IS HAPPY THE DOG IS HAPPY THE DOG IS HAPPY"]
    lexicon = dict(LEXICON)
    return text_generation.TextGenerator(word_lists, sentences, vocabulary, lexicon, sentence_fraction), vocabulary


def test_generated_texts_use_only_vocabulary_words_and_have_2_to_10_words():
    generator, vocabulary = small_generator()
    texts = text_generation.generate_texts(generator, 300, seed=3)
    assert all(2 <= len(text.split()) <= 10 for text in texts)
    assert all(word in vocabulary for text in texts for word in text.split())
    assert all(text == text.upper() and text.replace(" ", "").isalpha() for text in texts)
    # Templates whose own words are outside the vocabulary (DIRECTIONS, TIMER, ...) are never used.
    assert all(not text.startswith("DIRECTIONS") for text in texts)
    assert "THE DOG IS HAPPY" in texts and any(text.startswith("CALL JOHN") for text in texts)


def test_the_same_seed_gives_the_same_texts_and_another_seed_others():
    generator, _ = small_generator()
    first = text_generation.generate_texts(generator, 50, seed=11)
    assert first == text_generation.generate_texts(generator, 50, seed=11)
    assert first != text_generation.generate_texts(generator, 50, seed=12)


def test_article_follows_the_first_sound_not_the_letter():
    generator, _ = small_generator()
    assert generator.article("HOUR") == "AN"
    assert generator.article("UNIT") == "A"
    assert generator.article("DOG") == "A"
    assert generator.article("APPLE") == "AN"


def test_sentence_fraction_zero_gives_only_template_queries():
    generator, _ = small_generator(sentence_fraction=0.0)
    texts = text_generation.generate_texts(generator, 100, seed=1)
    assert "THE DOG IS HAPPY" not in texts


def test_wordnet_lists_part_of_speech_by_tagged_senses_and_filters_sentences(tmp_path):
    # index line: lemma pos synset_cnt p_cnt [pointers] sense_cnt tagsense_cnt offsets
    (tmp_path / "index.noun").write_text("  licence header\nfind n 1 0 1 2 001\nfish n 2 1 @ 2 9 002 003\n")
    (tmp_path / "index.verb").write_text("find v 3 0 3 40 004 005 006\nfish v 1 0 1 1 007\n")
    (tmp_path / "index.adj").write_text("")
    (tmp_path / "index.adv").write_text("")
    (tmp_path / "data.noun").write_text(
        '001 03 n 01 fish 0 000 | an animal; "we find fish" ; "fish don\'t talk"; "a fish-like fish"\n')
    for part in ("verb", "adj", "adv"):
        (tmp_path / f"data.{part}").write_text("")
    vocabulary = ["FIND", "FISH", "WE", "A", "LIKE"]
    lists = vocabulary_selection.wordnet_parts_of_speech(vocabulary, wordnet_dir=str(tmp_path))
    assert lists == {"noun": ["FISH"], "verb": ["FIND"], "adjective": []}
    sentences = vocabulary_selection.wordnet_example_sentences(set(vocabulary), wordnet_dir=str(tmp_path))
    assert sentences == ["WE FIND FISH", "A FISH LIKE FISH"]


# ---- speakers ------------------------------------------------------------------------------------

def test_recipe_speakers_are_disjoint_varied_and_mostly_not_espeak():
    speakers = speaker_list.read_speakers(os.path.join(RECIPE, "conf", "speakers.txt"))
    assert len(speakers) >= 24
    assert len({(s.engine, s.voice, s.speed, s.pitch, s.stretch) for s in speakers}) == len(speakers)
    # Dev and test both hold voices never heard in training, besides an espeak-ng accent each: dev chooses
    # the LM weight and prior scale for test, and voices the model knows want a lighter LM than new ones.
    for split in ("dev", "test"):
        unheard = speaker_list.unheard_voices(speakers, split)
        assert [voice for voice in unheard if not voice.startswith("espeak-ng:")], split
    assert all(0.9 <= s.speed <= 1.1 for s in speakers)
    for split in SPLITS:
        members = [s for s in speakers if s.split == split]
        espeak_weight = sum(s.weight for s in members if s.engine == "espeak-ng")
        assert espeak_weight < 0.25 * sum(s.weight for s in members)


def test_speaker_list_errors_name_the_line(tmp_path):
    path = tmp_path / "speakers.txt"
    path.write_text("# comment\nfl-a-01 train flite kal16 1.0 - 1.0 1.0\nfl-b-01 valid flite kal16 1.0 - 1.0 1.0\n")
    with pytest.raises(speaker_list.SpeakerListError, match=r"speakers.txt:3: split 'valid'"):
        speaker_list.read_speakers(path)
    path.write_text("fl-a train flite kal16 1.0 - 1.0 1.0\nfl-a-01 dev flite kal16 1.0 - 1.0 1.0\n"
                    "fl-c test flite kal16 1.0 - 1.0 1.0\n")
    with pytest.raises(speaker_list.SpeakerListError, match="'fl-a' is a prefix of 'fl-a-01'"):
        speaker_list.read_speakers(path)


def test_weighted_round_robin_is_even_and_covers_every_speaker():
    make = lambda name, weight: speaker_list.Speaker(name, "train", "flite", "kal16", 1.0, None, 1.0, weight)
    speakers = [make("a", 1.0), make("b", 1.0), make("c", 0.5)]
    chosen = [s.speaker_id for s in speaker_list.assign_speakers(speakers, 50)]
    assert (chosen.count("a"), chosen.count("b"), chosen.count("c")) == (20, 20, 10)
    assert set(chosen[:3]) == {"a", "b", "c"}
    assert chosen[:20] == [s.speaker_id for s in speaker_list.assign_speakers(speakers, 20)]


def test_voice_jitter_spreads_training_utterances_around_their_speaker_and_keeps_the_texts():
    import random

    sys.path.insert(0, LOCAL)
    import prepare_corpus

    class Texts:  # a text generator: one numbered sentence per draw
        def generate(self, rng):
            return f"TEXT {rng.randrange(10**6)}"

    speakers = [speaker_list.Speaker("fl-a-01", "train", "flite", "kal16", 1.0, 110.0, 1.0, 1.0),
                speaker_list.Speaker("es-b-01", "train", "espeak-ng", "en-us", 1.2, 95.0, 1.9, 1.0),
                speaker_list.Speaker("fe-c-01", "test", "festival", "cmu_us_slt_arctic_hts", 1.0, None, 1.0, 1.0)]
    counts = {"train": 40, "test": 5}
    fixed = prepare_corpus.plan_utterances(speakers, counts, Texts(), seed=3)
    jittered = prepare_corpus.plan_utterances(speakers, counts, Texts(), seed=3, voice_jitter=0.1)
    assert [(u, s.speaker_id, t) for u, s, t in fixed["train"]] == [(u, s.speaker_id, t) for u, s, t in jittered["train"]]
    assert jittered["test"] == fixed["test"]  # test keeps its speaker's fixed settings
    settings = {(s.speed, s.pitch, s.stretch) for _, s, _ in jittered["train"]}
    assert len(settings) > 30
    for _, speaker, _ in jittered["train"]:
        base = speakers[0] if speaker.engine == "flite" else speakers[1]
        assert 0.8 <= speaker.speed <= 1.25 and 0.5 <= speaker.stretch <= 2.0 and 0 <= speaker.pitch <= 99 + 300
        assert abs(speaker.speed / base.speed - 1) <= 0.1 + 1e-9 or speaker.speed == 1.25
        assert abs(speaker.pitch - base.pitch) <= 0.1 * base.pitch + 0.5
    espeak_pitches = [s.pitch for _, s, _ in jittered["train"] if s.engine == "espeak-ng"]
    assert max(espeak_pitches) <= 99 and max(s.speed for _, s, _ in jittered["train"]) <= 1.25
    again = prepare_corpus.plan_utterances(speakers, counts, Texts(), seed=3, voice_jitter=0.1)
    assert again == jittered
    no_pitch = speaker_list.jitter(speakers[2], 0.2, random.Random(1))
    assert no_pitch.pitch is None and no_pitch.speed != 1.0


def test_training_texts_never_repeat_dev_or_test_sentences():
    sys.path.insert(0, LOCAL)
    import prepare_corpus

    class FewTexts:  # eight sentences: collisions between the splits are certain
        def generate(self, rng):
            return f"SENTENCE {rng.randrange(8)}"

    speakers = [speaker_list.Speaker(f"fl-{split}-01", split, "flite", "kal16", 1.0, None, 1.0, 1.0)
                for split in ("train", "dev", "test")]
    plan = prepare_corpus.plan_utterances(speakers, {"train": 30, "dev": 2, "test": 2}, FewTexts(), seed=1)
    assert list(plan) == ["train", "dev", "test"]
    held_out = {text for split in ("dev", "test") for _, _, text in plan[split]}
    assert held_out and not held_out & {text for _, _, text in plan["train"]}
    assert len(plan["train"]) == 30
    with pytest.raises(AsrkitError, match="repeated dev or test sentences"):
        prepare_corpus.plan_utterances(speakers, {"train": 3, "dev": 40, "test": 40}, FewTexts(), seed=1)


# ---- synthesis helpers -----------------------------------------------------------------------------

@pytest.mark.parametrize("rate, speed", [(16000, 1.0), (16000, 1.1), (22050, 0.9), (32000, 1.04)])
def test_resampling_gives_16k_and_applies_the_speed(rate, speed):
    seconds = 2.0
    samples = np.sin(2 * np.pi * 200 * np.arange(int(seconds * rate)) / rate)
    out = synthesis.to_target_rate(samples, rate, speed)
    assert abs(len(out) / 16000 - seconds / speed) < 0.002
    # A 200 Hz tone played `speed` times as fast is a 200*speed Hz tone.
    spectrum = np.abs(np.fft.rfft(out))
    assert abs(np.argmax(spectrum) * 16000 / len(out) - 200 * speed) < 2


def test_festival_session_survives_a_bad_utterance_and_a_bad_voice(synthesisers, tmp_path):
    import logging

    session = synthesis.FestivalSession(logging.getLogger("test"), timeout_s=60)
    good = speaker_list.Speaker("fe-kal-01", "train", "festival", "kal_diphone", 1.0, 110.0, 1.0, 1.0)
    bad_voice = speaker_list.Speaker("fe-no-01", "train", "festival", "no_such_voice", 1.0, None, 1.0, 1.0)
    try:
        with pytest.raises(synthesis.SynthesisError, match="cannot select voice"):
            session.synthesize(bad_voice, "hello", str(tmp_path / "bad.wav"))
        with pytest.raises(synthesis.SynthesisError, match="festival failed"):
            session.synthesize(good, "hello", str(tmp_path / "no_such_dir" / "x.wav"))
        session.synthesize(good, "hello world", str(tmp_path / "good.wav"))
    finally:
        session.close()
    samples, rate = soundfile.read(tmp_path / "good.wav")
    assert rate == 16000 and len(samples) > 0.3 * rate


@pytest.fixture
def festival_under_valgrind(synthesisers, tmp_path, monkeypatch):
    """`festival` on PATH runs the real one under valgrind; returns the directory of valgrind's logs."""
    if shutil.which("valgrind") is None and os.geteuid() == 0 and shutil.which("apt-get"):
        subprocess.run(["apt-get", "install", "-y", "-qq", "valgrind"], check=False, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"},
                       timeout=600)
    if shutil.which("valgrind") is None:
        pytest.skip("valgrind is not installed and not installable here: sudo apt-get install valgrind")
    logs = tmp_path / "valgrind"
    logs.mkdir()
    wrapper_dir = tmp_path / "bin"
    wrapper_dir.mkdir()
    wrapper = wrapper_dir / "festival"
    wrapper.write_text(f'#!/bin/sh\nexec valgrind --log-file={logs}/festival.%p.log {shutil.which("festival")} "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{wrapper_dir}{os.pathsep}{os.environ['PATH']}")
    return logs


def invalid_reads_of_a_session(logs, tmp_path, speakers, text):
    """Synthesise `text` in each voice in one FestivalSession; return valgrind's invalid reads in festival."""
    import logging

    session = synthesis.FestivalSession(logging.getLogger("test"), timeout_s=300)
    try:
        for index, speaker in enumerate(speakers):
            session.synthesize(speaker, text, str(tmp_path / f"{index}.wav"))
    finally:
        session.close()
    reports = "".join(path.read_text() for path in logs.glob("festival.*.log"))
    assert "ERROR SUMMARY" in reports, "valgrind did not run festival"
    for path in logs.glob("festival.*.log"):
        path.unlink()
    return reports.count("Invalid read")


def test_festival_diphone_voices_read_no_memory_past_their_pitchmarks(festival_under_valgrind, tmp_path,
                                                                        monkeypatch):
    # festival's own us_mapping reads one source pitchmark past the end of its track, so an
    # utterance depended on what earlier ones left on the heap; the guard keeps the read inside.
    diphone_voices = [speaker_list.Speaker("fe-kal-01", "train", "festival", "kal_diphone", 1.0, 133.0, 1.16, 1.0),
                      speaker_list.Speaker("fe-ked-01", "test", "festival", "ked_diphone", 1.0, 109.0, 1.13, 1.0)]
    text = "where can i buy a control"
    assert invalid_reads_of_a_session(festival_under_valgrind, tmp_path, diphone_voices, text) == 0
    monkeypatch.setattr(synthesis, "FESTIVAL_MAPPING_GUARD", "(set! asrkit_no_guard t)")
    assert invalid_reads_of_a_session(festival_under_valgrind, tmp_path, diphone_voices, text) > 0, \
        "festival no longer reads past its pitchmarks without the guard: the guard may be dropped"


# ---- the tiny corpus, end to end --------------------------------------------------------------------

def load(data_dir, split):
    return DataDir.load(os.path.join(data_dir, split))


def test_tiny_corpus_data_dirs_validate_and_splits_have_disjoint_speakers(tiny_corpus):
    data_dir, output = tiny_corpus
    speakers_by_split = {}
    total = 0
    for split in SPLITS:
        assert validate_data_dir(os.path.join(data_dir, split), require_text=True) == []
        directory = load(data_dir, split)
        total += len(directory)
        assert set(directory.utterance_ids) == set(directory.utt2dur) == set(directory.text)
        speakers_by_split[split] = set(directory.speaker_ids)
        assert len(speakers_by_split[split]) >= 5
    assert 90 <= total <= 100
    assert not speakers_by_split["train"] & speakers_by_split["dev"]
    assert not speakers_by_split["train"] & speakers_by_split["test"]
    assert not speakers_by_split["dev"] & speakers_by_split["test"]
    # Voices never heard in training are in test (festival's ked_diphone) and in dev (flite's awb).
    assert any(speaker.startswith("fe-ked-") for speaker in speakers_by_split["test"])
    assert any(speaker.startswith("fl-awb-") for speaker in speakers_by_split["dev"])
    assert not any(speaker.startswith("fl-awb-") for speaker in speakers_by_split["train"])
    assert "prepare_corpus summary: status=ok" in output and "test_speakers=" in output


def test_tiny_corpus_audio_is_16k_16bit_mono_with_the_stated_durations(tiny_corpus):
    data_dir, _ = tiny_corpus
    directory = load(data_dir, "test")
    for utterance_id, path in directory.wav_scp.items():
        info = soundfile.info(path)
        assert (info.samplerate, info.channels, info.subtype, info.format) == (16000, 1, "PCM_16", "FLAC")
        assert abs(info.duration - directory.utt2dur[utterance_id]) < 1e-3
        assert 0.5 < info.duration < 10
        samples, _ = soundfile.read(path)
        assert np.abs(samples).max() > 0.05  # speech, not silence


def test_tiny_corpus_texts_are_normalised_and_covered_by_the_lexicon(tiny_corpus, tmp_path):
    data_dir, _ = tiny_corpus
    dict_dir = tmp_path / "dict"
    texts = [os.path.join(data_dir, split, "text") for split in SPLITS]
    result = subprocess.run(
        [sys.executable, os.path.join(ROOT, "steps", "prepare_dict.py"), "--word-list",
         os.path.join(data_dir, "local", "corpus", "vocabulary.txt"), "--max-missing", "0",
         *[arg for path in texts for arg in ("--text", path)], str(dict_dir)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert result.returncode == 0, result.stdout
    assert check_dict_dir(dict_dir) == []
    lexicon = read_lexicon(dict_dir / "lexicon.txt")
    vocabulary = set(open(os.path.join(data_dir, "local", "corpus", "vocabulary.txt")).read().split())
    for split in SPLITS:
        for text in load(data_dir, split).text.values():
            words = text.split()
            assert 2 <= len(words) <= 10
            assert text == text.upper() and all(word.isalpha() for word in words)
            assert all(word in lexicon and word in vocabulary for word in words), text
    assert lexicon["<UNK>"] == [("SPN",)]
    assert all(not phone[-1].isdigit() for prons in lexicon.values() for phones in prons for phone in phones)


def _audio_digest(directory):
    audio = hashlib.sha256()
    for utterance_id in directory.utterance_ids:
        with open(directory.wav_scp[utterance_id], "rb") as handle:
            audio.update(utterance_id.encode() + handle.read())
    return audio.hexdigest()


def corpus_fingerprint(data_dir):
    """Ids, texts and the bytes of every audio file, per split."""
    digest = {}
    for split in SPLITS:
        directory = load(data_dir, split)
        digest[split] = (directory.utterance_ids, dict(directory.text), _audio_digest(directory))
    return digest


def test_two_builds_with_one_seed_are_identical(tiny_corpora):
    (first, _), (second, _) = tiny_corpora
    assert corpus_fingerprint(first) == corpus_fingerprint(second)


def test_rerun_reuses_finished_audio_and_redoes_a_missing_file(tiny_corpora):
    (_, _), (data_dir, _) = tiny_corpora
    before = corpus_fingerprint(data_dir)
    victim = load(data_dir, "dev").wav_scp
    victim_path = victim[sorted(victim)[0]]
    os.remove(victim_path)
    # The same options as the build (the config's --voice-jitter too): only the missing file is redone.
    status, output = build_corpus(data_dir, "--config", os.path.join(RECIPE, "conf", "corpus.conf"),
                                  "--size", "tiny", "--seed", "7", "--nj", "2")
    assert status == 0, output
    assert "synthesized=1 " in output and "failed=0" in output
    assert corpus_fingerprint(data_dir) == before


def test_a_fraction_of_train_is_subset_data_dirs_choice_with_the_whole_builds_audio(tiny_corpora, tmp_path):
    (whole, _), _ = tiny_corpora
    data_dir = tmp_path / "data"
    status, output = build_corpus(data_dir, "--config", os.path.join(RECIPE, "conf", "corpus.conf"),
                                  "--size", "tiny", "--seed", "7", "--nj", "2", "--train-fraction", "1/3")
    assert status == 0, output
    assert "--train-fraction 1/3: synthesising" in output
    subset_data_dir(whole / "train", tmp_path / "third", num_utts=len(load(whole, "train").utterance_ids) // 3)
    expected = load(tmp_path, "third")
    part, everything = corpus_fingerprint(data_dir), corpus_fingerprint(whole)
    assert part["train"][0] == expected.utterance_ids
    # The same audio as the whole build's, file by file; dev and test whole.
    assert part["train"][2] == _audio_digest(expected)
    assert part["dev"] == everything["dev"] and part["test"] == everything["test"]


@pytest.mark.parametrize("value", ["0", "4/3", "-1", "a third"])
def test_a_train_fraction_outside_0_to_1_is_refused_by_name(value, tmp_path):
    status, output = build_corpus(tmp_path / "data", "--train-fraction", value)
    assert status == 2 and "--train-fraction" in output and "synthesising" not in output


def test_the_fraction_of_a_multiple_of_three_is_its_exact_third():
    import prepare_corpus
    planned = [synthesis.PlannedUtterance(f"u{index:02d}", None, "A", "") for index in range(12)]
    kept = prepare_corpus.chosen_for_training(planned, prepare_corpus.train_fraction("1/3"), seed=0)
    assert len(kept) == 4 and kept == [u for u in planned if u in kept]   # in plan order
    assert prepare_corpus.chosen_for_training(planned, prepare_corpus.train_fraction("1"), seed=0) == planned
    with pytest.raises(AsrkitError, match="keeps none"):
        prepare_corpus.chosen_for_training(planned, prepare_corpus.train_fraction("1/13"), seed=0)


def test_another_seed_gives_another_corpus_and_stale_audio_is_replaced(synthesisers, tmp_path):
    speakers = tmp_path / "speakers.txt"
    speakers.write_text("fl-kal16-01 train flite kal16 1.0 100 1.0 1.0\nfl-awb-01 dev flite awb 1.0 - 1.0 1.0\n"
                        "fl-slt-01 test flite slt 1.0 - 1.0 1.0\n")
    data_dir = tmp_path / "data"
    common = ["--speakers", str(speakers), "--num-utterances", "10", "--nj", "1", "--vocabulary-size", "2000"]
    assert build_corpus(data_dir, *common, "--seed", "1")[0] == 0
    first = corpus_fingerprint(data_dir)
    status, output = build_corpus(data_dir, *common, "--seed", "2")
    assert status == 0, output
    assert "removed" in output and "made from other text, speaker settings" in output
    second = corpus_fingerprint(data_dir)
    assert first["train"][1] != second["train"][1] and first["train"][2] != second["train"][2]


def test_synthesis_failures_are_counted_and_fatal_only_above_the_threshold(synthesisers, tmp_path):
    speakers = tmp_path / "speakers.txt"
    speakers.write_text("fl-kal16-01 train flite kal16 1.0 - 1.0 1.0\nes-bad-01 train espeak-ng nosuchvoice 1.0 - 1.0 1.0\n"
                        "fl-awb-01 dev flite awb 1.0 - 1.0 1.0\nfl-slt-01 test flite slt 1.0 - 1.0 1.0\n")
    common = ["--speakers", str(speakers), "--num-utterances", "10", "--nj", "1", "--vocabulary-size", "2000"]
    status, output = build_corpus(tmp_path / "tolerant", *common, "--max-fail-ratio", "0.5")
    assert status == 0, output
    assert "failed=4 " in output  # half of the 8 training utterances went to the broken voice
    train = DataDir.load(tmp_path / "tolerant" / "train")
    assert len(train) == 4 and set(train.speaker_ids) == {"fl-kal16-01"}
    status, output = build_corpus(tmp_path / "strict", *common, "--max-fail-ratio", "0.1")
    assert status == 1 and "more than --max-fail-ratio" in output and "status=failed" in output


def test_flite_voice_that_does_not_exist_is_refused_before_synthesis(synthesisers, tmp_path):
    speakers = tmp_path / "speakers.txt"
    speakers.write_text("fl-x-01 train flite no_such_voice 1.0 - 1.0 1.0\nfl-awb-01 dev flite awb 1.0 - 1.0 1.0\n"
                        "fl-slt-01 test flite slt 1.0 - 1.0 1.0\n")
    status, output = build_corpus(tmp_path / "data", "--speakers", str(speakers), "--num-utterances", "5")
    assert status == 1 and "flite:no_such_voice" in output


def test_run_sh_refuses_unknown_options():
    result = subprocess.run([os.path.join(RECIPE, "run.sh"), "--no-such-option", "1"], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    assert result.returncode == 2 and "unknown option '--no-such-option'" in result.stdout
