"""A reproducible small-scale replication of the papers' orderings with the shared trainer.

Each row trains a few small models from the same settings, 3 seeds each, and compares them in the
direction the paper reports: Mogrifier LSTM below LSTM at an equal parameter budget; the rounds
curve r = 0…6; RLSTM and Mogrifier RLSTM against the (Mogrifier) LSTM; Two-Tailed Averaging
against the raw iterate and the best fixed tail average; dynamic evaluation's gain; reverse-copy
accuracy against sequence length. Every model of a row uses the same untuned settings (SCALES);
nothing is tuned to agree. The verdict is mechanical (see `verdict`).

    python bench/replicate.py                       # small scale on CPU, every row
    python bench/replicate.py --workers 2 --only rounds,averaging
    python bench/replicate.py --scale ptb --device cuda --data-dir data/ptb   # needs a GPU and PTB

Writes results.json (every run and row) and replication.md (the table) to --out.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SEEDS = (0, 1, 2)
# Starts of the fixed tail averages, as fractions of the run: the average of the iterates after
# step s·N (thesis §3.3, Tail Averaging); the best of them on validation is "the best fixed tail".
TAIL_STARTS = (0.0, 0.25, 0.5, 0.75, 0.9)

# The settings every language-model run of a scale shares (a character-level task on the built-in
# corpus for `small`; the papers' PTB word-level setting for `ptb`). Adam with β1 = 0 as the
# Mogrifier paper §3.3 baseline (RAdam's rectification needs ~1000 steps to warm up).
SCALES: dict[str, dict[str, Any]] = {
    "small": {
        "dataset": "builtin",
        "num_params": 100_000,
        "num_layers": 2,
        "bptt": 48,
        "batch_size": 16,
        "max_steps": 120,
        "eval_every": 20,
        "eval_batch_size": 16,
        "max_eval_tokens": 8_000,
        "optimizer": "adam",
        "adam_beta1": 0.0,
        "learning_rate": 3e-3,
        "mogrifier_rank": 16,
    },
    "ptb": {
        "dataset": "ptb",
        "num_params": 24_000_000,
        "num_layers": 2,
        "bptt": 70,
        "batch_size": 64,
        "max_steps": 60_000,
        "eval_every": 1_000,
        "optimizer": "adam",
        "adam_beta1": 0.0,
        "learning_rate": 2e-3,
        "mogrifier_rank": 50,
        "input_dropout": 0.5,
        "state_dropout": 0.3,
        "output_dropout": 0.5,
        "cell_output_dropout": 0.2,
    },
}
# Reverse copy (Mogrifier paper §4.3): an encoder–decoder with no dropout; sequence lengths per scale.
# The paper draws from 1000 symbols with 10M parameters; the small scale draws from 20.
REVERSE_COPY = {
    "small": {
        "lengths": (5, 10, 20),
        "settings": {
            "num_params": 60_000,
            "max_steps": 1000,
            "batch_size": 64,
            "eval_every": 250,
            "eval_batch_size": 500,
            "reverse_copy_vocab": 20,
        },
    },
    "ptb": {
        "lengths": (50, 100, 150, 200),
        "settings": {
            "num_params": 10_000_000,
            "max_steps": 60_000,
            "eval_every": 1_000,
            "eval_batch_size": 500,
            "reverse_copy_vocab": 1000,
            "input_dropout": 0.0,
            "state_dropout": 0.0,
            "output_dropout": 0.0,
            "cell_output_dropout": 0.0,
        },
    },
}
MOGRIFIER = {"cell": "mogrifier_lstm", "mogrifier_rounds": 5}
LSTM = {"cell": "lstm", "mogrifier_rounds": 0}


@dataclass
class Row:
    """One claim: the arms it compares (label → config overrides), what the paper reports, a verdict."""

    name: str
    claim: str
    paper: str
    arms: dict[str, dict[str, Any]]
    metric: str  # a key of a run's summary
    judge: Callable[[dict[str, list[float]]], tuple[str, str]]
    paper_ptb: str = "–"
    tails: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


def mean_sd(values: list[float]) -> tuple[float, float]:
    finite = [v for v in values if v is not None and math.isfinite(v)]
    if not finite:
        return math.nan, math.nan
    return statistics.fmean(finite), (statistics.stdev(finite) if len(finite) > 1 else 0.0)


def fmt(values: list[float], digits: int = 3) -> str:
    """mean ± sd, with the number of seeds when some are missing."""
    mean, sd = mean_sd(values)
    count = sum(1 for v in values if v is not None and math.isfinite(v))
    seeds = "" if count == len(values) else f" (n={count})"
    return "n/a" if math.isnan(mean) else f"{mean:.{digits}f} ± {sd:.{digits}f}{seeds}"


def verdict(better: list[float], worse: list[float]) -> str:
    """Whether `better` is below `worse` as the paper says: yes / within noise / no.

    "yes" needs the mean difference to exceed two standard errors of the difference (unpaired,
    3 seeds each), "no" needs it to exceed them the other way; anything else is within noise.
    """
    (m1, s1), (m2, s2) = mean_sd(better), mean_sd(worse)
    if math.isnan(m1) or math.isnan(m2):
        return "not run"
    se = math.sqrt(s1**2 / max(1, len(better)) + s2**2 / max(1, len(worse)))
    diff = m2 - m1
    if diff > 2 * se:
        return "yes"
    if diff < -2 * se:
        return "no"
    return "within noise (" + ("same direction" if diff > 0 else "opposite direction") + ")"


def lower(a: str, b: str) -> Callable[[dict[str, list[float]]], tuple[str, str]]:
    """Judge 'arm a is lower than arm b'."""

    def judge(v: dict[str, list[float]]) -> tuple[str, str]:
        return f"{a} < {b}", verdict(v[a], v[b])

    return judge


def higher(a: str, b: str) -> Callable[[dict[str, list[float]]], tuple[str, str]]:
    """Judge 'arm a is higher than arm b' (accuracies)."""

    def judge(v: dict[str, list[float]]) -> tuple[str, str]:
        return f"{a} > {b}", verdict([-x for x in v[b]], [-x for x in v[a]])

    return judge


def judge_rounds(v: dict[str, list[float]]) -> tuple[str, str]:
    """Fig. 3's shape: the loss falls from r = 0 and is lowest at r = 4…6."""
    means = {int(k.split("=")[1]): mean_sd(x)[0] for k, x in v.items()}
    best = min(means, key=lambda r: means[r])
    falls = verdict(v[f"r={best}"], v["r=0"])
    return f"lowest at r={best}; r={best} < r=0: {falls}", "yes" if best >= 4 and falls == "yes" else (
        "partly" if falls == "yes" else "no"
    )


