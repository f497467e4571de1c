"""Studies' Pareto fronts of the validation loss against one measure, on shared axes: the papers'
comparison at equal parameter count made visible ("which cell wins at which size").

Every trial records its measures whatever its study optimised, so any studies of one task can be
compared this way. Each study's front is over (val_loss, measure) among its feasible COMPLETE
trials (its own constraints); the `winners` are the front of all studies together, each point
labelled with its study, ordered along the measure.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tuner.analysis.compare import check_names
from tuner.analysis.front import front, study_goals
from tuner.analysis.reads import StudyStore
from tuner.objectives.goals import Goals, Objective
from tuner.objectives.measures import PRIMARY, measure
from tuner.objectives.pareto import non_dominated


def fronts(store: StudyStore, names: Sequence[str], along: str) -> dict[str, Any]:
    """Each study's front of val_loss against `along` (a measure name; ValueError naming the
    allowed ones otherwise) and the front of all of them together."""
    if along == PRIMARY:
        raise ValueError(f"the measure to compare along must not be {PRIMARY}")
    axis = measure(along)
    rows = [store.row(name) for name in names]
    check_names(names)
    studies, pooled = [], []
    for name, row in zip(names, rows, strict=True):
        own = study_goals(row.user_attrs)
        goals = Goals((Objective(PRIMARY, "minimize"), Objective(axis.name, axis.better)), own.constraints)
        points = [p for p in front(store.snapshot(row).trials, goals) if p.on_front]
        points.sort(key=lambda p: p.values[along])
        studies.append({"name": name, "front": [{"number": p.number, **p.values} for p in points]})
        pooled += [
            (name, p.number, goals.minimised([p.values[PRIMARY], p.values[along]]), p.values) for p in points
        ]
    best = non_dominated([m for _, _, m, _ in pooled]) if pooled else []
    chosen = sorted(best, key=lambda i: pooled[i][3][along])
    winners = [{"study": pooled[i][0], "number": pooled[i][1], **pooled[i][3]} for i in chosen]
    return {"measure": {"name": axis.name, "direction": axis.better}, "studies": studies, "winners": winners}


def figure(result: dict[str, Any]) -> dict[str, Any]:
    """A plotly figure: each study's front as a step line on shared axes, the overall winners ringed."""
    along = result["measure"]["name"]
    data: list[dict[str, Any]] = [
        {
            "type": "scatter",
            "mode": "lines+markers",
            "name": s["name"],
            "x": [p[along] for p in s["front"]],
            "y": [p[PRIMARY] for p in s["front"]],
            "line": {"shape": "hv"},
            "customdata": [p["number"] for p in s["front"]],
            "hovertemplate": f"{s['name']} #%{{customdata}}<br>{along} %{{x}}<br>{PRIMARY} %{{y}}<extra></extra>",
        }
        for s in result["studies"]
    ]
    data.append(
        {
            "type": "scatter",
            "mode": "markers",
            "name": "best of all",
            "x": [w[along] for w in result["winners"]],
            "y": [w[PRIMARY] for w in result["winners"]],
            "marker": {"size": 14, "symbol": "circle-open", "color": "black"},
            "hoverinfo": "skip",
        }
    )
    layout = {
        "xaxis": {"title": {"text": along}},
        "yaxis": {"title": {"text": PRIMARY}},
        "legend": {"orientation": "h"},
    }
    return {"data": data, "layout": layout}
