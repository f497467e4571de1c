"""The parallel-coordinates sensitivity plot of thesis Figures 2.5–2.6, built with plotly.

One axis per hyperparameter that every completed trial has (log-scale ones on log10 axes with
ticks in the hyperparameter's own units, categorical ones as indexed choices) and a last axis for
the objective. Every completed trial is one line, coloured by objective; the best trial and its
neighbourhood (see `sensitivity.neighbourhood`) are drawn in red on top, as in the thesis.
Plotly's parcoords has neither log axes nor per-line colours, hence the hand-made ticks and the
colour scale whose top slice is red.
"""

from __future__ import annotations

import html
import json
import math
from typing import Any

import plotly.graph_objects as go
import plotly.io

from tuner.api.reads import ParamSpec, TrialRecord

RED = "#d62728"
# Objective values take [0, _OBJECTIVE_SHARE] of the colour scale, the neighbourhood's red
# [_RED_FROM, 1]; the gap keeps the worst objectives off red where plotly quantises the scale.
_OBJECTIVE_SHARE = 0.8
_RED_FROM = 0.9
# Colour range stops at this quantile of objectives so a few diverged trials don't flatten it.
_COLOUR_QUANTILE = 0.9


def _log_ticks(low: float, high: float) -> tuple[list[float], list[str]]:
    """Ticks at 1, 2 and 5 times powers of ten inside [low, high] (every digit for a range under
    two decades), as (log10 positions, labels)."""
    vals, text = [], []
    mantissas = (1, 2, 5) if high / low >= 100 else range(1, 10)
    for exponent in range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1):
        for mantissa in mantissas:
            value = mantissa * 10.0**exponent
            if low * (1 - 1e-9) <= value <= high * (1 + 1e-9):
                vals.append(math.log10(value))
                text.append(f"{value:g}")
    if len(vals) < 2:
        vals, text = [math.log10(low), math.log10(high)], [f"{low:.3g}", f"{high:.3g}"]
    return vals, text


def _dimension(spec: ParamSpec, values: list[Any]) -> dict[str, Any]:
    if spec.kind == "categorical":
        index = {choice: i for i, choice in enumerate(spec.choices)}
        return {
            "label": spec.name,
            "values": [index.get(v, -1) for v in values],
            "tickvals": list(range(len(spec.choices))),
            "ticktext": [str(c) for c in spec.choices],
            "range": [0, max(len(spec.choices) - 1, 1)],
        }
    if spec.log:
        tickvals, ticktext = _log_ticks(spec.low, spec.high)
        return {
            "label": f"{spec.name} (log)",
            "values": [math.log10(v) for v in values],
            "tickvals": tickvals,
            "ticktext": ticktext,
            "range": [math.log10(spec.low), math.log10(spec.high)],
        }
    return {"label": spec.name, "values": list(values), "range": [spec.low, spec.high]}


def shared_specs(completed: list[TrialRecord]) -> list[ParamSpec]:
    """Hyperparameters every completed trial has, in the best trial's order (conditional ones out)."""
    if not completed:
        return []
    names = [n for n in completed[0].specs if all(n in t.params for t in completed)]
    return [completed[0].specs[n] for n in names]


def parallel_coordinates(
    completed: list[TrialRecord], near: set[int], objective_label: str = "objective"
) -> dict[str, Any]:
    """The figure as plotly JSON plus `trial_numbers` (line i is trial `trial_numbers[i]`).

    `completed` is best first; `near` holds the numbers of the neighbourhood (best included).
    """
    lines = [t for t in completed if t.number not in near] + [t for t in completed if t.number in near]
    objectives = [t.value for t in lines]
    dims = [_dimension(spec, [t.params[spec.name] for t in lines]) for spec in shared_specs(lines)]
    dims.append({"label": objective_label, "values": objectives})
    colours, colorbar = _colours(lines, near)
    trace = go.Parcoords(
        dimensions=dims,
        line={
            "color": colours,
            "colorscale": _colour_scale(),
            "cmin": 0.0,
            "cmax": 1.0,
            "showscale": True,
            "colorbar": colorbar,
        },
        labelangle=-20,
    )
    figure = go.Figure(trace)
    figure.update_layout(
        title=f"{len(lines)} completed trials; neighbourhood of the best ({len(near)}) in red",
        margin={"l": 80, "r": 80, "t": 110, "b": 40},
        height=520,
    )
    return {
        "figure": plotly.io.to_json(figure, validate=False, pretty=False),
        "trial_numbers": [t.number for t in lines],
        "neighbourhood": sorted(near),
    }


def _colour_scale() -> list[list[Any]]:
    viridis = ["#440154", "#3b528b", "#21918c", "#5ec962", "#fde725"]
    steps = [[_OBJECTIVE_SHARE * i / (len(viridis) - 1), c] for i, c in enumerate(viridis)]
    return steps + [[_RED_FROM, viridis[-1]], [_RED_FROM + 1e-6, RED], [1.0, RED]]


def _colours(lines: list[TrialRecord], near: set[int]) -> tuple[list[float], dict[str, Any]]:
    """Objective mapped into the scale's viridis share, 1.0 (red) for the neighbourhood."""
    values = sorted(t.value for t in lines)
    lo = values[0] if values else 0.0
    hi = values[min(len(values) - 1, int(_COLOUR_QUANTILE * len(values)))] if values else 1.0
    span = hi - lo if hi > lo else 1.0
    colours = [
        1.0 if t.number in near else _OBJECTIVE_SHARE * min(1.0, (t.value - lo) / span)
        for t in lines
    ]
    ticks = [lo + span * i / 4 for i in range(5)]
    colorbar = {
        "title": {"text": "objective"},
        "tickvals": [_OBJECTIVE_SHARE * i / 4 for i in range(5)] + [(1.0 + _RED_FROM) / 2],
        "ticktext": [f"{v:.4g}" for v in ticks[:-1]] + [f"≥ {ticks[-1]:.4g}", "near best"],
    }
    return colours, colorbar


def html_page(plot: dict[str, Any], study: str, plotly_src: str) -> str:
    """A standalone page drawing `plot` with the app's own copy of plotly.js (no CDN)."""
    figure = plot["figure"].replace("</", "<\\/")
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>{html.escape(study)} — sensitivity</title>
<script src="{html.escape(plotly_src)}"></script></head>
<body><div id="plot" style="width:100%;height:540px"></div>
<script>
const fig = {figure};
const trialNumbers = {json.dumps(plot["trial_numbers"])};
Plotly.newPlot("plot", fig.data, fig.layout, {{responsive: true}});
</script></body></html>
"""
