"""The training loop: RAdam on the papers' loss, weight averaging (2TA or the switch) every E steps,
divergence recovery, checkpoints.

`train(config, report)` is the whole interface a tuner sees: `report(metrics)` is called after
every evaluation and may return True to stop the run.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any, overload

import torch
from torch import Tensor

from . import reverse_copy
from .averaging import Decision, chosen_weights, make_averaging, swap_in
from .cells import fallback, paths
from .checkpoint import (
    checkpoint_config,
    header,
    read_checkpoint,
    resumed_evaluation,
    save_atomic,
    saved_header,
)
from .config import MUTABLE_SETTINGS, ConfigError, TrainConfig
from .data import batchify, load_corpus
from .device import autocast, resolve_device, set_matmul_precision
from .divergence import Watch
from .evaluate import evaluate
from .figures import test_figures
from .measures import peak_memory
from .model import LanguageModel, ReverseCopyModel, build_model, count_parameters, detach_state, drop_states
from .objective import multi_sample_log_likelihood, repeat_for_samples, training_loss
from .optim import make_optimizer
from .order import LambOrder, separator_id
from .result import TrainingDiverged, TrainingInfeasible, TrainResult, headline
from .temperature import search_temperature, search_tokens

# On divergence the run restores its best checkpoint and multiplies the learning rate by this
# (Circling Back §5 / thesis §4.4); after `divergence_restores` restores it fails with TrainingDiverged.
LR_DECAY_ON_RESTORE = 0.9
# Settings that may change when a run resumes (they steer the run, not what it computes).
RESUMABLE_CHANGES = frozenset(
    {"max_steps", "max_time_s", "device", "cuda_path", "mogrifier_kernel", "run_dir"}
)
# What a retuned resume (a schedule's change, a PBT restart) may change besides: MUTABLE_SETTINGS, and
# the schedule that records them.
RETUNABLE_CHANGES = RESUMABLE_CHANGES | MUTABLE_SETTINGS | {"schedule"}

Report = Callable[[dict[str, Any]], Any]


class Trainer:
    """One run of `cfg`: builds data, model and optimizer, or resumes them from `run_dir/last.pt`.

    `retune=True` resumes a checkpoint written under other MUTABLE_SETTINGS (a schedule's change, a
    population-based-training restart); the run goes on under `cfg`'s.
    """

    def __init__(self, cfg: TrainConfig, progress: bool = False, retune: bool = False) -> None:
        self.cfg = cfg
        # What config.yaml records: the config that reproduces the run (train() sets the scheduled one).
        self.recorded_config = cfg
        self.progress = progress
        self.retune = retune
        self.device = resolve_device(cfg.device)
        set_matmul_precision(cfg, self.device)
        torch.manual_seed(cfg.seed)
        self.corpus = load_corpus(cfg)
        self.model = build_model(cfg, self.corpus.vocab_size).to(self.device)
        self.names = [n for n, _ in self.model.named_parameters()]
        self.params: list[Tensor] = [p for _, p in self.model.named_parameters()]
        self.num_params = count_parameters(self.model)  # the model's size, as measures.model_size counts it
        self.optimizer = make_optimizer(cfg, self.params)
        self.copy_task = cfg.dataset == "reverse_copy"  # examples [N, L], not token streams
        if self.copy_task:
            self.train_data = self.corpus.train
            self.valid_data, self.test_data = (
                self.corpus.valid.to(self.device),
                self.corpus.test.to(self.device),
            )
        else:
            self.train_data = batchify(self.corpus.train, cfg.batch_size).to(self.device)
            self.valid_data = batchify(self.corpus.valid, cfg.eval_batch_size).to(self.device)
            # lamb's final test reads one stream (experiment/test.sh); rnntune's, eval_batch_size.
            test_streams = 1 if cfg.test_streams == "one" else cfg.eval_batch_size
            self.test_data = batchify(self.corpus.test, test_streams).to(self.device)
        # 2TA, the Mogrifier paper's switch, none, or a thesis §3.6 baseline (averaging_baselines.py)
        self.averaging = make_averaging(cfg, self._train_loss_of)
        # data_order lamb: lamb's training streams (trainer/order.py); fixed: train_data's columns.
        self.order = (
            LambOrder(self.corpus.train, cfg.batch_size, cfg.seed, separator_id(self.corpus.vocab))
            if cfg.data_order == "lamb" and not self.copy_task
            else None
        )
        self.accuracies: dict[float, float | None] = {}  # this evaluation's accuracy by its loss
        self.val_temperatures: dict[float, float] = {}  # this evaluation's temperature by its loss
        self.run_dir = Path(cfg.run_dir)
        self.step = 0
        self.resumed_metrics: dict[str, Any] | None = None
        self.position = 0
        self.epoch = 0
        self.lr_scale = 1.0
        self.restores = 0
        self.best_val_loss = math.inf
        self.best_step: int | None = None
        self.train_time = 0.0
        self.tokens = 0
        self.state = self.model.zero_state(cfg.batch_size * cfg.dropout_samples)
        # divergence checks (divergence.py); divergence lamb trains on through finite explosions
        self.watch = Watch(self.corpus.vocab_size, self.device, explosions=cfg.divergence == "restore")
        self.initial = self._snapshot()
        if (self.run_dir / "last.pt").is_file():
            self._resume(self.run_dir / "last.pt")

    # --- checkpoints -------------------------------------------------------------------------

    def _snapshot(self, eval_weights: list[Tensor] | None = None) -> dict[str, Any]:
        model_weights = eval_weights if eval_weights is not None else self.params
        return {
            **header(),
            "config": self.cfg.to_dict(),
            "vocab": self.corpus.vocab,
            "hidden_size": self.model.hidden_size,
            "model": {n: w.detach().clone().cpu() for n, w in zip(self.names, model_weights)},
            "raw": [p.detach().clone().cpu() for p in self.params],
            "optimizer": self.optimizer.state_dict(),
            "averaging": self.averaging.state_dict(),
            "position": {"step": self.step, "offset": self.position, "epoch": self.epoch},
            "carried_state": [tuple(t.detach().cpu() for t in s) for s in self.state],
            "data_order": self.order.state_dict() if self.order is not None else None,
            "lr_scale": self.lr_scale,
            "restores": self.restores,
            "best_val_loss": self.best_val_loss,
            "best_step": self.best_step,
            "train_time": self.train_time,
            "tokens": self.tokens,
            "rng": torch.get_rng_state(),
            "cuda_rng": torch.cuda.get_rng_state_all() if self.device.type == "cuda" else None,
        }

    def _restore_weights(self, ckpt: dict[str, Any]) -> None:
        with torch.no_grad():
            for p, w in zip(self.params, ckpt["raw"]):
                p.copy_(w.to(p.device))
        self.optimizer.load_state_dict(ckpt["optimizer"])
        self.averaging.load_state_dict(ckpt["averaging"], self.device)

    def _resume(self, path: Path) -> None:
        ckpt = read_checkpoint(path, map_location=self.device)
        saved = checkpoint_config(ckpt).to_dict()
        now = self.cfg.to_dict()
        may_change = RETUNABLE_CHANGES if self.retune else RESUMABLE_CHANGES
        changed = [k for k in now if k not in may_change and saved.get(k) != now[k]]
        if changed:
            diffs = ", ".join(f"{k}: {saved.get(k)!r} -> {now[k]!r}" for k in changed)
            raise ConfigError(
                f"run_dir {self.run_dir} holds a run with a different config ({diffs}); "
                "use another run_dir or the same config to resume"
            )
        self._restore_weights(ckpt)
        pos = ckpt["position"]
        self.step, self.position, self.epoch = pos["step"], pos["offset"], pos["epoch"]
        self.state = [tuple(t.to(self.device) for t in s) for s in ckpt["carried_state"]]
        if self.order is not None:
            self.order.load_state_dict(ckpt["data_order"])
        self.lr_scale, self.restores = ckpt["lr_scale"], ckpt["restores"]
        self.best_val_loss, self.best_step = ckpt["best_val_loss"], ckpt["best_step"]
        self.train_time, self.tokens = ckpt["train_time"], ckpt["tokens"]
        torch.set_rng_state(ckpt["rng"])
        self.resumed_metrics = resumed_evaluation(self.run_dir, self.step)
        if ckpt.get("cuda_rng") is not None and self.device.type == "cuda":
            torch.cuda.set_rng_state_all(ckpt["cuda_rng"])
        self._set_lr()

    def _set_lr(self) -> None:
        for group in self.optimizer.param_groups:
            group["lr"] = self.cfg.learning_rate * self.lr_scale

    @property
    def lr(self) -> float:
        return self.cfg.learning_rate * self.lr_scale

    # --- training ------------------------------------------------------------------------------

    def _next_window(self) -> tuple[Tensor, Tensor]:
        """The next BPTT window of the training stream; wrapping around starts a new epoch (fixed
        order: the state restarts from zero) or, with lamb's order, each stream goes on unbroken."""
        if self.order is not None:
            x, y = self.order.next_window(self.cfg.bptt)
            return x.to(self.device), y.to(self.device)
        n = self.train_data.shape[0]
        if self.position + 1 >= n:
            self.position, self.epoch = 0, self.epoch + 1
            self.state = self.model.zero_state(self.cfg.batch_size * self.cfg.dropout_samples)
        end = min(self.position + self.cfg.bptt, n - 1)
        x = self.train_data[self.position : end]
        y = self.train_data[self.position + 1 : end + 1]
        self.position = end
        return x, y

    def recover(self, reason: str) -> None:
        """Divergence (thesis §4.4): restore the best checkpoint, learning rate × 0.9; with
        `divergence: lamb` (only non-finite values reach here) the run ends as infeasible."""
        if self.cfg.divergence == "lamb":
            raise TrainingInfeasible(
                f"training produced a non-finite value at step {self.step} ({reason}): infeasible, as "
                "lamb reports such a trial (divergence: lamb)",
                step=self.step,
            )
        self.restores += 1
        limit = self.cfg.divergence_restores
        if self.restores > limit:
            raise TrainingDiverged(
                f"training diverged at step {self.step} ({reason}) after {limit} restores "
                f"of the best checkpoint (divergence_restores) with the learning rate cut to "
                f"{self.lr:.3g}; try a lower learning_rate",
                step=self.step,
            )
        best = self.run_dir / "best.pt"
        self._restore_weights(read_checkpoint(best, self.device) if best.is_file() else self.initial)
        self.lr_scale *= LR_DECAY_ON_RESTORE
        self._set_lr()
        self.state = self.model.zero_state(self.cfg.batch_size * self.cfg.dropout_samples)
        if self.progress:
            print(f"step {self.step}: {reason}; restored the best checkpoint, lr -> {self.lr:.3g}")

    def _forward(self) -> tuple[Tensor, list]:
        """ln p of the next training batch's targets [T, B] (thesis §4.3), and the state to carry."""
        if self.copy_task:  # the reversed half of fresh examples (Mogrifier paper §4.3)
            assert isinstance(self.model, ReverseCopyModel)
            source = reverse_copy.train_batch(self.cfg, self.step).to(self.device)
            with autocast(self.cfg, self.device):
                return reverse_copy.log_likelihood(self.model, source).float(), self.state
        x, y = self._next_window()
        d = self.cfg.dropout_samples
        carried = drop_states(self.state, self.cfg.drop_state_probability)  # lamb/training.py
        with autocast(self.cfg, self.device):  # bf16: the matmuls; the model's ln p is float32
            log_probs, state = self.model(repeat_for_samples(x, d), carried)
        return multi_sample_log_likelihood(log_probs, y, d), state

    def train_step(self) -> float:
        """One optimizer step on the next window; returns the training loss in nats per token. On
        CUDA the divergence checks are read every few steps (divergence.py): between reads it returns
        NaN, at a read the mean over the steps read."""
        cfg = self.cfg
        self.model.train()
        ll, state = self._forward()
        loss = training_loss(ll, self.params, cfg.l2_penalty)
        per_token = -ll.detach().mean()
        self.optimizer.zero_grad(set_to_none=True)
        immediate = self.watch.immediate
        value = per_token.item() if immediate else math.nan
        if immediate and not math.isfinite(value):
            self.recover(f"training loss {value:.4g} nats/token")
            return value
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(self.params, cfg.grad_clip)
        if immediate and not torch.isfinite(norm):
            self.recover("non-finite gradient")
            return value
        self.watch.add(per_token, norm)
        self.optimizer.step()
        dtype = self.params[0].dtype  # the carried state stays in the weights' precision under bf16
        self.state = [tuple(t.to(dtype) for t in s) for s in detach_state(state)]
        self.averaging.add_weights(self.params)
        self.step += 1
        self.tokens += ll.numel()
        settled = self.settle() if self.step % self.watch.every == 0 else math.nan
        return value if immediate else settled

    def settle(self) -> float:
        """Read the divergence checks pending on the device and restore the best checkpoint if the
        steps read diverged; the mean training loss of the steps read (NaN when none were pending)."""
        if not self.watch.pending:
            return math.nan
        mean, problem = self.watch.read()
        if problem is not None:
            self.recover(problem)
        return mean

    def _validate(self) -> tuple[float, float | None]:
        """Validation loss (nats/token) of the current weights, and reverse copy's sequence accuracy.
        With `val_temperature_search` the loss is at the temperature lamb's search picks for these
        weights (lamb/evaluation.py `evaluate_all`, trainer/temperature.py), recorded by loss."""
        cfg = self.cfg
        if self.copy_task:
            assert isinstance(self.model, ReverseCopyModel)
            return reverse_copy.evaluate_examples(
                self.model, self.valid_data, cfg.eval_batch_size, cfg.max_eval_tokens
            )
        assert isinstance(self.model, LanguageModel)
        temperature = 1.0
        if cfg.val_temperature_search:
            valid_ids = self.corpus.valid.to(self.device)
            tokens = search_tokens(cfg.max_eval_tokens)
            temperature = search_temperature(self.model, valid_ids, cfg.batch_size, cfg.bptt, tokens)[0]
        loss = evaluate(self.model, self.valid_data, cfg.bptt, (temperature,), cfg.max_eval_tokens)[0]
        self.val_temperatures[loss] = temperature
        return loss, None

    def _with_weights(self, weights: list[Tensor] | None, measure: Callable[[], float]) -> float:
        """`measure()` with `weights` swapped into the model (None: the raw iterate as it is)."""
        if weights is None:
            return measure()
        saved = swap_in(self.params, weights)
        try:
            return measure()
        finally:
            swap_in(self.params, saved)

    def _loss_of(self, weights: list[Tensor] | None) -> float:
        def run() -> float:
            loss, accuracy = self._validate()
            self.accuracies[loss] = accuracy
            return loss

        return self._with_weights(weights, run)

    def _train_loss_of(self, weights: list[Tensor] | None) -> float:
        """The training loss (nats/token, temperature 1, dropout off) of `weights` (None: the raw
        iterate) over the first `max_eval_tokens` training tokens: what `averaging: 2ta_train`
        switches on (thesis §3.6)."""
        cfg = self.cfg
        assert isinstance(self.model, LanguageModel)
        model = self.model
        return self._with_weights(
            weights, lambda: evaluate(model, self.train_data, cfg.bptt, (1.0,), cfg.max_eval_tokens)[0]
        )

    def evaluate_2ta(self) -> Decision:
        self.accuracies.clear()
        self.val_temperatures.clear()
        return self.averaging.evaluate_and_adapt(self._loss_of, self.step)

    @overload
    def run(self, report: Report | None = None, until: None = None) -> TrainResult: ...

    @overload
    def run(self, report: Report | None, until: int) -> TrainResult | None: ...

    def run(self, report: Report | None = None, until: int | None = None) -> TrainResult | None:
        """Train to the end and return the result; `report(metrics)` after every evaluation may
        return True to stop. With `until`, return None right after reporting the first evaluation at
        or past step `until` (its last.pt already written), ready for a Trainer with new settings."""
        cfg = self.cfg
        if until is not None and self.step >= until:
            return None
        self.run_dir.mkdir(parents=True, exist_ok=True)
        (self.run_dir / "config.yaml").write_text(self.recorded_config.to_yaml())
        bar = _progress_bar(cfg, self.step) if self.progress else None
        paths.begin_run()
        stopped = "max_steps"
        window_tokens, window_time, train_losses = 0, 0.0, []
        # last.pt is written just before its evaluation is reported: a run stopped in between
        # resumes past an evaluation the caller may not have seen, so it is reported again.
        if report is not None and self.resumed_metrics is not None and report(self.resumed_metrics):
            save_atomic(self._snapshot(), self.run_dir / "last.pt")
            return self._finish("callback")
        try:
            while self.step < cfg.max_steps:
                if cfg.max_time_s is not None and self.train_time >= cfg.max_time_s:
                    stopped = "max_time"
                    break
                t0 = time.perf_counter()
                before = self.tokens
                loss = self.train_step()
                dt = time.perf_counter() - t0
                self.train_time += dt
                window_time += dt
                window_tokens += self.tokens - before
                if math.isfinite(loss):
                    train_losses.append(loss)
                self._show_step(bar, loss, window_tokens / max(window_time, 1e-9))
                if self.step % cfg.eval_every == 0 and self.tokens > before:
                    restores, settled = self.restores, self.settle()  # no evaluation of a diverged step
                    if math.isfinite(settled):
                        train_losses.append(settled)
                    if self.restores != restores:
                        continue
                    metrics = self._evaluation(train_losses, window_tokens / max(window_time, 1e-9))
                    window_tokens, window_time, train_losses = 0, 0.0, []
                    self._show_evaluation(bar, metrics)
                    if report is not None and report(metrics):
                        stopped = "callback"
                        break
                    if until is not None and self.step >= until:
                        return None
        finally:
            if bar is not None:
                bar.close()
        self.settle()
        save_atomic(self._snapshot(), self.run_dir / "last.pt")
        return self._finish(stopped)

    def _show_step(self, bar: Any, loss: float, tokens_per_s: float) -> None:
        """The progress bar (if shown) after a training step: its loss, headline figure and throughput."""
        if bar is None:
            return
        name, value = headline(loss, self.corpus.word_level) if math.isfinite(loss) else ("loss", loss)
        bar.set_postfix(
            loss=f"{loss:.3f}", **{name: f"{value:.3f}"}, tok_s=f"{tokens_per_s:.0f}", refresh=False
        )
        bar.update(self.step - bar.n)

    def _show_evaluation(self, bar: Any, metrics: dict[str, Any]) -> None:
        """One line under the progress bar (if shown) per evaluation."""
        if bar is None:
            return
        name, value = headline(metrics["val_loss"], self.corpus.word_level)
        bar.write(
            f"step {self.step}: val {metrics['val_loss']:.4f} nats ({name} {value:.3f}), "
            f"raw {metrics['raw_val_loss']:.4f}, avg length {metrics['avg_length']}"
        )

    def _evaluation(self, train_losses: list[float], tokens_per_s: float) -> dict[str, Any]:
        decision = self.evaluate_2ta()
        if self.cfg.divergence == "lamb" and math.isnan(decision.loss):  # lamb/monitoring.py
            raise TrainingInfeasible(f"validation loss NaN at step {self.step}: infeasible", step=self.step)
        eval_weights = chosen_weights(self.averaging, decision)
        improved = decision.loss < self.best_val_loss
        if improved:
            self.best_val_loss, self.best_step = decision.loss, self.step
        snapshot = self._snapshot(eval_weights)  # one copy of the state serves both files
        if improved:
            save_atomic(snapshot, self.run_dir / "best.pt")
        metrics: dict[str, Any] = {
            "step": self.step,
            "epoch": self._epochs(),
            "val_loss": decision.loss,
            "raw_val_loss": decision.raw_loss,
            "avg_length": decision.length,
            "tokens_per_s": tokens_per_s,
            "num_params": self.num_params,
            "peak_memory": peak_memory(self.device),
            "lr": self.lr,
            "train_loss": sum(train_losses) / len(train_losses) if train_losses else math.nan,
            "elapsed_s": self.train_time,
            "best_val_loss": self.best_val_loss,
            "restores": self.restores,
            "cuda_path_used": paths.path_used(self.device.type == "cuda", fallback.forced_on_cpu()),
            "cuda_path_calls": paths.counts(),
        }
        if self.copy_task:  # sequence accuracy of the weights 2TA chose (Mogrifier paper §4.3)
            metrics["accuracy"] = self.accuracies.get(decision.loss)
        if self.cfg.val_temperature_search:  # the temperature val_loss was scored at
            metrics["val_temperature"] = self.val_temperatures.get(decision.loss)
        if (self.run_dir / "best.pt").is_file():
            metrics["best_checkpoint"] = str((self.run_dir / "best.pt").resolve())
        with open(self.run_dir / "metrics.jsonl", "a") as f:
            f.write(json.dumps(metrics) + "\n")
        # last.pt after its evaluation's line: a run resumed from it always finds that line to
        # report again (a line past it is dropped on resume and measured again).
        save_atomic(snapshot, self.run_dir / "last.pt")
        return metrics

    def _epochs(self) -> float:
        """Epochs of training data read so far (with lamb's order, averaged over its streams)."""
        if self.order is not None:
            return self.order.epoch()
        return self.epoch + self.position / max(1, self.train_data.shape[0] - 1)

    def _finish(self, stopped: str) -> TrainResult:
        best = self.run_dir / "best.pt"
        figures: dict[str, float] = {}
        if best.is_file() and stopped != "callback":
            ckpt = read_checkpoint(best, self.device)
            saved = swap_in(self.params, [ckpt["model"][n].to(self.device) for n in self.names])
            try:
                figures = test_figures(self.model, self.cfg, self.corpus, self.valid_data, self.test_data)
            finally:
                swap_in(self.params, saved)
        result = TrainResult(
            best_val_loss=self.best_val_loss,
            best_step=self.best_step,
            run_dir=str(self.run_dir.resolve()),
            best_checkpoint=str(best.resolve()) if best.is_file() else None,
            stopped=stopped,
            steps=self.step,
            cuda_path_used=paths.path_used(self.device.type == "cuda", fallback.forced_on_cpu()),
            cuda_path_calls=paths.counts(),
            **figures,
        )
        (self.run_dir / "result.json").write_text(json.dumps(asdict(result), indent=2) + "\n")
        return result


