"""A real tiny study for the finalize tests: `rnntune sweep` as a process, real Ray and SQLite."""

from __future__ import annotations

from pathlib import Path

from tests.tuner.sweep_process import finish, launch, tiny_set_args


def swept_study(cwd: Path, name: str, trials: int = 3, env: dict[str, str] | None = None) -> str:
    """Run a finished sweep of `trials` tiny trials (no early stopping, so all COMPLETE), with `env`
    added to its environment; its DB URL."""
    db = f"sqlite:///{cwd / 'studies.db'}"
    proc, log = launch(
        cwd,
        [
            "--name",
            name,
            "--trials",
            str(trials),
            "--parallel",
            "2",
            "--scheduler",
            "none",
            "--sampler",
            "random",
            "--seed",
            "3",
            "--db",
            db,
            *tiny_set_args(),
        ],
        env=env,
    )
    assert finish(proc, log, 600) == 0, log.read_text()
    return db
