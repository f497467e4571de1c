"""One early-stopping policy: stored with the study, read by the ASHA scheduler and the sampler,
set from the CLI and the REST body, bad values named with their range."""

from __future__ import annotations

import math

import httpx
import numpy as np
import optuna
import pytest
from optuna.distributions import FloatDistribution
from optuna.trial import TrialState
from ray.tune.schedulers import TrialScheduler

from tests.tuner.api.fixtures import live_server, make_study
from tuner.api import ApiSettings
from tuner.cli import main
from tuner.policies.early_stopping import (
    AUTO_BRACKETS,
    AUTO_BRACKETS_FROM,
    MIN_COMPLETE,
    EarlyStopping,
    EarlyStoppingError,
    study_policy,
)
from tuner.policies.schedulers import make_scheduler
from tuner.samplers import BOHBRule
from tuner.samplers.bohb_rule import budgets
from tuner.samplers.warping import HalfRank
from tuner.spec import SweepSpec
from tuner.storage import study_attrs
from tuner.storage.study import StudyError
from tuner.sweeps.study.create import create_study

TASK = {"max_steps": 200, "eval_every": 25}


class _Trial:
    def __init__(self, trial_id: str) -> None:
        self.trial_id = trial_id


def first_stops(policy: EarlyStopping, n_bad: int = 30) -> list[int]:
    """For each of `n_bad` poor trials among 40 good ones, the step where Ray's scheduler built from
    `policy` stops it (-1: never); bracket draws seeded (Ray draws them from numpy's global RNG)."""
    np.random.seed(0)
    scheduler = make_scheduler("asha", TASK, policy)
    scheduler.set_search_properties("val_loss", "min")
    good = [_Trial(f"g{i}") for i in range(40)]
    bad = [_Trial(f"b{i}") for i in range(n_bad)]
    for t in [*good, *bad]:
        scheduler.on_trial_add(None, t)
    stops = {t.trial_id: -1 for t in bad}
    for step in range(25, 201, 25):
        for i, t in enumerate(good):
            scheduler.on_trial_result(None, t, {"step": step, "val_loss": 1.0 + 0.01 * i})
        for t in bad:
            if stops[t.trial_id] == -1:
                decision = scheduler.on_trial_result(None, t, {"step": step, "val_loss": 9.0})
                if decision == TrialScheduler.STOP:
                    stops[t.trial_id] = step
    return list(stops.values())


def first_stop(policy: EarlyStopping) -> int:
    """The step at which Ray's ASHA built from `policy` first stops one trial worse than the others."""
    return first_stops(policy, n_bad=1)[0]


def test_brackets_judge_some_trials_later() -> None:
    """Asynchronous Hyperband: with 3 brackets (grace 50, η 3, 200 steps) a poor trial is stopped at
    50, at 150 or never, by its bracket; with 1 (plain ASHA) always at 50. The rungs the sampler
    reads are bracket 0's either way."""
    plain, hedged = EarlyStopping(), EarlyStopping(brackets=3)
    assert set(first_stops(plain)) == {50}
    stops = first_stops(hedged)
    assert stops.count(50) > stops.count(150) > 0 and -1 in stops
    assert hedged.rungs(200, 25) == plain.rungs(200, 25) == [50, 150]
    assert "3 brackets (asynchronous Hyperband)" in hedged.describe(200, 25)
    assert "brackets" not in plain.describe(200, 25)


# Trials of `tiny` (grace 50, η 3, 200 steps) expected to train AUTO_BRACKETS_FROM full trials'
# worth under AUTO_BRACKETS brackets: where the default turns to asynchronous Hyperband.
HEDGED_FROM = math.ceil(AUTO_BRACKETS_FROM / EarlyStopping(brackets=AUTO_BRACKETS).expected_length(200, 25))


