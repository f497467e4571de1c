"""GET /compare over a live uvicorn server on real rnntune studies: the comparison, the 422 that
names the setting two tasks differ in, 404, the read token, and the schema."""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import numpy as np
import optuna
import pytest

from tests.tuner.api.fixtures import live_server
from tests.tuner.compare_studies import make_compared
from tuner.analysis import compare
from tuner.analysis.reads import StudyStore
from tuner.api import ApiSettings


@pytest.fixture(scope="module")
def env(tmp_path_factory) -> dict:
    """`mog` (Mogrifier LSTM), `lstm` (LSTM, clearly worse), `bigger` (hidden_size 64), `few`."""
    root = tmp_path_factory.mktemp("compare-api")
    db_url = f"sqlite:///{root / 'cmp.db'}"
    rng = np.random.default_rng(1)
    make_compared(db_url, "mog", root, 4.0 + 0.3 * rng.random(24), pruned=6)
    make_compared(db_url, "lstm", root, 4.25 + 0.3 * rng.random(16), cell="lstm")
    make_compared(db_url, "bigger", root, 4.0 + 0.3 * rng.random(10), overrides={"hidden_size": 64})
    make_compared(db_url, "few", root, [4.0])
    return {"db_url": db_url, "root": root}


@pytest.fixture(scope="module")
def url(env) -> Iterator[str]:
    with live_server(ApiSettings(db_url=env["db_url"], storage_root=env["root"])) as base:
        yield base


def test_compare_answers_curves_reruns_and_the_verdict(env, url):
    response = httpx.get(f"{url}/compare", params={"studies": "mog,lstm"}, timeout=60)
    assert response.status_code == 200, response.text
    result = response.json()
    assert [s["name"] for s in result["studies"]] == ["mog", "lstm"]
    (verdict,) = result["verdicts"]
    assert verdict["state"] == "separable" and verdict["trials"]["better"] == "mog" and verdict["n"] == 16
    assert result["studies"][0]["finalize"]["run"]["path"] == "/studies/mog/finalize"
    store = StudyStore(env["db_url"])
    try:
        direct = compare.compare(store, ["mog", "lstm"])
    finally:
        store.close()
    assert result == direct  # one computation, fixed bootstrap seed: the API serves exactly it
    again = httpx.get(f"{url}/compare", params={"studies": "mog,lstm"}, timeout=60)
    assert again.json() == result  # from the cache: the same answer


def test_studies_of_different_tasks_are_a_422_naming_the_setting(url):
    response = httpx.get(f"{url}/compare", params={"studies": "mog,bigger"}, timeout=60)
    assert response.status_code == 422
    detail = response.json()["detail"]
    assert "hidden_size differs (mog: 48, bigger: 64)" in detail and "the cell may differ" in detail


@pytest.mark.parametrize(
    ("studies", "status", "message"),
    [
        ("mog", 422, "query.studies: String should match pattern"),
        ("mog,lstm,mog,lstm,mog,lstm,mog,lstm,mog", 422, "query.studies: String should match pattern"),
        ("mog, lstm", 422, "query.studies: String should match pattern"),
        ("mog,mog", 422, "each study once"),
        ("mog,nope", 404, "no study named 'nope'"),
        ("nope,nope", 404, "no study named 'nope'"),
    ],
)
def test_bad_study_lists(url, studies, status, message):
    response = httpx.get(f"{url}/compare", params={"studies": studies}, timeout=60)
    assert response.status_code == status and message in response.json()["detail"]


def test_missing_query_is_a_422_naming_it(url):
    response = httpx.get(f"{url}/compare", timeout=60)
    assert response.status_code == 422 and "query.studies" in response.json()["detail"]


def test_too_few_trials_answer_without_a_verdict(url):
    (verdict,) = httpx.get(f"{url}/compare", params={"studies": "mog,few"}, timeout=60).json()["verdicts"]
    assert verdict["state"] == "insufficient" and verdict["n"] is None


def test_reads_need_the_read_token_when_one_is_set(env):
    settings = ApiSettings(db_url=env["db_url"], storage_root=env["root"], read_token="r-token")
    with live_server(settings) as base:
        assert httpx.get(f"{base}/compare", params={"studies": "mog,lstm"}).status_code == 401
        ok = httpx.get(
            f"{base}/compare",
            params={"studies": "mog,lstm"},
            headers={"Authorization": "Bearer r-token"},
            timeout=60,
        )
        assert ok.status_code == 200
        page = httpx.get(f"{base}/web/compare")  # the page carries no data and stays open
        assert page.status_code == 200 and "compare.js" in page.text


def test_compare_is_in_the_openapi_schema(url):
    schema = httpx.get(f"{url}/openapi.json").json()
    operation = schema["paths"]["/compare"]["get"]
    assert {"200", "404", "422"} <= set(operation["responses"])
    assert operation["parameters"][0]["name"] == "studies"
    assert "/web/compare" not in schema["paths"]


def test_reruns_stored_later_show_in_the_next_answer(env, url):
    """A comparison is kept per study version; new reruns (a study attr) make a new version."""
    first = httpx.get(f"{url}/compare", params={"studies": "mog,lstm"}, timeout=60).json()
    assert first["studies"][1]["finalize"]["best"] is None
    study = optuna.load_study(study_name="lstm", storage=env["db_url"])
    study.set_user_attr(
        "finalize", {"2": {"value": 4.3, "params": {}, "reruns": [{"seed": 1, "val_loss": 4.4}]}}
    )
    deadline = time.monotonic() + 10
    while True:
        answer = httpx.get(f"{url}/compare", params={"studies": "mog,lstm"}, timeout=60).json()
        if answer["studies"][1]["finalize"]["best"] is not None or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    best = answer["studies"][1]["finalize"]["best"]
    assert (
        best is not None
        and best["trial"] == 2
        and best["val_loss_mean"] == 4.4
        and best["val_loss_sd"] is None
    )
    assert answer["verdicts"] == first["verdicts"]  # the trials did not change, nor their bootstrap
