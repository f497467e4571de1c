"""`rnntune sweep`: tune a search space on Ray Tune, every trial stored in a SQL study.

With no options it runs the embedded default: the `tiny` space on the built-in corpus, 24 trials
or 10 full trials' worth of training steps (`--budget`), whichever comes first, 2 at a time,
SQLite in ./studies/rnntune.db, Ray started in-process. `--resume NAME` continues a study (after
a crash or a stop, or one only created by the API) and `--trials M` extends it;
`--widen PARAM[:EDGE]` first widens a range whose best trials crowd an edge (`tuner.widen`).
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

from trainer.config import ConfigError, parse_assignment, parse_set
from tuner.defaults import DEFAULT_BUDGET, DEFAULT_PARALLEL, DEFAULT_SPACE, DEFAULT_TRIALS, default_budget
from tuner.early_stopping import DEFAULT_BRACKETS, DEFAULT_GRACE, DEFAULT_REDUCTION_FACTOR, EarlyStopping
from tuner.samplers import DEFAULT_SAMPLER, SAMPLERS
from tuner.space import SpaceError, load_space
from tuner.study import (
    DB_ENV,
    GENERATION_ENV,
    SCHEDULERS,
    StudyError,
    create_study,
    redact_url,
    resolve_db_url,
)
from tuner.widen import parse_widen

# Options that define a study; they cannot change when resuming it.
STUDY_OPTIONS = (
    "space",
    "parallel",
    "sampler",
    "scheduler",
    "name",
    "seed",
    "range",
    "set",
    "grace_steps",
    "reduction_factor",
    "brackets",
    "warm_start",
    "patience",
    "min_improvement",
    "max_hours",
    "budget",
)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "sweep",
        help="tune a search space on Ray Tune (default: a small sweep on the built-in corpus)",
        description=__doc__.split("`: ", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--space", help=f"search space name or YAML path (default: {DEFAULT_SPACE}); see `rnntune spaces`"
    )
    p.add_argument(
        "--trials",
        type=int,
        help=f"number of trials (default {DEFAULT_TRIALS}; with --resume: extend to this many)",
    )
    p.add_argument("--parallel", type=int, help=f"trials in flight at once (default {DEFAULT_PARALLEL})")
    p.add_argument("--sampler", choices=SAMPLERS, help=f"Optuna sampler (default {DEFAULT_SAMPLER})")
    p.add_argument(
        "--scheduler", choices=SCHEDULERS, help="early stopping on the 2TA validation loss (default asha)"
    )
    p.add_argument(
        "--grace-steps",
        type=int,
        metavar="N",
        help=f"ASHA/median: training steps before the first comparison (default {DEFAULT_GRACE})",
    )
    p.add_argument(
        "--reduction-factor",
        type=int,
        metavar="K",
        help=f"ASHA: a trial goes on past a rung only if in the best 1/K there (default {DEFAULT_REDUCTION_FACTOR})",
    )
    p.add_argument(
        "--brackets",
        type=int,
        metavar="N",
        help="ASHA: asynchronous Hyperband over N brackets, bracket s first comparing at grace·K^s "
        f"steps (default {DEFAULT_BRACKETS})",
    )
    p.add_argument(
        "--patience",
        type=int,
        metavar="K",
        help="end the sweep once K finished trials in a row did not beat the best by --min-improvement",
    )
    p.add_argument(
        "--min-improvement",
        type=float,
        metavar="X",
        help="with --patience: how much (nats/token) a trial must beat the best by (default 0)",
    )
    p.add_argument("--max-hours", type=float, metavar="T", help="end this run of the sweep after T hours")
    p.add_argument(
        "--budget",
        type=float,
        metavar="B",
        help="end this run of the sweep once its trials have trained B full trials' worth of steps "
        "(B × max_steps; a pruned trial counts the steps it ran; the ones in flight finish). "
        f"Default: {DEFAULT_BUDGET:g} for the embedded default (no --trials), else none",
    )
    p.add_argument(
        "--keep-top",
        type=int,
        metavar="N",
        help="keep the weights (best.pt, last.pt) of the N best trials only; the rest's are removed as "
        "the sweep goes (configs and metrics stay)",
    )
    p.add_argument(
        "--db",
        help=f"SQLAlchemy URL of the study database (default ${DB_ENV} or sqlite:///studies/rnntune.db)",
    )
    p.add_argument(
        "--storage", help="folder for the trials' run folders and checkpoints (default ./studies/NAME)"
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
        "--warm-start",
        metavar="STUDY",
        help="use the finished trials of STUDY (same database, shared parameters) as the sampler's "
        "prior data; GP samplers only",
    )
    p.add_argument("--seed", type=int, help="sampler seed")
    p.add_argument(
        "--range",
        action="append",
        default=None,
        metavar="NAME=LOW:HIGH[:SCALE]",
        help="override one range of the space (repeatable)",
    )
    p.add_argument(
        "--set",
        action="append",
        default=None,
        metavar="NAME=VALUE",
        help="fix a trainer setting for every trial, e.g. max_steps=500 (repeatable)",
    )
    p.add_argument(
        "--cpus-per-trial", type=float, default=1.0, help="CPUs Ray reserves per trial (default 1)"
    )
    p.add_argument(
        "--gpus-per-trial", type=float, default=0.0, help="GPUs Ray reserves per trial (default 0)"
    )
    p.add_argument(
        "--max-retries", type=int, default=2, help="retries of a trial whose worker died (default 2)"
    )
    p.add_argument(
        "--ray-address", help="Ray cluster to join (default $RAY_ADDRESS, else start one in-process)"
    )
    p.add_argument("--num-cpus", type=int, help="CPUs of the in-process Ray cluster (default: all)")
    p.add_argument("--verbose", action="store_true", help="show Ray's own console output")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import optuna

    from tuner.orchestration import run_sweep
    from tuner.orchestration.ray_runtime import RayStartError, scrub_secrets
    from tuner.orchestration.sweep import check_storage, resolve_data_dir

    optuna.logging.set_verbosity(optuna.logging.INFO if args.verbose else optuna.logging.WARNING)

    generation = os.environ.pop(GENERATION_ENV, None)
    try:
        url = resolve_db_url(args.db)
        scrub_secrets()  # the URL stays in this process's memory only
        if args.resume:
            given = [f"--{o.replace('_', '-')}" for o in STUDY_OPTIONS if getattr(args, o) is not None]
            if given:
                raise StudyError(
                    f"{', '.join(given)}: not allowed with --resume; study {args.resume!r} keeps the settings it was created with"
                )
            name = args.resume
        elif args.widen:
            raise StudyError("--widen: widens the range of an existing study; use it with --resume NAME")
        else:
            space = load_space(args.space or DEFAULT_SPACE)
            overrides = None
            if args.range or args.set:
                overrides = {
                    "ranges": dict(parse_assignment(r, "--range") for r in args.range or []),
                    "set": parse_set(args.set or []),
                }
            # Refuse a missing dataset folder before a study is created under the name.
            resolve_data_dir(space.with_overrides(fixed=(overrides or {}).get("set")))
            if args.storage:  # refuse another study's folder before this study is created
                check_storage(Path(args.storage).expanduser().resolve(), args.name)
            study = create_study(
                args.name,
                storage_url=url,
                space=space,
                sampler=args.sampler,
                n_trials=args.trials if args.trials is not None else DEFAULT_TRIALS,
                parallel=args.parallel if args.parallel is not None else DEFAULT_PARALLEL,
                scheduler=args.scheduler or "asha",
                storage_path=args.storage,
                overrides=overrides,
                seed=args.seed,
                early_stopping={
                    k: getattr(args, k) for k in EarlyStopping.model_fields if getattr(args, k) is not None
                },
                study_stop={
                    k: v
                    for k, v in (
                        ("patience", args.patience),
                        ("min_improvement", args.min_improvement),
                        ("max_hours", args.max_hours),
                        ("budget", default_budget(args.trials, args.budget)),
                    )
                    if v is not None
                },
                keep_top=args.keep_top,
                warm_start=args.warm_start,
            )
            name = study.study_name
        outcome = run_sweep(
            name,
            url,
            generation=int(generation) if generation else None,
            widen=[parse_widen(w) for w in args.widen or []],
            n_trials=args.trials if args.resume else None,
            storage_path=args.storage if args.resume else None,
            ray_address=args.ray_address,
            num_cpus=args.num_cpus or os.cpu_count(),
            cpus_per_trial=args.cpus_per_trial,
            gpus_per_trial=args.gpus_per_trial,
            max_retries=args.max_retries,
            verbose=args.verbose,
        )
    except (ConfigError, SpaceError, StudyError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except RayStartError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    best = outcome.best
    if outcome.ended_early:
        print(f"ended early: {outcome.ended_early}")
    print(
        f"study {outcome.study_name}: {outcome.status}, {outcome.finished}/{outcome.n_trials} trials  (db {redact_url(url)})"
    )
    if best is not None:
        print(
            f"best: trial #{best.number} objective {best.value:.4f}  checkpoint {best.user_attrs.get('checkpoint', '-')}"
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
