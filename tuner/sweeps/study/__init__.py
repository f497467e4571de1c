"""Creating a study: `create` (from a SweepSpec: the one way in for the CLI, REST and `rnntune up`) and `warm_start` (another study's trials as the sampler's prior data)."""
