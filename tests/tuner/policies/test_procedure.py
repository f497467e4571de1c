"""The tuning procedure's decisions (tuner/policies/procedure.py) with plain values: which spec
fields a space's `sweep:` block sets under each procedure, what contradicts `procedure: paper`,
and what becomes of a diverged trial."""

from __future__ import annotations

import pytest

from tuner.errors import InvalidInput
from tuner.policies import procedure

POOL = {"sampler": "random", "n_trials": 60}  # Circling Back §7's block


@pytest.mark.parametrize("name", procedure.PROCEDURES)
def test_the_block_fills_what_the_sweep_did_not_give(name):
    assert procedure.space_fields(name, POOL, {}) == POOL
    assert procedure.space_fields(name, POOL, {"n_trials": 5, "seed": 1}) == {"sampler": "random"}
    assert procedure.space_fields(name, POOL, {"sampler": "random", "n_trials": None}) == {"n_trials": 60}
    assert procedure.space_fields(name, {}, {"sampler": "tpe"}) == {}


def test_rnntune_lets_the_sweep_override_the_block_and_keep_early_stopping():
    fields = procedure.space_fields("rnntune", POOL, {"sampler": "tpe", "grace_steps": 100})
    assert fields == {"n_trials": 60}


def test_paper_refuses_another_sampler_than_the_block_names():
    with pytest.raises(
        InvalidInput, match=r"^sampler: procedure paper uses the space's own sampler 'random'"
    ):
        procedure.space_fields("paper", POOL, {"sampler": "tpe"})


def test_paper_takes_any_sampler_where_the_space_names_none():
    assert procedure.space_fields("paper", {}, {"sampler": "tpe"}) == {}


@pytest.mark.parametrize("field", procedure.EARLY_STOPPING_FIELDS)
def test_paper_refuses_early_stopping_settings_by_name(field):
    with pytest.raises(InvalidInput, match=rf"^{field}: early-stopping settings; procedure paper"):
        procedure.space_fields("paper", {}, {field: 3})


def test_only_the_scheduler_none_agrees_with_paper():
    assert procedure.paper_scheduler_error("none") is None
    for scheduler in ("adaptive", "asha", "median"):
        assert "only scheduler 'none'" in (procedure.paper_scheduler_error(scheduler) or "")


def test_only_paper_keeps_a_diverged_trial_and_says_so_in_the_header():
    assert procedure.keeps_diverged("paper") and not procedure.keeps_diverged("rnntune")
    assert procedure.describe("rnntune") is None
    assert (procedure.describe("paper") or "").startswith("procedure: paper - ")
