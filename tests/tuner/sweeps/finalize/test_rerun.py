"""Noise-aware finalisation: the statistics, the rerun plan and the command's refusals (fast). A real
finalize run, through the API and then `rnntune finalize`, is in tests/tuner/api/test_finalize_api.py."""

from __future__ import annotations

import math
import subprocess
import sys

import optuna
import pytest
import yaml
from optuna.distributions import FloatDistribution
from optuna.trial import TrialState, create_trial

from tuner.storage import study_attrs
from tuner.storage.study import StudyError, load_study
from tuner.sweeps.finalize import rerun as finalize


def test_summarize_mean_sd_gap_and_headline():
    stored = {
        "4": {
            "value": 4.0,
            "params": {"a": 1},
            "reruns": [
                {"seed": 1, "val_loss": 4.0, "test_loss": 4.1},
                {"seed": 2, "val_loss": 4.2, "test_loss": 4.3},
            ],
        },
        "7": {
            "value": 3.9,
            "params": {"a": 2},
            "reruns": [
                {"seed": 1, "val_loss": 4.3},
                {"seed": 2, "val_loss": None, "error": "TrainingDiverged: x"},
            ],
        },
        "9": {"value": 4.5, "params": {"a": 3}, "reruns": []},
    }
    rows = finalize.summarize(stored, word_level=True)
    assert [r["trial"] for r in rows] == [4, 7, 9]  # by rerun mean; none last
    r4, r7, r9 = rows
    # Hand-computed: mean (4.0 + 4.2)/2 = 4.1; sample sd sqrt(((-0.1)² + 0.1²)/1) = sqrt(0.02).
    assert r4["n"] == 2 and r4["val_loss_mean"] == pytest.approx(4.1)
    assert r4["val_loss_sd"] == pytest.approx(math.sqrt(0.02))
    assert r4["gap"] == pytest.approx(0.1)
    assert r4["test_loss_mean"] == pytest.approx(4.2)
    # Perplexity of each rerun, then mean ± sd: exp(4.0) = 54.598, exp(4.2) = 66.686.
    assert r4["headline"] == "ppl"
    assert r4["headline_mean"] == pytest.approx((54.59815 + 66.68633) / 2, rel=1e-6)
    assert r4["headline_sd"] == pytest.approx(abs(66.68633 - 54.59815) / math.sqrt(2), rel=1e-6)
    assert r4["headline_gap"] == pytest.approx(r4["headline_mean"] - 54.59815, rel=1e-6)
    assert (r7["n"], r7["failed"], r7["val_loss_sd"]) == (1, 1, None)  # one value: no sd
    assert r7["gap"] == pytest.approx(0.4)
    assert r9["n"] == 0 and r9["val_loss_mean"] is None and r9["gap"] is None
    assert finalize.best_by_rerun_mean(rows)["trial"] == 4
    bpc = finalize.summarize(stored, word_level=False)[0]
    assert bpc["headline"] == "bpc" and bpc["source_headline"] == pytest.approx(4.0 / math.log(2))
    assert finalize.best_by_rerun_mean(finalize.summarize({"9": stored["9"]}, True)) is None


def test_plan_reruns_the_top_configs_from_their_config_and_skips_done_seeds(tmp_path):
    db = f"sqlite:///{tmp_path / 'db.sqlite'}"
    study = optuna.create_study(study_name="s", storage=db)
    dist = {"learning_rate": FloatDistribution(1e-3, 1e-2, log=True)}
    for number, (state, value) in enumerate(
        [
            (TrialState.COMPLETE, 4.2),
            (TrialState.COMPLETE, 4.0),
            (TrialState.PRUNED, None),
            (TrialState.COMPLETE, 4.5),
        ]
    ):
        run_dir = tmp_path / f"trial-{number}"
        run_dir.mkdir()
        (run_dir / "config.yaml").write_text(
            yaml.safe_dump(
                {
                    "hidden_size": 16,
                    "learning_rate": 0.002 + number / 1000,
                    "seed": 5,
                    "run_dir": str(run_dir),
                }
            )
        )
        study.add_trial(
            create_trial(
                state=state,
                value=value,
                params={"learning_rate": 0.002 + number / 1000},
                distributions=dist,
                user_attrs={"run_dir": str(run_dir)},
                intermediate_values={10: value or 5.0},
            )
        )
    root = tmp_path / "finalize"
    todo = finalize.plan(study, top=2, seeds=2, root=root)
    assert [(j.trial, j.seed) for j in todo] == [(1, 6), (1, 7), (0, 6), (0, 7)]
    first = todo[0]
    assert first.config["learning_rate"] == pytest.approx(0.003) and first.config["hidden_size"] == 16
    assert first.config["run_dir"] == str(root / "trial-1-seed-6")
    trials = study.get_trials()
    finalize.record(study, trials[1], {"seed": 6, "val_loss": 4.1, "run_dir": "x"})
    finalize.record(study, trials[1], {"seed": 7, "val_loss": None, "error": "boom"})
    assert [(j.trial, j.seed) for j in finalize.plan(study, 2, 2, root)] == [(1, 7), (0, 6), (0, 7)]
    finalize.record(study, trials[1], {"seed": 7, "val_loss": 4.3, "run_dir": "y"})  # replaces the failure
    stored = load_study("s", db).user_attrs[study_attrs.FINALIZE]
    assert stored["1"]["value"] == 4.0 and [r["seed"] for r in stored["1"]["reruns"]] == [6, 7]
    assert [r["val_loss"] for r in stored["1"]["reruns"]] == [4.1, 4.3]
    assert [(j.trial, j.seed) for j in finalize.plan(study, 2, 2, root)] == [(0, 6), (0, 7)]


