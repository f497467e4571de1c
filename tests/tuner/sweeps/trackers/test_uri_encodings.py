"""The tracker-URI confinement against what the libraries open, not against our reading of them:
for URIs drawn with every encoding a client can use (any byte percent-encoded, hex digits in either
case, doubled slashes, `.` and `..` segments, symlinks out of and within the root), a URI
`uris.rest_problem` accepts makes SQLAlchemy's URL parser (`sqlite:`) or MLflow's own
`local_file_uri_to_path` (`file:` and bare paths) name a path inside the storage root that is not
the study database, and one whose opened path lies inside is not refused. Seeded: the same commit
draws the same cases."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st
from sqlalchemy.engine import make_url

from tuner.sweeps.trackers import uris

local_file_uri_to_path = pytest.importorskip("mlflow.utils.file_utils").local_file_uri_to_path

SEGMENTS = ["store", "sub", "db.sqlite", "x.db", "mlruns", "outside", "link", "inlink", ".", "..", ""]
PREFIXES = ["sqlite:///", "sqlite:////", "file://", "file:///", "file://localhost/", "/", "", "./"]


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """`base/store` is the storage root and `base` the working directory; `base/db.sqlite` is the
    study database; `store/link` leads out of the root, `store/inlink` to a folder inside it."""
    base = tmp_path_factory.mktemp("uris").resolve()
    root = base / "store"
    (root / "sub").mkdir(parents=True)
    (base / "outside").mkdir()
    (root / "link").symlink_to(base / "outside")
    (root / "inlink").symlink_to(root / "sub")
    (base / "db.sqlite").write_bytes(b"")
    with contextlib.chdir(base):
        yield {"base": base, "root": root, "db": f"sqlite:///{base / 'db.sqlite'}"}


def _encode(text: str, which: list[bool], upper: list[bool]) -> str:
    """`text` with the characters `which` marks percent-encoded (UTF-8 bytes), hex in either case."""
    out = []
    for k, char in enumerate(text):
        if which[k % len(which)]:
            hexes = [f"{b:02X}" if upper[k % len(upper)] else f"{b:02x}" for b in char.encode()]
            out.append("".join(f"%{h}" for h in hexes))
        else:
            out.append(char)
    return "".join(out)


@st.composite
def drawn_uris(draw, base: Path) -> str:
    """A tracker URI over the tree, absolute (through `base`) or relative, encoded at random."""
    absolute = draw(st.booleans())
    parts = draw(st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=6))
    path = "/".join(([str(base).lstrip("/")] if absolute else []) + parts)
    which = draw(st.lists(st.booleans(), min_size=1, max_size=8))
    upper = draw(st.lists(st.booleans(), min_size=1, max_size=4))
    prefix = draw(st.sampled_from(PREFIXES))
    if not absolute and prefix in ("sqlite:////", "file:///", "file://localhost/", "/"):
        prefix = draw(st.sampled_from(["sqlite:///", "", "./"]))
    if absolute and prefix in ("sqlite:///", "file://", "", "./"):
        prefix = {"sqlite:///": "sqlite:////", "file://": "file:///", "": "/", "./": "/"}[prefix]
    return prefix + _encode(path, which, upper)


def opened(uri: str) -> str | None:
    """The path the library itself opens for `uri`: SQLAlchemy for sqlite:, MLflow for the rest."""
    if uri.startswith("sqlite:"):
        return make_url(uri).database
    return local_file_uri_to_path(uri)


def inside(path: str | None, tree) -> bool:
    if path is None or "\x00" in path or not path:
        return False
    real = (tree["base"] / path).resolve()
    root = tree["root"].resolve()
    return real != tree["base"] / "db.sqlite" and (real == root or root in real.parents)


def problem(uri: str, tree) -> str | None:
    return uris.rest_problem(uri, allowed=(), storage_root=tree["root"], database_url=tree["db"])


@pytest.mark.parametrize(
    "uri",
    [
        "sqlite:////{base}/store/%2e%2e/db.sqlite",  # reported: MLflow's tables in the study database
        "sqlite:///store/%2e%2e/%2e%2e/outside/x.db",  # reported: a 954 KB file outside the root
        "sqlite:////{base}/store/%2E%2E/outside/x.db",
        "file:///{base}/store/%2e%2e/outside",
        "file:///{base}/store/%2e%2e%2foutside",
        "{base}/store/%2e%2e/outside",
        "file:///{base}/store/link/mlruns",
        "sqlite:////{base}/store/link/x.db",
    ],
)
def test_the_reported_encodings_are_refused(tree, uri):
    uri = uri.format(base=str(tree["base"]).lstrip("/"))
    assert not inside(opened(uri), tree), uri  # the case is a real escape, by the libraries' reading
    assert problem(uri, tree) is not None, uri


@pytest.mark.parametrize(
    "uri",
    ["sqlite:///a\x00b", "file:///x\x00", "sqlite:////{base}/store/a%00b.db", "store/\x1b[2J", "store/%0a"],
)
def test_control_characters_and_nul_are_refused_by_name(tree, uri):
    uri = uri.format(base=str(tree["base"]).lstrip("/"))
    assert "control characters" in (problem(uri, tree) or "")


def test_a_sqlite_query_is_refused(tree):
    uri = f"sqlite:///file:{tree['base']}/outside/x.db?mode=rwc&uri=true"
    assert "no query" in (problem(uri, tree) or "")


@seed(20261129)
@settings(max_examples=400, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_what_is_accepted_is_what_the_libraries_open_inside_the_root(tree, data):
    uri = data.draw(drawn_uris(tree["base"]))
    found = problem(uri, tree)
    confined = inside(opened(uri), tree)
    if found is None:
        assert confined, (uri, opened(uri))
    elif confined and "?" not in uri:
        pytest.fail(f"{uri!r} opens {opened(uri)!r} inside the root but was refused: {found}")
