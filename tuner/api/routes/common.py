"""Helpers of the read routes: hot reads answer on the event loop, database reads go to threads.

Why: under 16 concurrent clients the hop into FastAPI's threadpool costs more than a cached answer;
a read that finds its study cached and fresh (see `StudyStore`) never leaves the event loop, and
anything that may touch the database or compute for long runs in the threadpool.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import Request
from starlette.concurrency import run_in_threadpool

from tuner.api.snapshot import StudySnapshot
from tuner.api.state import ApiState


def state_of(request: Request) -> ApiState:
    return request.app.state.rnntune


async def snapshot_of(request: Request, name: str) -> StudySnapshot:
    """The study's snapshot (StudyNotFound → 404), from the cache when fresh."""
    store = state_of(request).store
    found = store.fresh_snapshot(name)
    if found is None:
        found = await run_in_threadpool(lambda: store.snapshot(store.row(name)))
    return found


async def memoised(snapshot: StudySnapshot, key: Any, compute: Callable[[], Any]) -> Any:
    """`snapshot.memo(key, compute)`, computing (if needed) in the threadpool."""
    found = snapshot.peek(key)
    if found is None:
        found = await run_in_threadpool(snapshot.memo, key, compute)
    return found
