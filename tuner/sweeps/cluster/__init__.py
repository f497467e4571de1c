"""The cluster a sweep runs on: starting or joining Ray (`ray_runtime`) and CUDA MPS for packed trials (`mps`)."""
