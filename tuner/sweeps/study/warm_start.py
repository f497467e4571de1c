"""Warm starts: a new study takes another study's trials as its sampler's prior data, as Vizier's
prior studies do (e.g. tune Wikitext-2 after PTB with the same space).

At creation (`check`) the source study must be in the same database, tune at least one of the new
space's parameters, and the sampler must take prior trials (`WARM_START_SAMPLERS`); the study then
stores `warm_start: {"studies": [NAME], "trials": N}` (N: the prior trials the source had then).
Each run of the sweep loads the source's COMPLETE trials and its PRUNED ones with intermediate values
afresh (`prior_trials`) and passes them to the sampler as they are; the sampler decides their use.
"""

from __future__ import annotations

from typing import Any

import optuna
from optuna.trial import FrozenTrial, TrialState

from tuner.space import SearchSpace
from tuner.storage import study_attrs
from tuner.storage.study import StudyError, StudyNotFoundError, load_study, value_of


def _usable(trial: FrozenTrial) -> bool:
    if trial.state == TrialState.COMPLETE:
        return value_of(trial) is not None
    return trial.state == TrialState.PRUNED and bool(trial.intermediate_values)


def _source(name: str, storage_url: str) -> optuna.Study:
    try:
        return load_study(name, storage_url)
    except StudyNotFoundError as err:
        raise StudyError(f"warm_start: {err}") from None


def _tuned(study: optuna.Study) -> set[str]:
    """The parameters a study tunes: its stored space's, else those its trials hold."""
    space = study_attrs.SPACE_DEF.of(study.user_attrs)
    if isinstance(space, dict) and space.get("params"):
        return set(space["params"])
    return {p for t in study.get_trials(deepcopy=False) for p in t.params}


def check(storage_url: str, source: str, space: SearchSpace, sampler: str) -> dict[str, Any]:
    """The `warm_start` attr of a new study on `space` warm-started from study `source`; StudyError
    when the sampler takes no prior trials, the source is unknown or shares no tuned parameter."""
    from tuner.samplers import WARM_START_SAMPLERS

    if sampler not in WARM_START_SAMPLERS:
        raise StudyError(
            f"warm_start: sampler {sampler!r} takes no prior trials; use one of {', '.join(WARM_START_SAMPLERS)}"
        )
    study = _source(source, storage_url)
    theirs = _tuned(study)
    if not theirs & set(space.params):
        raise StudyError(
            f"warm_start: study {source!r} shares no tuned parameter with space {space.name}: it lacks "
            f"{', '.join(space.params)} (it tunes {', '.join(sorted(theirs)) or 'nothing yet'})"
        )
    trials = [t for t in study.get_trials(deepcopy=False) if _usable(t)]
    return {"studies": [source], "trials": len(trials)}


def prior_trials(storage_url: str, attr: dict[str, Any] | None) -> list[FrozenTrial]:
    """The source studies' COMPLETE trials and PRUNED ones with intermediate values, as stored now."""
    out: list[FrozenTrial] = []
    for name in (attr or {}).get("studies", []):
        out += [t for t in _source(name, storage_url).get_trials(deepcopy=False) if _usable(t)]
    return out
