"""A trial's user attributes: each key named once here, with who writes it, what it holds and the
type of its value (`KEY: Key[T]`; reads typed and writes checked: tuner.storage.attr_registry).

Every module reads and writes a trial attribute through these names, never a string of its own, and
the trial attribute table of docs/contracts.md is generated from this list (`python -m
tuner.storage.trial_attrs`; a test checks the page is current). The keys are plain strings, as Optuna
stores them.
"""

from __future__ import annotations

from typing import Literal

from tuner.storage.attr_registry import Key, Registry

_attr = Registry()
ALL = _attr.all
checked = _attr.checked  # for keys chosen at run time
write = _attr.write


RUN_DIR: Key[str] = _attr("run_dir", str, "the driver, when it starts the trial", "the trial's run folder")
RAY_TRIAL_ID: Key[str] = _attr(
    "ray_trial_id", str, "the driver, when it starts the trial", "Ray Tune's id of the trial"
)
RETRY_OF: Key[int] = _attr(
    "retry_of", int, "the driver, when it asks a retry", "the number of the trial it retries"
)
NODE: Key[str] = _attr("node", str, "each evaluation", "the Ray node's IP the trial runs on")
PID: Key[int] = _attr("pid", int, "each evaluation", "the trial process's id on its node")
CHECKPOINT: Key[str] = _attr(
    "checkpoint",
    str,
    "each evaluation",
    "absolute path of its `best.pt`, or its `s3://` key in a study kept in an object store",
)
GPU_IDS: Key[list[str]] = _attr(
    "gpu_ids",
    list[str],
    "each evaluation",
    "the GPUs Ray assigned it, as Ray numbers them on its node; absent without one",
)
DEVICE: Key[str] = _attr("device", str, "each evaluation", "the device it trained on (docs/gpu.md)")
# The trainer's PathUsed (trainer/cells/paths.py); a test ties the two.
CUDA_PATH_USED: Key[Literal["graphs", "compiled", "eager", "cpu"]] = _attr(
    "cuda_path_used",
    Literal["graphs", "compiled", "eager", "cpu"],
    "each evaluation",
    "the training path it took: `graphs`, `eager` (by choice or after the fast path failed), `cpu`, "
    "or `compiled` (the compiled steps without CUDA graphs: the fast path forced on the CPU, tests "
    "only) (docs/trainer.md)",
)
CUDA_PATH_CALLS: Key[dict[str, int]] = _attr(
    "cuda_path_calls",
    dict[str, int],
    "each evaluation",
    "training calls per path so far: `cpu`, `eager`, `compiled`, `graphs`, the last two with "
    "`+fused_rounds` where `mogrifier_kernel: fused` ran the Mogrifier rounds (docs/trainer.md)",
)
SECONDS_PER_STEP: Key[float] = _attr(
    "seconds_per_step",
    float,
    "each evaluation, when it moves by more than 5%",
    "measured training seconds per step; cost-aware search fits it",
)
WALL_TIME_S: Key[float] = _attr(
    "wall_time_s",
    float,
    "the driver, when the trial ends in any state",
    "seconds from start to end of every trial, failed and pruned ones included (compute accounting)",
)
# The measures every trial records whatever its study optimises (tuner.objectives.measures).
NUM_PARAMS: Key[float] = _attr(
    "num_params",
    float,
    "the driver, when the trial ends (or is refused before training)",
    "the model's trainable weights",
)
TOKENS_PER_S: Key[float] = _attr(
    "tokens_per_s", float, "the driver, when the trial ends", "training throughput, median over evaluations"
)
PEAK_MEMORY: Key[float] = _attr(
    "peak_memory",
    float,
    "the driver, when the trial ends",
    "bytes at the trial's peak (CUDA allocator, else RSS)",
)
WALL_TIME: Key[float] = _attr(
    "wall_time",
    float,
    "the driver, when the trial ends with its measures",
    "the measure `wall_time` (objectives, constraints): the same seconds as wall_time_s",
)
# Their one declaration of name and meaning: tuner.objectives.measures adds each one's direction
# and unit to these.
MEASURE_KEYS: tuple[Key[float], ...] = (NUM_PARAMS, TOKENS_PER_S, PEAK_MEMORY, WALL_TIME)
BEST_STEP: Key[int] = _attr(
    "best_step",
    int,
    "the trial's summary (the driver, from its curve, for a diverged trial `procedure: paper` keeps)",
    "the step of its best validation loss",
)
DIVERGED_AT: Key[int] = _attr(
    "diverged_at",
    int,
    "the driver, when the trainer gives up on a divergence",
    "the step training diverged at after its `divergence_restores`: FAIL under `procedure: rnntune`, "
    "COMPLETE at its best validation loss before it under `procedure: paper` (docs/sweeps.md)",
)
PBT_HISTORY: Key[list[dict]] = _attr(
    "pbt_history",
    list[dict],
    "the driver, when a population member starts, copies another member or changes settings",
    "a population member's segments (scheduler pbt/pb2), in step order: `step` it took effect, "
    "`from_trial` the member whose checkpoint it copied there (null: its own), `from_value` that "
    "checkpoint's validation loss, `settings` (the mutable ones) in force from that step on, and on "
    "a copy (or a start whose trainer built another model than recorded) `params`: every tuned "
    "hyperparameter from then on, the shape copied included (docs/population.md)",
)
TEST_LOSS: Key[float] = _attr(
    "test_loss", float, "the trial's summary", "the test loss of its best checkpoint"
)
DYNEVAL_VAL_LOSS: Key[float] = _attr(
    "dyneval_val_loss",
    float,
    "the trial's summary",
    "its validation loss after dynamic evaluation (a space fixing `dyneval: true`, or a study of a "
    "trained model, where it is the trial's value and `best_step` is 0: nothing was trained)",
)
DYNEVAL_TEST_LOSS: Key[float] = _attr(
    "dyneval_test_loss", float, "the trial's summary", "its test loss after dynamic evaluation"
)
MC_TEST_LOSS: Key[float] = _attr(
    "mc_test_loss",
    float,
    "the trial's summary, with `mc_dropout_samples` > 0",
    "Monte Carlo dropout's test loss",
)
MC_TEMPERATURE: Key[float] = _attr(
    "mc_temperature",
    float,
    "with `mc_test_loss`",
    "the temperature chosen for it on validation (Mogrifier §3.3)",
)
MC_DROPOUT_SCALE: Key[float] = _attr(
    "mc_dropout_scale", float, "with `mc_test_loss`", "the dropout-rate scale chosen for it on validation"
)
ERROR: Key[str] = _attr("error", str, "the driver, when the trial fails", "why it failed (FAIL only)")
REFUSED: Key[str] = _attr(
    "refused",
    str,
    "the driver, when a setting breaks a bound known before training",
    "the bound it broke, as `num_params=3.1e+07 (bound num_params<=24000000)`: a COMPLETE trial "
    "never trained, infeasible for the samplers, not counted in `n_trials` (docs/sweeps.md)",
)
NEEDS_RETRY: Key[bool] = _attr(
    "needs_retry",
    bool,
    "the driver, when the trial fails through no fault of its own",
    "true: a retry runs in its place",
)


def table() -> str:
    """The markdown table of docs/contracts.md's "Trial user attributes"."""
    return _attr.table()


if __name__ == "__main__":
    print(table())
