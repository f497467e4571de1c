"""A bound known before training: how often each sampler proposes a setting past it.

The task: the `tiny` space's real learning curves (the surrogate `bench.multifidelity` builds from
`bench/data/tiny_curves.json.gz`, its final 2TA validation loss plus the measured seed noise)
under the bound `num_params<=BOUND`, each setting's size computed by the trainer as a sweep does
(its model built on PyTorch's meta device; the corpus read once). Larger models reach lower losses
here, so the unconstrained optimum presses against the bound.

For each sampler, seed and arm, one sequential ask/tell run of `--trials` settings on an in-memory
study. A setting past the bound is either **told** the way a sweep tells it
(`StudyWriter.refuse`: COMPLETE, its constraint value, the loss +inf; docs/sweeps.md) or told
**fail** (what sweeps did before: FAIL, which no Optuna sampler reads); the others COMPLETE with
their constraint value. Printed per sampler and arm, over the seeds: the share of suggestions past
the bound after the sampler's random start (mean and standard deviation) and over the whole run,
and the best feasible true loss found. Samplers: rnntune's default `gp_fidelity`, and Optuna's own
`TPESampler` and `GPSampler` with their default options, given the same constraint.

    nice -n 10 .venv/bin/python -m bench.bounded --jobs 2          # 10 seeds, ~10 minutes
    .venv/bin/python -m bench.bounded --quick                     # 1 seed, tpe only, a smoke run
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")  # before torch loads: one thread per process

import argparse
import functools
import multiprocessing
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import optuna
from optuna.trial import TrialState

from tuner.objectives.goals import Goals
from tuner.samplers import make_sampler
from tuner.sweeps.drive.writer import StudyWriter

BOUND = 60000  # weights: about half of the tiny space's settings lie past it
STARTUP = 10  # the random start of every sampler compared (Optuna's TPE and GP default)
SAMPLERS: dict[str, Callable[[int], optuna.samplers.BaseSampler]] = {
    "gp_fidelity": lambda s: make_sampler("gp_fidelity", seed=s, n_startup_trials=STARTUP),
    "optuna_tpe": lambda s: optuna.samplers.TPESampler(seed=s, n_startup_trials=STARTUP),
    "optuna_gp": lambda s: optuna.samplers.GPSampler(seed=s, n_startup_trials=STARTUP),
}
ARMS = ("told", "fail")


class Task:
    """The tiny surrogate's losses and the trainer's model sizes (module doc)."""

    def __init__(self) -> None:
        from bench.multifidelity import DATA, surrogate
        from trainer import make_config
        from trainer.data import load_corpus

        self.sur = surrogate(str(DATA))
        self.vocab = load_corpus(make_config(self.config({}))).vocab_size

    def config(self, params: dict[str, Any]) -> dict[str, Any]:
        return self.sur.space.trial_config(params, "/nonexistent/bench-bounded")

    def size(self, params: dict[str, Any]) -> float:
        import torch

        from trainer import make_config
        from trainer.model import count_parameters, make_model, solve_hidden_size

        cfg = make_config(self.config(params))
        with torch.device("meta"):
            return float(count_parameters(make_model(cfg, self.vocab, solve_hidden_size(cfg, self.vocab))))


@functools.cache
def task() -> Task:
    return Task()


def run(job: tuple[str, str, int, int, int]) -> dict[str, Any]:
    """One run: whether each suggestion broke the bound, and the best feasible true loss."""
    sampler, arm, seed, trials, bound = job
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    warnings.simplefilter("ignore")
    goals = Goals.parse(["val_loss"], [f"num_params<={bound}"])
    the = task()
    rng = np.random.default_rng(seed)
    study = optuna.create_study(sampler=SAMPLERS[sampler](seed))
    writer = StudyWriter(study, goals=goals)
    broke, best = [], np.inf
    for _ in range(trials):
        trial = study.ask()
        params = the.sur.space.suggest(trial)
        measures = {"num_params": the.size(params)}
        reasons = goals.violated_before_training(measures)
        broke.append(bool(reasons))
        if reasons and arm == "told":
            writer.refuse(trial, measures, "; ".join(reasons))
            continue
        if reasons:
            study.tell(trial, state=TrialState.FAIL)
            continue
        true = the.sur.final(params)
        for key, excess in goals.excesses(measures).items():
            trial.set_constraint(key, excess)
        study.tell(trial, true + float(the.sur.sigma[-1]) * rng.standard_normal())
        best = min(best, true)
    return {"sampler": sampler, "arm": arm, "seed": seed, "broke": broke, "best": best}


def report(rows: list[dict[str, Any]], trials: int, bound: int) -> None:
    seeds = len({r["seed"] for r in rows})
    print(
        f"tiny surrogate under num_params<={bound}: {trials} sequential trials, {seeds} seeds; "
        f"share of suggestions past the bound after the {STARTUP}-trial random start (mean ± sd over "
        "seeds) and over the whole run; best feasible true val_loss (mean over seeds)"
    )
    print(
        f"{'sampler':<12} {'arm':<5} {'past bound after start':>24} {'whole run':>10} {'best feasible':>14}"
    )
    for sampler in SAMPLERS:
        for arm in ARMS:
            mine = [r for r in rows if r["sampler"] == sampler and r["arm"] == arm]
            if not mine:
                continue
            after = np.array([np.mean(r["broke"][STARTUP:]) for r in mine])
            whole = np.array([np.mean(r["broke"]) for r in mine])
            best = np.array([r["best"] for r in mine])
            print(
                f"{sampler:<12} {arm:<5} {after.mean():>15.3f} ± {after.std(ddof=1) if len(after) > 1 else 0:.3f}"
                f" {whole.mean():>10.3f} {best[np.isfinite(best)].mean():>14.4f}"
            )


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--trials", type=int, default=30)
    p.add_argument("--bound", type=int, default=BOUND)
    p.add_argument("--samplers", default=",".join(SAMPLERS))
    p.add_argument("--arms", default=",".join(ARMS))
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--quick", action="store_true", help="1 seed, optuna_tpe only, 20 trials")
    args = p.parse_args(argv)
    if args.quick:
        args.seeds, args.samplers, args.trials = 1, "optuna_tpe", 20
    jobs = [
        (s, a, seed, args.trials, args.bound)
        for s in args.samplers.split(",")
        for a in args.arms.split(",")
        for seed in range(args.seeds)
    ]
    if args.jobs > 1:
        with multiprocessing.get_context("spawn").Pool(args.jobs) as pool:
            rows = pool.map(run, jobs, chunksize=1)
    else:
        rows = [run(j) for j in jobs]
    report(rows, args.trials, args.bound)


if __name__ == "__main__":
    main()
