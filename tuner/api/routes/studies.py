"""Studies: list, create, inspect, start and stop their sweeps."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Query, Request, status
from starlette.concurrency import run_in_threadpool

from tuner.analysis.front import best_record, study_goals
from tuner.api import bounds, serializers
from tuner.api.auth import require_read, require_write
from tuner.api.checkpoint import storage_root
from tuner.api.models import Action, CreateStudy, StudyDetail, StudyPage, WidenRange, WidenResult
from tuner.api.paths import study_location
from tuner.api.routes.common import StudyName, errors, json_body, live_runs, read_json, readable_row
from tuner.api.settings import ApiSettings
from tuner.api.state import ApiState
from tuner.spec import SweepSpec
from tuner.storage import creation, study_attrs
from tuner.storage.confine import resolve_within
from tuner.storage.lease import read, read_all
from tuner.storage.object_backends import URI_FORMS
from tuner.storage.object_store import KeyRefused, is_uri
from tuner.sweeps.launch import control
from tuner.sweeps.trackers import uris
from tuner.sweeps.widen import control as widen_control

router = APIRouter(prefix="/studies", tags=["studies"])
ERRORS = errors(401, 403, 404, 409, 413, 415, 422, 503)


def _state(request: Request) -> ApiState:
    return request.app.state.rnntune


@router.get("", response_model=StudyPage, dependencies=[Depends(require_read)], responses=ERRORS)
async def list_studies(
    request: Request,
    offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
) -> dict:
    """Studies, oldest first, with status, trial counts by state and best objective."""
    state = _state(request)
    found = state.store.fresh_page(offset, limit)
    if found is None:
        found = await run_in_threadpool(state.store.page, offset, limit)
    total, page = found
    leases = await run_in_threadpool(read_all, state.leases, [r.name for r in page]) if page else {}
    return {
        "total": total,
        "offset": offset,
        "limit": limit,
        "items": [_summary(state, r, leases.get(r.name)) for r in page],
    }


def _summary(state: ApiState, row, lease) -> dict:
    """The row's summary with its true status: from the driver lease (tuner.sweeps.launch.control)."""
    handle = state.launcher.get(row.name)
    return {
        **serializers.study_summary(row, handle),
        "status": control.study_status(row.status, lease, handle),
    }


def detail(state: ApiState, name: str) -> dict:
    row = readable_row(state, name)
    snapshot = state.store.snapshot(row)
    best = best_record(snapshot.trials, study_goals(row.user_attrs), snapshot.best)
    lease = read(state.leases, name)
    summary = _summary(state, row, lease)
    summary["best_value"] = serializers.finite(best.value) if best else None
    handle = state.launcher.get(name)
    return {
        **summary,
        "storage_path": str(storage_root(row.user_attrs, state.settings.storage_root / name)),
        "user_attrs": serializers.clean(row.user_attrs),
        "warm_start": study_attrs.WARM_START.of(row.user_attrs),
        "widened": study_attrs.WIDENED.of(row.user_attrs) or [],
        "best_trial": serializers.trial_summary(best) if best else None,
        "process": handle.as_dict() if handle else None,
        "driver": control.driver_info(lease),
    }


def check_data_dirs(body: CreateStudy, settings: ApiSettings) -> None:
    """422 unless every `data_dir` the request names lies inside the server's data roots. The
    answer is the same whether or not the path exists, so it cannot probe the server's files."""
    space = body.space if isinstance(body.space, dict) else {}
    fixed = space.get("fixed")
    fixed = fixed if isinstance(fixed, dict) else {}
    named = {
        "body.overrides.set.data_dir": body.overrides.set.get("data_dir"),
        "body.space.fixed.data_dir": fixed.get("data_dir"),
    }
    for field, raw in named.items():
        if raw is not None and resolve_within(raw, settings.data_roots, Path.cwd()) is None:
            roots = ", ".join(str(r) for r in settings.data_roots) or "none configured"
            raise HTTPException(
                status.HTTP_422_UNPROCESSABLE_CONTENT,
                f"{field}: must be a folder inside the server's data roots ({roots}; set them with "
                f"--data-root or RNNTUNE_DATA_ROOTS)",
            )


def check_checkpoint(body: CreateStudy, settings: ApiSettings) -> None:
    """422 unless the `checkpoint` a request names (a dynamic-evaluation study's model, which
    creation loads with torch.load) lies inside the server's storage root or data roots, or, for an
    object store key (`s3://`, `gs://`, `abfs://`), inside its object root; the answer is the same whether or
    not it exists."""
    problem = checkpoint_problem(body.checkpoint, settings) if body.checkpoint is not None else None
    if problem is not None:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, f"body.checkpoint: {problem}")


