"""The rendered cluster has Compose's topology on Kubernetes' terms: what runs where, with what."""

from __future__ import annotations

from tests.tuner.deploy.inputs import EVERYTHING, EXTERNAL_DB, containers, env_of, one, render


def test_the_default_cluster() -> None:
    objects = render()
    assert [o["kind"] for o in objects] == [
        "PersistentVolumeClaim",
        "Service",
        "StatefulSet",
        "RayCluster",
        "Service",
        "Deployment",
        "Job",
    ]
    claim = one(objects, "PersistentVolumeClaim")
    assert (
        claim["spec"]["accessModes"] == ["ReadWriteMany"] and claim["metadata"]["name"] == "rnntune-studies"
    )
    cluster = one(objects, "RayCluster")
    assert cluster["metadata"]["annotations"] == {"ray.io/overwrite-container-cmd": "true"}
    assert cluster["spec"]["authOptions"] == {"mode": "token", "secretName": "rnntune-secrets"}
    assert [g["groupName"] for g in cluster["spec"]["workerGroupSpecs"]] == ["cpu"]
    head = cluster["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    assert env_of(head)["RAY_HEAD_NUM_CPUS"] == "0" and env_of(head)["RAY_HEAD_NUM_GPUS"] == "0"
    assert head["ports"] == [{"name": "gcs-server", "containerPort": 6379}]


def test_the_api_is_one_replica_replaced_not_rolled() -> None:
    deployment = one(render(), "Deployment")
    assert deployment["spec"]["replicas"] == 1 and deployment["spec"]["strategy"] == {"type": "Recreate"}
    service = one(render(), "Service", "rnntune-api")
    assert service["spec"]["type"] == "ClusterIP" and service["spec"]["ports"][0]["port"] == 8000


def test_the_sweep_job_drives_the_api_once() -> None:
    job = one(render(), "Job")
    pod = job["spec"]["template"]["spec"]
    assert pod["restartPolicy"] == "Never"
    assert env_of(pod["containers"][0])["RNNTUNE_API_URL"] == "http://rnntune-api:8000"
    assert [o for o in render({"sweep": {"enabled": False}}) if o["kind"] == "Job"] == []


def test_workers_offer_ray_what_kubernetes_reserves() -> None:
    found = containers(render({}, RAY_WORKER_NUM_CPUS="6"))
    worker = found["ray-worker"]
    assert worker["resources"]["requests"] == worker["resources"]["limits"] == {"cpu": "6", "memory": "8Gi"}
    assert env_of(worker)["RAY_WORKER_NUM_CPUS"] == "6" and env_of(worker)["RAY_WORKER_NUM_GPUS"] == "0"
    assert containers(render())["ray-worker"]["resources"]["limits"]["cpu"] == "2"  # values: workers.cpus


def test_gpu_workers_reserve_gpus_run_the_gpu_image_and_start_mps_as_compose_does() -> None:
    objects = render(EVERYTHING, RNNTUNE_GPUS_PER_TRIAL="0.25", RAY_WORKER_NUM_GPUS="4")
    cluster = one(objects, "RayCluster")
    gpu_group = cluster["spec"]["workerGroupSpecs"][1]
    assert gpu_group["groupName"] == "gpu" and gpu_group["replicas"] == 2
    pod = gpu_group["template"]["spec"]
    assert pod["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    worker = pod["containers"][0]
    assert worker["image"] == "registry.example/rnntune:gpu" and worker["args"] == ["worker"]
    assert worker["resources"]["limits"]["nvidia.com/gpu"] == "4"
    env = env_of(worker)
    assert (env["RAY_WORKER_NUM_GPUS"], env["RNNTUNE_MPS"], env["RNNTUNE_GPUS_PER_TRIAL"]) == (
        "4",
        "auto",
        "0.25",
    )
    sweep = env_of(containers(objects)["sweep"])
    assert sweep["RNNTUNE_GPUS_PER_TRIAL"] == "0.25"
    defaults = env_of(containers(render(EVERYTHING))["sweep"])
    assert (defaults["RNNTUNE_GPUS_PER_TRIAL"], defaults["RNNTUNE_SET"]) == (
        "1",
        "device=auto",
    )  # docker-compose.gpu.yml's


def test_datasets_are_mounted_read_only_everywhere_they_are_mounted() -> None:
    objects = render(EVERYTHING)
    cluster = one(objects, "RayCluster")
    pods = [
        cluster["spec"]["headGroupSpec"]["template"]["spec"],
        one(objects, "Deployment")["spec"]["template"]["spec"],
    ]
    pods += [g["template"]["spec"] for g in cluster["spec"]["workerGroupSpecs"]]
    for pod in pods:
        (volume,) = [v for v in pod["volumes"] if v["name"] == "datasets"]
        assert volume["persistentVolumeClaim"] == {"claimName": "datasets", "readOnly": True}
        (mount,) = [m for m in pod["containers"][0]["volumeMounts"] if m["name"] == "datasets"]
        assert mount["readOnly"] is True and mount["mountPath"] == "/data/datasets"
    assert all(
        v["name"] != "datasets" for v in one(render(), "Deployment")["spec"]["template"]["spec"]["volumes"]
    )


def test_exposure_and_host_names() -> None:
    objects = render(EVERYTHING)
    assert one(objects, "Service", "rnntune-api")["spec"]["type"] == "LoadBalancer"
    ingress = one(objects, "Ingress")
    assert (
        ingress["spec"]["ingressClassName"] == "nginx"
        and ingress["spec"]["rules"][0]["host"] == "rnntune.example.org"
    )
    hosts = env_of(containers(objects)["api"])["RNNTUNE_ALLOWED_HOSTS"].split(",")
    assert hosts[:4] == ["rnntune-api", "localhost", "127.0.0.1", "::1"]
    assert {"rnntune-api.ml.svc.cluster.local", "rnntune.example.org"} <= set(hosts)
    assert all(o["metadata"].get("namespace") == "ml" for o in objects)
    public = containers(render({"api": {"publicReads": True}}, RNNTUNE_API_READ_TOKEN=""))["api"]
    assert public["args"] == ["api", "--public-reads"]


def test_an_external_database_renders_no_postgres() -> None:
    objects = render(EXTERNAL_DB, RNNTUNE_DB_URL="postgresql+psycopg2://u:p@db.example/rnntune")
    assert not [
        o for o in objects if o["kind"] == "StatefulSet" or o["metadata"]["name"] == "rnntune-postgres"
    ]


def test_the_database_keeps_its_data_in_a_claim_of_its_own() -> None:
    statefulset = one(render({"postgres": {"size": "20Gi"}}), "StatefulSet")
    (claim,) = statefulset["spec"]["volumeClaimTemplates"]
    assert (
        claim["metadata"]["name"] == "postgres-data"
        and claim["spec"]["resources"]["requests"]["storage"] == "20Gi"
    )
    container = statefulset["spec"]["template"]["spec"]["containers"][0]
    assert env_of(container)["PGDATA"].startswith(container["volumeMounts"][0]["mountPath"] + "/")


def test_checkpoints_in_an_object_store_need_no_shared_claim() -> None:
    """RNNTUNE_STORAGE=s3://...: no ReadWriteMany claim; each pod keeps its run folders' working
    copies in an empty folder of its own; the endpoint reaches every Ray pod and the API, the keys
    through the Secret."""
    objects = render(
        EVERYTHING,
        RNNTUNE_STORAGE="s3://rnntune-ckpt/studies",
        AWS_ENDPOINT_URL_S3="http://minio.example:9000",
    )
    assert "PersistentVolumeClaim" not in [o["kind"] for o in objects]
    found = containers(objects)
    assert env_of(found["api"])["RNNTUNE_STORAGE"] == "s3://rnntune-ckpt/studies"
    for name in ("ray-head", "ray-worker", "ray-worker-gpu", "api"):
        env = env_of(found[name])
        assert env["AWS_ENDPOINT_URL_S3"] == "http://minio.example:9000", name
        assert env["AWS_SECRET_ACCESS_KEY"] == ("secret", "AWS_SECRET_ACCESS_KEY"), name
        assert {"name": "studies", "mountPath": "/data/studies", "readOnly": False} in found[name][
            "volumeMounts"
        ]
    for obj in objects:
        for template in _templates(obj):
            studies = [v for v in template["spec"].get("volumes", []) if v["name"] == "studies"]
            assert studies in ([], [{"name": "studies", "emptyDir": {}}]), obj["metadata"]["name"]
    assert one(render(), "PersistentVolumeClaim")["spec"]["accessModes"] == [
        "ReadWriteMany"
    ]  # a folder: shared
    azure = containers(
        render(EVERYTHING, RNNTUNE_STORAGE="abfs://ckpt/studies", AZURE_STORAGE_ACCOUNT_NAME="acct")
    )
    for name in (
        "ray-head",
        "ray-worker",
        "ray-worker-gpu",
        "api",
    ):  # Azure: the account plain, the key secret
        env = env_of(azure[name])
        assert env["AZURE_STORAGE_ACCOUNT_NAME"] == "acct", name
        assert env["AZURE_STORAGE_ACCOUNT_KEY"] == ("secret", "AZURE_STORAGE_ACCOUNT_KEY"), name
        assert env["AZURE_STORAGE_CONNECTION_STRING"] == ("secret", "AZURE_STORAGE_CONNECTION_STRING"), name


def _templates(obj: dict) -> list[dict]:
    if obj["kind"] == "RayCluster":
        spec = obj["spec"]
        return [spec["headGroupSpec"]["template"], *(g["template"] for g in spec["workerGroupSpecs"])]
    return [obj["spec"]["template"]] if obj["kind"] in ("Deployment", "StatefulSet", "Job") else []
