"""Starting Ray for a sweep: an embedded single-machine cluster, or a connection to a running one.

Token authentication (Ray >= 2.59 turns it on by default for clusters that `ray.init()` starts): for
the embedded cluster we hand Ray a fresh random token through RAY_AUTH_TOKEN, so it is on without
Ray writing ~/.ray/auth_token (read-only homes, shared machines) and dies with the sweep. An explicit
RAY_AUTH_MODE, RAY_AUTH_TOKEN or RAY_AUTH_TOKEN_PATH from the user is respected. For a cluster
(`--ray-address` / RAY_ADDRESS) the token is the cluster's: see docs/sweeps.md.
"""

from __future__ import annotations

import logging
import os
import secrets
from typing import Any

from tuner.study import SECRET_ENV

QUIET_LOGGERS = (
    "ray",
    "ray.tune",
    "ray.train",
    "ray.air",
    "ray._private.authentication.authentication_token_setup",
)


class RayStartError(RuntimeError):
    """Ray could not be started or reached; the message says what to check."""


def quiet_ray(verbose: bool) -> None:
    """Silence Ray's console chatter (progress tables, info logs) unless `verbose`."""
    os.environ.setdefault("TUNE_DISABLE_AUTO_CALLBACK_LOGGERS", "1")  # no per-trial CSV/JSON/TB files
    os.environ.setdefault("RAY_DEDUP_LOGS", "1")
    if not verbose:
        os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")  # the legacy reporter honours verbose=0
    level = logging.INFO if verbose else logging.ERROR
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(level)


def scrub_secrets() -> None:
    """Remove the database URL and the API tokens from this process's environment: every Ray
    process started from here (GCS, raylet, workers, trainers) inherits it, and none needs them."""
    for key in SECRET_ENV:
        os.environ.pop(key, None)


def start_ray(address: str | None, num_cpus: int | None, verbose: bool) -> bool:
    """Start (or connect to) Ray unless this process already did; True if this call started it."""
    import ray

    quiet_ray(verbose)
    if ray.is_initialized():
        return False
    scrub_secrets()
    address = address or os.environ.get("RAY_ADDRESS") or None
    common: dict[str, Any] = {
        "log_to_driver": verbose,
        "logging_level": logging.INFO if verbose else logging.ERROR,
    }
    if address is None:
        if not any(os.environ.get(k) for k in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH")):
            os.environ["RAY_AUTH_TOKEN"] = secrets.token_hex(32)
        try:
            ray.init(num_cpus=num_cpus, include_dashboard=False, **common)
        except Exception as err:
            raise RayStartError(f"could not start an embedded Ray cluster: {err}") from None
        return True
    try:
        ray.init(address=address, **common)
    except Exception as err:
        hint = ""
        if "auth" in str(err).lower() or "token" in str(err).lower():
            hint = (
                " — the cluster uses token authentication: set RAY_AUTH_TOKEN (or RAY_AUTH_TOKEN_PATH, "
                "or ~/.ray/auth_token) to the cluster's token and RAY_AUTH_MODE=token"
            )
        raise RayStartError(f"could not connect to the Ray cluster at {address}: {err}{hint}") from None
    return True


def sqlite_on_cluster_warning(storage_url: str) -> str | None:
    """A warning when a SQLite study is driven on a multi-node cluster: SQLite is for one machine
    (one file, one writer), and other nodes' users cannot reach it (docs/cluster.md)."""
    import ray

    if not storage_url.startswith("sqlite"):
        return None
    nodes = [n for n in ray.nodes() if n.get("Alive")]
    if len(nodes) <= 1:
        return None
    return (
        f"warning: the study is in SQLite but the Ray cluster has {len(nodes)} nodes; SQLite is for "
        "one machine — point --db / RNNTUNE_DB_URL at PostgreSQL for a cluster (docs/cluster.md)"
    )


def check_resources(per_trial: dict[str, float]) -> None:
    """Refuse per-trial resources the cluster does not have at all (Tune would wait for them forever)."""
    import ray

    total = ray.cluster_resources()
    names = {"cpu": "CPU", "gpu": "GPU"}
    for key, amount in per_trial.items():
        have = float(total.get(names.get(key, key), 0.0))
        if amount > have:
            raise RayStartError(
                f"--{key}s-per-trial {amount:g} exceeds the cluster's {have:g} {names.get(key, key)}s; "
                f"ask for at most {have:g}"
            )
