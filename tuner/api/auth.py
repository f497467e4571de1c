"""Bearer-token checks, as FastAPI dependencies: one for reads, one for anything that changes state.

The checks are `async` (no I/O) so FastAPI runs them on the event loop, not in its threadpool.
Tokens are compared with `hmac.compare_digest` (constant time) so response timing does not leak
how much of a guess was right. Writes accept only `RNNTUNE_API_TOKEN`; reads are open unless
`RNNTUNE_API_READ_TOKEN` is set, and then accept either token.
"""

from __future__ import annotations

import hmac

from fastapi import HTTPException, Request, status


def _presented(request: Request) -> bytes | None:
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip().encode("utf-8")


def _matches(presented: bytes | None, *tokens: str | None) -> bool:
    if presented is None:
        return False
    ok = False
    for token in tokens:
        if token:
            ok |= hmac.compare_digest(presented, token.encode("utf-8"))
    return ok


def _unauthorized(what: str) -> HTTPException:
    return HTTPException(
        status_code=status.HTTP_401_UNAUTHORIZED,
        detail=f"{what} needs header 'Authorization: Bearer <token>' with a valid token",
        headers={"WWW-Authenticate": "Bearer"},
    )


async def require_write(request: Request) -> None:
    settings = request.app.state.rnntune.settings
    if settings.api_token and not _matches(_presented(request), settings.api_token):
        raise _unauthorized("a request that changes state")


async def require_read(request: Request) -> None:
    settings = request.app.state.rnntune.settings
    if settings.read_token and not _matches(
        _presented(request), settings.read_token, settings.api_token
    ):
        raise _unauthorized("reading studies")
