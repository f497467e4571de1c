"""The docker-compose topology as processes on this machine: PostgreSQL, a Ray head and a second Ray
node started through docker/entrypoint (token auth on, each node with its own temp dir and ports,
the second node on 127.0.0.2 so the two are told apart), the API (`rnntune serve` against
PostgreSQL and a shared storage folder), and sweeps started through the API by `rnntune remote`,
the client the compose `sweep` service runs.

Every process is started here and stopped here by PID (its process tree, then anything still
running that names this test's private folder), even when a test fails.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import TINY_SETTINGS
from tests.postgres import free_port

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
ENTRYPOINT = ROOT / "docker" / "entrypoint"
WORKER_IP = "127.0.0.2"  # the second node's address: all of 127.0.0.0/8 is this machine
# Ray notices a dead node after about period × threshold.
FAST_HEALTH_CHECKS = {
    "RAY_health_check_initial_delay_ms": "1000",
    "RAY_health_check_period_ms": "1000",
    "RAY_health_check_timeout_ms": "1000",
    "RAY_health_check_failure_threshold": "3",
}
SECRET_ENV = (
    "RNNTUNE_DB_URL",
    "RNNTUNE_API_TOKEN",
    "RNNTUNE_API_READ_TOKEN",
    "RAY_AUTH_TOKEN",
    "RAY_AUTH_MODE",
    "RAY_AUTH_TOKEN_PATH",
    "RAY_ADDRESS",
    "POSTGRES_PASSWORD",
)


# --- processes, stopped by PID -----------------------------------------------------------------
def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        tree.setdefault(ppid, []).append(int(entry.name))
    return tree


def descendants(pid: int) -> list[int]:
    tree, out, todo = _children(), [], [pid]
    while todo:
        for child in tree.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _kill(pids: list[int], sig: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


@dataclass
class Proc:
    name: str
    popen: subprocess.Popen
    log: Path

    def tail(self, n: int = 4000) -> str:
        try:
            return f"--- {self.name} ({self.log}) ---\n" + self.log.read_text(errors="replace")[-n:]
        except OSError:
            return f"--- {self.name}: no log ---"


@dataclass
class Processes:
    """Processes this test started; `stop_all` ends each one's tree by PID."""

    root: Path
    items: list[Proc] = field(default_factory=list)

    def start(self, name: str, cmd: list[str], env: dict[str, str], cwd: Path | None = None) -> Proc:
        log = self.root / "logs" / f"{name}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("ab") as out:
            popen = subprocess.Popen(
                [str(c) for c in cmd],
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=cwd or self.root,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        proc = Proc(name, popen, log)
        self.items.append(proc)
        return proc

    def kill_tree(self, proc: Proc) -> None:
        """SIGKILL a process and everything it started, at once (a machine dying)."""
        pids = [proc.popen.pid, *descendants(proc.popen.pid)]
        _kill(pids, signal.SIGKILL)
        proc.popen.wait(timeout=30)

    def stop(self, proc: Proc, sig: int = signal.SIGTERM, timeout: float = 30.0) -> None:
        """Ask politely, wait, then SIGKILL whatever of its tree is left."""
        pids = descendants(proc.popen.pid)
        if proc.popen.poll() is None:
            _kill([proc.popen.pid], sig)
            try:
                proc.popen.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                pids = [proc.popen.pid, *descendants(proc.popen.pid), *pids]
        _kill(pids, signal.SIGKILL)
        if proc.popen.poll() is None:
            proc.popen.kill()
            proc.popen.wait(timeout=10)

    def stop_all(self) -> None:
        for proc in reversed(self.items):
            self.stop(proc, signal.SIGINT if proc.name == "api" else signal.SIGTERM)
        # Ray re-parents some of its processes; anything left that names our private folder is ours.
        marker = str(self.root)
        left = [
            int(p.name)
            for p in Path("/proc").iterdir()
            if p.name.isdigit() and marker in _cmdline(int(p.name))
        ]
        _kill([p for p in left if p != os.getpid()], signal.SIGKILL)


# --- the cluster -------------------------------------------------------------------------------
def http(
    method: str, url: str, token: str | None = None, body: dict | None = None
) -> tuple[int, dict, bytes]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    data = None
    if body is not None:
        data, headers["Content-Type"] = json.dumps(body).encode(), "application/json"
    request = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), err.read()


