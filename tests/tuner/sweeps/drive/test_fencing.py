"""Fencing of a driver cut off from its database (real PostgreSQL behind a TCP proxy the test
controls, real lease, real Optuna, real Ray): it fences itself before its lease can expire, writes
nothing more, and a second driver takes the study over with nothing told twice, nothing left
RUNNING and no completed trial lost (docs/reliability.md)."""

from __future__ import annotations

import os
import re
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from optuna.trial import TrialState
from sqlalchemy.engine import make_url

from tests.conftest import TINY_SETTINGS
from tests.tcp_proxy import TcpProxy
from tests.tuner.sweeps.fence_driver import LEASE_LOST_EXIT, LONG
from tests.tuner.sweeps.test_drills import shared_ray_head  # noqa: F401  # a fixture: both drivers join it
from tuner.errors import LeaseLost
from tuner.space import SearchSpace
from tuner.storage import lease
from tuner.storage.lease import acquire, lease_engine, new_owner, read, renew
from tuner.storage.study import load_study
from tuner.sweeps.drive.lease import LeaseKeeper, StopRequest
from tuner.sweeps.drive.run import ZOMBIE_REASON
from tuner.sweeps.drive.searcher import StudySearcher
from tuner.sweeps.study.create import create_study

TTL_S = 8.0


@pytest.fixture
def short_lease(monkeypatch):
    """This process's lease timings for a TTL of TTL_S (a driver process gets RNNTUNE_LEASE_TTL_S)."""
    for attr, value in (
        ("LEASE_TTL_S", TTL_S),
        ("HEARTBEAT_S", TTL_S / 6),
        ("FENCE_MARGIN_S", TTL_S / 4),
        ("STOP_POLL_S", min(1.0, TTL_S / 6)),
    ):
        monkeypatch.setattr(lease, attr, value)


@pytest.fixture
def proxy(postgres_url):
    p = TcpProxy(make_url(postgres_url).port)
    yield p
    p.close()


def _study(url: str, root: Path, **spec) -> str:
    name = f"fence-{secrets.token_hex(3)}"
    create_study(
        name,
        storage_url=url,
        space="tiny",
        storage_path=root,
        overrides={"set": TINY_SETTINGS},
        sampler="random",
        scheduler="none",
        seed=0,
        **spec,
    )
    return name


def test_cut_off_driver_fences_itself_before_its_lease_expires(tmp_path, postgres_url, proxy, short_lease):
    name = _study(postgres_url, tmp_path / "storage", n_trials=2)
    request = StopRequest()
    keeper = LeaseKeeper(proxy.url(postgres_url), name, request)
    keeper.acquire()
    keeper.check()  # holds it: the fence passes
    direct = lease_engine(postgres_url)
    held = read(direct, name)
    assert (held.owner, held.epoch) == (keeper.owner, keeper.epoch)
    proxy.block()
    deadline = time.monotonic() + TTL_S
    while keeper.holds:
        assert time.monotonic() < deadline, "the driver did not fence itself within the TTL"
        time.sleep(0.05)
    fenced_at = time.time()
    assert fenced_at < read(direct, name).expires_at  # fenced before anybody could take over
    assert request.reason == keeper.lost and "not renewed" in keeper.lost
    with pytest.raises(LeaseLost, match="lost"):
        keeper.check()
    study = load_study(name, postgres_url)  # what the fenced driver's searcher would write to
    searcher = StudySearcher(
        study, SearchSpace.from_dict(study.user_attrs["space_def"]), tmp_path, 2, fence=keeper
    )
    assert searcher.suggest("ray-0") == "FINISHED" and study.get_trials() == []  # no ask once fenced

    while acquire(direct, name, second := new_owner()) is None:  # the lease expires: taken over
        assert time.time() < fenced_at + TTL_S
        time.sleep(0.2)
    proxy.unblock()
    assert renew(lease_engine(proxy.url(postgres_url)), name, keeper.owner, keeper.epoch) is None
    with pytest.raises(LeaseLost):
        keeper.check()  # healed, but lost for good
    keeper.close()  # gives nothing back: the lease is the new driver's
    assert read(direct, name).owner == second and read(direct, name).epoch == keeper.epoch + 1
    direct.dispose()


