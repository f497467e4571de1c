"""Recurrent cells, one module per cell, all behind the RecurrentCell contract (see base.py).

How they run: `paths` decides per call (and counts what ran), `route` asks it; the CPU path is
`cpu_fused` (its products through `cpu_onednn`), the CUDA path `cuda_windows` (a layer's window as
autograd ops) replayed by `cuda_graphs`, with the Mogrifier rounds optionally fused into one Triton
kernel per step (`cuda_rounds`, kernels in `cuda_rounds_kernels`); `fallback` holds whether the fast
path is trusted in this process, `deferred` the window-batched weight gradients both paths use.
"""

from __future__ import annotations

from typing import Protocol

from .base import RecurrentCell, State, chrono_init_
from .lstm import LSTMCell
from .mgru import MGRUCell
from .mlstm import MLSTMCell
from .mogrifier import MogrifierLSTMCell, NoZigzagMogrifierLSTMCell
from .paths import CUDA_PATHS, MOGRIFIER_KERNELS, CudaPath, MogrifierKernel
from .rlstm import MogrifierRLSTMCell, RLSTMCell
from .tmgru import TMGRUCell
from .tmlstm import TMLSTMCell


class CellFactory(Protocol):
    """A cell class: every cell takes its sizes and the Chrono `t_max` (thesis §4.4; None: no Chrono)."""

    def __call__(self, input_size: int, hidden_size: int, *, t_max: float | None) -> RecurrentCell: ...


class MultiplicativeFactory(Protocol):
    """A multiplicative cell class (Maupomé & Meurs): also takes the reading of its equations."""

    def __call__(
        self, input_size: int, hidden_size: int, *, t_max: float | None, form: str
    ) -> RecurrentCell: ...


CELLS: dict[str, CellFactory] = {
    "lstm": LSTMCell,
    "mogrifier_lstm": MogrifierLSTMCell,
    "rlstm": RLSTMCell,
    "mlstm": MLSTMCell,
    "tmlstm": TMLSTMCell,
    "mgru": MGRUCell,
    "tmgru": TMGRUCell,
}
MULTIPLICATIVE: dict[str, MultiplicativeFactory] = {
    "mlstm": MLSTMCell,
    "tmlstm": TMLSTMCell,
    "mgru": MGRUCell,
    "tmgru": TMGRUCell,
}


def make_cell(
    name: str,
    input_size: int,
    hidden_size: int,
    *,
    t_max: float = 20.0,
    mogrifier_rounds: int = 0,
    mogrifier_rank: int = 0,
    chrono_init: bool = False,
    multiplicative_form: str = "default",
    cuda_path: CudaPath = "auto",
    mogrifier_kernel: MogrifierKernel = "torch",
    mogrifier_zigzag: bool = True,
) -> RecurrentCell:
    """Build the cell called `name` (a TrainConfig.cell value) for one layer.

    `mogrifier_rounds` and `mogrifier_rank` apply where the papers mogrify: the Mogrifier LSTM,
    and the RLSTM, which with rounds > 0 is Circling Back's Mogrifier RLSTM (§3; thesis §4.2 eq. 1)
    and with 0 the plain RLSTM. The other cells ignore them. With `chrono_init` the cell's forget
    (or update) gate bias gets the Chrono initialization with `t_max` (thesis §4.4); without, it
    starts at zero like every other bias. `multiplicative_form` ("default", "corrected" or
    "printed") picks the form of the multiplicative cells' equations (mlstm.py); the other cells
    ignore it. `cuda_path` picks how
    the LSTM-family cells (LSTM, Mogrifier LSTM, RLSTM, Mogrifier RLSTM) train on CUDA: "auto" (the
    graphed path of cuda_graphs.py, falling back to eager for the process on any failure), "graphs"
    (the same, a failure is an error) or "eager"; it changes nothing on CPU, and the multiplicative
    cells run eagerly. `mogrifier_kernel` "fused" runs those paths' Mogrifier rounds in one Triton
    kernel per step (cuda_rounds.py), "torch" as torch ops. `mogrifier_zigzag` False builds the
    Mogrifier LSTM of the "no zigzag" ablation (Mogrifier paper §4.1, Table 3), which runs eagerly.
    """
    if name not in CELLS:
        raise ValueError(f"cell must be one of {sorted(CELLS)}, not {name!r}")
    if cuda_path not in CUDA_PATHS:
        raise ValueError(f"cuda_path must be one of {list(CUDA_PATHS)}, not {cuda_path!r}")
    if mogrifier_kernel not in MOGRIFIER_KERNELS:
        raise ValueError(
            f"mogrifier_kernel must be one of {list(MOGRIFIER_KERNELS)}, not {mogrifier_kernel!r}"
        )
    chrono = t_max if chrono_init else None
    cell: RecurrentCell
    if name == "mogrifier_lstm":
        kind = MogrifierLSTMCell if mogrifier_zigzag else NoZigzagMogrifierLSTMCell
        cell = kind(input_size, hidden_size, t_max=chrono, rounds=mogrifier_rounds, rank=mogrifier_rank)
    elif name == "rlstm" and mogrifier_rounds > 0:
        cell = MogrifierRLSTMCell(
            input_size, hidden_size, t_max=chrono, rounds=mogrifier_rounds, rank=mogrifier_rank
        )
    elif name in MULTIPLICATIVE:
        cell = MULTIPLICATIVE[name](input_size, hidden_size, t_max=chrono, form=multiplicative_form)
    else:
        cell = CELLS[name](input_size, hidden_size, t_max=chrono)
    if isinstance(cell, LSTMCell | RLSTMCell):  # the cells with a graphed CUDA path
        cell.cuda_path = "eager" if isinstance(cell, NoZigzagMogrifierLSTMCell) else cuda_path
        cell.mogrifier_kernel = mogrifier_kernel
    return cell


__all__ = [
    "CELLS",
    "CUDA_PATHS",
    "MOGRIFIER_KERNELS",
    "CudaPath",
    "MogrifierKernel",
    "RecurrentCell",
    "State",
    "chrono_init_",
    "make_cell",
]
