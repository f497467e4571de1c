"""A study as one table: one row per trial, ready for a notebook (CSV or Parquet via pandas).

The columns of Optuna's `Study.trials_dataframe()` (number, state, value, timings, `params_*`,
`user_attrs_*`), with the columns a sweep needs beside them: the step each trial reached, its number
of evaluations, its wall time and the trial it retries. Built from the read model's trial records
(`tuner.analysis.reads`), so the API makes it from the snapshot it already holds and the CLI with
one set-wise read, never by loading every trial through Optuna. Intermediate values stay out of the
table (one column per step would make it ragged); `GET /studies/{name}/trials/{number}` has each
curve.
"""

from __future__ import annotations

import io
from collections.abc import Iterator, Sequence
from typing import Any, Literal

import optuna
import pandas as pd

from tuner.analysis.front import front, has_front, study_goals
from tuner.analysis.reads import TrialDB, TrialRecord
from tuner.errors import StudyNotFoundError
from tuner.objectives.goals import Goals
from tuner.storage import trial_attrs

Format = Literal["csv", "parquet"]
FORMATS: tuple[Format, ...] = ("csv", "parquet")
MEDIA_TYPES = {"csv": "text/csv", "parquet": "application/vnd.apache.parquet"}
CHUNK_BYTES = 1 << 20  # a download is sent in pieces of this size
FRONT = ["number", "state", "value", "step_reached", "n_evaluations", "wall_time_s", "retry_of"]
_OWN = (trial_attrs.RETRY_OF, trial_attrs.WALL_TIME_S)  # trial attrs given their own columns


def trials_frame(trials: Sequence[TrialRecord], goals: Goals | None = None) -> pd.DataFrame:
    """One row per trial, by number: `FRONT`, then Optuna's datetime columns, `duration_s`, the
    params (a population member's in force at its end, its first sampled ones as
    `initial_params_*`) and the other user attrs (sorted by name, as `trials_dataframe` flattens them; the
    measures among them, `user_attrs_num_params` ...). A study with several objectives or a bound
    (`goals`) gets `feasible` and `on_front` last (empty for trials not COMPLETE)."""
    ordered = sorted(trials, key=lambda t: t.number)
    params = sorted({k for t in ordered for k in t.params_in_force})
    # a population member's Optuna params, as first sampled (its `params_*` are those in force)
    initial = sorted({k for t in ordered for k in t.initial_params or {}})
    attrs = sorted({k for t in ordered for k in t.user_attrs if k not in _OWN})
    columns: dict[str, list[Any]] = {
        "number": [t.number for t in ordered],
        "state": [t.state for t in ordered],
        "value": [t.value for t in ordered],
        "step_reached": [max((step for step, _ in t.curve), default=None) for t in ordered],
        "n_evaluations": [len(t.curve) for t in ordered],
        "wall_time_s": [_number(trial_attrs.WALL_TIME_S.of(t.user_attrs), float) for t in ordered],
        "retry_of": [_number(trial_attrs.RETRY_OF.of(t.user_attrs), int) for t in ordered],
        "datetime_start": pd.to_datetime([t.datetime_start for t in ordered]),
        "datetime_complete": pd.to_datetime([t.datetime_complete for t in ordered]),
    }
    columns |= {f"params_{k}": [t.params_in_force.get(k) for t in ordered] for k in params}
    columns |= {f"initial_params_{k}": [(t.initial_params or {}).get(k) for t in ordered] for k in initial}
    columns |= {f"user_attrs_{k}": [t.user_attrs.get(k) for t in ordered] for k in attrs}
    frame = pd.DataFrame(columns)
    frame.insert(9, "duration_s", (frame["datetime_complete"] - frame["datetime_start"]).dt.total_seconds())
    for column in ("step_reached", "retry_of"):
        frame[column] = frame[column].astype("Int64")
    for column in ("value", "wall_time_s"):
        frame[column] = frame[column].astype("float64")
    if goals is not None and has_front(goals):
        points = {p.number: p for p in front(ordered, goals)}
        for column in ("feasible", "on_front"):
            frame[column] = pd.array(
                [getattr(points[n], column) if n in points else None for n in frame["number"]],
                dtype="boolean",
            )
    return frame


def _number(value: Any, kind: type) -> Any:
    """A stored value for a typed column: the number, or None where what is stored is not one
    (written by another tool or by hand; its `user_attrs_*` column would show it as stored)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return kind(value) if kind is float or float(value).is_integer() else None


def study_frame(storage: optuna.storages.RDBStorage, name: str) -> pd.DataFrame:
    """The table of study `name` (`trials_frame` with its goals), in one set-wise read;
    StudyNotFoundError naming it."""
    attrs, trials = _read(storage, name)
    return trials_frame(trials, study_goals(attrs))


def study_trials(storage: optuna.storages.RDBStorage, name: str) -> list[TrialRecord]:
    """Every trial record of study `name`, in one set-wise read; StudyNotFoundError naming it."""
    return _read(storage, name)[1]


def _read(storage: optuna.storages.RDBStorage, name: str) -> tuple[dict[str, Any], list[TrialRecord]]:
    db = TrialDB(storage)
    row = db.study_row(name)
    if row is None:
        raise StudyNotFoundError(f"no study named {name!r}")
    return row.user_attrs, db.trials(row.study_id)


def encode(frame: pd.DataFrame, fmt: Format) -> bytes:
    """The table as CSV (UTF-8, no index) or Parquet (pyarrow) bytes."""
    if fmt == "csv":
        return frame.to_csv(index=False).encode("utf-8")
    if fmt == "parquet":
        buffer = io.BytesIO()
        frame.to_parquet(buffer, index=False, engine="pyarrow")
        return buffer.getvalue()
    raise ValueError(f"format must be one of {', '.join(FORMATS)}, not {fmt!r}")


def chunks(data: bytes) -> Iterator[bytes]:
    """`data` in pieces of `CHUNK_BYTES`, for a streamed download."""
    view = memoryview(data)
    for offset in range(0, len(data), CHUNK_BYTES):
        yield bytes(view[offset : offset + CHUNK_BYTES])
