"""The behaviour of Ray Tune's private names that rnntune relies on (tuner.upstream.ray_private),
checked against Ray's own PopulationBasedTraining and PB2, not a model of them: an upgrade of Ray
that changes any of it fails here (docs/contracts.md, "What an upgrade of Ray must re-check")."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from ray import tune
from ray.tune.schedulers import PopulationBasedTraining, TrialScheduler
from ray.tune.schedulers.pb2 import PB2

from tuner.upstream import ray_private as private


class _Trial:
    """What PBT reads of a Ray trial here (hashable: its state is kept by trial)."""

    def __init__(self, config: dict, trial_id: str) -> None:
        self.config, self.trial_id, self.status = config, trial_id, "RUNNING"
        self.experiment_tag = trial_id

    def is_finished(self) -> bool:
        return False


class _Controller:
    def __init__(self, trials: list) -> None:
        self.trials = trials

    def get_live_trials(self) -> list:
        return self.trials

    def get_trials(self) -> list:
        return self.trials


def _pbt(cls: type = PopulationBasedTraining) -> PopulationBasedTraining:
    if cls is PB2:
        return PB2(
            time_attr="step",
            metric="val_loss",
            mode="min",
            perturbation_interval=20,
            synch=True,
            hyperparam_bounds={"lr": [0.0, 1.0]},
        )
    return cls(
        time_attr="step",
        metric="val_loss",
        mode="min",
        perturbation_interval=20,
        synch=True,
        hyperparam_mutations={"lr": tune.uniform(0.0, 1.0)},
    )


def test_the_ray_installed_is_the_one_the_private_names_were_read_from() -> None:
    private.check_ray(_pbt())
    with pytest.raises(private.RayPrivateError, match=r"Ray 2\.61\.0 is installed .*ray\[tune\]==2\.60\.0"):
        private.check_ray(_pbt(), version="2.61.0")


def test_a_scheduler_without_the_private_state_is_refused_with_the_pin() -> None:
    with pytest.raises(private.RayPrivateError, match=r"_next_perturbation_sync .*ray\[tune\]==2.60.0"):
        private.check_ray(SimpleNamespace(_trial_state={}, _perturbation_interval=20))


class _Hooked(private.CopyHook, PopulationBasedTraining):
    seen: list

    def copy_config(self, trial, source, new):
        self.seen = [trial.trial_id, source.trial_id, new]
        return {**new, "kept": trial.config["trial_number"]}


def test_rays_new_config_clones_the_sources_whole_config_and_the_hook_sees_both_members() -> None:
    """What `CopyHook` relies on: Ray builds a copy's config from the source's whole config (its
    identity included, hence `keep_identity`), perturbs only the mutations, and calls
    `_get_new_config(trial, trial_to_clone)` for it; the hook sees both and its config is Ray's."""
    scheduler = _Hooked(
        time_attr="step", metric="val_loss", mode="min", hyperparam_mutations={"lr": tune.uniform(0, 1)}
    )
    own = _Trial({"trial_number": 1, "hidden": 8, "lr": 0.5}, "a")
    source = _Trial({"trial_number": 4, "hidden": 64, "lr": 0.25}, "b")
    new, operations = scheduler._get_new_config(own, source)
    assert scheduler.seen[:2] == ["a", "b"]
    assert scheduler.seen[2]["trial_number"] == 4 and scheduler.seen[2]["hidden"] == 64
    assert new["kept"] == 1 and "lr" in operations and new["lr"] != 0.25
    assert source.config == {"trial_number": 4, "hidden": 64, "lr": 0.25}  # a copy, not the source's


