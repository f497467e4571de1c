"""`rnntune up`: the main job. Serves the API and the web view, creates the embedded default sweep
(the `tiny` space on the built-in corpus) and starts it through the server's own launcher, then
prints the URL to open: the sensitivity plot fills in as trials finish. The server keeps running
after the sweep ends, until Ctrl-C (which also stops a sweep still running, cleanly). It takes
every option of `rnntune sweep`'s spec (`tuner.spec.SweepSpec`) under the same flags.
"""

from __future__ import annotations

import argparse
import threading

from tuner.commands.serve import add_server_options, open_app, tensorboard_hint
from tuner.commands.spec_options import add_spec_options, given
from tuner.errors import InvalidInput, LaunchFailed, SweepConflict
from tuner.spec import default_budget
from tuner.spec.sweep_spec import validate
from tuner.storage.study import generate_study_name, redact_url
from tuner.sweeps.launch import control


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "up",
        help="the main job: a sweep with the web view served while it runs",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_server_options(p)
    add_spec_options(p)
    p.add_argument("--name", help="study name (default: generated from the space and the time)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from tuner.api.server import PortUnavailable, fail, make_server, serve, url_of

    try:
        fields = given(args)
        fields["budget"] = default_budget(
            fields.get("n_trials"), fields.get("budget"), fields.get("procedure")
        )
        spec = validate(fields)
        name = args.name or generate_study_name(spec.space if isinstance(spec.space, str) else "study")
        settings, sock, app = open_app(args)
        state = app.state.rnntune
        control.create(state, name, spec)
    except (PortUnavailable, InvalidInput, SweepConflict) as err:
        return fail(str(err))
    server = make_server(app)
    url = url_of(sock)

    def launch_when_serving() -> None:
        while not server.started and not server.should_exit:
            threading.Event().wait(0.05)
        if server.should_exit:
            return
        try:
            handle = control.start(state, name)
        except (SweepConflict, LaunchFailed) as err:
            print(f"error: {err}", flush=True)
            return
        print(
            f"study {name}: sweep started (pid {handle.process.pid}, log {handle.log})\n"
            f"open {url}/web/studies/{name}\n"
            f"API {url}/docs  db {redact_url(settings.db_url)}  — Ctrl-C to stop"
            + (f"\n{tensorboard_hint(settings.storage_root)}" if spec.tensorboard else ""),
            flush=True,
        )
        code = handle.process.wait()
        row = state.store.find(name)
        status = row.status if row else "unknown"
        print(
            f"study {name}: sweep ended ({status}, exit {code}); still serving {url} — Ctrl-C to quit",
            flush=True,
        )

    threading.Thread(target=launch_when_serving, daemon=True).start()
    return serve(server, sock)
