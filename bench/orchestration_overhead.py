"""Orchestration overhead: what the sweep stack costs per trial, and what the sampler costs per suggestion.

1. Per-trial overhead of the whole stack (Ray Tune + the Optuna sampler + the SQL study, with the
   live table and all study bookkeeping) running a trainable that returns at once, against plain
   Optuna `study.optimize` with the same objective, sampler and storage kind (a SQLite file).
   Ray's start-up is timed separately: it is paid once per sweep, not per trial.
2. The sampler's time per suggestion (`study.ask()` + the space's define-by-run suggestions) on a
   study already holding 100 and 500 completed trials, for each sampler asked for.

Usage: .venv/bin/python bench/orchestration_overhead.py [--trials 40] [--parallel 2]
       [--samplers SAMPLERS] [--history 100,500] [--suggestions 5]
"""

from __future__ import annotations

import argparse
import io
import math
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import optuna

from tuner.samplers import DEFAULT_SAMPLER, SAMPLERS, make_sampler
from tuner.space import SearchSpace, load_space
from tuner.study import create_study, open_storage

SPACE = "mogrifier_lstm"  # Table 2.4: 9 params, log and integer scales, two conditional


def synthetic_loss(params: dict[str, Any]) -> float:
    """A cheap deterministic objective over the space (distance from a fixed point, log-scaled)."""
    target = {"learning_rate": 0.002, "l2_penalty": 1e-4, "input_dropout": 0.5, "output_dropout": 0.4}
    total = 4.0
    for name, value in params.items():
        if name in target and isinstance(value, float):
            a, b = (
                (math.log(value), math.log(target[name]))
                if name in ("learning_rate", "l2_penalty")
                else (value, target[name])
            )
            total += (a - b) ** 2
    return total


def instant_trial(config: dict[str, Any]) -> dict[str, Any]:
    """A Ray Tune trainable that reports one evaluation and returns at once."""
    from ray import tune

    from tuner.orchestration.trainable import FINAL

    params = config["trainer"]  # fixed settings + sampled params; synthetic_loss reads tuned names only
    loss = synthetic_loss(params)
    tune.report({"step": 1, "val_loss": loss})
    return {FINAL: True, "step": 1, "val_loss": loss, "best_val_loss": loss, "best_step": 1}


def bench_stack(
    space: SearchSpace, trials: int, parallel: int, sampler: str, workdir: Path
) -> dict[str, float]:
    import ray

    from tuner.orchestration import run_sweep
    from tuner.orchestration.ray_runtime import start_ray

    t0 = time.perf_counter()
    start_ray(None, num_cpus=parallel, verbose=False)
    ray_start = time.perf_counter() - t0
    db = f"sqlite:///{workdir / 'stack.db'}"
    create_study(
        "stack",
        storage_url=db,
        space=space.with_overrides(
            fixed={"max_steps": 1, "eval_every": 1, "dataset": "builtin", "data_dir": None}
        ),
        sampler=sampler,
        n_trials=trials,
        parallel=parallel,
        scheduler="none",
        storage_path=workdir / "stack",
        seed=0,
    )
    t0 = time.perf_counter()
    run_sweep("stack", db, out=io.StringIO(), trainable=instant_trial, cpus_per_trial=1)
    sweep = time.perf_counter() - t0
    ray.shutdown()
    # Steady state: throughput between the first and the last completion, once workers are up.
    done = sorted(t.datetime_complete for t in optuna.load_study(study_name="stack", storage=db).trials)
    steady = (done[-1] - done[0]).total_seconds() / max(1, len(done) - 1)
    return {
        "ray_start_s": ray_start,
        "sweep_s": sweep,
        "per_trial_s": sweep / trials,
        "steady_s": steady,
        "first_s": (
            done[0] - min(t.datetime_start for t in optuna.load_study(study_name="stack", storage=db).trials)
        ).total_seconds(),
    }


def bench_plain(space: SearchSpace, trials: int, sampler: str, workdir: Path) -> dict[str, float]:
    storage = open_storage(f"sqlite:///{workdir / 'plain.db'}")
    study = optuna.create_study(study_name="plain", storage=storage, sampler=make_sampler(sampler, seed=0))
    t0 = time.perf_counter()
    study.optimize(lambda trial: synthetic_loss(space.suggest(trial)), n_trials=trials)
    total = time.perf_counter() - t0
    return {"sweep_s": total, "per_trial_s": total / trials}


