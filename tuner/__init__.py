"""rnntune's tuner: search spaces, samplers, Ray Tune orchestration, SQL studies, API and CLI."""
