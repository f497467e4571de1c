"""Latency of the study API on a 10,000-trial SQLite study, with 16 concurrent clients.

    .venv/bin/python -m bench.api_latency [--trials 10000] [--clients 16] [--requests 50]

1. Builds the study: one trial through Optuna (which creates the schema, the study and its
   attrs), then the rest bulk-inserted into Optuna's tables in one transaction (Optuna's
   `add_trials` costs ~14 ms a trial here: over two minutes for 10,000). The result is checked
   through Optuna's own storage API (trial count, best trial, a sample of trials read back).
2. Starts `rnntune serve` on it in a subprocess (127.0.0.1, free port).
3. Times the first (cold: the trial snapshot is built) request of each endpoint, then
   `--clients` concurrent clients, each on its own kept-alive connection (opened first, timed
   apart), each sending `--requests` requests per endpoint (warm):
   GET /studies, GET /studies/{name}/trials (random pages, sorted by objective, some filtered by
   state), GET /studies/{name}/sensitivity; and the plot and importances endpoints.
4. Times building the parallel-coordinates figure in-process for the same trials, and the trials
   table of `trials.csv` built from those records (what the API and `rnntune export` do) beside
   the same table through Optuna's `trials_dataframe` (how it was built before), side by side.

Goal: p99 under 200 ms for the list and trials pages, under 1 s for sensitivity.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import optuna
import sqlalchemy
from optuna.distributions import FloatDistribution, IntDistribution, distribution_to_json
from optuna.trial import TrialState

from tuner.analysis import plots, sensitivity
from tuner.analysis.export import encode, trials_frame
from tuner.analysis.reads import TrialDB

ROOT = Path(__file__).resolve().parent.parent

NAME = "bench-10k"
SPACE = {
    "learning_rate": FloatDistribution(0.001, 0.004, log=True),
    "input_embedding_ratio": FloatDistribution(0.0, 2.0),
    "l2_penalty": FloatDistribution(5e-6, 1e-3, log=True),
    "input_dropout": FloatDistribution(0.0, 0.9),
    "inter_layer_dropout": FloatDistribution(0.0, 0.95),
    "state_dropout": FloatDistribution(0.0, 0.8),
    "output_dropout": FloatDistribution(0.0, 0.95),
    "mogrifier_rounds": IntDistribution(0, 6),
    "mogrifier_rank": IntDistribution(-20, 100),
}
STEPS = (20, 40, 60, 80, 100, 120)


def _sample(rng: random.Random) -> tuple[dict, float]:
    params: dict[str, float] = {}
    for name, dist in SPACE.items():
        if isinstance(dist, IntDistribution):
            params[name] = rng.randint(dist.low, dist.high)
            continue
        assert isinstance(dist, FloatDistribution)
        if dist.log:
            params[name] = math.exp(rng.uniform(math.log(dist.low), math.log(dist.high)))
        else:
            params[name] = rng.uniform(dist.low, dist.high)
    # A smooth objective with a basin, so the best trial has a real neighbourhood.
    value = (
        3.3
        + 4 * (math.log(params["learning_rate"] / 0.002)) ** 2
        + 0.5 * (params["state_dropout"] - 0.3) ** 2
    )
    return params, value + rng.gauss(0, 0.02)


def build_study(db_url: str, n_trials: int, storage: Path, seed: int = 0) -> float:
    """Create the study; returns the best objective. See the module docstring for how."""
    rng = random.Random(seed)
    study = optuna.create_study(study_name=NAME, storage=db_url, direction="minimize")
    for key, value in {
        "space": "bench",
        "sampler": "random",
        "n_trials": n_trials,
        "parallel": 16,
        "status": "finished",
        "created_at": "2026-11-22T00:00:00+00:00",
        "storage_path": str(storage),
    }.items():
        study.set_user_attr(key, value)
    params, value = _sample(rng)
    study.add_trial(optuna.trial.create_trial(params=params, distributions=SPACE, value=value))
    engine = sqlalchemy.create_engine(db_url)
    dist_json = {name: distribution_to_json(d) for name, d in SPACE.items()}
    best = value
    with engine.begin() as conn:
        study_id, next_id = conn.execute(
            sqlalchemy.text(
                "SELECT study_id, (SELECT MAX(trial_id) FROM trials) FROM studies WHERE study_name = :n"
            ),
            {"n": NAME},
        ).one()
        trials, values, prms, steps, attrs = [], [], [], [], []
        for number in range(1, n_trials):
            trial_id = next_id + number
            params, value = _sample(rng)
            roll = rng.random()
            state = "COMPLETE" if roll < 0.82 else "PRUNED" if roll < 0.92 else "FAIL"
            stamp = f"2026-11-22 00:{number // 600 % 60:02d}:{number // 10 % 60:02d}.000000"
            trials.append({"id": trial_id, "number": number, "sid": study_id, "state": state, "t": stamp})
            if state == "COMPLETE":
                values.append({"id": trial_id, "v": value})
                best = min(best, value)
            for name, dist in SPACE.items():
                prms.append(
                    {
                        "id": trial_id,
                        "n": name,
                        "v": dist.to_internal_repr(params[name]),
                        "d": dist_json[name],
                    }
                )
            n_steps = len(STEPS) if state == "COMPLETE" else 2 if state == "PRUNED" else 0
            for i, step in enumerate(STEPS[:n_steps]):
                steps.append({"id": trial_id, "s": step, "v": value + 0.3 / (i + 1)})
            run_dir = storage / f"trial-{number}"
            for key, val in {
                "checkpoint": str(run_dir / "best.pt"),
                "run_dir": str(run_dir),
                "node": "10.0.0.2",
                "wall_time_s": rng.uniform(20, 60),
                **({"error": "TrainingDiverged: loss became NaN"} if state == "FAIL" else {}),
            }.items():
                attrs.append({"id": trial_id, "k": key, "v": json.dumps(val)})
        conn.execute(
            sqlalchemy.text(
                "INSERT INTO trials (trial_id, number, study_id, state, datetime_start, datetime_complete) "
                "VALUES (:id, :number, :sid, :state, :t, :t)"
            ),
            trials,
        )
        conn.execute(
            sqlalchemy.text(
                "INSERT INTO trial_values (trial_id, objective, value, value_type) VALUES (:id, 0, :v, 'FINITE')"
            ),
            values,
        )
        conn.execute(
            sqlalchemy.text(
                "INSERT INTO trial_params (trial_id, param_name, param_value, distribution_json) VALUES (:id, :n, :v, :d)"
            ),
            prms,
        )
        conn.execute(
            sqlalchemy.text(
                "INSERT INTO trial_intermediate_values (trial_id, step, intermediate_value, intermediate_value_type) "
                "VALUES (:id, :s, :v, 'FINITE')"
            ),
            steps,
        )
        conn.execute(
            sqlalchemy.text(
                "INSERT INTO trial_user_attributes (trial_id, key, value_json) VALUES (:id, :k, :v)"
            ),
            attrs,
        )
    engine.dispose()
    _check_with_optuna(db_url, n_trials, best, rng)
    return best


def _check_with_optuna(db_url: str, n_trials: int, best: float, rng: random.Random) -> None:
    """The bulk-inserted rows must read back as a valid study through Optuna's own storage API."""
    storage = optuna.storages.RDBStorage(db_url)
    study = optuna.load_study(study_name=NAME, storage=storage)
    study_id = storage.get_study_id_from_name(NAME)
    assert abs(study.best_value - best) < 1e-12, (study.best_value, best)
    for number in rng.sample(range(n_trials), 5):
        trial = storage.get_trial(storage.get_trial_id_from_study_id_trial_number(study_id, number))
        assert trial.number == number and set(trial.params) == set(SPACE)
        assert trial.state in (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL)
        assert trial.state != TrialState.COMPLETE or (
            trial.value is not None and len(trial.intermediate_values) == 6
        )
    storage.engine.dispose()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start_server(db_url: str, storage: Path) -> tuple[subprocess.Popen, str]:
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("RNNTUNE_API_READ_TOKEN", None)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tuner.cli",
            "serve",
            "--port",
            str(port),
            "--db",
            db_url,
            "--storage",
            str(storage),
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/openapi.json", timeout=2).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError(f"server did not start: {proc.stdout.read() if proc.stdout else ''}")


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


