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
from trainer.config import DROPOUTS
from trainer.model import build_model, count_parameters
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
# The trial lamb published for each Mogrifier paper space, the id in its path
# (lamb/experiment/mogrifier/config/<study>/trial_<id>/config): the study ran at least that many.
LAMB_BEST_TRIAL = {
    "mogrifier_paper_ptb_lstm": 833,  # 786252db3825+_tune_ptb_24m_lstm_d2_arms
    "mogrifier_paper_ptb_mogrifier_lstm": 483,  # 786252db3825+_tune_ptb_24m_lstm_fm_d2_arms
    "mogrifier_paper_wt2_lstm": 763,  # c51c838b33a5+_tune_wikitext-2_35m_lstm_mos2_d2_arms
    "mogrifier_paper_wt2_mogrifier_lstm": 747,  # c51c838b33a5+_tune_wikitext-2_35m_lstm_mos2_fm_d2_arms
    "mogrifier_paper_enwik8_lstm": 400,  # 4d0a9a5bdb04+_tune_enwik8_48m_lstm_d4_arms
    "mogrifier_paper_enwik8_mogrifier_lstm": 234,  # 4d0a9a5bdb04+_tune_enwik8_48m_lstm_fm_d4_arms
    "mogrifier_paper_ptb_char_mogrifier_lstm": 596,  # 0393c7dc3532+_tune_ptb_char_24m_lstm_fm_d2_asgd_ts150
    "mogrifier_paper_mwc_mogrifier_lstm": 422,  # 9e20581d3dad+_tune_mwc_en_24m_lstm_fm_d2_arms
}
# The other datasets' recipes: (dataset, layers, BPTT, batch, D) as each paper states them.
OTHER_DATASETS = {
    "mogrifier_paper_ptb_char_mogrifier_lstm": ("ptb_char", 2, 150, 128, 1),  # Mogrifier §3.3
    "mogrifier_paper_mwc_mogrifier_lstm": ("mwc", 2, 150, 128, 1),  # Mogrifier §3.2, §3.3
    "circling_back_wt2_mogrifier_rlstm": ("wikitext2", 2, 70, 128, 4),  # Circling Back §7
    "circling_back_ptb_char_mogrifier_rlstm": ("ptb_char", 2, 200, 128, 4),
    "circling_back_enwik8_mogrifier_rlstm": ("enwik8", 6, 256, 128, 1),
    "circling_back_text8_mogrifier_rlstm": ("text8", 6, 256, 128, 1),
}
# Maupomé & Meurs' multiplicative cells: (dataset, batch, weights, alphabet) of §5.1 / Table 1
# (character-level PTB) and §5.2 / Table 2 (Text8).
MAUPOME_MEURS = {
    "maupome_meurs_ptb_char": ("ptb_char", 32, 292_000, 50),
    "maupome_meurs_text8": ("text8", 50, 133_000, 27),
}
RECIPES = sorted(MOGRIFIER_PAPER) + sorted(CIRCLING_BACK) + sorted(OTHER_DATASETS) + sorted(MAUPOME_MEURS)
# The recipes written with a citation above each fixed setting, and their datasets.
CITED = {name: spec[0] for name, spec in (OTHER_DATASETS | MAUPOME_MEURS).items()}
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
    assert cfg.divergence_restores == 0  # no restart on divergence: it came with Circling Back §5
    # The switch's patience can fire before the 80% cap (lamb: 10 turns on Enwik8, 50 word level).
    assert cfg.averaging_patience == (10 if dataset == "enwik8" else 50)
    assert cfg.averaging_patience < 0.8 * cfg.max_steps / cfg.eval_every
    assert "t_max" not in space.params and "cell_output_dropout" not in space.params
    assert ("mogrifier_rounds" in space.params) == name.endswith("mogrifier_lstm")
    assert ("input_embedding_ratio" in space.params) == (dataset != "enwik8")  # Appendix A
    # Table 1: every Wikitext-2 row is "d2, MoS2" (no PTB or Enwik8 row has a mixture); the paper
    # is silent on the latent dropout, so it is lamb's: output_dropout's rate (None follows it).
    assert cfg.mos_components == (2 if dataset == "wikitext2" else 1)
    assert cfg.downprojected_output_dropout is None and "downprojected_output_dropout" not in space.params
    assert cfg.drop_state_probability == 0.01  # every published lamb config
    # Vizier's GP bandit (§3.3); at least as many trials as the id lamb published.
    assert space.sweep.given() == {"sampler": "gp", "n_trials": LAMB_BEST_TRIAL[name]}
    assert ('"d2, MoS2"' in (BUILTIN_SPACES_DIR / f"{name}.yaml").read_text()) == (dataset == "wikitext2")


