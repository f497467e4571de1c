"""The search space itself: the file format (`SpaceFile`) and the validated `SearchSpace` a sweep samples.

A space holds `params` (the tuned hyperparameters, see `tuner.space.params`) and `fixed` (trainer
config settings every trial shares). The structure is pydantic's to check; what the trainer knows
(its field names, types and limits) is checked against `TrainConfig` here, so a range the trainer
would reject fails when the space loads, not in a trial.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from trainer import ConfigError, TrainConfig, make_config
from tuner.space.errors import SpaceError, describe
from tuner.space.params import ParamSpec, fmt
from tuner.space.settings import fixed_setting
from tuner.space.tunable import RESERVED_SETTINGS, TUNABLES

# Space and study names end up in paths and URLs: letters, digits, _ . - only, and not `..`.
NAME_PATTERN = r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$"
# Stand-in used only to validate fixed settings of a dataset whose files the user supplies later.
_PLACEHOLDER_DATA_DIR = "data"

TunableName = Literal[tuple(TUNABLES)]  # type: ignore[valid-type]


def _fixed_schema() -> dict[str, Any]:
    """JSON schema of `fixed`: the trainer config's own fields, types and limits (less run_dir)."""
    props = TrainConfig.model_json_schema()["properties"]
    return {
        "type": "object",
        "properties": {k: v for k, v in props.items() if k not in RESERVED_SETTINGS},
        "additionalProperties": False,
        "description": "trainer config settings shared by every trial",
    }


FixedSettings = Annotated[dict[str, Any], WithJsonSchema(_fixed_schema())]


MAX_TEXT = 2000  # characters of a space's description, source or recipe


