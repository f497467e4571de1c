"""A trial's config going out across Ray: `TrialConfig`, what the driver hands a trial process.

Ray Tune passes a trial its config as a dict (and the population schedulers perturb
`config["trainer"]` in place), so it crosses as one: built with `to_tune`, read back on the other
side with `from_tune`. Nothing here imports Ray.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Membership:
    """A population member's part (scheduler pbt/pb2): the perturbation interval in steps and the
    mutable settings (tuner.policies.population_rules)."""

    interval: int
    mutable: tuple[str, ...]


@dataclass(frozen=True)
class TrialConfig:
    """The study trial's number, its trainer settings (`TrainConfig` fields, run_dir included), the
    checkpoint a trained-model study evaluates, the bounds the trial process checks before
    training when the driver could not, a population member's part, and the object store location
    (`s3://BUCKET/PREFIX`) its run folder is copied to in a study kept there."""

    trainer: dict[str, Any]
    trial_number: int | None = None
    checkpoint: str | None = None
    bounds: tuple[str, ...] = ()
    population: Membership | None = None
    objects: str | None = None

    def to_tune(self) -> dict[str, Any]:
        """The dict Tune carries (the keys of what is set only)."""
        out: dict[str, Any] = {"trainer": dict(self.trainer)}
        if self.trial_number is not None:
            out["trial_number"] = self.trial_number
        if self.checkpoint:
            out["checkpoint"] = self.checkpoint
        if self.bounds:
            out["bounds"] = list(self.bounds)
        if self.objects:
            out["objects"] = self.objects
        if self.population is not None:
            out["population"] = {
                "interval": self.population.interval,
                "mutable": list(self.population.mutable),
            }
        return out

    @classmethod
    def from_tune(cls, config: Mapping[str, Any]) -> TrialConfig:
        """The config a Tune dict carries (other keys Tune adds are ignored)."""
        number, population = config.get("trial_number"), config.get("population")
        return cls(
            trainer=dict(config["trainer"]),
            trial_number=None if number is None else int(number),
            checkpoint=config.get("checkpoint") or None,
            bounds=tuple(config.get("bounds") or ()),
            objects=config.get("objects") or None,
            population=(
                Membership(int(population["interval"]), tuple(population["mutable"])) if population else None
            ),
        )
