"""Evaluation with deterministic dropout, softmax temperature chosen on validation data (thesis §4.6),
or with Monte Carlo dropout (Mogrifier paper §3.3): predictions averaged over sampled masks, with
the dropout rates optionally scaled ("in the MC case dropout rates are scaled", §3.3). With a
mixture of softmaxes the temperature divides every component's logits (trainer/mos.py).

Losses are mean cross-entropy in nats per token; `trainer.result.headline` converts them to what
word- and character-level papers report.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager

import torch
from torch import Tensor

from .config import DROPOUTS
from .model import LanguageModel, detach_state
from .objective import repeat_for_samples, token_log_likelihood

# Temperatures tried when choosing the softmax temperature on validation data.
TEMPERATURE_GRID = tuple(round(0.70 + 0.05 * i, 2) for i in range(13))  # 0.70 … 1.30
# Dropout-rate scales tried when choosing Monte Carlo dropout's on validation (Mogrifier paper
# §3.3: "dropout rates are scaled"): the eval_dropout_multiplier values the Mogrifier authors'
# lamb/experiment/test.sh evaluates with 200 samples, 0.6, 0.7, 0.8 and 0.9.
MC_SCALE_GRID = (0.6, 0.7, 0.8, 0.9)
# Monte Carlo dropout runs at most this many rows (samples × streams) through the model at once.
MC_CHUNK_ROWS = 1024


@torch.no_grad()
def evaluate(
    model: LanguageModel,
    data: Tensor,
    bptt: int,
    temperatures: Sequence[float] = (1.0,),
    max_tokens: int | None = None,
) -> list[float]:
    """Mean nats/token on a batchified split [N, B], one loss per temperature (dropout off)."""
    was_training = model.training
    model.eval()
    try:
        n, batch = data.shape
        if max_tokens is not None:
            n = min(n, max(2, max_tokens // batch + 1))
        state = model.zero_state(batch)
        totals = [0.0] * len(temperatures)
        count = 0
        for start in range(0, n - 1, bptt):
            end = min(start + bptt, n - 1)
            x = data[start:end]
            y = data[start + 1 : end + 1]
            features, state = model.features(x, state)
            scores = model.scores(features)
            for k, temp in enumerate(temperatures):
                totals[k] -= token_log_likelihood(scores.log_probs(temp), y).sum().item()
            count += y.numel()
            state = detach_state(state)
        return [t / count for t in totals]
    finally:
        model.train(was_training)


@torch.no_grad()
def mc_evaluate(
    model: LanguageModel,
    data: Tensor,
    bptt: int,
    samples: int,
    temperatures: Sequence[float] = (1.0,),
    max_tokens: int | None = None,
    dropout_scale: float = 1.0,
) -> list[float]:
    """Monte Carlo dropout evaluation (Mogrifier paper §3.3; Gal & Ghahramani 2016).

    Mean nats/token of −ln (1/N Σ_n p(w_t | w_<t, M^n)) over N = `samples` dropout masks, each
    sample its own copy of the batch with its own carried state and masks, dropout on as in
    training (the multi-sample objective of thesis §4.3, at evaluation) with every rate multiplied
    by `dropout_scale` (Mogrifier paper §3.3, Melis et al. 2018; 1: the training rates). One loss
    per temperature.
    """
    if samples < 1:
        raise ValueError(f"mc samples must be at least 1, not {samples}")
    with dropout_on(model, dropout_scale):
        n, batch = data.shape
        if max_tokens is not None:
            n = min(n, max(2, max_tokens // batch + 1))
        chunk = max(1, min(samples, MC_CHUNK_ROWS // batch))
        sizes = [min(chunk, samples - i) for i in range(0, samples, chunk)]
        states = [model.zero_state(k * batch) for k in sizes]
        totals = [0.0] * len(temperatures)
        count = 0
        for start in range(0, n - 1, bptt):
            end = min(start + bptt, n - 1)
            x, y = data[start:end], data[start + 1 : end + 1]
            log_sum: list[Tensor | None] = [None] * len(temperatures)  # ln Σ_n p(w_t | M^n)
            for c, k in enumerate(sizes):
                features, states[c] = model.features(repeat_for_samples(x, k), states[c])
                scores = model.scores(features)  # one latent dropout mask for every temperature
                for i, temp in enumerate(temperatures):
                    ll = token_log_likelihood(scores.log_probs(temp), y.repeat(1, k))
                    ll = ll.view(-1, k, batch).logsumexp(1)
                    prev = log_sum[i]
                    log_sum[i] = ll if prev is None else torch.logaddexp(prev, ll)
            for i, acc in enumerate(log_sum):
                assert acc is not None  # sizes is non-empty: samples >= 1
                totals[i] -= (acc - math.log(samples)).sum().item()
            count += y.numel()
        return [t / count for t in totals]


@contextmanager
def dropout_on(model: LanguageModel, scale: float = 1.0) -> Iterator[None]:
    """Dropout on (training mode) with every rate of the model's config × `scale` (Monte Carlo
    dropout's rate scaling, Mogrifier paper §3.3); the model's mode and config are restored after."""
    if not 0.0 < scale <= 1.0:
        raise ValueError(f"the dropout scale must be in (0, 1], not {scale}")
    was_training, cfg = model.training, model.cfg
    scaled = {name: getattr(cfg, name) * scale for name in DROPOUTS}
    if cfg.downprojected_output_dropout is not None:  # None follows output_dropout, scaled above
        scaled["downprojected_output_dropout"] = cfg.downprojected_output_dropout * scale
    model.cfg = cfg.model_copy(update=scaled)  # every dropout, scaled
    model.train()
    try:
        yield
    finally:
        model.cfg = cfg
        model.train(was_training)


def select_temperature(
    model: LanguageModel,
    valid: Tensor,
    bptt: int,
    mc_samples: int = 0,
    dropout_scale: float = 1.0,
    grid: Sequence[float] = TEMPERATURE_GRID,
) -> tuple[float, float]:
    """The softmax temperature of `grid` that minimizes validation loss, and that loss (Melis et al.
    2018); with `mc_samples` > 0, of Monte Carlo dropout evaluation at rates × `dropout_scale`."""
    if mc_samples > 0:
        losses = mc_evaluate(model, valid, bptt, mc_samples, grid, dropout_scale=dropout_scale)
    else:
        losses = evaluate(model, valid, bptt, grid)
    best = min(range(len(losses)), key=losses.__getitem__)
    return grid[best], losses[best]


def select_mc(
    model: LanguageModel,
    valid: Tensor,
    bptt: int,
    samples: int,
    scale: float | None,
    grid: Sequence[float] = TEMPERATURE_GRID,
) -> tuple[float, float, float]:
    """Monte Carlo dropout's (temperature, dropout scale, validation loss): the pair that minimizes
    validation loss over `grid` and, with `scale` None, MC_SCALE_GRID (the given scale otherwise).
    Every scale's masks are drawn from the same generator state, on the CPU and on `valid`'s
    device alike (`same_masks`), so scales compare like for like."""
    best: tuple[float, float, float] | None = None
    for candidate in MC_SCALE_GRID if scale is None else (scale,):
        with same_masks(valid.device):
            temperature, loss = select_temperature(model, valid, bptt, samples, candidate, grid)
        if best is None or loss < best[2]:
            best = (temperature, candidate, loss)
    assert best is not None
    return best


def same_masks(device: torch.device) -> AbstractContextManager[None]:
    """A block whose random draws leave no trace: the CPU generator's state and, on an accelerator,
    that device's generator state are saved on entry and restored on exit, so every block entered
    from the same state draws the same dropout masks (torch.random.fork_rng)."""
    if device.type == "cpu":
        return torch.random.fork_rng(devices=[])
    index = (
        device.index if device.index is not None else torch.get_device_module(device.type).current_device()
    )
    return torch.random.fork_rng(devices=[index], device_type=device.type)
