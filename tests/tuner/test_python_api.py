"""docs/python.md's example, run as written: its code blocks execute in order in a fresh folder
(a real sweep on Ray, the real SQLite study), and their own asserts check what they print; around
the sweep, a check that it leaves the process's environment, torch threads and numpy RNG alone."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.child import ROOT, fresh_env

DOC = Path(__file__).resolve().parents[2] / "docs" / "python.md"


def blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)


def test_the_page_has_the_example_and_names_every_function():
    from tuner import python_api

    code = "\n".join(blocks())
    assert len(blocks()) >= 3
    for function in python_api.__all__:
        if function != "Background":
            assert f"rt.{function}(" in code or f"`{function}(" in DOC.read_text()


# Around the page's `rt.run` call (which runs a study in this process): it leaves
# the caller's environment, torch thread count and numpy random state as they were (execute.py).
KEEPS_BEFORE = """import os as _os, numpy as _np, torch as _torch
_before = (dict(_os.environ), _torch.get_num_threads(), _np.random.get_state()[1].copy())
"""
KEEPS_AFTER = """_changed = set(_os.environ.items()) ^ set(_before[0].items())
assert not _changed, _changed
assert _torch.get_num_threads() == _before[1], (_torch.get_num_threads(), _before[1])
assert (_np.random.get_state()[1] == _before[2]).all()
print("the process's settings were kept")
"""


@pytest.mark.slow
def test_the_python_page_runs_as_written(tmp_path):
    script = tmp_path / "example.py"
    first, *rest = blocks()
    head, run = first.split("outcome = rt.run(")  # importing Ray sets RAY_CLIENT_MODE: after imports
    script.write_text("\n\n".join([head + KEEPS_BEFORE + "outcome = rt.run(" + run + KEEPS_AFTER, *rest]))
    env = fresh_env(PYTHONPATH=str(ROOT))
    env.pop("RNNTUNE_DB_URL", None)
    result = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "finished 4 of 4" in result.stdout
    assert "the process's settings were kept" in result.stdout
    assert "exit code 0" in result.stdout
