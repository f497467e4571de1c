"""A study's Pareto front over its objectives, from its trials' stored measures.

Every trial stores its measures under their names (`num_params`, `tokens_per_s`, `peak_memory`,
`wall_time`; its value is `val_loss`), so the front can be drawn over the study's own objectives
or any others. A trial is feasible when it keeps every constraint of the study; the front is the
non-dominated feasible COMPLETE trials (`tuner.objectives.pareto`). One-objective studies have a
front too: their best trial.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tuner.analysis.records import TrialRecord
from tuner.objectives.goals import Goals
from tuner.objectives.measures import MEASURES, PRIMARY, finite
from tuner.objectives.pareto import non_dominated
from tuner.spec import SweepSpec
from tuner.storage import trial_attrs


def study_goals(attrs: dict[str, Any]) -> Goals:
    """The study's objectives and constraints from its stored spec (val_loss alone without one)."""
    spec = SweepSpec.stored_in(attrs)
    return spec.goals() if spec is not None else Goals()


def has_front(goals: Goals) -> bool:
    """Whether the study's front says more than its best trial: several objectives or a bound."""
    return goals.several or bool(goals.constraints)


def measures_of(trial: TrialRecord) -> dict[str, float]:
    """The trial's measures: its value as `val_loss`, the others from its attributes (finite only)."""
    found = {name: trial.value if name == PRIMARY else trial.user_attrs.get(name) for name in MEASURES}
    return {name: v for name, raw in found.items() if (v := finite(raw)) is not None}


@dataclass(frozen=True)
class FrontPoint:
    """One COMPLETE trial on the objectives' axes: feasible or not, on the front or dominated."""

    number: int
    values: dict[str, float]
    feasible: bool
    on_front: bool
    checkpoint: str | None
    measures: dict[str, float]

    def as_dict(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "values": self.values,
            "feasible": self.feasible,
            "on_front": self.on_front,
            "has_checkpoint": self.checkpoint is not None,
            "measures": self.measures,
        }


def front(trials: Sequence[TrialRecord], goals: Goals) -> list[FrontPoint]:
    """Every COMPLETE trial with all of `goals`' objectives measured, marked feasible (keeps every
    constraint it has a measure for) and on the front (not dominated by another feasible one);
    then every setting refused before training for a bound, infeasible, with the objectives known
    without training (`num_params`)."""
    rows = []
    for t in trials:
        if not t.completed:
            continue
        measures = measures_of(t)
        values = goals.values(measures)
        if values is None:
            continue
        feasible = all(excess <= 0 for excess in goals.excesses(measures).values())
        rows.append(
            (t, dict(zip(goals.names, values, strict=True)), feasible, goals.minimised(values), measures)
        )
    feasible_rows = [r for r in rows if r[2]]
    best = (
        {feasible_rows[i][0].number for i in non_dominated([r[3] for r in feasible_rows])}
        if feasible_rows
        else set()
    )
    points = [
        FrontPoint(t.number, values, ok, t.number in best, trial_attrs.CHECKPOINT.of(t.user_attrs), measures)
        for t, values, ok, _, measures in rows
    ]
    return sorted(points + refused_points(trials, goals), key=lambda p: p.number)


def refused_points(trials: Sequence[TrialRecord], goals: Goals) -> list[FrontPoint]:
    """The settings refused before training for a bound (trial attr `refused`): infeasible points
    whose values are the objectives measured without training (none is the validation loss)."""
    out = []
    for t in trials:
        if t.state != "COMPLETE" or trial_attrs.REFUSED.of(t.user_attrs) is None:
            continue
        measures = measures_of(t)
        values = {name: measures[name] for name in goals.names if name in measures}
        out.append(FrontPoint(t.number, values, False, False, None, measures))
    return out


def members(points: Sequence[FrontPoint], goals: Goals) -> list[FrontPoint]:
    """The points on the front, by the first objective (then trial number)."""
    return sorted((p for p in points if p.on_front), key=lambda p: (p.values[goals.names[0]], p.number))


def choose(points: Sequence[FrontPoint], rule: str, goals: Goals) -> FrontPoint | None:
    """The front's member a rule picks: `lowest:NAME` (e.g. `lowest:val_loss`) or `highest:NAME`,
    optionally `under` a bound, as `lowest:val_loss@num_params<=24e6`; None when none qualifies.
    ValueError naming the forms for a rule it cannot read."""
    head, _, bound = rule.partition("@")
    kind, _, name = head.partition(":")
    if kind not in ("lowest", "highest") or name not in goals.names:
        raise ValueError(
            f"rule {rule!r}: lowest:NAME or highest:NAME, optionally @NAME<=BOUND, with NAME one of "
            f"the study's objectives ({', '.join(goals.names)})"
        )
    extra = Goals.parse(goals.names, [bound]).constraints if bound else ()
    chosen = [
        p
        for p in points
        if p.on_front and all(c.name in p.measures and c.excess(p.measures[c.name]) <= 0 for c in extra)
    ]
    if not chosen:
        return None
    sign = 1.0 if kind == "lowest" else -1.0
    return min(chosen, key=lambda p: (sign * p.values[name], p.number))


def best_record(
    trials: Sequence[TrialRecord], goals: Goals, fallback: TrialRecord | None
) -> TrialRecord | None:
    """The study's best trial: under constraints its best feasible one (lowest first objective),
    else `fallback` (the read model's best)."""
    if not goals.constraints:
        return fallback
    chosen = choose(front(trials, goals), f"lowest:{goals.names[0]}", goals)
    return None if chosen is None else next(t for t in trials if t.number == chosen.number)


def on_measure(completed: Sequence[TrialRecord], name: str, direction: str) -> list[TrialRecord]:
    """The COMPLETE trials with `name` as their value (those that measured it), best first in
    `direction`: what the sensitivity view and importances read for another objective than the
    validation loss (PRUNED trials have no value of it at a step, so they are left out)."""
    scored = [
        dataclasses.replace(t, value=v) for t in completed if (v := measures_of(t).get(name)) is not None
    ]
    sign = 1.0 if direction == "minimize" else -1.0
    return sorted(scored, key=lambda t: (sign * float(t.value or 0.0), t.number))
