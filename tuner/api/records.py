"""Light, immutable records of studies and trials as the API reads them from the study database.

Why not Optuna's `FrozenTrial`: the API holds whole studies (10,000 trials and more) in its cache
and only needs what it serves; plain dataclasses are cheaper to build and to keep.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any


@dataclass(frozen=True)
class ParamSpec:
    """One hyperparameter's distribution: `kind` is `float`, `int` or `categorical`."""

    name: str
    kind: str
    low: float | None = None
    high: float | None = None
    log: bool = False
    step: float | None = None
    choices: tuple[Any, ...] = ()

    @staticmethod
    @lru_cache(maxsize=4096)
    def from_distribution(name: str, distribution_json: str) -> "ParamSpec":
        """Build from Optuna's distribution JSON (`FloatDistribution`, `IntDistribution`, ...)."""
        data = json.loads(distribution_json)
        kind_name, attrs = data["name"], data["attributes"]
        if kind_name == "CategoricalDistribution":
            return ParamSpec(name=name, kind="categorical", choices=tuple(attrs["choices"]))
        kind = "int" if "Int" in kind_name else "float"
        return ParamSpec(
            name=name,
            kind=kind,
            low=float(attrs["low"]),
            high=float(attrs["high"]),
            log=bool(attrs.get("log", "Log" in kind_name)),
            step=attrs.get("step", attrs.get("q")),
        )

    @property
    def numeric(self) -> bool:
        return self.kind != "categorical"

    def scaled(self, value: float) -> float:
        """The value on the axis the search works on: natural log for log params."""
        return math.log(value) if self.log else float(value)

    @property
    def scaled_width(self) -> float:
        """Width of the whole range on that axis (0 for a single-point range)."""
        assert self.low is not None and self.high is not None
        return self.scaled(self.high) - self.scaled(self.low)

    def as_dict(self) -> dict[str, Any]:
        if self.kind == "categorical":
            return {"name": self.name, "kind": self.kind, "choices": list(self.choices)}
        return {
            "name": self.name,
            "kind": self.kind,
            "low": self.low,
            "high": self.high,
            "log": self.log,
            "step": self.step,
        }


@dataclass(frozen=True)
class TrialRecord:
    """One trial: number, state name (`COMPLETE`, `PRUNED`, `FAIL`, `RUNNING`, `WAITING`), ..."""

    trial_id: int
    number: int
    state: str
    value: float | None
    params: dict[str, Any]
    specs: dict[str, ParamSpec]
    curve: tuple[tuple[int, float | None], ...]
    user_attrs: dict[str, Any]
    datetime_start: str | None
    datetime_complete: str | None

    @property
    def finished(self) -> bool:
        return self.state in ("COMPLETE", "PRUNED", "FAIL")

    @property
    def completed(self) -> bool:
        """COMPLETE with a finite objective: the trials the sensitivity view draws."""
        return self.state == "COMPLETE" and self.value is not None and math.isfinite(self.value)


@dataclass(frozen=True)
class StudyRow:
    """A study's identity, attrs and trial counts by state, read in one pass."""

    study_id: int
    name: str
    direction: str
    user_attrs: dict[str, Any] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    best_value: float | None = None

    @property
    def status(self) -> str:
        return str(self.user_attrs.get("status", "created"))
