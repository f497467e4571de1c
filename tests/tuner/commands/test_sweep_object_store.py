"""`rnntune sweep --storage s3://BUCKET/PREFIX` end to end against an S3 server over HTTP (moto's
server mode): the trials' checkpoints land in the bucket, retention deletes there, the API streams
the best one with a matching SHA-256, and a key outside the study's prefix is refused. On the same
sweep: a dynamic-evaluation study of its best `s3://` checkpoint, and the API's finalize (the
`rnntune finalize` it launches) reading the trials' configs from the bucket and uploading its reruns
there."""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import sqlite3
import time
from pathlib import Path

import httpx
import pytest
from optuna.trial import TrialState

import trainer
from tests import s3_server
from tests.tuner.api.fixtures import live_server
from tests.tuner.commands.object_downloads import best_download
from tests.tuner.sweep_process import finish, launch, tiny_set_args, trials, wait_until
from trainer.checkpoint import saved_header
from tuner import python_api
from tuner.api import ApiSettings
from tuner.storage.object_store import ObjectStore, parse
from tuner.storage.study import load_study

pytestmark = pytest.mark.slow

s3_endpoint, s3_env, bucket = s3_server.s3_endpoint, s3_server.s3_env, s3_server.bucket  # fixtures


def test_a_cli_sweep_keeps_its_checkpoints_in_the_bucket_and_the_api_serves_them(tmp_path, bucket):
    db = f"sqlite:///{tmp_path / 'studies.db'}"
    where = f"s3://{bucket}/studies/s3e2e"
    args = ["--name", "s3e2e", "--trials", "4", "--parallel", "2", "--db", db, "--seed", "1"]
    args += ["--storage", where, "--keep-top", "1", "--scheduler", "asha", "--grace-steps", "10"]
    proc, log = launch(tmp_path, [*args, *tiny_set_args()])
    assert finish(proc, log, 600) == 0, log.read_text()
    assert "study s3e2e: finished, 4/4 trials" in log.read_text()
    assert f"storage {where}" in log.read_text()

    study = load_study("s3e2e", db)
    assert study.user_attrs["storage_path"] == where
    finished = [t for t in study.trials if t.state in (TrialState.COMPLETE, TrialState.PRUNED)]
    assert len(finished) == 4
    best = study.best_trial
    store = ObjectStore(parse(where, "test"))
    objects = store.sizes()
    for t in finished:  # every trial's run folder is in the bucket, its checkpoint named by key
        folder = f"{where}/trial-{t.number}"
        assert t.user_attrs["checkpoint"] == f"{folder}/best.pt"
        assert {f"{folder}/config.yaml", f"{folder}/metrics.jsonl"} <= set(objects)
        kept = t.number == best.number  # --keep-top 1: the others' weights deleted in the bucket
        assert (f"{folder}/best.pt" in objects) == kept and (f"{folder}/last.pt" in objects) == kept
        assert (tmp_path / "studies" / "s3e2e" / f"trial-{t.number}" / "best.pt").is_file() == kept
    assert study.user_attrs["checkpoints_removed"] == 3
    assert any(uri.startswith(f"{where}/ray/") for uri in objects)  # Ray Tune's own state, there too
    assert python_api.best("s3e2e", db=db)["checkpoint"] == f"{where}/trial-{best.number}/best.pt"
    assert "AWS_SECRET_ACCESS_KEY" not in str(study.user_attrs) and "testing" not in str(study.user_attrs)

    shutil.rmtree(tmp_path / "studies" / "s3e2e")  # the API reads the bucket alone
    settings = ApiSettings(
        db_url=db, storage_root=tmp_path / "studies", object_root=parse(f"s3://{bucket}/studies", "t")
    )
    with live_server(settings) as url:
        download = best_download(url, "s3e2e", store, parse(f"{where}/trial-{best.number}/best.pt", "t"))
        (tmp_path / "best.pt").write_bytes(download.content)
        _model, config = trainer.load_checkpoint(tmp_path / "best.pt")
        assert config.learning_rate == pytest.approx(best.params["learning_rate"])
        # The run config comes from the bucket (the local copies are gone), not the sampled params.
        sent = json.loads(download.headers["x-trial-config"])
        assert sent["max_steps"] == 30 and sent["run_dir"].endswith(f"trial-{best.number}")
        assert httpx.get(f"{url}/studies/s3e2e/trials/{best.number}/config", timeout=60).json() == sent

    _dyneval_of(tmp_path, db, f"{where}/trial-{best.number}/best.pt", bucket)
    _finalize_from_the_bucket(tmp_path, db, where, best.number, settings)

    elsewhere = ApiSettings(
        db_url=db, storage_root=tmp_path / "studies", object_root=parse(f"s3://{bucket}/other", "t")
    )
    with live_server(elsewhere) as url:  # a server whose root does not hold the study serves nothing of it
        refused = httpx.get(f"{url}/studies/s3e2e/best/checkpoint", timeout=60)
        assert refused.status_code == 404 and "storage_path" in refused.text

    # A key outside the study's prefix, though in the bucket and inside the server's root, is refused.
    (tmp_path / "other.pt").write_bytes(b"not this study's")
    store.upload(tmp_path / "other.pt", parse(f"s3://{bucket}/studies/other/best.pt", "t"))
    with sqlite3.connect(tmp_path / "studies.db") as conn:  # the database is data: anyone may write it
        conn.execute(
            "UPDATE trial_user_attributes SET value_json = ? WHERE key = 'checkpoint' AND trial_id = "
            "(SELECT trial_id FROM trials WHERE number = ?)",
            (json.dumps(f"s3://{bucket}/studies/other/best.pt"), best.number),
        )
    with live_server(settings) as url:
        refused = httpx.get(f"{url}/studies/s3e2e/best/checkpoint", timeout=60)
        assert refused.status_code == 404
        assert "checkpoint: " in refused.text and "outside the study's prefix" in refused.text
        assert "not this study" not in refused.text


