"""docker-compose.yml, .env.example, the image and its scripts, checked without a Docker engine.

The compose file is validated by `docker-compose config` (Debian's docker-compose) when it is
installed, else against the Compose specification's JSON schema (tests/compose_spec.json, from the
compose-spec project, Apache-2.0, as shipped by docker-compose 1.29). Then its structure is checked:
the services the cluster needs, how they wait for each other, shared storage, /dev/shm, and that no
secret is written in it.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
from importlib.machinery import SourceFileLoader
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
COMPOSE = ROOT / "docker-compose.yml"
ENV_EXAMPLE = ROOT / ".env.example"
DOCKERFILE = ROOT / "docker" / "Dockerfile"
ENTRYPOINT = ROOT / "docker" / "entrypoint"
MAKE_ENV = ROOT / "docker" / "make-env"
START_SWEEP = ROOT / "docker" / "start-sweep"
SCHEMA = Path(__file__).resolve().parent / "compose_spec.json"
SERVICES = {"postgres", "ray-head", "ray-worker", "api", "sweep"}
RAY_NODES = ("ray-head", "ray-worker", "api")  # every container running a Ray node
SECRETS = ("POSTGRES_PASSWORD", "RAY_AUTH_TOKEN", "RNNTUNE_API_TOKEN", "RNNTUNE_API_READ_TOKEN")
VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}")


def env_from_make_env(tmp_path: Path) -> dict[str, str]:
    """A complete .env written by docker/make-env (fresh secrets), as a dict."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    target = Path(tempfile.mkdtemp(dir=tmp_path)) / "test.env"
    subprocess.run([str(MAKE_ENV), str(target)], check=True, capture_output=True)
    env = {}
    for line in target.read_text().splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            env[key] = value
    return env


# --- rendering: docker-compose config, else our interpolation + the JSON schema -------------------
def interpolate(text: str, env: dict[str, str]) -> str:
    """Compose's variable substitution: ${X}, ${X:-default}, ${X-default}, ${X:?error}, $$."""

    def sub(m: re.Match) -> str:
        name, op, arg = m.group(1), m.group(2), m.group(3) or ""
        value = env.get(name)
        if op in (":?", "?") and (value is None or (op == ":?" and value == "")):
            raise ValueError(f"missing mandatory value {name}: {arg}")
        if op == ":-" and not value:
            return arg
        if op == "-" and value is None:
            return arg
        return value or ""

    return VAR.sub(sub, text.replace("$$", "\0")).replace("\0", "$")


def render(env: dict[str, str], tmp_path: Path) -> dict:
    """The resolved compose configuration for this environment."""
    binary = shutil.which("docker-compose")
    if binary:
        env_file = tmp_path / "compose.env"
        env_file.write_text("".join(f"{k}={v}\n" for k, v in env.items()))
        clean = {k: v for k, v in os.environ.items() if k not in env and not k.startswith(("POSTGRES_", "RAY_", "RNNTUNE_"))}
        out = subprocess.run([binary, "--env-file", str(env_file), "-f", str(COMPOSE), "config"],
                             capture_output=True, text=True, env=clean, cwd=ROOT)
        if out.returncode != 0:
            raise ValueError(out.stderr.strip())
        return yaml.safe_load(out.stdout)
    return render_with_schema(env)


def render_with_schema(env: dict[str, str]) -> dict:
    """Interpolate like Compose, then validate against the Compose specification's JSON schema."""
    import jsonschema

    config = yaml.safe_load(interpolate(COMPOSE.read_text(), env))
    config = {k: v for k, v in config.items() if not k.startswith("x-")}
    import json

    jsonschema.Draft7Validator(json.loads(SCHEMA.read_text())).validate(config)
    return config


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
def test_compose_file_is_valid_and_needs_its_secrets(tmp_path: Path, dotenv: dict[str, str], config: dict) -> None:
    assert set(config["services"]) == SERVICES
    env = {**dotenv, "POSTGRES_PASSWORD": ""}
    with pytest.raises(ValueError, match="POSTGRES_PASSWORD"):
        render(env, tmp_path)


def test_compose_file_matches_the_compose_spec_schema(dotenv: dict[str, str]) -> None:
    config = render_with_schema(dotenv)
    assert set(config["services"]) == SERVICES
    assert config["services"]["api"]["environment"]["RAY_AUTH_TOKEN"] == dotenv["RAY_AUTH_TOKEN"]
    with pytest.raises(ValueError, match="POSTGRES_PASSWORD"):
        render_with_schema({**dotenv, "POSTGRES_PASSWORD": ""})


