"""`rnntune evaluate`: evaluate a checkpoint on a split, with the temperature chosen on validation,
or dynamically (`--dyneval`; `--dyneval-from STUDY`: with the best setting a dynamic-evaluation
study found, thesis §4.5 and Table 2.6). The checkpoint may be an `s3://`, `gs://` or `abfs://` object a study
kept in an object store wrote: it is downloaded to a temporary folder for the load (docs/cluster.md)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import torch

from trainer import DataError, load_checkpoint, make_config
from trainer.config import parse_set
from trainer.data import batchify, load_corpus
from trainer.dyneval import SETTINGS, estimate_temperature, run_dynamic_evaluation
from trainer.evaluate import evaluate, mc_evaluate, select_mc, select_temperature
from trainer.model import LanguageModel
from trainer.result import headline
from trainer.reverse_copy import evaluate_examples
from tuner.errors import RnntuneError
from tuner.storage.object_store import local_copy
from tuner.storage.study import DB_ENV, load_study, resolve_db_url
from tuner.sweeps.dyneval import source
from tuner.sweeps.dyneval.study import best_setting


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("evaluate", help="evaluate a checkpoint (best.pt / last.pt) on a data split")
    p.add_argument(
        "checkpoint",
        help="path of a checkpoint file, or its key in an object store (s3://BUCKET/KEY, gs://..., "
        "abfs://CONTAINER/KEY; credentials from the environment, docs/cluster.md)",
    )
    p.add_argument("--split", choices=("valid", "test"), default="test")
    p.add_argument("--data-dir", help="dataset folder, if it moved since training")
    p.add_argument(
        "--temperature",
        type=float,
        help="softmax temperature (default: the config's eval_temperature, else chosen on validation; with "
        "--dyneval, estimated as lamb's tune_dyneval.sh does)",
    )
    p.add_argument(
        "--dyneval",
        action="store_true",
        help="dynamic evaluation (batch 1, gradient statistics at batch 1024, RMS decay; "
        "the checkpoint's max_time_steps and dyneval_* settings)",
    )
    p.add_argument(
        "--dyneval-from",
        metavar="STUDY",
        help="dynamic evaluation with the settings of STUDY's best COMPLETE trial (a study made with "
        "`rnntune sweep --space dyneval --checkpoint ...`); --set still overrides them",
    )
    p.add_argument(
        "--db",
        help=f"SQLAlchemy URL of the study database for --dyneval-from (default ${DB_ENV} or "
        "sqlite:///studies/rnntune.db)",
    )
    p.add_argument(
        "--mc-samples",
        type=int,
        metavar="N",
        help="Monte Carlo dropout: average predictions over N sampled dropout masks "
        "(Mogrifier paper §3.3 uses 200; default: the checkpoint's mc_dropout_samples, 0 = off); "
        "its dropout-rate scale is chosen on validation unless --set mc_dropout_scale=0.8 fixes it",
    )
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="override an evaluation setting, e.g. --set dyneval_learning_rate=1e-4",
    )
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        with local_copy(args.checkpoint) as path:
            model, cfg = load_checkpoint(path)
        updates = _tuned_settings(args) if args.dyneval_from else {}
        updates.update(parse_set(args.overrides))
        if args.data_dir:
            updates["data_dir"] = args.data_dir
        if args.mc_samples is not None:
            updates["mc_dropout_samples"] = args.mc_samples
        cfg = make_config({**cfg.to_dict(), **updates})
        corpus = load_corpus(cfg)
    except (OSError, ValueError, DataError, RnntuneError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    args.dyneval = args.dyneval or bool(args.dyneval_from)
    if cfg.dataset == "reverse_copy":
        return _reverse_copy(args, model, corpus, cfg)
    assert isinstance(model, LanguageModel)  # every dataset but reverse_copy trains a language model
    valid = batchify(corpus.valid, cfg.eval_batch_size)
    data = valid if args.split == "valid" else batchify(corpus.test, cfg.eval_batch_size)
    if args.dyneval:
        # The trainer's own dynamic evaluation (trainer/dyneval.py): batch 1, statistics at 1024.
        split_ids = corpus.valid if args.split == "valid" else corpus.test
        temperature = args.temperature  # default: estimated as lamb's tune_dyneval.sh does
        if temperature is None:
            temperature = estimate_temperature(model, corpus.valid, cfg)
        loss = run_dynamic_evaluation(model, corpus.train, {args.split: split_ids}, cfg, temperature)[
            args.split
        ]
        scale = None
    else:
        samples = cfg.mc_dropout_samples
        torch.manual_seed(cfg.seed)  # Monte Carlo masks: the same figure on every call
        # --temperature, else the checkpoint's eval_temperature, else chosen on validation below.
        temperature = args.temperature if args.temperature is not None else cfg.eval_temperature
        scale = cfg.mc_dropout_scale
        if samples > 0:  # dropout rates × the scale, chosen on validation unless set (Mogrifier §3.3)
            if temperature is None or scale is None:
                chosen_t, scale, _ = select_mc(model, valid, cfg.bptt, samples, scale)
                temperature = chosen_t if temperature is None else temperature
            loss = mc_evaluate(model, data, cfg.bptt, samples, (temperature,), dropout_scale=scale)[0]
        else:
            if temperature is None:
                temperature, _ = select_temperature(model, valid, cfg.bptt)
            loss = evaluate(model, data, cfg.bptt, (temperature,))[0]
    _print(args, cfg, loss, temperature, scale)
    return 0


def _print(args: argparse.Namespace, cfg: Any, loss: float, temperature: Any, scale: float | None) -> None:
    """The evaluation's line, or its JSON object (`--json`)."""
    name, value = headline(loss, cfg.word_level)
    mc = cfg.mc_dropout_samples if not args.dyneval else 0
    if args.json:
        print(
            json.dumps(
                {
                    "split": args.split,
                    "loss": loss,
                    name: value,
                    "temperature": temperature,
                    "mc_samples": mc,
                    **({"mc_dropout_scale": scale} if mc else {}),
                }
            )
        )
    else:
        how = f", Monte Carlo dropout over {mc} masks at rates x {scale}" if mc else ""
        print(f"{args.split}: {loss:.4f} nats/token, {name} {value:.3f} (temperature {temperature}{how})")


