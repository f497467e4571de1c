"""`rnntune`: the one command-line program; each subcommand lives in tuner/commands/<name>.py."""

from __future__ import annotations

import argparse
import importlib
import sys

from tuner import version

# Subcommand modules, in the order `rnntune --help` lists them.
COMMANDS = (
    "up",
    "sweep",
    "finalize",
    "train",
    "evaluate",
    "serve",
    "remote",
    "spaces",
    "export",
    "report",
    "compare",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rnntune",
        description="Tune recurrent language models: sweeps on Ray Tune, studies in SQL, a web view.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS:
        importlib.import_module(f"tuner.commands.{name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
