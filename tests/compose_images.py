"""Images for the `docker compose up` end-to-end test, built on this machine without a registry.

* BASE: Debian bookworm made by `mmdebstrap` from this machine's Debian mirror and imported with
  `docker import` (python3 and venv included, so docker/Dockerfile needs no apt).
* POSTGRES: PostgreSQL 15 on BASE (tests/images/postgres), behaving as the official image.
* PROJECT: docker/Dockerfile built FROM BASE, its pip reading a wheelhouse that this machine's
  own pip downloaded (with its indexes, wheel folders, proxy and certificates), served as an index
  on 127.0.0.1 to a build on the host network.

BASE and POSTGRES are kept between runs (reused when `docker image inspect` finds them, rebuilt when
missing), as is the wheelhouse (per pyproject.toml); PROJECT is rebuilt every time, Docker's layer
cache keeping torch and the dependencies unless pyproject.toml changed.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import http.server
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import tomllib
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

ROOT = Path(__file__).resolve().parent.parent
BASE = "rnntune-test/bookworm:1"
POSTGRES = "rnntune-test/postgres:15"
PROJECT = "rnntune-test/rnntune:latest"
DEBIAN_PACKAGES = "python3,python3-venv,ca-certificates"
WHEEL_CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "rnntune-compose-wheels"
DOCKER_ENV = {**os.environ, "DOCKER_BUILDKIT": "0"}  # the classic builder: no frontend image to pull


class DockerUnavailable(RuntimeError):
    """No Docker engine, Compose or mmdebstrap to run the test with."""


def run(cmd: list[str], log: Path, **kwargs) -> None:
    """Run a build step, its output appended to `log`; a failure quotes the log's tail."""
    with log.open("ab") as out:
        out.write(f"\n$ {' '.join(cmd)}\n".encode())
        out.flush()
        done = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, env=DOCKER_ENV, **kwargs)
    if done.returncode != 0:
        tail = log.read_text(errors="replace")[-4000:]
        raise RuntimeError(f"{cmd[0]} {cmd[1]} failed ({done.returncode}); log {log}:\n{tail}")


def ensure_docker() -> None:
    """A running engine (scripts/start-dockerd starts one as root) and the docker-compose client."""
    for tool in ("docker", "docker-compose"):
        if not shutil.which(tool):
            raise DockerUnavailable(f"{tool} is not installed (scripts/install-system-deps installs it)")
    started = subprocess.run([str(ROOT / "scripts" / "start-dockerd")], capture_output=True, text=True)
    if started.returncode != 0:
        raise DockerUnavailable(started.stderr.strip() or "the Docker engine could not be started")


def image_exists(name: str) -> bool:
    return subprocess.run(["docker", "image", "inspect", name], capture_output=True).returncode == 0


def debian_mirror() -> str:
    """This machine's Debian mirror (apt's sources), else deb.debian.org."""
    texts = [
        p.read_text(errors="replace")
        for p in [Path("/etc/apt/sources.list"), *sorted(Path("/etc/apt/sources.list.d").glob("*"))]
        if p.is_file()
    ]
    for text in texts:
        for uri in re.findall(r"^(?:URIs:\s*|deb\s+(?:\[[^]]*\]\s+)?)(\S+)", text, re.M):
            if uri.rstrip("/").endswith("/debian"):
                return uri
    return "http://deb.debian.org/debian"


def build_base(log: Path) -> None:
    """BASE from `mmdebstrap` (Debian's successor to debootstrap: it unpacks every package in one
    dpkg run, 21 s and 22 CPU-s here against debootstrap's 41 and 41), its tarball imported as is."""
    mmdebstrap = shutil.which("mmdebstrap")
    if mmdebstrap is None:
        raise DockerUnavailable("mmdebstrap is not installed (scripts/install-system-deps installs it)")
    with tempfile.TemporaryDirectory(prefix="rnntune-rootfs-") as tmp:
        tarball = Path(tmp) / "root.tar"
        command = ["--variant=minbase", f"--include={DEBIAN_PACKAGES}", "bookworm", str(tarball)]
        run([mmdebstrap, *command, debian_mirror()], log)
        run(["docker", "import", "--change", 'CMD ["/bin/bash"]', str(tarball), BASE], log)


