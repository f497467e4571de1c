"""Training tokens/s of our recurrent cells against torch.nn.LSTM in the same language model.

Every model is the same small LM — embedding → 2 recurrent layers → softmax over the vocabulary —
trained with RAdam on random tokens; one training step is forward, backward and optimizer step on a
BPTT window. The models take turns step by step, so load from other processes hits them alike; the
table reports the median step. Achieved FLOP/s counts matrix-multiply FLOPs (training ≈ 3× forward)
and is given as a fraction of this machine's float32 matmul peak, measured in the same run.
On a CPU that other processes share, read the CPU-time columns (see Stopwatch).

On CUDA each model runs alone (a GPU is not shared): for each of the trainer's precisions (fp32,
tf32: TensorFloat-32 matmuls and cuDNN, bf16: autocast), cuDNN's
nn.LSTM and every cell on both of its CUDA paths (`cuda_path`: eager, and graphs, which captures
each layer's window as CUDA graphs, trainer/cells/cuda_graphs.py; for the Mogrifier cells also `fused`:
graphs with `mogrifier_kernel: fused`, every round of a step in one Triton kernel), with the ratio to nn.LSTM in the
same precision, the peak GPU memory of the row (torch.cuda.max_memory_allocated, model and
optimizer included) and the first step's time, which on the graphs path holds the one-off
torch.compile and capture cost.

    python -m bench.trainer_speed                 # PTB-like size, 1 CPU thread
    python -m bench.trainer_speed --quick         # a small size, for a smoke run
    python -m bench.trainer_speed --device cuda --steps 20   # against cuDNN's LSTM, every path
"""

from __future__ import annotations

import argparse
import contextlib
import platform
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import torch
from torch import Tensor, nn

from trainer.cells import CUDA_PATHS, CudaPath, MogrifierKernel, RecurrentCell, cpu_onednn, make_cell

# A row's path: a cuda_path, or `fused` (graphs with the Mogrifier rounds in one kernel per step).
FUSED = "fused"
MOGRIFIER_MODELS = ("mogrifier_lstm", "mogrifier_rlstm")


@dataclass(frozen=True)
class Size:
    layers: int
    hidden: int
    vocab: int
    bptt: int
    batch: int


PTB_LIKE = Size(layers=2, hidden=650, vocab=10_000, bptt=70, batch=64)
QUICK = Size(layers=2, hidden=128, vocab=2_000, bptt=20, batch=16)
MOGRIFIER_ROUNDS, MOGRIFIER_RANK = 5, 50


class TorchLSTMLM(nn.Module):
    """The baseline: torch.nn.LSTM (oneDNN on CPU, cuDNN on CUDA) in the same LM."""

    def __init__(self, size: Size) -> None:
        super().__init__()
        self.embedding = nn.Embedding(size.vocab, size.hidden)
        self.rnn = nn.LSTM(size.hidden, size.hidden, num_layers=size.layers)
        self.softmax = nn.Linear(size.hidden, size.vocab)

    def forward(self, tokens: Tensor) -> Tensor:
        h, _ = self.rnn(self.embedding(tokens))
        return self.softmax(h)


class CellLM(nn.Module):
    """The same LM with a stack of rnntune cells (trainer.cells.make_cell)."""

    def __init__(
        self,
        size: Size,
        cell: str,
        cuda_path: CudaPath = "graphs",
        kernel: MogrifierKernel = "torch",
        mogrifier_rounds: int = 0,
        mogrifier_rank: int = 0,
    ) -> None:
        super().__init__()
        self.embedding = nn.Embedding(size.vocab, size.hidden)
        self.layers = nn.ModuleList(
            make_cell(
                cell,
                size.hidden,
                size.hidden,
                cuda_path=cuda_path,
                mogrifier_kernel=kernel,
                mogrifier_rounds=mogrifier_rounds,
                mogrifier_rank=mogrifier_rank,
            )
            for _ in range(size.layers)
        )
        self.softmax = nn.Linear(size.hidden, size.vocab)

    def forward(self, tokens: Tensor) -> Tensor:
        x = self.embedding(tokens)
        for layer in self.layers:
            cell = cast(RecurrentCell, layer)  # what make_cell built (ModuleList types its items as Module)
            x, _ = cell(x, cell.zero_state(x.shape[1], x.device, x.dtype))
        return self.softmax(x)


