"""A reproducible small-scale replication of the papers' orderings with the shared trainer.

Each row trains a few small models from the same settings, 3 seeds each, and compares them in the
direction the paper reports: Mogrifier LSTM below LSTM at an equal parameter budget; the rounds
curve r = 0…6; RLSTM and Mogrifier RLSTM against the (Mogrifier) LSTM; Two-Tailed Averaging
against the raw iterate and the best fixed tail average, and against the Mogrifier paper's
averaging switch; dynamic evaluation's gain; reverse-copy accuracy against sequence length. Every
model of a row uses the same untuned settings (SCALES); nothing is tuned to agree. The rows, their
settings and their mechanical verdicts are in bench/replication_rows.py.

    python -m bench.replicate                       # small scale on CPU, every row
    python -m bench.replicate --workers 2 --only rounds,averaging
    python -m bench.replicate --scale ptb --device cuda --data-dir data/ptb   # needs a GPU and PTB
    python -m bench.replicate --render docs/results/replication.json --doc docs/replication.md

Writes results.json (every run and row) to --out and the whole replication document
(bench/replication_doc.py) to --doc, by default --out's replication.md; --render rewrites the
document from a saved results.json, the rows judged again, without training.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import shlex
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from bench.replication_doc import document
from bench.replication_rows import SCALES, SEEDS, TAIL_STARTS, Row, Seeds, rows, tuned

# --- running ---------------------------------------------------------------------------------


def run_one(job: dict[str, Any]) -> dict[str, Any]:
    """Train one run (in a worker process, one torch thread) and summarise it."""
    import torch

    from trainer import Trainer, make_config
    from trainer.averaging import Decision, chosen_weights, swap_in
    from trainer.evaluate import evaluate
    from trainer.model import LanguageModel

    torch.set_num_threads(1)
    cfg = make_config(job["config"])
    steps = cfg.max_steps
    starts = sorted({int(f * steps) for f in TAIL_STARTS}) if job["tails"] else []
    decisions: list[Decision] = []  # 2TA's decisions, the last of which names the weights it chose at the end

    class Recording(Trainer):
        """The trainer, also summing the iterates after each tail's start (Tail Averaging) and
        keeping 2TA's decisions."""

        def train_step(self) -> float:
            before = self.step
            loss = super().train_step()
            if self.step > before:
                for s in starts:
                    if self.step > s:
                        torch._foreach_add_(sums[s], [p.detach() for p in self.params])
            return loss

        def evaluate_2ta(self) -> Decision:
            decisions.append(super().evaluate_2ta())
            return decisions[-1]

    trainer = Recording(cfg)
    sums = {s: [torch.zeros_like(p) for p in trainer.params] for s in starts}
    t0 = time.perf_counter()
    result = trainer.run()
    metrics = [json.loads(line) for line in (Path(cfg.run_dir) / "metrics.jsonl").read_text().splitlines()]
    last = metrics[-1] if metrics else {}
    summary = {
        "config": job["config"],
        "seconds": time.perf_counter() - t0,
        "steps": result.steps,
        "final_val_2ta": last.get("val_loss"),
        "final_val_raw": last.get("raw_val_loss"),  # 2TA's validation loss is never above it
        "test_loss": result.test_loss,
        "dyneval_test_loss": result.dyneval_test_loss,
        "accuracy": getattr(result, "test_accuracy", None),  # reverse copy, on the test examples
    }
    if starts:
        model = trainer.model
        assert isinstance(model, LanguageModel)  # the rows with tails train language models

        def loss(weights: list | None, data: torch.Tensor, max_tokens: int | None = None) -> float:
            """The loss of `weights` (None: the last raw iterate) on a split."""
            saved = swap_in(trainer.params, weights) if weights is not None else None
            try:
                return evaluate(model, data, cfg.bptt, max_tokens=max_tokens)[0]
            finally:
                if saved is not None:
                    swap_in(trainer.params, saved)

        # Selection on validation, comparison on test: 2TA's choice, the raw iterate, and every tail.
        test = trainer.test_data
        chosen = chosen_weights(trainer.averaging, decisions[-1]) if decisions else None
        averages = {s: [t / (trainer.step - s) for t in sums[s]] for s in starts}
        summary["tails"] = {s: loss(a, trainer.valid_data, cfg.max_eval_tokens) for s, a in averages.items()}
        summary["tails_test"] = {s: loss(a, test) for s, a in averages.items()}
        summary["final_test_2ta"], summary["final_test_raw"] = loss(chosen, test), loss(None, test)
    return summary


