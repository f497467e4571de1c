"""TEMP fusion switch for measurement."""
from __future__ import annotations
import os
import torch

MODE = os.environ.get("RNNTUNE_FUSION", "eager")

def fused(fn):
    if MODE == "compile":
        return torch.compile(fn, dynamic=False)
    if MODE == "script":
        return torch.jit.script(fn)
    return fn
