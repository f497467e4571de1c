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
import secrets
from pathlib import Path
from typing import Any, get_args

import optuna
from optuna.trial import FrozenTrial, TrialState
from sqlalchemy import event
from sqlalchemy.engine import make_url

from tuner.errors import StudyError, StudyExistsError, StudyNotFoundError
from tuner.storage import study_attrs, trial_attrs
from tuner.storage.database_url import DB_ENV as DB_ENV  # re-exported: the sweep command and launcher use it
from tuner.storage.database_url import DatabaseUrlError, from_environment
from tuner.storage.object_backends import URI_FORMS
from tuner.storage.object_store import ObjectLocation, ObjectStore, is_uri, location, parse

# Set by the API for the sweeps it launches: which start of the study (tuner.storage.lease) the driver serves.
GENERATION_ENV = "RNNTUNE_SWEEP_GENERATION"
# Secrets in the environment: the API never passes the tokens to a sweep, and the driver removes
# all of them from its own environment before Ray starts (Ray's processes inherit it).
SECRET_ENV = (DB_ENV, "RNNTUNE_API_TOKEN", "RNNTUNE_API_READ_TOKEN")
DEFAULT_DB_PATH = Path("studies") / "rnntune.db"
DEFAULT_STORAGE_ROOT = Path("studies")
STORAGE_ENV = "RNNTUNE_STORAGE"  # the storage root of `rnntune serve` and of sweeps resolving a stored path


def local_folder(value: str | os.PathLike, field: str) -> Path:
    """`value` as a local folder path, where only a folder will do; StudyError naming `field` for a
    URI (`s3://bucket/prefix`), which as a path would quietly become a folder named `s3:` in the
    working directory."""
    text = os.fspath(value)
    if is_uri(text):
        raise StudyError(
            f"{field}: {text[:200]!r} is a URI, and {field} takes a local folder here "
            f"(a study's checkpoints may live in an object store: `rnntune sweep --storage` one of {URI_FORMS}, "
            "docs/cluster.md)"
        )
    return Path(text).expanduser()


def storage_root() -> Path:
    """This process's local storage root: $RNNTUNE_STORAGE, else DEFAULT_STORAGE_ROOT; when that
    is an object store (`s3://...`, checked), DEFAULT_STORAGE_ROOT holds the run folders' local copies."""
    value = os.environ.get(STORAGE_ENV) or DEFAULT_STORAGE_ROOT
    return (
        DEFAULT_STORAGE_ROOT
        if isinstance(location(value, STORAGE_ENV), ObjectLocation)
        else Path(value).expanduser()
    )


def stored_folder(stored: str, root: Path) -> Path:
    """A study's stored storage_path as a folder: a relative one taken from `root` (the storage
    root), as the API takes it, never from the working directory."""
    path = Path(stored).expanduser()
    return (path if path.is_absolute() else root / path).resolve()


def stored_location(storage_path: str | os.PathLike) -> str:
    """What a study stores as its `storage_path`: a local folder made absolute, or an object store
    location (`s3://BUCKET/PREFIX`, normalised) whose bucket answers; StudyError naming `storage`."""
    where = location(storage_path, "storage")
    if isinstance(where, Path):
        return str(where.resolve())
    ObjectStore(where).check("storage")
    return where.uri


def study_storage(stored: str, root: Path, name: str) -> tuple[Path, ObjectLocation | None]:
    """Where a study's trials write their run folders, and the object store location they are
    copied to (None for a study kept in a local folder). A study in an object store writes its
    run folders in `root/name` on each node (the storage root, a local scratch folder there)."""
    if is_uri(stored):
        return (root / name).resolve(), parse(stored, "storage_path")
    return stored_folder(stored, root), None


STATUSES: tuple[str, ...] = get_args(study_attrs.Status)  # declared once, with the attribute


__all__ = ["StudyError", "StudyExistsError", "StudyNotFoundError"]


def resolve_db_url(url: str | None = None) -> str:
    """The study database URL: the given one, else $RNNTUNE_DB_URL or POSTGRES_* (see
    `tuner.storage.database_url`), else ./studies/rnntune.db (SQLite)."""
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


# Databases whose Optuna schema this process has checked. Optuna checks it on every RDBStorage by
# loading each of its Alembic migration scripts again (about 30 ms of CPU); once per URL is enough.
_SCHEMA_CHECKED: set[str] = set()


def open_storage(url: str) -> optuna.storages.RDBStorage:
    """Optuna RDB storage on `url`; SQLite waits for locks instead of failing under concurrent writers."""
    backend = make_url(url).get_backend_name()
    if backend == "sqlite":
        engine_kwargs: dict[str, Any] = {"connect_args": {"timeout": 60}}
    else:
        engine_kwargs = {"pool_pre_ping": True}
    try:
        storage = optuna.storages.RDBStorage(
            url, engine_kwargs=engine_kwargs, skip_compatibility_check=url in _SCHEMA_CHECKED
        )
    except Exception as err:
        raise StudyError(f"cannot open study database {redact_url(url)}: {err}") from None
    _SCHEMA_CHECKED.add(url)
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


