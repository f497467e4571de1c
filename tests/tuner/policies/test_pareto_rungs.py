"""Rung pruning over several objectives (`tuner.policies.pareto_rungs`): the pure rung decision on
plain values, and the Ray Tune scheduler fed results by hand."""

from __future__ import annotations

import numpy as np
import pytest
from ray.tune.schedulers import TrialScheduler

from tuner.policies.early_stopping import EarlyStopping
from tuner.policies.pareto_rungs import ParetoASHA, keep_at_rung, to_minimise

OBJECTIVES = [("val_loss", "minimize"), ("tokens_per_s", "maximize")]


class _Trial:
    def __init__(self, trial_id: str) -> None:
        self.trial_id = trial_id


def test_first_trial_and_front_trials_always_go_on() -> None:
    assert keep_at_rung([], [9.0, 9.0], 3)
    # Worse than everything in one objective but best in the other: on the front, kept.
    recorded = [[1.0, 5.0], [2.0, 4.0], [3.0, 3.0], [4.0, 2.0], [5.0, 1.5], [6.0, 1.2]]
    assert keep_at_rung(recorded, [9.0, 1.0], 3)


def test_a_dominated_trial_outside_the_top_third_is_pruned() -> None:
    recorded = [[1.0, 5.0], [2.0, 4.0], [3.0, 3.0], [4.0, 2.0], [5.0, 1.0]]
    assert not keep_at_rung(recorded, [4.5, 4.5], 3)  # 5 points on the front ahead of it, of 6
    # Dominated by one of two recorded: 1 of 3 ahead is not < 3/3, but is < 3/2.
    assert not keep_at_rung([[1.0, 1.0], [9.0, 9.0]], [2.0, 2.0], 3)
    assert keep_at_rung([[1.0, 1.0], [9.0, 9.0]], [2.0, 2.0], 2)


def test_a_dominated_trial_in_the_top_fraction_is_kept() -> None:
    """Dominated by one point only, with five worse: second of seven is in the best half, not in
    the best seventh."""
    recorded = [[1.0, 1.0]] + [[5.0 + i, 5.0 + i] for i in range(5)]
    assert keep_at_rung(recorded, [2.0, 2.0], 2)
    assert not keep_at_rung(recorded, [2.0, 2.0], 7)


def test_crowding_breaks_ties_within_a_front() -> None:
    """Behind one front point, rank 1 holds three points: its extremes (infinite crowding
    distance) come before its middle, so of four points the middle one has 3 ahead (not < 4/2)
    and an extreme 1 (< 2)."""
    assert not keep_at_rung([[0.0, 0.0], [1.0, 5.0], [5.0, 1.0]], [3.0, 3.0], 2)
    assert keep_at_rung([[0.0, 0.0], [1.0, 5.0], [3.0, 3.0]], [5.0, 1.0], 2)


def test_nan_ranks_last() -> None:
    recorded = [[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]]
    assert not keep_at_rung(recorded, [float("nan"), 5.0], 2)
    assert keep_at_rung(recorded, [float("nan"), 0.5], 2)  # still best in the other objective
    assert keep_at_rung([[float("nan"), 1.0], [float("inf"), 2.0]], [2.0, 2.0], 3)


def test_one_objective_agrees_with_rays_asha_outside_its_interpolation() -> None:
    """With one objective the rule keeps exactly the trials Ray's ASHA keeps (reward at least its
    (1 − 1/η) percentile of the recorded rewards), except when the new value falls between the two
    recorded values Ray interpolates."""
    rng = np.random.default_rng(0)
    for rf in (2, 3, 4):
        for n in range(1, 25):
            recorded = rng.random(n)
            new = float(rng.random())
            ray_keeps = -new >= np.nanpercentile(-recorded, (1 - 1 / rf) * 100)
            h = (n - 1) / rf
            below = int(np.sum(recorded < new))
            if below != int(h) + 1:
                assert keep_at_rung([[r] for r in recorded], [new], rf) == ray_keeps


