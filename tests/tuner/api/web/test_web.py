"""The web view in a real headless Chromium (Debian's /usr/bin/chromium driven by Playwright)."""

from __future__ import annotations

from pathlib import Path

from tests.tuner.api.web.conftest import ARTIFACTS, WEB

pytestmark = WEB


def _page(browser, server):
    page = browser.new_page(viewport={"width": 1400, "height": 1800})
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    return page, requests, errors


def test_study_page_plots_one_line_per_completed_and_pruned_trial(browser, server):
    page, requests, errors = _page(browser, server)
    page.goto(f"{server}/web/studies/fixed")
    page.wait_for_function("window.rnntunePlotReady === true", timeout=30_000)
    trace = page.evaluate(
        """() => { const t = document.getElementById('pc').data[0];
                   return {type: t.type, lengths: t.dimensions.map(d => d.values.length),
                           labels: t.dimensions.map(d => d.label), colours: t.line.color}; }"""
    )
    assert trace["type"] == "parcoords"
    assert trace["lengths"] == [8, 8, 8, 8]  # 7 COMPLETE trials and the PRUNED one; failed, running left out
    assert trace["labels"][0] == "learning_rate (log)" and trace["labels"][-1] == "objective"
    assert sorted(trace["colours"]).count(1.0) == 3  # the best and its two neighbours in red
    assert "7 completed, 1 pruned" in page.locator("#pc-counts").inner_text()
    assert page.locator("#pc .parcoords .axis").count() == 4
    page.wait_for_selector("#trials tbody tr")
    assert page.locator("#trials tbody tr").count() == 10
    page.wait_for_selector("#importances .bars path")
    nbhd = page.locator("#nbhd").inner_text()
    assert "2 completed and 1 pruned of 7 other trials" in nbhd
    assert "within ±7.5% (a window of 15% in all)" in nbhd  # thesis App. 2.B, said on the page
    assert page.locator("#window-width").inner_text() == "15%"
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "study-page.png"), full_page=True)
    page.fill("#fraction", "0.15")
    page.dispatch_event("#fraction", "change")
    page.wait_for_function("document.getElementById('nbhd').textContent.includes('±15%')", timeout=30_000)
    assert page.locator("#window-width").inner_text() == "30%"
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
    study = make_study(
        db_url, "live", tmp_path / "storage" / "live", trials=FIXED_TRIALS[:4], status="running"
    )
    from tuner.storage.lease import acquire, lease_engine, new_owner

    acquire(lease_engine(db_url), "live", new_owner())  # a live driver holds the study: it is running
    with live_server(ApiSettings(db_url=db_url, storage_root=tmp_path / "storage")) as url:
        page, _, errors = _page(browser, url)
        page.goto(f"{url}/web/studies/live")
        page.wait_for_function(
            "document.getElementById('pc')?.data?.[0]?.dimensions[0].values.length === 4", timeout=30_000
        )
        study.add_trial(
            optuna.trial.create_trial(
                params={"learning_rate": 0.003, "input_dropout": 0.2, "mogrifier_rounds": 6},
                distributions=SPACE,
                value=4.6,
            )
        )
        page.wait_for_function(
            "document.getElementById('pc').data[0].dimensions[0].values.length === 5", timeout=20_000
        )
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
    assert Path(download.path()).read_bytes() == CHECKPOINT_BYTES
    assert not errors
    page.close()


