"""The default sampler's time per suggestion as a study grows: one objective, two, two under a
constraint, and three, at 100 to 5,000 finished trials, with trials in flight (docs/samplers.md).

Each study holds `n` COMPLETE trials of the `tiny` space (9 parameters, two conditional) at random points with synthetic
values (objective 1: a smooth loss of the params; objective 2: a size that grows as the loss
falls and with `input_embedding_ratio`, so the two conflict and the front is not one point; the
constraint `size <= 0.6`; objective 3, for `three`: a step time that grows with the size and the
Mogrifier rounds), and `--pending` RUNNING trials (a sweep's trials in flight). One
suggestion is `study.ask()` plus the space's define-by-run suggestions; the median of
`--suggestions` is printed, wall clock and this process's CPU time, side by side for every study
size and kind in one run, with the torch threads the sweep driver samples with.

Usage: .venv/bin/python -m bench.suggestion_time [--history 100,300,1000,2000,5000]
       [--kinds one,two,two_constrained,three] [--pending 4] [--suggestions 3]
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from typing import Any

import optuna
import torch

from tuner.samplers import default_sampler, make_sampler
from tuner.space import SearchSpace, load_space
from tuner.sweeps.drive.plan import DRIVER_TORCH_THREADS

KINDS = ("one", "two", "two_constrained", "three")
OBJECTIVES = {"one": 1, "two": 2, "two_constrained": 2, "three": 3}
METRICS = ["val_loss", "num_params", "step_time"]
SPACE = "tiny"


def loss(params: dict[str, Any]) -> float:
    """A smooth synthetic validation loss of the numeric params (minimum inside the space)."""
    numeric = [float(v) for v in params.values() if isinstance(v, (int, float)) and not isinstance(v, bool)]
    return 4.0 + sum(math.sin(1.7 * i + math.log1p(abs(v))) ** 2 for i, v in enumerate(numeric)) / 4


def size(params: dict[str, Any], value: float) -> float:
    """A second objective that conflicts with `loss`: larger where the loss is smaller."""
    return 1.0 / (1.0 + value - 4.0) + 0.05 * float(params.get("input_embedding_ratio", 0.0))


def step_time(params: dict[str, Any], size_value: float) -> float:
    """A third objective: seconds per step, growing with the size and the Mogrifier rounds."""
    return 0.1 + size_value + 0.02 * float(params.get("mogrifier_rounds", 0) or 0)


def history(space: SearchSpace, kind: str, n: int) -> optuna.Study:
    """An in-memory study of `kind` holding `n` COMPLETE trials at random points."""
    count = OBJECTIVES[kind]
    study = optuna.create_study(directions=["minimize"] * count)
    if count > 1:
        study.set_metric_names(METRICS[:count])
    scratch = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=n))
    trials = []
    for _ in range(n):
        t = scratch.ask()
        params = space.suggest(t)
        value = loss(params)
        values = [value, size(params, value)][:count]
        if count == 3:
            values.append(step_time(params, values[1]))
        trial = optuna.trial.create_trial(params=params, distributions=t.distributions, values=values)
        if kind == "two_constrained":
            trial.set_constraint("size", values[1] - 0.6)
        trials.append(trial)
        scratch.tell(t, 0.0)
    study.add_trials(trials)
    return study


def time_suggestions(
    space: SearchSpace, study: optuna.Study, pending: int, suggestions: int
) -> tuple[float, float]:
    """Median wall and CPU seconds of one suggestion with `pending` trials RUNNING."""
    study.sampler = optuna.samplers.RandomSampler(seed=0)
    for _ in range(pending):
        space.suggest(study.ask())
    study.sampler = make_sampler(default_sampler(len(study.directions)), seed=0)
    wall, cpu = [], []
    for _ in range(suggestions):
        t0, c0 = time.perf_counter(), time.process_time()
        space.suggest(study.ask())
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return statistics.median(wall), statistics.median(cpu)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--history", default="100,300,1000,2000,5000")
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--pending", type=int, default=4)
    parser.add_argument("--suggestions", type=int, default=3)
    args = parser.parse_args(argv)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    torch.set_num_threads(DRIVER_TORCH_THREADS)  # as the sweep driver samples (tuner.sweeps.drive.plan)
    space = load_space(SPACE)
    sizes = [int(n) for n in args.history.split(",")]
    kinds = [k for k in args.kinds.split(",") if k]
    rows: dict[str, list[str]] = {}
    for kind in kinds:
        rows[kind] = []
        for n in sizes:
            wall, cpu = time_suggestions(space, history(space, kind, n), args.pending, args.suggestions)
            rows[kind].append(f"{wall:6.2f} ({cpu:5.2f})")
            print(f"{kind} n={n}: {wall:.2f} s wall, {cpu:.2f} s CPU", flush=True)
    print(
        f"\nseconds per suggestion, wall (CPU), {args.pending} in flight, median of {args.suggestions}, "
        f"{DRIVER_TORCH_THREADS} torch thread(s) as the sweep driver"
    )
    print("| study | " + " | ".join(f"{n} trials" for n in sizes) + " |")
    print("|---|" + "---|" * len(sizes))
    for kind, cells in rows.items():
        print(f"| {kind} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
