"""Property-based run of the OpenAPI schema (schemathesis) against the live app: no 5xx, ever.

Every operation gets schema-conforming (positive) and schema-violating (negative) requests. They
carry the write token, so POST bodies reach validation and `create_study`; the database holds only a
finished study, so no generated request can launch a sweep. (Schemathesis' own pytest plugin does
not run under pytest 9 yet, hence the plain Hypothesis loop over its strategies.)
"""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode

from tests.tuner.api.fixtures import live_server, make_study
from tuner.api import ApiSettings

TOKEN = "fuzz-token"
EXAMPLES = 20


@pytest.fixture(scope="module")
def fuzz_url(tmp_path_factory):
    root = tmp_path_factory.mktemp("fuzz")
    db_url = f"sqlite:///{root / 's.db'}"
    make_study(db_url, "fixed", root / "storage" / "fixed")
    api = ApiSettings(db_url=db_url, storage_root=root / "storage", api_token=TOKEN)
    with live_server(api) as url:
        yield url


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_no_request_gets_a_5xx(fuzz_url, mode):
    schema = schemathesis.openapi.from_url(f"{fuzz_url}/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 10
    seen: dict[str, set[int]] = {}
    codes: set[int] = set()

    for operation, strategy in _strategies(operations, mode):

        @given(case=strategy)
        @settings(
            max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None
        )
        def run(case):
            response = case.call(base_url=fuzz_url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)
            seen.setdefault(operation.label, set()).add(response.status_code)  # noqa: B023 (run() is called in this iteration)
            codes.add(response.status_code)
            assert response.status_code < 500, f"{case.method} {case.formatted_path}: {response.text[:300]}"

        run()
    assert len(seen) == len(operations)
    expected = {200, 201, 404, 409, 422} if mode == GenerationMode.POSITIVE else {404, 422}
    assert expected <= codes, f"the run reached only {sorted(codes)}"


def _with_tiny_space(case):
    if isinstance(case.body, dict):
        case.body["space"] = "tiny"
    return case


def _strategies(operations, mode):
    """Each operation as generated, plus: on the existing study `fixed` (so query parameters meet a
    real study), and POST /studies with a real space name (so bodies reach `create_study`)."""
    for operation in operations:
        yield operation, operation.as_strategy(generation_mode=mode)
        # Negating a request whose only parameter is the pinned name is impossible: skip those.
        if "{name}" in operation.path and (mode == GenerationMode.POSITIVE or len(operation.query)):
            yield operation, operation.as_strategy(generation_mode=mode, path_parameters={"name": "fixed"})
        if operation.label == "POST /studies":
            yield operation, operation.as_strategy(generation_mode=mode).map(_with_tiny_space)
