"""The trial lifecycle's rules at unit speed, with plain messages and no Ray: `decide` for every
branch (complete, pruned at a rung, stopped at the last evaluation, error, interrupted, NaN,
dynamic evaluation), the dict boundary, and the searcher applying outcomes to a real Optuna study
(SQLite) with and without its lease, as Ray Tune tests its searchers with plain dicts."""

from __future__ import annotations

import json
import math
from pathlib import Path

import httpx
import optuna
import pytest
from hypothesis import given
from hypothesis import strategies as st
from optuna.trial import TrialState

from tests.conftest import TINY_SETTINGS
from tests.tuner.api.fixtures import live_server
from tests.tuner.sweeps.searcher_study import Fence, make_searcher
from tuner.api import ApiSettings
from tuner.space import SearchSpace
from tuner.sweeps.drive.searcher import StudySearcher
from tuner.sweeps.trial.lifecycle import FINAL, Evaluation, Outcome, TrialEnd, Verdict, decide

MAX = 100


def verdict(end: TrialEnd, curve=None, last_step=0, stop_reason=None, dyneval=False) -> Outcome:
    return decide(
        end,
        curve=curve or {},
        last_step=last_step,
        max_steps=MAX,
        stop_reason=stop_reason,
        dyneval_space=dyneval,
    )


def summary(**fields) -> dict:
    return {FINAL: True, "step": MAX, **fields}


def test_a_summary_completes_with_its_best_and_stores_its_fields():
    end = TrialEnd.from_result(
        summary(best_val_loss=4.2, best_step=80, test_loss=4.3, best_checkpoint="/r/best.pt", val_loss=9.0)
    )
    outcome = verdict(end, curve={50: 4.5}, last_step=MAX)
    assert outcome == Outcome(
        Verdict.COMPLETE, value=4.2, attrs={"best_step": 80, "test_loss": 4.3, "checkpoint": "/r/best.pt"}
    )


def test_a_summary_with_an_error_fails_with_it_and_is_not_retried():
    outcome = verdict(TrialEnd.from_result(summary(error="TrainingDiverged: 10 restores", best_val_loss=4.0)))
    assert outcome == Outcome(Verdict.FAIL, error="TrainingDiverged: 10 restores")


DIVERGED = "TrainingDiverged: training diverged at step 60"


def test_a_divergence_fails_with_its_step_under_rnntune_s_procedure():
    end = TrialEnd.from_result(summary(error=DIVERGED, diverged_at=60))
    outcome = verdict(end, curve={20: 4.5, 40: 4.1})
    assert outcome == Outcome(Verdict.FAIL, error=DIVERGED, attrs={"diverged_at": 60})


def test_the_papers_procedure_keeps_a_diverged_trial_at_its_best_value():
    end = TrialEnd.from_result(summary(error=DIVERGED, diverged_at=60))
    curve = {20: 4.5, 40: 4.1, 50: 4.3}
    outcome = decide(
        end,
        curve=curve,
        last_step=50,
        max_steps=MAX,
        stop_reason=None,
        dyneval_space=False,
        keep_diverged=True,
    )
    assert outcome == Outcome(Verdict.COMPLETE, value=4.1, attrs={"diverged_at": 60, "best_step": 40})


def test_a_trial_that_diverged_before_any_evaluation_fails_under_either_procedure():
    end = TrialEnd.from_result(summary(error=DIVERGED, diverged_at=3))
    for keep in (False, True):
        outcome = decide(
            end,
            curve={},
            last_step=0,
            max_steps=MAX,
            stop_reason=None,
            dyneval_space=False,
            keep_diverged=keep,
        )
        assert outcome == Outcome(Verdict.FAIL, error=DIVERGED, attrs={"diverged_at": 3})


def test_the_papers_procedure_keeps_only_divergences_other_errors_fail():
    end = TrialEnd.from_result(summary(error="DataError: no such file"))
    outcome = decide(
        end,
        curve={20: 4.5},
        last_step=20,
        max_steps=MAX,
        stop_reason=None,
        dyneval_space=False,
        keep_diverged=True,
    )
    assert outcome == Outcome(Verdict.FAIL, error="DataError: no such file")


@pytest.mark.parametrize("best", [None, math.nan, math.inf])
def test_a_summary_without_a_finite_loss_fails(best):
    outcome = verdict(TrialEnd.from_result(summary(best_val_loss=best, best_step=3)))
    assert outcome.verdict is Verdict.FAIL and not outcome.needs_retry
    assert outcome.error == f"no finite validation loss (best {best})" and outcome.attrs == {"best_step": 3}


def test_a_dynamic_evaluation_space_completes_with_what_dynamic_evaluation_achieved():
    end = TrialEnd.from_result(summary(best_val_loss=4.2, dyneval_val_loss=3.9))
    assert verdict(end, dyneval=True).value == 3.9
    assert verdict(end, dyneval=False).value == 4.2  # elsewhere it is a figure beside the value
    assert verdict(end).attrs == {"dyneval_val_loss": 3.9}


