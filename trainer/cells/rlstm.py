"""Rewired LSTM: f is computed from i⊙j, i is capped at 1 - f, o is computed from c (thesis §4.1).

And the Mogrifier RLSTM, Circling Back's headline model (§3, Tables 1-2): the RLSTM on mogrified inputs.
"""

from __future__ import annotations

from typing import cast

import torch
from torch import Tensor, nn

from . import cuda_graphs, route
from .base import RecurrentCell, State, chrono_init_, uniform_init_
from .cuda_windows import Config, fused_rlstm_window, rlstm_window
from .deferred import DeferredMatmul, zeros_base
from .mogrifier import MogrifierGate, make_gates, mogrify
from .paths import CudaPath, MogrifierKernel


class RLSTMCell(RecurrentCell):
    """The RLSTM of thesis §4.1; the state mask also scales c where the output gate reads it (§4.2).

    Parameters: w_x [m, 2n] (W^ix, W^jx), w_h [n, 3n] (W^ih, W^jh, W^fh), w_fu [n, n], w_oc [n, n],
    bias [4n] (b^i, b^j, b^f, b^o). Because the cap keeps f + min(i, 1-f) <= 1 and |j| <= 1,
    |c| <= 1 for every unit at every step. On CUDA, with `cuda_path` "auto" or "graphs", training
    runs the same equations from cuda_windows.py replayed as CUDA graphs (cuda_graphs.py).
    """

    cuda_path: CudaPath = "auto"
    mogrifier_kernel: MogrifierKernel = "torch"

    def __init__(self, input_size: int, hidden_size: int, t_max: float | None = None) -> None:
        """`t_max`: Chrono-initialize b^f with it (thesis §4.4); None leaves b^f at zero."""
        super().__init__(input_size, hidden_size)
        n = hidden_size
        self.w_x = nn.Parameter(torch.empty(input_size, 2 * n))
        self.w_h = nn.Parameter(torch.empty(n, 3 * n))
        self.w_fu = nn.Parameter(torch.empty(n, n))
        self.w_oc = nn.Parameter(torch.empty(n, n))
        self.bias = nn.Parameter(torch.empty(4 * n))
        uniform_init_(self, input_size + n)
        if t_max is not None:
            chrono_init_(self.bias[2 * n : 3 * n], t_max)  # b^f ~ ln U(1, T_max - 1) (thesis §4.4)

    def fast_window(self) -> tuple[cuda_graphs.Window, Config, tuple[Tensor, ...]]:
        """The graphed path's window function, its Mogrifier ranks and its tensors (cuda_windows.py)."""
        return rlstm_window, (), (self.w_x, self.w_h, self.w_fu, self.w_oc, self.bias)

    @property
    def fused_rounds(self) -> bool:
        """Whether the compiled and graphed windows run the Mogrifier rounds in one kernel per step."""
        return self.mogrifier_kernel == "fused" and getattr(self, "rounds", 0) > 0

    def forward(self, x: Tensor, state: State, state_mask: Tensor | None = None) -> tuple[Tensor, State]:
        return route.forward(self, x, state, state_mask, self.own_forward)

    def own_forward(self, x: Tensor, state: State, state_mask: Tensor | None = None) -> tuple[Tensor, State]:
        """The layer without the compiled or graphed window: the CPU path, and `eager` on CUDA."""
        steps, batch, _ = x.shape
        n = self.hidden_size
        h, c = state
        b_ij, b_f, b_o = self.bias[: 2 * n], self.bias[2 * n : 3 * n], self.bias[3 * n :]
        gx = torch.addmm(b_ij, x.reshape(-1, self.input_size), self.w_x).view(steps, batch, 2 * n)
        from_h = DeferredMatmul(self.w_h, torch.cat([gx, b_f.expand(steps, batch, n)], dim=2))
        from_u = DeferredMatmul(self.w_fu, zeros_base(x, steps, batch, n))
        from_c = DeferredMatmul(self.w_oc, b_o.expand(steps, batch, n))
        outs = []
        for t in range(steps):
            h_hat = h if state_mask is None else h * state_mask  # ĥ = h ⊙ M^state (thesis §4.2 eq. 1)
            gi, gj, gf = from_h(t, h_hat).chunk(3, dim=1)
            i = torch.sigmoid(gi)  # i = σ(W^ix x + W^ih h_prev + b^i)
            j = torch.tanh(gj)  # j = tanh(W^jx x + W^jh h_prev + b^j)
            f = torch.sigmoid(gf + from_u(t, i * j))  # f = σ(W^fu (i ⊙ j) + W^fh h_prev + b^f)
            c = f * c + torch.minimum(i, 1.0 - f) * j  # c = f ⊙ c_prev + min(i, 1 - f) ⊙ j
            c_hat = c if state_mask is None else c * state_mask  # c ⊙ M^state (thesis §4.2)
            o = torch.sigmoid(from_c(t, c_hat))  # o = σ(W^oc (c ⊙ M^state) + b^o)
            h = o * torch.tanh(c)  # h = o ⊙ tanh(c)
            outs.append(h)
        return torch.stack(outs), (h, c)


