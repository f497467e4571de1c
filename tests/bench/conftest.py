"""The bench scripts, loaded as modules: they are scripts, not a package."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _script(name: str) -> Iterator[ModuleType]:
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    yield module
    del sys.modules[name]


@pytest.fixture(scope="module")
def replicate() -> Iterator[ModuleType]:
    yield from _script("replicate")


@pytest.fixture(scope="module")
def multifidelity() -> Iterator[ModuleType]:
    yield from _script("multifidelity")


@pytest.fixture(scope="module")
def ptb_size_corpus() -> Iterator[ModuleType]:
    yield from _script("ptb_size_corpus")
