"""Gain of a warm start (`prior_trials`): a GP that starts from another study's trials.

Tasks on the thesis Table 2.4 space of `bench/search_efficiency.py` (9 parameters mapped onto a
BBOB function's domain [-5, 5]^9). For seed s the source task is BBOB function f, instance s + 1;
its study is 50 trials of Optuna's multivariate TPE (a cheap stand-in for the old sweep). Targets:

* related: the same function shifted by 0.5 along every coordinate and rescaled, 10·f(x − 0.5) + 100
  (same landscape, optimum moved, another objective scale — PTB vs Wikitext-2 perplexities);
* unrelated (negative-transfer check): the same function of another instance (s + 101), whose
  optimum lies elsewhere and whose rotation differs.

Each target is optimised by the GP with BOHB's rule (the retired `gp_bohb`) with 4 trials in
flight (ask until 4 are pending, tell the oldest), with the source's trials as `prior_trials` or without. Figure: median over seeds of the
normalized regret of the best trial after n trials told, (best f − f_opt)/(f_ref − f_opt), f_ref the
median of 1000 uniform points. `--horizons` compares how long the priors stay in the fit
(tuner.samplers.prior_trials).

    nice -n 10 .venv/bin/python -m bench.warm_start --jobs 2 --results runs/bench/warm.jsonl
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")  # before torch loads: one thread per process

import argparse
import json
import multiprocessing
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import optuna

from bench.search_efficiency import DIM, Problem, ask_tell_in_flight, suggest
from tuner.samplers import BOHBRule, GPSampler

SHIFT, SCALE, OFFSET = 0.5, 10.0, 100.0
SOURCE_TRIALS = 50


class Shifted:
    """scale·f(x − shift) + offset for a BBOB `Problem` f (the related target task)."""

    def __init__(self, problem: Problem) -> None:
        self.problem = problem

    def __call__(self, x: np.ndarray) -> float:
        return SCALE * float(self.problem.fn(np.clip(x - SHIFT, -5.0, 5.0))) + OFFSET

    def regret(self, f: float) -> float:
        return self.problem.regret((f - OFFSET) / SCALE)


class Plain:
    """A BBOB `Problem` as a target task."""

    def __init__(self, problem: Problem) -> None:
        self.problem = problem

    def __call__(self, x: np.ndarray) -> float:
        return float(self.problem.fn(x))

    def regret(self, f: float) -> float:
        return self.problem.regret(f)


def source_trials(function: int, seed: int) -> list[optuna.trial.FrozenTrial]:
    problem = Problem(function, seed + 1, noisy=False)
    study = optuna.create_study(sampler=optuna.samplers.TPESampler(seed=seed, multivariate=True))
    for _ in range(SOURCE_TRIALS):
        trial = study.ask()
        study.tell(trial, float(problem.fn(suggest(trial))))
    return study.get_trials()


def run(job: tuple[int, int, str, str, int, list[int]]) -> dict:
    function, seed, target, prior, horizon, budgets = job
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    if target == "related":
        task: Shifted | Plain = Shifted(Problem(function, seed + 1, noisy=False))
    else:
        task = Plain(Problem(function, seed + 101, noisy=False))
    priors = source_trials(function, seed) if prior == "warm" else None
    sampler = GPSampler(  # BOHB's rule alone: the retired `gp_bohb` these figures were measured with
        fidelity=BOHBRule(),
        seed=seed + 1,
        prior_trials=priors,
        prior_horizon=horizon,
        warn_independent_sampling=False,
    )
    study = optuna.create_study(sampler=sampler)
    values = ask_tell_in_flight(study, max(budgets), 4, suggest, lambda x: (value := task(x), value))
    best = np.minimum.accumulate(values)
    return {
        "function": function,
        "seed": seed,
        "target": target,
        "prior": prior,
        "horizon": horizon,
        "regret": {str(b): task.regret(float(best[b - 1])) for b in budgets},
    }


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--functions", type=lambda s: [int(v) for v in s.split(",")], default=[8, 10])
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--budgets", type=lambda s: sorted(int(v) for v in s.split(",")), default=[5, 10, 20, 30])
    p.add_argument("--horizons", type=lambda s: [int(v) for v in s.split(",")], default=[30])
    p.add_argument("--targets", type=lambda s: s.split(","), default=["related", "unrelated"])
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--results", type=Path, help="JSON-lines file: runs found there are reused")
    args = p.parse_args(argv)
    done = {}
    if args.results and args.results.exists():
        for line in args.results.read_text().splitlines():
            r = json.loads(line)
            done[(r["function"], r["seed"], r["target"], r["prior"], r["horizon"])] = r
    records, jobs = [], []
    for s in range(args.seeds):
        for f in args.functions:
            for target in args.targets:
                variants = [("cold", 0)] + [("warm", h) for h in args.horizons]
                for prior, h in variants:
                    r = done.get((f, s, target, prior, h))
                    if r is not None and all(str(b) in r["regret"] for b in args.budgets):
                        records.append(r)
                    else:
                        jobs.append((f, s, target, prior, h, args.budgets))
    print(f"{len(records)} runs reused, {len(jobs)} to run", file=sys.stderr)
    out = args.results.open("a") if args.results else None
    if args.results:
        args.results.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    pool = multiprocessing.Pool(args.jobs) if args.jobs > 1 else None
    results = pool.imap_unordered(run, jobs) if pool else map(run, jobs)
    for i, r in enumerate(results, 1):
        records.append(r)
        if out:
            out.write(json.dumps(r) + "\n")
            out.flush()
        print(f"\r{i}/{len(jobs)} runs, {time.time() - t0:.0f} s", end="", file=sys.stderr)
    if pool:
        pool.close()
    print(file=sys.stderr)
    report(records, args)


def report(records: list[dict], args: argparse.Namespace) -> None:
    by = defaultdict(list)
    for r in records:
        if r["function"] in args.functions and r["seed"] < args.seeds:
            for b, reg in r["regret"].items():
                by[(r["function"], r["target"], r["prior"], r["horizon"], int(b))].append(reg)
    print(f"# median normalized regret after n trials, gp_bohb, 4 in flight, {DIM}-D Table 2.4 space")
    print(f"# source: {SOURCE_TRIALS} TPE trials on f (instance s+1); cold = no prior trials")
    head = " ".join(f"{f'n={b}':>9}" for b in args.budgets)
    print(f"{'function':<9} {'target':<10} {'start':<18} {'seeds':>5} {head}")
    for f in args.functions:
        for target in args.targets:
            for prior, h in [("cold", 0)] + [("warm", h) for h in args.horizons]:
                cells = [by[(f, target, prior, h, b)] for b in args.budgets]
                label = "cold" if prior == "cold" else f"warm (horizon {h})"
                row = " ".join(f"{statistics.median(c):9.2e}" if c else f"{'-':>9}" for c in cells)
                print(f"f{f:<8} {target:<10} {label:<18} {len(cells[0]):>5} {row}")


if __name__ == "__main__":
    main()
