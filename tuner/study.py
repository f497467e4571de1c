"""SQL studies: one Optuna study per sweep in RDB storage (SQLite by default, any SQLAlchemy URL).

The study is the sweep's source of truth: its user attrs hold the resolved search space, the task and
the sweep settings (docs/contracts.md), its trials hold params, curves, states, errors and checkpoint
paths. A resumed sweep, the REST API and `rnntune` commands all read it from here alone.

Bookkeeping conventions (trial user attrs beyond the contract's):
* `needs_retry`: the trial FAILed through no fault of its own (its worker or the sweep process died,
  or the sweep was stopped while it ran); it does not count towards `n_trials`, and a retry — a new
  trial with `retry_of` set to its number — runs in its place.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import optuna
from optuna.trial import FrozenTrial, TrialState
from pydantic import ValidationError
from sqlalchemy import event
from sqlalchemy.engine import make_url

from tuner.database_url import DB_ENV as DB_ENV  # re-exported: the sweep command and launcher use it
from tuner.database_url import DatabaseUrlError, from_environment
from tuner.early_stopping import ATTR as EARLY_STOPPING_ATTR
from tuner.early_stopping import EarlyStopping, EarlyStoppingError
from tuner.space import NAME_PATTERN, SearchSpace, resolve_space
from tuner.study_stop import StudyStop

# Set by the API for the sweeps it launches: which start of the study (tuner.lease) the driver serves.
GENERATION_ENV = "RNNTUNE_SWEEP_GENERATION"
# Secrets in the environment: the API never passes the tokens to a sweep, and the driver removes
# all of them from its own environment before Ray starts (Ray's processes inherit it).
SECRET_ENV = (DB_ENV, "RNNTUNE_API_TOKEN", "RNNTUNE_API_READ_TOKEN")
DEFAULT_DB_PATH = Path("studies") / "rnntune.db"
DEFAULT_STORAGE_ROOT = Path("studies")
STATUSES = ("created", "running", "stopping", "stopped", "finished", "failed")
SCHEDULERS = ("asha", "median", "none")


class StudyError(ValueError):
    """A study operation that cannot proceed; the message says which study and why."""


class StudyExistsError(StudyError):
    """A study of that name is already in the storage."""


class StudyNotFoundError(StudyError):
    """No study of that name in the storage."""


def resolve_db_url(url: str | None = None) -> str:
    """The study database URL: the given one, else $RNNTUNE_DB_URL or POSTGRES_* (see
    `tuner.database_url`), else ./studies/rnntune.db (SQLite)."""
    try:
        url = url or from_environment(os.environ)
    except DatabaseUrlError as err:
        raise StudyError(str(err)) from None
    if not url:
        DEFAULT_DB_PATH.parent.mkdir(parents=True, exist_ok=True)
        return f"sqlite:///{DEFAULT_DB_PATH.resolve()}"
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
        Path(parsed.database).expanduser().resolve().parent.mkdir(parents=True, exist_ok=True)
    return url


def redact_url(url: str) -> str:
    """The URL with its password masked, fit to print or log."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # an unparsable URL is reported as such, never echoed
        return "<unparsable database URL>"


def open_storage(url: str) -> optuna.storages.RDBStorage:
    """Optuna RDB storage on `url`; SQLite waits for locks instead of failing under concurrent writers."""
    backend = make_url(url).get_backend_name()
    if backend == "sqlite":
        engine_kwargs: dict[str, Any] = {"connect_args": {"timeout": 60}}
    else:
        engine_kwargs = {"pool_pre_ping": True}
    try:
        storage = optuna.storages.RDBStorage(url, engine_kwargs=engine_kwargs)
    except Exception as err:
        raise StudyError(f"cannot open study database {redact_url(url)}: {err}") from None
    if backend == "sqlite":
        event.listen(storage.engine, "connect", _sqlite_wal)
        storage.engine.dispose()  # reconnect through the listener
    return storage


