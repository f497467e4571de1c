"""Shared fixtures: a SQLite study database with fixed studies, and a live uvicorn server on it."""

from __future__ import annotations

import os
from pathlib import Path

import optuna
import pytest
import yaml

from tests.tuner.api.fixtures import BEST, FIXED_TRIALS, live_server, make_study
from tuner.api import ApiSettings

optuna.logging.set_verbosity(optuna.logging.WARNING)

CHECKPOINT_BYTES = b"not a real torch checkpoint, but bytes whose SHA-256 we know" * 100


@pytest.fixture(scope="package")
def study_env(tmp_path_factory) -> dict:
    """studies: `fixed` (hand-checked neighbourhood, checkpoint inside its storage), `escape` (best
    checkpoint outside its storage), `linked` (a symlink inside pointing outside), `empty`."""
    root = tmp_path_factory.mktemp("api")
    storage = root / "storage"
    db_url = f"sqlite:///{root / 'studies.db'}"

    run_dir = storage / "fixed" / "trial0"
    run_dir.mkdir(parents=True)
    (run_dir / "best.pt").write_bytes(CHECKPOINT_BYTES)
    (run_dir / "config.yaml").write_text(yaml.safe_dump({"cell": "lstm", **BEST}))
    make_study(db_url, "fixed", storage / "fixed", checkpoints={0: str(run_dir / "best.pt")})

    outside = root / "outside.pt"
    outside.write_bytes(b"secret")
    make_study(db_url, "escape", storage / "escape", checkpoints={0: str(outside)})
    (storage / "linked").mkdir(parents=True)
    os.symlink(outside, storage / "linked" / "best.pt")
    make_study(db_url, "linked", storage / "linked", checkpoints={0: str(storage / "linked" / "best.pt")})
    make_study(
        db_url, "empty", storage / "empty", trials=[t for t in FIXED_TRIALS if t[2] is None], status="created"
    )
    return {"db_url": db_url, "storage": storage, "root": root}


@pytest.fixture(scope="package")
def server(study_env) -> str:
    """Base URL of a live, token-less API over `study_env`."""
    settings = ApiSettings(db_url=study_env["db_url"], storage_root=Path(study_env["storage"]))
    with live_server(settings) as url:
        yield url
