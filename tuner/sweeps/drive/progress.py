"""The live table `rnntune sweep` prints: one row per finished trial, then a status line
(done/running/failed, best objective with its params, ETA) on each change and every half minute."""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO

import optuna
from optuna.trial import FrozenTrial, TrialState
from ray.tune import Callback

from tuner.policies.population_history import params_in_force
from tuner.storage import trial_attrs
from tuner.storage.study import best_trial, counts_towards_total, value_of
from tuner.sweeps.drive.searcher import StudySearcher

STATUS_EVERY_S = 30.0


def fmt_value(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def fmt_params(params: dict[str, Any]) -> str:
    return " ".join(f"{k}={fmt_value(v)}" for k, v in params.items())


def trained_params(t: FrozenTrial) -> dict[str, Any]:
    """The params a trial's model was trained with: a population member's in force at its end
    (after its copies, the shape copied included), else Optuna's."""
    return params_in_force(t.params, trial_attrs.PBT_HISTORY.of(t.user_attrs))


def fmt_duration(seconds: float) -> str:
    seconds = round(seconds)
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    if seconds >= 60:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds}s"


def trial_row(t: FrozenTrial) -> str:
    value = fmt_value(v) if (v := value_of(t)) is not None else "-"
    steps = max(t.intermediate_values, default="-")
    wall = trial_attrs.WALL_TIME_S.of(t.user_attrs)
    extra = trial_attrs.ERROR.of(t.user_attrs, "")
    if (retry_of := trial_attrs.RETRY_OF.of(t.user_attrs)) is not None:
        extra = f"retry of #{retry_of} {extra}".strip()
    row = (
        f"  #{t.number:<4} {t.state.name:<8} {value:>9}  step {steps!s:>6}  "
        f"{fmt_duration(wall) if wall is not None else '-':>6}  {fmt_params(trained_params(t))}"
    )
    return f"{row}  {extra}" if extra else row


class ProgressTable(Callback):
    """Prints the sweep's progress from the searcher's tally (no database reads on the hot path)."""

    def __init__(
        self,
        study: optuna.Study,
        searcher: StudySearcher,
        n_trials: int,
        parallel: int,
        out: TextIO | None = None,
    ) -> None:
        self._study = study
        self._searcher = searcher
        self._n_trials = n_trials
        self._parallel = parallel
        self._out = out or sys.stdout
        trials = study.get_trials(deepcopy=False)
        self._done_before = sum(counts_towards_total(t) for t in trials)
        self._best = best_trial(study)
        self._printed = 0
        self._last_status = 0.0
        self._start = time.monotonic()

    def __getstate__(self) -> dict[str, Any]:
        return {}

    def header(self, lines: list[str]) -> None:
        for line in lines:
            self._print(line)
        self._print(f"  {'trial':<5} {'state':<8} {'objective':>9}  {'last step':>11}  {'wall':>6}  params")

    def _print(self, line: str) -> None:
        print(line, file=self._out, flush=True)

    def status_line(self) -> str:
        tally = self._searcher.tally
        done = self._done_before + tally.complete + tally.pruned + tally.failed
        running = len(self._searcher.live)
        counts = f"complete {tally.complete}, pruned {tally.pruned}, failed {tally.failed}"
        if tally.retried:
            counts += f", retried {tally.retried}"
        parts = [
            f"[{fmt_duration(time.monotonic() - self._start):>6}] done {done}/{self._n_trials} ({counts})",
            f"running {running}",
        ]
        if self._best is not None:
            parts.append(
                f"best {value_of(self._best):.4f} (#{self._best.number}: {fmt_params(trained_params(self._best))})"
            )
        remaining = self._n_trials - done
        if tally.wall_times and remaining > 0:
            mean = sum(tally.wall_times) / len(tally.wall_times)
            parts.append(f"ETA {fmt_duration(mean * remaining / max(1, min(self._parallel, remaining)))}")
        return " | ".join(parts)

    def refresh(self, final: bool = False) -> None:
        """Print newly finished trials, then the status line when a trial finished (or, while
        running, every STATUS_EVERY_S as a heartbeat)."""
        finished = self._searcher.tally.finished
        changed = self._printed != len(finished)
        for t in finished[self._printed :]:
            self._print(trial_row(t))
            if t.state != TrialState.COMPLETE or (value := value_of(t)) is None:
                continue
            if self._best is None or (best := value_of(self._best)) is None or value < best:
                self._best = t
        self._printed = len(finished)
        now = time.monotonic()
        if changed or (not final and now - self._last_status >= STATUS_EVERY_S):
            self._print(self.status_line())
            self._last_status = now

    def on_step_end(self, iteration: int, trials: list, **info: Any) -> None:
        self.refresh()
