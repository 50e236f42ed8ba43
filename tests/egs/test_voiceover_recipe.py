"""egs/voiceover/run.sh --size tiny, end to end on the real game packages from Debian: fetching and
unpacking both games, data dirs split by character (dialogues, scenes and object descriptions; Beneath a
Steel Sky's lines in train), dictionary with letter-to-sound pronunciations, LMs,
narrowband features (MP3 at 11025 Hz downsampled to 8 kHz), flat start, tree, multi-style CE with
narrowband styles on the fly, decoding at the LM weight chosen on dev, sMBR, decoding again, the
pocketsphinx baseline and the results table; with --ivectors true (the extractor and train's online i-vectors cost
about ten seconds), so the i-vectors go through the servers' noisy features, alignment, sMBR and decoding; and with
--extra-train, a dozen espeak-ng sentences of another corpus that the acoustic models train on and the LMs do not."""

import json
import os
import re
import shutil
import subprocess

import pytest
import soundfile

from asrkit.data.data_dir import DataDir
from asrkit.data.validate import validate_data_dir

# The tiny voiceover recipe end to end, both games and i-vectors: left out by tests/run.sh --quick.
pytestmark = pytest.mark.slow

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RECIPE = os.path.join(ROOT, "egs", "voiceover")


@pytest.mark.skipif(shutil.which("apt-get") is None or shutil.which("festival") is None,
                    reason="apt-get (to download the games from Debian) and festival are needed")
