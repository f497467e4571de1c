"""Each paper's recipe as its own search space: the settings each fixes, the old names kept as
aliases, and a few training steps of every recipe on the built-in corpus (sizes shrunk only)."""

from __future__ import annotations

import json
import math

import jsonschema
import optuna
import pytest
import yaml

from trainer import make_config, train
from tuner.space import BUILTIN_SPACES_DIR, list_spaces, load_space
from tuner.space.schema import json_schema

MOGRIFIER_PAPER = {  # Mogrifier paper §3.3: (dataset, layers, BPTT, batch)
    "mogrifier_paper_ptb_lstm": ("ptb", 2, 70, 64),
    "mogrifier_paper_ptb_mogrifier_lstm": ("ptb", 2, 70, 64),
    "mogrifier_paper_wt2_lstm": ("wikitext2", 2, 70, 64),
    "mogrifier_paper_wt2_mogrifier_lstm": ("wikitext2", 2, 70, 64),
    "mogrifier_paper_enwik8_lstm": ("enwik8", 4, 500, 128),
    "mogrifier_paper_enwik8_mogrifier_lstm": ("enwik8", 4, 500, 128),
}
CIRCLING_BACK = {  # Circling Back §7 / thesis §4.6 on PTB: (cell, mogrified)
    "circling_back_ptb_lstm": ("lstm", False),
    "circling_back_ptb_rlstm": ("rlstm", False),
    "circling_back_ptb_mogrifier_lstm": ("mogrifier_lstm", True),
    "circling_back_ptb_mogrifier_rlstm": ("rlstm", True),
}
RECIPES = sorted(MOGRIFIER_PAPER) + sorted(CIRCLING_BACK)
# Old names kept for the studies that reference them: symbolic links to the recipe they now are.
ALIASES = {
    "mogrifier_lstm": "mogrifier_paper_ptb_mogrifier_lstm",
    "lstm": "mogrifier_paper_ptb_lstm",
    "mogrifier_lstm_enwik8": "mogrifier_paper_enwik8_mogrifier_lstm",
    "rlstm": "circling_back_ptb_mogrifier_rlstm",
}


@pytest.mark.parametrize("name", sorted(MOGRIFIER_PAPER))
def test_mogrifier_paper_recipe(name):
    """§3.3: Adam β1 = 0, clip 10, the averaging switch, one dropout sample, no Chrono, skip."""
    space = load_space(name)
    fixed = space.fixed
    dataset, layers, bptt, batch = MOGRIFIER_PAPER[name]
    assert (fixed["dataset"], fixed["num_layers"], fixed["bptt"], fixed["batch_size"]) == (
        dataset,
        layers,
        bptt,
        batch,
    )
    cfg = make_config({**fixed, "data_dir": "data"})
    assert (cfg.optimizer, cfg.adam_beta1, cfg.grad_clip) == ("adam", 0.0, 10.0)
    assert (cfg.averaging, cfg.dropout_samples, cfg.chrono_init, cfg.architecture) == (
        "switch",
        1,
        False,
        "skip",
    )
    assert cfg.max_steps % cfg.eval_every == 0  # the last step is evaluated
    assert "t_max" not in space.params and "cell_output_dropout" not in space.params
    assert ("mogrifier_rounds" in space.params) == name.endswith("mogrifier_lstm")
    assert ("input_embedding_ratio" in space.params) == (dataset != "enwik8")  # Appendix A


@pytest.mark.parametrize("name", sorted(CIRCLING_BACK))
def test_circling_back_recipe(name):
    """§5, §7 (thesis §4.4, §4.6): RAdam, 2TA, D = 8, batch 128, BPTT 70, Chrono with T_max tuned."""
    space = load_space(name)
    cfg = make_config({**space.fixed, "data_dir": "data"})
    cell, mogrified = CIRCLING_BACK[name]
    assert (cfg.cell, cfg.architecture, cfg.optimizer, cfg.averaging) == (cell, "residual", "radam", "2ta")
    assert (cfg.dropout_samples, cfg.batch_size, cfg.bptt, cfg.chrono_init) == (8, 128, 70, True)
    assert cfg.max_steps == 400 * 104  # about 400 epochs of 104 steps
    t_max = space.param("t_max")
    assert (t_max.low, t_max.high, t_max.scale) == (
        pytest.approx(math.exp(2)),
        pytest.approx(math.exp(5)),
        "log",
    )
    assert "cell_output_dropout" in space.params and "inter_layer_dropout" not in space.params
    assert ("mogrifier_rounds" in space.params) == mogrified
    if cell == "rlstm" and not mogrified:
        assert cfg.mogrifier_rounds == 0  # the plain RLSTM


@pytest.mark.parametrize("name", [*RECIPES, "tiny", "dyneval", "reverse_copy"])
def test_every_space_names_its_source_and_recipe(name):
    space = load_space(name)
    assert space.source and space.recipe and space.description
    raw = yaml.safe_load((BUILTIN_SPACES_DIR / f"{name}.yaml").read_text())
    jsonschema.Draft202012Validator(json_schema()).validate(raw)


@pytest.mark.parametrize(("alias", "target"), sorted(ALIASES.items()))
def test_old_names_load_as_aliases_of_their_recipe(alias, target):
    assert alias in list_spaces()
    path = BUILTIN_SPACES_DIR / f"{alias}.yaml"
    assert path.is_symlink() and path.resolve() == (BUILTIN_SPACES_DIR / f"{target}.yaml").resolve()
    old, new = load_space(alias), load_space(target)
    assert old.name == alias and old.to_dict() == {**new.to_dict(), "name": alias}


def test_tiny_keeps_its_chrono_init():
    """The embedded default trained with Chrono at T_max = e³ before Chrono became opt-in."""
    cfg = make_config(load_space("tiny").fixed)
    assert cfg.chrono_init and cfg.t_max == pytest.approx(math.exp(3))


# Only sizes shrink: width, budget, steps, batch, the BPTT window's length and the evaluation's;
# the task becomes the built-in corpus. Everything else (optimizer, averaging, D, Chrono,
# architecture, cell) is the recipe's; the recipes' own BPTT and batch are checked above.
SMALL = {
    "dataset": "builtin",
    "data_dir": None,
    "num_params": None,
    "hidden_size": 16,
    "batch_size": 2,
    "bptt": 20,
    "max_steps": 4,
    "eval_every": 2,
    "max_eval_tokens": 300,
    "device": "cpu",
}


@pytest.mark.parametrize("name", RECIPES)
def test_each_recipe_trains_a_few_steps(name, tmp_path):
    space = load_space(name).with_overrides(fixed=SMALL)
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    params = space.suggest(study.ask())
    cfg = make_config(space.trial_config(params, tmp_path / "run"))
    result = train(cfg, report=lambda m: m["step"] == 4)  # stop there: skip the full test figures
    assert result.steps == 4 and math.isfinite(result.best_val_loss)
    rows = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [2, 4]
    if cfg.averaging == "switch":  # 80% of 4 steps: the switch turns on at the last evaluation
        assert all(r["val_loss"] == r["raw_val_loss"] for r in rows)