def wait_for(
    what: str, predicate: Callable[[], bool], timeout: float, watch: list[Proc], step: float = 0.5
) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        for proc in watch:
            if proc.popen.poll() is not None:
                pytest.fail(
                    f"{proc.name} exited ({proc.popen.returncode}) while waiting for {what}\n{proc.tail()}"
                )
        if time.monotonic() > deadline:
            pytest.fail(
                f"timed out after {timeout:.0f} s waiting for {what}\n" + "\n".join(p.tail() for p in watch)
            )
        time.sleep(step)


def node_ports() -> list[str]:
    """Explicit ports for every listening Ray process of a node, so two nodes never collide."""
    args = []
    for flag in (
        "--node-manager-port",
        "--object-manager-port",
        "--metrics-export-port",
        "--runtime-env-agent-port",
        "--dashboard-agent-grpc-port",
        "--dashboard-agent-listen-port",
    ):
        args += [flag, str(free_port())]
    return args


@dataclass
class Cluster:
    root: Path
    storage: Path
    db_url: str
    api_url: str
    api_token: str
    ray_token: str
    gcs: str
    procs: Processes
    head: Proc
    worker: Proc
    api: Proc
    base_env: dict[str, str]

    @property
    def db_password(self) -> str:
        from sqlalchemy.engine import make_url

        return make_url(self.db_url).password

    def start_sweep(self, name: str, trials: int, settings: dict) -> Proc:
        """`rnntune remote create --start --follow` (what the compose `sweep` service runs) against
        the API: it starts the sweep, then follows it to its end."""
        env = {**self.base_env, "RNNTUNE_API_URL": self.api_url, "RNNTUNE_API_TOKEN": self.api_token}
        cmd = [
            BIN / "rnntune",
            "remote",
            "--wait",
            "30",
            "create",
            name,
            "--space",
            "tiny",
            "--trials",
            str(trials),
            "--parallel",
            "2",
            "--sampler",
            "random",
            "--scheduler",
            "none",
            "--seed",
            "7",
            "--start",
        ]
        cmd += [arg for k, v in settings.items() for arg in ("--set", f"{k}={v}")]
        return self.procs.start(f"remote-{name}", [*cmd, "--follow"], env)

    def study(self, name: str):
        import optuna

        return optuna.load_study(study_name=name, storage=self.db_url)

    def study_json(self, name: str) -> dict:
        status, _, body = http("GET", f"{self.api_url}/studies/{name}")
        assert status == 200, body
        return json.loads(body)


