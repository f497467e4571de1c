"""Mogrifier LSTM: x and h_prev gate each other for r rounds, then the capped LSTM runs.

Mogrifier paper §2 eqs. (1)-(2); with the thesis' capped input gate (§4.1, §4.6) in the LSTM.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor, nn

from .base import State
from .deferred import DeferredMatmul, zeros_base
from .lstm import LSTMCell, lstm_pointwise


class MogrifierGate(nn.Module):
    """z = Q u + b, with Q full rank or factorized as Q = Q_left Q_right of rank k (Mogrifier paper §2).

    Stored for row vectors: full rank `weight` = Q^T [in, out]; low rank `w_in` = Q_right^T [in, k]
    and `w_out` = Q_left^T [k, out], so z = u w_in w_out + b.
    """

    def __init__(self, in_features: int, out_features: int, rank: int) -> None:
        super().__init__()
        self.rank = rank
        if rank > 0:
            self.w_in = nn.Parameter(_uniform(in_features, rank))
            self.w_out = nn.Parameter(_uniform(rank, out_features))
        else:
            self.weight = nn.Parameter(_uniform(in_features, out_features))
        self.bias = nn.Parameter(torch.zeros(out_features))

    def over_window(self, steps: int, batch: int, like: Tensor) -> Callable[[int, Tensor], Tensor]:
        """The gate as a per-step function z_t = Q u_t + b with weight gradients batched per window."""
        bias = self.bias.expand(steps, batch, -1)
        if self.rank <= 0:
            return DeferredMatmul(self.weight, bias)
        to_rank = DeferredMatmul(self.w_in, zeros_base(like, steps, batch, self.rank))
        from_rank = DeferredMatmul(self.w_out, bias)
        return lambda t, u: from_rank(t, to_rank(t, u))


def _uniform(fan_in: int, fan_out: int) -> Tensor:
    bound = 1.0 / math.sqrt(fan_in)
    return torch.empty(fan_in, fan_out).uniform_(-bound, bound)


class MogrifierLSTMCell(LSTMCell):
    """LSTM(x↑, c_prev, h↑_prev) after r rounds of mutual gating (Mogrifier paper §2 eqs. (1)-(2)).

    Round i (1-based) is a Q^i gate of x for odd i and an R^i gate of h for even i, each with its
    own weights and bias; rank k <= 0 means full-rank Q^i, R^i. The LSTM weights are created first,
    exactly as LSTMCell creates them, so r = 0 is the LSTM: same parameters, same initialization.
    """

    def __init__(
        self, input_size: int, hidden_size: int, t_max: float = 20.0, rounds: int = 5, rank: int = 0
    ) -> None:
        super().__init__(input_size, hidden_size, t_max=t_max)
        if rounds < 0:
            raise ValueError(f"mogrifier_rounds must be >= 0, not {rounds}")
        m, n = input_size, hidden_size
        self.rounds = rounds
        self.rank = rank
        # Q^i: h → x-sized gate for odd i (eq. 1); R^i: x → h-sized gate for even i (eq. 2).
        self.gates = nn.ModuleList(
            MogrifierGate(n, m, rank) if i % 2 == 1 else MogrifierGate(m, n, rank)
            for i in range(1, rounds + 1)
        )

    @staticmethod
    def mogrify(
        t: int, x: Tensor, h: Tensor, gates: list[Callable[[int, Tensor], Tensor]]
    ) -> tuple[Tensor, Tensor]:
        """(x↑, h↑): the highest-indexed x^i and h^i of Mogrifier paper §2 eqs. (1)-(2) at step t."""
        for i, gate in enumerate(gates, start=1):
            if i % 2 == 1:
                x = 2.0 * torch.sigmoid(gate(t, h)) * x  # eq. (1): x^i = 2σ(Q^i h^{i-1}) ⊙ x^{i-2}
            else:
                h = 2.0 * torch.sigmoid(gate(t, x)) * h  # eq. (2): h^i = 2σ(R^i x^{i-1}) ⊙ h^{i-2}
        return x, h

    def forward(self, x: Tensor, state: State, state_mask: Tensor | None = None) -> tuple[Tensor, State]:
        if self.rounds == 0:
            return super().forward(x, state, state_mask)
        steps, batch, _ = x.shape
        h, c = state
        # x↑ depends on h_prev, so the input projection stays in the loop; [x↑, h↑] @ [W^x; W^h]
        # is one GEMM per step with its weight gradient batched over the window (deferred.py).
        weight = torch.cat([self.w_x, self.w_h], dim=0)
        recurrent = DeferredMatmul(weight, self.bias.expand(steps, batch, -1))
        gates = [gate.over_window(steps, batch, x) for gate in self.gates]
        outs = []
        for t, x_t in enumerate(x.unbind(0)):
            h_hat = h if state_mask is None else h * state_mask  # h^0 = ĥ_prev (thesis §4.2 eq. 1)
            x_up, h_up = self.mogrify(t, x_t, h_hat, gates)
            h, c = lstm_pointwise(recurrent(t, torch.cat([x_up, h_up], dim=1)), c)
            outs.append(h)
        return torch.stack(outs), (h, c)
