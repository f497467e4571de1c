"""Running a sweep on Ray Tune: trials from an Optuna study, trained by the shared trainer.

`run_sweep(name, storage_url)` drives one study to its trial count; the pieces are the trainable
(`trainable`), the searcher that owns Optuna's ask/tell (`searcher`), the early-stopping schedulers
(`schedulers`), the live table (`progress`) and the embedded/cluster Ray start-up (`ray_runtime`).
"""

from tuner.orchestration.sweep import SweepOutcome, run_sweep

__all__ = ["SweepOutcome", "run_sweep"]
