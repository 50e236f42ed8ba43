"""Kaldi's own features in a data dir: recognised by their entries, named, copied around."""

import os

import pytest

from asrkit.data.kaldi_features import copy_without_kaldi_features, kaldi_feature_files, refuse_kaldi_features
from asrkit.errors import AsrkitError, DataDirError


def write(path, text):
    path.write_text(text)
    return str(path)


def test_kaldi_and_asrkit_entries_are_told_apart(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    assert kaldi_feature_files(data) == []
    write(data / "feats.scp", "\nu1 /exp/feats/feats.1.h5:/u1\n")
    assert kaldi_feature_files(data) == []
    refuse_kaldi_features(data, "doing nothing")
    for entry in ("u1 /mfcc/raw_mfcc.1.ark:17", "u1 copy-feats ark:a.ark ark:- |", "u1 /mfcc/u1.mat"):
        write(data / "feats.scp", f"{entry}\n")
        assert kaldi_feature_files(data) == [(str(data / "feats.scp"), 1, entry)]
    write(data / "feats.scp", "u1 /exp/feats/feats.1.h5:/u1\n")
    write(data / "cmvn.scp", "\n\nspk1 /mfcc/cmvn.ark:5\n")
    with pytest.raises(DataDirError, match=r"cmvn.scp:3: 'spk1 /mfcc/cmvn.ark:5' is an entry of Kaldi's features.*"
                                           r"reading them \(fix: give asrkit-featurize --out-data-dir"):
        refuse_kaldi_features(data, "reading them")
    refuse_kaldi_features(data, "reading feats.scp only", names=("feats.scp",))


def test_copy_leaves_the_features_out_and_replaces_only_its_own_copies(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    write(data / "wav.scp", "u1 /a.wav\nu2 /b.wav\n")
    write(data / "utt2spk", "u1 s\nu2 s\n")
    write(data / "spk2utt", "s u1 u2\n")
    write(data / "text", "u1 HELLO\nu2 WORLD\n")
    write(data / "feats.scp", "u1 /mfcc/raw.ark:5\nu2 /mfcc/raw.ark:90\n")
    write(data / "cmvn.scp", "s /mfcc/cmvn.ark:5\n")
    write(data / "utt2num_frames", "u1 100\nu2 120\n")
    copy = tmp_path / "copy"
    copy_without_kaldi_features(data, copy)
    assert sorted(os.listdir(copy)) == ["source_data_dir", "spk2utt", "text", "utt2spk", "wav.scp"]
    assert (copy / "source_data_dir").read_text() == f"{data}\n"
    copy_without_kaldi_features(data, copy)  # an earlier copy is replaced
    with pytest.raises(AsrkitError, match="not empty and is not a copy of a data dir"):
        copy_without_kaldi_features(copy, data)
    with pytest.raises(AsrkitError, match="is or holds the input"):
        copy_without_kaldi_features(data, data)
    assert (data / "feats.scp").read_text().startswith("u1 /mfcc/raw.ark:5")
