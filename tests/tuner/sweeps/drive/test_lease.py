"""The sweep driver's hold on a study (tuner.sweeps.drive.lease) and the checks `run_sweep` makes
before Ray starts: one driver per study, a stop stored during start-up, one study per storage folder."""

from __future__ import annotations

import io
import os
import socket
import time

import pytest

from tuner.cli import main
from tuner.storage.lease import STOP_POLL_S, begin, lease_engine, read, request_stop
from tuner.storage.study import StudyNotFoundError, load_study
from tuner.sweeps.drive.lease import DriverBusy, LeaseKeeper, StopRequest
from tuner.sweeps.drive.run import OWNER_FILE, claim_storage, run_sweep
from tuner.sweeps.study.create import create_study


@pytest.fixture
def db(tmp_path):
    return f"sqlite:///{tmp_path / 'db.sqlite'}"


def test_second_driver_is_refused_naming_the_first(db):
    first = LeaseKeeper(db, "s", StopRequest())
    first.acquire()
    try:
        with pytest.raises(DriverBusy, match=rf"being run by pid {os.getpid()} on {socket.gethostname()}"):
            LeaseKeeper(db, "s", StopRequest()).acquire()
    finally:
        first.close()
    assert read(lease_engine(db), "s").state() == "stopped"
    second = LeaseKeeper(db, "s", StopRequest())
    second.acquire()  # a released lease is free at once
    second.close()


def test_stop_stored_during_start_up_is_kept(db):
    engine = lease_engine(db)
    generation = begin(engine, "s")  # what the API does before it launches the sweep
    request_stop(engine, "s", "stop requested through the API")
    request = StopRequest()
    keeper = LeaseKeeper(db, "s", request, generation)
    keeper.acquire()
    keeper.close()
    assert request.reason == "stop requested through the API"


def test_stop_stored_while_driving_reaches_the_driver(db):
    request = StopRequest()
    keeper = LeaseKeeper(db, "s", request)
    keeper.acquire()
    try:
        assert request.reason is None
        request_stop(lease_engine(db), "s", "stop from another API instance")
        deadline = time.monotonic() + 10 * STOP_POLL_S
        while request.reason is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert request.reason == "stop from another API instance"
    finally:
        keeper.close()


def test_an_old_stop_does_not_stop_a_new_start(db):
    engine = lease_engine(db)
    begin(engine, "s")
    request_stop(engine, "s", "old stop")
    request = StopRequest()
    keeper = LeaseKeeper(db, "s", request)  # a new start from the command line
    keeper.acquire()
    keeper.close()
    assert request.reason is None


def test_run_sweep_refuses_a_study_another_driver_holds(db, tmp_path):
    create_study("held", storage_url=db, space="tiny", n_trials=1, storage_path=tmp_path / "s")
    holder = LeaseKeeper(db, "held", StopRequest())
    holder.acquire()
    try:
        with pytest.raises(DriverBusy):
            run_sweep("held", db, out=io.StringIO())
    finally:
        holder.close()
    assert load_study("held", db).user_attrs["status"] == "created"


def test_stop_before_the_driver_starts_ends_stopped_without_trials(db, tmp_path):
    create_study("early", storage_url=db, space="tiny", n_trials=2, storage_path=tmp_path / "s")
    engine = lease_engine(db)
    generation = begin(engine, "early")
    request_stop(engine, "early", "stop requested through the API")
    outcome = run_sweep("early", db, generation=generation, out=io.StringIO())
    assert (outcome.status, outcome.finished) == ("stopped", 0)
    study = load_study("early", db)
    assert study.user_attrs["status"] == "stopped" and study.trials == []
    assert read(engine, "early").state() == "stopped"


def test_second_study_in_a_storage_folder_is_refused_naming_the_owner(db, tmp_path, capsys):
    shared = tmp_path / "shared"
    create_study("A", storage_url=db, space="tiny", n_trials=1, storage_path=shared)
    claim_storage(shared, "A")  # what A's sweep does before its first trial
    assert (shared / OWNER_FILE).read_text().strip() == "A"
    assert main(["sweep", "--name", "B", "--storage", str(shared), "--db", db]) == 2
    assert f"storage folder {shared} belongs to study 'A'" in capsys.readouterr().err
    with pytest.raises(StudyNotFoundError):
        load_study("B", db)
    create_study("C", storage_url=db, space="tiny", n_trials=1, storage_path=shared)  # e.g. over REST
    assert main(["sweep", "--resume", "C", "--db", db]) == 2
    assert "belongs to study 'A'" in capsys.readouterr().err
    assert load_study("C", db).user_attrs["status"] == "created"
