"""The fast path cannot fail a training: compile or capture failures fall back to eager with one
warning and are recorded (`cuda_path_used`), and one process compiles the steps once for every
trial shape it meets (as a reused Ray worker does).

The CPU has no CUDA graphs, so these tests send CPU training through the compiled steps with the
test-only switch RNNTUNE_FAST_PATH_ON_CPU=1 (trainer/cells/fallback.py): compilation, the probe that
surfaces its errors, the fallback and the compile count are the CUDA path's own.
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

import pytest
import torch

from tests.child import run_child
from tests.trainer.corpora import write_ptb
from trainer import make_config, train
from trainer.cells import cuda_windows, fallback


@pytest.fixture(autouse=True)
def trusted_fast_path():
    fallback.reset()
    yield
    fallback.reset()


def tiny(tmp_path: Path, run: str, **kw):
    base = {
        "dataset": "ptb",
        "data_dir": str(write_ptb(tmp_path / "data")),
        "cell": "mogrifier_lstm",
        "mogrifier_rounds": 2,
        "hidden_size": 12,
        "batch_size": 4,
        "bptt": 6,
        "eval_every": 5,
        "max_steps": 10,
        "max_eval_tokens": 200,
        "state_dropout": 0.2,
        "run_dir": str(tmp_path / run),
        "seed": 3,
    }
    return make_config({**base, **kw})


def curve(run_dir: str) -> list[tuple[int, float, float]]:
    lines = (Path(run_dir) / "metrics.jsonl").read_text().splitlines()
    return [(m["step"], m["val_loss"], m["train_loss"]) for m in map(json.loads, lines)]


def raising_steps(error: Exception) -> cuda_windows.Steps:
    """The plain steps, except that the LSTM step raises `error` (a compile failure's stand-in)."""

    def lstm(*args):
        raise error

    return cuda_windows.Steps(
        lstm,
        *(getattr(cuda_windows.PLAIN, f) for f in ("round", "rlstm_input", "rlstm_cell", "rlstm_output")),
    )


@pytest.mark.parametrize(
    "error",
    [
        torch._dynamo.exc.FailOnRecompileLimitHit("Hard failure due to fullgraph=True"),  # not a RuntimeError
        ValueError("a step that raises"),
    ],
    ids=["recompile_limit", "any_exception"],
)
def test_a_failing_fast_path_falls_back_to_eager_once_with_the_eager_result(tmp_path, monkeypatch, error):
    monkeypatch.setenv(fallback.FORCE_ON_CPU_ENV, "1")
    monkeypatch.setattr("trainer.cells.cuda_graphs.compiled_steps", lambda: raising_steps(error))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = train(tiny(tmp_path, "auto"))
    fell_back = [w for w in caught if issubclass(w.category, fallback.FastPathWarning)]
    assert len(fell_back) == 1 and type(error).__name__ in str(fell_back[0].message)
    assert result.cuda_path_used == "eager"
    assert fallback.broken() is not None

    eager = train(tiny(tmp_path, "eager", cuda_path="eager"))
    assert eager.cuda_path_used == "eager"
    assert curve(result.run_dir) == curve(eager.run_dir)  # the same numbers as a run that never tried
    assert [
        json.loads(line)["cuda_path_used"] for line in (Path(result.run_dir) / "metrics.jsonl").open()
    ] == [
        "eager",
        "eager",
    ]


def test_with_cuda_path_graphs_a_failure_is_an_error_naming_the_cause(tmp_path, monkeypatch):
    monkeypatch.setenv(fallback.FORCE_ON_CPU_ENV, "1")
    broken = raising_steps(ValueError("no kernel for you"))
    monkeypatch.setattr("trainer.cells.cuda_graphs.compiled_steps", lambda: broken)
    with pytest.raises(
        RuntimeError, match=r"fast path of MogrifierLSTMCell failed \(ValueError: no kernel for you\)"
    ):
        train(tiny(tmp_path, "graphs", cuda_path="graphs"))
    assert fallback.broken() is None


def test_the_cpu_path_is_recorded_as_cpu(tmp_path):
    assert train(tiny(tmp_path, "cpu", max_steps=5)).cuda_path_used == "cpu"


WORKER = """
import json, sys, warnings
from torch._dynamo.utils import counters  # Dynamo's own count of the graphs it compiled
from trainer import make_config, train

root = sys.argv[1]
used, graphs = [], []
with warnings.catch_warnings(record=True) as seen:
    warnings.simplefilter("always")
    for k, (cell, hidden, batch, rounds, rank, dropout) in enumerate(json.loads(sys.argv[2])):
        cfg = make_config({
            "dataset": "ptb", "data_dir": root + "/data", "cell": cell, "mogrifier_rounds": rounds,
            "mogrifier_rank": rank, "hidden_size": hidden, "batch_size": batch, "bptt": 5, "eval_every": 4,
            "max_steps": 4, "max_eval_tokens": 100, "state_dropout": dropout, "run_dir": f"{root}/run{k}",
            "seed": k, "device": sys.argv[3],
        })
        used.append(train(cfg).cuda_path_used)
        graphs.append(counters["stats"]["unique_graphs"])
fell_back = [str(w.message) for w in seen if w.category.__name__ == "FastPathWarning"]
print("RESULT " + json.dumps({"used": used, "graphs": graphs, "warnings": fell_back}))
"""
# Twelve trainings of distinct shapes: hidden and batch sizes, Mogrifier rounds and ranks, with and
# without a state mask, as the trials of one Ray worker bring them.
SHAPES = [
    ("lstm", 8, 4, 0, 0, 0.0),
    ("lstm", 12, 6, 0, 0, 0.2),
    ("mogrifier_lstm", 10, 3, 2, 0, 0.2),
    ("mogrifier_lstm", 14, 5, 3, 4, 0.0),
    ("lstm", 20, 2, 0, 0, 0.1),
    ("mogrifier_lstm", 16, 7, 1, 0, 0.3),
    ("mogrifier_lstm", 9, 8, 4, 3, 0.2),
    ("lstm", 24, 3, 0, 0, 0.0),
    ("mogrifier_lstm", 18, 4, 5, -2, 0.1),
    ("lstm", 11, 9, 0, 0, 0.25),
    ("mogrifier_lstm", 30, 2, 6, 5, 0.2),
    ("mogrifier_lstm", 7, 5, 2, 2, 0.0),
]


@pytest.mark.slow  # a fresh process compiles (seconds with Inductor's disk cache, up to ~30 s cold)
def test_one_process_compiles_the_steps_once_for_every_trial_shape(tmp_path):
    write_ptb(tmp_path / "data")
    env = {**os.environ, fallback.FORCE_ON_CPU_ENV: "1"}
    out = run_child(WORKER, str(tmp_path), json.dumps(SHAPES), "cpu", env=env, timeout=300)
    assert out["used"] == ["compiled"] * len(SHAPES)  # no trial fell back
    # Graphs per step function (the LSTM step, the Mogrifier round) and variant (training with and
    # without a state mask, evaluation under no_grad), never per shape: the second half of the
    # trainings compiles nothing new. Before, each shape compiled again and the 9th raised
    # FailOnRecompileLimitHit.
    assert out["graphs"][5] == out["graphs"][-1] <= 8, out
    assert out["warnings"] == [], out["warnings"]


@pytest.mark.gpu
def test_on_cuda_one_process_trains_every_trial_shape_on_captured_graphs(tmp_path):
    """The same twelve trials as one Ray worker on a GPU meets them: all on the graphed path, none
    falling back, no compilation after the first half (the recompile limit hit the 9th before)."""
    write_ptb(tmp_path / "data")
    out = run_child(WORKER, str(tmp_path), json.dumps(SHAPES), "cuda", timeout=300)
    assert out["used"] == ["graphs"] * len(SHAPES), out
    assert out["graphs"][5] == out["graphs"][-1] <= 8, out
    assert out["warnings"] == [], out["warnings"]