def test_take_over_by_a_host_with_a_fast_clock_is_caught_at_the_next_tell(tmp_path):
    """Another host whose clock runs ahead sees the lease expired early and takes it (its acquire's
    compare-and-set, run here with its clock): the old driver's next tell is refused by epoch."""
    import sqlalchemy as sa

    db = f"sqlite:///{tmp_path / 's.db'}"
    name = _study(db, tmp_path / "storage", n_trials=2)
    request = StopRequest()
    keeper = LeaseKeeper(db, name, request)
    keeper.acquire()
    study = load_study(name, db)
    searcher = StudySearcher(
        study, SearchSpace.from_dict(study.user_attrs["space_def"]), tmp_path, 2, fence=keeper
    )
    config = searcher.suggest("ray-0")
    assert searcher._ahead.settle(timeout=30) == 1  # the next trial, asked ahead under the lease
    engine = lease_engine(db)
    skewed_now = time.time() + 2 * lease.LEASE_TTL_S
    with engine.begin() as conn:
        taken = conn.execute(
            sa.update(lease.leases)
            .where(lease.leases.c.study_name == name, lease.leases.c.expires_at < skewed_now)
            .values(
                owner=new_owner(), expires_at=skewed_now + lease.LEASE_TTL_S, epoch=lease.leases.c.epoch + 1
            )
        ).rowcount
    assert taken == 1
    searcher.on_trial_complete("ray-0", {"final": True, "best_val_loss": 4.2, "step": 30})
    assert load_study(name, db).trials[config["trial_number"]].state == TrialState.RUNNING  # not told
    assert keeper.lost is not None and "another driver took over" in keeper.lost
    assert request.reason == keeper.lost and not searcher.writable
    assert searcher.suggest("ray-1") == "FINISHED"  # not even the trial asked ahead starts
    assert [t.state for t in load_study(name, db).trials] == [TrialState.RUNNING] * 2  # the next driver's
    keeper.close()
    assert read(engine, name).owner != keeper.owner  # the old driver released nothing
    engine.dispose()


def _finished(url: str, name: str) -> dict[int, tuple]:
    return {
        t.number: (t.state, t.value, t.params)
        for t in load_study(name, url).get_trials()
        if t.state in (TrialState.COMPLETE, TrialState.PRUNED)
    }


def _driver(name: str, url: str, log: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.tuner.sweeps.fence_driver", name, url, *args],
        env={**os.environ, lease.TTL_ENV: str(TTL_S)},  # and RAY_ADDRESS with its token: the shared head
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
    )


def _exit_code(proc: subprocess.Popen, timeout_s: float, log: Path) -> int | None:
    """The driver's exit code within `timeout_s`; else None, its stacks dumped into its log."""
    try:
        return proc.wait(timeout_s)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGUSR1)
        time.sleep(1)
        return None


@pytest.mark.slow
@pytest.mark.usefixtures("shared_ray_head")
def test_drill_driver_partitioned_for_twice_the_ttl_while_another_takes_over(
    tmp_path, postgres_url, proxy, short_lease
):
    name = _study(postgres_url, tmp_path / "storage", n_trials=4, parallel=2)
    logs = tmp_path / "first.log", tmp_path / "second.log"
    first = _driver(name, proxy.url(postgres_url), logs[0])
    second = None
    try:
        deadline = time.monotonic() + 120
        while True:  # trial 0 done, the LONG ones in flight (and the next one asked ahead, maybe)
            trials = load_study(name, postgres_url).get_trials()
            running = {t.number for t in trials if t.state == TrialState.RUNNING}
            if set(LONG) <= running and any(t.state == TrialState.COMPLETE for t in trials):
                break
            assert first.poll() is None and time.monotonic() < deadline, logs[0].read_text()
            time.sleep(0.5)
        before = _finished(postgres_url, name)
        proxy.block()
        blocked_at = time.monotonic()
        expires_at = read(lease_engine(postgres_url), name).expires_at  # its last renewal's
        second = _driver(name, postgres_url, logs[1], "--take-over")
        assert _exit_code(first, 2 * TTL_S + 30, logs[0]) == LEASE_LOST_EXIT, logs[0].read_text()
        time.sleep(max(0.0, blocked_at + 2 * TTL_S - time.monotonic()))
        partition_s = time.monotonic() - blocked_at
        proxy.unblock()
        assert _exit_code(second, 120, logs[1]) == 0, logs[1].read_text()
    finally:
        proxy.unblock()
        for p in (first, second):
            if p is not None and p.poll() is None:
                p.kill()
    text = logs[0].read_text()
    lost_at = float(re.search(r"LeaseLost at ([0-9.]+): .*not renewed", text)[1])
    exited_at = float(re.search(r"exiting at ([0-9.]+)", text)[1])
    assert lost_at < expires_at and partition_s >= 2 * TTL_S  # fenced before its lease could expire
    storage = tmp_path / "storage"
    last_beat = max((storage / f"trial-{n}" / f"alive-{n}").stat().st_mtime for n in LONG)
    # Its trials stopped before anybody could take the study over, and it exited after them.
    assert last_beat < expires_at and last_beat < exited_at, (lost_at, last_beat, exited_at, expires_at)
    assert "ended finished 4/4" in logs[1].read_text()
    trials = load_study(name, postgres_url).get_trials()
    assert not [t.number for t in trials if t.state == TrialState.RUNNING]  # 0 left RUNNING
    assert {n: _finished(postgres_url, name).get(n) for n in before} == before  # 0 completed lost
    failed = [t for t in trials if t.state == TrialState.FAIL]
    # 0 told twice: the first driver's trials in flight (and any it had asked ahead, never started)
    # were told FAIL once, by the second driver (never "interrupted" by the first), and each was
    # retried once.
    assert set(LONG) <= {t.number for t in failed}
    assert all(t.user_attrs["error"] == ZOMBIE_REASON and t.user_attrs["needs_retry"] for t in failed)
    retries = sorted(t.user_attrs["retry_of"] for t in trials if "retry_of" in t.user_attrs)
    assert retries == [t.number for t in failed] and len(trials) == 4 + len(failed)
    assert read(lease_engine(postgres_url), name).state() == "stopped"
