"""The ali dir: frame-level pdf and phone alignments of a data dir, and what they refer to.

    ali.scp, ali.JOB.h5              table: utt -> int32 [T] pdf ids, one per feature frame
                                     (T = the data dir's utt2num_frames)
    phone_ali.scp, phone_ali.JOB.h5  table: utt -> int32 [T] phone ids (phones.txt); each dataset's
                                     attribute `phone_starts` holds the frames where a phone begins
                                     (two equal phones in a row are two phones)
    num_pdfs                         one integer: the pdf ids are in [0, num_pdfs)
    tree.json, phones.txt, topo      copies of what the pdf and phone ids mean
    costs.txt, costs.JOB.txt         utt status frames phones acoustic_loglike graph_cost total_score beam
                                     (acoustic_loglike: sum of unscaled log-likelihoods on the path;
                                     total_score = acoustic_scale x acoustic_loglike - graph_cost;
                                     nan for equal alignments)
    failed.txt, failed.JOB.txt       utt reason: utterances that have no alignment
    ali_info.json                    how the alignment was made (command options, counts)
    log/align.JOB.log                job logs
asrkit-train-ce reads ali.scp and num_pdfs.
"""

import json
import os
import shutil

import numpy as np

from asrkit.errors import AsrkitError
from asrkit.hmm.num_pdfs import read_num_pdfs_file
from asrkit.hmm.tree import ContextDependency
from asrkit.io.atomic import atomic_output
from asrkit.io.table import ShardWriter, TableReader, parse_scp, shard_path, write_scp
from asrkit.parallel import merge_job_text_files, remove_outputs_of_extra_jobs

PDF_TABLE, PHONE_TABLE = "ali", "phone_ali"
PHONE_STARTS = "phone_starts"
TEXT_OUTPUTS = ("costs", "failed")


def _number(value):
    return "nan" if value != value else f"{value:.4f}"


class AliJobWriter:
    """The shards and text files of one alignment job; nothing appears under its final name until close()."""

    def __init__(self, ali_dir, index, config=None):
        self.ali_dir = ali_dir
        self.index = index
        self.pdf_writer = ShardWriter(shard_path(ali_dir, PDF_TABLE, index), config=config)
        self.phone_writer = ShardWriter(shard_path(ali_dir, PHONE_TABLE, index), config=config)
        self.cost_lines, self.failed_lines = [], []

    def write(self, utterance_id, alignment, num_phones):
        self.pdf_writer.write(utterance_id, alignment.pdfs)
        self.phone_writer.write(utterance_id, alignment.phones, attrs={PHONE_STARTS: alignment.phone_starts})
        self.cost_lines.append(
            f"{utterance_id} {alignment.status} {len(alignment.pdfs)} {num_phones} "
            f"{_number(alignment.acoustic_loglike)} {_number(alignment.graph_cost)} "
            f"{_number(alignment.total_score)} {alignment.beam:g}"
        )

    def fail(self, utterance_id, reason):
        self.failed_lines.append(f"{utterance_id} {reason}")

    def close(self):
        self.pdf_writer.close()
        self.phone_writer.close()
        for name, lines in (("costs", self.cost_lines), ("failed", self.failed_lines)):
            with atomic_output(os.path.join(self.ali_dir, f"{name}.{self.index}.txt")) as out:
                out.writelines(line + "\n" for line in lines)

    def abort(self):
        self.pdf_writer.abort()
        self.phone_writer.abort()


def remove_stale_job_outputs(ali_dir, num_jobs):
    """Outputs of an earlier run with more jobs would be merged into this one's otherwise.

    The indexes and num_pdfs of an earlier run go too, before any job writes a shard, so that
    a run killed half-way never leaves an ali.scp over a mix of old and new shards.
    """
    for name in (f"{PDF_TABLE}.scp", f"{PHONE_TABLE}.scp", "num_pdfs"):
        if os.path.exists(os.path.join(ali_dir, name)):
            os.remove(os.path.join(ali_dir, name))
    remove_outputs_of_extra_jobs(ali_dir, num_jobs, [f"{PDF_TABLE}.{{}}.h5", f"{PHONE_TABLE}.{{}}.h5"]
                                 + [f"{name}.{{}}.txt" for name in TEXT_OUTPUTS])


def finish_ali_dir(ali_dir, num_jobs, tree, phones_path, topo_path, info):
    """Index the job shards, merge the text files, copy what the ids mean, write num_pdfs and ali_info.json."""
    for table in (PDF_TABLE, PHONE_TABLE):
        write_scp(os.path.join(ali_dir, f"{table}.scp"),
                  [shard_path(ali_dir, table, index) for index in range(1, num_jobs + 1)])
    for name in TEXT_OUTPUTS:
        merge_job_text_files([os.path.join(ali_dir, f"{name}.{index}.txt") for index in range(1, num_jobs + 1)],
                             os.path.join(ali_dir, f"{name}.txt"))
    tree.write(os.path.join(ali_dir, "tree.json"))
    shutil.copyfile(phones_path, os.path.join(ali_dir, "phones.txt"))
    shutil.copyfile(topo_path, os.path.join(ali_dir, "topo"))
    with atomic_output(os.path.join(ali_dir, "num_pdfs")) as out:
        out.write(f"{tree.num_pdfs}\n")
    with atomic_output(os.path.join(ali_dir, "ali_info.json")) as out:
        json.dump(info, out, indent=2, sort_keys=True)
        out.write("\n")


