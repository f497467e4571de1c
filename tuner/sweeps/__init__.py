"""Sweeps, by feature: `study` (creating a study from a SweepSpec, warm starts), `drive` (running a
study: `run_sweep`, its plan and execution on Ray Tune, the lease, the searcher, progress, policies,
tracking), `trial` (one trial on a Ray worker: the shared trainer, placement, its lifecycle),
`dyneval` (studies of a trained model), `cluster` (Ray and CUDA MPS), `launch` (the API's start and
stop of sweeps as child processes), `finalize`, `widen`, and `trackers` (TensorBoard, MLflow).
"""
