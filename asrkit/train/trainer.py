"""asrkit-train-ce and asrkit-train-seq as a library: training an acoustic network, in-process.

    train_ce(data_dir, ali_dir, exp_dir, TrainOptions(...)) -> TrainResult
    train_seq(data_dir, ali_dir, ce_model_dir, graph_dir, exp_dir, TrainOptions(...)) -> TrainResult

Both build the criterion their params name (asrkit.train.criteria: cross-entropy, CTC, LF-MMI from
alignments; sMBR and the MMI family continuing a CE model) and enter one run, run_training.

Reads the feature and alignment tables directly (asrkit.train.examples), or, with
`example_servers`, pulls examples from example servers (asrkit.example_servers: `local:N`
starts N servers over shards of the training set, restarts one that dies and
stops them at the end; otherwise a comma-separated list of addresses), batches
them with truncated unrolling and state saving (default) or full unrolling with
length buckets, and trains with a custom loop (tf.function steps, no Keras fit;
asrkit.train.loop).  What differs between criteria is the criterion object
(asrkit.train.criteria.protocol.Criterion).  The experiment directory
gets (asrkit.train.experiment):

- `config.json`: the effective model and training hyperparameters (every one, defaults
  included), the data, the environment and the command line;
- `checkpoints/`: tf.train.CheckpointManager checkpoints (network, optimizer slots, step,
  saved stream state, input position) every `checkpoint_every` steps and at the end.  TF
  writes the checkpoint files first and the `checkpoint` index atomically last, so a
  kill during a save leaves the previous checkpoint as the latest;
- `tensorboard/`: the metrics as TensorBoard scalars;
- `final/`: the exported model (asrkit.nn.model_dir).

With `resume` (the default) a run continues from the latest checkpoint: same
weights, optimizer accumulators, step, and input stream position, so a killed
run and an uninterrupted one see the same batches in the same order.  With example
servers the weights, optimizer and step resume the same way, and each shard's stream
goes on after the last example the checkpoint's batches took (the servers are started
there: asrkit.example_servers.client); the utterances the batcher held half-consumed
are not served again (a server cannot load one utterance by id), so the resumed run
trains the rest of its epochs less those few.  Sequence training's servers start
afresh with its snapshot schedule.  The pdf count and the class priors come from the
alignment dir in both cases.

`strategy` says where the steps run (asrkit.train.distribute): in this process (local, the
default), on synchronous workers that each read their own shard or servers and all-reduce
the gradients (multiworker; worker 0, the chief, writes the experiment dir), or on
parameter servers and workers that the chief sends steps to asynchronously (ps, full
unrolling only).
"""

import dataclasses
import json
import logging
import os
import tempfile
import time

import numpy as np

from asrkit.errors import AsrkitError
from asrkit.frontend.cmvn import CmvnStats
from asrkit.io.json_file import read_json
from asrkit.ivector.append import IvectorExamples, IvectorTable
from asrkit.ivector.extract_dir import CONFIG_FILE as IVECTOR_CONFIG_FILE
from asrkit.nn.lstm import describe_cells
from asrkit.nn.model_dir import read_model_json, write_model_dir
from asrkit.nn.pipeline import layer_devices as pipeline_layer_devices
from asrkit.nn.precision import set_precision
from asrkit.nn.registry import build_from_config, model_config
from asrkit.example_servers.connect import StreamOptions, open_example_servers
from asrkit.example_servers.producer import read_feature_config
from asrkit.example_servers.wire import Handshake
from asrkit.train.bucket_batcher import BucketBatcher
from asrkit.train.criteria.registry import FROM_ALIGNMENTS, CriterionInputs, make_criterion
from asrkit.train.cross_entropy import describe as describe_frame_loss
from asrkit.train.distribute import check_params as check_strategy_params, make_distribution
from asrkit.train.experiment import experiment_config, open_experiment, write_result
from asrkit.train.loop import Checkpoints, TrainingLoop, TrainingParts
from asrkit.train.metrics import ScalarWriter
from asrkit.train.minibatch_scaling import MinibatchScaler, check_params as check_scaling_params
from asrkit.train.one_bit import bits_per_value
from asrkit.train.optimizers import LearningRate, make_optimizer
# The options, result and hyperparameters live in asrkit.train.params (declarations only, which the tools
# read when their modules load); importers of train_ce take them from here too.
from asrkit.train.params import (MODES, TrainOptions, TrainResult, ce_params, check_numbers, seq_params,  # noqa: F401
                                 train_params)
