"""Pydantic request and response models of the study API (they are also its OpenAPI schema)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from tuner.space import list_spaces
from tuner.spec import NAME_PATTERN, SweepSpec

STATES = ("COMPLETE", "PRUNED", "FAIL", "RUNNING", "WAITING")
TrialState = Literal[STATES]  # type: ignore[valid-type]


class ErrorBody(BaseModel):
    """Every 4xx/5xx answer: `detail` says what was wrong, naming the field and allowed values."""

    detail: str
    errors: list[dict[str, Any]] | None = None


def _known_spaces(schema: dict[str, Any]) -> None:
    """The schema's `space` names are the spaces this server knows (`rnntune spaces`), listed when
    the schema is made."""
    for branch in schema.get("properties", {}).get("space", {}).get("anyOf", []):
        if branch.get("type") == "string":
            branch["enum"] = sorted(list_spaces())


class CreateStudy(SweepSpec):
    """Body of POST /studies: the study's name and its sweep spec (`tuner.spec.SweepSpec`, where every
    option's range and meaning is declared once)."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=_known_spaces)

    name: str = Field(pattern=NAME_PATTERN, description="Unique study name.")

    def spec(self) -> SweepSpec:
        """The body's spec with only the fields the body gave marked as set: the space's `sweep:`
        block fills the others (tuner.sweeps.study.create.explicit_fields)."""
        return SweepSpec.model_validate(self.model_dump(exclude={"name"}, exclude_unset=True))


class WidenRange(BaseModel):
    """Body of POST /studies/{name}/widen: which range to widen, and how many trials to add."""

    model_config = ConfigDict(extra="forbid")

    param: str = Field(min_length=1, max_length=64, description="A tuned, non-categorical parameter.")
    edge: Literal["low", "high", "both"] | None = Field(
        default=None, description="The edge to move out; null: the edge the study's boundary alert names."
    )
    add_trials: int = Field(
        default=0,
        ge=0,
        le=100_000,
        description="Trials to add to the study's count (to sample the wider range).",
    )


class Widening(BaseModel):
    """One widened range, as stored in the study's `widened` history."""

    param: str
    edge: Literal["low", "high", "both"]
    old: list[float]
    new: list[float]
    at: str
    trials_before: int = Field(description="Finished trials when the range was widened.")


class WarmStart(BaseModel):
    """The studies whose trials a warm-started study's sampler takes as prior data."""

    studies: list[str]
    trials: int = Field(description="Their usable trials (COMPLETE, PRUNED with a curve) at creation.")


class WidenResult(BaseModel):
    """Answer of POST /studies/{name}/widen: the change, the study's trial count and status."""

    name: str
    change: Widening
    n_trials: int
    status: str


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
    problem: str | None = Field(
        None,
        description="Why this server cannot read the study's stored attributes (naming the attribute); "
        "its own page answers 409 with the same text. Null for a readable study.",
    )
    sweep_family: Literal["early_stopped", "population", "trained_model"] | None = Field(
        None,
        description="How the sweep runs (its kind's family, tuner.policies.kinds): trials stopped "
        "early or not, a population (pbt, pb2), or trials of a trained model (dynamic evaluation). "
        "Null for an unreadable study.",
    )


class TrialSummary(BaseModel):
    number: int
    state: str
    value: float | None
    params: dict[str, Any] = Field(
        description="The hyperparameters its model was trained with: for a population member "
        "(scheduler pbt/pb2), those in force at its end after its copies, the shape copied included."
    )
    initial_params: dict[str, Any] | None = Field(
        None,
        description="A population member's initial settings: Optuna's params, as first sampled "
        "for it (a copy may have replaced them); null for any other trial.",
    )
    problem: str | None = Field(
        None, description="Why its stored population history (`pbt_history`) cannot be read, if so."
    )
    datetime_start: str | None
    datetime_complete: str | None
    node: Any = None
    wall_time_s: float | None = None
    seconds_per_step: float | None = Field(
        None, description="Measured training seconds per step (cost-aware search fits it)."
    )
    device: str | None = Field(None, description="The device the trial trained on (cpu, cuda:0, ...).")
    cuda_path_used: str | None = Field(
        None,
        description="The training path it took: graphs (CUDA graphs of compiled steps), eager (CUDA "
        "without them: cuda_path eager, or after a failure of the fast path), cpu, or compiled (tests).",
    )
    cuda_path_calls: dict[str, int] | None = Field(
        None,
        description="Training calls per path at its last evaluation (cpu, eager, compiled, graphs; "
        "+fused_rounds where mogrifier_kernel fused ran the Mogrifier rounds).",
    )
    diverged_at: int | None = Field(
        None,
        description="The step training diverged at after its divergence_restores: the trial FAILed "
        "(procedure rnntune), or is COMPLETE at its best validation loss before it (procedure paper).",
    )
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
    warm_start: WarmStart | None = None
    widened: list[Widening] = Field(default_factory=list, description="Ranges widened, oldest first.")
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
    state: Literal["COMPLETE", "PRUNED"]
    step: int | None = Field(description="The step a PRUNED trial was stopped at; null for COMPLETE.")
    value: float = Field(description="The objective (COMPLETE) or the value reported at `step` (PRUNED).")
    delta: float | None = Field(
        description="How much worse than the best trial at the same fidelity: its objective for a "
        "COMPLETE trial, its value at `step` for a PRUNED one (null if the best has none there)."
    )
    params: dict[str, Any]


