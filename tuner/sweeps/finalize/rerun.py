"""Noise-aware finalisation: rerun a study's best configurations with fresh seeds (thesis Appendix 2.B).

A tuner that picks the minimum of noisy evaluations picks lucky runs: in the thesis, reruns of the
best LSTM averaged 0.7 perplexity points worse than the tuning run (sd 0.2). `run_finalize` retrains
the K best COMPLETE trials with S new seeds each on Ray and keeps every rerun in the study attr
`finalize` = {"<trial number>": {"value", "params", "reruns": [{"seed", "val_loss", "test_loss",
"run_dir", "best_checkpoint", "error"}...]}}, written after each rerun (study user attrs stay
writable; a finished trial's do not), so a crash loses nothing finished and a second call skips the
seeds already done. `summarize` turns the attr into mean ± sd per configuration and the gap to the
tuning run's own value.

A study kept in an object store (`--storage s3://BUCKET/PREFIX`) has each trial's config read from
its copy in the bucket when this node lacks the run folder (`PREFIX/<run folder's name>/config.yaml`,
never a key outside the prefix), and each rerun's folder uploaded by the worker that trained it to
`PREFIX/finalize/<rerun's folder name>/` (`RunMirror`), its `best_checkpoint` recorded as that key.
"""

from __future__ import annotations

import datetime as dt
import math
import os
import socket
import statistics
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any

import optuna
import yaml
from optuna.trial import FrozenTrial, TrialState

from trainer.result import headline
from tuner.storage import study_attrs, trial_attrs
from tuner.storage.confine import resolve_within
from tuner.storage.object_store import ObjectLocation, ObjectStore, StorageRefused
from tuner.storage.study import StudyError, value_of
from tuner.sweeps.trial.mirror import RunMirror

BEST_BY = ("tuning", "rerun_mean")


@dataclass(frozen=True)
class Rerun:
    """One rerun to do: the source trial, the seed and the trainer config it trains."""

    trial: int
    seed: int
    config: dict[str, Any]


def top_trials(study: optuna.Study, k: int) -> list[FrozenTrial]:
    """The `k` best COMPLETE trials by objective (PRUNED and FAIL ones never qualify)."""
    complete = [
        t for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)) if value_of(t) is not None
    ]
    return sorted(complete, key=lambda t: (value_of(t), t.number))[:k]


def source_config(
    study: optuna.Study, trial: FrozenTrial, storage: Path, objects: ObjectLocation | None = None
) -> dict[str, Any]:
    """The trainer config the trial ran: its run folder's config.yaml (local, else its copy under
    `objects` for a study kept in an object store), else rebuilt from the stored space.
    The run folder is read only inside the study's `storage` folder (a stored run_dir elsewhere is
    ignored, as a retry ignores it), and a config.yaml that is not a trainer config is an error that
    names the trial, never the file's content. A study of a trained model (`checkpoint`) trained
    nothing: StudyError, there is nothing to rerun."""
    checkpoint = (study_attrs.SPEC.of(study.user_attrs) or {}).get("checkpoint")
    if checkpoint:
        raise StudyError(
            f"study {study.study_name!r} tunes dynamic evaluation of {checkpoint}: its trials train "
            f"nothing and are deterministic, so there is nothing to rerun; apply its best setting with "
            f"`rnntune evaluate {checkpoint} --dyneval-from {study.study_name}`"
        )
    run_dir = resolve_within(trial_attrs.RUN_DIR.of(trial.user_attrs), (storage,), storage)
    saved = run_dir / "config.yaml" if run_dir is not None else None
    if saved is not None and saved.is_file():
        return _saved_config(saved, trial.number)
    if objects is not None and (copied := _copied_config(trial, objects)) is not None:
        return copied
    from tuner.space import SearchSpace
    from tuner.sweeps.drive.run import resolve_data_dir

    if study_attrs.SPACE_DEF not in study.user_attrs:
        raise StudyError(
            f"trial {trial.number}: no config.yaml in its run folder and no stored space to rebuild it"
        )
    space = resolve_data_dir(SearchSpace.from_dict(study_attrs.SPACE_DEF.required(study.user_attrs)))
    return space.trial_config(trial.params, str(run_dir or ""))


def _saved_config(path: Path, number: int) -> dict[str, Any]:
    """A trial's saved config.yaml as a trainer config; StudyError naming the trial (not the file's
    keys or values) when it is not one."""
    from trainer import make_config

    try:
        loaded = yaml.safe_load(path.read_text())
        make_config(loaded)
    except Exception:  # unreadable YAML, not a mapping, unknown or invalid settings alike
        raise StudyError(
            f"trial {number}: the config.yaml in its run folder is not a trainer config; refused"
        ) from None
    return dict(loaded)


