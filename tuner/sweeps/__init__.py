"""Sweeps, from creation to finalisation: `create` (a study from a SweepSpec), `sweep` (run_sweep:
drive a study to its trial count on Ray Tune, resume, extend), `driver` (the lease keeper), `searcher`
(Optuna's ask/tell inside Ray Tune), `trainable` (one trial: the shared trainer), `ray_runtime`,
`progress`, `trial_policies` (study stop and retention between trials), `widen`/`widen_control`,
`warm_start`, `finalize`/`finalize_launch`, and `control`/`launcher` (start and stop through the API).
"""