from asrkit.train.steps import TrainingState
from asrkit.train.training_set import load_training_data
from asrkit.train.truncated_batcher import TruncatedBatcher
from asrkit.train.validation import Validation, validation_batches

logger = logging.getLogger("asrkit.train")

def train_ce(data_dir, ali_dir, exp_dir, options=None):
    """Train with cross-entropy (or CTC); see the module docstring.  Returns a TrainResult."""
    options = options or TrainOptions()
    params = ce_params()
    try:
        params.set(**options.params)
        net_config = model_config(options.model, options.model_overrides)
    except KeyError as error:
        raise AsrkitError(str(error.args[0])) from None
    check_numbers(params)
    if options.init_model:
        other = read_model_json(options.init_model)["model"]
        if (other.get("name"), other.get("params")) != (net_config["name"], net_config["params"]):
            raise AsrkitError(f"--init-model {options.init_model} holds another network ({other.get('name')} "
                              f"{json.dumps(other.get('params'), sort_keys=True)}) than this run's ({net_config['name']} "
                              f"{json.dumps(net_config['params'], sort_keys=True)}): give the same --model and "
                              "--model-param options")
    if params.criterion not in FROM_ALIGNMENTS:
        raise AsrkitError(f"criterion must be {' or '.join(FROM_ALIGNMENTS)}, not {params.criterion!r}")
    criterion = make_criterion(params, CriterionInputs(init_model=options.init_model))
    return run_training(data_dir, ali_dir, exp_dir, options, params, net_config, criterion)


def train_seq(data_dir, ali_dir, ce_model_dir, graph_dir, exp_dir, options):
    """Sequence-train the CE model in ce_model_dir (asrkit.train.criteria.sequence).  Returns a TrainResult.

    options: TrainOptions; its params override seq_params(); its model fields are ignored (the network is the
    CE model's).
    """
    params = seq_params()
    try:
        params.set(**options.params)
    except KeyError as error:
        raise AsrkitError(str(error.args[0])) from None
    check_numbers(params)
    model_json = read_json(os.path.join(ce_model_dir, "model.json"))
    if not os.path.exists(os.path.join(graph_dir, "HCLG.fst")):
        raise AsrkitError(f"{graph_dir} has no HCLG.fst (make it with utils/mkgraph from the bigram lang dir and "
                          f"{ce_model_dir})")
    carries_ivectors = os.path.exists(os.path.join(ce_model_dir, IVECTOR_CONFIG_FILE))
    if carries_ivectors != bool(options.online_ivector_dir):
        raise AsrkitError(f"{ce_model_dir} was trained with online i-vectors: give --online-ivector-dir (the "
                          "i-vectors of the training data, as for asrkit-train-ce)" if carries_ivectors else
                          f"{ce_model_dir} was trained without i-vectors: leave out --online-ivector-dir")
    criterion = make_criterion(params, CriterionInputs(init_model=ce_model_dir, graph_dir=graph_dir, exp_dir=exp_dir))
    return run_training(data_dir, ali_dir, exp_dir, options, params, model_json["model"], criterion)


