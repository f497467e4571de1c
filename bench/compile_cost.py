"""What the fast path's compilation costs a trial: the first training step of each of many trials
of different shapes run one after another in one process, as a reused Ray worker runs them.

Each trial is a small Mogrifier LSTM or LSTM on the built-in corpus with its own hidden size, batch
size, Mogrifier rounds and rank and state dropout (drawn with a fixed seed). Its first training
step pays whatever compilation its shape still needs; its second step is the steady cost. Printed:
per trial, the first step's and the second step's seconds and Dynamo's count of compiled graphs so
far, then the first step of trial 1, of trials 2-10 and of the rest. Run it twice: the first run
after clearing Inductor's on-disk cache is a new node's cold start, the second a new worker on a
node whose cache is warm (`--cache DIR` sets TORCHINDUCTOR_CACHE_DIR for both).

On CPU it runs the compiled steps through RNNTUNE_FAST_PATH_ON_CPU=1 (the CUDA path's compilation
without CUDA graphs); with `--device cuda` it runs the real graphed path.

    .venv/bin/python -m bench.compile_cost --trials 100 --cache /tmp/rnntune-inductor --clear
    .venv/bin/python -m bench.compile_cost --trials 100 --cache /tmp/rnntune-inductor
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--cache", type=Path, default=None, help="TORCHINDUCTOR_CACHE_DIR for this run")
    parser.add_argument("--clear", action="store_true", help="empty the cache first (a cold node)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.cache is not None:
        if args.clear:
            shutil.rmtree(args.cache, ignore_errors=True)
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(args.cache)
    if args.device == "cpu":
        os.environ["RNNTUNE_FAST_PATH_ON_CPU"] = "1"

    import torch
    from torch._dynamo.utils import counters  # Dynamo's own count of compiled graphs

    from trainer import make_config
    from trainer.loop import Trainer

    torch.set_num_threads(1)
    rng = random.Random(args.seed)
    firsts, rows = [], []
    print(f"torch {torch.__version__}, device {args.device}, cache {args.cache or 'default'}")
    print(f"{'trial':>5} {'cell':>15} {'hidden':>6} {'batch':>5} {'rounds':>6} {'rank':>4} {'mask':>4} "
          f"{'1st step s':>10} {'2nd step s':>10} {'graphs':>6} {'path':>8}")  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(args.trials):
            rounds = rng.choice([0, 0, 1, 2, 3, 4, 5, 6])
            shape = {
                "cell": "mogrifier_lstm" if rounds else "lstm",
                "hidden_size": rng.randrange(8, 65),
                "batch_size": rng.randrange(2, 17),
                "mogrifier_rounds": rounds,
                "mogrifier_rank": rng.choice([0, rng.randrange(1, 9)]),
                "state_dropout": rng.choice([0.0, 0.3]),
            }
            cfg = make_config(
                {**shape, "dataset": "builtin", "bptt": 16, "max_steps": 2, "device": args.device,
                 "run_dir": f"{tmp}/run{k}", "seed": k}
            )  # fmt: skip
            trainer = Trainer(cfg)
            steps = []
            for _ in range(2):
                started = time.perf_counter()
                trainer.train_step()
                if args.device.startswith("cuda"):
                    torch.cuda.synchronize()
                steps.append(time.perf_counter() - started)
            firsts.append(steps[0])
            from trainer.cells import fallback, paths

            used = paths.path_used(args.device.startswith("cuda"), fallback.forced_on_cpu())
            rows.append(steps)
            print(f"{k + 1:>5} {shape['cell']:>15} {shape['hidden_size']:>6} {shape['batch_size']:>5} "
                  f"{rounds:>6} {shape['mogrifier_rank']:>4} {'yes' if shape['state_dropout'] else 'no':>4} "
                  f"{steps[0]:>10.3f} {steps[1]:>10.3f} {counters['stats']['unique_graphs']:>6} {used:>8}",
                  flush=True)  # fmt: skip
    print()
    print(f"first step, trial 1: {firsts[0]:.2f} s")
    if len(firsts) > 1:
        print(
            f"first step, trials 2-10: median {statistics.median(firsts[1:10]):.3f} s, max {max(firsts[1:10]):.2f} s"
        )
    if len(firsts) > 10:
        print(
            f"first step, trials 11-{len(firsts)}: median {statistics.median(firsts[10:]):.3f} s, max {max(firsts[10:]):.2f} s"
        )
    print(f"second step, all trials: median {statistics.median(r[1] for r in rows):.3f} s")
    print(f"graphs compiled in all: {counters['stats']['unique_graphs']}")


if __name__ == "__main__":
    main()
