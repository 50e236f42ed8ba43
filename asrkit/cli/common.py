"""What every asrkit command does around its work: logging, the command line, errors, exit codes."""

import functools
import logging
import sys
import types

import click

from asrkit.decode import defaults
from asrkit.errors import AsrkitError
from asrkit.recognizer.hotwords import DEFAULT_BOOST
from asrkit.logs import log_command_line, setup_logging, summary_line

# Shown in --help of every command: Lhotse-style defaults in the help text.
CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "show_default": True}


def verbose_option(function):
    return click.option("-v", "--verbose", is_flag=True, help="Log debug messages.")(function)


def asrkit_command(name):
    """Wrap a click callback: set up logging, log the command line, turn AsrkitError into exit 1.

    The callback receives its options without `verbose`.
    """

    def decorate(function):
        @functools.wraps(function)
        def wrapper(*args, verbose=False, **kwargs):
            setup_logging(verbose)
            logger = logging.getLogger(name)
            log_command_line(logger)
            try:
                return function(*args, **kwargs)
            except AsrkitError as error:
                logger.error("%s", error)
                logger.error(summary_line(name, "failed", error=type(error).__name__))
                sys.exit(1)
            except OSError as error:
                # Disk full, permissions, a vanished file: the user's to fix, not a bug to trace.
                logger.error("%s", error)
                logger.error(summary_line(name, "failed", error=type(error).__name__))
                sys.exit(1)

        return verbose_option(wrapper)

    return decorate


def audio_options(function):
    """The options that say how audio is read (asrkit.data.audio.AudioOptions), shared by every
    command that reads wav.scp: --on-rate-mismatch, --channel, --allow-8bit, --raw-format, --pipe-timeout.

    The callback receives them as one `audio` argument: a function of the sample rate that
    returns the AudioOptions (the rate comes from each command's own config).
    """

    @functools.wraps(function)
    def wrapper(*args, on_rate_mismatch, channel, allow_8bit, raw_format, pipe_timeout, **kwargs):
        def make(sample_rate=16000):
            # deferred: asrkit.data.audio brings numpy and soundfile; every command's --help comes through here.
            from asrkit.data.audio import AudioOptions

            return AudioOptions(sample_rate=sample_rate, on_rate_mismatch=on_rate_mismatch, channel=channel,
                                allow_8bit=allow_8bit, raw_format=raw_format, pipe_timeout=pipe_timeout)

        return function(*args, audio=make, **kwargs)

    for option in reversed([
        click.option("--on-rate-mismatch", type=click.Choice(["error", "resample"]), default="error",
                     help="Audio at another sampling rate: refuse it, or resample it (scipy polyphase filter)."),
        click.option("--channel", default=-1, type=int,
                     help="Channel of multi-channel audio to use; -1 expects mono and refuses more channels (Kaldi)."),
        click.option("--allow-8bit", is_flag=True, help="Accept 8-bit PCM audio instead of refusing it."),
        click.option("--raw-format", default=None,
                     help="Read headerless audio as this soundfile subtype (PCM_16, PCM_24, FLOAT, ...), mono, "
                          "little-endian, at the expected rate. Files ending in .raw or .pcm are read as PCM_16 "
                          "without it."),
        click.option("--pipe-timeout", default=300.0, type=click.FloatRange(min=0, min_open=True), show_default=True,
                     help="Seconds a `command |` wav.scp entry may run; then its processes are killed and the "
                          "utterance is refused."),
    ]):
        wrapper = option(wrapper)
    return wrapper