def run_training(data_dir, ali_dir, exp_dir, options, params, net_config, criterion):
    """The training run every criterion shares (`criterion` says how they differ): builds the parts, runs the loop
    (asrkit.train.loop.TrainingLoop), exports the model and writes result.json.  Returns a TrainResult."""
    started = time.monotonic()
    distribution, layer_devices = _start(options, params, net_config, criterion)
    chief = distribution.is_chief
    data = _load_data(data_dir, ali_dir, options, params, criterion)
    latest = open_experiment(exp_dir, experiment_config(data_dir, ali_dir, options, params, net_config, data),
                             options.resume, chief)
    net = _build_network(net_config, data, params, distribution, layer_devices, criterion)
    parts = _build_parts(params, criterion, distribution, net)
    checkpoints = Checkpoints(os.path.join(exp_dir, "checkpoints"), params.keep_checkpoints, chief, net,
                              parts.optimizer, parts.training_state, _worker_checkpoint_dir(exp_dir, distribution))
    cmvn = CmvnStats.read(data.cmvn_path)
    criterion.prepare(data, cmvn)
    if not latest:
        criterion.initialize(net)
    source, batcher = _open_input(data_dir, ali_dir, exp_dir, options, params, data, cmvn, parts)
    from_servers = bool(options.example_servers)
    resume_input = not from_servers or criterion.server_stream_resumes
    resumed_from = checkpoints.restore(latest, batcher, resume_input) if latest else 0
    distribution.start(list(net.variables) + list(parts.optimizer.variables), parts.training_state.step)
    if not chief:
        resumed_from = int(parts.training_state.step.numpy())
        # As the chief's: every worker saves at the same steps (they meet at a barrier there), the last one too.
        checkpoints.last_saved = resumed_from if resumed_from else -1
        if resumed_from and (from_servers or not checkpoints.restore_worker(resumed_from, batcher)):
            logger.info("resuming with the chief's weights at step %d; this worker's input starts afresh (%s)",
                        resumed_from, "the example-server stream has no position" if from_servers else
                        f"no checkpoint of step {resumed_from} in {checkpoints.worker_dir}")
    valid_batches = validation_batches(data, cmvn, params, net.label_delay) if chief else []
    # Workers other than the chief write their summaries to a temporary dir, as TensorFlow recommends.
    scratch_dir = None if chief else tempfile.mkdtemp(prefix=f"asrkit-worker{distribution.worker_index}-")
    writer = ScalarWriter(os.path.join(exp_dir, "tensorboard") if chief else scratch_dir)
    validation = Validation(parts.steps, valid_batches, criterion, writer, started)
    loop = TrainingLoop(parts, source, batcher, checkpoints, validation, writer, resumed_from, from_servers,
                        scratch_dir)
    try:
        loop.run()
    except distribution.lost_peer_errors() as error:
        raise distribution.lost_peer(error, loop.step) from None
    if latest and loop.step == resumed_from:
        logger.info("training had already finished at step %d (its checkpoint is the last); exporting it again "
                    "(--no-resume trains afresh)", loop.step)
    model_dir = _export(exp_dir, ali_dir, data, net, net_config, params, criterion, loop) if chief else None
    if not chief:
        logger.info("worker %d done at step %d; the chief exports the model", distribution.worker_index, loop.step)
    result = _result(loop, data, params, model_dir, started, valid_accuracy=validation.accuracy if chief else None,
                     valid_metrics=validation.metrics, valid_history=validation.history)
    if chief and not (loop.step == resumed_from and os.path.exists(os.path.join(exp_dir, "result.json"))):
        # A rerun of finished training (a recipe stage run again) trained nothing: the result of the
        # run that did the work stays, rather than one with no frames and no learning curve.
        write_result(exp_dir, result, criterion.result_name)
    return result


def _worker_checkpoint_dir(exp_dir, distribution):
    """Where a multiworker worker other than the chief keeps its own input position and stream states."""
    if distribution.is_chief or distribution.name != "multiworker":
        return None
    return os.path.join(exp_dir, f"worker-{distribution.worker_index}", "checkpoints")


