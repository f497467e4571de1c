"""Every trial attribute rnntune declares (tuner.storage.trial_attrs), stored with any JSON value or
with text that is not JSON (another tool, a hand edit, an older rnntune), never makes a read a 5xx:
over real HTTP on a real SQLite study, Hypothesis (seed fixed) writes the best trial's row straight
into Optuna's table, then reads every route that shows trials."""

from __future__ import annotations

import json

import httpx
import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from tests.tuner.api.fixtures import live_app
from tests.tuner.api.test_population_api import make_pbt_study
from tuner.api import ApiSettings, create_app
from tuner.storage import trial_attrs

BEST = 2  # the best COMPLETE member of MEMBERS
KEYS = [attr.key for attr in trial_attrs.ALL]
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
STORED = JSON.map(json.dumps) | st.text(max_size=20)  # the second mostly not JSON at all
ROUTES = ("", "/trials", f"/trials/{BEST}", "/best", "/trials.csv", "/sensitivity", "/pareto", "/population")


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    root = tmp_path_factory.mktemp("odd-trial-attrs")
    db = f"sqlite:///{root / 's.db'}"
    make_pbt_study(db, "pbt", root / "store" / "pbt")
    app = create_app(ApiSettings(db_url=db, storage_root=root / "store"))
    engine = sa.create_engine(db)
    with live_app(app) as url:
        yield {"url": url, "engine": engine, "store": app.state.rnntune.store}
    engine.dispose()


def store(env, key: str, value_json: str | None) -> None:
    """Replace the best trial's `key` row by `value_json` (None: remove it), as another tool would
    (Optuna refuses attributes on a finished trial); the new row's id is past every other, which is
    how the API's snapshot sees a changed row at once."""
    trial = "(SELECT trial_id FROM trials WHERE number = :n)"
    insert = f"INSERT INTO trial_user_attributes (trial_id, key, value_json) VALUES ({trial}, :k, :v)"
    delete = f"DELETE FROM trial_user_attributes WHERE key = :k AND trial_id = {trial}"
    with env["engine"].begin() as conn:
        conn.execute(sa.text(insert), {"n": BEST, "k": "placeholder", "v": "null"})
        conn.execute(sa.text(delete), {"n": BEST, "k": key})
        if value_json is not None:
            conn.execute(sa.text(insert), {"n": BEST, "k": key, "v": value_json})
        conn.execute(sa.text(delete), {"n": BEST, "k": "placeholder"})
    env["store"].invalidate("pbt")


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
        store(env, key, value_json)
        for route in ROUTES:
            response = httpx.get(f"{env['url']}/studies/pbt{route}", timeout=30)
            assert response.status_code < 500, (key, value_json, route, response.text[:300])
    finally:
        store(env, key, kept)