def forward_flops_per_token(name: str, size: Size) -> int:
    """Matrix-multiply FLOPs of one token's forward pass (2 per multiply-add)."""
    m = n = size.hidden
    rounds = MOGRIFIER_ROUNDS * MOGRIFIER_RANK * (m + n)
    per_layer = {
        "torch.nn.LSTM": m * 4 * n + n * 4 * n,
        "lstm": m * 4 * n + n * 4 * n,
        # Each Mogrifier round is a rank-k gate: k·(in + out) multiply-adds (Mogrifier paper §2).
        "mogrifier_lstm": m * 4 * n + n * 4 * n + rounds,
        # RLSTM (thesis §4.1): i, j from x; i, j, f from h_prev; W^fu (i⊙j); W^oc c.
        "rlstm": m * 2 * n + n * 3 * n + n * n + n * n,
        "mogrifier_rlstm": m * 2 * n + n * 3 * n + n * n + n * n + rounds,
    }[name]
    return 2 * (size.layers * per_layer + n * size.vocab)


def build(
    name: str, size: Size, cuda_path: CudaPath = "graphs", kernel: MogrifierKernel = "torch"
) -> nn.Module:
    if name == "torch.nn.LSTM":
        return TorchLSTMLM(size)
    mogrifier = {"mogrifier_rounds": MOGRIFIER_ROUNDS, "mogrifier_rank": MOGRIFIER_RANK}
    if name == "mogrifier_lstm":
        return CellLM(size, name, cuda_path, kernel, **mogrifier)
    if name == "mogrifier_rlstm":  # the RLSTM with rounds > 0 (make_cell)
        return CellLM(size, "rlstm", cuda_path, kernel, **mogrifier)
    return CellLM(size, name, cuda_path)


class Stopwatch:
    """Wall time, and on CPU also this process's CPU time per thread.

    On a machine whose cores other processes share, CPU time counts only the cycles this process
    got, so its ratios hold steadier than wall-time ones (it still feels their cache and memory
    traffic). On CUDA both clocks are wall time after a synchronize.
    """

    def __init__(self, device: torch.device) -> None:
        self.device = device

    def now(self) -> tuple[float, float]:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
            wall = time.perf_counter()
            return wall, wall
        return time.perf_counter(), time.process_time() / torch.get_num_threads()


def matmul_peaks(watch: Stopwatch, dim: int) -> dict[str, float]:
    """Measured float32 FLOP/s of a dim×dim product (the best of a few, CPU-time clock).

    On CPU both of torch's libraries are measured: torch.mm (MKL, which takes its AVX2 path on AMD
    CPUs) and oneDNN (what torch.nn.LSTM and our fused cells use); the machine's peak is the higher.
    """
    a = torch.randn(dim, dim, device=watch.device)
    b = torch.randn(dim, dim, device=watch.device)
    products: dict[str, Callable[[Tensor, Tensor], Tensor]] = {"torch.mm": torch.mm}
    if cpu_onednn.available(a):
        products["oneDNN"] = cpu_onednn.matmul
    peaks = {}
    for name, product in products.items():
        product(a, b)
        best = float("inf")
        for _ in range(5):
            _, start = watch.now()
            product(a, b)
            best = min(best, watch.now()[1] - start)
        peaks[name] = 2 * dim**3 / best
    return peaks


VECTOR_FLAGS = ("avx2", "avx512", "amx", "fma", "avx_vnni")


def processor(device: torch.device) -> str:
    """The CPU model and its vector extensions (avx2, avx512*, amx*), or the GPU's name on CUDA."""
    if device.type == "cuda":
        return f"GPU {torch.cuda.get_device_name(device)}"
    model, family, flags = platform.processor() or platform.machine(), "", []
    try:
        info = Path("/proc/cpuinfo").read_text()
    except OSError:
        info = ""
    for line in info.splitlines():
        key, _, value = (part.strip() for part in line.partition(":"))
        if key == "model name":
            model = value
        elif key in ("cpu family", "model"):
            family += f", {key} {value}"
        elif key == "flags":
            flags = [f for f in value.split() if f.startswith(VECTOR_FLAGS)]
            break
    model += f" ({family[2:]})" if family else ""
    return f"CPU {model}; vector extensions: {' '.join(flags) or 'unknown'}; torch's CPU kernels: " + (
        torch.backends.cpu.get_cpu_capability()
    )