def test_postgres_keeps_its_data_in_a_volume_and_reports_health(config: dict) -> None:
    pg = config["services"]["postgres"]
    mounts = [v if isinstance(v, str) else f"{v['source']}:{v['target']}" for v in pg["volumes"]]
    assert any(m.split(":")[0] in config.get("volumes", {}) and ":/var/lib/postgresql/data" in m for m in mounts), mounts
    assert "pg_isready" in " ".join(pg["healthcheck"]["test"])
    assert "ports" not in pg, "the database must stay on the private compose network"


def test_ray_services_topology(config: dict) -> None:
    services = config["services"]
    worker = services["ray-worker"]
    assert "container_name" not in worker and "ports" not in worker, "ray-worker must scale (--scale ray-worker=N)"
    assert worker["command"] == ["worker"] and services["ray-head"]["command"] == ["head"]
    assert depends(worker) == {"ray-head": "service_healthy"}
    assert environment(worker)["RAY_ADDRESS"] == environment(services["api"])["RAY_ADDRESS"] == "ray-head:6379"
    assert "healthcheck" in services["ray-head"]
    for name in ("ray-head", "ray-worker"):
        assert "ports" not in services[name], f"{name}: Ray ports must not be published"


def test_api_waits_for_a_healthy_database_and_head(config: dict) -> None:
    api = config["services"]["api"]
    assert depends(api) == {"postgres": "service_healthy", "ray-head": "service_healthy"}
    assert "healthcheck" in api
    ports = api["ports"]
    assert len(ports) == 1
    published = ports[0] if isinstance(ports[0], str) else f"{ports[0].get('host_ip')}:{ports[0]['published']}:{ports[0]['target']}"
    assert published.startswith("127.0.0.1:"), f"the API is published on {published}; default must be localhost only"


def test_sweep_is_one_shot_and_starts_through_the_api(config: dict) -> None:
    sweep = config["services"]["sweep"]
    assert sweep["command"] == ["sweep"] and sweep.get("restart") == "no"
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
                assert m and m.group(1) == key, f"{name}.{key} must be exactly ${{{key}...}} from .env, not {value!r}"
                assert m.group(2) in (None, ":?", ":-") and (m.group(2) == ":?" or not m.group(3)), \
                    f"{name}.{key} has a default value: {value!r}"


