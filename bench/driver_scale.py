"""Can one sweep driver keep a GPU cluster busy? 1,000 trials on a simulated 16-node Ray cluster.

`ray.cluster_utils.Cluster` starts real Ray nodes on this machine (a head without resources, where
the driver runs, and `--nodes` nodes each offering `--gpus-per-node` logical GPUs and as many CPUs).
The study (the `tiny` space, each trial reserving 1 CPU and 1 GPU, `--in-flight` at once, the
default sampler and scheduler, adaptive ASHA, unless told otherwise) is driven by the real sweep driver
(`tuner.sweeps.drive.run.run_sweep`); only the trainable is simulated: it sleeps through its steps
(`--trial-seconds` for a full trial), reports the trainer's evaluations with a synthetic learning
curve, and notes when and on which node and GPU it ran.

Printed:
* seconds per suggestion: the searcher's `suggest` (Optuna ask + the sampler), timed by wrapping it;
* idle GPU-seconds caused by the driver: for every GPU, each gap between one trial's end and the next
  trial's start on it, up to the moment the driver had the next trial's suggestion ready; the rest
  of each gap is Ray starting the trial, reported beside it; as a share of the GPU time of the run;
* the study's write rate: SQL statements that write (INSERT, UPDATE, DELETE) and commits per second,
  counted on every SQLAlchemy engine of the driver process.

Short trials are the hard case: the driver must suggest `--in-flight / trial length` trials a second.
The target is under 1% of GPU time idle for the full run. On a small machine, shrink it:

    python -m bench.driver_scale                                   # 1,000 trials, 16 nodes x 4 GPUs, 64 in flight
    python -m bench.driver_scale --trials 40 --nodes 2 --gpus-per-node 2 --in-flight 4 --trial-seconds 10
    python -m bench.driver_scale --trials 100 --nodes 8 --gpus-per-node 2 --in-flight 16 --trial-seconds 20 --ask-ahead 0,2,8
    python -m bench.driver_scale --trials 100 --nodes 8 --gpus-per-node 2 --in-flight 16 --trial-seconds 20 \
        --objectives val_loss,num_params          # two objectives (the trainable reports a size)

`--ask-ahead 0,2,8` runs the same sweep without and with trials asked ahead (tuner/sweeps/drive/ask_ahead.py),
one after the other in one invocation, and prints them side by side (8 is what the driver uses for 16
in flight). The driver's idle time is split at the moment Ray Tune called `suggest`: before it is
Tune's own loop (noticing that a trial ended, the scheduler, the searcher's callbacks), after it the
sampler.
"""

from __future__ import annotations

import argparse
import io
import itertools
import json
import math
import os
import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tuner.policies.kinds import DEFAULT_SCHEDULER, SCHEDULERS
from tuner.samplers import DEFAULT_SAMPLER
from tuner.sweeps.trial.lifecycle import FINAL

TIMING_FILE = "timing.json"


def synthetic_loss(params: dict[str, Any], fraction: float) -> float:
    """A learning curve: falls from 7 towards a final loss set by the learning rate and dropouts."""
    final = 4.0 + (math.log(params["learning_rate"]) - math.log(0.002)) ** 2
    final += sum((params.get(k, 0.4) - 0.4) ** 2 for k in ("input_dropout", "output_dropout"))
    return final + (7.0 - final) * math.exp(-4.0 * fraction)


