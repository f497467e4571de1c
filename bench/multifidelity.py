"""Samplers under early stopping, replayed on real learning curves of the `tiny` space.

The curves recorded by `bench/learning_curves.py` (2TA validation loss at every eval step, one per
configuration, some configurations with extra trainer seeds) define a surrogate task:

* the noise-free curve of a configuration is a kernel-weighted mean of the recorded curves
  (Nadaraya-Watson regression with a Gaussian kernel over the parameters scaled to [0, 1] on their
  own scale: log, linear or integer), one bandwidth per parameter fitted by leave-one-out on the
  recorded curves, so the surrogate smooths the records' own seed noise instead of interpolating it;
* a trial's observed curve adds seed noise: z·σ(step) with one z ~ N(0, 1) per trial (a trainer seed
  shifts the whole curve), σ(step) the standard deviation between seeds measured on the repeated
  configurations.

Each run drives the real path: an Optuna study with rnntune's sampler (`make_sampler`) or a stock
Optuna sampler, trials asked with the tiny space's own `SearchSpace.suggest`, intermediate values
reported at every eval step, pruned trials told PRUNED and finished ones COMPLETE with their best
value, exactly as `tuner.sweeps.drive.searcher` does; early stopping is Ray Tune's ASHAScheduler
itself, built by `tuner.policies.schedulers.make_scheduler` from the study's early-stopping
policy and fed each result. 4 workers train asynchronously (one step per time unit each); the budget
is counted in training steps of all trials. At each budget of B full trials' worth of steps the
figure is the normalised regret of the best COMPLETE trial (by observed value) finished within it,
measured on its noise-free final value: (f − f_min)/(f_ref − f_min), f_min the surrogate's best (the
best of its recorded configurations and 4000 random ones, polished by L-BFGS-B), f_ref the random
ones' median. Without --policy every method runs under the default policy as a sweep of each budget
resolves it (its brackets depend on the budget, `tuner.policies.early_stopping`), and the report's
`default` rows take, at each budget, the runs of the policy resolved for it.

    nice -n 10 .venv/bin/python -m bench.multifidelity --jobs 2 --results runs/bench/mf.jsonl
    .venv/bin/python -m bench.multifidelity --results runs/bench/mf.jsonl --report-only
    .venv/bin/python -m bench.multifidelity --suggest-timing 500     # s per suggestion, 500 trials
    .venv/bin/python -m bench.multifidelity --embedded --seeds 20 --results runs/bench/mf_embedded.jsonl
    .venv/bin/python -m bench.multifidelity --embedded --embedded-budget 0 --methods "gp_warped + ASHA" \
        --seeds 20 --results runs/bench/mf_embedded.jsonl     # `make run` before the step budget
    .venv/bin/python -m bench.multifidelity --embedded --trials 8,12,16 --seeds 40 \
        --results runs/bench/mf_small.jsonl     # small studies: COMPLETE trials per study
    .venv/bin/python -m bench.multifidelity --task crossover --seeds 20 --budgets 24,48 --methods \
        "gp_fidelity + adaptive ASHA (default)" "gp_fidelity, no early stopping" "gp_fidelity + ASHA" \
        --results runs/bench/mf_crossover.jsonl

`--task crossover` replays a synthetic task whose early values mislead (`Crossover`: the curves
cross at step ~91). "gp_fidelity + adaptive ASHA (default)" runs the sweeps' default scheduler,
`tuner.policies.rank_agreement.AdaptiveASHA`, whose rungs prune only once the trials show that
their values rank like the next ones; "gp_fidelity + ASHA" runs Ray's ASHA as it is.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")  # before torch loads: one thread per process

import argparse
import contextlib
import functools
import gzip
import heapq
import importlib.util
import json
import math
import statistics
import time
import warnings
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import optuna

from tuner.policies.early_stopping import EarlyStopping
from tuner.samplers import DEFAULT_SAMPLER, BOHBRule, GPSampler, Subset, make_sampler
from tuner.space import SearchSpace
from tuner.spec.defaults import DEFAULT_BUDGET, DEFAULT_PARALLEL, DEFAULT_TRIALS
from tuner.storage import study_attrs

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "bench" / "data" / "tiny_curves.json.gz"
BUDGETS = (24, 48, 96)
WORKERS = 4


def methods() -> dict[str, tuple[Callable[[int], Any], str]]:
    """Compared methods: name -> (sampler factory taking a seed, scheduler name)."""

    def ours(name: str) -> Callable[[int], Any]:
        return lambda s: make_sampler(name, seed=s)

    out = {
        f"{DEFAULT_SAMPLER} + adaptive ASHA (default)": (ours(DEFAULT_SAMPLER), "adaptive"),
        f"{DEFAULT_SAMPLER} + ASHA": (ours(DEFAULT_SAMPLER), "asha"),
        "random + ASHA": (lambda s: optuna.samplers.RandomSampler(seed=s), "asha"),
        "Optuna TPE + ASHA": (lambda s: optuna.samplers.TPESampler(seed=s), "asha"),
        "Optuna GPSampler + ASHA": (lambda s: optuna.samplers.GPSampler(seed=s), "asha"),
        f"{DEFAULT_SAMPLER}, no early stopping": (ours(DEFAULT_SAMPLER), "none"),
    }
    # The default's subset at a cap small enough to act within these budgets (the default's cap,
    # 250, is reached only past them): does fitting a subset cost regret?
    out[f"{DEFAULT_SAMPLER}, subset cap 100 + ASHA"] = (
        lambda s: make_sampler(DEFAULT_SAMPLER, seed=s, subset=Subset(cap=100, best=25, recent=25)),
        "asha",
    )
    # Retired names (tuner.samplers.RETIRED_SAMPLERS), kept as compositions under their old labels
    # so the stored records and docs/samplers.md's figures stay reproducible.
    out["gp_bohb + ASHA"] = (
        lambda s: GPSampler(fidelity=BOHBRule(), seed=s, warn_independent_sampling=False),
        "asha",
    )
    out["gp_warped + ASHA"] = (
        lambda s: GPSampler(fidelity=None, seed=s, warn_independent_sampling=False),
        "asha",
    )
    if importlib.util.find_spec("hpbandster") is not None:
        out["BOHB (hpbandster) + ASHA"] = (BOHBStudy, "asha")
    return out


class _BOHBTrial:
    """What `SearchSpace.suggest` and the replay call on a trial, answered from BOHB's config."""

    def __init__(self, number: int, config: dict[str, Any], study: BOHBStudy) -> None:
        self.number, self.config, self._study = number, config, study

    def suggest_float(self, name: str, *args: Any, **kwargs: Any) -> float:
        return float(self.config[name])

    def suggest_int(self, name: str, *args: Any, **kwargs: Any) -> int:
        return int(self.config[name])

    def report(self, value: float, step: int) -> None:
        if step in self._study.budgets:
            self._study.model.new_result(_BOHBJob(self.config, step, value))


