"""Measure what one training step and one evaluation cost, for every configuration of the recorded
`tiny` curves, with rnntune's own trainer on one CPU thread.

Why: `bench/data/tiny_curves.json.gz` holds each run's whole wall time, but those runs were
recorded two at a time on a shared two-core machine, so their `wall_s` mixes the configuration's
own cost with the other worker's load (some runs took 30 times their neighbours). A cost-aware
sampler, and the benchmark that replays it (`bench/cost_aware.py`), need the cost a configuration
itself implies — mostly its `mogrifier_rounds` and `mogrifier_rank` — measured alone.

How: each distinct configuration of the curves file (in the order it first appears there) is built
with the space's fixed settings as the curves were recorded (the file's `settings`, so
`max_eval_tokens` is the recorded one) through `SearchSpace.trial_config`, and trained by the real
`trainer.loop.Trainer.run` for `--steps` steps (default 75) with the recorded `eval_every` (25), so
the 2TA averages are in the state they are in at those steps of a real run. The instance's
`train_step` and `_evaluation` are wrapped with a timer: `train_step_s` is the median over the
steps after `--warmup` (default 5), `eval_s` the median of the evaluations at every `eval_every`
step (the 2TA validation passes — raw, short and long weights — and the checkpoint writes, all
that the trainer does there). The run stops through its report callback at the last step, so
the final test-set pass is not timed (the replay never runs it either).

One process per worker with `OMP_NUM_THREADS=1` and `torch.set_num_threads(1)`, as a sweep's
trials run; run it niced and with one worker on a shared machine. Other processes on the machine
only ever add time, and a median over steps does not remove a slowdown that lasts the whole
configuration, so every configuration is measured in `--passes` passes (default 2; the second in
reverse order, so a busy period hits other configurations) and keeps each figure's smallest value
over its passes (all passes' values are recorded too). Finished measurements are appended to a
journal as they end, so an interrupted measurement resumes.

    nice -n 10 .venv/bin/python -m bench.step_costs --workers 1     # ~1 h on one core, 2 passes
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")  # before torch loads: one thread per worker

import argparse
import gzip
import json
import platform
import shlex
import statistics
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from bench.learning_curves import git_commit

ROOT = Path(__file__).resolve().parents[1]
CURVES = ROOT / "bench" / "data" / "tiny_curves.json.gz"
OUT = ROOT / "bench" / "data" / "tiny_step_costs.json"


def distinct_configs(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The distinct `params` of the recorded runs, in the order they first appear."""
    seen: dict[str, dict[str, Any]] = {}
    for run in runs:
        seen.setdefault(json.dumps(run["params"], sort_keys=True), run["params"])
    return list(seen.values())


def measure_one(job: dict[str, Any]) -> dict[str, Any]:
    """Train one configuration for `job["steps"]` steps; time each step and each evaluation."""
    import torch

    torch.set_num_threads(1)
    from trainer import make_config
    from trainer.loop import Trainer
    from tuner.space import SearchSpace

    space = SearchSpace.from_dict(job["space"])
    steps, evals = [], []
    t_start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="step-costs-") as run_dir:
        cfg = space.trial_config(job["params"], run_dir)
        cfg.update(max_steps=job["steps"], seed=0)
        trainer = Trainer(make_config(cfg))
        train_step, evaluation = trainer.train_step, trainer._evaluation

        def timed_step() -> float:
            t0 = time.perf_counter()
            loss = train_step()
            steps.append(time.perf_counter() - t0)
            return loss

        def timed_evaluation(*args: Any, **kwargs: Any) -> dict[str, Any]:
            t0 = time.perf_counter()
            metrics = evaluation(*args, **kwargs)
            evals.append(time.perf_counter() - t0)
            return metrics

        trainer.train_step = timed_step  # type: ignore[method-assign]
        trainer._evaluation = timed_evaluation  # type: ignore[method-assign]
        error = None
        try:
            # Stopping at the last evaluation skips the final test-set pass, which is no step cost.
            trainer.run(report=lambda m: int(m["step"]) >= job["steps"])
        except Exception as err:  # a diverged configuration still has the steps it took
            error = f"{type(err).__name__}: {err}"
    timed = steps[job["warmup"] :]
    quartiles = statistics.quantiles(timed, n=4) if len(timed) >= 2 else [float("nan")] * 3
    return {
        "config": job["config"],
        "pass": job["pass"],
        "params": job["params"],
        "train_step_s": round(statistics.median(timed), 6) if timed else None,
        "train_step_iqr_s": [round(quartiles[0], 6), round(quartiles[2], 6)],
        "eval_s": round(statistics.median(evals), 5) if evals else None,
        "evals_s": [round(e, 5) for e in evals],
        "steps_timed": len(timed),
        "wall_s": round(time.perf_counter() - t_start, 2),
        "load_avg": round(os.getloadavg()[0], 2),
        "error": error,
    }