def _start(options, params, net_config, criterion):
    """Checks what can be checked before TensorFlow starts, then joins the strategy's cluster (which configures
    the runtime, so it comes before any other TensorFlow work).  Returns (distribution, layer devices or None)."""
    if params.mode not in MODES:
        raise AsrkitError(f"mode must be one of {', '.join(MODES)}, not {params.mode!r}")
    if not params.num_epochs and not params.max_steps:
        raise AsrkitError("with num_epochs 0 (no limit) set max_steps, or training never ends")
    check_strategy_params(options.strategy, params)
    check_scaling_params(params, criterion.name, options.strategy)
    layer_devices = _model_parallel_devices(params, net_config, options.strategy)
    distribution = make_distribution(options.strategy, options.cluster)
    logger.info("%s", distribution.describe())
    return distribution, layer_devices


def _load_data(data_dir, ali_dir, options, params, criterion):
    data = load_training_data(
        data_dir, ali_dir, options.cmvn, params.valid_utts, options.valid_data_dir, options.valid_ali_dir,
        params.max_length_mismatch, params.max_skip_ratio, params.seed, targets=criterion.targets,
    )
    logger.info(
        "training set: %d utterances, %d frames, %d-dim features, %d pdfs; held-out: %s; skipped: %d",
        len(data.train.utterance_ids), data.train.num_frames, data.feature_dim, data.num_pdfs,
        f"{len(data.valid.utterance_ids)} utterances" if data.valid else "none", len(data.skipped),
    )
    return dataclasses.replace(data, ivectors=_ivector_table(options, data, criterion))


def _ivector_table(options, data, criterion):
    """The IvectorTable of --online-ivector-dir (None without one), checked against the training set."""
    if not options.online_ivector_dir:
        return None
    if criterion.name != "ce" and not options.example_servers:
        raise AsrkitError(f"--online-ivector-dir with {criterion.name} training needs example servers "
                          "(--example-servers local:N), which append the i-vectors to what they decode")
    table = IvectorTable(options.online_ivector_dir)
    table.check_covers(data.train.utterance_ids, "the training set")
    if data.valid is not None:
        table.check_covers(data.valid.utterance_ids, "the held-out set")
    logger.info("online i-vectors of dimension %d every %d frames from %s appended to the %d-dim features",
                table.ivector_dim, table.period, table.scp, data.feature_dim)
    return table


def _build_network(net_config, data, params, distribution, layer_devices, criterion):
    """The network of net_config on the distribution's devices, with the precision, dropout and layer placement
    params ask for."""
    try:
        with distribution.scope():  # ps: the variables live on the parameter servers
            net = build_from_config(net_config, data.input_dim, data.num_pdfs)
    except ValueError as error:
        raise AsrkitError(f"bad model config: {error}") from None
    if layer_devices:
        net.place_layers(layer_devices)
        logger.info("model parallelism: %s", ", ".join(f"{layer.name} on {device}"
                                                      for layer, device in zip(net.layers, layer_devices)))
    if params.mode == "truncated" and params.unroll % net.unroll_multiple:
        raise AsrkitError(f"--unroll {params.unroll} is not a multiple of {net.unroll_multiple}, which model "
                          f"{net_config['config']} needs (its frames are predicted in groups)")
    logger.info("precision: %s", set_precision(net, params.precision))
    if params.xla and net.compile_windows():
        logger.info("XLA: the training windows' layers compiled (--no-xla: not)")
    cells = describe_cells(net)
    if cells:
        logger.info("LSTM cells: %s", cells)
    if criterion.name == "ce":
        logger.info("frame loss: %s", describe_frame_loss())
    if params.dropout:
        try:
            net.set_dropout(params.dropout)
        except ValueError as error:
            raise AsrkitError(f"--dropout: {error}") from None
        logger.info("dropout: %g of each hidden layer's outputs in training steps", params.dropout)
    num_parameters = sum(int(np.prod(v.shape)) for v in net.trainable_variables)
    logger.info("model %s (%s): %s, %d parameters", net_config["config"], net_config["name"],
                json.dumps(net_config["params"], sort_keys=True), num_parameters)
    return net


