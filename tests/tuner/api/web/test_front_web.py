"""The study page of a study with two objectives and a size bound, in headless Chromium: the
Pareto front drawn with dominated and infeasible trials apart, and a click opening a trial."""

from __future__ import annotations

from tests.tuner.api.fixtures import MO_FRONT, live_server, make_mo_study
from tests.tuner.api.web.conftest import ARTIFACTS, WEB
from tuner.api import ApiSettings

pytestmark = WEB


def test_the_front_is_drawn_apart_and_a_click_opens_the_trial(browser, tmp_path):
    db = f"sqlite:///{tmp_path / 's.db'}"
    make_mo_study(db, "mo", tmp_path / "store" / "mo")
    with live_server(ApiSettings(db_url=db, storage_root=tmp_path / "store")) as url:
        page = browser.new_page(viewport={"width": 1400, "height": 2200})
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(f"{url}/web/studies/mo")
        page.wait_for_function(
            "window.rnntuneFrontReady === true && window.rnntunePlotReady === true", timeout=60_000
        )
        front = page.get_attribute("#front", "data-front")
        assert [int(n) for n in front.split(",")] == MO_FRONT
        assert page.get_attribute("#front", "data-infeasible") == "3"
        traces = page.evaluate(
            "() => document.getElementById('front').data.map((t) => [t.name, t.customdata.length])"
        )
        assert traces == [["front", 3], ["dominated", 1], ["infeasible", 1]]
        assert (
            "3 trials on the front of val_loss (minimize), num_params (minimize) under num_params<=5000"
            in (page.text_content("#front-note") or "")
        )
        page.evaluate(
            "() => document.getElementById('front').emit('plotly_click', {points: [{customdata: 2}]})"
        )
        page.wait_for_function("document.getElementById('front').dataset.opened === '2'", timeout=30_000)
        assert "trial #2" in (page.text_content("#front-info") or "")
        page.select_option("#objective", "num_params")  # the sensitivity view of the second objective
        page.wait_for_function(
            "document.getElementById('pc').data[0].dimensions.slice(-1)[0].label === 'num_params'",
            timeout=30_000,
        )
        # The note is written by its own request, which may land after the plot's.
        page.wait_for_function(
            "document.getElementById('nbhd').textContent.includes('best completed trial #4')",
            timeout=30_000,
        )
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "pareto-front.png"), full_page=True)
        page.close()
    assert errors == []
