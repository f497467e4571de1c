"""The reference table of `SweepSpec`'s fields in docs/contracts.md, rendered from the spec itself
(`python -m tuner.spec.reference` prints it; a test checks the docs hold exactly this table)."""

from __future__ import annotations

import typing
from typing import Any

from annotated_types import Ge, Gt, Le, Lt

from tuner.spec.sweep_spec import RESUME_SAFE, SweepSpec, env_name, flag_name

_BOUNDS = ((Ge, "≥", "ge"), (Gt, ">", "gt"), (Le, "≤", "le"), (Lt, "<", "lt"))


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def _range(metadata: list[Any]) -> str:
    parts = [
        f"{sign} {_number(getattr(m, attr))}"
        for m in metadata
        for kind, sign, attr in _BOUNDS
        if isinstance(m, kind)
    ]
    return ", ".join(parts) or "-"


def _kind(annotation: Any) -> str:
    """A reader's name for a field's type: `int or null`, `one of: a, b`, `name or inline space`."""
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) is typing.Literal:
        return "one of: " + ", ".join(args)
    if dict[str, Any] in args:
        return "space name or inline space"
    if not args:
        return getattr(annotation, "__name__", str(annotation))
    names = [_kind(a) for a in args if a is not type(None)]
    return " or ".join(names) + (" or null" if type(None) in args else "")


def table() -> str:
    """One Markdown row per spec field: type, range, default, flag, environment variable, and
    whether `--resume` may change it."""
    rows = [
        "| field | type | range | default | flag | Compose (.env) | `--resume` may change |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, field in SweepSpec.model_fields.items():
        default = field.get_default(call_default_factory=True)
        shown = (
            "none"
            if default is None
            else (default.model_dump() if hasattr(default, "model_dump") else default)
        )
        kind = "ranges, set" if name == "overrides" else _kind(field.annotation)
        env = "RNNTUNE_SET, RNNTUNE_RANGES" if name == "overrides" else env_name(name)
        rows.append(
            f"| `{name}` | {kind} | {_range(field.metadata)} | `{shown}` | `{flag_name(name)}` | `{env}` | "
            f"{'yes' if name in RESUME_SAFE else 'no'} |"
        )
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    print(table(), end="")
