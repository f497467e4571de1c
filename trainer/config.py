"""The trainer's one visible config object (nanoGPT style): every field is a documented setting.

Field names are the contract of docs/contracts.md: the hyperparameter names are shared by the search
spaces, the SQL study and the API. The resolved config is written to every run folder and saved
inside every checkpoint, so a checkpoint alone is enough to rebuild its model.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Any, Literal, cast

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    WithJsonSchema,
    model_validator,
)

Cell = Literal["lstm", "mogrifier_lstm", "rlstm", "mlstm", "tmlstm", "mgru", "tmgru"]
Architecture = Literal["residual", "skip"]
Dataset = Literal["builtin", "ptb", "ptb_char", "wikitext2", "enwik8", "text8", "mwc", "reverse_copy"]
Optimizer = Literal["radam", "adam"]
Averaging = Literal["2ta", "switch", "none", "ema", "tail", "2ta_train"]
MultiplicativeForm = Literal["default", "corrected", "printed"]
InputEncoding = Literal["embedding", "one_hot"]
# The cells whose bias holds a forget gate b_f (blocks i, j, f, o): what `forget_bias` sets.
FORGET_GATE_CELLS = ("lstm", "mogrifier_lstm", "rlstm")
# The spelling older configs and checkpoints use for Adam with beta1 = 0; read as optimizer: adam.
LEGACY_ADAM_BETA1_0 = "adam_beta1_0"

# Word-level datasets report perplexity and tie input/output embeddings (thesis §4.2);
# the others are character-level and report bits per character.
WORD_LEVEL_DATASETS = frozenset({"ptb", "wikitext2"})
# Upper bounds of the run's counts: far above any paper's run (Enwik8: about 550k steps), low enough
# that every derived number (rung steps, token counts, seconds) stays a finite float.
MAX_STEPS = 10**9
MAX_TOKENS = 10**12
MAX_PARAMS = 10**12
MAX_TIME_S = 10**8


# Marks a field that search spaces may tune (`tunable(...)` instead of `Field(...)`): the tuner derives
# its hyperparameter names and types from these fields, so a new hyperparameter is one field here.
TUNABLE = "tunable"


def tunable(default: Any, **kwargs: Any) -> Any:
    """A `Field` that search spaces may tune (the field's type gives the kind: float, int or Literal)."""
    return Field(default, json_schema_extra={TUNABLE: True}, **kwargs)


def _dropout(what: str):
    return tunable(0.0, ge=0.0, lt=1.0, description=what)


class ConfigError(ValueError):
    """A config that cannot be used; the message names the field and what is allowed."""


# Every dropout rate of the model (a setting that turns regularisation off sets them all to 0);
# `downprojected_output_dropout` follows `output_dropout` unless set, so it is listed apart.
DROPOUTS = (
    "input_dropout",
    "inter_layer_dropout",
    "cell_output_dropout",
    "state_dropout",
    "output_dropout",
)
# The dynamic-evaluation settings (thesis Table 2.6, Mogrifier paper App. A): what tuning dynamic
# evaluation on a trained model varies; every other setting is the model's (`trainer.dyneval`).
DYNEVAL_SETTINGS = ("max_time_steps", "dyneval_learning_rate", "dyneval_decay_rate", "dyneval_epsilon")
# Settings that may change in the middle of a run (a `schedule`, or a population-based-training restart
# from another member's checkpoint): each steers training without changing the model's shape or what a
# checkpoint holds, and takes effect when a Trainer built from the new config resumes the checkpoint.
MUTABLE_SETTINGS = frozenset(
    {
        # re-applied to the optimizer's param groups after its saved state is loaded (Trainer._set_lr)
        "learning_rate",
        # read by objective.training_loss at every step; no optimizer weight decay holds it
        "l2_penalty",
        # read from the model's config at every forward pass; no rate or mask is saved
        *DROPOUTS,
        # as the dropouts (LanguageModel.features and the mixture's contexts read downprojected_rate)
        "downprojected_output_dropout",
    }
)


class ScheduleChange(BaseModel):
    """One change of a schedule: from `step` on, train with `settings` (names of MUTABLE_SETTINGS)."""

    model_config = ConfigDict(extra="forbid")

    step: int = Field(gt=0, le=MAX_STEPS, description="the first step trained with these settings")
    settings: dict[str, float] = Field(description="setting name: its value from `step` on")


# Older configs and checkpoints name the mixture's latent dropout this (one mask per sequence then);
# read as downprojected_output_dropout where a mixture used it, dropped where it was ignored.
LEGACY_MOS_LATENT_DROPOUT = "mos_latent_dropout"


class TrainConfig(BaseModel):
    """Everything one training run needs. Defaults train a small model on the built-in corpus."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    # --- tuned hyperparameters (docs/contracts.md table; ranges: thesis Tables 2.4-2.6, §4.6) ---
    learning_rate: float = tunable(3e-3, gt=0.0, le=1.0, description="RAdam/Adam learning rate")
    input_embedding_ratio: float = tunable(
        1.0,
        ge=0.0,
        le=8.0,
        description="embedding size = ratio x hidden size; >= 1: equal sizes, no output projection",
    )
    l2_penalty: float = tunable(1e-5, ge=0.0, lt=1.0, description="l2_penalty * sum ||w||^2 / 2")
    input_dropout: float = _dropout("on input embeddings, a fresh mask per time step")
    inter_layer_dropout: float = _dropout("between layers of the skip architecture")
    cell_output_dropout: float = _dropout("on each cell's output in the residual architecture (§4.2)")
    state_dropout: float = _dropout("variational: one mask on h_prev per sequence and layer")
    output_dropout: float = _dropout(
        "on the last cell outputs before the output layer, a fresh mask per time step"
    )
    mogrifier_rounds: int = tunable(
        5,
        ge=0,
        le=12,
        description="rounds r of mogrifier_lstm (0 = LSTM) and of rlstm (> 0: the Mogrifier RLSTM, 0 = RLSTM)",
    )
    mogrifier_rank: int = tunable(
        40, ge=-1000, le=10000, description="rank k of Q^i, R^i; k <= 0 means full rank"
    )
    mogrifier_zigzag: bool = Field(
        True,
        description="false: the Mogrifier LSTM of the no-zigzag ablation (Mogrifier paper §4.1, Figure 2, "
        "Table 3), every round gated by the original x and h_prev; runs eagerly; cell mogrifier_lstm only",
    )
    t_max: float = tunable(
        math.exp(3.0),
        gt=2.0,
        le=1e6,
        description="Chrono init (with chrono_init): b_f ~ ln U(1, t_max - 1) (§4.4)",
    )
    chrono_init: bool = Field(
        False,
        description="Chrono init of forget (update) gate biases with t_max (thesis §4.4); off: they start at 0",
    )
    max_time_steps: int = tunable(20, ge=1, le=10000, description="dynamic evaluation BPTT window")
    dyneval_learning_rate: float = tunable(1e-4, gt=0.0, lt=1.0)
    dyneval_decay_rate: float = tunable(1e-3, ge=0.0, lt=1.0)
    dyneval_epsilon: float = tunable(1e-5, gt=0.0, lt=1.0)

    # --- model and task ---
    cell: Cell = tunable("lstm", description="the recurrent cell; a space may tune it as a categorical")
    architecture: Architecture = Field(
        "residual", description="residual (thesis §4.2 eq. 1) or skip (Mogrifier paper)"
    )
    mos_components: int = Field(
        1,
        ge=1,
        le=64,
        description="K softmaxes mixed at the output (Yang et al. 2017 §2.4; Mogrifier paper Table 1's "
        "Wikitext-2 models use 2, 'MoS2'); 1 is the plain softmax",
    )
    multiplicative_form: MultiplicativeForm = Field(
        "default",
        description="mlstm/tmlstm/mgru/tmgru (Maupomé & Meurs): printed (the equations as printed: eqs. "
        "11-13 without U x, eq. 23's V_r m_r outside σ, eq. 7's h = o ⊙ σ(c), intermediate size = input "
        "size, §5.1), corrected (eqs. 11-13 with U x, eq. 23 a gate, the rest as printed) or default "
        "(corrected with h = o ⊙ tanh(c) and intermediate size = hidden size)",
    )
    downprojected_output_dropout: float | None = Field(
        None,
        ge=0.0,
        lt=1.0,
        description="dropout after the output layer's down-projection (input_embedding_ratio < 1) and on a "
        "mixture's latent contexts (mos_components > 1), a fresh mask per time step; None: output_dropout's "
        "rate, as lamb runs it (lamb_flags.py: downprojected_output_dropout -1 means output_dropout)",
    )
    input_encoding: InputEncoding = Field(
        "embedding",
        description="what the first layer reads: embedding (a learned embedding of the token) or one_hot "
        "(the token's one-hot vector, input size = vocabulary size, Maupomé & Meurs §3, §5); one_hot has "
        "no input embedding, so the output embedding is never tied and input_embedding_ratio sizes it alone",
    )
    dataset: Dataset = "builtin"
    data_dir: Path | None = Field(None, description="folder holding the dataset's standard files")
    num_params: int | None = Field(
        None, gt=0, le=MAX_PARAMS, description="parameter budget; the hidden size is solved from it"
    )
    hidden_size: int | None = Field(
        None, gt=0, le=65536, description="explicit hidden size (overrides num_params)"
    )
    num_layers: int = Field(2, ge=1, le=64)
    batch_size: int = Field(32, ge=1, le=65536)
    bptt: int = Field(64, ge=2, le=100000, description="truncated BPTT window")
    dropout_samples: int = Field(
        1, ge=1, le=64, description="D: predictions averaged over D dropout samples (§4.3)"
    )
    optimizer: Optimizer = Field("radam", description="radam (thesis §4.4) or adam")
    adam_beta1: float = Field(
        0.0,
        ge=0.0,
        lt=1.0,
        description="β1 of RAdam/Adam; 0 as the baseline's Adam (Mogrifier paper §3.3), kept by thesis §4.6",
    )
    grad_clip: float = Field(10.0, gt=0.0, le=1e6, description="clip the gradient to this global norm")
    averaging: Averaging = Field(
        "2ta",
        description="2ta (thesis §3.4 Algorithm 2), switch (Mogrifier paper §3.3: the raw weights until "
        "averaging_patience evaluations without improvement or 80% of max_steps, then their tail average) "
        "or none (the raw weights at every evaluation, the best kept: Maupomé & Meurs §5.1); thesis §3.6's "
        "baselines: ema (eq. 3.1, decay ema_decay), tail (eq. 3.2 from step tail_start) and 2ta_train "
        "(2TA switching on the training loss of max_eval_tokens training tokens, validation loss reported)",
    )
    ema_decay: float = tunable(
        0.999,
        gt=0.0,
        lt=1.0,
        description="averaging: ema's constant β of thesis eq. (3.1): θ̄_t = (1 - β)θ_t + βθ̄_{t-1}; "
        "tuned in thesis §3.6",
    )
    tail_start: int = tunable(
        1,
        ge=1,
        le=MAX_STEPS,
        description="averaging: tail's start s of thesis eq. (3.2): the iterates of steps >= s are "
        "averaged, the raw weights reported before; tuned in thesis §3.6",
    )
    drop_state_probability: float = Field(
        0.0,
        ge=0.0,
        lt=1.0,
        description="at each training step, zero each sequence's carried state (every layer's) with this "
        "probability, so training also sees the zero state evaluation starts from (lamb/training.py; 0.01 in "
        "every published lamb config); 0: never",
    )
    averaging_patience: int = Field(
        50,
        ge=1,
        le=MAX_STEPS,
        description="averaging: switch turns on after this many evaluations without improvement",
    )

    # --- run control ---
    max_steps: int = Field(1000, ge=1, le=MAX_STEPS)
    max_time_s: float | None = Field(
        None, gt=0.0, le=MAX_TIME_S, description="stop after this much training time"
    )
    divergence_restores: int = Field(
        10,
        ge=0,
        le=100,
        description="on divergence, restore the best checkpoint with the learning rate x 0.9 up to this "
        "many times, then fail (Circling Back §5 / thesis §4.4); 0: fail at once (the Mogrifier "
        "paper has no restart)",
    )
    divergence: Literal["restore", "lamb"] = Field(
        "restore",
        description="restore (a non-finite loss or gradient, or a window's mean loss above twice a uniform "
        "prediction's, restores the best checkpoint: divergence_restores) or lamb (a non-finite gradient or "
        "validation loss ends the run as infeasible, TrainingInfeasible, with no value; a finite loss "
        "explosion trains on: lamb/main.py, lamb/monitoring.py)",
    )
    eval_every: int = Field(100, ge=1, le=MAX_STEPS, description="E: evaluate (and 2TA-adapt) every E steps")
    eval_batch_size: int = Field(16, ge=1, le=65536)
    max_eval_tokens: int | None = Field(
        None,
        gt=0,
        le=MAX_TOKENS,
        description="cap on validation tokens per evaluation (None: the whole split), the temperature "
        "search's included",
    )
    dyneval: bool = Field(False, description="also report dynamic evaluation at the end (§4.5)")
    dyneval_stats_batches: int | None = Field(
        None,
        gt=0,
        le=MAX_STEPS,
        description="dynamic evaluation's mean squared gradients over at most this many windows of the "
        "training split (lamb/experiment/mogrifier/tune_dyneval.sh: max_training_eval_batches=500); "
        "None: one whole pass (thesis App. 2.A)",
    )
    mc_dropout_samples: int = Field(
        0,
        ge=0,
        le=100000,
        description="> 0: also report Monte Carlo dropout evaluation over this many masks (Mogrifier §3.3: 200)",
    )
    mc_dropout_scale: float | None = Field(
        None,
        gt=0.0,
        le=1.0,
        description="Monte Carlo dropout multiplies every dropout rate by this (Mogrifier §3.3; 1 = unscaled); "
        "None: chosen on validation beside the temperature, as the paper's MC results are",
    )
    eval_temperature: float | None = Field(
        None,
        gt=0.0,
        le=100.0,
        description="softmax temperature of the end-of-run test figures; None: chosen on validation "
        "(thesis §4.6); 1: none, as Maupomé & Meurs (§5) evaluate",
    )
    val_temperature_search: bool = Field(
        False,
        description="search the softmax temperature at every evaluation, as every lamb tuning configuration "
        "does (eval_softmax_temperature -0.8: logit multipliers 1.06 down to 0.8 on the first 50,000 "
        "validation tokens in batch_size streams, lamb/evaluation.py evaluate_all; trainer/temperature.py), "
        "and report val_loss at that temperature; it then also picks the test figures' temperature; "
        "off: validation at temperature 1 (docs/trainer.md)",
    )
    init: Literal["rnntune", "lamb"] = Field(
        "rnntune",
        description="rnntune (cell weights U(±1/sqrt(in + n)), biases 0, embeddings U(±0.1)) or lamb (every "
        "matrix truncated normal with std 1/sqrt(its fan-in), biases too, the down-projection orthogonal: "
        "lamb/utils.py variance_scaling_initializer, lamb/cell.py, lamb/lm.py; trainer/init.py)",
    )
    forget_bias: float = Field(
        0.0,
        ge=-100.0,
        le=100.0,
        description="the forget-gate bias's initial value (init rnntune) or mean (init lamb) in the LSTM "
        "family (lamb/cell.py B_f, 1.0 in every published lamb config); not with chrono_init",
    )
    test_streams: Literal["batched", "one"] = Field(
        "batched",
        description="test figures read the test split in eval_batch_size streams, each from a zero state "
        "(batched), or as one continuous stream (one), as lamb's final test does "
        "(experiment/test.sh: min_non_episodic_eval_examples_per_stripe=500000)",
    )
    data_order: Literal["fixed", "lamb"] = Field(
        "fixed",
        description="fixed (batch_size streams at fixed offsets, the state reset at each epoch) or lamb (each "
        "epoch starts the streams at a random offset, each with up to ±100 lines of jitter, the state "
        "carried on: lamb/corpus.py equidistant_iterators; trainer/order.py)",
    )
    reverse_copy_length: int = Field(
        50, ge=1, le=100000, description="reverse copy: tokens per sequence (Mogrifier paper §4.3: 50-200)"
    )
    reverse_copy_vocab: int = Field(
        1000, ge=2, le=1_000_000, description="reverse copy: symbols drawn uniformly (paper: 1000)"
    )
    seed: int = Field(0, ge=0, le=2**32 - 1, description="seeds torch and the data order")
    device: str = Field("auto", description="auto, cpu, cuda or cuda:N")
    cuda_path: Literal["auto", "graphs", "eager"] = Field(
        "auto",
        description="on CUDA, how LSTM-family cells train: auto (each layer's window replayed as CUDA "
        "graphs, and eager for the rest of the process after any failure of that path), graphs (the "
        "same, a failure is an error) or eager; ignored on CPU (docs/trainer.md)",
    )
    mogrifier_kernel: Literal["torch", "fused"] = Field(
        "torch",
        description="on CUDA's compiled and graphed paths, how the Mogrifier rounds run: torch (two products "
        "and a gate per round and step) or fused (every round of a step in one Triton kernel, forward and "
        "backward; opt-in until its equivalence tests have passed on a GPU); ignored on CPU and without "
        "rounds (docs/trainer.md)",
    )
    precision: Literal["fp32", "tf32", "bf16"] = Field(
        "fp32",
        description="fp32 (the papers' setting), tf32 (float32 matmuls on TensorFloat-32 tensor cores, "
        "CUDA only) or bf16 (autocast: matmuls in bfloat16, the carried state and the loss in float32)",
    )
    run_dir: Path = Field(Path("runs/train"), description="where config, metrics and checkpoints go")
    # Inlined schema: a `$ref` into `$defs` would dangle where only `properties` are copied (tuner spaces).
    schedule: Annotated[
        list[ScheduleChange],
        WithJsonSchema({"type": "array", "items": ScheduleChange.model_json_schema()}),
    ] = Field(
        default_factory=list,
        description="changes of learning_rate, l2_penalty or dropouts at evaluation steps, in increasing "
        "step order: from each change's step on the run trains with its settings, resumed from the "
        "checkpoint of that step's evaluation; what `rnntune train --config` replays for a "
        "population-based-training member's schedule (docs/trainer.md)",
    )

    @model_validator(mode="before")
    @classmethod
    def _legacy_optimizer(cls, values: Any) -> Any:
        """`optimizer: adam_beta1_0` (older configs and checkpoints) is Adam with adam_beta1 = 0."""
        if isinstance(values, dict) and values.get("optimizer") == LEGACY_ADAM_BETA1_0:
            if values.get("adam_beta1", 0.0) != 0.0:
                raise ValueError(
                    f"optimizer: {LEGACY_ADAM_BETA1_0} means adam_beta1 = 0, not {values['adam_beta1']}"
                )
            values = {**values, "optimizer": "adam", "adam_beta1": 0.0}
        return values

    @model_validator(mode="before")
    @classmethod
    def _legacy_mos_latent_dropout(cls, values: Any) -> Any:
        """`mos_latent_dropout` (older configs and checkpoints): the rate a mixture's latent contexts
        took, now `downprojected_output_dropout`; ignored, and so dropped, with one component."""
        if isinstance(values, dict) and LEGACY_MOS_LATENT_DROPOUT in values:
            values = dict(values)
            rate = values.pop(LEGACY_MOS_LATENT_DROPOUT)
            if values.get("mos_components", 1) > 1 and "downprojected_output_dropout" not in values:
                values["downprojected_output_dropout"] = rate
        return values

    @model_validator(mode="after")
    def _check_combinations(self) -> TrainConfig:
        if self.hidden_size is None and self.num_params is None:
            raise ValueError("set hidden_size or num_params (a parameter budget)")
        if not (self.device in ("auto", "cpu", "cuda") or self.device.startswith("cuda:")):
            raise ValueError(f"device must be auto, cpu, cuda or cuda:N, not {self.device!r}")
        if self.mogrifier_kernel == "fused" and self.cuda_path == "eager":
            raise ValueError(
                "mogrifier_kernel fused runs on the compiled and graphed CUDA paths; with cuda_path eager it "
                "would never run: set cuda_path auto or graphs, or mogrifier_kernel torch"
            )
        if not self.mogrifier_zigzag and (self.cell != "mogrifier_lstm" or self.mogrifier_kernel == "fused"):
            raise ValueError(
                "mogrifier_zigzag false is the Mogrifier LSTM's no-zigzag ablation (Mogrifier paper §4.1): "
                "cell mogrifier_lstm, mogrifier_kernel torch (it runs eagerly)"
            )
        if self.forget_bias != 0.0 and self.chrono_init:
            raise ValueError("forget_bias and chrono_init both set the forget-gate bias: use one")
        if self.forget_bias != 0.0 and self.cell not in FORGET_GATE_CELLS:
            raise ValueError(
                f"forget_bias applies to the cells with a forget gate ({', '.join(FORGET_GATE_CELLS)}), "
                f"not {self.cell!r}"
            )
        if self.dataset not in ("builtin", "reverse_copy") and self.data_dir is None:
            raise ValueError(f"dataset {self.dataset!r} needs data_dir (the folder with its files)")
        return self

    @model_validator(mode="after")
    def _check_reverse_copy(self) -> TrainConfig:
        """Reverse copy trains without dropout (Mogrifier paper §4.3) and has no text to adapt to."""
        if self.dataset == "reverse_copy":
            for name in (*DROPOUTS, "downprojected_output_dropout"):
                if getattr(self, name) not in (0.0, None):
                    raise ValueError(
                        f"{name} must be 0 for dataset reverse_copy (no dropout, Mogrifier paper §4.3)"
                    )
            if self.dropout_samples != 1:
                raise ValueError("dropout_samples must be 1 for dataset reverse_copy (no dropout)")
            if self.dyneval:
                raise ValueError("dyneval does not apply to dataset reverse_copy")
            if self.averaging == "2ta_train":
                raise ValueError("averaging 2ta_train needs a training text: not dataset reverse_copy")
        return self

    @model_validator(mode="after")
    def _check_schedule(self) -> TrainConfig:
        """Changes at increasing evaluation steps before max_steps, of mutable settings only, each
        leaving a valid config (the fields' own limits and combinations)."""
        base = self.model_dump(exclude={"schedule"})
        applied: dict[str, float] = {}
        previous = 0
        for i, change in enumerate(self.schedule):
            where = f"schedule[{i}]"
            if change.step <= previous:
                raise ValueError(
                    f"{where}.step: {change.step} must be above the previous change's {previous}"
                )
            if change.step % self.eval_every or change.step >= self.max_steps:
                raise ValueError(
                    f"{where}.step: {change.step} must be a multiple of eval_every ({self.eval_every}) "
                    f"below max_steps ({self.max_steps}): a change starts from an evaluation's checkpoint"
                )
            for name in change.settings:
                if name not in MUTABLE_SETTINGS:
                    allowed = ", ".join(sorted(MUTABLE_SETTINGS))
                    raise ValueError(
                        f"{where}.settings.{name}: not a setting that may change mid-run; allowed: {allowed}"
                    )
            applied.update(change.settings)
            try:
                TrainConfig(**{**base, **applied})
            except ValidationError as err:
                problems = []
                for e in err.errors():
                    field = ".".join(str(p) for p in e["loc"])
                    at = f"{where}.settings.{field}" if field in change.settings else where
                    got = f" (got {e['input']!r})" if field in change.settings else ""
                    msg = str(e["ctx"]["error"]) if e["type"] == "value_error" else e["msg"]
                    problems.append(f"{at}: {msg}{got}")
                raise ValueError("; ".join(problems)) from None
            previous = change.step
        return self

    def settings_at(self, step: int) -> TrainConfig:
        """The config training runs under at `step`: every schedule change at or before it applied
        (the schedule itself kept, so the result still describes the whole run)."""
        values: dict[str, float] = {}
        for change in self.schedule:
            if change.step <= step:
                values.update(change.settings)
        return self.model_copy(update=values)

    @property
    def downprojected_rate(self) -> float:
        """The dropout rate after the down-projection and on a mixture's contexts (lamb's -1: output_dropout)."""
        if self.downprojected_output_dropout is None:
            return self.output_dropout
        return self.downprojected_output_dropout

    @property
    def word_level(self) -> bool:
        return self.dataset in WORD_LEVEL_DATASETS

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.to_dict(), sort_keys=False)


DEFAULT_HIDDEN_SIZE = 128


def _describe(err: ValidationError) -> str:
    lines = []
    for e in err.errors():
        name = ".".join(str(p) for p in e["loc"]) or "config"
        msg = e["msg"]
        if e["type"] == "extra_forbidden":
            known = ", ".join(sorted(TrainConfig.model_fields))
            msg = f"unknown setting; known settings: {known}"
        elif e["type"] == "literal_error":
            msg = f"{msg} (got {e.get('input')!r})"
        elif "input" in e and e["type"] not in ("missing",) and e["loc"]:  # not the whole config
            msg = f"{msg} (got {e['input']!r})"
        lines.append(f"  {name}: {msg}")
    return "invalid trainer config:\n" + "\n".join(lines)


def make_config(values: dict[str, Any] | None = None) -> TrainConfig:
    """Validate a dict into a TrainConfig; errors name every bad field and what is allowed."""
    values = dict(values or {})
    if values.get("hidden_size") is None and values.get("num_params") is None:
        values.setdefault("hidden_size", DEFAULT_HIDDEN_SIZE)
    try:
        return TrainConfig(**values)
    except ValidationError as err:
        raise ConfigError(_describe(err)) from None


# Values of `name=value` that mean "unset" for a field that accepts None.
NULL_WORDS = frozenset({"", "null", "none", "~"})


def parse_assignment(item: str, flag: str = "--set") -> tuple[str, str]:
    """Split one command-line `name=value` item (`--set`, `--range`) into name and raw value text."""
    name, sep, raw = item.partition("=")
    if not sep or not name.strip():
        raise ConfigError(f"{flag} expects name=value, got {item!r}")
    return name.strip(), raw.strip()


def parse_value(name: str, raw: str) -> Any:
    """The value of `name=raw`, typed by TrainConfig's field `name` and ready for JSON.

    `null`, `none`, `~` or nothing give None where the field accepts None. Text the field's type
    does not take (and any value of an unknown name) stays a string, so that `make_config` reports
    the field and what it allows.
    """
    field = TrainConfig.model_fields.get(name)
    if field is None:
        return raw
    adapter: TypeAdapter[Any] = TypeAdapter(cast(Any, field.annotation))
    if raw.lower() in NULL_WORDS and _accepts(adapter, None):
        return None
    try:
        return adapter.dump_python(adapter.validate_python(raw), mode="json")
    except ValidationError:
        return raw


def _accepts(adapter: TypeAdapter[Any], value: Any) -> bool:
    try:
        adapter.validate_python(value)
    except ValidationError:
        return False
    return True


def parse_set(items: Iterable[str], flag: str = "--set") -> dict[str, Any]:
    """Parse `name=value` items into settings typed by the config's fields (the one such parser:
    `rnntune train/evaluate/sweep --set` and the tuner's remote client use it)."""
    out: dict[str, Any] = {}
    for item in items:
        name, raw = parse_assignment(item, flag)
        out[name] = parse_value(name, raw)
    return out


def load_config(path: str | Path | None = None, overrides: list[str] | dict | None = None) -> TrainConfig:
    """Read a YAML config (or start from defaults) and apply `--set name=value` overrides."""
    values: dict[str, Any] = {}
    if path is not None:
        path = Path(path)
        if not path.is_file():
            raise ConfigError(f"config file {path} does not exist")
        try:
            loaded = yaml.safe_load(path.read_text())
        except yaml.YAMLError as err:
            raise ConfigError(f"config file {path} is not valid YAML: {err}") from None
        if loaded is not None and not isinstance(loaded, dict):
            raise ConfigError(f"config file {path} must hold a mapping of name: value")
        values.update(loaded or {})
    if isinstance(overrides, dict):
        values.update(overrides)
    elif overrides:
        values.update(parse_set(list(overrides)))
    return make_config(values)
