"""Samplers for rnntune sweeps: `make_sampler(name, seed=..., **options)` gives an Optuna sampler.

Every sampler accounts for the trials in flight (RUNNING) when it suggests a new one, so K trials
asked at once do not collapse onto one point:

* ``gp_fidelity`` (the default): rnntune's `GPSampler` (`tuner.samplers.gp`) composed of the
  half-rank output warping, the fidelity GP (BOHB's rule until ``n_startup_trials`` trials are
  COMPLETE, then every trial at the last step it reported, candidates scored at the full length;
  MOBSTER-like) and a subset of at most 200 observations in a large study; q-logEI over the
  RUNNING trials.
  With two objectives it fits a GP per objective and picks by q-logEHVI (logEHVI in closed
  form with no trial in flight) from their denoised front
  (`tuner.samplers.ehvi`); with more, with constraints, or before any front, it scalarises them
  per suggestion (ParEGO, `tuner.samplers.parego`). Early-stopped trials inform it either way;
  with constraints (`Trial.set_constraint`) its acquisition is constrained (q-)logEI
  (`tuner.samplers.constraints`).
* ``gp``: Optuna's GPSampler. With RUNNING trials Optuna 5 switches from logEI to q-logEI over the
  pending points (a Monte Carlo expectation over their joint posterior, chosen greedily), so the new
  point is worth something only where the pending ones are not.
* ``tpe``: multivariate TPE with ``group=True`` (joint model per group of parameters that occur
  together, so conditional parameters such as ``mogrifier_rounds`` are modelled) and the constant
  liar (RUNNING trials count as the worst value seen, which pushes new points away from them).
  With several objectives it ranks early-stopped trials by their loss curve (`tuner.samplers.tpe`:
  Optuna's own TPE raises on them there).
* ``nsga2``: Optuna's NSGA-II (`NSGAIISampler`, Deb et al. 2002), a genetic algorithm for several
  objectives with constrained domination; its first generation (``population_size``, 50) is
  random.
* ``random``: independent uniform draws (pending trials are irrelevant).
* ``qmc``: a scrambled Sobol sequence; each trial takes the next index, so pending trials never
  repeat.

`RETIRED_SAMPLERS` maps the names no benchmark kept (``gp_warped``, ``gp_rungs``, ``gp_bohb``) to
the default; a study that names one is read with the default, and `make_sampler` refuses them,
naming the replacement (docs/samplers.md gives the figures that retired them).

Conditional parameters work with each sampler through Optuna's define-by-run API. ``gp_fidelity``
models every parameter seen in the study, conditional ones (imputed outside their range when a
trial lacks them) and ranges widened mid-study (`tuner.samplers.union_space`,
`tuner.samplers.inactive`); Optuna's ``gp`` and ``qmc`` model only the parameters every trial has
with the same range, and draw the others with their independent (random) sampler.

Cost-aware search: the samplers of `COST_AWARE_SAMPLERS` take ``cost_aware=True`` and then pick
by expected improvement per unit of expected cost, from a GP over each trial's measured seconds per
step (`tuner.samplers.cost`); any other sampler given it is a ValueError.

Warm starts: the samplers of `WARM_START_SAMPLERS` take ``prior_trials`` (another study's
FrozenTrials, e.g. the same space on another corpus), fitted beside the study's own trials while it
has few (`tuner.samplers.prior_trials`); any other sampler given them is a ValueError.
"""

from __future__ import annotations

import contextlib
import inspect
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import optuna
from optuna.samplers import BaseSampler
from optuna.trial import FrozenTrial

from tuner.samplers.cost import CostAware
from tuner.samplers.fidelity_gp import FidelityGP
from tuner.samplers.subset import Subset
from tuner.samplers.tpe import TPESampler
from tuner.samplers.warping import HalfRank

if TYPE_CHECKING:
    from tuner.samplers.gp import GPSampler

DEFAULT_SAMPLER = "gp_fidelity"  # best under ASHA on real learning curves (docs/samplers.md)
# What a study with several objectives gets when it names no sampler: rnntune's GP (two objectives:
# a GP each and EHVI; more: ParEGO), first of bench/multi_objective.py under early stopping and by
# mean rank when every trial runs to the end (docs/samplers.md, "Several objectives").
DEFAULT_MULTI_OBJECTIVE_SAMPLER = "gp_fidelity"
# Cap of the points the default GP fits: measured with bench/orchestration_overhead.py
# (docs/samplers.md), under 1 s per suggestion at 5,000 trials with 64 in flight.
SUBSET = Subset()


def _gp(**kw: Any) -> BaseSampler:
    return optuna.samplers.GPSampler(**{"warn_independent_sampling": False, **kw})


def _gp_fidelity(**kw: Any) -> BaseSampler:
    defaults = {"warn_independent_sampling": False, "subset": SUBSET}
    return _rnntune_gp()(warping=HalfRank(), fidelity=FidelityGP(), **{**defaults, **kw})


