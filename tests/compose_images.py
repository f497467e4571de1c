"""Images for the `docker compose up` end-to-end test, built on this machine without a registry.

* BASE: Debian bookworm made by `debootstrap` from this machine's Debian mirror and imported with
  `docker import` (python3 and venv included, so docker/Dockerfile needs no apt).
* POSTGRES: PostgreSQL 15 on BASE (tests/images/postgres), behaving as the official image.
* PROJECT: docker/Dockerfile built FROM BASE, pip reading this machine's own package sources
  (its `pip config`: find-links folders and file:// indexes) through a loopback HTTP server, the
  build on the host network so it reaches it.

BASE and POSTGRES are kept between runs (reused when `docker image inspect` finds them, rebuilt when
missing); PROJECT is rebuilt every time, Docker's layer cache keeping torch and the dependencies
unless pyproject.toml changed.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BASE = "rnntune-test/bookworm:1"
POSTGRES = "rnntune-test/postgres:15"
PROJECT = "rnntune-test/rnntune:latest"
DEBIAN_PACKAGES = "python3,python3-venv,ca-certificates"
DOCKER_ENV = {**os.environ, "DOCKER_BUILDKIT": "0"}  # the classic builder: no frontend image to pull


class DockerUnavailable(RuntimeError):
    """No Docker engine, Compose or debootstrap to run the test with."""


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
    texts = [p.read_text(errors="replace") for p in [Path("/etc/apt/sources.list"),
             *sorted(Path("/etc/apt/sources.list.d").glob("*"))] if p.is_file()]
    for text in texts:
        for uri in re.findall(r"^(?:URIs:\s*|deb\s+(?:\[[^]]*\]\s+)?)(\S+)", text, re.M):
            if uri.rstrip("/").endswith("/debian"):
                return uri
    return "http://deb.debian.org/debian"


def build_base(log: Path) -> None:
    debootstrap = shutil.which("debootstrap") or "/usr/sbin/debootstrap"
    if not Path(debootstrap).exists():
        raise DockerUnavailable("debootstrap is not installed (scripts/install-system-deps installs it)")
    with tempfile.TemporaryDirectory(prefix="rnntune-rootfs-") as tmp:
        rootfs = Path(tmp) / "root"
        run([debootstrap, "--variant=minbase", f"--include={DEBIAN_PACKAGES}", "bookworm", str(rootfs),
             debian_mirror()], log)
        tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
        run(["docker", "import", "--change", 'CMD ["/bin/bash"]', "-", BASE], log, stdin=tar.stdout)
        tar.wait()


def local_pip_sources() -> tuple[list[Path], list[Path]]:
    """(find-links folders, file:// index folders) of this machine's pip configuration."""
    out = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True).stdout
    links: list[Path] = []
    indexes: list[Path] = []
    for line in out.splitlines():
        key, _, value = line.partition("=")
        for item in value.strip().strip("'\"").split():
            path = Path(item.removeprefix("file://"))
            if not path.is_dir():
                continue
            if key.endswith(".find-links") and path not in links:
                links.append(path)
            elif key.endswith("index-url") and item.startswith("file://") and path not in indexes:
                indexes.append(path)
    return links, indexes


@contextlib.contextmanager
def pip_mirror() -> Iterator[dict[str, str]]:
    """Serve the local pip sources on 127.0.0.1; yields the build args that point pip at them."""
    links, indexes = local_pip_sources()
    if not links and not indexes:
        yield {}
        return
    with tempfile.TemporaryDirectory(prefix="rnntune-pip-") as tmp:
        served = {}
        for i, path in enumerate(links):
            (Path(tmp) / f"links{i}").symlink_to(path)
            served[path] = f"links{i}"
        for i, path in enumerate(indexes):
            # The index's parent: its pages link to the files relatively (../../files/...).
            (Path(tmp) / f"index{i}").symlink_to(path.parent)
            served[path] = f"index{i}/{path.name}"
        handler = functools.partial(QuietHandler, directory=tmp)
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        base = f"http://127.0.0.1:{server.server_address[1]}"
        try:
            urls = [f"{base}/{served[p]}/" for p in indexes]
            args = {"PIP_FIND_LINKS": " ".join(f"{base}/{served[p]}/" for p in links)}
            if urls:
                # Torch from the find-links wheel, its dependencies from the local index.
                args |= {"PIP_INDEX_URL": urls[0], "TORCH_INDEX_URL": urls[0], "PIP_EXTRA_INDEX_URL": " ".join(urls[1:])}
            yield args
        finally:
            server.shutdown()
            server.server_close()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args) -> None:  # noqa: A002 - the base class's signature
        pass


def build_postgres(log: Path) -> None:
    run(["docker", "build", "--network", "host", "--build-arg", f"BASE_IMAGE={BASE}", "-t", POSTGRES,
         str(ROOT / "tests" / "images" / "postgres")], log)


def build_project(log: Path) -> None:
    with pip_mirror() as pip_args:
        args = [arg for key, value in {"BASE_IMAGE": BASE, **pip_args}.items() for arg in ("--build-arg", f"{key}={value}")]
        run(["docker", "build", "--network", "host", *args, "-f", str(ROOT / "docker" / "Dockerfile"),
             "-t", PROJECT, str(ROOT)], log)


def build_all(log: Path) -> dict[str, str]:
    """Every image the test needs, cached ones reused; {what: image name}."""
    ensure_docker()
    if not image_exists(BASE):
        build_base(log)
    if not image_exists(POSTGRES):
        build_postgres(log)
    build_project(log)
    return {"base": BASE, "postgres": POSTGRES, "project": PROJECT}


if __name__ == "__main__":  # build (or refresh) the images ahead of a test run: python -m tests.compose_images
    print(build_all(Path(tempfile.gettempdir()) / "rnntune-compose-images.log"))
