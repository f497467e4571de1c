"""Issue 47 end to end: a tiny PBT sweep on CPU through the CLI, stopped by SIGTERM after a member
copied another, then resumed, a member's worker killed mid-run in the resumed run; and one
perturbing at every evaluation, where a copy is decided on a member's first result. Checked: a
copy happened and carried the source's checkpoint (the loss it held is the source's at that step, and the member's
next loss is close to the source's), every copy in Ray's own `pbt_global.txt` is in the member's
history and no other (tests/tuner/sweeps/ray_pbt_record.py reads it as Ray writes it), every
member trained in its own folder and kept its history and curve across the stop, the settings a
member is shown with are those its trainer recorded (its run's config.yaml), Ray kept no more
checkpoints per member than the retention allows, and the best member's schedule replayed by the
trainer reaches the member's loss."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
import yaml
from optuna.trial import TrialState

from tests.tuner.sweep_process import finish, launch, tiny_set_args, trials, wait_until
from tests.tuner.sweeps.ray_pbt_record import experiments, ray_copies
from trainer import make_config, train
from tuner import python_api
from tuner.analysis.reads import StudyStore
from tuner.policies.population_rules import CHECKPOINTS_KEPT
from tuner.storage import trial_attrs
from tuner.storage.study import load_study

pytestmark = pytest.mark.slow
# Two perturbation rounds (steps 20 and 40): each round pauses every member and restarts its trainer
# from a checkpoint (in the process it ran in: ray_private.keep_actor), so rounds cost time: the
# tests that need no second round run one.
MAX_STEPS, EVERY, INTERVAL = 60, 10, 20
# The PB2 sweep checks the first round only (decided on the members' first results): one round.
PB2_STEPS = 40
RAY_RECORD = {"TUNE_DISABLE_AUTO_CALLBACK_LOGGERS": "0"}  # Ray's result.json per trial (ray_pbt_record)


def _copied(ts) -> bool:
    return any(
        s["from_trial"] is not None for t in ts for s in trial_attrs.PBT_HISTORY.of(t.user_attrs) or []
    )


def test_a_pbt_sweep_copies_checkpoints_keeps_histories_and_resumes_past_a_killed_member(
    tmp_path, joined_ray
):
    db = f"sqlite:///{tmp_path / 'studies.db'}"
    args = ["--name", "pop", "--db", db, "--scheduler", "pbt", "--trials", "4", "--parallel", "4"]
    args += ["--cpus-per-trial", "0.5", "--perturbation-interval", str(INTERVAL), "--sampler", "random"]
    args += ["--seed", "5", *tiny_set_args(max_steps=MAX_STEPS, eval_every=EVERY)]
    proc, log = launch(tmp_path, args, env={**RAY_RECORD, **joined_ray})
    wait_until(lambda: _copied(trials(db, "pop")), proc, log, 300)
    proc.send_signal(signal.SIGTERM)
    assert finish(proc, log, 120) == 130, log.read_text()
    assert "population-based training (pbt): 4 members, every 20 steps" in log.read_text()
    stopped = load_study("pop", db)
    assert stopped.user_attrs["status"] == "stopped"
    before = {t.number: t for t in stopped.trials}
    assert len(before) == 4 and all(t.state == TrialState.FAIL for t in before.values())
    assert all(t.user_attrs["needs_retry"] for t in before.values())

    proc, log = launch(tmp_path, ["--resume", "pop", "--db", db], env={**RAY_RECORD, **joined_ray})
    _kill_a_member_training_past_a_sync_point(db, before, proc, log)
    assert finish(proc, log, 600) == 0, log.read_text()
    study = load_study("pop", db)
    assert study.user_attrs["status"] == "finished"
    everyone = {t.number: t for t in study.trials}
    done = [t for t in study.trials if t.state == TrialState.COMPLETE]
    assert len(done) == 4 and {_root(t.number, everyone) for t in done} == set(before)
    _check_killed_attempts(everyone, set(before))
    grid = list(range(EVERY, MAX_STEPS + 1, EVERY))

    for member in done:
        attempt = before[_root(member.number, everyone)]
        history = trial_attrs.PBT_HISTORY.of(member.user_attrs)
        # Nothing the stopped attempt recorded is lost: its history and curve go on in the retry.
        old_history = trial_attrs.PBT_HISTORY.of(attempt.user_attrs)
        if history[: len(old_history)] != old_history:  # less a copy decided as the sweep stopped,
            # which the member never made (it had not restarted): its folder held its own last.pt
            assert old_history[-1]["from_trial"] is not None
            assert history[: len(old_history) - 1] == old_history[:-1]
        assert all(member.intermediate_values[s] == v for s, v in attempt.intermediate_values.items())
        assert sorted(member.intermediate_values) == grid  # one curve, no gap across copies or the stop
        assert member.user_attrs["run_dir"] == attempt.user_attrs["run_dir"]
        assert Path(member.user_attrs["checkpoint"]).parent == Path(member.user_attrs["run_dir"])
        # Its value is the best of its lineage: its own curve, or a loss of a member it copied
        # before the copy (the best.pt a copy takes along).
        assert member.value <= min(member.intermediate_values.values())
        assert any(member.value in t.intermediate_values.values() for t in study.trials)
        assert history[0]["step"] == 0 and history[0]["from_trial"] is None
    assert len({t.user_attrs["run_dir"] for t in done}) == 4  # each member in its own folder

    _check_copies(everyone)
    _check_against_ray(everyone, tmp_path / "studies" / "pop" / "ray")
    _check_settings_shown(db, "pop")

    for folder in (tmp_path / "studies" / "pop" / "ray").glob("run-*/member-*"):
        assert len(list(folder.glob("checkpoint_*"))) <= CHECKPOINTS_KEPT

    # The best member's schedule, replayed from scratch by the trainer, reaches the member's loss.
    best = python_api.best("pop", db=db)
    assert best is not None and best["number"] == min(done, key=lambda t: t.value).number
    assert best["schedule"][0]["step"] == 0 and best["replay_config"]["schedule"] == [
        {"step": s["step"], "settings": s["settings"]} for s in best["schedule"][1:]
    ]
    result = train(make_config({**best["replay_config"], "run_dir": str(tmp_path / "replay")}))
    assert result.best_val_loss == pytest.approx(best["value"], rel=1e-4)


def _check_copies(everyone: dict) -> None:
    """At least one copy, each at a perturbation step and of the source's checkpoint there: the loss
    it held is the source's at that step and the member's next loss is close to the source's."""
    copies = [
        (t, s)
        for t in everyone.values()
        for s in trial_attrs.PBT_HISTORY.of(t.user_attrs) or []
        if s["from_trial"] is not None
    ]
    assert copies
    for member, segment in copies:
        source, step = everyone[segment["from_trial"]], segment["step"]
        assert step % INTERVAL == 0 and 0 < step < MAX_STEPS
        # The checkpoint copied is the source's at that step: the loss it held is the source's there.
        assert segment["from_value"] == pytest.approx(source.intermediate_values[step], rel=1e-9)
        after = step + EVERY
        if after in member.intermediate_values and after in source.intermediate_values:
            # Right after the copy the member trains the source's weights: its loss is the source's
            # within the noise of one evaluation under other settings.
            assert member.intermediate_values[after] == pytest.approx(
                source.intermediate_values[after], rel=0.05
            )
        assert set(segment["settings"]) <= {
            "learning_rate",
            "l2_penalty",
            "input_dropout",
            "inter_layer_dropout",
            "state_dropout",
            "output_dropout",
        }


