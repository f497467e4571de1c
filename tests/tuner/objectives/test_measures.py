"""Measures are declared once: the trial attributes name and explain them (tuner.storage.trial_attrs),
tuner.objectives.measures adds direction and unit, and the study writer stores them by those keys."""

from tuner.objectives.measures import MEASURES, PRIMARY
from tuner.storage import trial_attrs
from tuner.sweeps.drive.writer import Measured


def test_every_measure_but_the_trials_value_is_a_trial_attribute_with_its_text() -> None:
    holds = {a.key: a.holds for a in trial_attrs.ALL}
    assert set(MEASURES) == {PRIMARY, *trial_attrs.MEASURE_KEYS}
    for key in trial_attrs.MEASURE_KEYS:
        assert MEASURES[key].help == holds[key]
    assert PRIMARY not in holds


def test_the_writer_stores_the_measures_under_their_attribute_names() -> None:
    measured = Measured()
    measured.add({"num_params": 10, "tokens_per_s": 5.0, "peak_memory": 7})
    stored = measured.as_attrs(wall=1.5)
    assert stored == {"num_params": 10.0, "tokens_per_s": 5.0, "peak_memory": 7.0, "wall_time": 1.5}
    assert set(stored) == set(trial_attrs.MEASURE_KEYS)
    for key, value in stored.items():
        trial_attrs.checked(key, value)
