"""Every private part of Optuna that rnntune uses, in one module, with why and a start-up check.

Why one module: Optuna's underscore modules and attributes carry no compatibility promise, and an
upgrade may move or change any of them. With every such use here, an upgrade is one file to
re-check (docs/contracts.md, "What an upgrade of Optuna must re-check"); `check` runs when this
module is imported, and again over optuna._gp's parts when they are first used (they import
PyTorch, so they load with a GP sampler being built), so an Optuna that lacks them stops rnntune at
start-up, naming the version, never mid-sweep. tests/tuner/upstream/test_optuna_private.py checks
the behaviour relied on, not only the names.

What, and why no public API serves:

* `gp`, `prior`, `acqf`, `optim_mixed`, `search_space` (`optuna._gp`): Optuna 5's GP (kernel fit,
  priors, (q-)logEI, constrained (q-)logCEI, q-logEHVI, the acquisition base class, the mixed
  acquisition optimiser, the normalisation of a search space). rnntune's GPSampler fits them over observations Optuna's
  GPSampler never sees (pruned trials at their last step, prior trials, the union space), and
  Optuna's GPSampler has no hook for that.
* `box_bounds` (`acqf._get_reference_point`, `acqf._get_non_dominated_box_bounds`): the boxes
  that tile what a front leaves undominated, up to the reference point Optuna's EHVI uses, so
  rnntune's closed-form EHVI (`tuner.samplers.ehvi`) measures improvement as Optuna's does;
  `standard_logei` (`acqf.standard_logei`): log E[max(0, z + Z)], stable in the tails.
* `reference_point` (`acqf._get_reference_point`) and `ListConditionalGPRegressor`
  (`optuna._gp.gp`): the reference point and the per-objective QMC fantasies of the trials in
  flight that Optuna's q-logEHVI uses, so rnntune's two-objective q-logEHVI (`tuner.samplers.ehvi`,
  its boxes a sort instead of Optuna's general box decomposition) is Optuna's, value for value.
* `standardize_values` (`optuna.samplers._gp.sampler._standardize_values`): Optuna's target
  standardisation, infinities clipped to the finite extremes first, so rnntune's targets are what
  Optuna's GP is tuned for.
* `LazyRandomState` (`optuna.samplers._lazy_random_state`): the random state Optuna's samplers keep,
  created on first use so a sampler can be pickled and re-seeded.
* `is_pareto_front` (`optuna.study._multi_objective._is_pareto_front`): the non-dominated mask of a
  loss matrix, as Optuna computes it for its own fronts.
* `trial_id` (`Trial._trial_id`): the storage's id of a trial, to store an intermediate value in a
  study of several objectives, where Optuna's `Trial.report` refuses (tuner.sweeps.drive.writer).
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np
import optuna
from optuna.samplers._gp.sampler import _standardize_values as standardize_values
from optuna.samplers._lazy_random_state import LazyRandomState
from optuna.study._multi_objective import _is_pareto_front as is_pareto_front

if TYPE_CHECKING:
    from optuna._gp import acqf, gp, optim_mixed, prior, search_space
    from optuna._gp.acqf import standard_logei
    from optuna._gp.gp import ListConditionalGPRegressor

__all__ = [
    "SUPPORTED",
    "LazyRandomState",
    "ListConditionalGPRegressor",
    "acqf",
    "box_bounds",
    "check",
    "gp",
    "is_pareto_front",
    "optim_mixed",
    "prior",
    "reference_point",
    "search_space",
    "standard_logei",
    "standardize_values",
    "trial_id",
]

SUPPORTED = "5.0."  # the Optuna release line whose private parts these are (pyproject pins 5.0.0)

# optuna._gp's modules import PyTorch when they load: they are loaded on first use (`__getattr__`),
# so a sweep on a sampler without a GP, the API and the CLI run without PyTorch.
_GP_MODULES = ("acqf", "gp", "optim_mixed", "prior", "search_space")
_GP_NAMES = (*_GP_MODULES, "standard_logei", "ListConditionalGPRegressor")
_MIN_WIDTH = 1e-12  # a box's smallest side, as Optuna's LogEHVI clamps it


def box_bounds(front: Any) -> tuple[Any, Any]:
    """Lower corners and side lengths ((boxes, m) tensors) of the boxes tiling the region the
    `front` (a (points, m) tensor, larger is better) does not dominate, bounded below by the
    reference point Optuna's LogEHVI takes (10% beyond the worst value of each objective) and
    unbounded (an infinite side) beyond the front's best values."""
    acqf = _acqf()
    lower, upper = acqf._get_non_dominated_box_bounds(front, acqf._get_reference_point(front))
    return lower, (upper - lower).clamp_min_(_MIN_WIDTH)


def reference_point(front: Any) -> np.ndarray:
    """The reference point Optuna's (q-)logEHVI measures the improvement over a larger-is-better
    `front` from, as losses (negate it for the front's terms): 10% beyond each objective's worst."""
    return np.asarray(_acqf()._get_reference_point(front))


