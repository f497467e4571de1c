"""LSTM with the capped input gate min(i, 1 - f) (thesis §4.1; on by default in the papers, §4.6)."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from . import cuda_graphs, route
from .base import RecurrentCell, State, chrono_init_, uniform_init_
from .cpu_fused import CappedLSTMWindow
from .cuda_windows import Config, lstm_window
from .paths import CudaPath, MogrifierKernel


class LSTMCell(RecurrentCell):
    """i, j, f, o from [x, ĥ_prev]; c = f⊙c_prev + min(i, 1-f)⊙j; h = o⊙tanh(c) (thesis §4.1, §4.6).

    Parameters: w_x [m, 4n], w_h [n, 4n], bias [4n], gate blocks in the order i, j, f, o. The layer
    runs as one autograd Function with a hand-written backward (cpu_fused.py): the input projection
    W^x x + b is hoisted out of the recurrence, and weight gradients are GEMMs over many steps.
    On CUDA, with `cuda_path` "auto" (make_cell's default) or "graphs", training runs the same
    equations from cuda_windows.py replayed as CUDA graphs (cuda_graphs.py); "eager" keeps `own_forward` there.
    Which path a call takes is decided in one place (paths.choose, asked by route.py).
    """

    cuda_path: CudaPath = "auto"
    mogrifier_kernel: MogrifierKernel = "torch"

    def __init__(self, input_size: int, hidden_size: int, t_max: float | None = None) -> None:
        """`t_max`: Chrono-initialize b^f with it (thesis §4.4); None leaves b^f at zero."""
        super().__init__(input_size, hidden_size)
        n = hidden_size
        self.w_x = nn.Parameter(torch.empty(input_size, 4 * n))
        self.w_h = nn.Parameter(torch.empty(n, 4 * n))
        self.bias = nn.Parameter(torch.empty(4 * n))
        uniform_init_(self, input_size + n)
        if t_max is not None:
            chrono_init_(self.bias[2 * n : 3 * n], t_max)  # b^f ~ ln U(1, T_max - 1) (thesis §4.4)

    def fast_window(self) -> tuple[cuda_graphs.Window, Config, tuple[Tensor, ...]]:
        """The graphed path's window function, its Mogrifier ranks and its tensors (cuda_windows.py)."""
        return lstm_window, (), (self.w_x, self.w_h, self.bias)

    @property
    def fused_rounds(self) -> bool:
        """Whether the compiled and graphed windows run the Mogrifier rounds in one kernel per step."""
        return self.mogrifier_kernel == "fused" and getattr(self, "rounds", 0) > 0

    def forward(self, x: Tensor, state: State, state_mask: Tensor | None = None) -> tuple[Tensor, State]:
        return route.forward(self, x, state, state_mask, self.own_forward)

    def own_forward(self, x: Tensor, state: State, state_mask: Tensor | None = None) -> tuple[Tensor, State]:
        """The layer without the compiled or graphed window: the CPU path, and `eager` on CUDA."""
        h, c = state
        h_seq, h, c = CappedLSTMWindow.apply(x, self.w_x, self.w_h, self.bias, h, c, state_mask, ())
        return h_seq, (h, c)
