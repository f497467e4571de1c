"""rnntune's tuner: search spaces, samplers, sweeps on Ray Tune, SQL studies, analysis, the API and CLI;
`tuner.python_api` is the same from Python (a notebook)."""

import importlib.metadata


def version() -> str:
    """The installed distribution's version (pyproject.toml's `version`): the one source of it."""
    try:
        return importlib.metadata.version("rnntune")
    except importlib.metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown (not installed)"
