"""Tiny corpora the trainer tests make for themselves, in the standard files' formats."""

from __future__ import annotations

import random
from pathlib import Path

SUBJECTS = ["the cat", "a dog", "the old man", "my sister", "the bird", "a child"]
VERBS = ["sees", "likes", "chases", "finds", "watches"]
OBJECTS = ["the ball", "a red box", "the garden", "an apple", "the river", "a small house"]


def sentences(n: int, seed: int) -> list[str]:
    """Sentences of a small grammar: predictable structure, so a model can beat the unigram baseline."""
    rng = random.Random(seed)
    return [f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)}" for _ in range(n)]


def write_ptb(folder: Path, train: int = 3000, valid: int = 200, test: int = 200) -> Path:
    """ptb.{train,valid,test}.txt with one sentence a line."""
    folder.mkdir(parents=True, exist_ok=True)
    for split, n, seed in (("train", train, 0), ("valid", valid, 1), ("test", test, 2)):
        (folder / f"ptb.{split}.txt").write_text("\n".join(sentences(n, seed)) + "\n")
    return folder


def write_ptb_char(folder: Path, n: int = 300) -> Path:
    """ptb.char.{split}.txt: characters separated by spaces, '_' between words."""
    folder.mkdir(parents=True, exist_ok=True)
    for split, seed in (("train", 0), ("valid", 1), ("test", 2)):
        lines = [" ".join(s.replace(" ", "_")) for s in sentences(n, seed)]
        (folder / f"ptb.char.{split}.txt").write_text("\n".join(lines) + "\n")
    return folder


def documents(n: int, seed: int, per_document: int = 12) -> list[str]:
    """Sentences in documents that each keep to two subjects, one verb and two objects.

    One source for every split, with local context to adapt to: what dynamic evaluation exploits.
    """
    rng = random.Random(seed)
    out: list[str] = []
    while len(out) < n:
        subjects, verb, objects = rng.sample(SUBJECTS, 2), rng.choice(VERBS), rng.sample(OBJECTS, 2)
        out.extend(f"{rng.choice(subjects)} {verb} {rng.choice(objects)}" for _ in range(per_document))
    return out[:n]


def write_ptb_documents(folder: Path, train: int = 1500, valid: int = 60, test: int = 60) -> Path:
    """ptb.{train,valid,test}.txt of `documents`, one sentence a line."""
    folder.mkdir(parents=True, exist_ok=True)
    for split, n, seed in (("train", train, 0), ("valid", valid, 1), ("test", test, 2)):
        (folder / f"ptb.{split}.txt").write_text("\n".join(documents(n, seed)) + "\n")
    return folder


def write_wikitext2(folder: Path, train: int = 3000, valid: int = 200, test: int = 200) -> Path:
    """wiki.{train,valid,test}.tokens with one sentence a line (Wikitext-2's file names)."""
    folder.mkdir(parents=True, exist_ok=True)
    for split, n, seed in (("train", train, 0), ("valid", valid, 1), ("test", test, 2)):
        (folder / f"wiki.{split}.tokens").write_text("\n".join(sentences(n, seed)) + "\n")
    return folder


def write_hutter(folder: Path, name: str, n: int = 2000) -> Path:
    """One raw file named `name` (`enwik8`: bytes; `text8`: lowercase letters and spaces), split 90/5/5
    by the loader as the real ones are."""
    folder.mkdir(parents=True, exist_ok=True)
    text = " ".join(sentences(n, 0))
    (folder / name).write_bytes((text if name == "text8" else f"<page>{text}</page>\n").encode())
    return folder


def write_mwc(folder: Path, n: int = 300) -> Path:
    """One MWC language's train.txt, valid.txt and test.txt: raw UTF-8 lines with Finnish letters."""
    folder.mkdir(parents=True, exist_ok=True)
    for split, seed in (("train", 0), ("valid", 1), ("test", 2)):
        lines = [line.replace("a", "ä", 1) for line in sentences(n if split == "train" else n // 5, seed)]
        (folder / f"{split}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder
