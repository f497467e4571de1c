"""Trials per GPU-hour when several trials share one GPU (`gpus_per_trial` 1, 1/2, 1/4, 1/8).

For K = 1, 2, 4, 8 it starts K training processes on the same device, as Ray starts K trials on
one GPU when each reserves 1/K of it. Every process trains the same PTB-size language model
(bench/trainer_speed.py's model: embedding, 2 recurrent layers of 650, softmax over 10k words;
BPTT 70, batch 64; RAdam), warms up, waits for the others, then trains a fixed number of steps.
The table gives the aggregate training steps/s of the K processes (first start to last finish),
the speed-up over K = 1, the trials per GPU-hour that makes for trials of `--trial-steps` steps,
and on CUDA each process's peak memory (which bounds K).

The figures are the device's: `--device cuda` measures the GPU (what sizing `gpus_per_trial`
needs); on a CPU the same table is a smoke check of the script and says nothing about GPUs
(each CPU process gets `--threads` threads; they compete for the cores).

    python -m bench.packing --device cuda                     # PTB size, K = 1, 2, 4, 8
    python -m bench.packing --device cuda --cell lstm --steps 100
    python -m bench.packing --size quick --steps 3 --ks 1,2   # CPU smoke run
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
from typing import Any

import torch

from bench import trainer_speed as speed  # its model, sizes and training step (one definition of each)

SIZES = {"ptb": speed.PTB_LIKE, "quick": speed.QUICK}
# About 50 PTB epochs at batch 64, BPTT 70 (929k training words / 4,480 per step ≈ 207 steps each).
TRIAL_STEPS = 10_000


def train_one(rank: int, args: argparse.Namespace, ready: Any, start: Any, results: Any) -> None:
    """One packed "trial": build, warm up, wait for every process, then time `args.steps` steps."""
    device = torch.device(args.device)
    if device.type == "cpu":
        torch.set_num_threads(args.threads)
    trainee = speed.Trainee(args.cell, SIZES[args.size], device, seed=rank, cuda_path=args.cuda_path)
    watch = speed.Stopwatch(device)
    for _ in range(args.warmup):
        trainee.step(watch)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    ready.put(rank)
    start.wait()
    began = watch.now()[0]
    for _ in range(args.steps):
        trainee.step(watch)
    ended = watch.now()[0]
    peak = torch.cuda.max_memory_allocated(device) / 2**20 if device.type == "cuda" else float("nan")
    results.put({"rank": rank, "start": began, "end": ended, "peak_mib": peak})


def run_packed(k: int, args: argparse.Namespace) -> dict[str, float]:
    """K processes on the device at once; aggregate steps/s from the first start to the last end."""
    ctx = mp.get_context("spawn")  # CUDA cannot be used in forked children
    ready, results, start = ctx.Queue(), ctx.Queue(), ctx.Event()
    procs = [ctx.Process(target=train_one, args=(r, args, ready, start, results)) for r in range(k)]
    for proc in procs:
        proc.start()
    for _ in range(k):
        ready.get(timeout=args.timeout)
    start.set()
    rows = [results.get(timeout=args.timeout) for _ in range(k)]
    for proc in procs:
        proc.join(timeout=60)
        if proc.exitcode != 0:
            raise RuntimeError(f"a training process exited with {proc.exitcode}")
    wall = max(r["end"] for r in rows) - min(r["start"] for r in rows)
    return {
        "steps_per_s": k * args.steps / wall,
        "wall_s": wall,
        "peak_mib": max(r["peak_mib"] for r in rows),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--device", default="cpu", help="cuda (what to measure) or cpu (a smoke check)")
    parser.add_argument("--size", choices=sorted(SIZES), default="ptb", help="model size (default: ptb)")
    parser.add_argument("--cell", default="mogrifier_lstm", help="mogrifier_lstm, lstm, rlstm, torch.nn.LSTM")
    parser.add_argument(
        "--cuda-path", choices=speed.CUDA_PATHS, default="graphs", help="the cells' CUDA path"
    )
    parser.add_argument("--ks", default="1,2,4,8", help="trials per device to measure (default: 1,2,4,8)")
    parser.add_argument("--steps", type=int, default=50, help="timed steps per process (default: 50)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed steps per process first (default: 3)")
    parser.add_argument(
        "--threads", type=int, default=1, help="torch threads per process on CPU (default: 1)"
    )
    parser.add_argument(
        "--trial-steps", type=int, default=TRIAL_STEPS, help=f"steps of one trial (default: {TRIAL_STEPS})"
    )
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds to wait for a process")
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: CUDA is not available here")
    ks = [int(k) for k in args.ks.split(",")]
    print(f"device {device} — {speed.processor(device)}")
    if device.type != "cuda":
        print("CPU run: a smoke check of the script; these are not GPU figures")
    print(
        f"{args.cell}, {SIZES[args.size]}, torch {torch.__version__}; {args.steps} timed steps per process "
        f"after {args.warmup} warm-up steps; a trial = {args.trial_steps} steps"
    )
    print(f"{'trials/device':>13}{'steps/s':>10}{'vs K=1':>8}{'trials/device-hour':>20}{'peak MiB/proc':>15}")
    base = None
    for k in ks:
        row = run_packed(k, args)
        if k == 1:
            base = row["steps_per_s"]
        ratio = row["steps_per_s"] / base if base else float("nan")
        per_hour = row["steps_per_s"] * 3600 / args.trial_steps
        peak = f"{row['peak_mib']:.0f}" if device.type == "cuda" else "-"
        print(f"{k:>13}{row['steps_per_s']:>10.2f}{ratio:>8.2f}{per_hour:>20.1f}{peak:>15}")


if __name__ == "__main__":
    main()
