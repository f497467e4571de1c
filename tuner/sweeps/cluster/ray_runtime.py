"""Starting Ray for a sweep: an embedded single-machine cluster, or a connection to a running one.

Token authentication (Ray >= 2.59 turns it on by default for clusters that `ray.init()` starts): for
the embedded cluster we hand Ray a fresh random token through RAY_AUTH_TOKEN, so it is on without
Ray writing ~/.ray/auth_token (read-only homes, shared machines) and dies with the sweep. An explicit
RAY_AUTH_MODE, RAY_AUTH_TOKEN or RAY_AUTH_TOKEN_PATH from the user is respected. For a cluster
(`--ray-address` / RAY_ADDRESS) the token is the cluster's: see docs/sweeps.md.

Placement checks: a trial's resources (`cpus_per_trial`, `gpus_per_trial`) must all fit on one
node, or Ray Tune leaves it PENDING forever. The driver checks the nodes of the cluster it joined
(`check_resources`); the API checks before it launches a sweep (`check_cluster`), asking the cluster
from a short-lived child process so that the API process itself never becomes a Ray driver.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import os
import secrets
import subprocess
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from tuner.errors import Conflict, Unavailable
from tuner.storage.study import SECRET_ENV
from tuner.upstream import ray_private

QUIET_LOGGERS = (
    "ray",
    "ray.tune",
    "ray.train",
    "ray.air",
    "ray._private.authentication.authentication_token_setup",
)


# How long the API waits for the cluster to say what its nodes offer.
PROBE_TIMEOUT_S = 60.0
# The spec field (and flag) behind each per-trial resource.
FIELDS = {
    "cpu": ("cpus_per_trial", "--cpus-per-trial", "CPU"),
    "gpu": ("gpus_per_trial", "--gpus-per-trial", "GPU"),
}
_PROBE = (
    "import json, sys, ray\n"
    "ray.init(address=sys.argv[1], logging_level='ERROR', log_to_driver=False)\n"
    "print('NODES ' + json.dumps([n['Resources'] for n in ray.nodes() if n.get('Alive')]))\n"
)


class RayStartError(Unavailable):
    """Ray could not be started or reached; the message says what to check."""


class NotEnoughResources(Conflict, RayStartError):
    """No node of the cluster offers what one trial asks for; the message names the spec field.

    A conflict between the study and the cluster (409 at `/start`: the cluster may grow, or the study
    ask for less), and a RayStartError to the sweep driver, which reports it like any start-up failure.
    """


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


@functools.cache
def _embedded_token() -> str:
    """The token of every embedded cluster this process starts: one per process, because Ray's
    client keeps the first token it read, and a second sweep in the same process (a notebook's
    second `python_api.run`) would otherwise start a cluster its client cannot join."""
    return secrets.token_hex(32)


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
            os.environ["RAY_AUTH_TOKEN"] = _embedded_token()
        try:
            # "local": a cluster of our own. Without it, Ray joins the last cluster recorded in its
            # temp dir (`ray start`, or any `ray.cluster_utils.Cluster`) and then refuses num_cpus.
            options = {**common, **ray_private.embedded_init_options()}
            ray.init(address="local", num_cpus=num_cpus, include_dashboard=False, **options)
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


def placement_problem(
    per_trial: Mapping[str, float], nodes: Sequence[Mapping[str, float]], where: str
) -> str | None:
    """Why no node in `nodes` (each node's total resources, Ray's names: CPU, GPU) can run one trial
    asking `per_trial` ({"cpu": n, "gpu": m}); None when some node can. `where` names the cluster."""
    wanted = {key: float(amount) for key, amount in per_trial.items() if amount > 0}
    for key, amount in wanted.items():
        field, flag, resource = FIELDS.get(key, (key, key, key.upper()))
        most = max((float(node.get(resource, 0.0)) for node in nodes), default=0.0)
        if amount > most:
            return (
                f"{field} {amount:g} ({flag}): no node of {where} has {amount:g} {resource}(s); "
                f"the most any of its {len(nodes)} node(s) offers is {most:g} — ask for at most "
                f"{most:g}, or add nodes that have them (docs/gpu.md)"
            )
    if not any(
        all(float(n.get(FIELDS[k][2], 0.0)) >= v for k, v in wanted.items() if k in FIELDS) for n in nodes
    ):
        asked = ", ".join(f"{FIELDS[k][0]} {v:g}" for k, v in wanted.items() if k in FIELDS)
        return f"{asked}: no single node of {where} has all of them at once; a trial runs on one node"
    return None


def trials_at_once(per_trial: Mapping[str, float], nodes: Sequence[Mapping[str, float]]) -> int:
    """How many trials asking `per_trial` ({"cpu": n, "gpu": m}) the nodes (Ray's CPU, GPU totals)
    run at the same time, each trial on one node."""
    total = 0
    for node in nodes:
        fits = [
            math.floor(float(node.get(FIELDS[key][2], 0.0)) / amount + 1e-9)
            for key, amount in per_trial.items()
            if amount > 0 and key in FIELDS
        ]
        total += min(fits) if fits else 0
    return total


def in_flight(
    per_trial: Mapping[str, float], parallel: int, nodes: Sequence[Mapping[str, float]], grows: bool
) -> tuple[int, str | None]:
    """Trials a sweep keeps in flight, and a line for its header when that is not `parallel`: at
    most what the cluster runs at once. A cluster joined by address may gain nodes (`docker compose
    up --scale ray-worker=N`, an autoscaler), so there the rest only wait in Ray's queue, already
    sampled, and the line says so; this machine's embedded cluster (`grows` False) cannot, so the
    sweep keeps no more in flight than it runs and the sampler asks only when a slot frees."""
    at_once = trials_at_once(per_trial, nodes)
    if parallel <= at_once:
        return parallel, None
    where = f"the {len(nodes)} node(s) of the Ray cluster run {at_once} trial(s) of this size at once"
    if grows:
        return parallel, (
            f"note: parallel {parallel}, but {where}; the other {parallel - at_once} wait in Ray's queue, "
            f"sampled before the running ones report (lower --parallel, or add nodes)"
        )
    return max(1, at_once), (
        f"note: parallel {parallel} lowered to {max(1, at_once)}: this machine's embedded Ray cluster runs "
        f"{at_once} trial(s) of this size at once (--num-cpus, --cpus-per-trial, --gpus-per-trial)"
    )


def check_resources(
    per_trial: Mapping[str, float], parallel: int, address: str | None
) -> tuple[int, str | None]:
    """Refuse per-trial resources that no node of the joined cluster has (Tune would wait for them
    forever; NotEnoughResources names the spec field); then the trials to keep in flight and the
    header line about them (`in_flight`). `address` is the sweep's --ray-address."""
    import ray

    nodes = [node.get("Resources", {}) for node in ray.nodes() if node.get("Alive")]
    if (problem := placement_problem(per_trial, nodes, "the Ray cluster")) is not None:
        raise NotEnoughResources(problem)
    return in_flight(per_trial, parallel, nodes, grows=bool(address or os.environ.get("RAY_ADDRESS")))


def cluster_nodes(
    address: str | None = None, timeout_s: float = PROBE_TIMEOUT_S
) -> tuple[list[dict[str, float]], str]:
    """Each node's total resources and a description of the cluster a sweep started from here would
    use: the one at `address` (default RAY_ADDRESS), asked by a short-lived Ray driver in a child
    process without this process's secrets; with no address, the embedded cluster `rnntune sweep`
    starts on this machine (its CPUs, and the GPUs PyTorch sees here, CUDA_VISIBLE_DEVICES honoured)."""
    address = address or os.environ.get("RAY_ADDRESS") or None
    if address is None:
        import torch

        return [{"CPU": float(os.cpu_count() or 1), "GPU": float(torch.cuda.device_count())}], "this machine"
    env = {k: v for k, v in os.environ.items() if k not in SECRET_ENV}
    try:
        done = subprocess.run(
            [sys.executable, "-c", _PROBE, address],
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise RayStartError(f"the Ray cluster at {address} did not answer within {timeout_s:g} s") from None
    lines = [line for line in done.stdout.splitlines() if line.startswith("NODES ")]
    if done.returncode != 0 or not lines:
        detail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise RayStartError(f"could not ask the Ray cluster at {address} for its resources: {detail}")
    return json.loads(lines[-1].removeprefix("NODES ")), f"the Ray cluster at {address}"


def check_cluster(per_trial: Mapping[str, float], address: str | None = None) -> None:
    """Before a sweep is launched: NotEnoughResources (naming the field) when no node of the cluster
    it would run on offers one trial's resources. Asks the cluster only when a trial wants a GPU or
    more than one CPU (the default, 1 CPU, fits any node that runs trials)."""
    if per_trial.get("gpu", 0.0) <= 0 and per_trial.get("cpu", 1.0) <= 1:
        return
    nodes, where = cluster_nodes(address)
    if (problem := placement_problem(per_trial, nodes, where)) is not None:
        raise NotEnoughResources(problem)
