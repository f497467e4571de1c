"""docker-compose.yml, .env.example, the image and its scripts.

The compose file is rendered by Compose itself (`docker-compose config`, Debian's docker-compose
1.29) with a .env from docker/make-env, and its structure checked: the services the cluster needs,
how they wait for each other, shared storage, /dev/shm, and that no secret is written in it. The
slow test at the end runs `docker-compose up` for real on images built on this machine
(tests/compose_images.py).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.conftest import TINY_SETTINGS
from tests.postgres import free_port

ROOT = Path(__file__).resolve().parent.parent
COMPOSE = ROOT / "docker-compose.yml"
ENV_EXAMPLE = ROOT / ".env.example"
DOCKERFILE = ROOT / "docker" / "Dockerfile"
ENTRYPOINT = ROOT / "docker" / "entrypoint"
MAKE_ENV = ROOT / "docker" / "make-env"
SERVICES = {"postgres", "studies-owner", "ray-head", "ray-worker", "api", "sweep"}
RAY_NODES = ("ray-head", "ray-worker", "api")  # every container running a Ray node
SECRETS = ("POSTGRES_PASSWORD", "RAY_AUTH_TOKEN", "RNNTUNE_API_TOKEN", "RNNTUNE_API_READ_TOKEN")
# A variable reference in the compose file (to find which settings it uses; Compose interpolates).
VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}")
# Settings from the caller's environment would override .env; Compose runs without them.
OWN_PREFIXES = ("POSTGRES_", "RAY_", "RNNTUNE_", "COMPOSE_")


def env_from_make_env(tmp_path: Path) -> dict[str, str]:
    """A complete .env written by docker/make-env (fresh secrets), as a dict."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    target = Path(tempfile.mkdtemp(dir=tmp_path)) / "test.env"
    subprocess.run([str(MAKE_ENV), str(target)], check=True, capture_output=True)
    return read_env(target)


def read_env(path: Path) -> dict[str, str]:
    env = {}
    for line in path.read_text().splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            env[key] = value
    return env


def compose_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(OWN_PREFIXES)}


def render(env: dict[str, str], tmp_path: Path) -> dict:
    """The compose configuration as `docker-compose config` resolves it for this .env."""
    binary = shutil.which("docker-compose")
    if not binary:
        pytest.skip("docker-compose is not installed (scripts/install-system-deps installs it)")
    env_file = tmp_path / "compose.env"
    env_file.write_text("".join(f"{k}={v}\n" for k, v in env.items()))
    out = subprocess.run(
        [binary, "--env-file", str(env_file), "-f", str(COMPOSE), "config"],
        capture_output=True,
        text=True,
        env=compose_env(),
        cwd=ROOT,
    )
    if out.returncode != 0:
        raise ValueError(out.stderr.strip())
    return yaml.safe_load(out.stdout)


@pytest.fixture
def dotenv(tmp_path: Path) -> dict[str, str]:
    return env_from_make_env(tmp_path)


@pytest.fixture
def config(dotenv: dict[str, str], tmp_path: Path) -> dict:
    return render(dotenv, tmp_path)


def raw() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


def environment(service: dict) -> dict[str, str]:
    env = service.get("environment") or {}
    if isinstance(env, list):
        env = dict(item.partition("=")[::2] for item in env)
    return {k: "" if v is None else str(v) for k, v in env.items()}


def depends(service: dict) -> dict[str, str]:
    deps = service.get("depends_on") or {}
    if isinstance(deps, list):
        return {d: "service_started" for d in deps}
    return {k: (v or {}).get("condition", "service_started") for k, v in deps.items()}


def size_bytes(text: str) -> float:
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([kmgt]?)b?", str(text).strip().lower())
    assert m, f"unreadable size {text!r}"
    return float(m.group(1)) * 1024 ** "bkmgt".index(m.group(2) or "b")


# --- the compose file ------------------------------------------------------------------------------
def test_compose_file_is_valid_and_needs_its_secrets(
    tmp_path: Path, dotenv: dict[str, str], config: dict
) -> None:
    assert set(config["services"]) == SERVICES
    env = {**dotenv, "POSTGRES_PASSWORD": ""}
    with pytest.raises(ValueError, match="POSTGRES_PASSWORD"):
        render(env, tmp_path)


