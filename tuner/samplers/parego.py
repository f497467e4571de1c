"""ParEGO: several objectives made one by a random augmented Chebyshev scalarisation per suggestion.

Why: rnntune's GP fits one target through its fidelity model (`tuner.samplers.fidelity_gp`), which
is what lets early-stopped trials inform the search. ParEGO (Knowles 2006) keeps that machinery for
a multi-objective study: each suggestion draws weights λ uniformly from the simplex, normalises
every objective to [0, 1] over the study's trials, and scores each trial by
max_i λ_i·z_i + ρ·Σ_i λ_i·z_i (ρ = 0.05, Knowles's augmentation, which keeps weakly dominated
points behind); the GP then models that one value, so successive suggestions aim at different
parts of the front. The trials handed on are copies (`scalarised`) with the scalar as their value;
the stored trials are never changed. The GP uses it with three or more objectives, under
constraints, and with two objectives until enough trials are COMPLETE for a front; from then on
two objectives get a GP each and EHVI (`tuner.samplers.ehvi`).

What a trial contributes: a COMPLETE trial its values; a PRUNED or RUNNING one its intermediate
values (a multi-objective study has no `Trial.report`, so the sweep writes one objective's curve
through the storage) for the one objective without a user attr of its name, and the other
objectives from the user attrs named by `study.metric_names` (`Study.set_metric_names`), when it
has all of them. Without those it counts as a RUNNING trial does (pending) or not at all (PRUNED).
A curve is of the one objective a trial has no user attr for (the first when that is ambiguous,
as in a study that stores none).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

import numpy as np
from optuna.study import Study
from optuna.trial import FrozenTrial, TrialState

from tuner.samplers.observations import signs as minimised_signs

RHO = 0.05  # Knowles 2006's augmentation of the Chebyshev scalarisation


def weights(n_objectives: int, rng: np.random.RandomState) -> np.ndarray:
    """λ drawn uniformly from the simplex (ParEGO draws from a fixed grid of it; uniform draws
    need no grid size and cover it the same way in expectation)."""
    return rng.dirichlet(np.ones(n_objectives))


def scalarised(study: Study, trials: Sequence[FrozenTrial], lam: np.ndarray) -> list[FrozenTrial]:
    """Copies of `trials` with one value to be minimised: the Chebyshev scalarisation under `lam`
    of their objectives (normalised over the trials), also at each intermediate step. PRUNED trials
    without their objectives are left out; RUNNING ones keep no values (pending)."""
    signs = minimised_signs(study)
    names = list(study.metric_names or [])
    found = {t.number: v for t in trials if (v := _vector(t, names, signs)) is not None}
    vectors = {n: v for n, (v, _) in found.items()}
    if not vectors:
        return [_copy(t, None, {}) for t in trials if t.state == TrialState.RUNNING]
    stacked = np.array(list(vectors.values()))
    finite = np.where(np.isfinite(stacked), stacked, np.nan)
    low, high = np.nan_to_num(np.nanmin(finite, axis=0)), np.nan_to_num(np.nanmax(finite, axis=0))
    span = np.where(high > low, high - low, 1.0)

    def scalar(v: np.ndarray) -> float:
        z = (np.where(np.isfinite(v), v, high) - low) / span  # a diverged value is the worst seen
        return float(np.max(lam * z) + RHO * np.sum(lam * z))

    out = []
    for t in trials:
        if t.number not in found:
            if t.state == TrialState.RUNNING:
                out.append(_copy(t, None, {}))
            continue
        vector, at = found[t.number]
        curve = {s: scalar(_with(vector, at, signs[at] * x)) for s, x in t.intermediate_values.items()}
        out.append(_copy(t, scalar(vector) if t.state == TrialState.COMPLETE else None, curve))
    return out


def _curve_of(t: FrozenTrial, names: list[str], n: int) -> int:
    """The objective the trial's intermediate values are of: the one objective without a user
    attr of its name, else the first."""
    missing = [i for i, name in enumerate(names) if name not in t.user_attrs] if len(names) == n else []
    return missing[0] if len(missing) == 1 else 0


def _vector(t: FrozenTrial, names: list[str], signs: np.ndarray) -> tuple[np.ndarray, int] | None:
    """The trial's objectives to be minimised and the index of the one its curve is of: its values
    if COMPLETE, else its curve's last value and the others from its user attrs; None when some
    are missing."""
    curve = _curve_of(t, names, len(signs))
    if t.state == TrialState.COMPLETE:
        return None if t.values is None else (signs * np.asarray(t.values, dtype=float), curve)
    if not t.intermediate_values or len(names) != len(signs):
        return None
    values = [t.user_attrs.get(name) for name in names]
    values[curve] = t.intermediate_values[max(t.intermediate_values)]
    if any(isinstance(v, bool) or not isinstance(v, int | float) for v in values):
        return None
    return signs * np.array(values, dtype=float), curve


def _with(v: np.ndarray, i: int, x: float) -> np.ndarray:
    out = v.copy()
    out[i] = x
    return out


def _copy(t: FrozenTrial, value: float | None, curve: dict[int, float]) -> FrozenTrial:
    proxy = copy.copy(t)  # the stored trial keeps its values: only the copy's are replaced
    proxy.values = None if value is None else [value]
    proxy.intermediate_values = curve
    return proxy