@pytest.fixture(scope="module")
def cluster(postgres_url: str) -> Iterator[Cluster]:
    """One cluster for this module's two tests: the sweep on both nodes, then the worker node killed
    (last: it leaves the cluster with the head alone)."""
    if not shutil.which("bash") or not Path("/proc").is_dir():
        pytest.skip("needs bash and /proc (Linux)")
    # Short: Ray's unix sockets live under the temp dirs and their paths are limited to 107 bytes.
    root = Path(tempfile.mkdtemp(prefix="rnt-", dir="/tmp"))
    procs = Processes(root)
    storage = root / "studies"
    storage.mkdir()
    ray_token, api_token = secrets.token_hex(32), secrets.token_hex(16)
    base_env = {k: v for k, v in os.environ.items() if k not in SECRET_ENV}
    base_env.update(
        PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        PYTHONUNBUFFERED="1",
        RAY_USAGE_STATS_ENABLED="0",
    )
    ray_env = {**base_env, **FAST_HEALTH_CHECKS, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": ray_token}
    gcs_port = free_port()
    gcs = f"127.0.0.1:{gcs_port}"
    try:
        head = procs.start(
            "ray-head",
            [ENTRYPOINT, "head", "--temp-dir", root / "ray-head", *node_ports()],
            {**ray_env, "RAY_HEAD_PORT": str(gcs_port), "RAY_HEAD_NUM_CPUS": "1"},
        )
        wait_for("the Ray head", lambda: "Ray runtime started" in head.log.read_text(), 120, [head])
        worker = procs.start(
            "ray-worker",
            [ENTRYPOINT, "worker", "--temp-dir", root / "ray-worker", *node_ports()],
            {**ray_env, "RAY_ADDRESS": gcs, "RAY_NODE_IP_ADDRESS": WORKER_IP, "RAY_WORKER_NUM_CPUS": "1"},
        )
        wait_for(
            "the Ray worker node",
            lambda: "Ray runtime started" in worker.log.read_text(),
            120,
            [head, worker],
        )
        api_port = free_port()
        api = procs.start(
            "api",
            [BIN / "rnntune", "serve", "--host", "127.0.0.1", "--port", str(api_port), "--storage", storage],
            {**ray_env, "RAY_ADDRESS": gcs, "RNNTUNE_DB_URL": postgres_url, "RNNTUNE_API_TOKEN": api_token},
        )
        api_url = f"http://127.0.0.1:{api_port}"

        def api_up() -> bool:
            try:
                return http("GET", f"{api_url}/openapi.json")[0] == 200
            except OSError:
                return False

        wait_for("the API", api_up, 60, [head, worker, api])
        yield Cluster(
            root,
            storage,
            postgres_url,
            api_url,
            api_token,
            ray_token,
            gcs,
            procs,
            head,
            worker,
            api,
            base_env,
        )
    finally:
        procs.stop_all()
        if not os.environ.get("RNNTUNE_TEST_KEEP"):  # set it to look at the logs afterwards
            shutil.rmtree(root, ignore_errors=True)


# --- checks --------------------------------------------------------------------------------------
def wait_exit(proc: Proc, timeout: float, others: list[Proc]) -> int:
    wait_for(f"{proc.name} to finish", lambda: proc.popen.poll() is not None, timeout, others)
    return proc.popen.returncode


def secrets_in_files(root: Path, secrets_: dict[str, str]) -> list[str]:
    found = []
    for path in root.rglob("*"):
        try:
            if not path.is_file() or path.is_symlink():
                continue
            data = path.read_bytes()
        except OSError:
            continue
        found += [f"{what} in {path}" for what, value in secrets_.items() if value.encode() in data]
    return found


def ray_job_entrypoints(cluster: Cluster) -> list[str]:
    """The command lines Ray's GCS recorded for the drivers that connected (its job table)."""
    code = (
        f"import json, ray; ray.init(address={cluster.gcs!r}, logging_level='ERROR', log_to_driver=False); "
        "print('JOBS ' + json.dumps([j.get('Entrypoint', '') for j in ray._private.state.jobs()]))"
    )
    env = {**cluster.base_env, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": cluster.ray_token}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120, cwd=cluster.root
    )
    lines = [line for line in out.stdout.splitlines() if line.startswith("JOBS ")]
    assert lines, out.stdout + out.stderr
    return json.loads(lines[-1][5:])


def check_token_auth(cluster: Cluster) -> None:
    """Ray refuses a driver without the cluster's token; the compose healthcheck of the head works with it.

    The refused driver gives up after 2 connection attempts (`RAY_gcs_server_port_wait_time_s`, read
    by ray/_private/node.py's `_init_gcs_client`) instead of Ray's default 20, a second each."""
    env = {
        **cluster.base_env,
        "RAY_AUTH_MODE": "disabled",
        "HOME": str(cluster.root / "nohome"),
        "RAY_gcs_server_port_wait_time_s": "2",
    }
    code = f"import ray; ray.init(address={cluster.gcs!r}, logging_level='ERROR'); print('CONNECTED')"
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=180, cwd=cluster.root
    )
    refused = out.stdout + out.stderr[-2000:]
    assert "CONNECTED" not in out.stdout and out.returncode != 0, refused
    assert "InvalidAuthToken" in out.stderr, refused  # refused for its token, not unreachable
    health = subprocess.run(
        [BIN / "ray", "health-check", "--address", cluster.gcs],
        capture_output=True,
        text=True,
        timeout=60,
        env={**cluster.base_env, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": cluster.ray_token},
    )
    assert health.returncode == 0, health.stdout + health.stderr


def nodes_of(study) -> set[str]:
    return {t.user_attrs.get("node") for t in study.trials if t.user_attrs.get("node")}


def test_sweep_through_the_api_on_both_nodes_survives_a_worker_node_killed_mid_trial(
    cluster: Cluster,
) -> None:
    """One sweep started through the API, as the compose `sweep` service does: its trials run on
    both Ray nodes; the worker node is killed while a trial reports from it, and that trial is
    retried on the other node; everything (states, params, curves, checkpoints, nodes) is in
    PostgreSQL, the API reads it and serves the best checkpoint, and no secret is left in a file."""
    from optuna.trial import TrialState

    from tests.tuner.sweep_checks import check_trials
    from trainer import load_checkpoint

    name = "cluster-e2e"
    settings = {**TINY_SETTINGS, "max_steps": 300, "eval_every": 10}
    launcher = cluster.start_sweep(name, trials=3, settings=settings)

    victim: list = []

    def running_on_worker() -> bool:
        try:
            trials = cluster.study(name).trials
        except KeyError:  # the client has not created the study yet
            return False
        for t in trials:
            if (
                t.state == TrialState.RUNNING
                and t.user_attrs.get("node") == WORKER_IP
                and t.intermediate_values
            ):
                victim.append(t)
                return True
        return False

    wait_for(
        "a trial reporting from the worker node",
        running_on_worker,
        300,
        [cluster.head, cluster.worker, cluster.api],
    )
    killed = victim[0]
    cluster.procs.kill_tree(cluster.worker)

    wait_for(
        "the sweep to finish",
        lambda: cluster.study_json(name)["status"] in ("finished", "failed", "stopped"),
        600,
        [cluster.head, cluster.api],
        step=2.0,
    )
    assert wait_exit(launcher, 120, [cluster.head, cluster.api]) == 0, launcher.tail()
    study = cluster.study(name)
    assert study.user_attrs["status"] == "finished", [(t.number, t.state, t.user_attrs) for t in study.trials]
    trials = {t.number: t for t in study.trials}
    dead = trials[killed.number]
    assert dead.state == TrialState.FAIL and dead.user_attrs.get("error"), dead
    retries = [t for t in study.trials if t.user_attrs.get("retry_of") == killed.number]
    assert len(retries) == 1, [(t.number, t.user_attrs.get("retry_of")) for t in study.trials]
    retry = retries[0]
    assert retry.state == TrialState.COMPLETE and retry.params == dead.params
    assert retry.user_attrs["node"] != WORKER_IP, "the retry ran on the dead node"
    assert max(retry.intermediate_values) == settings["max_steps"]
    # Nothing lost: every trial is finished or a FAIL that was retried; the study reached its count.
    states = check_trials(study)
    assert states.get(TrialState.COMPLETE, 0) + states.get(TrialState.PRUNED, 0) == 3, states
    for t in study.trials:
        if t.state == TrialState.FAIL:
            assert any(
                r.user_attrs.get("retry_of") == t.number and r.state == TrialState.COMPLETE
                for r in study.trials
            ), f"FAIL trial {t.number} was never retried"
    nodes = nodes_of(study)
    assert WORKER_IP in nodes and len(nodes) == 2, f"trials ran on {nodes}, not on both Ray nodes"
    for t in study.trials:
        if t.state == TrialState.COMPLETE:
            assert Path(t.user_attrs["checkpoint"]).resolve().is_relative_to(cluster.storage.resolve())

    # The API reads the same study.
    detail = cluster.study_json(name)
    assert detail["status"] == "finished" and detail["counts"]["COMPLETE"] == states[TrialState.COMPLETE]
    assert detail["best_trial"]["number"] == study.best_trial.number

    # The best checkpoint downloads through the API and loads into the trainer.
    status, headers, body = http("GET", f"{cluster.api_url}/studies/{name}/best/checkpoint")
    assert status == 200, body[:500]
    best_file = Path(study.best_trial.user_attrs["checkpoint"])
    assert body == best_file.read_bytes()
    sha = {k.lower(): v for k, v in headers.items()}.get("x-checkpoint-sha256")
    assert sha == hashlib.sha256(body).hexdigest()
    downloaded = cluster.root / "downloaded-best.pt"
    downloaded.write_bytes(body)
    model, cfg = load_checkpoint(downloaded)
    assert cfg.hidden_size == TINY_SETTINGS["hidden_size"] and model is not None

    check_token_auth(cluster)

    # No password or token in plain text in logs, Ray's files and experiment state, or Ray's job table.
    leaks = secrets_in_files(
        cluster.root,
        {
            "database password": cluster.db_password,
            "Ray token": cluster.ray_token,
            "API token": cluster.api_token,
        },
    )
    entrypoints = ray_job_entrypoints(cluster)
    assert entrypoints, "Ray recorded no driver"
    leaks += [
        f"database password in a Ray job's recorded command line: {e.replace(cluster.db_password, '***')}"
        for e in entrypoints
        if cluster.db_password in e
    ]
    assert not leaks, "\n".join(leaks)