@pytest.mark.parametrize("cls", [PopulationBasedTraining, PB2])
def test_rays_sync_mode_waits_for_members_behind_the_next_sync_point_and_moves_it(cls) -> None:
    """What the release of waiting members relies on: Ray's synchronous mode pauses a member at a
    sync point while a live member's `_trial_state[...].last_train_time` is behind
    `_next_perturbation_sync` (no round), and once none is, runs the round and moves the point."""
    scheduler = _pbt(cls)
    a, b = _Trial({"lr": 0.5}, "a"), _Trial({"lr": 0.2}, "b")
    for trial in (a, b):
        scheduler._trial_state[trial] = SimpleNamespace(
            orig_tag=trial.trial_id,
            last_score=None,
            last_checkpoint=None,
            last_perturbation_time=0,
            last_train_time=20,
            last_result=None,
        )
    private.set_next_sync(scheduler, 40)
    both = _Controller([a, b])
    assert scheduler.on_trial_result(both, a, {"step": 40, "val_loss": 3.0}) == TrialScheduler.PAUSE
    assert private.next_sync(scheduler) == 40 and private.last_train_time(scheduler, a) == 40
    assert private.last_result(scheduler, a)["val_loss"] == 3.0
    assert private.train_times(scheduler, [a, b]) == [40, 20] and private.interval(scheduler) == 20
    # b ended: a alone is at the sync point, the round runs and the point moves on.
    scheduler._trial_state.pop(b)
    assert (
        scheduler.on_trial_result(_Controller([a]), a, {"step": 40, "val_loss": 3.0}) == TrialScheduler.PAUSE
    )
    assert private.next_sync(scheduler) == 60


