"""The config object: defaults, YAML + --set overrides, and errors that name the field."""

from __future__ import annotations

import pytest

from trainer.config import ConfigError, TrainConfig, load_config, make_config, parse_set


def test_defaults_are_a_small_builtin_run():
    cfg = make_config()
    assert cfg.dataset == "builtin" and cfg.hidden_size is not None and not cfg.word_level


def test_yaml_then_overrides(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("cell: mogrifier_lstm\nlearning_rate: 0.002\nhidden_size: 32\n")
    cfg = load_config(path, ["learning_rate=1e-3", "state_dropout=0.25", "device=cpu"])
    assert cfg.cell == "mogrifier_lstm"
    assert cfg.learning_rate == pytest.approx(1e-3)
    assert cfg.state_dropout == 0.25 and cfg.hidden_size == 32


@pytest.mark.parametrize(
    "overrides, field, allowed",
    [
        (["input_dropout=1.5"], "input_dropout", "less than 1"),
        (["learning_rate=-0.1"], "learning_rate", "greater than 0"),
        (["cell=gru"], "cell", "mogrifier_lstm"),
        (["dropout=0.5"], "dropout", "unknown setting"),
        (["batch_size=many"], "batch_size", "integer"),
        (["t_max=1.5"], "t_max", "greater than 2"),
    ],
)
def test_bad_values_name_the_field_and_what_is_allowed(overrides, field, allowed):
    with pytest.raises(ConfigError) as err:
        load_config(None, overrides)
    assert field in str(err.value) and allowed in str(err.value)


def test_datasets_on_disk_need_a_data_dir():
    with pytest.raises(ConfigError, match="data_dir"):
        make_config({"dataset": "ptb"})


def test_set_syntax_errors():
    with pytest.raises(ConfigError, match="name=value"):
        parse_set(["learning_rate"])


def test_missing_config_file(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "nope.yaml")


def test_round_trip_through_yaml(tmp_path):
    cfg = make_config({"cell": "rlstm", "hidden_size": 48, "run_dir": str(tmp_path)})
    path = tmp_path / "config.yaml"
    path.write_text(cfg.to_yaml())
    assert load_config(path) == cfg
    assert isinstance(cfg, TrainConfig)


def test_set_values_are_typed_by_their_field():
    values = parse_set(
        [
            "learning_rate=1e-3",
            "mogrifier_rounds=3",
            "dyneval=true",
            "cell=rlstm",
            "device=0",
            "data_dir=/data/ptb",
            "max_time_s=null",
            "num_params=None",
            "hidden_size=~",
            "max_eval_tokens=",
        ]
    )
    assert values == {
        "learning_rate": 0.001,
        "mogrifier_rounds": 3,
        "dyneval": True,
        "cell": "rlstm",
        "device": "0",
        "data_dir": "/data/ptb",
        "max_time_s": None,
        "num_params": None,
        "hidden_size": None,
        "max_eval_tokens": None,
    }
    assert all(type(v) in (float, int, bool, str, type(None)) for v in values.values())  # JSON-ready


def test_set_values_the_field_refuses_reach_the_config_check():
    """A null for a field that needs a value, or a word for a number, stays text: make_config names it."""
    assert parse_set(["max_steps=null", "batch_size=many", "colour=red"]) == {
        "max_steps": "null",
        "batch_size": "many",
        "colour": "red",
    }
    with pytest.raises(ConfigError, match="max_steps: Input should be a valid integer"):
        load_config(None, ["max_steps=null"])
    with pytest.raises(ConfigError, match="--range expects name=value"):
        parse_set(["=3"], flag="--range")
