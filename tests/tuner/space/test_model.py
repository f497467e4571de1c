"""SearchSpace: malformed spaces fail with errors naming the file, the parameter and what is
allowed; overrides, conditional sampling and the study round trip work on real Optuna trials."""

from __future__ import annotations

import math
import textwrap
from pathlib import Path

import optuna
import pytest

from trainer.config import parse_set
from tuner.space import SearchSpace, SpaceError, load_space, resolve_space


def write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "mine.yaml"
    path.write_text(textwrap.dedent(body))
    return path


def test_conditional_params_only_for_the_mogrifier(tmp_path):
    path = write(
        tmp_path,
        """
        fixed: {dataset: builtin, hidden_size: 16}
        params:
          mogrifier_rounds: {low: 0, high: 6, scale: int, when: {cell: mogrifier_lstm}}
          mogrifier_rank: {low: -20, high: 100, scale: int, when: {cell: mogrifier_lstm}}
          cell: {choices: [lstm, mogrifier_lstm]}
          learning_rate: {low: 0.001, high: 0.004, scale: log}
    """,
    )
    space = load_space(path)
    assert space.param_names[:2] == ("cell", "learning_rate")  # a condition's subject samples first
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


def test_rank_only_with_rounds_when_rounds_depends_on_a_fixed_cell(tmp_path):
    """A condition on a fixed setting is no nesting: rounds always applies, rank only for rounds >= 1."""
    path = write(
        tmp_path,
        """
        fixed: {dataset: builtin, hidden_size: 16, cell: mogrifier_lstm}
        params:
          mogrifier_rank: {low: -20, high: 100, scale: int, when: {cell: mogrifier_lstm, mogrifier_rounds: [1, 2, 3]}}
          mogrifier_rounds: {low: 0, high: 6, scale: int, when: {cell: mogrifier_lstm}}
          learning_rate: {low: 0.001, high: 0.004, scale: log}
    """,
    )
    space = load_space(path)
    assert space.param_names == ("learning_rate", "mogrifier_rounds", "mogrifier_rank")
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=1))
    seen = set()
    for _ in range(30):
        trial = study.ask()
        values = space.suggest(trial)
        study.tell(trial, 0.0)
        seen.add(values["mogrifier_rounds"])
        assert ("mogrifier_rank" in values) == (1 <= values["mogrifier_rounds"] <= 3)
    assert {0, 1} <= seen and seen - {0, 1, 2, 3}


def test_suggestions_respect_scales():
    space = load_space("mogrifier_lstm")
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=1))
    trial = study.ask()
    values = space.suggest(trial)
    dists = trial.distributions
    assert dists["learning_rate"].log and not dists["input_dropout"].log
    assert isinstance(values["mogrifier_rank"], int)
    assert isinstance(dists["mogrifier_rounds"], optuna.distributions.IntDistribution)


GOOD_FIXED = "fixed: {dataset: builtin, hidden_size: 16}\n"

