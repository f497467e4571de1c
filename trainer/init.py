"""The initial weights: `init: lamb` re-draws a built model's weights by the Mogrifier authors' rules,
and `forget_bias` sets the LSTM family's forget-gate bias (both after the model is built).

`init: rnntune` keeps what the modules draw when they are built: cell matrices U(±1/sqrt(in + n))
and biases 0 (cells/base.py `uniform_init_`), Mogrifier gates U(±1/sqrt(in)), embeddings U(±0.1),
the down-projection as nn.Linear draws it. `init: lamb` draws, as lamb does:

* every cell matrix, one per gate and input in lamb's tiles (lamb/cell.py `make_lstm_column`:
  'W_.*' and 'B_.*' take `cell_initializer`), from lamb/utils.py `variance_scaling_initializer(
  scale=1, mode='fan_in', distribution='truncated_normal')`: a normal of std sqrt(1.3 / fan_in) cut at
  two standard deviations (tf.truncated_normal), so std ≈ 1/sqrt(fan_in); fan_in = shape[-2] of the
  matrix, the rows of rnntune's [in, out] storage (the same for every gate's block; a stack of
  matrices [k, in, out] per matrix);
* every cell bias the same way with fan_in = its length n (a 1-D shape's fan_in is shape[-1]), and
  B_f with mean `forget_bias` ('B_f': variance_scaling_initializer(..., mean=forget_bias));
* a Mogrifier gate's full-rank Q (lamb/tiled_lstm.py `_do_feature_masking`: utils.linear in the
  cell's scope, so `cell_initializer`) the same way; a low-rank one's two factors from
  tf.initializers.truncated_normal(stddev=(1/(fan_in·rank))^(1/4)) (lamb/utils.py
  `make_low_rank_factorization_initializer`), the gate biases 0;
* the input embedding [V, e] and the untied output weights from tf.variance_scaling_initializer
  (scale 1, truncated normal: std exactly sqrt(1/e); lamb/lm.py `embedding_initializer` mode fan_out,
  `output_initializer` mode fan_in), the softmax bias 0;
* the down-projection orthogonal (lamb/lm.py: `utils.linear(..., initializer=utils.orthogonal_initializer())`).

The other cells (RLSTM, the multiplicative ones), which lamb does not have, take the same rules for
their matrices and biases. A mixture of softmaxes keeps rnntune's initialization.
"""

from __future__ import annotations

import math
from typing import cast

import torch
from torch import Tensor, nn

from .cells import RecurrentCell
from .cells.lstm import LSTMCell
from .cells.mogrifier import MogrifierGate
from .cells.rlstm import RLSTMCell
from .config import TrainConfig

# lamb/utils.py variance_scaling_initializer: "To get stddev = math.sqrt(scale / n) need to adjust
# for truncated": trunc_stddev = math.sqrt(1.3 * scale / n).
LAMB_TRUNCATION_ADJUSTMENT = 1.3
# tf.variance_scaling_initializer's adjustment: stddev = sqrt(scale / n) / .87962566103423978, the
# standard deviation of a unit normal cut at ±2.
TF_TRUNCATED_STD = 0.87962566103423978


def truncated_normal_(t: Tensor, std: float, mean: float = 0.0) -> None:
    """tf.truncated_normal(shape, mean, std): a normal of `std` with draws beyond 2 std re-drawn."""
    with torch.no_grad():
        nn.init.trunc_normal_(t, mean, std, mean - 2.0 * std, mean + 2.0 * std)


def lamb_variance_scaling_(t: Tensor, fan_in: int, mean: float = 0.0) -> None:
    """lamb/utils.py variance_scaling_initializer(scale=1, 'fan_in', 'truncated_normal', mean)."""
    truncated_normal_(t, math.sqrt(LAMB_TRUNCATION_ADJUSTMENT / fan_in), mean)


def forget_gate_bias(cell: RecurrentCell) -> Tensor:
    """The b_f block of an LSTM-family cell's bias (gate blocks i, j, f, o, as Chrono sets it)."""
    if not isinstance(cell, LSTMCell | RLSTMCell):
        raise ValueError(f"{type(cell).__name__} has no forget gate")
    n = cell.hidden_size
    return cell.bias[2 * n : 3 * n]


def _lamb_gate_(gate: MogrifierGate) -> None:
    """A Mogrifier round's Q (or R): full rank as the cell's matrices, low rank as lamb's factors."""
    if gate.rank > 0:
        fan_in = gate.w_in.shape[0]
        std = (1.0 / (fan_in * gate.rank)) ** 0.25
        truncated_normal_(gate.w_in, std)
        truncated_normal_(gate.w_out, std)
    else:
        lamb_variance_scaling_(gate.weight, gate.weight.shape[0])
    with torch.no_grad():
        gate.bias.zero_()


def lamb_cell_(cell: RecurrentCell, forget_bias: float) -> None:
    """lamb's draws for one layer: matrices by their fan-in, biases by n, B_f around `forget_bias`."""
    gates = [cast(MogrifierGate, g) for g in cast(nn.ModuleList, getattr(cell, "gates", nn.ModuleList()))]
    in_gates = {id(p) for g in gates for p in g.parameters()}
    for g in gates:
        _lamb_gate_(g)
    for p in cell.parameters():
        if id(p) not in in_gates:
            lamb_variance_scaling_(p, p.shape[-2] if p.dim() >= 2 else cell.hidden_size)
    if isinstance(cell, LSTMCell | RLSTMCell):
        lamb_variance_scaling_(forget_gate_bias(cell), cell.hidden_size, mean=forget_bias)


def _lamb_output_side_(model: nn.Module) -> None:
    """Embeddings from tf.variance_scaling_initializer (std sqrt(1/e)), the projection orthogonal."""
    embedding = getattr(model, "embedding", None)
    out_embedding = getattr(model, "out_embedding", None)
    projection = getattr(model, "projection", None)
    for weight in (
        embedding.weight if embedding is not None else None,
        out_embedding,
    ):
        if weight is not None:
            truncated_normal_(weight, math.sqrt(1.0 / weight.shape[1]) / TF_TRUNCATED_STD)
    if projection is not None:
        with torch.no_grad():
            nn.init.orthogonal_(projection.weight)


def initialize_(model: nn.Module, cfg: TrainConfig) -> None:
    """Apply `cfg.init` and `cfg.forget_bias` to every language model inside `model` (one, or the
    reverse copy task's encoder and decoder); rnntune's init with forget_bias 0 changes nothing."""
    stacks = [m for m in model.modules() if isinstance(getattr(m, "layers", None), nn.ModuleList)]
    for lm in stacks:
        for layer in cast(nn.ModuleList, lm.layers):
            cell = cast(RecurrentCell, layer)
            if cfg.init == "lamb":
                lamb_cell_(cell, cfg.forget_bias)
            elif cfg.forget_bias != 0.0:
                with torch.no_grad():
                    forget_gate_bias(cell).fill_(cfg.forget_bias)
        if cfg.init == "lamb":
            _lamb_output_side_(lm)
