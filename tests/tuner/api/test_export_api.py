"""`GET /studies/{name}/trials.csv|.parquet` over HTTP on the fixed study."""

from __future__ import annotations

import io

import httpx
import pandas as pd

from tests.tuner.api.fixtures import FIXED_TRIALS


def test_trials_csv_has_one_row_per_trial(server):
    r = httpx.get(f"{server}/studies/fixed/trials.csv")
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/csv")
    assert 'filename="fixed-trials.csv"' in r.headers["content-disposition"]
    frame = pd.read_csv(io.StringIO(r.text))
    assert len(frame) == len(FIXED_TRIALS) == int(r.headers["x-trial-count"])
    assert frame["state"].tolist() == [t[1].name for t in FIXED_TRIALS]
    pruned = frame[frame["state"] == "PRUNED"].iloc[0]
    assert pruned["step_reached"] == 300 and pruned["n_evaluations"] == 3
    assert frame["params_input_dropout"][0] == FIXED_TRIALS[0][0]["input_dropout"]


def test_trials_parquet_and_errors(server):
    r = httpx.get(f"{server}/studies/fixed/trials.parquet")
    assert r.status_code == 200
    frame = pd.read_parquet(io.BytesIO(r.content))
    assert frame["value"].min() == 4.0 and len(frame) == len(FIXED_TRIALS)
    missing = httpx.get(f"{server}/studies/nope/trials.csv")
    assert missing.status_code == 404 and "nope" in missing.json()["detail"]
    assert httpx.get(f"{server}/studies/fixed/trials.xml").status_code == 422
