"""`tuner.analysis.export` and `rnntune export` on a real Optuna SQLite study."""

from __future__ import annotations

import io

import optuna
import pandas as pd
import pytest
from optuna.distributions import FloatDistribution
from optuna.trial import TrialState, create_trial

from tuner.analysis.export import encode, study_trials, trials_frame
from tuner.cli import main
from tuner.errors import StudyNotFoundError
from tuner.storage.study import open_storage

optuna.logging.set_verbosity(optuna.logging.WARNING)
DIST = {"learning_rate": FloatDistribution(0.001, 0.004, log=True)}


def _study(url: str) -> optuna.Study:
    study = optuna.create_study(study_name="exp", storage=url, direction="minimize")
    rows = [
        (TrialState.COMPLETE, 4.0, {25: 5.0, 50: 4.5, 200: 4.0}, {"wall_time_s": 12.5}),
        (TrialState.PRUNED, None, {25: 6.0, 50: 5.5}, {"wall_time_s": 3.0}),
        (TrialState.FAIL, None, {}, {"error": "TrainingDiverged: NaN", "needs_retry": True}),
        (TrialState.COMPLETE, 4.2, {25: 5.1, 200: 4.2}, {"retry_of": 2, "wall_time_s": 11.0}),
    ]
    for i, (state, value, curve, attrs) in enumerate(rows):
        study.add_trial(
            create_trial(
                state=state,
                value=value,
                params={"learning_rate": 0.001 + 0.0005 * i},
                distributions=DIST,
                intermediate_values=curve,
                user_attrs=attrs,
            )
        )
    return study


def frame_of(url: str, name: str = "exp") -> pd.DataFrame:
    return trials_frame(study_trials(open_storage(url), name))


def test_one_row_per_trial_with_step_reached_and_retry_links(tmp_path):
    url = f"sqlite:///{tmp_path / 's.db'}"
    _study(url)
    frame = frame_of(url)
    assert frame["number"].tolist() == [0, 1, 2, 3]
    assert frame["state"].tolist() == ["COMPLETE", "PRUNED", "FAIL", "COMPLETE"]
    assert frame["step_reached"].tolist()[:2] == [200, 50] and pd.isna(frame["step_reached"][2])
    assert frame["n_evaluations"].tolist() == [3, 2, 0, 2]
    assert pd.isna(frame["retry_of"][0]) and frame["retry_of"][3] == 2
    assert frame["wall_time_s"][0] == 12.5
    assert frame["params_learning_rate"].tolist() == pytest.approx([0.001, 0.0015, 0.002, 0.0025])
    assert frame["user_attrs_error"][2] == "TrainingDiverged: NaN"
    assert frame["value"][0] == 4.0 and pd.isna(frame["value"][1])


def test_the_columns_hold_what_optunas_own_table_holds(tmp_path):
    """Built from the read model's records, the table agrees with Optuna's `trials_dataframe` on
    every column they share."""
    url = f"sqlite:///{tmp_path / 's.db'}"
    study = _study(url)
    ours = frame_of(url)
    theirs = study.trials_dataframe(multi_index=False)
    shared = [c for c in theirs.columns if c in ours.columns]
    assert {"datetime_start", "datetime_complete", "params_learning_rate", "user_attrs_error"} <= set(shared)
    for column in shared:
        assert (
            ours[column].astype(object).where(ours[column].notna(), None).tolist()
            == theirs[column].astype(object).where(theirs[column].notna(), None).tolist()
        ), column
    assert ours["duration_s"].tolist() == pytest.approx(
        theirs["duration"].dt.total_seconds().tolist(), nan_ok=True
    )
    with pytest.raises(StudyNotFoundError, match="no study named 'ghost'"):
        study_trials(open_storage(url), "ghost")


def test_csv_and_parquet_round_trip(tmp_path):
    url = f"sqlite:///{tmp_path / 's.db'}"
    _study(url)
    frame = frame_of(url)
    back = pd.read_csv(io.BytesIO(encode(frame, "csv")))
    assert back["state"].tolist() == frame["state"].tolist()
    assert back["params_learning_rate"].tolist() == pytest.approx(frame["params_learning_rate"].tolist())
    parquet = pd.read_parquet(io.BytesIO(encode(frame, "parquet")))
    assert parquet["step_reached"].tolist()[:2] == [200, 50]
    assert list(parquet.columns) == list(frame.columns)
    with pytest.raises(ValueError, match="format must be one of csv, parquet"):
        encode(frame, "xml")


def test_empty_study_gives_an_empty_table(tmp_path):
    url = f"sqlite:///{tmp_path / 's.db'}"
    optuna.create_study(study_name="none", storage=url)
    frame = frame_of(url, "none")
    assert len(frame) == 0 and "step_reached" in frame.columns
    assert encode(frame, "csv").decode().startswith("number,state,value,step_reached")


def test_cli_writes_the_table_and_names_a_missing_study(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 's.db'}"
    _study(url)
    out = tmp_path / "t.parquet"
    assert main(["export", "exp", "--db", url, "--format", "parquet", "--output", str(out)]) == 0
    assert pd.read_parquet(out)["number"].tolist() == [0, 1, 2, 3]
    assert "wrote 4 trials of exp" in capsys.readouterr().err
    assert main(["export", "nope", "--db", url]) == 2
    assert "no study named 'nope'" in capsys.readouterr().err


def test_a_study_with_several_objectives_exports_its_front(tmp_path):
    """The measures are columns (user_attrs_*), and `feasible` / `on_front` follow the study's
    objectives and bound; a trial not COMPLETE has neither."""
    from tests.tuner.api.fixtures import MO_FRONT, MO_TRIALS, make_mo_study
    from tuner.analysis.export import study_frame

    url = f"sqlite:///{tmp_path / 's.db'}"
    make_mo_study(url, "mo", tmp_path / "mo")
    frame = study_frame(open_storage(url), "mo")
    assert list(frame["user_attrs_num_params"]) == [size for _, size in MO_TRIALS]
    assert list(frame.loc[frame["on_front"].fillna(False), "number"]) == MO_FRONT
    assert list(frame["feasible"].fillna(False)) == [True, True, True, False, True, False]
    assert frame["on_front"].isna().tolist() == [False] * 5 + [True]  # #5 was pruned
