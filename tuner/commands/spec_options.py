"""Command-line options generated from `SweepSpec`: `rnntune sweep`, `rnntune up` and `rnntune
remote create` take every field of a sweep's spec under the same flag, with the range, default and
help the spec declares (`tuner.spec`). `--range`/`--set` fill the spec's `overrides`.

`remote create` also reads each option from its environment variable (`env_name`, what Compose's
.env sets) when the flag is not given.
"""

from __future__ import annotations

import argparse
import types
import typing
from collections.abc import Mapping
from typing import Any

from pydantic.fields import FieldInfo

from trainer.config import ConfigError, parse_set
from tuner.errors import InvalidInput
from tuner.spec import SweepSpec, env_name, flag_name
from tuner.spec.sweep_spec import comma_list

# Fields set by other flags: `overrides` by --range and --set.
_COMPOSITE = ("overrides",)
RANGE_HELP = "override one range of the space (repeatable)"
SET_HELP = "fix a trainer setting for every trial, e.g. max_steps=500 (repeatable)"


def _scalar(annotation: Any) -> tuple[Any, tuple[str, ...] | None]:
    """The argparse type (and choices) of a spec field's annotation: `int | None` -> int, a Literal
    -> its values, `str | dict` (a space name or an inline space) -> str, `list[str]` -> a
    comma-separated list."""
    if typing.get_origin(annotation) is list:
        return comma_list, None
    args = [a for a in typing.get_args(annotation) if a is not type(None)] or [annotation]
    literal = next((a for a in args if typing.get_origin(a) is typing.Literal), None)
    if literal is not None:
        return str, tuple(typing.get_args(literal))
    for kind in (bool, int, float):
        if kind in args:
            return kind, None
    return str, None


def _help(name: str, field: FieldInfo) -> str:
    default = field.get_default(call_default_factory=True)
    shown = "none" if default is None else default
    return f"{(field.description or '').rstrip('.')} (default {shown}; env {env_name(name)})".replace(
        "%", "%%"
    )


def add_spec_options(parser: argparse.ArgumentParser, *, skip: tuple[str, ...] = ()) -> None:
    """Add one flag per spec field (default None: not given) and --range/--set for `overrides`."""
    for name, field in SweepSpec.model_fields.items():
        if name in _COMPOSITE or name in skip:
            continue
        kind, choices = _scalar(field.annotation)
        if isinstance(field.annotation, types.UnionType) and dict in typing.get_args(field.annotation):
            kind = str  # an inline space is for REST bodies; the command line names one
        if kind is bool:  # --cost-aware / --no-cost-aware; not given: None
            parser.add_argument(
                flag_name(name),
                dest=name,
                action=argparse.BooleanOptionalAction,
                default=None,
                help=_help(name, field),
            )
            continue
        parser.add_argument(
            flag_name(name), dest=name, type=kind, choices=choices, default=None, help=_help(name, field)
        )
    parser.add_argument(
        "--range", action="append", default=None, metavar="NAME=LOW:HIGH[:SCALE]", help=RANGE_HELP
    )
    parser.add_argument("--set", action="append", default=None, metavar="NAME=VALUE", help=SET_HELP)


def given(args: argparse.Namespace, environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The spec fields given on the command line (else, with `environ`, in their environment
    variables; empty ones mean "the default"); InvalidInput names a bad --range or --set."""
    out: dict[str, Any] = {}
    for name, field in SweepSpec.model_fields.items():
        if name in _COMPOSITE or not hasattr(args, name):
            continue
        value = getattr(args, name)
        if value is None and environ is not None and environ.get(env_name(name)):
            kind, _ = _scalar(field.annotation)
            value = _typed(kind, environ[env_name(name)], env_name(name))
        if value is not None:
            out[name] = value
    sets = args.set if args.set is not None else (environ or {}).get("RNNTUNE_SET", "").split()
    ranges = args.range if args.range is not None else (environ or {}).get("RNNTUNE_RANGES", "").split()
    try:
        overrides = {"ranges": dict(_range(r) for r in ranges), "set": parse_set(sets)}
    except ConfigError as err:
        raise InvalidInput(str(err)) from None
    if overrides["ranges"] or overrides["set"]:
        out["overrides"] = overrides
    return out


def _range(item: str) -> tuple[str, str]:
    name, sep, bounds = item.partition("=")
    if not sep or not name.strip() or not bounds.strip():
        raise InvalidInput(f"--range expects NAME=LOW:HIGH[:SCALE], got {item!r}")
    return name.strip(), bounds.strip()


BOOLEANS = {
    "true": True,
    "1": True,
    "yes": True,
    "on": True,
    "false": False,
    "0": False,
    "no": False,
    "off": False,
}


def _typed(kind: Any, text: str, variable: str) -> Any:
    if kind is bool:
        if text.strip().lower() not in BOOLEANS:
            raise InvalidInput(f"{variable}: expected true or false, got {text!r}")
        return BOOLEANS[text.strip().lower()]
    try:
        return kind(text)
    except ValueError:
        raise InvalidInput(f"{variable}: expected {kind.__name__}, got {text!r}") from None
