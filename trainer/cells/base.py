"""The contract every recurrent cell implements, and the Chrono forget-gate initialization.

A cell is one layer run over a whole BPTT window at once, so that each implementation can hoist
the input-side work out of the time loop and fuse what its equations allow.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

State = tuple[Tensor, ...]


class RecurrentCell(nn.Module):
    """One recurrent layer: maps inputs x[T, B, m] and a state to outputs h[T, B, n] and a state.

    `state_mask` is the variational state-dropout mask M^state (thesis §4.2 eq. 1): one [B, n]
    mask per sequence, multiplied into h_prev before it enters the recurrence (and, for the RLSTM,
    into c where the output gate reads it). None means no state dropout. The returned outputs
    are unmasked. The state is (h, c) for LSTM-family cells and (h,) for GRU-family cells, whose
    carry (1 - z) ⊙ h_prev keeps the unmasked h_prev.
    """

    input_size: int
    hidden_size: int

    def __init__(self, input_size: int, hidden_size: int) -> None:
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size

    def zero_state(self, batch_size: int, device: torch.device | str, dtype: torch.dtype) -> State:
        """The initial state c_0, h_0 = 0, 0 (thesis §4.2 eq. 1) as (h, c); GRU cells return (h,)."""
        z = torch.zeros(batch_size, self.hidden_size, device=device, dtype=dtype)
        return (z, z.clone())

    def forward(self, x: Tensor, state: State, state_mask: Tensor | None = None) -> tuple[Tensor, State]:
        raise NotImplementedError


class GRUStateCell(RecurrentCell):
    """A cell whose state is h alone (the GRU family): `zero_state` gives (h_0,) = (0,)."""

    def zero_state(self, batch_size: int, device: torch.device | str, dtype: torch.dtype) -> State:
        return (torch.zeros(batch_size, self.hidden_size, device=device, dtype=dtype),)


def chrono_init_(bias: Tensor, t_max: float) -> None:
    """Chrono initialization of forget-gate biases, b_f ~ ln U(1, T_max - 1) (thesis §4.4)."""
    if not t_max >= 2.0:
        raise ValueError(f"t_max must be at least 2 for Chrono init ln U(1, t_max - 1), not {t_max}")
    with torch.no_grad():
        bias.uniform_(1.0, t_max - 1.0).log_()


def chrono_update_gate_init_(bias: Tensor, t_max: float) -> None:
    """Chrono init for a GRU update gate, b_z ~ -ln U(1, T_max - 1).

    In h = (1 - z) ⊙ h_prev + z ⊙ h̃ the carry 1 - z = σ(-a_z) plays the forget gate's role, so
    negating the thesis' b_f (§4.4) gives the GRU the same spread of initial memory time scales.
    """
    chrono_init_(bias, t_max)
    with torch.no_grad():
        bias.neg_()


def uniform_init_(module: nn.Module, fan: int) -> None:
    """Uniform(±1/sqrt(fan)) init of every weight matrix (and stack of them); biases start at zero."""
    bound = math.sqrt(1.0 / fan)
    for p in module.parameters():
        if p.dim() >= 2:
            nn.init.uniform_(p, -bound, bound)
        else:
            nn.init.zeros_(p)