def online_cmvn_options(function):
    """--cmvn-online, --cmvn-online-window, --cmvn-online-prior-frames for the commands that run a model over a
    data dir (asrkit-decode, asrkit-align); the callback receives `cmvn_online`, an
    asrkit.frontend.online_cmvn.OnlineCmvnOptions or None."""

    @functools.wraps(function)
    def wrapper(*args, cmvn_online, cmvn_online_window, cmvn_online_prior_frames, cmvn_online_rule, **kwargs):
        # deferred: online_cmvn brings numpy, which --help does not need.
        from asrkit.frontend.online_cmvn import OnlineCmvnOptions

        options = OnlineCmvnOptions(cmvn_online_window, cmvn_online_prior_frames, cmvn_online_rule) \
            if cmvn_online else None
        return function(*args, cmvn_online=options, **kwargs)

    for option in reversed([
        click.option("--cmvn-online", is_flag=True,
                     help="For a model trained with the speaker (or utterance) mean: remove a running mean over "
                          "each utterance's frames so far instead, started from the training set's mean, as when "
                          "decoding utterance by utterance without the speaker's others (online CMN, by default "
                          "Kaldi's OnlineCmvn at its 6-s window and 2-s prior: asrkit.frontend.online_cmvn)."),
        click.option("--cmvn-online-window", default=200, type=click.IntRange(min=1), show_default=True,
                     help="With --cmvn-online, the model's frames (30 ms by default: 200 are 6 s) the running "
                          "mean looks back over."),
        click.option("--cmvn-online-prior-frames", default=67, type=click.IntRange(min=0), show_default=True,
                     help="With --cmvn-online, the count the training mean tops the frames seen up to: it weighs "
                          "this many frames less those seen, and nothing once this many were seen (the rule kaldi: "
                          "at most this many, while the window is not full)."),
        click.option("--cmvn-online-rule", type=click.Choice(["asrkit", "kaldi"]), default="kaldi",
                     show_default=True,
                     help="With --cmvn-online, how the training mean's weight falls: Kaldi's OnlineCmvn's, or "
                          "asrkit's (that of models trained with --cmvn-mean online, at 600 and 200 frames)."),
    ]):
        wrapper = option(wrapper)
    return wrapper


def combination_options(function):
    """--combine-model and the numbers of its frame-by-frame combination with the command's model (asrkit-decode,
    asrkit-export; asrkit.decode.combined_loglikes), as one argument `combination`; the numbers are refused without
    --combine-model."""

    @functools.wraps(function)
    def wrapper(*args, combination, **kwargs):
        if combination.combine_model is None:
            for name, value in (("--model-acoustic-scale", combination.model_acoustic_scale),
                                ("--combine-acoustic-scale", combination.combine_acoustic_scale),
                                ("--combine-prior-scale", combination.combine_prior_scale)):
                if value != 1.0:
                    raise click.UsageError(f"{name} applies to a combination of models: give --combine-model")
        return function(*args, combination=combination, **kwargs)

    return option_group("combination", [
        click.option("--combine-model", type=click.Path(exists=True, file_okay=False), default=None,
                     help="A second acoustic model of the same tree, combined with MODEL_DIR frame by frame: the "
                          "decoder reads (1 - W) x S1 x MODEL_DIR's + W x S2 x its log-likelihoods (W "
                          "--combine-weight, S1 --model-acoustic-scale, S2 --combine-acoustic-scale) at an acoustic "
                          "scale about 1 (asrkit-decode's --acoustic-scale, a package's 1 / --lm-weight)."),
        click.option("--combine-weight", default=0.5, type=click.FloatRange(0, 1), show_default=True,
                     help="W: the share of --combine-model in the combination (0: MODEL_DIR alone, 1: it alone)."),
        click.option("--model-acoustic-scale", default=1.0, type=click.FloatRange(min=0, min_open=True),
                     show_default=True, help="S1: MODEL_DIR's own acoustic scale in a combination, the one it "
                                             "decodes best at alone (1 / the LM weight its dev sweep chose)."),
        click.option("--combine-acoustic-scale", default=1.0, type=click.FloatRange(min=0, min_open=True),
                     show_default=True, help="S2: --combine-model's own acoustic scale (1 / its dev LM weight)."),
        click.option("--combine-prior-scale", default=1.0, type=click.FloatRange(min=0), show_default=True,
                     help="--prior-scale of --combine-model."),
    ])(wrapper)


