"""Cost-aware search against plain `gp_fidelity`, in wall-clock time, replayed on the `tiny` curves.

Why: `make_sampler("gp_fidelity", cost_aware=True)` (`tuner.samplers.cost`) picks by expected
improvement per unit of expected cost. It earns its place only if it reaches the regret plain
`gp_fidelity` reaches within a wall-clock budget in clearly less wall-clock: the goal is at least
25% less. Where it does not, it stays off by default.

The task is `bench/multifidelity.py`'s surrogate of the recorded `tiny` curves (Nadaraya-Watson
over the recorded configurations plus the measured seed noise), replayed by its `replay`: the real
Optuna path with rnntune's sampler, the sweeps' scheduler (`--scheduler`: the default, adaptive ASHA,
or Ray's ASHA as it is) under the default early-stopping policy as `multifidelity.py` resolves it for
each budget, 4 trials in flight asynchronously. What this
benchmark adds is time. A trial's step takes

    cost(x) · exp(0.05 z),   z ~ N(0, 1) once per trial,

seconds of simulated wall-clock. cost(x) is the per-step cost of its configuration measured alone
by `bench/step_costs.py` (`bench/data/tiny_step_costs.json`: the median training step plus one
evaluation amortised over `eval_every` steps), carried to any configuration by a Nadaraya-Watson
mean of the log costs with one Gaussian bandwidth per parameter fitted by leave-one-out, as the
surrogate's curves are. A kernel rather than a log-linear fit in `mogrifier_rounds` and
`mogrifier_rank`: the cost is not log-linear in the rank (a rank at or below 0 means full rank, one
dense product, cheaper than any factorised rank: at 6 rounds 40 ms a step against 50 for ranks
above 48), and `input_embedding_ratio` (the embedding width) moves it by a few percent, which a fit
in rounds and rank cannot see; the fitted bandwidths find the rounds, rank and embedding ratio and
leave the rest flat, and the report prints both fits' leave-one-out errors (0.044 against 0.062 in
log seconds). Each trial records its noisy training seconds per step as the user attribute
`seconds_per_step` after its first report, as a sweep does (the trainer's `elapsed_s / step`,
evaluations left out: `tuner.samplers.cost.step_cost`); the cost-aware sampler reads it from
RUNNING and finished trials. `--count-ask` also puts each suggestion's CPU time on the clock, as
a sweep's freed worker waits for it.

Budgets are wall-clock: budget B is B full trials' worth of the median full-trial wall time (the
median over the recorded configurations of max_steps · cost) spread over the 4 workers, i.e. a
wall-clock of B · T_med / 4. At each budget the figure is `multifidelity.py`'s normalised regret of
the best COMPLETE trial (by observed value) finished within it, on its noise-free final value. The
headline: for each budget B, the wall-clock cost-aware search needed to reach plain's median regret
at B, as a saving against B's wall-clock. Both median regret curves are made continuous first,
linear between the times where the median step function drops (`MedianCurve`): on the step
function a method's regret at B was reached at its last drop before B, so even a method compared
with itself would show a saving. The saving is also given against the time plain's own median
curve first reached that regret; bands are the seeds' interquartile range and 80% bootstrap
intervals over seeds. The sweeps run on past the largest budget (`--horizon`, default 1.25 times
it), so the largest budget's curves have drops after it and a slower method's time is measured.

    nice -n 10 .venv/bin/python -m bench.cost_aware --seeds 20 --jobs 2 --results runs/bench/cost_aware.jsonl
    .venv/bin/python -m bench.cost_aware --results runs/bench/cost_aware.jsonl --report-only
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")  # before torch loads: one thread per process

import argparse
import contextlib
import functools
import json
import statistics
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import optuna

from bench.multifidelity import (
    DATA,
    WORKERS,
    Surrogate,
    _defaults,
    _policy_label,
    _regret,
    fit_bandwidths,
    replay,
    surrogate,
)
from tuner.policies.early_stopping import EarlyStopping
from tuner.policies.kinds import DEFAULT_SCHEDULER, RANK_SCHEDULERS
from tuner.samplers import make_sampler
from tuner.samplers.cost import COST_ATTR  # the attribute a sweep sets
from tuner.storage import study_attrs

ROOT = Path(__file__).resolve().parents[1]
COSTS = ROOT / "bench" / "data" / "tiny_step_costs.json"
BUDGETS = (12, 24, 48)
NOISE = 0.05  # sd of the log of a trial's cost around its configuration's
GOAL = 0.25  # the saving cost-aware search has to reach
HORIZON = 1.25  # the sweeps run this many times the largest budget
METHODS = {"gp_fidelity": False, "gp_fidelity, cost-aware": True}  # name -> cost_aware


class CostModel:
    """Seconds per step of a configuration: a Gaussian-kernel (Nadaraya-Watson) mean of the measured
    log costs, bandwidths per parameter fitted by leave-one-out (`multifidelity.fit_bandwidths`), on
    the surrogate's encoding of the parameters (each scaled to [0, 1] on its own scale)."""

    def __init__(self, data: dict[str, Any], sur: Surrogate) -> None:
        self.every = int(data["eval_every"])
        rows = [r for r in data["configs"] if r["train_step_s"] and r["eval_s"]]
        self.params = [r["params"] for r in rows]
        self.train = np.array([r["train_step_s"] for r in rows])  # what a trainer reports per step
        self.costs = self.train + np.array([r["eval_s"] for r in rows]) / self.every
        self.encode = sur.encode
        self.x = np.array([self.encode(p) for p in self.params])
        self.names = list(sur.space.params)
        log_cost = np.log(self.costs)[:, None]
        self.bandwidth, self.loo_rmse = fit_bandwidths(self.x, log_cost)
        self.loglinear_rmse = _loglinear_loo(self.params, np.log(self.costs))
        self.machine = data.get("machine", {})
        self.command = data.get("command")

    def seconds_per_step(self, params: dict[str, Any]) -> tuple[float, float]:
        """The configuration's (seconds per step with evaluations amortised, training seconds per
        step alone): kernel means of the two logs, with the weights fitted on the first."""
        logits = -0.5 * (((self.x - self.encode(params)) / self.bandwidth) ** 2).sum(axis=1)
        w = np.exp(logits - logits.max())
        w /= w.sum()
        return float(np.exp(w @ np.log(self.costs))), float(np.exp(w @ np.log(self.train)))


