"""Early stopping for several objectives: ASHA's rungs with non-dominated sorting (MO-ASHA).

ASHA (Li et al. 2020) keeps a trial at a rung when its value is in the best 1/η of the values
recorded there. With several objectives there is no single order, so, as multi-objective ASHA
does (Schmucker et al. 2021, "Multi-objective Asynchronous Successive Halving"), the trials at a
rung are ordered by non-dominated sorting: by front rank first, then, within a front, by NSGA-II's
crowding distance (larger first: a lonely point covers a part of the front nobody else does). A
trial is pruned at a rung only when another trial there dominates it AND it is outside the best
1/η of that order (`keep_at_rung`), so a trial on the rung's front always goes on. With one
objective this is Ray's ASHA except where Ray interpolates between two recorded values.

`ParetoASHA` is the Ray Tune scheduler: the same rungs as Ray's ASHAScheduler (grace period ·
η^(k+s) for bracket s, time attribute "step"), each result's objectives read from the result dict
by name and flipped to minimisation by their direction.
"""

from __future__ import annotations

import math
import pickle
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
from ray.tune.schedulers import FIFOScheduler, TrialScheduler

from tuner.objectives.pareto import crowding, front_ranks
from tuner.policies.early_stopping import TIME_RESULT_KEY, EarlyStopping

Direction = Literal["minimize", "maximize"]
Objectives = Sequence[tuple[str, Direction]]


def keep_at_rung(recorded: Sequence[Sequence[float]], new: Sequence[float], reduction_factor: float) -> bool:
    """Whether a trial reaching a rung with the minimisation vector `new` goes on, given the
    vectors `recorded` there before it: yes when nothing recorded dominates it, or when fewer than
    1/`reduction_factor` of all the rung's trials (it included) come before it in the order
    (front rank, then crowding distance within the front, larger first). Ties in that order count
    in the new trial's favour, so equal vectors share a fate."""
    if not recorded:
        return True
    points = np.vstack([np.asarray(recorded, dtype=float), np.asarray(new, dtype=float)])
    points = np.where(np.isnan(points), np.inf, points)  # a diverged measure is the worst there is
    ranks = np.array(front_ranks(points))
    if ranks[-1] == 0:
        return True
    crowd = np.zeros(len(points))
    for rank in np.unique(ranks):
        members = np.flatnonzero(ranks == rank)
        crowd[members] = crowding(_finite(points[members]))
    ahead = (ranks < ranks[-1]) | ((ranks == ranks[-1]) & (crowd > crowd[-1]))
    return int(ahead.sum()) < len(points) / reduction_factor


def _finite(points: np.ndarray) -> np.ndarray:
    """Infinite values (diverged runs) replaced by a finite stand-in beyond the rest, so crowding
    distances stay numbers."""
    finite = points[np.isfinite(points)]
    top = float(finite.max()) + 1.0 if finite.size else 1.0
    return np.where(np.isfinite(points), points, top)


def to_minimise(result: Mapping[str, Any], objectives: Objectives) -> list[float] | None:
    """`result`'s objective values as a minimisation vector (maximised ones negated, NaN kept, to
    rank last); None when one of them is missing."""
    out = []
    for name, direction in objectives:
        value = result.get(name)
        if value is None:
            return None
        out.append(float(value) if direction == "minimize" else -float(value))
    return out


class _Bracket:
    """The rungs of one bracket (descending milestones) and the vectors recorded at each."""

    def __init__(self, grace: int, max_t: int, reduction_factor: float, s: int) -> None:
        n = int(math.log(max_t / grace) / math.log(reduction_factor) - s + 1)
        self.rungs: list[tuple[float, dict[str, list[float]]]] = [
            (grace * reduction_factor ** (k + s), {}) for k in reversed(range(n))
        ]
        self.reduction_factor = reduction_factor

    def on_result(self, trial_id: str, step: float, vector: list[float]) -> str:
        """Compare the trial at the highest rung it has passed and not yet been recorded at (Ray's
        ASHA with `stop_last_trials=False`), record it there, and say whether it goes on."""
        for milestone, recorded in self.rungs:
            if step >= milestone and trial_id in recorded:
                return TrialScheduler.CONTINUE  # decided at this rung already
            if step < milestone:
                continue
            keep = keep_at_rung(list(recorded.values()), vector, self.reduction_factor)
            recorded[trial_id] = vector
            return TrialScheduler.CONTINUE if keep else TrialScheduler.STOP
        return TrialScheduler.CONTINUE