def test_directions_flip_maximised_measures() -> None:
    assert to_minimise({"val_loss": 4.0, "tokens_per_s": 100.0}, OBJECTIVES) == [4.0, -100.0]
    assert to_minimise({"val_loss": 4.0}, OBJECTIVES) is None


def _feed(scheduler: ParetoASHA, trial_id: str, step: int, loss: float, speed: float) -> str:
    return scheduler.on_trial_result(
        None, _Trial(trial_id), {"step": step, "val_loss": loss, "tokens_per_s": speed}
    )


def test_scheduler_prunes_at_rungs_only_the_dominated_laggards() -> None:
    scheduler = ParetoASHA(OBJECTIVES, max_steps=90, grace_period=10, reduction_factor=3, seed=0)
    trials = [f"t{i}" for i in range(6)]
    for t in trials:
        scheduler.on_trial_add(None, _Trial(t))
    assert _feed(scheduler, "t0", 5, 9.0, 1.0) == TrialScheduler.CONTINUE  # before the first rung
    # Reaching the rung at 10: a front of trade-offs, then a trial all of them dominate.
    for i, (loss, speed) in enumerate([(1.0, 10.0), (2.0, 20.0), (3.0, 30.0), (4.0, 40.0), (5.0, 50.0)]):
        assert _feed(scheduler, trials[i], 10, loss, speed) == TrialScheduler.CONTINUE
    assert _feed(scheduler, "t5", 10, 6.0, 5.0) == TrialScheduler.STOP
    # Decided once per rung: later results before the next rung go on.
    assert _feed(scheduler, "t0", 20, 9.0, 1.0) == TrialScheduler.CONTINUE
    # At the next rung (30) the first arrival goes on, a second it dominates stops (1 of 2 ahead
    # is not < 2/3), and one that trades off goes on.
    assert _feed(scheduler, "t1", 30, 2.0, 20.0) == TrialScheduler.CONTINUE
    assert _feed(scheduler, "t2", 30, 3.0, 10.0) == TrialScheduler.STOP
    assert _feed(scheduler, "t3", 30, 4.0, 40.0) == TrialScheduler.CONTINUE
    assert "num_stopped=2" in scheduler.debug_string()


def test_scheduler_reads_rungs_from_the_policy_and_refuses_bad_input() -> None:
    scheduler = ParetoASHA.from_policy(OBJECTIVES, EarlyStopping(grace_steps=50, reduction_factor=3), 450, 25)
    assert [m for m, _ in scheduler._brackets[0].rungs] == [450, 150, 50]
    assert scheduler.set_search_properties("val_loss", "min")
    assert not scheduler.set_search_properties("accuracy", "max")
    with pytest.raises(ValueError, match="direction"):
        ParetoASHA([("val_loss", "min")], max_steps=10, grace_period=1)  # type: ignore[list-item]
    with pytest.raises(ValueError, match="grace_period"):
        ParetoASHA(OBJECTIVES, max_steps=10, grace_period=20)


def test_scheduler_ignores_results_without_every_objective() -> None:
    scheduler = ParetoASHA(OBJECTIVES, max_steps=90, grace_period=10, seed=0)
    scheduler.on_trial_add(None, _Trial("a"))
    assert (
        scheduler.on_trial_result(None, _Trial("a"), {"step": 10, "val_loss": 1.0}) == TrialScheduler.CONTINUE
    )
    assert all(not recorded for _, recorded in scheduler._brackets[0].rungs)


def test_scheduler_state_survives_save_and_restore(tmp_path) -> None:
    scheduler = ParetoASHA(OBJECTIVES, max_steps=90, grace_period=10, seed=0)
    scheduler.on_trial_add(None, _Trial("a"))
    _feed(scheduler, "a", 10, 1.0, 10.0)
    scheduler.save(str(tmp_path / "s.pkl"))
    restored = ParetoASHA(OBJECTIVES, max_steps=90, grace_period=10, seed=1)
    restored.restore(str(tmp_path / "s.pkl"))
    restored.on_trial_add(None, _Trial("b"))
    assert _feed(restored, "b", 10, 2.0, 5.0) == TrialScheduler.STOP  # "a" was recorded at the rung
