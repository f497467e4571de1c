"""`procedure` on the command-line and REST paths: `paper` takes a space's `sweep:` block whole
(sampler, trials) with no early stopping and no default step budget; a contradicting scheduler,
sampler or early-stopping setting is refused naming the field; `diverged_at` reads back through
the API. (Every path carrying the field at all: test_paths.py.)"""

from __future__ import annotations

import httpx
import optuna
import pytest
from optuna.distributions import FloatDistribution
from optuna.trial import TrialState, create_trial

from tests.tuner.api.fixtures import live_server
from tuner.api import ApiSettings
from tuner.cli import build_parser
from tuner.commands.spec_options import given
from tuner.errors import StudyError
from tuner.spec import DEFAULT_BUDGET, SweepSpec, default_budget
from tuner.sweeps.study.create import create_study

POOL = "circling_back_ptb_char_mogrifier_rlstm"  # `sweep:` sampler gp (Circling Back §7)
EARLY = "circling_back_enwik8_mogrifier_rlstm"  # random, 60, and stopped early (Circling Back §5, §7)


def _created(tmp_path, argv: list[str]) -> SweepSpec:
    fields = given(build_parser().parse_args(["sweep", *argv]))
    url = f"sqlite:///{tmp_path / 's.db'}"
    study = create_study("s", fields, storage_url=url, storage_path=tmp_path / "s")
    return SweepSpec.of(study.user_attrs)


def test_paper_on_the_command_line_takes_the_space_s_block_whole(tmp_path):
    spec = _created(tmp_path, ["--procedure", "paper", "--space", POOL])
    assert (spec.procedure, spec.sampler, spec.scheduler) == ("paper", "gp", "none")
    (tmp_path / "early").mkdir()
    spec = _created(tmp_path / "early", ["--procedure", "paper", "--space", EARLY])
    assert (spec.procedure, spec.sampler, spec.n_trials, spec.scheduler) == (
        "paper",
        "random",
        60,
        "adaptive",
    )


def test_paper_takes_early_stopping_settings_where_the_paper_stopped_early(tmp_path):
    argv = ["--procedure", "paper", "--space", EARLY, "--scheduler", "asha", "--grace-steps", "2050"]
    spec = _created(tmp_path, argv)
    assert (spec.scheduler, spec.grace_steps) == ("asha", 2050)


def test_rnntune_takes_the_block_s_sampler_and_trials_but_still_prunes(tmp_path):
    spec = _created(tmp_path, ["--space", EARLY])
    assert (spec.procedure, spec.sampler, spec.n_trials, spec.scheduler) == (
        "rnntune",
        "random",
        60,
        "adaptive",
    )


def test_an_explicit_trial_count_wins_over_the_paper_s(tmp_path):
    spec = _created(tmp_path, ["--procedure", "paper", "--space", POOL, "--trials", "5"])
    assert (spec.sampler, spec.n_trials, spec.scheduler) == ("gp", 5, "none")


@pytest.mark.parametrize(
    "argv, field",
    [
        (["--scheduler", "asha"], "scheduler"),
        (["--sampler", "tpe"], "sampler"),
        (["--grace-steps", "100"], "grace_steps"),
        (["--brackets", "2"], "brackets"),
    ],
)
def test_a_contradiction_of_the_paper_s_procedure_is_refused_by_name(tmp_path, argv, field):
    with pytest.raises(StudyError, match=rf"\b{field}: .*procedure paper"):
        _created(tmp_path, ["--procedure", "paper", "--space", POOL, *argv])
    with pytest.raises(KeyError):
        optuna.load_study(study_name="s", storage=f"sqlite:///{tmp_path / 's.db'}")


def test_the_sweep_command_exits_2_naming_the_field(tmp_path, capsys):
    args = build_parser().parse_args(
        ["sweep", "--procedure", "paper", "--scheduler", "median", "--db", f"sqlite:///{tmp_path / 's.db'}"]
    )
    assert args.func(args) == 2
    assert "scheduler: " in capsys.readouterr().err


def test_paper_sets_no_default_step_budget():
    assert default_budget(None, None) == DEFAULT_BUDGET  # the embedded default
    assert default_budget(None, None, "paper") is None  # every trial trains in full
    assert default_budget(None, 3.0, "paper") == 3.0  # a budget given still ends the study


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    root = tmp_path_factory.mktemp("procedure")
    url = f"sqlite:///{root / 's.db'}"
    kept = optuna.create_study(study_name="kept", storage=url)
    kept.add_trial(
        create_trial(
            state=TrialState.COMPLETE,
            params={"learning_rate": 0.003},
            distributions={"learning_rate": FloatDistribution(0.001, 0.004, log=True)},
            value=4.1,
            intermediate_values={20: 4.5, 40: 4.1},
            user_attrs={"diverged_at": 60, "best_step": 40},
        )
    )
    with live_server(ApiSettings(db_url=url, storage_root=root / "storage")) as base:
        yield base, url


def test_rest_takes_the_space_s_block_under_paper(api):
    base, url = api
    response = httpx.post(
        f"{base}/studies", json={"name": "pool", "space": POOL, "procedure": "paper"}, timeout=60
    )
    assert response.status_code == 201, response.text
    spec = SweepSpec.of(optuna.load_study(study_name="pool", storage=url).user_attrs)
    assert (spec.procedure, spec.sampler, spec.scheduler) == ("paper", "gp", "none")


@pytest.mark.parametrize(
    "change, needle",
    [
        ({"scheduler": "asha"}, "scheduler: procedure paper trains every trial"),
        ({"sampler": "tpe", "space": POOL}, "sampler: procedure paper uses the space's own sampler 'gp'"),
        ({"reduction_factor": 4}, "reduction_factor: early-stopping settings; procedure paper"),
    ],
)
def test_rest_refuses_a_contradiction_naming_the_field(api, change, needle):
    base, _ = api
    body = {"name": "contradicted", "procedure": "paper", **change}
    response = httpx.post(f"{base}/studies", json=body, timeout=60)
    assert response.status_code == 422, response.text
    assert needle in response.json()["detail"]
    assert httpx.get(f"{base}/studies/contradicted").status_code == 404


def test_the_api_shows_where_a_kept_trial_diverged(api):
    base, _ = api
    trial = httpx.get(f"{base}/studies/kept/trials/0").json()
    assert (trial["state"], trial["value"], trial["diverged_at"]) == ("COMPLETE", 4.1, 60)
    listed = httpx.get(f"{base}/studies/kept/trials").json()["items"]
    assert [t["diverged_at"] for t in listed] == [60]