def _progress_bar(cfg: TrainConfig, start: int):
    from tqdm import tqdm

    return tqdm(total=cfg.max_steps, initial=start, unit="step", dynamic_ncols=True)


def train(cfg: TrainConfig, report: Report | None = None, progress: bool = False) -> TrainResult:
    """Train (or resume) the run `cfg` describes; `report(metrics)` returning True stops it early.

    A schedule is replayed as population-based training runs it: each segment between changes is a
    fresh Trainer under `cfg.settings_at(start)`, resumed from the checkpoint of the evaluation at
    `start`, so a replay reproduces the member. A resumed run starts in the segment of its last.pt.
    """
    changes = [change.step for change in cfg.schedule]
    done = _checkpoint_step(Path(cfg.run_dir)) if changes else 0
    first = True  # later segments resume an evaluation this call has reported already
    for start, until in zip([0, *changes], changes):
        if done < until:
            result = _segment(cfg, start, progress, first).run(report, until=until)
            if result is not None:
                return result
            first = False
    return _segment(cfg, cfg.max_steps, progress, first).run(report)


def _segment(cfg: TrainConfig, start: int, progress: bool, report_resumed: bool) -> Trainer:
    """The Trainer of the schedule's segment from `start` on: its settings, resumed from the
    checkpoint at `start`; it reports that checkpoint's evaluation again only if `report_resumed`."""
    trainer = Trainer(cfg.settings_at(start), progress=progress, retune=bool(cfg.schedule))
    trainer.recorded_config = cfg
    if not report_resumed:
        trainer.resumed_metrics = None
    return trainer


def _checkpoint_step(run_dir: Path) -> int:
    """The step run_dir/last.pt was written at (0 without one): where a resumed schedule goes on."""
    last = run_dir / "last.pt"
    return saved_header(last)[1] if last.is_file() else 0
