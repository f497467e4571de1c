"""A real Ray sweep whose workers train through the compiled steps (the CUDA path's compilation,
forced on CPU by RNNTUNE_FAST_PATH_ON_CPU=1): with `reuse_actors`, a worker process meets several
trial shapes (embedding size from input_embedding_ratio, Mogrifier rounds and ranks, with and
without a state mask), and every trial completes on the compiled path, none falling back.

The sweep runs in a child process: the switch must reach the Ray workers it starts, and this test
process may hold the session's embedded Ray (conftest `ray_cluster`).
"""

from __future__ import annotations

import optuna
import pytest

from tests.child import fresh_env, run_child
from trainer.cells.fallback import FORCE_ON_CPU_ENV

TRIALS = 4  # on two workers: some process trains several shapes
SCRIPT = """
import io, json, sys
from pathlib import Path
from tuner.sweeps.study.create import create_study
from tuner.sweeps.drive.run import run_sweep

root = Path(sys.argv[1])
settings = {"max_steps": 6, "eval_every": 3, "max_eval_tokens": 300, "bptt": 12, "batch_size": 8,
            "eval_batch_size": 64}
create_study("fast", storage_url=f"sqlite:///{root / 's.db'}", space="tiny", storage_path=root / "fast",
             sampler="random", scheduler="none", seed=3, overrides={"set": settings},
             n_trials=int(sys.argv[2]), parallel=2)
print("RESULT " + json.dumps({"status": run_sweep("fast", f"sqlite:///{root / 's.db'}", out=io.StringIO()).status}))
"""


@pytest.mark.slow
def test_a_sweep_of_many_shapes_trains_every_trial_on_the_compiled_path(tmp_path):
    out = run_child(SCRIPT, str(tmp_path), str(TRIALS), env=fresh_env(**{FORCE_ON_CPU_ENV: "1"}), timeout=900)
    assert out["status"] == "finished"
    trials = optuna.load_study(study_name="fast", storage=f"sqlite:///{tmp_path / 's.db'}").trials
    assert len(trials) == TRIALS and all(t.state.name == "COMPLETE" for t in trials), [
        (t.number, t.state.name, t.user_attrs.get("error")) for t in trials
    ]
    assert {t.user_attrs["cuda_path_used"] for t in trials} == {"compiled"}
    # Every training call counted, all on the compiled path (trainer/cells/paths.py).
    assert all(list(t.user_attrs["cuda_path_calls"]) == ["compiled"] for t in trials)
    assert all(t.user_attrs["cuda_path_calls"]["compiled"] > 0 for t in trials)
    shapes = {
        (round(t.params["input_embedding_ratio"] * 48) if t.params["input_embedding_ratio"] < 1 else 48,
         t.params["mogrifier_rounds"], t.params.get("mogrifier_rank"), t.params["state_dropout"] > 0)
        for t in trials
    }  # fmt: skip
    assert len(shapes) == TRIALS  # every trial a shape of its own
    pids = {t.user_attrs["pid"] for t in trials}
    assert len(pids) < TRIALS  # workers were reused: some process trained several shapes
