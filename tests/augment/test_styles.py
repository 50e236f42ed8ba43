"""Style config parsing (errors name the file and the problem) and deterministic sampling."""

import json

import numpy as np
import pytest

from asrkit.augment.styles import (
    StyleConfigError, default_style_config, load_style_config, parse_style_config, utterance_rng,
)

RECIPE_STYLES = "egs/voicesearch/conf/noise_styles.json"


def write(tmp_path, data, name="styles.json"):
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return str(path)


def test_recipe_config_has_many_valid_styles():
    import os

    config = load_style_config(os.path.join(os.path.dirname(__file__), "..", "..", RECIPE_STYLES))
    assert len(config.styles) >= 100
    kinds = {style.noise.type for style in config.styles if style.noise}
    assert kinds == {"white", "pink", "brown", "babble"}
    assert any(style.vtlp and style.reverb and style.noise for style in config.styles)


@pytest.mark.parametrize("data, message", [
    ("{not json", "not valid JSON"),
    ({"styles": []}, "styles: must be a non-empty list"),
    ({"styles": [{"name": "a", "nosie": {}}]}, "styles[0] ('a'): unknown key(s) 'nosie'"),
    ({"styles": [{"name": "a", "noise": {"type": "pink", "snr_db": [20, 10]}}]},
     "styles[0] ('a').noise.snr_db: low 20 is greater than high 10"),
    ({"styles": [{"name": "a", "noise": {"type": "purple", "snr_db": 5}}]}, "noise.type: must be one of"),
    ({"styles": [{"name": "a", "noise": {"type": "pink"}}]}, "needs \"snr_db\""),
    ({"styles": [{"name": "a", "noise": {"type": "list", "list": "musan", "snr_db": 5}}]},
     "names no list in the config"),
    ({"styles": [{"name": "a", "vtlp": {"alpha": [0.8, 1.2, 1.3]}}]}, "a range is [low, high]"),
    ({"styles": [{"name": "a", "weight": 0}]}, "weight: must be > 0"),
    ({"styles": [{"name": "a"}, {"name": "a"}]}, "duplicate style name"),
    ({"styles": [{"name": "a", "reverb": {"room": [[3, 5], [3, 5]]}}]}, "must be three ranges"),
    ({"styles": [{"name": "a", "channel": {"type": "mulaw"}}]}, "channel: must be a list of effects"),
    ({"styles": [{"name": "a", "channel": [{"type": "gsm"}]}]}, "channel[0].type: must be one of"),
    ({"styles": [{"name": "a", "channel": [{"type": "mulaw", "bits": 8}]}]}, "channel[0]: unknown key(s) 'bits'"),
    ({"styles": [{"name": "a", "channel": [{"type": "quantize", "bits": 1}]}]}, "channel[0].bits"),
])
def test_config_errors_name_the_file_and_the_problem(tmp_path, data, message):
    path = write(tmp_path, data)
    with pytest.raises(StyleConfigError) as error:
        load_style_config(path)
    assert str(error.value).startswith(path + ":")
    assert message in str(error.value)


def test_list_paths_are_relative_to_the_config_and_command_line_lists_add(tmp_path):
    path = write(tmp_path, {"noise_lists": {"music": "music/wav.scp"},
                            "styles": [{"name": "m", "noise": {"type": "list", "list": "music", "snr_db": 5}},
                                       {"name": "t", "noise": {"type": "list", "list": "tv", "snr_db": 5}}]})
    config = load_style_config(path, extra_noise_lists={"tv": "/data/tv/wav.scp"})
    assert config.noise_lists == {"music": str(tmp_path / "music" / "wav.scp"), "tv": "/data/tv/wav.scp"}


def test_sampling_is_a_function_of_seed_and_utterance_only():
    config = default_style_config()
    first = [config.choose(utterance_rng(7, f"utt{i}")).name for i in range(200)]
    assert first == [config.choose(utterance_rng(7, f"utt{i}")).name for i in range(200)]
    assert first != [config.choose(utterance_rng(8, f"utt{i}")).name for i in range(200)]
    assert set(first) == {style.name for style in config.styles}  # every style gets drawn


def test_weights_set_the_style_frequencies():
    config = parse_style_config({"styles": [{"name": "rare", "weight": 1}, {"name": "common", "weight": 9}]})
    names = [config.choose(utterance_rng(0, str(i))).name for i in range(2000)]
    assert names.count("common") / len(names) == pytest.approx(0.9, abs=0.03)
    assert np.isclose(sum(config._probabilities), 1.0)


def test_channel_effects_parse_with_defaults():
    config = parse_style_config({"styles": [{"name": "phone", "channel": [
        {"type": "bandpass", "low_hz": 300, "high_hz": [3000, 3400]}, {"type": "mulaw"},
        {"type": "quantize"}, {"type": "mp3"}]}]})
    bandpass, mulaw, quantize, mp3 = config.styles[0].channel
    assert (bandpass.low_hz.low, bandpass.low_hz.high, bandpass.high_hz.high) == (300, 300, 3400)
    assert mulaw.type == "mulaw" and quantize.bits.low == quantize.bits.high == 8
    assert (mp3.compression_level.low, mp3.compression_level.high) == (0.5, 1.0)
    assert parse_style_config({"styles": [{"name": "clean"}]}).styles[0].channel == ()
