"""A space's own search procedure (`sweep:` in its file) fills the spec fields a caller left unset."""

from __future__ import annotations

from tuner.spec import SweepSpec
from tuner.sweeps.study.create import create_study, explicit_fields

POOL = "circling_back_enwik8_mogrifier_rlstm"  # Circling Back §7: a random pool of 60 candidates


def _spec(tmp_path, name: str, **fields) -> SweepSpec:
    study = create_study(
        name, storage_url=f"sqlite:///{tmp_path / 's.db'}", storage_path=tmp_path / name, space=POOL, **fields
    )
    return SweepSpec.of(study.user_attrs)


def test_the_space_names_the_sampler_and_trial_count_a_sweep_uses(tmp_path):
    spec = _spec(tmp_path, "pool")
    assert (spec.sampler, spec.n_trials) == ("random", 60)


def test_what_the_caller_gives_wins_over_the_space(tmp_path):
    spec = _spec(tmp_path, "mine", sampler="tpe", n_trials=7)
    assert (spec.sampler, spec.n_trials) == ("tpe", 7)
    only_trials = _spec(tmp_path, "some", n_trials=9)
    assert (only_trials.sampler, only_trials.n_trials) == ("random", 9)


def test_a_request_model_counts_only_the_fields_it_was_given():
    given = SweepSpec.model_validate({"space": POOL, "n_trials": 5})
    assert explicit_fields(given, {}) == {"space", "n_trials"}
    assert explicit_fields({"space": POOL, "sampler": None}, {"seed": 3}) == {"space", "seed"}


def test_a_relative_data_dir_is_stored_resolved(tmp_path, monkeypatch):
    """The space's `data_dir: data/enwik8` is stored as the folder it names where the study was
    created, so a resume from another folder (or the API's sweep process) reads the same data."""
    monkeypatch.chdir(tmp_path)
    study = create_study(
        "resolved", storage_url=f"sqlite:///{tmp_path / 's.db'}", storage_path=tmp_path / "r", space=POOL
    )
    expected = str((tmp_path / "data" / "enwik8").resolve())
    assert study.user_attrs["space_def"]["fixed"]["data_dir"] == expected
    assert study.user_attrs["task"]["data_dir"] == expected
