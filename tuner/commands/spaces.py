"""`rnntune spaces`: list the search spaces; `show NAME` prints one as a table; `schema` prints the
JSON schema of a space file."""

from __future__ import annotations

import argparse
import sys

from trainer.config import ConfigError, parse_assignment, parse_set
from tuner.policies.early_stopping import DEFAULT_BRACKETS, EarlyStopping
from tuner.space import SearchSpace, SpaceError, list_spaces, load_space, space_dirs
from tuner.space.schema import json_schema_text
from tuner.space.settings import max_steps_and_eval_every


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "spaces",
        help="list search spaces, show one as a table, or print the file format's JSON schema",
        description="List the search spaces (built-in ones and those in $RNNTUNE_SPACES_DIR), or show one.",
    )
    actions = p.add_subparsers(dest="action", metavar="ACTION")
    show = actions.add_parser("show", help="print a space's ranges and fixed settings")
    show.add_argument("space", help="space name or path of a YAML file")
    show.add_argument(
        "--range",
        action="append",
        default=[],
        metavar="NAME=LOW:HIGH[:SCALE]",
        help="preview a range override",
    )
    show.add_argument(
        "--set", action="append", default=[], metavar="NAME=VALUE", help="preview a fixed-setting override"
    )
    actions.add_parser("schema", help="print the JSON schema of a search-space file")
    p.set_defaults(func=run)


def table(rows: list[list[str]], header: list[str]) -> str:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(header, widths)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    return "\n".join(lines)


def render_space(space: SearchSpace) -> str:
    rows = []
    for name, spec in space.params.items():
        when = ", ".join(f"{k} in {list(v)}" if len(v) > 1 else f"{k} = {v[0]}" for k, v in spec.when.items())
        rows.append([name, spec.scale, spec.describe_range(), when or "-"])
    out = [f"{space.name}: {space.description}".rstrip(": ")]
    if space.source:
        out.append(f"source: {space.source}")
    if space.recipe:
        out.append(f"recipe: {space.recipe}")
    if space.path:
        out.append(f"file: {space.path}")
    out += ["", table(rows, ["parameter", "scale", "range", "only when"]), ""]
    out.append(
        table(
            [[k, repr(v) if isinstance(v, str) else str(v)] for k, v in space.fixed.items()],
            ["fixed setting", "value"],
        )
    )
    steps = max_steps_and_eval_every(space.fixed)
    out += [
        "",
        f"default early stopping (change with --grace-steps/--reduction-factor/--brackets): {EarlyStopping().describe(*steps)}; brackets {DEFAULT_BRACKETS}",
    ]
    return "\n".join(out)


def run(args: argparse.Namespace) -> int:
    try:
        if args.action == "schema":
            print(json_schema_text(), end="")
            return 0
        if args.action == "show":
            space = load_space(args.space)
            if args.range or args.set:
                ranges = dict(parse_assignment(r, "--range") for r in args.range)
                space = space.with_overrides(ranges, parse_set(args.set))
            print(render_space(space))
            return 0
        rows = []
        for name, path in list_spaces().items():
            alias = f" (= {path.resolve().stem})" if path.is_symlink() else ""  # an old name kept
            try:
                space = load_space(path)
                rows.append([name + alias, str(len(space.params)), space.description])
                rows += [
                    ["", "", f"source: {space.source or '-'}"],
                    ["", "", f"recipe: {space.recipe or '-'}"],
                ]
            except SpaceError as err:
                rows.append([name + alias, "-", f"INVALID: {err}"])
        print(table(rows, ["space", "params", "description, source and recipe"]))
        print(f"\nlooked in: {', '.join(str(d) for d in space_dirs())}")
        return 0
    except (ConfigError, SpaceError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
