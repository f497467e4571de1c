"""`--keep-top N` for a study kept in an object store: the weights deleted there (S3 over HTTP)."""

from __future__ import annotations

from optuna.trial import TrialState, create_trial

from tests import s3_server
from tuner.policies.retention import keep_top_objects
from tuner.storage.object_store import ObjectLocation, ObjectStore

s3_endpoint, s3_env, bucket = s3_server.s3_endpoint, s3_server.s3_env, s3_server.bucket  # fixtures


def _trial(number, state, value, run_dir):
    t = create_trial(
        state=state,
        value=value,
        user_attrs={"run_dir": run_dir},
        intermediate_values={} if state == TrialState.RUNNING else {25: 9.0},
    )
    t.number = number
    return t


def test_the_weights_of_trials_outside_the_best_are_deleted_under_the_prefix_only(tmp_path, bucket):
    store = ObjectStore(ObjectLocation(bucket, "studies/x"))
    outside = ObjectStore(ObjectLocation(bucket, "studies"))
    for name, size in (("best.pt", 1000), ("last.pt", 1000), ("config.yaml", 10)):
        (tmp_path / name).write_bytes(b"x" * size)
        for n in range(4):
            store.upload(tmp_path / name, store.root.child(f"trial-{n}", name))
        outside.upload(tmp_path / name, outside.root.child(name))  # the parent prefix: never touched
    local = tmp_path / "scratch"
    (local / "trial-0").mkdir(parents=True)
    (local / "trial-0" / "best.pt").write_bytes(b"local copy")
    trials = [
        _trial(0, TrialState.COMPLETE, 4.5, str(local / "trial-0")),
        _trial(1, TrialState.COMPLETE, 4.1, "/elsewhere/trial-1"),
        _trial(2, TrialState.RUNNING, None, "/elsewhere/trial-2"),  # may resume: kept
        _trial(3, TrialState.PRUNED, None, "/x/.."),  # no plain folder name: no key derived
    ]
    report, removed = keep_top_objects(trials, 1, store, local)
    assert report.kept == (1,) and [t.number for t in removed] == [0] and report.freed_bytes == 2000
    left = store.sizes()
    assert f"s3://{bucket}/studies/x/trial-0/best.pt" not in left
    assert f"s3://{bucket}/studies/x/trial-0/config.yaml" in left
    assert f"s3://{bucket}/studies/x/trial-3/best.pt" in left
    assert not (local / "trial-0" / "best.pt").exists()
    assert set(outside.sizes()) >= {f"s3://{bucket}/studies/{n}" for n in ("best.pt", "last.pt")}
    assert report.used_bytes == 10 + 2010 + 2010  # trials 0, 1, 2 (trial 3's folder is no key)
    again, _ = keep_top_objects(trials, 1, store, local)
    assert again.removed == () and again.freed_bytes == 0


def test_a_folder_holding_an_object_a_dyneval_study_evaluates_keeps_its_weights(tmp_path, bucket):
    store = ObjectStore(ObjectLocation(bucket, "studies/x"))
    (tmp_path / "best.pt").write_bytes(b"w")
    for n in range(3):
        store.upload(tmp_path / "best.pt", store.root.child(f"trial-{n}", "best.pt"))
    trials = [_trial(n, TrialState.COMPLETE, 4.0 + n, f"/node/trial-{n}") for n in range(3)]
    pinned = {
        f"s3://{bucket}/studies/x/trial-2/best.pt",
        tmp_path / "trial-1" / "best.pt",
    }  # a local path pins no key
    _, removed = keep_top_objects(trials, 1, store, tmp_path, pinned)
    assert [t.number for t in removed] == [1]
    assert set(store.sizes()) == {f"s3://{bucket}/studies/x/trial-{n}/best.pt" for n in (0, 2)}