def _copied_config(trial: FrozenTrial, objects: ObjectLocation) -> dict[str, Any] | None:
    """The trial's config.yaml from its run folder's copy under `objects` (the folder's name as one
    plain component, so no key outside the prefix is read), None when there is no copy."""
    raw = trial_attrs.RUN_DIR.of(trial.user_attrs)
    if not isinstance(raw, str) or not raw:
        return None
    try:
        key = objects.child(PurePath(raw).name, "config.yaml")
    except StorageRefused:
        return None
    store = ObjectStore(objects)
    if store.size(key) is None:
        return None
    with tempfile.TemporaryDirectory(prefix="rnntune-config-") as folder:
        store.download(key, Path(folder) / "config.yaml")
        return _saved_config(Path(folder) / "config.yaml", trial.number)


def fresh_seeds(original: int, count: int) -> list[int]:
    """`count` seeds other than the tuning run's: original+1, original+2, … (deterministic, so a
    second finalize asks for the same seeds and skips the ones done)."""
    return [original + i for i in range(1, count + 1)]


def done_seeds(entry: Mapping[str, Any] | None) -> set[int]:
    """Seeds of a configuration's reruns that finished with a value (failed ones are tried again)."""
    return {int(r["seed"]) for r in (entry or {}).get("reruns", []) if r.get("val_loss") is not None}


def plan(
    study: optuna.Study, top: int, seeds: int, root: Path, objects: ObjectLocation | None = None
) -> list[Rerun]:
    """The reruns still to do for the `top` best trials with `seeds` fresh seeds each (`objects`:
    the object store location of a study kept there)."""
    stored = study_attrs.FINALIZE.of(study.user_attrs) or {}
    todo = []
    for trial in top_trials(study, top):
        config = source_config(study, trial, root.parent, objects)  # root: the study folder's finalize/
        have = done_seeds(stored.get(str(trial.number)))
        for seed in fresh_seeds(int(config.get("seed", 0)), seeds):
            if seed not in have:
                run_dir = root / f"trial-{trial.number}-seed-{seed}"
                todo.append(Rerun(trial.number, seed, {**config, "seed": seed, "run_dir": str(run_dir)}))
    return todo


def record(study: optuna.Study, trial: FrozenTrial, result: Mapping[str, Any]) -> None:
    """Store one finished rerun under its source trial (replacing an earlier attempt at that seed)."""
    stored = dict(study_attrs.FINALIZE.of(study.user_attrs) or {})
    entry = dict(
        stored.get(str(trial.number)) or {"value": value_of(trial), "params": trial.params, "reruns": []}
    )
    reruns = [r for r in entry["reruns"] if int(r["seed"]) != int(result["seed"])]
    entry["reruns"] = sorted([*reruns, dict(result)], key=lambda r: int(r["seed"]))
    stored[str(trial.number)] = entry
    study_attrs.FINALIZE.write(study, stored)


def set_finalize_status(study: optuna.Study, state: str, **extra: Any) -> None:
    """The finalize run's state (`running`, `finished`, `stopped`, `failed`) with who runs it and when."""
    now = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    study_attrs.FINALIZE_STATUS.write(
        study,
        {"state": state, "host": socket.gethostname(), "pid": os.getpid(), "at": now, **extra},
    )


def live_run(attrs: Mapping[str, Any]) -> int | None:
    """The pid of a finalize run of this study alive on this host (its `finalize_status`), else None."""
    status = study_attrs.FINALIZE_STATUS.of(attrs)
    if (
        not isinstance(status, Mapping)
        or status.get("state") != "running"
        or status.get("host") != socket.gethostname()
    ):
        return None
    try:
        pid = int(status.get("pid", 0))
        os.kill(pid, 0)
    except (ProcessLookupError, ValueError, TypeError, OverflowError):
        return None
    except PermissionError:
        return pid
    return pid if pid != os.getpid() else None


def _mean_sd(values: list[float]) -> tuple[float | None, float | None]:
    if not values:
        return None, None
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else None)


def summarize(stored: Mapping[str, Any], word_level: bool) -> list[dict[str, Any]]:
    """Per configuration: n, mean ± sd (sample sd) of the reruns' validation loss and headline
    figure (perplexity or bpc of each rerun), the tuning run's own value and the gap (rerun mean −
    tuning value; positive means the tuning run was lucky). Sorted by rerun mean, then source value."""
    rows = []
    for number, entry in stored.items():
        losses = [float(r["val_loss"]) for r in entry.get("reruns", []) if r.get("val_loss") is not None]
        tests = [float(r["test_loss"]) for r in entry.get("reruns", []) if r.get("test_loss") is not None]
        name, source_figure = headline(float(entry["value"]), word_level)
        figures = [headline(loss, word_level)[1] for loss in losses]
        mean, sd = _mean_sd(losses)
        fig_mean, fig_sd = _mean_sd(figures)
        test_mean, test_sd = _mean_sd(tests)
        rows.append(
            {
                "trial": int(number),
                "params": entry.get("params", {}),
                "n": len(losses),
                "failed": sum(r.get("val_loss") is None for r in entry.get("reruns", [])),
                "source_value": float(entry["value"]),
                "val_loss_mean": mean,
                "val_loss_sd": sd,
                "gap": None if mean is None else mean - float(entry["value"]),
                "headline": name,
                "source_headline": source_figure,
                "headline_mean": fig_mean,
                "headline_sd": fig_sd,
                "headline_gap": None if fig_mean is None else fig_mean - source_figure,
                "test_loss_mean": test_mean,
                "test_loss_sd": test_sd,
                "reruns": entry.get("reruns", []),
            }
        )
    return sorted(
        rows, key=lambda r: (r["val_loss_mean"] is None, r["val_loss_mean"] or 0.0, r["source_value"])
    )


