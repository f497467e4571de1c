"""The JSON schema of a space file, generated from the pydantic models (`rnntune spaces schema`).

docs/search-space.schema.json holds a copy for editors (the shipped files name it in their first
line); a test keeps it current, so a new trainer hyperparameter shows up there too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tuner.space.model import SpaceFile
from tuner.space.params import SPEC_CLASSES
from tuner.space.tunable import TUNABLES

SCHEMA_FILE = Path(__file__).resolve().parents[2] / "docs" / "search-space.schema.json"


def _per_name() -> dict[str, Any]:
    """Each tunable name's allowed shapes: an int field takes `scale: int`, a real one linear or log,
    a categorical one `choices` among its values (what `model._check_kind` checks in Python)."""
    ref = {scale: {"$ref": f"#/$defs/{cls.__name__}"} for scale, cls in SPEC_CLASSES.items()}
    out: dict[str, Any] = {}
    for name, tunable in TUNABLES.items():
        if tunable.kind == "categorical":
            choices = {"properties": {"choices": {"items": {"enum": list(tunable.choices)}}}}
            out[name] = {"allOf": [ref["categorical"], choices]}
        elif tunable.kind == "int":
            out[name] = ref["int"]
        else:
            out[name] = {"oneOf": [ref["linear"], ref["log"]]}
    return out


def json_schema() -> dict[str, Any]:
    """JSON schema (draft 2020-12) of a search-space file."""
    schema = SpaceFile.model_json_schema()
    schema["properties"]["params"]["properties"] = _per_name()
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "rnntune search space",
        **schema,
    }


def json_schema_text() -> str:
    """The schema as the committed file holds it."""
    return json.dumps(json_schema(), indent=2, sort_keys=True) + "\n"