@pytest.mark.parametrize("name", sorted(CIRCLING_BACK))
def test_circling_back_recipe(name):
    """§5, §7 (thesis §4.4, §4.6): RAdam, 2TA, D = 8, batch 128, BPTT 70, Chrono with T_max tuned."""
    space = load_space(name)
    cfg = make_config({**space.fixed, "data_dir": "data"})
    cell, mogrified = CIRCLING_BACK[name]
    assert (cfg.cell, cfg.architecture, cfg.optimizer, cfg.averaging) == (cell, "residual", "radam", "2ta")
    assert (cfg.dropout_samples, cfg.batch_size, cfg.bptt, cfg.chrono_init) == (8, 128, 70, True)
    assert cfg.divergence_restores > 0  # §5: restart from the best checkpoint, learning rate x 0.9
    assert cfg.max_steps == 400 * 104  # about 400 epochs of 104 steps
    t_max = space.param("t_max")
    assert (t_max.low, t_max.high, t_max.scale) == (
        pytest.approx(math.exp(2)),
        pytest.approx(math.exp(5)),
        "log",
    )
    assert "cell_output_dropout" in space.params and "inter_layer_dropout" not in space.params
    # §3: m = n, a residual architecture without projections, so the embedding ratio is not tuned.
    assert "input_embedding_ratio" not in space.params and cfg.input_embedding_ratio == 1.0
    assert "m = n" in (BUILTIN_SPACES_DIR / f"{name}.yaml").read_text()
    assert ("mogrifier_rounds" in space.params) == mogrified
    # §7: "everything else is the same as in the baseline": its state dropping and its GP tuner.
    assert cfg.drop_state_probability == 0.01 and space.sweep.given() == {"sampler": "gp"}
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


@pytest.mark.parametrize("name", sorted(OTHER_DATASETS))
def test_other_dataset_recipes_fix_what_their_paper_states(name):
    dataset, layers, bptt, batch, samples = OTHER_DATASETS[name]
    space = load_space(name)
    cfg = make_config({**space.fixed, "data_dir": "data"})
    assert (cfg.dataset, cfg.num_layers, cfg.bptt, cfg.batch_size, cfg.dropout_samples) == (
        dataset,
        layers,
        bptt,
        batch,
        samples,
    )
    assert cfg.max_steps % cfg.eval_every == 0  # the last step is evaluated
    circling_back = name.startswith("circling_back")
    assert (cfg.optimizer, cfg.averaging, cfg.chrono_init) == (
        ("radam", "2ta", True) if circling_back else ("adam", "switch", False)
    )
    # Enwik8 and Text8: "selected from a random pool of 60 candidates" (Circling Back §7), stopped
    # early (§5: "early stopping, which is what we do on Enwik8 and Text8").
    pool = dataset in ("enwik8", "text8")
    if circling_back:  # elsewhere "the black-box hyperparameter tuner" (thesis §4.6), count unknown
        searched = (
            {"sampler": "random", "n_trials": 60, "early_stopping": True} if pool else {"sampler": "gp"}
        )
        assert space.sweep.given() == searched
        assert cfg.drop_state_probability == 0.01  # the baseline's (§7: "everything else ... the same")
    if pool:
        assert cfg.max_steps == 200 * 2747  # 200 epochs of 2,747 windows of 256 in 128 streams
    if not circling_back:  # lamb's character-level scripts: 25 turns of patience, one evaluation a turn
        assert space.sweep.given() == {"sampler": "gp", "n_trials": LAMB_BEST_TRIAL[name]}
        assert (cfg.averaging_patience, cfg.eval_every, cfg.drop_state_probability) == (25, 100, 0.01)


