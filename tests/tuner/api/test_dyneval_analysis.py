"""The sensitivity page and the importances of a dynamic-evaluation study (thesis Table 2.6 tuned on
a trained model): its trials hold params and a value but no curve, since nothing is trained."""

from __future__ import annotations

import math
import random

import httpx
import pytest

from tests.tuner.api.fixtures import live_server
from tests.tuner.dyneval_checkpoint import quick_checkpoint
from trainer.dyneval import SETTINGS
from tuner.api import ApiSettings
from tuner.space import SearchSpace
from tuner.sweeps.study.create import create_study


def _value(params: dict) -> float:
    """Dynamic evaluation's loss as a function mostly of its learning rate (best near 1e-4)."""
    lr = math.log10(params["dyneval_learning_rate"])
    return 3.0 + 0.2 * (lr + 4.0) ** 2 + 0.001 * params["max_time_steps"]


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    root = tmp_path_factory.mktemp("dyneval-api")
    db = f"sqlite:///{root / 'studies.db'}"
    checkpoint = quick_checkpoint(root / "model")
    study = create_study(
        "dv", storage_url=db, space="dyneval", checkpoint=str(checkpoint), storage_path=root / "dv"
    )
    space = SearchSpace.from_dict(study.user_attrs["space_def"])
    rng = random.Random(0)
    for _ in range(16):
        params = {
            "max_time_steps": rng.randint(1, 20),
            "dyneval_learning_rate": 10 ** rng.uniform(-6, -3),
            "dyneval_decay_rate": 10 ** rng.uniform(-6, -2),
            "dyneval_epsilon": 10 ** rng.uniform(-8, -2),
        }
        study.enqueue_trial(params)
        trial = study.ask()
        space.suggest(trial)
        study.tell(trial, _value(params))
    with live_server(ApiSettings(db_url=db, storage_root=root / "storage")) as base:
        yield base, study


def test_sensitivity_of_a_dyneval_study(api):
    base, study = api
    response = httpx.get(f"{base}/studies/dv/sensitivity", params={"include": "complete"}, timeout=60)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["n_completed"] == 16 and body["n_pruned"] == 0
    assert body["best"]["number"] == study.best_trial.number and body["best"]["params"] == study.best_params
    assert set(body["windows"]) == set(SETTINGS)
    assert {k: w["center"] for k, w in body["windows"].items()} == pytest.approx(study.best_params)
    assert all(n["step"] is None for n in body["neighbours"])  # no curves: nothing was trained


def test_importances_of_a_dyneval_study(api):
    base, _ = api
    response = httpx.get(f"{base}/studies/dv/importances", timeout=120)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["n_trials"] == 16 and body["step"] is None
    rows = body["importances"]
    assert {r["name"] for r in rows} == set(SETTINGS)
    assert rows[0]["name"] == "dyneval_learning_rate"


def test_rest_creation_refusals_name_checkpoint(api):
    """The model is loaded (torch.load) at creation: only from the server's own roots."""
    base, study = api
    outside = study.user_attrs["spec"]["checkpoint"]  # the fixture's model lies outside the roots
    refused = httpx.post(
        f"{base}/studies", json={"name": "x", "space": "dyneval", "checkpoint": outside}, timeout=60
    )
    assert refused.status_code == 422 and "body.checkpoint: must be a file inside" in refused.text
    missing = httpx.post(f"{base}/studies", json={"name": "y", "space": "dyneval"}, timeout=60)
    assert missing.status_code == 422 and "checkpoint: space dyneval tunes" in missing.text
    assert httpx.get(f"{base}/studies/x", timeout=60).status_code == 404