def judge_averaging(v: dict[str, list[float]]) -> tuple[str, str]:
    """Thesis §3 / Circling Back §5: 2TA beats the raw iterate and is on par with the best tail."""
    vs_raw = verdict(v["2TA"], v["raw iterate"])
    vs_tail = verdict(v["2TA"], v["best fixed tail"])
    on_par = vs_tail == "yes" or vs_tail.startswith("within noise")
    return f"2TA < raw: {vs_raw}; 2TA vs best tail: {vs_tail}", (
        "yes" if vs_raw == "yes" and on_par else "no" if vs_raw == "no" or vs_tail == "no" else "partly"
    )


def rows(scale: str) -> list[Row]:
    """Every row of the table at one scale."""
    rc = REVERSE_COPY[scale]
    longest = rc["lengths"][-1]
    reverse_arms = {}
    for length in rc["lengths"]:
        for label, cell in (("LSTM", LSTM), ("Mogrifier", MOGRIFIER)):
            reverse_arms[f"{label} T={length}"] = {
                **cell,
                **rc["settings"],
                "dataset": "reverse_copy",
                "reverse_copy_length": length,
            }
    return [
        Row(
            "mogrifier",
            "Mogrifier LSTM (r=5) < LSTM, equal parameter budget (test bpc)",
            "Mogrifier below LSTM on every dataset (Tables 1, 2: PTB word 51.0 vs 54.6 test ppl; "
            "char-level gaps 0.012-0.046 bpc)",
            {"Mogrifier LSTM": MOGRIFIER, "LSTM": LSTM},
            "test_bpc",
            lower("Mogrifier LSTM", "LSTM"),
            paper_ptb="Mogrifier 52.1 / LSTM 55.8 val ppl (24M)",
        ),
        Row(
            "rounds",
            "Rounds curve r = 0…6 (Mogrifier LSTM, equal budget, test bpc)",
            "perplexity falls steeply with r and is lowest at r = 5-6 (Fig. 3; optimum r ∈ {5, 6}, §4.1)",
            {f"r={r}": {**MOGRIFIER, "mogrifier_rounds": r} if r else LSTM for r in range(7)},
            "test_bpc",
            judge_rounds,
            paper_ptb="57.5 (r=0) → 54.1 (r=6) val ppl, ablation",
        ),
        Row(
            "rlstm",
            "RLSTM < LSTM and Mogrifier RLSTM < Mogrifier LSTM (test bpc)",
            "Mogrifier RLSTM below Mogrifier LSTM (Circling Back Table 1: 48.9 vs 49.9 val ppl on PTB; "
            "§5: the RLSTM outperformed the LSTM by a small margin)",
            {
                "Mogrifier RLSTM": {**MOGRIFIER, "cell": "rlstm"},
                "Mogrifier LSTM": MOGRIFIER,
                "RLSTM": {**LSTM, "cell": "rlstm"},
                "LSTM": LSTM,
            },
            "test_bpc",
            lambda v: (
                "; ".join(
                    f"{a} < {b}: {verdict(v[a], v[b])}"
                    for a, b in (("RLSTM", "LSTM"), ("Mogrifier RLSTM", "Mogrifier LSTM"))
                ),
                _all_yes(verdict(v["RLSTM"], v["LSTM"]), verdict(v["Mogrifier RLSTM"], v["Mogrifier LSTM"])),
            ),
            paper_ptb="Mogrifier RLSTM 48.9 / Mogrifier LSTM 49.9 val ppl (24M)",
        ),
        Row(
            "averaging",
            "2TA vs raw iterate vs best fixed tail average (Mogrifier LSTM, final val bpc)",
            "2TA on par with well-tuned Tail Averaging at the end, both below the noisy raw iterate "
            "(thesis §3.6 Fig. 3.3; Circling Back §5: 2TA does not improve on well-tuned TA)",
            {"2TA": MOGRIFIER, "raw iterate": MOGRIFIER, "best fixed tail": MOGRIFIER},
            "",
            judge_averaging,
            tails=True,
        ),
        Row(
            "dyneval",
            "Dynamic evaluation's gain (Mogrifier LSTM, test bpc)",
            "dynamic evaluation lowers test perplexity (Table 1: PTB 51.0 → 45.0; thesis §4.5)",
            {"dynamic evaluation": {**MOGRIFIER, "dyneval": True}, "static": {**MOGRIFIER, "dyneval": True}},
            "",
            lower("dynamic evaluation", "static"),
            paper_ptb="52.1 → 45.1 val ppl (Mogrifier, 24M)",
        ),
        Row(
            "reverse_copy",
            f"Reverse copy sequence accuracy vs length (longest T={longest})",
            "both solve short sequences; at longer ones the Mogrifier is clearly better (Fig. 4, "
            "cross-entropy vs length 50-200)",
            reverse_arms,
            "accuracy",
            higher(f"Mogrifier T={longest}", f"LSTM T={longest}"),
            paper_ptb="Fig. 4a: equal at T=50, 100; Mogrifier better at 150, 200",
        ),
        Row(
            "reverse_copy_xent",
            f"Reverse copy test cross-entropy vs length (nats/token, longest T={longest})",
            "Fig. 4 plots cross-entropy against length: near 0 for both at 50 and 100, the Mogrifier "
            "clearly lower at 150 and 200 (10M parameters, 1000 symbols)",
            reverse_arms,
            "test_loss",
            lower(f"Mogrifier T={longest}", f"LSTM T={longest}"),
            paper_ptb="Fig. 4a: LSTM ~1-4 nats vs Mogrifier lower at T=150, 200",
        ),
    ]


