"""Ray Tune's trial events that Searcher hooks do not see, forwarded to the StudySearcher: a
worker's failure with its message, and Ray Tune restarting a trial whose worker died."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ray.tune import Callback

from tuner.sweeps.drive.searcher import StudySearcher


def _error_message(trial: Any) -> str:
    """The last line of the error Ray Tune recorded for a trial (its exception), or a generic reason."""
    path = getattr(trial, "error_file", None)
    text = ""
    if path:
        try:
            text = Path(path).read_text()
        except OSError:
            text = ""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    detail = lines[-1] if lines else "no error recorded"
    return f"worker failed: {detail}"


class TrialEvents(Callback):
    """Forwards worker failures and in-place retries from Ray Tune to the StudySearcher."""

    def __init__(self, searcher: StudySearcher) -> None:
        self._searcher = searcher

    def __getstate__(self) -> dict[str, Any]:
        return {}

    def on_trial_recover(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        self._searcher.retry_in_place(trial.trial_id, _error_message(trial) + " (retrying)")

    def on_trial_error(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        self._searcher.fail_from_worker(trial.trial_id, _error_message(trial))
