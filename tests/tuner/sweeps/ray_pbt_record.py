"""Ray Tune's own record of a PBT run's copies, read as Ray writes it, to hold the study's
`pbt_history` against (never against our own model of Ray).

Ray 2.60's `PopulationBasedTraining._log_config_on_step` (ray/tune/schedulers/pbt.py) appends one
JSON line per exploit to `pbt_global.txt` in the experiment folder (`RunConfig(storage_path,
name)`, here `<study root>/ray/run-*`): `[target trial tag, clone trial tag, target
training_iteration, clone training_iteration, clone config, new config]`, the iterations read
from each trial's `last_result`. The configs carry the study trial numbers (`trial_number`; the new
config keeps the target's, rnntune's `keep_identity`), and the tags the member index (`member=N`,
the grid's) that names each Ray trial's folder (`member-N-<id>`). A line has no step: it comes from
Ray's per-trial `result.json` (its JsonLoggerCallback, on when the sweep runs with
TUNE_DISABLE_AUTO_CALLBACK_LOGGERS=0), the step of each trial's result at the iteration logged. Ray
calls the scheduler before it updates `last_result` (tune_controller.py, `_process_trial_result`),
so the member whose result set off the round is logged at its previous iteration: both members are
at the round's step, so the step of the copy is the larger of the two.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

LINE_FIELDS = 6
TAG = re.compile(r"member=(\d+)")


@dataclass(frozen=True)
class RayCopy:
    """One line of `pbt_global.txt`: study trial `target` copied study trial `source` at one of
    `steps` (one, but for an iteration a restored member repeats in its result.json)."""

    target: int
    source: int
    steps: frozenset[int]


def experiments(ray_root: Path) -> list[Path]:
    """Every Tune run's experiment folder under a study's `ray` folder, oldest first."""
    return sorted(p for p in ray_root.glob("run-*") if p.is_dir())


def ray_copies(experiment: Path, interval: int, last_step: int) -> list[RayCopy]:
    """The copies `pbt_global.txt` of `experiment` lists, in its order ([] without the file);
    `interval` is the perturbation interval (a copy's step is on its grid), `last_step` the
    members' last step (the bound of an iteration Ray's result.json lost, see `_steps_at`)."""
    record = experiment / "pbt_global.txt"
    if not record.is_file():
        return []
    copies = []
    for line in record.read_text().splitlines():
        fields = json.loads(line)
        assert isinstance(fields, list) and len(fields) == LINE_FIELDS, line[:200]
        target_tag, source_tag, target_iteration, source_iteration, source_config, new_config = fields
        target_steps = _steps_at(experiment, target_tag, target_iteration, interval, last_step)
        source_steps = _steps_at(experiment, source_tag, source_iteration, interval, last_step)
        steps = frozenset(max(a, b) for a in target_steps for b in source_steps)
        copies.append(RayCopy(int(new_config["trial_number"]), int(source_config["trial_number"]), steps))
    return copies


def _steps_at(experiment: Path, tag: str, iteration: int, interval: int, last_step: int) -> set[int]:
    """The steps of a Ray trial's results at `iteration`, from its result.json in the experiment
    folder. That copy loses lines: Ray appends to the driver's own copy and uploads it only with
    the experiment's state, and a trial restarted from a checkpoint (every member, each round)
    first downloads the uploaded copy over its own (`LoggerCallback._restore_from_remote`,
    ray/tune/logger/logger.py), so a member's file can lack any iteration, even all of them. For
    an iteration it lacks: the grid steps between its neighbours' steps, up to `last_step` where
    no later line bounds it."""
    match = TAG.search(tag)
    assert match is not None, tag
    (folder,) = experiment.glob(f"member-{match.group(1)}-*")
    results = [json.loads(line) for line in (folder / "result.json").read_text().splitlines() if line]
    at = {int(r["step"]) for r in results if r.get("training_iteration") == iteration}
    if at:
        return at
    low = max((int(r["step"]) for r in results if r["training_iteration"] < iteration), default=0)
    high = min((int(r["step"]) for r in results if r["training_iteration"] > iteration), default=last_step)
    steps = {s for s in range(low, high + 1) if s % interval == 0}
    assert steps, (folder, iteration)
    return steps
