"""The typed sweep spec: every option of a sweep declared once (`SweepSpec`), stored with the study
as one versioned attribute and read back with `SweepSpec.of(attrs)`. The CLI flags, the REST body,
`rnntune remote create`, `rnntune up` and the Compose settings are built from its fields."""

from tuner.spec.defaults import (
    DEFAULT_BUDGET,
    DEFAULT_PARALLEL,
    DEFAULT_SPACE,
    DEFAULT_TRIALS,
    default_budget,
)
from tuner.spec.sweep_spec import (
    NAME_PATTERN,
    RESUME_SAFE,
    SPEC_VERSION,
    Overrides,
    SweepSpec,
    env_name,
    flag_name,
)

__all__ = [
    "DEFAULT_BUDGET",
    "DEFAULT_PARALLEL",
    "DEFAULT_SPACE",
    "DEFAULT_TRIALS",
    "NAME_PATTERN",
    "RESUME_SAFE",
    "SPEC_VERSION",
    "Overrides",
    "SweepSpec",
    "default_budget",
    "env_name",
    "flag_name",
]