def fill_history(space: SearchSpace, n: int, workdir: Path) -> str:
    """A SQLite study holding `n` completed trials of the space (random points, synthetic values)."""
    url = f"sqlite:///{workdir / f'history-{n}.db'}"
    study = optuna.create_study(study_name="history", storage=open_storage(url))
    rng = np.random.default_rng(n)
    sampler = optuna.samplers.RandomSampler(seed=int(rng.integers(1 << 30)))
    scratch = optuna.create_study(sampler=sampler)
    trials = []
    for _ in range(n):
        t = scratch.ask()
        params = space.suggest(t)
        trials.append(
            optuna.trial.create_trial(
                params=params, distributions=t.distributions, value=synthetic_loss(params)
            )
        )
        scratch.tell(t, 0.0)
    study.add_trials(trials)
    return url


def bench_sampler(space: SearchSpace, url: str, sampler: str, suggestions: int) -> float:
    """Median seconds per suggestion; each suggestion is told before the next (history grows by one)."""
    study = optuna.load_study(
        study_name="history", storage=open_storage(url), sampler=make_sampler(sampler, seed=0)
    )
    times = []
    for _ in range(suggestions):
        t0 = time.perf_counter()
        trial = study.ask()
        params = space.suggest(trial)
        times.append(time.perf_counter() - t0)
        study.tell(trial, synthetic_loss(params))
    return statistics.median(times)


def main() -> None:
    import torch

    torch.set_num_threads(1)  # as the sweep driver does (tuner/orchestration/sweep.py), for all rows
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=40)
    parser.add_argument("--parallel", type=int, default=2)
    parser.add_argument("--sampler", default=DEFAULT_SAMPLER, help="sampler of the stack comparison")
    parser.add_argument(
        "--samplers", default=",".join(SAMPLERS), help="samplers timed per suggestion ('' to skip)"
    )
    parser.add_argument("--history", default="100,500", help="completed trials before timing suggestions")
    parser.add_argument("--suggestions", type=int, default=5)
    args = parser.parse_args()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    space = load_space(SPACE)
    with tempfile.TemporaryDirectory(prefix="rnntune-bench-") as tmp:
        workdir = Path(tmp)
        print(
            f"space {SPACE} ({len(space.params)} params), SQLite storage, sampler {args.sampler}, "
            f"{args.trials} trials, {args.parallel} in flight"
        )
        stack = bench_stack(space, args.trials, args.parallel, args.sampler, workdir)
        plain = bench_plain(space, args.trials, args.sampler, workdir)
        print(f"  Ray start-up (once per sweep):          {stack['ray_start_s']:7.2f} s")
        print(f"  first trial (worker start-up included): {stack['first_s']:7.2f} s")
        print(
            f"  rnntune stack, whole sweep:             {stack['per_trial_s'] * 1000:7.1f} ms/trial "
            f"({stack['sweep_s']:.1f} s total)"
        )
        print(f"  rnntune stack, steady state:            {stack['steady_s'] * 1000:7.1f} ms/trial")
        print(
            f"  plain optuna study.optimize:            {plain['per_trial_s'] * 1000:7.1f} ms/trial "
            f"({plain['sweep_s']:.1f} s total)"
        )
        print(
            f"  overhead of the stack, steady state:    {(stack['steady_s'] - plain['per_trial_s']) * 1000:7.1f} ms/trial"
        )
        if not args.samplers:
            return
        print(f"\nsampler time per suggestion (median of {args.suggestions}), SQLite storage:")
        histories = [int(h) for h in args.history.split(",")]
        urls = {n: fill_history(space, n, workdir) for n in histories}
        header = "  sampler " + "".join(f"{f'at {n} trials':>16}" for n in histories)
        print(header)
        for name in args.samplers.split(","):
            cells = "".join(
                f"{bench_sampler(space, urls[n], name, args.suggestions) * 1000:13.1f} ms" for n in histories
            )
            print(f"  {name:<7} {cells}")


if __name__ == "__main__":
    main()
