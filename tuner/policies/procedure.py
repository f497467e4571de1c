"""The tuning procedure a sweep follows, chosen by its spec's `procedure`: rnntune's or the paper's.

`rnntune` (the default): the space's `sweep:` block gives the sampler and trial count the sweep
does not name itself; early stopping (adaptive ASHA unless `scheduler` says otherwise) prunes poor
trials; a trial whose training still diverges after its `divergence_restores` FAILs.

`paper`: the procedure behind the papers' tables.
* Every trial trains to its full budget, nothing is pruned (scheduler `none`), unless the space's
  block says its paper stopped trials early (`early_stopping: true`: Circling Back §5, "a much
  better fit with early stopping, which is what we do on Enwik8 and Text8"; the rule is not given,
  so rnntune's early stopping runs, and its settings may be given). Circling Back §7:
  "the best hyperparameters were selected from a random pool of 60 candidates", each trained in
  full; the Mogrifier paper (§3.3, App. A) tunes with Google Vizier's batched GP bandit, and every
  trial config lamb published for it (lamb/experiment/mogrifier/config/*/trial_*/config) has
  `early_stopping_turns -1`: no early stopping.
* The space's `sweep:` block is taken whole: its sampler and trial count. A space whose paper
  names neither has no block; its sweep keeps the spec's sampler and trial count.
* A trial whose training diverges past its restores is COMPLETE at the best validation loss it
  reached, with the step it diverged at stored as `diverged_at`. lamb's `TrainingMonitor`
  (lamb/monitoring.py) keeps the best validation cross-entropy seen (`best_xe`) and ends the run
  with it; the Mogrifier recipe has no restart (`divergence_restores: 0`). lamb's monitor tells its
  tuner a trial is infeasible only when a validation loss itself is NaN; rnntune's trainer stops
  before it evaluates diverged weights, so every evaluation it reported is finite and the best of
  them stands: our reading of lamb, stated in docs/sweeps.md. A trial that diverges before its
  first evaluation has no value and FAILs under either procedure.

Where the sweep says otherwise: a trial count, a seed, the placement and the study-level stop rules
(`budget`, `patience`, `max_hours`) given explicitly win (they size or end the search, each trial
still trains in full); a sampler other than the block's, a scheduler other than `none`, or an
early-stopping setting contradict the procedure and are refused, naming the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tuner.errors import InvalidInput
from tuner.policies.early_stopping import EarlyStopping

PROCEDURES = ("rnntune", "paper")
DEFAULT_PROCEDURE = "rnntune"
PAPER = "paper"
PAPER_SCHEDULER = "none"  # every trial trains to the end (tuner.policies.schedulers: FIFO)
# The fields of a space's `sweep:` block that are spec fields (`early_stopping` is the procedure's).
SEARCH_FIELDS = ("sampler", "n_trials")
# ASHA's settings: meaningless without early stopping.
EARLY_STOPPING_FIELDS = tuple(EarlyStopping.model_fields)


def paper_scheduler_error(scheduler: str) -> str | None:
    """Why `scheduler` contradicts `procedure: paper` on a space whose paper trained every trial
    in full (None when it does not: `none`)."""
    if scheduler == PAPER_SCHEDULER:
        return None
    return (
        f"procedure paper trains every trial to its full budget, as this space's paper did (no "
        f"early stopping): only scheduler {PAPER_SCHEDULER!r}, or leave scheduler out"
    )


def space_fields(
    procedure: str, block: Mapping[str, Any], explicit: Mapping[str, Any], default_scheduler: str
) -> dict[str, Any]:
    """The spec fields a space's `sweep:` block (`block`) sets for a sweep that gave `explicit`
    fields itself: the block's sampler and trial count the sweep did not give, under either
    procedure. Under `paper`, also scheduler `none` unless the block says the paper stopped trials
    early; InvalidInput naming `sampler` when the sweep names another sampler than the block's
    (the paper's sampler is the procedure), and naming `scheduler` or each early-stopping setting
    given where the paper trained every trial in full. `default_scheduler`: rnntune's, which
    runs where the paper stopped trials early and the sweep names none."""
    fields = {k: v for k, v in block.items() if k in SEARCH_FIELDS and explicit.get(k) is None}
    if procedure != PAPER:
        return fields
    wanted, sampler = block.get("sampler"), explicit.get("sampler")
    if wanted is not None and sampler is not None and sampler != wanted:
        raise InvalidInput(
            f"sampler: procedure paper uses the space's own sampler {wanted!r} (its `sweep:` "
            f"block, the paper's search), not {sampler!r}: leave sampler out, or use procedure rnntune"
        )
    if block.get("early_stopping"):  # the spec's default under paper is `none`: rnntune's instead
        return {**fields, "scheduler": explicit.get("scheduler") or default_scheduler}
    given = [name for name in EARLY_STOPPING_FIELDS if explicit.get(name) is not None]
    if given:
        raise InvalidInput(
            f"{', '.join(given)}: early-stopping settings; procedure paper stops no trial early "
            f"on this space (scheduler {PAPER_SCHEDULER!r}): leave them out, or use procedure rnntune"
        )
    scheduler = explicit.get("scheduler")
    if scheduler is not None and (problem := paper_scheduler_error(scheduler)):
        raise InvalidInput(f"scheduler: {problem}")
    return {**fields, "scheduler": PAPER_SCHEDULER}


def keeps_diverged(procedure: str) -> bool:
    """Whether a trial that diverged past its restores is COMPLETE at its best value (`paper`)
    rather than FAIL (`rnntune`)."""
    return procedure == PAPER


def describe(procedure: str, scheduler: str = PAPER_SCHEDULER) -> str | None:
    """The sweep header's `procedure:` line; None for rnntune's (its early-stopping line says it)."""
    if procedure != PAPER:
        return None
    trains = (
        "every trial trains to the end"
        if scheduler == PAPER_SCHEDULER
        else "trials stopped early as the paper did (its rule unstated: the early-stopping line below)"
    )
    return (
        f"procedure: paper - sampler and trials from the space's sweep: block unless given; {trains}; "
        "a trial that diverges is COMPLETE at its best validation loss, with diverged_at"
    )
