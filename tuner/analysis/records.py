"""The immutable records the read model (`tuner.analysis.reads`) builds from Optuna's tables: a study's
row, its trials and their distributions. Plain frozen dataclasses: cheaper to build and keep than
Optuna's FrozenTrial, and only what the API serves."""

from __future__ import annotations

import math
import typing
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Any

from optuna.distributions import (
    BaseDistribution,
    CategoricalDistribution,
    IntDistribution,
    json_to_distribution,
)

from tuner.policies.population_history import history_problem, params_in_force
from tuner.storage import study_attrs, trial_attrs


@lru_cache(maxsize=4096)
def parse_distribution(text: str) -> BaseDistribution:
    """Parse a distribution JSON once: the same few strings repeat on every trial."""
    return json_to_distribution(text)


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
    def from_distribution(name: str, distribution_json: str) -> ParamSpec:
        """Build from Optuna's distribution JSON (`FloatDistribution`, `IntDistribution`, ...)."""
        dist: Any = parse_distribution(distribution_json)
        if isinstance(dist, CategoricalDistribution):
            return ParamSpec(name=name, kind="categorical", choices=tuple(dist.choices))
        kind = "int" if isinstance(dist, IntDistribution) else "float"
        return ParamSpec(name, kind, float(dist.low), float(dist.high), bool(dist.log), dist.step)

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
        keys = (
            ("name", "kind", "choices")
            if self.kind == "categorical"
            else ("name", "kind", "low", "high", "log", "step")
        )
        return {key: list(self.choices) if key == "choices" else getattr(self, key) for key in keys}


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

    @cached_property
    def params_in_force(self) -> dict[str, Any]:
        """The hyperparameters its model was trained with at the end: `params` (Optuna's, as first
        sampled), or for a population member those in force after its copies and changes, the
        shape it copied included (tuner.policies.population_history). What a trial's table,
        `best`, report, export and web view show; the analyses of the search keep `params`."""
        return params_in_force(self.params, trial_attrs.PBT_HISTORY.of(self.user_attrs))

    @property
    def initial_params(self) -> dict[str, Any] | None:
        """Optuna's `params` labelled as what they are for a population member (the settings first
        sampled for it, which a copy may have replaced); None for any other trial."""
        return dict(self.params) if trial_attrs.PBT_HISTORY.of(self.user_attrs) is not None else None

    @property
    def history_problem(self) -> str | None:
        """What is wrong with its stored `pbt_history` (None: absent or well-formed)."""
        return history_problem(trial_attrs.PBT_HISTORY.of(self.user_attrs))

    @property
    def completed(self) -> bool:
        """COMPLETE with a finite objective: the trials the sensitivity view draws."""
        return self.state == "COMPLETE" and self.value is not None and math.isfinite(self.value)


@dataclass(frozen=True)
class StudyRow:
    """A study's identity, attrs, trial counts by state and best objective, read in one pass."""

    study_id: int
    name: str
    direction: str
    user_attrs: dict[str, Any] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    best_value: float | None = None

    @property
    def status(self) -> str:
        """The stored status; `unknown` for a value that is not one (the study's `problem` says so)."""
        value = study_attrs.STATUS.of(self.user_attrs, "created")
        return value if value in typing.get_args(study_attrs.Status) else "unknown"