def checkpoint_problem(raw: str, settings: ApiSettings) -> str | None:
    """Why the server refuses `raw` as a request's checkpoint, None when it lies inside its roots:
    a local file inside the storage root or data roots, an object key inside the object root."""
    if is_uri(raw):
        if settings.object_root is None:
            return (
                "a checkpoint in an object store needs a server that keeps studies in one (serve with "
                f"--storage one of {URI_FORMS}); give a file inside its storage root"
            )
        try:
            settings.object_root.confine(raw, "checkpoint")
        except KeyRefused:
            return f"must be a key inside the server's object root ({settings.object_root.uri})"
        return None
    roots = (settings.storage_root, *settings.data_roots)
    if resolve_within(raw, roots, Path.cwd()) is None:
        return (
            f"must be a file inside the server's storage root or data roots "
            f"({', '.join(str(r) for r in roots)})"
            + (
                f", or a key inside its object root ({settings.object_root.uri})"
                if settings.object_root
                else ""
            )
        )
    return None


def check_tracker(uri: str | None, settings: ApiSettings, field: str, code: int) -> None:
    """`code` (422 at creation, 409 at start for a stored spec) unless the MLflow URI is one this
    server lets clients name (`tuner.sweeps.trackers.uris.rest_problem`)."""
    if uri is None:
        return
    problem = uris.rest_problem(
        uri, allowed=settings.mlflow_uris, storage_root=settings.storage_root, database_url=settings.db_url
    )
    if problem is not None:
        raise HTTPException(code, f"{field}: {problem}")


@router.post(
    "",
    response_model=StudyDetail,
    status_code=status.HTTP_201_CREATED,
    dependencies=[Depends(require_write)],
    responses=ERRORS,
    openapi_extra=json_body(CreateStudy),
)
async def create_study(request: Request) -> dict:
    """Create a study from a search space (name or inline), sampler, trial count and overrides."""
    body: CreateStudy = await read_json(request, CreateStudy)
    state = _state(request)
    bounds.check_space_size(body.space, state.settings)
    bounds.check_cpus_per_trial(body.cpus_per_trial, state.settings, "body.cpus_per_trial", 422)
    check_data_dirs(body, state.settings)
    check_checkpoint(body, state.settings)
    check_tracker(body.mlflow_uri, state.settings, "body.mlflow_uri", status.HTTP_422_UNPROCESSABLE_CONTENT)
    await run_in_threadpool(create_bounded, state, body)
    return await run_in_threadpool(detail, state, body.name)


def create_bounded(state: ApiState, body: CreateStudy) -> None:
    """Count the studies and create one as one step (tuner.storage.creation): concurrent creates
    cannot pass RNNTUNE_MAX_STUDIES together."""
    with creation.exclusive(state.leases):
        total, _ = state.store.db.study_page(0, 0)
        bounds.check_study_count(total, state.settings)
        control.create(state, body.name, body.spec())


@router.get("/{name}", response_model=StudyDetail, dependencies=[Depends(require_read)], responses=ERRORS)
def get_study(request: Request, name: StudyName) -> dict:
    """Status, counts by state, progress, best trial and the sweep process (if this API runs it)."""
    return detail(_state(request), name)


@router.post(
    "/{name}/start",
    response_model=Action,
    status_code=status.HTTP_202_ACCEPTED,
    dependencies=[Depends(require_write)],
    responses=ERRORS,
)
def start_study(request: Request, name: StudyName) -> dict:
    """Launch the study's sweep in the background (409 while a driver holds its lease, finished, its
    stored storage_path lies outside this server's storage root, or a stored attribute, its spec
    included, cannot be read: the page answers 409 for the same study)."""
    state = _state(request)
    attrs = readable_row(state, name).user_attrs
    study_location(attrs, state.settings.storage_root, name, state.settings.object_root)
    if (spec := SweepSpec.stored_in(attrs)) is not None:
        bounds.check_cpus_per_trial(spec.cpus_per_trial, state.settings, "cpus_per_trial", 409)
        check_tracker(spec.mlflow_uri, state.settings, "mlflow_uri", status.HTTP_409_CONFLICT)
    bounds.check_runs(live_runs(request), state.settings)
    handle = control.start(state, name)
    return {
        "name": name,
        "status": "running",
        "process": handle.as_dict(),
        "driver": control.driver_info(read(state.leases, name)),
    }


@router.post(
    "/{name}/stop",
    response_model=Action,
    status_code=status.HTTP_202_ACCEPTED,
    dependencies=[Depends(require_write)],
    responses=ERRORS,
)
def stop_study(request: Request, name: StudyName) -> dict:
    """Store a stop request for the study's sweep, wherever it runs; it stops cleanly and keeps its
    completed trials. 409 if no sweep drives it."""
    handle, lease = control.stop(_state(request), name)
    return {
        "name": name,
        "status": "stopping",
        "process": handle.as_dict() if handle else None,
        "driver": control.driver_info(lease),
    }


@router.post(
    "/{name}/widen",
    response_model=WidenResult,
    dependencies=[Depends(require_write)],
    responses=ERRORS,
    openapi_extra=json_body(WidenRange),
)
async def widen_range(request: Request, name: StudyName) -> dict:
    """Widen one range of the study's space by half its span (at the edge its boundary alert names,
    or `edge`), adding `add_trials` to its count; then `start` continues it in the wider range.
    409 while a sweep drives the study."""
    body: WidenRange = await read_json(request, WidenRange)
    await run_in_threadpool(readable_row, _state(request), name)  # 409 as its page: Optuna would raise
    return await run_in_threadpool(widen_control.widen, _state(request), name, body)
