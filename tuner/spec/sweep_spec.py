"""`SweepSpec`: every option of a sweep, with its range, default and help, declared once.

Each field carries how the command line and Compose name it (`flag_name`, `env_name`) and whether
`--resume` may change it (`RESUME_SAFE`). A study stores its spec, resolved (the early-stopping
grace period and brackets made explicit), as the one user attribute `spec` = {"version": 1, ...};
`SweepSpec.of(attrs)` reads it back, and reads a study written before the spec existed from its
separate attributes.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from tuner.errors import InvalidInput
from tuner.objectives.goals import Constraint, Goals
from tuner.objectives.measures import MEASURES, PRIMARY
from tuner.policies import procedure
from tuner.policies.early_stopping import EarlyStopping
from tuner.policies.kinds import DEFAULT_SCHEDULER, LEGACY_SCHEDULER, SCHEDULERS, field_problem, problem
from tuner.policies.study_stop import StudyStop
from tuner.samplers import COST_AWARE_SAMPLERS, DEFAULT_SAMPLER, RETIRED_SAMPLERS, SAMPLERS
from tuner.space import NAME_PATTERN
from tuner.space.params import Scalar
from tuner.spec.defaults import DEFAULT_PARALLEL, DEFAULT_SPACE, DEFAULT_TRIALS
from tuner.storage import study_attrs

SPEC_VERSION = 1
# NAME_PATTERN (tuner.space): the one pattern of study and space names on every path.
SamplerName = Literal[SAMPLERS]  # type: ignore[valid-type]
SchedulerName = Literal[SCHEDULERS]  # type: ignore[valid-type]
ProcedureName = Literal[procedure.PROCEDURES]  # type: ignore[valid-type]

# Fields `rnntune sweep --resume` (and REST /start's stored spec) may change: how many trials run,
# how they are placed and when the sweep ends. The others define what the study samples.
RESUME_SAFE = frozenset(
    {
        "n_trials",
        "parallel",
        "cpus_per_trial",
        "gpus_per_trial",
        "max_retries",
        "keep_top",
        "patience",
        "min_improvement",
        "max_hours",
        "budget",
        "budget_hours",
        "tensorboard",
        "mlflow_uri",
        "mlflow_checkpoints",
        "wandb_project",
    }
)
# Command-line names that differ from the field's (`--trials`, not `--n-trials`).
_FLAGS = {"n_trials": "--trials", "overrides": "--range/--set"}
_ENVS = {"n_trials": "RNNTUNE_TRIALS"}


def comma_list(text: str) -> list[str]:
    """A list field (`objectives`, `constraints`) written as one string: comma-separated."""
    return [part.strip() for part in text.split(",") if part.strip()]


def flag_name(field: str) -> str:
    """The command-line flag of a spec field (`gpus_per_trial` -> `--gpus-per-trial`)."""
    return _FLAGS.get(field, "--" + field.replace("_", "-"))


def env_name(field: str) -> str:
    """The environment variable (Compose's .env) of a spec field (`gpus_per_trial` -> RNNTUNE_GPUS_PER_TRIAL)."""
    return _ENVS.get(field, "RNNTUNE_" + field.upper())


def _reuse(model: type[BaseModel], name: str) -> Any:
    """A field of a policy model, reused as is: one definition of each setting's range and meaning."""
    return copy.copy(model.model_fields[name])


class Overrides(BaseModel):
    """Changes on top of the named space: `ranges` ({name: "low:high[:scale]"}) and `set`
    ({trainer setting: value}; fixing a tuned hyperparameter removes it from the tuned ones)."""

    model_config = ConfigDict(extra="forbid")

    ranges: dict[str, str] = Field(default_factory=dict)
    set: dict[str, Scalar] = Field(default_factory=dict)


class SweepSpec(BaseModel):
    """Every option of a sweep (not its name, database or storage folder, which say where it lives)."""

    model_config = ConfigDict(extra="forbid")
    VERSION: ClassVar[int] = SPEC_VERSION

    space: Annotated[str, Field(pattern=NAME_PATTERN)] | dict[str, Any] = Field(
        default=DEFAULT_SPACE,
        description="A search-space name (see `rnntune spaces`) or an inline space definition "
        "(`fixed` and `params` as in search_spaces/*.yaml).",
    )
    overrides: Overrides = Field(
        default_factory=Overrides,
        description="Range overrides and fixed trainer settings on top of the space.",
    )
    procedure: ProcedureName = Field(
        default=procedure.DEFAULT_PROCEDURE,
        description="`paper`: the papers' tuning procedure: the space's sweep: block whole (its "
        "sampler and trials), no early stopping (unless the block says the paper stopped trials "
        "early), and a trial that diverges is COMPLETE at its best "
        "validation loss with `diverged_at` (docs/sweeps.md); `rnntune`: early stopping prunes, a "
        "diverged trial FAILs.",
    )
    sampler: SamplerName = Field(default=DEFAULT_SAMPLER, description="Optuna sampler (docs/samplers.md).")
    objectives: list[str] = Field(
        default_factory=lambda: [PRIMARY],
        max_length=len(MEASURES),
        description="What the study optimises: val_loss first, then any of "
        f"{', '.join(m for m in MEASURES if m != PRIMARY)}, comma-separated, each NAME or "
        'NAME:minimize|maximize (docs/sweeps.md, "Several objectives").',
    )
    constraints: list[str] = Field(
        default_factory=list,
        max_length=16,
        description="Bounds every trial must keep, comma-separated NAME<=BOUND or NAME>=BOUND "
        "(units k, M, G, KiB, MiB, GiB), e.g. num_params<=24e6; a bound on num_params is checked "
        "before a trial trains.",
    )
    n_trials: int = Field(default=DEFAULT_TRIALS, ge=1, le=100_000, description="Trials to run in all.")
    parallel: int = Field(default=DEFAULT_PARALLEL, ge=1, le=1024, description="Trials in flight at once.")
    cpus_per_trial: float = Field(default=1.0, gt=0.0, le=1024.0, description="CPUs Ray reserves per trial.")
    gpus_per_trial: float = Field(
        default=0.0,
        ge=0.0,
        le=64.0,
        description="GPUs Ray reserves per trial; a fraction below 1 packs trials on one GPU "
        "(0.25: four trials per GPU), above 1 it must be a whole number.",
        json_schema_extra={"anyOf": [{"maximum": 1}, {"multipleOf": 1}]},
    )
    max_retries: int = Field(
        default=2, ge=0, le=100, description="Retries of a trial whose worker or sweep process died."
    )
    scheduler: SchedulerName = Field(
        default=DEFAULT_SCHEDULER,
        description="Early stopping of poor trials on the 2TA validation loss: `adaptive` is ASHA "
        "whose rungs prune once the study's trials show their values rank like the next rung's; "
        "or population-based training: `pbt` (n_trials members train at once, the worst quarter "
        "copying the best's checkpoints and perturbing the learning rate, l2 and dropouts) or `pb2` "
        "(the same with a GP-bandit choosing the settings); docs/population.md.",
    )
    perturbation_interval: int | None = Field(
        default=None,
        ge=1,
        le=10_000_000,
        description="pbt/pb2: training steps between perturbations, a multiple of eval_every "
        "(default: about max_steps/8 on the evaluation grid).",
    )
    # ASHA's policy, declared once in tuner.policies.early_stopping (ranges and descriptions).
    grace_steps: int | None = _reuse(EarlyStopping, "grace_steps")
    reduction_factor: int = _reuse(EarlyStopping, "reduction_factor")
    brackets: int | None = _reuse(EarlyStopping, "brackets")
    # The study-level stop rules, declared once in tuner.policies.study_stop.
    patience: int | None = _reuse(StudyStop, "patience")
    min_improvement: float = _reuse(StudyStop, "min_improvement")
    max_hours: float | None = _reuse(StudyStop, "max_hours")
    budget: float | None = _reuse(StudyStop, "budget")
    budget_hours: float | None = _reuse(StudyStop, "budget_hours")
    cost_aware: bool = Field(
        default=False,
        description="Pick trials by expected improvement per unit of expected cost, from a GP over "
        "each trial's measured seconds per step (gp_fidelity only; docs/samplers.md).",
    )
    keep_top: int | None = Field(
        default=None, ge=1, le=100_000, description="Keep only the N best trials' checkpoints (weights)."
    )
    warm_start: str | None = Field(
        default=None,
        pattern=NAME_PATTERN,
        description="A study in the same database whose finished trials the sampler takes as prior "
        "data (it must share a tuned parameter with this space; GP samplers only).",
    )
    seed: int | None = Field(default=None, ge=0, le=2**32 - 1, description="Sampler seed.")
    checkpoint: str | None = Field(
        default=None,
        min_length=1,
        max_length=4096,
        description="A trained model's checkpoint (RUN/best.pt, or s3://BUCKET/PREFIX/trial-N/best.pt): "
        "each trial evaluates it with dynamic evaluation under the trial's settings instead of training "
        "(the dyneval space).",
    )

    tensorboard: bool = Field(
        default=False,
        description="Write each trial's curves and hyperparameters as TensorBoard event files under "
        "the study's storage folder, in tensorboard/trial-N (docs/trackers.md).",
    )
    mlflow_uri: str | None = Field(
        default=None,
        min_length=1,
        max_length=2048,
        pattern=r"^\S+$",
        description="An MLflow tracking server's URI: each trial becomes a run of the experiment "
        "named after the study, under a parent run for the study (needs rnntune[mlflow]; "
        "docs/trackers.md).",
    )
    mlflow_checkpoints: bool = Field(
        default=False,
        description="Upload each trial's best checkpoint to MLflow as an artifact (default: log its path only).",
    )
    wandb_project: str | None = Field(
        default=None,
        min_length=1,
        max_length=128,
        pattern=r"^[A-Za-z0-9_.\-]+$",
        description="A Weights & Biases project: each trial becomes a run of it, grouped by the study; "
        "the entity, API key and mode come from W&B's environment (WANDB_ENTITY, WANDB_API_KEY, "
        "WANDB_MODE=offline for local files only; needs rnntune[wandb]; docs/trackers.md).",
    )

    @field_validator("objectives", "constraints", mode="before")
    @classmethod
    def _comma_separated(cls, value: Any) -> Any:
        """The command line and Compose give one string: `val_loss,num_params`."""
        return comma_list(value) if isinstance(value, str) else value

    @field_validator("constraints")
    @classmethod
    def _known_constraints(cls, value: list[str]) -> list[str]:
        return [str(Constraint.parse(c)) for c in value]

    @field_validator("objectives")
    @classmethod
    def _known_objectives(cls, value: list[str]) -> list[str]:
        goals = Goals.parse(value)
        return [
            o.name if o.direction == MEASURES[o.name].better else f"{o.name}:{o.direction}"
            for o in goals.objectives
        ]

    def goals(self) -> Goals:
        """The study's objectives and constraints, parsed (tuner.objectives.goals)."""
        return Goals.parse(self.objectives, self.constraints)

    @field_validator("mlflow_uri")
    @classmethod
    def _no_credentials_in_uri(cls, value: str | None) -> str | None:
        """No user, password or query string (where tokens go): the spec is stored with the study
        and shown by the API; MLflow reads credentials from its own variables."""
        if value is not None and (
            "@" in value.split("://", 1)[-1].split("/", 1)[0] or "?" in value or "#" in value
        ):
            raise ValueError(
                "must not hold credentials, a query string or a fragment (the spec is stored with the "
                "study and shown by the API); set MLFLOW_TRACKING_USERNAME/MLFLOW_TRACKING_PASSWORD or "
                "MLFLOW_TRACKING_TOKEN in the sweep's environment instead"
            )
        return value

    @field_validator("mlflow_checkpoints")
    @classmethod
    def _checkpoints_need_mlflow(cls, value: bool, info: ValidationInfo) -> bool:
        if value and info.data.get("mlflow_uri") is None:
            raise ValueError("needs mlflow_uri (--mlflow-uri): the server the checkpoints go to")
        return value

    @field_validator("gpus_per_trial")
    @classmethod
    def _whole_above_one(cls, value: float) -> float:
        if value > 1 and not value.is_integer():  # the schema's multipleOf 1: exactly whole, no tolerance
            raise ValueError(
                f"above 1 must be a whole number of GPUs (Ray packs only fractions of one), not {value}"
            )
        return value

    @model_validator(mode="before")
    @classmethod
    def _paper_schedules_nothing(cls, raw: Any) -> Any:
        """Under `procedure: paper` a spec that names no scheduler gets `none`; creating the study
        refuses another where the space's paper trained every trial in full, and sets rnntune's
        where it stopped trials early (tuner.policies.procedure.space_fields)."""
        if (
            isinstance(raw, Mapping)
            and raw.get("procedure") == procedure.PAPER
            and raw.get("scheduler") is None
        ):
            return {**raw, "scheduler": procedure.PAPER_SCHEDULER}
        return raw

    @field_validator("perturbation_interval")
    @classmethod
    def _field_of_the_kind(cls, value: Any, info: ValidationInfo) -> Any:
        """A field only some kinds read (tuner.policies.kinds), set for another kind, is refused."""
        if value is not None and (refused := field_problem(str(info.field_name), info.data.get("scheduler"))):
            raise ValueError(refused)
        return value

    @model_validator(mode="after")
    def _fits_its_kind(self) -> SweepSpec:
        """The checks of the kind the spec runs as (tuner.policies.kinds: a population trains one
        objective, a perturbation interval needs a population, ...)."""
        if (refused := problem(self)) is not None:
            raise ValueError(refused)
        return self

    @field_validator("cost_aware")
    @classmethod
    def _cost_aware_sampler(cls, value: bool, info: ValidationInfo) -> bool:
        sampler = info.data.get("sampler")
        if value and sampler is not None and sampler not in COST_AWARE_SAMPLERS:
            raise ValueError(f"only with sampler {' or '.join(COST_AWARE_SAMPLERS)}, not {sampler!r}")
        if value and len(info.data.get("objectives") or ()) > 1:
            raise ValueError("only with one objective (make the cost one: add wall_time to objectives)")
        return value

    def early_stopping(self) -> EarlyStopping:
        return EarlyStopping(**{k: getattr(self, k) for k in EarlyStopping.model_fields})

    def study_stop(self) -> StudyStop:
        return StudyStop(**{k: getattr(self, k) for k in StudyStop.model_fields})

    def stored(self) -> dict[str, Any]:
        """The attribute value a study stores: the fields plus the spec's version."""
        return {"version": SPEC_VERSION, **self.model_dump(mode="json")}

    def resume_changes(self, given: Mapping[str, Any]) -> SweepSpec:
        """This spec with the `given` fields changed, as `--resume` asks; InvalidInput naming every
        field that defines the study (and so cannot change) or a value out of range."""
        unsafe = sorted(k for k, v in given.items() if k not in RESUME_SAFE and v != getattr(self, k, v))
        if unsafe:
            raise InvalidInput(
                f"{', '.join(flag_name(k) for k in unsafe)}: cannot change when resuming; the study keeps "
                f"the value it was created with (only {', '.join(flag_name(k) for k in sorted(RESUME_SAFE))} may change)"
            )
        return validate({**self.model_dump(), **given})

    @classmethod
    def stored_in(cls, attrs: Mapping[str, Any]) -> SweepSpec | None:
        """The spec of a study rnntune created (it stores a spec, or the separate settings written
        before the spec existed), None for any other Optuna study."""
        return cls.of(attrs) if study_attrs.SPEC in attrs or "n_trials" in attrs else None

    @classmethod
    def of(cls, attrs: Mapping[str, Any]) -> SweepSpec:
        """The spec a study stored (its `spec` attribute), or one read from the separate
        attributes of a study written before the spec existed."""
        raw = study_attrs.SPEC.of(attrs)
        if isinstance(raw, Mapping):
            version = raw.get("version", SPEC_VERSION)
            if version != SPEC_VERSION:
                raise InvalidInput(
                    f"spec: version {version} is newer than this rnntune reads ({SPEC_VERSION})"
                )
            return validate({k: v for k, v in raw.items() if k != "version"})
        return validate(_legacy(attrs))


def validate(raw: Mapping[str, Any]) -> SweepSpec:
    """A spec from a mapping; InvalidInput names each bad field and its allowed range or values."""
    try:
        return SweepSpec.model_validate(dict(raw))
    except ValidationError as err:
        raise InvalidInput(describe(err)) from None


def _masked(text: str) -> str:
    return _QUERY.sub(r"\1?***", _USERINFO.sub("***@", text))


def describe(err: ValidationError) -> str:
    """pydantic's errors as `field: problem` (the range pydantic states: `>= 1`, `one of ...`), each
    with the value given, any credentials in a URI masked (`scheme://***@host`, `?***`)."""
    return "; ".join(
        f"{'.'.join(str(p) for p in e.get('loc', ())) or 'spec'}: {e.get('msg')}, "
        f"got {_masked(repr(e.get('input')))}"
        for e in err.errors()
    )


_USERINFO = re.compile(r"(?<=://)[^/@\s'\"]+@")  # the user:password@ part of a URI
_QUERY = re.compile(r"(?<=://)([^\s'\"?#]*)[?#][^\s'\"]*")  # a URI's query and fragment (tokens)


def _legacy(attrs: Mapping[str, Any]) -> dict[str, Any]:
    """A spec from the separate attributes a study stored before the spec existed; InvalidInput
    naming the attribute whose stored value has the wrong shape."""
    policy = _stored(attrs, study_attrs.EARLY_STOPPING, Mapping, {})
    stop = _stored(attrs, "study_stop", Mapping, {})
    warm = _stored(attrs, study_attrs.WARM_START, (Mapping, str), None)
    sampler = _stored(attrs, "sampler", str, DEFAULT_SAMPLER)
    studies = (
        _stored(warm, "studies", list, [None], "warm_start.studies") if isinstance(warm, Mapping) else [warm]
    )
    raw: dict[str, Any] = {
        "space": study_attrs.SPACE.of(attrs) or DEFAULT_SPACE,
        "overrides": attrs.get("overrides") or {},
        "sampler": RETIRED_SAMPLERS.get(sampler, sampler),
        "n_trials": attrs.get("n_trials") or DEFAULT_TRIALS,
        "parallel": attrs.get("parallel") or DEFAULT_PARALLEL,
        "scheduler": attrs.get("scheduler") or LEGACY_SCHEDULER,
        "keep_top": attrs.get("keep_top"),
        "warm_start": (studies or [None])[0],
        "seed": attrs.get("seed"),
        **{k: v for k, v in policy.items() if k in EarlyStopping.model_fields},
        **{k: v for k, v in stop.items() if k in StudyStop.model_fields},
    }
    return raw


def _stored(
    attrs: Mapping[str, Any], key: str, kind: type | tuple[type, ...], default: Any, name: str | None = None
) -> Any:
    """attrs[key] when it is of `kind`, `default` when absent or null; InvalidInput naming the
    attribute (`name`, default `key`) otherwise (a study written by another tool or by hand)."""
    value = attrs.get(key)
    if value is None:
        return default
    if not isinstance(value, kind):
        names = " or ".join(k.__name__ for k in (kind if isinstance(kind, tuple) else (kind,)))
        raise InvalidInput(f"attribute {name or key}: {str(value)[:80]!r} is not a {names}")
    return value