def _loglinear_loo(params: list[dict[str, Any]], log_cost: np.ndarray) -> float:
    """Leave-one-out RMSE of log cost ~ a + b·rounds + c·rank + d·rounds·rank (rounds 0: no rank)."""
    rounds = np.array([float(p.get("mogrifier_rounds", 0)) for p in params])
    rank = np.array([float(p.get("mogrifier_rank", 0)) for p in params]) * (rounds > 0)
    a = np.column_stack([np.ones_like(rounds), rounds, rank, rounds * rank])
    hat = a @ np.linalg.pinv(a)
    resid = log_cost - hat @ log_cost
    return float(np.sqrt(np.mean((resid / (1.0 - np.diag(hat))) ** 2)))


@functools.cache
def cost_model(costs: str, data: str) -> CostModel:
    """The cost model of the step costs in `costs`, on the encoding of the curves in `data`; built
    once per process (its bandwidth fit takes a few seconds)."""
    sur = surrogate(data)
    return CostModel(json.loads(Path(costs).read_text()), sur)


def full_trial_s(model: CostModel, sur: Surrogate) -> float:
    """T_med: the median over the measured configurations of a full trial's seconds."""
    return float(np.median(model.costs)) * int(sur.fixed["max_steps"])


def run_one(job: dict[str, Any]) -> dict[str, Any]:
    """One replayed sweep of `job["method"]` with seed `job["seed"]` until `job["limit"]` full
    trials' worth of worker time; every COMPLETE trial's (wall time, observed, noise-free final)."""
    import torch

    torch.set_num_threads(1)
    from tuner.policies.schedulers import make_scheduler

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    warnings.simplefilter("ignore")
    sur = surrogate(job["data"])
    model = cost_model(job["costs"], job["data"])
    t_med = full_trial_s(model, sur)
    policy = EarlyStopping.parse(job["policy"])
    np.random.seed(job["seed"])  # Ray's async Hyperband draws each trial's bracket from numpy's global RNG
    sampler = make_sampler("gp_fidelity", seed=job["seed"], cost_aware=METHODS[job["method"]])
    study = optuna.create_study(sampler=sampler)
    study.set_user_attr("task", dict(sur.fixed))  # what tuner.storage.study.create_study stores
    study.set_user_attr(study_attrs.EARLY_STOPPING, policy.model_dump())
    scheduler = make_scheduler(job["scheduler"], sur.fixed, policy)
    scheduler.set_search_properties("val_loss", "min")
    noise = np.random.default_rng(2000 + job["seed"])  # the trials' costs: the same draws for both methods
    limit = job["limit"] * t_med  # worker seconds: B full trials' worth

    def step_cost(params: dict[str, Any]) -> tuple[float, float]:
        """(seconds of wall-clock per step, the training seconds per step the trial records), both
        times the trial's own noise; a sweep's trainer reports training time alone (`elapsed_s`)."""
        factor = float(np.exp(job["noise"] * noise.standard_normal()))
        step, train = model.seconds_per_step(params)
        return step * factor, train * factor

    done = replay(
        study,
        sur,
        scheduler,
        np.random.default_rng(1000 + job["seed"]),  # the curves' seed noise, as multifidelity.py's
        WORKERS,
        lambda used, _: used < limit,
        step_cost=step_cost,
        cost_attr=COST_ATTR,
        count_ask=job.get("count_ask", False),
    )
    return {
        "method": job["method"],
        "seed": job["seed"],
        "policy": job["policy"],
        "scheduler": job["scheduler"],
        "limit": job["limit"],
        "noise": job["noise"],
        "count_ask": job.get("count_ask", False),
        "t_med": t_med,
        "finished": [[now, observed, true] for _, now, observed, true in done.finished],
        # each started trial: start time, seconds per step, steps trained, mogrifier rounds
        "trials": [
            [now, spt, steps, int(p.get("mogrifier_rounds", 0))]
            for (_, now), spt, steps, p in zip(done.started, done.seconds_per_step, done.steps, done.params)
        ],
        "ask_s": float(np.mean(done.ask_s)),
        "ask_cpu_s": float(np.mean(done.ask_cpu)),
        "costed": sum(COST_ATTR in t.user_attrs for t in study.trials),
    }


