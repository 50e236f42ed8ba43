"""asrkit-train-seq: sequence training (sMBR, MMI) of a CE-trained model with outer derivatives from example servers."""

import json
import logging

import click

from asrkit.cli.common import CONTEXT_SETTINGS, asrkit_command
from asrkit.cli.options_file import options_file
from asrkit.cli.train_ce import input_options, strategy_options, training_options
from asrkit.errors import AsrkitError
from asrkit.logs import command_line, summary_line
from asrkit.tf_runtime import import_tensorflow
from asrkit.train.params import seq_params


@click.command(context_settings=CONTEXT_SETTINGS)
@click.argument("data_dir", type=click.Path(exists=True, file_okay=False))
@click.argument("ali_dir", type=click.Path(exists=True, file_okay=False))
@click.argument("ce_model_dir", type=click.Path(exists=True, file_okay=False))
@click.argument("graph_dir", type=click.Path(exists=True, file_okay=False))
@click.argument("exp_dir", type=click.Path(file_okay=False))
@input_options
@strategy_options("Only the chief publishes snapshots; every worker's servers follow them in "
                  "EXP_DIR/snapshots, so workers on other machines need EXP_DIR on a shared file system.")
@click.option("--online-ivector-dir", type=click.Path(exists=True, file_okay=False),
              help="For a CE model trained with online i-vectors: its --online-ivector-dir (the held-out set's "
                   "i-vectors come from it; the example servers, which this then needs, extract the training "
                   "examples' own from the features they serve).")
@click.option("--print-config", is_flag=True, help="Print the effective training config as JSON and exit.")
@training_options(seq_params, {"criterion": ("smbr", "mmi", "mmi-fr", "bmmi")})
@options_file
@asrkit_command("asrkit-train-seq")
def main(data_dir, ali_dir, ce_model_dir, graph_dir, exp_dir, inputs, resume, servers, parallelism, online_ivector_dir,
         print_config, **train_values):
    """Sequence-train the model in CE_MODEL_DIR (asrkit-train-ce's final/) on DATA_DIR with ALI_DIR's alignments
    as the numerator and lattices from GRAPH_DIR (utils/mkgraph with the bigram lang dir).

    The example servers compute the criterion's outer derivatives with the newest snapshot the
    trainer publishes in EXP_DIR/snapshots; the trainer maximises L_AUX = sum w log p.  Writes
    EXP_DIR/config.json, checkpoints/, snapshots/, tensorboard/ and the exported model final/
    (with --strategy multiworker or ps, the chief does; EXP_DIR must then be on a file system
    every worker shares, as the workers read the chief's snapshots there).
    """
    # deferred: these import TensorFlow (~6 s) at module level; --help must not wait for it.
    from asrkit.train.distribute import end_chief_process, serve_forever, serves_only
    from asrkit.train.trainer import TrainOptions, train_seq

    import_tensorflow(parallelism.num_threads or None)
    logger = logging.getLogger("asrkit-train-seq")
    strategy = parallelism.strategy
    serving = None if print_config else serves_only(strategy, parallelism.cluster)
    if serving is not None:
        serve_forever(serving)  # a worker or ps task of --strategy ps: the chief sends it the steps
        return
    train_overrides = {name: value for name, value in train_values.items() if value is not None}
    if print_config:
        try:
            click.echo(json.dumps(seq_params().set(**train_overrides).to_dict(), indent=2, sort_keys=True))
        except KeyError as error:
            raise AsrkitError(str(error.args[0])) from None
        return
    options = TrainOptions(params=train_overrides, **inputs.as_dict(), resume=resume, command_line=command_line(),
                           **servers.as_dict(), strategy=strategy, cluster=parallelism.cluster,
                           online_ivector_dir=online_ivector_dir)
    result = train_seq(data_dir, ali_dir, ce_model_dir, graph_dir, exp_dir, options)
    logger.info(summary_line(
        "asrkit-train-seq", "ok", steps=result.steps, epochs=result.epochs, frames=result.frames,
        loss=f"{result.loss:.4f}", frame_accuracy=f"{result.frame_accuracy:.4f}",
        valid_accuracy="none" if result.valid_accuracy is None else f"{result.valid_accuracy:.4f}",
        frames_per_second=f"{result.frames_per_second:.0f}", t_session=f"{result.t_session:.3f}",
        **{f"valid_{name}": f"{value:.4f}" for name, value in (result.valid_metrics or {}).items()},
        skipped=result.skipped, resumed_from=result.resumed_from, seconds=f"{result.seconds:.1f}",
        model=result.model_dir or "none",
        **({"server_restarts": result.example_servers["restarts"]} if result.example_servers else {}),
        **({"strategy": strategy} if strategy != "local" else {}),
    ))
    end_chief_process(strategy)  # --strategy ps: a lost worker would keep the process from exiting


if __name__ == "__main__":
    main()