def _all_yes(*verdicts: str) -> str:
    if all(v == "yes" for v in verdicts):
        return "yes"
    return "no" if any(v == "no" for v in verdicts) else "partly"


# --- running ---------------------------------------------------------------------------------


def run_one(job: dict[str, Any]) -> dict[str, Any]:
    """Train one run (in a worker process, one torch thread) and summarise it."""
    import torch

    from trainer import Trainer, make_config
    from trainer.averaging import swap_in
    from trainer.evaluate import evaluate

    torch.set_num_threads(1)
    cfg = make_config(job["config"])
    trainer = Trainer(cfg)
    steps = cfg.max_steps
    starts = sorted({int(f * steps) for f in TAIL_STARTS}) if job["tails"] else []
    sums = {s: [torch.zeros_like(p) for p in trainer.params] for s in starts}
    step_fn = trainer.train_step

    def train_step() -> float:  # also sums the iterates after each tail's start (Tail Averaging)
        before = trainer.step
        loss = step_fn()
        if trainer.step > before:
            for s in starts:
                if trainer.step > s:
                    torch._foreach_add_(sums[s], [p.detach() for p in trainer.params])
        return loss

    trainer.train_step = train_step
    t0 = time.perf_counter()
    result = trainer.run()
    metrics = [json.loads(line) for line in (Path(cfg.run_dir) / "metrics.jsonl").read_text().splitlines()]
    last = metrics[-1] if metrics else {}
    summary = {
        "config": job["config"],
        "seconds": time.perf_counter() - t0,
        "steps": result.steps,
        "final_val_2ta": last.get("val_loss"),
        "final_val_raw": last.get("raw_val_loss"),
        "test_loss": result.test_loss,
        "dyneval_test_loss": result.dyneval_test_loss,
        "accuracy": getattr(result, "test_accuracy", None),  # reverse copy, on the test examples
    }
    if starts:
        tails = {}
        for s in starts:
            average = [t / (trainer.step - s) for t in sums[s]]
            saved = swap_in(trainer.params, average)
            try:
                valid = trainer.valid_data
                tails[s] = evaluate(trainer.model, valid, cfg.bptt, max_tokens=cfg.max_eval_tokens)[0]
            finally:
                swap_in(trainer.params, saved)
        summary["tails"] = tails
    return summary


