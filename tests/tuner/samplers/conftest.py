"""Optuna's contract suites name cases that do not apply to some samplers (`NOT_APPLICABLE` in
test_contracts.py) and cases Optuna's own CI already runs on the same sampler (`UPSTREAM_RUNS`):
those are deselected at collection, with the reason, never skipped, so `make test` (where a skip
fails) runs exactly the cases that are rnntune's to check."""

from __future__ import annotations

import pytest

from tests.tuner.samplers.test_contracts import NOT_APPLICABLE, UPSTREAM_RUNS


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    keep, dropped = [], []
    for item in items:
        callspec = getattr(item, "callspec", None)
        function = getattr(item, "function", None)
        name = callspec.params.get("sampler") if callspec is not None else None
        suite = function.__qualname__.split(".")[0] if function is not None else None
        (dropped if (name, suite) in NOT_APPLICABLE | UPSTREAM_RUNS else keep).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep
