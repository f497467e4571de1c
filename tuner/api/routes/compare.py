"""Studies of one task compared (`GET /compare?studies=A,B`) and the comparison page (`/web/compare`).

The comparison (tuner.analysis.compare) bootstraps each study once (1000 replicates): about 0.1 s
for a study of a few hundred trials, 2.5 s for one of 10,000 (2 shared cores). It runs in the
threadpool, and its JSON is kept per study version (trials, reruns) in a small cache of its own;
each study's bootstrap, the costly part, is kept in its snapshot's memo (tuner.analysis.compare), so
the same studies asked in another order resample nothing.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import FileResponse, Response
from starlette.concurrency import run_in_threadpool

from tuner.analysis import compare
from tuner.api import serializers as views
from tuner.api.auth import require_read
from tuner.api.compare_models import Comparison
from tuner.api.routes.common import errors, readable_row, state_of
from tuner.api.routes.web import STATIC
from tuner.space import NAME_PATTERN
from tuner.storage import study_attrs

router = APIRouter(tags=["compare"])
_NAME = NAME_PATTERN.removeprefix("^").removesuffix("$")
# 2 to MAX_STUDIES study names: the schema says what is valid, so a valid-looking list is never a 422
# for its shape (repeated names and studies of different tasks still are).
STUDIES_PATTERN = f"^{_NAME}(,{_NAME}){{1,{compare.MAX_STUDIES - 1}}}$"
CACHE_SIZE = 16
_LOCK = threading.Lock()


class ComparisonCache:
    """The last `CACHE_SIZE` comparisons' JSON by the studies' versions."""

    def __init__(self) -> None:
        self._items: OrderedDict[tuple, str] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple) -> str | None:
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
            return found

    def put(self, key: tuple, value: str) -> None:
        with self._lock:
            self._items[key] = value
            while len(self._items) > CACHE_SIZE:
                self._items.popitem(last=False)


def cache_of(request: Request) -> ComparisonCache:
    """The app's comparison cache, made on first use (one per app)."""
    with _LOCK:
        found = getattr(request.app.state, "rnntune_compare", None)
        if found is None:
            found = request.app.state.rnntune_compare = ComparisonCache()
        return found


def _build(request: Request, names: list[str]) -> str:
    store = state_of(request).store
    rows = [
        readable_row(state_of(request), name) for name in names
    ]  # an unknown study is a 404 before anything else
    compare.check_names(names)
    key = tuple(
        (
            row.name,
            row.status,
            store.snapshot(row).fingerprint,
            json.dumps(
                [study_attrs.FINALIZE.of(row.user_attrs), study_attrs.FINALIZE_STATUS.of(row.user_attrs)],
                sort_keys=True,
                default=str,
            ),
        )
        for row in rows
    )
    cache = cache_of(request)
    found = cache.get(key)
    if found is None:
        result = views.clean(compare.compare(store, names))
        found = Comparison.model_validate(result).model_dump_json()
        cache.put(key, found)
    return found


@router.get(
    "/compare",
    response_model=Comparison,
    dependencies=[Depends(require_read)],
    responses=errors(401, 404, 409, 422, 503),
)
async def get_compare(
    request: Request,
    studies: Annotated[
        str,
        Query(
            pattern=STUDIES_PATTERN,
            description=f"2 to {compare.MAX_STUDIES} distinct study names, comma-separated (no spaces), "
            "of one task (dataset, model size, training steps; the cell may differ).",
        ),
    ],
) -> Response:
    """Expected best validation value against trials, training steps and trial seconds (Dodge et
    al. 2019) with bootstrap bands; each study's finalised reruns (mean ± sd) or how to run them;
    and per pair a verdict from a bootstrap test at the most trials both have. 422 naming the
    setting that differs when the studies do not share a task."""
    names = studies.split(",")
    return Response(await run_in_threadpool(_build, request, names), media_type="application/json")


@router.get("/web/compare", include_in_schema=False)
def compare_page() -> FileResponse:
    return FileResponse(STATIC / "compare.html", media_type="text/html")
