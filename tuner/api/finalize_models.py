"""Request and response models of the finalize endpoints (noise-aware finalisation, thesis Appendix 2.B)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class FinalizeRequest(BaseModel):
    """Body of POST /studies/{name}/finalize: rerun the `top` best configurations with `seeds` fresh seeds."""

    model_config = ConfigDict(extra="forbid")

    top: int = Field(3, ge=1, le=20, description="How many of the best COMPLETE configurations (1-20).")
    seeds: int = Field(3, ge=1, le=10, description="Fresh seeds per configuration (1-10).")
    parallel: int = Field(2, ge=1, le=64, description="Reruns in flight at once (1-64).")


class FinalizeProcess(BaseModel):
    pid: int
    running: bool
    returncode: int | None
    log: str


class FinalizeStarted(BaseModel):
    """Answer of POST /studies/{name}/finalize (202): the run is queued in a subprocess."""

    name: str
    state: Literal["queued"]
    top: int
    seeds: int
    parallel: int
    process: FinalizeProcess


class Rerun(BaseModel):
    seed: int
    val_loss: float | None
    test_loss: float | None = None
    run_dir: str | None = None
    best_checkpoint: str | None = None
    error: str | None = None


class Configuration(BaseModel):
    """One rerun configuration: its source trial, the reruns' mean ± sd (sample sd, null for n < 2)
    and the gap to the tuning run's own value (positive: the tuning run was lucky)."""

    trial: int
    params: dict[str, Any]
    n: int
    failed: int
    source_value: float
    val_loss_mean: float | None
    val_loss_sd: float | None
    gap: float | None
    headline: Literal["ppl", "bpc"]
    source_headline: float | None
    headline_mean: float | None
    headline_sd: float | None
    headline_gap: float | None
    test_loss_mean: float | None
    test_loss_sd: float | None
    reruns: list[Rerun]


class Winner(BaseModel):
    """The study's best under its `best_by` rule."""

    trial: int
    value: float | None
    by: Literal["tuning", "rerun_mean"]


class FinalizeReport(BaseModel):
    """Answer of GET /studies/{name}/finalize."""

    name: str
    state: str = Field(description="none, queued, running, finished, stopped or failed")
    status: dict[str, Any] | None
    best_by: Literal["tuning", "rerun_mean"]
    configurations: list[Configuration]
    best_by_rerun_mean: Configuration | None
    best: Winner | None
    process: FinalizeProcess | None
