"""Splitting a data dir into parts for parallel jobs, and taking subsets (Kaldi's split_data.sh,
subset_data_dir.sh).

Layout follows Kaldi: `<dir>/split4/1 .. split4/4` when splitting by speaker
(every speaker's utterances in one part, which per-speaker CMVN and adaptation
need) and `<dir>/split4utt/1 ..` when splitting by utterance.  Parts hold
contiguous runs of the C-sorted utterances (of speakers), balanced by number
of utterances, and each part is a complete data dir.
"""

import bisect
import json
import logging
import os
import random
import shutil

from asrkit.data.data_dir import EXTRA_TABLE_KEYS, KNOWN_FILES, MAIN_TABLES, DataDir, filter_spk2utt
from asrkit.data.kaldi_files import c_sorted, read_id_list, spk2utt_from_utt2spk
from asrkit.errors import AsrkitError, DataDirError
from asrkit.io.atomic import atomic_output

logger = logging.getLogger(__name__)

DONE_MARKER = ".done"
DEFAULT_SUBSET_SEED = 0
# Files of a featurized data dir that hold for every utterance in it (the front end's config, the
# global CMVN statistics and the speakers' sums over all their utterances, which a part or subset
# with some of a speaker's utterances still normalises by), so every part and subset needs them
# unchanged to be usable on its own.
WHOLE_DIR_FILES = (os.path.join("conf", "featurize.json"), "cmvn.h5", "spk_cmvn.h5")
# A combined dir's speaker sums are every input's added, not the first's: the front end adds them
# (asrkit.frontend.cmvn.combine_speaker_cmvn, which utils/combine_data runs after combine_data_dirs).
COMBINED_WHOLE_DIR_FILES = tuple(name for name in WHOLE_DIR_FILES if name != "spk_cmvn.h5")


def split_dir_path(path, num_parts, by_speaker=True):
    """Kaldi's name for the split: split<N> by speaker, split<N>utt by utterance."""
    return os.path.join(os.fspath(path), f"split{num_parts}" + ("" if by_speaker else "utt"))


def split_data_dir(path, num_parts, by_speaker=True):
    """Write `num_parts` data dirs under split_dir_path(...) and return their paths (1..N).

    An existing split is reused when it was made from the same files (names,
    sizes, modification times) with the same options; otherwise it is rebuilt.
    The `.done` marker is written last, so a split interrupted half-way is
    never mistaken for a finished one.
    """
    path = os.fspath(path)
    if num_parts < 1:
        raise AsrkitError(f"the number of parts must be at least 1, got {num_parts}")
    split_dir = split_dir_path(path, num_parts, by_speaker)
    part_paths = [os.path.join(split_dir, str(index)) for index in range(1, num_parts + 1)]
    fingerprint = _fingerprint(path, num_parts, by_speaker)
    marker = os.path.join(split_dir, DONE_MARKER)
    if _read_marker(marker) == fingerprint and all(map(os.path.isdir, part_paths)):
        logger.info("%s is up to date with %s; reusing it", split_dir, path)
        return part_paths

    data_dir = DataDir.load(path)
    groups = _groups(data_dir, path, by_speaker)
    if len(groups) < num_parts:
        what = "speakers" if by_speaker else "utterances"
        raise DataDirError(
            f"cannot split {len(groups)} {what} into {num_parts} non-empty parts", path,
            fix="use fewer parts" + (" or split by utterance (--per-utt)" if by_speaker else ""))
    boundaries = balanced_boundaries([len(group) for group in groups], num_parts)
    part_of_utterance = {}
    for part_index, (begin, end) in enumerate(zip(boundaries, boundaries[1:])):
        for group in groups[begin:end]:
            for utt in group:
                part_of_utterance[utt] = part_index

    if os.path.exists(marker):
        os.remove(marker)
    for part_path, part in zip(part_paths, partition(data_dir, part_of_utterance, num_parts)):
        part.write(part_path)
        copy_whole_dir_files(path, part_path)
    with atomic_output(marker) as handle:
        json.dump(fingerprint, handle)
    sizes = [sum(len(group) for group in groups[begin:end])
             for begin, end in zip(boundaries, boundaries[1:])]
    logger.info("split %s into %d parts by %s: %d..%d utterances per part", path, num_parts,
                "speaker" if by_speaker else "utterance", min(sizes), max(sizes))
    return part_paths


