"""Issue 45 end to end: a tiny sweep with two objectives (val_loss, num_params) and a bound on the
model's size. No infeasible setting trains (refused when asked: an infeasible COMPLETE trial with
its size stored, not one of the 8 trials); every trained trial stores
its measures; the study has two directions; `GET /pareto` over real HTTP returns exactly the
non-dominated feasible COMPLETE trials, checked against a brute-force computation."""

from __future__ import annotations

import io

import httpx
import pytest
from optuna.study import StudyDirection
from optuna.trial import TrialState

from tests.conftest import TINY_SETTINGS
from tests.tuner.api.fixtures import live_server
from tuner.api import ApiSettings
from tuner.storage.study import load_study
from tuner.sweeps.drive.run import run_sweep
from tuner.sweeps.study.create import create_study

pytestmark = pytest.mark.slow
BOUND = 7000  # the tiny model at hidden size 16: 3.6k-11k weights as rounds and embedding ratio vary


def _dominates(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return all(x <= y for x, y in zip(a, b, strict=True)) and a != b


def test_two_objectives_and_a_size_bound(tmp_path, ray_cluster):
    db = f"sqlite:///{tmp_path / 'db.sqlite'}"
    create_study(
        "mo",
        storage_url=db,
        space="tiny",
        sampler="random",
        scheduler="none",
        objectives="val_loss,num_params",
        constraints=f"num_params<={BOUND}",
        n_trials=8,
        parallel=2,
        seed=3,
        storage_path=tmp_path / "store",
        overrides={"set": {**TINY_SETTINGS, "max_steps": 10}},
    )
    outcome = run_sweep("mo", db, num_cpus=2, out=io.StringIO())
    assert outcome.status == "finished"
    study = load_study("mo", db)
    assert study.directions == [StudyDirection.MINIMIZE, StudyDirection.MINIMIZE]
    assert study.metric_names == ["val_loss", "num_params"]  # how the sampler reads pruned trials
    infeasible = [t for t in study.trials if t.user_attrs["num_params"] > BOUND]
    feasible = [t for t in study.trials if t.user_attrs["num_params"] <= BOUND]
    assert infeasible and feasible, "the seed must draw both sides of the bound"
    assert len(feasible) == 8, "refused settings use up no trial"
    for t in infeasible:  # refused before training: no evaluation, no checkpoint, no run folder
        assert t.state == TrialState.COMPLETE and t.user_attrs["refused"].startswith("num_params=")
        assert t.values == [float("inf"), t.user_attrs["num_params"]]
        assert t.constraints == {f"num_params<={BOUND}": t.user_attrs["num_params"] - BOUND}
        assert (
            t.intermediate_values == {} and "checkpoint" not in t.user_attrs and "run_dir" not in t.user_attrs
        )
    for t in feasible:
        assert t.state == TrialState.COMPLETE and t.values[1] == t.user_attrs["num_params"]
        assert t.values[0] == pytest.approx(min(t.intermediate_values.values()))
        assert {"tokens_per_s", "peak_memory", "wall_time"} <= set(t.user_attrs)
        assert t.user_attrs["tokens_per_s"] > 0 and t.user_attrs["peak_memory"] > 0

    points = {t.number: (t.values[0], t.values[1]) for t in feasible}
    brute = sorted(n for n, p in points.items() if not any(_dominates(q, p) for q in points.values()))
    settings = ApiSettings(db_url=db, storage_root=tmp_path / "store")
    with live_server(settings) as url:
        answer = httpx.get(f"{url}/studies/mo/pareto", timeout=60).json()
        chosen = httpx.get(
            f"{url}/studies/mo/pareto", params={"rule": "lowest:num_params"}, timeout=60
        ).json()
        bad = httpx.get(f"{url}/studies/mo/pareto", params={"rule": "smallest"}, timeout=60)
    assert sorted(answer["front"]) == brute
    assert answer["objectives"] == [
        {"name": "val_loss", "direction": "minimize"},
        {"name": "num_params", "direction": "minimize"},
    ]
    assert answer["constraints"] == [f"num_params<={BOUND}"]
    assert {p["number"] for p in answer["trials"] if p["feasible"]} == set(points)
    assert {p["number"] for p in answer["trials"] if not p["feasible"]} == {t.number for t in infeasible}
    assert chosen["chosen"] == min(brute, key=lambda n: (points[n][1], n))
    assert bad.status_code == 422 and "rule" in bad.text
