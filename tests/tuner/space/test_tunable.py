"""The tunable hyperparameters come from the trainer config's fields marked `tunable(...)`."""

from __future__ import annotations

from typing import Literal

import pytest

from trainer.config import TrainConfig, tunable
from tuner.space.tunable import TUNABLES, derive_tunables

# The hyperparameter names of the contract (docs/contracts.md), plus `cell` as a categorical.
CONTRACT = {
    "learning_rate": "float",
    "input_embedding_ratio": "float",
    "l2_penalty": "float",
    "input_dropout": "float",
    "inter_layer_dropout": "float",
    "cell_output_dropout": "float",
    "state_dropout": "float",
    "output_dropout": "float",
    "mogrifier_rounds": "int",
    "mogrifier_rank": "int",
    "t_max": "float",
    "max_time_steps": "int",
    "dyneval_learning_rate": "float",
    "dyneval_decay_rate": "float",
    "dyneval_epsilon": "float",
    "cell": "categorical",
}


def test_the_contract_names_are_tunable_with_their_kinds():
    assert {name: TUNABLES[name].kind for name in CONTRACT} == CONTRACT
    assert "mogrifier_lstm" in TUNABLES["cell"].choices
    assert TUNABLES["mogrifier_rank"].scales == ("int",) and TUNABLES["l2_penalty"].scales == (
        "linear",
        "log",
    )
    assert "batch_size" not in TUNABLES and "run_dir" not in TUNABLES


def test_a_new_hyperparameter_is_one_field_in_the_trainer():
    class Extended(TrainConfig):
        momentum: float = tunable(0.9, ge=0.0, lt=1.0)
        warmup: int = tunable(0, ge=0)
        schedule: Literal["cosine", "constant"] = tunable("constant")
        use_bias: bool = tunable(True)

    derived = derive_tunables(Extended)
    assert [derived[n].kind for n in ("momentum", "warmup", "schedule", "use_bias")] == [
        "float",
        "int",
        "categorical",
        "categorical",
    ]
    assert derived["schedule"].choices == ("cosine", "constant") and derived["use_bias"].choices == (
        False,
        True,
    )
    assert set(derived) - {"momentum", "warmup", "schedule", "use_bias"} == set(TUNABLES)


def test_a_tunable_field_must_have_a_sampleable_type():
    class Bad(TrainConfig):
        budget: int | None = tunable(None)

    with pytest.raises(TypeError, match="budget is marked tunable but may be None"):
        derive_tunables(Bad)
