"""A sweep as a plan: what one run of a study will do, decided from plain values before Ray starts.

`plan_sweep` is pure: from the study's stored spec and this run's changes, its trial counts, its
space and storage folder, it fixes the merged spec, how many trials to ask, the scheduler, what a
diverged trial becomes (its `procedure`, tuner.policies.procedure), each trial's resources, the
process settings the driver needs, and the header's lines (those that need the running cluster
are filled in by `SweepPlan.header`). Unit tests check it with plain values;
execute.py starts Ray and runs it. `RunOptions` is how this process runs the study: none of it is
stored with the study.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from tuner.policies import procedure
from tuner.policies.kinds import SweepKind, kind_of
from tuner.policies.population_rules import PopulationPlan, plan_population
from tuner.space import SearchSpace
from tuner.space.settings import max_steps_and_eval_every
from tuner.spec import SweepSpec
from tuner.storage.object_store import ObjectLocation
from tuner.storage.study import StudyError, redact_url

# What the driving process sets while it runs Ray Tune (restored afterwards, execute.py).
DRIVER_ENV = {
    "TUNE_DISABLE_SIGINT_HANDLER": "1",  # our handler stops the sweep cleanly instead
    "TUNE_DISABLE_STRICT_METRIC_CHECKING": "1",  # final summaries carry no new metric
}
# The driver only samples: one torch thread keeps the GP off the cores the trials train on
# (bench/orchestration_overhead.py: 0.29 s vs 1.0 s per GP suggestion at 100 trials).
DRIVER_TORCH_THREADS = 1


@dataclass(frozen=True)
class RunOptions:
    """How this process runs a study's sweep. `changes`: spec fields this run changes (only resume-
    safe ones; stored with the study). `trainable`: the function each trial runs (default: the
    shared trainer, or dynamic evaluation of the study's checkpoint); the orchestration benchmark
    passes one that returns at once."""

    changes: Mapping[str, Any] | None = None
    storage_path: str | os.PathLike[str] | None = None
    ray_address: str | None = None
    num_cpus: int | None = None
    verbose: bool = False
    out: TextIO | None = None
    trainable: Callable[[dict[str, Any]], Any] | None = None


@dataclass(frozen=True)
class SweepPlan:
    """What one run of a study does; see the module docstring."""

    name: str
    spec: SweepSpec  # with this run's changes merged
    space: SearchSpace
    root: Path  # the study's storage folder (where trials write their run folders)
    target: int  # the study's trial count
    budget: int  # trials this run asks for
    kind: SweepKind  # the kind it runs as (tuner.policies.kinds): its scheduler, checks and wiring
    resources: dict[str, float]  # per trial, as Ray Tune takes them
    # Ray's async Hyperband draws each trial's bracket from numpy's global RNG, PBT its perturbations
    # from Python's and PB2 its fits from numpy's (seeded in execute.driver_process)
    numpy_seed: int | None
    keep_diverged: bool = False  # a diverged trial is COMPLETE at its best value (`procedure: paper`)
    population: PopulationPlan | None = None  # what scheduler pbt or pb2 explores (population.py)
    lines: list[str] = field(default_factory=list)  # the header after the study line
    driver_env: dict[str, str] = field(default_factory=lambda: dict(DRIVER_ENV))
    torch_threads: int = DRIVER_TORCH_THREADS
    objects: ObjectLocation | None = None  # the object store location run folders are copied to

    @property
    def scheduler(self) -> str:
        """The scheduler's name: "none" for a study of a trained model (each trial one evaluation)."""
        return self.kind.name

    def header(self, parallel: int, notes: Sequence[str]) -> list[str]:
        """The sweep's header once the cluster said how many trials run at once: `notes` (warnings,
        the crowding and MPS lines) first, then the study line and the plan's own lines."""
        study = (
            f"study {self.name}  space {self.space.name}  sampler {self.spec.sampler}  scheduler "
            f"{self.scheduler}  parallel {parallel}  per trial {self.spec.cpus_per_trial:g} CPU, "
            f"{self.spec.gpus_per_trial:g} GPU"
        )
        return [*notes, study, *self.lines]


def merge_spec(stored: SweepSpec, changes: Mapping[str, Any] | None, done: int, name: str) -> SweepSpec:
    """The stored spec with this run's changes; StudyError for a trial count below the trials done."""
    if not changes:
        return stored
    spec = stored.resume_changes(changes)
    if "n_trials" in changes and spec.n_trials < done:
        raise StudyError(f"--trials {spec.n_trials} is below the {done} trials study {name!r} already has")
    return spec


def kind_line(spec: SweepSpec, space: SearchSpace, kind: SweepKind) -> str:
    """The header's line of the kind (`early stopping: ...`, or the population's)."""
    return kind.describe(spec, *max_steps_and_eval_every(space.fixed))


def plan_sweep(
    name: str,
    spec: SweepSpec,
    space: SearchSpace,
    root: Path,
    *,
    done: int,
    zombies: Sequence[int],
    storage_url: str,
    objects: ObjectLocation | None = None,
    warm_start: tuple[int, Sequence[str]] | None = None,
    tracker_lines: Sequence[str] = (),
) -> SweepPlan:
    """The plan of one run (module docstring). `done`: finished trials; `zombies`: trials a dead
    sweep left RUNNING, now failed and retried; `warm_start`: (prior trials, their studies);
    `objects`: the object store location of a study kept there (`root` is then a local scratch)."""
    from trainer import MUTABLE_SETTINGS

    kind, grid = kind_of(spec), max_steps_and_eval_every(space.fixed)
    population = (
        plan_population(kind.name, space.params, MUTABLE_SETTINGS, spec.perturbation_interval, *grid)
        if kind.population
        else None
    )
    policy = spec.early_stopping()
    stops = spec.study_stop().describe(grid[0])
    budget = spec.n_trials - done
    retried = f"; {len(zombies)} left RUNNING by a dead sweep marked FAIL and retried: {list(zombies)}"
    lines = [
        *([line] if (line := procedure.describe(spec.procedure, spec.scheduler)) else []),
        population.describe(spec.n_trials) if population else kind_line(spec, space, kind),
        *([f"ends early on: {stops}"] if stops else []),
        f"db {redact_url(storage_url)}  storage {objects or root}",
        *tracker_lines,
        *(
            [f"warm start: {warm_start[0]} prior trials from {', '.join(warm_start[1])}"]
            if warm_start
            else []
        ),
        f"trials {done}/{spec.n_trials} done" + (retried if zombies else ""),
    ]
    return SweepPlan(
        name=name,
        spec=spec,
        space=space,
        root=root,
        target=spec.n_trials,
        budget=budget,
        kind=kind,
        resources={"cpu": spec.cpus_per_trial, "gpu": spec.gpus_per_trial},
        numpy_seed=spec.seed if kind.draws_randomly(policy) else None,
        population=population,
        keep_diverged=procedure.keeps_diverged(spec.procedure),
        lines=lines,
        objects=objects,
    )
