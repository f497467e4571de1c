"""`rnntune export`: a study's trials as one CSV or Parquet table (one row per trial)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tuner.analysis.export import FORMATS, encode, study_frame
from tuner.errors import StudyNotFoundError
from tuner.storage.study import DB_ENV, StudyError, open_storage, redact_url, resolve_db_url


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "export",
        help="write a study's trials as a CSV or Parquet table",
        description="One row per trial: params, state, value, step reached, wall time, retry links and "
        "user attrs, for pandas or a spreadsheet.",
    )
    p.add_argument("name", help="study name")
    p.add_argument("--format", choices=FORMATS, default="csv", help="table format (default: csv)")
    p.add_argument("--output", "-o", help="file to write (default: NAME.FORMAT; '-' writes to stdout)")
    p.add_argument(
        "--db",
        help=f"SQLAlchemy URL of the study database (default ${DB_ENV} or sqlite:///studies/rnntune.db)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    url = resolve_db_url(args.db)
    try:
        storage = open_storage(url)
        frame = study_frame(storage, args.name)
    except StudyNotFoundError:
        print(f"error: no study named {args.name!r} in {redact_url(url)}", file=sys.stderr)
        return 2
    except StudyError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    storage.engine.dispose()
    data = encode(frame, args.format)
    if args.output == "-":
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
        return 0
    out = Path(args.output or f"{args.name}.{args.format}")
    out.write_bytes(data)
    print(f"wrote {len(frame)} trials of {args.name} to {out}", file=sys.stderr)
    return 0