def _sqlite_wal(dbapi_connection: Any, _record: Any) -> None:
    """WAL journal: readers (the web view) never block the sweep's writes, and commits cost less."""
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def generate_study_name(space: str) -> str:
    """A fresh name such as `tiny-20261122-0312-ab12` (space, UTC time, random suffix)."""
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M")
    return f"{space}-{stamp}-{secrets.token_hex(2)}"


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def create_study(
    name: str | None,
    *,
    storage_url: str,
    space: SearchSpace | str | Mapping[str, Any],
    sampler: str | None = None,
    n_trials: int,
    parallel: int = 2,
    scheduler: str = "asha",
    storage_path: str | os.PathLike | None = None,
    overrides: Mapping[str, Any] | None = None,
    seed: int | None = None,
    early_stopping: Mapping[str, Any] | None = None,
    study_stop: Mapping[str, Any] | None = None,
    keep_top: int | None = None,
    warm_start: str | None = None,
) -> optuna.Study:
    """Create a new sweep's study (status `created`, no trials yet); `rnntune sweep --resume NAME` runs it.

    `space` is a SearchSpace, a space name/path or an inline space mapping; `overrides` may hold
    `ranges` ({name: "low:high"}) and `set` ({setting: value}), applied on top of it by
    `tuner.space.resolve_space`, which validates the whole once. `name` None generates one. Raises
    StudyExistsError if the name is taken, SpaceError for a bad space, StudyError for bad settings.
    `early_stopping` ({grace_steps, reduction_factor, brackets}) is stored resolved on the task's eval
    grid, its default brackets from `n_trials` and `study_stop`'s budget;
    `study_stop` ({patience, min_improvement, max_hours}) ends the sweep early, and `keep_top` keeps
    only the N best trials' weights (tuner.orchestration.policies). `warm_start` names a study in
    the same storage whose trials the sampler takes as prior data (`tuner.warm_start`).
    """
    from tuner.samplers import DEFAULT_SAMPLER, SAMPLERS

    unknown = sorted(set(overrides or {}) - {"ranges", "set"})
    if unknown:
        raise StudyError(f"overrides: unknown key(s) {', '.join(unknown)}; allowed: ranges, set")
    space = resolve_space(space, overrides)
    sampler = sampler or DEFAULT_SAMPLER
    if sampler not in SAMPLERS:
        raise StudyError(f"sampler must be one of {', '.join(SAMPLERS)}, not {sampler!r}")
    if scheduler not in SCHEDULERS:
        raise StudyError(f"scheduler must be one of {', '.join(SCHEDULERS)}, not {scheduler!r}")
    if not isinstance(n_trials, int) or n_trials < 1:
        raise StudyError(f"n_trials must be a positive integer, not {n_trials!r}")
    if not isinstance(parallel, int) or parallel < 1:
        raise StudyError(f"parallel must be a positive integer, not {parallel!r}")
    stop = _study_stop(study_stop)
    policy = _early_stopping(early_stopping, space, n_trials, stop.get("budget"))
    if keep_top is not None and (not isinstance(keep_top, int) or not 1 <= keep_top <= 100_000):
        raise StudyError(
            f"keep_top must be an integer from 1 to 100000 (the best is always kept), not {keep_top!r}"
        )
    name = name or generate_study_name(space.name)
    if not re.fullmatch(NAME_PATTERN, name):
        raise StudyError(
            f"study name {name!r} must be 1-128 letters, digits, _ . - (not starting with . or -)"
        )
    root = Path(storage_path) if storage_path else DEFAULT_STORAGE_ROOT / name
    prior = None
    if warm_start is not None:
        from tuner import warm_start as warm

        prior = warm.check(storage_url, warm_start, space, sampler)
    storage = open_storage(storage_url)
    try:
        study = optuna.create_study(study_name=name, storage=storage, direction="minimize")
    except optuna.exceptions.DuplicatedStudyError:
        raise StudyExistsError(
            f"study {name!r} already exists in {redact_url(storage_url)}; "
            f"resume it with `rnntune sweep --resume {name}` or choose another name"
        ) from None
    attrs = {
        "space": space.name,
        "space_def": space.to_dict(),
        "task": dict(space.fixed),
        "sampler": sampler,
        "seed": seed,
        "n_trials": n_trials,
        "parallel": parallel,
        "scheduler": scheduler,
        EARLY_STOPPING_ATTR: policy,
        "study_stop": stop,
        "keep_top": keep_top,
        "warm_start": prior,
        "status": "created",
        "created_at": _now(),
        "storage_path": str(root.expanduser().resolve()),
        "overrides": dict(overrides or {}),
    }
    for key, value in attrs.items():
        study.set_user_attr(key, value)
    return study


