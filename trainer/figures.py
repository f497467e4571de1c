"""The end-of-run figures of the best weights: what `result.json` reports besides the training curve.

Language models: the test loss at the softmax temperature chosen on validation (thesis §4.6; with
`val_temperature_search` by lamb's search, trainer/temperature.py) or fixed by `eval_temperature`
(Maupomé & Meurs tune none), on the test split as the trainer holds it (`test_streams`), with
`mc_dropout_samples` > 0 the same for Monte Carlo dropout (Mogrifier paper §3.3; its dropout-rate
scale chosen on validation too unless `mc_dropout_scale` fixes it), and with
`dyneval` dynamic evaluation (thesis §4.5) at the temperature lamb's tune_dyneval.sh estimates
(trainer/dyneval.py). Reverse copy: test loss and sequence accuracy.
"""

from __future__ import annotations

from torch import Tensor

from . import reverse_copy
from .config import TrainConfig
from .data import Corpus
from .dyneval import estimate_temperature, run_dynamic_evaluation
from .evaluate import TEMPERATURE_GRID, evaluate, mc_evaluate, select_mc, select_temperature
from .model import LanguageModel, ReverseCopyModel
from .temperature import search_temperature, search_tokens


def test_figures(
    model: LanguageModel | ReverseCopyModel, cfg: TrainConfig, corpus: Corpus, valid: Tensor, test: Tensor
) -> dict[str, float]:
    """TrainResult fields for the model's current weights; `valid`/`test` as the trainer holds them
    (batchified streams, or reverse copy's example sets), `corpus` for dynamic evaluation's streams."""
    if cfg.dataset == "reverse_copy":
        assert isinstance(model, ReverseCopyModel)
        loss, accuracy = reverse_copy.evaluate_examples(model, test, cfg.eval_batch_size)
        return {"test_loss": loss, "test_accuracy": accuracy}
    assert isinstance(model, LanguageModel)
    # The temperature chosen on validation (thesis §4.6), or the one `eval_temperature` fixes.
    grid = TEMPERATURE_GRID if cfg.eval_temperature is None else (cfg.eval_temperature,)
    temperature = _test_temperature(model, cfg, corpus, valid, grid)
    out = {"temperature": temperature, "test_loss": evaluate(model, test, cfg.bptt, (temperature,))[0]}
    if cfg.mc_dropout_samples > 0:
        samples = cfg.mc_dropout_samples  # rates × scale, both chosen on validation (§3.3)
        mc_temperature, scale, _ = select_mc(model, valid, cfg.bptt, samples, cfg.mc_dropout_scale, grid)
        out["mc_temperature"], out["mc_dropout_scale"] = mc_temperature, scale
        out["mc_test_loss"] = mc_evaluate(
            model, test, cfg.bptt, samples, (mc_temperature,), dropout_scale=scale
        )[0]
    if cfg.dyneval:
        device = valid.device
        splits = {"valid": corpus.valid.to(device), "test": corpus.test.to(device)}
        dyn_temperature = estimate_temperature(model, splits["valid"], cfg)
        dyn = run_dynamic_evaluation(model, corpus.train.to(device), splits, cfg, dyn_temperature)
        out["dyneval_val_loss"], out["dyneval_test_loss"] = dyn["valid"], dyn["test"]
        out["dyneval_temperature"] = dyn_temperature
    return out


def _test_temperature(
    model: LanguageModel, cfg: TrainConfig, corpus: Corpus, valid: Tensor, grid: tuple[float, ...]
) -> float:
    """The deterministic test figure's temperature: `eval_temperature` when set; else, with
    `val_temperature_search`, lamb's search (lamb/experiment/test.sh evaluates with the tuning config's
    eval_softmax_temperature -0.8: the multipliers 1.06 down to 0.80 by 0.02 on the first 50,000
    validation tokens, lamb/evaluation.py `evaluate_all`; trainer/temperature.py); else the grid's best
    on the whole validation split (thesis §4.6)."""
    if cfg.eval_temperature is None and cfg.val_temperature_search:
        valid_ids = corpus.valid.to(valid.device)
        return search_temperature(
            model, valid_ids, cfg.batch_size, cfg.bptt, search_tokens(cfg.max_eval_tokens)
        )[0]
    return select_temperature(model, valid, cfg.bptt, grid=grid)[0]
