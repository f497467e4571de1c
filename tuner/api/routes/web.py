"""The web view: static pages (studies list, study page) that read the JSON API from the browser."""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import FileResponse, RedirectResponse

STATIC = Path(__file__).resolve().parent.parent / "static"
router = APIRouter(include_in_schema=False)


@router.get("/")
def root() -> RedirectResponse:
    return RedirectResponse("/web/")


@router.get("/web/")
def studies_page() -> FileResponse:
    return FileResponse(STATIC / "index.html", media_type="text/html")


@router.get("/web/studies/{name}")
def study_page(name: str) -> FileResponse:
    return FileResponse(STATIC / "study.html", media_type="text/html")