def regret_curves(rows: list[dict[str, Any]], times: np.ndarray, f_min: float, f_ref: float) -> np.ndarray:
    """[runs, times]: the normalised regret of each run's best COMPLETE trial (by observed value)
    finished by each time."""
    out = np.ones((len(rows), len(times)))
    for i, r in enumerate(rows):
        best_obs, best = np.inf, 1.0
        ends = sorted(r["finished"])
        at, regrets = [], []
        for now, observed, true in ends:
            if observed < best_obs:
                best_obs, best = observed, _regret(true, f_min, f_ref)
            at.append(now)
            regrets.append(best)
        idx = np.searchsorted(np.array(at), times, side="right") - 1
        out[i] = np.array([*regrets, 1.0])[idx]  # index -1 (nothing finished yet): regret 1
    return out


class MedianCurve:
    """The median over seeds of [runs, times] regret curves, made continuous: linear between its
    corners (the times where the median step function drops, at the value it drops to), flat
    after the last one. Interpolating is what makes the comparison fair: on the step function itself
    a method's regret at a budget was already reached at its last drop, so even a method compared
    with itself would show a saving."""

    def __init__(self, curves: np.ndarray, times: np.ndarray) -> None:
        median = np.median(curves, axis=0)
        keep = np.r_[True, median[1:] != median[:-1]]
        self.t, self.v = times[keep], median[keep]

    def at(self, t: float) -> float:
        return float(np.interp(t, self.t, self.v))

    def reaches(self, level: float) -> float:
        """The first time the curve is at or below `level` (inf when it never is)."""
        hit = np.nonzero(self.v <= level + 1e-12)[0]
        if not len(hit):
            return np.inf
        k = hit[0]
        if k == 0:
            return float(self.t[0])
        v0, v1, t0, t1 = self.v[k - 1], self.v[k], self.t[k - 1], self.t[k]
        return float(t0 + (t1 - t0) * (v0 - level) / (v0 - v1))