def test_each_service_gets_only_the_secrets_it_needs(dotenv: dict[str, str], config: dict) -> None:
    env = dotenv
    holders = {
        secret: {n for n, s in config["services"].items() if env[secret] and env[secret] in environment(s).values()}
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
            assert above >= 0 and lines[above].startswith("#"), f"{key} has no comment above it in .env.example"
            documented[key] = value
    assert used - set(documented) == set(), f"used in docker-compose.yml, missing from .env.example: {used - set(documented)}"
    assert set(documented) - used == set(), f"in .env.example but unused: {set(documented) - used}"
    for secret in SECRETS:
        assert documented[secret] == "", f".env.example must not carry a value for {secret}"


def test_make_env_fills_fresh_secrets_and_never_overwrites(tmp_path: Path) -> None:
    first, second = env_from_make_env(tmp_path / "a"), env_from_make_env(tmp_path / "b")
    example = {l.partition("=")[0]: l.partition("=")[2] for l in ENV_EXAMPLE.read_text().splitlines()
               if l and not l.startswith("#")}
    for key, value in example.items():
        if key in ("POSTGRES_PASSWORD", "RAY_AUTH_TOKEN", "RNNTUNE_API_TOKEN"):
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
    patterns = [l.strip() for l in (ROOT / ".dockerignore").read_text().splitlines() if l.strip() and not l.startswith("#")]
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
    assert re.search(r'pip install --index-url "\$TORCH_INDEX_URL" "torch==\$\{TORCH_VERSION\}"', text)
    assert re.search(r"^USER rnntune$", text, re.M), "containers must not run as root"
    assert 'ENTRYPOINT ["/app/docker/entrypoint"]' in text
    for line in text.splitlines():
        if line.startswith(("ENV", "ARG")) or line.startswith(" "):
            assert not re.search(r"PASSWORD|_TOKEN\b|SECRET", line), f"secret-looking setting in the image: {line}"


def test_scripts_are_executable_and_parse() -> None:
    for script in (ENTRYPOINT, MAKE_ENV, START_SWEEP):
        assert os.access(script, os.X_OK), f"{script} is not executable"
    assert subprocess.run(["bash", "-n", str(ENTRYPOINT)]).returncode == 0
    assert subprocess.run(["sh", "-n", str(MAKE_ENV)]).returncode == 0
    compile(START_SWEEP.read_text(), str(START_SWEEP), "exec")


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
        out = subprocess.run([str(ENTRYPOINT), role], capture_output=True, text=True, env={**base, **env}, timeout=30)
        assert out.returncode == 64 and message in out.stderr, (role, out.returncode, out.stderr)


def test_entrypoint_api_needs_a_database() -> None:
    env = {"PATH": os.environ.get("PATH", ""), "RAY_ADDRESS": "ray-head:6379", "RAY_AUTH_MODE": "token",
           "RAY_AUTH_TOKEN": "x" * 32}
    out = subprocess.run([str(ENTRYPOINT), "api"], capture_output=True, text=True, env=env, timeout=30)
    assert out.returncode == 64 and "POSTGRES_PASSWORD" in out.stderr


def test_entrypoint_runs_other_commands_and_explains_roles() -> None:
    out = subprocess.run([str(ENTRYPOINT), "help"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0 and all(role in out.stdout for role in ("head", "worker", "api", "sweep"))
    out = subprocess.run([str(ENTRYPOINT), sys.executable, "-c", "print('ran')"], capture_output=True, text=True,
                         timeout=30)
    assert out.stdout.strip() == "ran"


def test_start_sweep_turns_settings_into_the_create_request(monkeypatch: pytest.MonkeyPatch) -> None:
    loader = SourceFileLoader("start_sweep", str(START_SWEEP))
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader("start_sweep", loader))
    loader.exec_module(module)
    for key, value in {"RNNTUNE_SPACE": "lstm", "RNNTUNE_TRIALS": "12", "RNNTUNE_PARALLEL": "3",
                       "RNNTUNE_SAMPLER": "tpe", "RNNTUNE_SCHEDULER": "none", "RNNTUNE_SEED": "5",
                       "RNNTUNE_SET": '"max_steps=200 device=cpu lr_decay=1e-3"',
                       "RNNTUNE_RANGES": "learning_rate=0.001:0.002:log"}.items():
        monkeypatch.setenv(key, value)
    body = module.create_body("s1")
    assert body == {
        "name": "s1", "space": "lstm", "n_trials": 12, "parallel": 3, "sampler": "tpe", "scheduler": "none",
        "seed": 5,
        "overrides": {"set": {"max_steps": 200, "device": "cpu", "lr_decay": 0.001},
                      "ranges": {"learning_rate": "0.001:0.002:log"}},
    }
    monkeypatch.setenv("RNNTUNE_SET", "max_steps")
    with pytest.raises(ValueError, match="RNNTUNE_SET"):
        module.create_body("s1")


def test_entrypoint_builds_the_database_url_from_postgres_settings() -> None:
    from sqlalchemy.engine import make_url

    env = {"PATH": os.environ.get("PATH", ""), "POSTGRES_PASSWORD": "p@ss:w/rd %#?", "POSTGRES_USER": "tuner",
           "POSTGRES_DB": "studies", "POSTGRES_HOST": "db"}
    out = subprocess.run([str(ENTRYPOINT), "sh", "-c", 'echo "$RNNTUNE_DB_URL|${POSTGRES_PASSWORD:-gone}"'],
                         capture_output=True, text=True, env=env, timeout=30)
    url, password_var = out.stdout.strip().split("|")
    parsed = make_url(url)
    assert (parsed.username, parsed.password, parsed.host, parsed.port, parsed.database) == \
        ("tuner", "p@ss:w/rd %#?", "db", 5432, "studies")
    assert password_var == "gone", "POSTGRES_PASSWORD must not reach the command's environment"
    out = subprocess.run([str(ENTRYPOINT), "true"], capture_output=True, text=True, timeout=30,
                         env={"PATH": env["PATH"], "POSTGRES_PASSWORD": "x", "RNNTUNE_DB_URL": "sqlite:////tmp/s.db"})
    assert "SQLite" in out.stderr and "PostgreSQL" in out.stderr
