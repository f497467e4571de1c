"""The refusals of tuner/deploy/refusals.py, on plain dicts: each names the field to change."""

from __future__ import annotations

from typing import Any

import pytest

from tuner.deploy import refusals
from tuner.deploy.inputs import default_values, merged

DEFAULTS = default_values()
SECRETS = {
    "POSTGRES_PASSWORD": "pw",
    "RAY_AUTH_TOKEN": "rt",
    "RNNTUNE_API_TOKEN": "wt",
    "RNNTUNE_API_READ_TOKEN": "rdt",
}


def found(user: dict[str, Any] | None = None, **settings: str) -> list[str]:
    user = user or {}
    env = {**SECRETS, "RAY_AUTH_MODE": "token", **settings}
    return refusals.problems(user, merged(DEFAULTS, user), DEFAULTS, env)


def test_the_defaults_with_every_secret_set_pass() -> None:
    assert found() == []
    with pytest.raises(refusals.Refused) as refused:
        refusals.check({}, DEFAULTS, DEFAULTS, {"RAY_AUTH_MODE": "token"})
    assert [p.split(" is empty")[0] for p in refused.value.problems] == [
        "env: RNNTUNE_API_TOKEN",
        "env: POSTGRES_PASSWORD",
        "env: RAY_AUTH_TOKEN",
        "env: RNNTUNE_API_READ_TOKEN",
    ]
    assert str(refused.value).startswith("refused:\n  - env: RNNTUNE_API_TOKEN is empty")


@pytest.mark.parametrize("name", sorted(SECRETS))
def test_an_empty_secret_is_refused_by_name(name: str) -> None:
    (problem,) = found(**{name: ""})
    assert problem.startswith(f"env: {name} is empty")


def test_an_external_database_needs_its_url_and_not_the_password() -> None:
    external = {"postgres": {"external": True}}
    assert [p.split(" is")[0] for p in found(external, POSTGRES_PASSWORD="")] == ["env: RNNTUNE_DB_URL"]
    assert found(external, POSTGRES_PASSWORD="", RNNTUNE_DB_URL="postgresql+psycopg2://u:p@db/x") == []


def test_a_checkpoint_store_rnntune_cannot_write_is_refused_before_any_pod_refuses_it() -> None:
    assert found(RNNTUNE_STORAGE="s3://rnntune-ckpt/studies") == []
    assert found(RNNTUNE_STORAGE="gs://rnntune_ckpt/studies") == []
    assert found(RNNTUNE_STORAGE="/data/studies") == []
    (problem,) = found(RNNTUNE_STORAGE="hdfs://namenode/studies")
    assert problem.startswith("env: RNNTUNE_STORAGE: 'hdfs://namenode/studies' is a hdfs:// URI")
    assert (
        "allowed: a local folder or one of s3://BUCKET/PREFIX, gs://BUCKET/PREFIX, abfs://BUCKET/PREFIX"
        in problem
    )
    (problem,) = found(RNNTUNE_STORAGE="s3://Bad_Bucket/x")
    assert problem.startswith("env: RNNTUNE_STORAGE: 's3://Bad_Bucket/x' names no valid bucket")


def test_ray_without_auth_needs_no_token_and_an_unknown_mode_is_refused() -> None:
    assert found(RAY_AUTH_MODE="disabled", RAY_AUTH_TOKEN="") == []
    assert found(RAY_AUTH_MODE="off") == ["env: RAY_AUTH_MODE must be token or disabled, not 'off'"]
    assert found(RAY_AUTH_MODE="") == ["env: RAY_AUTH_MODE must be token or disabled, not ''"]


@pytest.mark.parametrize(
    ("user", "field"),
    [
        ({"api": {"serviceType": "LoadBalancer"}}, "api.serviceType: LoadBalancer"),
        ({"api": {"serviceType": "NodePort"}}, "api.serviceType: NodePort"),
        ({"api": {"ingress": {"enabled": True, "host": "rnntune.example.org"}}}, "api.ingress.enabled"),
    ],
)
def test_exposing_the_api_without_a_read_token_is_refused(user: dict[str, Any], field: str) -> None:
    assert found(user) == []
    problems = found(user, RNNTUNE_API_READ_TOKEN="")
    assert any(p.startswith("env: RNNTUNE_API_READ_TOKEN is empty but values: " + field) for p in problems), (
        problems
    )
    public = merged(user, {"api": {"publicReads": True}})
    assert any(
        p.startswith("values: api.publicReads is true") for p in found(public, RNNTUNE_API_READ_TOKEN="")
    ), public


def test_public_reads_inside_the_cluster_need_no_read_token() -> None:
    assert found({"api": {"publicReads": True}}, RNNTUNE_API_READ_TOKEN="") == []


def test_an_unknown_service_type_and_an_ingress_without_host_are_refused() -> None:
    assert any(
        p.startswith("values: api.serviceType must be one of")
        for p in found({"api": {"serviceType": "External"}})
    )
    assert found({"api": {"ingress": {"enabled": True}}})[0].startswith("values: api.ingress.host is empty")


