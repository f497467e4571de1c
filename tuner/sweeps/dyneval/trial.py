"""The trial of a dynamic-evaluation study: evaluate the study's trained model under one setting.

Thesis §4.5 and Table 2.6 (Mogrifier paper App. A): dynamic evaluation is tuned on the trained
model, so a trial trains nothing. It loads the checkpoint (`config["checkpoint"]`, made absolute
when the study was created; an `s3://` object is downloaded here, in the trial's own process,
which may run on another node: `tuner.sweeps.dyneval.source`), applies the trial's
dynamic-evaluation settings and the space's evaluation settings
(`tuner.sweeps.dyneval.study.EVALUATION_SETTINGS`) on top of the model's own config, and runs `trainer.dyneval.run_dynamic_evaluation` on the validation split: the gradient
statistics over the training data, then the split read as one stream at batch 1 while adapting.
The objective is that loss in nats/token. `max_eval_tokens` (the model's, or the space's) caps the
validation tokens read, as it caps the trainer's evaluations; unset, the whole split is read.

The trial writes its run folder's `config.yaml` (the evaluation's config), copied to the study's
object store for a study kept there, as a training trial's folder is. The public function has no
progress hook, so the trial reports once: its final result, at step 0 (nothing trained; early
stopping has nothing to compare). A failure is the trial's FAIL reason, as in `run_trial`.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import yaml

from tuner.storage.object_store import local_copy
from tuner.sweeps.trial.lifecycle import FINAL
from tuner.sweeps.trial.mirror import RunMirror
from tuner.sweeps.trial.placement import GPUUnusable, failed_placement, placement
from tuner.sweeps.trial.trial_config import TrialConfig


def run_dyneval_trial(config: dict[str, Any]) -> dict[str, Any]:
    """Dynamic evaluation of the `TrialConfig`'s checkpoint on validation under its settings."""
    from trainer import load_checkpoint, make_config
    from trainer.data import load_corpus
    from trainer.dyneval import run_dynamic_evaluation
    from trainer.model import LanguageModel

    sent = TrialConfig.from_tune(config)
    settings = {k: v for k, v in sent.trainer.items() if k != "run_dir"}
    try:
        where = placement(str(settings.pop("device", "auto")))
    except GPUUnusable as err:
        return failed_placement(err)
    result: dict[str, Any] = {"step": 0, **where}
    try:
        with local_copy(str(sent.checkpoint)) as local:
            model, cfg = load_checkpoint(local, device=where["device"])
        if not isinstance(model, LanguageModel):  # creation refuses reverse_copy models
            raise TypeError(f"{sent.checkpoint} is not a language model")
        cfg = make_config({**cfg.to_dict(), **settings, "device": where["device"]})
        corpus = load_corpus(cfg)
        valid = corpus.valid if cfg.max_eval_tokens is None else corpus.valid[: cfg.max_eval_tokens + 1]
        train, valid = corpus.train.to(where["device"]), valid.to(where["device"])
        started = time.monotonic()
        loss = run_dynamic_evaluation(model, train, {"valid": valid}, cfg)["valid"]
        wall = time.monotonic() - started
    except Exception as err:  # every evaluation failure is the trial's FAIL reason, not a worker crash
        return {**result, FINAL: True, "error": f"{type(err).__name__}: {err}"}
    _record(sent, cfg.to_dict())
    return {
        **result,
        FINAL: True,
        "val_loss": loss,
        "best_val_loss": loss,
        "dyneval_val_loss": loss,
        "best_step": 0,
        "eval_tokens": int(valid.numel()) - 1,
        "eval_wall_time_s": round(wall, 3),
    }


def _record(sent: TrialConfig, evaluated: dict[str, Any]) -> None:
    """The evaluation's config (the model's settings under the trial's) as its run folder's
    `config.yaml`, what reproduces it; for a study kept in an object store, the folder copied there
    as any trial's is (`RunMirror`)."""
    run_dir = sent.trainer.get("run_dir")
    if not run_dir:
        return
    folder = Path(run_dir)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.yaml").write_text(
        yaml.safe_dump({**evaluated, "run_dir": str(folder)}, sort_keys=False)
    )
    if sent.objects:
        RunMirror(sent.objects, folder).push()