class Trainee:
    """One model, its optimizer, and a fixed batch of random tokens."""

    def __init__(
        self,
        name: str,
        size: Size,
        device: torch.device,
        seed: int,
        cuda_path: CudaPath = "graphs",
        autocast: torch.dtype | None = None,
        kernel: MogrifierKernel = "torch",
    ) -> None:
        torch.manual_seed(seed)
        self.name = name
        self.autocast = autocast
        self.model = build(name, size, cuda_path, kernel).to(device)
        self.optimizer = torch.optim.RAdam(self.model.parameters(), lr=1e-3)
        self.tokens = torch.randint(size.vocab, (size.bptt + 1, size.batch), device=device)
        self.seconds: list[float] = []
        self.cpu_seconds: list[float] = []

    def step(self, watch: Stopwatch) -> None:
        """One timed training step: summed cross-entropy over the window, averaged over the batch."""
        start, cpu_start = watch.now()
        amp = (
            torch.autocast(watch.device.type, dtype=self.autocast)
            if self.autocast is not None
            else contextlib.nullcontext()
        )
        with amp:
            logits = self.model(self.tokens[:-1])
            loss = (
                nn.functional.cross_entropy(
                    logits.flatten(0, 1).float(), self.tokens[1:].flatten(), reduction="sum"
                )
                / self.tokens.shape[1]
            )
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        end, cpu_end = watch.now()
        self.seconds.append(end - start)
        self.cpu_seconds.append(cpu_end - cpu_start)


def label(name: str) -> str:
    if name in ("mogrifier_lstm", "mogrifier_rlstm"):
        return f"{name} r={MOGRIFIER_ROUNDS},k={MOGRIFIER_RANK}"
    return name


# The trainer's `precision` settings: (autocast dtype, TensorFloat-32 matmuls and cuDNN).
PRECISIONS: dict[str, tuple[torch.dtype | None, bool]] = {
    "fp32": (None, False),
    "tf32": (None, True),
    "bf16": (torch.bfloat16, False),
}


