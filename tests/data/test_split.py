import os

import pytest

from asrkit.data.data_dir import DataDir
from asrkit.data.split import balanced_boundaries, choose_random, split_data_dir, subset_data_dir
from asrkit.data.validate import validate_data_dir
from asrkit.errors import AsrkitError, DataDirError


@pytest.fixture
def speakers_dir(tmp_path, write_text_file):
    """Speakers s1..s6 with 1, 5, 2, 2, 3, 3 utterances (16 in all), with text and utt2dur."""
    directory = tmp_path / "data"
    directory.mkdir()
    counts = {"s1": 1, "s2": 5, "s3": 2, "s4": 2, "s5": 3, "s6": 3}
    utts = [f"{speaker}-{index}" for speaker, count in counts.items() for index in range(count)]
    write_text_file(directory / "wav.scp", "".join(f"{utt} /audio/{utt}.wav\n" for utt in utts))
    write_text_file(directory / "text", "".join(f"{utt} WORD\n" for utt in utts))
    write_text_file(directory / "utt2spk", "".join(f"{utt} {utt.split('-')[0]}\n" for utt in utts))
    write_text_file(directory / "spk2utt", "".join(
        f"{speaker} {' '.join(u for u in utts if u.startswith(speaker + '-'))}\n" for speaker in counts))
    # Durations fall along the file: the last utterances are the shortest.
    write_text_file(directory / "utt2dur", "".join(
        f"{utt} {1 + (len(utts) - index) * 0.1:.1f}\n" for index, utt in enumerate(utts)))
    return os.fspath(directory)


def test_balanced_boundaries():
    assert balanced_boundaries([1, 5, 2, 2, 3, 3], 2) == [0, 3, 6]      # 8 + 8
    assert balanced_boundaries([1] * 10, 3) == [0, 3, 7, 10]            # 3 + 4 + 3
    assert balanced_boundaries([100, 1, 1], 3) == [0, 1, 2, 3]          # never an empty part


def test_split_by_speaker(speakers_dir):
    parts = split_data_dir(speakers_dir, 2)
    assert parts == [os.path.join(speakers_dir, "split2", "1"), os.path.join(speakers_dir, "split2", "2")]
    loaded = [DataDir.load(part) for part in parts]
    assert [len(part) for part in loaded] == [8, 8]
    assert loaded[0].speaker_ids == ["s1", "s2", "s3"]
    assert loaded[1].spk2utt["s5"] == ["s5-0", "s5-1", "s5-2"]
    every_utterance = DataDir.load(speakers_dir).utterance_ids
    assert sorted(loaded[0].utterance_ids + loaded[1].utterance_ids) == every_utterance
    for part in parts:
        assert validate_data_dir(part, require_text=True) == []


def test_split_per_utterance(speakers_dir):
    parts = split_data_dir(speakers_dir, 3, by_speaker=False)
    assert parts[0] == os.path.join(speakers_dir, "split3utt", "1")
    loaded = [DataDir.load(part) for part in parts]
    assert [len(part) for part in loaded] == [5, 6, 5]
    # s2's five utterances are cut across parts 1 and 2; each part gets its own spk2utt for s2.
    assert loaded[0].spk2utt["s2"] == ["s2-0", "s2-1", "s2-2", "s2-3"]
    assert loaded[1].spk2utt["s2"] == ["s2-4"]
    for part in parts:
        assert validate_data_dir(part, require_text=True) == []


def test_split_is_reused_until_the_data_changes(speakers_dir, write_text_file):
    parts = split_data_dir(speakers_dir, 2)
    marker_time = os.stat(os.path.join(speakers_dir, "split2", ".done")).st_mtime_ns
    text_time = os.stat(os.path.join(parts[0], "text")).st_mtime_ns
    assert split_data_dir(speakers_dir, 2) == parts
    assert os.stat(os.path.join(parts[0], "text")).st_mtime_ns == text_time  # not rewritten
    # Change the source text: the split must be rebuilt with the new transcripts.
    source_text = os.path.join(speakers_dir, "text")
    content = open(source_text).read().replace("s1-0 WORD", "s1-0 CHANGED")
    write_text_file(source_text, content)
    split_data_dir(speakers_dir, 2)
    assert "s1-0 CHANGED" in open(os.path.join(parts[0], "text")).read()
    assert os.stat(os.path.join(speakers_dir, "split2", ".done")).st_mtime_ns >= marker_time


