"""`bench.multi_objective`'s replay under early stopping: trials pruned by MO-ASHA, the
hypervolume of what finished within each budget, the same answer for the same seed."""

from __future__ import annotations

import pytest

from bench import multi_objective as mo


@pytest.fixture(scope="module")
def replayed() -> dict:
    return mo.run_early_stopping(("random", "tiny", 0, 4, [4, 8]))


def test_early_stopping_prunes_and_counts_the_finished(replayed: dict) -> None:
    assert replayed["early_stopping"] is True
    assert replayed["started"] > replayed["complete"] >= 4  # MO-ASHA stopped some trials
    assert 0.0 < replayed["hv"]["4"] <= replayed["hv"]["8"]  # more budget, never a smaller front


def test_the_same_seed_replays_the_same(replayed: dict) -> None:
    again = mo.run_early_stopping(("random", "tiny", 0, 4, [4, 8]))
    assert (again["hv"], again["started"], again["complete"]) == (
        replayed["hv"],
        replayed["started"],
        replayed["complete"],
    )


def test_early_stopping_needs_the_learning_curves() -> None:
    with pytest.raises(SystemExit):
        mo.main(["--early-stopping", "--problems", "zdt1", "--report-only"])