def test_tiny_recipe_runs_end_to_end(tmp_path):
    data, exp = tmp_path / "data", tmp_path / "exp"
    extra_texts = _espeak_data_dir(tmp_path / "extra")
    command = [os.path.join(RECIPE, "run.sh"), "--size", "tiny", "--data", str(data), "--exp", str(exp),
               "--ivectors", "true", "--sat", "true", "--adapt", "true", "--extra-train", str(tmp_path / "extra")]
    result = subprocess.run(command, capture_output=True, text=True, timeout=1200)
    assert result.returncode == 0, result.stderr[-3000:]
    speakers = {}
    for split in ("train", "dev", "test"):
        assert validate_data_dir(str(data / split), require_text=True) == [], split
        speakers[split] = {line.split()[1] for line in open(data / split / "utt2spk")}
        for line in open(data / split / "wav.scp"):
            utterance, wav = line.split()
            assert wav.endswith(".wav" if utterance.startswith("bass-") else ".mp3") and os.path.exists(wav)
    # Speakers are characters; dev and test characters never train; the hero trains.
    assert "fotaq-joe" in speakers["train"]
    assert not speakers["train"] & (speakers["dev"] | speakers["test"])
    assert not speakers["dev"] & speakers["test"]
    # Beneath a Steel Sky's lines (8-bit PCM WAV) train, each its own speaker, never in dev or test.
    bass_speakers = {speaker for speaker in speakers["train"] if speaker.startswith("bass-")}
    assert len(bass_speakers) == 30
    assert not any(speaker.startswith("bass-") for speaker in speakers["dev"] | speakers["test"])
    # The cutaway scenes and Joe's object descriptions train too (their speech files are named by
    # letters, the dialogues' by digits: fotaq-faye-c18a_031, fotaq-joe-joe00411, fotaq-joe-03sssj1).
    train_utterances = [line.split()[0] for line in open(data / "train" / "text")]
    assert any(utterance.split("-", 2)[2][0].isalpha() for utterance in train_utterances)
    assert any(utterance.split("-", 2)[2][0].isdigit() for utterance in train_utterances)
    train_texts = {line.split(maxsplit=1)[1] for line in open(data / "train" / "text")}
    assert not train_texts & {line.split(maxsplit=1)[1] for line in open(data / "test" / "text")}
    generated = open(data / "local" / "dict" / "generated_lexicon.txt").read().split("\n")
    lexicon_words = {line.split()[0] for line in open(data / "local" / "dict" / "lexicon.txt")}
    assert all(line.split()[0] in lexicon_words for line in generated if line)
    # The vocabulary is train's words (--extra-train's among them) and frequent English words: test words outside
    # both stay out.
    train_words = {word for text in train_texts | set(extra_texts.values()) for word in text.split()}
    assert train_words <= lexicon_words and {"THE", "PEOPLE", "BECAUSE"} <= lexicon_words
    assert len(lexicon_words) <= len(train_words) + 1000 + 2  # + <UNK> and !SIL
    assert not {line.split()[0] for line in generated if line} - train_words  # letter-to-sound: train's only
    _the_extra_training_set_trains_the_acoustic_models_only(data, exp, extra_texts)
    # The decoding LM interpolates the training lines' trigram with pocketsphinx's general English 3-gram, the
    # weight fitted on dev's text, limited to the lexicon's words; the graph's LM is what every stage reads.
    mix_log = open(exp / "log" / "stage3" / "mix_lm.log").read()
    assert "mix_lm summary: status=ok" in mix_log and "en-us.lm.bin" in mix_log
    weights = [float(w) for w in re.search(r"weights=([0-9.,]+)", mix_log).group(1).split(",")]
    assert len(weights) == 2 and 0 < weights[1] < 1
    ppl = re.search(r"heldout_ppl=([0-9.]+),[0-9.]+ mixture_ppl=([0-9.]+)", mix_log)
    assert float(ppl.group(2)) < float(ppl.group(1))  # the mixture beats the training lines' trigram on dev
    assert json.load(open(data / "lang_test" / "format_lm.json"))["prune_threshold"] == 1e-7
    assert open(data / "local" / "lm" / "test.arpa").read() == open(data / "lang_test" / "G.arpa").read()
    # Decoding has a larger vocabulary (words with an apostrophe among them), the games' training words all in it
    # (--extra-train's own words only train).
    decode_words = {line.split()[0] for line in open(data / "local" / "dict_test" / "lexicon.txt")}
    games_words = {word for text in train_texts for word in text.split()}
    extra_words = {word for text in extra_texts.values() for word in text.split()} - games_words
    assert lexicon_words - extra_words < decode_words and any("'" in word for word in decode_words - lexicon_words)
    assert "ZEBRA" in extra_words
    assert {w.split()[0] for w in open(data / "lang_test" / "words.txt")} == decode_words | {"<eps>", "#0", "<s>", "</s>"}
    # The narrowband front end travels with the model.
    front_end = json.load(open(exp / "wblstm_ce" / "final" / "featurize.json"))
    assert (front_end["sample_rate"], front_end["compression"], front_end["allow_downsample"]) == (8000, "root10", True)
    # The acoustic network is [Mohamed2015]'s windowed BLSTM (--am's default).
    assert json.load(open(exp / "wblstm_ce" / "final" / "model.json"))["model"]["name"] == "wblstm"
    # Its input is the 4 stacked frames of 40 bands and a 10-dim i-vector (--size tiny), which the noisifying
    # servers extract from the features they serve; the models carry the extractor to alignment and decoding.
    for model in ("wblstm_ce", "wblstm_sat", "wblstm_smbr"):
        assert json.load(open(exp / model / "final" / "model.json"))["feature_dim"] == 170
        assert os.path.exists(exp / model / "final" / "final.ie")
    assert "online i-vectors of dimension 10" in open(exp / "wblstm_ce" / "log" / "serve.1.log").read()
    assert "online i-vectors of dimension 10" in open(exp / "log" / "stage7" / "decode_wblstm_ce_test.log").read()
    for model in ("wblstm_ce", "wblstm_smbr"):
        weight = float(open(exp / model / "decode_dev" / "best_lmwt").read())
        for split in ("test", "train_fit"):
            assert os.path.exists(exp / model / f"decode_{split}" / "best_wer")
        log = open(exp / "log" / ("stage7" if model == "wblstm_ce" else "stage9") / f"decode_{model}_test.log").read()
        assert f"--acoustic-scale {1 / weight!r} " in log
    # --sat true: sMBR trains from the CE model's speaker-adaptive training, which gave the training characters
    # with enough frames amplitudes of their own.
    sat_log = open(exp / "log" / "stage8" / "train_wblstm_sat.log").read()
    assert "asrkit-train-sat summary: status=ok" in sat_log
    sat = json.load(open(exp / "wblstm_sat" / "final" / "sat.json"))
    assert sat["options"]["method"] == "lhuc" and sat["speakers"]
    extra_speakers = {utterance.rsplit("-", 1)[0] for utterance in extra_texts}
    assert set(sat["speakers"]) <= set(speakers["train"]) | extra_speakers
    smbr_log = open(exp / "log" / "stage8" / "train_wblstm_smbr.log").read()
    assert "asrkit-train-seq summary: status=ok steps=10" in smbr_log
    assert f"{exp}/wblstm_sat/final {exp}/wblstm_sat/graph_bigram" in smbr_log
    # The sMBR model is exported as a recognizer package at the parameters dev chose, its LM weight chosen again on
    # dev as the package hears it (asrkit-tune-package), and it transcribes.
    package = exp / "wblstm_smbr" / "package"
    decode = json.load(open(package / "decode.json"))
    tuned = exp / "wblstm_smbr" / "package_tuning_dev"
    assert decode["lm_weight"] == float(open(tuned / "best_lmwt").read())
    assert decode["chosen_on"] == str(tuned) and (tuned / f"wer_{decode['lm_weight']:g}").exists()
    assert (tuned / f"wer_{float(open(exp / 'wblstm_smbr' / 'decode_dev' / 'best_lmwt').read()):g}").exists()
    assert "asrkit-tune-package summary: status=ok" in open(exp / "log" / "stage10" / "tune_dev.log").read()
    assert (decode["beam"], decode["max_active"]) == (10, 3000)  # the beams dev chose (run.sh's stage 10)
    assert "asrkit-export summary: status=ok" in open(exp / "log" / "stage10" / "export_wblstm_smbr.log").read()
    # Each dev and test character gets a warp factor of the grid (VTLN), and those sets are featurized again.
    for split in ("dev", "test"):
        warps = dict(line.split() for line in open(data / split / "spk2warp"))
        assert set(warps) == speakers[split]
        assert set(warps.values()) <= {"0.85", "0.9", "0.95", "1", "1.05", "1.1", "1.15"}
        assert "asrkit-featurize summary: status=ok" in open(exp / "log" / "stage11" / f"featurize_{split}.log").read()
        assert open(exp / "warps" / f"spk2warp_{split}").read() == open(data / split / "spk2warp").read()
    # pocketsphinx decodes test alone, at its own language weight (what every dev sweep of RESULTS chose).
    assert not (exp / "pocketsphinx" / "decode_dev").exists()
    assert "--lm-weight" not in open(exp / "log" / "stage12" / "pocketsphinx_decode_test.log").read()
    results = open(exp / "RESULTS").read()
    assert results.startswith("# egs/voiceover results")
    assert "# warp factors chosen per speaker (VTLN" in results
    for model in ("wblstm_ce", "wblstm_smbr", "tdnnf_lfmmi", "wblstm_smbr_lfmmi", "pocketsphinx"):
        assert f"] EXP/{model}/decode_test/score/wer" in results  # the exp dir as EXP: no machine's paths
    # By default a TDNN-F trains with LF-MMI too (--lfmmi-am tdnnf), and its frame-level combination with the
    # windowed BLSTM's sMBR model is decoded at the combination weight and LM weight dev chose, which test is then
    # decoded at.
    assert json.load(open(exp / "tdnnf_lfmmi" / "config.json"))["model"]["name"] == "tdnnf"
    assert "wblstm_smbr and tdnnf_lfmmi combined frame by frame" in results
    combined = exp / "wblstm_smbr_lfmmi" / "decode_dev"
    weight = open(combined / "combine_weight").read().strip()
    assert weight in ("0.6", "0.7", "0.8")
    test_log = open(exp / "log" / "stage14" / "decode_wblstm_smbr_test.log").read()  # the combination's
    assert f"--combine-weight {weight} " in test_log
    # The combination is the recipe's final model: its package holds both networks at the weights dev chose, and it
    # transcribes (online CMN where the decode had the speaker's mean: words, not the same words).
    combined_package = exp / "wblstm_smbr_lfmmi" / "package"
    decode = json.load(open(combined_package / "decode.json"))
    assert decode["combination"]["weight"] == float(weight) and decode["beam"] == 10
    assert decode["lm_weight"] == float(open(exp / "wblstm_smbr_lfmmi" / "package_tuning_dev" / "best_lmwt").read())
    assert "combined=true" in open(exp / "log" / "stage15" / "export_wblstm_smbr.log").read()
    from asrkit.recognizer.recognizer import Recognizer

    wav = open(data / "test" / "wav.scp").readline().split()[1]
    recognizer = Recognizer(str(combined_package))
    assert len(recognizer.acoustic.network.networks) == 2
    words = recognizer.transcribe(wav).text.split()
    assert words and set(words) <= set(recognizer.package.words)
    _the_package_as_users_run_it(combined_package, data, tmp_path / "users")
    # --adapt true: the sMBR network adapted to each dev and test character from the combination's first pass (its
    # lattices), the LF-MMI one as it is; the second pass decoded at dev's LM weight and set beside the first in
    # RESULTS.
    adapted = exp / "wblstm_smbr_lfmmi_adapted"
    for split in ("dev", "test"):
        assert (exp / "wblstm_smbr_lfmmi" / f"decode_{split}" / "lat.scp").exists()
        log = open(exp / "log" / "stage16" / f"adapt_wblstm_smbr_{split}.log").read()
        assert "asrkit-adapt summary: status=ok" in log
        assert (adapted / f"adapt_wblstm_smbr_{split}" / "adapt.json").exists()
        assert not (adapted / f"adapt_tdnnf_lfmmi_{split}").exists()
    assert f"] EXP/{adapted.name}/decode_test/score/wer" in results
    assert "speaker adaptation relative to the sMBR + LF-MMI combination's first pass" in results
    assert "# stage times (s)" in results
    # Each stage does one job, and each ran (--adapt true: stage 16 too).
    for stage in range(18):
        assert f"== stage {stage} done in " in result.stderr, stage


