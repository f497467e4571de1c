"""The trainable's reading of the trainer's failures, run for real on the trainer (no Ray needed:
a trial that fails before its first evaluation reports nothing to Tune)."""

from __future__ import annotations

import pytest

import trainer
from tests.conftest import TINY_SETTINGS
from trainer import TrainingDiverged, TrainingInfeasible
from tuner.sweeps.trial.lifecycle import FINAL
from tuner.sweeps.trial.trainable import run_trial


@pytest.mark.parametrize(
    ("error", "kept_at"),
    [(TrainingDiverged("loss exploded", step=40), 40), (TrainingInfeasible("NaN gradient", step=40), None)],
)
def test_only_a_divergence_of_rnntune_s_rule_is_kept_with_its_step(monkeypatch, tmp_path, error, kept_at):
    """`divergence: lamb`'s NaN is infeasible with no value (lamb/main.py `report_done(infeasible=
    True)`): no `diverged_at`, so `procedure: paper` cannot keep it at its best loss."""

    def fails(config, report):
        raise error

    monkeypatch.setattr(trainer, "train", fails)
    settings = {**TINY_SETTINGS, "device": "cpu", "run_dir": str(tmp_path / "run")}
    result = run_trial({"trainer": settings})
    assert result[FINAL] is True and type(error).__name__ in result["error"]
    assert result.get("diverged_at") == kept_at