def to_bits(nats: float | None) -> float | None:
    return None if nats is None else nats / math.log(2)


def values_for(row: Row, label: str, run: dict[str, Any]) -> float | None:
    """The number a row reads from one run (bits per character for losses)."""
    if row.name == "averaging":
        if label == "2TA":
            return to_bits(run["final_val_2ta"])
        if label == "raw iterate":
            return to_bits(run["final_val_raw"])
        return to_bits(min(run["tails"].values())) if run.get("tails") else None
    if row.name == "dyneval":
        return to_bits(run["dyneval_test_loss"] if label == "dynamic evaluation" else run["test_loss"])
    if row.metric == "accuracy":
        return run["accuracy"]
    if row.name == "reverse_copy_xent":  # nats per reversed token, as Fig. 4
        return run["test_loss"]
    return to_bits(run["test_loss"])


# Settings that change only what is measured after training: runs that differ in these alone are
# one run, with the union of the measurements.
MEASUREMENT_ONLY = frozenset({"run_dir", "dyneval"})


def job_key(config: dict[str, Any]) -> str:
    return json.dumps({k: config[k] for k in sorted(config) if k not in MEASUREMENT_ONLY})


def plan_jobs(
    chosen: list[Row], base: dict[str, Any], work: Path, steps: int | None = None
) -> tuple[dict[str, dict[str, Any]], dict[tuple[str, str], list[str]]]:
    """The distinct runs the rows need, and for each (row, arm) the keys of its runs, one per seed.

    Arms of different rows with the same training settings share their runs; a shared run makes
    every measurement any of its rows asks for (tail averages, dynamic evaluation).
    """
    jobs: dict[str, dict[str, Any]] = {}
    plan: dict[tuple[str, str], list[str]] = {}
    for row in chosen:
        for label, arm in row.arms.items():
            keys = []
            for seed in SEEDS:
                config = {**base, **arm, "seed": seed}
                if steps:
                    config["max_steps"] = steps
                config["eval_every"] = min(config["eval_every"], config["max_steps"])
                key = job_key(config)
                if key not in jobs:
                    run_dir = str(work / f"run{len(jobs)}")
                    jobs[key] = {"config": {**config, "run_dir": run_dir}, "tails": False}
                job = jobs[key]
                job["tails"] |= row.tails
                job["config"]["dyneval"] = job["config"].get("dyneval", False) or config.get("dyneval", False)
                keys.append(key)
            plan[(row.name, label)] = keys
    return jobs, plan


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--device", default="cpu", help="cpu or cuda (default: cpu)")
    parser.add_argument("--scale", choices=sorted(SCALES), default="small")
    parser.add_argument("--workers", type=int, default=1, help="runs in parallel, one torch thread each")
    names = ",".join(r.name for r in rows("small"))
    parser.add_argument("--only", default="", help=f"comma-separated rows: {names}")
    parser.add_argument("--data-dir", help="PTB's folder (ptb.train.txt, …) for --scale ptb")
    parser.add_argument("--steps", type=int, help="override max_steps of every run")
    parser.add_argument(
        "--out", default="runs/replication", help="folder for results.json, replication.md and the runs"
    )
    args = parser.parse_args(argv)

    chosen = rows(args.scale)
    if args.only:
        wanted = set(args.only.split(","))
        unknown = wanted - {r.name for r in chosen}
        if unknown:
            parser.error(f"--only: unknown rows {sorted(unknown)}; choose from {[r.name for r in chosen]}")
        chosen = [r for r in chosen if r.name in wanted]
    if args.scale == "ptb" and not args.data_dir:
        parser.error("--scale ptb needs --data-dir with ptb.train.txt, ptb.valid.txt, ptb.test.txt")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="replicate-", dir=out))

    base = {**SCALES[args.scale], "device": args.device}
    if args.data_dir:
        base["data_dir"] = args.data_dir
    jobs, plan = plan_jobs(chosen, base, work, args.steps)
    from trainer import make_config

    for job in jobs.values():  # a bad setting fails here, naming the field, before any training
        make_config(job["config"])
    print(f"{len(jobs)} runs on {args.workers} worker(s), {args.scale} scale, {args.device}", flush=True)

    started = time.time()
    results: dict[str, dict[str, Any]] = {}
    # Seed 0 of every run first, then seed 1, then 2: a run cut short still has every row.
    order = sorted(jobs, key=lambda k: jobs[k]["config"]["seed"])
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        futures = {pool.submit(run_one, jobs[key]): key for key in order}
        for i, future in enumerate(as_completed(futures)):
            key = futures[future]
            try:
                results[key] = future.result()
            except Exception as err:
                results[key] = {"error": f"{type(err).__name__}: {err}", "config": jobs[key]["config"]}
            status = results[key].get("error", "done")
            print(f"[{i + 1}/{len(jobs)}] {time.time() - started:.0f}s {status}", flush=True)
            meta = {
                "scale": args.scale,
                "device": args.device,
                "workers": args.workers,
                "wall_s": time.time() - started,
                "seeds": list(SEEDS),
                "base": base,
                "runs_done": len(results),
                "runs_planned": len(jobs),
            }
            table = write_outputs(out, chosen, plan, results, meta)
    print(table)


