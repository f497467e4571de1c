"""The API's read model against Optuna's own reading of the same SQLite database: random studies
(Hypothesis) read through `tuner.analysis.reads` and through `optuna.load_study(...).get_trials()` agree;
the cache serves an unchanged study from memory and re-reads a changed one; a database of another
Optuna schema stops `rnntune serve` with a clear error."""

from __future__ import annotations

import datetime as dt
import itertools
import math
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import optuna
import pytest
import sqlalchemy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution
from optuna.trial import TrialState, create_trial

from tests.tuner.api.fixtures import SPACE, make_study
from tuner.analysis.reads import SCHEMA_VERSION, ParamSpec, StudyNotFound, StudyStore

ROOT = Path(__file__).resolve().parents[3]
DISTRIBUTIONS = {
    "lr": FloatDistribution(1e-5, 1e-1, log=True),
    "dropout": FloatDistribution(0.0, 0.9),
    "quantised": FloatDistribution(0.0, 1.0, step=0.25),
    "layers": IntDistribution(1, 6),
    "rank": IntDistribution(-20, 100, step=4),
    "width": IntDistribution(16, 1024, log=True),
    "cell": CategoricalDistribution([None, "lstm", 3, 2.5, False]),
}
STATES = [TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL, TrialState.RUNNING, TrialState.WAITING]
_names = (f"s{i}" for i in itertools.count())


def _param_value(name: str):
    dist = DISTRIBUTIONS[name]
    if isinstance(dist, CategoricalDistribution):
        return st.sampled_from(dist.choices)
    if isinstance(dist, IntDistribution):
        return st.integers(0, (dist.high - dist.low) // dist.step).map(lambda k: dist.low + k * dist.step)
    if dist.step is not None:
        return st.integers(0, 4).map(lambda k: k * dist.step)
    return st.floats(dist.low, dist.high)


any_float = st.floats(allow_nan=True, allow_infinity=True)
json_value = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)


@st.composite
def trials(draw):
    state = draw(st.sampled_from(STATES))
    names = draw(st.lists(st.sampled_from(sorted(DISTRIBUTIONS)), unique=True, max_size=len(DISTRIBUTIONS)))
    params = {name: draw(_param_value(name)) for name in names}
    value = draw(st.floats(allow_nan=False)) if state == TrialState.COMPLETE else None
    steps = draw(st.dictionaries(st.integers(0, 10_000), any_float, max_size=4))
    attrs = draw(st.dictionaries(st.text(min_size=1, max_size=10), json_value, max_size=4))
    return create_trial(
        state=state,
        params=params,
        distributions={n: DISTRIBUTIONS[n] for n in names},
        value=value,
        intermediate_values=steps,
        user_attrs=attrs,
    )


def _same(a, b) -> bool:
    return a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    """The read model and Optuna's own storage on one database (Optuna's uncached RDBStorage)."""
    db_url = f"sqlite:///{tmp_path_factory.mktemp('reads') / 's.db'}"
    storage = optuna.storages.RDBStorage(db_url)
    store = StudyStore(db_url, revalidate_s=0.0)
    yield storage, store
    store.close()
    storage.engine.dispose()


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(frozen=st.lists(trials(), max_size=8), direction=st.sampled_from(["minimize", "maximize"]))
def test_read_model_agrees_with_optuna(stores, frozen, direction):
    storage, store = stores
    name = next(_names)
    study = optuna.create_study(study_name=name, storage=storage, direction=direction)
    study.set_user_attr("status", "running")
    study.add_trials(frozen)
    expected = optuna.load_study(study_name=name, storage=storage).get_trials(deepcopy=False)

    row = store.row(name)
    got = store.snapshot(row).trials
    assert [t.number for t in got] == [t.number for t in expected]
    for record, trial in zip(got, expected):
        assert record.state == trial.state.name
        assert record.params == trial.params and all(
            type(record.params[k]) is type(v) for k, v in trial.params.items()
        )
        assert _same(record.value, trial.value)
        assert len(record.curve) == len(trial.intermediate_values)
        for (step, value), (o_step, o_value) in zip(record.curve, sorted(trial.intermediate_values.items())):
            assert step == o_step and _same(value, o_value)
        assert record.user_attrs == trial.user_attrs
        for stamp, o_stamp in (
            (record.datetime_start, trial.datetime_start),
            (record.datetime_complete, trial.datetime_complete),
        ):
            assert (stamp and dt.datetime.fromisoformat(stamp)) == o_stamp
        for param, dist in trial.distributions.items():
            spec = record.specs[param]
            if isinstance(dist, CategoricalDistribution):
                assert spec.kind == "categorical" and spec.choices == tuple(dist.choices)
            else:
                assert (spec.low, spec.high, spec.log, spec.step) == (
                    dist.low,
                    dist.high,
                    dist.log,
                    dist.step,
                )
                assert spec == ParamSpec.from_distribution(
                    param, optuna.distributions.distribution_to_json(dist)
                )
    assert row.direction == direction and row.user_attrs == {"status": "running"}
    assert row.counts == dict(Counter(t.state.name for t in expected))
    finite = [t.value for t in expected if t.state == TrialState.COMPLETE and math.isfinite(t.value)]
    assert row.best_value == ((min if direction == "minimize" else max)(finite) if finite else None)


