"""The manifests and docker-compose.yml cannot drift: the image, commands, environment names and
values, /dev/shm, volumes and health checks of every rendered container equal what Compose makes
of the same .env.

docker-compose.yml is read here with PyYAML and a few lines of Compose's interpolation of its own,
not with tuner/deploy/compose.py, so a mistake there cannot hide in both.
"""

from __future__ import annotations

import re
import tomllib
from typing import Any

import pytest
import yaml

from tests.tuner.deploy.inputs import (
    EVERYTHING,
    ROOT,
    SECRET_NAME,
    containers,
    env_of,
    example_settings,
    one,
    render,
)

COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
GPU = yaml.safe_load((ROOT / "docker-compose.gpu.yml").read_text())["services"]
# Compose's service names, as the Services of the cluster named "rnntune".
SERVICE_NAMES = {"ray-head": "rnntune-head-svc", "postgres": "rnntune-postgres", "api": "rnntune-api"}
# Settings only Compose uses, and why the cluster has none: checked to be exactly the rest.
COMPOSE_ONLY = {
    "RNNTUNE_API_BIND": "a host address to publish on; a Service or an ingress publishes the API",
    "RNNTUNE_API_PORT": "a host port; the Service listens on the container's port",
    "RNNTUNE_DATA_DIR": "a host folder; the cluster mounts storage.datasets.existingClaim",
    "RNNTUNE_BASE_IMAGE": "a build argument; the cluster runs images built and pushed beforehand",
    "RNNTUNE_TORCH_INDEX_URL": "a build argument, as above",
}
# Settings another variant of .env sets, to see them arrive.
CHANGED = {
    "RNNTUNE_TRIALS": "77",
    "RNNTUNE_IMAGE": "registry.example/rnntune:1.2",
    "RAY_SHM_SIZE": "3gb",
    "RNNTUNE_SET": "max_steps=50 device=cpu",
    "RAY_OBJECT_STORE_MEMORY": "1000000000",
    "POSTGRES_USER": "alice",
    "POSTGRES_IMAGE": "registry.example/postgres:15",
    "RNNTUNE_MPS": "on",
    "RNNTUNE_ALLOWED_HOSTS": "api,tuning.example.org",
}


def compose_value(text: str, settings: dict[str, str]) -> str:
    """Compose's interpolation of the forms docker-compose.yml uses."""

    def one_variable(m: re.Match[str]) -> str:
        if m.group(0) == "$$":
            return "$"
        value = settings.get(m.group(1)) or ""
        return value if value or m.group(2) != ":-" else m.group(3)

    return re.sub(r"\$\{(\w+)(?:(:[-?])([^}]*))?\}|\$\$", one_variable, str(text))


def merged_service(name: str, gpu: bool) -> dict[str, Any]:
    service = dict(COMPOSE[name])
    if gpu and name in GPU:
        service["environment"] = {**service.get("environment", {}), **GPU[name].get("environment", {})}
    return service


def rendered_address(name: str, value: str) -> str:
    """What a Compose address becomes in the cluster."""
    for compose, kubernetes in SERVICE_NAMES.items():
        value = re.sub(rf"(?<![\w.-]){compose}(?![\w.-])", kubernetes, value)
    return value


# (rendered container, Compose service, with the GPU override)
PAIRS = [
    ("ray-head", "ray-head", False),
    ("ray-worker", "ray-worker", False),
    ("api", "api", False),
    ("sweep", "sweep", False),
    ("postgres", "postgres", False),
]
GPU_PAIRS = [
    ("ray-worker-gpu", "ray-worker", True),
    ("sweep", "sweep", True),
    ("ray-worker", "ray-worker", False),
]
CASES = [
    pytest.param({}, {}, PAIRS, id="defaults"),
    pytest.param({}, CHANGED, PAIRS, id="changed-env"),
    pytest.param(EVERYTHING, CHANGED, GPU_PAIRS, id="gpu"),
]