def phone_segments(phones, phone_starts=None):
    """[(phone, first frame, end frame)] of a frame-level phone alignment; without `phone_starts` a phone
    begins wherever the phone id changes."""
    phones = np.asarray(phones)
    if phone_starts is None:
        change = np.ones(len(phones), bool)
        change[1:] = phones[1:] != phones[:-1]
        phone_starts = np.flatnonzero(change)
    starts = [int(frame) for frame in phone_starts]
    ends = starts[1:] + [len(phones)]
    return [(int(phones[start]), start, end) for start, end in zip(starts, ends)]


class AliDir:
    """Reading an ali dir: pdf and phone alignments by utterance, its tree and pdf count."""

    def __init__(self, ali_dir):
        self.path = os.fspath(ali_dir)
        for name in ("ali.scp", "num_pdfs", "tree.json"):
            if not os.path.exists(os.path.join(self.path, name)):
                raise AsrkitError(f"{self.path} is not an ali dir: it has no {name} (make one with asrkit-align)")
        self.tree = ContextDependency.read(os.path.join(self.path, "tree.json"))
        self.num_pdfs = read_num_pdfs_file(os.path.join(self.path, "num_pdfs"))
        if self.num_pdfs != self.tree.num_pdfs:
            raise AsrkitError(f"{self.path}/num_pdfs says {self.num_pdfs} but its tree.json has {self.tree.num_pdfs}")
        self.pdfs = TableReader(os.path.join(self.path, "ali.scp"))
        phone_scp = os.path.join(self.path, "phone_ali.scp")
        self.phones = TableReader(phone_scp) if os.path.exists(phone_scp) else None

    def utterance_ids(self):
        return self.pdfs.keys()

    def phone_segments(self, utterance_id):
        if self.phones is None:
            raise AsrkitError(f"{self.path} has no phone_ali.scp; phone alignments are needed here")
        starts = self.phones.attrs(utterance_id).get(PHONE_STARTS)
        return phone_segments(self.phones[utterance_id], starts)

    def close(self):
        self.pdfs.close()
        if self.phones is not None:
            self.phones.close()


def combine_ali_dirs(out, ali_dirs, utterance_ids=None):
    """The union of ali dirs made with one tree (Kaldi's steps/combine_ali_dirs.sh) -> `out`: ali.scp and
    phone_ali.scp index the input dirs' shards where they are (nothing is copied but what the ids mean);
    returns the utterance count.  With `utterance_ids` (a data dir's) only those are taken, and one dir
    is enough (a subset).  Dirs with different trees or an utterance in two dirs are refused."""
    wanted = None if utterance_ids is None else set(utterance_ids)
    if len(ali_dirs) < (1 if wanted is not None else 2):
        raise AsrkitError("give at least two ali dirs to combine (or one and the utterances to keep)")
    if any(os.path.abspath(ali_dir) == os.path.abspath(out) for ali_dir in ali_dirs):
        raise AsrkitError(f"the output dir {out} is one of the inputs; give a new directory")
    trees = []
    for ali_dir in ali_dirs:
        path = os.path.join(ali_dir, "tree.json")
        if not os.path.exists(path):
            raise AsrkitError(f"{ali_dir} has no tree.json: is it an ali dir?")
        trees.append(ContextDependency.read(path).to_dict())
    for ali_dir, tree in zip(ali_dirs[1:], trees[1:]):
        if tree != trees[0]:
            raise AsrkitError(f"{ali_dir} was aligned with another tree than {ali_dirs[0]}: its pdf ids mean other "
                              "things")
    os.makedirs(out, exist_ok=True)
    count = 0
    for table in (PDF_TABLE, PHONE_TABLE):
        entries, origin = {}, {}
        for ali_dir in ali_dirs:
            for key, location in parse_scp(os.path.join(ali_dir, f"{table}.scp")).items():
                if wanted is not None and key not in wanted:
                    continue
                if key in entries:
                    raise AsrkitError(f"{key}: aligned in both {origin[key]} and {ali_dir}")
                entries[key], origin[key] = location, ali_dir
        with atomic_output(os.path.join(out, f"{table}.scp")) as handle:
            for key in sorted(entries):
                path, dataset = entries[key]
                handle.write(f"{key} {os.path.abspath(path)}:/{dataset}\n")
        count = len(entries)
    for name in ("tree.json", "phones.txt", "topo", "num_pdfs"):
        shutil.copyfile(os.path.join(ali_dirs[0], name), os.path.join(out, name + ".tmp"))
        os.replace(os.path.join(out, name + ".tmp"), os.path.join(out, name))
    with atomic_output(os.path.join(out, "ali_info.json")) as handle:
        json.dump({"method": "combine", "ali_dirs_in": [os.path.abspath(d) for d in ali_dirs], "utterances": count},
                  handle, indent=2, sort_keys=True)
        handle.write("\n")
    return count
