"""`rnntune remote` against a live API over real HTTP (uvicorn on a SQLite study database)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import optuna
import pytest
import yaml

from tests.postgres import free_port
from tests.tuner.api.fixtures import live_server, make_study
from tuner.api import ApiSettings
from tuner.cli import main
from tuner.spec import DEFAULT_PARALLEL, DEFAULT_SPACE, DEFAULT_TRIALS, SweepSpec

TOKEN = "write-token-remote"
CHECKPOINT = b"checkpoint bytes of the best trial " * 50


@pytest.fixture(scope="module")
def api(tmp_path_factory) -> dict:
    """A token-guarded API with one finished study (`done`, its best checkpoint on disk)."""
    root = tmp_path_factory.mktemp("remote")
    db_url = f"sqlite:///{root / 'studies.db'}"
    run_dir = root / "storage" / "done" / "trial0"
    run_dir.mkdir(parents=True)
    (run_dir / "best.pt").write_bytes(CHECKPOINT)
    (run_dir / "config.yaml").write_text(yaml.safe_dump({"cell": "lstm"}))
    make_study(db_url, "done", root / "storage" / "done", checkpoints={0: str(run_dir / "best.pt")})
    settings = ApiSettings(db_url=db_url, storage_root=root / "storage", api_token=TOKEN)
    with live_server(settings) as url:
        yield {"url": url, "db_url": db_url, "root": root}


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "RNNTUNE_API_URL",
        "RNNTUNE_API_TOKEN",
        "RNNTUNE_API_READ_TOKEN",
        "RNNTUNE_STUDY",
        "RNNTUNE_SPACE",
        "RNNTUNE_TRIALS",
        "RNNTUNE_PARALLEL",
        "RNNTUNE_SAMPLER",
        "RNNTUNE_SCHEDULER",
        "RNNTUNE_SEED",
        "RNNTUNE_BUDGET",
        "RNNTUNE_SET",
        "RNNTUNE_RANGES",
    ):
        monkeypatch.delenv(name, raising=False)


def remote(api: dict, *args: str, token: str | None = TOKEN) -> int:
    return main(["remote", "--api", api["url"], *(["--token", token] if token else []), *args])


def study_attrs(api: dict, name: str) -> dict:
    return optuna.load_study(study_name=name, storage=api["db_url"]).user_attrs


def test_create_sends_the_options_typed_by_the_trainers_parser(api: dict, capsys) -> None:
    code = remote(
        api,
        "create",
        "typed",
        "--space",
        "tiny",
        "--trials",
        "3",
        "--parallel",
        "1",
        "--sampler",
        "random",
        "--scheduler",
        "none",
        "--seed",
        "5",
        "--budget",
        "2.5",
        "--set",
        "max_steps=30",
        "--set",
        "device=cpu",
        "--set",
        "l2_penalty=1e-5",
        "--set",
        "max_eval_tokens=2000",
        "--range",
        "learning_rate=0.001:0.002:log",
    )
    assert code == 0, capsys.readouterr().err
    spec = SweepSpec.of(study_attrs(api, "typed"))
    assert (spec.n_trials, spec.parallel, spec.sampler, spec.space) == (
        3,
        1,
        "random",
        "tiny",
    )
    assert "created study typed" in capsys.readouterr().out
    assert spec.seed == 5 and spec.scheduler == "none" and spec.budget == 2.5
    assert spec.overrides.ranges == {"learning_rate": "0.001:0.002:log"}
    fixed = spec.overrides.set
    assert (fixed["max_steps"], fixed["device"], fixed["max_eval_tokens"]) == (30, "cpu", 2000)
    assert float(fixed["l2_penalty"]) == 1e-5


def test_create_defaults_come_from_the_environment_then_tuner_defaults(api: dict, monkeypatch) -> None:
    assert remote(api, "create", "plain") == 0
    spec = SweepSpec.of(study_attrs(api, "plain"))
    assert (spec.space, spec.n_trials, spec.parallel) == (
        DEFAULT_SPACE,
        DEFAULT_TRIALS,
        DEFAULT_PARALLEL,
    )
    monkeypatch.setenv("RNNTUNE_STUDY", "from-env")
    monkeypatch.setenv("RNNTUNE_TRIALS", "5")
    monkeypatch.setenv("RNNTUNE_SAMPLER", "")  # empty .env entry: the default
    assert remote(api, "create") == 0
    spec = SweepSpec.of(study_attrs(api, "from-env"))
    assert spec.n_trials == 5 and spec.parallel == DEFAULT_PARALLEL


def test_an_existing_study_is_reused_only_with_exist_ok(api: dict, capsys) -> None:
    assert remote(api, "create", "again", "--trials", "2") == 0
    assert remote(api, "create", "again", "--trials", "2") == 2
    assert "--exist-ok" in capsys.readouterr().err
    assert remote(api, "create", "again", "--trials", "2", "--exist-ok") == 0


def test_refusals_name_the_problem(api: dict, capsys) -> None:
    assert remote(api, "create", "no-token", token=None) == 2
    assert "401" in capsys.readouterr().err
    assert remote(api, "create", "bad-trials", "--trials", "0") == 2
    assert "n_trials" in capsys.readouterr().err
    assert remote(api, "create", "bad-set", "--set", "max_steps") == 2
    assert "name=value" in capsys.readouterr().err
    assert remote(api, "create", "bad-range", "--range", "learning_rate") == 2
    assert "NAME=LOW:HIGH" in capsys.readouterr().err
    assert remote(api, "stop", "done") == 2  # nothing running
    assert "409" in capsys.readouterr().err


def test_best_downloads_the_checkpoint_with_its_sha256_checked(api: dict, tmp_path: Path, capsys) -> None:
    target = tmp_path / "best.pt"
    assert remote(api, "best", "done", "--checkpoint", str(target)) == 0
    out = capsys.readouterr()
    assert target.read_bytes() == CHECKPOINT
    assert hashlib.sha256(CHECKPOINT).hexdigest() in out.err
    assert '"number": 0' in out.out
    assert not list(tmp_path.glob("*.part"))


def test_watch_ends_with_the_studys_outcome(api: dict, capsys) -> None:
    assert remote(api, "watch", "done") == 0
    assert "done finished" in capsys.readouterr().out
    assert remote(api, "watch", "missing") == 2


def test_an_unreachable_api_is_exit_3(capsys) -> None:
    assert main(["remote", "--api", f"http://127.0.0.1:{free_port()}", "watch", "x"]) == 3
    assert "cannot reach the API" in capsys.readouterr().err