def _dyneval_of(tmp_path, db: str, checkpoint: str, bucket: str) -> None:
    """A dynamic-evaluation study of an `s3://` checkpoint, itself kept in the bucket: the driver
    and the trial each download the model; the trial evaluates it, trains nothing, and its run
    folder (the evaluation's config.yaml) is copied to the study's prefix."""
    where = f"s3://{bucket}/studies/dyn"
    args = ["--name", "dyn", "--space", "dyneval", "--checkpoint", checkpoint, "--trials", "1"]
    args += ["--parallel", "1", "--db", db, "--seed", "2", "--storage", where]
    proc, log = launch(tmp_path, [*args, "--set", "dyneval_stats_batches=5"])
    assert finish(proc, log, 600) == 0, log.read_text()
    study = load_study("dyn", db)
    (trial,) = study.trials
    assert trial.state == TrialState.COMPLETE and math.isfinite(trial.value), trial.user_attrs
    assert trial.user_attrs["best_step"] == 0 and not trial.intermediate_values  # nothing trained
    assert study.user_attrs["spec"]["checkpoint"] == checkpoint
    assert study.user_attrs["dyneval_best"]["checkpoint"] == checkpoint
    assert not list((tmp_path / "studies").rglob("*.pt"))  # the model was never kept locally
    assert set(ObjectStore(parse(where, "t")).sizes()) >= {f"{where}/trial-0/config.yaml"}  # mirrored


def _finalize_from_the_bucket(tmp_path, db: str, where: str, best: int, settings: ApiSettings) -> None:
    """The API's finalize of the study with its local run folders gone, as a REST client starts it:
    the `rnntune finalize` it launches (with the server's AWS_* variables) reads the config from
    the bucket and uploads the rerun's folder to PREFIX/finalize/; the report has its mean."""
    with live_server(settings) as url, httpx.Client(base_url=url, timeout=30) as client:
        started = client.post("/studies/s3e2e/finalize", json={"top": 1, "seeds": 1})
        assert started.status_code == 202, started.text
        deadline = time.monotonic() + 600
        while (report := client.get("/studies/s3e2e/finalize").json())["process"]["running"]:
            assert time.monotonic() < deadline, report
            time.sleep(1.0)
    log = Path(report["process"]["log"]).read_text()
    assert report["state"] == "finished" and report["process"]["returncode"] == 0, log
    assert f"uploaded to {where}/finalize" in log
    (rerun,) = load_study("s3e2e", db).user_attrs["finalize"][str(best)]["reruns"]
    assert math.isfinite(rerun["val_loss"]) and "error" not in rerun
    uploaded = ObjectStore(parse(where, "t")).sizes(parse(f"{where}/finalize", "t"))
    assert any(uri.endswith("/best.pt") for uri in uploaded), uploaded


def test_a_trial_whose_worker_is_killed_resumes_on_a_node_without_its_folder(tmp_path, bucket):
    """The trial process stopped mid-run, its local run folder deleted (the retry lands on another
    node), then killed: Ray's retry downloads the copy in the bucket and resumes from it, so the
    run's metrics.jsonl goes on from the lines the killed attempt had uploaded up to its uploaded
    last.pt, byte for byte (a run started afresh would have measured its own `elapsed_s`), and the
    study's curve has every step, however the stop fell between a checkpoint and its report."""
    db = f"sqlite:///{tmp_path / 'studies.db'}"
    where = f"s3://{bucket}/studies/kill"
    args = ["--name", "kill", "--trials", "1", "--parallel", "1", "--db", db, "--seed", "3"]
    args += ["--storage", where, "--max-retries", "1", "--scheduler", "none"]
    proc, log = launch(tmp_path, [*args, *tiny_set_args(max_steps=200)])
    running: list = []

    def training() -> bool:
        running[:] = [
            t
            for t in trials(db, "kill")
            if t.state == TrialState.RUNNING
            and t.user_attrs.get("pid")
            and 20 <= max(t.intermediate_values, default=0) < 150
        ]
        return bool(running)

    wait_until(training, proc, log, 300)
    pid = int(running[0].user_attrs["pid"])
    os.kill(pid, signal.SIGSTOP)  # nothing more is written or uploaded while the folder goes
    shutil.rmtree(tmp_path / "studies" / "kill" / f"trial-{running[0].number}")
    store = ObjectStore(parse(where, "test"))
    metrics = parse(f"{where}/trial-{running[0].number}/metrics.jsonl", "t")
    uploaded = b"".join(store.chunks(metrics))
    store.download(parse(f"{where}/trial-{running[0].number}/last.pt", "t"), tmp_path / "last.pt")
    resumes_at = saved_header(tmp_path / "last.pt")[1]
    kept = b"".join(line for line in uploaded.splitlines(True) if json.loads(line)["step"] <= resumes_at)
    os.kill(pid, signal.SIGKILL)
    assert finish(proc, log, 600) == 0, log.read_text()

    study = load_study("kill", db)
    (done,) = [t for t in study.trials if t.state == TrialState.COMPLETE]
    assert any(t.state == TrialState.FAIL and t.user_attrs.get("needs_retry") for t in study.trials)
    assert sorted(done.intermediate_values) == list(range(10, 201, 10))
    final = b"".join(store.chunks(metrics))
    assert kept.count(b"\n") >= 2 and final.startswith(kept) and len(final) > len(kept)
