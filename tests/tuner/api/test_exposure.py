"""Second hardening round, over real HTTP on real SQLite studies: the Host allow-list guards reads
too (DNS rebinding), `OPTIONS` and unknown methods answer with the path's whole `Allow`, checkpoints
are opened without following links and served from the descriptor that was checked, a stored
`storage_path` outside the storage root is refused, and `rnntune serve` beyond loopback needs a read
token or `--public-reads`."""

from __future__ import annotations

import hashlib
import os
import socket
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from tests.tuner.api.fixtures import live_server, make_study
from tuner.api import ApiSettings, checkpoint, paths
from tuner.api.settings import LOOPBACK_HOSTS, default_hosts
from tuner.errors import InvalidInput

ROOT = Path(__file__).resolve().parents[3]
WEIGHTS = b"weights that were checked" * 50


@pytest.fixture(scope="module")
def env(tmp_path_factory) -> dict:
    """`fixed` with its checkpoint inside storage; `inner` whose checkpoint is a symlink to a file
    inside storage; `abroad` whose stored storage_path lies outside the storage root."""
    root = tmp_path_factory.mktemp("exposure")
    storage = root / "storage"
    run = storage / "fixed" / "trial0"
    run.mkdir(parents=True)
    (run / "best.pt").write_bytes(WEIGHTS)
    db_url = f"sqlite:///{root / 's.db'}"
    make_study(db_url, "fixed", storage / "fixed", checkpoints={0: str(run / "best.pt")})
    (storage / "inner").mkdir()
    os.symlink(run / "best.pt", storage / "inner" / "best.pt")
    make_study(db_url, "inner", storage / "inner", checkpoints={0: str(storage / "inner" / "best.pt")})
    make_study(db_url, "abroad", root / "elsewhere", status="stopped")
    secret = root / "secret.bin"
    secret.write_bytes(b"secret bytes outside the storage root")
    return {"db_url": db_url, "storage": storage, "root": root, "secret": secret, "run": run}


@pytest.fixture(scope="module")
def server(env):
    with live_server(ApiSettings(db_url=env["db_url"], storage_root=env["storage"])) as url:
        yield url


@pytest.mark.parametrize(
    "path",
    ["/studies", "/studies/fixed", "/studies/fixed/trials/0", "/studies/fixed/best/checkpoint", "/web/"],
)
def test_a_foreign_host_reads_nothing(server, path):
    """A DNS-rebinding page sends its own name as Host: 403, and no study data in the answer."""
    response = httpx.get(server + path, headers={"Host": "rebind.attacker.example"})
    assert response.status_code == 403, response.text
    assert "Host" in response.json()["detail"]
    assert b"fixed" not in response.content and WEIGHTS[:20] not in response.content
    assert httpx.get(server + path).status_code == 200


@pytest.mark.parametrize("second", ["127.0.0.1", "rebind.attacker.example"])
def test_two_host_headers_are_refused(server, second):
    """A request naming two Hosts (the first allowed) is a 400 before any route reads a study:
    which one a proxy or the app would believe is not defined (RFC 9112 §3.2)."""
    address = urlsplit(server)
    request = (
        f"GET /studies/fixed HTTP/1.1\r\nHost: {address.netloc}\r\nHost: {second}\r\n"
        "Connection: close\r\n\r\n"
    ).encode()
    with socket.create_connection((address.hostname, address.port), timeout=10) as conn:
        conn.sendall(request)
        answer = b""
        while chunk := conn.recv(65536):
            answer += chunk
    status = answer.split(b"\r\n", 1)[0]
    assert b" 400 " in status, answer[:300]
    # h11 (connections.py) refuses it before the app; the guard's own check ("sent 2 times") stays
    # for a server run another way (RequestGuard).
    assert b"fixed" not in answer and (b"sent 2 times" in answer or b"Invalid HTTP request" in answer)


def test_the_schema_documents_the_host_refusal(server):
    schema = httpx.get(f"{server}/openapi.json").json()
    for operations in schema["paths"].values():
        for operation in operations.values():
            assert "403" in operation["responses"]


