"""GPU placement of trials: the device `auto` resolves to and the per-node resource check, as pure
functions. A real sweep on a Ray head with logical GPUs, through the API, is in
tests/tuner/api/test_gpu_placement.py."""

from __future__ import annotations

import pytest
import torch

from trainer.device import cuda_problem
from tuner.sweeps.cluster.ray_runtime import check_cluster, in_flight, placement_problem, trials_at_once
from tuner.sweeps.trial.placement import GPUUnusable, assigned_device


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


def test_trials_at_once_counts_per_node_by_the_scarcest_resource():
    head, worker = {"CPU": 2.0, "GPU": 0.0}, {"CPU": 16.0, "GPU": 1.0}
    assert trials_at_once({"cpu": 1, "gpu": 0}, [head, worker]) == 18
    assert trials_at_once({"cpu": 2, "gpu": 0.25}, [head, worker]) == 4  # the GPU: 4 quarters, on one node
    assert trials_at_once({"cpu": 8, "gpu": 0.25}, [head, worker]) == 2  # the worker's CPUs: 16 / 8
    assert trials_at_once({"cpu": 0.25, "gpu": 1 / 3}, [{"CPU": 4.0, "GPU": 1.0}]) == 3  # 1 / (1/3) is 3


def test_trials_in_flight_are_what_the_cluster_runs_at_once():
    """A cluster joined by address may grow: the extra trials wait in Ray's queue and the header
    says so. This machine's embedded cluster cannot: the sweep keeps only what it runs in flight."""
    nodes = [{"CPU": 2.0, "GPU": 0.0}]
    assert in_flight({"cpu": 1, "gpu": 0}, 2, nodes, grows=False) == (2, None)
    assert in_flight({"cpu": 1, "gpu": 0}, 2, nodes, grows=True) == (2, None)
    kept, note = in_flight({"cpu": 1, "gpu": 0}, 8, nodes, grows=True)
    assert kept == 8 and note is not None
    assert note.startswith("note: parallel 8, but the 1 node(s) of the Ray cluster run 2 trial(s)")
    assert "the other 6 wait in Ray's queue" in note
    kept, note = in_flight({"cpu": 1, "gpu": 0}, 8, nodes, grows=False)
    assert kept == 2 and note is not None
    assert note.startswith("note: parallel 8 lowered to 2: this machine's embedded Ray cluster runs 2")