def test_stopped_by_the_scheduler_before_its_last_evaluation_is_pruned():
    assert verdict(
        TrialEnd.from_result({"step": 50, "val_loss": 4.8}), curve={50: 4.8}, last_step=50
    ) == Outcome(Verdict.PRUNED)
    assert verdict(TrialEnd.from_result(None), last_step=0) == Outcome(Verdict.PRUNED)


def test_stopped_at_its_last_evaluation_it_trained_to_the_end():
    outcome = verdict(TrialEnd(), curve={50: 4.8, 100: 4.6}, last_step=MAX)
    assert outcome == Outcome(Verdict.COMPLETE, value=4.6)
    assert verdict(TrialEnd(), curve={}, last_step=MAX).verdict is Verdict.FAIL  # nothing to complete with


def test_a_trial_cut_off_by_a_stopping_sweep_fails_to_be_retried():
    outcome = verdict(TrialEnd(), curve={50: 4.8}, last_step=MAX, stop_reason="stop requested")
    assert outcome == Outcome(Verdict.FAIL, error="interrupted: stop requested", needs_retry=True)
    # A trial that returned its summary finished: the stop does not undo it.
    assert (
        verdict(TrialEnd.from_result(summary(best_val_loss=4.0)), stop_reason="x").verdict is Verdict.COMPLETE
    )


@given(
    final=st.booleans(),
    best=st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True)),
    curve=st.dictionaries(st.integers(1, MAX), st.floats(allow_nan=False, allow_infinity=False), max_size=4),
    last_step=st.integers(0, 2 * MAX),
    stop=st.one_of(st.none(), st.just("stop requested")),
)
def test_every_outcome_is_one_the_study_can_store(final, best, curve, last_step, stop):
    end = TrialEnd.from_result(summary(best_val_loss=best) if final else {"step": last_step})
    outcome = verdict(end, curve=curve, last_step=last_step, stop_reason=stop)
    if outcome.verdict is Verdict.COMPLETE:
        assert outcome.value is not None and math.isfinite(outcome.value)
    else:
        assert outcome.value is None
    assert (outcome.verdict is Verdict.FAIL) == (outcome.error is not None)
    assert outcome.needs_retry == (not final and stop is not None)


def test_the_dict_boundary():
    evaluation = Evaluation.from_result(
        {"step": 25, "val_loss": 4.5, "node_ip": "10.0.0.2", "pid": 7, "device": "cuda:0", "gpu_ids": ["1"],
         "cuda_path_used": "graphs", "tokens_per_s": 100.0}
    )  # fmt: skip
    assert evaluation == Evaluation(
        25,
        4.5,
        {"node": "10.0.0.2", "pid": 7, "device": "cuda:0", "gpu_ids": ["1"], "cuda_path_used": "graphs"},
    )
    # Ray Tune flattens a reported dict (tune_controller's flatten_dict): the counts are gathered back.
    flat = {"step": 5, "val_loss": 4.6, "cuda_path_calls/graphs": 40, "cuda_path_calls/eager": 2}
    assert Evaluation.from_result(flat).attrs == {"cuda_path_calls": {"graphs": 40, "eager": 2}}
    nested = {"step": 5, "val_loss": 4.6, "cuda_path_calls": {"cpu": 3}}
    assert Evaluation.from_result(nested).attrs == {"cuda_path_calls": {"cpu": 3}}
    assert Evaluation.from_result(summary(val_loss=4.4)).value is None  # a summary adds no point to the curve
    assert TrialEnd.from_result({"step": 3, "val_loss": 5.0}) == TrialEnd()


# --- the searcher applying outcomes to a real study, without Ray


@pytest.fixture
def searcher(tmp_path: Path):
    fence = Fence()
    made, db = make_searcher(tmp_path, "life", 4, fence=fence)
    made.fence_for_test = fence  # type: ignore[attr-defined]
    yield made, lambda: optuna.load_study(study_name="life", storage=db).trials


