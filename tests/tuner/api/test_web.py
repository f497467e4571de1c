"""The web view in a real headless Chromium (Debian's /usr/bin/chromium driven by Playwright)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from playwright import sync_api as playwright

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]  # fmt: skip
ARTIFACTS = Path(__file__).resolve().parents[3] / "test-artifacts"

pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} is not installed")


@pytest.fixture(scope="module")
def browser():
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        yield browser
        browser.close()


def _page(browser, server):
    page = browser.new_page(viewport={"width": 1400, "height": 1800})
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    return page, requests, errors


def test_study_page_plots_one_line_per_completed_trial(browser, server):
    page, requests, errors = _page(browser, server)
    page.goto(f"{server}/web/studies/fixed")
    page.wait_for_function("window.rnntunePlotReady === true", timeout=30_000)
    trace = page.evaluate(
        """() => { const t = document.getElementById('pc').data[0];
                   return {type: t.type, lengths: t.dimensions.map(d => d.values.length),
                           labels: t.dimensions.map(d => d.label), colours: t.line.color}; }"""
    )
    assert trace["type"] == "parcoords"
    assert trace["lengths"] == [7, 7, 7, 7]  # 7 COMPLETE trials; pruned, failed, running left out
    assert trace["labels"][0] == "learning_rate (log)" and trace["labels"][-1] == "objective"
    assert sorted(trace["colours"]).count(1.0) == 3  # the best and its two neighbours in red
    assert page.locator("#pc .parcoords .axis").count() == 4
    page.wait_for_selector("#trials tbody tr")
    assert page.locator("#trials tbody tr").count() == 10
    page.wait_for_selector("#importances .bars path")
    assert "2 of 6 other completed trials" in page.locator("#nbhd").inner_text()
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "study-page.png"), full_page=True)
    assert (ARTIFACTS / "study-page.png").stat().st_size > 10_000
    assert all(url.startswith(server) for url in requests), "the page must not load anything off-server"
    assert not errors
    page.close()


def test_hovering_a_line_shows_its_trial(browser, server):
    page, _, errors = _page(browser, server)
    page.goto(f"{server}/web/studies/fixed")
    page.wait_for_function("window.rnntunePlotReady === true", timeout=30_000)
    page.evaluate(
        """() => { const div = document.getElementById('pc');
                   div.emit('plotly_hover', {curveNumber: div.data[0].dimensions[0].values.length - 1}); }"""
    )
    page.wait_for_function("document.getElementById('hover-info').textContent.startsWith('trial #')")
    info = page.locator("#hover-info").inner_text()
    assert "trial #3" in info and "learning_rate=" in info  # the last line drawn is neighbour #3
    assert not errors
    page.close()


def test_studies_list_shows_status_and_best(browser, server):
    page, requests, errors = _page(browser, server)
    page.goto(f"{server}/web/")
    page.wait_for_selector("#studies tbody tr")
    row = page.locator('#studies tr[data-study="fixed"]')
    assert "finished" in row.inner_text() and "4" in row.locator("td").nth(9).inner_text()
    assert page.locator("#studies tbody tr").count() == 4
    assert all(url.startswith(server) for url in requests)
    assert not errors
    page.close()


def test_study_page_refreshes_while_the_sweep_runs(browser, study_env, tmp_path):
    """A `running` study gains a completed trial while the page is open: the plot redraws with it."""
    import optuna

    from tests.tuner.api.fixtures import FIXED_TRIALS, SPACE, live_server, make_study
    from tuner.api import ApiSettings

    db_url = f"sqlite:///{tmp_path / 'live.db'}"
    study = make_study(db_url, "live", tmp_path / "storage" / "live", trials=FIXED_TRIALS[:4], status="running")
    from tuner.lease import acquire, lease_engine, new_owner

    acquire(lease_engine(db_url), "live", new_owner())  # a live driver holds the study: it is running
    with live_server(ApiSettings(db_url=db_url, storage_root=tmp_path / "storage")) as url:
        page, _, errors = _page(browser, url)
        page.goto(f"{url}/web/studies/live")
        page.wait_for_function("document.getElementById('pc')?.data?.[0]?.dimensions[0].values.length === 4",
                               timeout=30_000)
        study.add_trial(optuna.trial.create_trial(
            params={"learning_rate": 0.003, "input_dropout": 0.2, "mogrifier_rounds": 6},
            distributions=SPACE, value=4.6))
        page.wait_for_function("document.getElementById('pc').data[0].dimensions[0].values.length === 5",
                               timeout=20_000)
        assert "complete: 5" in page.locator("#facts").inner_text()
        assert not errors
        page.close()


def test_openapi_docs_render_offline(browser, server):
    """/docs is Swagger UI served by the app itself: it renders every operation, loading nothing
    from other hosts."""
    page, requests, errors = _page(browser, server)
    page.goto(f"{server}/docs")
    page.wait_for_selector(".opblock-summary-path", timeout=30_000)
    paths = page.locator(".opblock-summary-path").all_inner_texts()
    assert any("/studies/{name}/sensitivity" in p for p in paths) and len(paths) >= 11
    assert all(url.startswith(server) for url in requests), [u for u in requests if not u.startswith(server)]
    assert not errors
    page.close()


def test_download_button_saves_the_best_checkpoint(browser, server):
    from tests.tuner.api.conftest import CHECKPOINT_BYTES

    page, _, errors = _page(browser, server)
    page.goto(f"{server}/web/studies/fixed")
    page.wait_for_selector("#download:not([disabled])")
    with page.expect_download() as info:
        page.click("#download")
    download = info.value
    assert download.suggested_filename == "fixed-trial0-best.pt"
    assert open(download.path(), "rb").read() == CHECKPOINT_BYTES
    assert not errors
    page.close()