def test_every_copy_ray_records_is_in_the_members_history_when_members_meet_at_each_evaluation(
    tmp_path, joined_ray
):
    """Perturbing at every evaluation, the first round is decided on the members' first results,
    which also carry their step-0 starts: Ray hears the scheduler's copy before it forwards the
    start to the callbacks (the order that used to lose the copy). Every member's history equals
    Ray's `pbt_global.txt`, and what the study shows of a member is what its trainer ran. Run with
    PB2 (Ray's PB2 is its PBT with a GP-bandit explore, and writes the same record), so this is
    also the end-to-end sweep of the pb2 kind."""
    db = f"sqlite:///{tmp_path / 'studies.db'}"
    args = ["--name", "pop", "--db", db, "--scheduler", "pb2", "--trials", "4", "--parallel", "4"]
    args += ["--cpus-per-trial", "0.5", "--perturbation-interval", str(INTERVAL), "--sampler", "random"]
    args += ["--seed", "11", *tiny_set_args(max_steps=PB2_STEPS, eval_every=INTERVAL)]
    proc, log = launch(tmp_path, args, env={**RAY_RECORD, **joined_ray})
    assert finish(proc, log, 600) == 0, log.read_text()
    everyone = {t.number: t for t in load_study("pop", db).trials}
    assert all(t.state == TrialState.COMPLETE for t in everyone.values())
    for member in everyone.values():
        assert trial_attrs.PBT_HISTORY.of(member.user_attrs)[0]["step"] == 0
        assert sorted(member.intermediate_values) == [INTERVAL, PB2_STEPS]
    rounds = len(range(INTERVAL, PB2_STEPS, INTERVAL))
    assert _check_against_ray(everyone, tmp_path / "studies" / "pop" / "ray") >= rounds  # a copy a round
    _check_settings_shown(db, "pop")


def _root(number: int, everyone: dict) -> int:
    """The first attempt of the member trial `number` is an attempt of (following `retry_of`)."""
    while (before := trial_attrs.RETRY_OF.of(everyone[number].user_attrs)) is not None:
        number = before
    return number


