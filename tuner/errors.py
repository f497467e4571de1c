"""rnntune's one error family: every error the tuner raises on purpose is an `RnntuneError`, and
its kind says how a caller answers it (the API maps kinds to HTTP statuses, the CLI to exit codes).

* `InvalidInput`: a bad field or value; the message names the field and what is allowed (422, exit 2).
* `NotFound`: no such study, trial or checkpoint (404).
* `Conflict`: the action conflicts with the study's state (409).
* `Unavailable`: a resource is busy or cannot be reached or started right now (503).
"""

from __future__ import annotations


class RnntuneError(Exception):
    """Base of every error rnntune raises on purpose."""


class InvalidInput(RnntuneError, ValueError):
    """A bad field or value; the message names the field and the allowed values or range."""


class NotFound(RnntuneError, LookupError):
    """No such study, trial or checkpoint."""


class Conflict(RnntuneError, RuntimeError):
    """The action conflicts with the study's state (already driven, finished, nothing to stop)."""


class Unavailable(RnntuneError, RuntimeError):
    """Busy, out of reach, or unable to start right now; trying again later may work."""


class StudyError(InvalidInput):
    """A study operation that cannot proceed; the message says which study and why."""


class StudyExistsError(StudyError, Conflict):
    """A study of that name is already in the storage."""


class StudyNotFoundError(StudyError, NotFound):
    """No study of that name in the storage."""


class InvalidStudy(InvalidInput):
    """A study request that names a bad field or value (the message names it and what is allowed)."""


class SweepConflict(Conflict):
    """The sweep action conflicts with the study's state (already driven, finished, nothing to stop)."""


class LaunchFailed(Unavailable):
    """A sweep or finalize process could not be started (log folder or executable unusable)."""


class LeaseLost(Conflict):
    """This process no longer holds the study's driver lease (another driver took it over)."""
