"""bench/ptb_size_corpus.py: PTB's split sizes and vocabulary from any text, read by the PTB loader."""

from __future__ import annotations

import random
from pathlib import Path
from types import ModuleType

import pytest


def _prose(path: Path, sentences: int, seed: int) -> None:
    """Sentences of 3–40 words over 300 word types and numbers, in HTML with a code block."""
    rng = random.Random(seed)
    words = [f"w{chr(97 + i % 26)}{chr(97 + i // 26)}" for i in range(300)]
    body = ". ".join(
        " ".join(
            rng.choice(words) if rng.random() > 0.05 else str(rng.randrange(1000))
            for _ in range(rng.randint(3, 40))
        )
        for _ in range(sentences)
    )
    path.write_text(f"<html><p>{body}.</p><pre>fn main() {{ skipped(); }}</pre><script>no()</script></html>")


def test_splits_have_the_asked_token_counts_and_vocabulary(
    ptb_size_corpus: ModuleType, tmp_path: Path
) -> None:
    from trainer.config import TrainConfig
    from trainer.data import load_corpus

    _prose(tmp_path / "a.html", 600, seed=1)
    _prose(tmp_path / "b.html", 600, seed=2)
    out = tmp_path / "ptb"
    assert ptb_size_corpus.main([str(tmp_path), "--out", str(out), "--scale", "0.01", "--vocab", "100"]) == 0
    text = (out / "ptb.train.txt").read_text()
    assert "fn" not in text.split() and "no" not in text.split()  # code and scripts are left out
    assert "N" in text.split()  # numbers as N
    corpus = load_corpus(TrainConfig(dataset="ptb", data_dir=str(out), hidden_size=8))
    sizes = {k: int(v * 0.01) for k, v in ptb_size_corpus.PTB_TOKENS.items()}
    assert (corpus.train.numel(), corpus.valid.numel(), corpus.test.numel()) == tuple(sizes.values())
    assert corpus.vocab_size == 100


def test_too_little_text_is_refused_with_the_counts(ptb_size_corpus: ModuleType, tmp_path: Path) -> None:
    _prose(tmp_path / "a.html", 20, seed=3)
    with pytest.raises(SystemExit, match=r"the sources hold [\d,]+ tokens; [\d,]+ are needed"):
        ptb_size_corpus.main([str(tmp_path / "a.html"), "--out", str(tmp_path / "o"), "--scale", "0.01"])
