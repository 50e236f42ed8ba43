"""asrkit-train-ce: cross-entropy training of an acoustic network on frame alignments."""

import json
import logging

import click

from asrkit.cli.common import CONTEXT_SETTINGS, apply_options, asrkit_command, option_group
from asrkit.cli.options_file import options_file
from asrkit.errors import AsrkitError
from asrkit.logs import command_line, summary_line
from asrkit.nn.configs import config_names
from asrkit.tf_runtime import import_tensorflow
from asrkit.train.params import ce_params

CHOICES = {"mode": ("truncated", "full"), "optimizer": ("adagrad", "adam", "sgd"),
           "lr_schedule": ("constant", "exponential"), "criterion": ("ce", "ctc", "lfmmi")}


def training_options(params_function, choices=None):
    """A decorator adding one --option per hyperparameter of params_function(), with its help text and default;
    `choices` replaces entries of CHOICES (the values an option takes)."""
    choices = {**CHOICES, **(choices or {})}

    def decorate(function):
        for name, default, description in reversed(params_function().describe()):
            flag = "--" + name.replace("_", "-")
            if isinstance(default, bool):
                off = "--no-" + name.replace("_", "-")
                function = click.option(f"{flag}/{off}", name, default=None,
                                        help=f"{description} [default: {flag if default else off}]")(function)
                continue
            kind = click.Choice(choices[name]) if name in choices else type(default)
            function = click.option(flag, name, type=kind, default=None, show_default=False,
                                    help=f"{description} [default: {default}]")(function)
        return function

    return decorate


def input_options(function):
    """The options asrkit-train-ce and asrkit-train-seq share: the data (as one argument `inputs`: CMVN, held-out
    data), --resume, and the example servers (as one argument `servers`)."""
    return apply_options([
        option_group("inputs", [
            click.option("--cmvn", type=click.Path(exists=True, dir_okay=False),
                         help="CMVN statistics to normalise with [default: <data-dir>/cmvn.h5]."),
            click.option("--valid-data-dir", type=click.Path(exists=True, file_okay=False),
                         help="A featurized held-out data dir (instead of holding out --valid-utts of the training "
                              "set)."),
            click.option("--valid-ali-dir", type=click.Path(exists=True, file_okay=False),
                         help="Alignments of --valid-data-dir [default: ALI_DIR]."),
        ]),
        click.option("--resume/--no-resume", default=True,
                     help="Continue from the latest checkpoint in EXP_DIR/checkpoints (weights, optimizer, step, "
                          "input position); --no-resume starts again and moves old checkpoints aside."),
        option_group("servers", [
            click.option("--example-servers", metavar="local:N|ADDRESS,...|@FILE",
                         help="Pull examples from example servers instead of reading the tables in-process: local:N "
                              "starts N asrkit-serve-examples processes (in the trainer's mode: seq for "
                              "asrkit-train-seq) over shards of the training set (logs in EXP_DIR/log/serve.N.log; "
                              "one that dies is restarted), or give the tcp:// addresses of servers started "
                              "elsewhere, or @FILE with one address a line."),
            click.option("--server-public-key", type=click.Path(exists=True, dir_okay=False),
                         help="CURVE public key file (.key) of the example servers (those started with "
                              "--curve-secret-key)."),
            click.option("--server-styles", type=click.Path(exists=True, dir_okay=False),
                         help="local:N servers noisify on the fly with this style config (asrkit-noisify's --styles "
                              "format)."),
            click.option("--server-from-feats", is_flag=True,
                         help="local:N servers read DATA_DIR/feats.scp instead of featurizing the audio."),
        ]),
    ])(function)


def strategy_options(note=""):
    """--strategy and --cluster (asrkit.train.distribute) and --num-threads, shared by asrkit-train-ce and
    asrkit-train-seq as one argument `parallelism`; `note` ends the --strategy help with what a trainer adds to
    it."""
    return option_group("parallelism", [
        click.option(
            "--strategy", default="local", type=click.Choice(("local", "multiworker", "ps")),
            help="local: one process. multiworker: synchronous data parallelism over the workers of the cluster "
                 "(MultiWorkerMirroredStrategy; worker i of N reads every N-th utterance, or its own "
                 "--example-servers; worker 0 writes EXP_DIR). ps: asynchronous SGD with parameter servers "
                 "(ParameterServerStrategy; the chief task trains, worker and ps tasks only serve; needs "
                 "--mode full)." + (f" {note}" if note else "")),
        click.option(
            "--cluster", "cluster", type=click.Path(exists=True, dir_okay=False),
            help="JSON cluster file in TF_CONFIG's format: {\"cluster\": {\"chief\": [...], \"worker\": "
                 "[\"host:port\", ...], \"ps\": [...]}, \"task\": {\"type\": \"worker\", \"index\": 0}} "
                 "[default: the TF_CONFIG environment variable]."),
        click.option("--num-threads", default=0, type=click.IntRange(min=0),
                     help="TensorFlow intra- and inter-op threads (0: TensorFlow's choice, all cores)."),
    ])


