"""`rnntune`: the one command-line program; each subcommand lives in tuner/commands/<name>.py.

Only the module of the subcommand being run is imported (all of them for `rnntune --help`): the
modules pull in what their command needs (torch, pandas, plotly, FastAPI), and a light command such
as `rnntune remote`, the HTTP client a Kubernetes Job runs under a small memory limit, must not pay
for the others (tests/tuner/deploy/test_memory.py measures it).
"""

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


def command_of(argv: list[str]) -> str | None:
    """The subcommand `argv` runs: its first word that is not an option, if that is a command.

    `rnntune` itself takes no option with a value (--help, --version), so that word is the command.
    """
    first = next((word for word in argv if not word.startswith("-")), None)
    return first if first in COMMANDS else None


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every subcommand, or of `only` (importing just its module)."""
    parser = argparse.ArgumentParser(
        prog="rnntune",
        description="Tune recurrent language models: sweeps on Ray Tune, studies in SQL, a web view.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS if only is None else (only,):
        importlib.import_module(f"tuner.commands.{name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser(command_of(argv)).parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