def _groups(data_dir, path, by_speaker):
    """Units that must not be separated, in C order: a speaker's utterances, or single utterances."""
    utterance_ids = data_dir.utterance_ids
    if not by_speaker:
        return [[utt] for utt in utterance_ids]
    if data_dir.utt2spk is None:
        raise DataDirError("splitting by speaker needs utt2spk", os.path.join(path, "utt2spk"),
                           fix="create utt2spk, or split by utterance (--per-utt)")
    by_speaker_id = {}
    for utt in utterance_ids:
        if utt not in data_dir.utt2spk:
            raise DataDirError(f"utterance {utt!r} has no speaker in utt2spk",
                               os.path.join(path, "utt2spk"), fix=f"run utils/fix_data_dir {path}")
        by_speaker_id.setdefault(data_dir.utt2spk[utt], []).append(utt)
    return [by_speaker_id[speaker] for speaker in c_sorted(by_speaker_id)]


def balanced_boundaries(sizes, num_parts):
    """Cut a sequence of group sizes into `num_parts` contiguous non-empty runs of similar total.

    Returns indices b_0=0 < b_1 < ... < b_N=len(sizes); part k holds sizes[b_k:b_(k+1)].
    Each cut is placed where the running total comes nearest to k/N of the
    whole, but never so late that a later part would be left without a group.
    """
    count = len(sizes)
    total = sum(sizes)
    cumulative = [0]
    for size in sizes:
        cumulative.append(cumulative[-1] + size)
    boundaries = [0]
    for part in range(1, num_parts):
        target = total * part / num_parts
        lowest = boundaries[-1] + 1
        highest = count - (num_parts - part)
        nearest = bisect.bisect_left(cumulative, target)
        candidates = {min(max(cut, lowest), highest) for cut in (nearest - 1, nearest)}
        boundaries.append(min(candidates, key=lambda cut: (abs(cumulative[cut] - target), cut)))
    boundaries.append(count)
    return boundaries


def copy_whole_dir_files(path, out, names=WHOLE_DIR_FILES):
    """Copy the feature config and CMVN statistics of the data dir at `path` (where present) to `out`."""
    for name in names:
        source = os.path.join(path, name)
        if os.path.exists(source):
            target = os.path.join(out, name)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            temporary = target + ".tmp"
            shutil.copyfile(source, temporary)
            os.replace(temporary, target)


def partition(data_dir, part_of_utterance, num_parts):
    """Distribute every table of `data_dir` over `num_parts` DataDirs in one pass per table.

    A recording (with segments) or a speaker (when splitting by utterance) can
    be needed by several parts; it is then written to each of them.
    """
    parts_of = {"utterance": {utt: {part} for utt, part in part_of_utterance.items()}}
    if data_dir.segments is not None:
        recordings = {}
        for utt, part in part_of_utterance.items():
            recordings.setdefault(data_dir.segments[utt].recording_id, set()).add(part)
        parts_of["recording"] = recordings
    else:
        parts_of["recording"] = parts_of["utterance"]
    speakers = {}
    if data_dir.utt2spk is not None:
        for utt, part in part_of_utterance.items():
            if utt in data_dir.utt2spk:
                speakers.setdefault(data_dir.utt2spk[utt], set()).add(part)
    parts_of["speaker"] = speakers

    key_kind = {"wav.scp": "recording" if data_dir.segments is not None else "utterance",
                "spk2utt": "speaker", **EXTRA_TABLE_KEYS}
    parts = [DataDir() for _ in range(num_parts)]
    for name, table in data_dir.tables():
        if name == "spk2utt":
            continue  # rebuilt per part from that part's utt2spk below
        owners = parts_of[key_kind.get(name, "utterance")]
        split_tables = [{} for _ in range(num_parts)]
        for key, value in table.items():
            for part in owners.get(key, ()):
                split_tables[part][key] = value
        for part, split_table in zip(parts, split_tables):
            _set_table(part, name, split_table)
    for part, utterance_ids in zip(parts, _utterances_per_part(part_of_utterance, num_parts)):
        if part.utt2spk is not None:
            part.spk2utt = spk2utt_from_utt2spk(part.utt2spk)
        else:
            part.spk2utt = filter_spk2utt(data_dir.spk2utt, utterance_ids)
    return parts


def _utterances_per_part(part_of_utterance, num_parts):
    utterances = [set() for _ in range(num_parts)]
    for utt, part in part_of_utterance.items():
        utterances[part].add(utt)
    return utterances


