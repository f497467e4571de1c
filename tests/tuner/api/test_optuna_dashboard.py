"""optuna-dashboard opens rnntune's study database as it is: the real `optuna-dashboard` command on
127.0.0.1 lists rnntune's studies with their trials (states, learning curves, attrs), and leaves the
database as rnntune's API reads it (docs/web.md, "Using optuna-dashboard beside the web view")."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import sqlalchemy

from tests.postgres import free_port
from tests.tuner.compare_studies import MAX_STEPS, make_compared
from tuner.analysis.reads import SCHEMA_VERSION, StudyStore

DASHBOARD = shutil.which("optuna-dashboard", path=str(Path(sys.executable).parent))
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(DASHBOARD is None, reason="optuna-dashboard is not installed (the `test` extra)"),
]


def test_optuna_dashboard_lists_rnntune_studies_and_their_trials(tmp_path):
    db_url = f"sqlite:///{tmp_path / 'studies.db'}"
    make_compared(db_url, "mog-ptb", tmp_path, [4.0, 4.1, 4.2], pruned=2)
    make_compared(db_url, "lstm-ptb", tmp_path, [4.3, 4.4], cell="lstm")
    port = free_port()
    assert DASHBOARD is not None
    process = subprocess.Popen(
        [DASHBOARD, db_url, "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                listing = httpx.get(f"{base}/api/studies", timeout=10)
                break
            except httpx.TransportError:
                assert process.poll() is None and time.monotonic() < deadline, (
                    "optuna-dashboard did not start"
                )
                time.sleep(0.2)
        assert listing.status_code == 200
        summaries = {s["study_name"]: s for s in listing.json()["study_summaries"]}
        assert set(summaries) == {"mog-ptb", "lstm-ptb"}
        assert summaries["mog-ptb"]["directions"] == ["minimize"]
        expected = {"mog-ptb": (3, 2), "lstm-ptb": (2, 0)}
        for name, (complete, pruned) in expected.items():
            study = httpx.get(f"{base}/api/studies/{summaries[name]['study_id']}", timeout=30).json()
            states = [t["state"] for t in study["trials"]]
            assert states.count("Complete") == complete and states.count("Pruned") == pruned
            assert len(study["trials"]) == complete + pruned
            keys = {a["key"] for a in study["user_attrs"]}
            assert {"task", "space_def", "spec", "status"} <= keys
            first = study["trials"][0]
            assert max(v["step"] for v in first["intermediate_values"]) == MAX_STEPS  # its learning curve
            assert first["params"][0]["name"] == "learning_rate"
        assert httpx.get(f"{base}/dashboard/", timeout=30).status_code == 200
    finally:
        process.terminate()
        process.wait(timeout=30)
    with sqlalchemy.create_engine(db_url).connect() as conn:  # no migration: still the schema rnntune reads
        assert (
            conn.execute(sqlalchemy.text("SELECT version_num FROM alembic_version")).scalar()
            == SCHEMA_VERSION
        )
    store = StudyStore(db_url)
    try:
        assert store.row("mog-ptb").counts == {"COMPLETE": 3, "PRUNED": 2}
    finally:
        store.close()
