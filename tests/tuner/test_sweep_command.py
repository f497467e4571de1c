"""`rnntune sweep` argument handling that is decided before Ray starts."""

from __future__ import annotations

from tuner.cli import main


def test_resume_refuses_study_options(tmp_path, capsys):
    db = f"sqlite:///{tmp_path / 'db.sqlite'}"
    assert main(["sweep", "--resume", "x", "--space", "tiny", "--sampler", "tpe", "--db", db]) == 2
    err = capsys.readouterr().err
    assert "--space, --sampler: not allowed with --resume" in err


def test_unknown_study_and_bad_overrides_exit_2(tmp_path, capsys):
    db = f"sqlite:///{tmp_path / 'db.sqlite'}"
    assert main(["sweep", "--resume", "ghost", "--db", db]) == 2
    assert "no study named 'ghost'" in capsys.readouterr().err
    assert main(["sweep", "--db", db, "--name", "bad", "--range", "learning_rate=0.004:0.001"]) == 2
    assert "parameter learning_rate: low (0.004) must be below high (0.001)" in capsys.readouterr().err
    assert main(["sweep", "--db", db, "--name", "bad", "--set", "num_layers=0"]) == 2
    assert "num_layers" in capsys.readouterr().err


def test_missing_dataset_folder_is_refused_before_the_study_exists(tmp_path, capsys):
    db = f"sqlite:///{tmp_path / 'db.sqlite'}"
    code = main(
        ["sweep", "--db", db, "--name", "ptb", "--space", "lstm", "--set", f"data_dir={tmp_path / 'nope'}"]
    )
    assert code == 2
    assert "does not exist; pass --set data_dir=PATH" in capsys.readouterr().err
    assert main(["sweep", "--resume", "ptb", "--db", db]) == 2
    assert "no study named 'ptb'" in capsys.readouterr().err