def _set_table(data_dir, name, table):
    attributes = {file_name: attribute for file_name, attribute, _ in MAIN_TABLES}
    if name in attributes:
        setattr(data_dir, attributes[name], table)
    else:
        data_dir.extra_tables[name] = table


def _fingerprint(path, num_parts, by_speaker):
    """What a split depends on; a change in any of it means the split is out of date."""
    files = {}
    for file_name in KNOWN_FILES:
        file_path = os.path.join(path, file_name)
        if os.path.exists(file_path):
            status = os.stat(file_path)
            files[file_name] = [status.st_size, status.st_mtime_ns]
    return {"num_parts": num_parts, "by_speaker": by_speaker, "files": files}


def _read_marker(marker):
    try:
        with open(marker, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def refuse_an_input_as_output(out, inputs):
    """AsrkitError when the output dir is one of the input dirs, by its path or through a symbolic link: writing
    it would rewrite the input while it is read."""
    real_out = os.path.realpath(out)
    for path in inputs:
        if os.path.realpath(path) == real_out:
            how = "" if os.path.abspath(path) == os.path.abspath(out) else f" (through a link: both are {real_out})"
            raise AsrkitError(f"the output dir {out} is the input dir {os.fspath(path)}{how}; give a new directory")


def subset_data_dir(path, out, num_utts=None, utt_list=None, spk_list=None, first=False,
                    last=False, shortest=False, speakers=False, seed=DEFAULT_SUBSET_SEED):
    """Write a subset of the data dir at `path` to `out`, as Kaldi's subset_data_dir.sh; return it.

    Exactly one selection: `num_utts` utterances, or the utterances listed in
    `utt_list`, or all utterances of the speakers in `spk_list` (each a file
    path whose first field per line is an id, or an iterable of ids).  With
    num_utts the choice is random with a fixed `seed` unless one of:
    first/last (the first/last num_utts in C order), shortest (the shortest by
    utt2dur), speakers (random whole speakers until num_utts is reached).
    """
    path, out = os.fspath(path), os.fspath(out)
    refuse_an_input_as_output(out, [path])
    selections = [num_utts is not None, utt_list is not None, spk_list is not None]
    if sum(selections) != 1:
        raise AsrkitError("give exactly one of: a number of utterances, an utterance list, "
                          "a speaker list")
    modifiers = [name for name, on in
                 (("first", first), ("last", last), ("shortest", shortest), ("speakers", speakers))
                 if on]
    if len(modifiers) > 1 or (modifiers and num_utts is None):
        raise AsrkitError(f"{' / '.join(modifiers)}: at most one of first, last, shortest, "
                          "speakers, and only with a number of utterances")

    data_dir = DataDir.load(path)
    all_utts = data_dir.utterance_ids
    if num_utts is not None:
        chosen = _choose_count(data_dir, path, all_utts, num_utts, modifiers[0] if modifiers else
                               "random", seed)
    elif utt_list is not None:
        chosen = _known_ids(_ids(utt_list), set(all_utts), "utterances", path)
    else:
        if data_dir.utt2spk is None:
            raise DataDirError("selecting speakers needs utt2spk", os.path.join(path, "utt2spk"))
        wanted = set(_known_ids(_ids(spk_list), set(data_dir.utt2spk.values()), "speakers", path))
        chosen = [utt for utt in all_utts if data_dir.utt2spk.get(utt) in wanted]

    subset = data_dir.subset(chosen)
    subset.write(out)
    copy_whole_dir_files(path, out)
    logger.info("wrote %d of %d utterances of %s to %s", len(chosen), len(all_utts), path, out)
    return subset


def _ids(list_or_path):
    if isinstance(list_or_path, (str, os.PathLike)):
        return read_id_list(list_or_path)
    return list(list_or_path)


def _known_ids(ids, known, what, path):
    unknown = [identifier for identifier in ids if identifier not in known]
    if unknown:
        logger.warning("%d of the %d listed %s are not in %s and are ignored (first: %s)",
                       len(unknown), len(ids), what, path, ", ".join(unknown[:5]))
    return [identifier for identifier in ids if identifier in known]


def _choose_count(data_dir, path, all_utts, num_utts, how, seed):
    if num_utts < 1 or num_utts > len(all_utts):
        raise DataDirError(
            f"asked for {num_utts} utterances but the data dir has {len(all_utts)}", path,
            fix=f"ask for 1..{len(all_utts)} utterances")
    if how == "first":
        return all_utts[:num_utts]
    if how == "last":
        return all_utts[-num_utts:]
    if how == "shortest":
        if data_dir.utt2dur is None:
            raise DataDirError(
                "--shortest needs utt2dur", os.path.join(path, "utt2dur"),
                fix="create utt2dur (`<utt> <seconds>`) for the data dir")
        return sorted(all_utts, key=lambda utt: (data_dir.utt2dur.get(utt, float("inf")), utt))[
            :num_utts]
    if how == "random":
        return choose_random(all_utts, num_utts, seed)
    if how == "speakers":
        generator = random.Random(seed)
        if data_dir.utt2spk is None:
            raise DataDirError("--speakers needs utt2spk", os.path.join(path, "utt2spk"))
        by_speaker = {}
        for utt in all_utts:
            by_speaker.setdefault(data_dir.utt2spk.get(utt), []).append(utt)
        speaker_order = c_sorted(speaker for speaker in by_speaker if speaker is not None)
        generator.shuffle(speaker_order)
        chosen = []
        for speaker in speaker_order:
            if len(chosen) >= num_utts:
                break
            chosen.extend(by_speaker[speaker])
        return chosen
    raise ValueError(f"unknown choice {how!r}")


def choose_random(utterance_ids, num_utts, seed=DEFAULT_SUBSET_SEED):
    """`num_utts` of `utterance_ids` at random, as subset_data_dir chooses them: seeded, drawn from the ids in C
    order, so a set's choice can be made before its data dir exists (egs/voicesearch synthesises only the part of its
    training set that egs/voiceover trains on)."""
    return random.Random(seed).sample(c_sorted(utterance_ids), num_utts)


def copy_data_dir(path, out, utt_prefix="", spk_prefix=""):
    """Write the data dir at `path` to `out` with its utterance and speaker ids prefixed (DataDir.with_prefixes;
    Kaldi's utils/copy_data_dir.sh); return the copy.  The feature config and global CMVN statistics are copied;
    the speakers' sums are the front end's to rename (asrkit.frontend.cmvn.copy_speaker_cmvn)."""
    out = os.fspath(out)
    refuse_an_input_as_output(out, [path])
    copy = DataDir.load(path).with_prefixes(utt_prefix, spk_prefix)
    copy.write(out)
    copy_whole_dir_files(path, out, names=COMBINED_WHOLE_DIR_FILES)
    logger.info("copied %d utterances of %s to %s (utterance prefix %r, speaker prefix %r)",
                len(copy.utterance_ids), path, out, utt_prefix, spk_prefix)
    return copy


def combine_data_dirs(out, paths):
    """Write the union of the data dirs `paths` to `out` (Kaldi's utils/combine_data.sh); return it.

    One dir is a union too (Kaldi's script takes one source): a step that combines however many sets it is
    given then needs no case of its own for a single set.  Every table the first dir has must be in all of
    them (a table some lack would leave utterances half-described); an utterance, recording or speaker id in
    two dirs must mean the same thing there, or the dirs are refused, naming the id.  The feature config and
    CMVN statistics are the first dir's.
    """
    out = os.fspath(out)
    if not paths:
        raise AsrkitError("give at least one data dir to combine")
    refuse_an_input_as_output(out, paths)
    dirs = [DataDir.load(path) for path in paths]
    names = [name for name, _ in dirs[0].tables() if name != "spk2utt"]
    combined = {}
    for path, data_dir in zip(paths, dirs):
        tables = dict(data_dir.tables())
        missing = [name for name in names if name not in tables]
        if missing:
            raise AsrkitError(f"{path} has no {', '.join(missing)}, which {paths[0]} has: combine dirs that "
                              "hold the same tables")
        for name in names:
            merged = combined.setdefault(name, {})
            for key, value in tables[name].items():
                if key in merged and str(merged[key]) != str(value):
                    raise AsrkitError(f"{key}: in {name} of two of the dirs with different values "
                                      f"({path} and an earlier one)")
                merged[key] = value
    attributes = {file_name: attribute for file_name, attribute, _ in MAIN_TABLES}
    result = DataDir(extra_tables={name: table for name, table in combined.items() if name not in attributes},
                     **{attributes[name]: table for name, table in combined.items() if name in attributes})
    if result.utt2spk is not None:
        result.spk2utt = spk2utt_from_utt2spk(result.utt2spk)
    result.write(out)
    copy_whole_dir_files(paths[0], out, names=COMBINED_WHOLE_DIR_FILES)
    logger.info("wrote %d utterances of %d data dirs to %s", len(result.utterance_ids), len(paths), out)
    return result
