"""Who may call the API, as FastAPI dependencies: one for reads, one for anything that changes state.

The bearer scheme is declared with FastAPI's `HTTPBearer`, so /docs has an Authorize button; the
app's OpenAPI schema keeps it only on the operations that enforce it (`enforced_security`). Tokens
are compared with `hmac.compare_digest` (constant time). Reads are open unless
`RNNTUNE_API_READ_TOKEN` is set (then either token works); writes need `RNNTUNE_API_TOKEN`, or the
read token when it is the only one set. A mutation is refused before its token is even checked when
it could come from another site: a `Content-Type` other than JSON (an HTML form can send those
without asking) or an `Origin` other than the server's own. (The Host allow-list, against DNS
rebinding, applies to every request: `tuner.api.guards`.)
"""

from __future__ import annotations

import hmac
from typing import Annotated, Any
from urllib.parse import urlsplit

from fastapi import Depends, HTTPException, Request, status
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from tuner.api.settings import ApiSettings

bearer = HTTPBearer(
    auto_error=False,
    description="`RNNTUNE_API_TOKEN` for changes; `RNNTUNE_API_READ_TOKEN` (or the write token) for "
    "reads when it is set.",
)
Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]


def _matches(credentials: HTTPAuthorizationCredentials | None, *tokens: str | None) -> bool:
    if credentials is None:
        return False
    presented = credentials.credentials.strip().encode("utf-8")
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


def check_same_site(request: Request) -> None:
    """403 for a foreign Origin, 415 for a body that is not JSON (see the module doc)."""
    host = request.headers.get("host", "")
    origin = request.headers.get("origin")
    if origin is not None and urlsplit(origin).netloc.lower() != host.lower():
        raise HTTPException(
            status.HTTP_403_FORBIDDEN,
            f"header Origin: {origin!r} is another site; changes are same-origin only",
        )
    content_type = request.headers.get("content-type")
    if content_type is not None and content_type.split(";")[0].strip().lower() != "application/json":
        raise HTTPException(
            status.HTTP_415_UNSUPPORTED_MEDIA_TYPE,
            f"header Content-Type: {content_type!r} is not accepted; send 'application/json'",
        )


async def require_write(request: Request, credentials: Credentials) -> None:
    settings: ApiSettings = request.app.state.rnntune.settings
    check_same_site(request)
    if settings.write_token and not _matches(credentials, settings.write_token):
        raise _unauthorized("a request that changes state")


async def require_read(request: Request, credentials: Credentials) -> None:
    settings: ApiSettings = request.app.state.rnntune.settings
    if settings.read_token and not _matches(credentials, settings.read_token, settings.api_token):
        raise _unauthorized("reading studies")


def enforced_security(schema: dict[str, Any], settings: ApiSettings) -> dict[str, Any]:
    """`schema` with bearer security declared only where it is enforced: on reads (GET) when a read
    token is set, on writes when a write token is; the scheme itself only when some operation uses it."""
    enforced = {"get": bool(settings.read_token), "post": bool(settings.write_token)}
    used = False
    for operations in schema.get("paths", {}).values():
        for method, operation in operations.items():
            if not isinstance(operation, dict) or "security" not in operation:
                continue
            if enforced.get(method, False):
                used = True
            else:
                del operation["security"]
    if not used:
        schema.get("components", {}).pop("securitySchemes", None)
    return schema
