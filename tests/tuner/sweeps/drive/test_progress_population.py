"""The sweep's live table shows a population member's settings in force (after its copies, the
shape copied included), never the ones Optuna first sampled for it."""

from __future__ import annotations

from optuna.distributions import FloatDistribution, IntDistribution
from optuna.trial import TrialState, create_trial

from tuner.sweeps.drive.progress import trained_params, trial_row


def test_a_members_row_shows_the_model_it_trained() -> None:
    history = [
        {"step": 0, "from_trial": None, "from_value": None, "settings": {"learning_rate": 0.001}},
        {
            "step": 20,
            "from_trial": 1,
            "from_value": 4.0,
            "settings": {"learning_rate": 0.003},
            "params": {"learning_rate": 0.003, "hidden_size": 64},
        },
    ]
    member = create_trial(
        state=TrialState.COMPLETE,
        value=3.9,
        params={"learning_rate": 0.001, "hidden_size": 8},
        distributions={"learning_rate": FloatDistribution(1e-3, 4e-3), "hidden_size": IntDistribution(8, 64)},
        user_attrs={"pbt_history": history},
    )
    assert trained_params(member) == {"learning_rate": 0.003, "hidden_size": 64}
    assert "learning_rate=0.003 hidden_size=64" in trial_row(member) and "hidden_size=8" not in trial_row(
        member
    )