def test_the_searcher_stores_each_verdict(searcher):
    s, trials = searcher
    max_steps = TINY_SETTINGS["max_steps"]
    for k in range(4):
        assert s.suggest(f"ray-{k}")["trial_number"] == k
    s.on_trial_result("ray-0", {"step": 10, "val_loss": 5.0, "node_ip": "127.0.0.1", "cuda_path_used": "cpu"})
    s.on_trial_complete("ray-0", summary(step=max_steps, best_val_loss=4.5, best_step=10))
    s.on_trial_result("ray-1", {"step": 10, "val_loss": 5.5})
    s.on_trial_complete("ray-1", {"step": 10, "val_loss": 5.5})  # stopped by the scheduler
    s.on_trial_complete("ray-2", summary(error="TrainingDiverged: no"))
    s.stop_reason = "stop requested"
    s.on_trial_complete("ray-3", {"step": 10, "val_loss": 5.1})
    by_number = {t.number: t for t in trials()}
    assert [by_number[k].state for k in range(4)] == [
        TrialState.COMPLETE,
        TrialState.PRUNED,
        TrialState.FAIL,
        TrialState.FAIL,
    ]
    assert by_number[0].value == 4.5 and by_number[0].intermediate_values == {10: 5.0}
    assert by_number[0].user_attrs["cuda_path_used"] == "cpu" and by_number[0].user_attrs["best_step"] == 10
    assert by_number[1].intermediate_values == {10: 5.5}
    assert (
        by_number[2].user_attrs["error"] == "TrainingDiverged: no"
        and "needs_retry" not in by_number[2].user_attrs
    )
    assert by_number[3].user_attrs["needs_retry"] is True
    assert (s.tally.complete, s.tally.pruned, s.tally.failed) == (1, 1, 1)


def test_nothing_is_told_once_the_lease_is_lost(searcher):
    s, trials = searcher
    s.suggest("ray-0")
    s.fence_for_test.holds = False
    s.on_trial_complete("ray-0", summary(best_val_loss=4.5))
    assert trials()[0].state == TrialState.RUNNING  # left for the next driver
    assert s.suggest("ray-1") == "FINISHED"  # nor is a trial asked ahead started
    assert s.interrupt_all("lease lost") == [] and {t.state for t in trials()} == {TrialState.RUNNING}


def test_a_retry_resumes_only_a_run_folder_inside_the_study_storage(tmp_path, searcher):
    s, trials = searcher
    s.suggest("ray-0")
    s.suggest("ray-1")
    s.on_trial_result("ray-0", {"step": 10, "val_loss": 5.0})
    s.on_trial_result("ray-1", {"step": 10, "val_loss": 5.2})
    s._live["ray-1"].trial.set_user_attr("run_dir", "/etc")  # a database that points elsewhere
    s.interrupt_all("stop requested")  # both FAIL, to be retried
    study = s._study
    resumed = StudySearcher(study, SearchSpace.from_dict(study.user_attrs["space_def"]), tmp_path, 6)
    first, second = resumed.suggest("ray-2"), resumed.suggest("ray-3")
    assert first["trainer"]["run_dir"] == str((tmp_path / "trial-0").resolve())  # its attempt's folder
    assert second["trainer"]["run_dir"] == str(tmp_path / f"trial-{second['trial_number']}")  # not /etc
    retried = {t.number: t for t in trials()}
    assert retried[first["trial_number"]].intermediate_values == {10: 5.0}  # the attempt's curve
    assert retried[second["trial_number"]].intermediate_values == {}  # a fresh start
    resumed.interrupt_all("done")


def _strict_json(text: str):
    """JSON as RFC 8259 has it: NaN and Infinity are not numbers (Python's json accepts them)."""

    def refuse(constant: str):
        raise AssertionError(f"{constant} in a JSON answer")

    return json.loads(text, parse_constant=refuse)


def test_a_nan_evaluation_never_reaches_the_curve_and_the_api_reads_the_failed_trial(tmp_path, searcher):
    """The NaN drill's rules without Ray: a trial that reports a NaN evaluation and ends with a NaN
    loss FAILs with the reason, its curve stays empty, the sweep's other trials are untouched, and
    the API answers the study and the trial in strict JSON."""
    s, trials = searcher
    for k in range(3):
        s.suggest(f"ray-{k}")
    max_steps = TINY_SETTINGS["max_steps"]
    for k in (0, 2):
        s.on_trial_result(f"ray-{k}", {"step": 10, "val_loss": 5.0 - k})
        s.on_trial_complete(f"ray-{k}", summary(step=max_steps, best_val_loss=4.5 - k, best_step=10))
    s.on_trial_result("ray-1", {"step": 10, "val_loss": math.nan})
    s.on_trial_complete("ray-1", {"step": 10, "val_loss": math.nan, FINAL: True, "best_val_loss": math.nan})
    poisoned = trials()[1]
    assert poisoned.state == TrialState.FAIL
    assert poisoned.user_attrs["error"] == "no finite validation loss (best nan)"
    assert poisoned.intermediate_values == {}  # the NaN never reached the curve
    assert [t.state for t in trials()[:3]] == [TrialState.COMPLETE, TrialState.FAIL, TrialState.COMPLETE]
    db = f"sqlite:///{tmp_path / 's.db'}"
    with live_server(ApiSettings(db_url=db, storage_root=tmp_path)) as url:
        study = _strict_json(httpx.get(f"{url}/studies/life").text)
        assert study["counts"]["FAIL"] == 1 and study["counts"]["COMPLETE"] == 2
        trial = _strict_json(httpx.get(f"{url}/studies/life/trials/1").text)
        assert trial["value"] is None and trial["error"] == "no finite validation loss (best nan)"
