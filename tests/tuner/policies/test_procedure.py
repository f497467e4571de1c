"""The tuning procedure's decisions (tuner/policies/procedure.py) with plain values: which spec
fields a space's `sweep:` block sets under each procedure, what contradicts `procedure: paper`,
and what becomes of a diverged trial."""

from __future__ import annotations

import pytest

from tuner.errors import InvalidInput
from tuner.policies import procedure

POOL = {"sampler": "random", "n_trials": 60}  # Circling Back §7's block
EARLY = {**POOL, "early_stopping": True}  # its Enwik8 and Text8 spaces' (§5: stopped early)
# What `paper` adds where the paper trained every trial in full.
IN_FULL = {"rnntune": {}, "paper": {"scheduler": "none"}}


@pytest.mark.parametrize("name", procedure.PROCEDURES)
def test_the_block_fills_what_the_sweep_did_not_give(name):
    full = IN_FULL[name]
    assert procedure.space_fields(name, POOL, {}, "adaptive") == {**POOL, **full}
    assert procedure.space_fields(name, POOL, {"n_trials": 5, "seed": 1}, "adaptive") == {
        "sampler": "random",
        **full,
    }
    assert procedure.space_fields(name, POOL, {"sampler": "random", "n_trials": None}, "adaptive") == {
        "n_trials": 60,
        **full,
    }
    assert procedure.space_fields(name, {}, {"sampler": "tpe"}, "adaptive") == full
    # `early_stopping` is the procedure's to read, never a spec field; under paper it keeps
    # rnntune's early stopping (the spec's default under paper is `none`).
    early = {"scheduler": "adaptive"} if name == "paper" else {}
    assert procedure.space_fields(name, EARLY, {}, "adaptive") == {**POOL, **early}


def test_paper_stops_early_where_the_paper_did_with_the_settings_given():
    """Circling Back §5 stopped its Enwik8 and Text8 trials early without giving the rule: under
    `paper` those spaces keep rnntune's early stopping, and its settings may be given."""
    given = {"scheduler": "asha", "grace_steps": 100}
    assert procedure.space_fields("paper", EARLY, given, "adaptive") == {**POOL, "scheduler": "asha"}
    assert procedure.describe("paper", "adaptive") == (
        "procedure: paper - sampler and trials from the space's sweep: block unless given; trials "
        "stopped early as the paper did (its rule unstated: the early-stopping line below); a trial "
        "that diverges is COMPLETE at its best validation loss, with diverged_at"
    )
    assert "every trial trains to the end" in (procedure.describe("paper", "none") or "")


@pytest.mark.parametrize("scheduler", ["adaptive", "asha", "median", "pbt"])
def test_paper_refuses_a_scheduler_that_stops_early_where_the_paper_did_not(scheduler):
    with pytest.raises(InvalidInput, match=r"^scheduler: procedure paper trains every trial"):
        procedure.space_fields("paper", POOL, {"scheduler": scheduler}, "adaptive")
    assert procedure.space_fields("paper", POOL, {"scheduler": "none"}, "adaptive") == {
        **POOL,
        "scheduler": "none",
    }


def test_rnntune_lets_the_sweep_override_the_block_and_keep_early_stopping():
    fields = procedure.space_fields("rnntune", POOL, {"sampler": "tpe", "grace_steps": 100}, "adaptive")
    assert fields == {"n_trials": 60}


def test_paper_refuses_another_sampler_than_the_block_names():
    with pytest.raises(
        InvalidInput, match=r"^sampler: procedure paper uses the space's own sampler 'random'"
    ):
        procedure.space_fields("paper", POOL, {"sampler": "tpe"}, "adaptive")


def test_paper_takes_any_sampler_where_the_space_names_none():
    assert procedure.space_fields("paper", {}, {"sampler": "tpe"}, "adaptive") == {"scheduler": "none"}


@pytest.mark.parametrize("field", procedure.EARLY_STOPPING_FIELDS)
def test_paper_refuses_early_stopping_settings_by_name(field):
    with pytest.raises(InvalidInput, match=rf"^{field}: early-stopping settings; procedure paper"):
        procedure.space_fields("paper", {}, {field: 3}, "adaptive")


def test_only_the_scheduler_none_agrees_with_paper():
    assert procedure.paper_scheduler_error("none") is None
    for scheduler in ("adaptive", "asha", "median"):
        assert "only scheduler 'none'" in (procedure.paper_scheduler_error(scheduler) or "")


def test_only_paper_keeps_a_diverged_trial_and_says_so_in_the_header():
    assert procedure.keeps_diverged("paper") and not procedure.keeps_diverged("rnntune")
    assert procedure.describe("rnntune") is None
    assert (procedure.describe("paper") or "").startswith("procedure: paper - ")
