"""The embedded default sweep that `rnntune sweep` and `rnntune up` run with no options."""

from tuner.policies.procedure import PAPER

DEFAULT_SPACE = "tiny"
DEFAULT_TRIALS = 24
DEFAULT_PARALLEL = 2
# Steps the embedded default may train, in full trials' worth: it keeps `make run` about as long
# as before the default sampler learnt from pruned trials, which lets more of them run to the end
# (docs/samplers.md, "The embedded default").
DEFAULT_BUDGET = 10.0


def default_budget(trials: int | None, budget: float | None, procedure: str | None = None) -> float | None:
    """A sweep's step budget: the one given, else DEFAULT_BUDGET for the embedded default (neither
    a trial count nor a budget given); an explicit trial count alone, or `procedure: paper` (every
    trial trained in full, tuner.policies.procedure), runs all its trials."""
    if budget is not None or trials is not None or procedure == PAPER:
        return budget
    return DEFAULT_BUDGET
