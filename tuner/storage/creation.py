"""Creating studies under a bound: the count and the create as one step, across threads and servers.

`RNNTUNE_MAX_STUDIES` is checked by counting the studies, then creating one; 10 concurrent creates
against a bound of 3 all got through when the two were separate steps. `exclusive` holds a lock
over both: a lock in this process always, and on PostgreSQL a transaction-independent advisory
lock (`pg_advisory_lock`) too, so API servers sharing one database create one at a time. SQLite
serves one machine; its API servers share the process lock only.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

import sqlalchemy as sa
from sqlalchemy.engine import Engine

# A fixed key for pg_advisory_lock: the bytes "rnntcrea" as a signed 64-bit integer.
ADVISORY_KEY = int.from_bytes(b"rnntcrea", "big") - 2**63
_PROCESS_LOCK = threading.Lock()


@contextlib.contextmanager
def exclusive(engine: Engine) -> Iterator[None]:
    """Hold the creation lock of the study database `engine` opens (module docstring)."""
    with _PROCESS_LOCK:
        if engine.dialect.name != "postgresql":
            yield
            return
        with engine.connect() as conn:
            conn.execute(sa.text("SELECT pg_advisory_lock(:key)"), {"key": ADVISORY_KEY})
            conn.commit()
            try:
                yield
            finally:
                conn.execute(sa.text("SELECT pg_advisory_unlock(:key)"), {"key": ADVISORY_KEY})
                conn.commit()