MALFORMED = {
    "unknown hyperparameter": (
        "params:\n  learning_rat: {low: 0.001, high: 0.004, scale: log}\n",
        "parameter learning_rat: unknown hyperparameter; known: learning_rate,",
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
        "parameter learning_rate: unknown scale 'exponential'; allowed: linear, log, int, categorical",
    ),
    "non-integer bound of an int param": (
        "params:\n  mogrifier_rounds: {low: 0, high: 2.5, scale: int}\n",
        "parameter mogrifier_rounds: high must be an integer, got 2.5",
    ),
    "integer param without int scale": (
        "params:\n  mogrifier_rank: {low: -20, high: 100}\n",
        "parameter mogrifier_rank: takes integers; use scale: int",
    ),
    "real param with int scale": (
        "params:\n  input_dropout: {low: 0, high: 1, scale: int}\n",
        "parameter input_dropout: is real-valued; use scale linear or log, not int",
    ),
    "choices for a real param": (
        "params:\n  input_dropout: {choices: [0.1, 0.2]}\n",
        "parameter input_dropout: choices are only allowed for: cell",
    ),
    "missing bound": (
        "params:\n  learning_rate: {low: 0.001, scale: log}\n",
        "parameter learning_rate: missing high",
    ),
    "bound not a number": (
        "params:\n  learning_rate: {low: small, high: 0.004, scale: log}\n",
        "parameter learning_rate: low must be a number or exp(x), got 'small'",
    ),
    "bound that overflows": (
        "params:\n  t_max: {low: exp(2), high: exp(1000), scale: log}\n",
        "parameter t_max: high exp(1000) is too large; bounds must be finite numbers",
    ),
    "unknown key in a param": (
        "params:\n  learning_rate: {low: 0.001, high: 0.004, scale: log, step: 2}\n",
        "parameter learning_rate: unknown key(s) step; allowed for scale log: high, low, scale, when",
    ),
    "param not a mapping": (
        "params:\n  learning_rate: 0.001\n",
        "parameter learning_rate: expected a mapping with low, high and scale",
    ),
    "range outside what the trainer accepts": (
        "params:\n  input_dropout: {low: 0.0, high: 1.5}\n",
        "parameter input_dropout: value 1.5 of its range is rejected by the trainer",
    ),
    "condition that never holds": (
        "params:\n  mogrifier_rounds: {low: 0, high: 6, scale: int, when: {cell: mogrifier_lstm}}\n",
        "parameter mogrifier_rounds: condition cell in ['mogrifier_lstm'] never holds; cell is fixed to 'lstm'",
    ),
    "nested condition": (
        "params:\n  cell: {choices: [lstm, mogrifier_lstm]}\n"
        "  mogrifier_rounds: {low: 0, high: 6, scale: int, when: {cell: mogrifier_lstm}}\n"
        "  mogrifier_rank: {low: -20, high: 100, scale: int, when: {mogrifier_rounds: [1, 2]}}\n",
        "parameter mogrifier_rank: conditions may not be nested (mogrifier_rounds is itself conditional)",
    ),
    "condition on an unknown setting": (
        "params:\n  mogrifier_rounds: {low: 0, high: 6, scale: int, when: {colour: red}}\n",
        "parameter mogrifier_rounds: condition on unknown setting 'colour'",
    ),
    "unknown choice": (
        "params:\n  cell: {choices: [lstm, gru]}\n",
        "parameter cell: unknown choice(s) gru; allowed: lstm, mogrifier_lstm,",
    ),
    "a range for a categorical": (
        "params:\n  cell: {low: 0, high: 1}\n",
        "parameter cell: is categorical; give choices from lstm, mogrifier_lstm,",
    ),
    "no params": ("params: {}\n", "params must map at least one hyperparameter"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_param_errors_name_file_parameter_and_problem(tmp_path, case):
    body, expected = MALFORMED[case]
    path = write(tmp_path, GOOD_FIXED + body)
    with pytest.raises(SpaceError) as err:
        load_space(path)
    assert str(err.value).startswith(f"{path}: ")
    assert expected in str(err.value)


FIXED_CASES = {
    "unknown fixed setting": (
        "fixed: {dataset: builtin, hidden_size: 16, layers: 2}",
        "fixed setting layers: unknown trainer setting",
    ),
    "fixed value the trainer rejects": (
        "fixed: {dataset: builtin, hidden_size: 16, num_layers: 0}",
        "num_layers",
    ),
    "reserved setting": (
        "fixed: {hidden_size: 16, run_dir: /tmp/x}",
        "fixed setting run_dir: set by the sweep",
    ),
    "tuned and fixed": (
        "fixed: {hidden_size: 16, learning_rate: 0.002}",
        "parameter learning_rate: both tuned and fixed",
    ),
    "unknown top-level key": (
        "fixed: {hidden_size: 16}\nranges: {}",
        "unknown key(s) ranges; allowed: description, source, recipe, fixed, params",
    ),
}


@pytest.mark.parametrize("case", sorted(FIXED_CASES))
def test_malformed_fixed_settings(tmp_path, case):
    fixed, expected = FIXED_CASES[case]
    path = write(tmp_path, fixed + "\nparams:\n  learning_rate: {low: 0.001, high: 0.004, scale: log}\n")
    with pytest.raises(SpaceError) as err:
        load_space(path)
    assert str(path) in str(err.value) and expected in str(err.value)


def test_every_problem_is_reported_at_once(tmp_path):
    path = write(
        tmp_path,
        GOOD_FIXED + "params:\n  learning_rate: {low: 0.004, high: 0.001}\n  l2_penalty: {low: x, high: 1}\n",
    )
    with pytest.raises(SpaceError) as err:
        load_space(path)
    lines = str(err.value).splitlines()
    assert lines == [
        f"{path}: parameter learning_rate: low (0.004) must be below high (0.001)",
        f"{path}: parameter l2_penalty: low must be a number or exp(x), got 'x'",
    ]


def test_overrides_from_the_command_line():
    space = load_space("tiny").with_overrides(
        {"learning_rate": "0.001:0.003", "t_max": "exp(2):exp(5):log"},
        parse_set(["max_steps=500", "output_dropout=0.5"]),
    )
    assert (space.param("learning_rate").low, space.param("learning_rate").high) == (0.001, 0.003)
    assert space.param("learning_rate").scale == "log"
    assert space.param("t_max").high == pytest.approx(math.exp(5))
    assert space.fixed["max_steps"] == 500 and space.fixed["output_dropout"] == 0.5
    assert "output_dropout" not in space.param_names
    assert load_space("tiny").with_overrides({"mogrifier_rounds": "1:3"}).param("mogrifier_rounds").high == 3
    lstm = load_space("tiny").with_overrides(fixed={"cell": "lstm"})
    assert "mogrifier_rounds" not in lstm.param_names
    with pytest.raises(SpaceError, match=r"parameter learning_rate: low .* must be below high"):
        load_space("tiny").with_overrides({"learning_rate": "0.004:0.001"})
    with pytest.raises(SpaceError, match="parameter t_max: unknown scale 'quadratic'"):
        load_space("tiny").with_overrides({"t_max": "1:5:quadratic"})
    with pytest.raises(SpaceError, match="low:high"):
        load_space("tiny").with_overrides({"learning_rate": "0.001"})


def test_a_range_that_overflows_is_a_space_error():
    with pytest.raises(SpaceError) as err:
        resolve_space("tiny", {"ranges": {"learning_rate": "exp(1000):exp(1001)"}})
    assert str(err.value).startswith("tiny (overrides): parameter learning_rate: low exp(1000) is too large")
    inline = {"fixed": {"hidden_size": 16}, "params": {"t_max": {"low": 3, "high": 10**400, "scale": "log"}}}
    with pytest.raises(
        SpaceError, match=r"inline space 'inline': parameter t_max: high 1000+\.\.\. is too large"
    ):
        resolve_space(inline)


@pytest.mark.parametrize("name", ["../../zz", "a/b", ".hidden", "-x", "", "x" * 129, "spa ce"])
def test_space_names_are_safe(name):
    inline = {
        "name": name,
        "fixed": {"hidden_size": 16},
        "params": {"learning_rate": {"low": 0.001, "high": 0.002}},
    }
    with pytest.raises(SpaceError, match=r"space name .* should match pattern .*letters, digits"):
        resolve_space(inline)


def test_round_trip_through_a_study_dict():
    space = load_space("rlstm")
    again = SearchSpace.from_dict(space.to_dict())
    assert again.params == space.params and dict(again.fixed) == dict(space.fixed)
    assert again.name == "rlstm" and again.to_dict() == space.to_dict()
    assert space.to_dict()["params"]["t_max"] == {"scale": "log", "low": math.exp(2), "high": math.exp(5)}
    assert load_space("tiny").to_dict()["params"]["mogrifier_rank"]["when"] == {
        "cell": ["mogrifier_lstm"],
        "mogrifier_rounds": [1, 2, 3, 4, 5, 6],
    }
    with pytest.raises(SpaceError, match="stored space rlstm: parameter t_max: missing low"):
        SearchSpace.from_dict({**space.to_dict(), "params": {"t_max": {"high": 5.0, "scale": "log"}}})
