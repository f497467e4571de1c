"""The service's stated bounds over real HTTP (tuner/api/bounds.py): studies held, an inline
space's size, and sweep and finalize processes run at once; each refusal names what and the limit,
and nothing is created or started past it."""

from __future__ import annotations

import stat
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import optuna
import pytest

from tests.tuner.api.fixtures import live_app, make_study
from tuner.api import ApiSettings, create_app
from tuner.api.settings import _bounds_from_env
from tuner.errors import InvalidInput
from tuner.spec import SweepSpec
from tuner.sweeps.launch import control
from tuner.sweeps.launch.launcher import Launcher

NEW = {"space": "tiny", "n_trials": 2, "parallel": 1, "sampler": "random"}
INLINE = {
    "fixed": {"cell": "lstm", "dataset": "builtin", "hidden_size": 16, "max_steps": 20},
    "params": {"learning_rate": {"low": 0.001, "high": 0.004, "scale": "log"}},
}


@pytest.fixture
def bounded(tmp_path):
    """A live app holding one finished study, with 2 studies, 4 kB of inline space and 1 run allowed."""
    db_url = f"sqlite:///{tmp_path / 's.db'}"
    make_study(db_url, "fixed", tmp_path / "storage" / "fixed")
    settings = ApiSettings(
        db_url=db_url, storage_root=tmp_path / "storage", max_studies=2, max_space_bytes=4096, max_runs=1
    )
    app = create_app(settings)
    with live_app(app) as url, httpx.Client(base_url=url, timeout=60) as client:
        yield app, client


def test_studies_past_the_limit_are_refused_naming_it(bounded):
    _, client = bounded
    assert client.post("/studies", json={**NEW, "name": "second"}).status_code == 201
    refused = client.post("/studies", json={**NEW, "name": "third"})
    assert refused.status_code == 409
    assert (
        "at most 2 studies" in refused.json()["detail"] and "RNNTUNE_MAX_STUDIES" in refused.json()["detail"]
    )
    assert client.get("/studies/third").status_code == 404


def test_an_inline_space_past_the_limit_is_a_422_naming_the_field(bounded):
    _, client = bounded
    big = {**INLINE, "description": "x" * 5000}
    refused = client.post("/studies", json={**NEW, "name": "big", "space": big})
    assert refused.status_code == 422
    detail = refused.json()["detail"]
    assert detail.startswith("body.space:") and "at most 4,096" in detail
    assert client.get("/studies/big").status_code == 404
    assert client.post("/studies", json={**NEW, "name": "small", "space": INLINE}).status_code == 201


def test_runs_past_the_limit_are_refused_and_nothing_starts(bounded, tmp_path):
    """One sweep process running (a child that only sleeps, launched by the app's own launcher)
    fills the one run allowed: another start is a 409 naming the limit, and nothing is launched."""
    app, client = bounded
    sleeper = tmp_path / "sleeper"
    sleeper.write_text(f"#!{sys.executable}\nimport time\ntime.sleep(60)\n")
    sleeper.chmod(sleeper.stat().st_mode | stat.S_IEXEC)
    state = app.state.rnntune
    state.launcher = Launcher(state.settings.db_url, on_exit=lambda handle, code: None, python=str(sleeper))
    try:
        assert client.post("/studies", json={**NEW, "name": "first"}).status_code == 201
        started = client.post("/studies/first/start")
        assert started.status_code == 202, started.text
        refused = client.post("/studies/fixed/start")
        assert refused.status_code == 409
        assert "at most 1 sweep and finalize processes" in refused.json()["detail"]
        assert [h.name for h in state.launcher.live()] == ["first"]
    finally:
        for handle in state.launcher.live():
            handle.process.kill()
            handle.process.wait(10)


def test_cpus_per_trial_below_the_floor_is_refused_at_creation_and_at_start(bounded):
    """The floor is 1 / RNNTUNE_MAX_TRIALS_PER_CPU: a 422 for a request, a 409 at start for a study
    stored with less (as `rnntune sweep` on another machine could make it); nothing starts."""
    app, client = bounded
    refused = client.post("/studies", json={**NEW, "name": "packed", "cpus_per_trial": 0.1})
    assert refused.status_code == 422
    detail = refused.json()["detail"]
    assert detail.startswith("body.cpus_per_trial: 0.1 is below") and "floor of 0.25" in detail
    assert "RNNTUNE_MAX_TRIALS_PER_CPU=4" in detail
    assert client.get("/studies/packed").status_code == 404
    state = app.state.rnntune
    control.create(state, "packed", SweepSpec(space="tiny", n_trials=2, sampler="random", cpus_per_trial=0.1))
    refused = client.post("/studies/packed/start")
    assert refused.status_code == 409 and refused.json()["detail"].startswith("cpus_per_trial: 0.1 is below")
    assert state.launcher.live() == []
    at_floor = client.post("/studies", json={**NEW, "name": "quarter", "cpus_per_trial": 0.25})
    assert "RNNTUNE_MAX_STUDIES" in at_floor.json()["detail"]  # past the floor; refused by the study count


def test_bounds_come_from_the_environment_and_bad_values_name_the_variable(monkeypatch):
    monkeypatch.setenv("RNNTUNE_MAX_RUNS", "3")
    monkeypatch.setenv("RNNTUNE_MAX_STUDIES", "50")
    assert _bounds_from_env() == {"max_runs": 3, "max_studies": 50}
    for bad in ("0", "many", "-4"):
        monkeypatch.setenv("RNNTUNE_MAX_SPACE_BYTES", bad)
        with pytest.raises(InvalidInput, match="RNNTUNE_MAX_SPACE_BYTES"):
            _bounds_from_env()
    defaults = ApiSettings(db_url="sqlite://", storage_root=Path("."))
    assert (defaults.max_studies, defaults.max_space_bytes, defaults.max_runs) == (10_000, 65_536, 8)
    assert defaults.max_trials_per_cpu == 4


def test_a_text_field_past_its_length_is_a_422_naming_it(bounded):
    _, client = bounded
    refused = client.post(
        "/studies", json={**NEW, "name": "wordy", "space": {**INLINE, "source": "y" * 2001}}
    )
    assert refused.status_code == 422
    assert "source" in refused.json()["detail"] and "2000" in refused.json()["detail"]


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_concurrent_creates_never_pass_the_study_bound(tmp_path, request, backend):
    """Ten creates at once against room for three: exactly three are created, seven refused naming
    the bound, on SQLite and on PostgreSQL (whose servers would share the advisory lock)."""
    db_url = (
        f"sqlite:///{tmp_path / 's.db'}" if backend == "sqlite" else request.getfixturevalue("postgres_url")
    )
    existing = len(optuna.get_all_study_names(db_url))
    settings = ApiSettings(db_url=db_url, storage_root=tmp_path / "storage", max_studies=existing + 3)
    names = [f"race-{backend}-{tmp_path.name[-12:]}-{k}" for k in range(10)]
    with (
        live_app(create_app(settings)) as url,
        httpx.Client(base_url=url, timeout=120) as client,
        ThreadPoolExecutor(max_workers=10) as pool,
    ):
        codes = list(pool.map(lambda name: client.post("/studies", json={**NEW, "name": name}), names))
    assert sorted(r.status_code for r in codes) == [201] * 3 + [409] * 7, [r.text for r in codes]
    assert all("RNNTUNE_MAX_STUDIES" in r.json()["detail"] for r in codes if r.status_code == 409)
    assert len(optuna.get_all_study_names(db_url)) == existing + 3
