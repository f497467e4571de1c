"""`data_order: lamb`: the training streams of lamb's non-episodic training iterator.

lamb/training.py reads the training split through `corpus.get_batches(..., deterministic=False)`,
which is `equidistant_iterators(batch_size, random_starts=True, start_jitter=100)`
(lamb/corpus.py) feeding `get_non_episodic_batches`:

    start = random.randrange(n)                  # n: lines of the split, drawn once
    for i in range(num_iterators):
      def start_fn(start=start):
        return (start + random.randint(-start_jitter, start_jitter)) % n
      iterators.append(self.instance_iterator(start=start_fn, ...))
      start += self._share_of_iterator(n, num_iterators, i)   # (i+1)n//B - in//B

and `instance_iterator` calls `start()` at the beginning of every epoch, then yields the n lines
data[(offset+i) % n]. So stream i reads the whole split every epoch, from a line near
start + i·n//B, each epoch's offset jittered by its own draw in [-100, 100]. `get_non_episodic_batches`
keeps each stream's leftover tokens (`sources[i]`, which starts as [eos]) across windows and epochs,
so a stream never breaks, and training carries the state across epochs (only drop_state_probability
zeroes it). A window is the next num_steps tokens of each stream as input and the same shifted by
one as target; the target's last token is the next window's first input.

Here the split is the token stream the corpus holds, a line being what ends at `separator` (the <eos>
every word-level line and PTB-character line ends with, the newline of raw character corpora), or
each token where the split has none. Draws use a `random.Random` seeded from the run's seed, in
lamb's order, so the streams are lamb's given the same generator state.
"""

from __future__ import annotations

import random
from typing import Any

import torch
from torch import Tensor

from .data import EOS

# lamb/corpus.py get_batches: equidistant_iterators(..., start_jitter=100) for training.
START_JITTER = 100


def line_starts(ids: Tensor, separator: int | None) -> Tensor:
    """Token index where each line begins: 0 and every position after a `separator` (every token
    where there is none)."""
    n = ids.numel()
    if separator is None:
        return torch.arange(n)
    after = (ids == separator).nonzero().flatten() + 1
    starts = torch.cat([torch.zeros(1, dtype=torch.long), after[after < n]])
    return starts


class LambOrder:
    """`batch_size` endless streams over `ids` [N] as lamb's training iterator reads them."""

    def __init__(self, ids: Tensor, batch_size: int, seed: int, separator: int | None) -> None:
        self.ids = ids
        self.starts = line_starts(ids, separator)
        self.rng = random.Random(seed)
        lines = self.starts.numel()
        first = self.rng.randrange(lines)  # random_starts=True: one draw for all streams
        # Stream i's base line: start + Σ_{j<i} _share_of_iterator(n, B, j) = start + i·n // B.
        self.base = [first + i * lines // batch_size for i in range(batch_size)]
        self.head: list[int] = []  # each stream's next input token (the last target)
        self.epoch_start: list[int] = []  # token index where the stream's current epoch begins
        self.read: list[int] = []  # tokens of the current epoch already read
        self.epochs: list[int] = []  # epochs each stream has begun
        for i in range(batch_size):
            self._new_epoch(i, first=True)
            # get_non_episodic_batches: `sources` start as [eos]; without a separator the first token.
            self.head.append(separator if separator is not None else self._take(i, 1)[0])

    def _new_epoch(self, i: int, first: bool = False) -> None:
        """lamb's start_fn: the epoch's first line, base ± up to START_JITTER lines, mod the lines."""
        lines = self.starts.numel()
        offset = (self.base[i] + self.rng.randint(-START_JITTER, START_JITTER)) % lines
        start = int(self.starts[offset])
        if first:
            self.epoch_start.append(start)
            self.read.append(0)
            self.epochs.append(1)
        else:
            self.epoch_start[i], self.read[i] = start, 0
            self.epochs[i] += 1

    def _take(self, i: int, count: int) -> list[int]:
        """The next `count` tokens of stream i, starting new epochs as the current one runs out."""
        out: list[int] = []
        total = self.ids.numel()
        while len(out) < count:
            if self.read[i] == total:
                self._new_epoch(i)
            k = min(count - len(out), total - self.read[i])
            begin = (self.epoch_start[i] + self.read[i]) % total
            index = torch.arange(begin, begin + k) % total
            out.extend(self.ids[index].tolist())
            self.read[i] += k
        return out

    def next_window(self, steps: int) -> tuple[Tensor, Tensor]:
        """Inputs and targets [steps, B]: each stream's next `steps` targets, inputs one behind."""
        xs, ys = [], []
        for i in range(len(self.base)):
            y = self._take(i, steps)
            xs.append([self.head[i], *y[:-1]])
            ys.append(y)
            self.head[i] = y[-1]
        return torch.tensor(xs, dtype=torch.long).t(), torch.tensor(ys, dtype=torch.long).t()

    def epoch(self) -> float:
        """Epochs read, averaged over the streams (each stream reads the whole split per epoch)."""
        total = self.ids.numel()
        return sum(e - 1 + r / total for e, r in zip(self.epochs, self.read)) / len(self.epochs)

    def state_dict(self) -> dict[str, Any]:
        return {
            "rng": self.rng.getstate(),
            "base": list(self.base),
            "head": list(self.head),
            "epoch_start": list(self.epoch_start),
            "read": list(self.read),
            "epochs": list(self.epochs),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.rng.setstate(state["rng"])
        self.base, self.head = list(state["base"]), list(state["head"])
        self.epoch_start, self.read = list(state["epoch_start"]), list(state["read"])
        self.epochs = list(state["epochs"])


def separator_id(vocab: list[str]) -> int | None:
    """The token that ends a line: <eos> (word level, PTB characters), else the newline character or
    byte (raw character corpora), else None (a split with no lines, text8)."""
    for token in (EOS, "\n", "<0a>"):
        if token in vocab:
            return vocab.index(token)
    return None
