"""docs/replication.md, written whole by bench/replicate.py from a run's results: what the script
does, how each row is judged, where and how it was measured, the table and a reading of each row.

Nothing in the document is typed by hand: the prose is fixed text or derived from the run's `meta`
and the rows' values and verdicts, so a rerun (or `--render results.json`) rewrites all of it and
no table row can lose a cell.
"""

from __future__ import annotations

from typing import Any

from bench.replication_rows import ALPHA, PARITY_MARGIN, REVERSE_COPY, SWITCH_PATIENCES, TAIL_STARTS, fmt

TITLE = "# A small-scale replication of the papers' orderings"

INTRO = """\
`bench/replicate.py` trains small models with the shared trainer and checks, row by row, whether
the orderings the papers report (the Mogrifier LSTM paper, *Circling Back to Recurrent Models of
Language*, and the thesis) show up at a scale two CPU cores run in well under an hour. Each row states
what the paper reports and whether our run agrees; where it does not agree at this scale, the table
says so. Nothing was tuned to agree: every model of a row uses the same fixed settings (the
`SCALES` and `REVERSE_COPY` tables of `bench/replication_rows.py`), chosen before the first run.
This document is written whole by the script (`bench/replication_doc.py`); edit those files, not
this one."""

USAGE = """\
```bash
python -m bench.replicate                                   # every row, small scale, CPU
nice -n 10 python -m bench.replicate --workers 2 --doc docs/replication.md   # as measured below
python -m bench.replicate --only rounds,averaging           # some rows
python -m bench.replicate --render docs/results/replication.json --doc docs/replication.md  # re-judge, no training
python -m bench.replicate --scale ptb --device cuda --data-dir data/ptb --workers 1   # PTB scale, GPU
```

Options: `--device cpu|cuda`, `--scale small|ptb`, `--workers N` (runs in parallel, one torch
thread each), `--only ROWS` ({rows}), `--steps N` (override every run's `max_steps`), `--out DIR`
(default `runs/replication`), `--doc PATH` (this document; default `DIR/replication.md`),
`--render RESULTS` (rewrite the document from a saved `results.json` without training). The
script writes `results.json` (every run's figures, every row's values and verdict, and where it ran)
and the document after each finished run, so an interrupted replication still leaves a table; runs
go seed 0 of everything first, then seed 1, then seed 2."""


