"""rnntune from Python (a notebook or a script): create and run sweeps, read their trials, the best
trial and its checkpoint, the sensitivity around it and the importances.

Every function is the one the CLI and the REST API use, called with a database URL (default as
for every `rnntune` command: `$RNNTUNE_DB_URL`, else ./studies/rnntune.db); nothing here keeps
state between calls. docs/python.md walks through it.

    from tuner import python_api as rt

    rt.create("ptb-1", {"space": "tiny", "n_trials": 4, "parallel": 2})
    outcome = rt.run("ptb-1")            # blocks until the sweep ends; rt.start() runs it in the background
    frame = rt.trials("ptb-1")           # a pandas.DataFrame, one row per trial
    rt.best("ptb-1")["checkpoint"]       # the best trial's best.pt
    rt.sensitivity("ptb-1")["summary"]   # thesis App. 2.B around the best trial
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO

import pandas as pd
import yaml

from tuner.analysis import importances as importance_estimates
from tuner.analysis import lineage
from tuner.analysis import sensitivity as neighbourhood
from tuner.analysis.export import study_frame
from tuner.analysis.front import best_record, choose, front, study_goals
from tuner.analysis.reads import StudySnapshot, StudyStore, TrialRecord
from tuner.errors import StudyNotFoundError
from tuner.objectives.goals import Goals
from tuner.spec import SweepSpec
from tuner.storage import trial_attrs
from tuner.storage.lease import begin, lease_engine, request_stop
from tuner.storage.object_store import ObjectStore, is_uri, parse
from tuner.storage.study import (
    load_study,
    open_storage,
    redact_url,
    resolve_db_url,
    storage_root,
)
from tuner.sweeps.drive.run import SweepOutcome, run_sweep
from tuner.sweeps.launch.launcher import STOP_TIMEOUT_S, Handle, Launcher, log_path, terminate_after
from tuner.sweeps.study.create import create_study

__all__ = ["Background", "best", "create", "importances", "run", "sensitivity", "start", "trials"]


def create(
    name: str | None,
    spec: SweepSpec | Mapping[str, Any] | None = None,
    *,
    db: str | None = None,
    storage: str | os.PathLike | None = None,
    **fields: Any,
) -> str:
    """Create a study (status `created`, no trials) from a spec or its fields (`space`, `n_trials`,
    `parallel`, `sampler`, ...; as `rnntune sweep`'s options); returns its name (generated when
    `name` is None). Errors name the bad field, as the CLI's do."""
    study = create_study(name, spec, storage_url=resolve_db_url(db), storage_path=storage, **fields)
    return study.study_name


def run(
    name: str,
    *,
    db: str | None = None,
    ray_address: str | None = None,
    num_cpus: int | None = None,
    out: TextIO | None = None,
    verbose: bool = False,
) -> SweepOutcome:
    """Run (or resume) the study's sweep in this process until it has its trials or is stopped;
    progress goes to `out` (default stdout). Ray starts in-process unless `ray_address` (or
    $RAY_ADDRESS) names a cluster."""
    return run_sweep(
        name,
        resolve_db_url(db),
        ray_address=ray_address,
        num_cpus=num_cpus or os.cpu_count(),
        verbose=verbose,
        out=out or sys.stdout,
    )


class Background:
    """A sweep running in a child process (`rnntune sweep --resume NAME`, as the REST API starts
    one): wait for it, or stop it cleanly (a stored stop request, escalated if it is not obeyed)."""

    def __init__(self, name: str, db_url: str, log: Path) -> None:
        self.name = name
        self.log = log
        self._leases = lease_engine(db_url)
        self._ended = threading.Event()
        launcher = Launcher(db_url, on_exit=lambda handle, code: self._ended.set())
        log.parent.mkdir(parents=True, exist_ok=True)
        self._handle: Handle = launcher.start(
            name, ["sweep", "--resume", name], log, begin(self._leases, name)
        )

    @property
    def running(self) -> bool:
        return self._handle.running

    @property
    def pid(self) -> int:
        return self._handle.process.pid

    def wait(self, timeout: float | None = None) -> int | None:
        """The sweep's exit code once it ends (None if `timeout` seconds pass first)."""
        if not self._ended.wait(timeout):
            return None
        return self._handle.process.wait()

    def stop(self, reason: str = "stopped from Python", timeout_s: float = STOP_TIMEOUT_S) -> int:
        """Ask the sweep to stop (trials in flight end, completed trials are kept) and wait for it;
        SIGTERM, then SIGKILL, if it is still running `timeout_s` later. Returns its exit code."""
        request_stop(self._leases, self.name, reason)
        self._handle.stop_requested = True
        terminate_after(self._handle, timeout_s)
        return self._handle.process.wait()


def start(name: str, *, db: str | None = None, log: str | os.PathLike | None = None) -> Background:
    """Run the study's sweep in the background (a child process); its output goes to `log`
    (default: `sweep-logs/<name>-<hash>.log` under this process's storage root, $RNNTUNE_STORAGE or
    ./studies, as the API keeps its logs: never a folder a path stored in the database names)."""
    url = resolve_db_url(db)
    load_study(name, url)  # a study that does not exist is an error here, before a child starts
    return Background(name, url, Path(log) if log is not None else log_path(storage_root(), name))


