"""`objectives` and `constraints` on every path that makes a spec: the command line's flags,
Compose's environment variables (`remote create`), the REST body, the Python API; each gives the
same stored spec and a study with one direction per objective."""

from __future__ import annotations

import argparse

import httpx
import optuna

from tests.tuner.api.fixtures import live_server
from tuner import python_api
from tuner.api import ApiSettings
from tuner.commands.spec_options import add_spec_options, given
from tuner.spec.sweep_spec import validate

EXPECTED = {"objectives": ["val_loss", "num_params", "tokens_per_s"], "constraints": ["num_params<=24000000"]}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser()
    add_spec_options(parser)
    return parser


def test_flags_and_environment_give_the_same_spec():
    flags = _parser().parse_args(
        ["--objectives", "val_loss,num_params,tokens_per_s", "--constraints", "num_params<=24M"]
    )
    from_flags = validate({"space": "tiny", **given(flags)})
    env = {
        "RNNTUNE_OBJECTIVES": "val_loss, num_params, tokens_per_s",
        "RNNTUNE_CONSTRAINTS": "num_params<=24e6",
    }
    from_env = validate({"space": "tiny", **given(_parser().parse_args([]), env)})
    for spec in (from_flags, from_env):
        assert {k: getattr(spec, k) for k in EXPECTED} == EXPECTED


def test_rest_and_python_create_a_study_with_its_directions(tmp_path):
    db = f"sqlite:///{tmp_path / 's.db'}"
    with live_server(ApiSettings(db_url=db, storage_root=tmp_path / "store")) as url:
        body = {"name": "rest", "space": "tiny", **EXPECTED}
        assert httpx.post(f"{url}/studies", json=body, timeout=60).status_code == 201
        bad = httpx.post(
            f"{url}/studies", json={**body, "name": "bad", "constraints": ["num_params<24"]}, timeout=60
        )
        assert bad.status_code == 422 and "constraints" in bad.text and "NAME<=BOUND" in bad.text
    python_api.create("py", db=db, space="tiny", objectives=["val_loss", "tokens_per_s"])
    directions = {
        s.study_name: [d.name for d in s.directions]
        for s in optuna.get_all_study_summaries(db, include_best_trial=False)
    }
    assert directions == {"rest": ["MINIMIZE", "MINIMIZE", "MAXIMIZE"], "py": ["MINIMIZE", "MAXIMIZE"]}
