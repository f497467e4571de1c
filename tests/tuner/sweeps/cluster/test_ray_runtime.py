"""The SQLite-on-a-cluster warning on a real two-node Ray cluster, and embedded clusters started twice.

The cluster runs in a child process: this test process may hold the session's embedded Ray
(conftest `ray_cluster`), and Ray cannot be restarted reliably within one process.
"""

from __future__ import annotations

import shutil
import tempfile

import pytest

from tests.child import fresh_env, run_child

SCRIPT = """
import json, ray
from ray.cluster_utils import Cluster
from tuner.sweeps.cluster.ray_runtime import sqlite_on_cluster_warning

cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
try:
    ray.init(address=cluster.address)
    out = {"one": sqlite_on_cluster_warning("sqlite:///studies/rnntune.db")}
    cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes()
    out["two"] = sqlite_on_cluster_warning("sqlite:///studies/rnntune.db")
    out["postgres"] = sqlite_on_cluster_warning("postgresql://u@127.0.0.1/db")
finally:
    ray.shutdown()
    cluster.shutdown()
print("RESULT " + json.dumps(out))
"""


@pytest.mark.slow
def test_sqlite_study_on_two_nodes_is_warned_about_postgres_is_not():
    out = run_child(SCRIPT, env=fresh_env(), timeout=300)
    assert out["one"] is None  # one node
    assert out["two"] is not None and "2 nodes" in out["two"] and "PostgreSQL" in out["two"]
    assert out["postgres"] is None


TWO_SWEEPS = """
import io, json, sys, tempfile
from tests.conftest import TINY_SETTINGS
from tuner.sweeps.drive.run import run_sweep
from tuner.sweeps.study.create import create_study

statuses = []
for _ in range(2):
    tmp = tempfile.mkdtemp()
    db = f"sqlite:///{tmp}/db.sqlite"
    create_study("t", storage_url=db, space="tiny", n_trials=1, scheduler="none", sampler="random",
                 storage_path=f"{tmp}/s", overrides={"set": {**TINY_SETTINGS, "max_steps": 10}})
    statuses.append(run_sweep("t", db, num_cpus=2, out=io.StringIO()).status)
print("RESULT " + json.dumps(statuses))
"""


@pytest.mark.slow
def test_two_sweeps_in_one_process_each_start_an_embedded_cluster_with_token_auth():
    """A notebook's second `python_api.run`: Ray's client keeps the first cluster's token, so the
    second embedded cluster must be started with the same one (it failed with InvalidAuthToken)."""
    env = {k: v for k, v in fresh_env().items() if k != "RAY_AUTH_MODE"}  # the default: token auth
    assert run_child(TWO_SWEEPS, env=env, timeout=300) == ["finished", "finished"]


RECORDED_CLUSTER = """
import json, os, ray
from tuner.sweeps.cluster.ray_runtime import start_ray

ray_dir = os.path.join(os.environ["RAY_TMPDIR"], "ray")
os.makedirs(ray_dir)
with open(os.path.join(ray_dir, "ray_current_cluster"), "w") as f:
    f.write("127.0.0.1:9")  # what `ray start` or a ray.cluster_utils.Cluster leaves behind
started = start_ray(None, num_cpus=1, verbose=False)
out = {"started": started, "cpus": ray.cluster_resources().get("CPU")}
ray.shutdown()
print("RESULT " + json.dumps(out))
"""


@pytest.mark.slow
def test_the_embedded_cluster_ignores_a_cluster_recorded_in_rays_temp_dir():
    """Another cluster on the machine (a test's `Cluster`, a user's `ray start`) must not be joined:
    the embedded sweep starts its own, with the CPUs it asked for (it failed with "When connecting
    to an existing cluster, num_cpus and num_gpus must not be provided")."""
    short = tempfile.mkdtemp(prefix="rt", dir="/tmp")  # Ray's socket paths: at most 107 bytes
    try:
        out = run_child(RECORDED_CLUSTER, env=fresh_env(RAY_TMPDIR=short), timeout=300)
    finally:
        shutil.rmtree(short, ignore_errors=True)
    assert out == {"started": True, "cpus": 1.0}