def sleeping_trainable(step_s: float) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A trainable that sleeps `step_s` per training step and reports at every evaluation."""

    def trial(config: dict[str, Any]) -> dict[str, Any]:
        import ray
        from ray import tune

        started = time.time()
        settings = config["trainer"]
        max_steps, every = int(settings["max_steps"]), int(settings["eval_every"])
        run_dir = Path(settings["run_dir"])
        run_dir.mkdir(parents=True, exist_ok=True)
        timing = {
            "trial_id": tune.get_context().get_trial_id(),
            "node": ray.get_runtime_context().get_node_id(),
            "gpus": [str(g) for g in ray.get_gpu_ids()],
            "start": started,
        }
        best, loss = math.inf, math.inf
        # A size that conflicts with the loss, for `--objectives val_loss,num_params`.
        size = 1e5 * (1.0 + float(settings.get("input_embedding_ratio", 1.0)))
        for step in range(every, max_steps + 1, every):
            time.sleep(every * step_s)
            loss = synthetic_loss(settings, step / max_steps)
            best = min(best, loss)
            timing["end"] = time.time()  # a trial stopped by ASHA ends at its last report
            (run_dir / TIMING_FILE).write_text(json.dumps(timing))
            tune.report({"step": step, "val_loss": loss, "num_params": size})
        return {
            FINAL: True,
            "step": max_steps,
            "val_loss": loss,
            "best_val_loss": best,
            "best_step": max_steps,
            "num_params": size,
        }

    return trial


class SuggestTimer:
    """Wraps StudySearcher.suggest to record, per Tune trial id, when Ray Tune asked for each
    suggestion and when it was ready."""

    def __init__(self) -> None:
        self.durations: list[float] = []
        self.asked: dict[str, float] = {}  # when Ray Tune called suggest for the trial
        self.ready: dict[str, float] = {}

    def install(self) -> None:
        from tuner.sweeps.drive.searcher import StudySearcher

        original = StudySearcher.suggest

        def timed(searcher: Any, trial_id: str) -> Any:
            began, asked = time.perf_counter(), time.time()
            result = original(searcher, trial_id)
            if isinstance(result, dict):
                self.durations.append(time.perf_counter() - began)
                self.asked[trial_id] = asked
                self.ready[trial_id] = time.time()
            return result

        self._original = original
        StudySearcher.suggest = timed  # type: ignore[method-assign,assignment]

    def uninstall(self) -> None:
        from tuner.sweeps.drive.searcher import StudySearcher

        StudySearcher.suggest = self._original  # type: ignore[method-assign]


class WriteCounter:
    """Counts the writing SQL statements and the commits of every SQLAlchemy engine in this process."""

    def __init__(self) -> None:
        self.writes = 0
        self.commits = 0

    def install(self) -> None:
        from sqlalchemy import event
        from sqlalchemy.engine import Engine

        def statement(conn: Any, cursor: Any, sql: str, *args: Any) -> None:
            if sql.lstrip()[:6].upper() in ("INSERT", "UPDATE", "DELETE"):
                self.writes += 1

        def commit(conn: Any) -> None:
            self.commits += 1

        event.listen(Engine, "before_cursor_execute", statement)
        event.listen(Engine, "commit", commit)
        self._listeners: list[tuple[str, Callable[..., None]]] = [
            ("before_cursor_execute", statement),
            ("commit", commit),
        ]

    def uninstall(self) -> None:
        from sqlalchemy import event
        from sqlalchemy.engine import Engine

        for name, listener in self._listeners:
            event.remove(Engine, name, listener)


def gpu_idle(
    timings: list[dict[str, Any]], ready: dict[str, float], asked: dict[str, float]
) -> dict[str, float]:
    """Per GPU, the gaps between consecutive trials, split into waiting for the driver's suggestion
    and Ray starting the trial; the driver's part split again at the moment Ray Tune asked for the
    suggestion: before it, Tune's loop (noticing the end, the scheduler, the searcher's callbacks);
    after it, the sampler. Plus the busy time and the run's span."""
    slots: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for t in timings:
        for gpu in t["gpus"] or ["none"]:
            slots[(t["node"], gpu)].append(t)
    driver = launch = busy = sampler = 0.0
    for runs in slots.values():
        runs.sort(key=lambda t: t["start"])
        busy += sum(t["end"] - t["start"] for t in runs)
        for before, after in itertools.pairwise(runs):
            gap = max(0.0, after["start"] - before["end"])
            waited = min(gap, max(0.0, ready.get(after["trial_id"], before["end"]) - before["end"]))
            driver += waited
            launch += gap - waited
            asked_at = asked.get(after["trial_id"], before["end"])
            sampler += min(
                waited, max(0.0, ready.get(after["trial_id"], before["end"]) - max(asked_at, before["end"]))
            )
    span = max(t["end"] for t in timings) - min(t["start"] for t in timings)
    return {
        "driver": driver,
        "sampler": sampler,
        "launch": launch,
        "busy": busy,
        "span": span,
        "slots": len(slots),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--trials", type=int, default=1000, help="trials in the study (default: 1000)")
    parser.add_argument("--nodes", type=int, default=16, help="simulated Ray worker nodes (default: 16)")
    parser.add_argument("--gpus-per-node", type=int, default=4, help="logical GPUs per node (default: 4)")
    parser.add_argument("--in-flight", type=int, default=64, help="trials at once (default: 64)")
    parser.add_argument(
        "--trial-seconds", type=float, default=60.0, help="a full trial's length (default: 60)"
    )
    parser.add_argument("--sampler", default=DEFAULT_SAMPLER, help=f"default: {DEFAULT_SAMPLER}")
    parser.add_argument(
        "--scheduler",
        default=DEFAULT_SCHEDULER,
        choices=SCHEDULERS,
        help=f"default: {DEFAULT_SCHEDULER}, the product's (asha: the burstiest)",
    )
    parser.add_argument(
        "--objectives",
        default="val_loss",
        help="the study's objectives, comma-separated (val_loss,num_params: two objectives; default val_loss)",
    )
    parser.add_argument("--db", help="study database URL (default: a SQLite file in a temporary folder)")
    parser.add_argument(
        "--ask-ahead",
        default=None,
        help="trials the searcher keeps asked ahead; a comma list (0,2) runs each in turn, side by side "
        "(default: what the sweep driver uses for --in-flight, tuner.sweeps.drive.ask_ahead.depth_for)",
    )
    args = parser.parse_args(argv)
    from tuner.sweeps.drive import ask_ahead

    default_depth = ask_ahead.depth_for(args.in_flight)
    depths = [int(d) for d in args.ask_ahead.split(",")] if args.ask_ahead else [default_depth]
    summary = []
    for depth in depths:
        # The sweep driver sizes the depth with `depth_for`; the benchmark pins it instead.
        def pinned(parallel: int, depth: int = depth) -> int:
            return depth

        ask_ahead.depth_for = pinned
        print(f"--- ask-ahead {depth}" + (" (the default)" if depth == default_depth else ""))
        summary.append((depth, one_run(args)))
    if len(summary) > 1:
        print(
            "--- side by side: ask-ahead, idle GPU time caused by the driver (of it: the sampler), "
            "Ray start-up, s/suggestion (mean)"
        )
        for depth, figures in summary:
            print(
                f"ask-ahead {depth}: {figures['driver_pct']:.2f}% ({figures['sampler_pct']:.2f}%), "
                f"{figures['launch_pct']:.2f}%, {figures['suggest_s']:.3f} s"
            )


def one_run(args: argparse.Namespace) -> dict[str, float]:
    """One sweep on a fresh simulated cluster; prints its figures and returns the headline ones."""

    import optuna
    import ray
    from ray.cluster_utils import Cluster

    from tuner.space import load_space
    from tuner.sweeps.drive.run import run_sweep
    from tuner.sweeps.study.create import create_study

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    # A cluster of this machine's own processes on 127.0.0.1, reached by nobody else.
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    workdir = Path(tempfile.mkdtemp(prefix="driver-scale-"))
    db = args.db or f"sqlite:///{workdir / 'study.db'}"
    max_steps = int(load_space("tiny").fixed["max_steps"])
    name = f"scale-{int(time.time())}"
    create_study(
        name,
        storage_url=db,
        storage_path=workdir / "runs",
        space="tiny",
        sampler=args.sampler,
        scheduler=args.scheduler,
        n_trials=args.trials,
        parallel=args.in_flight,
        gpus_per_trial=1,
        objectives=args.objectives.split(","),
        seed=0,
    )
    t0 = time.perf_counter()
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "num_gpus": 0})
    for _ in range(args.nodes):
        cluster.add_node(num_cpus=args.gpus_per_node, num_gpus=args.gpus_per_node)
    cluster.wait_for_nodes()
    cluster_s = time.perf_counter() - t0
    timer, writes = SuggestTimer(), WriteCounter()
    timer.install()
    writes.install()
    try:
        t0 = time.perf_counter()
        outcome = run_sweep(
            name,
            db,
            ray_address=cluster.address,
            trainable=sleeping_trainable(args.trial_seconds / max_steps),
            out=io.StringIO(),
        )
        sweep_s = time.perf_counter() - t0
    finally:
        ray.shutdown()
        cluster.shutdown()
    timings = [json.loads(p.read_text()) for p in (workdir / "runs").glob(f"*/{TIMING_FILE}")]
    idle = gpu_idle(timings, timer.ready, timer.asked)
    capacity = min(idle["slots"], args.in_flight) * idle["span"]
    d, tenth = sorted(timer.durations), max(1, len(timer.durations) // 10)
    print(
        f"{args.trials} trials, {args.nodes} nodes x {args.gpus_per_node} logical GPUs, {args.in_flight} in flight, "
        f"full trial {args.trial_seconds:g} s, sampler {args.sampler}, scheduler {args.scheduler}, "
        f"objectives {args.objectives}, db {db.split(':')[0]}"
    )
    print(
        f"status {outcome.status}: {outcome.finished} finished; cluster start {cluster_s:.1f} s, sweep {sweep_s:.1f} s"
    )
    print(
        f"seconds per suggestion: mean {statistics.fmean(d):.3f}, median {d[len(d) // 2]:.3f}, "
        f"p95 {d[int(0.95 * (len(d) - 1))]:.3f}, max {d[-1]:.3f} ({len(d)} suggestions; "
        f"first 10% mean {statistics.fmean(timer.durations[:tenth]):.3f}, "
        f"last 10% mean {statistics.fmean(timer.durations[-tenth:]):.3f})"
    )
    print(
        f"GPU time {capacity:.0f} GPU-s ({idle['slots']} GPUs used, span {idle['span']:.1f} s); trials busy {idle['busy']:.0f} GPU-s"
    )
    print(
        f"idle GPU-s caused by the driver: {idle['driver']:.1f} ({100 * idle['driver'] / capacity:.2f}% of GPU time); "
        f"Ray starting trials: {idle['launch']:.1f} ({100 * idle['launch'] / capacity:.2f}%)"
    )
    tune_loop = idle["driver"] - idle["sampler"]
    print(
        f"  of the driver's: waiting for the sampler {idle['sampler']:.1f} ({100 * idle['sampler'] / capacity:.2f}%), "
        f"Ray Tune's loop before it asked {tune_loop:.1f} ({100 * tune_loop / capacity:.2f}%)"
    )
    print(
        f"study writes: {writes.writes / sweep_s:.1f} statements/s, {writes.commits / sweep_s:.1f} commits/s "
        f"({writes.writes} writing statements, {writes.commits} commits in {sweep_s:.0f} s)"
    )
    timer.uninstall()
    writes.uninstall()
    return {
        "driver_pct": 100 * idle["driver"] / capacity,
        "sampler_pct": 100 * idle["sampler"] / capacity,
        "launch_pct": 100 * idle["launch"] / capacity,
        "suggest_s": statistics.fmean(d),
    }


if __name__ == "__main__":
    main()