def trials(name: str, *, db: str | None = None) -> pd.DataFrame:
    """Every trial of the study, one row each: what `rnntune export` and `GET .../trials.csv` give."""
    url = resolve_db_url(db)
    storage = open_storage(url)
    try:
        return study_frame(storage, name)
    except StudyNotFoundError:
        raise StudyNotFoundError(f"no study named {name!r} in {redact_url(url)}") from None
    finally:
        storage.engine.dispose()


def _exists(checkpoint: str) -> bool:
    """Whether the checkpoint file, or object (`s3://...`, a study kept in an object store), is there."""
    if is_uri(checkpoint):
        key = parse(checkpoint, "checkpoint")
        return ObjectStore(key).size(key) is not None
    return Path(checkpoint).is_file()


def best(
    name: str, *, db: str | None = None, trial: int | None = None, rule: str | None = None
) -> dict[str, Any] | None:
    """The best COMPLETE trial (feasible, in a study with constraints), or the COMPLETE trial
    `trial`, or the Pareto front's member `rule` picks (`lowest:val_loss@num_params<=24e6`, as
    `GET /studies/{name}/best?rule=`): `number`, `value`, `params` (a population member's in force
    at its end, the shape it copied included), `config` (its run's config.yaml, the trainer
    settings that reproduce it; None if the file is gone) and `checkpoint` (its best.pt's path, or
    its `s3://` key in a study kept in an object store; None when retention removed it); in a population study (scheduler pbt/pb2) also
    `initial_params` (Optuna's, as first sampled for it), `schedule` (the settings its weights
    were trained with, by step) and `replay_config` (`config` replaying that schedule; None
    without `config`). None when no trial qualifies; ValueError for a trial that is not COMPLETE,
    a rule it cannot read or a population history it cannot follow."""
    store = StudyStore(resolve_db_url(db))
    try:
        row = store.row(name)
        snapshot = store.snapshot(row)
        chosen = _chosen(snapshot, study_goals(row.user_attrs), name, trial, rule)
    finally:
        store.close()
    if chosen is None:
        return None
    run_dir = trial_attrs.RUN_DIR.of(chosen.user_attrs)
    config_file = Path(run_dir) / "config.yaml" if run_dir else None
    checkpoint = trial_attrs.CHECKPOINT.of(chosen.user_attrs)
    config = yaml.safe_load(config_file.read_text()) if config_file and config_file.is_file() else None
    found = {
        "number": chosen.number,
        "value": chosen.value,
        "params": dict(chosen.params_in_force),
        "config": config,
        "checkpoint": checkpoint if checkpoint and _exists(checkpoint) else None,
    }
    if lineage.population_spec(row.user_attrs) is None:
        return found
    schedule = lineage.lineage(lineage.histories(snapshot.trials), chosen.number)
    replay = lineage.replay_config(config, schedule) if config else None
    initial = chosen.initial_params
    return {**found, "initial_params": initial, "schedule": schedule, "replay_config": replay}


def _chosen(
    snapshot: StudySnapshot, goals: Goals, name: str, trial: int | None, rule: str | None
) -> TrialRecord | None:
    """The trial `best` returns (its docstring), from the study's read model as the API picks it."""
    if trial is not None:
        found = snapshot.by_number.get(trial)
        if found is None or not found.completed:
            raise ValueError(f"trial {trial} of study {name!r} is not a COMPLETE trial")
        return found
    if rule is None:
        return best_record(snapshot.trials, goals, snapshot.best)
    picked = choose(front(snapshot.trials, goals), rule, goals)
    return None if picked is None else snapshot.by_number[picked.number]


def _analysed(name: str, db: str | None, include: neighbourhood.Include) -> tuple[Any, list, list]:
    store = StudyStore(resolve_db_url(db))
    try:
        snapshot = store.snapshot(store.row(name))
    finally:
        store.close()
    completed, pruned = snapshot.analysed(include)
    return snapshot, completed, pruned


def sensitivity(
    name: str,
    *,
    db: str | None = None,
    fraction: float = neighbourhood.DEFAULT_FRACTION,
    include: neighbourhood.Include = "all",
) -> dict[str, Any] | None:
    """The neighbourhood of the best trial (thesis App. 2.B: within `fraction` of each range either
    side, 0.075 by default) with each neighbour's distance from the best, as `GET .../sensitivity`
    answers it; None before any trial completed."""
    snapshot, completed, pruned = _analysed(name, db, include)
    return neighbourhood.analyse(completed, pruned, snapshot.direction, fraction, include)


def importances(
    name: str, *, db: str | None = None, include: neighbourhood.Include = "all"
) -> dict[str, Any]:
    """PED-ANOVA importances with bootstrap intervals at the fidelity the most trials reached, as
    `GET .../importances` answers them."""
    snapshot, completed, pruned = _analysed(name, db, include)
    return importance_estimates.with_intervals(
        importance_estimates.choose_fidelity(completed, pruned), snapshot.direction
    )
