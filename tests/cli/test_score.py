"""asrkit-score end to end through click's CliRunner."""

import pytest
from click.testing import CliRunner

from asrkit.cli.score import main


def write(path, text):
    path.write_text(text, encoding="utf-8")
    return str(path)


@pytest.fixture
def texts(tmp_path):
    ref = write(tmp_path / "ref", "s1-a switch off the kitchen light now\ns1-b hello world\ns2-a good morning\n")
    hyp = write(tmp_path / "hyp", "s1-a switch of kitchen light now please\ns1-b hello world\ns2-a good evening\n")
    return ref, hyp


def run(*args):
    return CliRunner().invoke(main, [str(arg) for arg in args])


def test_prints_kaldi_lines_and_a_summary(texts):
    result = run(*texts)
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "%WER 40.00 [ 4 / 10, 1 ins, 1 del, 2 sub ]",
        "%SER 66.67 [ 2 / 3 ]",
        "Scored 3 sentences, 0 not present in hyp.",
    ]
    log = result.stderr
    assert "command line:" in log
    last_line = log.strip().splitlines()[-1]
    assert last_line.endswith(
        "asrkit-score summary: status=ok wer=40.00 errors=4 words=10 ins=1 del=1 sub=2 "
        "ser=66.67 sentences=3 missing_hyp=0"
    )


def test_writes_the_output_dir(texts, tmp_path):
    utt2spk = write(tmp_path / "utt2spk", "s1-a s1\ns1-b s1\ns2-a s2\n")
    out_dir = tmp_path / "exp" / "scoring"
    result = run("--utt2spk", utt2spk, *texts, out_dir)
    assert result.exit_code == 0, result.output
    assert sorted(path.name for path in out_dir.iterdir()) == ["ops", "per_spk", "per_utt", "wer"]
    assert (out_dir / "wer").read_text().splitlines() == result.stdout.splitlines()
    per_utt = (out_dir / "per_utt").read_text().splitlines()
    assert per_utt[:4] == [
        "s1-a ref  switch  off  the  kitchen  light  now    ***",
        "s1-a hyp  switch   of  ***  kitchen  light  now  please",
        "s1-a op      C     S    D      C       C     C      I",
        "s1-a #csid 4 1 1 1",
    ]
    per_spk = (out_dir / "per_spk").read_text().splitlines()
    assert [line.split()[:2] for line in per_spk] == [
        ["SPEAKER", "id"], ["s1", "raw"], ["s1", "sys"], ["s2", "raw"], ["s2", "sys"],
        ["SUM", "raw"], ["SUM", "sys"],
    ]
    assert per_spk[3].split() == ["s2", "raw", "1", "2", "1", "1", "0", "0", "1", "1"]
    ops = [line.split() for line in (out_dir / "ops").read_text().splitlines()]
    assert ["deletion", "the", "***", "1"] in ops
    assert ["substitution", "morning", "evening", "1"] in ops
    assert len(ops) == 4


def test_no_per_spk_without_utt2spk(texts, tmp_path):
    result = run(*texts, tmp_path / "out")
    assert result.exit_code == 0, result.output
    assert not (tmp_path / "out" / "per_spk").exists()


def test_normalisation_options(tmp_path):
    ref = write(tmp_path / "ref", "u1 OK, I'm GONNA go <UNK> now.\n")
    hyp = write(tmp_path / "hyp", "u1 okay im going to go [noise] now\n")
    mapping = write(tmp_path / "glm", "ok okay\ngonna going to\n")
    ignored = write(tmp_path / "ignored", "# non-speech\n[noise]\n")
    plain = run(ref, hyp)
    assert plain.stdout.startswith("%WER 100.00 [ 6 / 6,")
    result = run("-l", "-p", "-m", mapping, "-i", "<unk>", "--ignore-words-file", ignored, ref, hyp)
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0] == "%WER 0.00 [ 0 / 6, 0 ins, 0 del, 0 sub ]"


def test_uppercase_and_lowercase_exclude_each_other(texts):
    result = run("--lowercase", "--uppercase", *texts)
    assert result.exit_code == 2
    assert "exclude each other" in result.output


def test_missing_and_extra_hypotheses_are_warned_about(tmp_path):
    ref = write(tmp_path / "ref", "a one two\nb three\nc four five\n")
    hyp = write(tmp_path / "hyp", "a one two\nz extra words\n")
    result = run(ref, hyp)
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "%WER 60.00 [ 3 / 5, 0 ins, 3 del, 0 sub ] [PARTIAL]",
        "%SER 66.67 [ 2 / 3 ]",
        "Scored 3 sentences, 2 not present in hyp.",
    ]
    assert "2 of 3 reference utterances have no hypothesis (scored as all deletions): b, c" in result.stderr
    assert "1 hypothesis utterances have no reference and are ignored: z" in result.stderr

    present = run("--mode", "present", ref, hyp)
    assert present.stdout.splitlines()[0] == "%WER 0.00 [ 0 / 2, 0 ins, 0 del, 0 sub ] [PARTIAL]"
    assert present.stdout.splitlines()[2] == "Scored 1 sentences, 2 not present in hyp."

    strict = run("--mode", "strict", ref, hyp)
    assert strict.exit_code == 1
    assert "2 reference utterances have no hypothesis: b, c" in strict.stderr


def test_bad_hypothesis_file_fails_naming_file_and_line(texts, tmp_path):
    ref, _ = texts
    hyp = tmp_path / "bad_hyp"
    hyp.write_bytes(b"s1-a switch\ns1-b caf\xe9\n")
    result = run(ref, hyp)
    assert result.exit_code == 1
    assert f"{hyp}:2: bytes that are not UTF-8" in result.stderr
    assert "asrkit-score summary: status=failed" in result.stderr
    assert result.stdout == ""


def test_duplicate_utterance_fails(texts, tmp_path):
    ref, _ = texts
    hyp = write(tmp_path / "dup", "s1-a x\ns1-a y\n")
    result = run(ref, hyp)
    assert result.exit_code == 1
    assert f"{hyp}:2: duplicate utterance id 's1-a' (first on line 1)" in result.stderr


def test_utterance_without_speaker_fails_and_writes_nothing(texts, tmp_path):
    utt2spk = write(tmp_path / "utt2spk", "s1-a s1\n")
    out_dir = tmp_path / "out"
    result = run("-s", utt2spk, *texts, out_dir)
    assert result.exit_code == 1
    assert "2 scored utterances have no speaker: s1-b, s2-a" in result.stderr
    assert not out_dir.exists() or list(out_dir.iterdir()) == []


def test_missing_input_is_a_usage_error(tmp_path):
    result = run(tmp_path / "nope", tmp_path / "nope2")
    assert result.exit_code == 2
    assert "does not exist" in result.output


def test_help_shows_defaults():
    result = run("--help")
    assert result.exit_code == 0
    assert "[default: all]" in result.output
    assert "--strip-punctuation" in result.output


def test_an_empty_reference_is_an_error_not_a_perfect_score(tmp_path):
    ref = write(tmp_path / "ref", "")
    hyp = write(tmp_path / "hyp", "a one two\n")
    result = run(ref, hyp)
    assert result.exit_code != 0
    assert "holds no reference utterances to score" in result.output + result.stderr
    assert "%WER" not in result.stdout
