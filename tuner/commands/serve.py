"""`rnntune serve`: the study API, its OpenAPI docs (/docs) and the web view (/web/).

Reads and controls the studies of one database; set RNNTUNE_API_TOKEN to require
`Authorization: Bearer <token>` on every request that changes anything (RNNTUNE_API_READ_TOKEN
guards reads too, and writes when it is the only token). Listening beyond loopback (--host
0.0.0.0) needs RNNTUNE_API_READ_TOKEN, or --public-reads to serve every study to anyone on
purpose. Requests must name an allowed Host (RNNTUNE_ALLOWED_HOSTS; default the loopback names and
the listening address). Checkpoints are served only from inside --storage; a study may name a
`data_dir` only inside a --data-root. Ctrl-C stops the server and, cleanly, any sweep it started.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tuner.errors import InvalidInput
from tuner.storage.object_backends import URI_FORMS
from tuner.storage.study import redact_url


def add_server_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="port to listen on (default 8000)")
    p.add_argument(
        "--db",
        help="SQLAlchemy URL of the study database (default $RNNTUNE_DB_URL or sqlite:///studies/rnntune.db)",
    )
    p.add_argument(
        "--storage",
        help="root folder of the studies' checkpoints, the only one files are "
        f"served from (default $RNNTUNE_STORAGE or ./studies); {URI_FORMS} "
        "keeps new studies there and serves only keys under it (credentials from the environment)",
    )
    p.add_argument(
        "--data-root",
        action="append",
        dest="data_roots",
        metavar="DIR",
        help="a folder that studies may take datasets from (`data_dir`); repeatable "
        "(default $RNNTUNE_DATA_ROOTS, paths separated by ':'; none)",
    )
    p.add_argument(
        "--public-reads",
        action="store_true",
        help="listen beyond loopback without RNNTUNE_API_READ_TOKEN: anyone who reaches the port "
        "reads every study and downloads checkpoints (refused without this flag)",
    )


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "serve",
        help="serve the study API and the web view",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_server_options(p)
    p.set_defaults(func=run)


def open_app(args: argparse.Namespace):
    """Settings, a bound listening socket and the app, from the server options (shared with `up`).

    Raises PortUnavailable, or InvalidInput (a database of another schema, reads left open beyond
    loopback: `check_exposure`) with a message fit for the user.
    """
    import optuna

    from tuner.api import ApiSettings, create_app
    from tuner.api.server import bind
    from tuner.api.settings import check_exposure, is_loopback

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    settings = ApiSettings.from_env(args.db, args.storage, args.data_roots, args.host, args.public_reads)
    check_exposure(args.host, settings)
    if settings.public_reads and not settings.read_token and not is_loopback(args.host):
        print(
            f"warning: --public-reads: every study and checkpoint is readable by anyone who reaches "
            f"{args.host}:{args.port}",
            file=sys.stderr,
            flush=True,
        )
    sock = bind(args.host, args.port)
    return settings, sock, create_app(settings)


def tensorboard_hint(storage_root: Path) -> str:
    """Where the TensorBoard runs of the studies under `storage_root` are (each study swept with
    `--tensorboard` writes them in its storage folder, `NAME/tensorboard/trial-N`)."""
    return f"TensorBoard runs (studies swept with --tensorboard): tensorboard --logdir {storage_root}"


def run(args: argparse.Namespace) -> int:
    from tuner.api.server import PortUnavailable, fail, make_server, serve, url_of

    try:
        settings, sock, app = open_app(args)
    except (PortUnavailable, InvalidInput) as err:  # a SchemaMismatch is an InvalidInput too
        return fail(str(err))
    url = url_of(sock)
    print(
        f"rnntune API on {url}  (web view {url}/web/, docs {url}/docs)  db {redact_url(settings.db_url)}",
        flush=True,
    )
    print(tensorboard_hint(settings.storage_root), flush=True)
    return serve(make_server(app), sock)