def test_postgres_keeps_its_data_in_a_volume_and_reports_health(config: dict) -> None:
    pg = config["services"]["postgres"]
    mounts = [v if isinstance(v, str) else f"{v['source']}:{v['target']}" for v in pg["volumes"]]
    assert any(
        m.split(":")[0] in config.get("volumes", {}) and ":/var/lib/postgresql/data" in m for m in mounts
    ), mounts
    assert "pg_isready" in " ".join(pg["healthcheck"]["test"])
    assert "ports" not in pg, "the database must stay on the private compose network"


def test_ray_services_topology(config: dict) -> None:
    services = config["services"]
    worker = services["ray-worker"]
    assert "container_name" not in worker and "ports" not in worker, (
        "ray-worker must scale (--scale ray-worker=N)"
    )
    assert worker["command"] == ["worker"] and services["ray-head"]["command"] == ["head"]
    assert depends(worker) == {
        "ray-head": "service_healthy",
        "studies-owner": "service_completed_successfully",
    }
    assert (
        environment(worker)["RAY_ADDRESS"] == environment(services["api"])["RAY_ADDRESS"] == "ray-head:6379"
    )
    assert services["ray-head"]["healthcheck"] == worker["healthcheck"], "every Ray node checks the same"
    for name in ("ray-head", "ray-worker"):
        assert "ports" not in services[name], f"{name}: Ray ports must not be published"


def test_api_waits_for_a_healthy_database_and_head(config: dict) -> None:
    api = config["services"]["api"]
    assert depends(api) == {
        "postgres": "service_healthy",
        "ray-head": "service_healthy",
        "studies-owner": "service_completed_successfully",
    }
    assert "healthcheck" in api
    ports = api["ports"]
    assert len(ports) == 1
    published = (
        ports[0]
        if isinstance(ports[0], str)
        else f"{ports[0].get('host_ip')}:{ports[0]['published']}:{ports[0]['target']}"
    )
    assert published.startswith("127.0.0.1:"), (
        f"the API is published on {published}; default must be localhost only"
    )


def test_sweep_is_one_shot_and_starts_through_the_api(config: dict) -> None:
    sweep = config["services"]["sweep"]
    assert sweep["command"][:2] == ["rnntune", "remote"] and sweep.get("restart") == "no"
    assert {"create", "--exist-ok", "--start", "--follow"} <= set(sweep["command"])
    assert depends(sweep)["api"] == "service_healthy"
    env = environment(sweep)
    assert env["RNNTUNE_API_URL"] == "http://api:8000" and env["RNNTUNE_STUDY"]
    assert "volumes" not in sweep and "ports" not in sweep


def test_every_ray_node_has_a_large_shm_and_the_shared_checkpoint_volume(config: dict) -> None:
    targets = {}
    for name in RAY_NODES:
        service = config["services"][name]
        assert size_bytes(service["shm_size"]) >= 1024**3, f"{name}: shm_size {service['shm_size']} (< 1 GB)"
        assert service.get("init") is True, f"{name}: no init to reap Ray's processes"
        mounts = [v if isinstance(v, str) else f"{v['source']}:{v['target']}" for v in service["volumes"]]
        targets[name] = {m for m in mounts if m.startswith("studies:")}
    assert "studies" in config["volumes"]
    assert len({frozenset(t) for t in targets.values()}) == 1 and targets["api"], targets
    # The API serves checkpoints from the volume the trials write to.
    mount = next(iter(targets["api"])).split(":")[1]
    assert environment(config["services"]["api"])["RNNTUNE_STORAGE"] == mount


def test_the_checkpoint_volume_root_is_handed_to_the_image_user_before_any_node_starts(config: dict) -> None:
    owner = config["services"]["studies-owner"]
    assert owner["command"] == ["own", "/data/studies"] and owner["user"] == "0:0"
    assert owner.get("restart") == "no" and "environment" not in owner and "ports" not in owner
    mounts = [v if isinstance(v, str) else f"{v['source']}:{v['target']}" for v in owner["volumes"]]
    assert [m.removesuffix(":rw") for m in mounts] == ["studies:/data/studies"]
    for name, service in config["services"].items():
        uses = any(
            (v if isinstance(v, str) else v["source"]).startswith("studies")
            for v in service.get("volumes", [])
        )
        if uses and name != "studies-owner":
            assert depends(service)["studies-owner"] == "service_completed_successfully", name


