"""Drive one study to its trial count on Ray Tune: start, resume after a crash, extend, stop cleanly.

Every call runs the study from its SQL state: trials left RUNNING by a dead sweep process are marked
FAIL and retried as new linked trials, completed ones are never rerun, and only the missing number of
trials is asked for. Only the holder of the study's driver lease runs it (`driver.LeaseKeeper`).
A stop request stored in the lease, SIGINT or SIGTERM stop the sweep cleanly: trials in flight are
marked FAIL (`interrupted`, retried on resume), finished ones are kept, and the study's status says
`stopped`. A storage folder belongs to one study (`claim_storage`); a sweep whose every trial
FAILed ends `failed`.
"""

from __future__ import annotations

import datetime as dt
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import numpy as np
import optuna
from optuna.trial import FrozenTrial, TrialState
from ray.tune.stopper import Stopper

from tuner import study_attrs, trial_attrs
from tuner.policies.early_stopping import ASHA_SCHEDULERS
from tuner.policies.rank_agreement import describe_adaptive
from tuner.samplers import RETIRED_SAMPLERS, make_sampler
from tuner.space import SearchSpace
from tuner.spec import SweepSpec
from tuner.storage.study import (
    StudyError,
    best_trial,
    fail_zombies,
    finished_count,
    finished_curves,
    load_study,
    open_storage,
    redact_url,
    set_status,
)
from tuner.sweeps import ask_ahead, mps
from tuner.sweeps.create import grid
from tuner.sweeps.driver import LeaseKeeper, StopRequest, stop_on_signals
from tuner.sweeps.dyneval_study import referenced_checkpoints
from tuner.sweeps.trackers.guard import count_tracker_failures
from tuner.sweeps.trackers.installed import check_available
from tuner.sweeps.trial_policies import SweepPolicies
from tuner.sweeps.warm_start import prior_trials
from tuner.sweeps.widen import describe as describe_widening
from tuner.sweeps.widen import store_widening

ZOMBIE_REASON = "sweep process died while the trial was running; found RUNNING on resume"
# The file that says which study a storage folder belongs to.
OWNER_FILE = ".rnntune-study"


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
    return f"trial-{trial.config['trial_number']}-{trial.trial_id}"


def resolve_data_dir(space: SearchSpace) -> SearchSpace:
    """The space with a relative data_dir made absolute (trials run in other folders) and checked."""
    data_dir = space.fixed.get("data_dir")
    if data_dir is None:
        return space
    path = Path(data_dir).expanduser().resolve()
    if not path.is_dir():
        raise StudyError(
            f"data_dir {data_dir} (dataset {space.fixed.get('dataset')}) does not exist; "
            f"pass --set data_dir=PATH to the folder holding the dataset's files"
        )
    return space.with_overrides(fixed={"data_dir": str(path)})


def check_storage(root: Path, name: str | None) -> None:
    """StudyError naming the owner if `root` is another study's storage folder (the run folders
    `trial-N` of two studies would collide); `name` None: a study yet to be named."""
    marker = root / OWNER_FILE
    owner = marker.read_text().strip() if marker.is_file() else None
    if owner is not None and owner != name:
        raise StudyError(
            f"storage folder {root} belongs to study {owner!r}; give {f'study {name!r}' if name else 'the new study'} its own "
            f"--storage folder (default ./studies/NAME)"
        )


def claim_storage(root: Path, name: str) -> None:
    """Make `root` the storage folder of study `name` (check_storage's error if it is another's)."""
    check_storage(root, name)
    root.mkdir(parents=True, exist_ok=True)
    (root / OWNER_FILE).write_text(name + "\n")


def _all_failed(study: optuna.Study) -> str | None:
    """Why the sweep failed when it has trials and none COMPLETE or PRUNED; None otherwise."""
    trials = study.get_trials(deepcopy=False)
    if not trials or any(t.state in (TrialState.COMPLETE, TrialState.PRUNED) for t in trials):
        return None
    first = next(
        (trial_attrs.ERROR.of(t.user_attrs) for t in trials if trial_attrs.ERROR.of(t.user_attrs)),
        "no error recorded",
    )
    return f"every trial FAILed ({len(trials)}); first error: {first}"