@pytest.mark.parametrize(
    "n_trials, study_stop, given, brackets",
    [
        (24, {"budget": 10.0}, None, 1),  # the embedded default
        (10, {}, None, 1),  # rnntune up, docker compose up
        (HEDGED_FROM - 1, {}, None, 1),
        (HEDGED_FROM, {}, None, AUTO_BRACKETS),
        (1000, {"budget": AUTO_BRACKETS_FROM - 0.5}, None, 1),  # the step budget binds first
        (1000, {"budget": float(AUTO_BRACKETS_FROM)}, None, AUTO_BRACKETS),
        (1000, {}, 1, 1),  # a given number is kept
        (10, {}, 2, 2),
    ],
)
def test_default_brackets_follow_what_the_sweep_may_train(
    n_trials: int, study_stop: dict, given: int | None, brackets: int, tmp_path
) -> None:
    """Brackets by default: plain ASHA for small sweeps, asynchronous Hyperband for large ones, by
    the step budget or the trials' expected length; stored resolved, so the scheduler and a
    resumed sweep read the number the study was created with."""
    study = create_study(
        "b",
        storage_url=f"sqlite:///{tmp_path / 'db.sqlite'}",
        space="tiny",
        n_trials=n_trials,
        **study_stop,
        **({} if given is None else {"brackets": given}),
    )
    assert SweepSpec.of(study.user_attrs).brackets == brackets
    assert study_policy(study.user_attrs).brackets == brackets
    stored = study_policy(study.user_attrs)
    hedged = set(first_stops(stored)) != {stored.rungs(200, 25)[0]}  # a small study's rung is later
    assert hedged == (brackets > 1)


@pytest.mark.parametrize("brackets", [1, 2, 3])
def test_expected_length_is_what_rays_scheduler_trains(brackets: int) -> None:
    """Trials whose values rank them at random train, under Ray's own scheduler, the share of
    max_steps that `expected_length` computes (its bracket draw and 1/η per rung)."""
    policy = EarlyStopping(brackets=brackets)
    np.random.seed(0)
    rng = np.random.default_rng(1)
    scheduler = make_scheduler("asha", TASK, policy)
    scheduler.set_search_properties("val_loss", "min")
    lengths = []
    for i in range(600):
        trial = _Trial(str(i))
        scheduler.on_trial_add(None, trial)
        for step in range(25, 201, 25):
            result = {"step": step, "val_loss": float(rng.random())}
            if step == 200:
                scheduler.on_trial_complete(None, trial, result)
            elif scheduler.on_trial_result(None, trial, result) == TrialScheduler.STOP:
                break
        lengths.append(step / 200)
    assert abs(np.mean(lengths) - policy.expected_length(200, 25)) < 0.03
    assert [round(EarlyStopping(brackets=b).expected_length(200, 25), 3) for b in (1, 3)] == [0.444, 0.59]


def test_policy_stored_before_brackets_reads_as_plain_asha() -> None:
    stored = {"grace_steps": 50, "reduction_factor": 3}  # what studies stored before the field
    policy = study_policy({study_attrs.EARLY_STOPPING: stored})
    assert policy.resolved(200, 25).brackets == 1
    assert set(first_stops(policy)) == {50}
    assert "brackets" not in policy.describe(200, 25)


def test_rungs_on_the_eval_grid() -> None:
    assert EarlyStopping().resolved(200, 25).grace_steps == 50
    assert EarlyStopping().rungs(200, 25) == [50, 150]
    assert EarlyStopping(grace_steps=60, reduction_factor=2).rungs(200, 25) == [75, 150]
    assert EarlyStopping(grace_steps=25, reduction_factor=3).rungs(200, 25) == [25, 75]


@pytest.mark.parametrize(
    "policy",
    [
        EarlyStopping(),
        EarlyStopping(grace_steps=100, reduction_factor=2),
        EarlyStopping(grace_steps=25, reduction_factor=4),
    ],
)
def test_scheduler_and_sampler_read_the_same_rungs(policy: EarlyStopping, tmp_path) -> None:
    """The scheduler stops at the stored policy's first rung, and the sampler's BOHB-rule fidelity
    part (`tuner.samplers.bohb_rule`, which the default's fidelity GP starts with) fits the values at
    the stored rungs of a study `create_study` made: a trial with values only off them is unused."""
    study = create_study(
        "p",
        storage_url=f"sqlite:///{tmp_path / 'db.sqlite'}",
        space="tiny",
        n_trials=30,
        **policy.model_dump(),
    )
    stored = study_policy(study.user_attrs)
    rungs = stored.rungs(TASK["max_steps"], TASK["eval_every"])
    assert first_stop(stored) == rungs[0]
    space = {"x": FloatDistribution(0, 1)}
    rng = np.random.default_rng(0)
    for _ in range(4):
        x = float(rng.random())
        study.add_trial(
            optuna.create_trial(
                params={"x": x},
                distributions=space,
                state=TrialState.PRUNED,
                intermediate_values={rungs[0]: x, rungs[0] + 5: x + 1},
            )
        )
    trials = study.get_trials(deepcopy=False)
    assert budgets(study, trials) == set(rungs)
    seen = BOHBRule().observations(study, trials, 1.0, HalfRank(), enough=3)
    assert len(seen.trials) == 4
    assert sorted(seen.minimised) == sorted(HalfRank()(np.array([t.params["x"] for t in trials])))
    spec = {**study.user_attrs["spec"], "grace_steps": rungs[0] + 25, "reduction_factor": 2}
    study.set_user_attr("spec", spec)  # rungs elsewhere: these trials reported at none of them
    assert rungs[0] not in budgets(study, trials)
    assert len(BOHBRule().observations(study, trials, 1.0, HalfRank(), enough=3).trials) == 0


