"""What a run measures about itself besides its loss: the model's size, known from the config
before any training, and the peak memory of the process (the tuner's `num_params` and
`peak_memory`, recorded for every trial whatever its study optimises)."""

from __future__ import annotations

import resource
import sys

import torch

from .config import TrainConfig
from .data import load_corpus
from .model import count_parameters, make_model, solve_hidden_size


def model_size(cfg: TrainConfig) -> int:
    """Trainable weights of the model `cfg` describes, built on the meta device (no memory, no
    training): what a bound on `num_params` is checked against before a trial trains. It reads
    the corpus for its vocabulary size."""
    vocab = load_corpus(cfg).vocab_size
    with torch.device("meta"):
        return count_parameters(make_model(cfg, vocab, solve_hidden_size(cfg, vocab)))


def peak_memory(device: torch.device) -> int:
    """Bytes at the run's peak: CUDA's allocator peak on a GPU, else the process's peak resident
    set (which includes what the process held before the run)."""
    if device.type == "cuda":
        return int(torch.cuda.max_memory_allocated(device))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)  # Linux reports KiB
