"""Comparing studies of one task: expected best value against budget, reruns, and a verdict.

Reliable model comparison is the point of tuning every model thoroughly (thesis §4 opening, §4.8;
§1.6: a small task frees compute for controlling nuisance factors). Two studies' best values are
not such a comparison: they depend on how many trials each ran, and the best of many noisy runs is
optimistic (thesis Appendix 2.B). So a comparison here reports, per study:

* the expected best validation value of n trials drawn from its COMPLETE trials, against n and
  against the compute n trials cost in that study (Dodge et al. 2019; `expected_best`), with
  bootstrap bands;
* the mean ± sd of `rnntune finalize`'s reruns of its best configurations, or how to run them;

and, per pair of studies, a verdict at the largest budget both have: the bootstrap interval of the
difference of expected best values (`expected_best.difference`), separable when it excludes 0.
The same test at equal training steps is given beside it.

Studies are comparable only on the same task: the same data, model size, training length and
validation measurement (`TASK_KEYS` of the stored `task`, trainer defaults for keys not set). The
cell or model type may differ: comparing an LSTM with a Mogrifier LSTM is the point.
"""

from __future__ import annotations

import datetime as dt
import itertools
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tuner.analysis import expected_best as eb
from tuner.analysis.reads import StudyStore, TrialRecord
from tuner.errors import InvalidStudy
from tuner.storage import study_attrs
from tuner.sweeps.finalize import rerun as finalize

# The fixed settings that make two studies' validation values comparable.
TASK_KEYS = (
    "dataset", "max_steps", "num_params", "hidden_size", "num_layers", "bptt", "batch_size",
    "max_eval_tokens", "dyneval", "reverse_copy_length", "reverse_copy_vocab",
)  # fmt: skip
MAX_STUDIES = 8
# Fewest COMPLETE trials a study needs for a verdict: below it the bootstrap has too little to resample.
MIN_COMPLETE = 3
FINALIZE_DEFAULTS = {"top": 3, "seeds": 3}
FINISHED = ("COMPLETE", "PRUNED", "FAIL")
# What a comparison shows of each rerun configuration (`finalize.summarize`'s rows hold more).
RERUN_FIELDS = (
    "trial", "n", "failed", "source_value", "val_loss_mean", "val_loss_sd", "gap",
    "headline", "headline_mean", "headline_sd",
)  # fmt: skip


class NotComparable(InvalidStudy):
    """The studies cannot be compared (different tasks or directions, too many, repeated)."""


def _defaults() -> dict[str, Any]:
    from tuner.space.settings import setting_default

    return {key: setting_default(key) for key in TASK_KEYS}


def task_of(name: str, attrs: Mapping[str, Any]) -> dict[str, Any]:
    """The study's stored fixed settings (`task`, else its stored space's `fixed`)."""
    task = study_attrs.TASK.of(attrs)
    if not isinstance(task, Mapping):
        task = (study_attrs.SPACE_DEF.of(attrs) or {}).get("fixed")
    if not isinstance(task, Mapping):
        raise NotComparable(
            f"studies: study {name!r} stores no task (fixed settings), so it cannot be compared; "
            "compare studies created by rnntune"
        )
    return dict(task)


