"""scripts/install-venv: pip's package sources as the real pip reports them, passed on as flags the
real uv (the one `make setup` installed) accepts."""

from __future__ import annotations

import os
import runpy
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "install-venv"

install_venv = SimpleNamespace(**runpy.run_path(str(SCRIPT)))  # its functions, main() not run


@pytest.fixture
def pip_config(tmp_path, monkeypatch):
    """A pip configuration file of the test's own, and no PIP_* variable but those a test sets."""
    for name in [n for n in os.environ if n.startswith("PIP_")]:
        monkeypatch.delenv(name)
    path = tmp_path / "pip.conf"
    path.write_text(
        "[global]\n"
        "find-links = /wheels/global\n"
        "extra-index-url =\n    file:///index/one\n    file:///index/two\n"
        f"constraint = {tmp_path / 'constraints.txt'}\n"
        "cert = /certs/bundle.pem\n"
        "[install]\n"
        "find-links = /wheels/install\n"
    )
    monkeypatch.setenv("PIP_CONFIG_FILE", str(path))
    return tmp_path


def test_pips_own_listing_is_read_with_pips_ranking(pip_config, monkeypatch):
    settings = install_venv.pip_settings(sys.executable)
    assert settings["find-links"] == "/wheels/install"  # an `install.` key beats a `global.` one
    assert settings["extra-index-url"].split() == ["file:///index/one", "file:///index/two"]
    assert settings["cert"] == "/certs/bundle.pem"
    monkeypatch.setenv("PIP_FIND_LINKS", "/wheels/env")
    monkeypatch.setenv("PIP_DEFAULT_TIMEOUT", "42")
    settings = install_venv.pip_settings(sys.executable)
    assert settings["find-links"] == "/wheels/env" and settings["default-timeout"] == "42"


def test_each_source_becomes_uvs_flag_and_the_rest_its_environment(pip_config):
    flags, env = install_venv.uv_arguments(install_venv.pip_settings(sys.executable))
    pairs = list(zip(flags[::2], flags[1::2]))
    assert ("--find-links", "/wheels/install") in pairs
    assert ("--extra-index-url", "file:///index/one") in pairs
    assert ("--extra-index-url", "file:///index/two") in pairs
    assert ("--constraints", str(pip_config / "constraints.txt")) in pairs
    assert env["SSL_CERT_FILE"] == "/certs/bundle.pem"
    assert install_venv.uv_arguments({"timeout": "30", "user-agent": "x"}) == ([], {"UV_HTTP_TIMEOUT": "30"})


def test_the_pinned_uv_accepts_every_flag_the_script_passes(pip_config):
    uv = shutil.which("uv", path=str(Path(sys.executable).parent))
    assert uv, "make setup installs uv into the virtual environment"
    version = subprocess.run([uv, "--version"], capture_output=True, text=True, check=True).stdout
    assert version.split()[1] == install_venv.UV.split("==")[1], version
    (pip_config / "constraints.txt").write_text("pytest<1000\n")
    wheels = pip_config / "wheels"
    wheels.mkdir()
    flags, env = install_venv.uv_arguments(
        {
            "find-links": str(wheels),
            "extra-index-url": wheels.as_uri(),
            "constraint": str(pip_config / "constraints.txt"),
        }
    )
    command = install_venv.uv_command(uv, sys.executable, ["--dry-run", "--offline", *flags, "pytest"])
    done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, **env})
    assert done.returncode == 0, done.stderr
    assert "Would make no changes" in done.stderr, done.stderr
