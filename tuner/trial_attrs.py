"""A trial's user attributes: each key named once here, with who writes it, what it holds and the
type of its value (writes are checked against it: tuner.study_attrs.Registry).

Every module reads and writes a trial attribute through these names, never a string of its own, and
the trial attribute table of docs/contracts.md is generated from this list (`python -m
tuner.trial_attrs`; a test checks the page is current). The keys are plain strings, as Optuna
stores them.
"""

from __future__ import annotations

from typing import Literal

from tuner.study_attrs import Registry

_attr = Registry()
ALL = _attr.all
checked = _attr.checked
write = _attr.write


RUN_DIR = _attr("run_dir", "the driver, when it starts the trial", "the trial's run folder", str)
RAY_TRIAL_ID = _attr(
    "ray_trial_id", "the driver, when it starts the trial", "Ray Tune's id of the trial", str
)
RETRY_OF = _attr("retry_of", "the driver, when it asks a retry", "the number of the trial it retries", int)
NODE = _attr("node", "each evaluation", "the Ray node's IP the trial runs on", str)
PID = _attr("pid", "each evaluation", "the trial process's id on its node", int)
CHECKPOINT = _attr("checkpoint", "each evaluation", "absolute path of its `best.pt`", str)
GPU_IDS = _attr(
    "gpu_ids",
    "each evaluation",
    "the GPUs Ray assigned it, as Ray numbers them on its node; absent without one",
    list[str],
)
DEVICE = _attr("device", "each evaluation", "the device it trained on (docs/gpu.md)", str)
CUDA_PATH_USED = _attr(
    "cuda_path_used",
    "each evaluation",
    "the training path it took: `graphs`, `eager` (by choice or after the fast path failed), `cpu`, "
    "or `compiled` (the compiled steps without CUDA graphs: the fast path forced on the CPU, tests "
    "only) (docs/trainer.md)",
    Literal["graphs", "compiled", "eager", "cpu"],  # the trainer's PathUsed (trainer/cells/fallback.py)
)
SECONDS_PER_STEP = _attr(
    "seconds_per_step",
    "each evaluation, when it moves by more than 5%",
    "measured training seconds per step; cost-aware search fits it",
    float,
)
WALL_TIME_S = _attr("wall_time_s", "the driver, when the trial ends", "seconds from start to end", float)
BEST_STEP = _attr("best_step", "the trial's summary", "the step of its best validation loss", int)
TEST_LOSS = _attr("test_loss", "the trial's summary", "the test loss of its best checkpoint", float)
DYNEVAL_VAL_LOSS = _attr(
    "dyneval_val_loss",
    "the trial's summary",
    "its validation loss after dynamic evaluation (a space fixing `dyneval: true`, or a study of a "
    "trained model, where it is the trial's value and `best_step` is 0: nothing was trained)",
    float,
)
DYNEVAL_TEST_LOSS = _attr(
    "dyneval_test_loss", "the trial's summary", "its test loss after dynamic evaluation", float
)
MC_TEST_LOSS = _attr(
    "mc_test_loss",
    "the trial's summary, with `mc_dropout_samples` > 0",
    "Monte Carlo dropout's test loss",
    float,
)
MC_TEMPERATURE = _attr(
    "mc_temperature",
    "with `mc_test_loss`",
    "the temperature chosen for it on validation (Mogrifier §3.3)",
    float,
)
MC_DROPOUT_SCALE = _attr(
    "mc_dropout_scale", "with `mc_test_loss`", "the dropout-rate scale chosen for it on validation", float
)
ERROR = _attr("error", "the driver, when the trial fails", "why it failed (FAIL only)", str)
NEEDS_RETRY = _attr(
    "needs_retry",
    "the driver, when the trial fails through no fault of its own",
    "true: a retry runs in its place",
    bool,
)


def table() -> str:
    """The markdown table of docs/contracts.md's "Trial user attributes"."""
    return _attr.table()


if __name__ == "__main__":
    print(table())