async def _load(url: str, paths: list[str], clients: int) -> tuple[list[float], list[float]]:
    """`clients` concurrent clients, each with its own kept-alive connection, working through
    `paths`: the latencies of those requests, and of each client's first request (the one that
    opens its connection), timed apart. Every client is built before any request: building an
    httpx client (its SSL context) blocks the event loop for milliseconds, and 16 of them built
    while the first requests were in flight had put 2% of the samples at 150–400 ms."""
    queue: asyncio.Queue[str] = asyncio.Queue()
    for path in paths:
        queue.put_nowait(path)
    latencies: list[float] = []
    firsts: list[float] = []
    connected = asyncio.Barrier(clients)
    https = [httpx.AsyncClient(base_url=url, timeout=60) for _ in range(clients)]

    async def client(http: httpx.AsyncClient) -> None:
        async with http:
            start = time.perf_counter()
            (await http.get(paths[0])).raise_for_status()
            firsts.append(time.perf_counter() - start)
            await connected.wait()
            while not queue.empty():
                path = queue.get_nowait()
                start = time.perf_counter()
                response = await http.get(path)
                latencies.append(time.perf_counter() - start)
                if response.status_code != 200:
                    raise RuntimeError(f"GET {path}: {response.status_code} {response.text[:200]}")

    await asyncio.gather(*(client(http) for http in https))
    return latencies, firsts


