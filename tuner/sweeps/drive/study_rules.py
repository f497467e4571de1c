"""Study-wide rules the sweep driver applies between trials: the study-level stop
(`--patience`, `--min-improvement`, `--max-hours`, `--budget`, `--budget-hours`) and checkpoint retention (`--keep-top N`).

Both are fields of the study's sweep spec (`tuner.spec`), so a resumed sweep and the REST API see
the same settings; what they did is written back to the study
(`ended_early`, `checkpoint_bytes`, `checkpoints_removed`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Collection
from pathlib import Path

import optuna

from tuner.policies.kinds import kind_of
from tuner.policies.retention import keep_top, keep_top_objects
from tuner.policies.study_stop import compute_hours, steps_trained
from tuner.spec import SweepSpec
from tuner.storage import study_attrs
from tuner.storage.object_store import ObjectLocation, ObjectStore
from tuner.sweeps.dyneval.study import record_best


class StudyRules:
    """The stop rule and the retention of one study, as this run of its sweep applies them."""

    def __init__(
        self,
        study: optuna.Study,
        root: Path,
        spec: SweepSpec,
        max_steps: int,
        pins: Callable[[], Collection[Path | str]] = frozenset,
        objects: ObjectLocation | None = None,
    ) -> None:
        """`pins()`: the weight files and objects other studies use (read at each retention pass),
        never removed. `objects`: where a study kept in an object store has its weights (retention deletes there)."""
        self._store = ObjectStore(objects) if objects is not None and spec.keep_top else None
        self._study = study
        self._pins = pins
        self._root = root
        self.stop = spec.study_stop()
        self.keep: int | None = spec.keep_top
        self.started = dt.datetime.now(dt.UTC)  # --max-hours counts this run of the sweep
        # --budget and --budget-hours count this run's steps and hours, so a resumed or extended
        # study trains on: what the trials before it used is read once, here.
        before = study.get_trials(deepcopy=False)
        self._steps_before = steps_trained(before)
        self._max_steps = max_steps  # a full trial's length: --budget's unit
        self._gpus = spec.gpus_per_trial  # --budget-hours counts GPU-hours of GPU trials
        self._hours_before = compute_hours(before, self.started, self._gpus)
        self._sizes: dict[str, int] = {}  # finished trials' folder sizes, for keep_top
        self._dyneval = kind_of(spec).evaluates_only  # a study of a trained model: keep its best setting

    def describe(self) -> str:
        """The stop rules this run applies, for the sweep's header ("" when none)."""
        return self.stop.describe(self._max_steps)

    def stop_reason(self) -> str | None:
        """Why no further trial should start (the running ones finish), or None."""
        if not self.stop.active:
            return None
        trials = self._study.get_trials(deepcopy=False)
        steps = steps_trained(trials) - self._steps_before
        now = dt.datetime.now(dt.UTC)
        hours = compute_hours(trials, now, self._gpus) - self._hours_before
        reason = self.stop.reason(
            trials, self.started, now, steps=steps, max_steps=self._max_steps, hours=hours
        )
        if reason is not None:
            study_attrs.ENDED_EARLY.write(self._study, reason)
        return reason

    def after_trial(self) -> None:
        """Record a dynamic-evaluation study's best setting (`dyneval_best`); free the weights of
        finished trials outside the best `keep` and record the disk they use."""
        if self._dyneval:
            record_best(self._study)
        if not self.keep:
            return
        trials = self._study.get_trials(deepcopy=False)
        if self._store is not None:
            report, removed = keep_top_objects(trials, self.keep, self._store, self._root, self._pins())
        else:
            report, removed = keep_top(trials, self.keep, self._root, self._sizes, pinned=self._pins())
        study_attrs.CHECKPOINT_BYTES.write(self._study, report.used_bytes)
        if removed:
            before = int(study_attrs.CHECKPOINTS_REMOVED.of(self._study.user_attrs, 0))
            study_attrs.CHECKPOINTS_REMOVED.write(self._study, before + len(removed))