def saving(
    plain: np.ndarray, aware: np.ndarray, times: np.ndarray, wall: float
) -> tuple[float, float, float]:
    """(plain's median regret at `wall`, cost-aware's saving against `wall`, and against the time
    plain's own median curve first reached that regret — earlier than `wall` where plain's curve
    is flat past its last drop), from [runs, times] regret curves."""
    plain_curve = MedianCurve(plain, times)
    level = plain_curve.at(wall)
    t_aware = MedianCurve(aware, times).reaches(level)
    t_plain = plain_curve.reaches(level)
    return level, 1.0 - t_aware / wall, 1.0 - t_aware / t_plain if t_plain > 0 else np.nan


def report(rows: list[dict[str, Any]], sur: Surrogate, model: CostModel, budgets: tuple[int, ...]) -> None:
    f_min, f_ref = sur.reference()
    t_med = full_trial_s(model, sur)
    every = int(sur.fixed["eval_every"])
    rounds = np.array([int(p.get("mogrifier_rounds", 0)) for p in model.params])
    print(
        f"step costs: {len(model.costs)} configurations ({model.machine.get('cpu', '?')}, torch "
        f"{model.machine.get('torch', '?')}, one thread), train step + eval/{every}: "
        f"min {1000 * model.costs.min():.1f} ms, median {1000 * np.median(model.costs):.1f} ms, "
        f"max {1000 * model.costs.max():.1f} ms; rounds 0 median {1000 * np.median(model.costs[rounds == 0]):.1f} ms, "
        f"rounds 6 median {1000 * np.median(model.costs[rounds == 6]):.1f} ms"
    )
    bw = {n: round(float(b), 3) for n, b in zip(model.names, model.bandwidth) if b < 5}
    print(
        f"cost model: kernel mean of log cost, leave-one-out RMSE {model.loo_rmse:.3f} (log-linear in "
        f"rounds and rank: {model.loglinear_rmse:.3f}); bandwidths under 5 (the rest ~flat): {bw}"
    )
    print(
        f"T_med (median full trial, {sur.fixed['max_steps']} steps) {t_med:.2f} s; budget B = "
        f"B·T_med/{WORKERS} s of wall-clock; f_min {f_min:.4f}, f_ref {f_ref:.4f}"
    )
    defaults = _defaults(sur, budgets)
    need = max(budgets)
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in rows:
        if r["limit"] >= need:
            groups.setdefault((r["method"], json.dumps(r["policy"], sort_keys=True)), []).append(r)
    at_budget = {
        (m, b): groups.get((m, json.dumps(defaults[b], sort_keys=True)), []) for m in METHODS for b in budgets
    }
    if not all(at_budget.values()):
        print("no runs of every method at every budget yet")
        return
    walls = {b: b * t_med / WORKERS for b in budgets}
    end = min(r["limit"] for rs in at_budget.values() for r in rs) * t_med / WORKERS
    plain_name, aware_name = list(METHODS)
    table, headline = [], []
    for b in budgets:
        # both methods' regret curves on one grid: every finishing time within the largest budget
        times = np.unique(
            [0.0, walls[b]] + [f[0] for m in METHODS for r in at_budget[m, b] for f in r["finished"]]
        )
        times = times[times <= end]
        at = np.searchsorted(times, walls[b], side="right") - 1
        curves = {m: regret_curves(at_budget[m, b], times, f_min, f_ref) for m in METHODS}
        cells = {}
        for m, c in curves.items():
            q1, q3 = np.percentile(c[:, at], [25, 75])
            lo, hi = _bootstrap(c[:, at], np.median)
            cells[m] = f"{np.median(c[:, at]):.4f} [{q1:.3f}-{q3:.3f}] ({lo:.3f}-{hi:.3f})"
        table.append(cells)
        plain, aware = curves[plain_name], curves[aware_name]
        level, save, save_first = saving(plain, aware, times, walls[b])
        rng = np.random.default_rng(0)
        boot = np.array(
            [
                saving(
                    plain[rng.integers(0, len(plain), len(plain))],
                    aware[rng.integers(0, len(aware), len(aware))],
                    times,
                    walls[b],
                )[1]
                for _ in range(1000)
            ]
        )
        lo, hi = np.percentile(boot, [10, 90], method="nearest")
        headline.append((b, level, save, lo, hi, float(np.mean(boot >= GOAL)), save_first))

    print(
        f"\n# median normalised regret of the best COMPLETE trial (noise-free final) within the "
        f"wall-clock, [IQR over seeds] (80% bootstrap interval of the median), {WORKERS} in flight; "
        "policy: the default as resolved for each budget ("
        + ", ".join(f"{b}: {_policy_label(defaults[b])}" for b in budgets)
        + ")"
    )
    print(f"{'method':26} seeds" + "".join(f"{f'B={b} ({walls[b]:.0f} s)':>40}" for b in budgets))
    for m in METHODS:
        seeds = min(len(at_budget[m, b]) for b in budgets)
        print(f"{m:26} {seeds:>5}" + "".join(cells[m].rjust(40) for cells in table))

    print(
        f"\n# headline: the wall-clock cost-aware search needs to reach plain gp_fidelity's median "
        f"regret at B (goal: >= {GOAL:.0%} less than B's); and against the time plain's own median "
        "curve first reached that regret"
    )
    print(
        f"{'budget':>7} {'wall s':>7} {'plain (interp.)':>15} {'cost-aware needs':>17} {'saving':>7} "
        f"{'80% bootstrap':>17} {'P(>=25%)':>9} {'vs plain first':>15}"
    )
    for b, level, save, lo, hi, p_goal, save_first in headline:
        needs = (1 - save) * walls[b]
        print(
            f"{b:>7} {walls[b]:>7.0f} {level:>15.4f} "
            f"{f'{needs:.0f} s' if np.isfinite(needs) else f'> {end:.0f} s':>17} "
            f"{_pct(save):>7} {f'{_pct(lo)} to {_pct(hi)}':>17} {p_goal:>9.2f} {_pct(save_first):>15}"
        )
    met = sum(save >= GOAL for _, _, save, *_ in headline)
    print(
        f"verdict: cost-aware reaches plain's regret with >= {GOAL:.0%} less wall-clock at {met} of "
        f"{len(budgets)} budgets"
        + (" - goal met" if met == len(budgets) else " - goal NOT met: cost-aware stays off by default")
    )

    print(
        "\n# what each method trains (every trial started in a run, to the horizon past the largest "
        "budget): medians over seeds of per-run means; ms/step with evaluations amortised"
    )
    print(
        f"{'method':26} {'trials':>7} {'COMPLETE':>9} {'ms/step':>8} {'full trial s':>13} "
        f"{'s trained/trial':>16} {'rounds':>7} {'rounds>=4':>10} {'s/suggest (CPU)':>16}"
    )
    for m in METHODS:
        rs = at_budget[m, need]
        stats = []
        for r in rs:
            t = np.array(r["trials"], dtype=float)
            stats.append(
                [
                    len(t),
                    len(r["finished"]),
                    1000 * t[:, 1].mean(),
                    t[:, 1].mean() * int(sur.fixed["max_steps"]),
                    (t[:, 1] * t[:, 2]).mean(),
                    t[:, 3].mean(),
                    (t[:, 3] >= 4).mean(),
                ]
            )
        med = np.median(np.array(stats), axis=0)
        ask = statistics.mean(r["ask_s"] for r in rs)
        ask_cpu = statistics.mean(r["ask_cpu_s"] for r in rs)
        print(
            f"{m:26} {med[0]:>7.0f} {med[1]:>9.0f} {med[2]:>8.1f} {med[3]:>13.2f} {med[4]:>16.2f} "
            f"{med[5]:>7.2f} {med[6]:>10.0%} {f'{ask:.2f} ({ask_cpu:.2f})':>16}"
        )
    print(
        f"{'(recorded configurations)':26} {'':>7} {'':>9} {1000 * model.costs.mean():>8.1f} "
        f"{model.costs.mean() * int(sur.fixed['max_steps']):>13.2f} {'':>16} {rounds.mean():>7.2f} "
        f"{(rounds >= 4).mean():>10.0%}"
    )


