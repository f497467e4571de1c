"""The one decision of which path a cell's call takes (paths.choose), checked with plain values,
and the per-run count a trial records."""

from __future__ import annotations

import dataclasses

import pytest

from trainer.cells import paths
from trainer.cells.paths import MAX_CAPTURES, Call, StepPath

# A training call on CUDA with cuda_path auto, nothing captured yet: the graphed path.
BASE = Call(
    setting="auto",
    on_cuda=True,
    forced_on_cpu=False,
    broken=False,
    capturing=False,
    training=True,
    captured=False,
    captures=0,
    busy=False,
)


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({}, StepPath.GRAPHS),
        ({"setting": "graphs"}, StepPath.GRAPHS),
        ({"captured": True, "captures": MAX_CAPTURES}, StepPath.GRAPHS),  # a known key past the bound replays
        ({"on_cuda": False}, StepPath.CPU),
        ({"on_cuda": False, "setting": "eager"}, StepPath.CPU),
        ({"on_cuda": False, "forced_on_cpu": True}, StepPath.COMPILED),  # the test switch: CUDA's decisions
        ({"on_cuda": False, "forced_on_cpu": True, "setting": "eager"}, StepPath.EAGER),
        ({"setting": "eager"}, StepPath.EAGER),
        ({"broken": True}, StepPath.EAGER),
        (
            {"broken": True, "setting": "graphs"},
            StepPath.GRAPHS,
        ),  # graphs: a failure is an error, not a fallback
        ({"capturing": True}, StepPath.EAGER),  # inside a caller's capture
        ({"training": False}, StepPath.COMPILED),  # evaluation
        (
            {"captured": True, "captures": 1, "busy": True},
            StepPath.COMPILED,
        ),  # a second forward before backward
        ({"captures": MAX_CAPTURES}, StepPath.EAGER),  # a new key past the bound (was counted `graphs`)
        ({"captures": MAX_CAPTURES - 1}, StepPath.GRAPHS),
    ],
)
def test_choose(changes, expected):
    assert paths.choose(dataclasses.replace(BASE, **changes)) is expected


def test_counts_and_the_recorded_path():
    paths.begin_run()
    assert paths.counts() == {}
    assert paths.path_used(on_cuda=True) == "eager"  # no counted call (a cell without a fast path)
    assert paths.path_used(on_cuda=False) == "cpu"
    for _ in range(3):
        paths.note(StepPath.GRAPHS, fused_rounds=True)
    paths.note(StepPath.COMPILED)
    assert paths.counts() == {"compiled": 1, "graphs+fused_rounds": 3}
    assert paths.path_used(on_cuda=True) == "graphs"
    paths.note(StepPath.EAGER, fused_rounds=True)  # an eager call never ran the kernel
    assert paths.counts()["eager"] == 1
    assert paths.path_used(on_cuda=True) == "eager"
    paths.begin_run()
    assert paths.counts() == {}


def test_path_values_are_the_recorded_names():
    assert {p.value for p in StepPath} == set(paths.PathUsed.__args__)  # type: ignore[attr-defined]
