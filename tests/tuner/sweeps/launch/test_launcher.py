"""The sweeps module's process side without a sweep: the environment a sweep gets, where its log
goes, and the SIGTERM/SIGKILL escalation of a sweep that ignores its stop request."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from tuner.storage.study import DB_ENV, GENERATION_ENV
from tuner.sweeps.launch import launcher


def test_child_env_has_the_database_url_and_no_token(monkeypatch):
    monkeypatch.setenv("RNNTUNE_API_TOKEN", "w-secret")
    monkeypatch.setenv("RNNTUNE_API_READ_TOKEN", "r-secret")
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.1:6379")
    monkeypatch.setenv("RNNTUNE_SPACES_DIR", "/spaces")
    env = launcher.child_env("postgresql://u:pw@db/x", 7)
    assert env[DB_ENV] == "postgresql://u:pw@db/x" and env[GENERATION_ENV] == "7"
    assert env["RAY_ADDRESS"] == "10.0.0.1:6379" and env["RNNTUNE_SPACES_DIR"] == "/spaces"
    assert not {"RNNTUNE_API_TOKEN", "RNNTUNE_API_READ_TOKEN"} & set(env)
    assert "w-secret" not in str(env) and "r-secret" not in str(env)


def test_child_env_carries_mlflow_settings_docs_tell_users_to_set(monkeypatch):
    """docs/trackers.md: credentials and client settings of the tracking server are MLflow's own
    variables; a sweep the API starts must see them."""
    monkeypatch.setenv("MLFLOW_TRACKING_TOKEN", "ml-token")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "10")
    env = launcher.child_env("sqlite:///x.db", None)
    assert env["MLFLOW_TRACKING_TOKEN"] == "ml-token" and env["MLFLOW_HTTP_REQUEST_TIMEOUT"] == "10"


def test_child_env_carries_the_object_stores_settings(monkeypatch):
    """docs/cluster.md: a study kept in an object store is written with the AWS SDK's variables (S3),
    Google's (GCS) or Azure's; a sweep or finalize run the API starts for it must see them, as it sees
    MLflow's credentials."""
    settings = {
        "AWS_ENDPOINT_URL_S3": "http://minio:9000",
        "AWS_ACCESS_KEY_ID": "key-id",
        "AWS_SECRET_ACCESS_KEY": "cloud-secret",
        "AWS_DEFAULT_REGION": "eu-west-1",
        "GOOGLE_APPLICATION_CREDENTIALS": "/var/secrets/gcs.json",
        "STORAGE_EMULATOR_HOST": "http://127.0.0.1:4443",
        "AZURE_STORAGE_CONNECTION_STRING": "AccountName=a;AccountKey=azure-key",
        "AZURE_CLIENT_ID": "identity-for-azure-ad",
    }
    for key, value in settings.items():
        monkeypatch.setenv(key, value)
    env = launcher.child_env("sqlite:///x.db", None)
    assert {key: env.get(key) for key in settings} == settings


def test_log_path_stays_under_the_server_storage_whatever_the_study_name(tmp_path):
    for name in ("../../etc/cron.d/x", "/abs/path", "..", "ok-name.1"):
        path = launcher.log_path(tmp_path, name)
        assert path.parent == tmp_path / "sweep-logs" and path.suffix == ".log"
        assert path.resolve().is_relative_to(tmp_path.resolve())
    assert launcher.log_path(tmp_path, "a/b") != launcher.log_path(
        tmp_path, "a_b"
    )  # the hash keeps them apart


def test_a_sweep_that_ignores_its_stop_gets_sigterm_then_sigkill(tmp_path, monkeypatch):
    monkeypatch.setattr(launcher, "KILL_AFTER_S", 1.0)
    code = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('up', flush=True); time.sleep(120)"
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "up"
    handle = launcher.Handle(name="stubborn", process=proc, log=Path(tmp_path / "x.log"))
    started = time.monotonic()
    launcher.terminate_after(handle, timeout_s=0.5)
    assert proc.wait(5) == -9 and time.monotonic() - started < 10  # SIGTERM ignored, SIGKILL ended it
    assert not handle.running


def test_a_sweep_that_obeys_sigterm_never_gets_sigkill(tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    handle = launcher.Handle(name="polite", process=proc, log=Path(tmp_path / "x.log"))
    launcher.terminate_after(handle, timeout_s=0.5)
    assert proc.wait(5) == -15


def _alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie waiting for its reaper counts as ended)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def test_the_escalation_ends_what_the_sweep_started(tmp_path, monkeypatch):
    """A sweep started in its own session (as the launcher starts every child) that ignores SIGTERM,
    with a grandchild that ignores it too (as an in-process Ray worker holding a GPU might): the
    SIGKILL goes to the process group, so the grandchild does not outlive the sweep."""
    monkeypatch.setattr(launcher, "KILL_AFTER_S", 1.0)
    code = (
        "import signal, subprocess, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "child = subprocess.Popen([sys.executable, '-c', 'import signal, time; "
        "signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(120)']); "
        "print(child.pid, flush=True); time.sleep(120)"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    grandchild = int(proc.stdout.readline())
    assert _alive(grandchild)
    handle = launcher.Handle(name="stubborn-tree", process=proc, log=Path(tmp_path / "x.log"))
    launcher.terminate_after(handle, timeout_s=0.5)
    assert proc.wait(5) == -9
    deadline = time.monotonic() + 5
    while _alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(grandchild)