def wheelhouse(log: Path) -> Path:
    """Every wheel the image installs, fetched by this machine's own pip (its indexes, proxy and
    certificates, which a container does not have), cached per pyproject.toml between runs."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    needs = ["pip", *project["build-system"]["requires"], *project["project"]["dependencies"]]
    key = hashlib.sha256("\n".join(needs).encode()).hexdigest()[:16]
    folder = WHEEL_CACHE / key
    if not (folder / ".complete").exists():
        folder.mkdir(parents=True, exist_ok=True)
        run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--only-binary",
                ":all:",
                "--dest",
                str(folder),
                *needs,
            ],
            log,
        )
        (folder / ".complete").touch()
    return folder


@contextlib.contextmanager
def pip_index(log: Path) -> Iterator[str]:
    """A PEP 503 index of the wheelhouse served on 127.0.0.1; yields its URL."""
    wheels = wheelhouse(log)
    with tempfile.TemporaryDirectory(prefix="rnntune-pip-") as tmp:
        for wheel in wheels.glob("*.whl"):
            project = re.sub(r"[-_.]+", "-", wheel.name.split("-")[0]).lower()
            (Path(tmp) / project).mkdir(exist_ok=True)
            (Path(tmp) / project / wheel.name).symlink_to(wheel)
        for folder in Path(tmp).iterdir():
            links = "".join(f'<a href="{quote(w.name)}">{w.name}</a>\n' for w in sorted(folder.glob("*.whl")))
            (folder / "index.html").write_text(f"<!DOCTYPE html><html><body>\n{links}</body></html>\n")
        server = serve(tmp, preferred_port=20000 + int(wheels.name, 16) % 20000)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}/"
        finally:
            server.shutdown()
            server.server_close()


def serve(folder: str, preferred_port: int) -> http.server.ThreadingHTTPServer:
    """An HTTP server of `folder` on 127.0.0.1: on `preferred_port` when it is free, so that the
    index URL, a build arg, stays the same between runs and Docker's layer cache holds; else on any
    free port (the build then misses its cache once)."""
    handler = functools.partial(QuietHandler, directory=folder)
    try:
        return http.server.ThreadingHTTPServer(("127.0.0.1", preferred_port), handler)
    except OSError:
        return http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args) -> None:
        pass


def build_postgres(log: Path) -> None:
    run(
        [
            "docker",
            "build",
            "--network",
            "host",
            "--build-arg",
            f"BASE_IMAGE={BASE}",
            "-t",
            POSTGRES,
            str(ROOT / "tests" / "images" / "postgres"),
        ],
        log,
    )


def image_id(name: str) -> str | None:
    out = subprocess.run(
        ["docker", "image", "inspect", "-f", "{{.Id}}", name], capture_output=True, text=True, check=False
    )
    return out.stdout.strip() if out.returncode == 0 else None


def build_project(log: Path) -> None:
    """Rebuild PROJECT; the previous build's image, now untagged, is removed (its shared layers stay)."""
    previous = image_id(PROJECT)
    with pip_index(log) as index:
        build_args = {"BASE_IMAGE": BASE, "TORCH_INDEX_URL": index, "PIP_INDEX_URL": index}
        args = [arg for key, value in build_args.items() for arg in ("--build-arg", f"{key}={value}")]
        run(
            [
                "docker",
                "build",
                "--network",
                "host",
                *args,
                "-f",
                str(ROOT / "docker" / "Dockerfile"),
                "-t",
                PROJECT,
                str(ROOT),
            ],
            log,
        )
    if previous and previous != image_id(PROJECT):
        subprocess.run(["docker", "image", "rm", previous], capture_output=True, check=False)


def build_all(log: Path) -> dict[str, str]:
    """Every image the test needs, cached ones reused; {what: image name}."""
    ensure_docker()
    if not image_exists(BASE):
        build_base(log)
    if not image_exists(POSTGRES):
        build_postgres(log)
    build_project(log)
    return {"base": BASE, "postgres": POSTGRES, "project": PROJECT}


if (
    __name__ == "__main__"
):  # build (or refresh) the images ahead of a test run: python -m tests.compose_images
    print(build_all(Path(tempfile.gettempdir()) / "rnntune-compose-images.log"))
