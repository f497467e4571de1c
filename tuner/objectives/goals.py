"""A study's goals: the measures it optimises (each with its direction) and the bounds it keeps,
parsed from the sweep spec's `objectives` and `constraints` and applied to a trial's measures.

`objectives` always starts with `val_loss`, so a trial's first value is its validation loss
whatever else the study optimises; one objective is a study as rnntune always ran it. A
constraint is `NAME<=BOUND` or `NAME>=BOUND`, with an optional unit (`24e6`, `24M`, `10GiB`);
its value for Optuna (`Trial.set_constraint`) is how far the measure lies past the bound, so
zero or less is feasible.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from tuner.objectives.measures import MEASURES, PRIMARY, Direction, finite, measure

_UNITS = {
    "": 1.0,
    "k": 1e3,
    "M": 1e6,
    "G": 1e9,
    "KiB": 2.0**10,
    "MiB": 2.0**20,
    "GiB": 2.0**30,
    "TiB": 2.0**40,
}
_CONSTRAINT = re.compile(r"^\s*([a-z_]+)\s*(<=|>=)\s*([0-9.eE+-]+)\s*([A-Za-z]*)\s*$")


@dataclass(frozen=True)
class Objective:
    """One measure the study optimises, in a direction (its better one unless given)."""

    name: str
    direction: Direction

    @classmethod
    def parse(cls, text: str) -> Objective:
        """`NAME` or `NAME:minimize|maximize`; ValueError naming the allowed measures otherwise."""
        name, _, direction = text.strip().partition(":")
        found = measure(name.strip())
        if direction and direction.strip() not in ("minimize", "maximize"):
            raise ValueError(f"{text!r}: the direction must be minimize or maximize")
        return cls(found.name, direction.strip() or found.better)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Constraint:
    """A bound on one measure: `name op bound`."""

    name: str
    op: Literal["<=", ">="]
    bound: float

    @classmethod
    def parse(cls, text: str) -> Constraint:
        """`NAME<=BOUND[UNIT]` or `NAME>=BOUND[UNIT]`; ValueError saying the form otherwise."""
        found = _CONSTRAINT.match(text)
        if found is None:
            raise ValueError(
                f"{text!r}: a constraint is NAME<=BOUND or NAME>=BOUND (a unit of {', '.join(u for u in _UNITS if u)} "
                "allowed), e.g. num_params<=24e6"
            )
        name, op, number, unit = found.groups()
        measure(name)
        if unit not in _UNITS:
            raise ValueError(f"{text!r}: unknown unit {unit!r}: one of {', '.join(u for u in _UNITS if u)}")
        try:
            bound = float(number) * _UNITS[unit]
        except ValueError:
            raise ValueError(f"{text!r}: {number!r} is not a number") from None
        if not math.isfinite(bound):
            raise ValueError(f"{text!r}: the bound must be finite")
        return cls(name, op, bound)  # type: ignore[arg-type]

    def excess(self, value: float) -> float:
        """How far `value` lies past the bound (zero or less: within it), Optuna's constraint value."""
        return value - self.bound if self.op == "<=" else self.bound - value

    def __str__(self) -> str:
        """The stored form, exact (parsing it gives this constraint back)."""
        bound = self.bound
        shown = str(int(bound)) if bound.is_integer() and abs(bound) < 1e18 else repr(bound)
        return f"{self.name}{self.op}{shown}"


@dataclass(frozen=True)
class Goals:
    """The objectives (val_loss first) and constraints of one study."""

    objectives: tuple[Objective, ...] = (Objective(PRIMARY, "minimize"),)
    constraints: tuple[Constraint, ...] = ()

    @classmethod
    def parse(cls, objectives: Sequence[str] = (PRIMARY,), constraints: Sequence[str] = ()) -> Goals:
        """From the spec's strings; ValueError on an unknown measure, a repeat, or `val_loss` not first."""
        parsed = tuple(Objective.parse(o) for o in objectives) or (Objective(PRIMARY, "minimize"),)
        names = [o.name for o in parsed]
        if names[0] != PRIMARY or parsed[0].direction != "minimize":
            raise ValueError(f"the first objective must be {PRIMARY} (minimized)")
        if len(set(names)) != len(names):
            raise ValueError(f"each measure at most once, got {', '.join(names)}")
        return cls(parsed, tuple(Constraint.parse(c) for c in constraints))

    @property
    def names(self) -> list[str]:
        return [o.name for o in self.objectives]

    @property
    def directions(self) -> list[Direction]:
        return [o.direction for o in self.objectives]

    @property
    def several(self) -> bool:
        """Whether the study optimises more than the validation loss."""
        return len(self.objectives) > 1

    def values(self, measures: Mapping[str, float | None]) -> list[float] | None:
        """The trial's objective values in order; None when one is missing or not finite."""
        out = [_known(measures, name) for name in self.names]
        return None if any(v is None for v in out) else [v for v in out if v is not None]

    def excesses(self, measures: Mapping[str, float | None]) -> dict[str, float]:
        """Each constraint's value for Optuna (key `NAME<=BOUND`), for the measures known."""
        known = {c: _known(measures, c.name) for c in self.constraints}
        return {str(c): c.excess(v) for c, v in known.items() if v is not None}

    def violated_before_training(self, measures: Mapping[str, float | None]) -> list[str]:
        """The constraints on measures known from the config alone (`num_params`) that these
        measures break, as `num_params=3.1e+07 (bound num_params<=2.4e+07)`."""
        known = {c: _known(measures, c.name) for c in self.constraints if MEASURES[c.name].before_training}
        return [
            f"{c.name}={v:.4g} (bound {c})" for c, v in known.items() if v is not None and c.excess(v) > 0
        ]

    def refused_values(self, measures: Mapping[str, float | None]) -> list[float]:
        """The objective values a setting refused before training is told with (docs/sweeps.md):
        each measure known from the config alone (`num_params`), every other one the worst value
        (+inf minimised, -inf maximised). Optuna's TPE and NSGA-II rank infeasible trials by their
        constraint violation, not these; its GPSampler clips the infinities to the worst finite
        value seen (`optuna._gp.gp.warn_and_convert_inf`)."""
        worst = {"minimize": math.inf, "maximize": -math.inf}
        return [
            value if (value := _known(measures, o.name)) is not None else worst[o.direction]
            for o in self.objectives
        ]

    def refused_excesses(self, measures: Mapping[str, float | None]) -> dict[str, float]:
        """Every constraint's value for a setting refused before training: its excess where the
        measure is known, else 0.0 (on the bound: neither kept nor broken as far as is known).
        Every constraint gets one because Optuna's GPSampler refuses trials whose numbers of
        constraints differ (`_get_constraint_vals_and_feasibility`)."""
        return {str(c): 0.0 for c in self.constraints} | self.excesses(measures)

    def minimised(self, values: Sequence[float]) -> list[float]:
        """`values` (in objective order) turned so that lower is better for each (maximised ones negated)."""
        return [v if o.direction == "minimize" else -v for v, o in zip(values, self.objectives, strict=True)]


def _known(measures: Mapping[str, float | None], name: str) -> float | None:
    return finite(measures.get(name))