def test_allowed_hosts_follow_the_listening_address(monkeypatch, env):
    assert default_hosts("127.0.0.1") == LOOPBACK_HOSTS
    assert set(default_hosts("10.1.2.3")) == {*LOOPBACK_HOSTS, "10.1.2.3"}
    assert set(LOOPBACK_HOSTS) < set(default_hosts("0.0.0.0"))
    monkeypatch.setenv("RNNTUNE_ALLOWED_HOSTS", "api,localhost")
    compose = ApiSettings.from_env(env["db_url"], env["storage"], host="0.0.0.0")
    assert compose.allowed_hosts == ("api", "localhost")
    with live_server(compose) as url:
        assert httpx.get(f"{url}/studies/fixed", headers={"Host": "api:8000"}).status_code == 200
        assert httpx.get(f"{url}/studies/fixed", headers={"Host": "127.0.0.1"}).status_code == 403


def test_allowed_host_entries_are_normalised(monkeypatch, env):
    """`LocalHost`, `api:8000` and `[::1]` in RNNTUNE_ALLOWED_HOSTS match the requests that name
    them, whatever their case or port; an entry that is no host is refused at start-up, named."""
    monkeypatch.setenv("RNNTUNE_ALLOWED_HOSTS", "api,localhost,127.0.0.1,::1")  # Compose's default list
    compose = ApiSettings.from_env(env["db_url"], env["storage"], host="0.0.0.0")
    assert compose.allowed_hosts == ("api", "localhost", "127.0.0.1", "::1")
    monkeypatch.setenv("RNNTUNE_ALLOWED_HOSTS", "LocalHost, api:8000, [::1]")
    settings = ApiSettings.from_env(env["db_url"], env["storage"], host="0.0.0.0")
    assert settings.allowed_hosts == ("localhost", "api", "::1")
    with live_server(settings) as url:
        for host in ("localhost", "LOCALHOST:8000", "api", "api:9", "[::1]", "[::1]:8000"):
            assert httpx.get(f"{url}/studies/fixed", headers={"Host": host}).status_code == 200, host
        assert httpx.get(f"{url}/studies/fixed", headers={"Host": "127.0.0.1"}).status_code == 403
    for bad in ("user@api", "api/path", "api:http"):
        monkeypatch.setenv("RNNTUNE_ALLOWED_HOSTS", f"localhost,{bad}")
        with pytest.raises(InvalidInput, match=rf"RNNTUNE_ALLOWED_HOSTS: '{bad}' is not a host name"):
            ApiSettings.from_env(env["db_url"], env["storage"], host="0.0.0.0")


@pytest.mark.parametrize("host", ["user@127.0.0.1", "127.0.0.1/studies", "127.0.0.1:http", "127.0.0.1 evil"])
def test_a_host_header_that_is_not_host_and_port_is_a_400(server, host):
    """RFC 9110 §7.2: Host is uri-host[:port]; userinfo, a path or a non-numeric port are refused,
    before any study is read, over a raw socket (an HTTP client would rewrite such a header)."""
    address = urlsplit(server)
    request = f"GET /studies/fixed HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode()
    with socket.create_connection((address.hostname, address.port), timeout=10) as conn:
        conn.sendall(request)
        answer = b""
        while chunk := conn.recv(65536):
            answer += chunk
    assert b" 400 " in answer.split(b"\r\n", 1)[0], answer[:300]
    assert b"RFC 9110" in answer and b"fixed" not in answer.split(b"\r\n\r\n", 1)[1]


@pytest.mark.parametrize(
    "path, methods",
    [
        ("/studies", {"GET", "POST"}),
        ("/studies/fixed", {"GET"}),
        ("/studies/fixed/finalize", {"GET", "POST"}),
        ("/studies/fixed/start", {"POST"}),
    ],
)
def test_options_and_unknown_methods_list_every_method_of_the_path(server, path, methods):
    options = httpx.options(server + path)
    assert options.status_code == 204
    assert set(options.headers["allow"].split(", ")) == methods | {"OPTIONS"}
    for method in ("PATCH", "DELETE", "PUT"):
        refused = httpx.request(method, server + path)
        assert refused.status_code == 405 and refused.headers["allow"] == options.headers["allow"]
        assert method in refused.json()["detail"]


