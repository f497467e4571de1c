"""A population study whose stored `pbt_history` this server cannot follow (written by another
tool, by hand, or by a bug) answers 409 naming the attribute on `/population` and `/best`, lists
the trial with a `problem`, and no read is a 5xx, over real HTTP on a real SQLite study. Hypothesis
writes arbitrary JSON, history-shaped JSON and text that is not JSON into the best member's row."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.tuner.api.fixtures import live_app
from tests.tuner.api.test_population_api import MEMBERS, make_pbt_study
from tuner.api import ApiSettings, create_app
from tuner.policies.population_history import history_problem

BEST = 2  # the member whose lineage `/best` and `/population` follow (MEMBERS)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
SEGMENT = st.dictionaries(
    st.sampled_from(["step", "from_trial", "from_value", "settings", "params"]), JSON, max_size=5
)
STORED = (
    JSON.map(json.dumps)
    | st.lists(SEGMENT, max_size=3).map(json.dumps)
    | st.text(max_size=20)  # not JSON at all (mostly)
)


def served_pbt_study(tmp_path_factory, name: str) -> Iterator[dict]:
    """A live app over a pbt study on SQLite, with an engine to write its rows straight."""
    root = tmp_path_factory.mktemp(name)
    db = f"sqlite:///{root / 's.db'}"
    make_pbt_study(db, "pbt", root / "store" / "pbt")
    app = create_app(ApiSettings(db_url=db, storage_root=root / "store"))
    engine = sa.create_engine(db)
    # One client for every read: a new httpx client builds an SSL context (about 27 ms of CPU).
    with live_app(app) as url, httpx.Client(base_url=url, timeout=30) as http:
        yield {"url": url, "http": http, "engine": engine, "store": app.state.rnntune.store}
    engine.dispose()


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    yield from served_pbt_study(tmp_path_factory, "odd-history")


def store_attr(env, key: str, value_json: str | None) -> None:
    """Replace the best member's `key` row by `value_json` (None: remove it), as another tool would
    (Optuna refuses attributes on a finished trial)."""
    trial = "(SELECT trial_id FROM trials WHERE number = :n)"
    insert = f"INSERT INTO trial_user_attributes (trial_id, key, value_json) VALUES ({trial}, :k, :v)"
    delete = f"DELETE FROM trial_user_attributes WHERE key = :k AND trial_id = {trial}"
    # The new row gets an id past every other (a placeholder holds the last one meanwhile: SQLite
    # would reuse a deleted last id), which is how the API's snapshot sees a changed row at once.
    with env["engine"].begin() as conn:
        conn.execute(sa.text(insert), {"n": BEST, "k": "placeholder", "v": "null"})
        conn.execute(sa.text(delete), {"n": BEST, "k": key})
        if value_json is not None:
            conn.execute(sa.text(insert), {"n": BEST, "k": key, "v": value_json})
        conn.execute(sa.text(delete), {"n": BEST, "k": "placeholder"})
    env["store"].invalidate("pbt")


def store_history(env, value_json: str) -> None:
    store_attr(env, "pbt_history", value_json)


def _reads(env) -> dict[str, httpx.Response]:
    paths = ("/population", "/best", "/trials", f"/trials/{BEST}", "/trials.csv")
    return {path: env["http"].get("/studies/pbt" + path) for path in paths}


def _check(env, value_json: str) -> None:
    try:
        problem = history_problem(json.loads(value_json))
    except ValueError:
        problem = "not JSON"
    answers = _reads(env)
    for path, response in answers.items():
        assert response.status_code < 500, (value_json, path, response.text[:300])
    listed = {t["number"]: t for t in answers["/trials"].json()["items"]}
    assert (listed[BEST]["problem"] is not None) == (problem is not None), (value_json, listed[BEST])
    if problem is not None:
        for path in ("/population", "/best"):
            assert answers[path].status_code == 409, (value_json, path, answers[path].text)
            assert "pbt_history" in answers[path].json()["detail"], answers[path].text
        assert listed[BEST]["params"] == listed[BEST]["initial_params"]  # Optuna's, as first sampled


@pytest.mark.parametrize(
    "stored",
    [
        {"step": 0},  # not a list
        [{"step": {"a": 1}, "from_trial": None, "settings": {}}],
        [{"from_trial": None, "settings": {}}],
        [{"step": 0, "settings": 3}],
        [{"step": 0, "settings": "fast"}],
        [{"step": 0, "settings": {"learning_rate": "fast"}}],
    ],
)
def test_a_reproduced_malformed_history_is_a_409_naming_it(env, stored) -> None:
    try:
        store_history(env, json.dumps(stored))
        _check(env, json.dumps(stored))
    finally:
        store_history(env, json.dumps(MEMBERS[BEST][3]))


def test_a_history_of_5000_copies_is_followed_without_a_recursion_error(env) -> None:
    """Trial 2's history of 2,500 copies (it used to be a RecursionError, a 500 past about 1,000)."""
    settings_ = {"learning_rate": 0.002, "input_dropout": 0.1}
    two = [{"step": 0, "from_trial": None, "from_value": None, "settings": settings_}]
    two += [{"step": s, "from_trial": 1, "from_value": 4.0, "settings": settings_} for s in range(1, 5000, 2)]
    try:
        store_history(env, json.dumps(two))
        best = env["http"].get("/studies/pbt/best")
        assert best.status_code == 200, best.text
        schedule = best.json()["schedule"]  # back through trial 1's copy of trial 0 at step 100
        assert [(e["step"], e["trial"]) for e in schedule] == [(0, 0), (100, 1), (4999, 2)]
    finally:
        store_history(env, json.dumps(MEMBERS[BEST][3]))


@given(stored=STORED)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_anything_stored_as_a_history_is_no_5xx(env, stored) -> None:
    try:
        store_history(env, stored)
        _check(env, stored)
    finally:
        store_history(env, json.dumps(MEMBERS[BEST][3]))
