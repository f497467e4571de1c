"""OpenAPI links: how an answer names the study or trial that other operations take.

A client (or a schema-driven tester, such as the state machine of tests/tuner/api/test_schema_fuzz.py)
follows them from a listing to the operations on one item: `GET /studies` and `POST /studies` give
a study's `name` to every `/studies/{name}...` operation; `GET /studies/{name}/trials`,
`GET /studies/{name}` (its best trial) and `GET /studies/{name}/best` give a trial's `number` to
every `/studies/{name}/trials/{number}...` one.
A link promises that the operation applies to what the answer names, so a study just created is
not linked to the operations that answer 404 until it has a completed trial.
"""

from __future__ import annotations

import re
from typing import Any

HTTP_METHODS = ("get", "put", "post", "delete", "patch")
# Operations that answer 404 until a study has a completed trial: no link from a study just created.
NEED_A_TRIAL = ("/best", "/sensitivity", "/importances", "/plots/")
# (path, method, status, the expressions that fill each path parameter of the linked operations,
# whether the linked study may have no completed trial yet)
SOURCES = (
    ("/studies", "get", "200", {"name": "$response.body#/items/0/name"}, False),
    ("/studies", "post", "201", {"name": "$response.body#/name"}, True),
    ("/studies/{name}/trials", "get", "200", {"name": "$request.path.name", "number": "$response.body#/items/0/number"}, False),
    ("/studies/{name}", "get", "200", {"name": "$request.path.name", "number": "$response.body#/best_trial/number"}, False),
    ("/studies/{name}/best", "get", "200", {"name": "$request.path.name", "number": "$response.body#/number"}, False),
)  # fmt: skip


def add_links(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` with a link from each source answer to every operation whose path parameters are
    exactly the ones the source fills (an operation with a query or body keeps generating those);
    from a study just created, not to the ones that need a completed trial."""
    paths = schema.get("paths", {})
    for source_path, source_method, status, fills, new in SOURCES:
        response = paths.get(source_path, {}).get(source_method, {}).get("responses", {}).get(status)
        if response is None:
            continue
        links = response.setdefault("links", {})
        for path, operations in paths.items():
            if set(re.findall(r"\{([^}]+)\}", path)) != set(fills) or (
                new and any(p in path for p in NEED_A_TRIAL)
            ):
                continue
            for method, operation in operations.items():
                if method in HTTP_METHODS and "operationId" in operation:
                    links[operation["operationId"]] = {
                        "operationId": operation["operationId"],
                        "parameters": {f"path.{name}": value for name, value in fills.items()},
                    }
    return schema