def test_one_image_built_from_docker_dockerfile(config: dict) -> None:
    for name in SERVICES - {"postgres"}:
        build = config["services"][name]["build"]
        assert build["dockerfile"] == "docker/Dockerfile"
        assert Path(build["context"]).resolve() == ROOT
    assert len({config["services"][n]["image"] for n in SERVICES - {"postgres"}}) == 1


# --- secrets ---------------------------------------------------------------------------------------
def test_no_secret_is_written_in_the_compose_file() -> None:
    for name, service in raw()["services"].items():
        for key, value in environment(service).items():
            if any(word in key for word in ("PASSWORD", "TOKEN", "SECRET")) and key != "RAY_AUTH_MODE":
                m = VAR.fullmatch(value)
                assert m and m.group(1) == key, (
                    f"{name}.{key} must be exactly ${{{key}...}} from .env, not {value!r}"
                )
                assert m.group(2) in (None, ":?", ":-") and (m.group(2) == ":?" or not m.group(3)), (
                    f"{name}.{key} has a default value: {value!r}"
                )


def test_each_service_gets_only_the_secrets_it_needs(dotenv: dict[str, str], config: dict) -> None:
    env = dotenv
    holders = {
        secret: {
            n for n, s in config["services"].items() if env[secret] and env[secret] in environment(s).values()
        }
        for secret in ("POSTGRES_PASSWORD", "RAY_AUTH_TOKEN", "RNNTUNE_API_TOKEN")
    }
    assert holders["POSTGRES_PASSWORD"] == {"postgres", "api"}
    assert holders["RAY_AUTH_TOKEN"] == set(RAY_NODES)
    assert holders["RNNTUNE_API_TOKEN"] == {"api", "sweep"}


def test_env_example_documents_every_setting_and_holds_no_secret() -> None:
    used = set(VAR.findall(COMPOSE.read_text()))
    used = {m[0] for m in used}
    lines = ENV_EXAMPLE.read_text().splitlines()
    documented = {}
    for i, line in enumerate(lines):
        if line and not line.startswith("#"):
            key, sep, value = line.partition("=")
            assert sep, f".env.example line {i + 1} is not NAME=value: {line!r}"
            above = i - 1
            while above >= 0 and lines[above] and not lines[above].startswith("#"):
                above -= 1  # settings may share the comment above their group
            assert above >= 0 and lines[above].startswith("#"), (
                f"{key} has no comment above it in .env.example"
            )
            documented[key] = value
    assert used - set(documented) == set(), (
        f"used in docker-compose.yml, missing from .env.example: {used - set(documented)}"
    )
    assert set(documented) - used == set(), f"in .env.example but unused: {set(documented) - used}"
    for secret in SECRETS:
        assert documented[secret] == "", f".env.example must not carry a value for {secret}"


def test_make_env_fills_fresh_secrets_and_never_overwrites(tmp_path: Path) -> None:
    first, second = env_from_make_env(tmp_path / "a"), env_from_make_env(tmp_path / "b")
    example = {
        line.partition("=")[0]: line.partition("=")[2]
        for line in ENV_EXAMPLE.read_text().splitlines()
        if line and not line.startswith("#")
    }
    for key, value in example.items():
        if key in ("POSTGRES_PASSWORD", "RAY_AUTH_TOKEN", "RNNTUNE_API_TOKEN", "RNNTUNE_API_READ_TOKEN"):
            assert re.fullmatch(r"[0-9a-f]{64}", first[key]) and first[key] != second[key]
        else:
            assert first[key] == value, key
    target = next((tmp_path / "a").glob("*/test.env"))
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    before = target.read_text()
    out = subprocess.run([str(MAKE_ENV), str(target)], capture_output=True, text=True)
    assert out.returncode != 0 and target.read_text() == before
    assert first["POSTGRES_PASSWORD"] not in out.stdout + out.stderr


