"""Widening a study's range and continuing it: `rnntune sweep --resume NAME --widen PARAM[:EDGE]` and
`POST /studies/{name}/widen`.

The study's `space_def` becomes the widened space (`tuner.space.widen`), so the next run of its
sweep samples from the wider range; each change is appended to the `widened` user attr
({param, edge, old, new, at, trials_before}). Everything is validated first, then written in one
transaction (`tuner.storage.attrs`): a refused widening stores nothing, and a retried one widens once. Trials already stored stay as they are: the new
range contains the old one. Callers make sure no sweep drives the study meanwhile (the CLI widens
while holding the driver lease, the API refuses while a driver holds it).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

import optuna
from optuna.trial import TrialState

from tuner.space import SearchSpace
from tuner.space.boundaries import crowded_edges
from tuner.space.params import fmt
from tuner.space.widen import EDGES, check_widenable, widen
from tuner.storage import study_attrs
from tuner.storage.attrs import set_study_attrs
from tuner.storage.study import StudyError, finished_count, open_storage, value_of


def parse_widen(item: str) -> tuple[str, str | None]:
    """A `--widen` value: PARAM (the edge its boundary alert names) or PARAM:low|high|both."""
    param, sep, edge = item.partition(":")
    param, edge = param.strip(), edge.strip()
    if not param or (sep and edge not in EDGES):
        raise StudyError(f"--widen expects PARAM or PARAM:{'|'.join(EDGES)}, got {item!r}")
    return param, edge or None


def alert_edge(study: optuna.Study, param: str) -> str:
    """The edge of `param` the study's boundary alert names (`both` if it names the two);
    StudyError naming the parameter when there is no alert for it."""
    params = study_attrs.SPACE_DEF.required(study.user_attrs)["params"]
    scored = [
        (value_of(t), t.params) for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    ]
    complete = [(value, params) for value, params in scored if value is not None]
    edges = [a.edge for a in crowded_edges(params, complete) if a.param == param]
    if not edges:
        raise StudyError(
            f"parameter {param}: study {study.study_name!r} has no boundary alert for it; "
            f"name the edge to widen: {param}:low, {param}:high or {param}:both"
        )
    return edges[0] if len(edges) == 1 else "both"


def plan_widening(
    study: optuna.Study, items: Sequence[tuple[str, str | None]]
) -> tuple[dict[str, Any], list]:
    """The study's stored space widened at each (param, edge) in turn (edge None: the edge its
    boundary alert names), without writing anything: the attributes to store together
    ({space_def, widened}) and the changes as appended to `widened`. SpaceError or StudyError name
    the parameter and what is allowed."""
    space = SearchSpace.from_dict(study_attrs.SPACE_DEF.required(study.user_attrs))
    history = list(study_attrs.WIDENED.of(study.user_attrs) or [])
    changes = []
    for param, edge in items:
        check_widenable(space, param)
        space, change = widen(space, param, edge or alert_edge(study, param))
        changes.append(
            {
                **change,
                "at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                "trials_before": finished_count(study),
            }
        )
    return {study_attrs.SPACE_DEF: space.to_dict(), study_attrs.WIDENED: [*history, *changes]}, changes


def store_widening(study: optuna.Study, storage_url: str, items: Sequence[tuple[str, str | None]]) -> list:
    """Plan the widenings of `items` and store them in one transaction; the changes (none for no items)."""
    if not items:
        return []
    attrs, changes = plan_widening(study, items)
    storage = open_storage(storage_url)
    try:
        set_study_attrs(storage, study.study_name, attrs)
    finally:
        storage.engine.dispose()
    return changes


def describe(change: dict[str, Any]) -> str:
    """One line saying what a widening changed, as the CLI prints it."""
    old, new = change["old"], change["new"]
    return (
        f"widened {change['param']} ({change['edge']}): "
        f"[{fmt(old[0])}, {fmt(old[1])}] -> [{fmt(new[0])}, {fmt(new[1])}]"
    )