def run_sweep(
    name: str,
    storage_url: str,
    *,
    generation: int | None = None,
    widen: Sequence[tuple[str, str | None]] = (),
    **options: Any,
) -> SweepOutcome:
    """Run (or resume, or extend to `n_trials`) the study `name` until it has its trial count.

    Takes the study's driver lease first (DriverBusy if another live driver holds it); `generation`
    is the start this driver serves when the API launched it. `widen` holds (param, edge or None)
    ranges to widen, under the lease, before sampling (`tuner.sweeps.widen`). `options` are `_drive`'s.
    A driver that loses its lease (taken over, or not renewed in time) stops its trials, writes
    nothing more, and this raises LeaseLost (`tuner.sweeps.driver`).
    """
    request = StopRequest()
    with stop_on_signals(request):
        study = load_study(name, storage_url)
        if study_attrs.SPACE_DEF not in study.user_attrs:
            raise StudyError(f"study {name!r} was not created by rnntune (no space_def attr)")
        keeper = LeaseKeeper(storage_url, name, request, generation)
        keeper.acquire()
        try:
            for change in store_widening(study, storage_url, widen):
                print(describe_widening(change), file=options.get("out") or sys.stdout)
            outcome = _drive(study, storage_url, request, fence=keeper, **options)
        except Exception as err:
            keeper.raise_if_lost(err)
            raise
        finally:
            keeper.close()
        keeper.raise_if_lost()  # fenced: its trials stopped, nothing written after the loss
        return outcome


