"""Does `rnntune compare` order an LSTM and a Mogrifier LSTM as the Mogrifier paper does, and when?

Two real sweeps of the same task (the `tiny` space on the built-in corpus: its fixed settings, its
ranges, the default sampler and early stopping, the given trials and trials in flight): one with the
space's Mogrifier LSTM, one with `--set cell=lstm` (the Mogrifier's rounds and rank then drop out).
Then `tuner.analysis.compare` gives its verdict on the two studies as they ended, and the same test
is repeated on the first k trials of each (by trial number, as a sweep grows) for every k, to say
after how many trials the verdict became separable and stayed so. The paper's ordering (Melis et al.
2020, Table 1 and §4: the Mogrifier LSTM ahead of the LSTM at equal tuning) is what it should find.

    nice -n 10 .venv/bin/python -m bench.compare_models --trials 24 --parallel 2 --out runs/bench/compare
"""

from __future__ import annotations

import argparse
import io
import json
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

MODELS = {"mogrifier": {}, "lstm": {"cell": "lstm"}}


def run_studies(out: Path, trials: int, parallel: int, seed: int) -> str:
    """Run both sweeps into one SQLite study database under `out`; its URL."""
    from tuner.sweeps.drive.run import run_sweep
    from tuner.sweeps.study.create import create_study

    out.mkdir(parents=True, exist_ok=True)
    db = f"sqlite:///{out / 'studies.db'}"
    for name, fixed in MODELS.items():
        started = time.monotonic()
        create_study(
            name,
            storage_url=db,
            space="tiny",
            n_trials=trials,
            parallel=parallel,
            seed=seed,
            storage_path=out / name,
            overrides={"set": fixed},
        )
        outcome = run_sweep(name, db, num_cpus=parallel, out=io.StringIO())
        print(
            f"{name}: {outcome.status}, {outcome.finished} trials in {time.monotonic() - started:.0f} s",
            flush=True,
        )
    return db


def first_k_verdicts(db: str, trials: int) -> list[dict]:
    """The compare test on the first k trials of each study (COMPLETE values among them), k = 1..trials."""
    import optuna

    from tuner.analysis import expected_best as eb
    from tuner.analysis.compare import MIN_COMPLETE

    values: dict[str, list[tuple[int, float]]] = {}
    for name in MODELS:
        study = optuna.load_study(study_name=name, storage=db)
        values[name] = [
            (t.number, t.value)
            for t in study.trials
            if t.state == optuna.trial.TrialState.COMPLETE and t.value is not None
        ]
    rows = []
    for k in range(1, trials + 1):
        a = [v for n, v in values["mogrifier"] if n < k]
        b = [v for n, v in values["lstm"] if n < k]
        if min(len(a), len(b)) < MIN_COMPLETE:
            rows.append({"k": k, "complete": [len(a), len(b)], "state": "insufficient"})
            continue
        n = min(len(a), len(b))
        diff = eb.difference(a, b, n, n, minimize=True)
        state = "separable" if diff.separable else "not_separable"
        better = None if not diff.separable else ("mogrifier" if diff.estimate < 0 else "lstm")
        rows.append(
            {
                "k": k,
                "complete": [len(a), len(b)],
                "n": n,
                "difference": round(diff.estimate, 4),
                "interval": [round(diff.low, 4), round(diff.high, 4)],
                "state": state,
                "better": better,
            }
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--trials", type=int, default=24)
    parser.add_argument("--parallel", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "bench" / "compare")
    parser.add_argument("--report-only", action="store_true", help="read the studies already under --out")
    args = parser.parse_args(argv)

    from tuner.analysis.compare import compare
    from tuner.analysis.reads import StudyStore

    db = (
        f"sqlite:///{args.out / 'studies.db'}"
        if args.report_only
        else run_studies(args.out, args.trials, args.parallel, args.seed)
    )
    result = compare(StudyStore(db), list(MODELS))
    for study in result["studies"]:
        print(
            f"{study['name']} ({study['model']}): {study['n_complete']} COMPLETE of {study['counts']}, best {study['best_value']:.4f}"
        )
    for verdict in result["verdicts"]:
        print("verdict:", verdict["text"])
    rows = first_k_verdicts(db, args.trials)
    print("\nthe same test on the first k trials of each study:")
    print(f"{'k':>3}  {'COMPLETE':>9}  {'E[best] mog − lstm':>19}  {'95% interval':>20}  state")
    for row in rows:
        if row["state"] == "insufficient":
            print(
                f"{row['k']:>3}  {row['complete'][0]:>4},{row['complete'][1]:>4}  {'':>19}  {'':>20}  insufficient"
            )
            continue
        low, high = row["interval"]
        print(
            f"{row['k']:>3}  {row['complete'][0]:>4},{row['complete'][1]:>4}  {row['difference']:>+19.4f}  "
            f"[{low:+.4f}, {high:+.4f}]  {row['state']}{' (' + row['better'] + ')' if row['better'] else ''}"
        )
    settled = next(
        (r["k"] for i, r in enumerate(rows) if all(x["state"] == "separable" for x in rows[i:])), None
    )
    print(
        f"\nseparable from k = {settled} trials of each study on" if settled else "\nnot separable at the end"
    )
    (args.out / "report.json").write_text(
        json.dumps({"verdicts": result["verdicts"], "first_k": rows}, indent=1, default=str)
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
