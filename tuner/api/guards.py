"""Checks every request passes before any route runs: its Host, and its method.

* Host: every request, reads and the static pages included, must name one of `allowed_hosts`
  (`tuner.api.settings`), else 403. A DNS-rebinding page (a foreign name that resolves to this
  server) sends its own name as Host, so it reads nothing, whatever tokens are configured.
* Method: `OPTIONS` on a documented path answers 204 with `Allow` listing every method the OpenAPI
  schema documents for it; any other method it lacks answers 405 with the same `Allow` (Starlette's
  own 405 names only the first route that matched, so `POST /studies` went missing from `GET`'s).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

from tuner.api.settings import ApiSettings, host_name

HTTP_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


class RequestGuard:
    """ASGI middleware applying the Host allow-list and answering OPTIONS and unknown methods."""

    def __init__(self, app: ASGIApp, settings: ApiSettings, schema: Callable[[], dict[str, Any]]) -> None:
        """`schema()`: the app's OpenAPI schema, read once, on the first request."""
        self.app = app
        self.settings = settings
        self._schema = schema
        self._paths: list[tuple[re.Pattern[str], frozenset[str]]] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        hosts = [v.decode("latin-1") for k, v in scope["headers"] if k.lower() == b"host"]
        if len(hosts) > 1:  # RFC 9112 §3.2: a request with more than one Host is a 400
            await _answer(send, 400, {"detail": f"header Host: sent {len(hosts)} times; send it once"})
            return
        host = hosts[0] if hosts else ""
        if hosts and not host_name(host):
            detail = f"header Host: {host[:100]!r} is not host[:port] (RFC 9110 §7.2)"
            await _answer(send, 400, {"detail": detail})
            return
        allowed = self.settings.allowed_hosts
        if allowed is not None and host_name(host) not in allowed:
            detail = (
                f"header Host: {host[:100]!r} is not one of this server's names ({', '.join(allowed)}; "
                f"set RNNTUNE_ALLOWED_HOSTS to add one)"
            )
            await _answer(send, 403, {"detail": detail})
            return
        methods = self._methods(scope)
        if methods and scope["method"] not in methods:
            allow = ", ".join(sorted(methods | {"OPTIONS"}))
            if scope["method"] == "OPTIONS":
                await _answer(send, 204, None, allow)
            else:
                detail = f"method {scope['method'][:20]} is not allowed here; allowed: {allow}"
                await _answer(send, 405, {"detail": detail}, allow)
            return
        await self.app(scope, receive, send)

    def _methods(self, scope: Scope) -> set[str]:
        """Every method the schema documents at this path (empty: an undocumented path)."""
        if self._paths is None:
            self._paths = [
                (_pattern(path), frozenset(m.upper() for m in operations if m in HTTP_METHODS))
                for path, operations in self._schema().get("paths", {}).items()
            ]
        return {m for pattern, methods in self._paths if pattern.fullmatch(scope["path"]) for m in methods}


def _pattern(template: str) -> re.Pattern[str]:
    """`/studies/{name}/trials.{fmt}` as a regex: each `{param}` one path segment's worth."""
    parts = re.split(r"\{[^}]+\}", template)
    return re.compile("[^/]+".join(re.escape(part) for part in parts))


def document_guard_responses(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` with the guard's 403 (a Host outside the allowed names) documented on every
    operation that does not document it yet, answering the same `ErrorBody` as the routes."""
    forbidden = {
        "description": "Host is not one of this server's names",
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}},
    }
    for operations in schema.get("paths", {}).values():
        for method, operation in operations.items():
            if method in HTTP_METHODS and isinstance(operation, dict):
                operation.setdefault("responses", {}).setdefault("403", forbidden)
    return schema


async def _answer(send: Send, status: int, body: dict | None, allow: str | None = None) -> None:
    content = b"" if body is None else json.dumps(body).encode()
    headers = [(b"content-length", str(len(content)).encode())]
    if body is not None:
        headers.append((b"content-type", b"application/json"))
    if allow is not None:
        headers.append((b"allow", allow.encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": content})
