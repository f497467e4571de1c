"""A sweep plan's execution: Ray started, the searcher, scheduler and trackers built, Tune run.

`execute` runs a `SweepPlan` (plan.py) while this process holds the study's lease. The process
settings the driver needs (Tune's environment switches, one torch thread, numpy's and Python's seeds
for Ray's Hyperband brackets and PBT's perturbations) hold only while it runs: `driver_process`
restores the caller's environment, torch thread count and random states afterwards, so
`python_api.run` in a notebook leaves the notebook as it was.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import random
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import optuna
from optuna.trial import FrozenTrial, TrialState
from ray.tune.stopper import Stopper

from tuner.policies.population_rules import CHECKPOINTS_KEPT, MEMBER
from tuner.space.settings import max_steps_and_eval_every
from tuner.storage import study_attrs, trial_attrs
from tuner.storage.object_backends import filesystem
from tuner.storage.study import best_trial, finished_count, open_storage, set_status
from tuner.sweeps.cluster import mps
from tuner.sweeps.drive import ask_ahead
from tuner.sweeps.drive.lease import LeaseKeeper, StopRequest, stop_on_signals
from tuner.sweeps.drive.plan import RunOptions, SweepPlan
from tuner.sweeps.drive.study_rules import StudyRules
from tuner.sweeps.dyneval.study import referenced_checkpoints
from tuner.sweeps.trackers.guard import count_tracker_failures
from tuner.sweeps.trackers.installed import check_available
from tuner.upstream import ray_private


@dataclass
class SweepOutcome:
    """How a `run_sweep` call ended (`error` says why a `failed` one failed; `ended_early` why the
    study-level stop rule ended it before its trial count)."""

    study_name: str
    status: str
    finished: int
    n_trials: int
    best: FrozenTrial | None
    interrupted: list[int]
    error: str | None = None
    ended_early: str | None = None


class SweepStopper(Stopper):
    """Stops all trials once a stop was requested (signal, stored request, lost lease).

    Module-level with an empty pickled state: Tune saves its stopper in the experiment folder, and
    the study (whose storage holds the database URL) must not go with it.
    """

    def __init__(self, study: optuna.Study, request: StopRequest, searcher: Any) -> None:
        self._study = study
        self._request = request
        self._searcher = searcher
        self._announced = False

    def __getstate__(self) -> dict[str, Any]:
        return {}

    def __call__(self, trial_id: str, result: dict[str, Any]) -> bool:
        return False

    def stop_all(self) -> bool:
        if self._request.reason is None:
            return False
        if not self._announced:
            self._searcher.stop_reason = self._request.reason
            if self._searcher.writable:
                set_status(self._study, "stopping")
            self._announced = True
        return True


def _trial_dirname(trial: Any) -> str:
    """Ray's folder of a trial: its study trial's number (a population member's is drawn by Tune
    after the folder is named, so it is named by its place in the population)."""
    number = trial.config.get("trial_number")
    if not isinstance(number, int):
        return f"member-{trial.config.get(MEMBER)}-{trial.trial_id}"
    return f"trial-{number}-{trial.trial_id}"


def all_failed(study: optuna.Study) -> str | None:
    """Why the sweep failed when it has trials and none COMPLETE or PRUNED; None otherwise."""
    trials = study.get_trials(deepcopy=False)
    if not trials or any(t.state in (TrialState.COMPLETE, TrialState.PRUNED) for t in trials):
        return None
    first = next(
        (trial_attrs.ERROR.of(t.user_attrs) for t in trials if trial_attrs.ERROR.of(t.user_attrs)),
        "no error recorded",
    )
    return f"every trial FAILed ({len(trials)}); first error: {first}"


@contextlib.contextmanager
def driver_process(plan: SweepPlan) -> Iterator[None]:
    """The plan's process settings while the sweep runs; the caller's, restored, after. PyTorch's
    threads are set where it is loaded: the GP samplers load it when built (`run.prepare`), and a
    driver on another sampler never imports it."""
    torch = sys.modules.get("torch")
    threads = torch.get_num_threads() if torch is not None else None
    env, rng, py_rng = dict(os.environ), np.random.get_state(), random.getstate()
    os.environ.update(plan.driver_env)
    if torch is not None:
        torch.set_num_threads(plan.torch_threads)
    if plan.numpy_seed is not None:
        np.random.seed(plan.numpy_seed)
        random.seed(plan.numpy_seed)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(env)
        if torch is not None and threads is not None:
            torch.set_num_threads(threads)
        np.random.set_state(rng)
        random.setstate(py_rng)


def execute(
    plan: SweepPlan,
    study: optuna.Study,
    storage_url: str,
    request: StopRequest,
    options: RunOptions,
    fence: LeaseKeeper | None = None,
) -> SweepOutcome:
    """Run `plan` on Ray Tune until the study has its trials or is stopped. `fence`: the lease
    keeper every ask and tell is checked against (None: unfenced, for callers holding no lease)."""
    check_available(plan.spec, storage_url)  # before Ray starts: the trackers the spec asks for can run
    with driver_process(plan):
        set_status(study, "running")
        started_ray, parallel, notes = _start_cluster(plan, study, storage_url, options)
        try:
            return _run(plan, study, storage_url, request, options, fence, parallel, notes)
        finally:
            if started_ray:
                import ray

                ray.shutdown()


def _start_cluster(
    plan: SweepPlan, study: optuna.Study, storage_url: str, options: RunOptions
) -> tuple[bool, int, list[str]]:
    """Ray started or joined; (started here, trials in flight, the header's notes on the cluster)."""
    from tuner.sweeps.cluster.ray_runtime import check_resources, sqlite_on_cluster_warning, start_ray

    started_ray = False
    try:
        started_ray = start_ray(options.ray_address, options.num_cpus, options.verbose)
        parallel, crowded = check_resources(plan.resources, plan.spec.parallel, options.ray_address)
        gpu_lines = mps.describe(plan.spec.gpus_per_trial)
    except Exception:
        set_status(study, "failed")
        if started_ray:
            import ray

            ray.shutdown()
        raise
    notes = [line for line in (sqlite_on_cluster_warning(storage_url), crowded) if line]
    return started_ray, parallel, notes + gpu_lines


@dataclass
class _Driver:
    """What drives one run of Tune: the study's searcher, the progress table, the trackers and the
    kind's wiring (tuner.sweeps.drive.wiring)."""

    searcher: Any
    progress: Any
    trackers: Any
    wiring: Any


def _driver(
    plan: SweepPlan,
    study: optuna.Study,
    storage_url: str,
    options: RunOptions,
    fence: LeaseKeeper | None,
    parallel: int,
    notes: list[str],
) -> _Driver:
    """The searcher, progress table, trackers and the kind's wiring of this run; the header printed."""
    from tuner.sweeps.drive.progress import ProgressTable
    from tuner.sweeps.drive.searcher import StudySearcher
    from tuner.sweeps.drive.tracking import TrackerCallback, open_trackers
    from tuner.sweeps.drive.wiring import wire

    spec, out = plan.spec, options.out
    pin_storage = open_storage(storage_url) if spec.keep_top else None
    policies = StudyRules(
        study,
        plan.root,
        spec,
        max_steps=max_steps_and_eval_every(plan.space.fixed)[0],
        pins=(lambda: referenced_checkpoints(pin_storage)) if pin_storage is not None else frozenset,
        objects=plan.objects,
    )
    searcher = StudySearcher(
        study,
        plan.space,
        plan.root,
        plan.budget,
        policies,
        fence,
        checkpoint=spec.checkpoint,
        ask_ahead=ask_ahead.depth_for(parallel),
        keep_diverged=plan.keep_diverged,
        goals=spec.goals(),
        objects=plan.objects.uri if plan.objects is not None else None,
    )
    progress = ProgressTable(study, searcher, plan.target, parallel, out)
    progress.header(plan.header(parallel, notes))
    trackers = TrackerCallback(
        searcher,
        open_trackers(spec, plan.name, plan.root),
        lambda line: print(line, file=out or sys.stderr, flush=True),
    )
    wiring = wire(plan, study, searcher, parallel)
    if wiring.note is not None:
        print(wiring.note, file=out or sys.stderr, flush=True)
    return _Driver(searcher, progress, trackers, wiring)


def _tuner(
    plan: SweepPlan,
    study: optuna.Study,
    request: StopRequest,
    options: RunOptions,
    driver: _Driver,
) -> Any:
    """Tune's Tuner of the plan: the kind's wiring, then the settings every kind shares."""
    from ray import tune

    from tuner.sweeps.drive.searcher import METRIC
    from tuner.sweeps.drive.trial_events import TrialEvents

    wiring, stamp = driver.wiring, dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S")
    callbacks = [*wiring.callbacks, TrialEvents(driver.searcher), driver.progress, driver.trackers]
    return tune.Tuner(
        tune.with_resources(options.trainable or wiring.trainable, plan.resources),
        param_space=wiring.param_space,
        tune_config=tune.TuneConfig(
            metric=METRIC,
            mode="min",
            reuse_actors=True,
            trial_dirname_creator=_trial_dirname,
            **wiring.search,
        ),
        run_config=tune.RunConfig(
            name=f"run-{stamp}",
            **ray_storage(plan),
            stop=SweepStopper(study, request, driver.searcher),
            callbacks=callbacks,
            failure_config=tune.FailureConfig(max_failures=plan.spec.max_retries),
            checkpoint_config=tune.CheckpointConfig(num_to_keep=CHECKPOINTS_KEPT),
            verbose=1 if options.verbose else 0,
        ),
    )


def ray_storage(plan: SweepPlan) -> dict[str, Any]:
    """Where Ray Tune keeps its experiment state and checkpoints (a population's copies among them):
    `ray` under the study's object store location, through its object store filesystem, else in its folder."""
    if plan.objects is None:
        return {"storage_path": str(plan.root / "ray")}
    return {
        "storage_path": plan.objects.child("ray").path,
        "storage_filesystem": filesystem(plan.objects.scheme),
    }


def _run(
    plan: SweepPlan,
    study: optuna.Study,
    storage_url: str,
    request: StopRequest,
    options: RunOptions,
    fence: LeaseKeeper | None,
    parallel: int,
    notes: list[str],
) -> SweepOutcome:
    """Tune's run of the plan and the study's final status."""
    driver = _driver(plan, study, storage_url, options, fence, parallel, notes)
    tuner, searcher = _tuner(plan, study, request, options, driver), driver.searcher
    status: study_attrs.Status = "failed"
    error = None
    try:
        # A stop while Ray started needs no trial; ray.init() replaced our SIGTERM handler.
        if request.reason is None and driver.wiring.members != 0:
            with stop_on_signals(request), ray_private.without_callback_telemetry():
                tuner.fit()
        status = "finished" if finished_count(study) >= plan.target or searcher.ended_early else "stopped"
        if status == "finished" and (error := all_failed(study)) is not None:
            status = "failed"
    except KeyboardInterrupt:
        request.set("sweep interrupted")
        status = "stopped"
        raise
    finally:
        interrupted = searcher.interrupt_all(request.reason or "the sweep ended while the trial ran")
        if request.reason is not None and status not in ("failed", "finished"):
            status = "stopped"
        driver.progress.refresh(final=True)
        failures = driver.trackers.close(status)
        if searcher.writable:  # a driver that lost its lease leaves the status to the next one
            set_status(study, status)
            count_tracker_failures(study, failures)
    return SweepOutcome(
        plan.name,
        status,
        finished_count(study),
        plan.target,
        best_trial(study),
        interrupted,
        error,
        searcher.ended_early,
    )