EXTRA_SENTENCES = ["the zebra piano plays at midnight", "a purple zebra piano in the garden",
                   "directions to the nearest coffee shop", "call my sister on the telephone",
                   "what is the weather like tomorrow", "play some music by the window"]


def _espeak_data_dir(out_dir):
    """--extra-train's corpus: EXTRA_SENTENCES spoken by two espeak-ng voices at its 22.05 kHz, a data dir of
    another domain (as egs/voicesearch's data/train is) -> {utterance: text}."""
    if shutil.which("espeak-ng") is None:
        pytest.skip("espeak-ng is not installed (bin/setup-env installs it as root)")
    os.makedirs(out_dir / "audio")
    texts = {}
    for voice in ("en-us", "en"):
        for index, sentence in enumerate(EXTRA_SENTENCES):
            utterance = f"espeak-{voice}-{index:02d}"
            wav = out_dir / "audio" / f"{utterance}.wav"
            subprocess.run(["espeak-ng", "-v", voice, "-w", str(wav), sentence], check=True)
            texts[utterance] = sentence.upper()
    utterances = sorted(texts)
    speakers = {utterance: utterance.rsplit("-", 1)[0] for utterance in utterances}
    DataDir(wav_scp={utterance: f"{out_dir}/audio/{utterance}.wav" for utterance in utterances}, text=texts,
            utt2spk=speakers, spk2utt={speaker: [u for u in utterances if speakers[u] == speaker]
                                       for speaker in set(speakers.values())},
            utt2dur={utterance: f"{soundfile.info(out_dir / 'audio' / f'{utterance}.wav').duration:.3f}"
                     for utterance in utterances}).write(str(out_dir))
    return texts


