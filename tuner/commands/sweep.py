"""`rnntune sweep`: tune a search space on Ray Tune, every trial stored in a SQL study.

With no options it runs the embedded default: the `tiny` space on the built-in corpus, 24 trials
or 10 full trials' worth of training steps (`--budget`), whichever comes first, 2 at a time,
SQLite in ./studies/rnntune.db, Ray started in-process. `--resume NAME` continues a study (after
a crash or a stop, or one only created by the API) and `--trials M` extends it;
`--widen PARAM[:EDGE]` first widens a range whose best trials crowd an edge (`tuner.sweeps.widen.ranges`).
Every option of the sweep's spec (`tuner.spec.SweepSpec`) has a flag here; with `--resume`, only
the ones that do not change what the study samples may be given (trials, placement, retries,
retention, the stop rules): the others are refused by name.
`--warm-start STUDY` gives a new study's sampler another study's trials as prior data.

One process drives a study at a time (its driver lease in the study database); a stop request
stored through the API, SIGINT or SIGTERM stop it cleanly. The database URL from $RNNTUNE_DB_URL is
removed from the environment before Ray starts, as are the API tokens.

Exit status: 0 when the study has all its trials, 130 when stopped (resume it later), 1 when the
sweep failed (every trial FAILed, or Ray could not start), 2 for a bad space, setting or study
name, a study another live sweep drives, or a --storage folder that belongs to another study.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainer.config import ConfigError
from tuner.commands.spec_options import add_spec_options, given
from tuner.errors import InvalidInput, LeaseLost, StudyError
from tuner.space import load_space
from tuner.spec import DEFAULT_SPACE, default_budget
from tuner.storage import trial_attrs
from tuner.storage.object_backends import URI_FORMS
from tuner.storage.object_store import ObjectStore, location
from tuner.storage.study import DB_ENV, GENERATION_ENV, redact_url, resolve_db_url, value_of
from tuner.sweeps.study.create import create_study
from tuner.sweeps.widen.ranges import parse_widen

if TYPE_CHECKING:
    from tuner.sweeps.drive.execute import SweepOutcome


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "sweep",
        help="tune a search space on Ray Tune (default: a small sweep on the built-in corpus)",
        description=__doc__.split("`: ", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_spec_options(p)
    p.add_argument(
        "--db",
        help=f"SQLAlchemy URL of the study database (default ${DB_ENV} or sqlite:///studies/rnntune.db)",
    )
    p.add_argument(
        "--storage",
        help="folder for the trials' run folders and checkpoints (default ./studies/NAME), or "
        f"{URI_FORMS} to keep them in an object store (S3 or S3-compatible, Google Cloud Storage, "
        "Azure Blob Storage; credentials from the environment, docs/cluster.md)",
    )
    p.add_argument("--name", help="study name (default: generated, e.g. tiny-20261122-0312-ab12)")
    p.add_argument("--resume", metavar="NAME", help="continue the study NAME")
    p.add_argument(
        "--widen",
        action="append",
        default=None,
        metavar="PARAM[:low|high|both]",
        help="with --resume: widen PARAM's range by half its span at the edge its boundary alert "
        "names (or the edge given) before continuing (repeatable); add --trials to run more trials",
    )
    p.add_argument(
        "--ray-address", help="Ray cluster to join (default $RAY_ADDRESS, else start one in-process)"
    )
    p.add_argument("--num-cpus", type=int, help="CPUs of the in-process Ray cluster (default: all)")
    p.add_argument("--verbose", action="store_true", help="show Ray's own console output")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import optuna

    from tuner.sweeps.cluster.ray_runtime import RayStartError, scrub_secrets
    from tuner.sweeps.drive.run import run_sweep

    optuna.logging.set_verbosity(optuna.logging.INFO if args.verbose else optuna.logging.WARNING)

    generation = os.environ.pop(GENERATION_ENV, None)
    try:
        url = resolve_db_url(args.db)
        scrub_secrets()  # the URL stays in this process's memory only
        fields = given(args)
        if args.resume:
            name = args.resume
        elif args.widen:
            raise StudyError("--widen: widens the range of an existing study; use it with --resume NAME")
        else:
            name, fields = _new_study(args, fields, url), {}
        outcome = run_sweep(
            name,
            url,
            generation=int(generation) if generation else None,
            widen=[parse_widen(w) for w in args.widen or []],
            changes=fields,
            storage_path=args.storage if args.resume else None,
            ray_address=args.ray_address,
            num_cpus=args.num_cpus or os.cpu_count(),
            verbose=args.verbose,
        )
    except LeaseLost as err:  # fenced off: another driver took the study over (docs/reliability.md)
        print(f"error: {err}", file=sys.stderr)
        return 1
    except (ConfigError, InvalidInput) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except RayStartError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return _report(args, outcome, url)


def _new_study(args: argparse.Namespace, fields: dict[str, Any], url: str) -> str:
    """The name of the study `rnntune sweep` creates from its flags (`fields`)."""
    from tuner.sweeps.drive.run import check_storage, claim_objects, resolve_data_dir

    space = load_space(fields.get("space", DEFAULT_SPACE))
    # A space that names its own trial count (`sweep:` in its file) runs all its trials.
    trials = fields.get("n_trials") or space.sweep.n_trials
    fields["budget"] = default_budget(trials, fields.get("budget"), fields.get("procedure"))
    overrides = fields.get("overrides") or {}
    # Refuse a missing dataset folder before a study is created under the name.
    resolve_data_dir(space.with_overrides(fixed=overrides.get("set")))
    if args.storage:  # refuse another study's folder before this study is created
        where = location(args.storage, "--storage")
        if isinstance(where, Path):
            check_storage(where.resolve(), args.name)
        else:
            store = ObjectStore(where)
            store.check("--storage")
            claim_objects(store, args.name)
    return create_study(args.name, fields, storage_url=url, storage_path=args.storage).study_name


def _report(args: argparse.Namespace, outcome: SweepOutcome, url: str) -> int:
    """What the sweep's end prints, and the command's exit status."""
    best = outcome.best
    if outcome.ended_early:
        print(f"ended early: {outcome.ended_early}")
    print(
        f"study {outcome.study_name}: {outcome.status}, {outcome.finished}/{outcome.n_trials} trials  (db {redact_url(url)})"
    )
    if best is not None:
        print(
            f"best: trial #{best.number} objective {value_of(best):.4f}  "
            f"checkpoint {trial_attrs.CHECKPOINT.of(best.user_attrs, '-')}"
        )
    if args.widen and outcome.status == "finished" and outcome.finished >= outcome.n_trials:
        print(
            f"the study has all its {outcome.n_trials} trials: sample from the widened range with "
            f"rnntune sweep --resume {outcome.study_name} --trials M (M > {outcome.n_trials})"
        )
    if outcome.status == "stopped":
        print(
            f"resume with: rnntune sweep --resume {outcome.study_name}"
            + (f" --db {redact_url(url)}" if args.db else "")
        )
        return 130
    if outcome.error:
        print(f"error: {outcome.error}", file=sys.stderr)
    return 0 if outcome.status == "finished" else 1
