"""CUDA MPS for packed trials (tuner/sweeps/cluster/mps.py): the decisions with plain values, the daemon's
pipe detection on a real named pipe, and docker/entrypoint's worker starting and stopping the
daemon, run by bash with stand-ins for the NVIDIA tools and Ray (the daemon itself needs a GPU)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tuner.sweeps.cluster import mps

ROOT = Path(__file__).resolve().parents[4]


@pytest.mark.parametrize(
    ("setting", "per_trial", "gpus", "expected"),
    [
        ("auto", 0.25, 1, True),
        ("auto", 0.5, 8, True),
        ("auto", 1.0, 1, False),  # one trial per GPU: nothing to share
        ("auto", 2.0, 4, False),
        ("auto", 0.0, 1, False),  # a CPU study
        ("on", 1.0, 1, True),
        ("on", 0.25, 0, False),  # no GPU, no daemon
        ("off", 0.25, 1, False),
    ],
)
def test_should_start(setting, per_trial, gpus, expected):
    assert mps.should_start(setting, per_trial, gpus) is expected


def test_parse_setting_names_the_variable_and_the_values():
    assert mps.parse_setting(" On ") == "on"
    with pytest.raises(ValueError, match=r"RNNTUNE_MPS must be one of auto, on, off, not 'yes'"):
        mps.parse_setting("yes")


def test_header_lines():
    nodes = [("10.0.0.1", 0, False), ("10.0.0.2", 2, True), ("10.0.0.3", 1, False)]
    assert mps.header_lines(0.0, nodes) == []  # a CPU study
    assert mps.header_lines(0.25, [("10.0.0.1", 0, False)]) == []  # no GPU node
    whole = mps.header_lines(1.0, nodes)
    assert whole == ["CUDA MPS: 10.0.0.2 (2 GPU) on, 10.0.0.3 (1 GPU) off"]  # informs, warns nothing
    packed = mps.header_lines(0.25, nodes)
    assert packed[0] == whole[0] and len(packed) == 2
    assert "10.0.0.3" in packed[1] and "10.0.0.2" not in packed[1]
    assert "nvidia-cuda-mps-control -d" in packed[1] and "1.02x" in packed[1] and "1.95x" in packed[1]
    assert len(mps.header_lines(0.25, [("10.0.0.2", 2, True)])) == 1  # MPS everywhere: no warning


def test_running_reads_the_control_pipe(tmp_path):
    assert mps.pipe_directory({}) == Path("/tmp/nvidia-mps")
    assert mps.pipe_directory({"CUDA_MPS_PIPE_DIRECTORY": str(tmp_path)}) == tmp_path
    assert not mps.running(tmp_path)
    (tmp_path / "control").write_text("")  # a plain file is not the daemon's pipe
    assert not mps.running(tmp_path)
    (tmp_path / "control").unlink()
    os.mkfifo(tmp_path / "control")
    assert mps.running(tmp_path)


def test_describe_says_nothing_for_a_cpu_study():
    assert mps.describe(0.0) == []


def test_the_module_answers_the_entrypoint():
    def ask(*argv):
        return subprocess.run(
            [sys.executable, "-m", "tuner.sweeps.cluster.mps", *argv],
            capture_output=True,
            text=True,
            cwd=ROOT,
        )

    assert ask("auto", "0.25", "1").stdout == "start\n"
    assert ask("auto", "", "1").stdout == "skip\n"  # RNNTUNE_GPUS_PER_TRIAL unset in .env
    bad = ask("sometimes", "0.25", "1")
    assert bad.returncode == 64 and "RNNTUNE_MPS must be one of auto, on, off" in bad.stderr


def fake_tools(tmp_path: Path, gpus: int, with_mps: bool = True) -> tuple[dict[str, str], Path]:
    """A PATH with stand-ins for nvidia-smi, nvidia-cuda-mps-control and ray that log their calls."""
    bin_dir, log = tmp_path / "bin", tmp_path / "calls.log"
    bin_dir.mkdir()
    tools = {
        "nvidia-smi": "".join(f'echo "GPU {k}: Fake GPU (UUID: GPU-{k})"\n' for k in range(gpus)),
        "ray": f'echo "ray $*" >> {log}\n',
    }
    if with_mps:
        tools["nvidia-cuda-mps-control"] = (
            f'if [ "${{1:-}}" = -d ]; then echo "mps -d" >> {log}; else echo "mps $(cat)" >> {log}; fi\n'
        )
    for name, body in tools.items():
        (bin_dir / name).write_text("#!/usr/bin/env bash\n" + body)
        (bin_dir / name).chmod(0o755)
    env = {
        "PATH": f"{bin_dir}:{Path(sys.executable).parent}:/usr/bin:/bin",
        "PYTHONPATH": str(ROOT),
        "RAY_AUTH_MODE": "disabled",
        "RAY_ADDRESS": "ray-head:6379",
        "CUDA_MPS_PIPE_DIRECTORY": str(tmp_path / "pipe"),
        "CUDA_MPS_LOG_DIRECTORY": str(tmp_path / "mps-log"),
    }
    return env, log


def worker(env: dict[str, str], **settings: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(ROOT / "docker" / "entrypoint"), "worker"],
        env={**env, **settings},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_gpu_worker_starts_mps_for_packed_trials_and_stops_it_after_ray(tmp_path):
    env, log = fake_tools(tmp_path, gpus=1)
    done = worker(env, RNNTUNE_GPUS_PER_TRIAL="0.25")
    assert done.returncode == 0, done.stderr
    calls = log.read_text().splitlines()
    assert calls[0] == "mps -d" and calls[1].startswith("ray start --address=ray-head:6379 --block")
    assert calls[2] == "mps quit"  # told to quit once Ray's node ended
    assert "CUDA MPS control daemon started" in done.stderr


@pytest.mark.parametrize(
    ("gpus", "settings"),
    [
        (1, {"RNNTUNE_GPUS_PER_TRIAL": "1"}),  # a GPU per trial: auto leaves MPS off
        (1, {"RNNTUNE_GPUS_PER_TRIAL": "0.25", "RNNTUNE_MPS": "off"}),
        (0, {"RNNTUNE_GPUS_PER_TRIAL": "0.25", "RNNTUNE_MPS": "on"}),  # a CPU worker
    ],
)
def test_the_worker_leaves_mps_off(tmp_path, gpus, settings):
    env, log = fake_tools(tmp_path, gpus=gpus)
    done = worker(env, **settings)
    assert done.returncode == 0, done.stderr
    assert [line.split()[0] for line in log.read_text().splitlines()] == ["ray"]


def test_the_worker_refuses_a_bad_setting_and_a_missing_daemon_when_asked_for(tmp_path):
    env, log = fake_tools(tmp_path, gpus=1, with_mps=False)
    bad = worker(env, RNNTUNE_MPS="yes", RNNTUNE_GPUS_PER_TRIAL="0.25")
    assert bad.returncode == 64 and "RNNTUNE_MPS must be auto, on or off" in bad.stderr
    missing = worker(env, RNNTUNE_MPS="on", RNNTUNE_GPUS_PER_TRIAL="0.25")
    assert missing.returncode == 64 and "nvidia-cuda-mps-control is not in the container" in missing.stderr
    warned = worker(env, RNNTUNE_GPUS_PER_TRIAL="0.25")  # auto: train anyway, and say what it costs
    assert warned.returncode == 0 and "no MPS, no packing gain" in warned.stderr
    assert not log.exists() or "mps" not in log.read_text()