class _BOHBJob:
    """The fields of hpbandster's Job that its config generator reads."""

    def __init__(self, config: dict[str, Any], budget: int, loss: float) -> None:
        self.kwargs = {"config": config, "budget": budget}
        self.result = {"loss": loss}
        self.exception = None
        self.id = (0, 0, 0)
        self.timestamps: dict[str, float] = {}


class BOHBStudy:
    """BOHB's own model (hpbandster's config generator: TPE-like KDEs on the largest budget with
    enough results, Falkner et al. 2018 §3) behind the replay's ask/tell, fed the value of each trial
    at every rung it reaches and at the end; Ray's ASHA decides which trials go on, as for every other
    method (BOHB's synchronous Hyperband brackets would not keep 4 workers busy asynchronously)."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.trials: list[_BOHBTrial] = []
        self.budgets: set[int] = set()
        self.model: Any = None

    def bind(self, space: SearchSpace, budgets: set[int]) -> None:
        import ConfigSpace as CS
        from hpbandster.optimizers.config_generators.bohb import BOHB

        cs = CS.ConfigurationSpace(seed=self.seed)
        for name, p in space.params.items():
            assert p.scale != "categorical"  # numeric spaces only: a categorical has no low, high
            if p.scale == "int":
                cs.add(CS.UniformIntegerHyperparameter(name, int(p.low), int(p.high)))
            else:
                cs.add(CS.UniformFloatHyperparameter(name, p.low, p.high, log=p.scale == "log"))
        np.random.seed(self.seed)  # hpbandster draws from numpy's global generator
        self.model = BOHB(cs)
        self.budgets = budgets

    def set_user_attr(self, key: str, value: Any) -> None:
        pass  # BOHB reads no study settings

    def ask(self) -> _BOHBTrial:
        config, _ = self.model.get_config(max(self.budgets))
        self.trials.append(_BOHBTrial(len(self.trials), dict(config), self))
        return self.trials[-1]

    def tell(self, trial: _BOHBTrial, value: float | None = None, state: Any = None) -> None:
        pass  # results reach the model as they are reported (`_BOHBTrial.report`)


class Surrogate:
    """Noise-free curves by kernel regression on the recorded ones, plus the measured seed noise."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.space: SearchSpace = SearchSpace.from_dict(data["space"])
        self.fixed = data["settings"]
        runs = data["runs"]
        self.steps = sorted({int(s) for r in runs for s in r["curve"]})
        base = [r for r in runs if r["seed"] == 0]
        curves = np.array([[_num(r["curve"].get(str(s))) for s in self.steps] for r in base])
        worst = np.nanmax(curves, axis=0)
        self.n_diverged = int(np.isnan(curves).any(axis=1).sum())
        self.curves = np.where(np.isnan(curves), worst, curves)
        self.x = np.array([self.encode(r["params"]) for r in base])
        self.bandwidth, self.loo_rmse = fit_bandwidths(self.x, self.curves)
        self._reference: tuple[float, float] | None = None
        by_config: dict[int, list[list[float]]] = defaultdict(list)
        for r in runs:
            by_config[r["config"]].append([_num(r["curve"].get(str(s))) for s in self.steps])
        spreads = [np.nanvar(np.array(c), axis=0, ddof=1) for c in by_config.values() if len(c) > 1]
        self.sigma = np.sqrt(np.nanmean(spreads, axis=0)) if spreads else np.zeros(len(self.steps))
        self.n_repeated = len(spreads)

    def encode(self, params: dict[str, Any]) -> np.ndarray:
        out = []
        for name, p in self.space.params.items():
            assert p.scale != "categorical"  # numeric spaces only: a categorical has no low, high
            v = float(params[name])
            if p.scale == "log":
                out.append((np.log(v) - np.log(p.low)) / (np.log(p.high) - np.log(p.low)))
            else:
                out.append((v - p.low) / (p.high - p.low))
        return np.array(out)

    def curve(self, params: dict[str, Any]) -> np.ndarray:
        return self.curve_at(self.encode(params))

    def curve_at(self, x: np.ndarray) -> np.ndarray:
        """The noise-free curve at encoded parameters `x`: the kernel-weighted mean of the records."""
        logits = -0.5 * (((self.x - x) / self.bandwidth) ** 2).sum(axis=1)
        w = np.exp(logits - logits.max())
        return (w @ self.curves) / w.sum()

    def final(self, params: dict[str, Any]) -> float:
        return float(self.curve(params).min())

    def reference(self, seed: int = 12345) -> tuple[float, float]:
        """(f_min, f_ref): the best final value found by polishing the 5 best of the recorded and
        4000 random configurations (L-BFGS-B over the non-integer parameters), and the random
        configurations' median. Cached: the report and every run need the same pair."""
        if self._reference is None:
            from scipy.optimize import minimize

            rng = np.random.default_rng(seed)
            points = [self.encode(self._random_params(rng)) for _ in range(4000)]
            finals = [float(self.curve_at(x).min()) for x in points]
            starts = points + list(self.x)
            values = finals + [float(self.curve_at(x).min()) for x in self.x]
            free = np.array([p.scale != "int" for p in self.space.params.values()])
            best = min(values)
            for i in np.argsort(values)[:5]:
                start = starts[i]

                def f(z: np.ndarray, start: np.ndarray = start) -> float:
                    x = start.copy()
                    x[free] = z
                    return float(self.curve_at(x).min())

                fit = minimize(f, start[free], method="L-BFGS-B", bounds=[(0.0, 1.0)] * int(free.sum()))
                best = min(best, float(fit.fun))
            self._reference = (best, float(np.median(finals)))
        return self._reference

    def _random_params(self, rng: np.random.Generator) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, p in self.space.params.items():
            assert p.scale != "categorical"  # numeric spaces only: a categorical has no low, high
            u = rng.random()
            if p.scale == "log":
                out[name] = float(np.exp(np.log(p.low) + u * (np.log(p.high) - np.log(p.low))))
            elif p.scale == "int":
                out[name] = int(rng.integers(int(p.low), int(p.high) + 1))
            else:
                out[name] = float(p.low + u * (p.high - p.low))
        return out


