"""A fixed setting's value: the space's, else the trainer's default (tuner.space.settings)."""

from trainer import TrainConfig
from tuner.space.settings import fixed_setting, max_steps_and_eval_every, setting_default


def test_a_fixed_setting_is_the_spaces_value_else_the_trainers_default() -> None:
    assert fixed_setting({"max_steps": 7}, "max_steps") == 7
    assert fixed_setting({}, "max_steps") == TrainConfig.model_construct().max_steps
    assert fixed_setting({"max_steps": 7}, "cell") == TrainConfig.model_construct().cell


def test_every_setting_has_its_default_even_one_built_by_a_factory() -> None:
    config = TrainConfig.model_construct()
    for name in TrainConfig.model_fields:
        assert setting_default(name) == getattr(config, name)


def test_max_steps_and_eval_every() -> None:
    assert max_steps_and_eval_every({"max_steps": 400, "eval_every": "50"}) == (400, 50)
    assert max_steps_and_eval_every({}) == (
        TrainConfig.model_construct().max_steps,
        TrainConfig.model_construct().eval_every,
    )
