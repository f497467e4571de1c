"""The service's hardening (issue 9, items 5, 6, 8, 9 and 10; second round: analyses never lock a
study out, security declared as enforced), each over real HTTP against a live server on real SQLite
studies: no file read outside the server's storage root, no write left open by a read token alone,
no cross-site mutation, bounded bodies, lock tables, headers and analyses, and `data_dir` confined to
the configured data roots."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
import yaml

from tests.tuner.api.fixtures import BEST, live_app, live_server, make_study
from tuner.analysis.reads import MAX_COMPUTATIONS
from tuner.api import ApiSettings, create_app

WRITE, READ = "write-token-123", "read-token-456"
NEW = {"name": "made", "space": "tiny", "n_trials": 3, "parallel": 1, "sampler": "random"}


def bearer(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture(scope="module")
def env(tmp_path_factory) -> dict:
    """A storage root with `fixed` (finished) and `bigconfig` (a 200 kB run config), studies whose
    attrs claim other roots (`evil`: the folder above storage, `etc`: /), and a data root."""
    root = tmp_path_factory.mktemp("security")
    storage, data = root / "storage", root / "data"
    (data / "corpus").mkdir(parents=True)
    db_url = f"sqlite:///{root / 's.db'}"
    make_study(db_url, "fixed", storage / "fixed")
    secret = root / "secret.bin"
    secret.write_bytes(b"secret bytes outside the storage root")
    make_study(db_url, "evil", root, checkpoints={0: str(secret)})
    make_study(db_url, "etc", Path("/"), checkpoints={0: "/etc/passwd"})
    run_dir = storage / "bigconfig" / "trial0"
    run_dir.mkdir(parents=True)
    (run_dir / "best.pt").write_bytes(b"weights")
    big = {"cell": "lstm", **BEST, "notes": {f"key{i}": "x" * 40 for i in range(5000)}}
    (run_dir / "config.yaml").write_text(yaml.safe_dump(big))
    make_study(db_url, "bigconfig", storage / "bigconfig", checkpoints={0: str(run_dir / "best.pt")})
    return {"db_url": db_url, "storage": storage, "data": data, "root": root, "big": big}


@pytest.fixture(scope="module")
def open_server(env):
    """No tokens (the default of `rnntune up`), data root configured."""
    settings = ApiSettings(db_url=env["db_url"], storage_root=env["storage"], data_roots=(env["data"],))
    with live_server(settings) as url:
        yield url


@pytest.fixture(scope="module")
def guarded(env):
    settings = ApiSettings(db_url=env["db_url"], storage_root=env["storage"], api_token=WRITE)
    with live_server(settings) as url:
        yield url


# Item 5: the roots files are served from come from the server's configuration, never the database.
@pytest.mark.parametrize("study", ["evil", "etc"])
def test_checkpoint_root_from_the_database_is_ignored(open_server, study):
    response = httpx.get(f"{open_server}/studies/{study}/best/checkpoint")
    assert response.status_code == 404, response.status_code
    assert "outside the server's storage root" in response.json()["detail"]
    assert b"secret bytes" not in response.content and b"root:" not in response.content


def test_storage_root_comes_from_the_environment(env, monkeypatch):
    monkeypatch.setenv("RNNTUNE_STORAGE", str(env["storage"]))
    assert ApiSettings.from_env(env["db_url"]).storage_root == env["storage"].resolve()


# Item 6: a read token alone protects writes too (it becomes the write token).
def test_read_token_alone_guards_writes(env):
    settings = ApiSettings(db_url=env["db_url"], storage_root=env["storage"], read_token=READ)
    with live_server(settings) as url:
        assert httpx.post(f"{url}/studies", json={**NEW, "name": "r1"}).status_code == 401
        assert httpx.post(f"{url}/studies/fixed/start").status_code == 401
        created = httpx.post(f"{url}/studies", json={**NEW, "name": "r1"}, headers=bearer(READ))
        assert created.status_code == 201, created.text
        assert httpx.get(f"{url}/studies/r1").status_code == 401
        assert httpx.get(f"{url}/studies/r1", headers=bearer(READ)).json()["status"] == "created"


# Item 8: mutations take JSON only, and only from this server's own origin and host names.
@pytest.mark.parametrize(
    "kwargs, code, needle",
    [
        ({"data": {"space": "tiny"}}, 415, "Content-Type"),
        ({"content": b"{}", "headers": {"Content-Type": "text/plain"}}, 415, "Content-Type"),
        ({"headers": {"Origin": "http://evil.example"}}, 403, "Origin"),
        ({"headers": {"Origin": "null"}}, 403, "Origin"),
        ({"headers": {"Host": "evil.example"}}, 403, "Host"),
    ],
)
@pytest.mark.parametrize("path", ["/studies/fixed/start", "/studies/fixed/stop", "/studies"])
def test_cross_site_mutations_are_refused(open_server, path, kwargs, code, needle):
    response = httpx.post(open_server + path, **kwargs)
    assert response.status_code == code, response.text
    assert needle in response.json()["detail"]


def test_same_origin_mutations_pass_the_site_checks(open_server):
    response = httpx.post(f"{open_server}/studies/fixed/start", headers={"Origin": open_server})
    assert response.status_code == 409 and "finished" in response.json()["detail"]
    assert httpx.get(f"{open_server}/studies", headers={"Origin": "http://evil.example"}).status_code == 200


# Item 9: the body is read after authentication, and at most 1 MB of it.
def test_body_is_parsed_only_after_authentication(guarded):
    response = httpx.post(
        f"{guarded}/studies", content=b"{not json", headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 401
    bad = httpx.post(
        f"{guarded}/studies",
        content=b"{not json",
        headers={"Content-Type": "application/json", **bearer(WRITE)},
    )
    assert bad.status_code == 422 and bad.json()["detail"].startswith("body")


def test_body_over_1_mb_is_413(guarded):
    huge = {**NEW, "name": "huge", "space": {"params": {}, "fixed": {"pad": "x" * 1_100_000}}}
    assert httpx.post(f"{guarded}/studies", json=huge).status_code == 401
    sized = httpx.post(f"{guarded}/studies", json=huge, headers=bearer(WRITE))
    assert sized.status_code == 413 and "body" in sized.json()["detail"]

    def chunks():
        yield json.dumps(huge).encode()

    chunked = httpx.post(
        f"{guarded}/studies", content=chunks(), headers={"Content-Type": "application/json", **bearer(WRITE)}
    )
    assert chunked.status_code == 413
    assert httpx.get(f"{guarded}/studies/huge").status_code == 404


def _held(obj, depth: int = 4, seen: set | None = None) -> int:
    """Entries held in the dicts, lists and sets reachable from `obj` through tuner.* objects."""
    seen = set() if seen is None else seen
    if depth == 0 or id(obj) in seen or not type(obj).__module__.startswith("tuner."):
        return 0
    seen.add(id(obj))
    total = 0
    for value in vars(obj).values():
        items = (
            list(value.values())
            if isinstance(value, dict)
            else value
            if isinstance(value, (list, set))
            else [value]
        )
        total += len(items) if isinstance(value, (dict, list, set)) else 0
        total += sum(_held(item, depth - 1, seen) for item in items)
    return total


def test_unknown_study_names_do_not_grow_the_server(env):
    app = create_app(ApiSettings(db_url=env["db_url"], storage_root=env["storage"]))
    with live_app(app) as url, httpx.Client(base_url=url) as client:
        for i in range(50):
            assert client.get(f"/studies/warm-{i}/trials").status_code == 404
        before = _held(app.state.rnntune.store)
        for i in range(500):
            assert client.get(f"/studies/unknown-{i}/trials").status_code == 404
        assert _held(app.state.rnntune.store) - before < 10


def test_big_run_config_is_served_by_url_not_header(open_server, env):
    response = httpx.get(f"{open_server}/studies/bigconfig/best/checkpoint")
    assert response.status_code == 200 and response.content == b"weights"
    assert "x-trial-config" not in response.headers
    assert sum(len(k) + len(v) for k, v in response.headers.items()) < 8192
    url = response.headers["x-trial-config-url"]
    assert url == "/studies/bigconfig/trials/0/config"
    assert httpx.get(open_server + url).json() == env["big"]
    small = httpx.get(f"{open_server}/studies/fixed/trials/1/config").json()
    assert small == {"learning_rate": 0.0022, "input_dropout": 0.5, "mogrifier_rounds": 3}


def test_distinct_fractions_never_lock_a_study_out(env):
    """50 distinct neighbourhood fractions in a row on a finished study: every one answers 200 (the
    analyses kept are evicted least-recently-used; fractions are rounded to 0.005)."""
    app = create_app(ApiSettings(db_url=env["db_url"], storage_root=env["storage"]))
    with live_app(app) as url, httpx.Client(base_url=url) as client:
        fractions = [round(0.02 + 0.0193 * i, 4) for i in range(50)]
        codes = []
        for fraction in fractions:
            answer = client.get("/studies/fixed/sensitivity", params={"fraction": fraction})
            codes.append(answer.status_code)
            assert answer.status_code != 200 or answer.json()["fraction"] == round(
                round(fraction / 0.005) * 0.005, 3
            )
        assert codes.count(429) == 0 and set(codes) == {200}, codes
        plots = [
            client.get("/studies/fixed/plots/parallel-coordinates", params={"fraction": f})
            for f in fractions[:20]
        ]
        assert {p.status_code for p in plots} == {200}
        snapshot = app.state.rnntune.store.fresh_snapshot("fixed") or app.state.rnntune.store.snapshot(
            app.state.rnntune.store.row("fixed")
        )
        assert len(snapshot._memo) <= MAX_COMPUTATIONS
        too_fine = client.get("/studies/fixed/sensitivity", params={"fraction": 0.004})
        assert too_fine.status_code == 422 and "query.fraction" in too_fine.json()["detail"]


# Item 10: data_dir only inside the data roots, with one answer whether or not the path exists.
@pytest.mark.parametrize("where", ["overrides", "inline"])
def test_data_dir_is_confined_to_the_data_roots(open_server, env, where):
    def create(name: str, data_dir: str) -> httpx.Response:
        if where == "overrides":
            body = {**NEW, "name": name, "overrides": {"set": {"data_dir": data_dir}}}
        else:
            space = {
                "fixed": {"cell": "lstm", "dataset": "builtin", "max_steps": 20, "data_dir": data_dir},
                "params": {"learning_rate": {"low": 0.001, "high": 0.004, "scale": "log"}},
            }
            body = {**NEW, "name": name, "space": space}
        return httpx.post(f"{open_server}/studies", json=body)

    field = "overrides.set.data_dir" if where == "overrides" else "space.fixed.data_dir"
    answers = [
        create(f"d-{where}-{i}", path)
        for i, path in enumerate(
            ["/etc", "/no/such/folder", str(env["root"]), str(env["data"] / ".." / "storage"), "../.."]
        )
    ]
    for answer in answers:
        assert answer.status_code == 422, answer.text
        assert f"body.{field}: must be a folder inside the server's data roots" in answer.json()["detail"]
    assert len({a.text for a in answers}) == 1
    inside = create(f"d-{where}-ok", str(env["data"] / "corpus"))
    assert inside.status_code == 201, inside.text


@pytest.mark.parametrize(
    "tokens, reads, writes",
    [({}, False, False), ({"api_token": WRITE}, False, True), ({"read_token": READ}, True, True)],
)
def test_openapi_declares_the_security_it_enforces(env, tokens, reads, writes):
    """Bearer security is declared exactly where it is enforced: reads only with a read token."""
    settings = ApiSettings(db_url=env["db_url"], storage_root=env["storage"], **tokens)
    with live_server(settings) as url:
        schema = httpx.get(f"{url}/openapi.json").json()
        for path, operations in schema["paths"].items():
            for method, operation in operations.items():
                declared = {"HTTPBearer": []} in operation.get("security", [])
                assert declared == (reads if method == "get" else writes), (method, path)
                if declared:
                    answer = httpx.request(
                        method,
                        url
                        + path.replace("{name}", "fixed").replace("{number}", "0").replace("{fmt}", "csv"),
                    )
                    assert answer.status_code == 401, (method, path, answer.status_code)
        schemes = schema.get("components", {}).get("securitySchemes", {})
        assert ("HTTPBearer" in schemes) == (reads or writes)
        body = schema["paths"]["/studies"]["post"]["requestBody"]["content"]["application/json"]["schema"]
        assert "$ref" not in json.dumps(body) and body["properties"]["overrides"]


def test_a_checkpoints_dataset_folder_is_held_to_the_data_roots(tmp_path):
    """A dynamic-evaluation study takes its data_dir from the trained model's checkpoint: over REST
    that folder must lie inside the server's data roots, as a data_dir given directly must (a 422
    before, for the direct one only)."""
    from tests.tuner.dyneval_checkpoint import quick_checkpoint

    storage, roots = tmp_path / "storage", tmp_path / "datasets"
    roots.mkdir()
    checkpoint = quick_checkpoint(storage / "model")  # its corpus lies under storage, not the data roots
    settings = ApiSettings(db_url=f"sqlite:///{tmp_path / 's.db'}", storage_root=storage, data_roots=(roots,))
    with live_server(settings) as url:
        body = {"name": "dv", "space": "dyneval", "checkpoint": str(checkpoint), "n_trials": 2}
        refused = httpx.post(f"{url}/studies", json=body)
        assert refused.status_code == 422, refused.text
        assert "dataset folder must be inside the server's data roots" in refused.json()["detail"]
        assert httpx.get(f"{url}/studies/dv").status_code == 404
