"""The parallel-coordinates sensitivity plot of thesis Figures 2.5–2.6, built with plotly.

One axis per hyperparameter any line has (a conditional one's inactive trials at "off"; log-scale ones on log10 axes with ticks in the
hyperparameter's own units, categorical ones as indexed choices) and a last axis for the objective.
Every completed trial is one line, coloured by objective; every pruned trial (unless COMPLETE only
is asked for) a grey line at the value it reported where it was stopped; the best trial and its
neighbourhood (see `sensitivity.neighbourhood`) are drawn in red on top, as in the thesis.
Plotly's parcoords has neither log axes nor per-line colours, hence the hand-made ticks and the
colour scale whose top slice is red.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Sequence
from typing import Any

import plotly.io

# Imported here, once, not on first use through plotly.graph_objects' lazy attributes: two API
# threads loading them (and narwhals, which they import) at once deadlock in Python's import locks.
from plotly.graph_objs import Figure, Parcoords

from tuner.analysis.reads import ParamSpec
from tuner.analysis.sensitivity import Point

RED = "#d62728"
PINK = "#f4a3a3"
GREY = "#bdbdbd"
# Slices of the colour scale: pruned trials grey [0, _GREY_TO], objectives of completed ones
# viridis [_OBJECTIVE_FROM, _OBJECTIVE_TO], pruned neighbours pink, the neighbourhood red
# [_RED_FROM, 1]; the gaps keep each slice off its neighbours where plotly quantises the scale.
_GREY_TO = 0.04
_OBJECTIVE_FROM, _OBJECTIVE_TO = 0.08, 0.78
_PINK_FROM, _PINK_TO = 0.84, 0.88
_RED_FROM = 0.94
# Colour range stops at this quantile of objectives so a few diverged trials don't flatten it.
_COLOUR_QUANTILE = 0.9
_OFF_GAP = 0.08  # the "off" tick of a conditional parameter's axis: this fraction of its span below


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
    """One axis; a value None (the parameter was inactive in that trial, e.g. mogrifier_rank with
    0 rounds) sits on an extra tick "off" just below the range."""
    if spec.kind == "categorical":
        index = {choice: i for i, choice in enumerate(spec.choices)}
        dim = {
            "label": spec.name,
            "values": [index.get(v, -1) for v in values],
            "tickvals": list(range(len(spec.choices))),
            "ticktext": [str(c) for c in spec.choices],
            "range": [0, max(len(spec.choices) - 1, 1)],
        }
        return _with_off(dim, values, -1.0)
    assert spec.low is not None and spec.high is not None  # numeric specs carry both bounds
    if spec.log:
        tickvals, ticktext = _log_ticks(spec.low, spec.high)
        low, high = math.log10(spec.low), math.log10(spec.high)
        dim = {
            "label": f"{spec.name} (log)",
            "values": [math.log10(v) if v is not None else None for v in values],
            "tickvals": tickvals,
            "ticktext": ticktext,
            "range": [low, high],
        }
    else:
        low, high = spec.low, spec.high
        dim = {"label": spec.name, "values": list(values), "range": [low, high]}
    return _with_off(dim, values, low - _OFF_GAP * ((high - low) or 1.0))


def _with_off(dim: dict[str, Any], values: list[Any], off: float) -> dict[str, Any]:
    """`dim` with inactive (None) values drawn at `off`, labelled "off", when there are any."""
    if all(v is not None for v in values):
        return dim
    ticks = dim.get("tickvals") or [dim["range"][0], dim["range"][1]]
    text = dim.get("ticktext") or [f"{dim['range'][0]:g}", f"{dim['range'][1]:g}"]
    return {
        **dim,
        "values": [off if v is None else v for v in dim["values"]],
        "tickvals": [off, *ticks],
        "ticktext": ["off", *text],
        "range": [off, dim["range"][1]],
    }


def shared_specs(lines: Sequence[Point]) -> list[ParamSpec]:
    """Hyperparameters any line has, in the first (best) line's order, then the others' order.

    A conditional parameter (mogrifier_rank is sampled only with mogrifier_rounds ≥ 1) keeps its
    axis; the lines of trials where it was inactive cross it at "off"."""
    specs: dict[str, ParamSpec] = {}
    for line in lines:
        for name, spec in line.specs.items():
            if name in line.params:
                specs.setdefault(name, spec)
    return list(specs.values())


def parallel_coordinates(
    drawn: Sequence[Point], near: set[int], objective_label: str = "objective"
) -> dict[str, Any]:
    """The figure as plotly JSON plus, per line i, `trial_numbers[i]`, `states[i]` and `steps[i]`
    (the step a PRUNED line was stopped at, None for COMPLETE).

    `drawn` holds the COMPLETE points best first, then any PRUNED ones; `near` holds the numbers of
    the neighbourhood (best included). Lines are drawn pruned, completed, pruned near the best,
    then the neighbourhood in red on top.
    """
    rank = {(False, True): 0, (False, False): 1, (True, True): 2, (True, False): 3}
    lines = sorted(drawn, key=lambda p: rank[(p.number in near, p.pruned)])  # stable: best first kept
    dims = [_dimension(spec, [t.params.get(spec.name) for t in lines]) for spec in shared_specs(drawn)]
    dims.append({"label": objective_label, "values": [t.value for t in lines]})
    colours, colorbar = _colours(lines, near)
    trace = Parcoords(
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
    n_pruned = sum(p.pruned for p in lines)
    pruned_text = f" and {n_pruned} pruned (grey, at the step they were stopped)" if n_pruned else ""
    figure = Figure(trace)
    figure.update_layout(
        title=f"{len(lines) - n_pruned} completed trials{pruned_text}; "
        f"neighbourhood of the best ({len(near)}) in red",
        margin={"l": 80, "r": 80, "t": 110, "b": 40},
        height=520,
    )
    return {
        "figure": plotly.io.to_json(figure, validate=False, pretty=False),
        "trial_numbers": [t.number for t in lines],
        "states": ["PRUNED" if t.pruned else "COMPLETE" for t in lines],
        "steps": [t.step for t in lines],
        "neighbourhood": sorted(near),
    }


def _colour_scale() -> list[list[Any]]:
    viridis = ["#440154", "#3b528b", "#21918c", "#5ec962", "#fde725"]
    lo, hi = _OBJECTIVE_FROM, _OBJECTIVE_TO
    steps = [[lo + (hi - lo) * i / (len(viridis) - 1), c] for i, c in enumerate(viridis)]
    return [
        [0.0, GREY], [_GREY_TO, GREY], *steps, [_PINK_FROM, PINK], [_PINK_TO, PINK],
        [_RED_FROM, RED], [1.0, RED],
    ]  # fmt: skip


def _colours(lines: Sequence[Point], near: set[int]) -> tuple[list[float], dict[str, Any]]:
    """Objective mapped into the scale's viridis share; red for the neighbourhood, grey for pruned
    trials and pink for pruned ones near the best."""
    values = sorted(t.value for t in lines if not t.pruned)
    lo = values[0] if values else 0.0
    hi = values[min(len(values) - 1, int(_COLOUR_QUANTILE * len(values)))] if values else 1.0
    span = hi - lo if hi > lo else 1.0
    share = _OBJECTIVE_TO - _OBJECTIVE_FROM
    pink, red = (_PINK_FROM + _PINK_TO) / 2, 1.0

    def colour(t: Point) -> float:
        if t.number in near:
            return pink if t.pruned else red
        if t.pruned:
            return 0.0
        return _OBJECTIVE_FROM + share * min(1.0, (t.value - lo) / span)

    ticks = [lo + span * i / 4 for i in range(5)]
    tickvals = [_OBJECTIVE_FROM + share * i / 4 for i in range(5)] + [(_RED_FROM + 1.0) / 2]
    ticktext = [f"{v:.4g}" for v in ticks[:-1]] + [f"≥ {ticks[-1]:.4g}", "near best"]
    if any(t.pruned for t in lines):
        tickvals, ticktext = [_GREY_TO / 2, *tickvals, pink], ["pruned", *ticktext, "pruned, near best"]
    colorbar = {"title": {"text": "objective"}, "tickvals": tickvals, "ticktext": ticktext}
    return [colour(t) for t in lines], colorbar


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