def _build_parts(params, criterion, distribution, net):
    """The learning rate, optimizer, training state, the criterion's steps and the minibatch scaler."""
    try:
        learning_rate = LearningRate(params.learning_rate, params.lr_schedule, params.lr_decay_rate,
                                     params.lr_decay_steps, params.warmup_steps)
        with distribution.scope():
            optimizer = make_optimizer(params.optimizer, params.adagrad_initial_accumulator, params.adam_beta1,
                                       params.adam_beta2, params.adam_epsilon, params.sgd_momentum)
    except ValueError as error:
        raise AsrkitError(str(error)) from None
    with distribution.scope():
        training_state = TrainingState(net.zero_state(params.num_streams if params.mode == "truncated" else 1),
                                       minibatch_windows=bool(params.minibatch_search_every))
        steps = criterion.make_steps(net, optimizer, learning_rate, training_state, distribution=distribution)
    scaler = MinibatchScaler(steps, params, distribution, params.mode, training_state.minibatch_windows) \
        if params.minibatch_search_every else None
    if params.gradient_quantization == "1bit":
        logger.info("1-bit SGD: %.3f bits a gradient value on the wire (32 with float all-reduce), %d replica(s)",
                    bits_per_value([variable.shape for variable in net.trainable_variables]),
                    distribution.num_replicas)
    return TrainingParts(params, criterion, distribution, net, optimizer, learning_rate, training_state, steps,
                         scaler)


def _open_input(data_dir, ali_dir, exp_dir, options, params, data, cmvn, parts):
    """(source, batcher): the criterion's examples, from the tables or example servers, of this worker's share of
    the training set, batched as params say."""
    distribution, criterion, net = parts.distribution, parts.criterion, parts.net
    # Each multiworker worker reads every N-th training utterance (local:N servers serve only those too).
    worker_data = data if distribution.num_workers == 1 or distribution.name != "multiworker" else \
        dataclasses.replace(data, train=dataclasses.replace(
            data.train, utterance_ids=distribution.shard(data.train.utterance_ids)))
    # A worker other than the chief keeps its local servers' logs out of the chief's dir.
    work_dir = exp_dir if distribution.is_chief else os.path.join(exp_dir, f"worker-{distribution.worker_index}")
    if worker_data is not data:
        logger.info("worker %d of %d: %d of the %d training utterances", distribution.worker_index,
                    distribution.num_workers, len(worker_data.train.utterance_ids), len(data.train.utterance_ids))
    if options.example_servers:
        source = _server_source(options, params, worker_data, data_dir, ali_dir, work_dir, criterion)
    else:
        source = criterion.in_process_source(worker_data, cmvn)
    source = criterion.wrap_source(source)
    if data.ivectors and not options.example_servers:  # servers append their own
        source = IvectorExamples(source, data.ivectors)  # after SpecAugment, which masks the features alone
    if params.mode == "truncated":
        batcher = TruncatedBatcher(source, params.num_streams, params.unroll, data.input_dim, net.label_delay,
                                   align=1 if params.group_jitter else net.unroll_multiple)
    else:
        bounds = [int(bound) for bound in str(params.bucket_bounds).split(",")]
        batcher = BucketBatcher(source, bounds, params.frames_per_batch, data.input_dim, net.label_delay)
    return source, batcher


def _export(exp_dir, ali_dir, data, net, net_config, params, criterion, loop):
    """final/: the trained network with its priors and context (asrkit.nn.model_dir)."""
    net = criterion.exported_network(net)
    model_dir = write_model_dir(
        os.path.join(exp_dir, "final"), net, net_config, criterion.pdf_counts(data), data.feature_config_path,
        data.cmvn_path, params.prior_floor,
        provenance={"steps": loop.step, "epochs": loop.epoch, "exp_dir": os.path.abspath(exp_dir),
                    "train_frames": data.train.num_frames, "created": time.strftime("%Y-%m-%d %H:%M:%S")},
        context_files=[path for path in (os.path.join(ali_dir, name) for name in criterion.context_files)
                       if os.path.exists(path)] + (data.ivectors.model_files() if data.ivectors else []),
        outputs=criterion.model_outputs,
    )
    logger.info("exported the model to %s", model_dir)
    return model_dir


