"""rnntune on Kubernetes with KubeRay: manifests rendered from docker-compose.yml and the same .env.

`python -m tuner.deploy render --env .env [--values FILE]` prints the Compose topology as
Kubernetes objects (PostgreSQL, a KubeRay RayCluster, the API, the sweep Job, the shared volume);
`python -m tuner.deploy secret --env .env` prints the one Secret they read. The image, commands,
environment names and defaults come from docker-compose.yml (`compose`), the Kubernetes-only
choices from a values file (`values`, defaults in values.yaml), and a values file that would run
an unsafe or broken cluster is refused before anything is printed (`refusals`). docs/kubernetes.md.
"""
