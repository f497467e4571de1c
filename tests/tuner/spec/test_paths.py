"""Every `SweepSpec` field has a path from each front door: `rnntune sweep`, `POST /studies`,
`rnntune remote create`, `rnntune up` and Compose's settings; it is stored with the study and
survives `--resume` (and so REST `/start`, which runs `rnntune sweep --resume NAME`).

One parametrised test over the spec's fields: a new field without a path fails it. `checkpoint`
is only valid with a space that tunes dynamic evaluation: its case uses a real small checkpoint
(the `model` fixture) and the `dyneval` space.
"""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import optuna
import pytest
from optuna.trial import TrialState, create_trial

from tests.tuner.api.fixtures import live_server
from tests.tuner.dyneval_checkpoint import quick_checkpoint
from tuner.api import ApiSettings
from tuner.cli import build_parser
from tuner.commands.remote import Remote, create_body
from tuner.commands.spec_options import given
from tuner.errors import InvalidInput
from tuner.spec import RESUME_SAFE, SweepSpec, env_name, flag_name
from tuner.sweeps.drive.run import run_sweep
from tuner.sweeps.study.create import create_study

ROOT = Path(__file__).resolve().parents[3]
# Stands for the `model` fixture's path: a checkpoint must exist and load.
CHECKPOINT = "CHECKPOINT"
# A value other than the default for each field, as typed on a command line, and as stored.
VALUES: dict[str, tuple[list[str], object]] = {
    "space": (["reverse_copy"], "reverse_copy"),
    "overrides": (["--set", "max_steps=150", "--range", "learning_rate=0.001:0.003"], None),
    "procedure": (["paper"], "paper"),
    "sampler": (["tpe"], "tpe"),
    "objectives": (["val_loss,num_params:maximize"], ["val_loss", "num_params:maximize"]),
    "constraints": (["num_params<=24000000,tokens_per_s>=5"], ["num_params<=24000000", "tokens_per_s>=5"]),
    "n_trials": (["7"], 7),
    "parallel": (["3"], 3),
    "cpus_per_trial": (["0.5"], 0.5),
    "gpus_per_trial": (["0.25"], 0.25),
    "max_retries": (["5"], 5),
    "scheduler": (["median"], "median"),
    "grace_steps": (["75"], 75),
    "perturbation_interval": (["50"], 50),
    "reduction_factor": (["4"], 4),
    "brackets": (["2"], 2),
    "patience": (["5"], 5),
    "min_improvement": (["0.01"], 0.01),
    "max_hours": (["2.5"], 2.5),
    "budget": (["3.0"], 3.0),
    "budget_hours": (["0.5"], 0.5),
    "cost_aware": ([], True),
    "keep_top": (["4"], 4),
    "warm_start": (["donor"], "donor"),
    "seed": (["7"], 7),
    "checkpoint": ([CHECKPOINT], CHECKPOINT),
    "tensorboard": ([], True),
    "mlflow_uri": (["http://127.0.0.1:5000"], "http://127.0.0.1:5000"),
    "mlflow_checkpoints": ([], True),
    "wandb_project": (["lm-sweeps"], "lm-sweeps"),
}
OVERRIDES = {"ranges": {"learning_rate": "0.001:0.003"}, "set": {"max_steps": 150}}
# Fields valid only with another field set too: the fields their case adds (a space other than the
# default, the MLflow server that checkpoints go to).
NEEDS: dict[str, dict[str, str]] = {
    "checkpoint": {"space": "dyneval"},
    "mlflow_checkpoints": {"mlflow_uri": "http://127.0.0.1:5000"},
    "perturbation_interval": {"scheduler": "pbt"},
}


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> str:
    """A small trained checkpoint (absolute, as creation stores it): the value of `checkpoint`."""
    return str(quick_checkpoint(tmp_path_factory.mktemp("model")))


def _argv(field: str, model: str) -> list[str]:
    words = [model if w == CHECKPOINT else w for w in VALUES[field][0]]
    return words if field == "overrides" else [flag_name(field), *words]


def _needs_argv(field: str) -> list[str]:
    return [word for name, value in NEEDS.get(field, {}).items() for word in (flag_name(name), value)]


def _expected(field: str, model: str) -> object:
    value = VALUES[field][1]
    return OVERRIDES if field == "overrides" else model if value == CHECKPOINT else value


def _stored(spec: SweepSpec, field: str) -> object:
    value = getattr(spec, field)
    return value.model_dump() if field == "overrides" else value


def test_every_field_has_a_value_here():
    assert set(VALUES) == set(SweepSpec.model_fields)


@pytest.fixture
def db(tmp_path):
    url = f"sqlite:///{tmp_path / 'studies.db'}"
    donor = create_study("donor", storage_url=url, space="tiny", n_trials=2, storage_path=tmp_path / "donor")
    dist = optuna.distributions.FloatDistribution(0.001, 0.004, log=True)
    donor.add_trial(
        create_trial(params={"learning_rate": 0.002}, distributions={"learning_rate": dist}, value=5.0)
    )
    return url


