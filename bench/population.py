"""Population-based training against the default search, on real training at CPU scale.

Every method gets the same training: MEMBERS full trials' worth of steps on the `tiny` space (the
embedded default task, 200 steps a trial). `pbt` and `pb2` train MEMBERS members to the end (their
copies and perturbations every `--interval` steps); `default` is what a user gets without options,
the default sampler (gp_fidelity) with the default early stopping (adaptive ASHA), 4 trials in flight,
ended by the step budget `--budget MEMBERS` (a pruned trial counts the steps it ran). The figures:
per method and seed, the best validation loss of a COMPLETE trial (what each search optimises), the
test loss of that trial's checkpoint (what a user takes away), the steps trained in all and the
wall-clock; then the means over seeds and how many seeds each population method beats `default` on.
Every run is a real sweep through `run_sweep` (real Ray, the trainer, SQLite), one after another.

    nice -n 10 .venv/bin/python -m bench.population --seeds 3 --results runs/bench/population.jsonl
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from optuna.trial import TrialState

from tuner.storage.study import load_study
from tuner.sweeps.drive.run import run_sweep
from tuner.sweeps.study.create import create_study

METHODS = ("pbt", "pb2", "default")
MEMBERS = 8
SPACE = "tiny"
MAX_STEPS = 200  # tiny's


def run_one(method: str, seed: int, members: int, interval: int, num_cpus: int) -> dict[str, Any]:
    """One sweep of `method` at `seed`; its figures."""
    with tempfile.TemporaryDirectory(prefix=f"bench-pop-{method}-") as tmp:
        db = f"sqlite:///{tmp}/db.sqlite"
        if method == "default":
            fields: dict[str, Any] = dict(n_trials=members * 6, parallel=4, budget=float(members))
        else:
            fields = dict(
                scheduler=method,
                n_trials=members,
                parallel=members,
                cpus_per_trial=num_cpus / members,
                perturbation_interval=interval,
            )
        create_study("bench", storage_url=db, space=SPACE, seed=seed, storage_path=f"{tmp}/store", **fields)
        started = time.monotonic()
        outcome = run_sweep("bench", db, num_cpus=num_cpus, out=io.StringIO())
        wall = time.monotonic() - started
        study = load_study("bench", db)
        done = [t for t in study.trials if t.state == TrialState.COMPLETE]
        best = min(done, key=lambda t: float(t.value or 0.0)) if done else None
        steps = sum(max(t.intermediate_values, default=0) for t in study.trials)
        copies = sum(
            1
            for t in study.trials
            for s in t.user_attrs.get("pbt_history") or []
            if s.get("from_trial") is not None
        )
        return {
            "method": method,
            "seed": seed,
            "status": outcome.status,
            "best_val_loss": best.value if best else None,
            "test_loss": best.user_attrs.get("test_loss") if best else None,
            "trials": len(study.trials),
            "complete": len(done),
            "steps": steps,
            "copies": copies,
            "wall_s": round(wall, 1),
        }


def report(rows: list[dict[str, Any]], out: Any = sys.stdout) -> None:
    """Per-run rows, then means over seeds and wins against `default` per seed."""
    print(
        f"{'method':8} {'seed':>4} {'best val':>9} {'test':>7} {'steps':>6} {'copies':>6} {'trials':>6} {'wall s':>7}",
        file=out,
    )
    for r in rows:
        val = f"{r['best_val_loss']:.4f}" if r["best_val_loss"] is not None else "-"
        test = f"{r['test_loss']:.4f}" if r["test_loss"] is not None else "-"
        print(
            f"{r['method']:8} {r['seed']:>4} {val:>9} {test:>7} {r['steps']:>6} {r['copies']:>6} "
            f"{r['trials']:>6} {r['wall_s']:>7}",
            file=out,
        )
    by = {(r["method"], r["seed"]): r for r in rows}
    seeds = sorted({r["seed"] for r in rows})
    print(file=out)
    for method in sorted({r["method"] for r in rows}):
        vals = [
            by[(method, s)]["best_val_loss"]
            for s in seeds
            if (method, s) in by and by[(method, s)]["best_val_loss"] is not None
        ]
        tests = [
            by[(method, s)]["test_loss"]
            for s in seeds
            if (method, s) in by and by[(method, s)]["test_loss"] is not None
        ]
        line = (
            f"{method:8} mean best val {statistics.mean(vals):.4f}  mean test {statistics.mean(tests):.4f}"
            if vals and tests
            else f"{method:8} no result"
        )
        if method != "default":
            pairs = [
                (by[(method, s)], by[("default", s)])
                for s in seeds
                if (method, s) in by and ("default", s) in by
            ]
            wins = sum(
                a["best_val_loss"] < b["best_val_loss"]
                for a, b in pairs
                if a["best_val_loss"] and b["best_val_loss"]
            )
            test_wins = sum(
                a["test_loss"] < b["test_loss"] for a, b in pairs if a["test_loss"] and b["test_loss"]
            )
            line += f"  beats default on val {wins}/{len(pairs)}, on test {test_wins}/{len(pairs)}"
        print(line, file=out)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--members", type=int, default=MEMBERS)
    parser.add_argument("--interval", type=int, default=50, help="PBT/PB2 perturbation interval (steps)")
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--num-cpus", type=int, default=2)
    parser.add_argument("--results", type=Path, default=None, help="append each run's row here (JSON lines)")
    args = parser.parse_args(argv)
    rows = []
    for seed in range(args.seeds):
        for method in args.methods.split(","):
            row = run_one(method, seed, args.members, args.interval, args.num_cpus)
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
            if args.results:
                args.results.parent.mkdir(parents=True, exist_ok=True)
                with args.results.open("a") as f:
                    f.write(json.dumps(row) + "\n")
    report(rows)


if __name__ == "__main__":
    main()
