"""`rnntune finalize`: rerun a study's K best configurations with S fresh seeds (thesis Appendix 2.B).

The tuner picks the luckiest of noisy runs, so the best trial's own value is optimistic; reruns
with new seeds show how each configuration really does (mean ± sd) and which one is best on
average. Reruns go to STORAGE/finalize/trial-N-seed-S and into the study (attr `finalize`) as each
ends; running the command again skips the seeds already done. A study kept in an object store
reruns into ./studies/NAME/finalize and uploads each rerun's folder to PREFIX/finalize/.

Exit status: 0 when every rerun finished, 1 when some failed or Ray could not start, 2 for a bad
study name or option.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from tuner.storage import study_attrs
from tuner.storage.object_store import ObjectLocation, ObjectStore, is_uri, parse
from tuner.storage.study import (
    DB_ENV,
    StudyError,
    local_folder,
    redact_url,
    resolve_db_url,
    storage_root,
    study_storage,
)

if TYPE_CHECKING:
    import optuna

    from tuner.sweeps.finalize.rerun import Rerun


def _bounded(low: int, high: int, flag: str):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{flag} must be an integer from {low} to {high}, not {text!r}"
            ) from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{flag} must be from {low} to {high}, not {value}")
        return value

    return parse


def register(sub: argparse._SubParsersAction) -> None:
    from tuner.sweeps.finalize.rerun import BEST_BY

    p = sub.add_parser(
        "finalize",
        help="rerun a study's best configurations with fresh seeds; report mean ± sd",
        description=__doc__.split("`: ", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("name", help="the study")
    p.add_argument(
        "--top",
        type=_bounded(1, 20, "--top"),
        default=3,
        help="how many of the best configurations (1-20, default 3)",
    )
    p.add_argument(
        "--seeds",
        type=_bounded(1, 10, "--seeds"),
        default=3,
        help="fresh seeds per configuration (1-10, default 3)",
    )
    p.add_argument(
        "--parallel",
        type=_bounded(1, 64, "--parallel"),
        default=2,
        help="reruns in flight at once (default 2)",
    )
    p.add_argument(
        "--db",
        help=f"SQLAlchemy URL of the study database (default ${DB_ENV} or sqlite:///studies/rnntune.db)",
    )
    p.add_argument(
        "--storage",
        help="the study's folder or s3://BUCKET/PREFIX; reruns go to STORAGE/finalize, uploaded there "
        "from a local folder for an object store (default: the study's storage_path)",
    )
    p.add_argument(
        "--best-by",
        choices=BEST_BY,
        help="name the study's best by the tuning run's value or by the rerun mean",
    )
    p.add_argument(
        "--cpus-per-rerun", type=float, default=1.0, help="CPUs Ray reserves per rerun (default 1)"
    )
    p.add_argument(
        "--gpus-per-rerun", type=float, default=0.0, help="GPUs Ray reserves per rerun (default 0)"
    )
    p.add_argument(
        "--ray-address", help="Ray cluster to join (default $RAY_ADDRESS, else start one in-process)"
    )
    p.add_argument("--num-cpus", type=int, help="CPUs of the in-process Ray cluster (default: all)")
    p.add_argument("--verbose", action="store_true", help="show Ray's own console output")
    p.set_defaults(func=run)


def _fmt(mean: float | None, sd: float | None, digits: int) -> str:
    if mean is None:
        return "-"
    return f"{mean:.{digits}f}" + (f" ± {sd:.{digits}f}" if sd is not None else "")


def report(rows: list[dict], best_by: str | None) -> str:
    """The per-configuration table the command prints."""
    from tuner.sweeps.finalize.rerun import best_by_rerun_mean

    lines = [f"{'trial':>5}  {'n':>2}  {'tuning':>8}  {'rerun val loss':>17}  {'gap':>8}  headline"]
    for r in rows:
        lines.append(
            f"{r['trial']:>5}  {r['n']:>2}  {r['source_value']:>8.4f}  {_fmt(r['val_loss_mean'], r['val_loss_sd'], 4):>17}  "
            f"{'-' if r['gap'] is None else format(r['gap'], '+.4f'):>8}  "
            f"{r['headline']} {r['source_headline']:.3f} → {_fmt(r['headline_mean'], r['headline_sd'], 3)}"
            + (f"  ({r['failed']} failed)" if r["failed"] else "")
        )
    best = best_by_rerun_mean(rows)
    if best is not None:
        lines.append(
            f"best by rerun mean: trial #{best['trial']} ({best['headline']} {_fmt(best['headline_mean'], best['headline_sd'], 3)})"
            + (f"; the study names its best by {best_by}" if best_by else "")
        )
    return "\n".join(lines)


def _prepared(
    args: argparse.Namespace,
) -> tuple[str, optuna.Study, Path, ObjectLocation | None, list[Rerun]]:
    """(the database URL, the study, the reruns' local folder, the object store location they are
    uploaded to or None, the reruns to do); StudyError when the study cannot be finalized now."""
    from tuner.storage.study import load_study
    from tuner.sweeps.finalize import rerun as finalize

    url = resolve_db_url(args.db)
    study = load_study(args.name, url)
    pid = finalize.live_run(study.user_attrs)
    if pid is not None:
        raise StudyError(
            f"study {args.name!r} already has a finalize run in progress (pid {pid}); wait for it or stop it"
        )
    if not finalize.top_trials(study, 1):
        raise StudyError(f"study {args.name!r} has no COMPLETE trial to rerun")
    stored = args.storage or study_attrs.STORAGE_PATH.of(study.user_attrs) or args.name
    if is_uri(stored):  # a study kept in an object store reruns in its local folder (study_storage)
        field = "--storage" if args.storage else "storage_path"
        where = parse(stored, field)
        ObjectStore(where).check(field)  # exit 2 naming the field, before Ray starts
        folder, objects = study_storage(where.uri, storage_root(), args.name)
    elif args.storage:
        folder, objects = local_folder(args.storage, "--storage").resolve(), None
    else:
        folder, objects = study_storage(stored, storage_root(), args.name)
    root = folder / "finalize"
    if args.best_by:
        study_attrs.BEST_BY.write(study, args.best_by)
    return url, study, root, objects, finalize.plan(study, args.top, args.seeds, root, objects)


def run(args: argparse.Namespace) -> int:
    import optuna

    from tuner.sweeps.cluster.ray_runtime import RayStartError, start_ray
    from tuner.sweeps.finalize import rerun as finalize

    optuna.logging.set_verbosity(optuna.logging.INFO if args.verbose else optuna.logging.WARNING)
    try:
        url, study, root, objects, todo = _prepared(args)
    except StudyError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(
        f"study {args.name}: {len(todo)} reruns to do (top {args.top} × {args.seeds} seeds)  db {redact_url(url)}  in {root}"
        + (f" (uploaded to {objects.child('finalize')})" if objects is not None else "")
    )
    started = False
    try:
        if todo:
            started = start_ray(args.ray_address, args.num_cpus or os.cpu_count(), args.verbose)

        def progress(job: finalize.Rerun, result: dict) -> None:
            value = (
                "failed: " + result["error"]
                if result.get("val_loss") is None
                else f"val loss {result['val_loss']:.4f}"
            )
            print(f"trial #{job.trial} seed {job.seed}: {value}", flush=True)

        rows = finalize.run_finalize(
            study,
            top=args.top,
            seeds=args.seeds,
            root=root,
            parallel=args.parallel,
            cpus_per_rerun=args.cpus_per_rerun,
            gpus_per_rerun=args.gpus_per_rerun,
            on_result=progress,
            objects=objects,
        )
    except RayStartError as err:
        finalize.set_finalize_status(study, "failed", top=args.top, seeds=args.seeds, error=str(err))
        print(f"error: {err}", file=sys.stderr)
        return 1
    finally:
        if started:
            import ray

            ray.shutdown()
    wanted = {t.number for t in finalize.top_trials(study, args.top)}
    rows = [r for r in rows if r["trial"] in wanted]
    print(report(rows, study_attrs.BEST_BY.of(study.user_attrs)))
    return 1 if any(r["failed"] for r in rows) else 0