def how_it_works(meta: dict[str, Any]) -> str:
    """The method, with the settings of the scale that ran."""
    base = meta["base"]
    rc = REVERSE_COPY[meta["scale"]]
    rcs = rc["settings"]
    tails = ", ".join(f"{s:g}" for s in TAIL_STARTS)
    lengths = ", ".join(str(n) for n in rc["lengths"])
    patiences = ", ".join(str(p) for p in SWITCH_PATIENCES)
    dataset = "the built-in character-level corpus (`dataset: builtin`, the reference documentation every CPython ships)"
    if base["dataset"] != "builtin":
        dataset = f"`dataset: {base['dataset']}`"
    return f"""\
## How it works
* **{meta["scale"].capitalize()} scale**: {dataset}; {base["num_layers"]}-layer models at an equal budget of
  {base["num_params"]:,} parameters (the trainer solves each cell's hidden size from `num_params`);
  BPTT {base["bptt"]}, batch {base["batch_size"]}, {base["max_steps"]} steps of Adam with β1 = {base["adam_beta1"]:g}
  at learning rate {base["learning_rate"]:g}, an evaluation every {base["eval_every"]} steps; Mogrifier
  rank {base["mogrifier_rank"]}; Chrono init {"on" if base.get("chrono_init") else "off"}; seeds
  {", ".join(str(s) for s in meta["seeds"])} for every model. Losses are bits per character (per
  token at `--scale ptb`). The rows and their settings are in `bench/replication_rows.py`.
* **Shared runs**: arms of different rows with the same training settings are one run, e.g. the
  Mogrifier LSTM (r = 5) serves the Mogrifier-vs-LSTM row, r = 5 of the rounds curve, the averaging
  row and the dynamic evaluation row.
* **Tail averages** (Tail Averaging, thesis §3.2 eq. (3.2)): the script sums the iterates after
  steps s·N for s ∈ {{{tails}}} while training; "best fixed tail" is the one best on validation at
  the end (so it is, if anything, favoured). The averaging row compares, on the *test* split, the
  weights each method chooses on validation at the end: 2TA's (Algorithm 2's final choice, which is
  the raw iterate whenever that is better on validation), the last raw iterate, and the best tail.
* **Averaging switch vs 2TA**: the Mogrifier LSTM trained on the same budget (steps, evaluations,
  seeds) with 2TA and with `averaging: switch` (the Mogrifier paper's switch to a tail average
  after `averaging_patience` evaluations without improvement, or at 80% of the steps) at each
  patience of {{{patiences}}}; the switch's patience is tuned as thesis §3.6 tunes Tail Averaging's
  start: per seed, the patience whose final validation loss is lowest ("switch"); test loss of each
  run's best checkpoint. (Results measured before the tuning have one patience, 50.)
* **Dynamic evaluation**: the trainer's (trainer/dyneval.py, thesis §4.5), at the softmax
  temperature estimated as lamb's `tune_dyneval.sh` does, against the static test loss of the same run.
* **Reverse copy** (Mogrifier paper §4.3): the trainer's encoder–decoder (`dataset: reverse_copy`,
  no dropout, loss on the reversed half), {rcs["reverse_copy_vocab"]} symbols, lengths {lengths},
  {rcs["num_params"]:,} parameters, {rcs["max_steps"]} steps; the figures are sequence accuracy and
  cross-entropy per reversed token on the test examples (`test_accuracy`, `test_loss`).
* **Recipe**: every row trains with the trainer's defaults, not either paper's recipe: the residual
  architecture (thesis §4.2) and Two-Tailed Averaging, one dropout sample, Adam with β1 = 0 at a
  fixed learning rate (the settings above); only the averaging-switch row turns the Mogrifier
  paper's switch on for one arm. `--scale ptb` runs the same rows on word-level PTB with 24M
  weights and fixed dropout rates: a larger scale, still those defaults and untuned, so it is
  neither paper's recipe either, and its figures are not the papers' table entries. Each paper's
  recipe is its own search space (docs/search-spaces.md), to be tuned with `rnntune sweep`.
* **Verdict**: the stated test is a two-sided Welch t-test across the seeds (unequal variances) at
  {ALPHA:g}: "yes" when the difference of the means is in the paper's direction with p < {ALPHA:g};
  "no" when it is the other way with p < {ALPHA:g}; otherwise "within noise" with the direction, or
  "within noise (equal means)" for a tie. Each comparison prints its p. A comparison the test cannot
  make (no spread across seeds on either side, e.g. 0.000 ± 0.000 against 0.000 ± 0.000, or one run
  a side) is "not testable", with no p. The rounds row agrees when the curve's minimum is at r = 5
  or 6 (the Mogrifier paper's optimum, §4.1: r ∈ {{5, 6}}) and below r = 0 by that test ("partly"
  when it is below r = 0 elsewhere). Both averaging rows read "2TA against well-tuned Tail
  Averaging" the same way, as a claim of parity that has to be shown: two one-sided Welch tests
  (TOST) against a margin of ±{PARITY_MARGIN:g} bpc (Circling Back §7 calls a gain "less than 0.01
  bpc" not worth its cost; the Mogrifier paper's rerun noise, App. B, is about half of it) at
  {ALPHA:g}: within the margin agrees ("yes"); apart by Welch's test and not within it, "no";
  otherwise "inconclusive" (a large Welch p is no evidence of parity). A row of several parts
  (RLSTM, averaging) is "yes" when every part passes its test, "no" when one is contradicted,
  "partly" only when some part passes, and otherwise what its parts say ("within noise",
  "inconclusive")."""


