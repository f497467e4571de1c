"""Exception handlers: every error answers JSON `{"detail": ...}` with the right 4xx/5xx code.

Unknown study, trial or file (`NotFound`) → 404, invalid request (`InvalidInput`, or a body or
parameter outside the schema) → 422 naming each field and what it allows, conflicting action
(`Conflict`) → 409, a process that cannot start (`Unavailable`) or a study database busy or
unreachable → 503. Nothing the client sends is
meant to reach the catch-all 500; the tests drive the OpenAPI schema to check that.
"""

from __future__ import annotations

import logging

import optuna
import sqlalchemy.exc
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from tuner.errors import Conflict, InvalidInput, NotFound, StudyExistsError, StudyNotFoundError, Unavailable

log = logging.getLogger("rnntune.api")


__all__ = ["Conflict", "NotFound"]


def _field(loc: tuple | list) -> str:
    return ".".join(str(part) for part in loc) or "request"


def _validation_message(errors: list[dict]) -> str:
    return "; ".join(f"{_field(e.get('loc', ()))}: {e.get('msg', 'invalid')}" for e in errors)


def _json(status: int, detail: str, **extra) -> JSONResponse:
    return JSONResponse(status_code=status, content={"detail": detail, **extra})


# Errors whose message is the whole answer, with their status codes: rnntune's error families
# (`tuner.errors`), and the two that belong to two families, by the one that describes them.
# Starlette picks the handler of the first class in the exception's MRO that has one.
PLAIN_ERRORS = (
    (InvalidInput, 422),
    (NotFound, 404),
    (Conflict, 409),
    (StudyExistsError, 409),
    (StudyNotFoundError, 404),
)


def _plain(status: int):
    async def handler(request: Request, exc: Exception) -> JSONResponse:
        return _json(status, str(exc))

    return handler


def install(app: FastAPI) -> None:
    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = [
            {"loc": list(e.get("loc", ())), "msg": str(e.get("msg", "")), "type": str(e.get("type", ""))}
            for e in exc.errors()
        ]
        return _json(422, _validation_message(errors), errors=errors)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        response = _json(exc.status_code, str(exc.detail))
        for key, value in (exc.headers or {}).items():
            response.headers[key] = value
        return response

    for exc_type, status in PLAIN_ERRORS:
        app.add_exception_handler(exc_type, _plain(status))

    @app.exception_handler(Unavailable)
    async def _unavailable(request: Request, exc: Unavailable) -> JSONResponse:
        log.error("%s", exc)
        return _json(503, str(exc))

    @app.exception_handler(sqlalchemy.exc.OperationalError)
    async def _db_busy(request: Request, exc: sqlalchemy.exc.OperationalError) -> JSONResponse:
        log.warning("study database unavailable: %s", exc)
        response = _json(503, "the study database is busy or unreachable; retry shortly")
        response.headers["Retry-After"] = "1"
        return response

    @app.exception_handler(optuna.exceptions.StorageInternalError)
    async def _storage_error(request: Request, exc: optuna.exceptions.StorageInternalError) -> JSONResponse:
        # Optuna's RDB storage wraps the database's own error, an unreachable server among them.
        log.warning("study database unavailable: %s (%s)", exc, exc.__cause__)
        response = _json(503, "the study database is busy or unreachable; retry shortly")
        response.headers["Retry-After"] = "1"
        return response

    @app.exception_handler(sqlalchemy.exc.SQLAlchemyError)
    async def _db_error(request: Request, exc: sqlalchemy.exc.SQLAlchemyError) -> JSONResponse:
        log.warning("study database error: %s", exc)
        return _json(503, f"the study database could not answer ({type(exc).__name__}); retry shortly")

    @app.exception_handler(Exception)
    async def _bug(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return _json(500, f"internal error ({type(exc).__name__}); see the server log")
