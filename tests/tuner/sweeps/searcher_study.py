"""A StudySearcher on a fresh SQLite study of the `tiny` space, driven with plain dicts (no Ray)."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import TINY_SETTINGS
from tuner.errors import LeaseLost
from tuner.space import SearchSpace
from tuner.storage.study import load_study
from tuner.sweeps.drive.searcher import StudySearcher
from tuner.sweeps.study.create import create_study


class Fence:
    """A driver's lease that a test can take away (`holds = False`)."""

    def __init__(self) -> None:
        self.holds = True

    def check(self) -> None:
        if not self.holds:
            raise LeaseLost("lease lost: another driver took over")


def make_searcher(
    root: Path, name: str, n_trials: int, fence: Fence | None = None
) -> tuple[StudySearcher, str]:
    """The searcher (its storage root `root`) and the study's database URL."""
    db = f"sqlite:///{root / 's.db'}"
    create_study(
        name, storage_url=db, space="tiny", storage_path=root / name, overrides={"set": TINY_SETTINGS},
        sampler="random", scheduler="none", seed=0, n_trials=n_trials,
    )  # fmt: skip
    study = load_study(name, db)
    space = SearchSpace.from_dict(study.user_attrs["space_def"])
    return StudySearcher(study, space, root, n_trials, fence=fence), db
