"""Pydantic request and response models of the study API (they are also its OpenAPI schema)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from tuner.search import DEFAULT_SAMPLER, SAMPLERS
from tuner.study import SCHEDULERS

STUDY_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$"
STATES = ("COMPLETE", "PRUNED", "FAIL", "RUNNING", "WAITING")
SPACE_NAME_PATTERN = r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$"
SamplerName = Literal[SAMPLERS]  # type: ignore[valid-type]
SchedulerName = Literal[SCHEDULERS]  # type: ignore[valid-type]
TrialState = Literal[STATES]  # type: ignore[valid-type]
Scalar = bool | int | float | str


class ErrorBody(BaseModel):
    """Every 4xx/5xx answer: `detail` says what was wrong, naming the field and allowed values."""

    detail: str
    errors: list[dict[str, Any]] | None = None


class Overrides(BaseModel):
    """Changes on top of the named space: `ranges` ({name: "low:high[:scale]"}) and `set`
    ({trainer setting: value}; fixing a tuned hyperparameter removes it from the tuned ones)."""

    model_config = ConfigDict(extra="forbid")

    ranges: dict[str, str] = Field(default_factory=dict)
    set: dict[str, Scalar] = Field(default_factory=dict)


class CreateStudy(BaseModel):
    """Body of POST /studies."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=STUDY_NAME_PATTERN, description="Unique study name.")
    space: Annotated[str, Field(pattern=SPACE_NAME_PATTERN)] | dict[str, Any] = Field(
        description="A search-space name (see `rnntune spaces`) or an inline space definition "
        "(`fixed` and `params` as in search_spaces/*.yaml)."
    )
    sampler: SamplerName = Field(default=DEFAULT_SAMPLER)
    n_trials: int = Field(ge=1, le=100_000, description="Trials to run in all.")
    parallel: int = Field(default=2, ge=1, le=1024, description="Trials in flight at once.")
    scheduler: SchedulerName = Field(default="asha", description="Early stopping of poor trials.")
    seed: int | None = Field(default=None, ge=0, le=2**32 - 1, description="Sampler seed.")
    overrides: Overrides = Field(default_factory=Overrides)


class Counts(BaseModel):
    COMPLETE: int = 0
    PRUNED: int = 0
    FAIL: int = 0
    RUNNING: int = 0
    WAITING: int = 0


class DriverLease(BaseModel):
    """The study's driver lease: whether a sweep process (from any API or command line) drives it."""

    state: Literal["live", "expired", "stopped"]
    host: str | None
    pid: int | None
    expires_at: float
    stop_requested: bool


class SweepProcess(BaseModel):
    """The sweep subprocess this API started for the study, if any."""

    pid: int
    running: bool
    returncode: int | None
    log: str


class StudySummary(BaseModel):
    name: str
    status: str
    direction: str
    space: str | None
    sampler: str | None
    n_trials: int | None
    parallel: int | None
    created_at: str | None
    counts: Counts
    best_value: float | None
    progress: float | None = Field(description="Finished trials / n_trials, in [0, 1].")


class TrialSummary(BaseModel):
    number: int
    state: str
    value: float | None
    params: dict[str, Any]
    datetime_start: str | None
    datetime_complete: str | None
    node: Any = None
    wall_time_s: float | None = None
    error: str | None = None


class CurvePoint(BaseModel):
    step: int
    value: float | None


class TrialDetail(TrialSummary):
    distributions: dict[str, dict[str, Any]]
    learning_curve: list[CurvePoint]
    user_attrs: dict[str, Any]


class StudyDetail(StudySummary):
    storage_path: str | None
    user_attrs: dict[str, Any]
    best_trial: TrialSummary | None
    process: SweepProcess | None
    driver: DriverLease | None


class Page(BaseModel):
    total: int
    offset: int
    limit: int


class StudyPage(Page):
    items: list[StudySummary]


class TrialPage(Page):
    items: list[TrialSummary]


class Neighbour(BaseModel):
    number: int
    value: float
    delta: float = Field(description="How much worse than the best trial's objective (>= 0).")
    params: dict[str, Any]


class NeighbourhoodSummary(BaseModel):
    count: int
    max_delta: float | None
    mean_delta: float | None
    median_delta: float | None


class BestRef(BaseModel):
    number: int
    value: float
    params: dict[str, Any]


class Sensitivity(BaseModel):
    """Thesis Appendix 2.B as data: the best trial, its neighbourhood, importances."""

    fraction: float
    n_completed: int
    best: BestRef
    windows: dict[str, dict[str, Any]]
    neighbours: list[Neighbour]
    summary: NeighbourhoodSummary
    importance_method: str
    importances: dict[str, float] | None
    importance_note: str | None


class ParallelCoordinates(BaseModel):
    """A plotly figure (`figure`: data + layout) and the trial drawn as each line."""

    figure: dict[str, Any]
    trial_numbers: list[int]
    neighbourhood: list[int]


class Action(BaseModel):
    """Answer of start/stop: the study's status after the action."""

    name: str
    status: str
    process: SweepProcess | None
    driver: DriverLease | None
