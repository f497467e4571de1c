"""scripts/clear-stale-docker-pidfiles and scripts/start-dockerd, run as the Compose test runs them.

The rule the pid-file script guards against is dockerd's own (moby
libcontainerd/supervisor/remote_daemon.go, getContainerdPid): any live pid in containerd.pid is
taken for containerd. A snapshot-restored machine whose old pid now belongs to another process made
dockerd wait for a containerd that was not there and give up, failing the Compose test in CI.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CLEAR = ROOT / "scripts" / "clear-stale-docker-pidfiles"
START = ROOT / "scripts" / "start-dockerd"


@pytest.fixture
def named_process(tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A live process whose name (/proc/PID/comm) is `containerd`: a copy of sleep so named."""
    binary = tmp_path / "bin" / "containerd"
    binary.parent.mkdir()
    shutil.copy(shutil.which("sleep") or "/bin/sleep", binary)
    process = subprocess.Popen([str(binary), "60"])
    yield process
    process.kill()
    process.wait()


def run_dir_with(tmp_path: Path, docker_pid: int, containerd_pid: int) -> Path:
    run_dir = tmp_path / "run"
    (run_dir / "docker" / "containerd").mkdir(parents=True)
    (run_dir / "docker.pid").write_text(str(docker_pid))
    (run_dir / "docker" / "containerd" / "containerd.pid").write_text(str(containerd_pid))
    return run_dir


def clear(run_dir: Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([str(CLEAR), str(run_dir)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done


def test_a_pid_file_naming_another_live_process_is_removed(
    tmp_path: Path, named_process: subprocess.Popen[bytes]
) -> None:
    run_dir = run_dir_with(tmp_path, docker_pid=named_process.pid, containerd_pid=named_process.pid)
    done = clear(run_dir)
    assert not (run_dir / "docker.pid").exists(), "a live containerd is not dockerd"
    assert (run_dir / "docker" / "containerd" / "containerd.pid").exists(), "the real one is kept"
    assert f"pid {named_process.pid} is containerd, not dockerd" in done.stderr


def test_a_pid_file_naming_this_test_or_a_dead_pid_is_removed(tmp_path: Path) -> None:
    finished = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    dead = int(finished.stdout)
    run_dir = run_dir_with(tmp_path, docker_pid=dead, containerd_pid=os.getpid())
    done = clear(run_dir)
    assert not (run_dir / "docker.pid").exists()
    assert not (run_dir / "docker" / "containerd" / "containerd.pid").exists()
    assert "not running, not dockerd" in done.stderr
    assert "not containerd" in done.stderr


def test_no_pid_files_is_nothing_to_do(tmp_path: Path) -> None:
    assert clear(tmp_path).stderr == ""


def test_start_dockerd_clears_stale_pid_files_before_it_starts_the_engine() -> None:
    text = START.read_text()
    assert text.index("clear-stale-docker-pidfiles") < text.index("setsid dockerd")
    assert "tail -n" in text, "a failed start prints the end of the engine's log"
