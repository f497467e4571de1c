"""One parse of Optuna's Alembic migration scripts per test process, where Optuna parses them again
for every database it opens.

Why: `optuna.storages.RDBStorage` builds a fresh Alembic `ScriptDirectory` each time it needs a
revision (`_VersionManager._create_alembic_script`, optuna/storages/_rdb/storage.py): twice to
create and stamp a new database, once more for the schema check, and each build executes every
migration file again (about 27 ms of CPU). The tests open about 2,500 new databases in one run of the
fast tests (69 CPU-s of it, measured); the product opens one or two per process and skips the check
on a URL it checked (tuner.storage.study.open_storage), so this lives in the tests only.

What is shared is read-only: the scripts' revision graph (head, base, the list of revisions), which
is all `_VersionManager` asks of it (`get_head_version`, `_get_base_version`, `get_all_versions`,
`_set_alembic_revision`'s stamp); `upgrade` builds its own Alembic config and is untouched. On
another Optuna than `OPTUNA_VERSION` nothing is changed. tests/test_optuna_scripts.py checks that a
database made with the shared scripts is the one Optuna makes without them.
"""

from __future__ import annotations

import functools
from typing import Any

import optuna
from optuna.storages._rdb import storage as rdb

OPTUNA_VERSION = "5.0.0"  # the version whose storage.py the description above was read from


def share_alembic_scripts() -> bool:
    """Make every `_VersionManager` of this process use one `ScriptDirectory`; False (and nothing
    changed) on another Optuna than `OPTUNA_VERSION`, or when its method is not the one read."""
    manager = rdb._VersionManager
    original = manager.__dict__.get("_create_alembic_script")
    if optuna.__version__ != OPTUNA_VERSION or original is None or hasattr(original, "shared"):
        return False

    @functools.wraps(original)
    def shared(self: Any) -> Any:
        if not hasattr(shared, "script"):
            shared.script = original(self)  # type: ignore[attr-defined]
        return shared.script  # type: ignore[attr-defined]

    shared.shared = True  # type: ignore[attr-defined]
    shared.original = original  # type: ignore[attr-defined]
    manager._create_alembic_script = shared  # type: ignore[method-assign]
    return True
