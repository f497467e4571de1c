"""Trackers: each trial's curves and hyperparameters written where users already look (TensorBoard
event files, an MLflow server), from the sweep driver, as the study records them.

`records` says what is logged from a result and a finished trial; `guard` runs a tracker so that
its failures never fail or stall a trial (counted, said once per sweep); `tensorboard` and
`mlflow_runs` write; `callback` is the Ray Tune callback that feeds them (docs/trackers.md).
"""
