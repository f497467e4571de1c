"""Hyperparameter sensitivity around the best trial (thesis Appendix 2.B), as plain data.

The trials looked at are the COMPLETE ones at their objective and, unless the caller asks for
COMPLETE only, the PRUNED ones at the value they reported where ASHA stopped them (their last
evaluation step: the rung where they were compared). The neighbourhood of the best COMPLETE trial is
every other such trial whose hyperparameters each lie within `fraction` of that hyperparameter's
whole tuning range either side of the best trial's value — measured on the log scale for log-scale
hyperparameters, equal for categorical ones; where the best value lies nearer than that to an edge
of the range, the window shifts inside the range and keeps its width. The default, 0.075 either
side, is the thesis' window: "about 15% of its entire tuning range" in all (Appendix 2.B). How far the neighbours' values lie from the
best's, at the same step, says how sensitive the result is to jitter in the hyperparameters;
importances (see `importances`) say which hyperparameters matter overall.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from tuner.analysis import importances
from tuner.analysis.reads import ParamSpec, TrialRecord

# thesis App. 2.B: a window of 15% of each range in all, i.e. 7.5% either side of the best value.
DEFAULT_FRACTION = 0.075
INCLUDE = ("all", "complete")
Include = Literal["all", "complete"]
# Tolerance of the window test, relative to the range: params stored as floats round-trip exactly
# in SQLite but not always through log().
_REL_TOL = 1e-9


@dataclass(frozen=True)
class Point:
    """One trial as the sensitivity view draws it: a COMPLETE trial at its objective (`step` None)
    or a PRUNED one at the value it last reported, at `step`."""

    trial: TrialRecord
    value: float
    step: int | None

    @property
    def number(self) -> int:
        return self.trial.number

    @property
    def params(self) -> dict[str, Any]:
        return self.trial.params

    @property
    def specs(self) -> dict[str, ParamSpec]:
        return self.trial.specs

    @property
    def pruned(self) -> bool:
        return self.step is not None


def stopped_at(trial: TrialRecord) -> tuple[int, float] | None:
    """A PRUNED trial's last reported (step, value): ASHA compared it there and stopped it."""
    finite = [(step, value) for step, value in trial.curve if value is not None and math.isfinite(value)]
    return max(finite) if finite else None


def points(completed: Sequence[TrialRecord], pruned: Sequence[TrialRecord], include: Include) -> list[Point]:
    """`completed` (best first) at their objective, then, for `include="all"`, `pruned` at their
    last reported value (a PRUNED trial that reported nothing has nothing to draw and is left out)."""
    out = [Point(trial=t, value=float(t.value), step=None) for t in completed]  # type: ignore[arg-type]
    if include == "all":
        for trial in pruned:
            last = stopped_at(trial)
            if last is not None:
                out.append(Point(trial=trial, value=last[1], step=last[0]))
    return out


@dataclass(frozen=True)
class Window:
    """The neighbourhood's bounds on one hyperparameter.

    `scaled_low`/`scaled_high` bound it on the search's axis (log for log params); `low`/`high` are
    the same bounds in the hyperparameter's own units, for display.
    """

    spec: ParamSpec
    center: Any
    scaled_low: float
    scaled_high: float
    low: Any
    high: Any

    def contains(self, value: Any) -> bool:
        if not self.spec.numeric:
            return value == self.center
        tol = _REL_TOL * max(self.spec.scaled_width, 1.0)
        return self.scaled_low - tol <= self.spec.scaled(value) <= self.scaled_high + tol


def windows(best: TrialRecord, fraction: float) -> dict[str, Window]:
    """One window per hyperparameter of the best trial: 2 × `fraction` of its range, centred on the
    best value where the range allows, shifted inside the range where the best value lies within
    `fraction` of an edge, so that the window keeps its width (Appendix 2.B's "about 15% of its
    entire tuning range" is the window's width wherever the best value lies)."""
    out = {}
    for name, spec in best.specs.items():
        center = best.params[name]
        if not spec.numeric:
            nan = math.nan
            out[name] = Window(
                spec=spec, center=center, scaled_low=nan, scaled_high=nan, low=center, high=center
            )
            continue
        assert spec.low is not None and spec.high is not None  # numeric specs carry both bounds
        edge_low, edge_high = spec.scaled(spec.low), spec.scaled(spec.high)
        width = min(2 * fraction * spec.scaled_width, spec.scaled_width)
        lo = min(max(spec.scaled(center) - width / 2, edge_low), edge_high - width)
        unscale = math.exp if spec.log else float
        out[name] = Window(
            spec=spec,
            center=center,
            scaled_low=lo,
            scaled_high=lo + width,
            low=max(spec.low, unscale(lo)),
            high=min(spec.high, unscale(lo + width)),
        )
    return out


