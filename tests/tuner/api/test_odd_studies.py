"""One odd study must not take the listing down: a study whose stored attributes this server cannot
read (written by another tool, by hand, or by a bug) is listed with a `problem` naming the
attribute, answers 409 on its own page, and no read is a 5xx, over real HTTP on a real SQLite study.
Hypothesis writes arbitrary JSON into each stored attribute, the legacy ones included."""

from __future__ import annotations

import httpx
import optuna
import pytest
from hypothesis import HealthCheck, given, settings
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
    with live_app(app) as url:
        yield {"url": url, "storage": storage, "root": root, "store": app.state.rnntune.store}


def set_attr(env, key, value):
    """Write the attribute as another tool would (not through the API), then let the API read it
    now rather than after its one-second revalidation."""
    storage = env["storage"]
    storage.set_study_user_attr(storage.get_study_id_from_name("odd"), key, value)
    env["store"].invalidate("odd")


def reads(env) -> tuple[httpx.Response, httpx.Response, httpx.Response]:
    url = env["url"]
    return (
        httpx.get(f"{url}/studies"),
        httpx.get(f"{url}/studies/odd"),
        httpx.get(f"{url}/studies/odd/trials"),
    )


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
