"""The FastAPI app factory: REST API, OpenAPI docs at /docs (self-hosted Swagger UI), web view and
its static assets."""

from __future__ import annotations

from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.openapi.utils import get_openapi
from fastapi.responses import HTMLResponse
from fastapi.routing import APIRoute
from fastapi.staticfiles import StaticFiles

from tuner import version
from tuner.api import errors
from tuner.api.auth import enforced_security
from tuner.api.guards import RequestGuard, document_guard_responses
from tuner.api.links import add_links
from tuner.api.routes import (
    analysis,
    boundaries,
    compare,
    export,
    finalize,
    front,
    population,
    studies,
    trials,
    web,
)
from tuner.api.settings import ApiSettings
from tuner.api.state import ApiState

SWAGGER = "/static/vendor/swagger-ui"
DESCRIPTION = """Start and inspect rnntune studies; hyperparameter sensitivity around the best trial
(thesis Appendix 2.B); the best checkpoint as a download. When `RNNTUNE_API_TOKEN` is set, requests
that change anything need `Authorization: Bearer <token>`; when `RNNTUNE_API_READ_TOKEN` is set,
reads need a token too (and, if it is the only token, writes need it); the operations that need one
declare it below. Every request must name one of the server's host names in `Host` (else 403).
Requests that change anything take JSON bodies only (at most 1 MB) and are refused from another
site's `Origin`."""


def operation_id(route: APIRoute) -> str:
    """A route's OpenAPI operation id: its function's name (a test checks they are unique)."""
    return route.name


def create_app(settings: ApiSettings | None = None) -> FastAPI:
    """Build the app; the study store opens now, sweeps it launched are stopped at shutdown. Every
    request passes the Host allow-list and method checks (`RequestGuard`) before any route."""
    state = ApiState(settings or ApiSettings.from_env())

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        yield
        state.close()

    app = FastAPI(
        title="rnntune",
        version=version(),
        description=DESCRIPTION,
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        # Short operation ids, the route functions' names (`create_study`, `list_trials`): what a
        # generated client names its functions; FastAPI's default appends the path and method.
        generate_unique_id_function=operation_id,
    )
    app.state.rnntune = state
    errors.install(app)
    for module in (studies, export, trials, analysis, front, population, boundaries, finalize, compare, web):
        app.include_router(module.router)
    app.mount("/static", StaticFiles(directory=web.STATIC), name="static")
    app.add_middleware(RequestGuard, settings=state.settings, schema=lambda: app.openapi())

    def openapi() -> dict:
        """The schema, once, declaring bearer security only where this server enforces it, with
        links from listings to the operations on one study or trial (`tuner.api.links`)."""
        if app.openapi_schema is None:
            schema = get_openapi(
                title=app.title, version=app.version, description=app.description, routes=app.routes
            )
            secured = enforced_security(document_guard_responses(schema), state.settings)
            app.openapi_schema = add_links(secured)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]

    @app.get("/docs", include_in_schema=False)
    async def docs() -> HTMLResponse:
        """Swagger UI from the app's own copy (FastAPI's default loads it from a CDN)."""
        assert app.openapi_url is not None  # FastAPI's default; this app never turns it off
        return get_swagger_ui_html(
            openapi_url=app.openapi_url,
            title="rnntune API",
            swagger_js_url=f"{SWAGGER}/swagger-ui-bundle.js",
            swagger_css_url=f"{SWAGGER}/swagger-ui.css",
            swagger_favicon_url=f"{SWAGGER}/favicon-32x32.png",
        )

    return app