def test_study_page_draws_pruned_trials_and_importance_intervals(browser, tmp_path):
    """An ASHA-shaped study (6 COMPLETE, 54 PRUNED): grey lines with their step in the hover, the
    COMPLETE-only switch, importances with whiskers and the trials and step they rest on."""
    from tests.tuner.api.fixtures import live_server
    from tests.tuner.api.pruned_study import asha_study
    from tuner.api import ApiSettings

    db_url = f"sqlite:///{tmp_path / 'asha.db'}"
    asha_study(db_url, "asha")
    with live_server(ApiSettings(db_url=db_url, storage_root=tmp_path)) as url:
        page, requests, errors = _page(browser, url)
        page.goto(f"{url}/web/studies/asha")
        page.wait_for_function(
            "window.rnntunePlotReady === true && window.rnntuneImportancesReady === true", timeout=60_000
        )
        trace = page.evaluate(
            """() => { const t = document.getElementById('pc').data[0];
                       return {n: t.dimensions[0].values.length, colours: t.line.color,
                               ticks: t.line.colorbar.ticktext}; }"""
        )
        assert trace["n"] == 60 and trace["colours"].count(0.0) >= 50  # the pruned ones, grey
        assert "pruned" in trace["ticks"]
        assert "6 completed, 54 pruned" in page.locator("#pc-counts").inner_text()
        assert page.locator("#pc").get_attribute("data-pruned") == "54"

        # hover the first line drawn: a pruned trial, with the step it was stopped at
        page.evaluate("() => document.getElementById('pc').emit('plotly_hover', {curveNumber: 0})")
        page.wait_for_function("document.getElementById('hover-info').textContent.startsWith('trial #')")
        assert "PRUNED at step 50" in page.locator("#hover-info").inner_text()

        bars = page.evaluate(
            """() => { const t = document.getElementById('importances').data[0];
                       return {names: t.y, x: t.x, plus: t.error_x.array, minus: t.error_x.arrayminus}; }"""
        )
        assert bars["names"][-1] == "learning_rate"  # drawn bottom-up: the most important at the top
        assert all(p >= 0 for p in bars["plus"]) and all(m >= 0 for m in bars["minus"])
        assert any(p > 0 for p in bars["plus"] + bars["minus"])
        page.wait_for_selector("#importances .errorbar")
        basis = page.locator("#imp-basis").inner_text()
        assert "21 trials (6 completed, 15 pruned) compared at step 100" in basis
        assert "90% bootstrap interval" in basis
        assert "pruned" in page.locator("#nbhd").inner_text()
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "study-page-pruned.png"), full_page=True)

        page.check("#complete-only")
        page.wait_for_function(
            "document.getElementById('pc').data[0].dimensions[0].values.length === 6", timeout=30_000
        )
        page.wait_for_function(
            "document.getElementById('importances').dataset.step === 'objective'", timeout=60_000
        )
        assert page.locator("#pc").get_attribute("data-pruned") == "0"
        assert (
            "6 trials (6 completed, 0 pruned) compared at their final objective"
            in page.locator("#imp-basis").inner_text()
        )
        assert "pruned" not in page.locator("#nbhd").inner_text()
        page.screenshot(path=str(ARTIFACTS / "study-page-complete-only.png"), full_page=True)
        assert all(u.startswith(url) for u in requests), "the page must not load anything off-server"
        assert not errors
        page.close()


def test_study_page_shows_boundary_alerts_reruns_and_exports(browser, tmp_path):
    """Best trials at the low learning-rate bound raise an alert; stored reruns fill the finalisation
    table (mean ± sd, the winner by rerun mean marked); the CSV button downloads the trials table."""
    from tests.tuner.api.fixtures import live_server, make_edge_study
    from tuner.api import ApiSettings

    db_url = f"sqlite:///{tmp_path / 'extras.db'}"
    study = make_edge_study(db_url, "extras", tmp_path / "storage" / "extras")
    trials = study.trials
    study.set_user_attr(
        "finalize",
        {
            "0": {
                "value": 4.0,
                "params": trials[0].params,
                "reruns": [{"seed": 1, "val_loss": 4.3}, {"seed": 2, "val_loss": 4.5}],
            },
            "1": {
                "value": 4.05,
                "params": trials[1].params,
                "reruns": [{"seed": 1, "val_loss": 4.1}, {"seed": 2, "val_loss": 4.2}],
            },
        },
    )
    study.set_user_attr("finalize_status", {"state": "finished"})
    study.set_user_attr("spec", {"version": 1, "keep_top": 3})  # read through the sweep spec
    study.set_user_attr("checkpoint_bytes", 5 * 2**20)
    study.set_user_attr(
        "ended_early", "the best (4.0000) has not improved by more than 0 in 5 trials (--patience 5)"
    )
    with live_server(ApiSettings(db_url=db_url, storage_root=tmp_path / "storage")) as url:
        page, _, errors = _page(browser, url)
        page.goto(f"{url}/web/studies/extras")
        page.wait_for_selector("#alerts li", timeout=30_000)
        alert = page.locator("#alerts li")
        assert alert.count() == 1 and alert.get_attribute("data-param") == "learning_rate"
        assert "low bound 0.001" in alert.inner_text()
        page.wait_for_selector("#finalize tbody tr", timeout=30_000)
        rows = page.locator("#finalize tbody tr")
        assert rows.count() == 2
        assert page.locator("#finalize tr.winner").get_attribute("data-trial") == "1"  # 4.15 beats 4.4
        facts = page.locator("#facts").inner_text()
        assert "checkpoints: 5.0 MiB on disk, weights of the best 3 kept" in facts
        assert "ended early: the best (4.0000) has not improved" in facts
        assert "4.150 ± 0.071" in rows.nth(0).inner_text()  # best rerun mean first
        assert "4.400 ± 0.14" in page.locator('#finalize tr[data-trial="0"]').inner_text()
        with page.expect_download() as download:
            page.click("#export-csv")
        path = download.value.path()
        assert download.value.suggested_filename == "extras-trials.csv"
        assert len(Path(path).read_text().strip().splitlines()) == 1 + len(trials)
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "study-page-alerts-reruns.png"), full_page=True)
        assert not errors
        page.close()
