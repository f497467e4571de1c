"""A line search's candidates scored a whole grid line at a time (tuner.samplers.line_cache): plain
tensors first, then inside Optuna's own mixed optimiser, whose one-candidate calls it relies on."""

from __future__ import annotations

import math

import numpy as np
import optuna
import pytest
import torch

from tuner.samplers import line_cache, make_sampler
from tuner.samplers.line_cache import TRIAL_MISSES, LineCache

optuna.logging.set_verbosity(optuna.logging.WARNING)

GRID = np.linspace(0.0, 1.0, 21)


class Counted:
    """An acquisition on candidates (rows): a smooth function, recording each call's shape."""

    def __init__(self) -> None:
        self.shapes: list[tuple[int, ...]] = []

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        self.shapes.append(tuple(x.shape))
        return torch.sin(3 * x[..., 0]) + x[..., 1] ** 2 - x[..., 2]


def test_one_candidate_scores_its_line_and_later_ones_on_it_are_answered_from_it() -> None:
    acqf = Counted()
    cached = LineCache(acqf, [(1, GRID)])
    x = torch.tensor([0.3, GRID[4], 0.7], dtype=torch.float64)
    with torch.no_grad():
        first = cached(x)
        along = [cached(torch.tensor([0.3, g, 0.7], dtype=torch.float64)) for g in GRID]
    assert acqf.shapes == [(1 + len(GRID), 3)]  # the candidate and its line, in one batch
    assert (cached.hits, cached.misses) == (len(GRID), 1)
    assert float(first) == pytest.approx(float(Counted()(x)), abs=1e-15)
    expected = [math.sin(0.9) + g**2 - 0.7 for g in GRID]
    assert [float(v) for v in along] == pytest.approx(expected, abs=1e-12)


def test_batches_and_gradient_calls_pass_straight_through() -> None:
    acqf = Counted()
    cached = LineCache(acqf, [(1, GRID)])
    batch = torch.rand(5, 3, dtype=torch.float64)
    with torch.no_grad():
        cached(batch)
    x = torch.tensor([0.3, 0.2, 0.7], dtype=torch.float64, requires_grad=True)
    cached(x).backward()  # L-BFGS's calls: with a gradient, never from what was kept
    assert acqf.shapes == [(5, 3), (3,)] and x.grad is not None
    assert (cached.hits, cached.misses) == (0, 0)


def test_without_a_line_to_search_it_adds_nothing() -> None:
    acqf = Counted()
    with torch.no_grad():
        LineCache(acqf, [])(torch.tensor([0.1, 0.2, 0.3], dtype=torch.float64))
    assert acqf.shapes == [(3,)]


def test_candidates_off_every_line_stop_it_scoring_lines() -> None:
    """If the optimiser's single calls stop falling on the lines (another Optuna), it scores them
    one by one again instead of adding a line's work to each."""
    acqf = Counted()
    cached = LineCache(acqf, [(1, GRID)])
    rng = np.random.default_rng(0)
    with torch.no_grad():
        for _ in range(TRIAL_MISSES + 3):
            cached(torch.from_numpy(rng.random(3)))
    lines = [s for s in acqf.shapes if s != (3,)]
    assert len(lines) == TRIAL_MISSES and acqf.shapes[TRIAL_MISSES:] == [(3,)] * 3


def _study(n: int) -> optuna.Study:
    """Finished trials over a float and an integer of 121 values (as `mogrifier_rank`)."""
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=1))
    for _ in range(n):
        trial = study.ask()
        x = trial.suggest_float("x", 0.0, 1.0)
        rank = trial.suggest_int("rank", -20, 100)
        study.tell(trial, (x - 0.3) ** 2 + ((rank - 40) / 60) ** 2)
    return study


def _suggestions(monkeypatch, lines: bool) -> tuple[list[dict], list[LineCache]]:
    made: list[LineCache] = []

    class Recorded(LineCache):
        def __init__(self, *args) -> None:
            super().__init__(*args)
            made.append(self)

    monkeypatch.setattr(line_cache, "LineCache", Recorded)
    if not lines:
        monkeypatch.setattr(line_cache, "searched_lines", lambda space: [])
    study = _study(30)
    study.sampler = make_sampler("gp_fidelity", seed=0)
    asked = []
    for _ in range(3):
        trial = study.ask()
        asked.append({"x": trial.suggest_float("x", 0.0, 1.0), "rank": trial.suggest_int("rank", -20, 100)})
        study.tell(trial, (asked[-1]["x"] - 0.3) ** 2 + ((asked[-1]["rank"] - 40) / 60) ** 2)
    return asked, made


def test_optunas_line_search_reads_its_values_from_the_line_and_suggests_the_same(monkeypatch) -> None:
    """Optuna's `_discrete_line_search` (more than 16 integer values) asks one candidate per call
    on the grid `get_choices_of_discrete_params` gives: most calls are answered from a line, and
    the suggestions are those of the optimiser scoring one candidate at a time."""
    with monkeypatch.context() as patched:
        plain, _ = _suggestions(patched, lines=False)
    lined, made = _suggestions(monkeypatch, lines=True)
    assert made and all(cache.hits >= 5 * cache.misses > 0 for cache in made)
    assert [p["rank"] for p in lined] == [p["rank"] for p in plain]
    assert [p["x"] for p in lined] == pytest.approx([p["x"] for p in plain], abs=1e-9)
