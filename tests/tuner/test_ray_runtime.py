"""The SQLite-on-a-cluster warning, on a real two-node Ray cluster started in this process."""

from __future__ import annotations

import pytest

from tuner.orchestration.ray_runtime import sqlite_on_cluster_warning


@pytest.mark.slow
def test_sqlite_study_on_two_nodes_is_warned_about_postgres_is_not(monkeypatch):
    import ray
    from ray.cluster_utils import Cluster

    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    try:
        ray.init(address=cluster.address)
        assert sqlite_on_cluster_warning("sqlite:///studies/rnntune.db") is None  # one node
        cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        warning = sqlite_on_cluster_warning("sqlite:///studies/rnntune.db")
        assert warning is not None and "2 nodes" in warning and "PostgreSQL" in warning
        assert sqlite_on_cluster_warning("postgresql://u@127.0.0.1/db") is None
    finally:
        ray.shutdown()
        cluster.shutdown()
