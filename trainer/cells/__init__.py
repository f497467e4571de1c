"""Recurrent cells, one module per cell, all behind the RecurrentCell contract (see base.py)."""

from __future__ import annotations

from typing import Protocol

from .base import RecurrentCell, State, chrono_init_
from .lstm import LSTMCell
from .mgru import MGRUCell
from .mlstm import MLSTMCell
from .mogrifier import MogrifierLSTMCell
from .rlstm import MogrifierRLSTMCell, RLSTMCell
from .tmgru import TMGRUCell
from .tmlstm import TMLSTMCell


class CellFactory(Protocol):
    """A cell class: every cell takes its sizes and the Chrono `t_max` (thesis §4.4)."""

    def __call__(self, input_size: int, hidden_size: int, *, t_max: float) -> RecurrentCell: ...


CELLS: dict[str, CellFactory] = {
    "lstm": LSTMCell,
    "mogrifier_lstm": MogrifierLSTMCell,
    "rlstm": RLSTMCell,
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
) -> RecurrentCell:
    """Build the cell called `name` (a TrainConfig.cell value) for one layer.

    `mogrifier_rounds` and `mogrifier_rank` apply where the papers mogrify: the Mogrifier LSTM,
    and the RLSTM, which with rounds > 0 is Circling Back's Mogrifier RLSTM (§3; thesis §4.2 eq. 1)
    and with 0 the plain RLSTM. The other cells ignore them. Every cell takes `t_max` for the
    Chrono initialization of its forget (or update) gate bias (thesis §4.4).
    """
    if name not in CELLS:
        raise ValueError(f"cell must be one of {sorted(CELLS)}, not {name!r}")
    if name == "mogrifier_lstm":
        return MogrifierLSTMCell(
            input_size, hidden_size, t_max=t_max, rounds=mogrifier_rounds, rank=mogrifier_rank
        )
    if name == "rlstm" and mogrifier_rounds > 0:
        return MogrifierRLSTMCell(
            input_size, hidden_size, t_max=t_max, rounds=mogrifier_rounds, rank=mogrifier_rank
        )
    return CELLS[name](input_size, hidden_size, t_max=t_max)


__all__ = ["CELLS", "RecurrentCell", "State", "chrono_init_", "make_cell"]
