"""The hyperparameters a search space may tune, read from the trainer's config.

A `TrainConfig` field made with `trainer.config.tunable(...)` is tunable; its type says how it is
sampled: a float on a `linear` or `log` scale, an int on the `int` scale, a `Literal` (or bool) as a
categorical over its values. Adding a hyperparameter to the trainer is therefore one edit there.
"""

from __future__ import annotations

import types
from dataclasses import dataclass
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel

from trainer.config import TUNABLE, TrainConfig

Kind = Literal["float", "int", "categorical"]
SCALES: dict[str, tuple[str, ...]] = {
    "float": ("linear", "log"),
    "int": ("int",),
    "categorical": ("categorical",),
}


@dataclass(frozen=True)
class Tunable:
    """One tunable config field: its name, kind and (for a categorical) the values it takes."""

    name: str
    kind: Kind
    choices: tuple[Any, ...] = ()

    @property
    def scales(self) -> tuple[str, ...]:
        return SCALES[self.kind]


def _kind(name: str, annotation: Any) -> tuple[Kind, tuple[Any, ...]]:
    if annotation is bool:
        return "categorical", (False, True)
    if annotation is int:
        return "int", ()
    if annotation is float:
        return "float", ()
    if get_origin(annotation) is Literal:
        return "categorical", get_args(annotation)
    if get_origin(annotation) in (Union, types.UnionType):
        raise TypeError(f"config field {name} is marked tunable but may be None; a tuned value is never None")
    raise TypeError(
        f"config field {name} is marked tunable but has type {annotation!r}; use float, int, bool or Literal"
    )


def derive_tunables(config: type[BaseModel] = TrainConfig) -> dict[str, Tunable]:
    """Name -> Tunable for every field of `config` marked tunable, in the config's field order."""
    out = {}
    for name, field in config.model_fields.items():
        extra = field.json_schema_extra
        if isinstance(extra, dict) and extra.get(TUNABLE):
            kind, choices = _kind(name, field.annotation)
            out[name] = Tunable(name, kind, choices)
    return out


TUNABLES: dict[str, Tunable] = derive_tunables()
# Trainer settings a space may not fix: the sweep sets them for each trial (a schedule is what a
# population member's history replays, not a setting of the space).
RESERVED_SETTINGS = frozenset({"run_dir", "schedule"})