@pytest.fixture
def segments_dir(tmp_path, write_text_file):
    """Utterances a-1 and b-1 (speakers a and b), two segments of one recording r1."""
    directory = tmp_path / "segmented"
    directory.mkdir()
    write_text_file(directory / "wav.scp", "r1 r1.wav\n")
    write_text_file(directory / "reco2dur", "r1 2.0\n")
    write_text_file(directory / "segments", "a-1 r1 0 1\nb-1 r1 1 2\n")
    write_text_file(directory / "utt2spk", "a-1 a\nb-1 b\n")
    write_text_file(directory / "spk2utt", "a a-1\nb b-1\n")
    return directory


def test_split_with_segments_shares_recordings(segments_dir):
    parts = split_data_dir(segments_dir, 2)
    for part in parts:
        assert DataDir.load(part).wav_scp == {"r1": "r1.wav"}
        assert validate_data_dir(part) == []


def test_too_many_parts(speakers_dir):
    with pytest.raises(DataDirError, match="cannot split 6 speakers into 7 non-empty parts") as caught:
        split_data_dir(speakers_dir, 7)
    assert "--per-utt" in caught.value.fix
    assert len(split_data_dir(speakers_dir, 7, by_speaker=False)) == 7


def test_subset_random_is_reproducible(speakers_dir, tmp_path):
    first = subset_data_dir(speakers_dir, tmp_path / "sub1", num_utts=5)
    again = subset_data_dir(speakers_dir, tmp_path / "sub2", num_utts=5)
    other_seed = subset_data_dir(speakers_dir, tmp_path / "sub3", num_utts=5, seed=1)
    assert len(first) == 5 and first.utterance_ids == again.utterance_ids
    assert first.utterance_ids != other_seed.utterance_ids
    assert validate_data_dir(tmp_path / "sub1", require_text=True) == []


def test_a_random_choice_made_from_the_ids_alone_is_subset_data_dirs(speakers_dir, tmp_path):
    ids = DataDir.load(speakers_dir).utterance_ids
    for seed in (0, 3):
        written = subset_data_dir(speakers_dir, tmp_path / f"sub{seed}", num_utts=7, seed=seed)
        # Whatever order the ids come in (a plan's, not the data dir's C order): the same utterances.
        assert sorted(choose_random(ids[::-1], 7, seed)) == written.utterance_ids
    assert sorted(choose_random(ids, 7, 0)) != sorted(choose_random(ids, 7, 3))


def test_subset_first_last_shortest(speakers_dir, tmp_path):
    assert subset_data_dir(speakers_dir, tmp_path / "f", num_utts=2, first=True).utterance_ids == [
        "s1-0", "s2-0"]
    assert subset_data_dir(speakers_dir, tmp_path / "l", num_utts=2, last=True).utterance_ids == [
        "s6-1", "s6-2"]
    # utt2dur gives the last utterances the shortest durations (1.3, 1.2, 1.1 s).
    shortest = subset_data_dir(speakers_dir, tmp_path / "s", num_utts=3, shortest=True)
    assert shortest.utterance_ids == ["s6-0", "s6-1", "s6-2"]


def test_subset_lists(speakers_dir, tmp_path, write_text_file):
    utt_list = write_text_file(tmp_path / "utts", "s3-1\ns1-0\nnot-there\n")
    assert subset_data_dir(speakers_dir, tmp_path / "u", utt_list=utt_list).utterance_ids == [
        "s1-0", "s3-1"]
    by_speaker = subset_data_dir(speakers_dir, tmp_path / "k", spk_list=["s4", "s1"])
    assert by_speaker.utterance_ids == ["s1-0", "s4-0", "s4-1"]
    assert by_speaker.spk2utt == {"s1": ["s1-0"], "s4": ["s4-0", "s4-1"]}


def test_subset_whole_speakers(speakers_dir, tmp_path):
    subset = subset_data_dir(speakers_dir, tmp_path / "w", num_utts=4, speakers=True)
    counts = {"s1": 1, "s2": 5, "s3": 2, "s4": 2, "s5": 3, "s6": 3}
    assert len(subset) >= 4
    for speaker, utts in subset.spk2utt.items():
        assert len(utts) == counts[speaker]


