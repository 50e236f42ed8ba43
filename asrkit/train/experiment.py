"""The experiment directory's files besides the checkpoints: config.json, the resume check, result.json.

config.json records the effective model and training hyperparameters, the data,
the environment and the command line; a resumed run must agree with it on what
shapes the network and the batches (FIXED_ON_RESUME).  result.json holds what a
run achieved, for results tables.
"""

import dataclasses
import json
import logging
import os
import platform

import asrkit
from asrkit.errors import AsrkitError
from asrkit.io.atomic import atomic_output
from asrkit.tf_runtime import import_tensorflow
from asrkit.train.params import FIXED_ON_RESUME, train_params

logger = logging.getLogger("asrkit.train")


def environment():
    return {"asrkit": asrkit.__version__, "tensorflow": import_tensorflow().__version__,
            "python": platform.python_version(), "host": platform.node()}


def write_json(path, value):
    with atomic_output(path) as out:
        json.dump(value, out, indent=2, sort_keys=True)
        out.write("\n")


def check_resumable(exp_dir, config):
    """A resumed run must build the same network and batch the same way as the checkpoint's run."""
    path = os.path.join(exp_dir, "config.json")
    if not os.path.exists(path):
        return
    with open(path, encoding="utf-8") as handle:
        previous = json.load(handle)
    problems = []
    if previous.get("model") != config["model"]:
        problems.append(f"model {previous.get('model')} vs now {config['model']}")
    if previous.get("init_model") != config.get("init_model"):
        problems.append(f"init_model {previous.get('init_model')} vs now {config.get('init_model')}")
    # What a run made before a knob existed ran with (a CE run's config had no criterion before CTC came).
    defaults = {**train_params().to_dict(), "criterion": "ce"}
    for key in FIXED_ON_RESUME:
        if key not in config["train"]:  # a knob of another kind of training (the criterion: seq only)
            continue
        before, now = previous.get("train", {}).get(key, defaults.get(key)), config["train"][key]
        if before != now:
            problems.append(f"{key} {before!r} vs now {now!r}")
    # Knobs whose being on puts more in the checkpoint (the searched minibatch size; LF-MMI's xent output layer).
    for key, held in (("minibatch_search_every", "the searched minibatch size"),
                      ("xent_regularize", "the cross-entropy output layer")):
        before = previous.get("train", {}).get(key, 0)
        if key in config["train"] and bool(before) != bool(config["train"][key]):
            problems.append(f"{key} {before} vs now {config['train'][key]} (the checkpoint holds {held} only when "
                            "it is on)")
    for key in ("feature_dim", "num_pdfs", "ivector_dim"):
        before, now = previous.get("data", {}).get(key, 0 if key == "ivector_dim" else None), config["data"][key]
        if before != now:
            problems.append(f"{key} {before} vs now {now}")
    if problems:
        raise AsrkitError(
            f"cannot resume from {exp_dir}/checkpoints: the checkpoint was made with "
            + "; ".join(problems) + " (fix: use the same options, or --no-resume to start again)"
        )


def set_aside(path):
    """Move an existing directory to path.old-N rather than deleting a user's checkpoints."""
    index = 1
    while os.path.exists(f"{path}.old-{index}"):
        index += 1
    os.rename(path, f"{path}.old-{index}")
    return f"{path}.old-{index}"


def experiment_config(data_dir, ali_dir, options, params, net_config, data):
    """What config.json records of a run."""
    return {
        "model": net_config,
        "train": params.to_dict(),
        "data": {
            "data_dir": os.path.abspath(data_dir), "ali_dir": os.path.abspath(ali_dir),
            "cmvn": os.path.abspath(data.cmvn_path),
            "valid_data_dir": os.path.abspath(options.valid_data_dir) if options.valid_data_dir else None,
            "feature_dim": data.feature_dim, "num_pdfs": data.num_pdfs,
            "ivector_dim": data.ivectors.ivector_dim if data.ivectors else 0,
            "online_ivector_dir": os.path.abspath(options.online_ivector_dir) if data.ivectors else None,
            "train_utterances": len(data.train.utterance_ids), "train_frames": data.train.num_frames,
            "valid_utterances": len(data.valid.utterance_ids) if data.valid else 0, "skipped": len(data.skipped),
        },
        "environment": environment(),
        "command_line": options.command_line,
        "init_model": os.path.abspath(options.init_model) if options.init_model else None,
    }


def open_experiment(exp_dir, config, resume, chief):
    """The checkpoint to resume from (None: a fresh start), after checking that it fits `config`; writes
    config.json.  Only the chief reads and writes the experiment dir; the other workers take its weights at
    the start.  Without `resume` old checkpoints are moved aside, never deleted."""
    os.makedirs(exp_dir, exist_ok=True)
    checkpoint_dir = os.path.join(exp_dir, "checkpoints")
    tf = import_tensorflow()
    latest = tf.train.latest_checkpoint(checkpoint_dir) if chief and os.path.isdir(checkpoint_dir) else None
    if latest and resume:
        check_resumable(exp_dir, config)
    elif latest:
        logger.info("--no-resume: moved the old checkpoints to %s", set_aside(checkpoint_dir))
        latest = None
    if chief:
        write_json(os.path.join(exp_dir, "config.json"), config)
    return latest


def write_result(exp_dir, result, criterion_name):
    """result.json: what this run achieved, for results tables (recipes' RESULTS); the numbers of this run only,
    so a resumed run's frames/s and t_session are those of its last part."""
    write_json(os.path.join(exp_dir, "result.json"),
               {**dataclasses.asdict(result), "criterion": criterion_name,
                "example_server_count": len(result.example_servers["received"]) if result.example_servers else 0})
