"""The bench package's scripts, imported as modules (`bench.replicate`, ...) for their logic."""

from __future__ import annotations

import importlib
from types import ModuleType

import pytest


@pytest.fixture(scope="module")
def replicate() -> ModuleType:
    return importlib.import_module("bench.replicate")


@pytest.fixture(scope="module")
def multifidelity() -> ModuleType:
    return importlib.import_module("bench.multifidelity")


@pytest.fixture(scope="module")
def ptb_size_corpus() -> ModuleType:
    return importlib.import_module("bench.ptb_size_corpus")


@pytest.fixture(scope="module")
def search_efficiency() -> ModuleType:
    return importlib.import_module("bench.search_efficiency")
