"""`python -m tuner.deploy render|secret --env .env [--values FILE]`: print manifests for kubectl.

`render` prints every object but the Secret; `secret` prints the Secret. Pipe either to
`kubectl apply -f -`. Refused inputs print every problem, each naming the field, and exit 2 with
nothing on stdout. Run from a checkout: docker-compose.yml is read from the repository root.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tuner.deploy.compose import ROOT, ComposeError
from tuner.deploy.inputs import read_env, read_values
from tuner.deploy.refusals import Refused
from tuner.deploy.render import manifests, secret, to_yaml


def parser() -> argparse.ArgumentParser:
    parse = argparse.ArgumentParser(prog="python -m tuner.deploy", description=__doc__.split("\n\n")[0])
    parse.add_argument(
        "what", choices=("render", "secret"), help="render: every object but the Secret; secret: the Secret"
    )
    parse.add_argument(
        "--env", type=Path, required=True, help="the .env Compose reads (docker/make-env writes one)"
    )
    parse.add_argument("--values", type=Path, help="your values file, laid over tuner/deploy/values.yaml")
    parse.add_argument(
        "--root", type=Path, default=ROOT, help="the checkout with docker-compose.yml (default: this one)"
    )
    return parse


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        settings, user_values = read_env(args.env), read_values(args.values)
        if args.what == "render":
            text = to_yaml(manifests(settings, user_values, args.root))
        else:
            text = to_yaml([secret(settings, user_values, args.root)])
    except (Refused, ComposeError, ValueError, OSError) as error:
        print(f"python -m tuner.deploy: {error}", file=sys.stderr)
        return 2
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