def where_measured(meta: dict[str, Any]) -> str:
    """Date, command, machine and load of the run, as `results.json`'s meta recorded them."""
    m = meta.get("machine", {})
    load = m.get("load_average")
    load_text = (
        f" Load average (1 min) at the start and end: {load[0]:.1f} and {load[1]:.1f}." if load else ""
    )
    done = f"{meta['runs_done']} of {meta['runs_planned']} runs"
    return f"""\
## Results

Measured on {meta.get("date", "an unrecorded date")} with

```bash
{meta.get("command", "python -m bench.replicate")}
```

on {m.get("cpu", "an unrecorded CPU")}, {m.get("cpus", "?")} logical CPUs, {m.get("platform", "")},
torch {m.get("torch", "?")}, Python {m.get("python", "?")}, {meta["workers"]} worker(s) with one torch
thread each, device {meta["device"]}: {done} in {meta["wall_s"] / 60:.0f} minutes of wall time.{load_text}
The "paper (PTB, 24M)" column gives the papers' *validation* perplexities (Mogrifier paper Table 1;
Circling Back Table 1, where the test perplexities are 51.0 and 47.9) for orientation only: our rows
are not the papers' settings. "ours at PTB scale" is filled only by a `--scale ptb` run."""


def table(report_rows: list[dict[str, Any]], scale: str) -> str:
    """The table: claim, what the paper reports, our mean ± sd per arm, the verdict, the PTB column."""
    header = (
        f"| row | paper reports | ours ({scale} scale, mean ± sd, 3 seeds) | comparison | agrees | "
        "paper (PTB, 24M) | ours at PTB scale |"
    )
    lines = [header, "|---|---|---|---|---|---|---|"]
    for r in report_rows:
        ours = "<br>".join(f"{label}: {fmt(v, 3)}" for label, v in r["values"].items())
        ptb = "see the ours column" if scale == "ptb" else "not run"
        cells = [r["claim"], r["paper"], ours, r["comparison"], r["agrees"], r["paper_ptb"], ptb]
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(lines)


# What each verdict means for a row, whatever the numbers.
READING = {
    "yes": "agrees: what the paper reports shows up, by the stated test.",
    "partly": "partly: part of the claim shows up by the stated test, part does not (see the comparison).",
    "no": "does not agree: the stated test finds the opposite of the paper's claim at this scale.",
    "inconclusive": "inconclusive: parity is neither shown within the margin nor contradicted.",
    "pending": "pending: some of its runs have not finished.",
    "not run": "not run: a run of this row failed (the comparison names the error).",
}
# What no verdict at this scale can settle, per row.
CAVEATS = {
    "mogrifier": "A gap after a short run is mostly speed of learning, not the converged gap the paper "
    "reports after full training with tuned hyperparameters; the direction is comparable, the size is not.",
    "rounds": "The paper's curve (Fig. 3) is from tuned PTB models; a short run favours whatever learns fastest.",
    "rlstm": "The paper's margins are small (about 1 perplexity point on PTB); 3 seeds detect only large gaps.",
    "averaging": "With few evaluations and short tails the methods have little room to differ; the "
    "thesis' comparison (Fig. 3.3) is over full PTB training.",
    "averaging_switch": "The switch turns on at 80% of a short run at the latest, so both arms average "
    "over a short tail.",
    "dyneval": "Undertrained models on a test split close to the training text gain more than the "
    "paper's PTB models.",
    "reverse_copy": "Fig. 4's gap appears at lengths 150–200 with 10M parameters and 1000 symbols; the "
    "small scale's lengths and alphabet may have no such regime.",
    "reverse_copy_xent": "As for the accuracy row: the paper's lengths and sizes are far larger.",
}


def reading(report_rows: list[dict[str, Any]]) -> str:
    """One bullet per row: its verdict in words, the comparison behind it, and what this scale
    cannot settle."""
    lines = ["## Reading the rows"]
    for r in report_rows:
        meaning = READING.get(r["agrees"], r["agrees"])
        if r["agrees"].startswith("within noise"):
            meaning = "inconclusive: the difference is within noise by the stated test."
        if r["agrees"].startswith("not testable"):
            meaning = "not testable: the seeds give the test nothing to work with; no verdict."
        caveat = CAVEATS.get(r["name"], "")
        lines.append(f"* **{r['claim']}** — {meaning} {r['comparison']}. {caveat}".rstrip())
    return "\n".join(lines)


def document(report_rows: list[dict[str, Any]], meta: dict[str, Any], row_names: list[str]) -> str:
    """The whole of docs/replication.md."""
    usage = USAGE.replace("{rows}", ", ".join(f"`{n}`" for n in row_names))
    parts = [TITLE, INTRO, usage, how_it_works(meta), where_measured(meta), table(report_rows, meta["scale"])]
    parts.append(reading(report_rows))
    return "\n\n".join(parts) + "\n"
