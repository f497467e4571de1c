"""`data_order: lamb` (trainer/order.py) against lamb's training iterator, transcribed."""

from __future__ import annotations

import random

import pytest
import torch

from trainer import loop, make_config
from trainer.order import LambOrder, line_starts, separator_id

EOS = 0


def lamb_windows(lines: list[list[int]], batch_size: int, num_steps: int, seed: int, count: int):
    """lamb/corpus.py, transcribed for get_batches(..., deterministic=False) (training), with lamb's
    module-level `random` replaced by random.Random(seed):

    equidistant_iterators(batch_size, random_starts=True, start_jitter=100):
        start = random.randrange(n)
        for i in range(num_iterators):
          def start_fn(start=start):
            return (start + random.randint(-start_jitter, start_jitter)) % n
          iterators.append(self.instance_iterator(start=start_fn, max_instances=None))
          start += self._share_of_iterator(n, num_iterators, i)
    _share_of_iterator: int(((i+1) * n) // num_iterators) - int((i * n) // num_iterators)
    instance_iterator, every epoch: offset = start(); yield data[(offset+i)%n] for i in range(n)
    get_non_episodic_batches: sources = [[eos] ...]; ensure_window: while len(sources[i]) <= num_steps:
        sources[i].extend(vocab.encode(next(generator), add_eos=True)); pop_window: n = min(num_steps,
        len(sources[i]) - 1); source = sources[i][0:n]; target = sources[i][1:n+1]; sources[i] = sources[i][n:]
    """
    rng = random.Random(seed)
    n = len(lines)

    def instance_iterator(start_fn):
        while True:
            offset = start_fn()
            for i in range(n):
                yield lines[(offset + i) % n]

    start = rng.randrange(n)
    iterators = []
    for i in range(batch_size):

        def start_fn(start=start):
            return (start + rng.randint(-100, 100)) % n

        iterators.append(instance_iterator(start_fn))
        start += ((i + 1) * n) // batch_size - (i * n) // batch_size
    sources = [[EOS] for _ in range(batch_size)]
    for _ in range(count):
        xs, ys = [], []
        for i in range(batch_size):
            while len(sources[i]) <= num_steps:
                sources[i].extend([*next(iterators[i]), EOS])
            xs.append(sources[i][0:num_steps])
            ys.append(sources[i][1 : num_steps + 1])
            sources[i] = sources[i][num_steps:]
        yield torch.tensor(xs).t(), torch.tensor(ys).t()


def corpus(lines_count: int, seed: int = 0) -> list[list[int]]:
    rng = random.Random(seed)
    return [[rng.randrange(1, 9) for _ in range(rng.randrange(1, 12))] for _ in range(lines_count)]


@pytest.mark.parametrize(("lines_count", "batch_size", "steps"), [(300, 4, 7), (450, 3, 20), (1000, 8, 5)])
def test_windows_are_lambs_over_several_epochs(lines_count, batch_size, steps):
    """Windows of LambOrder equal the transcription's, past several epochs of every stream (each
    epoch a fresh jittered offset), on a split whose lines end with <eos>."""
    lines = corpus(lines_count)
    ids = torch.tensor([t for line in lines for t in [*line, EOS]])
    order = LambOrder(ids, batch_size, seed=5, separator=EOS)
    windows = 3 * ids.numel() // steps + 5  # each stream reads the whole split per epoch
    for x_want, y_want in lamb_windows(lines, batch_size, steps, 5, windows):
        x, y = order.next_window(steps)
        assert torch.equal(x, x_want) and torch.equal(y, y_want)
    assert min(order.epochs) >= 3


def test_resumed_order_continues_the_same_streams():
    lines = corpus(200)
    ids = torch.tensor([t for line in lines for t in [*line, EOS]])
    order = LambOrder(ids, 3, seed=1, separator=EOS)
    for _ in range(50):
        order.next_window(9)
    saved = order.state_dict()
    want = [order.next_window(9) for _ in range(400)]
    resumed = LambOrder(ids, 3, seed=99, separator=EOS)
    resumed.load_state_dict(saved)
    assert all(
        torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
        for a, b in zip(want, (resumed.next_window(9) for _ in range(400)))
    )


def test_lines_and_separators():
    assert line_starts(torch.tensor([3, 0, 4, 4, 0]), 0).tolist() == [0, 2]
    assert line_starts(torch.tensor([3, 4, 5]), None).tolist() == [0, 1, 2]
    assert separator_id(["a", "<eos>", "b"]) == 1
    assert separator_id(["\n", "a"]) == 0 and separator_id(["<0a>", "a"]) == 0
    assert separator_id(["a", " "]) is None


def test_trainer_reads_lambs_streams_and_keeps_its_state_across_epochs(tmp_path):
    """With data_order lamb the trainer's windows are LambOrder's (seeded by `seed`), and wrapping
    past an epoch does not reset the carried state (lamb resets it only by drop_state_probability)."""
    cfg = make_config(
        {"hidden_size": 8, "num_layers": 1, "batch_size": 2, "bptt": 16}
        | {"data_order": "lamb", "seed": 4, "run_dir": str(tmp_path)}
    )
    trainer = loop.Trainer(cfg)
    twin = LambOrder(trainer.corpus.train, 2, 4, separator_id(trainer.corpus.vocab))
    for _ in range(3):
        x, y = trainer._next_window()
        x_want, y_want = twin.next_window(16)
        assert torch.equal(x, x_want) and torch.equal(y, y_want)
    trainer.state = [tuple(torch.ones_like(t) for t in s) for s in trainer.state]
    assert trainer.order is not None
    trainer.order.read = [trainer.corpus.train.numel()] * 2  # the streams' epochs have run out
    trainer._next_window()
    assert trainer.order.epochs == [2, 2]
    assert all(torch.all(t == 1) for s in trainer.state for t in s)


def test_a_resumed_run_goes_on_with_the_saved_streams(tmp_path):
    """last.pt holds the order's draws and positions; a Trainer resuming it reads the same windows."""
    cfg = make_config(
        {"hidden_size": 8, "num_layers": 1, "batch_size": 2, "bptt": 8, "max_steps": 2, "eval_every": 2}
        | {"data_order": "lamb", "max_eval_tokens": 50, "run_dir": str(tmp_path)}
    )
    first = loop.Trainer(cfg)
    first.run()
    assert first.order is not None
    want = first.order.next_window(8)
    resumed = loop.Trainer(cfg.model_copy(update={"max_steps": 4}))
    assert resumed.step == 2 and resumed.order is not None
    got = resumed.order.next_window(8)
    assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])
