"""SpaceError, and pydantic's validation errors rewritten as `WHERE: parameter NAME: problem; allowed`."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from tuner.errors import InvalidInput
from tuner.space.params import SCALE_NAMES, SPEC_CLASSES
from tuner.space.tunable import TUNABLES

TOP_KEYS = ("description", "source", "recipe", "fixed", "params")


class SpaceError(InvalidInput):
    """A search space that cannot be used; the message names the file, the parameter and the problem."""


def _param_problem(rest: tuple[Any, ...], error: ErrorDetails) -> str:
    kind = error["type"]
    if rest == ("[key]",):
        return f"unknown hyperparameter; known: {', '.join(TUNABLES)}"
    if kind == "union_tag_invalid":
        return f"unknown scale {error['ctx']['tag']!r}; allowed: {', '.join(SCALE_NAMES)}"
    if kind in ("union_tag_not_found", "model_type", "dict_type") and len(rest) <= 1:
        return f"expected a mapping with low, high and scale (or choices), got {error['input']!r}"
    tag = rest[0] if rest and rest[0] in SPEC_CLASSES else None
    keys = rest[1:] if tag else rest
    if kind == "extra_forbidden" and tag:
        allowed = ", ".join(sorted(SPEC_CLASSES[tag].model_fields))
        return f"unknown key(s) {keys[0]}; allowed for scale {tag}: {allowed}"
    if kind == "missing":
        return f"missing {keys[0]}"
    if kind == "value_error":
        return str(error["ctx"]["error"])
    where = ".".join(str(k) for k in keys)
    return f"{where}: {error['msg']}" if where else error["msg"]


def _problem(error: ErrorDetails) -> str:
    loc, kind = tuple(error["loc"]), error["type"]
    if loc[:1] == ("params",) and len(loc) >= 2:
        return f"parameter {loc[1]}: {_param_problem(loc[2:], error)}"
    if kind == "value_error":
        return str(error["ctx"]["error"])
    if loc == ("params",):
        return "params must map at least one hyperparameter to its range"
    if kind == "model_type" and not loc:
        return f"a search space is a mapping with params and fixed, got {type(error['input']).__name__}"
    if kind == "extra_forbidden":
        return f"unknown key(s) {loc[-1]}; allowed: {', '.join(TOP_KEYS)}"
    if loc == ("name",):
        return f"space name {error['input']!r}: {error['msg']} (letters, digits, _ . -; not starting with . or -)"
    return f"{'.'.join(map(str, loc))}: {error['msg']}"


def describe(where: str, err: ValidationError) -> SpaceError:
    """One SpaceError listing every problem pydantic found, each prefixed with `where` (the file)."""
    problems = list(dict.fromkeys(_problem(e) for e in err.errors()))
    return SpaceError("\n".join(f"{where}: {p}" for p in problems))
