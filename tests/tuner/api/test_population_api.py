"""GET /studies/{name}/population and the population fields of `best` (route and Python API), over
real HTTP on a pbt study written by hand with Optuna: four members and a retry, one member copying
a copy, each with its run folder's config.yaml."""

from __future__ import annotations

from pathlib import Path

import httpx
import optuna
import pytest
import yaml
from optuna.distributions import FloatDistribution, IntDistribution
from optuna.trial import TrialState, create_trial

from tests.tuner.api.fixtures import live_server, make_study
from trainer import make_config
from tuner.api import ApiSettings
from tuner.sweeps.study.create import create_study

DISTRIBUTIONS = {
    "learning_rate": FloatDistribution(0.001, 0.004, log=True),
    "input_dropout": FloatDistribution(0.0, 0.5),
    "hidden_size": IntDistribution(8, 32),
}


def seg(step: int, lr: float, drop: float, source: int | None = None, **shape) -> dict:
    """A segment; a copy's carries the params it brings (`shape`: those other than the settings)."""
    settings = {"learning_rate": lr, "input_dropout": drop}
    return {
        "step": step,
        "from_trial": source,
        "from_value": None if source is None else 4.5 - step / 1000,
        "settings": settings,
        **({"params": {**settings, **shape}} if shape else {}),
    }


# #1 copies #0 at 100, #2 (the best) copies #1 at 200; #3 copies #0 at 100 and FAILs, retried as #4
# (its history copied), which copies #2 at 300. (number, state, value, history, retry_of)
MEMBERS = [
    (0, TrialState.COMPLETE, 4.3, [seg(0, 0.002, 0.1)], None),
    (1, TrialState.COMPLETE, 4.1, [seg(0, 0.003, 0.1), seg(100, 0.0024, 0.2, 0)], None),
    (2, TrialState.COMPLETE, 4.0, [seg(0, 0.001, 0.1), seg(200, 0.0019, 0.25, 1, hidden_size=24)], None),
    (3, TrialState.FAIL, None, [seg(0, 0.004, 0.1), seg(100, 0.0016, 0.05, 0)], None),
    (
        4,
        TrialState.COMPLETE,
        4.2,
        [seg(0, 0.004, 0.1), seg(100, 0.0016, 0.05, 0), seg(300, 0.0023, 0.3, 2)],
        3,
    ),
]
BEST_LINEAGE = [
    {"step": 0, "settings": {"learning_rate": 0.002, "input_dropout": 0.1}, "trial": 0},
    {"step": 100, "settings": {"learning_rate": 0.0024, "input_dropout": 0.2}, "trial": 1},
    {"step": 200, "settings": {"learning_rate": 0.0019, "input_dropout": 0.25}, "trial": 2},
]


def make_pbt_study(db_url: str, name: str, storage: Path, members: list = MEMBERS) -> None:
    """A pbt study (its spec stored by `create_study`) with `members` added as the sweep writes
    them: curves, `pbt_history`, `retry_of`, and a run folder holding the config it last ran."""
    create_study(
        name, {"space": "tiny", "scheduler": "pbt", "n_trials": 4}, storage_url=db_url, storage_path=storage
    )
    study = optuna.load_study(study_name=name, storage=db_url)
    study.set_user_attr("status", "finished")
    for number, state, value, history, retry_of in members:
        run_dir = storage / f"trial-{number}"
        run_dir.mkdir(parents=True, exist_ok=True)
        config = {"hidden_size": 16, "max_steps": 400, "eval_every": 100, "run_dir": str(run_dir)}
        (run_dir / "config.yaml").write_text(yaml.safe_dump({**config, **history[-1]["settings"]}))
        attrs = {"pbt_history": history, "run_dir": str(run_dir), "checkpoint": str(run_dir / "best.pt")}
        if retry_of is not None:
            attrs["retry_of"] = retry_of
        steps = 2 if state == TrialState.FAIL else 4
        curve = {100 * (s + 1): (value or 4.6) + 0.4 / (s + 1) for s in range(steps)}
        study.add_trial(
            create_trial(
                state=state,
                params={**history[0]["settings"], "hidden_size": 16},
                distributions=DISTRIBUTIONS,
                value=value,
                intermediate_values=curve,
                user_attrs=attrs,
            )
        )


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("population")
    db = f"sqlite:///{root / 's.db'}"
    make_pbt_study(db, "pbt", root / "store" / "pbt")
    make_pbt_study(
        db, "young", root / "store" / "young", [(0, TrialState.RUNNING, None, [seg(0, 0.002, 0.1)], None)]
    )
    make_study(db, "fixed", root / "store" / "fixed")
    with live_server(ApiSettings(db_url=db, storage_root=root / "store")) as url:
        yield url, db


