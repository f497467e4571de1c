"""Every trial attribute rnntune declares (tuner.storage.trial_attrs), stored with any JSON value or
with text that is not JSON (another tool, a hand edit, an older rnntune), never makes a read a 5xx:
over real HTTP on a real SQLite study, Hypothesis (seed fixed) writes the best trial's row straight
into Optuna's table, then reads every route that shows trials."""

from __future__ import annotations

import json

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from tests.tuner.api.test_population_odd_history import BEST, JSON, served_pbt_study, store_attr
from tuner.storage import trial_attrs

KEYS = [attr.key for attr in trial_attrs.ALL]
STORED = JSON.map(json.dumps) | st.text(max_size=20)  # the second mostly not JSON at all
ROUTES = ("", "/trials", f"/trials/{BEST}", "/best", "/trials.csv", "/sensitivity", "/pareto", "/population")


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    yield from served_pbt_study(tmp_path_factory, "odd-trial-attrs")


def original(env, key: str) -> str | None:
    trial = "(SELECT trial_id FROM trials WHERE number = :n)"
    query = f"SELECT value_json FROM trial_user_attributes WHERE key = :k AND trial_id = {trial}"
    with env["engine"].connect() as conn:
        return conn.execute(sa.text(query), {"n": BEST, "k": key}).scalar()


@seed(20261129)
@settings(
    max_examples=120,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(key=st.sampled_from(KEYS), value_json=STORED)
def test_any_value_in_any_trial_attribute_is_never_a_5xx(env, key, value_json) -> None:
    kept = original(env, key)
    try:
        store_attr(env, key, value_json)
        for route in ROUTES:
            response = env["http"].get(f"/studies/pbt{route}")
            assert response.status_code < 500, (key, value_json, route, response.text[:300])
    finally:
        store_attr(env, key, kept)


@pytest.mark.parametrize(("key", "value"), [("wall_time_s", {"a": 1}), ("retry_of", 1.5), ("retry_of", "x")])
def test_a_reproduced_odd_typed_column_is_no_500_on_the_export(env, key, value) -> None:
    """Found by the test above in CI: a `wall_time_s` stored as a dict made `/trials.csv` a 500."""
    kept = original(env, key)
    try:
        store_attr(env, key, json.dumps(value))
        response = env["http"].get("/studies/pbt/trials.csv")
        assert response.status_code == 200, response.text[:300]
    finally:
        store_attr(env, key, kept)
