"""Search spaces: the shipped files hold the papers' ranges, malformed files fail with clear errors."""

from __future__ import annotations

import math
import textwrap
from pathlib import Path

import optuna
import pytest

from tuner.space import (
    BUILTIN_SPACES_DIR,
    SpaceError,
    list_spaces,
    load_space,
    parse_set_values,
    space_from_dict,
)

SHIPPED = ["mogrifier_lstm", "mogrifier_lstm_enwik8", "lstm", "rlstm", "dyneval", "tiny", "reverse_copy"]

TABLE_2_4 = {
    "learning_rate": (0.001, 0.004, "log"),
    "input_embedding_ratio": (0.0, 2.0, "linear"),
    "l2_penalty": (5e-6, 1e-3, "log"),
    "input_dropout": (0.0, 0.9, "linear"),
    "inter_layer_dropout": (0.0, 0.95, "linear"),
    "state_dropout": (0.0, 0.8, "linear"),
    "output_dropout": (0.0, 0.95, "linear"),
    "mogrifier_rounds": (0, 6, "int"),
    "mogrifier_rank": (-20, 100, "int"),
}
TABLE_2_5 = {
    "learning_rate": (0.001, 0.004, "log"),
    "l2_penalty": (5e-6, 1e-3, "log"),
    "input_dropout": (0.0, 0.2, "linear"),
    "inter_layer_dropout": (0.0, 0.2, "linear"),
    "state_dropout": (0.0, 0.25, "linear"),
    "output_dropout": (0.0, 0.25, "linear"),
    "mogrifier_rounds": (0, 6, "int"),
    "mogrifier_rank": (-20, 100, "int"),
}
TABLE_2_6 = {
    "max_time_steps": (1, 20, "int"),
    "dyneval_learning_rate": (1e-6, 1e-3, "log"),
    "dyneval_decay_rate": (1e-6, 1e-2, "log"),
    "dyneval_epsilon": (1e-8, 1e-2, "log"),
}


def ranges(name: str) -> dict:
    return {p.name: (p.low, p.high, p.scale) for p in load_space(name).params}


def test_every_shipped_file_loads_and_is_listed():
    listed = list_spaces()
    for name in SHIPPED:
        assert name in listed
        space = load_space(name)
        assert space.params and space.fixed
    assert sorted(p.stem for p in BUILTIN_SPACES_DIR.glob("*.yaml")) == sorted(SHIPPED)


def test_paper_ranges_are_exact():
    assert ranges("mogrifier_lstm") == TABLE_2_4
    lstm = dict(TABLE_2_4)
    del lstm["mogrifier_rounds"], lstm["mogrifier_rank"]
    assert ranges("lstm") == lstm
    assert ranges("mogrifier_lstm_enwik8") == TABLE_2_5
    assert ranges("dyneval") == TABLE_2_6
    rlstm = {k: v for k, v in TABLE_2_4.items() if k != "inter_layer_dropout"}  # the Mogrifier RLSTM
    rlstm["cell_output_dropout"] = (0.0, 0.95, "linear")
    rlstm["t_max"] = (math.exp(2), math.exp(5), "log")
    assert ranges("rlstm") == rlstm


def test_fixed_task_settings_follow_the_papers():
    ptb = load_space("mogrifier_lstm").fixed
    assert (ptb["num_layers"], ptb["num_params"], ptb["bptt"], ptb["batch_size"], ptb["dropout_samples"]) == (
        2, 24_000_000, 70, 64, 8)
    enwik8 = load_space("mogrifier_lstm_enwik8").fixed
    assert (enwik8["dataset"], enwik8["num_layers"], enwik8["bptt"], enwik8["dropout_samples"]) == ("enwik8", 4, 500, 1)
    assert "input_embedding_ratio" in enwik8  # not tuned on Enwik8 (Appendix 2.A)
    assert load_space("rlstm").fixed["architecture"] == "residual"
    assert load_space("tiny").fixed["dataset"] == "builtin"


