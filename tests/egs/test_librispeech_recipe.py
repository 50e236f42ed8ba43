"""egs/librispeech: the download stage against a local HTTP server (MD5 right and wrong, completion markers),
data prep, the lexicon of the training words and the LMs through format_lm on a LibriSpeech-layout tree
generated here, and (slow) --size tiny end to end on speech synthesised with espeak-ng."""

import functools
import gzip
import hashlib
import http.server
import importlib.util
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import threading

import numpy as np
import pytest
import soundfile

from asrkit.data.validate import validate_data_dir
from asrkit.lm.arpa import write_arpa
from asrkit.lm.ngram import estimate_ngram_lm

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RECIPE = os.path.join(ROOT, "egs", "librispeech")
DOWNLOAD = os.path.join(RECIPE, "local", "download.py")

WORDS = ["THE", "CAT", "SAT", "ON", "A", "MAT", "DOG", "RAN", "TO", "HOUSE", "RED", "BIG", "SMALL", "BIRD", "SANG"]
# speaker -> (gender, espeak-ng voice)
SPEAKERS = {"11": ("M", "en-us+m3"), "12": ("F", "en-us+f3"), "13": ("M", "en+m5"), "14": ("F", "en+f4"),
            "21": ("M", "en-us+m1"), "22": ("F", "en-us+f2")}
SUBSETS = {"train-clean-5": ["11", "12", "13", "14"], "dev-clean-2": ["21", "22"]}


def sentences(seed, count):
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, size=rng.integers(2, 6))) for _ in range(count)]


def write_audio(path, text, voice, seed, synthesise):
    if synthesise:
        raw = subprocess.run(["espeak-ng", "-v", voice, "-s", "150", "--stdout", text.lower()], check=True,
                             capture_output=True).stdout
        samples, rate = soundfile.read(io.BytesIO(raw), dtype="float32")
        samples = np.interp(np.arange(0, len(samples), rate / 16000), np.arange(len(samples)), samples)
    else:
        samples = np.random.default_rng(seed).uniform(-0.2, 0.2, 8000)
    soundfile.write(path, samples.astype(np.float32), 16000, format="FLAC", subtype="PCM_16")


def make_librispeech(root, per_speaker=6, synthesise=False, dev_only_word="ZEBRA"):
    """root/LibriSpeech/{train-clean-5,dev-clean-2}/SPK/CHAPTER/... and SPEAKERS.TXT; returns root/LibriSpeech."""
    corpus = root / "LibriSpeech"
    seed = 0
    for subset, speakers in SUBSETS.items():
        for speaker in speakers:
            chapter = corpus / subset / speaker / "100"
            chapter.mkdir(parents=True)
            texts = sentences(int(speaker), per_speaker)
            if subset == "dev-clean-2" and speaker == "21":
                texts[0] += f" {dev_only_word}"
            with open(chapter / f"{speaker}-100.trans.txt", "w") as transcript:
                for number, text in enumerate(texts):
                    utterance = f"{speaker}-100-{number:04d}"
                    transcript.write(f"{utterance} {text}\n")
                    write_audio(chapter / f"{utterance}.flac", text, SPEAKERS[speaker][1], seed, synthesise)
                    seed += 1
    (corpus / "SPEAKERS.TXT").write_text("".join(f"{s} | {g} | subset | 1.0 | Reader {s}\n"
                                                 for s, (g, _) in SPEAKERS.items()))
    return corpus


def run_recipe(tmp_path, *options, timeout=600):
    command = [os.path.join(RECIPE, "run.sh"), "--data", str(tmp_path / "data"), "--exp", str(tmp_path / "exp"),
               *map(str, options)]
    # This interpreter's environment (its console scripts, this checkout's asrkit), as a checkout's .venv would be.
    env = {**os.environ, "PATH": f"{os.path.dirname(sys.executable)}:{os.environ['PATH']}", "PYTHONPATH": ROOT}
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)


@pytest.fixture
def http_server(tmp_path):
    """A local HTTP server over tmp_path/www; yields its base URL."""
    www = tmp_path / "www"
    www.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(www))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield www, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def tarball(path, members):
    with tarfile.open(path, "w:gz") as tar:
        for name, content in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(content)
            tar.addfile(info, io.BytesIO(content))
    return hashlib.md5(path.read_bytes()).hexdigest()