def now() -> str:
    """The current UTC time as stored in study attributes."""
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def load_study(
    name: str, storage_url: str, sampler: optuna.samplers.BaseSampler | None = None
) -> optuna.Study:
    """Load an existing study by name; raises StudyNotFoundError naming the storage."""
    storage = open_storage(storage_url)
    try:
        return optuna.load_study(study_name=name, storage=storage, sampler=sampler)
    except KeyError:
        raise StudyNotFoundError(f"no study named {name!r} in {redact_url(storage_url)}") from None


def set_status(study: optuna.Study, status: study_attrs.Status) -> None:
    if status not in STATUSES:
        raise StudyError(f"status must be one of {', '.join(STATUSES)}, not {status!r}")
    study_attrs.STATUS.write(study, status)
    study_attrs.STATUS_AT.write(study, now())


def counts_towards_total(trial: FrozenTrial) -> bool:
    """Whether a trial uses up one of the study's `n_trials` (retried attempts and settings refused
    before training for a bound do not)."""
    if trial.state == TrialState.COMPLETE:
        return trial_attrs.REFUSED.of(trial.user_attrs) is None
    if trial.state == TrialState.PRUNED:
        return True
    return trial.state == TrialState.FAIL and not trial_attrs.NEEDS_RETRY.of(trial.user_attrs)


def finished_count(study: optuna.Study) -> int:
    return sum(counts_towards_total(t) for t in study.get_trials(deepcopy=False))


def finished_curves(study: optuna.Study) -> dict[str, dict[int, float]]:
    """{`study-N`: {step: value}} of the COMPLETE and PRUNED trials: the curves a resumed sweep's
    adaptive scheduler starts its rank agreement from (tuner.policies.rank_agreement)."""
    states = (TrialState.COMPLETE, TrialState.PRUNED)
    return {
        f"study-{t.number}": dict(t.intermediate_values)
        for t in study.get_trials(deepcopy=False, states=states)
    }


def pending_retries(study: optuna.Study) -> list[FrozenTrial]:
    """FAILed attempts awaiting a retry: `needs_retry` set and no trial yet has `retry_of` = their number."""
    trials = study.get_trials(deepcopy=False)
    retried = {trial_attrs.RETRY_OF.of(t.user_attrs) for t in trials}
    return [
        t
        for t in trials
        if t.state == TrialState.FAIL and trial_attrs.NEEDS_RETRY.of(t.user_attrs) and t.number not in retried
    ]


def fail_trial(
    storage: optuna.storages.BaseStorage, study: optuna.Study, number: int, reason: str, *, needs_retry: bool
) -> None:
    """Mark a RUNNING trial FAIL with its reason (user attr `error`).

    For trials left RUNNING by a dead driver, known only by number: `Study` sets no attr on a trial
    it did not ask for, so the attrs go through `storage`, a storage on the study's database that
    the caller opened (`open_storage`), by the storage's public methods; the state through
    `Study.tell`.
    """
    study_id = storage.get_study_id_from_name(study.study_name)
    trial_id = storage.get_trial_id_from_study_id_trial_number(study_id, number)
    storage.set_trial_user_attr(trial_id, trial_attrs.ERROR, trial_attrs.ERROR.checked(reason))
    if needs_retry:
        storage.set_trial_user_attr(trial_id, trial_attrs.NEEDS_RETRY, trial_attrs.NEEDS_RETRY.checked(True))
    study.tell(number, state=TrialState.FAIL)


def fail_zombies(study: optuna.Study, reason: str, storage_url: str) -> list[int]:
    """Mark every RUNNING trial FAIL (to be retried): call only when no live process drives the
    study. `storage_url`: the study's database, opened here only if there are such trials."""
    zombies = study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))
    if zombies:
        storage = open_storage(storage_url)
        try:
            for t in zombies:
                fail_trial(storage, study, t.number, reason, needs_retry=True)
        finally:
            storage.engine.dispose()
    return [t.number for t in zombies]


def value_of(trial: FrozenTrial) -> float | None:
    """The trial's validation loss: its value, or its first value in a study with several
    objectives (val_loss is always the first, tuner.objectives.goals); None without one."""
    return trial.values[0] if trial.values else None


def best_trial(study: optuna.Study) -> FrozenTrial | None:
    """The COMPLETE trial of lowest validation loss (PRUNED and FAIL trials never are, nor settings
    refused before training), or None if there is none yet; in a study with several objectives,
    the front's member of lowest loss."""
    complete = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    scored = [
        (v, t.number, t)
        for t in complete
        if (v := value_of(t)) is not None and trial_attrs.REFUSED.of(t.user_attrs) is None
    ]
    return min(scored, key=lambda s: (s[0], s[1]))[2] if scored else None