@pytest.mark.parametrize("field", sorted(SweepSpec.model_fields))
def test_the_sweep_command_sets_and_stores_it(field, db, model, tmp_path):
    args = build_parser().parse_args(["sweep", *_argv(field, model), *_needs_argv(field)])
    fields = given(args)
    assert fields[field] == _expected(field, model)
    study = create_study("s", fields, storage_url=db, storage_path=tmp_path / "s")
    assert _stored(SweepSpec.of(study.user_attrs), field) == _expected(field, model)


@pytest.mark.parametrize("field", sorted(SweepSpec.model_fields))
def test_up_takes_it(field, model):
    args = build_parser().parse_args(["up", *_argv(field, model)])
    assert given(args)[field] == _expected(field, model)


@pytest.mark.parametrize("field", sorted(SweepSpec.model_fields))
def test_compose_passes_it_to_remote_create(field, model):
    compose = (ROOT / "docker-compose.yml").read_text()
    example = (ROOT / ".env.example").read_text()
    names = ["RNNTUNE_SET", "RNNTUNE_RANGES"] if field == "overrides" else [env_name(field)]
    for name in names:
        assert re.search(rf"^\s+{name}: \${{{name}:-", compose, re.M), f"{name} missing in docker-compose.yml"
        assert re.search(rf"^{name}=", example, re.M), f"{name} missing in .env.example"
    if field == "overrides":
        environ = {"RNNTUNE_SET": "max_steps=150", "RNNTUNE_RANGES": "learning_rate=0.001:0.003"}
    else:
        environ = {env_name(field): [*_argv(field, model), "true"][1]}  # a flag's variable: true
    args = build_parser().parse_args(["remote", "create", "x"])
    assert given(args, environ)[field] == _expected(field, model)


@pytest.fixture(scope="module")
def api(tmp_path_factory, model):
    root = tmp_path_factory.mktemp("api")
    url = f"sqlite:///{root / 'studies.db'}"
    donor = create_study("donor", storage_url=url, space="tiny", n_trials=2, storage_path=root / "donor")
    dist = optuna.distributions.FloatDistribution(0.001, 0.004, log=True)
    donor.add_trial(
        create_trial(params={"learning_rate": 0.002}, distributions={"learning_rate": dist}, value=5.0)
    )
    # The checkpoint's folder, and its corpus (a trained model's data_dir is held to the roots too).
    roots = (Path(model).parent, Path(model).parents[1] / "data")
    # The MLflow server the `mlflow_uri` case names, allowed as an operator would (docs/trackers.md).
    settings = ApiSettings(
        db_url=url, storage_root=root / "storage", data_roots=roots, mlflow_uris=("http://127.0.0.1:5000",)
    )
    with live_server(settings) as base:
        yield base, url


@pytest.mark.parametrize("field", sorted(SweepSpec.model_fields))
def test_rest_and_remote_create_set_and_store_it(field, api, model):
    base, url = api
    name = f"rest-{field.replace('_', '-')}"
    body = {
        "name": name,
        field: _expected(field, model),
        **NEEDS.get(field, {}),
    }
    response = httpx.post(f"{base}/studies", json=body, timeout=60)
    assert response.status_code == 201, response.text
    stored = SweepSpec.of(optuna.load_study(study_name=name, storage=url).user_attrs)
    assert _stored(stored, field) == _expected(field, model)
    argv = ["remote", "--api", base, "create", f"remote-{name}", *_argv(field, model), *_needs_argv(field)]
    sent = create_body(build_parser().parse_args(argv))
    assert sent[field] == _expected(field, model)
    Remote(base).send("POST", "/studies", sent)
    remote = SweepSpec.of(optuna.load_study(study_name=f"remote-{name}", storage=url).user_attrs)
    assert _stored(remote, field) == _expected(field, model)


def _finished_study(db: str, tmp_path: Path) -> optuna.Study:
    """A study with more trials done than it asks for (7 of 1): resuming it, also with `--trials 7`,
    stores the spec and returns without starting Ray."""
    study = create_study("r", storage_url=db, space="tiny", n_trials=1, storage_path=tmp_path / "r")
    dist = optuna.distributions.FloatDistribution(0.001, 0.004, log=True)
    for i in range(7):
        study.add_trial(
            create_trial(
                params={"learning_rate": 0.001 + i / 4000},
                distributions={"learning_rate": dist},
                value=5.0 + i,
                state=TrialState.COMPLETE,
            )
        )
    return study


@pytest.mark.parametrize("field", sorted(SweepSpec.model_fields))
def test_resume_keeps_it_and_changes_only_safe_fields(field, db, model, tmp_path):
    study = _finished_study(db, tmp_path)
    before = SweepSpec.of(study.user_attrs)
    assert run_sweep("r", db, changes={}).status == "finished"  # what REST /start runs
    assert SweepSpec.of(optuna.load_study(study_name="r", storage=db).user_attrs) == before
    args = build_parser().parse_args(["sweep", "--resume", "r", *_argv(field, model), *_needs_argv(field)])
    changes = given(args)
    if field in RESUME_SAFE:
        run_sweep("r", db, changes=changes)
        after = SweepSpec.of(optuna.load_study(study_name="r", storage=db).user_attrs)
        assert _stored(after, field) == _expected(field, model)
    else:
        with pytest.raises(InvalidInput, match=re.escape(flag_name(field))):
            run_sweep("r", db, changes=changes)
        assert SweepSpec.of(optuna.load_study(study_name="r", storage=db).user_attrs) == before