def _result(loop, data, params, model_dir, started, valid_accuracy, valid_metrics, valid_history):
    # A run resumed at the very end restores the input position past the last epoch.
    epochs_done = min(loop.epoch + 1, params.num_epochs) if params.num_epochs else loop.epoch + 1
    accounts, scaler = loop.accounts, loop.parts.scaler
    loop_seconds = max(time.monotonic() - loop.started, 1e-9)
    return TrainResult(
        steps=loop.step, epochs=epochs_done if loop.step else 0, frames=accounts.frames,
        loss=loop.last_values["loss"], frame_accuracy=loop.last_values["frame_accuracy"],
        valid_accuracy=valid_accuracy, apr=accounts.padding.mean, apr_stddev=accounts.padding.stddev,
        frames_per_second=accounts.frames / loop_seconds, t_session=accounts.step_seconds / loop_seconds,
        skipped=len(data.skipped), resumed_from=loop.first_step, model_dir=model_dir,
        seconds=time.monotonic() - started, example_servers=loop.source.stats() if loop.from_servers else None,
        valid_metrics=valid_metrics, valid_history=valid_history,
        minibatch_searches=scaler.history if scaler else None,
    )


def _server_source(options, params, data, data_dir, ali_dir, exp_dir, criterion):
    """The example-server source (asrkit.example_servers) for --example-servers."""
    expected = Handshake(data.input_dim, data.num_pdfs, read_feature_config(data_dir).output_frame_shift_ms,
                         criterion.server_mode)
    server_options = ["--max-length-mismatch", str(params.max_length_mismatch), "--randomisation",
                      params.randomisation, "--rolling-block-utts", str(params.rolling_block_utts),
                      "--rolling-window-blocks", str(params.rolling_window_blocks)] + criterion.server_options()
    if options.server_from_feats:
        server_options.append("--from-feats")
    if options.server_styles:
        server_options += ["--styles", os.path.abspath(options.server_styles)]
    if options.cmvn:
        server_options += ["--cmvn", os.path.abspath(options.cmvn)]
    if options.online_ivector_dir:
        server_options += ["--online-ivectors", os.path.abspath(options.online_ivector_dir)]
    stream = StreamOptions(num_epochs=params.num_epochs, seed=params.seed, server_public_key=options.server_public_key,
                           server_options=tuple(server_options), receive_timeout=options.server_receive_timeout,
                           receive_buffer_bytes=criterion.receive_buffer_bytes())
    return open_example_servers(options.example_servers, expected, exp_dir, data_dir, ali_dir,
                                data.train.utterance_ids, stream)


def _model_parallel_devices(params, net_config, strategy):
    """The device of each layer with --model-parallel (asrkit.nn.pipeline), else None; refuses what it cannot do."""
    if not params.model_parallel:
        return None
    if net_config["name"] != "lstm":
        raise AsrkitError(f"--model-parallel pipelines the layers of the lstm network over time; {net_config['name']} "
                          "has no such layers (fix: --model lstm, or leave --model-parallel off)")
    if strategy != "local":
        raise AsrkitError("--model-parallel places one process's layers on its devices: use it with --strategy local")
    if params.mode != "truncated":
        raise AsrkitError("--model-parallel pipelines the truncated training window: use it with --mode truncated")
    if params.dropout:
        raise AsrkitError("--model-parallel's pipelined layers do not drop: leave --dropout at 0 with it")
    return pipeline_layer_devices(int(net_config["params"]["num_layers"]))
