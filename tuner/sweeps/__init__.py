"""Sweeps, from creation to finalisation: `create` (a study from a SweepSpec), `sweep` (run_sweep:
drive a study to its trial count on Ray Tune, resume, extend), `driver` (the lease keeper), `lifecycle`
(a trial's messages and the study's verdict on it, no Ray), `searcher` (Optuna's ask/tell inside Ray
Tune, applying that verdict; `trial_events` forwards worker failures to it), `ask_ahead` (the next trials sampled while others run), `trainable` and
`dyneval_trial` (one trial: the shared trainer, or dynamic evaluation of a trained model),
`placement` (the device a trial trains on), `ray_runtime`, `progress`, `trial_policies` (study stop
and retention between trials), `widen`/`widen_control`, `warm_start`, `finalize`/`finalize_launch`,
and `control`/`launcher` (start and stop through the API; `api_state` names what they need of it).
"""
