"""Samplers for rnntune sweeps: `make_sampler(name, seed=..., **options)` gives an Optuna sampler.

Every sampler accounts for the trials in flight (RUNNING) when it suggests a new one, so K trials
asked at once do not collapse onto one point:

* ``gp``: Optuna's GPSampler. With RUNNING trials Optuna 5 switches from logEI to q-logEI over the
  pending points (a Monte Carlo expectation over their joint posterior, chosen greedily), so the new
  point is worth something only where the pending ones are not.
* ``gp_warped``: the same GP fitted to half-rank-warped objective values
  (`tuner.samplers.half_rank_gp`: outliers among the worse half cannot dominate the fit); pending
  trials are handled by the same q-logEI.
* ``gp_rungs``: the warped GP fitted on COMPLETE and PRUNED trials, each pruned trial ranked below
  the survivors of the rung where it stopped (`tuner.samplers.rung_rank_gp`); q-logEI over the
  RUNNING ones.
* ``gp_bohb``: the warped GP fitted on the largest budget (rung of the study's early-stopping
  policy, or the full run) with enough observations, BOHB's rule (`tuner.samplers.bohb_gp`).
* ``gp_fidelity`` (the default): ``gp_bohb`` until ``n_startup_trials`` trials are COMPLETE, then
  the warped GP over (configuration, step), every trial at the last step it reported, candidates
  scored at the full length (`tuner.samplers.fidelity_gp`, MOBSTER-like).
* ``tpe``: multivariate TPE with ``group=True`` (joint model per group of parameters that occur
  together, so conditional parameters such as ``mogrifier_rounds`` are modelled) and the constant
  liar (RUNNING trials count as the worst value seen, which pushes new points away from them).
* ``random``: independent uniform draws (pending trials are irrelevant).
* ``qmc``: a scrambled Sobol sequence; each trial takes the next index, so pending trials never
  repeat.

Conditional parameters work with each sampler through Optuna's define-by-run API. rnntune's GPs
(``gp_warped``, ``gp_rungs``, ``gp_bohb``, ``gp_fidelity``) model every parameter seen in the study — conditional
ones (imputed outside their range when a trial lacks them) and ranges widened mid-study
(`tuner.samplers.union_space`, `tuner.samplers.inactive`); Optuna's ``gp`` and ``qmc`` model only
the parameters every trial has with the same range, and draw the others with their independent
(random) sampler.

Warm starts: the samplers of `WARM_START_SAMPLERS` take ``prior_trials`` (another study's
FrozenTrials, e.g. the same space on another corpus), fitted beside the study's own trials while it
has few (`tuner.samplers.prior_trials`); any other sampler given them is a ValueError.
"""

from __future__ import annotations

import contextlib
import inspect
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import optuna
from optuna.samplers import BaseSampler
from optuna.trial import FrozenTrial

from tuner.samplers.bohb_gp import BOHBRuleGPSampler
from tuner.samplers.fidelity_gp import FidelityGPSampler
from tuner.samplers.half_rank_gp import HalfRankGPSampler
from tuner.samplers.rung_rank_gp import RungRankGPSampler


def _gp(**kw: Any) -> BaseSampler:
    return optuna.samplers.GPSampler(**{"warn_independent_sampling": False, **kw})


def _gp_warped(**kw: Any) -> BaseSampler:
    return HalfRankGPSampler(**{"warn_independent_sampling": False, **kw})


def _gp_rungs(**kw: Any) -> BaseSampler:
    return RungRankGPSampler(**{"warn_independent_sampling": False, **kw})


def _gp_bohb(**kw: Any) -> BaseSampler:
    return BOHBRuleGPSampler(**{"warn_independent_sampling": False, **kw})


def _gp_fidelity(**kw: Any) -> BaseSampler:
    return FidelityGPSampler(**{"warn_independent_sampling": False, **kw})


def _tpe(**kw: Any) -> BaseSampler:
    with _experimental_ok():
        return optuna.samplers.TPESampler(
            **{"multivariate": True, "group": True, "constant_liar": True, **kw}
        )


def _random(**kw: Any) -> BaseSampler:
    return optuna.samplers.RandomSampler(**kw)


def _qmc(**kw: Any) -> BaseSampler:
    defaults = {"qmc_type": "sobol", "scramble": True, "warn_independent_sampling": False}
    with _experimental_ok():
        return optuna.samplers.QMCSampler(**{**defaults, **kw})


@contextlib.contextmanager
def _experimental_ok() -> Iterator[None]:
    """Silence Optuna's ExperimentalWarning: TPE's `group` and QMCSampler are chosen on purpose."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        yield


# name -> (factory, the Optuna class whose keyword arguments are the allowed options)
_FACTORIES: dict[str, tuple[Callable[..., BaseSampler], type[BaseSampler]]] = {
    "gp": (_gp, optuna.samplers.GPSampler),
    "gp_warped": (_gp_warped, HalfRankGPSampler),
    "gp_rungs": (_gp_rungs, RungRankGPSampler),
    "gp_bohb": (_gp_bohb, BOHBRuleGPSampler),
    "gp_fidelity": (_gp_fidelity, FidelityGPSampler),
    "tpe": (_tpe, optuna.samplers.TPESampler),
    "random": (_random, optuna.samplers.RandomSampler),
    "qmc": (_qmc, optuna.samplers.QMCSampler),
}

SAMPLERS: tuple[str, ...] = tuple(_FACTORIES)
# The samplers that take `prior_trials` (another study's trials as prior data: a warm start).
WARM_START_SAMPLERS: tuple[str, ...] = ("gp_warped", "gp_rungs", "gp_bohb", "gp_fidelity")
DEFAULT_SAMPLER = "gp_fidelity"  # best under ASHA on real learning curves (docs/samplers.md)


def sampler_options(name: str) -> tuple[str, ...]:
    """The keyword options `make_sampler(name, ...)` accepts besides `seed`."""
    _check_name(name)
    params = inspect.signature(_FACTORIES[name][1]).parameters
    return tuple(p for p in params if p not in ("seed", "prior_trials"))


def make_sampler(
    name: str,
    seed: int | None = None,
    prior_trials: Sequence[FrozenTrial] | None = None,
    **options: Any,
) -> BaseSampler:
    """Build the sampler called `name` (one of `SAMPLERS`), seeded with `seed`.

    `prior_trials` (another study's trials, e.g. the same space on another corpus) warm-start the
    samplers of `WARM_START_SAMPLERS` (`tuner.samplers.prior_trials` says how); any other sampler
    given them is a ValueError. `options` are passed to the underlying Optuna sampler (e.g.
    ``n_startup_trials``); they override rnntune's defaults. Raises ValueError for an unknown name
    or option, naming the allowed ones.
    """
    _check_name(name)
    if prior_trials is not None:
        if name not in WARM_START_SAMPLERS:
            raise ValueError(
                f"sampler {name!r} cannot take prior trials (a warm start); "
                f"choose one of: {', '.join(WARM_START_SAMPLERS)}"
            )
        options = {**options, "prior_trials": list(prior_trials)}
    allowed = sampler_options(name) + (("prior_trials",) if prior_trials is not None else ())
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise ValueError(
            f"unknown option(s) {', '.join(unknown)} for sampler {name!r}; allowed: {', '.join(allowed)}"
        )
    factory = _FACTORIES[name][0]
    return factory(seed=seed, **options)


def _check_name(name: str) -> None:
    if name not in _FACTORIES:
        raise ValueError(f"unknown sampler {name!r}; choose one of: {', '.join(SAMPLERS)}")
