"""The decoder's defaults are declared once (asrkit.decode.defaults, for asrkit's 30-ms frames) and every command and
options object that decodes has them (issue 61 item 2)."""

from asrkit.cli.decode import main as decode_main
from asrkit.cli.export import main as export_main
from asrkit.decode import defaults
from asrkit.decode.decode_dir import DecodeOptions
from asrkit.decode.decoder import DecoderOptions
from asrkit.recognizer.package import DEFAULT_DECODE_PARAMS


def _defaults(command):
    return {parameter.name: parameter.default for parameter in command.params}


def test_every_decoding_default_is_the_one_of_asrkit_decode_defaults():
    decoder, sweep = DecoderOptions(), DecodeOptions()
    expected = {"acoustic_scale": defaults.ACOUSTIC_SCALE, "beam": defaults.BEAM, "max_active": defaults.MAX_ACTIVE,
                "min_active": defaults.MIN_ACTIVE, "lattice_beam": defaults.LATTICE_BEAM}
    assert {name: getattr(decoder, name) for name in expected} == expected
    assert (sweep.min_lmwt, sweep.max_lmwt, sweep.lmwt_step) == (defaults.MIN_LMWT, defaults.MAX_LMWT,
                                                                 defaults.LMWT_STEP)
    decode = _defaults(decode_main)
    assert {name: decode[name] for name in expected} == expected
    assert (decode["min_lmwt"], decode["max_lmwt"], decode["lmwt_step"]) == (sweep.min_lmwt, sweep.max_lmwt,
                                                                             sweep.lmwt_step)
    export = _defaults(export_main)
    for name in ("beam", "max_active", "min_active", "lattice_beam"):
        assert export[name] == DEFAULT_DECODE_PARAMS[name] == expected[name], name
    assert DEFAULT_DECODE_PARAMS["lm_weight"] == defaults.LM_WEIGHT == 1 / defaults.ACOUSTIC_SCALE


def test_the_defaults_fit_30_ms_frames():
    # the LM weights the recipes' dev sets chose (1 to 3.5) lie inside the sweep, and the default weight too
    assert defaults.MIN_LMWT <= 1.0 and 3.5 <= defaults.MAX_LMWT
    assert defaults.MIN_LMWT <= defaults.LM_WEIGHT <= defaults.MAX_LMWT
