"""The study's user attributes: each key named once here, with who writes it, what it holds and the
type of its value.

Every module reads and writes a study attribute through these names, never a string of its own, and
every write is checked against the declared type first (`write`, `checked`; a wrong value is a
TypeError naming the key, before anything is stored). The attribute table of docs/contracts.md is
generated from this list (`python -m tuner.study_attrs`; a test checks the page is current). The
keys are plain strings and the values JSON, as Optuna stores them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from pydantic import TypeAdapter, ValidationError


@dataclass(frozen=True)
class Attr:
    """One user attribute (of a study here, of a trial in tuner.trial_attrs): its key, who writes
    it, what it holds, and the type of its value (a type pydantic validates)."""

    key: str
    written_by: str
    holds: str
    kind: Any = Any

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


class _Settable(Protocol):
    def set_user_attr(self, key: str, value: Any) -> None: ...


class Registry:
    """A list of attributes declared one call each (`KEY = registry(key, written_by, holds, kind)`),
    and the check of a value against its key's declared type."""

    def __init__(self) -> None:
        self.all: list[Attr] = []
        self._adapters: dict[str, TypeAdapter[Any]] = {}

    def __call__(self, key: str, written_by: str, holds: str, kind: Any = Any) -> str:
        self.all.append(Attr(key, written_by, holds, kind))
        self._adapters[key] = TypeAdapter(kind)
        return key

    def checked(self, key: str, value: Any) -> Any:
        """`value`, if its JSON form (what Optuna stores) has `key`'s declared type; TypeError naming
        the key otherwise, KeyError for a key not declared here."""
        if key not in self._adapters:
            raise KeyError(f"{key!r} is not a declared attribute")
        try:
            self._adapters[key].validate_python(json.loads(json.dumps(value)), strict=True)
        except (ValidationError, TypeError, ValueError) as err:
            detail = err.errors()[0]["msg"] if isinstance(err, ValidationError) else str(err)
            raise TypeError(f"attribute {key}: {value!r} is not {self._name(key)} ({detail})") from None
        return value

    def write(self, target: _Settable, key: str, value: Any) -> None:
        """Set `key` on a study or trial (anything with `set_user_attr`) after checking its value."""
        target.set_user_attr(key, self.checked(key, value))

    def _name(self, key: str) -> str:
        return next(a.type_name for a in self.all if a.key == key)

    def table(self) -> str:
        """The attributes as a markdown table (docs/contracts.md)."""
        rows = [f"| `{a.key}` | {a.type_name} | {a.written_by} | {a.holds} |" for a in self.all]
        return "\n".join(["| attribute | type | written by | what it holds |", "|---|---|---|---|", *rows])


_attr = Registry()
ALL = _attr.all
checked = _attr.checked
write = _attr.write
Status = Literal["created", "running", "stopping", "stopped", "finished", "failed"]


Json = dict[str, Any]

SPEC = _attr("spec", "creation, every `--resume`", "the sweep spec above, with its `version`", Json)
SPACE = _attr("space", "creation", "the search space's name", str)
SPACE_DEF = _attr(
    "space_def", "creation, widening", "the resolved space as a dict (`widened` ranges included)", Json
)
TASK = _attr("task", "creation", "the fixed trainer settings as a dict", Json)
STATUS = _attr("status", "the driver, the API", "the study's state (docs/api.md)", Status)
STATUS_AT = _attr("status_at", "with `status`", "when `status` was set (ISO 8601)", str)
CREATED_AT = _attr("created_at", "creation", "ISO 8601", str)
STORAGE_PATH = _attr("storage_path", "creation, `--storage` on resume", "the study's checkpoint root", str)
WARM_START = _attr(
    "warm_start",
    "creation",
    '`{"studies": [NAME], "trials": N}` or null: the sampler\'s prior studies',
    Json | None,
)
WIDENED = _attr(
    "widened", "widening", "each widening: `{param, edge, old, new, at, trials_before}`", list[Json]
)
ENDED_EARLY = _attr("ended_early", "the study-level stop", "why the sweep ended before its trial count", str)
CHECKPOINT_BYTES = _attr("checkpoint_bytes", "retention (`keep_top`)", "disk the kept weights use", int)
CHECKPOINTS_REMOVED = _attr(
    "checkpoints_removed", "retention (`keep_top`)", "how many weights were removed", int
)
FINALIZE = _attr(
    "finalize",
    "`rnntune finalize`",
    "reruns per configuration: `{trial number: {value, params, reruns}}`",
    dict[str, Json],
)
FINALIZE_STATUS = _attr(
    "finalize_status", "`rnntune finalize`, the API", "the finalize run's state: `{state, ...}`", Json
)
BEST_BY = _attr(
    "best_by",
    "`rnntune finalize --best-by`",
    "how the best is chosen",
    Literal["tuning", "rerun_mean"],
)
SAMPLER_NOTE = _attr(
    "sampler_note", "resuming a study that names a retired sampler", "which sampler it now runs with", str
)
EARLY_STOPPING = _attr(
    "early_stopping",
    "studies written before the spec",
    "the resolved early-stopping policy (read by `SweepSpec.of`)",
    Json,
)
DYNEVAL_BEST = _attr(
    "dyneval_best",
    "the driver, as trials finish (studies with a `checkpoint`)",
    "`{params, value, trial, checkpoint}`: the best COMPLETE trial's dynamic-evaluation settings (its "
    "params and the space's fixed ones), its validation loss after dynamic evaluation, its number and "
    "the evaluated checkpoint (docs/sweeps.md)",
    Json,
)
TRACKER_FAILURES = _attr(
    "tracker_failures",
    "the driver, at the end of a sweep whose trackers failed",
    "`{tracker: N}` (`tensorboard`, `mlflow`): records a tracker could not write, over all the "
    "study's sweeps; a tracker's failure never fails a trial (docs/trackers.md)",
    dict[str, int],
)


def table() -> str:
    """The markdown table of docs/contracts.md's "Study user attributes"."""
    return _attr.table()


if __name__ == "__main__":
    print(table())