def test_unchanged_study_is_served_from_memory_and_a_change_is_read(tmp_path):
    db_url = f"sqlite:///{tmp_path / 's.db'}"
    study = make_study(db_url, "s", tmp_path / "storage")
    store = StudyStore(db_url, revalidate_s=0.0)
    before = store.snapshot(store.row("s"))
    assert len(before.trials) == 10 and before.best.number == 0
    assert store.snapshot(store.row("s")) is before

    trial = study.ask(SPACE)
    trial.report(3.9, 500)
    trial.set_user_attr("checkpoint", "/x/best.pt")
    study.tell(trial, 3.5)
    make_study(db_url, "other", tmp_path / "storage2")  # another study's rows must not leak in
    after = store.snapshot(store.row("s"))
    assert after is not before and len(after.trials) == 11 and after.best.number == 10
    assert after.by_number[10].curve == ((500, 3.9),) and after.by_number[10].user_attrs == {
        "checkpoint": "/x/best.pt"
    }
    assert store.snapshot(store.row("s")) is after
    store.close()


def test_a_listing_page_reads_only_its_studies_and_agrees_with_optuna(tmp_path):
    """Pages of the listing match Optuna's own reading of every study, and a page's query names
    only the studies on it: the listing's cost does not grow with the studies beside it."""
    db_url = f"sqlite:///{tmp_path / 's.db'}"
    storage = optuna.storages.RDBStorage(db_url)
    for k in range(7):
        study = optuna.create_study(
            study_name=f"s{k}", storage=storage, direction="maximize" if k % 3 == 0 else "minimize"
        )
        study.set_user_attr("status", f"status-{k}")
        study.add_trials([create_trial(value=float(v)) for v in range(k)])
    store = StudyStore(db_url, revalidate_s=0.0)
    every = {s.study_name: s for s in storage.get_all_studies()}
    total, page = store.page(2, 3)
    assert total == 7 and [r.name for r in page] == ["s2", "s3", "s4"]
    for row in page:
        frozen = every[row.name]
        assert row.user_attrs == frozen.user_attrs and row.direction == frozen.directions[0].name.lower()
        values = [t.value for t in optuna.load_study(study_name=row.name, storage=storage).trials]
        assert row.counts == ({"COMPLETE": len(values)} if values else {})
        assert row.best_value == ((max if row.direction == "maximize" else min)(values) if values else None)
    assert store.page(7, 3) == (7, [])
    assert store.row("s5").user_attrs == {"status": "status-5"}
    with pytest.raises(StudyNotFound):
        store.row("missing")

    statements: list[tuple[str, Any]] = []
    sqlalchemy.event.listen(
        store.storage.engine,
        "before_cursor_execute",
        lambda conn, cursor, statement, parameters, context, many: statements.append((statement, parameters)),
    )
    store.page(5, 2)
    named = [p for statement, p in statements if "IN (" in statement]
    assert named and all(set(p) <= {5 + 1, 6 + 1} for p in named), statements  # study ids 6 and 7
    store.close()


@pytest.mark.slow
def test_another_optuna_schema_stops_serve_with_a_clear_error(tmp_path):
    db_url = f"sqlite:///{tmp_path / 's.db'}"
    make_study(db_url, "s", tmp_path / "storage")
    engine = sqlalchemy.create_engine(db_url)
    with engine.begin() as conn:
        conn.execute(sqlalchemy.text("UPDATE alembic_version SET version_num = 'v3.0.0.d'"))
    engine.dispose()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tuner.cli",
            "serve",
            "--port",
            "0",
            "--db",
            db_url,
            "--storage",
            str(tmp_path),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert "has Optuna schema 'v3.0.0.d'" in done.stderr and repr(SCHEMA_VERSION) in done.stderr
    assert "Traceback" not in done.stderr
