"""The contract every kind of sweep keeps (tuner.policies.kinds), checked for each registered kind
with plain values: its spec validates, its plan runs it with its header line and seeding
decision, its scheduler builds, its trial function is chosen, the fields it owns are refused to
the others, and a real sweep of it runs somewhere in the tests (`END_TO_END`)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from ray.tune.schedulers import TrialScheduler

from tuner.errors import InvalidInput
from tuner.policies.kinds import KINDS, TRAINED_MODEL, SchedulerInputs, SweepKind, kind_of
from tuner.policies.pareto_rungs import ParetoASHA
from tuner.space import load_space
from tuner.spec import SweepSpec
from tuner.spec.sweep_spec import validate
from tuner.sweeps.drive.plan import plan_sweep
from tuner.sweeps.drive.wiring import trainable

ROOT = Path(__file__).resolve().parents[3]
ALL = [*KINDS.values(), TRAINED_MODEL]
TRAINED = "trained_model"  # the trained-model kind's id here (its scheduler name is "none")
SLOW = "tests/tuner/sweeps/drive/test_kinds_sweep.py::test_a_tiny_sweep_of_the_kind"
# A real sweep of each kind: an end-to-end test elsewhere, or the tiny one of test_kinds_sweep.py.
END_TO_END = {
    "adaptive": "tests/tuner/sweeps/drive/test_run_slow.py::"
    "test_sqlite_sweep_of_eight_trials_two_at_a_time_stopped_by_sigterm_then_resumed",
    "none": "tests/tuner/sweeps/drive/test_run.py::test_sweep_whose_every_trial_fails_ends_failed_and_says_why",
    "pbt": "tests/tuner/sweeps/test_population_sweep.py::"
    "test_a_pbt_sweep_copies_checkpoints_keeps_histories_and_resumes_past_a_killed_member",
    "pb2": "tests/tuner/sweeps/test_population_sweep.py::"
    "test_every_copy_ray_records_is_in_the_members_history_when_members_meet_at_each_evaluation",
    TRAINED: "tests/tuner/sweeps/dyneval/test_study.py::"
    "test_a_dyneval_study_evaluates_the_checkpoint_and_trains_nothing",
    **{name: SLOW for name in ("asha", "median", "hyperband")},
}


def ident(kind: SweepKind) -> str:
    return TRAINED if kind is TRAINED_MODEL else kind.name


def spec_of(kind: SweepKind, **fields) -> SweepSpec:
    if kind is TRAINED_MODEL:
        return SweepSpec(space="tiny", checkpoint="/runs/best.pt", seed=3, **fields)
    return SweepSpec(space="tiny", scheduler=kind.name, seed=3, **fields)


def plan(spec: SweepSpec):
    return plan_sweep(
        "p", spec, load_space("tiny"), Path("/s/p"), done=0, zombies=[], storage_url="sqlite://"
    )


@pytest.mark.parametrize("kind", ALL, ids=ident)
def test_the_kind_is_planned_with_its_line_and_seeding(kind: SweepKind) -> None:
    spec = spec_of(kind)
    assert kind_of(spec) is kind and kind.summary
    p = plan(spec)
    assert p.kind is kind and f"scheduler {kind.name} " in p.header(2, [])[0]
    assert p.numpy_seed == (3 if kind.draws_randomly(spec.early_stopping()) else None)
    assert (p.population is not None) == kind.population
    if not kind.population:
        assert kind.describe(spec, 200, 25) in p.lines and kind.describe(spec, 200, 25).startswith(
            "early stopping: "
        )


@pytest.mark.parametrize("kind", ALL, ids=ident)
def test_the_kind_builds_its_scheduler_and_chooses_its_trial(kind: SweepKind) -> None:
    p = plan(spec_of(kind))
    inputs = SchedulerInputs(p.space.fixed, p.spec.early_stopping(), None, p.spec.goals(), p.population)
    assert isinstance(kind.build(inputs), TrialScheduler)
    assert (trainable(kind).__name__ == "run_dyneval_trial") == kind.evaluates_only


@pytest.mark.parametrize("kind", ALL, ids=ident)
def test_the_kind_with_several_objectives_stops_by_domination_or_refuses(kind: SweepKind) -> None:
    try:
        spec = spec_of(kind, objectives=["val_loss", "num_params"])
    except ValueError as err:  # SweepSpec(...) raises pydantic's ValidationError, a ValueError
        assert kind.population and "only with one objective" in str(err)
        return
    inputs = SchedulerInputs({"max_steps": 200, "eval_every": 25}, spec.early_stopping(), None, spec.goals())
    assert isinstance(kind.build(inputs), ParetoASHA) == kind.reads_rungs


@pytest.mark.parametrize("kind", ALL, ids=ident)
def test_the_fields_a_kind_owns_are_refused_to_the_others(kind: SweepKind) -> None:
    owned = {field for k in ALL for field in k.fields}
    for field in owned - kind.fields:
        raw = {"space": "tiny", "scheduler": kind.name, field: 50}
        if kind is TRAINED_MODEL:
            raw.pop("scheduler")
            raw["checkpoint"] = "/runs/best.pt"
        with pytest.raises(InvalidInput, match=rf"{field}: .*only with scheduler"):
            validate(raw)


@pytest.mark.parametrize("kind", ALL, ids=ident)
def test_a_real_sweep_of_the_kind_is_tested(kind: SweepKind) -> None:
    path, name = END_TO_END[ident(kind)].split("::")
    tree = ast.parse((ROOT / path).read_text())
    assert name in {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}, END_TO_END[ident(kind)]
