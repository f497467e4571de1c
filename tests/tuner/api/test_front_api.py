"""GET /studies/{name}/pareto and `best` by trial number or by a rule on the front, over real HTTP
on a study of two objectives under a size bound (tests/tuner/api/fixtures.py `make_mo_study`)."""

from __future__ import annotations

import httpx
import pytest

from tests.tuner.api.fixtures import MO_FRONT, MO_TRIALS, live_server, make_mo_study
from tuner.api import ApiSettings


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    root = tmp_path_factory.mktemp("front")
    db = f"sqlite:///{root / 's.db'}"
    make_mo_study(db, "mo", root / "store" / "mo")
    with live_server(ApiSettings(db_url=db, storage_root=root / "store")) as served:
        yield served


def test_the_front_is_the_non_dominated_feasible_complete_trials(url):
    body = httpx.get(f"{url}/studies/mo/pareto", timeout=30).json()
    assert body["front"] == MO_FRONT  # ordered by the first objective: 3.9, 4.2, 4.6
    by_number = {t["number"]: t for t in body["trials"]}
    assert sorted(by_number) == [0, 1, 2, 3, 4]  # #5 was pruned
    assert by_number[3]["feasible"] is False and by_number[3]["on_front"] is False  # best loss, too big
    assert by_number[1]["feasible"] is True and by_number[1]["on_front"] is False  # dominated by #2
    assert by_number[2]["values"] == {"val_loss": MO_TRIALS[2][0], "num_params": MO_TRIALS[2][1]}
    assert by_number[2]["measures"]["tokens_per_s"] == 1000.0


@pytest.mark.parametrize(
    ("rule", "chosen"),
    [
        ("lowest:val_loss", 0),
        ("lowest:num_params", 4),
        ("highest:num_params", 0),
        ("lowest:val_loss@num_params<=3500", 2),
        ("lowest:val_loss@num_params<=1000", None),
    ],
)
def test_a_rule_picks_from_the_front(url, rule, chosen):
    body = httpx.get(f"{url}/studies/mo/pareto", params={"rule": rule}, timeout=30).json()
    assert body["chosen"] == chosen
    best = httpx.get(f"{url}/studies/mo/best", params={"rule": rule}, timeout=30)
    assert best.status_code == (200 if chosen is not None else 404)
    if chosen is not None:
        assert best.json()["number"] == chosen


def test_best_takes_a_trial_number_and_refuses_what_it_cannot_serve(url):
    assert httpx.get(f"{url}/studies/mo/best", params={"trial": 1}, timeout=30).json()["number"] == 1
    assert httpx.get(f"{url}/studies/mo/best", timeout=30).json()["number"] == 0  # #3 is lower but too big
    pruned = httpx.get(f"{url}/studies/mo/best", params={"trial": 5}, timeout=30)
    assert pruned.status_code == 409 and "PRUNED" in pruned.text
    assert httpx.get(f"{url}/studies/mo/best", params={"trial": 99}, timeout=30).status_code == 404
    both = httpx.get(f"{url}/studies/mo/best", params={"trial": 1, "rule": "lowest:val_loss"}, timeout=30)
    assert both.status_code == 422
    bad = httpx.get(f"{url}/studies/mo/best", params={"rule": "smallest:size"}, timeout=30)
    assert bad.status_code == 422 and "lowest:NAME" in bad.text
    checkpoint = httpx.get(
        f"{url}/studies/mo/best/checkpoint", params={"rule": "lowest:num_params"}, timeout=30
    )
    assert checkpoint.status_code == 404  # trial 4 has no checkpoint on disk: said, not served


def test_the_python_api_picks_the_same_trials(tmp_path):
    from tuner import python_api

    db = f"sqlite:///{tmp_path / 's.db'}"
    make_mo_study(db, "mo", tmp_path / "mo")
    assert python_api.best("mo", db=db)["number"] == 0  # the best feasible, as GET .../best
    assert python_api.best("mo", db=db, rule="lowest:val_loss@num_params<=3500")["number"] == 2
    assert python_api.best("mo", db=db, trial=1)["number"] == 1
    assert python_api.best("mo", db=db, rule="lowest:val_loss@num_params<=1000") is None
    with pytest.raises(ValueError, match="not a COMPLETE trial"):
        python_api.best("mo", db=db, trial=5)


def test_the_study_page_names_its_best_feasible_trial(url):
    study = httpx.get(f"{url}/studies/mo", timeout=30).json()
    assert study["best_trial"]["number"] == 0 and study["best_value"] == MO_TRIALS[0][0]


@pytest.mark.parametrize("path", ["sensitivity", "importances", "plots/parallel-coordinates"])
def test_the_sensitivity_view_is_per_objective(url, path):
    """`objective=num_params`: the analysis of the study's second objective: its best trial is the
    smallest model (#4), PRUNED trials are left out; an unknown measure is a 422."""
    base = httpx.get(f"{url}/studies/mo/{path}", timeout=60).json()
    sized = httpx.get(f"{url}/studies/mo/{path}", params={"objective": "num_params"}, timeout=60)
    assert sized.status_code == 200, sized.text
    body = sized.json()
    if path == "sensitivity":
        assert (base["best"]["number"], body["best"]["number"]) == (3, 4)
        assert body["best"]["value"] == 2000 and body["n_pruned"] == 0
    elif path == "importances":
        assert body["n_trials"] == 5
    else:
        labels = [d["label"] for d in body["figure"]["data"][0]["dimensions"]]
        assert labels[-1] == "num_params" and 5 not in body["trial_numbers"]
    bad = httpx.get(f"{url}/studies/mo/{path}", params={"objective": "speed"}, timeout=60)
    assert bad.status_code == 422 and "objective" in bad.text
