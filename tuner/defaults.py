"""The embedded default sweep that `rnntune sweep` and `rnntune up` run with no options."""

DEFAULT_SPACE = "tiny"
DEFAULT_TRIALS = 24
DEFAULT_PARALLEL = 2