def best_by_rerun_mean(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The configuration with the lowest rerun mean validation loss (None before any rerun ended)."""
    ranked = [r for r in rows if r["val_loss_mean"] is not None]
    return min(ranked, key=lambda r: (r["val_loss_mean"], r["trial"])) if ranked else None


def word_level_of(user_attrs: Mapping[str, Any]) -> bool:
    from trainer.config import WORD_LEVEL_DATASETS

    return (study_attrs.TASK.of(user_attrs) or {}).get("dataset", "builtin") in WORD_LEVEL_DATASETS


def rerun_trial(config: dict[str, Any], objects: str | None = None) -> dict[str, Any]:
    """Train one rerun (runs in a Ray worker); a trainer error becomes the rerun's `error`. With
    `objects` (the study's `PREFIX/finalize`), its run folder is uploaded there and its
    `best_checkpoint` names the uploaded object."""
    result = _trained(config)
    if objects is None:
        return result
    return RunMirror(objects, Path(config["run_dir"])).published(result)


def _trained(config: dict[str, Any]) -> dict[str, Any]:
    from trainer import make_config, train

    try:
        result = train(make_config(config))
    except Exception as err:  # a failed rerun is recorded with its reason and tried again next time
        return {
            "seed": config["seed"],
            "val_loss": None,
            "run_dir": config["run_dir"],
            "error": f"{type(err).__name__}: {err}",
        }
    val = result.best_val_loss
    test = result.test_loss
    if config.get("dyneval") and result.dyneval_val_loss is not None:
        # A dynamic-evaluation study tuned what dynamic evaluation achieves (as the sweep's searcher does).
        val, test = result.dyneval_val_loss, result.dyneval_test_loss
    finite = val is not None and math.isfinite(val)
    return {
        "seed": config["seed"],
        "val_loss": val if finite else None,
        "test_loss": test,
        "run_dir": result.run_dir,
        "best_checkpoint": result.best_checkpoint,
        **({} if finite else {"error": f"no finite validation loss ({val})"}),
    }


def run_finalize(
    study: optuna.Study,
    *,
    top: int,
    seeds: int,
    root: Path,
    parallel: int = 2,
    cpus_per_rerun: float = 1.0,
    gpus_per_rerun: float = 0.0,
    on_result: Callable[[Rerun, dict[str, Any]], None] | None = None,
    objects: ObjectLocation | None = None,
) -> list[dict[str, Any]]:
    """Run the missing reruns on Ray (Ray must be started), `parallel` in flight; returns `summarize`.
    `objects`: the study's object store location, for a study kept there (module docstring)."""
    import ray

    todo = plan(study, top, seeds, Path(root), objects)
    uploads = objects.child("finalize").uri if objects is not None else None
    sources = {t.number: t for t in top_trials(study, top)}
    set_finalize_status(study, "running", top=top, seeds=seeds, todo=len(todo))
    remote = ray.remote(num_cpus=cpus_per_rerun, num_gpus=gpus_per_rerun)(rerun_trial)
    pending: dict[Any, Rerun] = {}
    queue = list(todo)
    try:
        while queue or pending:
            while queue and len(pending) < parallel:
                job = queue.pop(0)
                pending[remote.remote(job.config, uploads)] = job
            ready, _ = ray.wait(list(pending), num_returns=1)
            job = pending.pop(ready[0])
            try:
                result = ray.get(ready[0])
            except ray.exceptions.RayError as err:  # the worker died (OOM kill, lost node): retried next time
                result = {
                    "seed": job.seed,
                    "val_loss": None,
                    "run_dir": job.config["run_dir"],
                    "error": f"worker failed: {str(err).strip().splitlines()[-1]}",
                }
            record(study, sources[job.trial], result)
            if on_result is not None:
                on_result(job, result)
    except BaseException as err:
        for ref in pending:
            ray.cancel(ref, force=True)
        stopped = isinstance(err, KeyboardInterrupt)
        set_finalize_status(
            study,
            "stopped" if stopped else "failed",
            top=top,
            seeds=seeds,
            **({} if stopped else {"error": f"{type(err).__name__}: {err}"}),
        )
        raise
    set_finalize_status(study, "finished", top=top, seeds=seeds, todo=len(todo))
    return summarize(study_attrs.FINALIZE.of(study.user_attrs) or {}, word_level_of(study.user_attrs))