def test_subset_bad_requests(speakers_dir, tmp_path):
    with pytest.raises(DataDirError, match="asked for 17 utterances but the data dir has 16"):
        subset_data_dir(speakers_dir, tmp_path / "x", num_utts=17)
    with pytest.raises(AsrkitError, match="exactly one"):
        subset_data_dir(speakers_dir, tmp_path / "x", num_utts=2, utt_list=["s1-0"])
    with pytest.raises(AsrkitError, match="at most one"):
        subset_data_dir(speakers_dir, tmp_path / "x", num_utts=2, first=True, last=True)
    with pytest.raises(AsrkitError, match="is the input dir"):
        subset_data_dir(speakers_dir, speakers_dir, num_utts=2)


def test_parts_and_subsets_keep_the_feature_config_and_cmvn(speakers_dir, tmp_path, write_text_file):
    # A featurized dir's conf/featurize.json and cmvn.h5 apply to every utterance, so a part or a
    # subset without them could not be trained or aligned on.
    os.makedirs(os.path.join(speakers_dir, "conf"))
    write_text_file(os.path.join(speakers_dir, "conf", "featurize.json"), '{"num_mel_bins": 40}\n')
    with open(os.path.join(speakers_dir, "cmvn.h5"), "wb") as handle:
        handle.write(b"stats")
    # The speakers' sums too: a part with some of a speaker's utterances still normalises by the whole speaker.
    with open(os.path.join(speakers_dir, "spk_cmvn.h5"), "wb") as handle:
        handle.write(b"speakers")
    subset_data_dir(speakers_dir, tmp_path / "sub", num_utts=3)
    for directory in [tmp_path / "sub", *split_data_dir(speakers_dir, 2)]:
        assert open(os.path.join(directory, "conf", "featurize.json")).read() == '{"num_mel_bins": 40}\n'
        assert open(os.path.join(directory, "cmvn.h5"), "rb").read() == b"stats"
        assert open(os.path.join(directory, "spk_cmvn.h5"), "rb").read() == b"speakers"
    assert not os.path.exists(tmp_path / "sub" / "cmvn.h5.tmp")


def test_parts_of_a_dir_without_features_get_no_feature_files(speakers_dir, tmp_path):
    subset_data_dir(speakers_dir, tmp_path / "sub", num_utts=3)
    assert not os.path.exists(tmp_path / "sub" / "conf") and not os.path.exists(tmp_path / "sub" / "cmvn.h5")


def test_combined_dirs_add_their_speakers_sums(speakers_dir, tmp_path):
    import numpy as np

    from asrkit.data.split import combine_data_dirs
    from asrkit.frontend.cmvn import SpeakerCmvn, combine_speaker_cmvn

    first, second = tmp_path / "first", tmp_path / "second"
    subset_data_dir(speakers_dir, first, spk_list=["s1", "s2"])
    subset_data_dir(speakers_dir, second, spk_list=["s2", "s3"])  # s2 in both: its sums add
    for directory, value in ((first, 1.0), (second, 2.0)):
        sums = SpeakerCmvn(2)
        for speaker in DataDir.load(directory).speaker_ids:
            sums.accumulate(speaker, np.full((3, 2), value))
        sums.write(os.path.join(directory, "spk_cmvn.h5"))
    combine_data_dirs(tmp_path / "both", [first, second])
    assert not os.path.exists(os.path.join(tmp_path / "both", "spk_cmvn.h5"))  # not the first dir's alone
    combine_speaker_cmvn(tmp_path / "both", [first, second])
    combined = SpeakerCmvn.read(os.path.join(tmp_path / "both", "spk_cmvn.h5"))
    assert sorted(combined.speakers) == ["s1", "s2", "s3"]
    assert combined.moments("s2").count == 6 and combined.moments("s2").mean.tolist() == [1.5, 1.5]
    os.remove(os.path.join(second, "spk_cmvn.h5"))
    combine_data_dirs(tmp_path / "partial", [first, second])
    combine_speaker_cmvn(tmp_path / "partial", [first, second])
    assert not os.path.exists(os.path.join(tmp_path / "partial", "spk_cmvn.h5"))


