"""`rnntune remote` stays an HTTP client: it imports none of the heavy libraries the other commands need.

The Kubernetes sweep Job runs it under a small memory limit (tests/tuner/deploy/test_memory.py);
torch alone is some 250 MB resident. Each case runs `rnntune` in a fresh interpreter and lists the
heavy modules it ended up importing.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("torch", "pandas", "pyarrow", "scipy", "plotly", "optuna", "sqlalchemy", "fastapi", "ray", "numpy")
RUN = """
import contextlib, io, json, sys
from tuner.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
    try:
        code = main(sys.argv[1:])
    except SystemExit as end:
        code = end.code
print(json.dumps({"code": code, "out": out.getvalue(), "modules": sorted(sys.modules)}))
"""


def run_rnntune(*argv: str) -> dict:
    """`rnntune ARGV` in a fresh interpreter: its exit code, its stdout and the modules it imported."""
    done = subprocess.run(
        [sys.executable, "-c", RUN, *argv], capture_output=True, text=True, timeout=300, check=True
    )
    return json.loads(done.stdout.splitlines()[-1])


def heavy(modules: list[str]) -> list[str]:
    return sorted({m.split(".")[0] for m in modules} & set(HEAVY))


@pytest.mark.parametrize(
    "argv",
    [
        ("remote", "--help"),
        ("remote", "--api", "http://127.0.0.1:9", "watch", "a-study"),
        ("remote", "--api", "http://127.0.0.1:9", "best", "a-study"),
    ],
    ids=["help", "watch", "best"],
)
def test_remote_imports_no_heavy_library(argv: tuple[str, ...]) -> None:
    result = run_rnntune(*argv)
    assert result["code"] in (0, 3), result  # 3: nothing listens on port 9
    assert "httpx" in {m.split(".")[0] for m in result["modules"]} or argv[-1] == "--help"
    assert heavy(result["modules"]) == []


def test_create_still_offers_every_option_of_the_spec() -> None:
    result = run_rnntune("remote", "create", "--help")
    assert result["code"] == 0
    for flag in ("--exist-ok", "--start", "--follow", "--trials", "--space", "--set", "--range"):
        assert flag in result["out"], flag


def test_rnntune_help_still_lists_every_command() -> None:
    from tuner.cli import COMMANDS

    result = run_rnntune("--help")
    assert result["code"] == 0 and all(name in result["out"] for name in COMMANDS)
    # Every command's module, the sweep driver's and the API's included, loads without scipy.stats
    # (0.7 s of CPU at each start); the sampler math that uses it imports it when it runs.
    assert "scipy.stats" not in result["modules"]
