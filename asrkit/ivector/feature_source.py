"""Where the i-vector commands read features: a data dir's feats.scp (with its utt2spk) or a table index."""

import os

import numpy as np

from asrkit.data.kaldi_files import read_kaldi_map
from asrkit.errors import AsrkitError
from asrkit.io.json_file import read_json
from asrkit.io.table import TableReader


class FeatureSource:
    """The feature table of `path` (a featurized data dir or a .scp), its speakers and frame shift when known."""

    def __init__(self, path):
        path = os.fspath(path)
        self.data_dir = path if os.path.isdir(path) else None
        self.scp = os.path.join(path, "feats.scp") if self.data_dir else path
        if not os.path.exists(self.scp):
            raise AsrkitError(f"{self.scp} does not exist; featurize the data dir first (asrkit-featurize)")
        self.table = TableReader(self.scp)

    def keys(self):
        return self.table.keys()

    def read(self, key):
        return np.asarray(self.table[key], dtype=np.float64)

    def num_frames(self, key):
        return self.table.shape(key)[0]

    def utt2spk(self):
        """utterance -> speaker from the data dir's utt2spk; each utterance its own speaker without one."""
        path = os.path.join(self.data_dir, "utt2spk") if self.data_dir else None
        if path is None or not os.path.exists(path):
            return {key: key for key in self.keys()}
        return dict(read_kaldi_map(path))

    def frame_shift_seconds(self):
        """The front end's output frame shift from conf/featurize.json, or None when unknown."""
        config = os.path.join(self.data_dir, "conf", "featurize.json") if self.data_dir else None
        if config is None or not os.path.exists(config):
            return None
        values = read_json(config)
        return values.get("frame_shift_ms", 10.0) * values.get("subsample", 1) / 1000.0

    def close(self):
        self.table.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
