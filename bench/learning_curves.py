"""Record real validation-loss curves of the `tiny` space with rnntune's own trainer.

Each configuration is drawn from the tiny space (scrambled Sobol points through `SearchSpace.suggest`,
so conditional parameters and scales are the space's own) and trained with the space's fixed settings
to `max_steps`, reporting the 2TA validation loss at every `eval_every` step. Some configurations are
trained again with other trainer seeds, to measure the seed noise. The curves, the settings used, the
seeds and the git commit go to a gzipped JSON file that `bench/multifidelity.py` replays.

    nice -n 10 .venv/bin/python -m bench.learning_curves --workers 2     # ~25 min on 2 cores
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")  # before torch loads: one thread per worker

import argparse
import gzip
import json
import math
import subprocess
import tempfile
import time
import warnings
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "data" / "tiny_curves.json.gz"


def draw_configs(space_name: str, n: int, seed: int) -> list[dict[str, Any]]:
    """`n` points of the space from a scrambled Sobol sequence (Optuna's QMCSampler)."""
    import optuna

    from tuner.space import load_space

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    space = load_space(space_name)
    with warnings.catch_warnings():  # QMCSampler is experimental in Optuna 5; chosen on purpose
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        sampler = optuna.samplers.QMCSampler(
            qmc_type="sobol", scramble=True, seed=seed, warn_independent_sampling=False
        )
    study = optuna.create_study(sampler=sampler)
    configs = []
    for _ in range(n):
        trial = study.ask()
        configs.append(space.suggest(trial))
        study.tell(trial, 0.0)
    return configs


def run_one(job: dict[str, Any]) -> dict[str, Any]:
    """Train one configuration with one trainer seed; return its curve {step: 2TA val loss}."""
    import torch

    torch.set_num_threads(1)
    from trainer import make_config, train

    curve: dict[int, float] = {}
    max_steps = int(job["fixed"].get("max_steps", 0))

    def report(metrics: dict[str, Any]) -> bool:
        curve[int(metrics["step"])] = float(metrics["val_loss"])
        # Stopping at the last evaluation skips the trainer's final test-set pass: the curve is all
        # this benchmark needs, and that pass would cost a quarter of the run.
        return int(metrics["step"]) >= max_steps

    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="curves-") as run_dir:
        cfg = {**job["fixed"], **job["params"], "seed": job["seed"], "run_dir": run_dir}
        try:
            train(make_config(cfg), report=report)
            error = None
        except Exception as err:  # a diverged configuration is data too: its curve so far
            error = f"{type(err).__name__}: {err}"
    return {
        "config": job["config"],
        "seed": job["seed"],
        "params": job["params"],
        "curve": {str(k): (v if math.isfinite(v) else None) for k, v in sorted(curve.items())},
        "error": error,
        "wall_s": round(time.perf_counter() - t0, 2),
    }


def git_commit() -> str:
    try:
        return subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--space", default="tiny")
    ap.add_argument("--configs", type=int, default=200, help="configurations (default 200)")
    ap.add_argument("--repeat-configs", type=int, default=6, help="configurations run with extra seeds")
    ap.add_argument(
        "--repeat-seeds", type=int, default=2, help="extra trainer seeds per repeated configuration"
    )
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0, help="seed of the Sobol sequence")
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="override a fixed setting of the space (recorded in the file)",
    )
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument(
        "--finish",
        action="store_true",
        help="write the data file from the runs recorded so far, without running more",
    )
    args = ap.parse_args()

    from trainer.config import parse_set
    from tuner.space import load_space

    overrides = parse_set(args.set)
    space = load_space(args.space).with_overrides(fixed=overrides or None)
    fixed = dict(space.fixed)
    configs = draw_configs(args.space, args.configs, args.seed)
    # The repeated seeds of the first configurations come right after those configurations, so
    # an interrupted recording (`--finish`) still has the seed noise.
    jobs = [{"config": i, "seed": 0, "params": p, "fixed": fixed} for i, p in enumerate(configs)]
    repeats = [
        {"config": i, "seed": s, "params": configs[i], "fixed": fixed}
        for i in range(min(args.repeat_configs, args.configs))
        for s in range(1, args.repeat_seeds + 1)
    ]
    jobs = jobs[: args.repeat_configs] + repeats + jobs[args.repeat_configs :]

    # Finished runs are appended to a journal as they end, so an interrupted recording resumes.
    journal = args.out.with_suffix(".partial.jsonl")
    runs: list[dict[str, Any]] = []
    previous: dict[str, Any] = {}
    if args.out.exists():  # a recording finished early (`--finish`) is continued, not redone
        with gzip.open(args.out, "rt") as f:
            previous = json.load(f)
        if previous["settings"] != fixed:
            raise SystemExit(f"{args.out} was recorded with other settings; pass --out for a new file")
        runs = previous["runs"]
    if journal.exists():
        runs += [json.loads(line) for line in journal.read_text().splitlines()]
    done = {(r["config"], r["seed"]) for r in runs}
    todo = [] if args.finish else [job for job in jobs if (job["config"], job["seed"]) not in done]
    t0 = time.perf_counter()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with ProcessPoolExecutor(max_workers=args.workers) as pool, open(journal, "a") as log:
        futures = [pool.submit(run_one, job) for job in todo]
        for n, fut in enumerate(as_completed(futures), 1):
            runs.append(fut.result())
            log.write(json.dumps(runs[-1]) + "\n")
            log.flush()
            if n % 10 == 0 or n == len(todo):
                print(f"{len(runs)}/{len(jobs)} runs, {time.perf_counter() - t0:.0f} s", flush=True)
    runs.sort(key=lambda r: (r["config"], r["seed"]))
    data = {
        "space": space.to_dict(),
        "settings": fixed,
        "overrides": overrides,
        "sobol_seed": args.seed,
        "commit": git_commit(),
        "workers": args.workers,
        "run_wall_s": round(sum(r["wall_s"] for r in runs), 1),  # summed over runs, all calls
        "planned_runs": len(jobs),
        "runs": runs,
    }
    if previous.get("settings_note"):  # how older runs' settings map onto the current names
        data["settings_note"] = previous["settings_note"]
    with gzip.open(args.out, "wt") as f:
        json.dump(data, f, separators=(",", ":"))
    journal.unlink()
    print(
        f"{len(runs)} of {len(jobs)} planned curves ({time.perf_counter() - t0:.0f} s in this call) -> "
        f"{args.out} ({args.out.stat().st_size // 1024} kB)"
    )


if __name__ == "__main__":
    main()