class SweepDefaults(BaseModel):
    """How the paper searched the space (e.g. Circling Back §7: "the best hyperparameters were
    selected from a random pool of 60 candidates"): a sweep uses these unless it names its own;
    `procedure: paper` takes them whole and also trains every trial in full (docs/sweeps.md)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    sampler: str | None = Field(None, description="the sampler a sweep of this space uses by default")
    n_trials: int | None = Field(
        None, ge=1, le=100_000, description="the trials a sweep of this space runs by default"
    )
    early_stopping: bool | None = Field(
        None,
        description="true: the paper stopped trials early (Circling Back §5 on Enwik8 and Text8), so "
        "`procedure: paper` keeps rnntune's early stopping instead of training every trial in full",
    )

    def given(self) -> dict[str, Any]:
        return self.model_dump(exclude_none=True)


class SpaceFile(BaseModel):
    """A search-space file (search_spaces/*.yaml): what is tuned over which range, and the fixed task."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # Text fields are bounded like everything a request may send (docs/api.md, service bounds).
    description: str = Field("", max_length=MAX_TEXT)
    source: str = Field(
        "", max_length=MAX_TEXT, description="where the ranges come from, e.g. thesis Table 2.4"
    )
    recipe: str = Field(
        "",
        max_length=MAX_TEXT,
        description="the training recipe in a line (optimizer, averaging, D, schedule), for listings",
    )
    fixed: FixedSettings = Field(default_factory=dict)
    sweep: SweepDefaults = Field(
        default_factory=lambda: SweepDefaults(sampler=None, n_trials=None, early_stopping=None),
        description="the paper's sampler and trial count, used unless a sweep names its own; "
        "`procedure: paper` takes them whole, with no early stopping unless `early_stopping` "
        "says the paper stopped trials early (docs/sweeps.md)",
    )
    params: dict[TunableName, ParamSpec] = Field(  # type: ignore[valid-type]
        min_length=1, description="the tuned hyperparameters, sampled in this order"
    )

    @field_validator("params")
    @classmethod
    def _kinds(cls, params: dict[str, Any]) -> dict[str, Any]:
        """Each entry suits its config field's type; conditional entries sample after the others, and
        after the conditional entries their conditions name (`_check_conditions` limits the depth)."""
        for name, spec in params.items():
            _check_kind(name, spec)

        def depth(spec: Any) -> int:
            if not spec.when:
                return 0
            return 2 if any(key in params and params[key].when for key in spec.when) else 1

        return dict(sorted(params.items(), key=lambda item: depth(item[1])))

    @model_validator(mode="after")
    def _trainer_accepts(self) -> SpaceFile:
        base = _check_fixed(self.fixed, self.params)
        for name, spec in self.params.items():
            ends = spec.choices if spec.scale == "categorical" else (spec.low, spec.high)
            for value in ends:
                try:
                    make_config({**base, name: value})
                except ConfigError as err:
                    raise ValueError(
                        f"parameter {name}: value {fmt(value)} of its range is rejected by the trainer: {err}"
                    ) from None
        _check_conditions(self.params, self.fixed)
        return self


def _check_kind(name: str, spec: Any) -> None:
    tunable = TUNABLES[name]
    if spec.scale in tunable.scales:
        if tunable.kind == "categorical":
            bad = [c for c in spec.choices if c not in tunable.choices]
            if bad:
                raise ValueError(
                    f"parameter {name}: unknown choice(s) {', '.join(map(str, bad))}; "
                    f"allowed: {', '.join(map(str, tunable.choices))}"
                )
        return
    if tunable.kind == "int":
        raise ValueError(f"parameter {name}: takes integers; use scale: int")
    if tunable.kind == "categorical":
        raise ValueError(
            f"parameter {name}: is categorical; give choices from {', '.join(map(str, tunable.choices))}"
        )
    if spec.scale == "categorical":
        categorical = [t.name for t in TUNABLES.values() if t.kind == "categorical"]
        raise ValueError(f"parameter {name}: choices are only allowed for: {', '.join(categorical)}")
    raise ValueError(f"parameter {name}: is real-valued; use scale linear or log, not int")


def _check_fixed(fixed: Mapping[str, Any], params: Mapping[str, Any]) -> dict[str, Any]:
    """Check the fixed settings with the trainer; returns them as a config base for checking ranges."""
    for key in fixed:
        if key in RESERVED_SETTINGS:
            raise ValueError(f"fixed setting {key}: set by the sweep for each trial; remove it")
        if key not in TrainConfig.model_fields:
            raise ValueError(
                f"fixed setting {key}: unknown trainer setting; known: {', '.join(TrainConfig.model_fields)}"
            )
    both = sorted(set(params) & set(fixed))
    if both:
        raise ValueError(f"parameter {both[0]}: both tuned and fixed; keep one")
    base = dict(fixed)
    if base.get("dataset", "builtin") not in ("builtin", "reverse_copy") and not base.get("data_dir"):
        base["data_dir"] = _PLACEHOLDER_DATA_DIR
    try:
        make_config(base)
    except ConfigError as err:
        raise ValueError(f"fixed settings rejected by the trainer: {err}") from None
    return base


def _check_conditions(params: Mapping[str, Any], fixed: Mapping[str, Any]) -> None:
    """Each condition names a known setting, is not nested, and can hold."""
    for name, spec in params.items():
        for key, allowed in spec.when.items():
            if key not in TrainConfig.model_fields:
                raise ValueError(f"parameter {name}: condition on unknown setting {key!r}")
            if key == name:
                raise ValueError(f"parameter {name}: a parameter cannot be conditional on itself")
            subject = params.get(key)
            if subject is not None:
                # A condition on fixed settings only always holds or never does (checked on the
                # subject itself), so the subject is as good as unconditional: no nesting.
                if any(k in params for k in subject.when):
                    raise ValueError(
                        f"parameter {name}: conditions may not be nested ({key} is itself conditional)"
                    )
                if not any(subject.contains(v) for v in allowed):
                    raise ValueError(
                        f"parameter {name}: condition {key} in {list(allowed)} never holds; "
                        f"{key} ranges over {subject.describe_range()}"
                    )
            elif fixed_setting(fixed, key) not in allowed:
                raise ValueError(
                    f"parameter {name}: condition {key} in {list(allowed)} never holds; "
                    f"{key} is fixed to {fixed_setting(fixed, key)!r}"
                )


class SearchSpace(SpaceFile):
    """A validated, named search space; `to_dict`/`from_dict` store it in a study (`space_def`)."""

    name: str = Field(pattern=NAME_PATTERN)
    _path: str | None = PrivateAttr(None)

    @classmethod
    def from_dict(
        cls, raw: Any, *, where: str | None = None, path: str | os.PathLike | None = None
    ) -> SearchSpace:
        """Validate a mapping (a parsed file plus its name, an inline API space, a stored `space_def`)."""
        name = raw.get("name", "?") if isinstance(raw, Mapping) else "?"
        try:
            space = cls.model_validate(raw)
        except ValidationError as err:
            raise describe(where or f"stored space {name}", err) from None
        space._path = str(path) if path is not None else None
        return space

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "source": self.source,
            "recipe": self.recipe,
            "fixed": dict(self.fixed),
            **({"sweep": self.sweep.given()} if self.sweep.given() else {}),
            "params": {name: spec.to_dict() for name, spec in self.params.items()},
        }

    @property
    def path(self) -> str | None:
        """The file the space was read from, if any."""
        return self._path

    @property
    def param_names(self) -> tuple[str, ...]:
        return tuple(self.params)

    def param(self, name: str) -> Any:
        """The sampling spec of a tuned hyperparameter (KeyError if it is not tuned)."""
        return self.params[name]

    def is_active(self, spec: Any, values: Mapping[str, Any]) -> bool:
        """Whether a conditional param applies given the values sampled so far and the fixed settings."""
        return all(
            values.get(key, fixed_setting(self.fixed, key)) in allowed for key, allowed in spec.when.items()
        )

    def suggest(self, trial: Any) -> dict[str, Any]:
        """Sample one point through an Optuna trial (define-by-run), honouring conditional params."""
        values: dict[str, Any] = {}
        for name, spec in self.params.items():
            if self.is_active(spec, values):
                values[name] = spec.suggest(trial, name)
        return values

    def trial_config(self, params: Mapping[str, Any], run_dir: str | os.PathLike) -> dict[str, Any]:
        """The trainer config values of one trial: fixed settings, then the sampled params."""
        return {**self.fixed, **params, "run_dir": str(run_dir)}

    def with_overrides(
        self,
        ranges: Mapping[str, Any] | None = None,
        fixed: Mapping[str, Any] | None = None,
    ) -> SearchSpace:
        """A copy with some ranges replaced and some settings fixed (`--range`, `--set`).

        `ranges` maps a name to "low:high" or "low:high:scale" (or a dict with low/high/scale); a
        name not yet in the space needs its scale. `fixed` maps a setting to a value; fixing a tuned
        hyperparameter removes it from the tuned ones.
        """
        raw = self.to_dict()
        where = f"{self.name} (overrides)"
        for name, spec in (ranges or {}).items():
            entry = {
                k: v for k, v in raw["params"].get(name, {}).items() if k not in ("low", "high", "choices")
            }
            entry.update(parse_range(where, name, spec))
            raw["params"][name] = entry
        fixed = dict(fixed or {})
        for name, value in fixed.items():
            raw["params"].pop(name, None)
            raw["fixed"][name] = value
        # A conditional param whose condition a new fixed setting rules out (e.g. --set cell=lstm on
        # a Mogrifier space drops mogrifier_rounds) no longer applies.
        for name, entry in list(raw["params"].items()):
            for key, allowed in (entry.get("when") or {}).items():
                if key in fixed and fixed[key] not in allowed:
                    raw["params"].pop(name)
                    break
        return SearchSpace.from_dict(raw, where=where, path=self.path)


def parse_range(where: str, name: str, spec: Any) -> dict[str, Any]:
    """A `--range` value ("low:high" or "low:high:scale", or a mapping) as a params entry."""
    if isinstance(spec, Mapping):
        return dict(spec)
    parts = spec.split(":") if isinstance(spec, str) else []
    if len(parts) not in (2, 3):
        raise SpaceError(
            f"{where}: parameter {name}: a range override is low:high or low:high:scale, got {spec!r}"
        )
    out: dict[str, Any] = {"low": parts[0].strip(), "high": parts[1].strip()}
    if len(parts) == 3:
        out["scale"] = parts[2].strip()
    return out
