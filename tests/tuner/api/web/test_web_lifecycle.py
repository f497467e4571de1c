"""The study page's lifecycle actions in a real headless Chromium: the warm-start line linking its
source, and "Widen and continue" on a boundary alert (widen through the API, then a real sweep)."""

from __future__ import annotations

import time

import httpx
import pytest

from tests.conftest import TINY_SETTINGS
from tests.tuner.api.fixtures import live_server
from tests.tuner.api.web.conftest import ARTIFACTS, WEB
from tests.tuner.api.web.test_web import _page
from tests.tuner.edge_study import edge_study
from tuner.api import ApiSettings
from tuner.storage.study import load_study
from tuner.sweeps.study.create import create_study

pytestmark = WEB


@pytest.fixture
def studies(tmp_path):
    db = f"sqlite:///{tmp_path / 'life.db'}"
    edge_study(db, "edgy", tmp_path / "storage", **TINY_SETTINGS)
    create_study(
        "wt2",
        storage_url=db,
        space="tiny",
        n_trials=4,
        storage_path=tmp_path / "storage" / "wt2",
        warm_start="edgy",
    )
    with live_server(ApiSettings(db_url=db, storage_root=tmp_path / "storage")) as url:
        yield url, db


def test_warm_started_study_links_its_source(browser, studies):
    url, _ = studies
    page, _, errors = _page(browser, url)
    page.goto(f"{url}/web/studies/wt2")
    page.wait_for_selector("#warm-start:not([hidden])", timeout=30_000)
    assert page.locator("#warm-start").inner_text() == "warm-started from edgy (10 trials)"
    assert page.locator("#warm-start a").get_attribute("href") == "/web/studies/edgy"
    page.click("#warm-start a")
    page.wait_for_selector("#alerts li", timeout=30_000)
    assert page.locator("#name").inner_text() == "edgy" and page.locator("#warm-start").is_hidden()
    assert not errors
    page.close()


def test_widen_and_continue_widens_the_range_and_runs_the_sweep(browser, studies, joined_ray, monkeypatch):
    url, db = studies
    monkeypatch.setenv("RAY_ADDRESS", joined_ray["RAY_ADDRESS"])  # the API passes RAY_* to its sweeps
    before = {t.number: (t.state, t.params, t.value) for t in load_study("edgy", db).trials}
    page, _, errors = _page(browser, url)
    page.goto(f"{url}/web/studies/edgy")
    button = page.locator('#alerts li[data-param="learning_rate"][data-edge="low"] button.widen')
    button.wait_for(timeout=30_000)
    assert page.locator("#widen-trials").input_value() == "5"  # a finished study: half its count again
    page.fill("#widen-trials", "1")
    button.click()
    page.wait_for_function(
        "document.getElementById('widen-note').textContent.includes('sweep started')", timeout=30_000
    )
    assert "learning_rate widened to [5.00e-4, 0.004000]" in page.locator("#widen-note").inner_text()
    page.wait_for_selector("#widened li", timeout=30_000)
    assert (
        page.locator("#widened li")
        .inner_text()
        .startswith(
            "learning_rate: low edge widened from [0.001000, 0.004000] to [5.00e-4, 0.004000] after 10 trials"
        )
    )
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "study-page-widened.png"), full_page=True)
    deadline = time.monotonic() + 240
    while (study := httpx.get(f"{url}/studies/edgy").json())["status"] not in ("finished", "failed"):
        assert time.monotonic() < deadline, f"the continued sweep did not end: {study}"
        time.sleep(1)
    assert study["status"] == "finished" and study["n_trials"] == 11, study
    trials = load_study("edgy", db).trials
    assert {t.number: (t.state, t.params, t.value) for t in trials[:10]} == before  # the old ones untouched
    assert trials[10].distributions["learning_rate"].low == 0.0005  # sampled from the wider range
    assert not errors
    page.close()
