"""`rnntune train`: one training run of the shared trainer, with a progress bar."""

from __future__ import annotations

import argparse
import sys
from datetime import datetime

from trainer import ConfigError, DataError, TrainingDiverged, load_config, train
from trainer.result import headline


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "train",
        help="train one model (default: a small model on the built-in corpus)",
        description="Train one language model. Settings come from --config (YAML) and --set "
        "name=value overrides; every setting is a TrainConfig field (see docs/trainer.md).",
    )
    p.add_argument("--config", metavar="FILE", help="YAML file of trainer settings")
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="override one setting (repeatable), e.g. --set cell=mogrifier_lstm",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    overrides = list(args.overrides)
    if not any(o.startswith("run_dir=") for o in overrides):
        overrides.append(f"run_dir=runs/train-{datetime.now():%Y%m%d-%H%M%S}")
    try:
        cfg = load_config(args.config, overrides)
        print(f"training {cfg.cell} ({cfg.architecture}) on {cfg.dataset}; run folder {cfg.run_dir}")
        result = train(cfg, progress=not args.quiet)
    except (ConfigError, DataError, TrainingDiverged) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    name, value = headline(result.best_val_loss, cfg.word_level)
    print(
        f"best validation loss {result.best_val_loss:.4f} nats/token ({name} {value:.3f}) at step {result.best_step}"
    )
    if result.test_loss is not None:
        name, value = headline(result.test_loss, cfg.word_level)
        if result.test_accuracy is not None:  # reverse copy (Mogrifier paper §4.3)
            print(
                f"test loss {result.test_loss:.4f} nats/token, sequence accuracy {result.test_accuracy:.4f}"
            )
        else:
            print(
                f"test loss {result.test_loss:.4f} nats/token ({name} {value:.3f}) at temperature {result.temperature}"
            )
    for label, loss in (
        ("Monte Carlo dropout", result.mc_test_loss),
        ("dynamic evaluation", result.dyneval_test_loss),
    ):
        if loss is not None:
            name, value = headline(loss, cfg.word_level)
            print(f"test loss with {label} {loss:.4f} nats/token ({name} {value:.3f})")
    print(f"best checkpoint: {result.best_checkpoint}")
    return 0