def test_gpu_workers_without_the_gpu_image_are_refused() -> None:
    (problem,) = found({"gpuWorkers": {"replicas": 1}})
    assert problem.startswith("values: gpuWorkers.replicas asks for GPU workers but gpuImage is empty")
    assert found({"gpuWorkers": {"replicas": 1}, "gpuImage": "registry.example/rnntune:gpu"}) == []


def test_gpus_per_trial_without_gpu_workers_is_refused() -> None:
    (problem,) = found(RNNTUNE_GPUS_PER_TRIAL="0.25")
    assert problem.startswith(
        "env: RNNTUNE_GPUS_PER_TRIAL=0.25 asks GPUs for every trial but values: gpuWorkers.replicas is 0"
    )
    assert found(RNNTUNE_GPUS_PER_TRIAL="0") == []
    assert found(RNNTUNE_GPUS_PER_TRIAL="half") == [
        "env: RNNTUNE_GPUS_PER_TRIAL must be a number, not 'half'"
    ]


@pytest.mark.parametrize("name", ["RAY_HEAD_NUM_CPUS", "RAY_HEAD_NUM_GPUS"])
def test_a_head_that_would_run_trials_is_refused(name: str) -> None:
    assert found(**{name: "2"}) == [
        f"env: {name} must be 0 on Kubernetes: the head runs no trials (add workers instead)"
    ]


def test_gpu_and_cpu_counts_must_be_whole_numbers() -> None:
    gpu = {"gpuWorkers": {"replicas": 1}, "gpuImage": "g"}
    assert found(gpu, RAY_WORKER_NUM_GPUS="0.5")[0].startswith(
        "values: gpuWorkers.gpus (or env: RAY_WORKER_NUM_GPUS)"
    )
    assert found(RAY_WORKER_NUM_CPUS="1.5")[0].startswith(
        "values: workers.cpus (or env: RAY_WORKER_NUM_CPUS)"
    )
    assert found({"gpuWorkers": {"cpus": "8000m"}})[0].startswith(
        "values: gpuWorkers.cpus must be a whole number"
    )


@pytest.mark.parametrize(
    ("user", "start"),
    [
        ({"password": "x"}, "values: password looks like a secret"),
        ({"api": {"readToken": "x"}}, "values: api.readToken is not a setting"),
        ({"postgres": {"size": "rdt"}}, "values: postgres.size holds the value of a secret"),
        (
            {"gpuWorkers": {"nodeSelector": {"api_token": "x"}}},
            "values: gpuWorkers.nodeSelector.api_token looks like a secret",
        ),
    ],
)
def test_a_secret_in_the_values_file_is_refused(user: dict[str, Any], start: str) -> None:
    problems = found(user)
    assert any(p.startswith(start) for p in problems), problems
    assert not any("rdt" in p for p in problems), "a refusal must not print the secret"


def test_unknown_keys_are_refused_naming_the_allowed_ones_but_free_form_maps_are_not() -> None:
    defaults = default_values()
    (problem,) = found({"workers": {"replica": 3}})
    assert problem.startswith("values: workers.replica is not a setting; workers takes: ")
    assert all(key in problem for key in defaults["workers"]) and "podLabels" in problem
    (problem,) = found({"api": {"nodeSelectr": {}}})
    assert "api takes: " in problem and "nodeSelector" in problem
    (problem,) = found({"gpuWorker": {}})
    assert "the settings are: " in problem and "gpuWorkers" in problem
    assert found({"gpuWorkers": {"nodeSelector": {"cloud.example/gpu": "h100"}}}) == []
    free = {
        "nodeSelector": {"pool": "a"},
        "podAnnotations": {"x.example/y": "1"},
        "podLabels": {"team": "ml"},
    }
    free_affinity = {"affinity": {"nodeAffinity": {"anything": "kubernetes takes"}}}
    for group in ("postgres", "head", "workers", "gpuWorkers", "api", "sweep"):
        assert found({group: {**free, **free_affinity}}) == [], group


@pytest.mark.parametrize(
    ("user", "start"),
    [
        ({"name": "Rnntune"}, "values: name must be a DNS label"),
        ({"name": "r" * 41}, "values: name must be a DNS label"),
        ({"workers": {"replicas": 20}}, "values: workers.replicas (20) is above workers.maxReplicas (16)"),
        (
            {"gpuWorkers": {"replicas": -1}},
            "values: gpuWorkers.replicas and gpuWorkers.maxReplicas must be whole numbers",
        ),
        (
            {"workers": {"replicas": "2"}},
            "values: workers.replicas and workers.maxReplicas must be whole numbers",
        ),
    ],
)
def test_names_and_replica_counts_kubernetes_would_reject_are_refused(
    user: dict[str, Any], start: str
) -> None:
    assert any(p.startswith(start) for p in found(user)), found(user)