def _the_extra_training_set_trains_the_acoustic_models_only(data, exp, extra_texts):
    """--extra-train: the acoustic models train on the games' lines and the extra utterances (data/train_combined,
    featurized at 8 kHz), sequence training's bigram learns their word pairs, the decoding LMs and train_fit keep
    the games' lines alone."""
    games = {line.split()[0] for line in open(data / "train" / "utt2spk")}
    assert not games & set(extra_texts)
    combined = data / "train_combined"
    assert validate_data_dir(str(combined), require_text=True) == []
    assert {line.split()[0] for line in open(combined / "feats.scp")} == games | set(extra_texts)
    train_fit = {line.split()[0] for line in open(data / "train_fit" / "feats.scp")}
    assert train_fit and train_fit <= games
    lm_dir = data / "local" / "lm"
    assert "ZEBRA PIANO" in open(lm_dir / "bigram.arpa").read()
    assert "ZEBRA PIANO" not in open(lm_dir / "train_trigram.arpa").read()
    assert "ZEBRA" not in {line.split()[0] for line in open(data / "local" / "dict_test" / "lexicon.txt")}
    # The tree's alignments (the CE model's targets) hold them, but for those the tiny models fail to align.
    aligned = {line.split()[0] for line in open(exp / "tree_ali" / "ali.scp")}
    assert len(set(extra_texts) & aligned) >= len(extra_texts) // 2