class Crossover(Surrogate):
    """A task whose early values mislead (`--task crossover`): `tiny`'s final values behind
    synthetic curves that cross. A configuration with final value F follows
    F + D·(1 - step/max_steps)^1.5 with an excess D = 0.3 + 2.5·max(0, 4 - F): the better the final
    value, the slower the start. Two configurations swap order where 2.5·(1 - step/max_steps)^1.5
    = 1, at step ~91 of 200: at rung 50 the values rank the finals backwards (slope -0.6), at 75
    weakly backwards, at 150 forwards (+0.7). Seed noise as on `tiny`. The curves decrease to F, so
    a trial's best value is its final one and f_min, f_ref are `tiny`'s."""

    SLOWNESS, CAP, EXCESS, POWER = 2.5, 4.0, 0.3, 1.5

    def curve_at(self, x: np.ndarray) -> np.ndarray:
        final = float(super().curve_at(x).min())
        left = (1.0 - np.array(self.steps, dtype=float) / self.steps[-1]) ** self.POWER
        return final + (self.EXCESS + self.SLOWNESS * max(0.0, self.CAP - final)) * left


TASKS: dict[str, type[Surrogate]] = {"tiny": Surrogate, "crossover": Crossover}


def fit_bandwidths(x: np.ndarray, curves: np.ndarray) -> tuple[np.ndarray, float]:
    """Per-parameter Gaussian-kernel bandwidths minimising the leave-one-out RMSE of the predicted
    curves (each record predicted from the others), and that RMSE of the final values. Hand-written:
    a few lines of scipy; a learnt metric is what keeps an unimportant parameter from diluting the
    neighbourhood (one shared bandwidth: 0.23 nats RMSE on the final values, these: 0.15)."""
    from scipy.optimize import minimize

    diff2 = (x[:, None, :] - x[None, :, :]) ** 2

    def loo(log_h: np.ndarray) -> np.ndarray:
        logits = -0.5 * (diff2 / np.exp(log_h) ** 2).sum(axis=2)
        np.fill_diagonal(logits, -np.inf)
        w = np.exp(logits - logits.max(axis=1, keepdims=True))
        return (w / w.sum(axis=1, keepdims=True)) @ curves

    def rmse(log_h: np.ndarray) -> float:
        return float(np.sqrt(np.mean((loo(log_h) - curves) ** 2)))

    start = np.full(x.shape[1], np.log(0.25))
    fit = minimize(rmse, start, method="L-BFGS-B", bounds=[(np.log(0.02), np.log(20.0))] * x.shape[1])
    final_rmse = float(np.sqrt(np.mean((loo(fit.x).min(axis=1) - curves.min(axis=1)) ** 2)))
    return np.exp(fit.x), final_rmse


