"""CUDA MPS for packed trials: when to start it, whether it runs on each GPU node, what to tell the user.

Several trials on one GPU (`gpus_per_trial` < 1) only pay under NVIDIA's Multi-Process Service:
measured on an H200 (docs/gpu.md, bench/packing.py), 4 trials per GPU gave 1.95x the trials per
GPU-hour of one under MPS and 1.02x without it; without MPS the GPU time-slices between processes.
The GPU image's worker starts the daemon itself (`RNNTUNE_MPS`, docker/entrypoint asks
`should_start`); on nodes rnntune does not start, the sweep's header says where MPS runs and a
packed study warns once where it does not. The decisions are pure functions of plain values.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

MpsSetting = Literal["auto", "on", "off"]
MPS_SETTINGS: tuple[MpsSetting, ...] = ("auto", "on", "off")
START_COMMAND = "nvidia-cuda-mps-control -d"
DEFAULT_PIPE_DIRECTORY = "/tmp/nvidia-mps"  # the daemon's default when CUDA_MPS_PIPE_DIRECTORY is unset
# Trials per GPU-hour of 4 packed trials over one alone, H200, PTB-size LSTM (docs/gpu.md).
MEASURED = "4 trials on one GPU gave 1.02x the throughput of one without MPS, 1.95x with it (docs/gpu.md)"


def packs(gpus_per_trial: float) -> bool:
    """Whether trials share GPUs: a fraction of one per trial."""
    return 0.0 < gpus_per_trial < 1.0


def parse_setting(value: str) -> MpsSetting:
    """RNNTUNE_MPS's value, or a ValueError naming the variable and the allowed values."""
    for setting in MPS_SETTINGS:
        if value.strip().lower() == setting:
            return setting
    raise ValueError(f"RNNTUNE_MPS must be one of {', '.join(MPS_SETTINGS)}, not {value!r}")


def should_start(setting: MpsSetting, gpus_per_trial: float, gpus: int) -> bool:
    """Whether a GPU worker starts the MPS daemon: `on` always (with a GPU), `off` never, `auto`
    (the default) when the studies it serves pack trials."""
    if gpus <= 0 or setting == "off":
        return False
    return setting == "on" or packs(gpus_per_trial)


def pipe_directory(env: Mapping[str, str]) -> Path:
    """Where the daemon's control pipe lives for a process with environment `env`."""
    return Path(env.get("CUDA_MPS_PIPE_DIRECTORY") or DEFAULT_PIPE_DIRECTORY)


def running(directory: Path) -> bool:
    """Whether an MPS control daemon serves `directory`: its `control` named pipe exists."""
    try:
        return stat.S_ISFIFO((directory / "control").stat().st_mode)
    except OSError:
        return False


def header_lines(gpus_per_trial: float, nodes: Sequence[tuple[str, int, bool]]) -> list[str]:
    """The sweep header's lines on MPS: one naming where it runs on the GPU nodes (node address,
    GPUs, MPS running), and a warning when trials are packed on a node without it. No GPU nodes or
    no GPU per trial: no lines."""
    gpu_nodes = [(address, gpus, on) for address, gpus, on in nodes if gpus > 0]
    if gpus_per_trial <= 0 or not gpu_nodes:
        return []
    listed = ", ".join(f"{address} ({gpus} GPU) {'on' if on else 'off'}" for address, gpus, on in gpu_nodes)
    lines = [f"CUDA MPS: {listed}"]
    without = [address for address, _, on in gpu_nodes if not on]
    if packs(gpus_per_trial) and without:
        lines.append(
            f"warning: {gpus_per_trial:g} GPU per trial packs trials on a GPU, but MPS does not run on "
            f"{', '.join(without)}: there they time-slice and gain nothing ({MEASURED}). Start it on "
            f"those nodes with `{START_COMMAND}` (the GPU image does: RNNTUNE_MPS), or give each trial a GPU"
        )
    return lines


def probe_cluster() -> list[tuple[str, int, bool]]:
    """(address, GPUs, MPS running) for every alive Ray node with a GPU, each asked by a task
    pinned to it that checks its daemon's control pipe (Ray must be initialised)."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    @ray.remote(num_cpus=0)
    def ask() -> bool:
        return running(pipe_directory(os.environ))

    nodes = [n for n in ray.nodes() if n.get("Alive") and n.get("Resources", {}).get("GPU", 0) > 0]
    answers = ray.get(
        [
            ask.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False)).remote()
            for n in nodes
        ],
        timeout=60,
    )
    return [
        (str(n.get("NodeManagerAddress", "?")), int(n["Resources"]["GPU"]), bool(on))
        for n, on in zip(nodes, answers, strict=True)
    ]


def describe(gpus_per_trial: float) -> list[str]:
    """The sweep header's lines on CUDA MPS for a study that trains on GPUs (Ray initialised); a
    failed probe is a line too, never a failed sweep."""
    if gpus_per_trial <= 0:
        return []
    try:
        return header_lines(gpus_per_trial, probe_cluster())
    except Exception as err:  # the probe only informs: Ray's errors and time-outs alike
        return [f"CUDA MPS: could not ask the GPU nodes whether it runs ({type(err).__name__}: {err})"]


def main(argv: Sequence[str]) -> int:
    """`python -m tuner.sweeps.cluster.mps SETTING GPUS_PER_TRIAL GPUS`: prints `start` or `skip` (docker/entrypoint)."""
    if len(argv) != 3:
        print("usage: python -m tuner.sweeps.cluster.mps RNNTUNE_MPS GPUS_PER_TRIAL GPUS", file=sys.stderr)
        return 64
    try:
        setting = parse_setting(argv[0])
        per_trial, gpus = float(argv[1] or "0"), int(argv[2] or "0")
    except ValueError as err:
        print(f"rnntune mps: {err}", file=sys.stderr)
        return 64
    print("start" if should_start(setting, per_trial, gpus) else "skip")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
