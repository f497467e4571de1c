"""Study names and numbers at the edges, over real HTTP: every route that takes a study name refuses
one no study can have (NUL, quotes, CR/LF, non-ASCII, a path) with a 422 naming the pattern, before
any read; download headers are RFC 6266/5987 whatever the name; and an inline space whose range
bound is a huge integer is a 422 naming the parameter (it was a 500)."""

from __future__ import annotations

from urllib.parse import quote

import httpx
import pytest

from tests.tuner.api.fixtures import live_server, make_study
from tuner.api import ApiSettings
from tuner.api.routes.common import attachment

ODD = ["a\x00b", 'a"b', "a\r\nb", "naïve", "a b", ".hidden", "x" * 129]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("names")
    db_url = f"sqlite:///{root / 's.db'}"
    make_study(db_url, "fixed", root / "storage" / "fixed")
    with live_server(ApiSettings(db_url=db_url, storage_root=root / "storage")) as url:
        yield url


def name_routes(url: str) -> list[tuple[str, str]]:
    schema = httpx.get(f"{url}/openapi.json").json()
    return [
        (method.upper(), path)
        for path, ops in schema["paths"].items()
        if "{name}" in path
        for method in ops
        if method in ("get", "post")
    ]


@pytest.mark.parametrize("name", ODD, ids=repr)
def test_every_route_refuses_a_name_no_study_can_have(server, name):
    routes = name_routes(server)
    assert len(routes) >= 15
    for method, path in routes:
        target = path.replace("{name}", quote(name, safe=""))
        target = target.replace("{number}", "0").replace("{fmt}", "csv")
        response = httpx.request(method, server + target, json={} if method == "POST" else None)
        assert response.status_code == 422, (method, target, response.status_code, response.text[:200])
        assert "name" in response.text


@pytest.mark.parametrize(
    ("filename", "expected"),
    [
        ("fixed-trials.csv", 'attachment; filename="fixed-trials.csv"'),
        (
            "naïve-trials.csv",
            "attachment; filename=\"na_ve-trials.csv\"; filename*=UTF-8''na%C3%AFve-trials.csv",
        ),
        ('a"b\r\n.pt', "attachment; filename=\"a_b__.pt\"; filename*=UTF-8''a%22b%0D%0A.pt"),
    ],
)
def test_download_names_are_encoded(filename, expected):
    value = attachment(filename)
    assert value == expected
    value.encode("latin-1")  # a header value h11 can send


def test_the_downloads_name_their_files(server):
    csv = httpx.get(f"{server}/studies/fixed/trials.csv")
    assert (
        csv.status_code == 200
        and csv.headers["content-disposition"] == 'attachment; filename="fixed-trials.csv"'
    )


@pytest.mark.parametrize("bound", [10**400, -(10**400), 2**63, 2**53 + 1])
def test_a_huge_integer_bound_of_an_inline_space_is_a_422(server, bound):
    space = {
        "fixed": {"cell": "lstm", "dataset": "builtin"},
        "params": {"mogrifier_rounds": {"scale": "int", "low": 0, "high": bound}},
    }
    response = httpx.post(f"{server}/studies", json={"name": "huge", "space": space})
    assert response.status_code == 422, response.text
    assert "mogrifier_rounds" in response.json()["detail"] and len(response.text) < 2000
