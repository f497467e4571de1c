"""A trial's config going out across Ray (`TrialConfig`): plain-value round trips through the dict
Tune carries."""

from tuner.sweeps.trial.trial_config import Membership, TrialConfig


def test_a_trial_config_round_trips_through_the_dict_tune_carries() -> None:
    full = TrialConfig(
        trainer={"lr": 0.01, "run_dir": "/runs/t3"},
        trial_number=3,
        checkpoint="/runs/best.pt",
        bounds=("num_params<=1000",),
        population=Membership(100, ("dropout", "lr")),
    )
    sent = full.to_tune()
    assert sent == {
        "trainer": {"lr": 0.01, "run_dir": "/runs/t3"},
        "trial_number": 3,
        "checkpoint": "/runs/best.pt",
        "bounds": ["num_params<=1000"],
        "population": {"interval": 100, "mutable": ["dropout", "lr"]},
    }
    assert TrialConfig.from_tune(sent) == full
    bare = TrialConfig(trainer={"lr": 0.01}, trial_number=0)
    assert bare.to_tune() == {"trainer": {"lr": 0.01}, "trial_number": 0}
    assert TrialConfig.from_tune(bare.to_tune()) == bare


def test_keys_tune_adds_are_ignored_and_the_trainer_settings_are_copied() -> None:
    sent = {"trainer": {"lr": 0.01}, "trial_number": 1, "__member": 0}
    config = TrialConfig.from_tune(sent)
    assert config == TrialConfig(trainer={"lr": 0.01}, trial_number=1)
    config.trainer["lr"] = 0.5
    assert sent["trainer"] == {"lr": 0.01}
