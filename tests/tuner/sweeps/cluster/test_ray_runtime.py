"""The SQLite-on-a-cluster warning, on a real two-node Ray cluster.

The cluster runs in a child process: this test process may hold the session's embedded Ray
(conftest `ray_cluster`), and Ray cannot be restarted reliably within one process.
"""

from __future__ import annotations

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