class OptionGroup(types.SimpleNamespace):
    """The values of one group of a command's options, an attribute per option (its click parameter name)."""

    def as_dict(self):
        return dict(vars(self))


def _parameter_names(options):
    """The click parameter names that `options` (option decorators, composite ones too) declare, in order: read
    from a probe function they decorate, where click keeps a function's parameters (__click_params__) until a
    command is made of it, so that a group's names are its options' own and never listed twice."""
    def probe():
        pass

    for option in reversed(options):
        probe = option(probe)
    return [param.name for param in reversed(getattr(probe, "__click_params__", [])) if param.expose_value]


def option_group(name, options):
    """Decorator: click `options` (applied in the order listed, in --help too); the command receives their values
    as one argument `name`, an OptionGroup, so that a command of many options keeps a short signature."""
    names = _parameter_names(options)

    def decorate(function):
        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            group = OptionGroup(**{key: kwargs.pop(key) for key in names})
            return function(*args, **{name: group}, **kwargs)

        return apply_options(options)(wrapper)

    return decorate


def _helped(prefix, text):
    """Option help `text` after `prefix` ("" or "With ...: "), capitalised."""
    text = prefix + text
    return text[0].upper() + text[1:]


def apply_options(options):
    """A decorator applying click options in the order listed (in --help too)."""

    def decorate(function):
        for option in reversed(options):
            function = option(function)
        return function

    return decorate


# A command's argument that names a directory which must exist.
EXISTING_DIR = click.Path(exists=True, file_okay=False)


def existing_dirs(*names):
    """Click arguments, in order, for directories that must exist (a command's inputs)."""
    return apply_options([click.argument(name, type=EXISTING_DIR) for name in names])


def jobs_options(failing):
    """-j/--nj and --max-fail-ratio of the commands that split a data dir into jobs; `failing` ends the
    threshold's help ("cannot be aligned")."""
    return apply_options([
        click.option("-j", "--nj", default=1, type=click.IntRange(min=1), help="Number of parallel jobs."),
        click.option("--max-fail-ratio", default=0.05, type=click.FloatRange(0, 1),
                     help=f"Fail when more than this share of utterances {failing}."),
    ])


def prior_scale_option(function):
    """--prior-scale of the commands that run a model dir over a data dir or read its log-likelihoods from a table
    (asrkit-decode, asrkit-align)."""
    return click.option("--prior-scale", default=1.0, type=click.FloatRange(min=0),
                        help="Scale of the log priors subtracted from the model's log posteriors: 1 is Bayes' rule, "
                             "0 uses the posteriors alone. Not with --loglikes, whose table holds finished "
                             "log-likelihoods.")(function)


def search_options(lattice_beam_help):
    """The decoder's search limits (--beam, --max-active, --min-active, --lattice-beam) at asrkit.decode.defaults'
    values, for the commands that decode or set a package's decoding (option_group makes them one argument)."""
    return apply_options([
        click.option("--beam", default=defaults.BEAM, type=click.FloatRange(min=0, min_open=True), show_default=True,
                     help="Decoding beam."),
        click.option("--max-active", default=defaults.MAX_ACTIVE, type=click.IntRange(min=1), show_default=True,
                     help="Most active states per frame."),
        click.option("--min-active", default=defaults.MIN_ACTIVE, type=click.IntRange(min=1), show_default=True,
                     help="Fewest active states per frame."),
        click.option("--lattice-beam", default=defaults.LATTICE_BEAM, type=click.FloatRange(min=0, min_open=True),
                     show_default=True, help=lattice_beam_help),
    ])


