"""One defensive read of a stored attribute's JSON (Optuna's `value_json` column): the database is
data another tool, a hand or a bug may have written, so a value that does not parse, is not text,
is huge or is nested deeper than any attribute rnntune writes is read as an `Unreadable` naming why,
never an exception. Whoever shows the study turns it into a `problem` (the listing) or a 409 naming
the attribute (the study's own routes; `tuner.api.serializers.stored_problem`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

MAX_BYTES = 4 * 1024 * 1024  # far above any attribute rnntune writes (a space is at most 64 KiB)
MAX_DEPTH = 64  # containers within containers; rnntune's deepest attribute nests about 5


@dataclass(frozen=True)
class Unreadable:
    """A stored value that could not be read, and why (a phrase: "is not JSON (...)")."""

    reason: str

    def __str__(self) -> str:
        return f"<unreadable: {self.reason}>"


def decode(raw: Any) -> Any:
    """The value `raw` (a `value_json` cell) holds, or an `Unreadable` saying why it cannot be read."""
    if isinstance(raw, (bytes, bytearray, memoryview)):
        try:
            raw = bytes(raw).decode("utf-8")
        except UnicodeDecodeError:
            return Unreadable("is bytes that are not UTF-8 text")
    if not isinstance(raw, str):
        return Unreadable(f"is stored as {type(raw).__name__}, not JSON text")
    if len(raw) > MAX_BYTES:
        return Unreadable(f"is {len(raw):,} characters of JSON; at most {MAX_BYTES:,} are read")
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError) as err:  # ValueError: JSONDecodeError, an int over 4300 digits
        return Unreadable(f"is not JSON ({str(err)[:80] or type(err).__name__})")
    if _depth_over(value, MAX_DEPTH):
        return Unreadable(f"is nested deeper than {MAX_DEPTH} levels")
    return value


def _depth_over(value: Any, limit: int) -> bool:
    """Whether `value` nests containers more than `limit` deep (walked without recursion)."""
    stack = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, (dict, list)):
            if depth >= limit:
                return True
            children = node.values() if isinstance(node, dict) else node
            stack.extend((child, depth + 1) for child in children)
    return False