def _the_package_as_users_run_it(package, data, work):
    """The final package on the test set's recordings as issue 59's users run it: joined into one recording cut
    at its pauses into subtitles, a directory of them to a transcript each, a phrase list with a word festival
    pronounces, and hotwords."""
    import numpy as np
    import soundfile
    from click.testing import CliRunner

    from asrkit.cli.transcribe import main as transcribe_main
    from asrkit.recognizer.hotwords import Hotword
    from asrkit.recognizer.recognizer import Recognizer

    recognizer = Recognizer(str(package))
    specs = [line.split()[1] for line in open(data / "test" / "wav.scp")][:6]
    work.mkdir(parents=True, exist_ok=True)
    joined = work / "joined.wav"
    soundfile.write(joined, np.concatenate([recognizer.load_audio(spec) for spec in specs]), recognizer.sample_rate)
    subtitles = CliRunner().invoke(transcribe_main, [str(package), str(joined), "--format", "srt",
                                                     "--max-utterance-seconds", "5"])
    assert subtitles.exit_code == 0, subtitles.output
    cues = subtitles.stdout.strip().split("\n\n")
    assert cues[0].startswith("1\n00:00:") and " --> " in cues[0] and "summary: status=ok" in subtitles.stderr
    recordings = work / "recordings"
    recordings.mkdir(parents=True)
    for spec in specs[:3]:
        os.symlink(spec, recordings / os.path.basename(spec))
    run = CliRunner().invoke(transcribe_main, [str(package), str(recordings), "--output-dir", str(work / "out")])
    assert run.exit_code == 0, run.output
    assert sorted(os.listdir(work / "out")) == sorted(os.path.basename(spec).rsplit(".", 1)[0] + ".txt"
                                                       for spec in specs[:3])
    grammar = recognizer.with_phrases(["the amazon queen", "zorblax", "[unk]"])
    assert "ZORBLAX" in grammar.package.words  # pronounced by festival's letter-to-sound rules
    assert set(grammar.transcribe(specs[0]).text.split()) <= {"THE", "AMAZON", "QUEEN", "ZORBLAX", "<UNK>"}
    spec, text = next((spec, text) for spec in specs for text in [recognizer.transcribe(spec).text] if text)
    known = text.split()[0]
    biased = recognizer.with_hotwords([Hotword((known,), 4.0)])
    assert known in biased.transcribe(spec).text.split()
