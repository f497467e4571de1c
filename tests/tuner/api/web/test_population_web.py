"""The study page of a population-based-training study in headless Chromium: one curve per member
with a marker per copy (hover naming the trial copied), the best member's schedule as one step
chart per setting, the trial table showing a member's settings in force (its initial ones only
labelled as such), and no Population section on a study that is not a population."""

from __future__ import annotations

from tests.tuner.api.fixtures import live_server, make_study
from tests.tuner.api.test_population_api import make_pbt_study
from tests.tuner.api.web.conftest import ARTIFACTS, WEB
from tuner.api import ApiSettings

pytestmark = WEB


def test_the_population_and_the_best_members_schedule_are_drawn(browser, tmp_path):
    db = f"sqlite:///{tmp_path / 's.db'}"
    make_pbt_study(db, "pbt", tmp_path / "store" / "pbt")
    make_study(db, "fixed", tmp_path / "store" / "fixed")
    with live_server(ApiSettings(db_url=db, storage_root=tmp_path / "store")) as url:
        page = browser.new_page(viewport={"width": 1400, "height": 2600})
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(f"{url}/web/studies/pbt")
        page.wait_for_function("window.rnntunePopulationReady === true", timeout=60_000)
        assert page.is_visible("#population-section")
        assert page.get_attribute("#population", "data-members") == "0,1,2,3,4"
        assert (
            page.get_attribute("#population", "data-copies") == "5"
        )  # #1, #2, #3, and #4 twice (its attempt #3's copy too)
        traces = page.evaluate(
            "() => document.getElementById('population').data.map((t) => [t.name, t.x.length])"
        )
        assert traces[:5] == [
            ["#0 complete 4.300", 4],
            ["#1 complete 4.100", 4],
            ["#2 complete 4", 4],
            ["#3 fail –", 2],
            ["#4 complete 4.200", 4],
        ]
        assert traces[5][0] == "copied another member"
        hovers = page.evaluate("() => document.getElementById('population').data[5].text")
        assert "trial #2 copied trial #1 at step 200 (its loss 4.300)" in hovers[1]
        widths = page.evaluate(
            "() => document.getElementById('population').data.slice(0, 5).map((t) => t.line.width)"
        )
        assert widths == [1.5, 1.5, 4, 1.5, 1.5]  # the best member, #2, drawn thick
        charts = page.evaluate(
            "() => [...document.querySelectorAll('#population-schedule .schedule-chart')]"
            ".map((d) => [d.dataset.setting, d.data[0].x, d.data[0].y])"
        )
        assert charts == [
            ["input_dropout", [0, 100, 200, 400], [0.1, 0.2, 0.25, 0.25]],
            ["learning_rate", [0, 100, 200, 400], [0.002, 0.0024, 0.0019, 0.0019]],
        ]
        assert "the best member is trial #2 (4)" in (page.text_content("#population-note") or "")
        assert '"run_dir": "runs/replay-trial-2"' in (page.text_content("#population-replay pre") or "")
        # Member #2 copied #1's model (hidden_size 24): its row shows that, its first sampled 16
        # only as the labelled initial setting.
        page.wait_for_selector("#trials td[data-initial]", timeout=60_000)
        changed = page.evaluate(
            "() => [...document.querySelectorAll('#trials td[data-initial]')]"
            ".map((td) => [td.parentElement.firstChild.textContent, td.textContent, td.dataset.initial, td.title])"
        )
        assert ["2", "24", "16", "initial setting: 16"] in changed
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "population.png"), full_page=True)
        page.goto(f"{url}/web/studies/fixed")  # not a population: the section stays hidden
        page.wait_for_function("window.rnntunePlotReady === true", timeout=60_000)
        assert not page.is_visible("#population-section")
        page.close()
    assert errors == []
