"""Real studies for the API tests, written with Optuna the way the sweep writes them (the contract in
docs/contracts.md), and a real uvicorn server on a free loopback port."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import optuna
from fastapi import FastAPI
from optuna.distributions import FloatDistribution, IntDistribution
from optuna.trial import TrialState, create_trial

from tuner.api import ApiSettings, create_app
from tuner.api.connections import Limits
from tuner.api.server import make_server
from tuner.storage.study import open_storage

SPACE = {
    "learning_rate": FloatDistribution(0.001, 0.004, log=True),
    "input_dropout": FloatDistribution(0.0, 0.9),
    "mogrifier_rounds": IntDistribution(0, 10),
}
BEST = {"learning_rate": 0.002, "input_dropout": 0.45, "mogrifier_rounds": 3}

# (params, state, value). With the default fraction 0.075 (thesis App. 2.B: a 15% window in all)
# the windows around BEST are: learning_rate within 0.075*ln(4) = 0.10397 of ln(0.002), i.e.
# [0.002/4**0.075, 0.002*4**0.075] = [0.0018025, 0.0022191]; input_dropout within 0.0675 of 0.45;
# mogrifier_rounds within 0.75 of 3, i.e. 3 only. Hand-checked membership in the comments.
FIXED_TRIALS = [
    (BEST, TrialState.COMPLETE, 4.0),  # 0: the best
    (
        {"learning_rate": 0.0022, "input_dropout": 0.5, "mogrifier_rounds": 3},
        TrialState.COMPLETE,
        4.1,
    ),  # 1: in (log: ln 1.1 = 0.0953)
    (
        {"learning_rate": 0.00179, "input_dropout": 0.45, "mogrifier_rounds": 3},
        TrialState.COMPLETE,
        4.2,
    ),  # 2: out (log: ln 0.895 = -0.111; linear, 0.075 * 0.003 = 0.000225 either side, would keep it)
    (
        {"learning_rate": 0.00219, "input_dropout": 0.4, "mogrifier_rounds": 3},
        TrialState.COMPLETE,
        4.3,
    ),  # 3: in (log: ln 1.095 = 0.0908; dropout 0.05 < 0.0675)
    (
        {"learning_rate": 0.002, "input_dropout": 0.6, "mogrifier_rounds": 3},
        TrialState.COMPLETE,
        4.05,
    ),  # 4: out (dropout 0.15 > 0.0675)
    (
        {"learning_rate": 0.002, "input_dropout": 0.45, "mogrifier_rounds": 4},
        TrialState.COMPLETE,
        4.02,
    ),  # 5: out (rounds 1 > 0.75)
    (
        {"learning_rate": 0.0011, "input_dropout": 0.1, "mogrifier_rounds": 8},
        TrialState.COMPLETE,
        5.0,
    ),  # 6: out
    (
        {"learning_rate": 0.0021, "input_dropout": 0.46, "mogrifier_rounds": 3},
        TrialState.PRUNED,
        None,
    ),  # 7: pruned: never counted
    (
        {"learning_rate": 0.0035, "input_dropout": 0.8, "mogrifier_rounds": 1},
        TrialState.FAIL,
        None,
    ),  # 8: failed
    (
        {"learning_rate": 0.0019, "input_dropout": 0.44, "mogrifier_rounds": 3},
        TrialState.RUNNING,
        None,
    ),  # 9: running
]
EXPECTED_NEIGHBOURS = {1: 0.1, 3: 0.3}


def make_study(
    db_url: str | optuna.storages.BaseStorage,
    name: str,
    storage_path: Path,
    trials: list[tuple[dict, TrialState, float | None]] = FIXED_TRIALS,
    status: str = "finished",
    checkpoints: dict[int, str] | None = None,
) -> optuna.Study:
    """A study with the contract's study and trial attrs; `checkpoints` maps trial number → path.
    `db_url` may be a storage already open, for many studies in a row (about twice as fast). A URL
    is opened as rnntune opens it (SQLite in WAL mode: no sync to disk at each trial's commit)."""
    storage = open_storage(db_url) if isinstance(db_url, str) else db_url
    study = optuna.create_study(study_name=name, storage=storage, direction="minimize")
    for key, value in {
        "space": "fixed",
        "sampler": "random",
        "n_trials": len(trials),
        "parallel": 2,
        "status": status,
        "created_at": "2026-11-22T00:00:00+00:00",
        "storage_path": str(storage_path),
    }.items():
        study.set_user_attr(key, value)
    checkpoints = checkpoints or {}
    frozen = []
    for number, (params, state, value) in enumerate(trials):
        curve = (
            {}
            if state == TrialState.FAIL
            else {100 * (s + 1): (value or 4.5) + 0.5 / (s + 1) for s in range(3)}
        )
        attrs = {
            "node": "127.0.0.1",
            "wall_time_s": 1.5 + number,
            "seconds_per_step": 0.01 * (number + 1),
            "run_dir": str(storage_path / f"trial{number}"),
            "device": "cuda:0",
            "cuda_path_used": "eager" if number == 1 else "graphs",
        }
        if number in checkpoints:
            attrs["checkpoint"] = checkpoints[number]
        if state == TrialState.FAIL:
            attrs["error"] = "TrainingDiverged: loss became NaN at step 40"
        frozen.append(
            create_trial(
                state=state,
                params=params,
                distributions=SPACE,
                value=value,
                intermediate_values=curve,
                user_attrs=attrs,
            )
        )
    study.add_trials(frozen)
    return study


@contextlib.contextmanager
def live_server(settings: ApiSettings) -> Iterator[str]:
    """Serve `create_app(settings)` with uvicorn on 127.0.0.1 (free port, in a thread)."""
    with live_app(create_app(settings)) as url:
        yield url


@contextlib.contextmanager
def live_app(app: FastAPI, limits: Limits | None = None) -> Iterator[str]:
    """Serve `app` on 127.0.0.1 (free port, in a thread) as `rnntune serve` does (make_server)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = make_server(app, limits)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()


# A study whose best trials crowd the low bound of learning_rate (0.001..0.004, log): 3 of the
# best 3 lie within 5% of it, in log space. It carries the stored space the boundary rule reads.
EDGE_SPACE = {
    "learning_rate": {"scale": "log", "low": 0.001, "high": 0.004},
    "input_dropout": {"scale": "linear", "low": 0.0, "high": 0.9},
    "mogrifier_rounds": {"scale": "int", "low": 0, "high": 10},
}


def make_edge_study(db_url: str, name: str, storage_path: Path) -> optuna.Study:
    """10 COMPLETE trials, the best three at learning_rate ≈ 0.001 (see EDGE_SPACE)."""
    trials = [
        ({"learning_rate": 0.00101 + 0.0003 * i, "input_dropout": 0.1 * (i % 9), "mogrifier_rounds": i % 7},
         TrialState.COMPLETE, 4.0 + 0.1 * i)
        for i in range(10)
    ]  # fmt: skip
    trials[1] = (
        {"learning_rate": 0.00102, "input_dropout": 0.5, "mogrifier_rounds": 3},
        TrialState.COMPLETE,
        4.05,
    )
    trials[2] = (
        {"learning_rate": 0.00103, "input_dropout": 0.2, "mogrifier_rounds": 1},
        TrialState.COMPLETE,
        4.07,
    )
    study = make_study(db_url, name, storage_path, trials=trials)
    study.set_user_attr("space_def", {"name": name, "params": EDGE_SPACE})
    return study


# A study of two objectives (val_loss, num_params) under num_params<=5000, as a sweep stores it:
# (val_loss, num_params) per COMPLETE trial. Front by hand: #0 (3.9, 4800) and #2 (4.2, 3000) and
# #4 (4.6, 2000); #1 (4.3, 4000) is dominated by #2; #3 (3.7, 9000) is infeasible (the best loss);
# #5 is PRUNED.
MO_TRIALS = [(3.9, 4800), (4.3, 4000), (4.2, 3000), (3.7, 9000), (4.6, 2000), (None, 2500)]
MO_FRONT = [0, 2, 4]


def make_mo_study(
    db_url: str, name: str, storage_path: Path, trials: list[tuple[float | None, int]] = MO_TRIALS
) -> optuna.Study:
    """A study with two objectives and a size bound (`MO_TRIALS`), its spec stored as a sweep stores it."""
    from tuner.spec.sweep_spec import validate

    study = optuna.create_study(study_name=name, storage=db_url, directions=["minimize", "minimize"])
    spec = validate({"space": "tiny", "objectives": "val_loss,num_params", "constraints": "num_params<=5000"})
    for key, value in {
        "spec": spec.stored(),
        "space": "tiny",
        "status": "finished",
        "created_at": "2026-11-27T00:00:00+00:00",
        "storage_path": str(storage_path),
    }.items():
        study.set_user_attr(key, value)
    params = [dict(BEST, input_dropout=0.1 * (i + 1)) for i in range(len(trials))]
    for (loss, size), p in zip(trials, params, strict=True):
        attrs = {"num_params": size, "tokens_per_s": 1000.0, "peak_memory": 2.0e8, "wall_time": 10.0}
        curve = {10: (loss or 5.0) + 0.3, 20: loss or 5.0}
        state = TrialState.COMPLETE if loss is not None else TrialState.PRUNED
        values = [loss, size] if loss is not None else None
        study.add_trial(
            create_trial(
                state=state,
                params=p,
                distributions=SPACE,
                values=values,
                intermediate_values=curve,
                user_attrs=attrs,
                system_attrs={"constraints:num_params<=5000": size - 5000},
            )
        )
    return study
