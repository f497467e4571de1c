"""`python -m tuner.deploy` on a .env from docker/make-env, as docs/kubernetes.md runs it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.tuner.deploy.inputs import ROOT
from tuner.deploy.__main__ import main
from tuner.deploy.inputs import read_env


@pytest.fixture
def env_file(tmp_path: Path) -> Path:
    target = tmp_path / "cluster.env"
    subprocess.run([str(ROOT / "docker" / "make-env"), str(target)], check=True, capture_output=True)
    return target


def test_render_and_secret_print_what_kubectl_applies(env_file: Path) -> None:
    rendered = subprocess.run(
        [sys.executable, "-m", "tuner.deploy", "render", "--env", str(env_file)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert rendered.returncode == 0, rendered.stderr
    kinds = [doc["kind"] for doc in yaml.safe_load_all(rendered.stdout)]
    assert kinds == [
        "PersistentVolumeClaim",
        "Service",
        "StatefulSet",
        "RayCluster",
        "Service",
        "Deployment",
        "Job",
    ]
    settings = read_env(env_file)
    assert settings["RAY_AUTH_TOKEN"] and settings["RAY_AUTH_TOKEN"] not in rendered.stdout
    secret = subprocess.run(
        [sys.executable, "-m", "tuner.deploy", "secret", "--env", str(env_file)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert secret.returncode == 0, secret.stderr
    (doc,) = yaml.safe_load_all(secret.stdout)
    assert doc["kind"] == "Secret" and doc["stringData"]["auth_token"] == settings["RAY_AUTH_TOKEN"]


def test_refused_inputs_print_the_fields_and_nothing_to_apply(
    env_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    password = read_env(env_file)["POSTGRES_PASSWORD"]
    values = tmp_path / "values.yaml"
    values.write_text(
        f"gpuWorkers:\n  replicas: 1\napi:\n  serviceType: NodePort\npostgres:\n  storageClassName: {password}\n"
    )
    assert main(["render", "--env", str(env_file), "--values", str(values)]) == 2
    out, err = capsys.readouterr()
    assert (
        out == ""
        and "values: postgres.storageClassName holds the value of a secret" in err
        and password not in err
    )
    values.write_text("gpuWorkers:\n  replicas: 1\napi:\n  serviceType: NodePort\n")
    env_file.write_text(
        env_file.read_text().replace("RNNTUNE_API_READ_TOKEN=", "RNNTUNE_API_READ_TOKEN=\n# was: ")
    )
    assert main(["secret", "--env", str(env_file), "--values", str(values)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert "gpuWorkers.replicas asks for GPU workers but gpuImage is empty" in err
    assert (
        "env: RNNTUNE_API_READ_TOKEN is empty" in err and "api.serviceType: NodePort exposes the API" in err
    )


def test_a_missing_env_file_is_an_error_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["render", "--env", str(tmp_path / "absent.env")]) == 2
    assert "absent.env" in capsys.readouterr().err
