import os

import kaldiio
import numpy as np

from asrkit.io.kaldi_ark import export_kaldi, import_kaldi
from asrkit.io.table import TableReader


def test_round_trip_matrices_and_int_vectors(tmp_path):
    rng = np.random.default_rng(1)
    original = {
        "utt1": rng.standard_normal((10, 4)).astype(np.float32),
        "utt2": rng.standard_normal((3, 4)).astype(np.float32),
        "utt3": rng.standard_normal(6),  # double vector
    }
    alignments = {"utt1": np.array([3, 3, 4, 7], dtype=np.int32), "utt2": np.array([1], dtype=np.int32)}

    # Kaldi side: write ark+scp the way copy-feats would.
    kaldiio.save_ark(str(tmp_path / "in.ark"), original, scp=str(tmp_path / "in.scp"))
    kaldiio.save_ark(str(tmp_path / "ali.ark"), alignments)

    assert import_kaldi(f"scp:{tmp_path}/in.scp", str(tmp_path / "t"), "feats", num_shards=2) == 3
    assert sorted(os.listdir(tmp_path / "t")) == ["feats.1.h5", "feats.2.h5", "feats.scp"]
    assert import_kaldi(str(tmp_path / "ali.ark"), str(tmp_path / "t"), "ali") == 2
    with TableReader(str(tmp_path / "t/feats.scp")) as table:
        for key, value in original.items():
            np.testing.assert_array_equal(table[key], value)
            assert table[key].dtype == value.dtype

    # Back to Kaldi, read with kaldiio through the scp we wrote.
    assert export_kaldi(str(tmp_path / "t/feats.scp"), str(tmp_path / "out.ark"), str(tmp_path / "out.scp")) == 3
    back = dict(kaldiio.load_scp(str(tmp_path / "out.scp")))
    for key, value in original.items():
        np.testing.assert_array_equal(back[key], value)
    assert export_kaldi(str(tmp_path / "t/ali.scp"), str(tmp_path / "ali_out.ark"), str(tmp_path / "ali_out.scp")) == 2
    back = dict(kaldiio.load_scp(str(tmp_path / "ali_out.scp")))
    np.testing.assert_array_equal(back["utt1"], alignments["utt1"])
    assert back["utt1"].dtype == np.int32

    # Text arks too.
    export_kaldi(str(tmp_path / "t/feats.scp"), str(tmp_path / "txt.ark"), as_text=True)
    text_back = dict(kaldiio.load_ark(str(tmp_path / "txt.ark")))
    np.testing.assert_allclose(text_back["utt2"], original["utt2"], rtol=1e-6)