def to_bits(nats: float | None) -> float | None:
    return None if nats is None else nats / math.log(2)


def values_for(row: Row, label: str, run: dict[str, Any]) -> float | None:
    """The number a row reads from one run (bits per character for losses)."""
    if row.name == "averaging":  # test losses of weights chosen on validation
        if label == "2TA":
            return to_bits(run["final_test_2ta"])
        if label == "raw iterate":
            return to_bits(run["final_test_raw"])
        if not run.get("tails"):
            return None
        best = min(run["tails"], key=run["tails"].__getitem__)  # the best tail on validation
        return to_bits(run["tails_test"][best])
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
    parser.add_argument("--out", default="runs/replication", help="folder for results.json and the runs")
    parser.add_argument("--doc", help="where the replication document goes (default: OUT/replication.md)")
    parser.add_argument(
        "--render", help="a results.json to rewrite the document from (rows judged again), without training"
    )
    args = parser.parse_args(argv)
    doc = Path(args.doc) if args.doc else Path(args.out) / "replication.md"
    if args.render:
        saved = json.loads(Path(args.render).read_text())
        print(render(saved, doc))
        return

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
    machine = machine_info()
    command = "python -m bench.replicate " + shlex.join(sys.argv[1:] if argv is None else argv)
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
                "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d"),
                "command": command,
                "machine": {**machine, "load_average": [machine["load_start"], os.getloadavg()[0]]},
            }
            text = write_outputs(out, doc, chosen, plan, results, meta)
    print(text)


def machine_info() -> dict[str, Any]:
    """Where the run happens, for the document: CPU, cores, OS, torch and Python, the load now."""
    import torch

    cpu = platform.processor() or platform.machine()
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        lines = []
    names = [line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")]
    cpu = names[0] if names else cpu
    return {
        "cpu": cpu,
        "cpus": os.cpu_count(),
        "platform": platform.platform(terse=True),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "load_start": os.getloadavg()[0],
    }


def write_outputs(
    out: Path, doc: Path, chosen: list[Row], plan: dict, results: dict, meta: dict[str, Any]
) -> str:
    """Write results.json and the document for the runs finished so far; returns the document."""
    report = build_report(chosen, plan, results)
    saved = {"rows": report["rows"], "meta": meta, "runs": list(results.values())}
    (out / "results.json").write_text(json.dumps(saved, indent=2, default=str))
    return write_document(doc, report["rows"], meta, [r.name for r in rows(meta["scale"])])


def write_document(
    doc: Path, report_rows: list[dict[str, Any]], meta: dict[str, Any], names: list[str]
) -> str:
    doc.parent.mkdir(parents=True, exist_ok=True)
    text = document(report_rows, meta, names)
    doc.write_text(text)
    return text


def rejudge(saved_rows: list[dict[str, Any]], scale: str) -> list[dict[str, Any]]:
    """Saved rows judged again by today's rules (and described by today's claims), from their
    stored per-seed values; rows still pending or failed stay as they were."""
    current = {r.name: r for r in rows(scale)}
    out = []
    for saved in saved_rows:
        row = current.get(saved["name"])
        if row is None or saved["agrees"] in ("pending", "not run"):
            out.append(saved)
            continue
        comparison, agrees = row.judge(saved["values"])
        out.append(
            {**saved, "claim": row.claim, "paper": row.paper, "paper_ptb": row.paper_ptb}
            | {"comparison": comparison, "agrees": agrees}
        )
    return out


def render(saved: dict[str, Any], doc: Path) -> str:
    """The document of a saved results.json, its rows judged again; returns the document."""
    meta = saved["meta"]
    return write_document(
        doc, rejudge(saved["rows"], meta["scale"]), meta, [r.name for r in rows(meta["scale"])]
    )


def build_report(chosen: list[Row], plan: dict, results: dict) -> dict[str, Any]:
    """Per row: each arm's values over the seeds, the comparison and the verdict."""
    out = []
    for row in chosen:
        values, validation, errors, pending = {}, {}, [], 0
        for label in row.arms:
            vals: Seeds = []
            validation[label] = [
                (results.get(key) or {}).get("final_val_2ta") for key in plan[(row.name, label)]
            ]
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
        for label, arms in row.extra.get("tuned", {}).items():  # chosen on validation, per seed
            values[label] = tuned(values, validation, arms)
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


if __name__ == "__main__":
    main()