def _rnntune_gp() -> type[GPSampler]:
    """rnntune's GP class, imported when a sweep uses it: it imports PyTorch (through Optuna's GP),
    which a driver on another sampler, the API and the CLI do without."""
    from tuner.samplers.gp import GPSampler

    return GPSampler


def _tpe(**kw: Any) -> BaseSampler:
    with _experimental_ok():
        return TPESampler(**{"multivariate": True, "group": True, "constant_liar": True, **kw})


def _nsga2(**kw: Any) -> BaseSampler:
    return optuna.samplers.NSGAIISampler(**kw)


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


# name -> (factory, the class whose keyword arguments are the allowed options)
_FACTORIES: dict[str, tuple[Callable[..., BaseSampler], Callable[[], type[BaseSampler]]]] = {
    "gp": (_gp, lambda: optuna.samplers.GPSampler),
    "gp_fidelity": (_gp_fidelity, _rnntune_gp),
    "tpe": (_tpe, lambda: optuna.samplers.TPESampler),
    "nsga2": (_nsga2, lambda: optuna.samplers.NSGAIISampler),
    "random": (_random, lambda: optuna.samplers.RandomSampler),
    "qmc": (_qmc, lambda: optuna.samplers.QMCSampler),
}

SAMPLERS: tuple[str, ...] = tuple(_FACTORIES)
# Samplers no benchmark keeps, read as the default by studies that name them (docs/samplers.md).
RETIRED_SAMPLERS: dict[str, str] = {name: DEFAULT_SAMPLER for name in ("gp_warped", "gp_rungs", "gp_bohb")}
# The samplers that take `prior_trials` (another study's trials as prior data: a warm start).
WARM_START_SAMPLERS: tuple[str, ...] = ("gp_fidelity",)
# The samplers that take `cost_aware=True` (improvement per unit of expected cost).
COST_AWARE_SAMPLERS: tuple[str, ...] = ("gp_fidelity",)
# Parts a name fixes, and Optuna's `constraints_func` (deprecated in Optuna 5.0 for
# `Trial.set_constraint`, which every sampler reads): not options of `make_sampler`.
_PARTS = ("seed", "prior_trials", "warping", "fidelity", "cost", "constraints_func")


def default_sampler(n_objectives: int = 1) -> str:
    """The sampler a study with `n_objectives` objectives uses when it names none."""
    return DEFAULT_SAMPLER if n_objectives <= 1 else DEFAULT_MULTI_OBJECTIVE_SAMPLER


def sampler_options(name: str) -> tuple[str, ...]:
    """The keyword options `make_sampler(name, ...)` accepts besides `seed`."""
    _check_name(name)
    params = inspect.signature(_FACTORIES[name][1]()).parameters
    return tuple(p for p in params if p not in _PARTS)


def make_sampler(
    name: str,
    seed: int | None = None,
    prior_trials: Sequence[FrozenTrial] | None = None,
    cost_aware: bool = False,
    **options: Any,
) -> BaseSampler:
    """Build the sampler called `name` (one of `SAMPLERS`), seeded with `seed`.

    `prior_trials` (another study's trials, e.g. the same space on another corpus) warm-start the
    samplers of `WARM_START_SAMPLERS` (`tuner.samplers.prior_trials` says how); any other sampler
    given them is a ValueError. `cost_aware` makes a sampler of `COST_AWARE_SAMPLERS` pick by
    improvement per unit of expected cost (`tuner.samplers.cost`). `options` are passed to the underlying Optuna sampler (e.g.
    ``n_startup_trials``, or ``subset`` for ``gp_fidelity``); they override rnntune's defaults.
    Raises ValueError for an unknown name or option, naming the allowed ones, and for a retired
    name (`RETIRED_SAMPLERS`), naming its replacement.
    """
    _check_name(name)
    if prior_trials is not None:
        if name not in WARM_START_SAMPLERS:
            raise ValueError(
                f"sampler {name!r} cannot take prior trials (a warm start); "
                f"choose one of: {', '.join(WARM_START_SAMPLERS)}"
            )
        options = {**options, "prior_trials": list(prior_trials)}
    if cost_aware:
        if name not in COST_AWARE_SAMPLERS:
            raise ValueError(
                f"sampler {name!r} cannot be cost-aware; choose one of: {', '.join(COST_AWARE_SAMPLERS)}"
            )
        options = {**options, "cost": CostAware()}
    allowed = (
        sampler_options(name)
        + (("prior_trials",) if prior_trials is not None else ())
        + (("cost",) if cost_aware else ())
    )
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise ValueError(
            f"unknown option(s) {', '.join(unknown)} for sampler {name!r}; allowed: {', '.join(allowed)}"
        )
    factory = _FACTORIES[name][0]
    return factory(seed=seed, **options)


def _check_name(name: str) -> None:
    if name in RETIRED_SAMPLERS:
        raise ValueError(
            f"sampler {name!r} was retired (docs/samplers.md); use {RETIRED_SAMPLERS[name]!r}, "
            f"which studies naming {name!r} now run with"
        )
    if name not in _FACTORIES:
        raise ValueError(f"unknown sampler {name!r}; choose one of: {', '.join(SAMPLERS)}")