def _num(v: Any) -> float:
    return float(v) if v is not None else np.nan


class _RayTrial:
    """What Ray's ASHAScheduler reads of a trial: its id."""

    def __init__(self, trial_id: str) -> None:
        self.trial_id = trial_id


def run_one(job: dict[str, Any]) -> dict[str, Any]:
    """One sweep replay of `job["method"]` with seed `job["seed"]`; best final at each budget."""
    import torch

    torch.set_num_threads(1)
    from tuner.policies.schedulers import make_scheduler

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    warnings.simplefilter("ignore")
    sur = surrogate(job["data"], job.get("task", "tiny"))
    policy = EarlyStopping.parse(job["policy"])
    np.random.seed(job["seed"])  # Ray's async Hyperband draws each trial's bracket from numpy's global RNG
    factory, scheduler_name = methods()[job["method"]]
    made = factory(job["seed"])
    study: Any = made if isinstance(made, BOHBStudy) else optuna.create_study(sampler=made)
    study.set_user_attr("task", dict(sur.fixed))  # what tuner.storage.study.create_study stores
    study.set_user_attr(study_attrs.EARLY_STOPPING, policy.model_dump())
    every, max_steps = int(sur.fixed["eval_every"]), int(sur.fixed["max_steps"])
    scheduler = make_scheduler(scheduler_name, sur.fixed, policy)
    scheduler.set_search_properties("val_loss", "min")
    rng = np.random.default_rng(1000 + job["seed"])
    if isinstance(study, BOHBStudy):
        study.bind(sur.space, {*policy.rungs(max_steps, every), max_steps})
    budgets = job["budgets"]
    limit = max(budgets) * max_steps
    max_trials = job.get("max_trials")  # the embedded default's replay: a number of trials, not steps
    stop_at = job["stop_budget"] * max_steps if job.get("stop_budget") else math.inf  # and its --budget

    def keep_starting(used: float, n_started: int) -> bool:
        if max_trials is None:
            return used < limit
        return n_started < max_trials and used < stop_at

    done = replay(study, sur, scheduler, rng, int(job.get("workers", WORKERS)), keep_starting)
    used = done.used
    finished = [(u, observed, true) for u, _, observed, true in done.finished]
    started = [u for u, _ in done.started]
    ask_s, ask_cpu = done.ask_s, done.ask_cpu
    out = {
        "method": job["method"],
        "seed": job["seed"],
        "policy": job["policy"],
        "best_true": {},
        "started": {},
        "ask_s": float(np.mean(ask_s)),
        "ask_cpu_s": float(np.mean(ask_cpu)),
        "n_trials": len(study.trials),
        "steps_used": used,
        "complete": len(finished),
        "final_true": min(finished, key=lambda f: f[1])[2] if finished else None,
    }
    for b in budgets:
        within = [f for f in finished if f[0] <= b * max_steps]
        out["best_true"][str(b)] = min(within, key=lambda f: f[1])[2] if within else None
        out["started"][str(b)] = sum(1 for s in started if s < b * max_steps)
    return out


@dataclass
class Replayed:
    """What `replay` returns. Times are in worker time (`used`: summed over the trials in flight)
    and in wall time (`now`: the sweep's clock); each training step takes one unit of both unless
    `replay` is given the seconds per step of each trial."""

    used: float  # worker time spent by all trials
    finished: list[tuple[float, float, float, float]]  # COMPLETE trials: (used, now, best seen, true)
    started: list[tuple[float, float]]  # (used, now) at each trial's start
    seconds_per_step: list[float]  # time per step of each started trial (all 1 without costs)
    params: list[dict[str, Any]]  # of each started trial
    steps: list[int]  # steps each started trial trained before it was pruned or finished
    ask_s: list[float]
    ask_cpu: list[float]


