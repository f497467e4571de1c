"""Widening a crowded range: extend one edge of a tuned parameter's range so a study can search past it.

When the best trials crowd an edge of a range (`tuner.space.boundaries`), the optimum may lie beyond it.
`widen` moves that edge out by half the range's span on the parameter's own scale (in log space for
log-scale ranges, rounded up to a whole number for integer ones), but never past what the trainer
accepts. The trainer's limits are read from the pydantic constraints of its config field
(`ge`/`gt`/`le`/`lt` on `TrainConfig`); an exclusive limit (dropouts < 1) is kept at 1% of the old
span (on the range's scale) inside. The widened space is then validated whole, as any space is.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from annotated_types import Ge, Gt, Le, Lt

from trainer import TrainConfig
from tuner.space.errors import SpaceError
from tuner.space.model import SearchSpace
from tuner.space.params import fmt

Edge = Literal["low", "high"]
EDGES = ("low", "high", "both")
STEP = 0.5  # how far an edge moves: this fraction of the range's span
INSIDE = 0.01  # how far inside an exclusive trainer limit the edge stays, as a fraction of the span


def trainer_limits(param: str) -> tuple[tuple[float, bool] | None, tuple[float, bool] | None]:
    """The trainer's (lower, upper) limit on `param` as (value, inclusive), None where unbounded."""
    lower = upper = None
    for c in TrainConfig.model_fields[param].metadata:
        if isinstance(c, Ge):
            lower = (_number(c.ge), True)
        elif isinstance(c, Gt):
            lower = (_number(c.gt), False)
        elif isinstance(c, Le):
            upper = (_number(c.le), True)
        elif isinstance(c, Lt):
            upper = (_number(c.lt), False)
    return lower, upper


def _number(bound: object) -> float:
    """An annotated-types bound as a float (TrainConfig's bounds are all numbers)."""
    if not isinstance(bound, int | float):
        raise TypeError(f"non-numeric trainer bound {bound!r}")
    return float(bound)


def _forward(x: float, scale: str) -> float:
    return math.log(x) if scale == "log" else x


def _back(y: float, scale: str) -> float:
    return math.exp(y) if scale == "log" else y


def _rounded(x: float, towards_zero_of: float) -> float:
    """`x` to 6 significant digits, unless that lands on the wrong side of `towards_zero_of`."""
    short = float(f"{x:.6g}")
    return short if (short - towards_zero_of) * (x - towards_zero_of) > 0 else x


def _moved(param: str, spec: Any, edge: Edge) -> float | int:
    """The new bound of one edge: half the span further out, clipped to the trainer's limit."""
    scale = spec.scale
    old = spec.low if edge == "low" else spec.high
    sign = -1 if edge == "low" else 1
    limit = trainer_limits(param)[0 if edge == "low" else 1]
    if scale == "int":
        target: float = old + sign * math.ceil(STEP * (spec.high - spec.low))
        if limit is not None:
            bound = limit[0] if limit[1] else limit[0] - sign * 1
            bound = math.floor(bound) if edge == "high" else math.ceil(bound)
            target = min(target, bound) if edge == "high" else max(target, bound)
        new: float | int = int(target)
    else:
        span = _forward(spec.high, scale) - _forward(spec.low, scale)
        target = _forward(old, scale) + sign * STEP * span
        if limit is not None and not (scale == "log" and limit[0] <= 0 and edge == "low"):
            bound = _forward(limit[0], scale)
            if not limit[1]:
                bound -= sign * INSIDE * span
            target = min(target, bound) if edge == "high" else max(target, bound)
        new = _rounded(_back(target, scale), old)
    if (new - old) * sign <= 0:
        raise SpaceError(
            f"parameter {param}: its {edge} bound {fmt(old)} is already at the trainer's limit "
            f"({'≥' if edge == 'low' else '≤'} {fmt(limit[0]) if limit else '?'}); it cannot be widened there"
        )
    return new


def check_widenable(space: SearchSpace, param: str) -> Any:
    """The spec of `param` if it is a tuned range; SpaceError naming it otherwise."""
    if param not in space.params:
        raise SpaceError(
            f"parameter {param}: not tuned by space {space.name}; tuned: {', '.join(space.params)}"
        )
    spec = space.params[param]
    if spec.scale == "categorical":
        raise SpaceError(
            f"parameter {param}: categorical (choices {spec.describe_range()}); only ranges widen"
        )
    return spec


def widen(space: SearchSpace, param: str, edge: str) -> tuple[SearchSpace, dict[str, Any]]:
    """The space with `param`'s range widened at `edge` (low, high or both), and what changed
    ({param, edge, old: [low, high], new: [low, high]}).

    A conditional entry whose `when` lists values of the widened integer parameter, the old edge
    among them (mogrifier_rank `when: {mogrifier_rounds: [1..6]}` when rounds grow past 6), gains the
    new values too. With `both`, an edge already at the trainer's limit stays. SpaceError names the
    parameter when it is not tuned, is categorical, or the edge is unknown or at the trainer's limit.
    """
    if edge not in EDGES:
        raise SpaceError(f"parameter {param}: edge must be one of {', '.join(EDGES)}, not {edge!r}")
    spec = check_widenable(space, param)
    edges: tuple[Edge, ...] = ("low", "high") if edge == "both" else (edge,)  # type: ignore[assignment]
    raw = space.to_dict()
    entry = raw["params"][param]
    moved = []
    for one in edges:
        try:
            entry[one] = _moved(param, spec, one)
            moved.append(one)
        except SpaceError:
            if edge != "both":
                raise
    if not moved:
        raise SpaceError(
            f"parameter {param}: both bounds of {spec.describe_range()} are at the trainer's limits"
        )
    if spec.scale == "int":
        _extend_conditions(raw["params"], param, spec, entry)
    widened = SearchSpace.from_dict(raw, where=f"{space.name} (widening {param})", path=space.path)
    change = {
        "param": param,
        "edge": edge,
        "old": [spec.low, spec.high],
        "new": [entry["low"], entry["high"]],
    }
    return widened, change


def _extend_conditions(params: dict[str, Any], param: str, old: Any, new: dict[str, Any]) -> None:
    """Add the widened integer parameter's new values to the `when` lists that held its old edge."""
    below = list(range(new["low"], old.low))
    above = list(range(old.high + 1, new["high"] + 1))
    for entry in params.values():
        allowed = (entry.get("when") or {}).get(param)
        if allowed is None:
            continue
        extra = (below if old.low in allowed else []) + (above if old.high in allowed else [])
        entry["when"][param] = list(allowed) + [v for v in extra if v not in allowed]
