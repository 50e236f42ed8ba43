"""asrkit-train-ce: cross-entropy training of an acoustic network on frame alignments."""

import json
import logging

import click

from asrkit.cli.common import CONTEXT_SETTINGS, asrkit_command

CHOICES = {"mode": ("truncated", "full"), "optimizer": ("adagrad", "adam", "sgd"),
           "lr_schedule": ("constant", "exponential")}


def training_options(function):
    """One --option per training hyperparameter, with the help text and default declared in train_params()."""
    from asrkit.train.trainer import train_params

    for name, default, description in reversed(train_params().describe()):
        flag = "--" + name.replace("_", "-")
        kind = click.Choice(CHOICES[name]) if name in CHOICES else type(default)
        function = click.option(flag, name, type=kind, default=None, show_default=False,
                                help=f"{description} [default: {default}]")(function)
    return function


def _model_choices():
    from asrkit.nn.registry import config_names

    return config_names()


@click.command(context_settings=CONTEXT_SETTINGS)
@click.argument("data_dir", type=click.Path(exists=True, file_okay=False))
@click.argument("ali_dir", type=click.Path(exists=True, file_okay=False))
@click.argument("exp_dir", type=click.Path(file_okay=False))
@click.option("--model", default="recipe", type=click.Choice(_model_choices()),
              help="Model config (asrkit.nn.registry): recipe = 2xLSTM(256), lstm5x600/768/1024 as in seed 000, "
                   "dnn as in seed 002; lstm and dnn are the classes with their defaults.")
@click.option("--model-param", "model_params", multiple=True, metavar="NAME=VALUE",
              help="Change a model hyperparameter, e.g. --model-param num_cells=512 --model-param projection_dim=256 "
                   "--model-param label_delay=5 (--print-config lists them).")
@click.option("--cmvn", type=click.Path(exists=True, dir_okay=False),
              help="CMVN statistics to normalise with [default: <data-dir>/cmvn.h5].")
@click.option("--valid-data-dir", type=click.Path(exists=True, file_okay=False),
              help="A featurized held-out data dir (instead of holding out --valid-utts of the training set).")
@click.option("--valid-ali-dir", type=click.Path(exists=True, file_okay=False),
              help="Alignments of --valid-data-dir [default: ALI_DIR].")
@click.option("--resume/--no-resume", default=True,
              help="Continue from the latest checkpoint in EXP_DIR/checkpoints (weights, optimizer, step, input "
                   "position); --no-resume starts again and moves old checkpoints aside.")
@click.option("--example-servers", metavar="local:N|ADDRESS,...",
              help="Pull examples from example servers instead of reading the tables in-process: local:N starts N "
                   "asrkit-serve-examples processes over shards of the training set (logs in EXP_DIR/log/serve.N.log; "
                   "one that dies is restarted), or give the tcp:// addresses of servers started elsewhere.")
@click.option("--server-public-key", type=click.Path(exists=True, dir_okay=False),
              help="CURVE public key file (.key) of the example servers (those started with --curve-secret-key).")
@click.option("--server-styles", type=click.Path(exists=True, dir_okay=False),
              help="local:N servers noisify on the fly with this style config (asrkit-noisify's --styles format).")
@click.option("--server-from-feats", is_flag=True,
              help="local:N servers read DATA_DIR/feats.scp instead of featurizing the audio.")
@click.option("--num-threads", default=0, type=click.IntRange(min=0),
              help="TensorFlow intra- and inter-op threads (0: TensorFlow's choice, all cores).")
@click.option("--print-config", is_flag=True, help="Print the effective model and training config as JSON and exit.")
@training_options
@asrkit_command("asrkit-train-ce")
def main(data_dir, ali_dir, exp_dir, model, model_params, cmvn, valid_data_dir, valid_ali_dir, resume,
         example_servers, server_public_key, server_styles, server_from_feats, num_threads, print_config,
         **train_values):
    """Train an acoustic network with cross-entropy on DATA_DIR's features and ALI_DIR's alignments.

    DATA_DIR is featurized (feats.scp, conf/featurize.json, cmvn.h5); ALI_DIR holds ali.scp and
    num_pdfs.  Writes EXP_DIR/config.json, checkpoints/, tensorboard/ and the exported model final/.
    """
    from asrkit.errors import AsrkitError
    from asrkit.logs import command_line, summary_line
    from asrkit.nn.registry import model_config, parse_overrides
    from asrkit.tf_runtime import import_tensorflow
    from asrkit.train.trainer import TrainOptions, train_ce, train_params

    import_tensorflow(num_threads or None)
    logger = logging.getLogger("asrkit-train-ce")
    try:
        overrides = parse_overrides(model_params, model)
        train_overrides = {name: value for name, value in train_values.items() if value is not None}
        if print_config:
            click.echo(json.dumps({"model": model_config(model, overrides),
                                   "train": train_params().set(**train_overrides).to_dict()}, indent=2, sort_keys=True))
            return
    except (KeyError, ValueError) as error:
        raise AsrkitError(str(error.args[0]) if error.args else str(error)) from None
    options = TrainOptions(model=model, model_overrides=overrides, params=train_overrides, cmvn=cmvn,
                           valid_data_dir=valid_data_dir, valid_ali_dir=valid_ali_dir, resume=resume,
                           command_line=command_line(), example_servers=example_servers,
                           server_public_key=server_public_key, server_styles=server_styles,
                           server_from_feats=server_from_feats)
    result = train_ce(data_dir, ali_dir, exp_dir, options)
    logger.info(summary_line(
        "asrkit-train-ce", "ok", steps=result.steps, epochs=result.epochs, frames=result.frames,
        loss=f"{result.loss:.4f}", frame_accuracy=f"{result.frame_accuracy:.4f}",
        valid_accuracy="none" if result.valid_accuracy is None else f"{result.valid_accuracy:.4f}",
        apr=f"{result.apr:.3f}", frames_per_second=f"{result.frames_per_second:.0f}",
        t_session=f"{result.t_session:.3f}", skipped=result.skipped, resumed_from=result.resumed_from,
        seconds=f"{result.seconds:.1f}", model=result.model_dir,
        **({"server_restarts": result.example_servers["restarts"]} if result.example_servers else {}),
    ))
