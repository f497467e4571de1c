"""The read model's per-study fingerprint (`tuner.analysis.reads`), on a real SQLite database: a write
to another study keeps a study's snapshot, a row committed late with a lower id than rows already
seen (what PostgreSQL's out-of-order commits look like to a reader) is seen within `revalidate_s`,
and a row rewritten in place within `max_age_s`: the staleness bounds stated in docs/reliability.md."""

from __future__ import annotations

import json
import time

import pytest
import sqlalchemy

from tests.tuner.api.fixtures import make_study
from tuner.analysis.reads import StudyStore

REVALIDATE_S = 0.2
MAX_AGE_S = 1.0
LONG_MAX_AGE_S = 60.0
SLACK_S = 3.0
# Trial tables, their id column, and a read of what the snapshot shows of the row.
TABLES = {
    "trial_user_attributes": ("trial_user_attribute_id", lambda t: t.user_attrs),
    "trial_params": ("param_id", lambda t: t.params),
    "trial_intermediate_values": ("trial_intermediate_value_id", lambda t: dict(t.curve)),
}


@pytest.fixture
def db(tmp_path) -> tuple[str, sqlalchemy.Engine]:
    url = f"sqlite:///{tmp_path / 's.db'}"
    make_study(url, "a", tmp_path / "a")
    make_study(url, "b", tmp_path / "b")
    engine = sqlalchemy.create_engine(url)
    yield url, engine
    engine.dispose()


def _store(url: str) -> StudyStore:
    return StudyStore(url, revalidate_s=REVALIDATE_S, max_age_s=MAX_AGE_S)


def _snapshot(store: StudyStore, name: str):
    return store.snapshot(store.row(name))


def _seen_within(store: StudyStore, name: str, predicate, limit_s: float) -> float:
    """Seconds until `predicate(snapshot)` holds, polling; fails past `limit_s` plus SLACK_S (a
    loaded machine delays the polls themselves, never the staleness bound's mechanism)."""
    start = time.monotonic()
    while not predicate(_snapshot(store, name)):
        assert time.monotonic() - start < limit_s + SLACK_S, f"not seen within {limit_s} s"
        time.sleep(0.02)
    return time.monotonic() - start


def _rewrite_node(engine: sqlalchemy.Engine, study_id: int, value: str) -> None:
    """Set every trial's `node` attr of the study to `value` in place: a row rewritten, none added."""
    with engine.begin() as conn:
        conn.execute(
            sqlalchemy.text(
                "UPDATE trial_user_attributes SET value_json = :v WHERE key = 'node' AND "
                "trial_id IN (SELECT trial_id FROM trials WHERE study_id = :sid)"
            ),
            {"sid": study_id, "v": json.dumps(value)},
        )


def test_a_write_to_another_study_keeps_the_snapshot(db):
    url, engine = db
    store = _store(url)
    first = _snapshot(store, "a")
    fingerprint = store.db.fingerprint(first.fingerprint[0])
    other = store.row("b").study_id
    with engine.begin() as conn:
        conn.execute(
            sqlalchemy.text(
                "INSERT INTO trial_user_attributes (trial_id, key, value_json) "
                "SELECT MAX(trial_id), 'late', '1' FROM trials WHERE study_id = :sid"
            ),
            {"sid": other},
        )
    time.sleep(REVALIDATE_S * 2)
    assert store.db.fingerprint(first.fingerprint[0]) == fingerprint
    assert _snapshot(store, "a") is first
    assert any(t.user_attrs.get("late") == 1 for t in _snapshot(store, "b").trials)
    store.close()


@pytest.mark.parametrize("table", list(TABLES))
def test_a_row_committed_late_with_a_lower_id_is_seen(db, table):
    """The row with the study's lowest id in `table` is taken out, the snapshot read, then the row
    put back with its old id: the table's MAX(id) never moves (the global last-id fingerprint this
    replaced missed exactly this), yet the snapshot shows it within `revalidate_s`."""
    url, engine = db
    id_column, shown = TABLES[table]
    sid = _store(url).row("a").study_id
    pick = sqlalchemy.text(
        f"SELECT r.* FROM {table} r JOIN trials t ON t.trial_id = r.trial_id "
        f"WHERE t.study_id = :sid ORDER BY r.{id_column} LIMIT 1"
    )
    with engine.begin() as conn:
        row = conn.execute(pick, {"sid": sid}).mappings().one()
        top = conn.execute(sqlalchemy.text(f"SELECT MAX({id_column}) FROM {table}")).scalar()
        conn.execute(sqlalchemy.text(f"DELETE FROM {table} WHERE {id_column} = :id"), {"id": row[id_column]})
    key = row.get("key") or row.get("param_name") or row.get("step")

    def has_row(snapshot) -> bool:
        return key in shown(snapshot.by_number[_number(engine, row["trial_id"])])

    # A long max age: only the fingerprint can make the row visible, however slow the machine is.
    store = StudyStore(url, revalidate_s=REVALIDATE_S, max_age_s=LONG_MAX_AGE_S)
    assert not has_row(_snapshot(store, "a"))
    columns = ", ".join(row.keys())
    with engine.begin() as conn:
        conn.execute(
            sqlalchemy.text(f"INSERT INTO {table} ({columns}) VALUES ({', '.join(':' + c for c in row)})"),
            dict(row),
        )
        assert conn.execute(sqlalchemy.text(f"SELECT MAX({id_column}) FROM {table}")).scalar() == top
    assert _seen_within(store, "a", has_row, REVALIDATE_S) < LONG_MAX_AGE_S
    store.close()


def test_a_row_rewritten_in_place_is_seen_within_max_age(db):
    url, engine = db
    store = _store(url)
    first = _snapshot(store, "a")
    _rewrite_node(engine, first.fingerprint[0], "rewritten")
    elapsed = _seen_within(store, "a", lambda s: s.trials[0].user_attrs["node"] == "rewritten", MAX_AGE_S)
    assert elapsed <= MAX_AGE_S + REVALIDATE_S + SLACK_S
    store.close()


def _number(engine: sqlalchemy.Engine, trial_id: int) -> int:
    with engine.connect() as conn:
        return conn.execute(
            sqlalchemy.text("SELECT number FROM trials WHERE trial_id = :id"), {"id": trial_id}
        ).scalar_one()


def test_an_unchanged_study_read_again_at_its_age_keeps_its_analyses(db):
    """At `max_age_s` the trials are read again; found the same, the snapshot (and every analysis
    computed on it) is kept, and only a real change replaces it."""
    url, engine = db
    store = _store(url)
    first = _snapshot(store, "a")
    first.memo("analysis", lambda: "computed once")
    time.sleep(MAX_AGE_S + REVALIDATE_S)
    again = _snapshot(store, "a")
    assert again is first and again.peek("analysis") == "computed once"
    assert time.monotonic() - again.loaded_at < MAX_AGE_S  # read again, not merely kept
    _rewrite_node(engine, first.fingerprint[0], "moved")
    _seen_within(store, "a", lambda s: s.trials[0].user_attrs["node"] == "moved", MAX_AGE_S)
    assert _snapshot(store, "a").peek("analysis") is None  # a new version computes anew
    store.close()
