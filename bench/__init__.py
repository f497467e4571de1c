"""The benchmark scripts, run as `python -m bench.NAME` from the repository root: figures, not tests."""
