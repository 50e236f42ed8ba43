"""A synthetic corpus whose features predict their frame labels, as feature and alignment tables."""

import json
import os

import numpy as np
import pytest

from asrkit.chain.den_graph import make_den_graph
from asrkit.chain.numerator import units_from_pdfs
from asrkit.chain.phone_lm import estimate_phone_lm
from asrkit.frontend.cmvn import CmvnStats
from asrkit.hmm.topology import Topology
from asrkit.hmm.tree import ContextDependency
from asrkit.io.table import ShardWriter, write_scp


def synthetic_utterances(num_utts, dim, num_pdfs, seed=0, min_frames=15, max_frames=60, noise=0.3):
    """{utt: (features [T, dim], labels [T])}: labels in runs of 2-6 frames, features = class centre + noise."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((num_pdfs, dim)) * 2.0
    utterances = {}
    for index in range(num_utts):
        length = int(rng.integers(min_frames, max_frames + 1))
        labels = []
        while len(labels) < length:
            labels.extend([int(rng.integers(num_pdfs))] * int(rng.integers(2, 7)))
        labels = np.array(labels[:length], np.int32)
        features = (centres[labels] + noise * rng.standard_normal((length, dim)) + 3.0).astype(np.float32)
        utterances[f"spk{index % 3}-{index:03d}"] = (features, labels)
    return utterances


def label_den_graph(label_sequences, num_pdfs):
    """A denominator graph where phone k + 1 is pdf k (one state, monophone): the phone LM of the label runs."""
    phones = {f"P{k + 1}": k + 1 for k in range(num_pdfs)}
    tree = ContextDependency(1, 0, num_pdfs, phones, [{"context": [f"P{k + 1}"], "pdf_class": 0, "pdf": k}
                                                      for k in range(num_pdfs)])
    ids = " ".join(str(k + 1) for k in range(num_pdfs))
    topology = Topology.from_text(f"<Topology> <TopologyEntry> <ForPhones> {ids} </ForPhones> <State> 0 <PdfClass> 0 "
                                  "<Transition> 0 0.5 <Transition> 1 0.5 </State> <State> 1 </State> </TopologyEntry> "
                                  "</Topology>")
    runs = [[int(unit.pdfs[0]) + 1 for unit in units_from_pdfs(np.asarray(labels))] for labels in label_sequences]
    return make_den_graph(estimate_phone_lm(runs, order=3), tree, topology)


def write_corpus(root, utterances, num_pdfs, ali_lengths=None, name="data"):
    """A featurized data dir (feats.scp, cmvn.h5, conf/featurize.json) and an ali dir under `root`."""
    data_dir = os.path.join(root, name)
    ali_dir = os.path.join(root, f"ali_{name}")
    os.makedirs(os.path.join(data_dir, "conf"))
    os.makedirs(ali_dir)
    feats_shard = os.path.join(root, f"feats_{name}", "feats.1.h5")
    ali_shard = os.path.join(ali_dir, "ali.1.h5")
    dim = next(iter(utterances.values()))[0].shape[1]
    cmvn = CmvnStats(dim)
    with ShardWriter(feats_shard) as feats, ShardWriter(ali_shard) as ali:
        for utt, (features, labels) in sorted(utterances.items()):
            feats.write(utt, features)
            cmvn.accumulate(features)
            length = (ali_lengths or {}).get(utt, len(labels))
            padded = np.concatenate([labels, np.repeat(labels[-1:], max(0, length - len(labels)))])[:length]
            ali.write(utt, padded.astype(np.int32))
    write_scp(os.path.join(data_dir, "feats.scp"), [feats_shard])
    write_scp(os.path.join(ali_dir, "ali.scp"), [ali_shard])
    cmvn.write(os.path.join(data_dir, "cmvn.h5"))
    with open(os.path.join(data_dir, "conf", "featurize.json"), "w") as out:
        json.dump({"num_mel_bins": dim, "stack_frames": 1}, out)
    with open(os.path.join(ali_dir, "num_pdfs"), "w") as out:
        out.write(f"{num_pdfs}\n")
    return data_dir, ali_dir


@pytest.fixture
def corpus(tmp_path):
    """corpus(num_utts=12, dim=8, num_pdfs=5, seed=0, ali_lengths=None) -> (data_dir, ali_dir, utterances)."""

    def make(num_utts=12, dim=8, num_pdfs=5, seed=0, ali_lengths=None, name="data", **kwargs):
        utterances = synthetic_utterances(num_utts, dim, num_pdfs, seed, **kwargs)
        data_dir, ali_dir = write_corpus(str(tmp_path), utterances, num_pdfs, ali_lengths, name)
        return data_dir, ali_dir, utterances

    return make


@pytest.fixture(scope="session")
def seq_task(tmp_path_factory):
    """build_seq_task in a session temporary dir."""
    return build_seq_task(tmp_path_factory.mktemp("seq_task"))


def build_seq_task(root):
    """A toy task for sequence training in `root` (a pathlib.Path): the toy graph of asrkit.decode.synthetic,
    features whose frames carry their pdf (centre + noise, noisy enough that CE leaves room for sMBR), the
    oracle alignments (with the toy tree next to them), and a small LSTM trained with CE for a few epochs.
    tests/cluster builds it too.

    Returns paths: data, ali, ce (the exported CE model), graph, and `references` {utt: pdfs}.
    """
    import shutil

    from asrkit.decode.synthetic import TOY_SENTENCES, build_toy_task, monophone_pdf_of_phone, oracle_alignment, \
        TOY_LEXICON
    from asrkit.hmm.tree import ContextDependency
    from asrkit.train.trainer import TrainOptions, train_ce

    paths = build_toy_task(str(root / "toy"))
    tree = ContextDependency.read(os.path.join(paths["model"], "tree.json"))
    pdf_of_phone = monophone_pdf_of_phone(tree)
    rng = np.random.default_rng(7)
    dim = 8
    centres = rng.standard_normal((tree.num_pdfs, dim)) * 1.5
    utterances = {}
    for index in range(24):
        words = TOY_SENTENCES[index % len(TOY_SENTENCES)].split()
        labels = oracle_alignment(words, TOY_LEXICON, pdf_of_phone, rng, min_frames=2, max_frames=5)
        features = (centres[labels] + 1.2 * rng.standard_normal((len(labels), dim)) + 3.0).astype(np.float32)
        utterances[f"spk{index % 3}-{index:03d}"] = (features, labels)
    data_dir, ali_dir = write_corpus(str(root), utterances, tree.num_pdfs)
    for name in ("tree.json", "phones.txt"):
        if os.path.exists(os.path.join(paths["model"], name)):
            shutil.copy(os.path.join(paths["model"], name), ali_dir)
    ce_exp = str(root / "ce")
    options = TrainOptions(model="lstm", model_overrides={"num_layers": 1, "num_cells": 24, "label_delay": 2},
                           params={"num_epochs": 4, "num_streams": 4, "unroll": 10, "optimizer": "adam",
                                   "learning_rate": 0.01, "valid_utts": 2, "log_every": 10})
    train_ce(data_dir, ali_dir, ce_exp, options)
    return {"data": data_dir, "ali": ali_dir, "ce": os.path.join(ce_exp, "final"), "graph": paths["graph"],
            "lang": paths["lang"], "references": {utt: labels for utt, (_, labels) in utterances.items()},
            "root": str(root)}


class LoopbackCluster:
    """Trainer processes on loopback ports for the --strategy tests (test_distribute*.py)."""

    def __init__(self, module):
        self.module = module  # asrkit.cli.train_ce or asrkit.cli.train_seq

    @staticmethod
    def free_ports(count):
        from asrkit.train.distribute import free_ports

        return free_ports(count)

    def start(self, args, log_path, tf_config=None):
        import subprocess
        import sys

        env = {name: value for name, value in os.environ.items() if name != "TF_CONFIG"}
        if tf_config is not None:
            env["TF_CONFIG"] = json.dumps(tf_config)
        with open(log_path, "w") as log:
            return subprocess.Popen([sys.executable, "-m", self.module] + args, stdout=log,
                                    stderr=subprocess.STDOUT, env=env)

    def worker_clusters(self, directory, count=2):
        """Cluster files (TF_CONFIG's format) of `count` multiworker workers on free loopback ports, one a worker."""
        workers = [f"localhost:{port}" for port in self.free_ports(count)]
        return [self.write_json(directory / f"cluster{index}.json",
                                {"cluster": {"worker": workers}, "task": {"type": "worker", "index": index}})
                for index in range(count)]

    @staticmethod
    def finish(processes, timeout=180):
        """Exit codes of `processes`; kills them all when one takes longer than `timeout` seconds."""
        try:
            return [process.wait(timeout=timeout) for process in processes]
        finally:
            for process in processes:
                if process.poll() is None:
                    process.kill()
                    process.wait()

    def run_ps(self, args, log_dir, cluster):
        """Start every worker and ps task of `cluster` (they serve until stopped), run the chief to
        its end, check that the serving tasks stayed up, stop them; return the chief's log path."""
        tasks = [(job, index) for job in ("worker", "ps") for index in range(len(cluster.get(job, [])))]
        servers = [self.start(args, log_dir / f"{job}{index}.log",
                              {"cluster": cluster, "task": {"type": job, "index": index}})
                   for job, index in tasks]
        chief_log = log_dir / "chief.log"
        try:
            chief = self.start(args, chief_log, {"cluster": cluster, "task": {"type": "chief", "index": 0}})
            code = self.finish([chief])
            assert code == [0], open(chief_log).read()[-3000:]
            for server in servers:
                assert server.poll() is None, "a worker or ps task exited: they serve until stopped"
        finally:
            for server in servers:
                server.terminate()
            self.finish(servers, timeout=30)
        return chief_log

    @staticmethod
    def logged(path, pattern):
        import re

        with open(path) as log:
            return re.findall(pattern, log.read())

    @staticmethod
    def write_json(path, value):
        with open(path, "w") as out:
            json.dump(value, out)
        return str(path)


@pytest.fixture
def ce_cluster():
    return LoopbackCluster("asrkit.cli.train_ce")


@pytest.fixture
def seq_cluster():
    return LoopbackCluster("asrkit.cli.train_seq")
