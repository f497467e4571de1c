"""A population member's history (`pbt_history`, scheduler pbt/pb2), as pure functions: how the
driver adds a segment whatever order the events reach it in, what a stored history may hold, and
the settings a member trains with now.

A segment says: from `step` on the member trained with `settings` (its mutable settings), after
replacing its weights by trial `from_trial`'s checkpoint of that step (validation loss
`from_value`) when `from_trial` is set. A copy also stores `params`: every tuned hyperparameter the
member trains with from then on, the model's shape it took with the checkpoint included (a member
that copies another trains the other's model, whatever shape was first sampled for it).

Two kinds of event add segments, and Ray Tune does not deliver them in the order they happened:
a copy comes from the scheduler as it decides it, and a start comes with the first result after
each (re)start of the member's trainable. Ray's controller calls the scheduler before the callbacks
on each result (ray/tune/execution/tune_controller.py, `_process_trial_result`), so a copy decided
on a member's first result is heard before the start segment that result carries. `add_segment`
therefore never lets a start drop a copy: a copy stays in the history at its step and a start
only confirms (or corrects) the settings of the copy at its own step.

A start also says which model the member's trainer really built (`params`: its folder's checkpoint
decides the shape, member.py), and that wins over what the driver inferred from Ray's configs: a
start whose params differ from those in force before it stores them, so what the study shows of a
member is what it trained even where a copy's record and the folder disagree.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

ATTR = "pbt_history"  # the trial attribute (tuner.storage.trial_attrs.PBT_HISTORY)


class HistoryError(ValueError):
    """A stored `pbt_history` that is not a list of segments; the message names the attribute, the
    segment and what is wrong with it."""


def is_copy(segment: Mapping[str, Any]) -> bool:
    """Whether a segment records a copy of another member's checkpoint."""
    return segment.get("from_trial") is not None or segment.get("from_value") is not None


def add_segment(
    history: list[dict[str, Any]] | None,
    segment: Mapping[str, Any],
    initial: Mapping[str, Any] | None = None,
) -> list[dict[str, Any]] | None:
    """The history with `segment` (step, from_trial, from_value, settings[, params]) merged in, in
    step order, or None when it adds nothing (a restart with the settings and model already in
    force: synchronous PBT pauses and restarts every member at each perturbation). `initial`: the
    member's params as first sampled, in force before any segment brought params.

    A copy replaces what was at its step and the starts after it (a run it rolled back); a start
    at a copy's step keeps the copy with the settings (and params) the member really started
    with; any other start replaces the starts at and after its step, never a copy, and keeps its
    params only where they differ from those in force before it."""
    history, entry = list(history or []), _entry(segment)
    step, copy = entry["step"], is_copy(entry)
    kept = [s for s in history if s["step"] < step or (s["step"] > step and is_copy(s))]
    at = next((s for s in history if s["step"] == step and is_copy(s)), None)
    if not copy and at is not None:
        entry = {
            **at,
            "settings": entry["settings"],
            **({"params": entry["params"]} if "params" in entry else {}),
        }
    elif not copy:
        if _same_model(entry.get("params"), _params_before(kept, step, initial), entry["settings"]):
            entry.pop("params", None)
        if "params" not in entry and _in_force_before(kept, step) == entry["settings"]:
            return None if kept == history else kept  # a start with the settings in force
    merged = sorted([*kept, entry], key=lambda s: s["step"])
    return None if merged == history and not copy else merged


def _params_before(
    history: list[dict[str, Any]], step: int, initial: Mapping[str, Any] | None
) -> dict[str, Any] | None:
    """The params the last segment before `step` that holds any brought (else `initial`)."""
    brought = [s["params"] for s in history if s["step"] < step and s.get("params")]
    if brought:
        return dict(brought[-1])
    return dict(initial) if initial is not None else None


def _same_model(params: Any, before: Mapping[str, Any] | None, settings: Mapping[str, Any]) -> bool:
    """Whether a start's `params` name the model already in force (`before`); the settings that
    may change mid-run are the segment's own and are not compared, nor a name only one of them
    holds (a conditional hyperparameter the sampler left out)."""
    if params is None or before is None:
        return params is None
    return all(params[k] == before[k] for k in (set(params) & set(before)) - set(settings))


def _in_force_before(history: list[dict[str, Any]], step: int) -> dict[str, Any] | None:
    """The settings of the last segment before `step` (None: none before it)."""
    before = [s for s in history if s["step"] < step]
    return before[-1]["settings"] if before else None