def _acqf() -> ModuleType:
    """optuna._gp.acqf, loaded and checked if nothing has used it yet (`__getattr__`)."""
    return sys.modules[__name__].acqf


def trial_id(trial: optuna.Trial) -> int:
    """The storage's id of a live trial (Optuna keeps it private: `Trial._trial_id`)."""
    return int(trial._trial_id)


def _private_parts() -> tuple[dict[Callable[..., Any], set[str]], dict[Any, tuple[str, ...]]]:
    """The keyword parameters rnntune passes to each private callable, and the private constants and
    methods it reads; loading optuna._gp's modules."""
    acqf, gp, optim_mixed, prior, search_space = _gp_modules()
    names: dict[Any, tuple[str, ...]] = {
        prior: ("default_log_prior", "DEFAULT_MINIMUM_NOISE_VAR"),
        gp.ListConditionalGPRegressor: ("get_fantasy_samples",),
    }
    return _signatures(acqf, gp, optim_mixed, search_space), names


def _signatures(
    acqf: ModuleType, gp: ModuleType, optim_mixed: ModuleType, search_space: ModuleType
) -> dict[Callable[..., Any], set[str]]:
    """The keyword parameters rnntune passes to each private callable."""
    return {
        gp.fit_kernel_params: {
            "X",
            "Y",
            "is_categorical",
            "log_prior",
            "minimum_noise",
            "gpr_cache",
            "deterministic_objective",
        },
        optim_mixed.optimize_acqf_mixed: {
            "warmstart_normalized_params_array",
            "n_preliminary_samples",
            "n_local_search",
            "tol",
            "rng",
        },
        acqf.LogEI: {"gpr", "search_space", "threshold"},
        acqf.qLogEI: {"normalized_params_of_running_trials", "n_qmc_samples", "qmc_seed"},
        acqf.LogCEI: {
            "gpr",
            "search_space",
            "threshold",
            "constraints_gpr_list",
            "constraints_threshold_list",
        },
        acqf.qLogCEI: {
            "constraints_gpr_list",
            "constraints_threshold_list",
            "normalized_params_of_running_trials",
            "n_qmc_samples",
            "qmc_seed",
        },
        acqf.BaseAcquisitionFunc.__init__: {"length_scales", "search_space"},
        acqf._get_reference_point: {"Y"},
        acqf._get_non_dominated_box_bounds: {"Y", "ref_point"},
        acqf.standard_logei: {"z"},
        acqf.qLogEHVI: {
            "gpr_list",
            "search_space",
            "Y_train",
            "normalized_params_of_running_trials",
            "n_qmc_samples",
            "qmc_seed",
        },
        gp.GPRegressor.posterior: {"x"},
        gp.ListConditionalGPRegressor: {
            "gpr_list",
            "X_running",
            "n_qmc_samples",
            "qmc_seed",
            "stabilizing_noise",
        },
        gp.ListConditionalGPRegressor.sample_candidate_posterior: {"x"},
        search_space.SearchSpace.get_normalized_params: {"trials"},
    }


def _gp_modules() -> tuple[ModuleType, ...]:
    """optuna._gp's modules, imported on first use and kept as this module's names."""
    from optuna._gp import acqf, gp, optim_mixed, prior, search_space

    modules = (acqf, gp, optim_mixed, prior, search_space)
    globals().update(zip(_GP_MODULES, modules, strict=True))
    globals().update(
        standard_logei=acqf.standard_logei, ListConditionalGPRegressor=gp.ListConditionalGPRegressor
    )
    return modules


def __getattr__(name: str) -> Any:
    """optuna._gp's parts, loaded and checked on first use (PEP 562: module attributes on demand)."""
    if name not in _GP_NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    check()
    return globals()[name]


def check(version: str = optuna.__version__, gp: bool = True) -> None:
    """RuntimeError naming the installed Optuna unless it is of the `SUPPORTED` line and has every
    private callable with the parameters rnntune passes and every private constant it reads. Run
    when this module is imported on the parts every sweep uses (`gp=False`), and with optuna._gp's
    parts when they are first used (a GP sampler being built), before any trial runs."""
    problems = [] if version.startswith(SUPPORTED) else [f"rnntune is written against Optuna {SUPPORTED}x"]
    signatures: dict[Callable[..., Any], set[str]] = {is_pareto_front: {"assume_unique_lexsorted"}}
    names: dict[Any, tuple[str, ...]] = {}
    if gp:
        gp_signatures, names = _private_parts()
        signatures |= gp_signatures
    for function, wanted in signatures.items():
        if missing := wanted - set(inspect.signature(function).parameters):
            problems.append(f"{function.__qualname__} lacks {sorted(missing)}")
    for module, attrs in names.items():
        problems += [f"{module.__name__}.{a} is gone" for a in attrs if not hasattr(module, a)]
    if problems:
        raise RuntimeError(
            f"optuna {version}: {'; '.join(problems)}. Pin optuna==5.0.* or re-check its private parts "
            "(docs/contracts.md, 'What an upgrade of Optuna must re-check')"
        )


check(gp=False)
