"""Corpus loaders: standard file layouts, the built-in corpus, and errors naming what was expected."""

from __future__ import annotations

import pytest
import torch

from tests.trainer.corpora import write_ptb, write_ptb_char
from trainer.config import make_config
from trainer.data import EOS, DataError, batchify, load_corpus


def test_builtin_corpus_is_real_english_without_files():
    corpus = load_corpus(make_config())
    assert corpus.train.numel() > 300_000 and not corpus.word_level
    text = "".join(corpus.vocab[i] for i in corpus.train[:2000].tolist())
    assert " the " in text


def test_ptb_word_level(tmp_path):
    corpus = load_corpus(make_config({"dataset": "ptb", "data_dir": str(write_ptb(tmp_path))}))
    assert corpus.word_level and EOS in corpus.vocab
    first = [corpus.vocab[i] for i in corpus.train[:4].tolist()]
    assert first[0] in ("the", "a", "my")


def test_ptb_char(tmp_path):
    corpus = load_corpus(make_config({"dataset": "ptb_char", "data_dir": str(write_ptb_char(tmp_path))}))
    assert "_" in corpus.vocab and all(len(t) == 1 for t in corpus.vocab if t != EOS)


def test_missing_file_names_the_path(tmp_path):
    with pytest.raises(DataError, match=r"ptb\.train\.txt"):
        load_corpus(make_config({"dataset": "ptb", "data_dir": str(tmp_path)}))


def test_open_vocabulary_file_is_rejected(tmp_path):
    write_ptb(tmp_path)
    (tmp_path / "ptb.valid.txt").write_text("zebra unseen words here\n" * 10)
    with pytest.raises(DataError, match="not in the training vocabulary"):
        load_corpus(make_config({"dataset": "ptb", "data_dir": str(tmp_path)}))


def test_wikitext2_layout(tmp_path):
    for split in ("train", "valid", "test"):
        (tmp_path / f"wiki.{split}.tokens").write_text(" = Title = \n\n the <unk> sat on the mat . \n" * 20)
    corpus = load_corpus(make_config({"dataset": "wikitext2", "data_dir": str(tmp_path)}))
    assert corpus.word_level and "<unk>" in corpus.vocab


def test_hutter_split_is_90_5_5(tmp_path):
    (tmp_path / "text8").write_text("ab cd " * 2000)
    corpus = load_corpus(make_config({"dataset": "text8", "data_dir": str(tmp_path)}))
    total = corpus.train.numel() + corpus.valid.numel() + corpus.test.numel()
    assert total == 12000 and corpus.train.numel() == 10800 and corpus.valid.numel() == 600


def test_text8_rejects_other_characters(tmp_path):
    (tmp_path / "text8").write_text("Hello, World! " * 200)
    with pytest.raises(DataError, match="a-z"):
        load_corpus(make_config({"dataset": "text8", "data_dir": str(tmp_path)}))


def test_enwik8_is_bytes(tmp_path):
    (tmp_path / "enwik8").write_bytes(bytes(range(256)) * 10)
    corpus = load_corpus(make_config({"dataset": "enwik8", "data_dir": str(tmp_path)}))
    assert corpus.vocab_size == 256


def test_reverse_copy_splits_are_fixed_example_sets():
    cfg = make_config({"dataset": "reverse_copy", "reverse_copy_length": 7, "reverse_copy_vocab": 30})
    corpus = load_corpus(cfg)
    assert corpus.valid.shape == corpus.test.shape == (10_000, 7)  # Mogrifier paper §4.3
    assert corpus.vocab[-1] == "<rev>" and corpus.vocab_size == 31
    assert corpus.valid.min() >= 0 and corpus.valid.max() < 30
    assert not torch.equal(corpus.valid, corpus.test)
    assert torch.equal(load_corpus(cfg).valid, corpus.valid)


def test_batchify_is_time_major():
    data = batchify(torch.arange(10), 2)
    assert data.shape == (5, 2) and data[:, 0].tolist() == [0, 1, 2, 3, 4]


def test_mwc_reads_one_languages_split_files_as_unicode_characters(tmp_path):
    from tests.trainer.corpora import write_mwc

    write_mwc(tmp_path)
    corpus = load_corpus(make_config({"dataset": "mwc", "data_dir": str(tmp_path)}))
    assert "ä" in corpus.vocab and "\n" in corpus.vocab and not corpus.word_level
    train = (tmp_path / "train.txt").read_text(encoding="utf-8")
    assert corpus.train.numel() == len(train)  # one symbol per code point, newlines included
    assert "".join(corpus.vocab[i] for i in corpus.train[:40].tolist()) == train[:40]
    (tmp_path / "valid.txt").unlink()
    with pytest.raises(DataError, match=r"mwc: expected the file .*valid\.txt"):
        load_corpus(make_config({"dataset": "mwc", "data_dir": str(tmp_path)}))