def _own_copies(trial, everyone: dict) -> list[tuple[int, int, int]]:
    """The copies trial `trial` recorded itself: (its member, the source's member, step), less
    those its history took over from the attempt it retries."""
    history = trial_attrs.PBT_HISTORY.of(trial.user_attrs) or []
    retried = trial_attrs.RETRY_OF.of(trial.user_attrs)
    before = trial_attrs.PBT_HISTORY.of(everyone[retried].user_attrs) or [] if retried is not None else []
    inherited = {(s["step"], s["from_trial"]) for s in before}
    return [
        (_root(trial.number, everyone), _root(s["from_trial"], everyone), s["step"])
        for s in history
        if s["from_trial"] is not None and (s["step"], s["from_trial"]) not in inherited
    ]


def _check_against_ray(everyone: dict, ray_root) -> int:
    """Every copy Ray's `pbt_global.txt` lists (target, source, step) is in the target member's
    history, and the histories hold no other: compared line by line (members named by their first
    attempt, since a retry in place keeps its Ray config). Returns how many copies Ray made."""
    last = max(max(t.intermediate_values, default=0) for t in everyone.values())
    ray = [c for experiment in experiments(ray_root) for c in ray_copies(experiment, INTERVAL, last)]
    ours = sorted(c for t in everyone.values() for c in _own_copies(t, everyone))
    matched = []
    for copy in ray:
        target, source = _root(copy.target, everyone), _root(copy.source, everyone)
        found = [c for c in ours if c[:2] == (target, source) and c[2] in copy.steps and c not in matched]
        assert found, (copy, ours)
        matched.append(found[0])
    assert sorted(matched) == ours, (ray, ours)
    return len(ray)


def _check_settings_shown(db: str, name: str) -> None:
    """What the study shows of each member that finished (its params, as the table, `best`, the
    export and the web view give them) is what its trainer recorded running: its run folder's
    config.yaml, the shape it copied included; Optuna's params are only `initial_params`."""
    store = StudyStore(db)
    try:
        records = store.snapshot(store.row(name)).trials
    finally:
        store.close()
    for record in records:
        if record.state != "COMPLETE":
            continue
        ran = yaml.safe_load((Path(trial_attrs.RUN_DIR.of(record.user_attrs)) / "config.yaml").read_text())
        shown = record.params_in_force
        assert shown == {k: pytest.approx(ran[k], rel=1e-9) for k in shown}, (record.number, shown)
        assert record.initial_params == record.params


def _kill_a_member_training_past_a_sync_point(db: str, before: dict, proc, log) -> None:
    """SIGKILL the process of a member of the resumed run between two perturbation steps, until an
    attempt fails: Ray retries it in place from its folder, and it must catch up with the others at
    their sync point (the population used to wait there forever)."""
    seen: list = []  # the members found training past a sync point, the first one to kill

    def training_past_a_sync_point() -> bool:
        # A member whose last evaluation is off the perturbation grid, and past what the stopped
        # attempt it retries had recorded, is training in this run (members pause only at
        # perturbation steps), so its recorded pid is its own live process.
        now = {t.number: t for t in trials(db, "pop")}
        seen[:] = [
            t
            for t in now.values()
            if t.state == TrialState.RUNNING
            and t.user_attrs.get("pid")
            and max(t.intermediate_values, default=0) > INTERVAL
            and max(t.intermediate_values) % INTERVAL
            and max(t.intermediate_values) > max(before[_root(t.number, now)].intermediate_values, default=0)
        ]
        return bool(seen)

    def killed() -> bool:
        return any(t.state == TrialState.FAIL and t.number not in before for t in trials(db, "pop"))

    for _attempt in range(5):  # the member may reach its next sync point as it is killed: try another
        wait_until(training_past_a_sync_point, proc, log, 300)
        os.kill(int(seen[0].user_attrs["pid"]), signal.SIGKILL)
        deadline = time.monotonic() + 20
        while not killed() and time.monotonic() < deadline:
            time.sleep(0.5)
        if killed():
            return


def _check_killed_attempts(everyone: dict, stopped: set[int]) -> None:
    """An attempt of the resumed run was killed, asked for a retry, and its retry went on in the
    same folder with its curve and history from step 0; nothing it trained is lost."""
    failed = [t for n, t in everyone.items() if n not in stopped and t.state == TrialState.FAIL]
    assert failed and all(t.user_attrs["needs_retry"] for t in failed)
    for attempt in failed:
        retry = next(t for t in everyone.values() if t.user_attrs.get("retry_of") == attempt.number)
        assert retry.user_attrs["run_dir"] == attempt.user_attrs["run_dir"]
        assert all(retry.intermediate_values[s] == v for s, v in attempt.intermediate_values.items())
        assert trial_attrs.PBT_HISTORY.of(retry.user_attrs)[0]["step"] == 0
