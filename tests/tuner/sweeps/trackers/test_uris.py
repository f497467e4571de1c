"""The MLflow URI rules as plain decisions: which local file a URI writes, whether it names the
study database, and what a REST client may name."""

from __future__ import annotations

from pathlib import Path

import pytest

from tuner.sweeps.trackers import uris

ROOT = Path("/srv/studies")
DB = "sqlite:////srv/studies/rnntune.db"


@pytest.mark.parametrize(
    ("uri", "path"),
    [
        ("sqlite:////abs/ml.db", "/abs/ml.db"),
        ("sqlite:///rel/ml.db", "rel/ml.db"),
        ("file:///srv/studies/mlruns", "/srv/studies/mlruns"),
        ("file://localhost/x", "/x"),
        ("./mlruns", "./mlruns"),
        ("http://mlflow:5000", None),
        ("https://mlflow.example", None),
        ("databricks://profile", None),
        ("file://otherhost/x", None),
        ("sqlite://", None),
    ],
)
def test_local_path_names_the_file_a_local_store_writes(uri, path):
    assert uris.local_path(uri) == path


def test_the_study_database_is_recognised_on_sqlite_and_servers(tmp_path):
    db = tmp_path / "s.db"
    assert uris.names_database(f"sqlite:///{db}", f"sqlite:///{db}", tmp_path)
    assert uris.names_database("sqlite:///s.db", f"sqlite:///{db}", tmp_path)  # relative, same file
    assert not uris.names_database(f"sqlite:///{tmp_path / 'ml.db'}", f"sqlite:///{db}", tmp_path)
    pg = "postgresql://rnntune:pw@db:5432/rnntune"
    assert uris.names_database("postgresql://other@db:5432/rnntune", pg, tmp_path)
    assert not uris.names_database("postgresql://rnntune@db:5432/mlflow", pg, tmp_path)
    assert not uris.names_database("http://db:5432/rnntune", pg, tmp_path)


@pytest.mark.parametrize(
    ("uri", "problem"),
    [
        ("http://169.254.169.254/latest", "RNNTUNE_MLFLOW_URIS"),
        ("https://mlflow.example", "RNNTUNE_MLFLOW_URIS"),
        ("sqlite:////some/outside/ml.db", "inside the server's storage root"),
        ("file:///etc", "inside the server's storage root"),
        ("/srv/studies/../mlruns", "inside the server's storage root"),
        (DB, "study database"),
        ("http://mlflow.internal:5000/", None),  # listed (a trailing slash is the same server)
        ("sqlite:////srv/studies/mlflow.db", None),
        ("file:///srv/studies/mlruns", None),
    ],
)
def test_what_a_rest_client_may_name(uri, problem):
    found = uris.rest_problem(
        uri, allowed=("http://mlflow.internal:5000",), storage_root=ROOT, database_url=DB
    )
    assert (found is None) if problem is None else (problem in found)


def test_the_allow_list_comes_from_the_environment_normalised():
    env = {uris.URIS_ENV: " http://a:5000/ ,https://b ,, "}
    assert uris.allowed_uris(env) == ("http://a:5000", "https://b")
    assert uris.allowed_uris({}) == ()


def test_a_sqlite_store_keeps_its_artifacts_in_the_study_folder(tmp_path):
    assert uris.artifact_location("sqlite:////x/ml.db", tmp_path) == (tmp_path / "mlflow-artifacts").as_uri()
    assert uris.artifact_location("http://mlflow:5000", tmp_path) is None
    assert uris.artifact_location("file:///x", tmp_path) is None