def _tuned_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The dynamic-evaluation settings of study `args.dyneval_from`'s best COMPLETE trial; a note
    on stderr when the study tuned another checkpoint than the one evaluated."""
    study = load_study(args.dyneval_from, resolve_db_url(args.db))
    best = best_setting(study)
    if best is None:
        raise ValueError(
            f"study {args.dyneval_from!r} has no COMPLETE trial with dynamic-evaluation settings "
            f"({', '.join(SETTINGS)})"
        )
    tuned = best["checkpoint"]
    if tuned and source.shown(tuned) != source.shown(args.checkpoint):
        print(f"note: study {args.dyneval_from!r} tuned dynamic evaluation of {tuned}", file=sys.stderr)
    shown = ", ".join(f"{k}={v:g}" for k, v in best["params"].items())
    print(
        f"dynamic evaluation from study {args.dyneval_from!r} trial #{best['trial']}: {shown}",
        file=sys.stderr,
    )
    return dict(best["params"])


def _reverse_copy(args: argparse.Namespace, model, corpus, cfg) -> int:
    """Reverse copy (Mogrifier paper §4.3): loss on the reversed half and sequence accuracy."""
    if args.dyneval:
        print("error: --dyneval does not apply to dataset reverse_copy", file=sys.stderr)
        return 2
    source = corpus.valid if args.split == "valid" else corpus.test
    loss, accuracy = evaluate_examples(model, source, cfg.eval_batch_size)
    if args.json:
        print(json.dumps({"split": args.split, "loss": loss, "accuracy": accuracy}))
    else:
        print(f"{args.split}: {loss:.4f} nats/token, sequence accuracy {accuracy:.4f}")
    return 0
