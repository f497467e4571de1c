"""One odd study must not take the listing down: a study whose stored attributes this server cannot
read (written by another tool, by hand, or by a bug) is listed with a `problem` naming the
attribute, answers 409 on its own page, and no read is a 5xx, over real HTTP on a real SQLite study.
Hypothesis writes arbitrary JSON into each stored attribute, the legacy ones included, and text or
bytes that are not JSON at all (straight into Optuna's column, as another tool could), which every
route of the study, `start` included, answers with a 409 naming the attribute."""

from __future__ import annotations

import contextlib
import json

import httpx
import optuna
import pytest
import sqlalchemy
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from tests.tuner.api.fixtures import live_app, make_study
from tuner.api import ApiSettings, create_app
from tuner.storage import study_attrs

# The reproduced cases (issue "Hardening, fourth round", item 4), then every declared attribute and
# the attributes studies stored before the spec existed.
REPRODUCED = [
    ("early_stopping", "asha"),
    ("sampler", ["tpe"]),
    ("study_stop", "patience"),
    ("warm_start", {"studies": 5}),
    ("widened", "x"),
    ("finalize", {"x": [1, 2]}),
]
LEGACY = ["sampler", "study_stop", "n_trials", "parallel", "scheduler", "overrides", "seed", "keep_top"]
KEYS = sorted({a.key for a in study_attrs.ALL} | set(LEGACY))
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    root = tmp_path_factory.mktemp("odd")
    db_url = f"sqlite:///{root / 's.db'}"
    storage = optuna.storages.RDBStorage(db_url)
    make_study(storage, "good", root / "storage" / "good")
    make_study(storage, "odd", root / "storage" / "odd")
    app = create_app(ApiSettings(db_url=db_url, storage_root=root / "storage"))
    # One client for every read: a new httpx client builds an SSL context (about 27 ms of CPU).
    with live_app(app) as url, httpx.Client(base_url=url, timeout=30) as http:
        yield {"url": url, "http": http, "storage": storage, "root": root, "store": app.state.rnntune.store}


def set_attr(env, key, value):
    """Write the attribute as another tool would (not through the API), then let the API read it
    now rather than after its one-second revalidation."""
    storage = env["storage"]
    storage.set_study_user_attr(storage.get_study_id_from_name("odd"), key, value)
    env["store"].invalidate("odd")


def reads(env) -> tuple[httpx.Response, httpx.Response, httpx.Response]:
    http = env["http"]
    return http.get("/studies"), http.get("/studies/odd"), http.get("/studies/odd/trials")


@pytest.fixture
def restore(env):
    """Put the odd study's attributes back as they were after each case."""
    storage = env["storage"]
    study_id = storage.get_study_id_from_name("odd")
    saved = dict(storage.get_study_user_attrs(study_id))
    yield
    for key in list(storage.get_study_user_attrs(study_id)):
        storage.set_study_user_attr(study_id, key, saved.get(key))
    for key, value in saved.items():
        storage.set_study_user_attr(study_id, key, value)
    env["store"].invalidate("odd")


@pytest.mark.usefixtures("restore")
@pytest.mark.parametrize(("key", "value"), REPRODUCED, ids=[k for k, _ in REPRODUCED])
def test_a_reproduced_odd_attribute_is_named_not_a_500(env, key, value):
    set_attr(env, key, value)
    listing, page, trials = reads(env)
    assert listing.status_code == 200, listing.text
    rows = {row["name"]: row for row in listing.json()["items"]}
    assert rows["good"]["problem"] is None and rows["good"]["n_trials"] is not None
    assert key in rows["odd"]["problem"], rows["odd"]
    assert page.status_code == 409 and key in page.json()["detail"], page.text
    assert trials.status_code < 500, trials.text


@seed(20261128)
@given(key=st.sampled_from(KEYS), value=JSON)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_any_json_in_any_attribute_is_no_5xx(env, key, value):
    storage = env["storage"]
    study_id = storage.get_study_id_from_name("odd")
    saved = storage.get_study_user_attrs(study_id).get(key)
    set_attr(env, key, value)
    try:
        listing, page, trials = reads(env)
        for response in (listing, page, trials):
            assert response.status_code < 500, (key, value, response.request.url, response.text[:300])
        assert listing.status_code == 200
        odd = next(row for row in listing.json()["items"] if row["name"] == "odd")
        assert (page.status_code == 409) == (odd["problem"] is not None), (key, value, odd, page.text)
    finally:
        set_attr(env, key, saved)


# Issue "Hardening, fifth round", items 3 and 4: values stored as text that is not JSON (or bytes,
# huge, nested past any bound) and a space_def of the wrong shape, written straight into Optuna's
# table as another tool could; every route of the study answers 409 naming the attribute, `start`
# included (it answered 202 and ran the defaults, or reset the connection), and the listing stays up.
ODD_ROUTES = (
    "",
    "/trials",
    "/trials/0",
    "/boundaries",
    "/pareto",
    "/trials.csv",
    "/best",
    "/sensitivity",
    "/importances",
)
RAW_CASES = [
    ("spec", "{not json"),
    ("spec", b"\xff\xfe not utf-8"),
    ("space_def", "[1, 2, 3"),
    ("status", "NaN garbage"),
    ("some_other_tool", "{'python': 'repr'}"),
    ("space_def", "[" * 5000 + "]" * 5000),  # deeper than json.loads recurses
    ("spec", "[" * 100 + "]" * 100),  # parses, but nested past the bound
    ("task", '"' + "a" * (5 * 1024 * 1024) + '"'),  # huge
    ("spec", "9" * 5000),  # an int longer than Python parses
]