def least(passes: list[dict[str, Any]]) -> dict[str, Any]:
    """One configuration's figures over its passes: the pass with the fastest steps (its IQR, its
    evaluations), `eval_s` the least of the passes' medians, and every pass's medians."""
    timed = [p for p in passes if p["train_step_s"] is not None] or passes
    best = dict(min(timed, key=lambda p: p["train_step_s"] or 0.0))
    evals = [p["eval_s"] for p in passes if p["eval_s"] is not None]
    best["eval_s"] = min(evals) if evals else None
    best["passes"] = [
        {k: p[k] for k in ("pass", "train_step_s", "eval_s", "load_avg", "error")} for p in passes
    ]
    del best["pass"]
    return best


def machine() -> dict[str, Any]:
    """What the timings depend on: CPU, cores, threads, torch and Python."""
    import torch

    cpu = platform.processor() or "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpu": cpu,
        "cpu_count": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
        "torch_threads": 1,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--curves", type=Path, default=CURVES)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--steps", type=int, default=75, help="steps trained per configuration (default 75)")
    ap.add_argument("--warmup", type=int, default=5, help="first steps left out of the median (default 5)")
    ap.add_argument("--workers", type=int, default=1, help="processes (default 1: timings alone)")
    ap.add_argument(
        "--passes", type=int, default=2, help="measurements per configuration; the least kept (default 2)"
    )
    ap.add_argument("--limit", type=int, default=None, help="only the first N configurations (a test)")
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="override a recorded fixed setting (recorded in the file)",
    )
    args = ap.parse_args()

    from trainer.config import parse_set
    from tuner.space import load_space

    with gzip.open(args.curves, "rt") as f:
        curves = json.load(f)
    overrides = parse_set(args.set)
    settings = {**curves["settings"], **overrides}
    # The space as the curves were recorded: its file's fixed settings, then the recorded ones.
    space = load_space(curves["space"]["name"]).with_overrides(fixed=settings)
    configs = distinct_configs(curves["runs"])[: args.limit]
    order = list(enumerate(configs))
    jobs = [
        {
            "config": i,
            "pass": k,
            "params": p,
            "space": space.to_dict(),
            "steps": args.steps,
            "warmup": args.warmup,
        }
        for k in range(args.passes)
        for i, p in (order if k % 2 == 0 else order[::-1])  # odd passes backwards
    ]

    journal = args.out.with_suffix(".partial.jsonl")
    results: dict[tuple[int, int], dict[str, Any]] = {}  # (config, pass) -> measurement
    if journal.exists():
        for line in journal.read_text().splitlines():
            row = json.loads(line)
            row.setdefault("pass", 0)
            if row["config"] < len(configs) and row["params"] == configs[row["config"]]:
                results[row["config"], row.get("pass", 0)] = row  # the same configuration: kept
    todo = [job for job in jobs if (job["config"], job["pass"]) not in results]
    print(
        f"{len(configs)} configurations x {args.passes} passes, {len(results)} measured before, "
        f"{len(todo)} to measure",
        flush=True,
    )
    load_start = os.getloadavg()
    t0 = time.perf_counter()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with ProcessPoolExecutor(max_workers=args.workers) as pool, open(journal, "a") as log:
        for n, row in enumerate(pool.map(measure_one, todo), 1):
            results[row["config"], row["pass"]] = row
            log.write(json.dumps(row) + "\n")
            log.flush()
            p = row["params"]
            print(
                f"{n}/{len(todo)} pass {row['pass']} config {row['config']}: rounds {p.get('mogrifier_rounds')} "
                f"rank {p.get('mogrifier_rank', '-')}: {1000 * (row['train_step_s'] or 0):.1f} ms/step, "
                f"eval {1000 * (row['eval_s'] or 0):.0f} ms, load {row['load_avg']}, "
                f"{time.perf_counter() - t0:.0f} s",
                flush=True,
            )
    rows = [least([results[i, k] for k in range(args.passes)]) for i in range(len(configs))]
    data = {
        "curves": str(args.curves.relative_to(ROOT) if args.curves.is_relative_to(ROOT) else args.curves),
        "space": curves["space"]["name"],
        "settings": settings,
        "overrides": overrides,
        "eval_every": settings["eval_every"],
        "steps": args.steps,
        "warmup": args.warmup,
        "workers": args.workers,
        "passes": args.passes,
        "machine": machine(),
        "load_avg_start": [round(x, 2) for x in load_start],
        "load_avg_end": [round(x, 2) for x in os.getloadavg()],
        "commit": git_commit(),
        "command": " ".join(
            shlex.quote(a) for a in [Path(sys.executable).name, "-m", "bench.step_costs", *sys.argv[1:]]
        ),
        "measure_s": round(time.perf_counter() - t0, 1),
        "configs": rows,
    }
    args.out.write_text(json.dumps(data, indent=1) + "\n")
    journal.unlink()
    step = sorted(r["train_step_s"] for r in rows if r["train_step_s"])
    print(
        f"{len(rows)} configurations -> {args.out}; ms/step min {1000 * step[0]:.1f}, "
        f"median {1000 * statistics.median(step):.1f}, max {1000 * step[-1]:.1f}"
    )


if __name__ == "__main__":
    main()
