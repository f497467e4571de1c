"""The life of a trial between a trial process and the study, as typed messages and one decision.

A trial process reports evaluations and ends with a summary; the driver turns Ray Tune's dicts into
`Evaluation` and `TrialEnd` at the boundary (`from_result`), and `decide` says, from the end, the
curve recorded so far and the sweep's state, what the study is told: COMPLETE with a value, PRUNED,
or FAIL with a reason, whether a retry runs in its place, and which attributes are stored. Nothing
here imports Ray or Optuna: the rules are tested with plain values (tests/tuner/sweeps/trial/test_lifecycle.py),
as Ray Tune tests its searchers. The searcher (searcher.py) applies an `Outcome` to the study.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from trainer.result import TrainResult
from tuner.storage import trial_attrs

# The key of a trial process's last result: its summary (`TrialEnd`), not an evaluation.
FINAL = "final"
# The key of a population member's first result after each start: its segment, as JSON (step, the
# Ray trial it copied, that checkpoint's loss, the settings in force; tuner.policies.population_rules).
SEGMENT = "segment"
METRIC = "val_loss"
# Evaluation fields stored as the trial's user attrs: (attr, result key).
EVALUATION_ATTRS = (
    (trial_attrs.NODE, "node_ip"),
    (trial_attrs.PID, "pid"),
    (trial_attrs.CHECKPOINT, "best_checkpoint"),
    (trial_attrs.GPU_IDS, "gpu_ids"),  # the GPUs Ray assigned the trial (`placement.placement`)
    (trial_attrs.DEVICE, "device"),
    (
        trial_attrs.CUDA_PATH_USED,
        "cuda_path_used",
    ),  # graphs, compiled, eager or cpu (trainer/cells/paths.py)
    (trial_attrs.CUDA_PATH_CALLS, "cuda_path_calls"),  # training calls per path
)
# The trainer's result fields a trial does not report when training returns, and why. It reports
# every other one (`REPORTED`, in `TrialReport`), so a field added to `TrainResult` reaches the
# driver unless it is listed here.
NOT_REPORTED: dict[str, str] = {
    "steps": "the curve's last evaluation is the trial's step",
    "temperature": "the trainer's own evaluation setting, in its result.json",
    "dyneval_temperature": "the trainer's own evaluation setting, in its result.json",
    "test_accuracy": "in the run folder's result.json only",
    "cuda_path_calls": "reported at each evaluation (EVALUATION_ATTRS)",
}
REPORTED: tuple[str, ...] = tuple(f.name for f in fields(TrainResult) if f.name not in NOT_REPORTED)
# Reported fields the driver stores otherwise than as the trial attribute of their name, and how.
STORED_OTHERWISE: dict[str, str] = {
    "best_val_loss": "the trial's value (TrialEnd.best_val_loss)",
    "best_checkpoint": "trial attribute `checkpoint` (TrialEnd.checkpoint)",
    "run_dir": "trial attribute `run_dir`, written when the trial starts",
    "stopped": "why training stopped: in Ray's result log only",
    "cuda_path_used": "stored from each evaluation (EVALUATION_ATTRS)",
}
# Summary fields stored as user attrs (of the same name) when present: every reported field the
# driver does not store otherwise (best_step, the test, dynamic-evaluation and Monte Carlo dropout
# losses; with mc_dropout_samples > 0 MC dropout's temperature and dropout-rate scale, both chosen
# on validation, Mogrifier §3.3).
_DECLARED = {a.key for a in trial_attrs.ALL}
SUMMARY_ATTRS: tuple[str, ...] = tuple(
    name for name in REPORTED if name not in STORED_OTHERWISE and name in _DECLARED
)


@dataclass(frozen=True)
class TrialReport:
    """A trial process's last message when training returns: the run's summary (the `REPORTED`
    fields of `trainer.TrainResult`), a population member's segment not yet sent, and its last
    evaluation's result, which the summary's fields override. Ray Tune reports dicts, so it crosses
    Ray as one (`to_result`) and is read back with `from_result`."""

    summary: dict[str, Any]
    segment: str = ""
    last: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, result: TrainResult, segment: str = "", last: Mapping[str, Any] | None = None) -> TrialReport:
        return cls({name: getattr(result, name) for name in REPORTED}, segment, dict(last or {}))

    def to_result(self) -> dict[str, Any]:
        return {**self.last, **({SEGMENT: self.segment} if self.segment else {}), FINAL: True, **self.summary}

    @classmethod
    def from_result(cls, result: Mapping[str, Any]) -> TrialReport:
        """The report a `to_result` dict carries (every reported field, None where absent)."""
        summary = {name: result.get(name) for name in REPORTED}
        last = {k: v for k, v in result.items() if k not in summary and k not in (FINAL, SEGMENT)}
        return cls(summary, str(result.get(SEGMENT) or ""), last)


class Verdict(enum.Enum):
    """What the study is told about a finished trial."""

    COMPLETE = "COMPLETE"
    PRUNED = "PRUNED"
    FAIL = "FAIL"


@dataclass(frozen=True)
class Evaluation:
    """One report of a running trial: its step, validation loss and what it says about itself."""

    step: int | None
    value: float | None
    attrs: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_result(cls, result: Mapping[str, Any]) -> Evaluation:
        step, value = result.get("step"), result.get(METRIC)
        attrs: dict[str, Any] = {
            attr: found for attr, key in EVALUATION_ATTRS if (found := _field(result, key))
        }
        return cls(
            None if step is None else int(step),
            None if value is None or result.get(FINAL) else float(value),
            attrs,
        )


def _field(result: Mapping[str, Any], key: str) -> Any:
    """`result[key]`; a dict reported under `key` arrives flattened by Ray Tune as `key/name`
    entries (tune_controller's flatten_dict), and is gathered back."""
    if key in result:
        return result[key]
    prefix = f"{key}/"
    return {k.removeprefix(prefix): v for k, v in result.items() if k.startswith(prefix)} or None


@dataclass(frozen=True)
class TrialEnd:
    """How a trial's process ended: with its summary (`final`), or stopped by the scheduler
    (`final` False), and the summary's fields."""

    final: bool = False
    error: str | None = None
    diverged_at: int | None = None  # the step the trainer gave up on a divergence (with `error`)
    best_val_loss: float | None = None
    dyneval_val_loss: float | None = None
    checkpoint: str | None = None
    summary: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_result(cls, result: Mapping[str, Any] | None) -> TrialEnd:
        if not result or not result.get(FINAL):
            return cls()
        return cls(
            final=True,
            error=str(result["error"]) if result.get("error") else None,
            diverged_at=None if result.get("diverged_at") is None else int(result["diverged_at"]),
            best_val_loss=result.get("best_val_loss"),
            dyneval_val_loss=result.get("dyneval_val_loss"),
            checkpoint=result.get("best_checkpoint") or None,
            summary={k: result[k] for k in SUMMARY_ATTRS if result.get(k) is not None},
        )


@dataclass(frozen=True)
class Outcome:
    """What the study is told: the verdict, its value or reason, whether a retry runs in its place
    (`needs_retry`: it failed through no fault of its own), and the attributes to store first."""

    verdict: Verdict
    value: float | None = None
    error: str | None = None
    needs_retry: bool = False
    attrs: dict[str, Any] = field(default_factory=dict)


def decide(
    end: TrialEnd,
    *,
    curve: Mapping[int, float],
    last_step: int,
    max_steps: int,
    stop_reason: str | None,
    dyneval_space: bool,
    keep_diverged: bool = False,
) -> Outcome:
    """The study's verdict on a trial that ended (see the module docstring).

    * A summary with an error: FAIL with it (the trainer's own failure: no retry). A divergence the
      trainer gave up on stores its step (`diverged_at`); with `keep_diverged` (`procedure: paper`,
      tuner.policies.procedure) the trial is COMPLETE at the best of its curve instead, as lamb's
      monitor keeps its best validation loss — FAIL only when it diverged before any evaluation.
    * A summary: COMPLETE with its best validation loss — or, in a dynamic-evaluation space (thesis
      Table 2.6), what dynamic evaluation achieved — and its summary fields as attrs; FAIL when
      that value is missing or not finite.
    * No summary, the sweep stopping (`stop_reason`): FAIL, retried when the study resumes.
    * No summary at the last evaluation (`last_step` >= `max_steps`): it trained to the end, so
      COMPLETE with the best of its curve.
    * No summary before that: PRUNED (stopped early by the scheduler).
    """
    if end.final:
        if end.error is not None:
            return _failed(end, curve, keep_diverged)
        attrs = dict(end.summary)
        if end.checkpoint:
            attrs[trial_attrs.CHECKPOINT] = end.checkpoint
        best = end.best_val_loss
        if dyneval_space and end.dyneval_val_loss is not None:
            best = end.dyneval_val_loss
        return _completed(best, attrs)
    if stop_reason is not None:
        return Outcome(Verdict.FAIL, error=f"interrupted: {stop_reason}", needs_retry=True)
    if last_step >= max_steps:
        return _completed(min(curve.values(), default=None), {})
    return Outcome(Verdict.PRUNED)


def _failed(end: TrialEnd, curve: Mapping[int, float], keep_diverged: bool) -> Outcome:
    """A summary with an error: FAIL, or COMPLETE at the curve's best for a divergence kept."""
    if end.diverged_at is None:
        return Outcome(Verdict.FAIL, error=end.error)
    attrs: dict[str, Any] = {trial_attrs.DIVERGED_AT: end.diverged_at}
    finite = {step: v for step, v in curve.items() if math.isfinite(v)}
    if not keep_diverged or not finite:
        return Outcome(Verdict.FAIL, error=end.error, attrs=attrs)
    best_step = min(finite, key=lambda step: (finite[step], step))
    return Outcome(
        Verdict.COMPLETE, value=finite[best_step], attrs={**attrs, trial_attrs.BEST_STEP: best_step}
    )


def _completed(best: float | None, attrs: dict[str, Any]) -> Outcome:
    if best is None or not math.isfinite(float(best)):
        return Outcome(Verdict.FAIL, error=f"no finite validation loss (best {best})", attrs=attrs)
    return Outcome(Verdict.COMPLETE, value=float(best), attrs=attrs)