def _drive(
    study: optuna.Study,
    storage_url: str,
    request: StopRequest,
    *,
    changes: Mapping[str, Any] | None = None,
    storage_path: str | os.PathLike | None = None,
    ray_address: str | None = None,
    num_cpus: int | None = None,
    verbose: bool = False,
    out: TextIO | None = None,
    trainable: Callable[[dict[str, Any]], Any] | None = None,
    fence: LeaseKeeper | None = None,
) -> SweepOutcome:
    """The sweep itself, run while this process holds the study's lease.

    `changes` are the spec fields this run changes (only `RESUME_SAFE` ones; stored with the
    study). `trainable` is the function each trial runs (default: the shared trainer through
    `trial_kind`: training, or dynamic evaluation of the study's checkpoint); the orchestration
    benchmark passes one that returns at once. `fence`: the lease
    keeper every ask and tell is checked against (None: unfenced, for callers holding no lease).
    """
    name = study.study_name
    attrs = study.user_attrs
    spec = SweepSpec.of(attrs)
    if changes:
        spec = spec.resume_changes(changes)
        done = finished_count(study)
        if "n_trials" in changes and spec.n_trials < done:
            raise StudyError(
                f"--trials {spec.n_trials} is below the {done} trials study {name!r} already has"
            )
    if study_attrs.SPEC not in attrs and attrs.get("sampler") in RETIRED_SAMPLERS:  # written before the spec
        retired = f"sampler {attrs['sampler']} was retired; the study continues with {spec.sampler}"
        study_attrs.SAMPLER_NOTE.write(study, retired + " (docs/samplers.md)")
    study_attrs.SPEC.write(study, spec.stored())
    target = spec.n_trials
    if storage_path is not None:
        study_attrs.STORAGE_PATH.write(study, str(Path(storage_path).expanduser().resolve()))
    root = Path(study_attrs.STORAGE_PATH.required(study.user_attrs))
    space = resolve_data_dir(SearchSpace.from_dict(study_attrs.SPACE_DEF.required(attrs)))
    claim_storage(root, name)
    priors = prior_trials(storage_url, study_attrs.WARM_START.of(attrs))
    sampler = make_sampler(
        spec.sampler,
        seed=spec.seed,
        cost_aware=spec.cost_aware,
        **({"prior_trials": priors} if priors else {}),
    )
    study = load_study(name, storage_url, sampler=sampler)
    zombies = fail_zombies(study, ZOMBIE_REASON, storage_url)
    budget = target - finished_count(study)
    if budget <= 0 or request.reason is not None:
        set_status(study, ended := "finished" if budget <= 0 else "stopped")
        return SweepOutcome(name, ended, finished_count(study), target, best_trial(study), [])

    import torch
    from ray import tune

    from tuner.policies.schedulers import make_scheduler
    from tuner.sweeps.progress import ProgressTable
    from tuner.sweeps.ray_runtime import check_resources, sqlite_on_cluster_warning, start_ray
    from tuner.sweeps.searcher import METRIC, StudySearcher
    from tuner.sweeps.trackers.callback import TrackerCallback, open_trackers
    from tuner.sweeps.trackers.callback import describe as describe_trackers
    from tuner.sweeps.trainable import trial_kind
    from tuner.sweeps.trial_events import TrialEvents

    check_available(spec)  # before Ray starts: a tracker the spec asks for is installed

    os.environ["TUNE_DISABLE_SIGINT_HANDLER"] = "1"  # our handler stops the sweep cleanly instead
    # The driver only samples: one torch thread keeps the GP off the cores the trials train on
    # (bench/orchestration_overhead.py: 0.29 s vs 1.0 s per GP suggestion at 100 trials).
    torch.set_num_threads(1)
    os.environ["TUNE_DISABLE_STRICT_METRIC_CHECKING"] = "1"  # final summaries carry no new metric
    parallel = spec.parallel
    set_status(study, "running")
    resources = {"cpu": spec.cpus_per_trial, "gpu": spec.gpus_per_trial}
    started_ray = False
    try:
        started_ray = start_ray(ray_address, num_cpus, verbose)
        parallel, crowded = check_resources(resources, parallel, ray_address)
        gpu_lines = mps.describe(spec.gpus_per_trial)
    except Exception:
        set_status(study, "failed")
        if started_ray:
            import ray

            ray.shutdown()
        raise
    policy = spec.early_stopping()
    if policy.brackets and policy.brackets > 1 and spec.seed is not None:
        # Ray's async Hyperband draws each trial's bracket from numpy's global RNG.
        np.random.seed(spec.seed)
    pin_storage = open_storage(storage_url) if spec.keep_top else None
    policies = SweepPolicies(
        study,
        root,
        spec,
        max_steps=grid(space)[0],
        pins=(lambda: referenced_checkpoints(pin_storage)) if pin_storage is not None else frozenset,
    )
    searcher = StudySearcher(
        study,
        space,
        root,
        budget,
        policies,
        fence,
        checkpoint=spec.checkpoint,
        ask_ahead=ask_ahead.depth_for(parallel),
    )
    progress = ProgressTable(study, searcher, target, parallel, out)
    warning = sqlite_on_cluster_warning(storage_url)
    # A trial of a trained model's study is one dynamic evaluation, reported once: nothing to stop early.
    scheduler = "none" if spec.checkpoint else spec.scheduler
    early = policy.describe(*grid(space)) if scheduler in ASHA_SCHEDULERS else scheduler
    if scheduler == "adaptive":
        early += "; " + describe_adaptive()
    if spec.checkpoint:
        early += f" (each trial evaluates {spec.checkpoint} once, trains nothing)"
    progress.header(
        [line for line in (warning, crowded) if line]
        + gpu_lines
        + [
            f"study {name}  space {space.name}  sampler {spec.sampler}  scheduler {scheduler}  "
            f"parallel {parallel}  per trial {spec.cpus_per_trial:g} CPU, {spec.gpus_per_trial:g} GPU",
            f"early stopping: {early}",
            *([f"ends early on: {stops}"] if (stops := policies.describe()) else []),
            f"db {redact_url(storage_url)}  storage {root}",
            *describe_trackers(spec, name, root),
            *(
                [f"warm start: {len(priors)} prior trials from {', '.join(attrs['warm_start']['studies'])}"]
                if study_attrs.WARM_START.of(attrs)
                else []
            ),
            f"trials {target - budget}/{target} done"
            + (
                f"; {len(zombies)} left RUNNING by a dead sweep marked FAIL and retried: {zombies}"
                if zombies
                else ""
            ),
        ]
    )
    # Only the adaptive scheduler starts from the study's finished curves: no read for the others.
    history = finished_curves(study) if scheduler == "adaptive" else None
    trackers = TrackerCallback(
        searcher,
        open_trackers(spec, name, root),
        lambda line: print(line, file=out or sys.stderr, flush=True),
    )
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S")
    tuner = tune.Tuner(
        tune.with_resources(trainable or trial_kind(spec.checkpoint), resources),
        tune_config=tune.TuneConfig(
            metric=METRIC,
            mode="min",
            search_alg=searcher,
            scheduler=make_scheduler(scheduler, space.fixed, policy, history),
            num_samples=budget,
            max_concurrent_trials=parallel,
            reuse_actors=True,
            trial_dirname_creator=_trial_dirname,
        ),
        run_config=tune.RunConfig(
            name=f"run-{stamp}",
            storage_path=str(root / "ray"),
            stop=SweepStopper(study, request, searcher),
            callbacks=[TrialEvents(searcher), progress, trackers],
            failure_config=tune.FailureConfig(max_failures=spec.max_retries),
            verbose=1 if verbose else 0,
        ),
    )
    status: study_attrs.Status = "failed"
    error = None
    try:
        if request.reason is None:  # a stop that came while Ray started needs no trial
            with stop_on_signals(request):  # again: ray.init() replaced our SIGTERM handler with its own
                tuner.fit()
        status = "finished" if finished_count(study) >= target or searcher.ended_early else "stopped"
        if status == "finished" and (error := _all_failed(study)) is not None:
            status = "failed"
    except KeyboardInterrupt:
        request.set("sweep interrupted")
        status = "stopped"
        raise
    finally:
        interrupted = searcher.interrupt_all(request.reason or "the sweep ended while the trial ran")
        if request.reason is not None and status not in ("failed", "finished"):
            status = "stopped"
        progress.refresh(final=True)
        failures = trackers.close(status)
        if searcher.writable:  # a driver that lost its lease leaves the status to the next one
            set_status(study, status)
            count_tracker_failures(study, failures)
        if started_ray:
            import ray

            ray.shutdown()
    return SweepOutcome(
        name,
        status,
        finished_count(study),
        target,
        best_trial(study),
        interrupted,
        error,
        searcher.ended_early,
    )
