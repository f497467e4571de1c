"""Dynamic evaluation tuned on a trained model (thesis §4.5, Table 2.6; Mogrifier paper App. A):
`rnntune sweep --space dyneval --checkpoint RUN/best.pt` evaluates the model in every trial and
trains nothing; creation refuses what would not be such a study, naming `checkpoint`."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import torch
from optuna.trial import TrialState

from tests.trainer.test_checkpoint_safety import Payload
from tests.tuner.dyneval_checkpoint import quick_checkpoint, small_checkpoint
from trainer import load_checkpoint
from trainer.data import batchify, load_corpus
from trainer.dyneval import SETTINGS
from trainer.evaluate import evaluate
from tuner.cli import main
from tuner.errors import StudyError, StudyNotFoundError
from tuner.space import load_space
from tuner.spec import SweepSpec
from tuner.storage.study import load_study
from tuner.sweeps.dyneval.study import check
from tuner.sweeps.study.create import create_study


@pytest.fixture(scope="module")
def quick(tmp_path_factory) -> Path:
    return quick_checkpoint(tmp_path_factory.mktemp("quick"))


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.slow
def test_a_dyneval_study_evaluates_the_checkpoint_and_trains_nothing(tmp_path, ray_cluster):
    checkpoint = small_checkpoint(tmp_path / "model")
    digest = _digest(checkpoint)
    model, cfg = load_checkpoint(checkpoint)
    assert cfg.max_eval_tokens is not None
    valid = load_corpus(cfg).valid[: cfg.max_eval_tokens + 1]  # the tokens a trial reads
    static = evaluate(model, batchify(valid, 1), cfg.bptt)[0]
    db = f"sqlite:///{tmp_path / 'studies.db'}"
    store = tmp_path / "store"
    argv = ["sweep", "--space", "dyneval", "--checkpoint", str(checkpoint), "--trials", "4"]
    argv += ["--parallel", "2", "--seed", "3", "--db", db, "--storage", str(store), "--name", "dv"]
    assert main(argv) == 0

    study = load_study("dv", db)
    trials = study.get_trials()
    assert [t.state for t in trials] == [TrialState.COMPLETE] * 4
    for t in trials:
        assert set(t.params) == set(SETTINGS)
        assert t.user_attrs["best_step"] == 0 and not t.intermediate_values  # no training step
        assert t.user_attrs["dyneval_val_loss"] == t.value and t.user_attrs["wall_time_s"] > 0
        assert "checkpoint" not in t.user_attrs  # retention (--keep-top) never sees the model
    assert not list(store.rglob("*.pt"))  # no trial wrote a checkpoint (last.pt, best.pt)
    assert _digest(checkpoint) == digest
    assert study.best_value < static
    assert study.user_attrs["dyneval_best"] == {
        "params": study.best_params,
        "value": study.best_value,
        "trial": study.best_trial.number,
        "checkpoint": str(checkpoint),
    }


def test_the_checkpoint_is_stored_absolute_and_the_space_tunes_table_2_6(quick, tmp_path, monkeypatch):
    monkeypatch.chdir(quick.parent)
    db = f"sqlite:///{tmp_path / 'studies.db'}"
    study = create_study(
        "dv", storage_url=db, space="dyneval", checkpoint="best.pt", storage_path=tmp_path / "dv"
    )
    assert SweepSpec.of(study.user_attrs).checkpoint == str(quick)
    space = study.user_attrs["space_def"]
    assert tuple(space["params"]) == SETTINGS
    _, cfg = load_checkpoint(quick)
    assert space["fixed"] == {"dyneval": True, "dyneval_stats_batches": 500, "data_dir": str(cfg.data_dir)}


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"space": "dyneval"}, "checkpoint: space dyneval tunes dynamic-evaluation settings"),
        (
            {"space": "tiny", "overrides": {"ranges": {"dyneval_learning_rate": "1e-6:1e-3:log"}}},
            "checkpoint: space tiny tunes dynamic-evaluation settings",
        ),
        (
            {"space": "dyneval", "checkpoint": "MISSING"},
            "checkpoint: .* is not a readable rnntune checkpoint",
        ),
        (
            {"space": "dyneval", "checkpoint": "NOT_A_MODEL"},
            "checkpoint: .* is not a readable rnntune checkpoint",
        ),
        ({"space": "tiny", "checkpoint": "QUICK"}, "checkpoint: a study of a trained model tunes only"),
        (
            {"space": "dyneval", "checkpoint": "QUICK", "overrides": {"set": {"hidden_size": 8}}},
            "checkpoint: the model's settings come from its checkpoint; space dyneval fixes hidden_size",
        ),
    ],
)
def test_creation_refusals_name_checkpoint(fields, message, quick, tmp_path):
    not_a_model = tmp_path / "notes.pt"
    not_a_model.write_text("not a checkpoint")
    paths = {"MISSING": str(tmp_path / "missing.pt"), "NOT_A_MODEL": str(not_a_model), "QUICK": str(quick)}
    if "checkpoint" in fields:
        fields = {**fields, "checkpoint": paths[fields["checkpoint"]]}
    db = f"sqlite:///{tmp_path / 'studies.db'}"
    with pytest.raises(StudyError, match=message):
        create_study("dv", storage_url=db, storage_path=tmp_path / "dv", **fields)
    with pytest.raises(StudyNotFoundError):
        load_study("dv", db)  # nothing was created


def test_the_sweep_command_refuses_dyneval_without_a_checkpoint(tmp_path, capsys):
    db = f"sqlite:///{tmp_path / 'studies.db'}"
    assert main(["sweep", "--space", "dyneval", "--db", db, "--name", "dv"]) == 2
    assert "checkpoint: space dyneval tunes dynamic-evaluation settings" in capsys.readouterr().err
    assert load_space("dyneval").fixed == {
        "dyneval": True,
        "dyneval_stats_batches": 500,
    }  # lamb: tune_dyneval.sh


def test_a_study_of_a_file_that_is_no_checkpoint_answers_the_same_whatever_the_file(tmp_path: Path):
    """A pickled payload, a text file and a missing file get one answer (the path aside), and the
    payload never runs: what a client names learns it nothing about the file."""
    marker = tmp_path / "ran"
    torch.save({"format_version": 1, "x": Payload(marker)}, tmp_path / "evil.pt")
    (tmp_path / "text.pt").write_text("hello")
    answers = []
    for name in ("evil.pt", "text.pt", "missing.pt"):
        spec = SweepSpec(space="dyneval", checkpoint=str(tmp_path / name))
        with pytest.raises(StudyError) as refused:
            check(spec, load_space("dyneval"))
        answers.append(str(refused.value).replace(name, "FILE"))
    assert len(set(answers)) == 1 and "is not a readable rnntune checkpoint" in answers[0], answers
    assert not marker.exists()
