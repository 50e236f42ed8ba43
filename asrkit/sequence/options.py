"""The sequence-training contract between asrkit-train-seq and its example servers, declared once.

`SequenceOptions` holds what both sides must agree on to make a sequence criterion's outer derivatives: the
criterion and its constants, the lattice search's acoustic scale and beams, and how often a server looks for a
newer snapshot.  Each field's default and meaning are written here only: asrkit-train-seq's parameters
(asrkit.train.params.seq_params) and asrkit-serve-examples' options (asrkit.cli.sequence_options) are made from
these fields, and the trainer hands its local servers the whole object as JSON (`--seq-options`), which
`from_json` reads back, refusing unknown keys and values of the wrong type or range by name.
"""

import dataclasses
import json

from asrkit.errors import AsrkitError

CRITERIA = ("smbr", "mmi", "mmi-fr", "bmmi")


@dataclasses.dataclass
class CriterionOptions:
    """What the outer derivatives' computation (asrkit.sequence.outer) reads of SequenceOptions (which has the
    defaults and meanings): SequenceOptions(...).criterion_options()."""
    criterion: str
    acoustic_scale: float
    boost: float
    frame_rejection: float
    min_posterior: float
    one_silence_class: bool

    def check(self):
        if self.criterion not in CRITERIA:
            raise AsrkitError(f"criterion must be one of {', '.join(CRITERIA)}, not {self.criterion!r}")
        if self.acoustic_scale <= 0:
            raise AsrkitError(f"the acoustic scale must be positive, not {self.acoustic_scale}")
        if self.min_posterior < 0:
            raise AsrkitError(f"--min-posterior must be >= 0, not {self.min_posterior}")


def _option(default, meaning, choices=None, positive=False, least=None):
    """A field with its default and its meaning (help text), and the values it takes: one of `choices`, > 0
    (positive) or >= least."""
    return dataclasses.field(default=default, metadata={"help": meaning, "choices": choices, "positive": positive,
                                                        "least": least})


@dataclasses.dataclass
class SequenceOptions:
    criterion: str = _option("smbr", "smbr ([Variani2017]), mmi, mmi-fr (frame rejection) or bmmi (boosted MMI).",
                             choices=CRITERIA)
    acoustic_scale: float = _option(0.1, "kappa: scale of the log-likelihoods in the lattice search and the "
                                         "derivatives.", positive=True)
    beam: float = _option(13.0, "Lattice generation: decoding beam.", positive=True)
    lattice_beam: float = _option(6.0, "Lattice generation: lattice beam.", positive=True)
    boost: float = _option(0.1, "bmmi: boosting factor b.", least=0.0)
    frame_rejection: float = _option(1e-3, "mmi-fr: frames whose reference pdf has less denominator occupancy are "
                                           "dropped.", least=0.0)
    min_posterior: float = _option(1e-3, "Minimum posterior filtering: frames where every numerator - denominator "
                                         "occupancy difference is below this are dropped (0: none).", least=0.0)
    one_silence_class: bool = _option(True, "sMBR: any silence pdf is correct on a silence frame; otherwise silence "
                                            "frames do not count.")
    snapshot_check_seconds: float = _option(2.0, "How often a server looks for a newer snapshot (without the "
                                                 "trainer's schedule).", least=0.0)

    def check(self, where="the sequence options"):
        """Refuses a value of the wrong type or range, naming the field."""
        for field in dataclasses.fields(self):
            value, meta = getattr(self, field.name), field.metadata
            wanted = type(field.default)
            if wanted is float and isinstance(value, int) and not isinstance(value, bool):
                value = float(value)
                setattr(self, field.name, value)
            if not isinstance(value, wanted) or (wanted is not bool and isinstance(value, bool)):
                raise AsrkitError(f"{where}: {field.name} must be a {wanted.__name__}, not {value!r}")
            if meta["choices"] and value not in meta["choices"]:
                raise AsrkitError(f"{where}: {field.name} must be one of {', '.join(meta['choices'])}, not {value!r}")
            if meta["positive"] and not value > 0:
                raise AsrkitError(f"{where}: {field.name} must be > 0, not {value!r}")
            if meta["least"] is not None and not value >= meta["least"]:
                raise AsrkitError(f"{where}: {field.name} must be >= {meta['least']:g}, not {value!r}")
        return self

    def criterion_options(self):
        return CriterionOptions(self.criterion, self.acoustic_scale, self.boost, self.frame_rejection,
                                self.min_posterior, self.one_silence_class)

    def decoder_options(self):
        # deferred: the decoder brings numba and kaldi-decoder; commands' --help reads these options without them
        from asrkit.decode.decoder import DecoderOptions

        return DecoderOptions(acoustic_scale=self.acoustic_scale, beam=self.beam, lattice_beam=self.lattice_beam)

    def to_json(self):
        return json.dumps(dataclasses.asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text, where="--seq-options"):
        try:
            values = json.loads(text)
        except ValueError as error:
            raise AsrkitError(f"{where}: not JSON ({error})") from None
        if not isinstance(values, dict):
            raise AsrkitError(f"{where}: expected a JSON object of sequence options, not {type(values).__name__}")
        known = {field.name for field in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise AsrkitError(f"{where}: unknown sequence option(s) {', '.join(unknown)}; known: "
                              f"{', '.join(sorted(known))}")
        return cls(**values).check(where)

    @classmethod
    def from_values(cls, values):
        """The options among `values` (a dict or an object with these attributes, e.g. seq_params()'s Params)."""
        get = values.get if isinstance(values, dict) else lambda name: getattr(values, name)
        return cls(**{field.name: get(field.name) for field in dataclasses.fields(cls)}).check()


def sequence_fields():
    """The dataclass fields of SequenceOptions, in order: what each command that takes them declares."""
    return dataclasses.fields(SequenceOptions)