def _pct(x: float) -> str:
    """A saving as a signed percentage; `never` where cost-aware never reached the regret."""
    return f"{x:+.0%}" if np.isfinite(x) else ("never" if x < 0 else "n/a")


def _bootstrap(values: np.ndarray, stat: Any, draws: int = 2000) -> tuple[float, float]:
    """The 10th and 90th percentiles of `stat` of `values` resampled with replacement."""
    rng = np.random.default_rng(0)
    boot = [stat(values[rng.integers(0, len(values), len(values))]) for _ in range(draws)]
    return float(np.percentile(boot, 10)), float(np.percentile(boot, 90))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=str(DATA), help="the recorded curves")
    ap.add_argument("--costs", default=str(COSTS), help="the recorded step costs (bench/step_costs.py)")
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--jobs", type=int, default=1, help="processes (default 1)")
    ap.add_argument(
        "--budgets",
        default=",".join(map(str, BUDGETS)),
        help="wall-clock budgets in full trials' worth of median wall time over 4 workers (default 12,24,48)",
    )
    ap.add_argument("--noise", type=float, default=NOISE, help=f"sd of a trial's log cost (default {NOISE})")
    ap.add_argument(
        "--horizon",
        type=float,
        default=HORIZON,
        help=f"run the sweeps to this many times the largest budget (default {HORIZON})",
    )
    ap.add_argument(
        "--count-ask",
        action="store_true",
        help="a trial starts only after its suggestion's CPU time (a sweep's worker waits for it)",
    )
    ap.add_argument("--methods", nargs="*", choices=list(METHODS), help="default: both")
    ap.add_argument(
        "--scheduler",
        choices=RANK_SCHEDULERS,
        default=DEFAULT_SCHEDULER,
        help=f"early stopping (default {DEFAULT_SCHEDULER}, the sweeps' default)",
    )
    ap.add_argument("--results", type=Path, help="JSON-lines file of finished runs (resumable)")
    ap.add_argument("--report-only", action="store_true")
    args = ap.parse_args()

    budgets = tuple(int(b) for b in args.budgets.split(","))
    sur = surrogate(args.data)
    model = cost_model(args.costs, args.data)
    policies = list({json.dumps(p, sort_keys=True): p for p in _defaults(sur, budgets).values()}.values())

    def key(r: dict[str, Any]) -> tuple[Any, ...]:
        return (r["method"], r["seed"], json.dumps(r["policy"], sort_keys=True), r["noise"], r["count_ask"])

    rows: list[dict[str, Any]] = []
    if args.results and args.results.exists():
        rows = [json.loads(line) for line in args.results.read_text().splitlines() if line.strip()]
    t_med = full_trial_s(model, sur)
    stale = [r for r in rows if abs(r["t_med"] - t_med) > 1e-9 * t_med]
    if stale:
        print(f"{len(stale)} stored runs were replayed with other step costs; left out")
    rows = [
        r
        for r in rows
        if r not in stale
        and r["noise"] == args.noise
        and r["count_ask"] == args.count_ask
        and r.get("scheduler", "asha") == args.scheduler  # runs stored before the option: Ray's ASHA
    ]
    longest: dict[tuple[Any, ...], dict[str, Any]] = {}
    for r in rows:  # one run per key: the longest
        if key(r) not in longest or r["limit"] > longest[key(r)]["limit"]:
            longest[key(r)] = r
    rows = list(longest.values())
    if not args.report_only:
        limit = max(budgets) * args.horizon
        done = {key(r) for r in rows if r["limit"] >= limit}
        jobs = [
            job
            for s in range(args.seeds)
            for p in policies
            for m in args.methods or list(METHODS)
            if key(
                job := {
                    "method": m,
                    "seed": s,
                    "policy": p,
                    "noise": args.noise,
                    "count_ask": args.count_ask,
                    "scheduler": args.scheduler,
                    "limit": limit,
                    "data": args.data,
                    "costs": args.costs,
                }
            )
            not in done
        ]
        t0 = time.perf_counter()
        with (
            open(args.results, "a") if args.results else contextlib.nullcontext() as sink,
            ProcessPoolExecutor(max_workers=args.jobs) as pool,
        ):
            for n, row in enumerate(pool.map(run_one, jobs), 1):
                rows = [r for r in rows if key(r) != key(row)] + [row]
                if sink:
                    sink.write(json.dumps(row) + "\n")
                    sink.flush()
                print(
                    f"{n}/{len(jobs)} runs ({row['method']}, seed {row['seed']}: {len(row['trials'])} "
                    f"trials, {row['ask_s']:.2f} s/suggest), {time.perf_counter() - t0:.0f} s",
                    flush=True,
                )
    report(rows, sur, model, budgets)


if __name__ == "__main__":
    main()