def replay(
    study: Any,
    sur: Surrogate,
    scheduler: Any,
    rng: np.random.Generator,
    workers: int,
    keep_starting: Callable[[float, int], bool],
    step_cost: Callable[[dict[str, Any]], tuple[float, float]] | None = None,
    cost_attr: str | None = None,
    count_ask: bool = False,
) -> Replayed:
    """Replay one asynchronous sweep: `workers` trials in flight, each asked from `study` with the
    space's own `suggest`, its observed curve the surrogate's plus seed noise from `rng`, reported at
    every eval step, fed to Ray's `scheduler`, told PRUNED or COMPLETE (its best value) as
    `tuner.sweeps.drive.searcher` does. A freed worker starts a new trial while
    `keep_starting(worker time used, trials started)`. `step_cost(params)` gives a trial's
    (time per step, measured seconds per step): its steps take the first (default: one unit), and
    with `cost_attr` the second is set as its user attribute after its first report, as a sweep
    records the trainer's measured cost (and every result carries it, under that name). With
    `count_ask` a trial starts only after the CPU time
    its suggestion took, as a sweep's freed worker waits for the next suggestion."""
    every, max_steps = int(sur.fixed["eval_every"]), int(sur.fixed["max_steps"])
    used: float = 0  # worker time spent by all trials so far
    events: list[tuple[float, int]] = []  # (time of next evaluation, worker)
    live: dict[int, dict[str, Any]] = {}
    out = Replayed(0, [], [], [], [], [], [], [])

    def start(worker: int, now: float) -> None:
        t0, c0 = time.perf_counter(), time.process_time()
        trial = study.ask()
        params = sur.space.suggest(trial)
        out.ask_s.append(time.perf_counter() - t0)
        out.ask_cpu.append(time.process_time() - c0)
        if count_ask:
            now += out.ask_cpu[-1]
        curve = sur.curve(params) + rng.standard_normal() * sur.sigma
        ray_trial = _RayTrial(str(trial.number))
        scheduler.on_trial_add(None, ray_trial)
        spt, measured = step_cost(params) if step_cost is not None else (1, None)
        live[worker] = {
            "trial": trial,
            "ray": ray_trial,
            "curve": curve,
            "step": 0,
            "true": float(sur.curve(params).min()),
            "seen": [],
            "spt": spt,
            "measured": measured,
            "index": len(out.started),
        }
        out.started.append((used, now))
        out.seconds_per_step.append(spt)
        out.params.append(params)
        out.steps.append(0)
        heapq.heappush(events, (now + every * spt, worker))

    for w in range(workers):
        start(w, 0)
    last_time: float = 0
    while events:
        now, worker = heapq.heappop(events)
        used += (now - last_time) * len(live)
        last_time = now
        lt = live[worker]
        lt["step"] += every
        value = float(lt["curve"][sur.steps.index(lt["step"])])
        lt["seen"].append(value)
        lt["trial"].report(value, lt["step"])
        out.steps[lt["index"]] = lt["step"]
        if cost_attr is not None and lt["step"] == every:
            lt["trial"].set_user_attr(cost_attr, lt["measured"])
        result = {"step": lt["step"], "val_loss": value}
        if cost_attr is not None:
            result[cost_attr] = lt["measured"]  # a scheduler over several objectives reads it
        if lt["step"] >= max_steps:
            scheduler.on_trial_complete(None, lt["ray"], result)
            study.tell(lt["trial"], min(lt["seen"]))
            out.finished.append((used, now, min(lt["seen"]), lt["true"]))
        elif scheduler.on_trial_result(None, lt["ray"], result) == "STOP":
            study.tell(lt["trial"], state=optuna.trial.TrialState.PRUNED)
        else:
            heapq.heappush(events, (now + every * lt["spt"], worker))
            continue
        del live[worker]
        if keep_starting(used, len(out.started)):
            start(worker, now)
    out.used = used
    return out


@functools.cache
def surrogate(path: str, task: str = "tiny") -> Surrogate:
    """The surrogate `task` (TASKS) of the curves in `path`, built once per process (its bandwidth
    fit takes ~4 s)."""
    with gzip.open(path, "rt") as f:
        return TASKS[task](json.load(f))


def report(rows: list[dict[str, Any]], sur: Surrogate, budgets: tuple[int, ...]) -> None:
    f_min, f_ref = sur.reference()
    print(
        f"surrogate: {len(sur.curves)} configurations ({sur.n_diverged} with a non-finite value), "
        f"seed noise from {sur.n_repeated} repeated ones: sigma {np.round(sur.sigma, 4).tolist()} "
        f"at steps {sur.steps}; f_min {f_min:.4f}, f_ref (median) {f_ref:.4f}; kernel bandwidths "
        f"{dict(zip(sur.space.params, np.round(sur.bandwidth, 3).tolist()))}, leave-one-out RMSE of "
        f"the final values {sur.loo_rmse:.3f} nats"
    )
    by_seed: dict[tuple[str, str], dict[int, dict[str, Any]]] = defaultdict(dict)
    unstopped = {m for m, (_, scheduler) in methods().items() if scheduler == "none"}
    for r in rows:  # without early stopping the policy is moot: one row per method and seed
        moot = r["method"] in unstopped
        by_seed[(r["method"], "null" if moot else json.dumps(r["policy"], sort_keys=True))][r["seed"]] = r
    groups = {key: list(seeds.values()) for key, seeds in by_seed.items()}
    print(
        f"\n# median normalised regret of the best COMPLETE trial (noise-free final), "
        f"[trials started], {WORKERS} in flight"
    )
    head = "".join(f"{f'{b} full trials':>22}" for b in budgets)
    print(f"{'method':38} {'policy':14} seeds{head}   s/suggest (CPU s)")
    lines = [
        (method, _policy_label(json.loads(pol)), dict.fromkeys(budgets, rs))
        for (method, pol), rs in sorted(groups.items())
    ]
    defaults = _defaults(sur, budgets)
    if len({json.dumps(p, sort_keys=True) for p in defaults.values()}) > 1:
        for method in sorted({m for m, _ in groups}):  # the default: at each budget the policy it resolves
            at = {b: groups.get((method, json.dumps(defaults[b], sort_keys=True)), []) for b in budgets}
            if all(at.values()):
                lines.append((method, "default", at))
    spread_lines = []
    for method, policy, at in lines:
        cells, spreads = [], []
        for b in budgets:
            regrets = np.array([_regret(r["best_true"][str(b)], f_min, f_ref) for r in at[b]])
            started = statistics.median(r["started"][str(b)] for r in at[b])
            cells.append(f"{statistics.median(regrets):>14.4f} [{started:>4.0f}]")
            low, high = _median_interval(regrets)
            spreads.append(f"{regrets.mean():.4f} ({low:.3f}-{high:.3f})")
        every = [r for rs in at.values() for r in rs]
        seeds = min(len(rs) for rs in at.values())
        print(
            f"{method:38} {policy:14} {seeds:>5}{''.join(c.rjust(22) for c in cells)}"
            f"   {statistics.mean(r['ask_s'] for r in every):.3f} ({statistics.mean(r['ask_cpu_s'] for r in every):.3f})"
        )
        spread_lines.append(f"{method:38} {policy:14} {seeds:>5}{''.join(c.rjust(22) for c in spreads)}")
    if any(policy == "default" for _, policy, _ in lines):
        print(
            "default: at each budget the policy a sweep of that budget resolves ("
            + ", ".join(f"{b}: {_policy_label(p)}" for b, p in defaults.items())
            + ")"
        )
    print("\n# mean normalised regret (80% bootstrap interval of the median over seeds): the noise")
    print(f"{'method':38} {'policy':14} seeds{head}")
    print("\n".join(spread_lines))
    reference = [at for method, _, at in lines if method in unstopped]
    if reference:
        _report_paired(lines, reference[0], budgets, f_min, f_ref, unstopped)


