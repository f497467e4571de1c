"""The searcher's side of a population (scheduler pbt/pb2) with plain dicts, no Ray: members asked
at once and bound to Ray's trials, their starts and copies written to their histories, and a
stopped member's retry going on with the settings it had reached (less a copy it never made)."""

from __future__ import annotations

import json

from optuna.trial import TrialState

from tests.tuner.sweeps.searcher_study import make_searcher
from tuner.space import SearchSpace
from tuner.storage import trial_attrs
from tuner.storage.study import load_study
from tuner.sweeps.drive.searcher import StudySearcher
from tuner.sweeps.trial.lifecycle import SEGMENT

MUTABLE = {"population": {"interval": 25, "mutable": ["learning_rate", "l2_penalty"]}}


def _start(searcher: StudySearcher, ray_id: str, step: int, settings: dict) -> None:
    segment = json.dumps({"step": step, "settings": settings})
    searcher.on_trial_result(ray_id, {"step": step + 10, "val_loss": 4.0 - step / 100, SEGMENT: segment})


def test_members_are_asked_at_once_bound_and_keep_their_history(tmp_path) -> None:
    searcher, db = make_searcher(tmp_path, "pop", 3)
    configs = searcher.population(5)  # never past the study's trials
    assert [c["trial_number"] for c in configs] == [0, 1, 2]
    for number, ray_id in enumerate(("a", "b", "c")):
        searcher.bind(ray_id, number)
    study = load_study("pop", db)
    assert [trial_attrs.RAY_TRIAL_ID.of(t.user_attrs) for t in study.trials] == ["a", "b", "c"]

    lr = configs[0]["trainer"]["learning_rate"]
    _start(searcher, "a", 0, {"learning_rate": lr})
    _start(searcher, "b", 0, {"learning_rate": 0.002})
    searcher.on_trial_result("a", {"step": 20, "val_loss": 3.5})
    # The scheduler makes b copy a at step 20 and go on with new settings; b's restart reports them.
    searcher.copied("b", "a", 20, 3.5, {**MUTABLE, "trainer": {"learning_rate": 0.003, "run_dir": "x"}})
    _start(searcher, "b", 20, {"learning_rate": 0.003})
    history = trial_attrs.PBT_HISTORY.of(load_study("pop", db).trials[1].user_attrs)
    assert history == [
        {"step": 0, "from_trial": None, "from_value": None, "settings": {"learning_rate": 0.002}},
        {
            "step": 20,
            "from_trial": 0,
            "from_value": 3.5,
            "settings": {"learning_rate": 0.003},
            "params": {"learning_rate": 0.003},
        },
    ]

    # The sweep stops before b restarted: its folder holds no checkpoint of the copy, so its retry
    # goes on without it (history and settings as before the copy), with its run folder and curve.
    searcher.interrupt_all("sweep stopped by SIGTERM")
    resumed = _searcher_again(tmp_path, db)
    retry = next(c for c in resumed.population(3) if c["trainer"]["run_dir"].endswith("trial-1"))
    assert retry["trainer"]["learning_rate"] == 0.002
    trial = load_study("pop", db).trials[retry["trial_number"]]
    assert trial_attrs.RETRY_OF.of(trial.user_attrs) == 1
    assert trial_attrs.PBT_HISTORY.of(trial.user_attrs) == history[:1]
    assert trial.intermediate_values == {10: 4.0, 30: 3.8}
    assert load_study("pop", db).trials[1].state == TrialState.FAIL


def test_a_copy_decided_on_a_members_first_result_is_kept_with_the_sources_shape(tmp_path) -> None:
    """Ray's order: the scheduler decides a copy on b's first result (step 25) before the callbacks
    forward that result, which carries b's step-0 start. The copy stays in b's history, with the
    shape b trains from then on (the source's), and b's retry asks Ray for that shape."""
    searcher, db = make_searcher(tmp_path, "pop", 2)
    configs = searcher.population(2)
    for number, ray_id in enumerate(("a", "b")):
        searcher.bind(ray_id, number)
    source = {**configs[0]["trainer"], "learning_rate": 0.003}
    searcher.copied("b", "a", 25, 3.5, {**MUTABLE, "trainer": source})
    own = {"learning_rate": configs[1]["trainer"]["learning_rate"]}
    searcher.on_trial_result(
        "b", {"step": 25, "val_loss": 3.9, SEGMENT: json.dumps({"step": 0, "settings": own})}
    )
    history = trial_attrs.PBT_HISTORY.of(load_study("pop", db).trials[1].user_attrs)
    assert [(s["step"], s["from_trial"]) for s in history] == [(0, None), (25, 0)]
    shape = {
        k: v for k, v in configs[0]["trainer"].items() if k in configs[0]["trainer"] and k != "learning_rate"
    }
    tuned = set(load_study("pop", db).trials[0].params)
    assert history[1]["params"] == {k: (0.003 if k == "learning_rate" else shape[k]) for k in tuned}
    searcher.interrupt_all("sweep stopped by SIGTERM")  # b's folder holds no checkpoint: copy dropped
    resumed = _searcher_again(tmp_path, db)
    retry = next(c for c in resumed.population(2) if c["trainer"]["run_dir"].endswith("trial-1"))
    assert retry["trainer"]["learning_rate"] == own["learning_rate"]


def _searcher_again(root, db: str) -> StudySearcher:
    """A new driver's searcher on the same study (as `--resume` builds one)."""
    study = load_study("pop", db)
    return StudySearcher(study, SearchSpace.from_dict(study.user_attrs["space_def"]), root, 3)