def neighbourhood(best: TrialRecord, trials: Sequence[Any], fraction: float) -> list[Any]:
    """The `trials` (records or `Point`s) other than the best with every hyperparameter inside its
    window. A trial that lacks one of the best trial's hyperparameters (a conditional one) is outside.
    """
    bounds = windows(best, fraction)
    return [
        trial
        for trial in trials
        if trial.number != best.number
        and all(name in trial.params and w.contains(trial.params[name]) for name, w in bounds.items())
    ]


def _value_at(trial: TrialRecord, step: int) -> float | None:
    found = dict(trial.curve).get(step)
    return found if found is not None and math.isfinite(found) else None


def _delta(best: TrialRecord, point: Point, sign: float) -> float | None:
    """How much worse `point` is than the best at the same fidelity: the objective for a COMPLETE
    trial, the best trial's own value at the step where a PRUNED one stopped (None if it has none)."""
    if point.step is None:
        return sign * (point.value - float(best.value))  # type: ignore[arg-type]
    reference = _value_at(best, point.step)
    return None if reference is None else sign * (point.value - reference)


def _stats(deltas: list[float]) -> dict[str, float | None]:
    return {
        "max_delta": max(deltas) if deltas else None,
        "mean_delta": statistics.fmean(deltas) if deltas else None,
        "median_delta": statistics.median(deltas) if deltas else None,
    }


def _neighbours(near: Sequence[Any], deltas: Sequence[float | None]) -> list[dict[str, Any]]:
    """The neighbours as the analysis lists them: COMPLETE first, each by its delta."""
    return sorted(
        (
            {
                "number": p.number,
                "state": "PRUNED" if p.pruned else "COMPLETE",
                "step": p.step,
                "value": p.value,
                "delta": d,
                "params": p.params,
            }
            for p, d in zip(near, deltas, strict=True)
        ),
        key=lambda item: (item["state"], item["delta"] is None, item["delta"] or 0.0, item["number"]),
    )


def analyse(
    completed: Sequence[TrialRecord],
    pruned: Sequence[TrialRecord],
    direction: str,
    fraction: float = DEFAULT_FRACTION,
    include: Include = "all",
) -> dict[str, Any] | None:
    """The whole Appendix 2.B analysis as JSON-ready data; None when no trial has completed.

    `completed` must be the study's COMPLETE trials with a finite objective, best first; `pruned`
    its PRUNED trials. The summary's deltas are over COMPLETE neighbours (final results, as in the
    thesis); `pruned_mean_delta` is over PRUNED ones, each against the best at its own step.
    """
    if not completed:
        return None
    best = completed[0]
    drawn = points(completed, pruned, include)
    near = neighbourhood(best, drawn, fraction)
    sign = 1.0 if direction == "minimize" else -1.0
    deltas = [_delta(best, p, sign) for p in near]
    fidelity = importances.choose_fidelity(completed, pruned if include == "all" else ())
    weights, reason = importances.estimate(fidelity, direction)
    bounds = windows(best, fraction)
    complete_deltas = [d for p, d in zip(near, deltas) if not p.pruned and d is not None]
    pruned_deltas = [d for p, d in zip(near, deltas) if p.pruned and d is not None]
    return {
        "fraction": fraction,
        "include": include,
        "n_completed": len(completed),
        "n_pruned": len(drawn) - len(completed),
        "best": {"number": best.number, "value": best.value, "params": best.params},
        "windows": {
            name: {**w.spec.as_dict(), "center": w.center, "window_low": w.low, "window_high": w.high}
            for name, w in bounds.items()
        },
        "neighbours": _neighbours(near, deltas),
        "summary": {
            "count": len(near),
            "count_complete": len(near) - sum(p.pruned for p in near),
            "count_pruned": sum(p.pruned for p in near),
            **_stats(complete_deltas),
            "pruned_mean_delta": statistics.fmean(pruned_deltas) if pruned_deltas else None,
        },
        "importance_method": importances.METHOD,
        "importances": weights,
        "importance_fidelity": fidelity.as_dict(),
        "importance_note": reason,
    }
