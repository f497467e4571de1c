"""The study's user attributes: each key named once here, with who writes it and what it holds.

Every module reads and writes a study attribute through these names, never a string of its own, and
the attribute table of docs/contracts.md is generated from this list (`python -m tuner.study_attrs`;
a test checks the page is current). The keys are plain strings, as Optuna stores them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Attr:
    """One user attribute (of a study here, of a trial in tuner.trial_attrs): its key, who writes
    it, and what it holds."""

    key: str
    written_by: str
    holds: str


class Registry:
    """A list of attributes declared one call each (`KEY = registry(key, written_by, holds)`)."""

    def __init__(self) -> None:
        self.all: list[Attr] = []

    def __call__(self, key: str, written_by: str, holds: str) -> str:
        self.all.append(Attr(key, written_by, holds))
        return key

    def table(self) -> str:
        """The attributes as a markdown table (docs/contracts.md)."""
        rows = [f"| `{a.key}` | {a.written_by} | {a.holds} |" for a in self.all]
        return "\n".join(["| attribute | written by | what it holds |", "|---|---|---|", *rows])


_attr = Registry()
ALL = _attr.all


SPEC = _attr("spec", "creation, every `--resume`", "the sweep spec above, with its `version`")
SPACE = _attr("space", "creation", "the search space's name")
SPACE_DEF = _attr(
    "space_def", "creation, widening", "the resolved space as a dict (`widened` ranges included)"
)
TASK = _attr("task", "creation", "the fixed trainer settings as a dict")
STATUS = _attr(
    "status",
    "the driver, the API",
    "`created`, `running`, `stopping`, `stopped`, `finished`, `failed`",
)
STATUS_AT = _attr("status_at", "with `status`", "when `status` was set (ISO 8601)")
CREATED_AT = _attr("created_at", "creation", "ISO 8601")
STORAGE_PATH = _attr("storage_path", "creation, `--storage` on resume", "the study's checkpoint root")
WARM_START = _attr(
    "warm_start", "creation", '`{"studies": [NAME], "trials": N}` or null: the sampler\'s prior studies'
)
WIDENED = _attr("widened", "widening", "list of `{param, edge, old, new, at, trials_before}`")
ENDED_EARLY = _attr("ended_early", "the study-level stop", "why the sweep ended before its trial count")
CHECKPOINT_BYTES = _attr("checkpoint_bytes", "retention (`keep_top`)", "disk the kept weights use")
CHECKPOINTS_REMOVED = _attr("checkpoints_removed", "retention (`keep_top`)", "how many weights were removed")
FINALIZE = _attr("finalize", "`rnntune finalize`", "reruns per configuration")
FINALIZE_STATUS = _attr("finalize_status", "`rnntune finalize`, the API", "the finalize run's state")
BEST_BY = _attr("best_by", "`rnntune finalize --best-by`", "how the best is chosen: `tuning` or `rerun_mean`")
SAMPLER_NOTE = _attr(
    "sampler_note", "resuming a study that names a retired sampler", "which sampler it now runs with"
)
EARLY_STOPPING = _attr(
    "early_stopping",
    "studies written before the spec",
    "the resolved early-stopping policy (read by `SweepSpec.of`)",
)
DYNEVAL_BEST = _attr(
    "dyneval_best",
    "the driver, as trials finish (studies with a `checkpoint`)",
    "`{params, value, trial, checkpoint}`: the best COMPLETE trial's dynamic-evaluation settings (its "
    "params and the space's fixed ones), its validation loss after dynamic evaluation, its number and "
    "the evaluated checkpoint (docs/sweeps.md)",
)
TRACKER_FAILURES = _attr(
    "tracker_failures",
    "the driver, at the end of a sweep whose trackers failed",
    "`{tracker: N}` (`tensorboard`, `mlflow`): records a tracker could not write, over all the "
    "study's sweeps; a tracker's failure never fails a trial (docs/trackers.md)",
)


def table() -> str:
    """The markdown table of docs/contracts.md's "Study user attributes"."""
    return _attr.table()


if __name__ == "__main__":
    print(table())
