"""docker-compose.gpu.yml, the NVIDIA GPU override of docker-compose.yml: rendered with
`docker-compose config` and a .env from docker/make-env, as tests/test_compose.py renders the
base file (fast, no Docker engine or GPU needed). Without docker-compose the tests skip, and
under RNNTUNE_REQUIRE_E2E=1 they fail (tests/conftest.py)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.test_compose import COMPOSE, ENV_EXAMPLE, ROOT, VAR, compose_env, env_from_make_env, environment

GPU_OVERRIDE = ROOT / "docker-compose.gpu.yml"
BUILT = ("ray-head", "ray-worker", "api", "sweep")  # the services built from docker/Dockerfile


def render(files: list[Path], env: dict[str, str], tmp_path: Path) -> dict:
    binary = shutil.which("docker-compose")
    if not binary:
        pytest.skip("docker-compose is not installed (scripts/install-system-deps installs it)")
    env_file = tmp_path / "compose.env"
    env_file.write_text("".join(f"{k}={v}\n" for k, v in env.items()))
    args = [binary, "--env-file", str(env_file)]
    for file in files:
        args += ["-f", str(file)]
    out = subprocess.run([*args, "config"], capture_output=True, text=True, env=compose_env(), cwd=ROOT)
    assert out.returncode == 0, out.stderr
    return yaml.safe_load(out.stdout)


def gpu_reservations(service: dict) -> list[dict]:
    reservations = ((service.get("deploy") or {}).get("resources") or {}).get("reservations") or {}
    return reservations.get("devices") or []


def test_gpu_override_reserves_nvidia_gpus_for_the_workers_and_builds_cuda_torch(tmp_path: Path) -> None:
    dotenv = env_from_make_env(tmp_path)
    base = render([COMPOSE], dotenv, tmp_path)
    gpu = render([COMPOSE, GPU_OVERRIDE], dotenv, tmp_path)
    assert set(gpu["services"]) == set(base["services"])  # it adds no service, only settings

    devices = gpu_reservations(gpu["services"]["ray-worker"])
    assert len(devices) == 1 and devices[0]["driver"] == "nvidia" and devices[0]["capabilities"] == ["gpu"]
    assert devices[0].get("count") == "all" or devices[0].get("device_ids"), devices
    assert not any(
        gpu_reservations(gpu["services"][name]) for name in gpu["services"] if name != "ray-worker"
    )
    assert not gpu_reservations(base["services"]["ray-worker"])  # the base file stays CPU-only

    for name in BUILT:
        args = gpu["services"][name]["build"]["args"]
        assert "/whl/cu" in args["TORCH_INDEX_URL"], (name, args)  # PyTorch's CUDA wheels
        assert args["WITH_COMPILER"] == "1", (name, args)  # Triton compiles at run time
        assert base["services"][name]["build"].get("args", {}).get("WITH_COMPILER", "0") == "0"
        assert base["services"][name]["build"]["args"]["TORCH_INDEX_URL"].endswith("/whl/cpu")
        assert gpu["services"][name]["build"]["dockerfile"] == "docker/Dockerfile"
    assert len({gpu["services"][n]["image"] for n in BUILT}) == 1  # one image, built the same way

    sweep = environment(gpu["services"]["sweep"])
    assert sweep["RNNTUNE_GPUS_PER_TRIAL"] == "1" and sweep["RNNTUNE_SET"] == "device=auto"
    # .env still decides: a fraction packs trials, a CUDA base image is used as given.
    custom = render(
        [COMPOSE, GPU_OVERRIDE],
        {
            **dotenv,
            "RNNTUNE_GPUS_PER_TRIAL": "0.25",
            "RNNTUNE_BASE_IMAGE": "nvidia/cuda:12.8.1-cudnn-runtime-ubuntu24.04",
        },
        tmp_path,
    )
    assert environment(custom["services"]["sweep"])["RNNTUNE_GPUS_PER_TRIAL"] == "0.25"
    assert custom["services"]["ray-worker"]["build"]["args"]["BASE_IMAGE"].startswith("nvidia/cuda:")


def test_gpu_override_uses_only_settings_documented_in_env_example() -> None:
    used = {m[0] for m in VAR.findall(GPU_OVERRIDE.read_text())}
    documented = {
        line.partition("=")[0]
        for line in ENV_EXAMPLE.read_text().splitlines()
        if line and not line.startswith("#")
    }
    assert used and used <= documented, used - documented


def test_the_gpu_build_installs_a_c_compiler_and_python_headers() -> None:
    """Triton compiles the fast path's launcher with the host's C compiler against Python.h: the
    Dockerfile step that WITH_COMPILER=1 (the GPU override) turns on installs both and checks them
    in the image it builds (`cc --version`, Python.h found). A parse: this machine builds no GPU image."""
    text = (ROOT / "docker" / "Dockerfile").read_text().replace("\\\n", " ")
    steps = [line for line in text.splitlines() if line.startswith("RUN ") and "WITH_COMPILER" in line]
    assert len(steps) == 1, steps
    step = steps[0]
    assert '"$WITH_COMPILER" = 1' in step and "apt-get install" in step
    assert re.search(r"install -y --no-install-recommends gcc libc6-dev", step), step
    assert "python3-dev" in step and "Python.h" in step and "cc --version" in step
    assert (
        text.index("ARG WITH_COMPILER=0")
        < text.index(step)
        < text.index('pip install --no-compile --index-url "$TORCH_INDEX_URL"')
    )