def shared_task(tasks: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The `TASK_KEYS` settings every study shares (trainer defaults for unset keys); NotComparable
    naming each setting that differs and every study's value of it."""
    defaults = _defaults()
    settings = {name: {k: task.get(k, defaults[k]) for k in TASK_KEYS} for name, task in tasks.items()}
    differing = [k for k in TASK_KEYS if len({repr(s[k]) for s in settings.values()}) > 1]
    if differing:
        detail = "; ".join(
            f"{key} differs ({', '.join(f'{name}: {s[key]}' for name, s in settings.items())})"
            for key in differing
        )
        raise NotComparable(
            f"studies: not the same task: {detail}. Compare studies of one dataset, model size, "
            f"training length and evaluation ({', '.join(TASK_KEYS)}); the cell may differ"
        )
    return next(iter(settings.values()))


def model_of(attrs: Mapping[str, Any], task: Mapping[str, Any]) -> str:
    """The cell a study trains (or the cells it tunes, when the cell is a hyperparameter)."""
    tuned = ((study_attrs.SPACE_DEF.of(attrs) or {}).get("params") or {}).get("cell")
    if isinstance(tuned, Mapping) and tuned.get("choices"):
        return "tuned: " + ", ".join(map(str, tuned["choices"]))
    return str(task.get("cell", _cell_default()))


def _cell_default() -> str:
    from tuner.space.settings import setting_default

    return str(setting_default("cell"))


def _seconds(trial: TrialRecord) -> float | None:
    if trial.datetime_start is None or trial.datetime_complete is None:
        return None
    start = dt.datetime.fromisoformat(trial.datetime_start)
    return (dt.datetime.fromisoformat(trial.datetime_complete) - start).total_seconds()


@dataclass(frozen=True)
class Costs:
    """Compute a study spent on its finished trials: training steps (each to the last step it
    reported, so a pruned trial counts the steps it ran, as `--budget` counts them) and trial
    seconds (each trial's datetime_complete − datetime_start, summed: not the study's elapsed time,
    which depends on how many trials ran at once)."""

    steps: int
    seconds: float

    @staticmethod
    def of(trials: Sequence[TrialRecord]) -> Costs:
        done = [t for t in trials if t.state in FINISHED]
        steps = sum(max((step for step, _ in t.curve), default=0) for t in done)
        seconds = sum(s for s in map(_seconds, done) if s is not None)
        return Costs(int(steps), float(seconds))


def finalize_view(name: str, attrs: Mapping[str, Any]) -> dict[str, Any]:
    """The reruns of the study's best configurations (mean ± sd per configuration, best by rerun
    mean), or, when `finalize` never ran, the command and the REST call that run it."""
    stored = study_attrs.FINALIZE.of(attrs) or {}
    rows = finalize.summarize(stored, finalize.word_level_of(attrs)) if stored else []
    best = finalize.best_by_rerun_mean(rows)
    status = study_attrs.FINALIZE_STATUS.of(attrs)
    state = status.get("state") if isinstance(status, Mapping) else None
    return {
        "state": str(state or ("finished" if rows else "none")),
        "configurations": [{k: row[k] for k in RERUN_FIELDS} for row in rows],
        "best": None if best is None else {k: best[k] for k in RERUN_FIELDS},
        "run": None
        if best is not None
        else {
            "command": f"rnntune finalize {name} --top {FINALIZE_DEFAULTS['top']} "
            f"--seeds {FINALIZE_DEFAULTS['seeds']}",
            "method": "POST",
            "path": f"/studies/{name}/finalize",
            "body": dict(FINALIZE_DEFAULTS),
        },
    }


@dataclass(frozen=True)
class Loaded:
    """One study as the comparison reads it."""

    name: str
    direction: str
    attrs: Mapping[str, Any]
    values: tuple[float, ...]
    counts: Mapping[str, int]
    costs: Costs
    # The study snapshot's memo (StudySnapshot.memo): results kept per study version, whatever the
    # other studies of the comparison or their order.
    memo: Callable[[Any, Callable[[], Any]], Any] | None = field(default=None, compare=False, repr=False)

    @property
    def minimize(self) -> bool:
        return self.direction == "minimize"

    def per_trial(self, total: float) -> float | None:
        """Compute per COMPLETE trial: what one more draw of the curve costs in this study."""
        return total / len(self.values) if self.values else None


def check_names(names: Sequence[str]) -> None:
    """NotComparable unless 2 to `MAX_STUDIES` distinct names."""
    if len(names) < 2 or len(names) > MAX_STUDIES:
        raise NotComparable(f"studies: give 2 to {MAX_STUDIES} study names, got {len(names)}")
    if len(set(names)) < len(names):
        raise NotComparable(f"studies: each study once, got {', '.join(names)}")


def load(store: StudyStore, names: Sequence[str]) -> list[Loaded]:
    """The studies' COMPLETE values and costs (NotFound for an unknown name)."""
    rows = [store.row(name) for name in names]  # an unknown study first: NotFound
    check_names(names)
    loaded = []
    for name, row in zip(names, rows):
        snapshot = store.snapshot(row)
        trials = snapshot.trials
        values = tuple(float(t.value) for t in trials if t.completed and t.value is not None)
        loaded.append(
            Loaded(
                name, row.direction, row.user_attrs, values, dict(row.counts), Costs.of(trials), snapshot.memo
            )
        )
    directions = {s.direction for s in loaded}
    if len(directions) > 1:
        raise NotComparable(
            "studies: not the same objective direction: "
            + ", ".join(f"{s.name}: {s.direction}" for s in loaded)
        )
    return loaded


@dataclass(frozen=True)
class Plan:
    """The budgets a pair's verdict compares at: n trials each, and the trials each study's share of
    the most training steps both spent buys it (None when a study has no steps recorded)."""

    n: int
    steps: tuple[int, int, int] | None  # (steps, n_a, n_b)

    @staticmethod
    def of(a: Loaded, b: Loaded) -> Plan | None:
        """None when a study has fewer than `MIN_COMPLETE` COMPLETE trials (no verdict)."""
        if min(len(a.values), len(b.values)) < MIN_COMPLETE:
            return None
        per_a, per_b = a.per_trial(a.costs.steps), b.per_trial(b.costs.steps)
        steps = None
        if per_a and per_b:
            budget = min(a.costs.steps, b.costs.steps)
            n_a, n_b = int(budget // per_a), int(budget // per_b)
            steps = (budget, n_a, n_b) if n_a >= 1 and n_b >= 1 else None
        return Plan(min(len(a.values), len(b.values)), steps)


def _curve(study: Loaded, boot: eb.Bootstrapped | None) -> dict[str, Any] | None:
    """The study's curve with its band, and what each budget costs in steps and seconds."""
    if boot is None:
        return None
    curve = boot.curve()
    steps, seconds = study.per_trial(study.costs.steps), study.per_trial(study.costs.seconds)
    return {
        "n": list(curve.budgets),
        "expected": list(curve.expected),
        "low": list(curve.low),
        "high": list(curve.high),
        "steps": [n * steps for n in curve.budgets] if steps is not None else None,
        "seconds": [n * seconds for n in curve.budgets] if seconds is not None else None,
    }


def _test(
    a: Loaded, b: Loaded, boot_a: eb.Bootstrapped, boot_b: eb.Bootstrapped, n_a: int, n_b: int
) -> dict[str, Any]:
    diff = eb.compare_at(boot_a, boot_b, n_a, n_b)
    sign = 1 if a.minimize else -1  # > 0: a is worse
    better, worse = (b, a) if sign * diff.estimate > 0 else (a, b)
    return {
        "n_a": n_a,
        "n_b": n_b,
        "difference": diff.estimate,
        "se": diff.se,
        "ci_low": diff.low,
        "ci_high": diff.high,
        "separable": diff.separable,
        "better": better.name if diff.separable else None,
        "worse": worse.name if diff.separable else None,
        "by": abs(diff.estimate),
        "steps": None,
    }


def verdict(
    a: Loaded, b: Loaded, boots: Mapping[str, eb.Bootstrapped | None], plan: Plan | None
) -> dict[str, Any]:
    """The test at the largest trial count both have, and at the largest step count both spent
    (`boots`: each study's bootstrap, holding the plan's budgets)."""
    base: dict[str, Any] = {"a": a.name, "b": b.name, "confidence": eb.TEST_CONFIDENCE}
    boot_a, boot_b = boots[a.name], boots[b.name]
    if plan is None or boot_a is None or boot_b is None:
        have = "; ".join(f"{s.name} has {len(s.values)}" for s in (a, b) if len(s.values) < MIN_COMPLETE)
        text = (
            f"cannot compare {a.name} and {b.name}: {have} COMPLETE trials (at least {MIN_COMPLETE} needed)"
        )
        return {**base, "state": "insufficient", "n": None, "text": text, "trials": None, "steps": None}
    n = plan.n
    trials = _test(a, b, boot_a, boot_b, n, n)
    steps = None
    if plan.steps is not None:
        budget, n_a, n_b = plan.steps
        steps = {**_test(a, b, boot_a, boot_b, n_a, n_b), "steps": budget}
    level = round(100 * eb.TEST_CONFIDENCE)
    evidence = (
        f"E[best of {n}] {a.name} − {b.name} = {trials['difference']:+.4g}, bootstrap se {trials['se']:.2g}, "
        f"{level}% interval [{trials['ci_low']:+.4g}, {trials['ci_high']:+.4g}]"
    )
    if trials["separable"]:
        state = "separable"
        text = (
            f"{trials['better']} is better than {trials['worse']} by {trials['by']:.4g} ± {trials['se']:.2g} "
            f"at {n} trials ({evidence}, excludes 0)"
        )
    else:
        state = "not_separable"
        text = f"{a.name} and {b.name} are not separable at this budget, {n} trials ({evidence}, includes 0)"
    return {**base, "state": state, "n": n, "text": text, "trials": trials, "steps": steps}


def bootstraps(
    studies: Sequence[Loaded], plans: Mapping[tuple[str, str], Plan | None], replicates: int
) -> dict[str, eb.Bootstrapped | None]:
    """Each study resampled once, on `budget_grid` plus every budget a verdict needs of it. Its
    seed comes from its name, so a study gets the same band whatever it is compared with; kept in
    the study's snapshot memo, so the same studies asked in another order (or one study compared
    again with the same budgets) resample nothing."""
    needed: dict[str, set[int]] = {s.name: set() for s in studies}
    for (a, b), plan in plans.items():
        if plan is not None:
            needed[a].add(plan.n)
            needed[b].add(plan.n)
            if plan.steps is not None:
                needed[a].add(plan.steps[1])
                needed[b].add(plan.steps[2])
    found: dict[str, eb.Bootstrapped | None] = {}
    for s in studies:
        if not s.values:
            found[s.name] = None
            continue
        grid = sorted({*eb.budget_grid(len(s.values)).tolist(), *needed[s.name]})
        seed = [eb.SEED, zlib.crc32(s.name.encode())]

        def resample(s: Loaded = s, grid: list[int] = grid, seed: list[int] = seed) -> eb.Bootstrapped:
            return eb.Bootstrapped.of(s.values, s.minimize, budgets=grid, replicates=replicates, seed=seed)

        key = ("bootstrap", tuple(grid), replicates, s.minimize)
        found[s.name] = s.memo(key, resample) if s.memo is not None else resample()
    return found


def describe_test() -> str:
    """The verdict's test in words (also in docs/compare.md)."""
    return (
        f"Per pair, at n = the largest number of COMPLETE trials both studies have: {eb.REPLICATES} "
        f"bootstrap replicates resample each study's COMPLETE trial values with replacement, and each "
        f"replicate's difference of expected best values at n trials is computed exactly (Dodge et "
        f"al. 2019). The two are separable when the {round(100 * eb.TEST_CONFIDENCE)}% percentile "
        f"interval of those differences excludes 0; otherwise not separable at this budget."
    )


def compare(store: StudyStore, names: Sequence[str], replicates: int = eb.REPLICATES) -> dict[str, Any]:
    """The whole comparison as JSON-ready data (what `GET /compare` answers and `rnntune compare
    --json` prints). NotComparable (422) for studies of different tasks, NotFound for unknown ones."""
    studies = load(store, names)
    tasks = {s.name: task_of(s.name, s.attrs) for s in studies}
    task = shared_task(tasks)
    pairs = list(itertools.combinations(studies, 2))
    plans = {(a.name, b.name): Plan.of(a, b) for a, b in pairs}
    boots = bootstraps(studies, plans, replicates)
    rows = []
    for study in studies:
        best = (min if study.minimize else max)(study.values) if study.values else None
        rows.append(
            {
                "name": study.name,
                "model": model_of(study.attrs, tasks[study.name]),
                "space": study_attrs.SPACE.of(study.attrs),
                "status": str(study_attrs.STATUS.of(study.attrs, "created")),
                "counts": dict(study.counts),
                "n_complete": len(study.values),
                "best_value": best,
                "steps": study.costs.steps,
                "trial_seconds": study.costs.seconds,
                "steps_per_complete": study.per_trial(study.costs.steps),
                "seconds_per_complete": study.per_trial(study.costs.seconds),
                "curve": _curve(study, boots[study.name]),
                "finalize": finalize_view(study.name, study.attrs),
            }
        )
    return {
        "studies": rows,
        "direction": studies[0].direction,
        "task": task,
        "task_keys": list(TASK_KEYS),
        "bootstrap": {
            "replicates": replicates,
            "band": eb.BAND,
            "band_kind": "basic",
            "test_confidence": eb.TEST_CONFIDENCE,
            "test_kind": "percentile",
            "seed": eb.SEED,
        },
        "test": describe_test(),
        "verdicts": [verdict(a, b, boots, plans[(a.name, b.name)]) for a, b in pairs],
    }