class MogrifierRLSTMCell(RLSTMCell):
    """The Mogrifier RLSTM of Circling Back §3 / thesis §4.2 eq. 1: RLSTM(c_prev, mogrify(ĥ_prev, x)).

    The RLSTM weights are created first, exactly as RLSTMCell creates them, so r = 0 is the RLSTM.
    x↑ depends on h_prev, so the input projection runs inside the time loop. The state mask
    multiplies h_prev before mogrification and c where the output gate reads it (thesis §4.2).
    """

    def __init__(
        self, input_size: int, hidden_size: int, t_max: float | None = None, rounds: int = 5, rank: int = 0
    ) -> None:
        super().__init__(input_size, hidden_size, t_max=t_max)
        self.rounds = rounds
        self.gates = make_gates(input_size, hidden_size, rounds, rank)

    def fast_window(self) -> tuple[cuda_graphs.Window, Config, tuple[Tensor, ...]]:
        """The graphed path's window function, one rank per round, and the RLSTM's then the gates' tensors."""
        _, _, params = super().fast_window()
        gates = [cast(MogrifierGate, gate) for gate in self.gates]
        window = fused_rlstm_window if self.fused_rounds else rlstm_window
        return window, tuple(g.rank for g in gates), (*params, *(p for g in gates for p in g.tensors()))

    def own_forward(self, x: Tensor, state: State, state_mask: Tensor | None = None) -> tuple[Tensor, State]:
        if self.rounds == 0:
            return super().own_forward(x, state, state_mask)
        n = self.hidden_size
        h, c = state
        b_ij, b_f, b_o = self.bias[: 2 * n], self.bias[2 * n : 3 * n], self.bias[3 * n :]
        outs = []
        for t in range(x.shape[0]):
            h_hat = h if state_mask is None else h * state_mask  # ĥ = h ⊙ M^state
            x_up, h_up = mogrify(x[t], h_hat, self.gates)  # mogrify(ĥ_prev, x) (thesis §4.2 eq. 1)
            gi, gj = torch.addmm(b_ij, x_up, self.w_x).chunk(2, dim=1)
            hi, hj, hf = (h_up @ self.w_h).chunk(3, dim=1)
            i = torch.sigmoid(gi + hi)  # i = σ(W^ix x↑ + W^ih h↑ + b^i)
            j = torch.tanh(gj + hj)  # j = tanh(W^jx x↑ + W^jh h↑ + b^j)
            f = torch.sigmoid(torch.addmm(hf + b_f, i * j, self.w_fu))  # f = σ(W^fu (i⊙j) + W^fh h↑ + b^f)
            c = f * c + torch.minimum(i, 1.0 - f) * j  # c = f ⊙ c_prev + min(i, 1 - f) ⊙ j
            c_hat = c if state_mask is None else c * state_mask  # c ⊙ M^state (thesis §4.2)
            o = torch.sigmoid(torch.addmm(b_o, c_hat, self.w_oc))  # o = σ(W^oc (c ⊙ M^state) + b^o)
            h = o * torch.tanh(c)
            outs.append(h)
        return torch.stack(outs), (h, c)
