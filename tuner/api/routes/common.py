"""What the routers share: the study-name path parameter, error responses, and read helpers.

Hot reads answer on the event loop, database reads go to threads. Why: under 16 concurrent clients
the hop into FastAPI's threadpool costs more than a cached answer; a read that finds its study
cached and fresh (see `StudyStore`) never leaves the event loop, and anything that may touch the
database or compute for long runs in the threadpool.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import HTTPException, Path, Request, status
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect

from tuner.analysis.reads import StudyRow, StudySnapshot
from tuner.api import serializers
from tuner.api.models import ErrorBody
from tuner.api.state import ApiState
from tuner.space import NAME_PATTERN

STUDY = "/studies/{name}"
# One pattern for study names on every path, the one creation enforces (tuner.space.NAME_PATTERN):
# a name no study can have (a NUL, a quote, CR/LF, non-ASCII) is a 422 before any read.
StudyName = Annotated[
    str,
    Path(
        pattern=NAME_PATTERN,
        description="The study's name: 1-128 letters, digits, _ . - (not starting with . or -).",
    ),
]


def attachment(filename: str) -> str:
    """Content-Disposition of a download (RFC 6266): `filename` as given when it is plain ASCII,
    else an ASCII stand-in plus the exact name as RFC 5987 `filename*`; never a raw quote, CR/LF
    or non-Latin-1 byte in the header."""
    plain = re.sub(r"[^A-Za-z0-9_.\-]", "_", filename)
    if plain == filename:
        return f'attachment; filename="{filename}"'
    return f"attachment; filename=\"{plain}\"; filename*=UTF-8''{quote(filename, safe='')}"


def errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI `responses` for these error codes (all answer an `ErrorBody`)."""
    return {code: {"model": ErrorBody} for code in codes}


def state_of(request: Request) -> ApiState:
    return request.app.state.rnntune


def readable_row(state: ApiState, name: str) -> StudyRow:
    """The study's row (StudyNotFound → 404); 409 naming the attribute when one it stores cannot be
    read here (`serializers.stored_problem`): every route of a study reads its row through this, so
    no stored value, however odd, reaches a route's code as a 5xx."""
    row = state.store.row(name)
    if (problem := serializers.stored_problem(row.user_attrs)) is not None:
        raise HTTPException(status.HTTP_409_CONFLICT, f"study {name!r} cannot be read here: {problem}")
    return row


async def snapshot_of(request: Request, name: str) -> StudySnapshot:
    """The study's snapshot (StudyNotFound → 404; 409 as `readable_row`), from the cache when fresh
    (its row is then fresh too, so the check reads no database)."""
    state = state_of(request)
    found = state.store.fresh_snapshot(name)
    if found is None:
        return await run_in_threadpool(lambda: state.store.snapshot(readable_row(state, name)))
    readable_row(state, name)
    return found


async def memoised(snapshot: StudySnapshot, key: Any, compute: Callable[[], Any]) -> Any:
    """`snapshot.memo(key, compute)`, computing (if needed) in the threadpool."""
    found = snapshot.peek(key)
    if found is None:
        found = await run_in_threadpool(snapshot.memo, key, compute)
    return found


def live_runs(request: Request) -> int:
    """Sweep and finalize processes this app started that still run (the `max_runs` bound)."""
    finalize = getattr(request.app.state, "rnntune_finalize", None)
    return len(state_of(request).launcher.live()) + (len(finalize.live()) if finalize is not None else 0)


def json_body(model: type[BaseModel]) -> dict[str, Any]:
    """`openapi_extra` declaring `model` as the JSON body of a route that reads its body itself."""
    schema = model.model_json_schema()
    defs = schema.pop("$defs", {})

    def inline(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref", "")
            return (
                inline(defs[ref.rsplit("/", 1)[-1]])
                if ref.startswith("#/$defs/")
                else {k: inline(v) for k, v in node.items()}
            )
        return [inline(v) for v in node] if isinstance(node, list) else node

    return {"requestBody": {"required": True, "content": {"application/json": {"schema": inline(schema)}}}}


async def read_json(request: Request, model: type[BaseModel]) -> Any:
    """The body as `model`, read only now (after the route's auth dependencies ran) and refused past
    `max_body_bytes` (413) without reading further; invalid JSON or fields are a 422 per field."""
    limit = state_of(request).settings.max_body_bytes
    too_large = HTTPException(status.HTTP_413_CONTENT_TOO_LARGE, f"body: larger than {limit} bytes")
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise too_large
    body = bytearray()
    try:
        async for chunk in request.stream():
            body += chunk
            if len(body) > limit:
                raise too_large
    except ClientDisconnect:  # the server's body deadline closed it (connections.py), or the client
        raise HTTPException(
            status.HTTP_408_REQUEST_TIMEOUT, "body: the connection closed before it arrived"
        ) from None
    try:
        return model.model_validate_json(bytes(body))
    except ValidationError as err:
        raise RequestValidationError(
            [{**e, "loc": ("body", *e["loc"])} for e in err.errors(include_url=False)]
        ) from None