def write_outputs(out: Path, chosen: list[Row], plan: dict, results: dict, meta: dict[str, Any]) -> str:
    """Write results.json and replication.md for the runs finished so far; returns the table."""
    report = build_report(chosen, plan, results)
    (out / "results.json").write_text(
        json.dumps(
            {"rows": report["rows"], "meta": meta, "runs": list(results.values())}, indent=2, default=str
        )
    )
    table = markdown(report["rows"], meta["scale"])
    (out / "replication.md").write_text(table + "\n")
    return table


def build_report(chosen: list[Row], plan: dict, results: dict) -> dict[str, Any]:
    """Per row: each arm's values over the seeds, the comparison and the verdict."""
    out = []
    for row in chosen:
        values, errors, pending = {}, [], 0
        for label in row.arms:
            vals = []
            for key in plan[(row.name, label)]:
                run = results.get(key)
                if run is None:
                    pending += 1
                    vals.append(None)
                elif "error" in run:
                    errors.append(run["error"])
                    vals.append(None)
                else:
                    vals.append(values_for(row, label, run))
            values[label] = vals
        if errors:
            comparison, agrees = f"not run: {errors[0]}", "not run"
        elif pending:
            comparison, agrees = f"{pending} of its runs pending", "pending"
        else:
            comparison, agrees = row.judge(values)
        out.append(
            {
                "name": row.name,
                "claim": row.claim,
                "paper": row.paper,
                "paper_ptb": row.paper_ptb,
                "values": values,
                "comparison": comparison,
                "agrees": agrees,
            }
        )
    return {"rows": out}


def markdown(report_rows: list[dict[str, Any]], scale: str) -> str:
    """The table: claim, what the paper reports, our mean ± sd per arm, the verdict, the PTB column."""
    ours_ptb = "ours at PTB scale"
    header = (
        f"| row | paper reports | ours ({scale} scale, mean ± sd, 3 seeds) | comparison | agrees | "
        f"paper (PTB, 24M) | {ours_ptb} |"
    )
    lines = [header, "|---|---|---|---|---|---|---|"]
    for r in report_rows:
        digits = 3
        ours = "<br>".join(f"{label}: {fmt(v, digits)}" for label, v in r["values"].items())
        ptb = "see the ours column" if scale == "ptb" else "not run"
        lines.append(
            f"| {r['claim']} | {r['paper']} | {ours} | {r['comparison']} | {r['agrees']} | "
            f"{r['paper_ptb']} | {ptb} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