def _report_paired(
    lines: list[tuple[str, str, dict[int, list[dict[str, Any]]]]],
    reference: dict[int, list[dict[str, Any]]],
    budgets: tuple[int, ...],
    f_min: float,
    f_ref: float,
    unstopped: set[str],
) -> None:
    """Each method against the same sampler without early stopping, seed by seed (`paired`)."""
    print(
        "\n# paired with no early stopping, same seeds: median regret difference (method - none), "
        "better/worse seeds, Wilcoxon signed-rank p; 'worse' where p < 0.05 and the median is above 0"
    )
    print(f"{'method':38} {'policy':14}" + "".join(f"{f'{b} full trials':>34}" for b in budgets))

    def regrets(rows: list[dict[str, Any]], b: int) -> dict[int, float]:
        return {r["seed"]: _regret(r["best_true"][str(b)], f_min, f_ref) for r in rows}

    ref = {b: regrets(reference[b], b) for b in budgets}
    for method, policy, at in lines:
        if method not in unstopped:
            cells = [paired(regrets(at[b], b), ref[b]).cell().rjust(34) for b in budgets]
            print(f"{method:38} {policy:14}" + "".join(cells))


@dataclass
class Paired:
    """A method's regrets against a reference's on the same seeds; `worse` is the benchmark's test of
    "worse beyond the seed noise": a two-sided Wilcoxon signed-rank test on the differences at 5%,
    with the median difference above 0."""

    n: int
    better: int
    worse_seeds: int
    median: float
    p: float

    @property
    def worse(self) -> bool:
        return self.p < 0.05 and self.median > 0

    def cell(self) -> str:
        if math.isnan(self.p):
            return f"n={self.n}"
        flag = " worse" if self.worse else ""
        return f"{self.median:+.4f} {self.better:>2}/{self.worse_seeds:<2} p={self.p:.3f}{flag:6}"


def paired(own: dict[int, float], reference: dict[int, float]) -> Paired:
    """`own` against `reference` ({seed: regret}) on their common seeds (the same seed draws the same
    noise); p is nan below 6 seeds or when every difference is 0."""
    from scipy.stats import wilcoxon

    d = np.array([own[s] - reference[s] for s in sorted(own.keys() & reference.keys())])
    if len(d) < 6 or not np.any(d):
        return Paired(len(d), 0, 0, 0.0, math.nan)
    return Paired(
        len(d), int((d < 0).sum()), int((d > 0).sum()), float(np.median(d)), float(wilcoxon(d).pvalue)
    )


def _regret(best_true: float | None, f_min: float, f_ref: float) -> float:
    return (best_true - f_min) / (f_ref - f_min) if best_true is not None else 1.0


def _median_interval(values: np.ndarray, draws: int = 2000) -> tuple[float, float]:
    """The 10th and 90th percentiles of the median of `values` resampled with replacement."""
    rng = np.random.default_rng(0)
    medians = np.median(values[rng.integers(0, len(values), (draws, len(values)))], axis=1)
    return float(np.percentile(medians, 10)), float(np.percentile(medians, 90))


