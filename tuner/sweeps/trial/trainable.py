"""The Ray Tune trainable: one trial = one `trainer.train` run, its evaluations forwarded to Tune.

Every evaluation is sent with `tune.report`; the driver (the searcher) writes it to the study, so
trial workers never need the database or its credentials. A trainer exception (bad config, missing
data, divergence past its restores) does not raise out of the trial: it becomes a final result with
`error` (and `diverged_at`, the step, for a divergence), which the searcher stores as FAIL with that
message, or under `procedure: paper` a divergence as COMPLETE at its best value (lifecycle.decide);
a NaN under the trainer's `divergence: lamb` (`TrainingInfeasible`) is a FAIL with no value, as lamb
reports it infeasible.
Only a dead worker reaches Ray Tune's retry machinery, the one case where a retry can help.
A setting that breaks a bound known before training (the driver refuses those before Ray starts
them, bounds.py; this is the check where the driver could not size the model) returns at once
with `refused`, which the searcher tells the study as an infeasible setting, never trained.

In a study kept in an object store the run folder is copied there after each evaluation, and the
checkpoint reported is the copy's key (mirror.py).

Placement (placement.py): the device `auto` means, or a FAIL with the cause when the trial reserved
a GPU it cannot use. Every result carries the assigned ids (`gpu_ids`), the device used and the
training path taken on it (`cuda_path_used`), which the searcher stores as user attrs.
"""

from __future__ import annotations

import math
import numbers
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tuner.sweeps.trial import member
from tuner.sweeps.trial.bounds import REFUSED, refusal
from tuner.sweeps.trial.lifecycle import FINAL, SEGMENT, TrialReport
from tuner.sweeps.trial.mirror import RunMirror
from tuner.sweeps.trial.placement import GPUUnusable, failed_placement, placement
from tuner.sweeps.trial.trial_config import TrialConfig

if TYPE_CHECKING:
    from trainer import TrainResult


def _numeric(metrics: dict[str, Any]) -> dict[str, Any]:
    keep = {}
    for key, value in metrics.items():
        flat_counts = isinstance(value, dict) and all(isinstance(v, numbers.Number) for v in value.values())
        if isinstance(value, (bool, numbers.Number, str)) or value is None or flat_counts:
            keep[key] = value  # a dict of numbers (cuda_path_calls) reaches the driver as "key/name" entries
    return keep


def _member_settings(settings: dict[str, Any], own_id: str) -> tuple[dict[str, Any], int | None]:
    """A population member's trainer config: the checkpoint the scheduler gave it restored into its
    folder (member.restore), then the settings that checkpoint's model was written with; and the
    step of that checkpoint (None without one)."""
    from ray import tune

    from trainer import MUTABLE_SETTINGS, make_config, saved_header
    from trainer.loop import RESUMABLE_CHANGES

    run_dir = Path(settings["run_dir"])
    if (checkpoint := tune.get_checkpoint()) is not None:
        member.restore(checkpoint, run_dir, own_id, make_config(settings).max_steps)
    saved = saved_header(run_dir / "last.pt")[0] if (run_dir / "last.pt").is_file() else None
    continued = member.continued_settings(settings, saved, MUTABLE_SETTINGS | RESUMABLE_CHANGES)
    return continued, member.given_step(checkpoint)


def run_trial(config: dict[str, Any]) -> dict[str, Any]:
    """Train the trial `config` describes (a `TrialConfig` as Tune carries it); return its final
    result (`TrialReport`). With a `population` part (pbt/pb2) the trial is a member: it starts from
    the Ray checkpoint the scheduler gives it and reports checkpoints at each perturbation step
    (member.py). A study of a trained model runs `run_dyneval_trial` instead (`drive.wiring`)."""
    from ray import tune

    from trainer import Trainer, make_config, train

    sent = TrialConfig.from_tune(config)
    settings = dict(sent.trainer)
    try:
        where = placement(str(settings.get("device", "auto")))
    except GPUUnusable as err:
        return failed_placement(err)
    settings["device"] = where["device"]
    last: dict[str, Any] = {"step": 0, "val_loss": math.inf, **where}
    if (refused := refusal(settings, sent.bounds)) is not None:  # the driver could not size it
        return {**last, **refused.measures, REFUSED: refused.reason, FINAL: True}

    started, mirror = time.monotonic(), _pulled_mirror(sent.objects, Path(settings["run_dir"]))
    population = sent.population
    own_id = tune.get_context().get_trial_id() if population else ""
    # `given`: a member's, the step of the Ray checkpoint it started from.
    settings, given = _member_settings(settings, own_id) if population else (settings, None)
    pending_segment, start = "", 0  # a member's segment not yet sent, the step it (re)started at

    def report(metrics: dict[str, Any]) -> None:
        nonlocal pending_segment
        if mirror is not None:  # the checkpoint uploaded before the driver records its key
            metrics = mirror.published(metrics)
        timed = {**_numeric(metrics), "wall_time": round(time.monotonic() - started, 3)}
        last.update(timed)
        if population is None:
            tune.report({**timed, **where})
            return
        extra = {SEGMENT: pending_segment} if pending_segment else {}
        pending_segment = ""
        # The evaluation a member resumed at is reported again (the driver keeps the first value of
        # a step); a checkpoint goes with it only where the scheduler has none of that step.
        if not member.sends_checkpoint(int(metrics["step"]), population.interval, given, start):
            tune.report({**timed, **where, **extra})
            return
        with member.saved(Path(settings["run_dir"]), own_id, metrics) as checkpoint:
            tune.report({**timed, **where, **extra}, checkpoint=checkpoint)

    try:
        if population is None:
            result = train(make_config(settings), report=report)
        else:
            trainer = Trainer(make_config(settings), retune=True)
            start = trainer.step
            mutable = {k: float(settings[k]) for k in population.mutable if k in settings}
            if trainer.step < trainer.cfg.max_steps:  # a start at the end trains nothing: no segment
                pending_segment = member.segment(trainer.step, mutable, settings)
            result = trainer.run(report)
    except Exception as err:  # every trainer failure is the trial's FAIL reason, not a worker crash
        return {**last, **_failure(err)}
    summary = _summary(last, pending_segment, result)
    return summary if mirror is None else mirror.published(summary)


def _pulled_mirror(objects: str | None, run_dir: Path) -> RunMirror | None:
    """The run folder's copy in the study's object store (None for a study kept in a folder),
    pulled first: a retry on a node without the folder resumes from the study's copy."""
    if not objects:
        return None
    mirror = RunMirror(objects, run_dir)
    mirror.pull()
    return mirror


def _failure(err: Exception) -> dict[str, Any]:
    """A trainer failure as the trial's final result: its error, and the step of a divergence
    (which `procedure: paper` keeps at its best loss). `divergence: lamb`'s NaN is infeasible with
    no value (lamb/main.py): no step, so it stays a FAIL."""
    from trainer import TrainingDiverged, TrainingInfeasible

    kept = isinstance(err, TrainingDiverged) and not isinstance(err, TrainingInfeasible)
    step = {"diverged_at": err.step} if kept and isinstance(err, TrainingDiverged) else {}
    return {FINAL: True, "error": f"{type(err).__name__}: {err}", **step}


def _summary(last: dict[str, Any], pending_segment: str, result: TrainResult) -> dict[str, Any]:
    """A trial's final result: its last evaluation, a member's segment not yet sent, the run's
    summary (`TrialReport`, from `trainer.TrainResult`)."""
    return TrialReport.of(result, pending_segment, last).to_result()
