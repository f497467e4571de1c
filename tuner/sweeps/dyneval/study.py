"""Studies that tune dynamic evaluation on one trained model (thesis §4.5, Table 2.6; Mogrifier
paper App. A): the spec's `checkpoint` names the model, each trial evaluates it under one setting.

The papers tune dynamic evaluation after training, on the model training chose: its trials are
evaluations (minutes), not trainings (hours). So a study with a `checkpoint` tunes only the
dynamic-evaluation settings (`trainer.config.DYNEVAL_SETTINGS`), and a space that tunes one of them
without a checkpoint is refused: retraining a model in every trial to tune how it is evaluated
is what the papers did not do.

`check` runs at creation; `referenced_checkpoints` lists the models such studies use, which the
trained studies' retention (`keep_top`) then never deletes; `record_best` keeps the study's `dyneval_best` attribute (the best
COMPLETE trial's full setting, its value and the checkpoint) up to date as trials finish;
`best_setting` is what `rnntune evaluate --dyneval-from STUDY` applies.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import optuna

from trainer.config import DYNEVAL_SETTINGS as SETTINGS
from trainer.config import TrainConfig
from tuner.errors import StudyError
from tuner.space import SearchSpace
from tuner.spec import SweepSpec
from tuner.storage import study_attrs
from tuner.storage.confine import resolve_within
from tuner.storage.object_backends import URI_FORMS
from tuner.storage.object_store import is_uri, local_copy
from tuner.storage.study import best_trial, value_of
from tuner.sweeps.dyneval import source

# Settings a checkpoint study's space may fix besides SETTINGS: where the data is, which device
# evaluates, how many validation tokens a trial reads. The model's own settings are the checkpoint's.
# dyneval_stats_batches: how many training windows the gradient statistics read (lamb: 500).
EVALUATION_SETTINGS = frozenset({"dyneval", "data_dir", "device", "max_eval_tokens", "dyneval_stats_batches"})


def check(
    spec: SweepSpec, space: SearchSpace, data_roots: tuple[Path, ...] | None = None
) -> tuple[SweepSpec, SearchSpace]:
    """The spec with its checkpoint made absolute and the space with the model's dataset folder
    made absolute; StudyError naming `checkpoint` when the two do not make a dynamic-evaluation
    study (or the space tunes dynamic evaluation without a checkpoint)."""
    tuned = [p for p in space.params if p in SETTINGS]
    if spec.checkpoint is None:
        if tuned:
            raise StudyError(
                f"checkpoint: space {space.name} tunes dynamic-evaluation settings ({', '.join(tuned)}), "
                f"which are tuned on a trained model (thesis Table 2.6): give its checkpoint with "
                f'--checkpoint RUN/best.pt (REST: "checkpoint"); trials no longer train a model each'
            )
        return spec, space
    path, cfg = _loaded(spec.checkpoint)
    if cfg.dataset == "reverse_copy":
        raise StudyError(
            f"checkpoint: {path} is a reverse_copy model; dynamic evaluation needs a language model"
        )
    others = [p for p in space.params if p not in SETTINGS]
    if others:
        raise StudyError(
            f"checkpoint: a study of a trained model tunes only its dynamic evaluation "
            f"({', '.join(SETTINGS)}); space {space.name} also tunes {', '.join(others)} "
            f"(use --space dyneval, or drop --checkpoint to train a model in each trial)"
        )
    fixed = sorted(k for k in space.fixed if k not in SETTINGS and k not in EVALUATION_SETTINGS)
    if fixed:
        raise StudyError(
            f"checkpoint: the model's settings come from its checkpoint; space {space.name} fixes "
            f"{', '.join(fixed)} (only {', '.join(sorted(EVALUATION_SETTINGS))} and the "
            f"dynamic-evaluation settings may be set)"
        )
    if "data_dir" not in space.fixed and cfg.data_dir is not None:
        # Trials run in other folders: the model's dataset folder as it resolves here, checked.
        data_dir = Path(cfg.data_dir).expanduser().resolve()
        if data_roots is not None and resolve_within(str(data_dir), data_roots, data_dir) is None:
            # The server's data roots hold for the folder a checkpoint names as for one given directly.
            roots = ", ".join(str(r) for r in data_roots) or "none configured"
            raise StudyError(
                f"checkpoint: the model's dataset folder must be inside the server's data roots ({roots}; "
                f"set them with --data-root or RNNTUNE_DATA_ROOTS), or give data_dir with --set"
            )
        if not data_dir.is_dir():
            raise StudyError(
                f"checkpoint: the model's dataset folder {data_dir} does not exist; "
                f"give it with --set data_dir=PATH"
            )
        space = space.with_overrides(fixed={"data_dir": str(data_dir)})
    return spec.model_copy(update={"checkpoint": path}), space


def _loaded(checkpoint: str) -> tuple[str, TrainConfig]:
    """The checkpoint as the study stores it (`source.shown`) and its model's config, read from a
    local copy (an object store's object downloaded); StudyError naming `checkpoint` when it
    cannot be read."""
    from trainer.checkpoint import load_checkpoint  # PyTorch, for a trained model's study only

    path = source.shown(checkpoint)  # StorageRefused (a StudyError) names `checkpoint`
    try:
        with local_copy(path) as local:
            _, cfg = load_checkpoint(local)
    except Exception:  # one answer whether the file is missing, unreadable or not a checkpoint
        raise StudyError(
            f"checkpoint: {path} is not a readable rnntune checkpoint (a best.pt or last.pt a run wrote, "
            f"a local file or an object in one of {URI_FORMS})"
        ) from None
    return path, cfg


def best_setting(study: optuna.Study) -> dict[str, Any] | None:
    """{params, value, trial, checkpoint} of the study's best COMPLETE trial: every
    dynamic-evaluation setting it was evaluated with (the trial's params and the space's fixed
    ones); None when no trial is COMPLETE or the study tuned none of these settings."""
    best = best_trial(study)
    if best is None:
        return None
    if not any(k in SETTINGS for k in best.params):
        return None
    attrs = study.user_attrs
    fixed = (study_attrs.SPACE_DEF.of(attrs) or {}).get("fixed") or {}
    params = {k: fixed[k] for k in SETTINGS if k in fixed}
    params.update({k: v for k, v in best.params.items() if k in SETTINGS})
    spec = SweepSpec.stored_in(attrs)
    return {
        "params": params,
        "value": value_of(best),
        "trial": best.number,
        "checkpoint": spec.checkpoint if spec is not None else None,
    }


def record_best(study: optuna.Study) -> None:
    """Store the best setting so far as the study's `dyneval_best` attribute (when it changed)."""
    best = best_setting(study)
    if best is not None and study_attrs.DYNEVAL_BEST.of(study.user_attrs) != best:
        study_attrs.DYNEVAL_BEST.write(study, best)


def referenced_checkpoints(storage: optuna.storages.BaseStorage) -> frozenset[Path | str]:
    """The checkpoints the studies in `storage` evaluate (their spec's `checkpoint`): local files
    resolved, objects by their `s3://` URI. A trained study's retention keeps these weights
    whatever their rank."""
    pinned: set[Path | str] = set()
    for summary in optuna.get_all_study_summaries(storage, include_best_trial=False):
        try:
            spec = SweepSpec.stored_in(summary.user_attrs)
        except Exception:  # another tool's study, or a spec this version cannot read: it pins nothing
            continue
        if spec is not None and spec.checkpoint:
            pinned.add(
                spec.checkpoint if is_uri(spec.checkpoint) else Path(spec.checkpoint).expanduser().resolve()
            )
    return frozenset(pinned)
