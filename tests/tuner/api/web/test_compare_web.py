"""The comparison page in a real headless Chromium (Debian's /usr/bin/chromium driven by Playwright):
curves with bands on three budget axes, the verdict, reruns or the offer to run them, the refusal of
two tasks, and the link from the studies list."""

from __future__ import annotations

import httpx
import numpy as np
import pytest

from tests.tuner.api.fixtures import live_server
from tests.tuner.api.web.conftest import ARTIFACTS, WEB
from tests.tuner.compare_studies import make_compared
from tuner.api import ApiSettings

pytestmark = WEB


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    """`mog` (finalised: two reruns of trial 0), `lstm` (worse, never finalised), `long` (400 steps),
    `lstm2` (for the finalize button)."""
    root = tmp_path_factory.mktemp("compare-web")
    db_url = f"sqlite:///{root / 'cmp.db'}"
    rng = np.random.default_rng(4)
    mog = make_compared(db_url, "mog", root, 4.0 + 0.3 * rng.random(24), pruned=8)
    make_compared(db_url, "lstm", root, 4.3 + 0.3 * rng.random(16), cell="lstm", seconds=6.0)
    make_compared(db_url, "long", root, 4.0 + 0.3 * rng.random(5), overrides={"max_steps": 400})
    make_compared(db_url, "lstm2", root, 4.3 + 0.3 * rng.random(6), cell="lstm")
    mog.set_user_attr(
        "finalize",
        {
            "0": {
                "value": 4.01,
                "params": {},
                "reruns": [{"seed": 1, "val_loss": 4.1}, {"seed": 2, "val_loss": 4.2}],
            }
        },
    )
    mog.set_user_attr("finalize_status", {"state": "finished"})
    with live_server(ApiSettings(db_url=db_url, storage_root=root)) as base:
        yield base


def _open(browser, address, ready="window.rnntuneCompareReady === true"):
    page = browser.new_page(viewport={"width": 1400, "height": 1600})
    requests: list[str] = []
    errors: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(address)
    page.wait_for_function(ready, timeout=60_000)
    return page, requests, errors


def test_compare_page_draws_curves_with_bands_the_verdict_and_reruns(browser, url):
    page, requests, errors = _open(browser, f"{url}/web/compare?studies=mog,lstm")
    traces = page.evaluate(
        """() => document.getElementById('evp').data.map(t => ({name: t.name, n: t.x.length,
              fill: t.fill || null, first: t.x[0]}))"""
    )
    lines = [t for t in traces if not t["fill"]]
    bands = [t for t in traces if t["fill"] == "toself"]
    assert [t["name"] for t in lines] == ["mog (mogrifier_lstm)", "lstm (lstm)"]
    assert len(bands) == 2 and bands[0]["n"] == 2 * lines[0]["n"] == 48  # upper edge and lower edge back
    assert lines[0]["first"] == 1  # budget in trials
    verdict = page.locator('#verdicts li[data-pair="mog,lstm"]')
    assert verdict.get_attribute("data-state") == "separable"
    assert "mog is better than lstm by " in verdict.inner_text() and "at 16 trials" in verdict.inner_text()
    assert "at equal training steps" in verdict.inner_text()
    assert "95% percentile interval" in page.locator("#test").inner_text()
    assert "max_steps=200" in page.locator("#task").inner_text()
    assert "E[best of 16]" in page.locator("#at-n").inner_text()
    mog = page.locator('#compared tr[data-study="mog"]').inner_text()
    assert "4.150 ± 0.071 (trial #0, n=2" in mog
    lstm = page.locator('#compared tr[data-study="lstm"]')
    assert (
        "not finalised" in lstm.inner_text()
        and "rnntune finalize lstm --top 3 --seeds 3" in lstm.inner_text()
    )
    assert lstm.locator("button.finalize").count() == 1

    page.select_option("#axis", "steps")
    page.wait_for_function("document.getElementById('evp').dataset.axis === 'steps'")
    first = page.evaluate("() => document.getElementById('evp').data.filter(t => !t.fill).map(t => t.x[0])")
    assert first == pytest.approx([(24 * 200 + 8 * 50) / 24, 200.0])  # pruned trials' steps count
    page.select_option("#axis", "seconds")
    page.wait_for_function("document.getElementById('evp').dataset.axis === 'seconds'")
    first = page.evaluate("() => document.getElementById('evp').data.filter(t => !t.fill).map(t => t.x[0])")
    assert first == pytest.approx([(24 * 10 + 8 * 2.5) / 24, 6.0])
    assert page.locator("#evp .xtitle").text_content() == "trial seconds"
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "compare-page.png"), full_page=True)
    assert all(u.startswith(url) for u in requests), "the page must not load anything off-server"
    assert not errors
    page.close()


def test_two_tasks_are_refused_on_the_page_naming_the_setting(browser, url):
    page, _, errors = _open(browser, f"{url}/web/compare?studies=mog,long")
    message = page.locator("#error").inner_text()
    assert message.startswith("cannot compare: 422") and "max_steps differs (mog: 200, long: 400)" in message
    assert page.locator("#verdict-section").is_hidden() and page.locator("#curve-section").is_hidden()
    assert not errors
    page.close()


def test_studies_list_links_to_the_picker_which_compares_the_ticked_studies(browser, url):
    page, _, errors = _open(
        browser, f"{url}/web/", ready="document.querySelector('#studies tbody tr') !== null"
    )
    page.click("#compare-link")
    page.wait_for_function("window.rnntuneCompareReady === true", timeout=60_000)
    page.wait_for_selector('#picker label[data-study="lstm"] input')
    page.check('#picker label[data-study="mog"] input')
    page.check('#picker label[data-study="lstm"] input')
    page.evaluate("() => { window.rnntuneCompareReady = false; }")
    page.click("#compare")
    page.wait_for_function("window.rnntuneCompareReady === true", timeout=60_000)
    assert page.url.endswith("/web/compare?studies=mog,lstm")
    assert page.locator("#verdicts li").count() == 1
    assert not errors
    page.close()


def test_the_run_finalize_button_launches_finalize(browser, url, monkeypatch):
    """The button makes the real `POST /studies/{name}/finalize` call: the server launches
    `rnntune finalize` (whose Python cannot start here: PYTHONHOME points nowhere, an allow-listed
    variable its child inherits, so no training runs) and the study's finalize state moves on."""
    monkeypatch.setenv("PYTHONHOME", "/nonexistent")
    page, _, errors = _open(browser, f"{url}/web/compare?studies=mog,lstm2")
    row = page.locator('#compared tr[data-study="lstm2"]')
    row.locator("button.finalize").click()
    page.wait_for_function(
        "document.querySelector('#compared tr[data-study=\"lstm2\"]').textContent.includes('finalize started')"
    )
    assert "top 3, 3 seeds" in row.inner_text() and page.locator("#error").inner_text() == ""
    state = httpx.get(f"{url}/studies/lstm2/finalize", timeout=30).json()["state"]
    assert state in ("queued", "failed")  # launched; its child then died at once, as arranged
    assert not errors
    page.close()
