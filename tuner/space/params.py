"""How one hyperparameter is sampled: the `params` entries of a space file, a union tagged by `scale`.

`linear` (the default) and `log` take real bounds, written as numbers or `exp(x)` (so e² is exactly
`exp(2)`); `int` takes integer bounds; `categorical` takes `choices`. `when` makes an entry
conditional on another setting. Each class also knows its Optuna define-by-run call.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
    model_validator,
)

Scalar = bool | int | float | str
SCALE_NAMES = ("linear", "log", "int", "categorical")
_EXP = re.compile(r"^\s*exp\(\s*([-+0-9.eE]+)\s*\)\s*$")
_SCALAR_SCHEMA = {"type": ["number", "string", "boolean"]}


def fmt(x: Any) -> str:
    """A bound or value as the error messages and `rnntune spaces show` print it."""
    return f"{x:.6g}" if isinstance(x, float) else str(x)


def _real(raw: Any, info: ValidationInfo) -> float:
    """A real bound: a number, a numeric string or `exp(x)`; never a bool, never an overflow."""
    key = info.field_name
    if isinstance(raw, (int, float, str)) and not isinstance(raw, bool):
        match = _EXP.match(raw) if isinstance(raw, str) else None
        try:
            return math.exp(float(match.group(1))) if match else float(raw)
        except OverflowError:
            raise ValueError(
                f"{key} {_short(str(raw).strip())} is too large; bounds must be finite numbers"
            ) from None
        except ValueError:
            pass
    raise ValueError(f"{key} must be a number or exp(x), got {_short(repr(raw))}")


def _integer(raw: Any, info: ValidationInfo) -> int:
    """An integer bound (6, 6.0 or "6"); 2.5 is refused rather than rounded."""
    key = info.field_name
    value = raw
    if isinstance(raw, str):
        try:
            value = float(raw)
        except ValueError:
            value = raw
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool):
        if abs(value) > MAX_INT_BOUND:  # samplers and the stored distribution hold bounds as floats
            raise ValueError(
                f"{key} {_short(str(raw).strip())} is outside ±2^53; integer bounds must lie within it"
            )
        return value
    raise ValueError(f"{key} must be an integer, got {_short(repr(raw))}")


MAX_INT_BOUND = 2**53  # the largest integer every float holds exactly


def _short(raw: Any) -> str:
    """`raw` for an error message (a string as it is, anything else as its repr), cut to 40 characters."""
    text = raw if isinstance(raw, str) else repr(raw)
    return text if len(text) <= 40 else text[:37] + "..."


def _when(raw: Any) -> dict[str, tuple[Any, ...]]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping) or not raw:
        raise ValueError("when must map a setting to its value(s), e.g. {cell: mogrifier_lstm}")
    return {str(k): tuple(v) if isinstance(v, (list, tuple)) else (v,) for k, v in raw.items()}


RealBound = Annotated[
    float,
    BeforeValidator(_real),
    WithJsonSchema({"anyOf": [{"type": "number"}, {"type": "string", "pattern": _EXP.pattern}]}),
]
IntBound = Annotated[int, BeforeValidator(_integer), WithJsonSchema({"type": "integer"})]
When = Annotated[
    dict[str, tuple[Scalar, ...]],
    BeforeValidator(_when),
    WithJsonSchema(
        {
            "type": "object",
            "minProperties": 1,
            "additionalProperties": {
                "anyOf": [_SCALAR_SCHEMA, {"type": "array", "items": _SCALAR_SCHEMA, "minItems": 1}]
            },
            "description": "sample this parameter only when each named setting has (one of) the given value(s)",
        }
    ),
]


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    when: When = Field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out = self.model_dump(mode="json", exclude={"when"})
        if self.when:
            out["when"] = {k: list(v) for k, v in self.when.items()}
        return out


class _Range(_Spec):
    low: float
    high: float

    @model_validator(mode="after")
    def _ordered(self) -> _Range:
        if not (math.isfinite(self.low) and math.isfinite(self.high)):
            raise ValueError("low and high must be finite")
        if self.low >= self.high:
            raise ValueError(f"low ({fmt(self.low)}) must be below high ({fmt(self.high)})")
        return self

    def contains(self, value: Any) -> bool:
        return self.low <= value <= self.high

    def describe_range(self) -> str:
        return f"[{fmt(self.low)}, {fmt(self.high)}]"


class LinearParam(_Range):
    """A real value sampled uniformly in [low, high]."""

    scale: Literal["linear"] = "linear"
    low: RealBound
    high: RealBound

    def suggest(self, trial: Any, name: str) -> float:
        return trial.suggest_float(name, self.low, self.high)


class LogParam(_Range):
    """A real value sampled uniformly in log space: [low, high] must lie above 0."""

    scale: Literal["log"]
    low: RealBound
    high: RealBound

    @model_validator(mode="after")
    def _positive(self) -> LogParam:
        if self.low <= 0:
            raise ValueError(f"a log-scale range must lie above 0, got [{fmt(self.low)}, {fmt(self.high)}]")
        return self

    def suggest(self, trial: Any, name: str) -> float:
        return trial.suggest_float(name, self.low, self.high, log=True)


class IntParam(_Range):
    """An integer sampled uniformly in [low, high], both ends included."""

    scale: Literal["int"]
    low: IntBound
    high: IntBound

    def suggest(self, trial: Any, name: str) -> int:
        return trial.suggest_int(name, self.low, self.high)


class CategoricalParam(_Spec):
    """One of `choices` (the values the config field's Literal type allows)."""

    scale: Literal["categorical"] = "categorical"
    choices: tuple[Scalar, ...]

    @field_validator("choices")
    @classmethod
    def _distinct(cls, choices: tuple[Any, ...]) -> tuple[Any, ...]:
        if len(choices) < 2:
            raise ValueError("choices must list at least two values")
        if len(set(choices)) != len(choices):
            raise ValueError("choices repeat a value")
        return choices

    def contains(self, value: Any) -> bool:
        return value in self.choices

    def describe_range(self) -> str:
        return "{" + ", ".join(map(str, self.choices)) + "}"

    def suggest(self, trial: Any, name: str) -> Any:
        return trial.suggest_categorical(name, list(self.choices))


def _scale_of(raw: Any) -> str | None:
    """The union's tag: `scale` if given, else categorical when `choices` are given, else linear."""
    if isinstance(raw, Mapping):
        return raw.get("scale") or ("categorical" if "choices" in raw else "linear")
    return getattr(raw, "scale", None)


ParamSpec = Annotated[
    Annotated[LinearParam, Tag("linear")]
    | Annotated[LogParam, Tag("log")]
    | Annotated[IntParam, Tag("int")]
    | Annotated[CategoricalParam, Tag("categorical")],
    Discriminator(_scale_of),
]
SPEC_CLASSES: dict[str, type[_Spec]] = {
    "linear": LinearParam,
    "log": LogParam,
    "int": IntParam,
    "categorical": CategoricalParam,
}