def test_dockerignore_keeps_secrets_and_local_state_out_of_the_image() -> None:
    patterns = [
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    for needed in (".env", ".venv", ".git", "studies", "runs"):
        assert needed in patterns, f".dockerignore misses {needed}"
    assert "!.env.example" in patterns
    for kept in ("README.md", "pyproject.toml", "search_spaces", "tuner", "trainer", "docker"):
        assert kept not in patterns


# --- image and scripts -----------------------------------------------------------------------------
def test_dockerfile_installs_the_pinned_cpu_torch_and_no_secrets() -> None:
    import tomllib

    text = DOCKERFILE.read_text()
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    torch_pin = next(d for d in deps if d.startswith("torch=="))
    assert f"ARG TORCH_VERSION={torch_pin.split('==')[1]}" in text
    assert "ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu" in text
    assert re.search(r"^ARG BASE_IMAGE=python:3\.1[1-9]", text, re.M)
    assert re.search(r"^FROM \$\{BASE_IMAGE\}", text, re.M)
    assert re.search(
        r'pip install --no-compile --index-url "\$TORCH_INDEX_URL" "torch==\$\{TORCH_VERSION\}"', text
    )
    # pip compiles no bytecode; docker/compile-bytecode does after each install, in the same layer.
    installs = re.findall(r"^RUN pip install .*$", text.replace("\\\n", " "), re.M)
    assert len(installs) == 3 and all("compile-bytecode" in step for step in installs), installs
    assert re.search(r"^USER rnntune$", text, re.M), "containers must not run as root"
    assert 'ENTRYPOINT ["/app/docker/entrypoint"]' in text
    for line in text.splitlines():
        if line.startswith(("ENV", "ARG")) or line.startswith(" "):
            assert not re.search(r"PASSWORD|_TOKEN\b|SECRET", line), (
                f"secret-looking setting in the image: {line}"
            )


def test_scripts_are_executable_and_parse() -> None:
    start_dockerd = ROOT / "scripts" / "start-dockerd"
    clear_pidfiles = ROOT / "scripts" / "clear-stale-docker-pidfiles"
    postgres_entrypoint = ROOT / "tests" / "images" / "postgres" / "entrypoint"
    for script in (ENTRYPOINT, MAKE_ENV, start_dockerd, clear_pidfiles, postgres_entrypoint):
        assert os.access(script, os.X_OK), f"{script} is not executable"
    for script in (ENTRYPOINT, start_dockerd, clear_pidfiles):
        assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
    assert subprocess.run(["sh", "-n", str(MAKE_ENV)]).returncode == 0
    assert subprocess.run(["sh", "-n", str(postgres_entrypoint)]).returncode == 0


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({}, "set RAY_AUTH_MODE"),
        ({"RAY_AUTH_MODE": "token"}, "RAY_AUTH_TOKEN"),
        ({"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": "/nonexistent/token"}, "RAY_AUTH_TOKEN"),
    ],
)
def test_entrypoint_refuses_a_ray_node_without_an_auth_decision(env: dict, message: str) -> None:
    base = {"PATH": os.environ.get("PATH", ""), "RAY_ADDRESS": "ray-head:6379"}
    for role in ("head", "worker", "api"):
        out = subprocess.run(
            [str(ENTRYPOINT), role], capture_output=True, text=True, env={**base, **env}, timeout=30
        )
        assert out.returncode == 64 and message in out.stderr, (role, out.returncode, out.stderr)


