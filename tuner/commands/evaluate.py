"""`rnntune evaluate`: evaluate a checkpoint on a split, with the temperature chosen on validation."""

from __future__ import annotations

import argparse
import json
import sys

import torch

from trainer import DataError, load_checkpoint, make_config
from trainer.config import parse_set
from trainer.data import batchify, load_corpus
from trainer.dyneval import run_dynamic_evaluation
from trainer.evaluate import evaluate, headline, mc_evaluate, select_temperature
from trainer.model import LanguageModel
from trainer.reverse_copy import evaluate_examples


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("evaluate", help="evaluate a checkpoint (best.pt / last.pt) on a data split")
    p.add_argument("checkpoint", help="path of a checkpoint file")
    p.add_argument("--split", choices=("valid", "test"), default="test")
    p.add_argument("--data-dir", help="dataset folder, if it moved since training")
    p.add_argument("--temperature", type=float, help="softmax temperature (default: chosen on validation)")
    p.add_argument(
        "--dyneval",
        action="store_true",
        help="dynamic evaluation (batch 1, gradient statistics at batch 1024, RMS decay; "
        "the checkpoint's max_time_steps and dyneval_* settings)",
    )
    p.add_argument(
        "--mc-samples",
        type=int,
        metavar="N",
        help="Monte Carlo dropout: average predictions over N sampled dropout masks "
        "(Mogrifier paper §3.3 uses 200; default: the checkpoint's mc_dropout_samples, 0 = off)",
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
        model, cfg = load_checkpoint(args.checkpoint)
        updates = parse_set(args.overrides)
        if args.data_dir:
            updates["data_dir"] = args.data_dir
        if args.mc_samples is not None:
            updates["mc_dropout_samples"] = args.mc_samples
        cfg = make_config({**cfg.to_dict(), **updates})
        corpus = load_corpus(cfg)
    except (FileNotFoundError, ValueError, DataError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if cfg.dataset == "reverse_copy":
        return _reverse_copy(args, model, corpus, cfg)
    assert isinstance(model, LanguageModel)  # every dataset but reverse_copy trains a language model
    valid = batchify(corpus.valid, cfg.eval_batch_size)
    data = valid if args.split == "valid" else batchify(corpus.test, cfg.eval_batch_size)
    if args.dyneval:
        # The trainer's own dynamic evaluation (trainer/dyneval.py): batch 1, statistics at 1024.
        split_ids = corpus.valid if args.split == "valid" else corpus.test
        loss = run_dynamic_evaluation(model, corpus.train, {args.split: split_ids}, cfg)[args.split]
        temperature = 1.0
    else:
        samples = cfg.mc_dropout_samples
        torch.manual_seed(cfg.seed)  # Monte Carlo masks: the same figure on every call
        temperature = args.temperature
        if temperature is None:
            temperature, _ = select_temperature(model, valid, cfg.bptt, samples)
        if samples > 0:
            loss = mc_evaluate(model, data, cfg.bptt, samples, (temperature,))[0]
        else:
            loss = evaluate(model, data, cfg.bptt, (temperature,))[0]
    name, value = headline(loss, cfg.word_level)
    mc = cfg.mc_dropout_samples if not args.dyneval else 0
    if args.json:
        print(
            json.dumps(
                {"split": args.split, "loss": loss, name: value, "temperature": temperature, "mc_samples": mc}
            )
        )
    else:
        how = f", Monte Carlo dropout over {mc} masks" if mc else ""
        print(f"{args.split}: {loss:.4f} nats/token, {name} {value:.3f} (temperature {temperature}{how})")
    return 0


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
