"""Orchestration overhead: what the sweep stack costs per trial, and what the sampler costs per suggestion.

1. Per-trial overhead of the whole stack (Ray Tune + the Optuna sampler + the SQL study, with the
   live table and all study bookkeeping) running a trainable that returns at once, against plain
   Optuna `study.optimize` with the same objective, sampler and storage kind (a SQLite file).
   Ray's start-up is timed separately: it is paid once per sweep, not per trial.
2. The sampler's time per suggestion (`study.ask()` + the space's define-by-run suggestions) on a
   study already holding 100 and 500 finished trials, for each sampler asked for, with `--pending`
   trials RUNNING (a sweep's trials in flight: each timed trial is told after the oldest pending
   one, so as many stay pending). `--pruned` makes the history an early-stopped sweep's: every
   trial reports at steps 50, 150 and 200 of a 200-step task as far as it got, 2/3 pruned at 50
   and 2/3 of the rest at 150 (ASHA with reduction factor 3), which the default multi-fidelity
   sampler fits at their steps. `--trials 0` skips part 1.

Usage: .venv/bin/python -m bench.orchestration_overhead [--trials 40] [--parallel 2]
       [--samplers SAMPLERS] [--history 100,500] [--suggestions 5] [--pending 0] [--pruned]
e.g.   .venv/bin/python -m bench.orchestration_overhead --trials 0 --samplers gp_fidelity \
           --history 1000,2000,5000 --pending 64 --pruned --suggestions 3
       .venv/bin/python -m bench.orchestration_overhead --trials 0 --history 5000 --pending 64 --pruned \
           --samplers gp_fidelity@200,gp_fidelity@250,gp_fidelity@300,gp_fidelity@400   # the cap
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

from tuner.samplers import DEFAULT_SAMPLER, SAMPLERS, Subset, make_sampler
from tuner.space import SearchSpace, load_space
from tuner.storage.study import open_storage

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

    from tuner.sweeps.trial.lifecycle import FINAL

    params = config["trainer"]  # fixed settings + sampled params; synthetic_loss reads tuned names only
    loss = synthetic_loss(params)
    tune.report({"step": 1, "val_loss": loss})
    return {FINAL: True, "step": 1, "val_loss": loss, "best_val_loss": loss, "best_step": 1}


def bench_stack(
    space: SearchSpace, trials: int, parallel: int, sampler: str, workdir: Path
) -> dict[str, float]:
    import ray

    from tuner.sweeps.cluster.ray_runtime import start_ray
    from tuner.sweeps.drive.run import run_sweep
    from tuner.sweeps.study.create import create_study

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
    run_sweep("stack", db, out=io.StringIO(), trainable=instant_trial)
    sweep = time.perf_counter() - t0
    ray.shutdown()
    # Steady state: throughput between the first and the last completion, once workers are up.
    finished = optuna.load_study(study_name="stack", storage=db).trials
    done = sorted(t.datetime_complete for t in finished if t.datetime_complete is not None)
    started = min(t.datetime_start for t in finished if t.datetime_start is not None)
    steady = (done[-1] - done[0]).total_seconds() / max(1, len(done) - 1)
    return {
        "ray_start_s": ray_start,
        "sweep_s": sweep,
        "per_trial_s": sweep / trials,
        "steady_s": steady,
        "first_s": (done[0] - started).total_seconds(),
    }


def bench_plain(space: SearchSpace, trials: int, sampler: str, workdir: Path) -> dict[str, float]:
    storage = open_storage(f"sqlite:///{workdir / 'plain.db'}")
    study = optuna.create_study(study_name="plain", storage=storage, sampler=make_sampler(sampler, seed=0))
    t0 = time.perf_counter()
    study.optimize(lambda trial: synthetic_loss(space.suggest(trial)), n_trials=trials)
    total = time.perf_counter() - t0
    return {"sweep_s": total, "per_trial_s": total / trials}


PRUNED_STEPS = (50, 150, 200)  # --pruned: the rungs of ASHA 50:3 on a 200-step task, and the end


def curve(params: dict[str, Any], step: int) -> float:
    """The synthetic loss at `step` of a 200-step run (a learning curve ending at synthetic_loss)."""
    return synthetic_loss(params) + 50.0 / step - 0.25


def fill_history(space: SearchSpace, n: int, workdir: Path, pruned: bool) -> str:
    """A SQLite study holding `n` finished trials of the space (random points, synthetic values):
    all COMPLETE, or with `pruned` early-stopped as ASHA 50:3 would (see the module's doc)."""
    url = f"sqlite:///{workdir / f'history-{n}-{int(pruned)}.db'}"
    study = optuna.create_study(study_name="history", storage=open_storage(url))
    if pruned:
        study.set_user_attr("task", {"max_steps": PRUNED_STEPS[-1], "eval_every": 25})
    rng = np.random.default_rng(n)
    sampler = optuna.samplers.RandomSampler(seed=int(rng.integers(1 << 30)))
    scratch = optuna.create_study(sampler=sampler)
    trials = []
    for i in range(n):
        t = scratch.ask()
        params = space.suggest(t)
        if not pruned:
            trials.append(
                optuna.trial.create_trial(
                    params=params, distributions=t.distributions, value=synthetic_loss(params)
                )
            )
        else:
            reached = PRUNED_STEPS[: 1 + (i % 3 == 0) + (i % 9 == 0)]
            trials.append(
                optuna.trial.create_trial(
                    params=params,
                    distributions=t.distributions,
                    state=optuna.trial.TrialState.COMPLETE
                    if len(reached) == 3
                    else optuna.trial.TrialState.PRUNED,
                    value=curve(params, reached[-1]) if len(reached) == 3 else None,
                    intermediate_values={s: curve(params, s) for s in reached},
                )
            )
        scratch.tell(t, 0.0)
    study.add_trials(trials)
    return url


def build(sampler: str) -> optuna.samplers.BaseSampler:
    """`make_sampler(name)`, or for `name@CAP` the sampler with its subset capped at CAP points
    (a quarter of them the best, a quarter the most recent): how the default's cap was chosen."""
    name, _, cap = sampler.partition("@")
    if not cap:
        return make_sampler(name, seed=0)
    return make_sampler(name, seed=0, subset=Subset(cap=int(cap), best=int(cap) // 4, recent=int(cap) // 4))


def bench_sampler(
    space: SearchSpace, url: str, sampler: str, suggestions: int, pending: int
) -> tuple[float, float]:
    """Median seconds per suggestion, wall clock and this process's CPU time (which other processes
    on a shared machine do not inflate), with `pending` trials RUNNING; after each suggestion the
    oldest pending trial is told (the history grows by one, the pending count stays)."""
    study = optuna.load_study(study_name="history", storage=open_storage(url))
    study.sampler = optuna.samplers.RandomSampler(seed=0)  # the trials already in flight
    running = []
    for _ in range(pending):
        trial = study.ask()
        running.append((trial, space.suggest(trial)))
    study.sampler = build(sampler)
    times, cpu = [], []
    for _ in range(suggestions):
        t0, c0 = time.perf_counter(), time.process_time()
        trial = study.ask()
        params = space.suggest(trial)
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
        running.append((trial, params))
        oldest, its_params = running.pop(0)
        study.tell(oldest, synthetic_loss(its_params))
    return statistics.median(times), statistics.median(cpu)


def main() -> None:
    import torch

    torch.set_num_threads(1)  # as the sweep driver does (tuner/sweeps/drive/run.py), for all rows
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=40)
    parser.add_argument("--parallel", type=int, default=2)
    parser.add_argument("--sampler", default=DEFAULT_SAMPLER, help="sampler of the stack comparison")
    parser.add_argument(
        "--samplers",
        default=",".join(SAMPLERS),
        help="samplers timed per suggestion ('' to skip); NAME@CAP caps the GP's subset at CAP points",
    )
    parser.add_argument("--history", default="100,500", help="finished trials before timing suggestions")
    parser.add_argument("--suggestions", type=int, default=5)
    parser.add_argument("--pending", type=int, default=0, help="trials RUNNING while timing suggestions")
    parser.add_argument("--pruned", action="store_true", help="an early-stopped history (see above)")
    args = parser.parse_args()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    space = load_space(SPACE)
    with tempfile.TemporaryDirectory(prefix="rnntune-bench-") as tmp:
        workdir = Path(tmp)
        if args.trials > 0:
            bench_whole_stack(space, args, workdir)
        if not args.samplers:
            return
        print(
            f"\nsampler time per suggestion (median of {args.suggestions}; wall clock / CPU time), SQLite storage, "
            f"{args.pending} pending, history {'early-stopped (ASHA 50:3)' if args.pruned else 'all COMPLETE'}:"
        )
        histories = [int(h) for h in args.history.split(",")]
        urls = {n: fill_history(space, n, workdir, args.pruned) for n in histories}
        print("  sampler          " + "".join(f"{f'at {n} trials':>22}" for n in histories), flush=True)
        for name in args.samplers.split(","):
            cells = ""
            for n in histories:
                wall, cpu = bench_sampler(space, urls[n], name, args.suggestions, args.pending)
                cells += f"{f'{wall:.2f} s / {cpu:.2f} s':>22}"
            print(f"  {name:<16} {cells}", flush=True)


def bench_whole_stack(space: SearchSpace, args: argparse.Namespace, workdir: Path) -> None:
    """Part 1: the stack's overhead per trial against plain Optuna, printed."""
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


if __name__ == "__main__":
    main()