def test_a_symlink_inside_storage_is_served_safely(server):
    """A checkpoint that is a symlink to a file inside the storage root: the real file is served."""
    response = httpx.get(f"{server}/studies/inner/best/checkpoint")
    assert response.status_code == 200 and response.content == WEIGHTS
    assert response.headers["x-checkpoint-sha256"] == hashlib.sha256(WEIGHTS).hexdigest()


def test_a_symlink_swapped_in_after_the_check_is_refused(env, monkeypatch):
    """The race: the path passes the confinement check, then its file is replaced by a symlink to a
    secret outside the root before it is opened. The open follows no link, so it is refused."""
    target = env["storage"] / "race" / "best.pt"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(WEIGHTS)
    checked = paths.resolve_within

    def check_then_swap(raw, roots, base):
        found = checked(raw, roots, base)
        target.unlink()
        os.symlink(env["secret"], target)
        return found

    monkeypatch.setattr(paths, "resolve_within", check_then_swap)
    with pytest.raises(paths.PathRefused, match="changed while it was opened"):
        checkpoint.locate(str(target), (env["storage"],), env["storage"])


def test_the_file_that_was_checked_is_the_file_that_is_served(env):
    """Once opened, replacing the path (a new checkpoint renamed over it) changes nothing served."""
    path = env["storage"] / "swap" / "best.pt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(WEIGHTS)
    found = checkpoint.locate(str(path), (env["storage"],), env["storage"])
    replacement = path.with_name("next.pt")
    replacement.write_bytes(b"a different file")
    os.replace(replacement, path)
    assert b"".join(found.chunks()) == WEIGHTS
    assert found.sha256 == hashlib.sha256(WEIGHTS).hexdigest() and found.size == len(WEIGHTS)


@pytest.mark.parametrize("raw", ["/etc/passwd", "../secret.bin", "fixed", "fixed/trial0"])
def test_paths_outside_the_root_or_not_files_are_refused(env, raw):
    with pytest.raises(paths.PathRefused):
        paths.open_within(raw, (env["storage"],), env["storage"])


def test_start_refuses_a_storage_path_outside_the_root(server):
    response = httpx.post(f"{server}/studies/abroad/start")
    assert response.status_code == 409, response.text
    assert "outside this server's storage root" in response.json()["detail"]


def _serve(env, *flags: str, read_token: str | None = None) -> subprocess.Popen:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("RNNTUNE_")}
    if read_token:
        environ["RNNTUNE_API_READ_TOKEN"] = read_token
    return subprocess.Popen(
        [sys.executable, "-m", "tuner.cli", "serve", "--host", "0.0.0.0", "--port", "0", "--db", env["db_url"],
         "--storage", str(env["storage"]), *flags],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environ, cwd=ROOT,
    )  # fmt: skip


def test_serving_beyond_loopback_without_a_read_token_refuses_to_start(env):
    process = _serve(env)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 1, out + err
    assert "RNNTUNE_API_READ_TOKEN" in err and "--public-reads" in err


@pytest.mark.slow
@pytest.mark.parametrize("flags, token", [(("--public-reads",), None), ((), "a-read-token")])
def test_serving_beyond_loopback_with_a_read_token_or_public_reads(env, flags, token):
    process = _serve(env, *flags, read_token=token)
    try:
        assert process.stdout is not None
        url = process.stdout.readline().split()[3]
        # `serve` says where the TensorBoard runs of --tensorboard studies are.
        hint = process.stdout.readline().strip()
        assert hint.endswith(f"tensorboard --logdir {Path(env['storage']).resolve()}"), hint
        answer = httpx.get(f"{url}/studies/fixed", timeout=30)
        assert answer.status_code == (401 if token else 200)
        if token:
            authorised = httpx.get(f"{url}/studies/fixed", headers={"Authorization": f"Bearer {token}"})
            assert authorised.status_code == 200
    finally:
        process.terminate()
        _, err = process.communicate(timeout=60)
    assert ("warning: --public-reads" in err) == (not token)
