"""A word-level corpus of Penn Treebank's size from any English text at hand, in PTB's file format.

The PTB files cannot be shipped, but a GPU sweep's cost depends on their shape, not their words:
929,589 / 73,760 / 82,430 tokens (with one <eos> per sentence) and a 10,000-word vocabulary
(Mikolov's preprocessing: lower case, digits as N, the rest of the vocabulary as <unk>). This
builds `ptb.train.txt`, `ptb.valid.txt` and `ptb.test.txt` of exactly those sizes from the text
files and HTML pages given (folders are read recursively, in sorted order, so the same sources
give the same corpus), for `dataset: ptb`.

    python -m bench.ptb_size_corpus --out data/ptb-size /root/.rustup/toolchains/*/share/doc/rust/html
"""

from __future__ import annotations

import argparse
import gzip
import html.parser
import re
import sys
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path

# PTB as Mikolov distributes it: tokens per split, <eos> included, and the vocabulary with <eos>.
PTB_TOKENS = {"train": 929_589, "valid": 73_760, "test": 82_430}
PTB_VOCAB = 10_000
SUFFIXES = (".txt", ".md", ".rst", ".html", ".htm", ".txt.gz", ".md.gz")
MIN_WORDS, MAX_WORDS = 3, 60  # sentences outside these lengths are headings, lists or code
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n\s*\n")
_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?|\d+(?:[.,]\d+)*")


class _Text(html.parser.HTMLParser):
    """The prose of an HTML page: text outside <script>, <style>, <pre> and <code>."""

    _SKIP = frozenset({"script", "style", "pre", "code"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._depth = 0

    def handle_starttag(self, tag: str, attrs: object) -> None:
        if tag in self._SKIP:
            self._depth += 1
        elif tag in {"p", "li", "h1", "h2", "h3", "h4", "br", "div", "td"}:
            self.parts.append("\n\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in self._SKIP and self._depth:
            self._depth -= 1

    def handle_data(self, data: str) -> None:
        if not self._depth:
            self.parts.append(data)


def _files(sources: Iterable[Path]) -> Iterator[Path]:
    for src in sources:
        if src.is_dir():
            yield from sorted(p for p in src.rglob("*") if p.is_file() and p.name.endswith(SUFFIXES))
        elif src.is_file():
            yield src
        else:
            raise SystemExit(f"ptb_size_corpus: {src} is neither a file nor a folder")


def _read(path: Path) -> str:
    raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    text = raw.decode("utf-8", errors="replace")
    if path.name.endswith((".html", ".htm")):
        parser = _Text()
        parser.feed(text)
        text = "".join(parser.parts)
    return text


def sentences(text: str) -> Iterator[list[str]]:
    """PTB-style sentences of a text: lower case, words and numbers only, every number as N."""
    for chunk in _SENTENCE_END.split(text):
        words = ["N" if w[0].isdigit() else w for w in _WORD.findall(chunk.lower())]
        if MIN_WORDS <= len(words) <= MAX_WORDS:
            yield words


def build(texts: Iterable[str], sizes: dict[str, int], vocab_size: int) -> dict[str, list[str]]:
    """The three splits' lines: consecutive sentences until each split holds its token count
    (<eos> included; the last sentence is cut to fit), the rarest words as <unk>."""
    # Each split's last sentence may be cut: room for three cut sentences beyond the counts.
    need = sum(sizes.values()) + len(sizes) * (MAX_WORDS + 1)
    pool: list[list[str]] = []
    total = 0
    for text in texts:
        for sent in sentences(text):
            pool.append(sent)
            total += len(sent) + 1
            if total >= need:
                break
        if total >= need:
            break
    if total < need:
        raise SystemExit(f"ptb_size_corpus: the sources hold {total:,} tokens; {need:,} are needed")
    it = iter(pool)
    cut: dict[str, list[list[str]]] = {}
    for split, size in sizes.items():
        cut[split], held = [], 0
        while held < size:
            sent = next(it)[: size - held - 1]
            cut[split].append(sent)
            held += len(sent) + 1
    # The vocabulary comes from train alone, as PTB's: valid and test words outside it are <unk>.
    counts = Counter(w for sent in cut["train"] for w in sent)
    keep = {w for w, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[: vocab_size - 2]}
    out = {
        split: [" ".join(w if w in keep else "<unk>" for w in sent) for sent in sents]
        for split, sents in cut.items()
    }
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sources", nargs="+", type=Path, help="text files, HTML pages or folders of them")
    ap.add_argument("--out", type=Path, required=True, help="folder for ptb.{train,valid,test}.txt")
    ap.add_argument("--scale", type=float, default=1.0, help="fraction of PTB's token counts (tests)")
    ap.add_argument("--vocab", type=int, default=PTB_VOCAB, help="vocabulary size with <unk> and <eos>")
    args = ap.parse_args(argv)
    sizes = {k: max(int(v * args.scale), 20) for k, v in PTB_TOKENS.items()}
    splits = build((_read(p) for p in _files(args.sources)), sizes, args.vocab)
    args.out.mkdir(parents=True, exist_ok=True)
    for split, lines in splits.items():
        # PTB's own files start every line with a space; the loader splits on whitespace either way.
        (args.out / f"ptb.{split}.txt").write_text("".join(f" {line} \n" for line in lines))
        print(f"{split}: {len(lines):,} sentences, {sizes[split]:,} tokens")
    return 0


if __name__ == "__main__":
    sys.exit(main())
