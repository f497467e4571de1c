"""`rnntune up`: the main job. Serves the API and the web view, creates the embedded default sweep
(the `tiny` space on the built-in corpus) and starts it through the server's own launcher, then
prints the URL to open: the sensitivity plot fills in as trials finish. The server keeps running
after the sweep ends, until Ctrl-C (which also stops a sweep still running, cleanly).
"""

from __future__ import annotations

import argparse
import threading

from tuner.commands.serve import add_server_options, open_app
from tuner.defaults import DEFAULT_BUDGET, DEFAULT_PARALLEL, DEFAULT_SPACE, DEFAULT_TRIALS, default_budget
from tuner.study import StudyError, generate_study_name, redact_url


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "up",
        help="the main job: a sweep with the web view served while it runs",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_server_options(p)
    p.add_argument("--space", default=DEFAULT_SPACE, help=f"search space (default {DEFAULT_SPACE})")
    p.add_argument("--trials", type=int, help=f"number of trials (default {DEFAULT_TRIALS})")
    p.add_argument(
        "--budget",
        type=float,
        metavar="B",
        help="end the sweep once its trials have trained B full trials' worth of steps "
        f"(default {DEFAULT_BUDGET:g} when --trials is not given, else none)",
    )
    p.add_argument(
        "--parallel",
        type=int,
        default=DEFAULT_PARALLEL,
        help=f"trials in flight at once (default {DEFAULT_PARALLEL})",
    )
    p.add_argument("--name", help="study name (default: generated from the space and the time)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from tuner.api import sweeps
    from tuner.api.models import CreateStudy
    from tuner.api.server import PortUnavailable, fail, make_server, serve, url_of

    try:
        settings, sock, app = open_app(args)
        body = CreateStudy(
            name=args.name or generate_study_name(args.space),
            space=args.space,
            n_trials=args.trials if args.trials is not None else DEFAULT_TRIALS,
            parallel=args.parallel,
            budget=default_budget(args.trials, args.budget),
        )
        state = app.state.rnntune
        sweeps.create(state, body)
    except (PortUnavailable, StudyError, ValidationError, sweeps.InvalidStudy, sweeps.SweepConflict) as err:
        return fail(str(err))
    server = make_server(app)
    url = url_of(sock)

    def launch_when_serving() -> None:
        while not server.started and not server.should_exit:
            threading.Event().wait(0.05)
        if server.should_exit:
            return
        try:
            handle = sweeps.start(state, body.name)
        except (sweeps.SweepConflict, sweeps.LaunchFailed) as err:
            print(f"error: {err}", flush=True)
            return
        print(
            f"study {body.name}: sweep started (pid {handle.process.pid}, log {handle.log})\n"
            f"open {url}/web/studies/{body.name}\n"
            f"API {url}/docs  db {redact_url(settings.db_url)}  — Ctrl-C to stop",
            flush=True,
        )
        code = handle.process.wait()
        row = state.store.db.study_row(body.name)
        status = row.status if row else "unknown"
        print(
            f"study {body.name}: sweep ended ({status}, exit {code}); still serving {url} — Ctrl-C to quit",
            flush=True,
        )

    threading.Thread(target=launch_when_serving, daemon=True).start()
    return serve(server, sock)
