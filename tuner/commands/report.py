"""`rnntune report`: a study's analysis in the terminal, the same figures as the web view and the API.

Importances with their bootstrap intervals and the fidelity they rest on (`GET .../importances`),
range-boundary alerts with the `--widen` command that acts on each (`GET .../boundaries`), and what
the sweep's policies did (widened ranges, warm start, an early end, checkpoint retention), and the
Pareto front of a study with several objectives or a bound (`GET .../pareto`). It reads
the study database through the API's own read model, so the numbers are the ones the API serves.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from tuner.analysis import importances
from tuner.analysis.front import front, has_front, members, refused_points, study_goals
from tuner.analysis.reads import StudyNotFound, StudyStore
from tuner.objectives.goals import Goals
from tuner.space import SearchSpace, SpaceError
from tuner.space.boundaries import crowded_edges
from tuner.space.widen import widen
from tuner.storage import study_attrs
from tuner.storage.study import DB_ENV, redact_url, resolve_db_url

BAR_WIDTH = 30


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "report",
        help="print a study's importances (with intervals), range-boundary alerts and policies",
        description=__doc__.split("\n\n")[0],
    )
    p.add_argument("name", help="study name")
    p.add_argument(
        "--include",
        choices=("all", "complete"),
        default="all",
        help="trials the importances use: all (pruned ones at the step they reached) or complete only",
    )
    p.add_argument("--json", action="store_true", help="print the report as JSON (the API's fields)")
    p.add_argument(
        "--db",
        help=f"SQLAlchemy URL of the study database (default ${DB_ENV} or sqlite:///studies/rnntune.db)",
    )
    p.set_defaults(func=run)


def build(store: StudyStore, name: str, include: str) -> dict[str, Any]:
    """The report's data: importances as `GET /studies/{name}/importances` gives them, alerts as
    `GET /studies/{name}/boundaries`, and the study attrs the policies write."""
    row = store.row(name)
    snapshot = store.snapshot(row)
    completed, pruned = snapshot.analysed(include)
    space_def = study_attrs.SPACE_DEF.of(row.user_attrs) or {}
    space = space_def.get("params", {})
    attrs = row.user_attrs
    return {
        "study": name,
        "status": row.status,
        "counts": dict(row.counts),
        "best_value": row.best_value,
        "importances": importances.with_intervals(
            importances.choose_fidelity(completed, pruned), row.direction
        ),
        "alerts": [
            {**a.to_dict(), "widen_error": _widen_error(space_def, a.param, a.edge)}
            for a in crowded_edges(space, snapshot.complete_points())
        ],
        "widened": study_attrs.WIDENED.of(attrs) or [],
        "warm_start": study_attrs.WARM_START.of(attrs),
        "ended_early": study_attrs.ENDED_EARLY.of(attrs),
        "checkpoint_bytes": study_attrs.CHECKPOINT_BYTES.of(attrs),
        "checkpoints_removed": study_attrs.CHECKPOINTS_REMOVED.of(attrs),
        "front": _front(snapshot.trials, study_goals(attrs)),
    }


def _front(trials: list, goals: Goals) -> dict[str, Any] | None:
    """The Pareto front as `GET /studies/{name}/pareto` gives it, for a study with several
    objectives or a bound (None otherwise)."""
    if not has_front(goals):
        return None
    points = front(trials, goals)
    return {
        "objectives": [{"name": o.name, "direction": o.direction} for o in goals.objectives],
        "constraints": [str(c) for c in goals.constraints],
        "front": [p.as_dict() for p in members(points, goals)],
        "dominated": sum(p.feasible and not p.on_front for p in points),
        "infeasible": sum(not p.feasible for p in points),
        "refused": len(refused_points(trials, goals)),  # of the infeasible: never trained (docs/sweeps.md)
    }


def _widen_error(space_def: dict[str, Any], param: str, edge: str) -> str | None:
    """Why `--widen param:edge` would be refused (the edge is at the trainer's limit), else None."""
    try:
        widen(SearchSpace.from_dict(space_def, where="the stored space"), param, edge)
    except SpaceError as err:
        return str(err)
    return None


def render(report: dict[str, Any]) -> str:
    """The report as text for a terminal."""
    counts = ", ".join(f"{n} {state.lower()}" for state, n in sorted(report["counts"].items()) if n)
    best = report["best_value"]
    lines = [
        f"study {report['study']}: {report['status']}, {counts or 'no trials'}"
        + (f"; best {best:.4f}" if best is not None else "")
    ]
    imp = report["importances"]
    if imp["importances"]:
        at = "the objective" if imp["step"] is None else f"step {imp['step']}"
        level = round(100 * imp["bootstrap"]["confidence"])
        lines.append(
            f"importances ({imp['method']}, {imp['n_trials']} trials at {at}, {level}% bootstrap intervals):"
        )
        width = max(len(r["name"]) for r in imp["importances"])
        for r in sorted(imp["importances"], key=lambda r: -r["importance"]):
            bar = "#" * round(BAR_WIDTH * r["importance"])
            lines.append(
                f"  {r['name']:<{width}}  {r['importance']:.3f}  [{r['ci_low']:.3f}, {r['ci_high']:.3f}]  {bar}"
            )
    else:
        lines.append(f"importances: none yet ({imp['note']})")
    if report["alerts"]:
        lines.append("range-boundary alerts:")
        for a in report["alerts"]:
            if a["widen_error"]:
                lines.append(f"  {a['message']}\n    cannot search beyond it: {a['widen_error']}")
                continue
            lines.append(
                f"  {a['message']}\n    search beyond it: rnntune sweep --resume {report['study']} "
                f"--widen {a['param']}:{a['edge']} [--trials N]"
            )
    else:
        lines.append("range-boundary alerts: none")
    for change in report["widened"]:
        lines.append(
            f"widened {change['param']} ({change['edge']}): {change['old']} -> {change['new']} "
            f"after {change['trials_before']} trials"
        )
    if report["warm_start"]:
        source = report["warm_start"]
        lines.append(f"warm-started from {', '.join(source['studies'])} ({source['trials']} trials)")
    if report["ended_early"]:
        lines.append(f"ended early: {report['ended_early']}")
    if report["front"] is not None:
        lines.extend(_front_lines(report["front"]))
    if report["checkpoint_bytes"] is not None:
        lines.append(
            f"checkpoints: {report['checkpoint_bytes'] / 2**20:.1f} MiB on disk, "
            f"weights of {report['checkpoints_removed'] or 0} trials removed (--keep-top)"
        )
    return "\n".join(lines)


def _front_lines(found: dict[str, Any]) -> list[str]:
    names = [o["name"] for o in found["objectives"]]
    bounds = f" under {', '.join(found['constraints'])}" if found["constraints"] else ""
    objectives = ", ".join(f"{o['name']} ({o['direction']})" for o in found["objectives"])
    lines = [
        f"Pareto front of {objectives}{bounds}: {len(found['front'])} trials "
        f"({found['dominated']} dominated, {found['infeasible']} infeasible"
        + (f", {found['refused']} of them refused before training)" if found.get("refused") else ")")
    ]
    lines.append("  trial  " + "  ".join(f"{n:>14}" for n in names))
    for p in found["front"]:
        lines.append(f"  #{p['number']:<5} " + "  ".join(f"{p['values'][n]:>14.6g}" for n in names))
    return lines


def run(args: argparse.Namespace) -> int:
    url = resolve_db_url(args.db)
    try:
        report = build(StudyStore(url), args.name, args.include)
    except StudyNotFound:
        print(f"error: no study named {args.name!r} in {redact_url(url)}", file=sys.stderr)
        return 2
    print(json.dumps(report, indent=2) if args.json else render(report))
    return 0