def run_cuda(
    names: list[str],
    size: Size,
    device: torch.device,
    steps: int,
    paths: tuple[str, ...] = ("graphs", FUSED, "eager"),
    precisions: tuple[str, ...] = tuple(PRECISIONS),
) -> None:
    """One model at a time per precision: nn.LSTM (cuDNN), then each cell on each CUDA path."""
    watch = Stopwatch(device)
    tokens = size.bptt * size.batch
    cuda = torch.version.cuda
    print(
        f"device {device}, torch {torch.__version__}, CUDA {cuda}, cuDNN {torch.backends.cudnn.version()}, {size}"
    )
    print(processor(device))
    print(f"medians of {steps} training steps after one warm-up step; peak = max_memory_allocated")
    print(
        f"{'model':<30}{'path':>8}{'precision':>15}{'ms/step':>9}{'tokens/s':>10}"
        f"{'vs cuDNN':>10}{'peak MiB':>10}{'1st step s':>12}"
    )
    for precision in precisions:
        dtype, tf32 = PRECISIONS[precision]
        torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.backends.cudnn.allow_tf32 = tf32
        base = None
        for name in names:
            row_paths: tuple[str | None, ...] = (None,) if name == "torch.nn.LSTM" else paths
            if name not in MOGRIFIER_MODELS:  # no rounds: `fused` would be the graphs row again
                row_paths = tuple(p for p in row_paths if p != FUSED)
            for path in row_paths:
                torch.cuda.empty_cache()
                torch.cuda.reset_peak_memory_stats(device)
                try:
                    cuda_path: CudaPath = "graphs" if path == FUSED else path or "eager"  # type: ignore[assignment]
                    kernel: MogrifierKernel = "fused" if path == FUSED else "torch"
                    trainee = Trainee(name, size, device, 0, cuda_path, dtype, kernel)
                    trainee.step(watch)  # the first step: on the graphs path, compilation and capture
                    first = trainee.seconds[0]
                    trainee.step(watch)
                    trainee.seconds.clear()
                    for _ in range(steps):
                        trainee.step(watch)
                except RuntimeError as err:  # one row's failure (e.g. out of memory) is a row of the table
                    print(
                        f"{label(name):<30}{path or 'cuDNN':>8}{precision:>15}  failed: {err}".splitlines()[0]
                    )
                    continue
                rate = tokens / statistics.median(trainee.seconds)
                base = rate if name == "torch.nn.LSTM" else base
                ratio = f"{rate / base:>9.2f}x" if base else f"{'-':>10}"
                peak_mib = torch.cuda.max_memory_allocated(device) / 2**20
                print(
                    f"{label(name):<30}{path or 'cuDNN':>8}{precision:>15}{1e3 * tokens / rate:>9.1f}"
                    f"{rate:>10.0f}{ratio}{peak_mib:>10.0f}{first:>12.1f}"
                )
                del trainee


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--device", default="cpu", help="cpu or cuda (default: cpu)")
    parser.add_argument("--threads", type=int, default=1, help="CPU threads for torch (default: 1)")
    parser.add_argument("--steps", type=int, default=5, help="timed steps per model (default: 5)")
    parser.add_argument("--quick", action="store_true", help=f"small size {QUICK} instead of {PTB_LIKE}")
    parser.add_argument(
        "--models",
        help="comma-separated subset of torch.nn.LSTM, lstm, mogrifier_lstm, rlstm, mogrifier_rlstm "
        "(default: all but mogrifier_rlstm on CPU, all on CUDA)",
    )
    parser.add_argument(
        "--paths",
        default=f"graphs,{FUSED},eager",
        help=f"CUDA only: comma-separated cuda_path values of {', '.join(CUDA_PATHS)}, or {FUSED} (graphs with "
        "the Mogrifier rounds in one Triton kernel per step; Mogrifier models only) (default: graphs,fused,eager; "
        "auto is graphs unless something fails)",
    )
    parser.add_argument(
        "--precisions",
        default=",".join(PRECISIONS),
        help=f"CUDA only: comma-separated subset of {', '.join(PRECISIONS)} (default: all)",
    )
    args = parser.parse_args(argv)
    paths = tuple(args.paths.split(","))
    precisions = tuple(args.precisions.split(","))
    for value, allowed, flag in (
        (paths, (*CUDA_PATHS, FUSED), "--paths"),
        (precisions, tuple(PRECISIONS), "--precisions"),
    ):
        if not set(value) <= set(allowed):
            parser.error(f"{flag} takes a subset of {', '.join(allowed)}, got {','.join(value)}")

    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    size = QUICK if args.quick else PTB_LIKE
    default_models = "torch.nn.LSTM,lstm,mogrifier_lstm,rlstm"
    if device.type == "cuda":
        default_models += ",mogrifier_rlstm"
    names = (args.models or default_models).split(",")
    if "torch.nn.LSTM" not in names:
        names.insert(0, "torch.nn.LSTM")
    if device.type == "cuda":
        run_cuda(names, size, device, args.steps, paths, precisions)
        return

    watch = Stopwatch(device)
    peaks = matmul_peaks(watch, 2048 if args.quick else 4096)
    peak = max(peaks.values())
    trainees = [Trainee(name, size, device, seed=0) for name in names]
    for trainee in trainees:  # warm-up: allocator, lazy initialization
        trainee.step(watch)
        trainee.seconds.clear()
        trainee.cpu_seconds.clear()
    for _ in range(args.steps):  # round robin, so that outside load hits every model alike
        for trainee in trainees:
            trainee.step(watch)

    tokens = size.bptt * size.batch
    print(f"device {device} ({torch.get_num_threads()} threads), torch {torch.__version__}, {size}")
    print(processor(device))
    measured = ", ".join(f"{name} {flops / 1e9:.1f}" for name, flops in peaks.items())
    print(
        f"float32 matmul peak {peak / 1e9:.1f} GFLOP/s ({measured}); medians of {args.steps} training steps;"
    )
    print("'CPU' columns use this process's CPU time per thread (see Stopwatch), FLOP/s counts matmuls.")
    print(
        f"{'model':<26}{'ms/step':>9}{'tokens/s':>10}{'vs nn.LSTM':>12}"
        f"{'CPU tok/s':>11}{'vs nn.LSTM':>12}{'CPU GFLOP/s':>13}{'of peak':>9}"
    )
    base = tokens / statistics.median(trainees[0].seconds)
    cpu_base = tokens / statistics.median(trainees[0].cpu_seconds)
    for trainee in trainees:
        rate = tokens / statistics.median(trainee.seconds)
        cpu_rate = tokens / statistics.median(trainee.cpu_seconds)
        flops = 3 * forward_flops_per_token(trainee.name, size) * cpu_rate
        print(
            f"{label(trainee.name):<26}{1e3 * tokens / rate:>9.0f}{rate:>10.0f}{rate / base:>11.2f}x"
            f"{cpu_rate:>11.0f}{cpu_rate / cpu_base:>11.2f}x{flops / 1e9:>13.1f}{flops / peak:>9.0%}"
        )


if __name__ == "__main__":
    main()
