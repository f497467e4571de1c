"""The reader of Ray's PBT record (ray_pbt_record.py) on the shapes Ray leaves in the storage copy
of an experiment: a result.json with every iteration, one missing iterations, and one left empty
(a member restarted each round gets the uploaded copy back over its own; the case a CI run
recorded, where the copy at step 20 was read as one at step 10)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.tuner.sweeps.ray_pbt_record import ray_copies

INTERVAL, LAST = 20, 60


def _member(experiment: Path, index: int, trial_number: int, lines: list[tuple[int, int]]) -> None:
    folder = experiment / f"member-{index}-d0e37_0000{index}"
    folder.mkdir(parents=True)
    results = [
        {"training_iteration": i, "step": s, "config": {"trial_number": trial_number}} for i, s in lines
    ]
    (folder / "result.json").write_text("".join(json.dumps(r) + "\n" for r in results))


def _line(target: int, source: int, target_iteration: int, source_iteration: int) -> str:
    # Ray's `_log_config_on_step` order: target tag, clone tag, their iterations, clone config, new config.
    fields = [f"{target}_member={target}", f"{source}_member={source}", target_iteration, source_iteration]
    return json.dumps([*fields, {"trial_number": source}, {"trial_number": target}]) + "\n"


def test_steps_come_from_the_iterations_each_member_recorded(tmp_path):
    _member(tmp_path, 0, 0, [(1, 10), (2, 20), (3, 20), (4, 30), (5, 40)])
    _member(tmp_path, 2, 2, [(1, 10), (2, 20), (3, 30), (4, 40)])
    # Member 0 set the round off at step 40 (logged at its previous iteration, step 30).
    (tmp_path / "pbt_global.txt").write_text(_line(0, 2, 4, 4))
    (copy,) = ray_copies(tmp_path, INTERVAL, LAST)
    assert (copy.target, copy.source, copy.steps) == (0, 2, frozenset({40}))


def test_a_lost_iteration_lies_between_its_neighbours(tmp_path):
    _member(tmp_path, 0, 0, [(1, 10), (4, 40)])
    _member(tmp_path, 2, 2, [(1, 10), (2, 20)])
    (tmp_path / "pbt_global.txt").write_text(_line(0, 2, 2, 1))
    (copy,) = ray_copies(tmp_path, INTERVAL, LAST)
    assert copy.steps == frozenset({20, 40})


def test_an_empty_result_file_bounds_the_step_by_the_last_one_only(tmp_path):
    _member(tmp_path, 1, 1, [])
    _member(tmp_path, 3, 3, [(1, 10), (2, 20)])
    (tmp_path / "pbt_global.txt").write_text(_line(1, 3, 2, 1))
    (copy,) = ray_copies(tmp_path, INTERVAL, LAST)
    assert (copy.target, copy.source) == (1, 3) and 20 in copy.steps
    assert copy.steps == frozenset({10, 20, 40, 60})  # the source at 10 (it set the round off)


def test_no_record_no_copies(tmp_path):
    assert ray_copies(tmp_path, INTERVAL, LAST) == []
