"""`rnntune remote`: drive a running rnntune API over HTTP (create, start, stop, watch, best).

The client of `rnntune serve` (and of the `api` service of docker-compose.yml, whose one-shot
`sweep` service runs `rnntune remote create --exist-ok --start --follow`). The API is --api, else
$RNNTUNE_API_URL, else http://127.0.0.1:8000; bearer tokens come from --token / $RNNTUNE_API_TOKEN
(requests that change anything) and $RNNTUNE_API_READ_TOKEN (reads, when the API guards them).
`create` takes every option of a sweep's spec (`tuner.spec.SweepSpec`) from the command line, else
from the environment variable named in its help (what .env sets for Compose), else the API's
defaults.

Light on purpose: the Kubernetes sweep Job runs it under a small memory limit. Only `create` needs
the spec's options (`tuner.spec`, which pulls in the trainer and the samplers); they are added when
`create` parses or prints its help, so `rnntune remote --help` and the other actions stay an HTTP
client (tests/tuner/commands/test_remote_imports.py).

Exit status: 0 done (for --follow and `watch`: the study finished), 1 the study failed or was
stopped, 2 a bad option or a request the API refused, 3 the API could not be reached.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
import urllib.parse
from pathlib import Path
from typing import Any

from tuner.errors import InvalidInput

DEFAULT_API = "http://127.0.0.1:8000"
POLL_S = 5.0
ENDED = ("finished", "failed", "stopped")
EXIT_STUDY_FAILED, EXIT_REFUSED, EXIT_UNREACHABLE = 1, 2, 3


class RemoteError(RuntimeError):
    """A request the API refused (`status`: its HTTP code), a bad option, or an API out of reach."""

    def __init__(self, message: str, status: int | None = None, unreachable: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.unreachable = unreachable


class Remote:
    """A thin JSON client of one rnntune API: each call returns the decoded body or raises RemoteError."""

    def __init__(self, api: str, token: str | None = None, read_token: str | None = None) -> None:
        import httpx

        self.api = api.rstrip("/")
        self.token, self.read_token = token, read_token or token
        self.http = httpx.Client(base_url=self.api, timeout=httpx.Timeout(30.0, read=300.0))

    def _headers(self, write: bool) -> dict[str, str]:
        token = self.token if write else self.read_token
        return {"Authorization": f"Bearer {token}"} if token else {}

    def send(self, method: str, path: str, body: dict | None = None) -> Any:
        import httpx

        try:
            response = self.http.request(method, path, json=body, headers=self._headers(method != "GET"))
        except httpx.TransportError as err:
            raise RemoteError(f"cannot reach the API at {self.api}: {err}", unreachable=True) from None
        if response.is_error:
            try:
                detail = response.json().get("detail", response.text)
            except ValueError:
                detail = response.text
            raise RemoteError(f"{method} {path}: HTTP {response.status_code}: {detail}", response.status_code)
        return response.json() if response.content else {}

    def wait_until_up(self, seconds: float) -> None:
        """Poll the API until it answers (a container may start before it), for at most `seconds`."""
        deadline = time.monotonic() + seconds
        while True:
            try:
                self.send("GET", "/openapi.json")
                return
            except RemoteError as err:
                if not err.unreachable or time.monotonic() >= deadline:
                    raise
            time.sleep(2.0)

    def download_best_checkpoint(self, name: str, target: Path) -> tuple[int, str]:
        """Save the best trial's checkpoint to `target`, checking its SHA-256 against the API's header.

        Returns (trial number, hex digest). A file whose digest differs is deleted, never kept.
        """
        import httpx

        path = f"/studies/{quote(name)}/best/checkpoint"
        digest = hashlib.sha256()
        partial = target.with_name(target.name + ".part")
        try:
            with self.http.stream("GET", path, headers=self._headers(False)) as response:
                if response.is_error:
                    response.read()
                    raise RemoteError(
                        f"GET {path}: HTTP {response.status_code}: {response.text}", response.status_code
                    )
                expected = response.headers.get("X-Checkpoint-SHA256", "")
                number = int(response.headers.get("X-Trial-Number", "-1"))
                with partial.open("wb") as out:
                    for chunk in response.iter_bytes():
                        digest.update(chunk)
                        out.write(chunk)
        except httpx.TransportError as err:
            partial.unlink(missing_ok=True)
            raise RemoteError(f"cannot reach the API at {self.api}: {err}", unreachable=True) from None
        if digest.hexdigest() != expected:
            partial.unlink(missing_ok=True)
            raise RemoteError(
                f"checkpoint of {name!r}: SHA-256 {digest.hexdigest()} differs from the "
                f"API's X-Checkpoint-SHA256 {expected or '(missing)'}; nothing was saved"
            )
        partial.replace(target)
        return number, expected


class SpecOptionsParser(argparse.ArgumentParser):
    """A parser that gets the spec's options (`spec_options.add_spec_options`) on first use, when
    `spec_options` is set: parsing or printing its help. Until then nothing of `tuner.spec` is imported."""

    spec_options = False

    def _add_spec_options(self) -> None:
        if self.spec_options:
            from tuner.commands.spec_options import add_spec_options

            self.spec_options = False
            add_spec_options(self)

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        self._add_spec_options()
        return super().parse_known_args(args, namespace)

    def format_help(self) -> str:
        self._add_spec_options()
        return super().format_help()


def quote(name: str) -> str:
    return urllib.parse.quote(name, safe="")


def env_or(variable: str, default: Any = None) -> Any:
    """$variable when set and not empty, else `default` (empty .env entries mean "the default")."""
    return os.environ.get(variable) or default


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "remote",
        help="drive a running rnntune API (create, start, stop, watch, best)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--api",
        default=env_or("RNNTUNE_API_URL", DEFAULT_API),
        help=f"the API's URL (default $RNNTUNE_API_URL, else {DEFAULT_API})",
    )
    p.add_argument(
        "--token",
        default=env_or("RNNTUNE_API_TOKEN"),
        help="bearer token for changes (default $RNNTUNE_API_TOKEN); reads use "
        "$RNNTUNE_API_READ_TOKEN, else this one",
    )
    p.add_argument(
        "--wait",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="keep trying to reach the API this long before giving up (default 0)",
    )
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True, parser_class=SpecOptionsParser)

    create = actions.add_parser("create", help="create a study (optionally start and follow its sweep)")
    create.add_argument(
        "name", nargs="?", default=env_or("RNNTUNE_STUDY"), help="study name (default $RNNTUNE_STUDY)"
    )
    create.spec_options = True
    create.add_argument(
        "--exist-ok", action="store_true", help="reuse a study of that name instead of failing"
    )
    add_follow_options(create, start=True)

    start = actions.add_parser("start", help="start (or resume) a study's sweep")
    start.add_argument("name")
    add_follow_options(start, start=False)

    stop = actions.add_parser("stop", help="ask a study's sweep to stop cleanly")
    stop.add_argument("name")

    watch = actions.add_parser("watch", help="print a study's progress until its sweep ends")
    watch.add_argument("name")

    best = actions.add_parser("best", help="print the best trial as JSON; optionally download its checkpoint")
    best.add_argument("name")
    best.add_argument(
        "--checkpoint",
        type=Path,
        metavar="FILE",
        help="save the best checkpoint here (its SHA-256 is checked against the API's)",
    )
    p.set_defaults(func=run)


def add_follow_options(p: argparse.ArgumentParser, start: bool) -> None:
    if start:
        p.add_argument("--start", action="store_true", help="start the sweep once the study exists")
    p.add_argument("--follow", action="store_true", help="then print its progress until the sweep ends")


def create_body(args: argparse.Namespace) -> dict[str, Any]:
    """The POST /studies body: every spec field given as a flag, else in its environment variable
    (what Compose's .env sets), else left to the API's defaults; --set values are typed by the
    trainer's own parser."""
    from tuner.commands.spec_options import given

    try:
        return {"name": args.name, **given(args, os.environ)}
    except InvalidInput as err:
        raise RemoteError(str(err)) from None


def run(args: argparse.Namespace) -> int:
    remote = Remote(args.api, args.token, env_or("RNNTUNE_API_READ_TOKEN"))
    try:
        remote.wait_until_up(args.wait)
        return ACTIONS[args.action](remote, args)
    except RemoteError as err:
        print(f"rnntune remote: {err}", file=sys.stderr)
        return EXIT_UNREACHABLE if err.unreachable else EXIT_REFUSED


def do_create(remote: Remote, args: argparse.Namespace) -> int:
    if not args.name:
        raise RemoteError("create needs a study name (or $RNNTUNE_STUDY)")
    body = create_body(args)
    try:
        study = remote.send("GET", f"/studies/{quote(args.name)}")
    except RemoteError as err:
        if err.status != 404:
            raise
        study = remote.send("POST", "/studies", body)
        print(
            f"created study {args.name}: space {study.get('space')}, {study.get('n_trials')} trials, "
            f"{study.get('parallel')} in flight, sampler {study.get('sampler')}",
            flush=True,
        )
    else:
        if not args.exist_ok:
            raise RemoteError(
                f"study {args.name!r} exists (status {study.get('status')}); pass --exist-ok to reuse it", 409
            )
        print(f"study {args.name} exists ({study.get('status')}); reusing it", flush=True)
    if args.start:
        return do_start(remote, args)
    return 0


def do_start(remote: Remote, args: argparse.Namespace) -> int:
    try:
        remote.send("POST", f"/studies/{quote(args.name)}/start")
        print(f"sweep of {args.name} started", flush=True)
    except RemoteError as err:
        if err.status != 409 or not args.follow:
            raise
        print(f"{err}; following it", flush=True)
    print(f"watch it at {remote.api}/web/studies/{quote(args.name)}", flush=True)
    return do_watch(remote, args) if args.follow else 0


def do_stop(remote: Remote, args: argparse.Namespace) -> int:
    remote.send("POST", f"/studies/{quote(args.name)}/stop")
    print(f"sweep of {args.name} is stopping; completed trials are kept", flush=True)
    return 0


def do_watch(remote: Remote, args: argparse.Namespace) -> int:
    """Print the study's status line whenever it changes, until its sweep ends. An API that stops
    answering for a while (a restarting container) is waited for, up to --wait or 60 s."""
    last = None
    while True:
        try:
            study = remote.send("GET", f"/studies/{quote(args.name)}")
        except RemoteError as err:
            if not err.unreachable:
                raise
            print(f"{err}; waiting for it", flush=True)
            remote.wait_until_up(max(args.wait, 60.0))
            continue
        counts = " ".join(f"{k.lower()} {v}" for k, v in (study.get("counts") or {}).items() if v)
        line = (
            f"{args.name} {study.get('status')}: {counts or 'no trials yet'}  best {study.get('best_value')}"
        )
        if line != last:
            print(line, flush=True)
            last = line
        if study.get("status") in ENDED and not (study.get("process") or {}).get("running"):
            return 0 if study.get("status") == "finished" else EXIT_STUDY_FAILED
        time.sleep(POLL_S)


def do_best(remote: Remote, args: argparse.Namespace) -> int:
    best = remote.send("GET", f"/studies/{quote(args.name)}/best")
    print(json.dumps(best, indent=2, sort_keys=True))
    if args.checkpoint is not None:
        number, digest = remote.download_best_checkpoint(args.name, args.checkpoint)
        print(
            f"saved trial {number}'s checkpoint to {args.checkpoint} (SHA-256 {digest}, checked)",
            file=sys.stderr,
        )
    return 0


ACTIONS = {"create": do_create, "start": do_start, "stop": do_stop, "watch": do_watch, "best": do_best}
