"""Creating a sweep's study from its spec: the one way in for `rnntune sweep`, REST and `rnntune up`.

The study stores the spec, resolved (early-stopping grace period and brackets made explicit on the
task's evaluation grid), as its `spec` attribute, beside what the spec resolves to: the space
(`space`, `space_def`, `task`), the warm start's prior trials and the storage folder. A study of a
trained model (`checkpoint`) is checked to tune only its dynamic evaluation, its checkpoint made
absolute (`tuner.sweeps.dyneval.study`).
"""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import optuna

from tuner.errors import InvalidInput, StudyError, StudyExistsError
from tuner.policies import procedure
from tuner.policies.kinds import DEFAULT_SCHEDULER
from tuner.space import SearchSpace, SpaceError, resolve_space
from tuner.space.settings import max_steps_and_eval_every
from tuner.spec import NAME_PATTERN, SweepSpec
from tuner.spec.sweep_spec import validate
from tuner.storage import study_attrs
from tuner.storage.study import (
    DEFAULT_STORAGE_ROOT,
    generate_study_name,
    now,
    open_storage,
    redact_url,
    stored_location,
)
from tuner.sweeps.dyneval import study as dyneval_study
from tuner.sweeps.study import warm_start as warm
from tuner.sweeps.trackers.installed import check_available


def _checked(
    spec: SweepSpec | Mapping[str, Any] | None,
    fields: Mapping[str, Any],
    storage_url: str,
    data_roots: tuple[Path, ...] | None,
) -> tuple[SweepSpec, SearchSpace]:
    """The study's spec, resolved, and its space (create_study's arguments); StudyError or
    SpaceError naming what is wrong."""
    given = {**(spec.model_dump() if isinstance(spec, SweepSpec) else dict(spec or {})), **fields}
    explicit = explicit_fields(spec, fields)
    loaded = given.get("space") if isinstance(given.get("space"), SearchSpace) else None
    if loaded is not None:
        given["space"] = loaded.name
    try:
        raw = {k: v for k, v in given.items() if v is not None}
        checked = validate(raw)
        space = resolve_space(
            loaded or checked.space, checked.overrides.model_dump() if _given(checked) else None
        )
        # The space's own search (`sweep:` in its file); `procedure: paper` takes it whole.
        chosen = {k: v for k, v in raw.items() if k in explicit}
        block = space.sweep.given()
        if from_block := procedure.space_fields(checked.procedure, block, chosen, DEFAULT_SCHEDULER):
            checked = validate({**raw, **from_block})
        checked = resolve(checked, space)
        checked, space = dyneval_study.check(checked, space, data_roots)
        check_available(checked, storage_url)
        return checked, with_absolute_data_dir(space)
    except (StudyError, SpaceError):
        raise
    except InvalidInput as err:
        raise StudyError(str(err)) from None


def create_study(
    name: str | None,
    spec: SweepSpec | Mapping[str, Any] | None = None,
    *,
    storage_url: str,
    storage_path: str | os.PathLike | None = None,
    data_roots: tuple[Path, ...] | None = None,
    **fields: Any,
) -> optuna.Study:
    """Create a new sweep's study (status `created`, no trials yet); `rnntune sweep --resume NAME` runs it.

    `spec` (or its `fields` as keywords; None values mean the default) says what to sweep; its
    `space` may also be a loaded SearchSpace (stored under its name). `name` None generates one.
    Raises StudyExistsError if the name is taken, SpaceError for a bad space, StudyError naming a
    bad field. `data_roots` (the API's): a trained model's dataset folder must lie inside them.
    """
    spec, space = _checked(spec, fields, storage_url, data_roots)
    name = name or generate_study_name(space.name)
    if not re.fullmatch(NAME_PATTERN, name):
        raise StudyError(
            f"name: study name {name!r} must be 1-128 letters, digits, _ . - (not starting with . or -)"
        )
    root = stored_location(storage_path) if storage_path else str((DEFAULT_STORAGE_ROOT / name).resolve())
    prior = warm.check(storage_url, spec.warm_start, space, spec.sampler) if spec.warm_start else None
    storage = open_storage(storage_url)
    try:
        study = optuna.create_study(study_name=name, storage=storage, directions=spec.goals().directions)
        if spec.goals().several:  # the sampler reads a pruned trial's other objectives by these names
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                study.set_metric_names(spec.goals().names)
    except optuna.exceptions.DuplicatedStudyError:
        raise StudyExistsError(
            f"study {name!r} already exists in {redact_url(storage_url)}; "
            f"resume it with `rnntune sweep --resume {name}` or choose another name"
        ) from None
    attrs: dict[str, Any] = {
        study_attrs.SPEC: spec.stored(),
        study_attrs.SPACE: space.name,
        study_attrs.SPACE_DEF: space.to_dict(),
        study_attrs.TASK: dict(space.fixed),
        study_attrs.WARM_START: prior,
        study_attrs.STATUS: "created",
        study_attrs.CREATED_AT: now(),
        study_attrs.STORAGE_PATH: root,
    }
    for key, value in attrs.items():
        study_attrs.write(study, key, value)
    return study


def with_absolute_data_dir(space: SearchSpace) -> SearchSpace:
    """The space with a relative `data_dir` made absolute against the creating process's folder, as
    stored: a sweep resumed, or started by the API, from another folder reads the same data."""
    data_dir = space.fixed.get("data_dir")
    if data_dir is None or Path(str(data_dir)).expanduser().is_absolute():
        return space
    return space.with_overrides(fixed={"data_dir": str(Path(str(data_dir)).expanduser().resolve())})


def explicit_fields(spec: SweepSpec | Mapping[str, Any] | None, fields: Mapping[str, Any]) -> set[str]:
    """The spec fields the caller set (a model's fields set, a mapping's non-None keys): the space's
    `sweep:` defaults fill only the others."""
    if isinstance(spec, SweepSpec):
        chosen = set(spec.model_fields_set)
    else:
        chosen = {k for k, v in (spec or {}).items() if v is not None}
    return chosen | {k for k, v in fields.items() if v is not None}


def _given(spec: SweepSpec) -> bool:
    return bool(spec.overrides.ranges or spec.overrides.set)


def resolve(spec: SweepSpec, space: SearchSpace) -> SweepSpec:
    """The spec with its early-stopping policy resolved on the space's eval grid, for a sweep of
    `n_trials` within its budget (grace period and brackets made explicit)."""
    max_steps, eval_every = max_steps_and_eval_every(space.fixed)
    policy = spec.early_stopping().resolved(max_steps, eval_every, spec.n_trials, spec.budget)
    return spec.model_copy(update=policy.model_dump())
