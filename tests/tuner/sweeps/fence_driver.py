"""A sweep driver for the partition drill, run as its own process: `python -m
tests.tuner.sweeps.fence_driver NAME DB_URL [--take-over]` (Ray: the cluster $RAY_ADDRESS names). It drives the study with `quick_or_long`
(no training) and exits 3, printing the reason, when it loses its lease; with `--take-over` it waits
for a live lease of another driver to expire and takes the study over."""

from __future__ import annotations

import atexit
import faulthandler
import signal
import sys
import time
from pathlib import Path
from typing import Any

# Trials that run until stopped: the ones in flight when the partition starts.
LONG = (1, 2)
LEASE_LOST_EXIT = 3


def quick_or_long(config: dict[str, Any]) -> dict[str, Any]:
    """A stand-in trial: one evaluation every 0.2 s, done after 0.4 s, or after 60 s for `LONG`
    trial numbers (retries get new numbers and are quick). Each evaluation touches
    `alive-NUMBER` in the run folder: its mtime is the trial's last sign of life."""
    from ray import tune

    from tuner.sweeps.trial.lifecycle import FINAL

    number = config["trial_number"]
    loss = 5.0 + 0.01 * number
    evaluations = 300 if number in LONG else 2
    beat = Path(config["trainer"]["run_dir"]) / f"alive-{number}"
    beat.parent.mkdir(parents=True, exist_ok=True)
    for step in range(1, evaluations + 1):
        time.sleep(0.2)
        beat.touch()
        tune.report({"step": step, "val_loss": loss + 1.0 / step})
    return {
        "step": evaluations,
        "val_loss": loss,
        FINAL: True,
        "best_val_loss": loss,
        "best_step": evaluations,
    }


def main(name: str, url: str, take_over: bool) -> int:
    """Drive the study; `take_over`: while another driver's lease lives, try again every 0.3 s."""
    from tuner.errors import LeaseLost
    from tuner.sweeps.drive.lease import DriverBusy
    from tuner.sweeps.drive.run import run_sweep

    started = time.monotonic()
    while True:
        try:
            outcome = run_sweep(name, url, out=sys.stdout, trainable=quick_or_long)
            break
        except DriverBusy:
            if not take_over:
                raise
            time.sleep(0.3)
        except LeaseLost as err:
            print(f"LeaseLost at {time.time():.3f}: {err}", flush=True)
            return LEASE_LOST_EXIT
    print(f"ended {outcome.status} {outcome.finished}/{outcome.n_trials}; began {started:.3f}", flush=True)
    return 0 if outcome.status == "finished" else 1


if __name__ == "__main__":
    faulthandler.register(signal.SIGUSR1)  # the test dumps a stuck driver's stacks into its log
    atexit.register(lambda: print(f"exiting at {time.time():.3f}", flush=True))
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3:] == ["--take-over"]))