def test_conditional_params_only_for_the_mogrifier(tmp_path):
    path = tmp_path / "cells.yaml"
    path.write_text(textwrap.dedent("""
        fixed: {dataset: builtin, hidden_size: 16}
        params:
          cell: {choices: [lstm, mogrifier_lstm]}
          learning_rate: {low: 0.001, high: 0.004, scale: log}
          mogrifier_rounds: {low: 0, high: 6, scale: int, when: {cell: mogrifier_lstm}}
          mogrifier_rank: {low: -20, high: 100, scale: int, when: {cell: mogrifier_lstm}}
    """))
    space = load_space(path)
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    seen = set()
    for _ in range(40):
        trial = study.ask()
        values = space.suggest(trial)
        study.tell(trial, 0.0)
        seen.add(values["cell"])
        has_mogrifier = {"mogrifier_rounds", "mogrifier_rank"} <= set(values)
        assert has_mogrifier == (values["cell"] == "mogrifier_lstm")
        for name, value in values.items():
            assert space.param(name).contains(value), (name, value)
    assert seen == {"lstm", "mogrifier_lstm"}


def test_suggestions_respect_scales():
    space = load_space("mogrifier_lstm")
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=1))
    trial = study.ask()
    values = space.suggest(trial)
    dists = trial.distributions
    assert dists["learning_rate"].log and not dists["input_dropout"].log
    assert isinstance(values["mogrifier_rank"], int)
    assert isinstance(dists["mogrifier_rounds"], optuna.distributions.IntDistribution)


def write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "mine.yaml"
    path.write_text(textwrap.dedent(body))
    return path


GOOD_FIXED = "fixed: {dataset: builtin, hidden_size: 16}\n"

