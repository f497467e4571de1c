"""`rnntune compare`: studies of one task side by side, with a verdict the bootstrap supports.

Per study: COMPLETE trials, best value, the expected best value of n trials (Dodge et al. 2019) at
the budget the verdict uses with its bootstrap band, the compute per COMPLETE trial, and the
finalised reruns' mean ± sd (or the command that runs them). Then one verdict per pair of studies
(docs/compare.md). `--json` prints what `GET /compare?studies=...` answers. Exit 2 when a study is
missing or the studies do not share a task (the message names the setting that differs).
`--front MEASURE` instead draws each study's Pareto front of val_loss against MEASURE on shared
axes (tuner.analysis.compare_fronts): which cell wins at which size.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import plotly.graph_objects as go

from tuner.analysis.compare import NotComparable, compare
from tuner.analysis.compare_fronts import figure, fronts
from tuner.analysis.reads import StudyNotFound, StudyStore
from tuner.storage.study import DB_ENV, resolve_db_url


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "compare",
        help="compare studies of one task: expected best value against budget, reruns, a verdict",
        description=__doc__.split("\n\n")[0],
    )
    p.add_argument(
        "names", nargs="+", metavar="NAME", help="2 to 8 study names (same task; the cell may differ)"
    )
    p.add_argument(
        "--front",
        metavar="MEASURE",
        help="instead: each study's Pareto front of val_loss against MEASURE (num_params, tokens_per_s, "
        "peak_memory, wall_time) and which study wins where along it; the studies may differ in size",
    )
    p.add_argument("--plot", metavar="FILE.html", help="with --front: also draw the fronts on shared axes")
    p.add_argument("--json", action="store_true", help="print the comparison as JSON (the API's fields)")
    p.add_argument(
        "--db",
        help=f"SQLAlchemy URL of the study database (default ${DB_ENV} or sqlite:///studies/rnntune.db)",
    )
    p.set_defaults(func=run)


def _num(value: float | None, digits: int = 4) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _at(curve: dict[str, Any] | None, n: int | None) -> str:
    """The curve's expected value and band at budget n (its grid holds every verdict's n)."""
    if curve is None or n is None or n not in curve["n"]:
        return "–"
    i = curve["n"].index(n)
    return f"{curve['expected'][i]:.4f} [{curve['low'][i]:.4f}, {curve['high'][i]:.4f}]"


def _reruns(view: dict[str, Any]) -> str:
    best = view["best"]
    if best is None:
        return f"not finalised: {view['run']['command']}"
    sd = "" if best["val_loss_sd"] is None else f" ± {best['val_loss_sd']:.4f}"
    return f"trial {best['trial']}: {best['val_loss_mean']:.4f}{sd} (n={best['n']})"


def render(result: dict[str, Any]) -> str:
    """The comparison as a table and the verdicts."""
    verdict_n = min((v["n"] for v in result["verdicts"] if v["n"] is not None), default=None)
    band = round(100 * result["bootstrap"]["band"])
    header = (
        "study",
        "model",
        "complete",
        "pruned",
        "best",
        f"E[best of {verdict_n}] [{band}% band]" if verdict_n else "E[best]",
        "steps/complete",
        "s/complete",
        "reruns of the best (mean ± sd)",
    )
    rows = [
        (
            s["name"],
            s["model"],
            str(s["n_complete"]),
            str(s["counts"].get("PRUNED", 0)),
            _num(s["best_value"]),
            _at(s["curve"], verdict_n),
            _num(s["steps_per_complete"], 0),
            _num(s["seconds_per_complete"], 1),
            _reruns(s["finalize"]),
        )
        for s in result["studies"]
    ]
    widths = [max(len(r[i]) for r in (header, *rows)) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in (header, *rows)]
    task = ", ".join(f"{k}={v}" for k, v in result["task"].items() if v is not None)
    lines[:0] = [f"task: {task}", ""]
    lines += ["", "verdict:"]
    for v in result["verdicts"]:
        lines.append(f"  {v['text']}")
        if v["steps"] is not None:
            s = v["steps"]
            state = (
                f"{s['better']} better by {s['by']:.4g} ± {s['se']:.2g}"
                if s["separable"]
                else "not separable"
            )
            lines.append(
                f"    at equal training steps ({s['steps']}: {s['n_a']} vs {s['n_b']} trials): {state}"
            )
    lines += ["", f"test: {result['test']}"]
    return "\n".join(lines)


def render_fronts(result: dict[str, Any]) -> str:
    """Each study's front, then the winners along the measure."""
    along = result["measure"]["name"]
    lines = []
    for s in result["studies"]:
        points = ", ".join(f"#{p['number']} ({p[along]:.4g}, {p['val_loss']:.4f})" for p in s["front"])
        lines.append(f"{s['name']}: front of ({along}, val_loss): {points or 'no COMPLETE feasible trial'}")
    lines += ["", f"best of all along {along} ({result['measure']['direction']}d):"]
    lines += [
        f"  {w[along]:>12.6g}  {w['val_loss']:.4f}  {w['study']} #{w['number']}" for w in result["winners"]
    ]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    url = resolve_db_url(args.db)
    if args.plot and not args.front:
        print("error: --plot: needs --front MEASURE", file=sys.stderr)
        return 2
    try:
        if args.front:
            result = fronts(StudyStore(url), args.names, args.front)
        else:
            result = compare(StudyStore(url), args.names)
    except (StudyNotFound, NotComparable, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if args.plot:
        go.Figure(figure(result)).write_html(args.plot, include_plotlyjs=True)
    shown = render_fronts(result) if args.front else render(result)
    print(json.dumps(result, indent=2) if args.json else shown)
    return 0
