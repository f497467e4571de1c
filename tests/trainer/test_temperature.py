"""lamb's softmax-temperature search (trainer/temperature.py) and `val_temperature_search`, which
reports validation at the searched temperature at every evaluation."""

from __future__ import annotations

import random

import pytest
import torch

from trainer import loop, make_config
from trainer.data import batchify
from trainer.evaluate import evaluate
from trainer.model import LanguageModel
from trainer.temperature import (
    LOGIT_MULTIPLIERS,
    TEMPERATURE_TOKENS,
    lamb_choice,
    search_temperature,
    search_tokens,
)


def lamb_scan(xe_of, config_sttt: float = -0.8) -> float:
    """lamb/evaluation.py `evaluate_all`, transcribed (xe_of stands for the quick evaluation):

    xe = 99999999.0
    best_i = 0
    for i in six.moves.range(50):
      eval_softmax_temperature0 = 1.06-i*0.02
      if eval_softmax_temperature0 < -config_sttt-0.0001:
        break
      xe0 = evaluate(...temperature=eval_softmax_temperature0...)
      if xe0 < xe:
        best_i = i
        xe = xe0
        eval_softmax_temperature = eval_softmax_temperature0
      # Stop if there was no improvement for two rounds.
      if best_i+1 < i:
        break
    """
    xe, best_i, chosen = 99999999.0, 0, None
    for i in range(50):
        eval_softmax_temperature0 = 1.06 - i * 0.02
        if eval_softmax_temperature0 < -config_sttt - 0.0001:
            break
        xe0 = xe_of(i)
        if xe0 < xe:
            best_i, xe, chosen = i, xe0, eval_softmax_temperature0
        if best_i + 1 < i:
            break
    assert chosen is not None
    return chosen


def test_candidates_are_lambs_multipliers_down_to_the_tuning_configs_floor():
    """lamb/evaluation.py: 1.06 - i*0.02 while not below -eval_softmax_temperature = 0.8 (every
    lamb tuning config: eval_softmax_temperature -0.8)."""
    reached = []
    lamb_scan(lambda i: reached.append(i) or -float(i))  # always improving: every candidate is scored
    assert [round(1.06 - 0.02 * i, 2) for i in reached] == list(LOGIT_MULTIPLIERS)


@pytest.mark.parametrize("seed", range(40))
def test_choice_is_lambs_scan_on_any_losses(seed):
    """lamb_choice on all candidates' losses picks the multiplier lamb's one-by-one scan (above)
    picks, early stop and first-of-ties included."""
    rng = random.Random(seed)
    losses = [rng.choice([1.0, 2.0, 3.0]) if seed % 2 else rng.random() for _ in LOGIT_MULTIPLIERS]
    want = lamb_scan(lambda i: losses[i])
    assert LOGIT_MULTIPLIERS[lamb_choice(losses)] == pytest.approx(want)


def test_a_better_multiplier_past_two_worse_ones_is_never_reached():
    losses = [3.0, 2.0, 2.5, 2.6, 0.1] + [0.0] * 9
    assert lamb_choice(losses) == 1 and lamb_scan(lambda i: losses[i]) == pytest.approx(1.04)


def tiny_model() -> LanguageModel:
    cfg = make_config({"hidden_size": 8, "num_layers": 1})
    torch.manual_seed(0)
    model = LanguageModel(cfg, vocab_size=7, hidden_size=8).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.8)  # far from uniform, so the temperature matters
    return model


def test_search_scores_the_first_windows_in_batch_size_streams():
    """lamb's quick evaluation: max(1, tokens // batch_size // max_time_steps) windows of the
    validation split in batch_size streams; the loss returned is the chosen temperature's there."""
    model = tiny_model()
    ids = torch.randint(0, 7, (400,), generator=torch.Generator().manual_seed(1))
    temperature, loss = search_temperature(model, ids, batch_size=4, window=5, tokens=60)
    data = batchify(ids, 4)[: 3 * 5 + 1]  # 60 // 4 // 5 = 3 windows
    temperatures = [1 / m for m in LOGIT_MULTIPLIERS]
    losses = evaluate(model, data, 5, temperatures)
    assert temperature == pytest.approx(temperatures[lamb_choice(losses)])
    assert loss == pytest.approx(evaluate(model, data, 5, (temperature,))[0])
    assert loss <= losses[0]  # never worse than the first candidate


def test_validation_loss_is_at_the_searched_temperature(monkeypatch, tmp_path):
    """val_temperature_search: each evaluation scores the validation split at the temperature the
    search returns for the weights being evaluated (lamb evaluates at eval_softmax_temperature)."""
    searched = []

    def fake_search(model, valid_ids, batch_size, window, tokens):
        searched.append((valid_ids.numel(), batch_size, window, tokens))
        return 0.9, 0.0

    monkeypatch.setattr(loop, "search_temperature", fake_search)
    cfg = make_config(
        {"hidden_size": 8, "num_layers": 1, "batch_size": 3, "bptt": 6, "max_eval_tokens": 200}
        | {"val_temperature_search": True, "run_dir": str(tmp_path)}
    )
    trainer = loop.Trainer(cfg)
    loss, _ = trainer._validate()
    assert isinstance(trainer.model, LanguageModel)
    want = evaluate(trainer.model, trainer.valid_data, 6, (0.9,), 200)[0]
    assert loss == pytest.approx(want) and trainer.val_temperatures[loss] == 0.9
    # max_eval_tokens caps the search's tokens as it caps every evaluation's.
    assert searched == [(trainer.corpus.valid.numel(), 3, 6, 200)]
    assert loss != pytest.approx(evaluate(trainer.model, trainer.valid_data, 6, (1.0,), 200)[0])


def test_the_search_reads_lambs_tokens_unless_evaluations_are_capped_lower():
    assert TEMPERATURE_TOKENS == 50_000  # eval_softmax_temperature_estimation_num_tokens
    assert search_tokens(None) == 50_000
    assert search_tokens(300) == 300
    assert search_tokens(10**6) == 50_000


def test_without_the_setting_validation_is_at_temperature_one(tmp_path):
    cfg = make_config({"hidden_size": 8, "num_layers": 1, "max_eval_tokens": 200, "run_dir": str(tmp_path)})
    trainer = loop.Trainer(cfg)
    loss, _ = trainer._validate()
    assert isinstance(trainer.model, LanguageModel)
    assert loss == evaluate(trainer.model, trainer.valid_data, cfg.bptt, (1.0,), 200)[0]
    assert trainer.val_temperatures[loss] == 1.0