def download(*args):
    return subprocess.run([sys.executable, DOWNLOAD, *map(str, args)], capture_output=True, text=True, timeout=60)


def test_download_checks_md5_unpacks_and_marks_completion(tmp_path, http_server):
    www, url = http_server
    md5 = tarball(www / "dev-clean-2.tar.gz", {"LibriSpeech/dev-clean-2/1/2/1-2.trans.txt": b"1-2-0000 HELLO\n"})
    target = tmp_path / "corpus"
    wrong = download("--md5", "0" * 32, "--extract", f"{url}/dev-clean-2.tar.gz", target)
    assert wrong.returncode == 1 and f"MD5 {md5}, expected {'0' * 32}" in wrong.stderr
    assert not os.listdir(target)  # nothing half-written, no marker
    good = download("--md5", md5, "--extract", f"{url}/dev-clean-2.tar.gz", target)
    assert good.returncode == 0, good.stderr
    assert (target / "LibriSpeech" / "dev-clean-2" / "1" / "2" / "1-2.trans.txt").read_bytes() == b"1-2-0000 HELLO\n"
    assert (target / ".dev-clean-2.tar.gz.done").read_text() == f"{md5}  dev-clean-2.tar.gz\n"
    assert not (target / "dev-clean-2.tar.gz").exists()
    (www / "dev-clean-2.tar.gz").unlink()  # the marker says it is done: no second download
    again = download("--md5", md5, "--extract", f"{url}/dev-clean-2.tar.gz", target)
    assert again.returncode == 0 and "skipping" in again.stderr
    # A checksum from the server's md5sum.txt, as for the LM files; a file it does not list is refused.
    (www / "lm.arpa.gz").write_bytes(gzip.compress(b"\\data\\\n"))
    (www / "md5sum.txt").write_text(f"{hashlib.md5((www / 'lm.arpa.gz').read_bytes()).hexdigest()}  lm.arpa.gz\n")
    listed = download("--md5-list", f"{url}/md5sum.txt", f"{url}/lm.arpa.gz", target)
    assert listed.returncode == 0 and (target / "lm.arpa.gz").exists() and (target / ".lm.arpa.gz.done").exists()
    unlisted = download("--md5-list", f"{url}/md5sum.txt", f"{url}/other.txt", target)
    assert unlisted.returncode == 1 and "lists no checksum for other.txt" in unlisted.stderr


def test_download_refuses_members_outside_the_target(tmp_path, http_server):
    www, url = http_server
    md5 = tarball(www / "evil.tar.gz", {"../outside.txt": b"x"})
    result = download("--md5", md5, "--extract", f"{url}/evil.tar.gz", tmp_path / "corpus")
    assert result.returncode == 1 and "outside" in result.stderr
    assert not (tmp_path / "outside.txt").exists() and not (tmp_path / "corpus" / ".evil.tar.gz.done").exists()


def _member(name, kind=tarfile.REGTYPE, mode=0o644, uid=0, owner="root", linkname=""):
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.uid, info.gid, info.uname, info.gname = kind, mode, uid, uid, owner, owner
    info.linkname = linkname
    return info


