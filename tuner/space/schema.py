"""The JSON schema of a space file, generated from the pydantic models (`rnntune spaces schema`).

docs/search-space.schema.json holds a copy for editors (the shipped files name it in their first
line); a test keeps it current, so a new trainer hyperparameter shows up there too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tuner.space.model import SpaceFile

SCHEMA_FILE = Path(__file__).resolve().parents[2] / "docs" / "search-space.schema.json"


def json_schema() -> dict[str, Any]:
    """JSON schema (draft 2020-12) of a search-space file."""
    schema = SpaceFile.model_json_schema()
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": "rnntune search space", **schema}


def json_schema_text() -> str:
    """The schema as the committed file holds it."""
    return json.dumps(json_schema(), indent=2, sort_keys=True) + "\n"
