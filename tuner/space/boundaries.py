"""Range-boundary alerts: the best trials crowd an edge of a searched range.

When most of a study's best trials sit near one bound of a parameter's range, the optimum may lie
outside it, and a tuner that only samples inside the range cannot find it (the thesis's ranges were
chosen wide for that reason, Tables 2.4–2.6). Distances are measured on the parameter's own scale:
log-scale ranges in log space, so "near" means the same for 1e-5 and 1e-3.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

TOP_FRACTION = 0.10  # the "best trials": the top 10% of COMPLETE trials ...
MIN_TOP = 3  # ... but at least this many, and alerts only once there are this many
NEAR = 0.05  # within 5% of the range's width from a bound
MIN_SHARE = 0.5  # at least half of the best trials near the same bound


@dataclass(frozen=True)
class EdgeAlert:
    """One parameter whose best trials crowd one edge of its range."""

    param: str
    edge: Literal["low", "high"]
    bound: float
    near: int  # how many of the best trials lie within NEAR of the bound
    top: int  # how many best trials were looked at

    @property
    def message(self) -> str:
        return (
            f"{self.near} of the {self.top} best trials have {self.param} within {NEAR:.0%} of its "
            f"{self.edge} bound {self.bound:g}: the optimum may lie beyond it"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "param": self.param,
            "edge": self.edge,
            "bound": self.bound,
            "near": self.near,
            "top": self.top,
            "message": self.message,
        }


def _position(value: float, low: float, high: float, scale: str) -> float:
    """Where `value` lies in [low, high] as a fraction 0..1 on the range's scale.

    An integer range is its bins [low − ½, high + ½], so a bound counts as near only in a range
    wide enough that 5% of it is more than the bound's own bin (mogrifier_rank, not rounds 0–6).
    """
    if scale == "int":
        return (value - low + 0.5) / (high - low + 1)
    if scale == "log":
        return (math.log(value) - math.log(low)) / (math.log(high) - math.log(low))
    return (value - low) / (high - low)


def crowded_edges(
    space_params: Mapping[str, Mapping[str, Any]],
    complete: Sequence[tuple[float, Mapping[str, Any]]],
) -> list[EdgeAlert]:
    """Alerts for `space_params` (a stored space's `params`: name → {scale, low, high}) given the
    COMPLETE trials as (objective, params) pairs, lower objective better."""
    ranked = sorted(complete, key=lambda vp: vp[0])
    top = ranked[: max(MIN_TOP, math.ceil(TOP_FRACTION * len(ranked)))]
    if len(top) < MIN_TOP:
        return []
    alerts = []
    for name, spec in space_params.items():
        if spec.get("scale") == "categorical" or spec.get("high") == spec.get("low"):
            continue
        low, high, scale = float(spec["low"]), float(spec["high"]), str(spec.get("scale"))
        values = [p[name] for _, p in top if p.get(name) is not None]
        if len(values) < MIN_TOP:
            continue
        positions = [_position(float(v), low, high, scale) for v in values]
        edges: tuple[tuple[Literal["low", "high"], float, int], ...] = (
            ("low", low, sum(x <= NEAR for x in positions)),
            ("high", high, sum(x >= 1 - NEAR for x in positions)),
        )
        for edge, bound, count in edges:
            if count >= MIN_SHARE * len(values):
                alerts.append(EdgeAlert(name, edge, bound, count, len(values)))
    return alerts