def _archive(path, infos, content=b"x"):
    with tarfile.open(path, "w:gz") as tar:
        for info in infos:
            if info.isreg():
                info.size = len(content)
                tar.addfile(info, io.BytesIO(content))
            else:
                tar.addfile(info)
    return hashlib.md5(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("special", [
    _member("LibriSpeech/null", tarfile.CHRTYPE), _member("LibriSpeech/disk", tarfile.BLKTYPE),
    _member("LibriSpeech/pipe", tarfile.FIFOTYPE), _member("LibriSpeech/link", tarfile.SYMTYPE, linkname="/etc"),
    _member("LibriSpeech/hard", tarfile.LNKTYPE, linkname="LibriSpeech/a.txt")])
def test_download_refuses_devices_fifos_and_links_by_name(tmp_path, http_server, special):
    www, url = http_server
    md5 = _archive(www / "evil.tar.gz", [_member("LibriSpeech/a.txt"), special])
    target = tmp_path / "corpus"
    result = download("--md5", md5, "--extract", f"{url}/evil.tar.gz", target)
    assert result.returncode == 1 and f"member {special.name!r} is a" in result.stderr, result.stderr
    assert "not a file or directory; not unpacking" in result.stderr and "Traceback" not in result.stderr
    assert sorted(os.listdir(target)) == ["evil.tar.gz"]  # nothing unpacked, no marker


def _check_plain(root):
    for path in (root / "LibriSpeech", root / "LibriSpeech" / "run.sh"):
        status = os.stat(path)
        assert status.st_uid == os.getuid() and status.st_gid == os.getgid(), path
        assert not status.st_mode & 0o7022, f"{path}: {oct(status.st_mode)}"  # no setuid/setgid/sticky, g+w, o+w


def test_download_unpacks_files_as_the_user_without_setuid_or_shared_write(tmp_path, http_server):
    www, url = http_server
    infos = [_member("LibriSpeech", tarfile.DIRTYPE, 0o1777, 4242, "nobody"),
             _member("LibriSpeech/run.sh", mode=0o6777, uid=4242, owner="nobody")]
    md5 = _archive(www / "owned.tar.gz", infos, b"#!/bin/sh\n")
    result = download("--md5", md5, "--extract", f"{url}/owned.tar.gz", tmp_path / "corpus")
    assert result.returncode == 0, result.stderr
    _check_plain(tmp_path / "corpus")


def test_the_data_filter_by_hand_on_a_python_without_it(tmp_path, monkeypatch):
    spec = importlib.util.spec_from_file_location("librispeech_download", DOWNLOAD)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.delattr(tarfile, "data_filter")
    archive = tmp_path / "owned.tar.gz"
    _archive(archive, [_member("LibriSpeech", tarfile.DIRTYPE, 0o1777, 4242, "nobody"),
                       _member("LibriSpeech/run.sh", mode=0o6777, uid=4242, owner="nobody")])
    module.extract(str(archive), str(tmp_path / "corpus"))
    _check_plain(tmp_path / "corpus")
    _archive(archive, [_member("LibriSpeech/pipe", tarfile.FIFOTYPE)])
    with pytest.raises(SystemExit):
        module.extract(str(archive), str(tmp_path / "other"))
    assert not (tmp_path / "other").exists()


@pytest.mark.parametrize("damage", ["truncated", "not_a_tar"])
def test_download_names_a_truncated_or_non_tar_archive_with_the_right_md5(tmp_path, http_server, damage):
    www, url = http_server
    whole = www / "whole.tar.gz"
    _archive(whole, [_member(f"LibriSpeech/{index}.txt") for index in range(50)], os.urandom(20000))
    data = whole.read_bytes()[:len(whole.read_bytes()) // 2] if damage == "truncated" else gzip.compress(b"text\n")
    (www / "bad.tar.gz").write_bytes(data)
    result = download("--md5", hashlib.md5(data).hexdigest(), "--extract", f"{url}/bad.tar.gz", tmp_path / "corpus")
    assert result.returncode == 1 and "bad.tar.gz: cannot be unpacked" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr and not (tmp_path / "corpus" / ".bad.tar.gz.done").exists()
    assert not (tmp_path / "corpus" / "LibriSpeech").exists()  # a truncated archive is refused before unpacking


def test_data_prep_lexicon_of_training_words_and_an_external_lm(tmp_path):
    corpus = make_librispeech(tmp_path)
    # An external LM, gzipped, with a word the training text lacks (mapped to <UNK>).
    train_text = [line.split()[1:] for path in (corpus / "train-clean-5").rglob("*.trans.txt")
                  for line in path.read_text().splitlines()]
    lm = tmp_path / "external.arpa"
    write_arpa(estimate_ngram_lm(train_text + [["THE", "WOMBAT", "SAT"]], 3, "kn"), str(lm))
    lm_gz = tmp_path / "external.arpa.gz"
    lm_gz.write_bytes(gzip.compress(lm.read_bytes()))
    result = run_recipe(tmp_path, "--corpus", corpus, "--stop-stage", 3, "--lm", lm_gz)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "--corpus" in result.stderr and "nothing to download" in result.stderr
    data = tmp_path / "data"
    for split, count in (("train", 24), ("dev", 12)):
        assert validate_data_dir(str(data / split), require_text=True) == []
        assert len((data / split / "text").read_text().splitlines()) == count
    lexicon_words = {line.split()[0] for line in (data / "local" / "dict" / "lexicon.txt").read_text().splitlines()}
    assert "ZEBRA" not in lexicon_words and "CAT" in lexicon_words  # dev's own word never reaches the lexicon
    assert (data / "lang_test" / "arpa_oovs.txt").read_text().split() == ["WOMBAT"]
    assert (data / "lang_test" / "G.fst").stat().st_size > 0 and (data / "lang_bigram" / "G.fst").exists()
    assert "format_lm summary: status=ok" in result.stderr and "oov_words=1" in result.stderr
    assert (data / "local" / "lm" / "test.arpa").read_text() == (data / "lang_test" / "G.arpa").read_text()


def test_without_an_lm_a_trigram_of_the_training_text_and_the_corpus_lexicon(tmp_path):
    corpus = make_librispeech(tmp_path)
    # LibriSpeech's own lexicon beside the subsets is used for the words it has.
    (corpus / "librispeech-lexicon.txt").write_text("CAT K AE1 T\nMAT M AE1 T\n")
    result = run_recipe(tmp_path, "--corpus", corpus, "--stop-stage", 3)
    assert result.returncode == 0, result.stderr[-3000:]
    data = tmp_path / "data"
    assert (data / "local" / "lm" / "train_trigram.arpa").exists()
    assert "\\3-grams:" in (data / "lang_test" / "G.arpa").read_text()
    assert (data / "lang_test" / "arpa_oovs.txt").read_text() == ""
    assert "--pronunciations" in (tmp_path / "exp" / "log" / "stage2" / "prepare_dict.log").read_text()


def test_transcripts_with_numbers_are_written_out_or_named_with_their_line(tmp_path):
    """A corpus in LibriSpeech's layout transcribed with digits ("got 00, 10"): stage 1 writes them out in words
    (the default); without that, the dictionary stage names the transcript's file, line and the fix."""
    corpus = make_librispeech(tmp_path)
    transcript = next((corpus / "train-clean-5").rglob("*.trans.txt"))
    lines = transcript.read_text().splitlines()
    utterance = lines[1].split()[0]
    lines[1] += " GOT 00, 10"
    transcript.write_text("\n".join(lines) + "\n")
    written = run_recipe(tmp_path, "--corpus", corpus, "--stop-stage", 2)
    assert written.returncode == 0, written.stderr[-3000:]
    text = dict(line.split(maxsplit=1) for line in (tmp_path / "data" / "train" / "text").read_text().splitlines())
    assert text[utterance].endswith(" GOT ZERO ZERO TEN")
    assert "normalize_text summary: status=ok" in written.stderr
    kept = run_recipe(tmp_path / "kept", "--corpus", corpus, "--stop-stage", 2, "--normalize-text", "false")
    assert kept.returncode != 0
    assert re.search(r"data/train/text:\d+: utterance " + utterance + r": '00,' is not a word of letters and "
                     r"apostrophes \(fix: utils/normalize_text", kept.stderr), kept.stderr[-3000:]


def test_bad_options_and_a_missing_subset(tmp_path):
    assert run_recipe(tmp_path, "--size", "huge").returncode == 2
    assert run_recipe(tmp_path, "--lm", tmp_path / "missing.arpa").returncode == 2
    result = run_recipe(tmp_path, "--corpus", tmp_path, "--stage", 1, "--stop-stage", 1)
    assert result.returncode == 1 and "no " in result.stderr and "train-clean-5" in result.stderr


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="espeak-ng is needed (bin/setup-env installs it)")
def test_tiny_recipe_runs_end_to_end(tmp_path):
    corpus = make_librispeech(tmp_path, per_speaker=8, synthesise=True)
    result = run_recipe(tmp_path, "--corpus", corpus, "--size", "tiny", "--pocketsphinx", "false", timeout=1800)
    assert result.returncode == 0, result.stderr[-3000:]
    exp = tmp_path / "exp"
    best = (exp / "wblstm_ce" / "decode_dev" / "best_wer").read_text()
    assert best.startswith("%WER")
    results = (exp / "RESULTS").read_text()
    assert "wblstm_ce" in results and "dev" in results


def console_script(name):
    return os.path.join(os.path.dirname(sys.executable), name)


def test_a_kaldi_data_dir_with_kaldi_features_runs_from_the_dictionary_stage(tmp_path):
    """README's "A Kaldi data dir" as written: Kaldi's feats.scp and cmvn.scp stay as they are, asrkit-featurize
    --out-data-dir writes asrkit's own tables, and the recipe runs on them from stage 2."""
    corpus = make_librispeech(tmp_path)
    kaldi = tmp_path / "kaldi"
    for split, subset in (("train", "train-clean-5"), ("dev", "dev-clean-2")):
        prepared = subprocess.run([sys.executable, os.path.join(RECIPE, "local", "prepare_librispeech.py"),
                                   str(corpus / subset), str(kaldi / split)], capture_output=True, text=True)
        assert prepared.returncode == 0, prepared.stderr
        utterances = [line.split()[0] for line in (kaldi / split / "wav.scp").read_text().splitlines()]
        (kaldi / split / "feats.scp").write_text("".join(f"{u} /kaldi/mfcc/raw_mfcc_{split}.1.ark:{9 + 100 * n}\n"
                                                         for n, u in enumerate(utterances)))
        (kaldi / split / "cmvn.scp").write_text("11 /kaldi/mfcc/cmvn.ark:5\n")
    kaldi_feats = (kaldi / "train" / "feats.scp").read_text()
    data, feats = tmp_path / "data", tmp_path / "exp" / "feats"
    for split, cmvn in (("train", ["--compute-cmvn"]), ("dev", [])):
        featurized = subprocess.run([console_script("asrkit-featurize"), "--out-data-dir", str(data / split), *cmvn,
                                     str(kaldi / split), str(feats / split)], capture_output=True, text=True)
        assert featurized.returncode == 0, featurized.stderr
    assert (kaldi / "train" / "feats.scp").read_text() == kaldi_feats  # Kaldi's dir is left as it was
    result = run_recipe(tmp_path, "--stage", 2, "--stop-stage", 4)
    assert result.returncode == 0, result.stderr[-3000:]
    assert (data / "lang_test" / "G.fst").exists()
    train_feats = (data / "train" / "feats.scp").read_text()
    assert "/kaldi/" not in train_feats and len(train_feats.splitlines()) == 24


def test_lhotse_manifests_run_from_the_dictionary_stage(tmp_path):
    """README's "Lhotse manifests" as written: lhotse_to_kaldi, then the recipe from stage 2."""
    corpus = make_librispeech(tmp_path)
    manifests = tmp_path / "manifests"
    manifests.mkdir()
    for split, subset in (("train", "train-clean-5"), ("dev", "dev-clean-2")):
        recordings, supervisions = [], []
        for transcript in sorted((corpus / subset).rglob("*.trans.txt")):
            for line in transcript.read_text().splitlines():
                utterance, text = line.split(" ", 1)
                path = str(transcript.parent / f"{utterance}.flac")
                frames = soundfile.info(path).frames
                recordings.append({"id": utterance, "sources": [{"type": "file", "channels": [0], "source": path}],
                                   "sampling_rate": 16000, "num_samples": frames, "duration": frames / 16000})
                supervisions.append({"id": utterance, "recording_id": utterance, "start": 0.0,
                                     "duration": frames / 16000, "channel": 0, "text": text,
                                     "speaker": utterance.split("-")[0]})
        for name, items in (("recordings", recordings), ("supervisions", supervisions)):
            with gzip.open(manifests / f"{name}_{split}.jsonl.gz", "wt", encoding="utf-8") as handle:
                handle.writelines(json.dumps(item) + "\n" for item in items)
        imported = subprocess.run([console_script("lhotse_to_kaldi"), str(manifests / f"recordings_{split}.jsonl.gz"),
                                   str(manifests / f"supervisions_{split}.jsonl.gz"), str(tmp_path / "data" / split)],
                                  capture_output=True, text=True)
        assert imported.returncode == 0, imported.stderr
    result = run_recipe(tmp_path, "--stage", 2, "--stop-stage", 4)
    assert result.returncode == 0, result.stderr[-3000:]
    data = tmp_path / "data"
    assert len((data / "train" / "feats.scp").read_text().splitlines()) == 24
    assert "ZEBRA" not in (data / "local" / "dict" / "lexicon.txt").read_text()  # dev's words stay out
