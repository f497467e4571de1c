"""Response model of GET /compare: studies of one task side by side (tuner.analysis.compare)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field


class Curve(BaseModel):
    """Expected best value of n trials drawn from the COMPLETE ones (Dodge et al. 2019), with its
    bootstrap band; `steps` and `seconds` are what n trials cost in this study (n × its compute
    per COMPLETE trial, pruned and failed trials' compute included)."""

    n: list[int]
    expected: list[float]
    low: list[float]
    high: list[float]
    steps: list[float] | None
    seconds: list[float] | None


class RerunSummary(BaseModel):
    """One rerun configuration of `rnntune finalize`: mean ± sd (sample sd) of its reruns."""

    trial: int
    n: int
    failed: int
    source_value: float
    val_loss_mean: float | None
    val_loss_sd: float | None
    gap: float | None
    headline: Literal["ppl", "bpc"]
    headline_mean: float | None
    headline_sd: float | None


class FinalizeCall(BaseModel):
    """How to run the reruns: the command, or the REST call."""

    command: str
    method: Literal["POST"]
    path: str
    body: dict[str, int]


class Finalized(BaseModel):
    state: str = Field(description="`none` when finalize never ran, else the finalize_status state.")
    configurations: list[RerunSummary]
    best: RerunSummary | None = Field(description="The configuration with the lowest rerun mean.")
    run: FinalizeCall | None = Field(description="Present when no rerun finished yet.")


class ComparedStudy(BaseModel):
    name: str
    model: str = Field(description="The cell the study trains (or the cells it tunes).")
    space: str | None
    status: str
    counts: dict[str, int]
    n_complete: int
    best_value: float | None
    steps: int = Field(description="Training steps of its finished trials (pruned: the steps they ran).")
    trial_seconds: float = Field(description="Sum of its finished trials' start-to-end seconds.")
    steps_per_complete: float | None
    seconds_per_complete: float | None
    curve: Curve | None
    finalize: Finalized


class Test(BaseModel):
    """Bootstrap of E_a[best of n_a] − E_b[best of n_b]: its estimate, standard error and interval."""

    n_a: int
    n_b: int
    difference: float
    se: float
    ci_low: float
    ci_high: float
    separable: bool
    better: str | None
    worse: str | None
    by: float
    steps: int | None = Field(description="The training steps both spent (the test at equal steps).")


class Verdict(BaseModel):
    a: str
    b: str
    state: Literal["separable", "not_separable", "insufficient"]
    n: int | None = Field(description="Trials per study the verdict is at: the most both have.")
    confidence: float
    text: str
    trials: Test | None = Field(description="The test at n trials each.")
    steps: Test | None = Field(description="The same test at the most training steps both spent.")


class CompareBootstrap(BaseModel):
    """How `GET /compare` resampled: replicates, band and test settings, seed."""

    replicates: int
    band: float
    band_kind: Literal["basic"]
    test_confidence: float
    test_kind: Literal["percentile"]
    seed: int


class Comparison(BaseModel):
    """Studies of one task compared: curves, reruns and a verdict per pair (docs/compare.md)."""

    studies: list[ComparedStudy]
    direction: Literal["minimize", "maximize"]
    task: dict[str, Any] = Field(description="The task settings the studies share.")
    task_keys: list[str]
    bootstrap: CompareBootstrap
    test: str
    verdicts: list[Verdict]