def report_embedded(rows: list[dict[str, Any]], sur: Surrogate) -> None:
    """What `make run` gets under each policy: training steps (its wall time), trials that ran to
    the end, and the regret of the best one."""
    f_min, f_ref = sur.reference()
    groups: dict[tuple[str, int, int, str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        size = (r.get("max_trials", DEFAULT_TRIALS), r.get("workers", DEFAULT_PARALLEL))
        groups[
            (r["method"], *size, json.dumps(r["policy"], sort_keys=True), f"{r.get('stop_budget') or '-'}")
        ].append(r)
    print("\n# studies of N trials, K in flight (the embedded default: 24/2), replayed; medians")
    print(
        f"{'method':38} {'N/K':>5} {'policy':10} budget seeds  steps trained  trials  COMPLETE"
        "  (<3)  regret of the best"
    )
    for (method, n, k, pol, budget), rs in sorted(groups.items()):
        p = json.loads(pol)
        regrets = [_regret(r["final_true"], f_min, f_ref) for r in rs]
        few = sum(r["complete"] < 3 for r in rs)
        print(
            f"{method:38} {f'{n}/{k}':>5} {_policy_label(p):10} {budget:>6} {len(rs):>5}"
            f"  {statistics.median(r['steps_used'] for r in rs):>13.0f}"
            f"  {statistics.median(r['n_trials'] for r in rs):>6.0f}"
            f"  {statistics.median(r['complete'] for r in rs):>8.1f}  {few:>4}  {statistics.median(regrets):>18.4f}"
        )


def _resolved(
    policy: dict[str, Any], sur: Surrogate, budget: float | None, n_trials: int | None = None
) -> dict[str, Any]:
    """`policy` as `tuner.storage.study.create_study` stores it for a sweep of `n_trials` within `budget`
    full trials' worth of steps (both None: a policy stored before brackets existed, plain ASHA)."""
    every, max_steps = int(sur.fixed["eval_every"]), int(sur.fixed["max_steps"])
    return EarlyStopping.parse(policy).resolved(max_steps, every, n_trials, budget).model_dump()


def _defaults(sur: Surrogate, budgets: tuple[int, ...]) -> dict[int, dict[str, Any]]:
    """The default policy a sweep with a budget of B full trials' worth resolves, for each B."""
    return {b: _resolved(EarlyStopping().model_dump(), sur, b) for b in budgets}


def _policy_label(p: dict[str, Any] | None) -> str:
    """GRACE:FACTOR, with :BRACKETS when there are several (the --policy syntax); (none) without."""
    if p is None:
        return "(none)"
    label = f"{p['grace_steps']}:{p['reduction_factor']}"
    return label + (f":{p['brackets']}" if p["brackets"] > 1 else "")


def suggest_timing(n: int, data: str, policy: EarlyStopping, name: str) -> None:
    """Seconds per suggestion of sampler `name` in a study of `n` finished trials (pruned at
    the policy's rungs as ASHA would) with 3 more in flight."""
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    warnings.simplefilter("ignore")
    import torch

    torch.set_num_threads(1)
    sur = surrogate(data)
    max_steps, every = int(sur.fixed["max_steps"]), int(sur.fixed["eval_every"])
    rungs = policy.rungs(max_steps, every)
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    study.set_user_attr("task", dict(sur.fixed))
    study.set_user_attr(study_attrs.EARLY_STOPPING, policy.model_dump())
    rng = np.random.default_rng(0)
    for _ in range(n):
        trial = study.ask()
        curve = sur.curve(sur.space.suggest(trial))
        level = min(int(rng.geometric(1 - 1 / policy.reduction_factor)) - 1, len(rungs))
        last = rungs[level] if level < len(rungs) else max_steps
        for s in sur.steps:
            if s <= last:
                trial.report(float(curve[sur.steps.index(s)]), s)
        if last < max_steps:
            study.tell(trial, state=optuna.trial.TrialState.PRUNED)
        else:
            study.tell(trial, float(curve.min()))
    study.sampler = make_sampler(name, seed=0)
    pending = [study.ask() for _ in range(3)]
    for t in pending:
        sur.space.suggest(t)
    times, cpu = [], []
    for _ in range(5):
        t0, c0 = time.perf_counter(), time.process_time()
        trial = study.ask()
        sur.space.suggest(trial)
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    states: defaultdict[str, int] = defaultdict(int)
    for frozen in study.trials:
        states[frozen.state.name] += 1
    print(
        f"{name}: {n} finished trials {dict(states)}: "
        f"{statistics.median(times):.3f} s per suggestion (median of 5, max {max(times):.3f}; "
        f"CPU time of the process {statistics.median(cpu):.3f} s), 3 to 7 trials in flight"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=str(DATA))
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--jobs", type=int, default=1, help="processes (default 1)")
    ap.add_argument("--methods", nargs="*", help="subset of the methods (default: all)")
    ap.add_argument(
        "--policy",
        action="append",
        default=None,
        metavar="GRACE:FACTOR[:BRACKETS]",
        help="early-stopping policy to run (repeatable; default: the built-in one)",
    )
    ap.add_argument(
        "--budgets",
        default=",".join(map(str, BUDGETS)),
        help="budgets in full trials' worth of steps (default 24,48,96)",
    )
    ap.add_argument(
        "--embedded",
        action="store_true",
        help="replay the embedded default sweep instead (24 trials, 2 in flight, --embedded-budget): "
        "steps trained, trials, COMPLETE trials and regret per policy",
    )
    ap.add_argument(
        "--embedded-budget",
        type=float,
        default=DEFAULT_BUDGET,
        help=f"with --embedded: its step budget in full trials' worth (default {DEFAULT_BUDGET:g}; 0: none)",
    )
    ap.add_argument(
        "--trials",
        help=f"with --embedded: replay studies of these numbers of trials (comma-separated) with "
        f"{WORKERS} in flight instead of the embedded default, each under the default policy as a "
        "study of that size resolves it (or --policy)",
    )
    ap.add_argument(
        "--task",
        choices=sorted(TASKS),
        default="tiny",
        help="tiny: the recorded curves; crossover: tiny's finals behind curves whose order flips "
        "at step ~91 (early values mislead; `Crossover`)",
    )
    ap.add_argument("--results", type=Path, help="JSON-lines file of finished runs (resumable)")
    ap.add_argument("--report-only", action="store_true")
    ap.add_argument("--suggest-timing", type=int, metavar="N", help="only time suggestions at N trials")
    ap.add_argument("--sampler", default=DEFAULT_SAMPLER, help="the sampler --suggest-timing times")
    args = ap.parse_args()

    default_policy = EarlyStopping()
    if args.suggest_timing:
        suggest_timing(args.suggest_timing, args.data, default_policy, args.sampler)
        return
    budgets = tuple(int(b) for b in args.budgets.split(","))
    sur = surrogate(args.data, args.task)
    if args.policy:
        policies = [
            EarlyStopping(
                grace_steps=int(g), reduction_factor=int(f), brackets=int(b[0]) if b else 1
            ).model_dump()
            for g, f, *b in (p.split(":") for p in args.policy)
        ]
    elif args.embedded:  # set per study size below
        policies = []
    else:  # the default resolved at each budget: its brackets depend on the budget
        policies = list({json.dumps(p, sort_keys=True): p for p in _defaults(sur, budgets).values()}.values())
    names = args.methods or (
        [f"{DEFAULT_SAMPLER} + adaptive ASHA (default)"] if args.embedded else list(methods())
    )
    # (trials, in flight, step budget) of each replayed study: the embedded default's, or --trials'
    sizes: list[dict[str, Any]] = [{}]
    if args.embedded and args.trials:
        sizes = [
            {"max_trials": int(n), "workers": WORKERS, "stop_budget": None} for n in args.trials.split(",")
        ]
    elif args.embedded:
        sizes = [
            {
                "max_trials": DEFAULT_TRIALS,
                "workers": DEFAULT_PARALLEL,
                "stop_budget": args.embedded_budget or None,
            }
        ]

    def policies_for(size: dict[str, Any]) -> list[dict[str, Any]]:
        """--policy, else the default as a study of this size resolves it (its trials, its budget)."""
        if policies or not size:
            return policies
        return [_resolved(default_policy.model_dump(), sur, size["stop_budget"], size["max_trials"])]

    def key(r: dict[str, Any]) -> tuple[Any, ...]:
        size = (r.get("max_trials"), r.get("workers")) if r.get("embedded") else (None, None)
        return (r["method"], r["seed"], json.dumps(r["policy"], sort_keys=True), r.get("stop_budget"), *size)

    rows = []
    if args.results and args.results.exists():
        rows = [json.loads(line) for line in args.results.read_text().splitlines() if line.strip()]
    rows = [
        r for r in rows if bool(r.get("embedded")) == args.embedded and r.get("task", "tiny") == args.task
    ]
    for r in rows:  # rows of the embedded default written before sizes were recorded
        if r.get("embedded"):
            r.setdefault("max_trials", DEFAULT_TRIALS)
            r.setdefault("workers", DEFAULT_PARALLEL)
    for r in rows:  # one spelling per policy: resolved, and plain ASHA where stored before brackets
        r["policy"] = _resolved(r["policy"], sur, None)
    keyed = {key(r): r for r in rows}
    rows = list(keyed.values())  # a run stored twice (under two spellings of its policy) counts once
    if not args.report_only:
        done = set(keyed)
        scheduler_of = {m: scheduler for m, (_, scheduler) in methods().items()}
        jobs = [
            job
            for size in sizes
            for s in range(args.seeds)
            for i, p in enumerate(policies_for(size))
            for m in names
            if (i == 0 or scheduler_of[m] != "none")  # a policy changes nothing without early stopping
            and key(
                job := {
                    "method": m,
                    "seed": s,
                    "policy": p,
                    "data": args.data,
                    "task": args.task,
                    "budgets": budgets,
                    "embedded": args.embedded,
                    **size,
                }
            )
            not in done
        ]
        if importlib.util.find_spec("hpbandster") is None:
            print("BOHB skipped: hpbandster is not installed (pip install -e '.[bench]')")
        t0 = time.perf_counter()
        with (
            open(args.results, "a") if args.results else contextlib.nullcontext() as sink,
            ProcessPoolExecutor(max_workers=args.jobs) as pool,
        ):
            for n, (job, row) in enumerate(zip(jobs, pool.map(run_one, jobs), strict=True), 1):
                row.update({k: job[k] for k in ("embedded", "task")})
                if args.embedded:
                    row.update({k: job[k] for k in ("max_trials", "workers", "stop_budget")})
                else:
                    row["stop_budget"] = None
                rows.append(row)
                if sink:
                    sink.write(json.dumps(row) + "\n")
                    sink.flush()
                print(
                    f"{n}/{len(jobs)} runs ({row['method']}, seed {row['seed']}), "
                    f"{time.perf_counter() - t0:.0f} s",
                    flush=True,
                )
    if args.embedded:
        report_embedded(rows, sur)
    else:
        report([r for r in rows if all(str(b) in r["best_true"] for b in budgets)], sur, budgets)


if __name__ == "__main__":
    main()