def check_env(
    container: dict[str, Any], service: dict[str, Any], settings: dict[str, str], name: str
) -> None:
    rendered = env_of(container)
    compose_env = {k: "" if v is None else str(v) for k, v in service.get("environment", {}).items()}
    extra = {"PGDATA"} if name == "postgres" else set()
    assert set(rendered) == set(compose_env) | extra, f"{name}: env names differ from Compose's"
    for key, raw in compose_env.items():
        value = compose_value(raw, settings)
        if SECRET_NAME.search(key):
            assert rendered[key] == ("secret", "auth_token" if key == "RAY_AUTH_TOKEN" else key), key
        elif key == "RNNTUNE_ALLOWED_HOSTS":
            assert rendered[key].split(",")[: len(value.split(","))] == rendered_address(key, value).split(
                ","
            ), key
        elif key in ("RAY_WORKER_NUM_CPUS", "RAY_WORKER_NUM_GPUS"):
            limits = container["resources"]["limits"]
            offered = limits["cpu"] if key == "RAY_WORKER_NUM_CPUS" else limits.get("nvidia.com/gpu", "0")
            assert rendered[key] == offered, f"{name}: Ray must offer what Kubernetes reserves"
        else:
            assert rendered[key] == rendered_address(key, value), f"{name}: {key}"


@pytest.mark.parametrize(("user_values", "changes", "pairs"), CASES)
def test_every_container_is_its_compose_service(
    user_values: dict[str, Any], changes: dict[str, str], pairs: list[tuple[str, str, bool]]
) -> None:
    settings = example_settings(**changes)
    found = containers(render(user_values, **changes))
    for name, compose_name, gpu in pairs:
        service = merged_service(compose_name, gpu)
        container = found[name]
        expected_image = (
            user_values["gpuImage"] if name.endswith("-gpu") else compose_value(service["image"], settings)
        )
        assert container["image"] == expected_image, name
        assert container.get("args", []) == [str(c) for c in service.get("command", [])], name
        check_env(container, service, settings, name)


def test_a_changed_env_setting_reaches_the_manifests() -> None:
    found = containers(render({}, **CHANGED))
    assert env_of(found["sweep"])["RNNTUNE_TRIALS"] == "77"
    assert env_of(found["sweep"])["RNNTUNE_SET"] == "max_steps=50 device=cpu"
    assert env_of(found["postgres"])["POSTGRES_USER"] == "alice"
    assert {found[n]["image"] for n in ("ray-head", "ray-worker", "api", "sweep")} == {
        "registry.example/rnntune:1.2"
    }
    assert found["postgres"]["image"] == "registry.example/postgres:15"
    assert env_of(found["api"])["RNNTUNE_ALLOWED_HOSTS"] == "rnntune-api,tuning.example.org"


@pytest.mark.parametrize(
    ("changes", "size"), [({}, "2Gi"), ({"RAY_SHM_SIZE": "3gb"}, "3Gi"), ({"RAY_SHM_SIZE": "512m"}, "512Mi")]
)
def test_dev_shm_is_compose_shm_size_on_every_ray_node(changes: dict[str, str], size: str) -> None:
    objects = render({}, **changes)
    cluster = one(objects, "RayCluster")
    pods = [
        cluster["spec"]["headGroupSpec"]["template"]["spec"],
        cluster["spec"]["workerGroupSpecs"][0]["template"]["spec"],
    ]
    pods.append(one(objects, "Deployment")["spec"]["template"]["spec"])
    with_shm = [name for name, service in COMPOSE.items() if "shm_size" in service]
    assert sorted(with_shm) == ["api", "ray-head", "ray-worker"]
    for pod in pods:
        (shm,) = [v for v in pod["volumes"] if v["name"] == "dshm"]
        assert shm["emptyDir"] == {"medium": "Memory", "sizeLimit": size}
        assert {"name": "dshm", "mountPath": "/dev/shm"} in pod["containers"][0]["volumeMounts"]


def test_mounts_are_compose_volumes_at_the_same_paths() -> None:
    found = containers(render(EVERYTHING))
    for name, compose_name in [
        ("ray-head", "ray-head"),
        ("ray-worker", "ray-worker"),
        ("ray-worker-gpu", "ray-worker"),
        ("api", "api"),
    ]:
        mounts = {
            m["mountPath"]: m.get("readOnly", False)
            for m in found[name]["volumeMounts"]
            if m["name"] != "dshm"
        }
        expected = {}
        for volume in COMPOSE[compose_name]["volumes"]:
            _, target, *mode = compose_value(volume, example_settings()).split(":")
            expected[target] = "ro" in mode
        assert mounts == expected, name
        assert expected["/data/datasets"] is True and expected["/data/studies"] is False


def compose_seconds(text: str) -> int:
    """A Compose duration of the forms docker-compose.yml uses ("10s", "1m")."""
    match = re.fullmatch(r"(\d+)([sm])", text)
    assert match, text
    return int(match.group(1)) * (60 if match.group(2) == "m" else 1)


