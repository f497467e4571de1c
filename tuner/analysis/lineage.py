"""A population-based-training study read back (scheduler pbt/pb2, tuner.policies.population_rules): its
members' curves and histories, and the settings a member's weights were trained with, followed
through the checkpoints it copied, as a trainer config whose `schedule` replays them.

Each member is one trial whose `pbt_history` lists segments in step order: from `step` on it
trained with `settings`, after replacing its weights by trial `from_trial`'s checkpoint of that
step when `from_trial` is set (tuner.policies.population_history). A stored history is data: it
is checked before it is followed (`parse_history`), a malformed one a ValueError naming the trial
and the attribute. Pure functions of plain values: no Ray, no database.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from pathlib import PurePath
from typing import Any

from tuner.analysis.records import TrialRecord
from tuner.policies.kinds import kind
from tuner.policies.population_history import HistoryError, parse_history
from tuner.spec import SweepSpec
from tuner.storage import trial_attrs

Segment = Mapping[str, Any]
# The trial states a population view lists (a WAITING trial has not trained yet).
MEMBER_STATES = ("COMPLETE", "PRUNED", "FAIL", "RUNNING")
# Where a replay trains, relative to the folder `rnntune train` runs in: never the member's own
# run folder (an absolute path in the study's storage), whose checkpoint a replay would overwrite.
REPLAY_ROOT = "runs"


def population_spec(study_attrs: Mapping[str, Any]) -> SweepSpec | None:
    """The stored spec of a population study (scheduler pbt or pb2), else None."""
    spec = SweepSpec.stored_in(study_attrs)
    return spec if spec is not None and kind(spec.scheduler).population else None


def histories(trials: Iterable[TrialRecord]) -> dict[int, list[dict[str, Any]]]:
    """Every trial's `pbt_history` by number (those without one left out): what `lineage` follows.
    ValueError (a HistoryError) naming the trial and the attribute for a malformed one."""
    found = {t.number: _history(t) for t in trials}
    return {number: history for number, history in found.items() if history}


def _history(trial: TrialRecord) -> list[dict[str, Any]] | None:
    try:
        return parse_history(trial_attrs.PBT_HISTORY.of(trial.user_attrs))
    except HistoryError as err:
        raise HistoryError(f"trial {trial.number}: {err}") from None


def lineage(
    histories: Mapping[int, Sequence[Segment]], number: int, final_step: int | None = None
) -> list[dict[str, Any]]:
    """The settings trial `number`'s weights were trained with (before `final_step`, if given):
    `{"step", "settings", "trial"}` from step 0 on, `trial` the member that trained from that step,
    consecutive equal settings merged (the earlier entry kept). A copy at step S brings the source's
    own lineage below S. ValueError when a history needed is missing or does not reach step 0."""
    entries = _unmerged(histories, number, final_step)
    if not entries or entries[0]["step"] != 0:
        raise ValueError(f"the history of trial {number} does not reach back to step 0")
    merged = [entries[0]]
    for entry in entries[1:]:
        if entry["settings"] != merged[-1]["settings"]:
            merged.append(entry)
    return merged


def _unmerged(
    histories: Mapping[int, Sequence[Segment]], number: int, final_step: int | None
) -> list[dict[str, Any]]:
    """`lineage` before merging: the member's segments below `final_step`, back to its last copy,
    after the source's lineage up to that copy's step. A loop, not a recursion (a stored history
    may chain thousands of copies); each copy's step is lower, so the walk ends."""
    pieces: list[list[dict[str, Any]]] = []
    steps: dict[int, list[int]] = {}
    current: int | None = number
    while current is not None:
        if current not in histories:
            raise ValueError(f"trial {current} has no population history")
        own: list[dict[str, Any]] = []
        member, current = current, None
        segments = histories[member]  # in step order: skip those at or past `final_step` at once
        if member not in steps:
            steps[member] = [int(s["step"]) for s in segments]
        end = len(segments) if final_step is None else bisect_left(steps[member], final_step)
        for index in range(end - 1, -1, -1):
            segment = segments[index]
            step = int(segment["step"])
            own.append({"step": step, "settings": dict(segment["settings"]), "trial": member})
            if segment.get("from_trial") is not None:
                current, final_step = int(segment["from_trial"]), step
                break
        pieces.append(own[::-1])
    return [entry for piece in reversed(pieces) for entry in piece]


def replay_config(base: Mapping[str, Any], lineage: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The trainer config that replays `lineage`: `base` (the member's run config.yaml) with the
    first settings applied and the later ones as its `schedule`, training into
    `runs/replay-<member's folder name>` (relative: never the member's own folder)."""
    first, *later = lineage
    member = PurePath(str(base.get("run_dir") or "member")).name
    return {
        **base,
        **first["settings"],
        "schedule": [{"step": e["step"], "settings": dict(e["settings"])} for e in later],
        "run_dir": f"{REPLAY_ROOT}/replay-{member}",
    }


def members(trials: Iterable[TrialRecord]) -> list[dict[str, Any]]:
    """The population: each trial with a history (COMPLETE, PRUNED, FAIL or RUNNING) by number,
    with its state, value, curve `[[step, value], ...]` (non-finite values null), history, the
    trial it retries (`retry_of`, null for a first attempt) and its params in force at its end
    (`params`, the shape it copied included) beside Optuna's (`initial_params`). ValueError (a
    HistoryError) naming the trial and the attribute for a malformed history."""
    return [
        {
            "number": t.number,
            "state": t.state,
            "value": _finite(t.value),
            "curve": [[step, _finite(value)] for step, value in t.curve],
            "history": history,
            "retry_of": trial_attrs.RETRY_OF.of(t.user_attrs),
            "params": t.params_in_force,
            "initial_params": dict(t.params),
        }
        for t in sorted(trials, key=lambda t: t.number)
        if t.state in MEMBER_STATES and (history := _history(t))
    ]


def _finite(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else None
