"""`divergence: lamb`: a non-finite gradient or validation loss ends the run as infeasible
(TrainingInfeasible, no value); a finite loss explosion trains on."""

from __future__ import annotations

import math

import pytest
import torch

from tests.trainer.test_loop import tiny
from trainer import Trainer, TrainingDiverged, TrainingInfeasible
from trainer.divergence import Watch


def test_a_finite_explosion_is_no_divergence_and_a_nan_is():
    """lamb/main.py catches only `tf.errors.InvalidArgumentError` ("Ignore NaNs detected by
    clip_by_global_norm"), which tf.clip_by_global_norm raises on a non-finite global norm; a finite
    loss, however large, is clipped and trained on."""
    watch = Watch(vocab_size=10, device=torch.device("cpu"), explosions=False)
    for _ in range(3):
        watch.add(torch.tensor(1e6), torch.tensor(5.0))
    assert watch.read() == (1e6, None)
    watch.add(torch.tensor(2.0), torch.tensor(math.nan))
    assert watch.read()[1] is not None
    restoring = Watch(vocab_size=10, device=torch.device("cpu"))
    restoring.add(torch.tensor(1e6), torch.tensor(5.0))
    assert restoring.read()[1] is not None  # rnntune's default restores on the explosion


def test_a_nan_gradient_makes_the_trial_infeasible(tmp_path):
    """lamb/main.py `run_training`:

        except (tf.errors.ResourceExhaustedError, tf.errors.InternalError,
                # Ignore NaNs detected by clip_by_global_norm.
                tf.errors.InvalidArgumentError):
          ...
          self._tuner.report_done(infeasible=True, infeasible_reason=stack_trace)
          return

    No restore and no value: TrainingInfeasible (a TrainingDiverged, so older callers still stop)."""
    trainer = Trainer(tiny(tmp_path, divergence="lamb", divergence_restores=10))
    with torch.no_grad():
        trainer.params[0].fill_(math.nan)
    with pytest.raises(TrainingInfeasible, match="infeasible") as err:
        trainer.train_step()
    assert isinstance(err.value, TrainingDiverged) and err.value.step == 0
    assert trainer.restores == 0


def test_a_nan_validation_loss_makes_the_trial_infeasible(tmp_path, monkeypatch):
    """lamb/monitoring.py `_update_finished_reason`:

    if math.isnan(xe):
      if self._tuner:
        self._tuner.report_done(infeasible=True, infeasible_reason='nan')
      self._finished_reason = 'nan'
    """
    trainer = Trainer(tiny(tmp_path, divergence="lamb"))
    monkeypatch.setattr(trainer, "_validate", lambda: (math.nan, None))
    trainer.averaging.add_weights(trainer.params)  # an average to evaluate, as after any step
    with pytest.raises(TrainingInfeasible, match="validation loss NaN"):
        trainer._evaluation([], 0.0)


def test_the_default_still_restores(tmp_path):
    trainer = Trainer(tiny(tmp_path, divergence_restores=2))
    with torch.no_grad():
        trainer.params[0].fill_(math.nan)
    trainer.train_step()  # restores the initial weights, learning rate x 0.9
    assert trainer.restores == 1 and torch.isfinite(trainer.params[0]).all()