def test_bad_options_name_the_flag_and_range(tmp_path, capsys):
    from tuner.cli import main

    db = f"sqlite:///{tmp_path / 'db.sqlite'}"
    with pytest.raises(SystemExit) as exit_info:
        main(["finalize", "x", "--top", "21", "--db", db])
    assert exit_info.value.code == 2 and "--top must be from 1 to 20, not 21" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["finalize", "x", "--seeds", "0", "--db", db])
    assert "--seeds must be from 1 to 10, not 0" in capsys.readouterr().err
    assert main(["finalize", "nope", "--db", db]) == 2
    assert "no study named 'nope'" in capsys.readouterr().err


def test_a_second_run_is_refused_while_one_is_alive(tmp_path, capsys):
    import socket

    from tuner.cli import main

    db = f"sqlite:///{tmp_path / 'db.sqlite'}"
    study = optuna.create_study(study_name="busy", storage=db)
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        study.set_user_attr(
            study_attrs.FINALIZE_STATUS, {"state": "running", "host": socket.gethostname(), "pid": other.pid}
        )
        assert finalize.live_run(study.user_attrs) == other.pid
        assert main(["finalize", "busy", "--db", db]) == 2
        assert f"already has a finalize run in progress (pid {other.pid})" in capsys.readouterr().err
    finally:
        other.kill()
        other.wait()
    assert finalize.live_run(load_study("busy", db).user_attrs) is None  # dead: a new run may start
    assert main(["finalize", "busy", "--db", db]) == 2
    assert "has no COMPLETE trial to rerun" in capsys.readouterr().err


def _planted(tmp_path, run_dir):
    """A study whose one COMPLETE trial names `run_dir` and whose stored space rebuilds a config."""
    from tuner.space import load_space

    db = f"sqlite:///{tmp_path / 'planted.sqlite'}"
    study = optuna.create_study(study_name="planted", storage=db)
    space = load_space("tiny")
    study_attrs.SPACE_DEF.write(study, space.to_dict())
    study.add_trial(
        create_trial(
            state=TrialState.COMPLETE,
            value=4.0,
            params={"learning_rate": 0.002},
            distributions={"learning_rate": FloatDistribution(1e-3, 4e-3, log=True)},
            user_attrs={"run_dir": str(run_dir)},
        )
    )
    return study


def test_a_planted_run_dir_outside_the_storage_folder_is_not_read(tmp_path):
    """A run_dir stored outside the study's storage folder (a planted row) is ignored: the config is
    rebuilt from the stored space, and the outside config.yaml (data elsewhere) is never used."""
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "config.yaml").write_text(
        yaml.safe_dump({"hidden_size": 8, "data_dir": "/etc", "dataset": "ptb"})
    )
    storage = tmp_path / "storage"
    storage.mkdir()
    study = _planted(tmp_path, outside)
    config = finalize.source_config(study, study.trials[0], storage)
    assert config.get("data_dir") != "/etc" and config["learning_rate"] == pytest.approx(0.002)
    assert str(outside) not in str(config.get("run_dir", ""))


def test_a_config_yaml_that_is_no_trainer_config_is_refused_without_its_content(tmp_path):
    storage = tmp_path / "storage"
    run_dir = storage / "trial-0"
    run_dir.mkdir(parents=True)
    (run_dir / "config.yaml").write_text(
        yaml.safe_dump({"secret_key_name": "secret value", "hidden_size": 8})
    )
    study = _planted(tmp_path, run_dir)
    with pytest.raises(
        StudyError, match=r"trial 0: the config.yaml in its run folder is not a trainer config"
    ) as err:
        finalize.source_config(study, study.trials[0], storage)
    assert "secret" not in str(err.value)
