"""Mogrifier LSTM: x and h_prev gate each other for r rounds, then the capped LSTM runs.

Mogrifier paper §2 eqs. (1)-(2); with the thesis' capped input gate (§4.1, §4.6) in the LSTM.
"""

from __future__ import annotations

import math
from typing import cast

import torch
from torch import Tensor, nn

from . import cuda_graphs
from .base import State
from .cpu_fused import CappedLSTMWindow
from .cuda_windows import Config, fused_lstm_window, lstm_step, lstm_window
from .lstm import LSTMCell


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

    def forward(self, u: Tensor) -> Tensor:
        """Q u + b for row vectors u [B, in]."""
        if self.rank > 0:
            return torch.addmm(self.bias, u @ self.w_in, self.w_out)
        return torch.addmm(self.bias, u, self.weight)

    def tensors(self) -> tuple[Tensor, ...]:
        """(w_in, w_out, bias) for a low-rank gate, (weight, bias) for a full-rank one."""
        return (self.w_in, self.w_out, self.bias) if self.rank > 0 else (self.weight, self.bias)


def _uniform(fan_in: int, fan_out: int) -> Tensor:
    """U(±1/sqrt(fan_in)) like nn.Linear: small, so 2σ(Q u) starts near the identity (Mogrifier §2)."""
    bound = 1.0 / math.sqrt(fan_in)
    return torch.empty(fan_in, fan_out).uniform_(-bound, bound)


def make_gates(input_size: int, hidden_size: int, rounds: int, rank: int) -> nn.ModuleList:
    """Q^i: h → x-sized gate for odd i (eq. 1); R^i: x → h-sized gate for even i (eq. 2)."""
    if rounds < 0:
        raise ValueError(f"mogrifier_rounds must be >= 0, not {rounds}")
    m, n = input_size, hidden_size
    return nn.ModuleList(
        MogrifierGate(n, m, rank) if i % 2 == 1 else MogrifierGate(m, n, rank) for i in range(1, rounds + 1)
    )


def mogrify(x: Tensor, h: Tensor, gates: nn.ModuleList) -> tuple[Tensor, Tensor]:
    """x↑, h↑ after len(gates) rounds (Mogrifier paper §2 eqs. (1)-(2); Circling Back §3 `mogrify`).

    x^i = 2σ(Q^i h^{i-1}) ⊙ x^{i-2} for odd i, h^i = 2σ(R^i x^{i-1}) ⊙ h^{i-2} for even i, with
    x^{-1} = x and h^0 = h (the state-dropped ĥ_prev in thesis §4.2 eq. 1).
    """
    for i, gate in enumerate(gates, start=1):
        if i % 2 == 1:
            x = 2.0 * torch.sigmoid(gate(h)) * x
        else:
            h = 2.0 * torch.sigmoid(gate(x)) * h
    return x, h


def mogrify_no_zigzag(x: Tensor, h: Tensor, gates: nn.ModuleList) -> tuple[Tensor, Tensor]:
    """x↑, h↑ of the "no zigzag" ablation (Mogrifier paper §4.1, Figure 2, Table 3): every gate reads
    the original inputs, x^i = 2σ(Q^i h^0) ⊙ x^{i-2} for odd i and h^i = 2σ(R^i x^{-1}) ⊙ h^{i-2} for
    even i, instead of the latest update of the other side (eqs. (1)-(2))."""
    x0, h0 = x, h
    for i, gate in enumerate(gates, start=1):
        if i % 2 == 1:
            x = 2.0 * torch.sigmoid(gate(h0)) * x
        else:
            h = 2.0 * torch.sigmoid(gate(x0)) * h
    return x, h


class MogrifierLSTMCell(LSTMCell):
    """LSTM(x↑, c_prev, h↑_prev) after r rounds of mutual gating (Mogrifier paper §2 eqs. (1)-(2)).

    Round i (1-based) is a Q^i gate of x for odd i and an R^i gate of h for even i, each with its
    own weights and bias; rank k <= 0 means full-rank Q^i, R^i. The LSTM weights are created first,
    exactly as LSTMCell creates them, so r = 0 is the LSTM: same parameters, same initialization.
    """

    def __init__(
        self, input_size: int, hidden_size: int, t_max: float | None = None, rounds: int = 5, rank: int = 0
    ) -> None:
        super().__init__(input_size, hidden_size, t_max=t_max)
        self.rounds = rounds
        self.gates = make_gates(input_size, hidden_size, rounds, rank)

    def fast_window(self) -> tuple[cuda_graphs.Window, Config, tuple[Tensor, ...]]:
        """The graphed path's window function, one rank per round, and the LSTM's then the gates' tensors."""
        gates = [cast(MogrifierGate, gate) for gate in self.gates]
        params = (self.w_x, self.w_h, self.bias, *(p for gate in gates for p in gate.tensors()))
        window = fused_lstm_window if self.fused_rounds else lstm_window
        return window, tuple(gate.rank for gate in gates), params

    def own_forward(self, x: Tensor, state: State, state_mask: Tensor | None = None) -> tuple[Tensor, State]:
        if self.rounds == 0:
            return super().own_forward(x, state, state_mask)
        h, c = state
        # x↑ depends on h_prev, so the input projection stays in the loop: [x↑, h↑] @ [W^x; W^h]
        # is one GEMM per step; the rounds and the LSTM run inside one Function (cpu_fused.py).
        gates = [cast(MogrifierGate, gate) for gate in self.gates]
        ranks = tuple(gate.rank for gate in gates)
        params = [p for gate in gates for p in gate.tensors()]
        h_seq, h, c = CappedLSTMWindow.apply(
            x, self.w_x, self.w_h, self.bias, h, c, state_mask, ranks, *params
        )
        return h_seq, (h, c)


class NoZigzagMogrifierLSTMCell(MogrifierLSTMCell):
    """The Mogrifier LSTM of the "no zigzag" ablation (Mogrifier paper §4.1, Table 3: 55.0 validation
    perplexity against the Mogrifier's 54.1): the same gates and LSTM, with `mogrify_no_zigzag` for
    the rounds. It runs eagerly, step by step under autograd, on every device: the fused CPU
    Function and the CUDA windows implement the zigzag rounds only (make_cell sets `eager`)."""

    def own_forward(self, x: Tensor, state: State, state_mask: Tensor | None = None) -> tuple[Tensor, State]:
        h, c = state
        weights = torch.cat([self.w_x, self.w_h])  # [W_x; W_h], once per window
        outs = []
        for x_t in x.unbind(0):
            h_hat = h if state_mask is None else h * state_mask  # ĥ = h ⊙ M^state (thesis §4.2 eq. 1)
            x_up, h_up = mogrify_no_zigzag(x_t, h_hat, self.gates)
            g = torch.addmm(self.bias, torch.cat([x_up, h_up], dim=1), weights)
            h, c, _ = lstm_step(g, c, None)
            outs.append(h)
        return torch.stack(outs), (h, c)