def _study_stop(raw: Mapping[str, Any] | None) -> dict[str, Any]:
    """The study-level stop rule, validated; StudyError names a bad field and its range."""
    try:
        return StudyStop.model_validate(dict(raw or {})).model_dump()
    except ValidationError as err:
        first = err.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "study_stop"
        raise StudyError(f"{field}: {first['msg']}") from None


def _early_stopping(
    raw: Mapping[str, Any] | None, space: SearchSpace, n_trials: int, budget: float | None
) -> dict[str, Any]:
    """The early-stopping policy resolved on the space's eval grid and for a sweep of `n_trials`
    within `budget` full trials' worth of steps; StudyError names a bad field."""
    from trainer import TrainConfig

    steps = {
        k: int(space.fixed.get(k, TrainConfig.model_fields[k].default)) for k in ("max_steps", "eval_every")
    }
    try:
        policy = EarlyStopping.parse(raw)
        return policy.resolved(steps["max_steps"], steps["eval_every"], n_trials, budget).model_dump()
    except EarlyStoppingError as err:
        raise StudyError(f"early stopping: {err}") from None


def load_study(
    name: str, storage_url: str, sampler: optuna.samplers.BaseSampler | None = None
) -> optuna.Study:
    """Load an existing study by name; raises StudyNotFoundError naming the storage."""
    storage = open_storage(storage_url)
    try:
        return optuna.load_study(study_name=name, storage=storage, sampler=sampler)
    except KeyError:
        raise StudyNotFoundError(f"no study named {name!r} in {redact_url(storage_url)}") from None


def set_status(study: optuna.Study, status: str) -> None:
    if status not in STATUSES:
        raise StudyError(f"status must be one of {', '.join(STATUSES)}, not {status!r}")
    study.set_user_attr("status", status)
    study.set_user_attr("status_at", _now())


def counts_towards_total(trial: FrozenTrial) -> bool:
    """Whether a trial uses up one of the study's `n_trials` (retried attempts do not)."""
    if trial.state in (TrialState.COMPLETE, TrialState.PRUNED):
        return True
    return trial.state == TrialState.FAIL and not trial.user_attrs.get("needs_retry")


def finished_count(study: optuna.Study) -> int:
    return sum(counts_towards_total(t) for t in study.get_trials(deepcopy=False))


def pending_retries(study: optuna.Study) -> list[FrozenTrial]:
    """FAILed attempts awaiting a retry: `needs_retry` set and no trial yet has `retry_of` = their number."""
    trials = study.get_trials(deepcopy=False)
    retried = {t.user_attrs.get("retry_of") for t in trials}
    return [
        t
        for t in trials
        if t.state == TrialState.FAIL and t.user_attrs.get("needs_retry") and t.number not in retried
    ]


def fail_trial(study: optuna.Study, number: int, reason: str, *, needs_retry: bool) -> None:
    """Mark a RUNNING trial FAIL with its reason (user attr `error`).

    For trials left RUNNING by a dead driver, known only by number: Optuna has no public way to set
    an attr on such a trial, so this goes through the study's storage (the RDBStorage we opened).
    """
    trial_id = study._storage.get_trial_id_from_study_id_trial_number(study._study_id, number)
    study._storage.set_trial_user_attr(trial_id, "error", reason)
    if needs_retry:
        study._storage.set_trial_user_attr(trial_id, "needs_retry", True)
    study.tell(number, state=TrialState.FAIL)


def fail_zombies(study: optuna.Study, reason: str) -> list[int]:
    """Mark every RUNNING trial FAIL (to be retried): call only when no live process drives the study."""
    zombies = study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))
    for t in zombies:
        fail_trial(study, t.number, reason, needs_retry=True)
    return [t.number for t in zombies]


def best_trial(study: optuna.Study) -> FrozenTrial | None:
    """The best COMPLETE trial (PRUNED and FAIL trials never are), or None if there is none yet."""
    complete = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    complete = [t for t in complete if t.value is not None]
    return min(complete, key=lambda t: float(t.value or 0.0)) if complete else None