def _timed_get(url: str, path: str) -> float:
    start = time.perf_counter()
    response = httpx.get(url + path, timeout=120)
    response.raise_for_status()
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=10_000)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--requests", type=int, default=50, help="requests per client per endpoint")
    args = parser.parse_args()
    optuna.logging.set_verbosity(optuna.logging.WARNING)

    with tempfile.TemporaryDirectory(prefix="rnntune-bench-") as tmp:
        db_url = f"sqlite:///{tmp}/bench.db"
        storage = Path(tmp) / "storage"
        start = time.perf_counter()
        best = build_study(db_url, args.trials, storage)
        print(
            f"built {args.trials} trials in {time.perf_counter() - start:.1f} s (best {best:.4f}; "
            f"checked through Optuna's storage API)"
        )

        records = TrialDB(optuna.storages.RDBStorage(db_url)).trials(1)
        start = time.perf_counter()
        records = TrialDB(optuna.storages.RDBStorage(db_url)).trials(1)
        load_s = time.perf_counter() - start
        completed = sorted(
            (t for t in records if t.completed), key=lambda t: math.inf if t.value is None else t.value
        )
        pruned = [t for t in records if t.state == "PRUNED"]
        start = time.perf_counter()
        drawn = sensitivity.points(completed, pruned, "all")
        near = {completed[0].number} | {
            t.number for t in sensitivity.neighbourhood(completed[0], drawn, 0.15)
        }
        plot = plots.parallel_coordinates(drawn, near)
        plot_s = time.perf_counter() - start
        print(
            f"in-process: load {len(records)} trials {load_s * 1000:.0f} ms; parallel-coordinates figure "
            f"({len(drawn)} lines, {len(near)} red, {len(plot['figure']) / 1e6:.1f} MB JSON) built in "
            f"{plot_s * 1000:.0f} ms"
        )
        start = time.perf_counter()
        encode(trials_frame(records), "csv")
        ours = time.perf_counter() - start
        start = time.perf_counter()
        study = optuna.load_study(study_name=NAME, storage=db_url)
        encode(study.trials_dataframe(multi_index=False), "csv")
        theirs = time.perf_counter() - start
        print(
            f"in-process: trials.csv from the loaded records {ours * 1000:.0f} ms; the same through Optuna's "
            f"trials_dataframe, study loaded {theirs * 1000:.0f} ms ({theirs / ours:.1f}x)"
        )

        proc, url = _start_server(db_url, storage)
        try:
            base = f"/studies/{NAME}"
            cold = {
                "trials (cold: snapshot built)": _timed_get(url, f"{base}/trials?sort=objective"),
                "sensitivity (cold: analysis + importances)": _timed_get(url, f"{base}/sensitivity"),
                "parallel-coordinates (cold: figure built)": _timed_get(
                    url, f"{base}/plots/parallel-coordinates"
                ),
                "parallel-coordinates (warm)": _timed_get(url, f"{base}/plots/parallel-coordinates"),
                "importances (cold: bootstrap intervals)": _timed_get(url, f"{base}/importances"),
                "importances (warm)": _timed_get(url, f"{base}/importances"),
            }
            for what, seconds in cold.items():
                print(f"first request, {what}: {seconds * 1000:.0f} ms")
            rng = random.Random(1)
            n = args.clients * args.requests
            states = ["", "&state=COMPLETE", "&state=PRUNED"]
            workloads = {
                "GET /studies": ["/studies"] * n,
                "GET trials page": [
                    f"{base}/trials?sort=objective&limit=50&offset={rng.randrange(0, 8000)}"
                    f"{rng.choice(states)}"
                    for _ in range(n)
                ],
                "GET sensitivity": [f"{base}/sensitivity"] * n,
            }
            goals = {"GET /studies": 0.2, "GET trials page": 0.2, "GET sensitivity": 1.0}
            load = os.getloadavg()
            print(
                f"{args.clients} concurrent clients, {n} requests per endpoint (loopback; {os.cpu_count()} CPUs, "
                f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}):"
            )
            ok = True
            for what, paths in workloads.items():
                start = time.perf_counter()
                latencies, firsts = asyncio.run(_load(url, paths, args.clients))
                wall = time.perf_counter() - start
                p50, p99 = _percentile(latencies, 0.5), _percentile(latencies, 0.99)
                met = p99 < goals[what]
                ok &= met
                print(
                    f"  {what:<18} p50 {p50 * 1000:7.1f} ms  p99 {p99 * 1000:7.1f} ms  "
                    f"mean {statistics.fmean(latencies) * 1000:6.1f} ms  {len(latencies) / wall:6.0f} req/s  "
                    f"goal p99 < {goals[what] * 1000:.0f} ms: {'met' if met else 'MISSED'}"
                )
                print(
                    f"  {'':<18} first request of each new connection ({args.clients} opened at once): "
                    f"p50 {_percentile(firsts, 0.5) * 1000:.1f} ms, max {max(firsts) * 1000:.1f} ms"
                )
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
