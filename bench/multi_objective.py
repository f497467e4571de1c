"""Multi-objective search: hypervolume of each sampler at equal trials, several trials in flight.

Problems (all minimised):

* ``tiny``: the `tiny` space's real learning curves and step costs. Objective 1 is the final 2TA
  validation loss of the surrogate `bench.multifidelity` builds from `bench/data/tiny_curves.json.gz`
  (kernel regression over the recorded curves, plus the measured seed noise); objective 2 the
  training seconds per step of the cost model `bench.cost_aware` builds from
  `bench/data/tiny_step_costs.json` (with a 5% log-normal measurement noise). Loss against speed:
  the Mogrifier's rounds and rank buy loss with time.
* ``zdt1``: ZDT1 in 6 dimensions (Zitzler, Deb & Thiele 2000), a convex front.
* ``dtlz2``: DTLZ2 with 3 objectives in 6 dimensions (Deb et al. 2002), a spherical front.

For each sampler, problem and seed, one ask/tell run of max(budgets) trials keeps K trials pending
(ask until K are pending, tell the oldest), as `bench.search_efficiency` does; the first B trials
told are those of a run with budget B. The figure is the hypervolume of the noise-free objective
values of the first B trials told, each objective normalised between the best value of 2000
uniform points and those points' 90% quantile (the reference point, 1 after normalisation). Mean
rank: the samplers ranked by hypervolume in each problem × seed (1 is best, ties averaged), then
averaged.

With --early-stopping, `tiny` is replayed as a sweep under the default early stopping instead
(`run_early_stopping`): its learning curves, MO-ASHA pruning a trial only where it is dominated,
throughput as the second objective as a sweep records it, and budgets in full trials' worth of
training steps, so a sampler that learns from early-stopped trials can show it.

    nice -n 10 .venv/bin/python -m bench.multi_objective --jobs 2 --results runs/bench/mo.jsonl
    nice -n 10 .venv/bin/python -m bench.multi_objective --early-stopping --seeds 40 --jobs 2 \
        --results runs/bench/mo_es.jsonl
    .venv/bin/python -m bench.multi_objective --quick            # ~15 s smoke run
    .venv/bin/python -m bench.multi_objective --results runs/bench/mo.jsonl --report-only
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")  # before torch loads: one thread per process

import argparse
import functools
import json
import multiprocessing
import sys
import time
import warnings
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import optuna
from scipy.stats import rankdata

from tuner.objectives.goals import Goals
from tuner.objectives.pareto import hypervolume
from tuner.policies.early_stopping import EarlyStopping
from tuner.policies.pareto_rungs import ParetoASHA
from tuner.samplers import make_sampler
from tuner.samplers.tpe import TPESampler
from tuner.storage import study_attrs
from tuner.sweeps.drive.writer import report as report_value

DIM = 6
N_REFERENCE = 2000
COST_NOISE = 0.05  # sd of the log of a measured step cost around its configuration's
REFERENCE_QUANTILE = 0.9

# Optuna's multi-objective TPE with its default options (`TPESampler()`: MOTPE, independent),
# beside rnntune's `tpe` (multivariate, grouped, constant liar). Both are `tuner.samplers.tpe`'s,
# Optuna's own except that early-stopped trials with curves do not make it raise.
STOCK: dict[str, Callable[[int], optuna.samplers.BaseSampler]] = {
    "stock_tpe": lambda s: TPESampler(seed=s),
}
SAMPLERS = ("gp_fidelity", "gp", "tpe", "stock_tpe", "nsga2", "random")
FULL = dict(problems=["tiny", "zdt1", "dtlz2"], seeds=10, in_flight=4, budgets=[30, 50])
QUICK = dict(problems=["zdt1"], seeds=2, in_flight=4, budgets=[20])
# Under early stopping (--early-stopping): the `tiny` learning curves, the study's goals as a sweep
# spells them (throughput is the measure a trial records; its inverse is the seconds per step).
EARLY_STOPPING_GOALS = Goals.parse(["val_loss", "tokens_per_s"])


class Problem:
    """A problem: `suggest` draws a point through an Optuna trial, `evaluate` gives its (observed,
    noise-free) objective vectors; `ideal` and `nadir` normalise them."""

    n_objectives = 2

    def __init__(self) -> None:
        rng = np.random.default_rng(0)
        values = np.array([self.true(self.random_point(rng)) for _ in range(N_REFERENCE)])
        self.ideal = values.min(axis=0)
        self.nadir = np.quantile(values, REFERENCE_QUANTILE, axis=0)

    def suggest(self, trial: optuna.Trial) -> Any:
        return np.array([trial.suggest_float(f"x{i}", 0.0, 1.0) for i in range(DIM)])

    def random_point(self, rng: np.random.Generator) -> Any:
        return rng.random(DIM)

    def true(self, x: Any) -> np.ndarray:
        raise NotImplementedError

    def evaluate(self, x: Any, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        f = self.true(x)
        return f, f

    def hypervolume(self, values: np.ndarray) -> float:
        normalised = (values - self.ideal) / (self.nadir - self.ideal)
        return hypervolume(normalised, np.ones(self.n_objectives))


class ZDT1(Problem):
    def true(self, x: Any) -> np.ndarray:
        g = 1.0 + 9.0 * float(np.mean(x[1:]))
        return np.array([x[0], g * (1.0 - np.sqrt(x[0] / g))])


class DTLZ2(Problem):
    n_objectives = 3

    def true(self, x: Any) -> np.ndarray:
        g = float(np.sum((x[2:] - 0.5) ** 2))
        a, b = x[0] * np.pi / 2, x[1] * np.pi / 2
        return (1.0 + g) * np.array([np.cos(a) * np.cos(b), np.cos(a) * np.sin(b), np.sin(a)])


class Tiny(Problem):
    """Final validation loss against training seconds per step on the `tiny` space (module doc)."""

    def __init__(self) -> None:
        from bench.cost_aware import COSTS, cost_model
        from bench.multifidelity import DATA, surrogate

        self.sur = surrogate(str(DATA))
        self.costs = cost_model(str(COSTS), str(DATA))
        super().__init__()

    def suggest(self, trial: optuna.Trial) -> Any:
        return self.sur.space.suggest(trial)

    def random_point(self, rng: np.random.Generator) -> Any:
        return self.sur._random_params(rng)

    def true(self, x: Any) -> np.ndarray:
        return np.array([self.sur.final(x), self.costs.seconds_per_step(x)[1]])

    def evaluate(self, x: Any, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        f = self.true(x)
        observed = f * np.array([1.0, np.exp(COST_NOISE * rng.standard_normal())])
        observed[0] += float(self.sur.sigma[-1]) * rng.standard_normal()
        return observed, f


PROBLEMS: dict[str, Callable[[], Problem]] = {"tiny": Tiny, "zdt1": ZDT1, "dtlz2": DTLZ2}


@functools.cache
def problem(name: str) -> Problem:
    return PROBLEMS[name]()


def make(sampler: str, seed: int) -> optuna.samplers.BaseSampler:
    if sampler in STOCK:
        return STOCK[sampler](seed)
    with warnings.catch_warnings():  # NSGA-II's and TPE's experimental options, chosen on purpose
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        return make_sampler(sampler, seed=seed)


def run(job: tuple[str, str, int, int, list[int]]) -> dict[str, Any]:
    """One ask/tell run with `k` pending; the hypervolume at each budget and the CPU seconds."""
    sampler, name, seed, k, budgets = job
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    prob = problem(name)
    rng = np.random.default_rng(10_000 + seed)
    study = optuna.create_study(directions=["minimize"] * prob.n_objectives, sampler=make(sampler, seed + 1))
    pending: list[tuple[optuna.Trial, Any]] = []
    told: list[np.ndarray] = []
    c0 = time.process_time()
    while len(told) < max(budgets):
        while len(pending) < k and len(told) + len(pending) < max(budgets):
            trial = study.ask()
            pending.append((trial, prob.suggest(trial)))
        trial, x = pending.pop(0)
        observed, true = prob.evaluate(x, rng)
        study.tell(trial, [float(v) for v in observed])
        told.append(true)
    values = np.array(told)
    return {
        "sampler": sampler,
        "problem": name,
        "seed": seed,
        "k": k,
        "hv": {str(b): prob.hypervolume(values[:b]) for b in budgets},
        "cpu_s": time.process_time() - c0,
    }


class _Trial:
    """An Optuna trial of a study with several objectives as `bench.multifidelity.replay` drives
    one: `report` stores the curve as a sweep does (`tuner.sweeps.drive.writer.report`), and the
    measure set as a user attr is kept for the tell."""

    def __init__(self, trial: optuna.Trial) -> None:
        self.trial = trial
        self.measured: float | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.trial, name)

    def report(self, value: float, step: int) -> None:
        report_value(self.trial, value, step)

    def set_user_attr(self, key: str, value: Any) -> None:
        self.measured = value
        self.trial.set_user_attr(key, value)


class _SeveralObjectives:
    """A study with the objectives (loss, throughput) as `replay` drives a one-objective study: a
    COMPLETE trial is told its best loss and its recorded throughput, and the noise-free objectives
    of each COMPLETE trial are kept, in the order told."""

    def __init__(self, study: optuna.Study, prob: Problem) -> None:
        self.study, self.prob = study, prob
        self.true: list[np.ndarray] = []

    def ask(self) -> _Trial:
        return _Trial(self.study.ask())

    def tell(self, trial: _Trial, value: float | None = None, state: Any = None) -> None:
        if state is not None:
            self.study.tell(trial.trial, state=state)
            return
        assert value is not None and trial.measured is not None, "replay tells a value or a state"
        self.study.tell(trial.trial, [value, trial.measured])
        self.true.append(self.prob.true(trial.trial.params))


def run_early_stopping(job: tuple[str, str, int, int, list[int]]) -> dict[str, Any]:
    """One asynchronous sweep of the `tiny` learning curves under the default early stopping for
    several objectives (MO-ASHA, `tuner.policies.pareto_rungs`, on the default policy resolved for
    a budget of max(budgets) full trials), `k` workers, replayed by `bench.multifidelity.replay`
    (one step per time unit).

    Each trial's observed curve is the surrogate's plus seed noise; its throughput, recorded after
    its first evaluation as a sweep records the trainer's, is the tokens of a step over the cost
    model's seconds per step with the 5% measurement noise. Curves are stored and trials told
    PRUNED or COMPLETE (best loss, throughput) as `tuner.sweeps.drive` does. The figure at budget B
    is the hypervolume of the noise-free (final loss, seconds per step) of the trials COMPLETE
    within B full trials' worth of steps, normalised as the `tiny` problem's."""
    from bench.multifidelity import replay

    sampler, name, seed, k, budgets = job
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    prob = problem(name)
    assert isinstance(prob, Tiny), "the early-stopping replay runs on the tiny learning curves"
    sur, goals = prob.sur, EARLY_STOPPING_GOALS
    every, max_steps = int(sur.fixed["eval_every"]), int(sur.fixed["max_steps"])
    tokens = float(sur.fixed["batch_size"]) * float(sur.fixed["bptt"])
    policy = EarlyStopping().resolved(max_steps, every, None, max(budgets))
    rng = np.random.default_rng(10_000 + seed)
    study = optuna.create_study(directions=goals.directions, sampler=make(sampler, seed + 1))
    with warnings.catch_warnings():  # Optuna calls set_metric_names experimental; a sweep uses it
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        study.set_metric_names(goals.names)
    study.set_user_attr("task", dict(sur.fixed))  # what tuner.storage.study.create_study stores
    study.set_user_attr(study_attrs.EARLY_STOPPING, policy.model_dump())
    scheduler = ParetoASHA.from_policy(
        [(o.name, o.direction) for o in goals.objectives], policy, max_steps, every, seed=seed
    )

    def throughput(params: dict[str, Any]) -> tuple[float, float]:
        noise = np.exp(COST_NOISE * rng.standard_normal())
        return 1.0, tokens / (prob.costs.seconds_per_step(params)[1] * noise)

    driven = _SeveralObjectives(study, prob)
    c0 = time.process_time()
    done = replay(
        driven,
        sur,
        scheduler,
        rng,
        k,
        lambda used, _: used < max(budgets) * max_steps,
        step_cost=throughput,
        cost_attr=goals.names[1],
    )
    finished = [(used, true) for (used, *_), true in zip(done.finished, driven.true, strict=True)]
    hv = {}
    for b in budgets:
        within = [v for u, v in finished if u <= b * max_steps]
        hv[str(b)] = prob.hypervolume(np.array(within)) if within else 0.0
    return {
        "sampler": sampler,
        "problem": name,
        "seed": seed,
        "k": k,
        "early_stopping": True,
        "hv": hv,
        "started": len(done.started),
        "complete": len(finished),
        "cpu_s": time.process_time() - c0,
    }


def report(
    records: list[dict[str, Any]], samplers: list[str], problems: list[str], budgets: list[int]
) -> None:
    """Mean hypervolume per problem and budget, and mean rank over problems × seeds."""
    hv: dict[tuple[str, str, int, int], float] = {}
    for r in records:
        for b, v in r["hv"].items():
            hv[(r["sampler"], r["problem"], r["seed"], int(b))] = v
    seeds = sorted({r["seed"] for r in records})
    width = max(len(s) for s in samplers)
    for b in budgets:
        print(f"\n## {b} trials, {records[0]['k'] if records else '-'} in flight, {len(seeds)} seeds")
        print(f"{'sampler':<{width}} " + " ".join(f"{p + ' HV':>10}" for p in problems) + "  mean rank")
        ranks: dict[str, list[float]] = defaultdict(list)
        for p in problems:
            for s in seeds:
                cells = [hv.get((o, p, s, b)) for o in samplers]
                if any(c is None for c in cells):
                    continue
                for o, rank in zip(samplers, rankdata([-float(c) for c in cells if c is not None])):
                    ranks[o].append(float(rank))
        for o in samplers:
            means = [
                np.mean([hv[k] for k in hv if k[0] == o and k[1] == p and k[3] == b] or [np.nan])
                for p in problems
            ]
            row = " ".join(f"{m:10.4f}" for m in means)
            print(f"{o:<{width}} {row}  {np.mean(ranks[o]) if ranks[o] else float('nan'):9.2f}")
    cpu: dict[str, list[float]] = defaultdict(list)
    for r in records:
        cpu[r["sampler"]].append(r["cpu_s"])
    print("\n## CPU seconds per run (mean)")
    for o in samplers:
        print(f"{o:<{width}} {np.mean(cpu[o]) if cpu[o] else float('nan'):8.1f}")
    replayed = [r for r in records if r.get("early_stopping")]
    if replayed:
        print("\n## Trials per run under early stopping (mean): started, COMPLETE")
        for o in samplers:
            own = [r for r in replayed if r["sampler"] == o]
            if own:
                started, complete = (
                    np.mean([r["started"] for r in own]),
                    np.mean([r["complete"] for r in own]),
                )
                print(f"{o:<{width}} {started:8.1f} {complete:8.1f}")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="one problem, 2 seeds, 20 trials (~15 s)")
    p.add_argument("--problems", type=lambda s: s.split(","))
    p.add_argument("--seeds", type=int)
    p.add_argument("--in-flight", type=int)
    p.add_argument("--budgets", type=lambda s: sorted(int(v) for v in s.split(",")))
    p.add_argument("--samplers", type=lambda s: s.split(","), default=list(SAMPLERS))
    p.add_argument("--jobs", type=int, default=1, help="worker processes (the machine has 2 cores)")
    p.add_argument(
        "--results", type=Path, help="JSON-lines file: runs found there are reused, new ones appended"
    )
    p.add_argument("--report-only", action="store_true", help="print the tables from --results only")
    p.add_argument(
        "--early-stopping",
        action="store_true",
        help="replay the tiny learning curves under the default early stopping (MO-ASHA); "
        "budgets in full trials' worth of steps",
    )
    args = p.parse_args(argv)
    base = QUICK if args.quick else FULL
    if args.early_stopping:
        base = {**base, "problems": ["tiny"]}
    cfg = {**base, **{k: v for k, v in vars(args).items() if k in FULL and v is not None}}
    unknown = [s for s in cfg["problems"] if s not in PROBLEMS]
    if unknown:
        p.error(f"unknown problems {unknown}; choose from {sorted(PROBLEMS)}")
    if args.early_stopping and cfg["problems"] != ["tiny"]:
        p.error("--early-stopping replays learning curves: only --problems tiny has them")
    done: dict[tuple[str, str, int, int, bool], dict[str, Any]] = {}
    if args.results and args.results.exists():
        for line in args.results.read_text().splitlines():
            r = json.loads(line)
            done[(r["sampler"], r["problem"], r["seed"], r["k"], bool(r.get("early_stopping")))] = r
    jobs, records = [], []
    for s in range(cfg["seeds"]):
        for prob in cfg["problems"]:
            for o in args.samplers:
                r = done.get((o, prob, s, cfg["in_flight"], args.early_stopping))
                if r is not None and all(str(b) in r["hv"] for b in cfg["budgets"]):
                    records.append(r)
                elif not args.report_only:
                    jobs.append((o, prob, s, cfg["in_flight"], cfg["budgets"]))
    print(f"{len(records)} runs reused, {len(jobs)} to run", file=sys.stderr)
    out = None
    if args.results:
        args.results.parent.mkdir(parents=True, exist_ok=True)
        out = args.results.open("a")
    t0 = time.time()
    with multiprocessing.Pool(args.jobs) as pool:
        work = run_early_stopping if args.early_stopping else run
        for i, r in enumerate(pool.imap_unordered(work, jobs), 1):
            records.append(r)
            if out:
                out.write(json.dumps(r) + "\n")
                out.flush()
            print(f"\r{i}/{len(jobs)} runs, {time.time() - t0:.0f} s", end="", file=sys.stderr)
    print(file=sys.stderr)
    report(records, args.samplers, cfg["problems"], cfg["budgets"])


if __name__ == "__main__":
    main()
