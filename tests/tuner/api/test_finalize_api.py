"""POST/GET /studies/{name}/finalize over a live uvicorn server: validation, 404/409 on the fixed
studies (fast), and a real finalize run on a real sweep's study (slow), then `rnntune finalize` on
the same study (the one end-to-end run of both paths: the API launches the same command)."""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import yaml
from optuna.trial import TrialState

from tests.tuner.api.fixtures import live_server
from tuner.api import ApiSettings
from tuner.storage import study_attrs
from tuner.storage.study import load_study


@pytest.mark.parametrize(
    ("body", "field", "allowed"),
    [
        ({"top": 0}, "body.top", "greater than or equal to 1"),
        ({"top": 21}, "body.top", "less than or equal to 20"),
        ({"seeds": 11}, "body.seeds", "less than or equal to 10"),
        ({"seeds": "many"}, "body.seeds", "valid integer"),
        ({"parallel": 0}, "body.parallel", "greater than or equal to 1"),
        ({"top": 2, "colour": "red"}, "body.colour", "Extra inputs are not permitted"),
    ],
)
def test_bad_bodies_are_422_naming_the_field_and_range(server, body, field, allowed):
    response = httpx.post(f"{server}/studies/fixed/finalize", json=body)
    assert response.status_code == 422
    assert f"{field}: " in response.json()["detail"] and allowed in response.json()["detail"]


def test_unknown_study_is_404_and_a_study_without_complete_trials_or_space_is_409(server):
    assert httpx.post(f"{server}/studies/nope/finalize", json={}).status_code == 404
    assert httpx.get(f"{server}/studies/nope/finalize").status_code == 404
    empty = httpx.post(f"{server}/studies/empty/finalize", json={"top": 1, "seeds": 1})
    assert empty.status_code == 409 and "no COMPLETE trial" in empty.json()["detail"]
    foreign = httpx.post(f"{server}/studies/fixed/finalize", json={"top": 1, "seeds": 1})
    assert foreign.status_code == 409 and "not created by rnntune" in foreign.json()["detail"]


def test_before_any_rerun_the_best_is_the_tuning_best(server):
    report = httpx.get(f"{server}/studies/fixed/finalize").json()
    assert (
        report["state"] == "none" and report["configurations"] == [] and report["best_by_rerun_mean"] is None
    )
    assert report["best_by"] == "tuning" and report["best"] == {"trial": 0, "value": 4.0, "by": "tuning"}


@pytest.mark.slow
def test_post_runs_reruns_and_get_reports_mean_sd_and_gap(tmp_path, joined_ray):
    from tests.tuner.finalize_study import swept_study

    db = swept_study(tmp_path, "fin-api", trials=2, env=joined_ray)  # the reruns start a cluster
    study = load_study("fin-api", db)
    best = min((t for t in study.trials if t.state == TrialState.COMPLETE), key=lambda t: t.value)
    settings = ApiSettings(db_url=db, storage_root=tmp_path / "studies")
    with live_server(settings) as url, httpx.Client(base_url=url, timeout=30) as client:
        started = client.post("/studies/fin-api/finalize", json={"top": 1, "seeds": 2, "parallel": 2})
        assert started.status_code == 202, started.text
        assert started.json()["state"] == "queued" and started.json()["process"]["running"]
        again = client.post("/studies/fin-api/finalize", json={"top": 1, "seeds": 2})
        assert again.status_code == 409 and "already has a finalize run" in again.json()["detail"]
        deadline = time.monotonic() + 600
        seen = set()
        while True:
            report = client.get("/studies/fin-api/finalize").json()
            seen.add(report["state"])
            if report["state"] in ("finished", "failed") and not report["process"]["running"]:
                break
            assert time.monotonic() < deadline, f"finalize did not end; states seen {seen}: {report}"
            time.sleep(1.0)
    assert report["state"] == "finished" and report["process"]["returncode"] == 0, report
    assert "running" in seen or "queued" in seen
    stored = load_study("fin-api", db).user_attrs[study_attrs.FINALIZE]
    losses = [r["val_loss"] for r in stored[str(best.number)]["reruns"]]
    assert len(losses) == 2
    (config,) = report["configurations"]
    assert config["trial"] == best.number and config["n"] == 2 and config["source_value"] == best.value
    assert config["val_loss_mean"] == pytest.approx(statistics.fmean(losses))
    assert config["val_loss_sd"] == pytest.approx(statistics.stdev(losses))
    assert config["gap"] == pytest.approx(statistics.fmean(losses) - best.value)
    assert config["headline"] == "bpc" and len(config["reruns"]) == 2
    assert report["best_by_rerun_mean"]["trial"] == best.number
    assert report["best"] == {"trial": best.number, "value": best.value, "by": "tuning"}
    assert (tmp_path / "studies" / "fin-api" / "finalize.log").is_file()
    entry = stored[str(best.number)]
    assert entry["value"] == best.value and entry["params"] == best.params
    assert [r["seed"] for r in entry["reruns"]] == [1, 2]  # fresh: the sweep trained with seed 0
    for r in entry["reruns"]:
        assert Path(r["best_checkpoint"]).is_file()
        assert (
            Path(r["run_dir"])
            == tmp_path / "studies" / "fin-api" / "finalize" / f"trial-{best.number}-seed-{r['seed']}"
        )
        saved = yaml.safe_load((Path(r["run_dir"]) / "config.yaml").read_text())
        assert saved["seed"] == r["seed"] and saved["learning_rate"] == best.params["learning_rate"]

    # The same run from the command line: nothing left to rerun, the table, the best chosen by reruns.
    again = subprocess.run(
        [sys.executable, "-m", "tuner.cli", "finalize", "fin-api", "--top", "1", "--seeds", "2", "--db", db,
         "--best-by", "rerun_mean", "--num-cpus", "2"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert again.returncode == 0, again.stdout + again.stderr
    assert "0 reruns to do" in again.stdout and f"{best.number:>5}   2" in again.stdout
    assert f"best by rerun mean: trial #{best.number}" in again.stdout
    study = load_study("fin-api", db)
    assert (
        study.user_attrs[study_attrs.FINALIZE] == stored
        and study.user_attrs[study_attrs.BEST_BY] == "rerun_mean"
    )