MALFORMED = {
    "unknown hyperparameter": (
        "params:\n  learning_rat: {low: 0.001, high: 0.004, scale: log}\n",
        "parameter learning_rat: unknown hyperparameter",
    ),
    "low not below high": (
        "params:\n  input_dropout: {low: 0.5, high: 0.5}\n",
        "parameter input_dropout: low (0.5) must be below high (0.5)",
    ),
    "log range touching zero": (
        "params:\n  l2_penalty: {low: 0.0, high: 0.001, scale: log}\n",
        "parameter l2_penalty: a log-scale range must lie above 0",
    ),
    "unknown scale": (
        "params:\n  learning_rate: {low: 0.001, high: 0.004, scale: exponential}\n",
        "parameter learning_rate: unknown scale 'exponential'",
    ),
    "non-integer bound of an int param": (
        "params:\n  mogrifier_rounds: {low: 0, high: 2.5, scale: int}\n",
        "parameter mogrifier_rounds: high must be an integer",
    ),
    "integer param without int scale": (
        "params:\n  mogrifier_rank: {low: -20, high: 100}\n",
        "parameter mogrifier_rank: takes integers",
    ),
    "missing bound": (
        "params:\n  learning_rate: {low: 0.001, scale: log}\n",
        "parameter learning_rate: missing high",
    ),
    "bound not a number": (
        "params:\n  learning_rate: {low: small, high: 0.004, scale: log}\n",
        "parameter learning_rate: low must be a number",
    ),
    "unknown key in a param": (
        "params:\n  learning_rate: {low: 0.001, high: 0.004, scale: log, step: 2}\n",
        "parameter learning_rate: unknown key(s) step",
    ),
    "range outside what the trainer accepts": (
        "params:\n  input_dropout: {low: 0.0, high: 1.5}\n",
        "parameter input_dropout: value 1.5 of its range is rejected by the trainer",
    ),
    "condition that never holds": (
        "params:\n  mogrifier_rounds: {low: 0, high: 6, scale: int, when: {cell: mogrifier_lstm}}\n",
        "parameter mogrifier_rounds: condition cell in ['mogrifier_lstm'] never holds",
    ),
    "unknown choice": (
        "params:\n  cell: {choices: [lstm, gru]}\n",
        "parameter cell: unknown choice(s) gru",
    ),
    "no params": ("params: {}\n", "params must map at least one hyperparameter"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_param_errors_name_file_parameter_and_problem(tmp_path, case):
    body, expected = MALFORMED[case]
    path = write(tmp_path, GOOD_FIXED + body)
    with pytest.raises(SpaceError) as err:
        load_space(path)
    assert str(path) in str(err.value)
    assert expected in str(err.value)


FIXED_CASES = {
    "unknown fixed setting": ("fixed: {dataset: builtin, hidden_size: 16, layers: 2}", "fixed setting layers: unknown trainer setting"),
    "fixed value the trainer rejects": ("fixed: {dataset: builtin, hidden_size: 16, num_layers: 0}", "num_layers"),
    "reserved setting": ("fixed: {hidden_size: 16, run_dir: /tmp/x}", "fixed setting run_dir: set by the sweep"),
    "tuned and fixed": ("fixed: {hidden_size: 16, learning_rate: 0.002}", "parameter learning_rate: both tuned and fixed"),
    "unknown top-level key": ("fixed: {hidden_size: 16}\nranges: {}", "unknown key(s) ranges"),
}


@pytest.mark.parametrize("case", sorted(FIXED_CASES))
def test_malformed_fixed_settings(tmp_path, case):
    fixed, expected = FIXED_CASES[case]
    path = write(tmp_path, fixed + "\nparams:\n  learning_rate: {low: 0.001, high: 0.004, scale: log}\n")
    with pytest.raises(SpaceError) as err:
        load_space(path)
    assert str(path) in str(err.value) and expected in str(err.value)


def test_invalid_yaml_and_unknown_name(tmp_path):
    path = write(tmp_path, "params: [unclosed\n")
    with pytest.raises(SpaceError, match="not valid YAML"):
        load_space(path)
    with pytest.raises(SpaceError, match="unknown search space 'nope'; known: .*tiny"):
        load_space("nope")


def test_user_space_dir_by_name(tmp_path, monkeypatch):
    (tmp_path / "mine.yaml").write_text(GOOD_FIXED + "params:\n  learning_rate: {low: 0.001, high: 0.002, scale: log}\n")
    monkeypatch.setenv("RNNTUNE_SPACES_DIR", str(tmp_path))
    assert "mine" in list_spaces()
    assert load_space("mine").param("learning_rate").high == 0.002


def test_overrides_from_the_command_line():
    space = load_space("tiny").with_overrides(
        {"learning_rate": "0.001:0.003", "t_max": "exp(2):exp(5):log"}, parse_set_values(["max_steps=500", "output_dropout=0.5"])
    )
    assert (space.param("learning_rate").low, space.param("learning_rate").high) == (0.001, 0.003)
    assert space.param("learning_rate").scale == "log"
    assert space.param("t_max").high == pytest.approx(math.exp(5))
    assert space.fixed["max_steps"] == 500 and space.fixed["output_dropout"] == 0.5
    assert "output_dropout" not in space.param_names
    lstm = load_space("tiny").with_overrides(fixed={"cell": "lstm"})
    assert "mogrifier_rounds" not in lstm.param_names
    with pytest.raises(SpaceError, match="parameter learning_rate: low .* must be below high"):
        load_space("tiny").with_overrides({"learning_rate": "0.004:0.001"})
    with pytest.raises(SpaceError, match="parameter t_max: unknown scale 'quadratic'"):
        load_space("tiny").with_overrides({"t_max": "1:5:quadratic"})
    with pytest.raises(SpaceError, match="low:high"):
        load_space("tiny").with_overrides({"learning_rate": "0.001"})


def test_round_trip_through_a_study_dict():
    space = load_space("rlstm")
    again = space_from_dict(space.to_dict())
    assert again.params == space.params and dict(again.fixed) == dict(space.fixed)


def test_spaces_command_lists_and_shows(capsys):
    from tuner.cli import main

    assert main(["spaces"]) == 0
    out = capsys.readouterr().out
    for name in SHIPPED:
        assert name in out
    assert main(["spaces", "show", "rlstm"]) == 0
    out = capsys.readouterr().out
    assert "cell_output_dropout" in out and "inter_layer_dropout" not in out
    assert "[7.38906, 148.413]" in out
    assert main(["spaces", "show", "nope"]) == 2
    assert "unknown search space" in capsys.readouterr().err


def test_reverse_copy_space_follows_the_mogrifier_paper():
    """Mogrifier paper §4.3: 10M weights, vocabulary 1000, no dropout; lr, l2, embedding size, r, k tuned."""
    space = load_space("reverse_copy")
    fixed = space.fixed
    assert (fixed["dataset"], fixed["num_params"], fixed["reverse_copy_vocab"]) == ("reverse_copy", 10_000_000, 1000)
    names = {p.name for p in space.params}
    assert names == {"cell", "learning_rate", "l2_penalty", "input_embedding_ratio", "mogrifier_rounds", "mogrifier_rank"}
    assert not any("dropout" in n for n in names | set(fixed))