class ParetoASHA(FIFOScheduler):
    """Asynchronous successive halving over several objectives (module docstring).

    `objectives`: (result key, "minimize" | "maximize") pairs, e.g.
    ``[("val_loss", "minimize"), ("num_params", "minimize")]``; every result carries them and
    `time_attr` ("step"). `max_steps`, `grace_period`, `reduction_factor` and `brackets` are
    ASHA's (`max_t`, the first rung, η, and the number of asynchronous Hyperband brackets); a
    trial joins a bracket drawn as Ray's ASHA draws it (softmax of its rung count), from `seed`.
    Trials are never stopped at `max_steps` (the trainer ends itself there). A result missing an
    objective is not compared (Ray's ASHA does the same with a missing metric).
    """

    def __init__(
        self,
        objectives: Objectives,
        *,
        max_steps: int,
        grace_period: int,
        reduction_factor: float = 3,
        brackets: int = 1,
        time_attr: str = TIME_RESULT_KEY,
        seed: int | None = None,
    ) -> None:
        if not objectives:
            raise ValueError("ParetoASHA needs at least one objective")
        for name, direction in objectives:
            if direction not in ("minimize", "maximize"):
                raise ValueError(
                    f"objective {name!r}: direction must be minimize or maximize, not {direction!r}"
                )
        if not 0 < grace_period <= max_steps or reduction_factor <= 1 or brackets < 1:
            raise ValueError(
                "ParetoASHA needs 0 < grace_period <= max_steps, reduction_factor > 1 and brackets >= 1"
            )
        super().__init__()
        self.objectives = [(str(n), d) for n, d in objectives]
        self._time_attr = time_attr
        self._brackets = [_Bracket(grace_period, max_steps, reduction_factor, s) for s in range(brackets)]
        self._trial_info: dict[str, _Bracket] = {}
        self._rng = np.random.default_rng(seed)
        self._num_stopped = 0

    @classmethod
    def from_policy(
        cls,
        objectives: Objectives,
        policy: EarlyStopping,
        max_steps: int,
        eval_every: int,
        seed: int | None = None,
    ) -> ParetoASHA:
        """Built on a study's early-stopping `policy` resolved on the task's grid, as
        `make_scheduler` builds ASHA."""
        resolved = policy.resolved(max_steps, eval_every)
        return cls(
            objectives,
            max_steps=max_steps,
            grace_period=int(resolved.grace_steps or eval_every),
            reduction_factor=resolved.reduction_factor,
            brackets=resolved.brackets or 1,
            seed=seed,
        )

    def set_search_properties(self, metric: str | None, mode: str | None, **spec: Any) -> bool:
        """Tune's metric, if given, must be one of the objectives; the objectives decide."""
        return metric is None or metric in {name for name, _ in self.objectives}

    def on_trial_add(self, tune_controller: Any, trial: Any) -> None:
        sizes = np.array([len(b.rungs) for b in self._brackets])
        probs = np.exp(sizes - sizes.max())
        index = int(self._rng.choice(len(self._brackets), p=probs / probs.sum()))
        self._trial_info[trial.trial_id] = self._brackets[index]

    def on_trial_result(self, tune_controller: Any, trial: Any, result: dict) -> str:
        vector = to_minimise(result, self.objectives)
        bracket = self._trial_info.get(trial.trial_id)
        if vector is None or self._time_attr not in result or bracket is None:
            return TrialScheduler.CONTINUE
        action = bracket.on_result(trial.trial_id, float(result[self._time_attr]), vector)
        if action == TrialScheduler.STOP:
            self._num_stopped += 1
        return action

    def on_trial_complete(self, tune_controller: Any, trial: Any, result: dict) -> None:
        vector = to_minimise(result, self.objectives)
        bracket = self._trial_info.pop(trial.trial_id, None)
        if vector is not None and self._time_attr in result and bracket is not None:
            bracket.on_result(trial.trial_id, float(result[self._time_attr]), vector)

    def on_trial_remove(self, tune_controller: Any, trial: Any) -> None:
        self._trial_info.pop(trial.trial_id, None)

    def debug_string(self) -> str:
        rungs = "; ".join(
            " | ".join(f"step {m:g}: {len(r)} recorded" for m, r in b.rungs) for b in self._brackets
        )
        return f"Using ParetoASHA: num_stopped={self._num_stopped}; {rungs}"

    def save(self, checkpoint_path: str) -> None:
        with open(checkpoint_path, "wb") as f:
            pickle.dump(self.__dict__, f)

    def restore(self, checkpoint_path: str) -> None:
        with open(checkpoint_path, "rb") as f:
            self.__dict__.update(pickle.load(f))
