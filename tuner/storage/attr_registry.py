"""Typed user attributes (of studies and trials): each one declared once, as `KEY: Key[T] =
registry(key, T, written_by, holds)`, with its value type T given explicitly (the annotation is
for mypy; a test checks the two agree).

A `Key` is the attribute's plain string (what Optuna stores, so it works wherever a key does) that
also reads the value typed as T (`KEY.of(attrs)`) and writes it checked against T (`KEY.write`,
a TypeError naming the key before anything is stored). Reads are not checked again at run time:
every write was, and mypy checks what each reader does with T. The docs' attribute tables are
generated from the registry (`Registry.table`).
"""

from __future__ import annotations

import json
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar, overload

from pydantic import TypeAdapter, ValidationError

T = TypeVar("T")


class _Settable(Protocol):
    def set_user_attr(self, key: str, value: Any) -> None: ...


class Key(str, Generic[T]):
    """An attribute's key: a `str` equal to the stored key, that reads and writes the value as T."""

    registry: Registry

    def __new__(cls, key: str, registry: Registry) -> Key[T]:
        made = super().__new__(cls, key)
        made.registry = registry
        return made

    def __reduce__(self) -> tuple[type[str], tuple[str]]:
        return str, (str(self),)  # pickled (Ray, multiprocessing) as the plain string it stands for

    @overload
    def of(self, attrs: Mapping[str, Any]) -> T | None: ...
    @overload
    def of(self, attrs: Mapping[str, Any], default: T) -> T: ...
    def of(self, attrs: Mapping[str, Any], default: T | None = None) -> T | None:
        """The value stored under this key in `attrs` (a study's or trial's `user_attrs`), or
        `default` where it is absent."""
        return typing.cast("T | None", attrs.get(self, default))

    def required(self, attrs: Mapping[str, Any]) -> T:
        """The value stored under this key in `attrs`; KeyError naming the key where it is absent
        (an attribute every study of the current schema holds, such as `space_def`)."""
        if self not in attrs:
            raise KeyError(f"attribute {self} is not stored")
        return typing.cast(T, attrs[self])

    def checked(self, value: T) -> T:
        """`value`, after checking it against the declared type (see `Registry.checked`)."""
        return typing.cast(T, self.registry.checked(self, value))

    def write(self, target: _Settable, value: T) -> None:
        """Set this attribute on a study or trial (anything with `set_user_attr`), checked first."""
        target.set_user_attr(str(self), self.checked(value))


@dataclass(frozen=True)
class Attr:
    """One declared attribute: its key, who writes it, what it holds, and its value's type."""

    key: str
    written_by: str
    holds: str
    kind: Any

    @property
    def type_name(self) -> str:
        """The value's type as the contracts page names it (from its JSON schema)."""
        return _type_name(TypeAdapter(self.kind).json_schema())


def _type_name(schema: Mapping[str, Any]) -> str:
    if "enum" in schema:
        return " \\| ".join(f"`{json.dumps(v)}`" for v in schema["enum"])
    if "anyOf" in schema:
        return " or ".join(_type_name(part) for part in schema["anyOf"])
    kind = schema.get("type")
    if kind == "array":
        return f"list of {_type_name(schema.get('items', {}))}"
    if kind == "object" and isinstance(schema.get("additionalProperties"), dict):
        return f"object of {_type_name(schema['additionalProperties'])}"
    return str(kind) if kind else "any JSON"


class Registry:
    """The attributes of one kind (study or trial) in the order declared, and their value checks."""

    def __init__(self) -> None:
        self.all: list[Attr] = []
        self._adapters: dict[str, TypeAdapter[Any]] = {}

    def __call__(self, key: str, kind: Any, written_by: str, holds: str) -> Key[Any]:
        """Declare attribute `key` whose values have type `kind` (a class, a Literal, a union or a
        parametrised container: anything pydantic's TypeAdapter takes)."""
        if key in self._adapters:
            raise ValueError(f"attribute {key} is declared twice")
        self.all.append(Attr(key, written_by, holds, kind))
        self._adapters[key] = TypeAdapter(kind)
        return Key(key, self)

    def checked(self, key: str, value: Any) -> Any:
        """`value`, if its JSON form (what Optuna stores) has `key`'s declared type; TypeError naming
        the key otherwise, KeyError for a key not declared here. For keys chosen at run time; a
        key known in the code writes through its `Key`."""
        if key not in self._adapters:
            raise KeyError(f"{key!r} is not a declared attribute")
        try:
            self._adapters[key].validate_python(json.loads(json.dumps(value)), strict=True)
        except (ValidationError, TypeError, ValueError) as err:
            detail = err.errors()[0]["msg"] if isinstance(err, ValidationError) else str(err)
            raise TypeError(f"attribute {key}: {value!r} is not {self._name(key)} ({detail})") from None
        return value

    def write(self, target: _Settable, key: str, value: Any) -> None:
        """Set `key` (chosen at run time) on a study or trial after checking its value."""
        target.set_user_attr(key, self.checked(key, value))

    def _name(self, key: str) -> str:
        return next(a.type_name for a in self.all if a.key == key)

    def table(self) -> str:
        """The attributes as a markdown table (docs/contracts.md)."""
        rows = [f"| `{a.key}` | {a.type_name} | {a.written_by} | {a.holds} |" for a in self.all]
        return "\n".join(["| attribute | type | written by | what it holds |", "|---|---|---|---|", *rows])