def test_tunes_run_counts_the_callbacks_through_the_usage_module_it_calls_at_run_time() -> None:
    """Tune's `run` looks `tag_callbacks` up on `ray.air._internal.usage` when it runs (so the
    swap takes), and Ray's count imports the tracker integrations (what the swap saves)."""
    import inspect
    import subprocess
    import sys

    import ray.tune.tune as tune_module

    assert "air_usage.tag_callbacks(callbacks)" in inspect.getsource(tune_module.run)
    assert tune_module.air_usage.__name__ == "ray.air._internal.usage"
    probe = (
        "import sys\n"
        "from ray.air._internal.usage import _count_callbacks\n"
        "from ray.tune import Callback\n"
        "_count_callbacks([Callback()])\n"
        "print(sorted(m for m in sys.modules if m.startswith('ray.air.integrations.')))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "ray.air.integrations.mlflow" in out.stdout and "ray.air.integrations.wandb" in out.stdout


def test_without_callback_telemetry_swaps_rays_count_for_the_run_only(monkeypatch) -> None:
    from ray.air._internal import usage

    original = usage.tag_callbacks
    with private.without_callback_telemetry():
        assert usage.tag_callbacks is not original
        assert usage.tag_callbacks([tune.Callback()]) is False
    assert usage.tag_callbacks is original
    monkeypatch.setattr(private.ray, "__version__", "0.0.1")  # another Ray: left as it is
    with private.without_callback_telemetry():
        assert usage.tag_callbacks is original


def test_the_embedded_cluster_options_are_for_the_pinned_ray_only() -> None:
    assert private.embedded_init_options() == {"_system_config": {"prestart_worker_first_driver": False}}
    assert private.embedded_init_options("0.0.1") == {}


@pytest.mark.slow
def test_an_embedded_cluster_with_its_options_starts_no_worker_before_a_task(tmp_path) -> None:
    """Ray takes the system config, and with it a fresh cluster starts no Python worker until
    something runs (Ray 2.60 starts one per CPU without it: the processes the option saves)."""
    import subprocess
    import sys

    probe = (
        "import glob, sys, time, ray\n"
        "from tuner.upstream.ray_private import embedded_init_options\n"
        "options = embedded_init_options() if sys.argv[1] == 'on' else {}\n"
        "ray.init(address='local', num_cpus=2, include_dashboard=False, **options)\n"
        "time.sleep(3)\n"
        "logs = ray._private.worker._global_node.get_logs_dir_path()\n"
        "print('WORKERS', len(glob.glob(logs + '/worker-*.out')))\n"
        "ray.shutdown()\n"
    )
    probes = {  # side by side: each waits 3 s on its own cluster
        mode: subprocess.Popen(
            [sys.executable, "-c", probe, mode],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
        )
        for mode in ("on", "off")
    }
    counts = {}
    for mode, proc in probes.items():
        out, err = proc.communicate(timeout=180)
        assert proc.returncode == 0, err[-2000:]
        counts[mode] = int(out.split("WORKERS")[-1])
    assert counts == {"on": 0, "off": 2}


def test_a_tune_without_the_actor_cache_used_is_refused_with_the_pin(monkeypatch) -> None:
    from ray.tune.utils.object_cache import _ObjectCache

    monkeypatch.delattr(_ObjectCache, "increase_max")
    with pytest.raises(private.RayPrivateError, match=r"increase_max.*pin ray\[tune\]"):
        private.check_ray(_pbt())


def _member(config: dict) -> None:
    """A population member that reports at steps 10 and 20, resuming from its checkpoint, 0.3 s
    apart. Its first start waits until all 4 members have started (files in `config["started"]`),
    as members that train for longer than a process takes to start do."""
    import os
    import tempfile
    import time
    from pathlib import Path

    start, started = 0, Path(config["started"])
    if (checkpoint := tune.get_checkpoint()) is not None:
        with checkpoint.as_directory() as folder:
            start = int(Path(folder, "step").read_text())
    else:
        (started / str(os.getpid())).touch()
        while len(list(started.iterdir())) < 4:
            time.sleep(0.1)
    for step in range(start + 10, 21, 10):
        time.sleep(0.3)
        with tempfile.TemporaryDirectory() as folder:
            Path(folder, "step").write_text(str(step))
            loss = config["trainer"]["lr"] * (30 - step)
            tune.report({"step": step, "val_loss": loss}, checkpoint=tune.Checkpoint.from_directory(folder))


class _Pids(tune.Callback):
    """The worker process (Tune's `pid` of each result) of every result the driver hears, by step."""

    def __init__(self) -> None:
        self.pids: dict[int, set[int]] = {10: set(), 20: set()}

    def on_trial_result(
        self, iteration: int, trials: list, trial: object, result: dict, **info: object
    ) -> None:
        self.pids[int(result["step"])].add(int(result["pid"]))


def _population_run(tmp_path, scheduler: TrialScheduler, search_alg: object | None) -> tuple[_Pids, int]:
    """The pids each step's results came from, and how many worker processes Ray started (one log
    file each in the session's logs folder)."""
    import glob

    import ray

    logs = ray._private.worker._global_node.get_logs_dir_path() + "/worker-*.out"
    before = set(glob.glob(logs))
    heard, started = _Pids(), tmp_path / "started"
    started.mkdir(parents=True)
    tune.Tuner(
        tune.with_resources(_member, {"cpu": 0.5}),
        param_space={"trainer": {"lr": tune.grid_search([0.2, 0.4, 0.6, 0.8])}, "started": str(started)},
        tune_config=tune.TuneConfig(
            metric="val_loss", mode="min", scheduler=scheduler, search_alg=search_alg, reuse_actors=True
        ),
        run_config=tune.RunConfig(storage_path=str(tmp_path), callbacks=[heard], verbose=0),
    ).fit()
    assert len(heard.pids[10]) == 4 and heard.pids[20], heard.pids  # every member started at once
    return heard, len(set(glob.glob(logs)) - before)


@pytest.mark.slow
def test_paused_members_resume_on_the_processes_they_started_on(ray_cluster, tmp_path) -> None:
    """Synchronous PBT over a grid of 4 members, one round, under the members' scheduler and
    generator (`keep_actor`, `MemberGenerator`): every member resumes on a process a member started
    on, and Ray starts no other. Ray's own `PopulationBasedTraining` with Tune's generator stops
    each paused member's actor instead and starts others to resume them (measured with this
    population: 7 worker processes, 10 with members a second apart, against 4)."""
    from tuner.policies.population_schedulers import MemberGenerator, MemberPBT

    mutations = {"trainer": {"lr": tune.uniform(0.1, 1.0)}}
    common = dict(time_attr="step", perturbation_interval=10, synch=True, hyperparam_mutations=mutations)
    scheduler = MemberPBT(max_steps=20, first_sync=10, **common)
    kept, workers = _population_run(tmp_path, scheduler, MemberGenerator(max_concurrent=4))
    assert kept.pids[20] <= kept.pids[10] and workers <= 4, (kept.pids, workers)
