"""GPU placement of trials: the device `auto` resolves to, the per-node resource check, and a real
sweep on a Ray cluster with logical GPUs (Ray schedules them like real ones on a CPU machine).

The cluster runs in a child process: this test process may hold the session's embedded Ray
(conftest `ray_cluster`), and Ray cannot be restarted reliably within one process.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from tests.child import fresh_env, run_child
from trainer.device import cuda_problem
from tuner.sweeps.placement import GPUUnusable, assigned_device
from tuner.sweeps.ray_runtime import check_cluster, placement_problem


def test_auto_means_the_gpu_ray_assigned_and_the_cpu_without_one():
    assert assigned_device("auto", ["1"], cuda_problem=None) == "cuda:0"  # Ray's CUDA_VISIBLE_DEVICES
    assert assigned_device("auto", [], cuda_problem=None) == "cpu"  # no reserved GPU: never take one
    assert assigned_device("auto", [], cuda_problem="no CUDA") == "cpu"
    assert assigned_device("cuda:1", [], cuda_problem=None) == "cuda:1"  # an explicit device is kept
    assert assigned_device("cpu", ["0"], cuda_problem="no CUDA") == "cpu"  # the CPU on purpose


def test_a_reserved_gpu_that_cuda_cannot_use_fails_with_the_cause():
    with pytest.raises(
        GPUUnusable, match=r"reserved GPU 0 but cannot use CUDA: driver too old\. Set device: cpu"
    ):
        assert assigned_device("auto", ["0"], cuda_problem="driver too old")
    problem = cuda_problem()  # this machine's PyTorch is a CPU build: the cause says so
    assert problem is not None and "without CUDA" in problem and torch.__version__ in problem


def test_a_trial_must_fit_on_one_node_and_the_refusal_names_the_field():
    head, worker = {"CPU": 0.0, "GPU": 0.0}, {"CPU": 4.0, "GPU": 2.0}
    assert placement_problem({"cpu": 1, "gpu": 0.5}, [head, worker], "c") is None
    assert placement_problem({"cpu": 4, "gpu": 2}, [head, worker], "c") is None
    no_gpu = placement_problem({"cpu": 1, "gpu": 1}, [head, {"CPU": 8.0}], "the Ray cluster")
    assert no_gpu is not None and no_gpu.startswith("gpus_per_trial 1 (--gpus-per-trial)")
    assert "the most any of its 2 node(s) offers is 0" in no_gpu
    too_many = placement_problem({"cpu": 8}, [worker], "c")
    assert too_many is not None and too_many.startswith("cpus_per_trial 8")
    # Enough CPUs on one node and enough GPUs on another is not enough: a trial runs on one node.
    split = placement_problem({"cpu": 4, "gpu": 1}, [{"CPU": 4.0}, {"CPU": 1.0, "GPU": 1.0}], "c")
    assert split is not None and "no single node" in split and "gpus_per_trial 1" in split


def test_the_api_check_skips_the_cluster_for_default_trials(monkeypatch):
    # An unreachable address: asking it would fail, so passing proves no question was asked.
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:1")
    check_cluster({"cpu": 1.0, "gpu": 0.0})


SCRIPT = """
import io, json, sys
from pathlib import Path
from ray.cluster_utils import Cluster
from tuner.sweeps.create import create_study
from tuner.sweeps.ray_runtime import NotEnoughResources, check_cluster
from tuner.sweeps.sweep import run_sweep

root = Path(sys.argv[1])
db = f"sqlite:///{root / 's.db'}"
settings = json.loads(sys.argv[2])
cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 4, "num_gpus": 2})
out = {}
try:
    common = dict(storage_url=db, space="tiny", sampler="random", scheduler="none", seed=0,
                  overrides={"set": settings}, n_trials=4, parallel=4)
    create_study("packed", storage_path=root / "packed", gpus_per_trial=0.5, **common)
    check_cluster({"cpu": 1.0, "gpu": 0.5}, cluster.address)  # the API's check, through a child
    outcome = run_sweep("packed", db, ray_address=cluster.address, out=io.StringIO())
    out["status"] = outcome.status
    auto = {**common, "overrides": {"set": {**settings, "device": "auto"}}, "n_trials": 1, "parallel": 1}
    create_study("unusable", storage_path=root / "unusable", gpus_per_trial=1, **auto)
    out["unusable"] = run_sweep("unusable", db, ray_address=cluster.address, out=io.StringIO()).status
    create_study("too-big", storage_path=root / "too-big", gpus_per_trial=3, **common)
    try:
        check_cluster({"cpu": 1.0, "gpu": 3.0}, cluster.address)
    except NotEnoughResources as err:
        out["api_error"] = str(err)
    try:
        run_sweep("too-big", db, ray_address=cluster.address, out=io.StringIO())
    except NotEnoughResources as err:
        out["driver_error"] = str(err)
finally:
    cluster.shutdown()
print("RESULT " + json.dumps(out))
"""


def _overlap(intervals: list[tuple[float, float]]) -> int:
    """The most intervals open at one moment."""
    events = sorted([(start, 1) for start, _ in intervals] + [(end, -1) for _, end in intervals])
    most = current = 0
    for _, change in events:
        current += change
        most = max(most, current)
    return most


@pytest.mark.slow
def test_half_a_gpu_per_trial_packs_four_trials_on_two_gpus(tmp_path):
    import optuna

    env = fresh_env()
    # Long enough (a few seconds each on a shared CPU) that the four trials' training overlaps; on
    # the CPU on purpose (the logical GPUs pace the trials), and once with `auto`, which must fail.
    settings = {
        "device": "cpu",
        "max_steps": 150,
        "eval_every": 50,
        "hidden_size": 16,
        "max_eval_tokens": 1000,
    }
    out = run_child(SCRIPT, str(tmp_path), json.dumps(settings), env=env)
    assert out["status"] == "finished"
    trials = optuna.load_study(study_name="packed", storage=f"sqlite:///{tmp_path / 's.db'}").trials
    assert out["unusable"] in ("finished", "failed"), out
    assert len(trials) == 4 and all(t.state.name == "COMPLETE" for t in trials)
    ids = sorted(i for t in trials for i in t.user_attrs["gpu_ids"])
    assert ids == ["0", "0", "1", "1"], ids  # two trials on each GPU: 0.5 + 0.5
    assert {t.user_attrs["device"] for t in trials} == {"cpu"}
    assert {t.user_attrs["cuda_path_used"] for t in trials} == {"cpu"}
    # `auto` with a reserved GPU and CPU-only torch: the trial fails with the cause, not on the CPU.
    (unusable,) = optuna.load_study(study_name="unusable", storage=f"sqlite:///{tmp_path / 's.db'}").trials
    assert unusable.state.name == "FAIL", unusable
    assert "reserved GPU 0 but cannot use CUDA" in unusable.user_attrs.get("error", ""), unusable.user_attrs
    # The four trials trained at the same time: each run folder's config is written when training
    # starts and its result when it ends.
    spans = []
    for t in trials:
        run = Path(t.user_attrs["run_dir"])
        spans.append(((run / "config.yaml").stat().st_mtime, (run / "result.json").stat().st_mtime))
    assert _overlap(spans) == 4, spans
    for key in ("api_error", "driver_error"):
        assert out.get(key, "").startswith("gpus_per_trial 3 (--gpus-per-trial): no node of"), out
    assert "the most any of its 1 node(s) offers is 2" in out["driver_error"]