def test_entrypoint_runs_other_commands_and_explains_roles() -> None:
    out = subprocess.run([str(ENTRYPOINT), "help"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0 and all(role in out.stdout for role in ("head", "worker", "api", "help"))
    out = subprocess.run(
        [str(ENTRYPOINT), sys.executable, "-c", "print('ran')"], capture_output=True, text=True, timeout=30
    )
    assert out.stdout.strip() == "ran"


# --- `docker-compose up`, for real --------------------------------------------------------------
class Compose:
    """`docker-compose` on the repository's own docker-compose.yml, as one project in a temp folder."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.project = f"rnntune-e2e-{secrets.token_hex(4)}"
        self.log = folder / "compose.log"

    def __call__(self, *args: str, timeout: float = 600, check: bool = True) -> str:
        cmd = [
            "docker-compose",
            "-p",
            self.project,
            "-f",
            str(COMPOSE),
            "--project-directory",
            str(self.folder),
            "--env-file",
            str(self.folder / ".env"),
            *args,
        ]
        out = subprocess.run(cmd, capture_output=True, text=True, env=compose_env(), timeout=timeout)
        with self.log.open("a") as log:
            log.write(f"$ {' '.join(args)}\n{out.stdout}{out.stderr}\n")
        if check and out.returncode != 0:
            pytest.fail(
                f"docker-compose {' '.join(args)} failed ({out.returncode}):\n{out.stderr[-3000:]}\n"
                + self.logs()
            )
        return out.stdout

    def containers(self, service: str) -> list[str]:
        return self("ps", "-q", service).split()

    def sql(self, query: str) -> list[list[str]]:
        out = self(
            "exec", "-T", "postgres", "psql", "-U", "rnntune", "-d", "rnntune", "-At", "-F", "\t", "-c", query
        )
        return [line.split("\t") for line in out.splitlines() if line]

    def logs(self) -> str:
        out = subprocess.run(
            [
                "docker-compose",
                "-p",
                self.project,
                "-f",
                str(COMPOSE),
                "--project-directory",
                str(self.folder),
                "--env-file",
                str(self.folder / ".env"),
                "logs",
                "--no-color",
                "--tail",
                "60",
            ],
            capture_output=True,
            text=True,
            env=compose_env(),
            timeout=120,
        )
        return out.stdout[-8000:]


def ip_of(container: str) -> str:
    return subprocess.run(
        ["docker", "inspect", "-f", "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}", container],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def root_owned_volume(compose: Compose, base_image: str) -> None:
    """The project's `studies` volume made before `up` as a fresh file system of a storage driver
    leaves it (what fsGroup-skipping ReadWriteMany drivers hand a pod): root's, mode 0755, holding
    lost+found. Not empty, so Docker does not copy the image's /data/studies (and its owner) into it."""
    name = f"{compose.project}_studies"
    labels = {"com.docker.compose.project": compose.project, "com.docker.compose.volume": "studies"}
    label_args = [arg for key, value in labels.items() for arg in ("--label", f"{key}={value}")]
    subprocess.run(["docker", "volume", "create", *label_args, name], check=True, capture_output=True)
    made = subprocess.run(
        ["docker", "run", "--rm", "--user", "0:0", "-v", f"{name}:/v", "--entrypoint", "sh", base_image, "-c",
         "mkdir /v/lost+found && chmod 0700 /v/lost+found && chown 0:0 /v && chmod 0755 /v && stat -c '%u:%g %a' /v"],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    assert made.stdout.strip() == "0:0 755", made.stdout


# What docker exec adds to a probe's own time (a kubelet's exec has its own overhead too).
EXEC_OVERHEAD_S = 5


def send_probe(container: str, probe: dict) -> tuple[bool, str]:
    """One probe as the kubelet sends it: its command exec'd in the container, or its HTTP GET of the
    container's address from inside the container's network; success is exit 0 (HTTP 200-399)
    within timeoutSeconds."""
    limit = int(probe["timeoutSeconds"])
    if "exec" in probe:
        command = list(probe["exec"]["command"])
    else:
        get = probe["httpGet"]
        url = f"http://{ip_of(container)}:{get['port']}{get['path']}"
        check = f"import sys, urllib.request; sys.exit(urllib.request.urlopen({url!r}, timeout={limit}).status >= 400)"
        command = ["python", "-c", check]
    started = time.monotonic()
    try:
        done = subprocess.run(
            ["docker", "exec", container, *command],
            capture_output=True,
            text=True,
            timeout=limit + EXEC_OVERHEAD_S,
        )
    except subprocess.TimeoutExpired:
        return False, f"{command}: no answer within {limit} s"
    took = time.monotonic() - started
    return (
        done.returncode == 0,
        f"{command}: exit {done.returncode} in {took:.1f} s: {done.stdout}{done.stderr}",
    )


def assert_kuberays_probes_pass(compose: Compose, env: dict[str, str]) -> None:
    """The probes KubeRay v1.7.0 leaves on the rendered head and CPU worker (its injection rule,
    tests/tuner/deploy/kuberay_probes.py, applied to the manifests of this .env) succeed on the
    running head and worker of the same image."""
    from tests.tuner.deploy.kuberay_probes import ray_containers, with_probes
    from tuner.deploy.render import manifests

    (cluster,) = [o for o in manifests(env, {}) if o["kind"] == "RayCluster"]
    effective = ray_containers(cluster)
    # Without probes of our own, KubeRay's default would probe the dashboard agent, which this
    # image does not run: the hazard our probes avoid, seen on the running worker.
    default = with_probes({"name": "ray-worker"}, False, cluster["spec"]["rayVersion"], {})
    ok, detail = send_probe(compose.containers("ray-worker")[0], default["livenessProbe"])
    assert "httpGet" in default["livenessProbe"] and not ok, detail
    for group, service in (("head", "ray-head"), ("cpu", "ray-worker")):
        container = compose.containers(service)[0]
        for kind in ("livenessProbe", "readinessProbe"):
            results = [send_probe(container, effective[group][kind]) for _ in range(3)]
            assert all(ok for ok, _ in results), f"{service} {kind}:\n" + "\n".join(r for _, r in results)
            assert all(": alive" in detail for _, detail in results), results
        health = subprocess.run(
            ["docker", "inspect", "-f", "{{.State.Health.Status}}", container], capture_output=True, text=True
        ).stdout.strip()
        assert health == "healthy", f"{service}: Docker's health check says {health}"


def assert_workers_wrote_to_the_root_owned_volume(compose: Compose, study: str) -> None:
    """studies-owner handed the volume's root (only the root) to the image's user, and the trials,
    run on the Ray worker, wrote their checkpoints there as that user."""
    root = compose("exec", "-T", "ray-worker", "stat", "-c", "%U %a", "/data/studies").strip()
    assert root == "rnntune 755", root
    lost = compose("exec", "-T", "ray-worker", "stat", "-c", "%U", "/data/studies/lost+found").strip()
    assert lost == "root", "only the root is handed over, nothing inside it"
    written = compose(
        "exec", "-T", "ray-worker", "find", f"/data/studies/{study}", "-name", "*.pt", "-user", "rnntune"
    ).split()
    assert written, f"no checkpoint of {study} on the volume"


def remote(
    api: str, *args: str, token: str | None = None, timeout: float = 900
) -> subprocess.CompletedProcess:
    env = {**compose_env(), "RNNTUNE_API_TOKEN": token} if token else compose_env()
    return subprocess.run(
        [sys.executable, "-m", "tuner.cli", "remote", "--api", api, *args],
        capture_output=True,
        text=True,
        env={**env, "PYTHONPATH": str(ROOT)},
        timeout=timeout,
        cwd=ROOT,
    )


@pytest.fixture
def compose_project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Compose, dict[str, str]]]:
    """Images built here, a .env from docker/make-env (image names and the API port overridden)."""
    from tests import compose_images

    folder = Path(tempfile.mkdtemp(prefix="rnntune-compose-"))
    try:
        images = compose_images.build_all(folder / "images.log")
    except compose_images.DockerUnavailable as err:
        shutil.rmtree(folder, ignore_errors=True)
        pytest.skip(str(err))
    subprocess.run([str(MAKE_ENV), str(folder / ".env")], check=True, capture_output=True)
    overrides = {
        "RNNTUNE_IMAGE": images["project"],
        "RNNTUNE_BASE_IMAGE": images["base"],
        "POSTGRES_IMAGE": images["postgres"],
        "RNNTUNE_API_PORT": str(free_port()),
        # The default sweep, shortened: what it proves needs no more trials, nor larger ones (the
        # tiny space's 200 steps of its model take 10.7 CPU-s a trial, these 50 of the tests' 1.7).
        "RNNTUNE_TRIALS": "2",
        "RNNTUNE_SET": " ".join(f"{k}={v}" for k, v in {**TINY_SETTINGS, "max_steps": 50}.items()),
    }
    lines = [
        f"{line.partition('=')[0]}={overrides[line.partition('=')[0]]}"
        if line.partition("=")[0] in overrides
        else line
        for line in (folder / ".env").read_text().splitlines()
    ]
    (folder / ".env").write_text("\n".join(lines) + "\n")
    compose = Compose(folder)
    try:
        yield compose, read_env(folder / ".env")
    finally:
        compose("down", "-v", "--remove-orphans", "--timeout", "20", check=False)
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.slow
@pytest.mark.exclusive  # its image builds take every core (three times as long beside an end-to-end test)
def test_compose_up_runs_the_sweep_on_postgres_and_scales_ray_workers(compose_project) -> None:
    """The whole cluster on a checkpoint volume made root-owned beforehand: the sweep runs, its
    checkpoints land there, KubeRay's probes of the rendered RayCluster pass on the running nodes,
    and a second worker takes trials."""
    from trainer import load_checkpoint

    compose, env = compose_project
    study, trials = env["RNNTUNE_STUDY"], int(env["RNNTUNE_TRIALS"])
    api = f"http://127.0.0.1:{env['RNNTUNE_API_PORT']}"

    root_owned_volume(compose, env["RNNTUNE_BASE_IMAGE"])
    compose("up", "-d", timeout=900)
    (sweep,) = compose.containers("sweep")
    waited = subprocess.run(["docker", "wait", sweep], capture_output=True, text=True, timeout=1800)
    sweep_log = subprocess.run(["docker", "logs", sweep], capture_output=True, text=True).stdout
    assert waited.stdout.strip() == "0", (
        f"the sweep service exited {waited.stdout.strip()}:\n{sweep_log[-3000:]}\n" + compose.logs()
    )
    assert f"{study} finished" in sweep_log
    assert_workers_wrote_to_the_root_owned_volume(compose, study)
    assert_kuberays_probes_pass(compose, env)

    # The trials are in PostgreSQL.
    states = dict(
        compose.sql(
            f"SELECT t.state, count(*) FROM trials t JOIN studies s ON s.study_id = t.study_id "
            f"WHERE s.study_name = '{study}' GROUP BY t.state"
        )
    )
    assert int(states.get("COMPLETE", 0)) >= 1, states
    assert int(states.get("COMPLETE", 0)) + int(states.get("PRUNED", 0)) == trials, states

    # The best checkpoint over REST, its SHA-256 checked by the client and here.
    target = compose.folder / "best.pt"
    got = remote(api, "best", study, "--checkpoint", str(target), token=env["RNNTUNE_API_READ_TOKEN"])
    assert got.returncode == 0, got.stderr
    import httpx

    read = {"Authorization": f"Bearer {env['RNNTUNE_API_READ_TOKEN']}"}
    assert httpx.get(f"{api}/studies/{study}", timeout=60).status_code == 401
    response = httpx.get(f"{api}/studies/{study}/best/checkpoint", headers=read, timeout=60)
    assert response.status_code == 200
    assert response.headers["X-Checkpoint-SHA256"] == hashlib.sha256(response.content).hexdigest()
    assert target.read_bytes() == response.content
    assert json.loads(got.stdout)["number"] == int(response.headers["X-Trial-Number"])
    model, config = load_checkpoint(target)
    assert model is not None and config.cell == "mogrifier_lstm"

    # Two Ray workers: a second sweep, with as many trials at once as they have CPUs, uses both.
    compose("up", "-d", "--no-deps", "--scale", "ray-worker=2", "ray-worker")
    workers = compose.containers("ray-worker")
    assert len(workers) == 2
    count_nodes = (
        "import ray; ray.init(address='auto', logging_level='ERROR'); "
        "print(sum(1 for n in ray.nodes() if n['Alive']))"
    )
    for _ in range(60):  # head, API, two workers
        if compose("exec", "-T", "ray-head", "python", "-c", count_nodes, check=False).strip().endswith("4"):
            break
        time.sleep(2)
    else:
        pytest.fail("the second Ray worker never joined\n" + compose.logs())
    cpus = sum(
        int(subprocess.run(["docker", "exec", w, "nproc"], capture_output=True, text=True).stdout)
        for w in workers
    )
    got = remote(
        api,
        "create",
        "scaled",
        "--trials",
        str(cpus),
        "--parallel",
        str(cpus),
        "--scheduler",
        "none",
        *(arg for k, v in {**TINY_SETTINGS, "max_steps": 30}.items() for arg in ("--set", f"{k}={v}")),
        "--start",
        "--follow",
        token=env["RNNTUNE_API_TOKEN"],
    )
    assert got.returncode == 0, got.stdout[-2000:] + got.stderr[-2000:] + compose.logs()
    nodes = {
        json.loads(row[0])
        for row in compose.sql(
            "SELECT a.value_json FROM trial_user_attributes a JOIN trials t ON t.trial_id = a.trial_id "
            "JOIN studies s ON s.study_id = t.study_id WHERE s.study_name = 'scaled' AND a.key = 'node'"
        )
    }
    assert nodes == {ip_of(w) for w in workers}, f"trials ran on {nodes}"