@pytest.mark.parametrize("name", sorted(CITED))
def test_every_fixed_setting_of_a_new_recipe_cites_its_source(name):
    """Every fixed setting sits under a comment, and every such comment cites a section, table or
    quote of a paper, or a file of the authors' released code (lamb/...), or says the paper is silent and
    where the value comes from."""
    lines = (BUILTIN_SPACES_DIR / f"{name}.yaml").read_text().splitlines()
    fixed = lines[
        lines.index("fixed:") + 1 : next(
            i for i, line in enumerate(lines) if not line.startswith(" ") and i > lines.index("fixed:")
        )
    ]
    blocks: list[list[str]] = []  # each comment block and the settings under it
    for line in fixed:
        if line.strip().startswith("#"):
            if not blocks or blocks[-1][-1].strip().startswith("#") is False:
                blocks.append([])
            blocks[-1].append(line.strip())
        else:
            assert blocks, f"{line.strip()!r} has no comment above it"
            blocks[-1].append(line.strip())
    for block in blocks:
        comment = " ".join(line for line in block if line.startswith("#"))
        marks = (
            "§",
            "Table",
            '"',
            "paper gives",
            "not in the paper",
            "lamb/",
        )  # lamb/: a file of the authors' code
        assert any(mark in comment for mark in marks), comment


def _corpus(dataset: str, folder):
    from tests.trainer import corpora

    if dataset == "ptb_char":
        return corpora.write_ptb_char(folder)
    if dataset == "wikitext2":
        return corpora.write_wikitext2(folder)
    if dataset == "mwc":
        return corpora.write_mwc(folder)
    return corpora.write_hutter(folder, dataset)


@pytest.mark.parametrize("name", sorted(CITED))
def test_each_new_recipe_trains_two_steps_on_its_datasets_format(name, tmp_path):
    """The recipe's own dataset, read from a generated corpus of that dataset's files (sizes shrunk)."""
    dataset = CITED[name]
    small = {**SMALL, "dataset": dataset, "data_dir": str(_corpus(dataset, tmp_path / "data"))}
    space = load_space(name).with_overrides(fixed={**small, "max_steps": 2, "eval_every": 2})
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    cfg = make_config(space.trial_config(space.suggest(study.ask()), tmp_path / "run"))
    result = train(cfg, report=lambda m: m["step"] == 2)
    assert result.steps == 2 and math.isfinite(result.best_val_loss)


@pytest.mark.parametrize("name", sorted(MAUPOME_MEURS))
def test_maupome_meurs_recipe_is_the_papers_setting(name):
    """§5: one-hot input, intermediate states of the input's (the alphabet's) size, Adam, 10 epochs
    with the best model on validation kept, no regularization; the batch (§5.1: 32, §5.2: 50) and
    the weights of Tables 1 and 2; the four cells."""
    dataset, batch, weights, alphabet = MAUPOME_MEURS[name]
    space = load_space(name)
    cfg = make_config({**space.fixed, "data_dir": "data"})
    assert (cfg.dataset, cfg.input_encoding, cfg.multiplicative_form) == (dataset, "one_hot", "corrected")
    assert (cfg.batch_size, cfg.num_layers, cfg.num_params, cfg.dropout_samples) == (batch, 1, weights, 1)
    assert (cfg.optimizer, cfg.learning_rate, cfg.adam_beta1) == ("adam", 0.001, 0.9)  # Kingma & Ba
    assert all(getattr(cfg, name) == 0.0 for name in DROPOUTS) and cfg.l2_penalty == 0.0
    assert cfg.downprojected_rate == 0.0 and cfg.drop_state_probability == 0.0
    assert cfg.eval_temperature == 1.0  # the paper tunes no softmax temperature
    assert (cfg.averaging, cfg.chrono_init, cfg.divergence_restores) == ("none", False, 0)
    assert cfg.max_steps == 10 * cfg.eval_every  # 10 epochs, evaluated once per epoch
    assert list(space.params) == ["cell"]
    assert space.param("cell").choices == ("mlstm", "tmlstm", "mgru", "tmgru")
    factors = {"mlstm": 1, "mgru": 1, "tmlstm": 4, "tmgru": 3}  # intermediate states per cell
    for cell in space.param("cell").choices:  # each m has the alphabet's size (§5.1, §5.2)
        model = build_model(make_config({**space.fixed, "data_dir": "data", "cell": cell}), alphabet)
        layer = model.layers[0]
        assert layer.input_size == alphabet and layer.w_mx.shape == (alphabet, alphabet * factors[cell])
        assert 0.95 * weights < count_parameters(model) <= weights
