"""Online i-vectors appended to the network's input, one frame's i-vector beside each feature frame.

Two sources, one result: `IvectorTable` reads what asrkit-extract-ivectors
wrote (training from tables), `OnlineIvectorAppender` extracts them from the
features at hand (an example server's noisified features, a decoder's), so
that a network sees in decoding the same kind of input it was trained on.
`IvectorExamples` wraps an example source (asrkit.train.examples) so every
example leaves it with its i-vectors appended; what comes before it (CMVN,
SpecAugment) sees the features alone.
"""

import dataclasses
import os

import numpy as np

from asrkit.errors import IvectorError
from asrkit.training_examples.mapped import MappedExamples
from asrkit.io.table import TableReader
from asrkit.io.json_file import read_json
from asrkit.ivector.extract_dir import CONFIG_FILE, TABLE_NAME
from asrkit.ivector.extractor import IvectorExtractor
from asrkit.ivector.online import OnlineOptions, expand_to_frames, online_ivectors
from asrkit.ivector.train_dir import EXTRACTOR_FILE


def append_ivectors(features, ivectors):
    """features [T, D] and per-frame i-vectors [T, R] side by side: [T, D + R] float32."""
    return np.concatenate([np.asarray(features, np.float32), np.asarray(ivectors, np.float32)], axis=1)


class IvectorTable:
    """An asrkit-extract-ivectors output dir: per-frame i-vectors of an utterance by its id."""

    def __init__(self, ivector_dir):
        self.ivector_dir = os.fspath(ivector_dir)
        self.scp = os.path.join(self.ivector_dir, f"{TABLE_NAME}.scp")
        period_file = os.path.join(self.ivector_dir, "ivector_period")
        try:
            with open(period_file, encoding="utf-8") as handle:
                self.period = int(handle.read().strip())
        except FileNotFoundError:
            raise IvectorError(f"{period_file} does not exist; run asrkit-extract-ivectors into "
                               f"{self.ivector_dir} first") from None
        except ValueError:
            raise IvectorError(f"{period_file} does not hold a whole number of frames") from None
        self.table = TableReader(self.scp)
        keys = self.table.keys()
        self.ivector_dim = self.table.shape(keys[0])[1] if keys else 0
        self.config_file = os.path.join(self.ivector_dir, CONFIG_FILE)

    def model_files(self):
        """What a model trained on these i-vectors carries into its exported dir: the extractor and ivector.json
        (whose "extractor" then names the copy), so that a decoder can extract them the same way."""
        config = read_json(self.config_file)
        return [config["extractor"], self.config_file]

    def check_covers(self, utterance_ids, what):
        """IvectorError naming the first of `utterance_ids` (of `what`) that the table lacks."""
        missing = [utt for utt in utterance_ids if utt not in self.table]
        if missing:
            raise IvectorError(f"{len(missing)} utterances of {what} have no i-vectors in {self.scp}, the first "
                               f"{missing[0]}; extract i-vectors of that data dir (asrkit-extract-ivectors)")

    def for_frames(self, utterance_id, num_frames):
        """[num_frames, R]: each frame its period's i-vector."""
        if utterance_id not in self.table:
            raise IvectorError(f"utterance {utterance_id} has no i-vectors in {self.scp}")
        rows = self.table[utterance_id]
        if len(rows) != -(-num_frames // self.period):
            raise IvectorError(f"utterance {utterance_id}: {len(rows)} i-vectors every {self.period} frames in "
                               f"{self.scp} do not fit its {num_frames} feature frames; extract them again from "
                               "these features")
        return expand_to_frames(rows, num_frames, self.period)

    def close(self):
        self.table.close()


class OnlineIvectorAppender:
    """I-vectors extracted from each utterance's own (un-normalised) features, every utterance afresh."""

    def __init__(self, extractor, options):
        self.extractor = extractor
        self.options = options

    @classmethod
    def from_model_dir(cls, model_dir):
        """The appender of an exported model trained with i-vectors (its ivector.json and extractor), or None
        for a model trained without."""
        config_file = os.path.join(model_dir, CONFIG_FILE)
        if not os.path.exists(config_file):
            return None
        config = read_json(config_file)
        extractor = IvectorExtractor.load(os.path.join(model_dir, os.path.basename(config["extractor"])))
        return cls(extractor, OnlineOptions(**config["online"]))

    @classmethod
    def from_dir(cls, path):
        """The appender of an exported model dir or an asrkit-extract-ivectors dir (both hold ivector.json: the
        extractor and the online options the network was trained with), or of an extractor (final.ie, or the
        asrkit-train-ivector-extractor dir holding it) with the default online options."""
        path = os.fspath(path)
        config_file = os.path.join(path, CONFIG_FILE)
        if os.path.isdir(path) and os.path.exists(config_file):
            config = read_json(config_file)
            # A model dir holds its copy of the extractor; an i-vector dir names the one it was extracted with.
            local = os.path.join(path, os.path.basename(config["extractor"]))
            extractor = IvectorExtractor.load(local if os.path.exists(local) else config["extractor"])
            return cls(extractor, OnlineOptions(**config["online"]))
        extractor_file = os.path.join(path, EXTRACTOR_FILE) if os.path.isdir(path) else path
        if not os.path.exists(extractor_file):
            raise IvectorError(f"{path} holds neither {CONFIG_FILE} (a model trained with i-vectors, or an "
                               f"asrkit-extract-ivectors dir) nor an i-vector extractor ({EXTRACTOR_FILE})")
        return cls(IvectorExtractor.load(extractor_file), OnlineOptions())

    def describe(self):
        return (f"online i-vectors of dimension {self.ivector_dim} every {self.options.ivector_period} frames, "
                "extracted from each utterance's own features")

    @property
    def ivector_dim(self):
        return self.extractor.ivector_dim

    def append(self, utterance_id, raw_features, network_features):
        ivectors, _ = online_ivectors(self.extractor, raw_features, self.options, where=f"utterance {utterance_id}")
        per_frame = expand_to_frames(ivectors, len(raw_features), self.options.ivector_period)
        return append_ivectors(network_features, per_frame)


class IvectorExamples(MappedExamples):
    """An example source whose examples come out with their i-vectors (from an IvectorTable) appended."""

    def __init__(self, source, table):
        super().__init__(source, self._with_ivectors)
        self.table = table

    def _with_ivectors(self, example):
        ivectors = self.table.for_frames(example.utterance_id, example.num_frames)
        return dataclasses.replace(example, features=append_ivectors(example.features, ivectors))
