"""`GPSampler`: rnntune's Gaussian-process sampler, built from parts instead of subclasses.

Why composition: the variants differ in three independent decisions, each a part with no state:
the output `warping` (`tuner.samplers.warping`), the `fidelity` model that turns PRUNED and
RUNNING trials into observations (`tuner.samplers.bohb_rule`, `tuner.samplers.fidelity_gp`; None
fits COMPLETE trials only) and the `subset` policy that caps the points fitted in a large study
(`tuner.samplers.subset`). Every value a suggestion needs is computed in that call and passed on,
so one sampler shared by Optuna's `n_jobs` threads is safe; the only value kept between calls is
the last fitted kernels, one per GP (Optuna's own warm start of the next fit, per objective as its
GPSampler keeps them), replaced in one assignment.

The model is Optuna 5's: its GP (Matérn-5/2 ARD kernel, priors, fit), logEI, q-logEI over the
RUNNING trials and its acquisition optimiser (`optuna._gp`, through `tuner.upstream.optuna_private`,
which checks them at start-up).
Around it, rnntune models the union search space of the study's trials (`union_space`: conditional
parameters and widened ranges stay in the GP) with inactive parameters imputed outside the range
(`inactive`), scores candidates as their trials will be stored (`activity`) and warm-starts the fit
with another study's trials (`prior_trials`). A study with two objectives, once it has a front,
gets a GP per objective and (q-)logEHVI from their denoised front (`ehvi`), the first objective's
GP through the same fidelity model; otherwise (three or more objectives, constraints, no front
yet) several objectives are made one per suggestion by ParEGO's random Chebyshev scalarisation
(`parego`), so early-stopped trials inform it too. Constraints set by `Trial.set_constraint` make
the acquisition constrained (q-)logEI (`constraints`), as in Optuna's GPSampler.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import optuna
from optuna.distributions import BaseDistribution
from optuna.samplers import BaseSampler, RandomSampler
from optuna.study import Study, StudyDirection
from optuna.trial import FrozenTrial, TrialState

from tuner.samplers import ehvi, parego
from tuner.samplers import prior_trials as priors
from tuner.samplers.constraints import constraint_models, feasible
from tuner.samplers.cost import CostAware, LogCost, costed_trials, fit_log_cost
from tuner.samplers.fit_inputs import FitInputs, fit_inputs
from tuner.samplers.observations import FidelityModel, Observations, complete_only, signs
from tuner.samplers.subset import Subset
from tuner.samplers.union_space import STATES, study_search_space, union_search_space
from tuner.samplers.warping import HalfRank, Warping
from tuner.upstream.optuna_private import LazyRandomState, optim_mixed, prior
from tuner.upstream.optuna_private import acqf as acqf_module
from tuner.upstream.optuna_private import gp as optuna_gp

_logger = optuna.logging.get_logger(__name__)
# Optuna 5.0's GPSampler settings, so the model and its acquisition optimiser behave as Optuna's.
N_PRELIMINARY_SAMPLES = 2048
N_LOCAL_SEARCH = 10
TOL = 1e-4
N_QMC_SAMPLES = 128
MAX_QMC_SEED = 1 << 30


class GPSampler(BaseSampler):
    """A GP sampler made of a `warping`, a `fidelity` model (None: COMPLETE trials only), a
    `subset` policy (None: fit every observation) and a `cost` rule (None: improvement only;
    `tuner.samplers.cost.CostAware`: improvement per unit of expected cost).

    `n_startup_trials` counts observations (the trials the fidelity model fits) plus usable
    `prior_trials` (another study's trials, a warm start, fitted until this study has
    `prior_horizon` observations of its own); until then the `independent_sampler` (random,
    seeded) draws. `seed` also seeds the subset's random sample.
    """

    def __init__(
        self,
        *,
        warping: Warping | None = None,
        fidelity: FidelityModel | None = None,
        subset: Subset | None = None,
        cost: CostAware | None = None,
        seed: int | None = None,
        independent_sampler: BaseSampler | None = None,
        n_startup_trials: int = 10,
        deterministic_objective: bool = False,
        warn_independent_sampling: bool = True,
        prior_trials: Sequence[FrozenTrial] | None = None,
        prior_horizon: int = priors.DEFAULT_HORIZON,
    ) -> None:
        self._warping = warping or HalfRank()
        self._fidelity = fidelity
        self._subset = subset
        self._cost = cost
        self._rng = LazyRandomState(seed)
        self._subset_seed = int(np.random.SeedSequence(seed).generate_state(1)[0])
        self._independent = independent_sampler or RandomSampler(seed=seed)
        self._n_startup_trials = n_startup_trials
        self._deterministic = deterministic_objective
        self._warn_independent_sampling = warn_independent_sampling
        self._prior_trials = list(prior_trials or [])
        self._prior_horizon = prior_horizon
        # ((input dimension, EHVI or not), the last fitted GP of each objective): the fits' warm start.
        self._kernel: tuple[tuple[int, bool], tuple[Any, ...]] | None = None

    # Picklable like Optuna's samplers; the kernel cache is only a warm start, left behind.
    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "_kernel"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state, _kernel=None)

    def reseed_rng(self) -> None:
        self._rng.rng.seed()
        self._independent.reseed_rng()

    def infer_relative_search_space(self, study: Study, trial: FrozenTrial) -> dict[str, BaseDistribution]:
        """The union of this study's trials (the prior trials' while the study has none)."""
        space = study_search_space(study.get_trials(deepcopy=False))
        if not space and self._prior_trials:
            space = union_search_space(self._prior_trials)
        return space

    def sample_relative(
        self, study: Study, trial: FrozenTrial, search_space: dict[str, BaseDistribution]
    ) -> dict[str, Any]:
        if not search_space:
            return {}
        stored = trials = study.get_trials(deepcopy=False, states=STATES)
        use_ehvi = ehvi.applies(len(study.directions), trials, self._n_startup_trials)
        if len(study.directions) == 1:
            sign = 1.0 if study.direction == StudyDirection.MINIMIZE else -1.0
        elif use_ehvi:
            # Two objectives and a front to improve: the first objective's GP is fitted as in a
            # one-objective study (fidelity model included), the other's beside it (`ehvi`).
            trials, sign = ehvi.first_objective(trials), float(signs(study)[0])
        else:
            # Otherwise one random Chebyshev scalarisation per suggestion (ParEGO), so the fidelity
            # model, the warping and q-logEI work on one value to be minimised. Hand-written: it
            # ranks first on 3 objectives in bench/multi_objective.py and lets pruned trials inform it.
            lam = parego.weights(len(study.directions), self._rng.rng)
            trials, sign = parego.scalarised(study, trials, lam), 1.0
        # Conditional parameters a trial lacks are imputed (tuner.samplers.inactive), so every trial
        # with a parameter of the space is fitted; RUNNING ones only once they have suggested params.
        candidates = [t for t in trials if t.params.keys() & search_space.keys()]
        own = self.observations(study, candidates, sign)
        prior = priors.usable(self._prior_trials, search_space) if self._prior_trials else []
        observed = len(own.trials) + len(prior)
        if observed == 0 or observed < self._n_startup_trials:
            return {}  # the independent (random) sampler draws the startup trials
        fitted: set[int] | None = None  # the trial numbers a subset keeps (None: every one)
        if self._subset is not None:
            limit = self._subset.cap // 2
            front = ehvi.front_positions(own.trials, stored, signs(study), limit) if use_ehvi else None
            numbers = np.array([t.number for t in own.trials])
            chosen = self._subset.select(numbers, own.minimised, self._seed_for(own), front)
            if len(chosen) < len(own.trials):
                own, fitted = own.take(chosen), {int(n) for n in numbers[chosen]}
        running = [t for t in trials if t.state == TrialState.RUNNING and t.params]
        inputs = fit_inputs(search_space, own, prior, running, sign, self._warping, self._prior_horizon)
        import torch  # Optuna's GP needs it; imported here as Optuna does, lazily

        with on_cpu(torch):
            cost = self.cost_model(candidates, inputs) if self._cost is not None else None
            if use_ehvi:
                # The other objectives' GPs and the front fit the trials the subset keeps (RUNNING
                # ones, which hold no measure yet, aside), so their cost stays flat too.
                known = [
                    t
                    for t in stored
                    if t.params.keys() & search_space.keys() and (fitted is None or t.number in fitted)
                ]
                return self._suggest_ehvi(study, known, inputs, cost)
            return self._suggest(inputs, cost)

    @staticmethod
    def cost_model(trials: list[FrozenTrial], inputs: FitInputs) -> LogCost | None:
        """The log-cost GP over `trials`' measured costs (RUNNING ones included) on the objective's
        inputs; None with too few costs (then candidates rank by improvement alone)."""
        costed = costed_trials(trials)
        if not costed:
            return None
        x = inputs.normalised([t for t, _ in costed])
        return fit_log_cost(x, [c for _, c in costed], inputs.gp_space.is_categorical)

    def expected_cost(self, study: Study, configs: list[dict[str, Any]]) -> np.ndarray | None:
        """Expected seconds per step of each of `configs` (params of the study's space) from the
        cost model of the study's trials as they are now; None before it has enough costs."""
        trials = study.get_trials(deepcopy=False, states=STATES)
        space = study_search_space(trials)
        sign = 1.0 if study.direction == StudyDirection.MINIMIZE else -1.0
        candidates = [t for t in trials if t.params.keys() & space.keys()]
        own = self.observations(study, candidates, sign)
        if not space or not own.trials:
            return None
        inputs = fit_inputs(space, own, [], [], sign, self._warping, self._prior_horizon)
        model = self.cost_model(candidates, inputs)
        if model is None:
            return None
        proxies = [
            optuna.trial.create_trial(
                params={k: v for k, v in config.items() if k in space},
                distributions={k: space[k] for k in config if k in space},
                value=0.0,
            )
            for config in configs
        ]
        return model.seconds_per_step(inputs.normalised(proxies))

    def observations(self, study: Study, trials: list[FrozenTrial], sign: float) -> Observations:
        """What the GP fits among `trials` (before the subset): the fidelity model's choice."""
        if self._fidelity is None:
            return complete_only(trials, sign, self._warping)
        return self._fidelity.observations(study, trials, sign, self._warping, self._n_startup_trials)

    def _seed_for(self, own: Observations) -> int:
        """The subset's seed: the sampler's, changed with the study's size (reproducible)."""
        return int(np.random.SeedSequence([self._subset_seed, len(own.trials)]).generate_state(1)[0])

    def _suggest(self, inputs: FitInputs, cost: LogCost | None = None) -> dict[str, Any]:
        space = inputs.gp_space
        key = (space.dim, False)
        gpr = self._fit(inputs.x, inputs.standardized, space, self._warm(key, 0))
        self._kernel = (key, (gpr,))  # one assignment: a thread reads the old or the new pair
        acqf, best = self._acquisition(inputs, gpr)
        return self._optimise(acqf, best, inputs, cost)

    def _suggest_ehvi(
        self, study: Study, trials: list[FrozenTrial], inputs: FitInputs, cost: LogCost | None
    ) -> dict[str, Any]:
        """Two objectives (`tuner.samplers.ehvi`): the first objective's GP on `inputs`, a GP per
        other objective on the `trials` that recorded it, (q-)logEHVI from their denoised front."""
        space, objective_signs = inputs.gp_space, signs(study)
        names, key = list(study.metric_names or []), (space.dim, True)
        gprs = [self._fit(inputs.x, inputs.standardized, space, self._warm(key, 0))]
        for index in range(1, len(objective_signs)):
            known = ehvi.measured(trials, names, index)
            y = ehvi.targets([v for _, v in known], objective_signs[index])
            gprs.append(self._fit(inputs.normalised([t for t, _ in known]), y, space, self._warm(key, index)))
        self._kernel = (key, tuple(gprs))  # each objective's fit starts from its last, as Optuna's
        complete = [t for t in trials if t.state == TrialState.COMPLETE and t.values is not None]
        x_complete = inputs.normalised(complete)
        front = ehvi.front_means(gprs, x_complete)
        seed = self._rng.rng.randint(MAX_QMC_SEED)
        acqf = ehvi.acquisition(gprs, space, front, inputs.pending, N_QMC_SAMPLES, seed)
        return self._optimise(acqf, ehvi.warm_starts(x_complete, front, self._rng.rng), inputs, cost)

    def _warm(self, key: tuple[int, bool], index: int) -> Any:
        """The last GP fitted for objective `index` in a suggestion of the same `key` (input
        dimension, EHVI or not), the next fit's starting kernel; None if there is none."""
        cached = self._kernel
        return cached[1][index] if cached and cached[0] == key and index < len(cached[1]) else None

    def _fit(self, x: np.ndarray, y: np.ndarray, space: Any, cached: Any = None) -> Any:
        """Optuna's GP fitted to normalised inputs `x` and standardized targets `y` (larger is
        better), warm-started from the `cached` kernel when given."""
        return optuna_gp.fit_kernel_params(
            X=x,
            Y=y,
            is_categorical=space.is_categorical,
            log_prior=prior.default_log_prior,
            minimum_noise=prior.DEFAULT_MINIMUM_NOISE_VAR,
            gpr_cache=cached,
            deterministic_objective=self._deterministic,
        )

    def _optimise(
        self, acqf: Any, best: np.ndarray, inputs: FitInputs, cost: LogCost | None
    ) -> dict[str, Any]:
        """The acquisition's maximiser (Optuna's optimiser, started from `best`), as params."""
        from tuner.samplers import activity, inactive, line_cache

        space = inputs.gp_space
        evaluate = acqf.eval_acqf
        if cost is not None and self._cost is not None:
            evaluate = self._cost.per_unit_cost(evaluate, cost)
        if inputs.pinned:
            # The step input is pinned to the full length: candidates rank by their final value.
            evaluate = pinned_last(evaluate)
            best = best.copy()
            best[:, -1] = 1.0
        # Candidates are scored with the parameters they leave inactive at the imputed value; a
        # line search's candidates are scored a whole line at a time (line_cache.py).
        acqf.eval_acqf = line_cache.LineCache(
            activity.masked(evaluate, inputs.rules), line_cache.searched_lines(space)
        )
        normalized, _ = optim_mixed.optimize_acqf_mixed(
            acqf,
            warmstart_normalized_params_array=inactive.warm_start_points(best, space),
            n_preliminary_samples=N_PRELIMINARY_SAMPLES,
            n_local_search=N_LOCAL_SEARCH,
            tol=TOL,
            rng=self._rng.rng,
        )
        params = space.get_unnormalized_param(normalized)
        return {name: value for name, value in params.items() if name in inputs.search_space}

    def _acquisition(self, inputs: FitInputs, gpr: Any) -> tuple[Any, np.ndarray]:
        """Optuna's (q-)logEI over the fitted GP, constrained (q-)logCEI when the fitted trials
        carry constraints; and the point the acquisition optimiser starts from (the best feasible
        observation, else the least infeasible)."""
        space, y = inputs.gp_space, inputs.standardized
        common: dict[str, Any] = {"gpr": gpr, "search_space": space}
        if inputs.pending is not None:
            common.update(
                n_qmc_samples=N_QMC_SAMPLES,
                qmc_seed=self._rng.rng.randint(MAX_QMC_SEED),
                normalized_params_of_running_trials=inputs.pending,
            )
        acqf_class: Any
        if inputs.constraints is None:
            acqf_class = acqf_module.LogEI if inputs.pending is None else acqf_module.qLogEI
            return acqf_class(threshold=y.max(), **common), inputs.x[np.argmax(y), np.newaxis]
        ok = feasible(inputs.constraints)
        models, thresholds = constraint_models(
            inputs.constraints, inputs.x, space.is_categorical, self._deterministic
        )
        threshold = float(y[ok].max()) if ok.any() else -np.inf  # -inf: feasibility alone counts
        acqf_class = acqf_module.LogCEI if inputs.pending is None else acqf_module.qLogCEI
        acqf = acqf_class(
            threshold=threshold, constraints_gpr_list=models, constraints_threshold_list=thresholds, **common
        )
        violation = np.nansum(np.maximum(inputs.constraints, 0.0), axis=1)
        violation[np.isnan(inputs.constraints).any(axis=1)] = np.inf
        best = int(np.argmax(np.where(ok, y, -np.inf))) if ok.any() else int(np.argmin(violation))
        return acqf, inputs.x[best, np.newaxis]

    def sample_independent(
        self,
        study: Study,
        trial: FrozenTrial,
        param_name: str,
        param_distribution: BaseDistribution,
    ) -> Any:
        complete = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
        if self._warn_independent_sampling and len(complete) >= self._n_startup_trials:
            _logger.warning(
                f"The parameter '{param_name}' in trial#{trial.number} is sampled independently "
                f"by {type(self._independent).__name__}, not by the GP."
            )
        return self._independent.sample_independent(study, trial, param_name, param_distribution)

    def before_trial(self, study: Study, trial: FrozenTrial) -> None:
        self._independent.before_trial(study, trial)

    def after_trial(
        self,
        study: Study,
        trial: FrozenTrial,
        state: TrialState,
        values: Sequence[float] | None,
    ) -> None:
        self._independent.after_trial(study, trial, state, values)


def pinned_last(eval_acqf: Any) -> Any:
    """`eval_acqf` with the last normalised input (the step) set to 1, the full length."""
    import torch  # Optuna's GP already imported it

    def evaluate(x: torch.Tensor) -> torch.Tensor:
        return eval_acqf(torch.cat([x[..., :-1], torch.ones_like(x[..., -1:])], -1))

    return evaluate


def on_cpu(torch: Any) -> Any:
    """A context that makes CPU torch's default device, as Optuna's GPSampler does (a global
    default device such as cuda must not leak into the GP); nothing when it already is: the
    device mode intercepts every torch call, a tenth of a two-objective suggestion's time."""
    import contextlib

    return contextlib.nullcontext() if torch.get_default_device().type == "cpu" else torch.device("cpu")
