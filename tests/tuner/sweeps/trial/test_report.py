"""A trial's report coming back across Ray (`TrialReport`), declared once from `trainer.TrainResult`:
plain-value round trips, and every result field either reaching the study or listed as not."""

from dataclasses import fields

from trainer import TrainResult
from tuner.storage import trial_attrs
from tuner.sweeps.trial.lifecycle import (
    FINAL,
    NOT_REPORTED,
    REPORTED,
    SEGMENT,
    STORED_OTHERWISE,
    SUMMARY_ATTRS,
    TrialEnd,
    TrialReport,
)

RESULT = TrainResult(
    best_val_loss=4.5,
    best_step=300,
    run_dir="/runs/t1",
    best_checkpoint="/runs/t1/best.pt",
    stopped="max_steps",
    steps=400,
    test_loss=4.6,
    dyneval_val_loss=4.2,
    dyneval_test_loss=4.3,
    mc_test_loss=4.55,
    mc_temperature=1.1,
    mc_dropout_scale=0.9,
    cuda_path_used="cpu",
)


def test_every_result_field_is_reported_or_listed_as_not_with_a_reason() -> None:
    names = [f.name for f in fields(TrainResult)]
    assert set(REPORTED) | set(NOT_REPORTED) == set(names)
    assert not set(REPORTED) & set(NOT_REPORTED)
    assert all(NOT_REPORTED.values())


def test_every_reported_field_reaches_the_study_attrs_or_is_stored_otherwise() -> None:
    declared = {a.key for a in trial_attrs.ALL}
    for name in REPORTED:
        assert (name in SUMMARY_ATTRS) != (name in STORED_OTHERWISE), name
    assert set(SUMMARY_ATTRS) <= declared
    assert set(REPORTED) - set(STORED_OTHERWISE) == set(SUMMARY_ATTRS)


def test_a_report_round_trips_as_the_dict_ray_tune_carries() -> None:
    report = TrialReport.of(RESULT, segment='{"step": 0}', last={"step": 400, "val_loss": 4.7})
    sent = report.to_result()
    assert sent[FINAL] is True and sent[SEGMENT] == '{"step": 0}' and sent["step"] == 400
    assert TrialReport.from_result(sent) == report
    assert TrialReport.from_result(TrialReport.of(RESULT).to_result()) == TrialReport.of(RESULT)


def test_the_trial_end_reads_the_summary_from_the_report() -> None:
    end = TrialEnd.from_result(TrialReport.of(RESULT).to_result())
    assert end.final and end.best_val_loss == 4.5 and end.checkpoint == "/runs/t1/best.pt"
    assert end.summary == {name: getattr(RESULT, name) for name in SUMMARY_ATTRS}
    for key, value in end.summary.items():
        trial_attrs.checked(key, value)