@contextlib.contextmanager
def raw_attr(env, key: str, raw: str | bytes):
    """Store `raw` as the odd study's `key` in Optuna's own column, and put the row back after."""
    storage = env["storage"]
    sid = storage.get_study_id_from_name("odd")
    where = {"sid": sid, "key": key}
    with storage.engine.begin() as conn:
        old = conn.execute(_SELECT, where).scalar()
        conn.execute(_DELETE, where)
        conn.execute(_INSERT, {**where, "value": raw})
    env["store"].invalidate("odd")
    try:
        yield
    finally:
        with storage.engine.begin() as conn:
            conn.execute(_DELETE, where)
            if old is not None:
                conn.execute(_INSERT, {**where, "value": old})
        env["store"].invalidate("odd")


_SELECT = sqlalchemy.text("SELECT value_json FROM study_user_attributes WHERE study_id = :sid AND key = :key")
_DELETE = sqlalchemy.text("DELETE FROM study_user_attributes WHERE study_id = :sid AND key = :key")
_INSERT = sqlalchemy.text(
    "INSERT INTO study_user_attributes (study_id, key, value_json) VALUES (:sid, :key, :value)"
)


def every_route(env) -> dict[str, httpx.Response]:
    http = env["http"]
    found = {route: http.get(f"/studies/odd{route}") for route in ODD_ROUTES}
    found["listing"] = http.get("/studies")
    return found


@pytest.mark.parametrize(("key", "raw"), RAW_CASES, ids=[f"{k}-{str(r)[:12]}" for k, r in RAW_CASES])
def test_a_stored_value_that_cannot_be_read_is_a_409_on_every_route(env, key, raw):
    with raw_attr(env, key, raw):
        answers = every_route(env)
        start = env["http"].post("/studies/odd/start")
        widen = env["http"].post("/studies/odd/widen", json={"param": "learning_rate"})
    listing = answers.pop("listing")
    assert listing.status_code == 200, listing.text[:300]
    rows = {row["name"]: row for row in listing.json()["items"]}
    assert rows["good"]["problem"] is None
    assert f"attribute {key}" in (rows["odd"]["problem"] or ""), rows["odd"]
    for route, answer in {**answers, "POST /start": start, "POST /widen": widen}.items():
        assert answer.status_code == 409, (route, answer.status_code, answer.text[:300])
        assert key in answer.json()["detail"], (route, answer.text[:300])


@pytest.mark.usefixtures("restore")
def test_a_space_def_of_the_wrong_shape_is_a_409_not_a_500_on_boundaries(env):
    """Reported: `space_def = [1,2,3]` gave `/boundaries` a 500."""
    set_attr(env, "space_def", [1, 2, 3])
    answer = httpx.get(f"{env['url']}/studies/odd/boundaries", timeout=30)
    assert answer.status_code == 409 and "space_def" in answer.json()["detail"], answer.text


@pytest.mark.usefixtures("restore")
def test_a_study_whose_spec_cannot_be_read_does_not_start(env):
    """Reported: GET answered 409 "cannot be read" and `start` 202, running the defaults."""
    set_attr(env, "spec", {"n_trials": "many"})
    page = httpx.get(f"{env['url']}/studies/odd", timeout=30)
    start = httpx.post(f"{env['url']}/studies/odd/start", timeout=30)
    assert page.status_code == 409 and "spec" in page.json()["detail"], page.text
    assert start.status_code == 409 and "spec" in start.json()["detail"], start.text
    status = httpx.get(f"{env['url']}/studies", timeout=30).json()["items"]
    assert next(r for r in status if r["name"] == "odd")["status"] != "running"


# Text that is not JSON at all: arbitrary strings and bytes (filtered to those json.loads refuses),
# and JSON cut short.
NOT_JSON = st.one_of(
    st.text(max_size=40), st.binary(max_size=40), JSON.map(lambda v: json.dumps(v)[:-1])
).filter(lambda raw: not _parses(raw))


def _parses(raw: str | bytes) -> bool:
    try:
        json.loads(raw)
    except (ValueError, RecursionError):
        return False
    return True


@seed(20261129)
@given(key=st.sampled_from([*KEYS, "spec", "space_def", "not_declared"]), raw=NOT_JSON)
@settings(
    max_examples=60, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_any_text_that_is_not_json_in_any_attribute_is_a_409_never_a_5xx(env, key, raw):
    with raw_attr(env, key, raw):
        answers = every_route(env)
    assert answers["listing"].status_code == 200, answers["listing"].text[:300]
    odd = next(row for row in answers.pop("listing").json()["items"] if row["name"] == "odd")
    assert key in (odd["problem"] or ""), (key, raw, odd)
    for route, answer in answers.items():
        assert answer.status_code == 409, (key, raw, route, answer.status_code, answer.text[:300])
