"""A sweep's plan (tuner/sweeps/drive/plan.py) from plain values, and the driver's process settings that
execute.py holds only while it runs (no Ray started here)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import torch

from tuner.errors import InvalidInput
from tuner.space import load_space
from tuner.spec import SweepSpec
from tuner.storage.study import StudyError
from tuner.sweeps.drive.execute import driver_process
from tuner.sweeps.drive.plan import DRIVER_ENV, merge_spec, plan_sweep

ROOT = Path("/data/studies/p")
URL = "postgresql://rnntune:secret@db/rnntune"


def plan(spec: SweepSpec, **kw):
    args = {"done": 0, "zombies": [], "storage_url": URL, **kw}
    return plan_sweep("p", spec, load_space("tiny"), ROOT, **args)


def test_merge_spec():
    stored = SweepSpec(space="tiny", n_trials=10, parallel=2)
    assert merge_spec(stored, None, 4, "p") is stored
    assert merge_spec(stored, {}, 4, "p") is stored
    assert merge_spec(stored, {"n_trials": 12}, 4, "p").n_trials == 12
    with pytest.raises(StudyError, match=r"--trials 3 is below the 4 trials study 'p' already has"):
        merge_spec(stored, {"n_trials": 3}, 4, "p")


def test_a_plan_holds_counts_resources_and_the_header():
    spec = SweepSpec(space="tiny", n_trials=10, parallel=4, gpus_per_trial=0.25, sampler="tpe")
    p = plan(spec, done=3, zombies=[5, 6])
    assert (p.target, p.budget, p.scheduler) == (10, 7, spec.scheduler)
    assert p.resources == {"cpu": 1.0, "gpu": 0.25}
    assert p.driver_env == DRIVER_ENV and p.torch_threads == 1
    assert p.lines[-1] == "trials 3/10 done; 2 left RUNNING by a dead sweep marked FAIL and retried: [5, 6]"
    assert f"storage {ROOT}" in p.lines[-2] and "secret" not in p.lines[-2]  # the URL redacted
    header = p.header(3, ["note: crowded"])
    assert header[0] == "note: crowded"
    assert header[1].startswith("study p  space tiny  sampler tpe") and "parallel 3" in header[1]
    assert "per trial 1 CPU, 0.25 GPU" in header[1]
    assert header[2].startswith("early stopping: ")


def test_a_study_of_a_trained_model_schedules_nothing():
    p = plan(SweepSpec(space="tiny", checkpoint="/runs/best.pt"))
    assert p.scheduler == "none"
    assert p.lines[0] == "early stopping: none (each trial evaluates /runs/best.pt once, trains nothing)"


def test_the_papers_procedure_stops_no_trial_and_keeps_diverged_ones():
    p = plan(SweepSpec(space="tiny", procedure="paper"))
    assert (p.scheduler, p.keep_diverged) == ("none", True)
    assert p.lines[0].startswith("procedure: paper - ") and "diverged_at" in p.lines[0]
    assert p.lines[1] == "early stopping: none"


def test_rnntune_s_procedure_prunes_and_fails_diverged_trials():
    p = plan(SweepSpec(space="tiny"))
    assert (p.scheduler, p.keep_diverged) == ("adaptive", False)
    assert not any(line.startswith("procedure:") for line in p.lines)


def test_numpy_is_seeded_only_for_hyperband_brackets():
    assert plan(SweepSpec(space="tiny", seed=7, scheduler="asha", brackets=3)).numpy_seed == 7
    assert plan(SweepSpec(space="tiny", seed=7, scheduler="asha")).numpy_seed is None
    assert plan(SweepSpec(space="tiny", scheduler="asha", brackets=3)).numpy_seed is None


def test_optional_lines():
    spec = SweepSpec(space="tiny", patience=3, tensorboard=True)
    p = plan(spec, warm_start=(12, ["a", "b"]), tracker_lines=["tensorboard: tensorboard --logdir x"])
    assert any(line.startswith("ends early on: ") for line in p.lines)
    assert "tensorboard: tensorboard --logdir x" in p.lines
    assert "warm start: 12 prior trials from a, b" in p.lines
    assert plan(SweepSpec(space="tiny", n_trials=20)).lines[-1] == "trials 0/20 done"


def test_the_driver_process_settings_hold_only_while_it_runs():
    spec = SweepSpec(space="tiny", seed=7, scheduler="asha", brackets=3)
    p = plan(spec)
    env, threads = dict(os.environ), torch.get_num_threads()
    np.random.seed(123)
    expected_draw = np.random.random()
    np.random.seed(123)
    with driver_process(p):
        assert all(os.environ[k] == v for k, v in DRIVER_ENV.items())
        assert torch.get_num_threads() == 1
        assert np.random.random() == np.random.RandomState(7).random_sample()  # seeded for the brackets
        os.environ["SET_BY_RAY"] = "1"
    assert dict(os.environ) == env
    assert torch.get_num_threads() == threads
    assert np.random.random() == expected_draw  # the caller's random state, untouched


def test_a_population_plan_names_what_it_explores_and_refuses_an_interval_off_the_grid():
    p = plan(SweepSpec(space="tiny", scheduler="pbt", n_trials=8, parallel=8, seed=3))
    assert p.population is not None and p.population.interval == 25  # 200 steps / 8 on the grid of 25
    assert set(p.population.ranges) == {
        "learning_rate", "l2_penalty", "input_dropout", "inter_layer_dropout", "state_dropout", "output_dropout",
    }  # fmt: skip
    assert p.lines[0].startswith("population-based training (pbt): 8 members, every 25 steps")
    assert p.numpy_seed == 3  # PBT's perturbations are drawn from the seeded random states
    with pytest.raises(InvalidInput, match=r"perturbation_interval must be a multiple of eval_every \(25\)"):
        plan(SweepSpec(space="tiny", scheduler="pb2", perturbation_interval=30))
    assert plan(SweepSpec(space="tiny")).population is None


def test_population_fields_are_refused_where_they_do_not_apply():
    with pytest.raises(
        ValueError, match=r"perturbation_interval\n  Value error, only with scheduler pbt or pb2"
    ):
        SweepSpec(space="tiny", perturbation_interval=50)
    with pytest.raises(ValueError, match="scheduler pbt: only with one objective"):
        SweepSpec(space="tiny", scheduler="pbt", objectives=["val_loss", "num_params"])
