"""The one place rnntune touches Ray's private names: why each is needed, and the check, at a
sweep's start, that the Ray installed is the one they were read from.

Ray's PBT and PB2 (ray/tune/schedulers/pbt.py, pb2.py) give no public hook that sees both members
of a copy, nor the synchronous mode's state, and rnntune needs both:

- `_get_new_config(trial, trial_to_clone) -> (config, operations)`: Ray's PBT builds the config a
  member goes on with by cloning the whole config of the member it copies, identity included (the
  study trial it reports to, its run folder). `CopyHook` wraps it so a subclass sees both members
  and the new config (`copy_config`) and can keep the member's identity and record the copy.
- `_trial_state[trial].last_train_time` / `.last_result`: the step and result of a member's last
  perturbation-step result, as Ray's sync mode compares them (the step a copy is of, and the loss
  the checkpoint copied held).
- `_next_perturbation_sync` and `_perturbation_interval`: the synchronous mode's next sync point,
  which rnntune moves past the members' start steps (a resumed population) and past a finished
  member (which Ray would otherwise wait for forever).

- `TuneController._actor_cache` (Tune's `_ObjectCache`: `increase_max`, `decrease_max`) and the
  rule of `TuneController._maybe_cache_trial_actor` it serves: with `reuse_actors`, Tune keeps the
  actor of a trial it stops (a pause among them) for another trial only while its search is not
  over and the cache's maximum for the trial's resources leaves room, a maximum Tune raises only
  for trials it has staged to start. Synchronous PBT pauses every member at each perturbation, with
  the members' grid long generated, so Tune stopped every member's actor there and started a new
  process for it (PyTorch imported again: about 4.5 CPU-s a member a round here). `keep_actor` raises
  the maximum for a member the scheduler pauses and `release_actor` lowers it again as the member
  resumes (`population_schedulers`); `population_schedulers.MemberGenerator` keeps the search open
  until every member has finished.

- `ray.init(_system_config={"prestart_worker_first_driver": False})` for the embedded cluster:
  Ray starts a Python worker per CPU as the first driver connects, and a sweep's trial actors
  start workers of their own regardless (measured: 4 worker processes for a sweep of 2 in
  flight, 2 without), so those only took CPU from the sweep's start.
- `ray.air._internal.usage.tag_callbacks`, which Tune's `run` calls with the callbacks a run is
  given, for Ray's usage statistics: it imports Ray's MLflow, W&B, Comet and Aim integrations to
  count them (mlflow and wandb themselves where installed: about 1.2 s of each sweep's start).
  `without_callback_telemetry` skips it for the run.

- `ray._raylet.GcsClient.get_all_node_info` with a node selector (`alive_in_gcs`): the question
  Ray's own `/api/healthz` asks of the GCS for a node (ray/dashboard/modules/reporter/utils.py,
  `HealthChecker.check_local_raylet_liveness`). The container health check (tuner.deploy.health)
  asks it without the dashboard agent, which this image does not run; Ray's public API has no call
  that names one node's liveness without a connected driver.

No other module names these (tests/tuner/upstream/test_ray_private.py checks the behaviour
each is relied on for against Ray's own classes); docs/contracts.md, "What an upgrade of Ray must
re-check", lists what to re-read when `RAY_VERSION` moves.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import ray

from tuner.errors import InvalidInput

RAY_VERSION = "2.60.0"  # the Ray whose pbt.py and pb2.py the names here were read from
STATE = ("_trial_state", "_next_perturbation_sync", "_perturbation_interval")
_PIN = f"(rnntune's population schedulers were written for Ray {RAY_VERSION}; pin ray[tune]=={RAY_VERSION})"


EMBEDDED_SYSTEM_CONFIG = {"prestart_worker_first_driver": False}


def _pinned(version: str | None = None) -> bool:
    """Whether `version` (the installed Ray's by default) is the one the names here were read from."""
    return (ray.__version__ if version is None else version) == RAY_VERSION


class RayPrivateError(InvalidInput):
    """The Ray installed lacks, or may have changed, a private name rnntune relies on."""


def check_ray(scheduler: Any, version: str | None = None) -> None:
    """Refuse to run a population on another Ray than `RAY_VERSION`, or one whose PBT or PB2 lacks
    the private method, whose `scheduler` lacks the private state, or whose Tune lacks the actor
    cache, used here."""
    # Imported here: the container health check imports this module and must stay light.
    from ray.tune.schedulers import PopulationBasedTraining
    from ray.tune.schedulers.pb2 import PB2

    found = ray.__version__ if version is None else version
    if not _pinned(found):
        raise RayPrivateError(f"Ray {found} is installed {_PIN}")
    for cls in (PopulationBasedTraining, PB2):
        method = cls.__dict__.get("_get_new_config")
        parameters = list(inspect.signature(method).parameters) if method is not None else []
        if parameters != ["self", "trial", "trial_to_clone"]:
            raise RayPrivateError(
                f"this Ray's {cls.__name__} has no _get_new_config(trial, trial_to_clone) {_PIN}"
            )
    for name in STATE:
        if not hasattr(scheduler, name):
            raise RayPrivateError(f"this Ray's PopulationBasedTraining has no {name} {_PIN}")
    _check_actor_cache()


class CopyHook:
    """Put before Ray's PBT or PB2 in a subclass's bases: `copy_config` sees every copy Ray's
    scheduler decides, with both members, and returns the config the member goes on with."""

    def _get_new_config(self, trial: Any, trial_to_clone: Any) -> tuple[dict, dict]:
        new, operations = super()._get_new_config(trial, trial_to_clone)  # type: ignore[misc]
        return self.copy_config(trial, trial_to_clone, new), operations

    def copy_config(self, trial: Any, source: Any, new: dict) -> dict:
        """The config member `trial` goes on with after copying `source` (`new`: Ray's)."""
        return new


def keep_actor(tune_controller: Any, trial: Any) -> None:
    """Let Tune keep `trial`'s actor when it stops it (a pause): one more actor of its resources
    may wait in Tune's cache for a trial to resume on it."""
    tune_controller._actor_cache.increase_max(trial.placement_group_factory)


def release_actor(tune_controller: Any, trial: Any) -> None:
    """Undo `keep_actor` for `trial` (resumed, or ended): Tune's own count of staged trials then
    decides again what its cache keeps."""
    tune_controller._actor_cache.decrease_max(trial.placement_group_factory)


def _check_actor_cache() -> None:
    """Refuse a Tune whose controller lacks the cache rule or the cache's methods used here."""
    from ray.tune.execution.tune_controller import TuneController
    from ray.tune.utils.object_cache import _ObjectCache

    for name in ("increase_max", "decrease_max"):
        method = _ObjectCache.__dict__.get(name)
        parameters = list(inspect.signature(method).parameters) if method is not None else []
        if parameters != ["self", "key", "by"]:
            raise RayPrivateError(f"this Ray's _ObjectCache has no {name}(key, by) {_PIN}")
    if "_actor_cache" not in inspect.getsource(TuneController.__init__) or not hasattr(
        TuneController, "_maybe_cache_trial_actor"
    ):
        raise RayPrivateError(f"this Ray's TuneController keeps no _actor_cache {_PIN}")


def embedded_init_options(version: str | None = None) -> dict[str, Any]:
    """The private `ray.init` options of an embedded cluster: `EMBEDDED_SYSTEM_CONFIG` on the Ray
    it was read from, none on another (Ray refuses a system config key it does not know)."""
    return {"_system_config": dict(EMBEDDED_SYSTEM_CONFIG)} if _pinned(version) else {}


@contextmanager
def without_callback_telemetry() -> Iterator[None]:
    """Within it Tune's `run` counts no callbacks for Ray's usage statistics (and so imports no
    tracker integration it does not use); Ray's function is put back on exit. On another Ray than
    `RAY_VERSION` nothing is changed."""
    from ray.air._internal import usage

    original = usage.tag_callbacks
    if _pinned():
        usage.tag_callbacks = _no_callback_telemetry
    try:
        yield
    finally:
        usage.tag_callbacks = original


def _no_callback_telemetry(callbacks: Any) -> bool:
    """`tag_callbacks`'s contract: whether usage was recorded (never, here)."""
    return False


def last_result(scheduler: Any, trial: Any) -> dict[str, Any]:
    """A member's last perturbation-step result as the scheduler kept it ({} before one)."""
    state = scheduler._trial_state.get(trial)
    return dict(state.last_result or {}) if state is not None else {}


def last_train_time(scheduler: Any, trial: Any) -> int:
    """The step of a member's last perturbation-step result as the scheduler kept it."""
    return int(scheduler._trial_state[trial].last_train_time)


def train_times(scheduler: Any, trials: Iterable[Any]) -> list[float]:
    """The scheduler's last step of each of `trials` it holds a state for."""
    return [scheduler._trial_state[t].last_train_time for t in trials if t in scheduler._trial_state]


def next_sync(scheduler: Any) -> float:
    """The synchronous mode's next sync point."""
    return float(scheduler._next_perturbation_sync)


def set_next_sync(scheduler: Any, step: float) -> None:
    """Move the synchronous mode's next sync point."""
    scheduler._next_perturbation_sync = step


def interval(scheduler: Any) -> int:
    """The scheduler's perturbation interval."""
    return int(scheduler._perturbation_interval)


def alive_in_gcs(gcs_address: str, node_id: str, timeout_s: float) -> bool:
    """Whether the GCS at `gcs_address` answers and holds node `node_id` (hex) as alive, asked as
    Ray's `HealthChecker.check_local_raylet_liveness` asks it."""
    # Ray's compiled and generated modules, which carry no type stubs for these names.
    from ray._raylet import GcsClient, NodeID  # type: ignore[attr-defined]
    from ray.core.generated.gcs_pb2 import GcsNodeInfo  # type: ignore[attr-defined]
    from ray.core.generated.gcs_service_pb2 import GetAllNodeInfoRequest  # type: ignore[attr-defined]

    selector = GetAllNodeInfoRequest.NodeSelector(node_id=NodeID.from_hex(node_id).binary())
    nodes = GcsClient(address=gcs_address).get_all_node_info(
        timeout=timeout_s, node_selectors=[selector], state_filter=GcsNodeInfo.GcsNodeState.ALIVE
    )
    return len(nodes) > 0
