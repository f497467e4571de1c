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

import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

import optuna

from tuner.samplers import RETIRED_SAMPLERS, make_sampler
from tuner.space import SearchSpace
from tuner.spec import SweepSpec
from tuner.storage import study_attrs
from tuner.storage.object_store import ObjectStore
from tuner.storage.study import (
    StudyError,
    best_trial,
    fail_zombies,
    finished_count,
    load_study,
    set_status,
    storage_root,
    stored_location,
    study_storage,
)
from tuner.sweeps.drive.execute import SweepOutcome, execute
from tuner.sweeps.drive.lease import LeaseKeeper, StopRequest, stop_on_signals
from tuner.sweeps.drive.plan import RunOptions, SweepPlan, merge_spec, plan_sweep
from tuner.sweeps.study.warm_start import prior_trials
from tuner.sweeps.trackers.where import describe as describe_trackers
from tuner.sweeps.widen.ranges import describe as describe_widening
from tuner.sweeps.widen.ranges import store_widening

ZOMBIE_REASON = "sweep process died while the trial was running; found RUNNING on resume"
# The file that says which study a storage folder belongs to.
OWNER_FILE = ".rnntune-study"


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


def claim_objects(store: ObjectStore, name: str | None) -> None:
    """Make the store's prefix study `name`'s, as `claim_storage` a folder (`name` None: only check
    that it is no other study's): the owner is an object `OWNER_FILE` under the prefix."""
    marker = store.root.child(OWNER_FILE)
    owner = None
    if store.size(marker) is not None:
        with store.open_read(marker) as stream:
            owner = stream.read(1000).decode(errors="replace").strip()
    if owner is not None and owner != name:
        raise StudyError(
            f"storage {store.root.uri} belongs to study {owner!r}; give "
            f"{f'study {name!r}' if name else 'the new study'} its own --storage prefix"
        )
    if owner is None and name is not None:
        with store.fs.open_output_stream(marker.path) as sink:
            sink.write(name.encode() + b"\n")


def run_sweep(
    name: str,
    storage_url: str,
    *,
    generation: int | None = None,
    widen: Sequence[tuple[str, str | None]] = (),
    changes: Mapping[str, Any] | None = None,
    storage_path: str | os.PathLike[str] | None = None,
    ray_address: str | None = None,
    num_cpus: int | None = None,
    verbose: bool = False,
    out: TextIO | None = None,
    trainable: Callable[[dict[str, Any]], Any] | None = None,
) -> SweepOutcome:
    """Run (or resume, or extend to `n_trials`) the study `name` until it has its trial count.

    Takes the study's driver lease first (DriverBusy if another live driver holds it); `generation`
    is the start this driver serves when the API launched it. `widen` holds (param, edge or None)
    ranges to widen, under the lease, before sampling (`tuner.sweeps.widen.ranges`); the other options are
    `RunOptions`' (plan.py). A driver that loses its lease (taken over, or not renewed in time)
    stops its trials, writes nothing more, and this raises LeaseLost (`tuner.sweeps.drive.lease`).
    """
    options = RunOptions(changes, storage_path, ray_address, num_cpus, verbose, out, trainable)
    request = StopRequest()
    with stop_on_signals(request):
        study = load_study(name, storage_url)
        if study_attrs.SPACE_DEF not in study.user_attrs:
            raise StudyError(f"study {name!r} was not created by rnntune (no space_def attr)")
        keeper = LeaseKeeper(storage_url, name, request, generation)
        keeper.acquire()
        try:
            for change in store_widening(study, storage_url, widen):
                print(describe_widening(change), file=out or sys.stdout)
            outcome = drive(study, storage_url, request, options, fence=keeper)
        except Exception as err:
            keeper.raise_if_lost(err)
            raise
        finally:
            keeper.close()
        keeper.raise_if_lost()  # fenced: its trials stopped, nothing written after the loss
        return outcome


def drive(
    study: optuna.Study,
    storage_url: str,
    request: StopRequest,
    options: RunOptions,
    fence: LeaseKeeper | None = None,
) -> SweepOutcome:
    """The sweep itself, run while this process holds the study's lease: the study's state read and
    this run's spec stored (`prepare`), planned (plan.py), then executed (execute.py)."""
    plan, study = prepare(study, storage_url, options)
    if plan.budget <= 0 or request.reason is not None:
        set_status(study, ended := "finished" if plan.budget <= 0 else "stopped")
        return SweepOutcome(plan.name, ended, finished_count(study), plan.target, best_trial(study), [])
    return execute(plan, study, storage_url, request, options, fence)


def prepare(study: optuna.Study, storage_url: str, options: RunOptions) -> tuple[SweepPlan, optuna.Study]:
    """What a run reads and writes before it is planned: the merged spec stored, the storage folder
    claimed, the sampler built (the study reloaded with it), dead sweeps' trials failed; then the plan."""
    name = study.study_name
    attrs = study.user_attrs
    spec = merge_spec(SweepSpec.of(attrs), options.changes, finished_count(study), name)
    if study_attrs.SPEC not in attrs and attrs.get("sampler") in RETIRED_SAMPLERS:  # written before the spec
        retired = f"sampler {attrs['sampler']} was retired; the study continues with {spec.sampler}"
        study_attrs.SAMPLER_NOTE.write(study, retired + " (docs/samplers.md)")
    study_attrs.SPEC.write(study, spec.stored())
    if options.storage_path is not None:
        study_attrs.STORAGE_PATH.write(study, stored_location(options.storage_path))
    root, objects = study_storage(study_attrs.STORAGE_PATH.required(study.user_attrs), storage_root(), name)
    space = resolve_data_dir(SearchSpace.from_dict(study_attrs.SPACE_DEF.required(attrs)))
    claim_storage(root, name)
    if objects is not None:
        claim_objects(ObjectStore(objects), name)
    warm = study_attrs.WARM_START.of(attrs)
    priors = prior_trials(storage_url, warm)
    sampler = make_sampler(
        spec.sampler,
        seed=spec.seed,
        cost_aware=spec.cost_aware,
        **({"prior_trials": priors} if priors else {}),
    )
    study = load_study(name, storage_url, sampler=sampler)
    zombies = fail_zombies(study, ZOMBIE_REASON, storage_url)
    plan = plan_sweep(
        name,
        spec,
        space,
        root,
        objects=objects,
        done=finished_count(study),
        zombies=zombies,
        storage_url=storage_url,
        warm_start=(len(priors), warm["studies"]) if warm else None,
        tracker_lines=describe_trackers(spec, name, root),
    )
    return plan, study