def test_the_population_lists_every_member_with_its_curve_and_history(served):
    url, _ = served
    body = httpx.get(f"{url}/studies/pbt/population", timeout=30).json()
    assert (body["scheduler"], body["perturbation_interval"]) == ("pbt", None)
    members = body["members"]
    assert [(m["number"], m["state"], m["retry_of"]) for m in members] == [
        (0, "COMPLETE", None),
        (1, "COMPLETE", None),
        (2, "COMPLETE", None),
        (3, "FAIL", None),
        (4, "COMPLETE", 3),
    ]
    assert members[2]["curve"] == [[100, 4.4], [200, 4.2], [300, pytest.approx(4.0 + 0.4 / 3)], [400, 4.1]]
    assert members[4]["history"] == [{**s, "params": None} for s in MEMBERS[4][3]]
    assert members[3]["value"] is None
    # Member 2 copied member 1's model (hidden_size 24): what it trained, beside what was sampled.
    assert members[2]["history"][1]["params"] == {
        "learning_rate": 0.0019,
        "input_dropout": 0.25,
        "hidden_size": 24,
    }
    assert members[2]["params"] == {"learning_rate": 0.0019, "input_dropout": 0.25, "hidden_size": 24}
    assert members[2]["initial_params"] == {"learning_rate": 0.001, "input_dropout": 0.1, "hidden_size": 16}
    assert members[4]["params"] == {"learning_rate": 0.0023, "input_dropout": 0.3, "hidden_size": 16}


def test_every_listing_shows_a_members_params_in_force_and_labels_optunas_initial(served):
    """After a copy the member's table row, `best` and the export show the settings it trained
    with (the shape it copied included); Optuna's params appear only as `initial_params`."""
    url, _ = served
    in_force = {"learning_rate": 0.0019, "input_dropout": 0.25, "hidden_size": 24}
    initial = {"learning_rate": 0.001, "input_dropout": 0.1, "hidden_size": 16}
    rows = {t["number"]: t for t in httpx.get(f"{url}/studies/pbt/trials", timeout=30).json()["items"]}
    assert (rows[2]["params"], rows[2]["initial_params"], rows[2]["problem"]) == (in_force, initial, None)
    best = httpx.get(f"{url}/studies/pbt/best", timeout=30).json()
    assert (best["params"], best["initial_params"]) == (in_force, initial)
    table = httpx.get(f"{url}/studies/pbt/trials.csv", timeout=30).text.splitlines()
    header, row = table[0].split(","), next(r.split(",") for r in table[1:] if r.startswith("2,"))
    assert (
        row[header.index("params_hidden_size")] == "24"
        and row[header.index("initial_params_hidden_size")] == "16"
    )
    plain = httpx.get(f"{url}/studies/fixed/trials", timeout=30).json()["items"][0]
    assert plain["initial_params"] is None and plain["params"]


def test_the_best_member_comes_with_its_lineage_and_the_config_replaying_it(served, tmp_path):
    url, _ = served
    best = httpx.get(f"{url}/studies/pbt/population", timeout=30).json()["best"]
    assert (best["number"], best["value"], best["lineage"]) == (2, 4.0, BEST_LINEAGE)
    config = best["config"]
    assert config["run_dir"] == "runs/replay-trial-2"  # never the member's own folder
    assert (config["learning_rate"], config["input_dropout"]) == (0.002, 0.1)
    assert config["schedule"] == [{"step": e["step"], "settings": e["settings"]} for e in BEST_LINEAGE[1:]]
    assert make_config(config).settings_at(200).learning_rate == 0.0019  # what `rnntune train` runs


def test_best_adds_the_schedule_and_replay_config_in_a_population_study_only(served):
    url, _ = served
    best = httpx.get(f"{url}/studies/pbt/best", timeout=30).json()
    assert best["number"] == 2 and best["schedule"] == BEST_LINEAGE
    assert best["replay_config"]["schedule"][0]["step"] == 100
    retried = httpx.get(f"{url}/studies/pbt/best", params={"trial": 4}, timeout=30).json()
    assert [(e["step"], e["trial"]) for e in retried["schedule"]] == [(0, 0), (100, 1), (200, 2), (300, 4)]
    assert retried["replay_config"]["run_dir"] == "runs/replay-trial-4"
    plain = httpx.get(f"{url}/studies/fixed/best", timeout=30).json()
    assert "schedule" not in plain and "replay_config" not in plain and plain["number"] == 0


def test_a_study_that_is_not_a_population_is_a_409_and_one_without_a_complete_member_has_no_best(served):
    url, _ = served
    refused = httpx.get(f"{url}/studies/fixed/population", timeout=30)
    assert refused.status_code == 409
    assert refused.json()["detail"] == "study 'fixed' is not a population study (scheduler pbt or pb2)"
    assert httpx.get(f"{url}/studies/nope/population", timeout=30).status_code == 404
    young = httpx.get(f"{url}/studies/young/population", timeout=30).json()
    assert young["best"] is None and [m["state"] for m in young["members"]] == ["RUNNING"]


def test_the_python_api_gives_the_same_schedule_and_replay(served):
    from tuner import python_api

    _, db = served
    best = python_api.best("pbt", db=db)
    assert best["schedule"] == BEST_LINEAGE and best["replay_config"]["run_dir"] == "runs/replay-trial-2"
    assert best["params"]["hidden_size"] == 24 and best["initial_params"]["hidden_size"] == 16
    make_config(best["replay_config"])
    assert "schedule" not in python_api.best("fixed", db=db)


def test_each_study_says_its_sweep_family_from_the_kinds_registry(served):
    """The web view shows the population section from `sweep_family` (the registry's), not from a
    list of scheduler names of its own."""
    url, _ = served
    listed = {s["name"]: s["sweep_family"] for s in httpx.get(f"{url}/studies", timeout=30).json()["items"]}
    assert listed["pbt"] == listed["young"] == "population" and listed["fixed"] == "early_stopped"
    assert httpx.get(f"{url}/studies/pbt", timeout=30).json()["sweep_family"] == "population"