def test_probes_run_compose_health_checks() -> None:
    found = containers(render(EVERYTHING))
    for name, compose_name in [
        ("ray-head", "ray-head"),
        ("ray-worker", "ray-worker"),
        ("ray-worker-gpu", "ray-worker"),
        ("api", "api"),
    ]:
        check = COMPOSE[compose_name]["healthcheck"]
        kind, *argv = check["test"]
        expected = argv if kind == "CMD" else ["sh", "-c", " ".join(argv).replace("$$", "$")]
        for probe in ("readinessProbe", "livenessProbe"):
            assert found[name][probe]["exec"]["command"] == expected, (name, probe)
            assert found[name][probe]["failureThreshold"] == check["retries"]
            assert found[name][probe]["periodSeconds"] == compose_seconds(check["interval"])
            assert found[name][probe]["timeoutSeconds"] == compose_seconds(check["timeout"])
    postgres = containers(render())["postgres"]
    kind, *argv = COMPOSE["postgres"]["healthcheck"]["test"]
    assert postgres["livenessProbe"]["exec"]["command"] == ["sh", "-c", " ".join(argv).replace("$$", "$")]
    assert COMPOSE["ray-worker"]["healthcheck"] == COMPOSE["ray-head"]["healthcheck"], (
        "every Ray node runs the same health check"
    )


def pod_of(objects: list[dict[str, Any]], component: str) -> dict[str, Any]:
    """The pod spec whose template carries app.kubernetes.io/component `component`."""
    cluster = one(objects, "RayCluster")["spec"]
    templates = [cluster["headGroupSpec"]["template"], *[g["template"] for g in cluster["workerGroupSpecs"]]]
    templates += [o["spec"]["template"] for o in objects if o["kind"] in ("Deployment", "StatefulSet", "Job")]
    (pod,) = [
        t["spec"] for t in templates if t["metadata"]["labels"]["app.kubernetes.io/component"] == component
    ]
    return pod


def test_the_checkpoint_volume_owner_runs_first_as_compose_runs_it() -> None:
    """Compose's one-shot `studies-owner` is the init container of every pod mounting the volume."""
    objects = render(EVERYTHING, **CHANGED)
    settings = example_settings(**CHANGED)
    owner = COMPOSE["studies-owner"]
    uid, _, gid = str(owner["user"]).partition(":")
    (volume,) = owner["volumes"]
    source, target = compose_value(volume, settings).split(":")[:2]
    for component, image in [
        ("ray-head", "registry.example/rnntune:1.2"),
        ("ray-worker", "registry.example/rnntune:1.2"),
        ("ray-gpu-worker", EVERYTHING["gpuImage"]),
        ("api", "registry.example/rnntune:1.2"),
    ]:
        pod = pod_of(objects, component)
        (init,) = pod["initContainers"]
        assert init["image"] == image, component  # the pod's own image, whose user it hands the root to
        assert init["args"] == owner["command"] and init["name"] == "studies-owner"
        assert init["securityContext"] == {
            "runAsUser": int(uid),
            "runAsGroup": int(gid),
            "runAsNonRoot": False,
        }
        assert init["volumeMounts"] == [{"name": source, "mountPath": target, "readOnly": False}]
        assert target in {m["mountPath"] for m in pod["containers"][0]["volumeMounts"]}
        waits = COMPOSE[component.replace("ray-gpu-worker", "ray-worker")]["depends_on"]
        assert waits["studies-owner"] == {"condition": "service_completed_successfully"}, component
    for component in ("sweep", "postgres"):
        assert "initContainers" not in pod_of(objects, component), component


def test_every_compose_setting_is_rendered_or_listed_as_compose_only() -> None:
    text = (ROOT / "docker-compose.yml").read_text() + (ROOT / "docker-compose.gpu.yml").read_text()
    referenced = set(re.findall(r"\$\{(\w+)", text))
    in_env = {
        variable
        for service in [*COMPOSE.values(), *GPU.values()]
        for raw in (service.get("environment") or {}).values()
        for variable in re.findall(r"\$\{(\w+)", str(raw))
    }
    rendered_elsewhere = {
        "RNNTUNE_IMAGE",
        "POSTGRES_IMAGE",
        "RAY_SHM_SIZE",
    }  # image and /dev/shm, compared above
    assert referenced - in_env - rendered_elsewhere == set(COMPOSE_ONLY)


def test_the_ray_version_is_the_one_pyproject_pins() -> None:
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    (pin,) = [d for d in dependencies if d.startswith("ray[")]
    assert one(render(), "RayCluster")["spec"]["rayVersion"] == pin.split("==")[1]
