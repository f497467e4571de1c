"""A study as one table: one row per trial, ready for a notebook (CSV or Parquet via pandas).

Built on Optuna's own `Study.trials_dataframe()` (params, state, value, timings, user attrs), with the
columns a sweep needs beside them: the step each trial reached, its number of evaluations, and the
trial it retries. Intermediate values stay out of the table (one column per step would make it
ragged); `GET /studies/{name}/trials/{number}` has each curve.
"""

from __future__ import annotations

import io
from typing import Literal

import optuna
import pandas as pd

Format = Literal["csv", "parquet"]
FORMATS: tuple[Format, ...] = ("csv", "parquet")
MEDIA_TYPES = {"csv": "text/csv", "parquet": "application/vnd.apache.parquet"}

# Optuna's columns, in order, before the params and user attrs (`intermediate_values` left out).
_ATTRS = (
    "number",
    "state",
    "value",
    "datetime_start",
    "datetime_complete",
    "duration",
    "params",
    "user_attrs",
)


def trials_frame(study: optuna.Study) -> pd.DataFrame:
    """One row per trial: Optuna's columns plus `step_reached`, `n_evaluations`, `retry_of`, `wall_time_s`."""
    trials = study.get_trials(deepcopy=False)
    frame = study.trials_dataframe(attrs=_ATTRS, multi_index=False)
    if frame.empty:
        frame = pd.DataFrame(columns=["number", "state", "value"])
    by_number = {t.number: t for t in trials}
    numbers = frame["number"].tolist()
    frame["step_reached"] = [max(by_number[n].intermediate_values, default=None) for n in numbers]
    frame["n_evaluations"] = [len(by_number[n].intermediate_values) for n in numbers]
    frame["retry_of"] = [by_number[n].user_attrs.get("retry_of") for n in numbers]
    frame["wall_time_s"] = [by_number[n].user_attrs.get("wall_time_s") for n in numbers]
    if "duration" in frame:
        frame["duration_s"] = frame.pop("duration").dt.total_seconds()
    for column in ("step_reached", "retry_of"):
        frame[column] = frame[column].astype("Int64")
    frame = frame.drop(columns=[c for c in ("user_attrs_retry_of", "user_attrs_wall_time_s") if c in frame])
    front = ["number", "state", "value", "step_reached", "n_evaluations", "wall_time_s", "retry_of"]
    return frame[front + [c for c in frame.columns if c not in front]]


def encode(frame: pd.DataFrame, fmt: Format) -> bytes:
    """The table as CSV (UTF-8, no index) or Parquet (pyarrow) bytes."""
    if fmt == "csv":
        return frame.to_csv(index=False).encode("utf-8")
    if fmt == "parquet":
        buffer = io.BytesIO()
        frame.to_parquet(buffer, index=False, engine="pyarrow")
        return buffer.getvalue()
    raise ValueError(f"format must be one of {', '.join(FORMATS)}, not {fmt!r}")