@click.command(context_settings=CONTEXT_SETTINGS)
@click.argument("data_dir", type=click.Path(exists=True, file_okay=False))
@click.argument("ali_dir", type=click.Path(exists=True, file_okay=False))
@click.argument("exp_dir", type=click.Path(file_okay=False))
@option_group("network", [
    click.option("--model", default="recipe", type=click.Choice(config_names()),
                 help="Model config (asrkit.nn.registry): recipe = 2xLSTM(256), lstm5x600/768/1024 as in "
                      "[Variani2017], dnn as in [McDermott2014] (26 frames, 4x1024), wblstm as in [Mohamed2015], "
                      "tdnnf the factorized TDNN of Kaldi's chain recipes (Povey et al. 2018); lstm is the LSTM "
                      "class with its defaults."),
    click.option("--model-param", "model_params", multiple=True, metavar="NAME=VALUE",
                 help="Change a model hyperparameter, e.g. --model-param num_cells=512 --model-param "
                      "projection_dim=256 --model-param label_delay=5 (--print-config lists them)."),
    click.option("--init-model", type=click.Path(exists=True, file_okay=False),
                 help="Start from the weights of this exported model (another run's final/) of the same network "
                      "(same --model and --model-param), e.g. multi-style training continuing a clean-only model; "
                      "the optimizer, the schedule and the priors start afresh."),
])
@input_options
@strategy_options()
@click.option("--online-ivector-dir", type=click.Path(exists=True, file_okay=False),
              help="Append these online i-vectors (asrkit-extract-ivectors' output, holding the training and "
                   "held-out utterances) to the network's input, each frame its period's i-vector. Example "
                   "servers (--example-servers local:N) extract them the same way from the features they serve "
                   "(the noisy ones with --server-styles), one utterance at a time.")
@click.option("--print-config", is_flag=True, help="Print the effective model and training config as JSON and exit.")
@training_options(ce_params)
@options_file
@asrkit_command("asrkit-train-ce")
def main(data_dir, ali_dir, exp_dir, network, inputs, resume, servers, parallelism, online_ivector_dir, print_config,
         **train_values):
    """Train an acoustic network with cross-entropy on DATA_DIR's features and ALI_DIR's alignments.

    DATA_DIR is featurized (feats.scp, conf/featurize.json, cmvn.h5); ALI_DIR holds ali.scp and
    num_pdfs (with --criterion ctc: phone_ali.scp and phones.txt).  Writes EXP_DIR/config.json,
    checkpoints/, tensorboard/ and the exported model final/.
    """
    # deferred: these import TensorFlow (~6 s) at module level; --help must not wait for it.
    from asrkit.nn.registry import model_config, parse_overrides
    from asrkit.train.distribute import end_chief_process, serve_forever, serves_only
    from asrkit.train.trainer import TrainOptions, train_ce

    import_tensorflow(parallelism.num_threads or None)
    logger = logging.getLogger("asrkit-train-ce")
    strategy, model = parallelism.strategy, network.model
    serving = None if print_config else serves_only(strategy, parallelism.cluster)
    if serving is not None:
        serve_forever(serving)  # a worker or ps task of --strategy ps: the chief sends it the steps
        return
    try:
        overrides = parse_overrides(network.model_params, model)
        train_overrides = {name: value for name, value in train_values.items() if value is not None}
        if print_config:
            click.echo(json.dumps({"model": model_config(model, overrides),
                                   "train": ce_params().set(**train_overrides).to_dict()}, indent=2, sort_keys=True))
            return
    except (KeyError, ValueError) as error:
        raise AsrkitError(str(error.args[0]) if error.args else str(error)) from None
    options = TrainOptions(model=model, model_overrides=overrides, params=train_overrides, **inputs.as_dict(),
                           resume=resume, command_line=command_line(), **servers.as_dict(),
                           init_model=network.init_model, strategy=strategy, cluster=parallelism.cluster,
                           online_ivector_dir=online_ivector_dir)
    result = train_ce(data_dir, ali_dir, exp_dir, options)
    logger.info(summary_line(
        "asrkit-train-ce", "ok", steps=result.steps, epochs=result.epochs, frames=result.frames,
        loss=f"{result.loss:.4f}", frame_accuracy=f"{result.frame_accuracy:.4f}",
        valid_accuracy="none" if result.valid_accuracy is None else f"{result.valid_accuracy:.4f}",
        apr=f"{result.apr:.3f}", frames_per_second=f"{result.frames_per_second:.0f}",
        t_session=f"{result.t_session:.3f}", skipped=result.skipped, resumed_from=result.resumed_from,
        seconds=f"{result.seconds:.1f}", model=result.model_dir or "none",
        **({"server_restarts": result.example_servers["restarts"]} if result.example_servers else {}),
        **({"strategy": strategy} if strategy != "local" else {}),
    ))
    end_chief_process(strategy)  # --strategy ps: a lost worker would keep the process from exiting


if __name__ == "__main__":
    main()