def _entry(segment: Mapping[str, Any]) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "step": int(segment["step"]),
        "from_trial": segment.get("from_trial"),
        "from_value": _finite(segment.get("from_value")),
        "settings": dict(segment["settings"]),
    }
    if segment.get("params"):
        entry["params"] = dict(segment["params"])
    return entry


def copy_segment(
    step: int,
    from_trial: int | None,
    from_value: float | None,
    trainer: Mapping[str, Any],
    mutable: Iterable[str],
    param_names: Iterable[str],
) -> dict[str, Any]:
    """The segment of a copy the scheduler decided: the member goes on at `step` from trial
    `from_trial`'s checkpoint with the trainer config `trainer` (the source's, perturbed: Ray's
    PBT clones the whole config, so its shape is the source's), its mutable settings as
    `settings` and every tuned hyperparameter it holds as `params`."""
    return {
        "step": step,
        "from_trial": from_trial,
        "from_value": from_value,
        "settings": {name: float(trainer[name]) for name in mutable if name in trainer},
        "params": {name: trainer[name] for name in param_names if name in trainer},
    }


def settings_in_force(history: list[dict[str, Any]] | None) -> dict[str, Any]:
    """The trainer settings a member trains with now: the tuned params its last copy brought (the
    shape included), then its last segment's settings; {} without a history."""
    if not history:
        return {}
    copied: dict[str, Any] = next((s["params"] for s in reversed(history) if s.get("params")), {})
    return {**copied, **history[-1]["settings"]}


def params_in_force(params: Mapping[str, Any], stored: Any) -> dict[str, Any]:
    """A trial's tuned hyperparameters as its model was trained at the end: `params` (Optuna's, as
    first sampled) for a trial without a population history, else those in force after its
    copies and changes (only names it tunes, shape included). A malformed stored history leaves
    `params` (`history_problem` says why)."""
    try:
        history = parse_history(stored)
    except HistoryError:
        return dict(params)
    if not history:
        return dict(params)
    copied = next((s["params"] for s in reversed(history) if s.get("params")), None)
    base = dict(copied) if copied is not None else dict(params)
    return {**base, **{k: v for k, v in history[-1]["settings"].items() if k in base}}


def history_problem(stored: Any) -> str | None:
    """What is wrong with a stored `pbt_history`, or None (absent or well-formed)."""
    try:
        parse_history(stored)
    except HistoryError as err:
        return str(err)
    return None


def parse_history(stored: Any) -> list[dict[str, Any]] | None:
    """A stored `pbt_history` checked segment by segment (None where absent): HistoryError naming
    the attribute and the segment for anything that is not a list of segments in increasing step
    order. The database is data: a history written by hand or by another version is read with
    care before lineage or settings are built from it."""
    if stored is None:
        return None
    if not isinstance(stored, list):
        raise HistoryError(f"{ATTR} is not a list of segments but {type(stored).__name__}")
    out, last = [], -1
    for index, segment in enumerate(stored):
        checked = _checked(index, segment)
        if checked["step"] <= last:
            raise HistoryError(f"{ATTR}[{index}]: step {checked['step']} is not after {last}")
        last = checked["step"]
        out.append(checked)
    return out


def _checked(index: int, segment: Any) -> dict[str, Any]:
    where = f"{ATTR}[{index}]"
    if not isinstance(segment, dict):
        raise HistoryError(f"{where} is not an object")
    step, source, value = segment.get("step"), segment.get("from_trial"), segment.get("from_value")
    if not isinstance(step, int) or isinstance(step, bool) or step < 0:
        raise HistoryError(f"{where}.step is not a step (a whole number >= 0): {step!r}")
    if source is not None and (not isinstance(source, int) or isinstance(source, bool) or source < 0):
        raise HistoryError(f"{where}.from_trial is not a trial number: {source!r}")
    if value is not None and not _is_number(value):
        raise HistoryError(f"{where}.from_value is not a number: {value!r}")
    settings, params = segment.get("settings"), segment.get("params")
    if not isinstance(settings, dict) or not all(_is_number(v) for v in settings.values()):
        raise HistoryError(f"{where}.settings is not an object of numbers")
    if params is not None and (
        not isinstance(params, dict)
        or not all(isinstance(v, (str, int, float, bool)) for v in params.values())
    ):
        raise HistoryError(f"{where}.params is not an object of hyperparameter values")
    return {**segment, "settings": dict(settings), **({"params": dict(params)} if params else {})}


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _finite(value: Any) -> float | None:
    return float(value) if value is not None and math.isfinite(float(value)) else None
