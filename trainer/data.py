"""Corpora: the standard files of PTB, Wikitext-2, Enwik8, Text8 and MWC, a built-in corpus, reverse copy.

For reverse copy the splits are example tensors [N, L] rather than token streams.

Every loader returns a `Corpus` of token-id tensors and a vocabulary. A missing or malformed file
raises `DataError` naming what was expected where.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import torch
from torch import Tensor

from . import reverse_copy
from .config import TrainConfig

EOS = "<eos>"
UNK = "<unk>"
# Enwik8 / Text8: the first 90M characters train, the next 5M validate, the last 5M test.
HUTTER_SPLIT = (0.90, 0.05, 0.05)
MIN_SPLIT_TOKENS = 16


class DataError(ValueError):
    """A dataset file is missing or not in the expected format."""


@dataclass
class Corpus:
    """Token ids of the three splits and the vocabulary they index."""

    name: str
    vocab: list[str]
    train: Tensor
    valid: Tensor
    test: Tensor
    word_level: bool

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)


def _read(path: Path, what: str) -> str:
    if not path.is_file():
        raise DataError(f"{what}: expected the file {path}, which does not exist")
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise DataError(f"{what}: {path} is not UTF-8 text ({err})") from None


def _lines_to_tokens(text: str) -> list[str]:
    """The whitespace-separated tokens of each line, then <eos> (Mikolov's preprocessing)."""
    tokens: list[str] = []
    for line in text.splitlines():
        tokens.extend(line.split())
        tokens.append(EOS)
    return tokens


def _numericalize(
    name: str, splits: dict[str, list[str]], closed_vocab: bool
) -> tuple[list[str], dict[str, Tensor]]:
    """Map tokens to ids. A closed vocabulary (word level) comes from train; other splits must fit."""
    source = splits["train"] if closed_vocab else [t for s in splits.values() for t in s]
    vocab = sorted(set(source))
    index = {tok: i for i, tok in enumerate(vocab)}
    out = {}
    for split, toks in splits.items():
        if len(toks) < MIN_SPLIT_TOKENS:
            raise DataError(
                f"{name}: the {split} split has {len(toks)} tokens; expected at least {MIN_SPLIT_TOKENS}"
            )
        unk = index.get(UNK)
        ids = []
        for tok in toks:
            i = index.get(tok, unk)
            if i is None:
                raise DataError(
                    f"{name}: token {tok!r} of the {split} split is not in the training vocabulary "
                    f"and there is no {UNK} token; is this the preprocessed (Mikolov) version?"
                )
            ids.append(i)
        out[split] = torch.tensor(ids, dtype=torch.long)
    return vocab, out


def _word_files(cfg: TrainConfig, pattern: str) -> Corpus:
    """Word-level files with one sentence a line and a closed vocabulary (PTB, Wikitext-2)."""
    assert cfg.data_dir is not None
    splits = {
        split: _lines_to_tokens(_read(Path(cfg.data_dir) / pattern.format(split=split), cfg.dataset))
        for split in ("train", "valid", "test")
    }
    vocab, ids = _numericalize(cfg.dataset, splits, closed_vocab=True)
    return Corpus(cfg.dataset, vocab, ids["train"], ids["valid"], ids["test"], word_level=True)


_Symbol = TypeVar("_Symbol", int, str)


def _symbol_ids(symbols: Sequence[_Symbol]) -> tuple[list[_Symbol], Tensor]:
    """The sorted distinct symbols, and each symbol's index among them [N]."""
    ordered = sorted(set(symbols))
    index = {s: i for i, s in enumerate(ordered)}
    return ordered, torch.tensor([index[s] for s in symbols], dtype=torch.long)


def _hutter(cfg: TrainConfig, filename: str, as_bytes: bool) -> Corpus:
    assert cfg.data_dir is not None
    path = Path(cfg.data_dir) / filename
    if not path.is_file():
        raise DataError(f"{cfg.dataset}: expected the raw file {path} (unzipped), which does not exist")
    raw = path.read_bytes()
    if as_bytes:
        byte_syms, ids = _symbol_ids(list(raw))
        vocab = [f"<{s:02x}>" for s in byte_syms]
    else:
        try:
            text = raw.decode("ascii")
        except UnicodeDecodeError:
            raise DataError(f"{cfg.dataset}: {path} should hold lowercase ASCII text (text8)") from None
        if set(text) - set("abcdefghijklmnopqrstuvwxyz "):
            raise DataError(f"{cfg.dataset}: {path} holds characters other than a-z and space; is it text8?")
        vocab, ids = _symbol_ids(text)
    n = len(ids)
    a, b = int(n * HUTTER_SPLIT[0]), int(n * (HUTTER_SPLIT[0] + HUTTER_SPLIT[1]))
    parts = {"train": ids[:a], "valid": ids[a:b], "test": ids[b:]}
    for t in parts.values():
        if len(t) < MIN_SPLIT_TOKENS:
            raise DataError(f"{cfg.dataset}: {path} is too short ({n} symbols) to split 90/5/5")
    return Corpus(cfg.dataset, vocab, parts["train"], parts["valid"], parts["test"], word_level=False)


def builtin_text() -> str:
    """Real English text every CPython ships: the reference documentation in `pydoc_data.topics`."""
    from pydoc_data.topics import topics

    return "\n".join(topics[k] for k in sorted(topics))


def _builtin(cfg: TrainConfig) -> Corpus:
    """The embedded default: ~460K characters of Python's reference docs, character level, 90/5/5."""
    text = builtin_text()
    vocab = sorted(set(text))
    index = {c: i for i, c in enumerate(vocab)}
    ids = torch.tensor([index[c] for c in text], dtype=torch.long)
    n = len(ids)
    a, b = int(n * 0.9), int(n * 0.95)
    return Corpus("builtin", vocab, ids[:a], ids[a:b], ids[b:], word_level=False)


def _reverse_copy(cfg: TrainConfig) -> Corpus:
    """Reverse copy (Mogrifier paper §4.3): source sequences [N, L] of the fixed validation and
    test sets; training batches are drawn per step (trainer.reverse_copy.train_batch)."""
    splits = reverse_copy.split_examples(cfg)
    empty = torch.empty(0, cfg.reverse_copy_length, dtype=torch.long)
    return Corpus(
        "reverse_copy", reverse_copy.vocabulary(cfg), empty, splits["valid"], splits["test"], word_level=False
    )


def load_corpus(cfg: TrainConfig) -> Corpus:
    """Load the dataset named by `cfg.dataset` from `cfg.data_dir` (or build it)."""
    if cfg.dataset == "builtin":
        return _builtin(cfg)
    if cfg.dataset == "reverse_copy":
        return _reverse_copy(cfg)
    if cfg.dataset == "ptb":
        return _word_files(cfg, "ptb.{split}.txt")
    if cfg.dataset == "ptb_char":
        return _ptb_char(cfg)
    if cfg.dataset == "wikitext2":
        return _word_files(cfg, "wiki.{split}.tokens")
    if cfg.dataset == "enwik8":
        return _hutter(cfg, "enwik8", as_bytes=True)
    if cfg.dataset == "text8":
        return _hutter(cfg, "text8", as_bytes=False)
    if cfg.dataset == "mwc":
        return _mwc(cfg)
    raise DataError(f"unknown dataset {cfg.dataset!r}")


def _ptb_char(cfg: TrainConfig) -> Corpus:
    """PTB character level: Mikolov's ptb.char.*.txt, characters separated by spaces, '_' between words."""
    assert cfg.data_dir is not None
    splits = {}
    for split in ("train", "valid", "test"):
        path = Path(cfg.data_dir) / f"ptb.char.{split}.txt"
        splits[split] = _lines_to_tokens(_read(path, "ptb_char"))
        if any(len(t) > 1 for t in splits[split] if t != EOS):
            raise DataError(f"ptb_char: {path} should hold single characters separated by spaces")
    vocab, ids = _numericalize("ptb_char", splits, closed_vocab=False)
    return Corpus("ptb_char", vocab, ids["train"], ids["valid"], ids["test"], word_level=False)


def batchify(ids: Tensor, batch_size: int) -> Tensor:
    """Cut a token stream into `batch_size` parallel streams, returned time-major as [N, B]."""
    n = ids.numel() // batch_size
    if n < 2:
        raise DataError(f"{ids.numel()} tokens are too few for batch size {batch_size}")
    return ids[: n * batch_size].view(batch_size, n).t().contiguous()


def _mwc(cfg: TrainConfig) -> Corpus:
    """One language of the Multilingual Wikipedia Corpus (Kawakami et al. 2017): train.txt,
    valid.txt and test.txt of raw UTF-8 text, modelled character by character (newlines too), the
    alphabet taken from all three splits as for PTB characters."""
    assert cfg.data_dir is not None
    splits = {
        split: list(_read(Path(cfg.data_dir) / f"{split}.txt", "mwc")) for split in ("train", "valid", "test")
    }
    vocab, ids = _numericalize("mwc", splits, closed_vocab=False)
    return Corpus("mwc", vocab, ids["train"], ids["valid"], ids["test"], word_level=False)
