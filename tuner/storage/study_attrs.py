"""The study's user attributes: each key named once here, with who writes it, what it holds and the
type of its value (`KEY: Key[T] = _attr(key, T, ...)`; tuner.storage.attr_registry).

Every module reads a study attribute through its key (`KEY.of(study.user_attrs)`, typed as T) and
writes it through the same key (`KEY.write(study, value)`, checked against T first: a wrong value is
a TypeError naming the key, before anything is stored). The attribute table of docs/contracts.md
is generated from this list (`python -m tuner.storage.study_attrs`; a test checks the page is current).
The keys are plain strings and the values JSON, as Optuna stores them.
"""

from __future__ import annotations

from typing import Any, Literal

from tuner.storage.attr_registry import Key, Registry

_attr = Registry()
ALL = _attr.all
checked = _attr.checked  # for keys chosen at run time
write = _attr.write
Status = Literal["created", "running", "stopping", "stopped", "finished", "failed"]


Json = dict[str, Any]

SPEC: Key[Json] = _attr(
    "spec", Json, "creation, every `--resume`", "the sweep spec above, with its `version`"
)
SPACE: Key[str] = _attr("space", str, "creation", "the search space's name")
SPACE_DEF: Key[Json] = _attr(
    "space_def", Json, "creation, widening", "the resolved space as a dict (`widened` ranges included)"
)
TASK: Key[Json] = _attr("task", Json, "creation", "the fixed trainer settings as a dict")
STATUS: Key[Status] = _attr("status", Status, "the driver, the API", "the study's state (docs/api.md)")
STATUS_AT: Key[str] = _attr("status_at", str, "with `status`", "when `status` was set (ISO 8601)")
CREATED_AT: Key[str] = _attr("created_at", str, "creation", "ISO 8601")
STORAGE_PATH: Key[str] = _attr(
    "storage_path",
    str,
    "creation, `--storage` on resume",
    "the study's checkpoint root: an absolute folder, or an object store's `s3://BUCKET/PREFIX`",
)
WARM_START: Key[Json | None] = _attr(
    "warm_start",
    Json | None,
    "creation",
    '`{"studies": [NAME], "trials": N}` or null: the sampler\'s prior studies',
)
WIDENED: Key[list[Json]] = _attr(
    "widened", list[Json], "widening", "each widening: `{param, edge, old, new, at, trials_before}`"
)
ENDED_EARLY: Key[str] = _attr(
    "ended_early", str, "the study-level stop", "why the sweep ended before its trial count"
)
CHECKPOINT_BYTES: Key[int] = _attr(
    "checkpoint_bytes", int, "retention (`keep_top`)", "disk the kept weights use"
)
CHECKPOINTS_REMOVED: Key[int] = _attr(
    "checkpoints_removed", int, "retention (`keep_top`)", "how many weights were removed"
)
FINALIZE: Key[dict[str, Json]] = _attr(
    "finalize",
    dict[str, Json],
    "`rnntune finalize`",
    "reruns per configuration: `{trial number: {value, params, reruns}}`",
)
FINALIZE_STATUS: Key[Json] = _attr(
    "finalize_status", Json, "`rnntune finalize`, the API", "the finalize run's state: `{state, ...}`"
)
BEST_BY: Key[Literal["tuning", "rerun_mean"]] = _attr(
    "best_by",
    Literal["tuning", "rerun_mean"],
    "`rnntune finalize --best-by`",
    "how the best is chosen",
)
SAMPLER_NOTE: Key[str] = _attr(
    "sampler_note", str, "resuming a study that names a retired sampler", "which sampler it now runs with"
)
EARLY_STOPPING: Key[Json] = _attr(
    "early_stopping",
    Json,
    "studies written before the spec",
    "the resolved early-stopping policy (read by `SweepSpec.of`)",
)
DYNEVAL_BEST: Key[Json] = _attr(
    "dyneval_best",
    Json,
    "the driver, as trials finish (studies with a `checkpoint`)",
    "`{params, value, trial, checkpoint}`: the best COMPLETE trial's dynamic-evaluation settings (its "
    "params and the space's fixed ones), its validation loss after dynamic evaluation, its number and "
    "the evaluated checkpoint (docs/sweeps.md)",
)
TRACKER_FAILURES: Key[dict[str, int]] = _attr(
    "tracker_failures",
    dict[str, int],
    "the driver, at the end of a sweep whose trackers failed",
    "`{tracker: N}` (`tensorboard`, `mlflow`, `wandb`): records a tracker could not write, over all the "
    "study's sweeps; a tracker's failure never fails a trial (docs/trackers.md)",
)


def table() -> str:
    """The markdown table of docs/contracts.md's "Study user attributes"."""
    return _attr.table()


if __name__ == "__main__":
    print(table())