def lmwt_range_options(step=defaults.LMWT_STEP):
    """--min-lmwt, --max-lmwt and --lmwt-step: the LM weights a sweep scores (asrkit-decode, asrkit-tune-package),
    `step` apart by default."""
    return apply_options([
        click.option("--min-lmwt", default=defaults.MIN_LMWT, type=click.FloatRange(min=0, min_open=True),
                     show_default=True, help="Smallest LM weight of the sweep."),
        click.option("--max-lmwt", default=defaults.MAX_LMWT, type=click.FloatRange(min=0, min_open=True),
                     show_default=True, help="Largest LM weight of the sweep."),
        click.option("--lmwt-step", default=step, type=click.FloatRange(min=0, min_open=True),
                     show_default=True, help="Step between the LM weights of the sweep."),
    ])


def endpoint_options(prefix):
    """--max-utterance-seconds and --endpoint-silence of the commands that stream: Kaldi's endpoint rules 5 and 2
    (asrkit.recognizer.endpoint), their help after `prefix` ("" or "With ...: ")."""
    return apply_options([
        click.option("--max-utterance-seconds", default=20.0, type=click.FloatRange(min=0.0, min_open=True),
                     help=_helped(prefix, "a segment ends after this long whatever was said (endpoint rule 5).")),
        click.option("--endpoint-silence", type=click.FloatRange(min=0.0, min_open=True), default=None,
                     help=_helped(prefix, "a segment ends after this much silence after speech where the decoder "
                                          "finds that it may well end (endpoint rule 2).  Default: Kaldi's 0.5 s, "
                                          "0.3 s where a batch pass makes the final results, whose cost grows "
                                          "with the segment (asrkit.recognizer.stream.default_endpoint).")),
    ])


def stream_options(prefix):
    """--windows and --early-endpoints of the commands that stream (asrkit-transcribe --streaming,
    asrkit-serve-recognizer; asrkit.recognizer.stream), their help after `prefix` ("" or "With ...: ")."""
    return apply_options([
        click.option("--windows", type=click.Choice(["eager", "grid", "tentative"]), default=None,
                     help=_helped(prefix, "where a windowed BLSTM's windows go: eager, each frame as soon as its "
                                          "label delay is in; grid, the batch network's (up to 4 frames later; rows "
                                          "those of batch); tentative, the grid's, with the eager rows of the "
                                          "frames the grid has not given yet in partial results.  Default: "
                                          "tentative where the final results come from the stream's rows, eager "
                                          "where a batch pass makes them.")),
        click.option("--early-endpoints/--no-early-endpoints", default=True, show_default=True,
                     help=_helped(prefix, "let the endpoint rules look at the frames still waiting for their right "
                                          "context too (computed as if the audio ended there), so that a segment's "
                                          "final result comes up to the model's look-ahead sooner; or only at "
                                          "frames whose right context is in (with --windows grid, the "
                                          "segmentation then does not depend on how the audio was cut).")),
    ])


def vocabulary_options(function):
    """--hotwords and --hotwords-boost of the commands that recognise with a package (asrkit-transcribe,
    asrkit-serve-recognizer): the callback receives them as `hotwords`, a function that biases a Recognizer
    toward the file's phrases (or returns it as it is without the option)."""

    @functools.wraps(function)
    def wrapper(*args, hotwords, hotwords_boost, **kwargs):
        def bias(recognizer):
            if hotwords is None:
                return recognizer
            # deferred: the recognizer's modules bring numpy; --help imports none of them
            from asrkit.recognizer.hotwords import read_hotwords

            return recognizer.with_hotwords(read_hotwords(hotwords, hotwords_boost))

        return function(*args, hotwords=bias, **kwargs)

    return apply_options([
        click.option("--hotwords", type=click.Path(exists=True, dir_okay=False), default=None,
                     help="Bias recognition toward these phrases: one per line, words separated by spaces, "
                          "optionally ' :BOOST' (sherpa-onnx's format); each word's graph cost is lowered by its "
                          "phrase's boost (nats of LM cost).  The words must be in the package (asrkit-export "
                          "--add-words puts new ones there)."),
        click.option("--hotwords-boost", default=DEFAULT_BOOST, show_default=True, type=click.FloatRange(min=0.0),
                     help="The boost of --hotwords lines without one."),
    ])(wrapper)