def test_a_copy_with_prefixes_renames_utterances_speakers_and_their_tables(speakers_dir, tmp_path, write_text_file):
    from asrkit.data.split import copy_data_dir

    write_text_file(os.path.join(speakers_dir, "spk2warp"), "s1 1.1\ns2 0.95\ns3 1\ns4 1\ns5 1\ns6 1\n")
    utts = DataDir.load(speakers_dir).utterance_ids
    write_text_file(os.path.join(speakers_dir, "utt2num_frames"), "".join(f"{utt} 7\n" for utt in utts))
    os.makedirs(os.path.join(speakers_dir, "conf"))
    write_text_file(os.path.join(speakers_dir, "conf", "featurize.json"), '{"num_mel_bins": 40}\n')
    copy_data_dir(speakers_dir, tmp_path / "copy", utt_prefix="w1.1-", spk_prefix="w1.1-")
    copy = DataDir.load(tmp_path / "copy")
    assert copy.utterance_ids == ["w1.1-" + utt for utt in utts]
    assert copy.wav_scp["w1.1-s2-4"] == "/audio/s2-4.wav"  # without segments a recording is its utterance
    assert copy.utt2spk["w1.1-s2-4"] == "w1.1-s2" and copy.spk2utt["w1.1-s1"] == ["w1.1-s1-0"]
    assert copy.text["w1.1-s1-0"] == "WORD" and copy.utt2dur["w1.1-s1-0"] == 2.6
    assert copy.utt2num_frames["w1.1-s1-0"] == 7
    assert copy.extra_tables["spk2warp"]["w1.1-s1"] == "1.1"
    assert copy.warp_factor("w1.1-s2-0") == 0.95
    assert open(os.path.join(tmp_path / "copy", "conf", "featurize.json")).read() == '{"num_mel_bins": 40}\n'
    assert validate_data_dir(tmp_path / "copy") == []
    with pytest.raises(AsrkitError, match="is the input"):
        copy_data_dir(speakers_dir, speakers_dir, utt_prefix="x-")


def test_a_copy_with_segments_keeps_the_recording_ids(segments_dir):
    copy = DataDir.load(segments_dir).with_prefixes("p-", "p-")
    assert copy.wav_scp == {"r1": "r1.wav"} and copy.extra_tables["reco2dur"] == {"r1": "2.0"}
    assert {utt: segment.recording_id for utt, segment in copy.segments.items()} == {"p-a-1": "r1", "p-b-1": "r1"}
    assert copy.spk2utt == {"p-a": ["p-a-1"], "p-b": ["p-b-1"]}


def test_a_copy_renames_the_speakers_sums(speakers_dir, tmp_path):
    import numpy as np

    from asrkit.frontend.cmvn import SpeakerCmvn, copy_speaker_cmvn

    sums = SpeakerCmvn(2)
    sums.accumulate("s1", np.full((3, 2), 1.0))
    sums.write(os.path.join(speakers_dir, "spk_cmvn.h5"))
    out = tmp_path / "copy"
    out.mkdir()
    copy_speaker_cmvn(speakers_dir, out, "w1-")
    copied = SpeakerCmvn.read(os.path.join(out, "spk_cmvn.h5"))
    assert list(copied.speakers) == ["w1-s1"] and copied.moments("w1-s1").count == 3
    os.remove(os.path.join(speakers_dir, "spk_cmvn.h5"))
    copy_speaker_cmvn(speakers_dir, out, "w1-")  # none in the source: none in the copy
    assert not os.path.exists(os.path.join(out, "spk_cmvn.h5"))


def test_an_output_dir_that_links_to_the_input_is_refused_and_the_input_kept(speakers_dir, tmp_path):
    from asrkit.data.split import combine_data_dirs, copy_data_dir

    link = tmp_path / "link_to_input"
    link.symlink_to(speakers_dir, target_is_directory=True)
    files = {name: open(os.path.join(speakers_dir, name), "rb").read() for name in sorted(os.listdir(speakers_dir))}
    for write in (lambda: copy_data_dir(speakers_dir, link, utt_prefix="w1-", spk_prefix="w1-"),
                  lambda: subset_data_dir(speakers_dir, link, num_utts=2),
                  lambda: combine_data_dirs(str(link), [speakers_dir])):
        with pytest.raises(AsrkitError, match=f"is the input dir {speakers_dir} \\(through a link"):
            write()
    assert {name: open(os.path.join(speakers_dir, name), "rb").read() for name in sorted(os.listdir(speakers_dir))} \
        == files