@pytest.mark.parametrize("n_trials, grace", [(4, 200), (8, 150), (12, 150), (16, 50), (24, 50), (500, 50)])
def test_small_studies_expect_enough_complete_trials(n_trials: int, grace: int) -> None:
    """A small study moves its first rung later (or compares never: grace = max_steps) until it
    expects MIN_COMPLETE trials to finish; larger ones keep the default grace period."""
    resolved = EarlyStopping().resolved(200, 25, n_trials)
    assert resolved.grace_steps == grace
    assert resolved.reduction_factor == 3
    assert resolved.expected_complete(n_trials, 200, 25) >= MIN_COMPLETE
    if grace > 50:  # the default would not have expected enough
        assert EarlyStopping().resolved(200, 25).expected_complete(n_trials, 200, 25) < MIN_COMPLETE
    assert EarlyStopping().resolved(200, 25, None, 10.0).grace_steps == 50  # unknown trials: as before


def test_small_study_rule_keeps_what_the_user_set(tmp_path) -> None:
    """A given grace period is kept; a given reduction factor is kept and the rule works with it; a
    given number of brackets turns the rule off; the stored spec carries what was resolved."""
    assert EarlyStopping(grace_steps=50).resolved(200, 25, 8).grace_steps == 50
    gentle = EarlyStopping(reduction_factor=2).resolved(200, 25, 8)
    assert (gentle.reduction_factor, gentle.grace_steps) == (2, 100)  # rungs 50, 100 expect 2.75
    assert EarlyStopping(brackets=2).resolved(200, 25, 8).grace_steps == 50
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    small = create_study("s", storage_url=url, space="tiny", n_trials=8)
    given = create_study("g", storage_url=url, space="tiny", n_trials=8, grace_steps=50)
    assert SweepSpec.of(small.user_attrs).grace_steps == 150
    assert SweepSpec.of(given.user_attrs).grace_steps == 50
    assert first_stop(study_policy(small.user_attrs)) == 150


@pytest.mark.parametrize("eta", [2, 3, 4])
@pytest.mark.parametrize("grace", [25, 50, 100])
def test_expected_complete_is_at_least_the_bound_the_small_study_rule_skips_it_with(
    eta: int, grace: int
) -> None:
    """Every arrival at a rung passes with probability at least 1/η, so at least n/η^rungs of n
    trials finish on average: the bound that spares large studies the exact count (whose cost grows
    with the square of the trials); above it the rule keeps the default grace."""
    policy = EarlyStopping(grace_steps=grace, reduction_factor=eta)
    rungs = len(policy.rungs(200, 25))
    for n_trials in (1, 2, 5, 13, 40, 120):
        assert policy.expected_complete(n_trials, 200, 25) >= n_trials / eta**rungs - 1e-9
    assert EarlyStopping(reduction_factor=eta).resolved(200, 25, 100_000).grace_steps == 50


@pytest.mark.parametrize("n_trials, policy", [(8, EarlyStopping()), (12, EarlyStopping(reduction_factor=2))])
def test_expected_complete_is_what_rays_scheduler_finishes(n_trials: int, policy: EarlyStopping) -> None:
    """Studies of trials with random values finish, under Ray's own ASHA, as many trials as
    `expected_complete` computes on average (its quantile rule, the first at a rung passing)."""
    rng = np.random.default_rng(2)
    finished = []
    for _ in range(300):
        scheduler = make_scheduler("asha", TASK, policy)
        scheduler.set_search_properties("val_loss", "min")
        done = 0
        for i in range(n_trials):
            trial = _Trial(str(i))
            scheduler.on_trial_add(None, trial)
            for step in range(25, 201, 25):
                result = {"step": step, "val_loss": float(rng.random())}
                if step == 200:
                    done += 1
                elif scheduler.on_trial_result(None, trial, result) == TrialScheduler.STOP:
                    break
        finished.append(done)
    assert abs(np.mean(finished) - policy.expected_complete(n_trials, 200, 25)) < 0.2


