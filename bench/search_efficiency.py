"""Search efficiency of rnntune's samplers against Optuna's stock samplers on COCO/BBOB functions.

Each BBOB function (PyPI `coco-experiment`, `cocoex.BareProblem`, dimension 9) is mapped onto the
thesis Table 2.4 space: every hyperparameter, on its own scale (log, linear or integer), is mapped
linearly onto the function's domain [-5, 5], so a sampler sees the exact distributions a Mogrifier
sweep gives it. Noisy problems use BBOB-noisy's Gaussian noise model f_GN (severe, β = 1): the
observed value is f_opt + (f(x) − f_opt)·exp(β·N(0, 1)); regret is always measured on the noiseless
f(x).

For each optimizer, problem, seed (seed s runs instance s + 1) and number K of trials in flight, one
ask/tell run of max(budgets) trials keeps K trials pending at all times (ask until K are pending,
tell the oldest). The first B trials told are exactly those of a run with budget B, so one run gives
every budget. Figures: median normalized regret over seeds, (best f − f_opt)/(f_ref − f_opt) with
f_ref the median f of 1000 uniform points; mean rank of each optimizer across problems; seconds per
suggestion with 100 completed trials (and K − 1 pending).

    .venv/bin/python -m bench.search_efficiency            # full run (~1.5 h on 2 shared cores)
    .venv/bin/python -m bench.search_efficiency --quick    # ~1 min smoke run
    .venv/bin/python -m bench.search_efficiency --results runs/bench/se.jsonl --jobs 2  # resumable
    .venv/bin/python -m bench.search_efficiency --results runs/bench/se.jsonl --report-only --versus gp

`--versus NAME` adds a head-to-head table: each optimizer against NAME on the same problem and seed
(the same instance and noise draws), the number of runs with a lower and a higher regret, the
geometric mean of the regret ratio and a Wilcoxon signed-rank p on the log ratios. A median over
seeds per problem (the mean rank) counts a problem won by a hair like one won tenfold; the paired
counts show how often and by how much.

`--conditional` makes `mogrifier_rank` conditional, as in the shipped spaces: it is suggested only
when `mogrifier_rounds >= 1`, and the function ignores it otherwise (its coordinate is held at the
middle of the domain). Optuna's GPSampler then draws rank at random (its intersection search space
drops it); rnntune's GPs model it (tuner.samplers.union_space, tuner.samplers.inactive).
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")  # before torch loads: one thread per process

import argparse
import json
import math
import multiprocessing
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import optuna
from scipy.stats import rankdata

from tuner.samplers import DEFAULT_SAMPLER, SAMPLERS, BOHBRule, GPSampler, make_sampler

# Thesis Table 2.4 (docs/contracts.md): name, low, high, scale.
SPACE = [
    ("learning_rate", 0.001, 0.004, "log"),
    ("input_embedding_ratio", 0.0, 2.0, "linear"),
    ("l2_penalty", 5e-6, 1e-3, "log"),
    ("input_dropout", 0.0, 0.9, "linear"),
    ("inter_layer_dropout", 0.0, 0.95, "linear"),
    ("state_dropout", 0.0, 0.8, "linear"),
    ("output_dropout", 0.0, 0.95, "linear"),
    ("mogrifier_rounds", 0, 6, "int"),
    ("mogrifier_rank", -20, 100, "int"),
]
DIM = len(SPACE)
NOISE_BETA = 1.0

# Optimizers: ours by their make_sampler name; Optuna's stock samplers with their defaults.
# rnntune's `gp` and `random` are exactly stock GPSampler and RandomSampler, so they run once.
STOCK: dict[str, Callable[[int], optuna.samplers.BaseSampler]] = {
    "stock_tpe_mv": lambda s: optuna.samplers.TPESampler(seed=s, multivariate=True),
    "stock_tpe_uni": lambda s: optuna.samplers.TPESampler(seed=s, multivariate=False),
    "stock_cmaes": lambda s: optuna.samplers.CmaEsSampler(seed=s),
    "gp": lambda s: optuna.samplers.GPSampler(seed=s),
    "random": lambda s: optuna.samplers.RandomSampler(seed=s),
}
OURS = ("gp_fidelity", "tpe", "qmc")
# Retired names (tuner.samplers.RETIRED_SAMPLERS) as the compositions they were, so the stored
# records and the commands in docs/samplers.md still run.
RETIRED: dict[str, Callable[[int], optuna.samplers.BaseSampler]] = {
    "gp_warped": lambda s: GPSampler(fidelity=None, seed=s, warn_independent_sampling=False),
    "gp_bohb": lambda s: GPSampler(fidelity=BOHBRule(), seed=s, warn_independent_sampling=False),
}
LABELS = {"gp": "gp (= stock GPSampler)", "random": "random (= stock RandomSampler)"}

FULL = dict(
    functions=[1, 8, 10, 15, 21], noisy_functions=[8, 10], seeds=5, in_flight=[1, 4], budgets=[30, 60, 100]
)
QUICK = dict(functions=[1, 8, 15], noisy_functions=[8], seeds=2, in_flight=[4], budgets=[15, 30])


RANK = [name for name, *_ in SPACE].index("mogrifier_rank")


def suggest(trial: optuna.Trial, conditional: bool = False) -> np.ndarray:
    """Suggest the Table 2.4 parameters and map them onto [-5, 5]^9; with `conditional`, rank is
    suggested only when rounds >= 1 (else its coordinate is 0, the middle of the domain)."""
    x = np.empty(DIM)
    for i, (name, low, high, scale) in enumerate(SPACE):
        if conditional and i == RANK and trial.params["mogrifier_rounds"] < 1:
            x[i] = 0.0
            continue
        v: float
        if scale == "int":
            v = trial.suggest_int(name, int(low), int(high))
        else:
            v = trial.suggest_float(name, low, high, log=scale == "log")
        if scale == "log":
            u = (math.log(v) - math.log(low)) / (math.log(high) - math.log(low))
        else:
            u = (v - low) / (high - low)
        x[i] = -5.0 + 10.0 * u
    return x


def random_points(n: int, rng: np.random.Generator) -> np.ndarray:
    """n uniform points of the space (uniform on each parameter's own scale) in [-5, 5]^9."""
    x = rng.uniform(-5.0, 5.0, size=(n, DIM))
    for i, (_, low, high, scale) in enumerate(SPACE):
        if scale == "int":
            x[:, i] = -5.0 + 10.0 * (rng.integers(int(low), int(high) + 1, n) - low) / (high - low)
    return x


class Problem:
    """A BBOB function of the 9-dimensional space, optionally with f_GN noise."""

    def __init__(self, function: int, instance: int, noisy: bool) -> None:
        import cocoex  # the bench extra; imported here so the report runs without it

        self.fn = cocoex.BareProblem("bbob", function, DIM, instance)
        self.f_opt = float(self.fn.best_value())
        ref = [self.fn(x) for x in random_points(1000, np.random.default_rng(instance))]
        self.f_ref = float(np.median(ref))
        self.noisy = noisy

    def __call__(self, x: np.ndarray, rng: np.random.Generator) -> tuple[float, float]:
        """(observed value, noiseless value) at x."""
        f = float(self.fn(x))
        if not self.noisy:
            return f, f
        return self.f_opt + (f - self.f_opt) * math.exp(NOISE_BETA * rng.standard_normal()), f

    def regret(self, f: float) -> float:
        return (f - self.f_opt) / (self.f_ref - self.f_opt)


def ask_tell_in_flight(
    study: optuna.Study,
    n: int,
    k: int,
    propose: Callable[[optuna.Trial], np.ndarray],
    evaluate: Callable[[np.ndarray], tuple[float, float]],
) -> list[float]:
    """Run `n` trials keeping `k` pending (ask until k are pending, tell the oldest); `evaluate`
    gives (observed, true) for a point; returns the true values in the order told."""
    pending: list[tuple[optuna.Trial, np.ndarray]] = []
    true_values: list[float] = []
    asked = 0
    while len(true_values) < n:
        while len(pending) < k and asked < n:
            trial = study.ask()
            pending.append((trial, propose(trial)))
            asked += 1
        trial, x = pending.pop(0)
        observed, true = evaluate(x)
        study.tell(trial, observed)
        true_values.append(true)
    return true_values


def make(optimizer: str, seed: int) -> optuna.samplers.BaseSampler:
    if optimizer in STOCK:
        return STOCK[optimizer](seed)
    return RETIRED[optimizer](seed) if optimizer in RETIRED else make_sampler(optimizer, seed=seed)


def run(job: tuple[str, int, bool, int, int, list[int], bool]) -> dict:
    """One ask/tell run; returns the normalized regret at each budget and the suggestion time."""
    optimizer, function, noisy, seed, k, budgets, conditional = job
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    problem = Problem(function, seed + 1, noisy)
    rng = np.random.default_rng(10_000 + seed)
    study = optuna.create_study(sampler=make(optimizer, seed + 1))
    n = max(budgets)
    true_values = ask_tell_in_flight(
        study, n, k, lambda trial: suggest(trial, conditional), lambda x: problem(x, rng)
    )
    times, cpu_times = [], []
    if n >= 100:  # time per suggestion with n completed, growing to K in flight
        for _ in range(k):
            t0, c0 = time.perf_counter(), time.process_time()
            suggest(study.ask(), conditional)
            times.append(time.perf_counter() - t0)
            cpu_times.append(time.process_time() - c0)
    best = np.minimum.accumulate(true_values)
    return {
        "optimizer": optimizer,
        "function": function,
        "noisy": noisy,
        "seed": seed,
        "k": k,
        **({"conditional": True} if conditional else {}),
        "regret": {str(b): problem.regret(float(best[b - 1])) for b in budgets},
        "suggest_s": statistics.fmean(times) if times else None,
        "suggest_cpu_s": statistics.fmean(cpu_times) if cpu_times else None,
    }


@dataclass(frozen=True)
class HeadToHead:
    """An optimizer's regrets against another's on the same problems and seeds: `runs` pairs,
    `lower` and `higher` regret counts, the geometric mean of the regret ratio and the two-sided
    Wilcoxon signed-rank p of the log ratios (nan below 6 pairs or when all are equal)."""

    runs: int
    lower: int
    higher: int
    ratio: float
    p: float


def head_to_head(own: dict[tuple, float], other: dict[tuple, float]) -> HeadToHead:
    """`own` against `other` ({(problem, seed): regret}) on their common keys; a regret of 0 (the
    optimum found) counts as 1e-12 in the ratio."""
    from scipy.stats import wilcoxon

    keys = sorted(own.keys() & other.keys())
    logs = np.array([math.log(max(own[k], 1e-12) / max(other[k], 1e-12)) for k in keys])
    lower, higher = int((logs < 0).sum()), int((logs > 0).sum())
    ratio = math.exp(float(logs.mean())) if len(logs) else math.nan
    p = float(wilcoxon(logs).pvalue) if len(logs) >= 6 and np.any(logs) else math.nan
    return HeadToHead(len(keys), lower, higher, ratio, p)


def report_versus(
    records: list[dict],
    optimizers: list[str],
    versus: str,
    problems: list[tuple[int, bool]],
    in_flight: list[int],
    budgets: list[int],
) -> None:
    """Print each optimizer against `versus`, run by run (`head_to_head`), overall and per problem."""
    regrets: dict[tuple, dict[tuple, float]] = defaultdict(dict)
    for r in records:
        for b, reg in r["regret"].items():
            regrets[(r["optimizer"], r["k"], int(b))][(r["function"], r["noisy"], r["seed"])] = reg
    width = max(len(LABELS.get(o, o)) for o in optimizers)
    for k in in_flight:
        for b in budgets:
            print(
                f"\n## against {LABELS.get(versus, versus)}, {b} trials, {k} in flight: runs with a "
                "lower/higher regret, geometric mean regret ratio, Wilcoxon p; lower/higher per problem"
            )
            head = " ".join(f"{problem_name(f, nz):>6}" for f, nz in problems)
            print(f"{'optimizer':<{width}} {'lower/higher':>12} {'ratio':>6} {'p':>6}  {head}")
            other = regrets[(versus, k, b)]
            for o in optimizers:
                if o == versus:
                    continue
                own = regrets[(o, k, b)]
                h = head_to_head(own, other)
                cells = []
                for f, nz in problems:
                    one = head_to_head(
                        {key: v for key, v in own.items() if key[:2] == (f, nz)},
                        {key: v for key, v in other.items() if key[:2] == (f, nz)},
                    )
                    cells.append(f"{one.lower:>3}/{one.higher:<2}")
                print(
                    f"{LABELS.get(o, o):<{width}} {f'{h.lower}/{h.higher}':>12} {h.ratio:6.3f} "
                    f"{h.p:6.3f}  " + " ".join(cells)
                )


def problem_name(function: int, noisy: bool) -> str:
    return f"f{function}{'~' if noisy else ''}"


def report(
    records: list[dict],
    optimizers: list[str],
    problems: list[tuple[int, bool]],
    in_flight: list[int],
    budgets: list[int],
) -> None:
    """Print median normalized regret per problem, mean ranks and time per suggestion."""
    by = defaultdict(list)
    for r in records:
        for b, reg in r["regret"].items():
            by[(r["optimizer"], r["function"], r["noisy"], r["k"], int(b))].append(reg)
    width = max(len(LABELS.get(o, o)) for o in optimizers)
    summary: dict[tuple[int, int], dict[str, float]] = {}
    for k in in_flight:
        for b in budgets:
            med = np.array(
                [
                    [statistics.median(by[(o, f, nz, k, b)] or [math.inf]) for f, nz in problems]
                    for o in optimizers
                ]
            )
            ranks = np.array([rankdata(col) for col in med.T]).T  # ties share the average rank
            mean_rank = ranks.mean(axis=1)
            summary[(k, b)] = dict(zip(optimizers, mean_rank))
            seeds = sorted({len(by[(o, f, nz, k, b)]) for o in optimizers for f, nz in problems})
            print(
                f"\n## median normalized regret, {b} trials, {k} in flight (~ = noisy; "
                f"{'-'.join(map(str, sorted({seeds[0], seeds[-1]})))} seeds per cell)"
            )
            head = " ".join(f"{problem_name(f, nz):>9}" for f, nz in problems)
            print(f"{'optimizer':<{width}} {head} {'mean rank':>9}")
            for i, o in enumerate(optimizers):
                row = " ".join(f"{v:9.2e}" for v in med[i])
                print(f"{LABELS.get(o, o):<{width}} {row} {mean_rank[i]:9.2f}")
    print("\n## mean rank across problems (lower is better)")
    cols = [(k, b) for k in in_flight for b in budgets]
    print(f"{'optimizer':<{width}} " + " ".join(f"{f'K={k} n={b}':>10}" for k, b in cols))
    for o in optimizers:
        print(f"{LABELS.get(o, o):<{width}} " + " ".join(f"{summary[c][o]:10.2f}" for c in cols))
    times = defaultdict(list)
    for r in records:
        for clock in ("suggest_s", "suggest_cpu_s"):
            if r.get(clock) is not None:
                times[(r["optimizer"], r["k"], clock)].append(r[clock])
    if times:
        print(
            "\n## seconds per suggestion at 100 completed trials, mean over runs: wall clock "
            "(inflated when other processes share the cores) / CPU time of the process"
        )
        print(f"{'optimizer':<{width}} " + " ".join(f"{f'K={k}':>15}" for k in in_flight))

        def cell(o: str, k: int) -> str:
            wall, cpu = times[(o, k, "suggest_s")], times[(o, k, "suggest_cpu_s")]

            def mean(xs: list[float]) -> str:
                return f"{statistics.fmean(xs):.3f}" if xs else "-"

            return f"{mean(wall):>7}/{mean(cpu):<7}"

        for o in optimizers:
            cells = " ".join(f"{cell(o, k):>15}" for k in in_flight)
            print(f"{LABELS.get(o, o):<{width}} {cells}")
    print(f"\nDEFAULT_SAMPLER = {DEFAULT_SAMPLER!r}")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="small configuration, a few minutes")
    p.add_argument("--functions", type=lambda s: [int(v) for v in s.split(",") if v])
    p.add_argument("--noisy-functions", type=lambda s: [int(v) for v in s.split(",") if v])
    p.add_argument("--seeds", type=int)
    p.add_argument("--in-flight", type=lambda s: [int(v) for v in s.split(",")])
    p.add_argument("--budgets", type=lambda s: sorted(int(v) for v in s.split(",")))
    p.add_argument("--optimizers", type=lambda s: s.split(","), default=list(OURS) + list(STOCK))
    p.add_argument(
        "--conditional",
        action="store_true",
        help="mogrifier_rank only when mogrifier_rounds >= 1 (a conditional parameter)",
    )
    p.add_argument("--jobs", type=int, default=1, help="worker processes (the machine has 2 cores)")
    p.add_argument(
        "--results",
        type=Path,
        help="JSON-lines file: runs found there are reused, new runs appended (resume or extend a benchmark)",
    )
    p.add_argument(
        "--versus",
        metavar="OPTIMIZER",
        help="also compare every optimizer with this one run by run (same problem and seed)",
    )
    p.add_argument(
        "--report-only",
        action="store_true",
        help="print the tables from the runs in --results without running the rest",
    )
    args = p.parse_args(argv)
    if args.report_only and not args.results:
        p.error("--report-only needs --results")
    if args.versus and args.versus not in args.optimizers:
        p.error(f"--versus {args.versus} is not among --optimizers {args.optimizers}")
    cfg = {
        **(QUICK if args.quick else FULL),
        **{k: v for k, v in vars(args).items() if k in FULL and v is not None},
    }
    problems = [(f, False) for f in cfg["functions"]] + [(f, True) for f in cfg["noisy_functions"]]
    unknown = [o for o in args.optimizers if o not in STOCK and o not in SAMPLERS and o not in RETIRED]
    if unknown:
        p.error(f"unknown optimizers {unknown}; choose from {sorted(set(SAMPLERS) | set(STOCK))}")

    done: dict[tuple, dict] = {}
    if args.results and args.results.exists():
        for line in args.results.read_text().splitlines():
            r = json.loads(line)
            if r.get("conditional", False) == args.conditional:
                done[(r["optimizer"], r["function"], r["noisy"], r["seed"], r["k"])] = r
    jobs, records = [], []
    for s in range(cfg["seeds"]):  # seed-major, so a partial --results file covers every optimizer
        for f, nz in problems:
            for k in cfg["in_flight"]:
                for o in args.optimizers:
                    r = done.get((o, f, nz, s, k))
                    if r is not None and all(str(b) in r["regret"] for b in cfg["budgets"]):
                        records.append(r)
                    else:
                        jobs.append((o, f, nz, s, k, cfg["budgets"], args.conditional))
    if args.report_only:
        jobs = []
    print(f"{len(records)} runs reused, {len(jobs)} to run", file=sys.stderr)
    out = None
    if args.results:
        args.results.parent.mkdir(parents=True, exist_ok=True)
        out = args.results.open("a")
    t0 = time.time()
    with multiprocessing.Pool(args.jobs) if args.jobs > 1 else _Serial() as pool:
        for i, r in enumerate(pool.imap_unordered(run, jobs), 1):
            records.append(r)
            if out:
                out.write(json.dumps(r) + "\n")
                out.flush()
            print(f"\r{i}/{len(jobs)} runs, {time.time() - t0:.0f} s", end="", file=sys.stderr)
    print(file=sys.stderr)
    report(records, args.optimizers, problems, cfg["in_flight"], cfg["budgets"])
    if args.versus:
        report_versus(records, args.optimizers, args.versus, problems, cfg["in_flight"], cfg["budgets"])


class _Serial:
    """Stand-in for multiprocessing.Pool with --jobs 1 (no worker processes to start)."""

    def __enter__(self) -> _Serial:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    @staticmethod
    def imap_unordered(fn: Callable, items: list) -> map:
        return map(fn, items)


if __name__ == "__main__":
    main()
