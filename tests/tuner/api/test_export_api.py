"""`GET /studies/{name}/trials.csv|.parquet` over HTTP on the fixed study."""

from __future__ import annotations

import io
import re
import time

import httpx
import optuna
import pandas as pd
import sqlalchemy

from tests.tuner.api.fixtures import FIXED_TRIALS, SPACE, live_app, make_study
from tuner.api import ApiSettings
from tuner.api.app import create_app


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


def test_an_unchanged_study_is_exported_from_the_cache_without_reading_its_trials(tmp_path):
    """The table is built once per version of the study: a second download of an unchanged study
    of 100 trials sends no query that reads trial rows, and a new trial makes a new table."""
    db = f"sqlite:///{tmp_path / 's.db'}"
    params, state, value = FIXED_TRIALS[0]
    make_study(db, "big", tmp_path / "big", trials=[(params, state, value + k / 1000) for k in range(100)])
    app = create_app(ApiSettings(db_url=db, storage_root=tmp_path))
    with live_app(app) as url:
        first = httpx.get(f"{url}/studies/big/trials.csv", timeout=120)
        assert first.status_code == 200 and first.headers["x-trial-count"] == "100"
        statements: list[str] = []
        engine = app.state.rnntune.store.storage.engine
        listen = lambda conn, cursor, statement, *rest: statements.append(statement)  # noqa: E731
        sqlalchemy.event.listen(engine, "before_cursor_execute", listen)
        second = httpx.get(f"{url}/studies/big/trials.csv", timeout=120)
        sqlalchemy.event.remove(engine, "before_cursor_execute", listen)
        assert second.content == first.content
        # A query that selects a trial's data (Optuna's or the read model's), not the counts and
        # last ids of the fingerprint that tells an unchanged study.
        rows = re.compile(
            r"param_value|a\.value_json|trial_user_attributes\.value_json|intermediate_value_type"
            r"|trial_values\.value\b|SELECT v\.trial_id|trials\.number|trial_id, number"
        )
        assert not [s for s in statements if rows.search(s)], statements
        optuna.load_study(study_name="big", storage=db).add_trial(
            optuna.trial.create_trial(params=params, distributions={k: SPACE[k] for k in params}, value=1.0)
        )
        time.sleep(1.5)  # past the read model's revalidation interval
        third = httpx.get(f"{url}/studies/big/trials.csv", timeout=120)
        assert third.headers["x-trial-count"] == "101"