@pytest.mark.parametrize(
    "raw, needle",
    [
        (
            {"grace_steps": 0},
            "grace_steps: Input should be greater than or equal to 1 (allowed: an integer >= 1",
        ),
        (
            {"reduction_factor": 1},
            "reduction_factor: Input should be greater than or equal to 2 (allowed: an integer from 2 to 16)",
        ),
        ({"reduction_factor": 40}, "reduction_factor: Input should be less than or equal to 16"),
        (
            {"grace": 5},
            "grace: Extra inputs are not permitted (allowed: no such field; allowed: grace_steps, reduction_factor, brackets)",
        ),
        (
            {"brackets": 0},
            "brackets: Input should be greater than or equal to 1 (allowed: an integer from 1 to 8)",
        ),
    ],
)
def test_bad_values_name_field_and_range(raw: dict, needle: str, tmp_path) -> None:
    with pytest.raises(EarlyStoppingError) as err:
        EarlyStopping.parse(raw)
    assert needle in str(err.value)
    with pytest.raises(StudyError, match=f"{next(iter(raw))}: "):
        create_study(
            "bad",
            storage_url=f"sqlite:///{tmp_path / 'db.sqlite'}",
            space="tiny",
            n_trials=3,
            **raw,
        )


def test_grace_beyond_max_steps_is_refused(tmp_path) -> None:
    with pytest.raises(StudyError, match=r"grace_steps must be between 1 and max_steps \(200\), not 500"):
        create_study(
            "bad",
            storage_url=f"sqlite:///{tmp_path / 'db.sqlite'}",
            space="tiny",
            n_trials=3,
            grace_steps=500,
        )


def test_cli_flags_are_checked_before_the_study_exists(tmp_path, capsys) -> None:
    db = f"sqlite:///{tmp_path / 'db.sqlite'}"
    assert main(["sweep", "--db", db, "--name", "x", "--grace-steps", "0"]) == 2
    assert "grace_steps: Input should be greater than or equal to 1" in capsys.readouterr().err
    assert main(["sweep", "--db", db, "--name", "x", "--reduction-factor", "1"]) == 2
    assert "reduction_factor" in capsys.readouterr().err
    assert main(["sweep", "--resume", "x", "--db", db, "--grace-steps", "50"]) == 2
    assert "no study named 'x'" in capsys.readouterr().err  # nothing was created above
    assert main(["sweep", "--db", db, "--name", "x", "--brackets", "9"]) == 2
    assert "brackets: Input should be less than or equal to 8" in capsys.readouterr().err
    create_study("x", storage_url=db, space="tiny", n_trials=1, storage_path=tmp_path / "x")
    assert main(["sweep", "--resume", "x", "--db", db, "--brackets", "2"]) == 2
    assert "--brackets: cannot change when resuming" in capsys.readouterr().err


def test_rest_body_round_trips_and_names_bad_fields(tmp_path) -> None:
    db_url = f"sqlite:///{tmp_path / 's.db'}"
    make_study(db_url, "fixed", tmp_path / "storage" / "fixed")
    settings = ApiSettings(db_url=db_url, storage_root=tmp_path / "storage")
    body = {
        "name": "es",
        "space": "tiny",
        "n_trials": 3,
        "grace_steps": 60,
        "reduction_factor": 2,
        "brackets": 2,
    }
    with live_server(settings) as url:
        created = httpx.post(f"{url}/studies", json=body)
        assert created.status_code == 201, created.text
        stored = SweepSpec.of(created.json()["user_attrs"])
        assert (stored.grace_steps, stored.reduction_factor, stored.brackets) == (75, 2, 2)
        no_brackets = httpx.post(f"{url}/studies", json={**body, "name": "es1", "brackets": 0})
        assert no_brackets.status_code == 422
        assert "brackets" in no_brackets.json()["detail"] and "1" in no_brackets.json()["detail"]
        bad = httpx.post(f"{url}/studies", json={**body, "name": "es2", "reduction_factor": 1})
        assert bad.status_code == 422
        assert "reduction_factor" in bad.json()["detail"] and "2" in bad.json()["detail"]
        far = httpx.post(f"{url}/studies", json={**body, "name": "es3", "grace_steps": 900})
        assert far.status_code == 422
        assert "grace_steps must be between 1 and max_steps (200)" in far.json()["detail"]


def test_coarse_eval_grid_clamps_the_grace_period() -> None:
    """eval_every above max_steps (an inline space's default grid): no rung, no error."""
    assert EarlyStopping().resolved(30, 100).grace_steps == 30
    assert EarlyStopping(grace_steps=20).rungs(30, 100) == []