class NeighbourhoodSummary(BaseModel):
    """`count` neighbours; the delta statistics are over the COMPLETE ones (final results)."""

    count: int
    count_complete: int
    count_pruned: int
    max_delta: float | None
    mean_delta: float | None
    median_delta: float | None
    pruned_mean_delta: float | None = Field(description="Mean delta of PRUNED neighbours, each at its step.")


class BestRef(BaseModel):
    number: int
    value: float
    params: dict[str, Any]


class ImportanceFidelity(BaseModel):
    """Which trials importances rest on: all at the objective (`step` null) or at one eval step."""

    step: int | None
    kind: Literal["objective", "step"]
    n_trials: int
    n_complete: int
    n_pruned: int
    min_trials: int = Field(description="Trials the rule asks for at a fidelity (2 (d + 1)).")


class Sensitivity(BaseModel):
    """Thesis Appendix 2.B as data: the best COMPLETE trial, its neighbourhood, importances."""

    fraction: float
    include: Literal["all", "complete"]
    n_completed: int
    n_pruned: int = Field(description="PRUNED trials looked at (0 with include=complete).")
    best: BestRef
    windows: dict[str, dict[str, Any]]
    neighbours: list[Neighbour]
    summary: NeighbourhoodSummary
    importance_method: str
    importances: dict[str, float] | None
    importance_fidelity: ImportanceFidelity
    importance_note: str | None


class ParamImportance(BaseModel):
    name: str
    importance: float
    ci_low: float
    ci_high: float


class ImportancesBootstrap(BaseModel):
    """How the importances were resampled: resamples, their size, seed, confidence."""

    resamples: int
    resample_size: int = Field(description="Trials drawn per resample (m of n beyond 100).")
    seed: int
    confidence: float
    resamples_used: int | None = None


class Importances(BaseModel):
    """Importances with bootstrap confidence intervals, most important first."""

    method: str
    include: Literal["all", "complete"]
    fidelity: ImportanceFidelity
    n_trials: int
    step: int | None = Field(description="The eval step compared at; null: the COMPLETE objective.")
    bootstrap: ImportancesBootstrap
    importances: list[ParamImportance] | None
    note: str | None


class ParallelCoordinates(BaseModel):
    """A plotly figure (`figure`: data + layout) and, per line, its trial, state and stop step."""

    figure: dict[str, Any]
    trial_numbers: list[int]
    states: list[Literal["COMPLETE", "PRUNED"]]
    steps: list[int | None]
    neighbourhood: list[int]


class Action(BaseModel):
    """Answer of start/stop: the study's status after the action."""

    name: str
    status: str
    process: SweepProcess | None
    driver: DriverLease | None


class FrontObjective(BaseModel):
    name: str
    direction: Literal["minimize", "maximize"]


class FrontTrial(BaseModel):
    """A COMPLETE trial on the objectives' axes."""

    number: int
    values: dict[str, float] = Field(description="The study's objectives, by name.")
    measures: dict[str, float] = Field(description="Every measure the trial recorded, by name.")
    feasible: bool = Field(description="Keeps every constraint of the study.")
    on_front: bool = Field(description="Feasible and dominated by no other feasible trial.")
    has_checkpoint: bool


class ParetoFront(BaseModel):
    """GET /studies/{name}/pareto: the non-dominated feasible COMPLETE trials (`front`) and every
    other COMPLETE trial with its objectives measured (`trials`), for the front plot."""

    objectives: list[FrontObjective]
    constraints: list[str]
    front: list[int] = Field(description="Numbers of the trials on the front, by the first objective.")
    trials: list[FrontTrial]
    chosen: int | None = Field(default=None, description="The trial `rule` picks from the front, if given.")
