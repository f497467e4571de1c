"""The language model of thesis §4.2 eq. (1), and the Mogrifier paper's skip-connection variant.

Embedding (or the token's one-hot vector, `input_encoding: one_hot`) → L recurrent layers (any
cell of trainer.cells) → optional projection → softmax with input/output embeddings tied for
word-level tasks, or a mixture of `mos_components` softmaxes over the same output layer
(trainer/mos.py; Mogrifier paper Table 1, "MoS2"). Dropout: input and output masks fresh at every
time step, state dropout variational (one mask per sequence and layer), cell-output dropout on the
residual branch (or inter-layer dropout in the skip architecture). The output side is as the
Mogrifier authors' code (lamb/lm.py `output_module_1`) runs it: `output_dropout` on the cell
outputs, then `downprojected_output_dropout` (by default output_dropout's rate, lamb_flags.py)
again after the down-projection when input_embedding_ratio < 1, or on a mixture's latent contexts,
each a fresh mask per time step (lamb's `shared_mask_dropout False`).
"""

from __future__ import annotations

from typing import cast

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .cells import RecurrentCell, State, make_cell
from .config import TrainConfig
from .init import initialize_
from .mos import MixtureOfSoftmaxes, OutputScores


def embedding_size(cfg: TrainConfig, hidden_size: int) -> int:
    """input_embedding_ratio ≥ 1 means equal sizes; below it, ratio × hidden (Mogrifier App. A)."""
    if cfg.input_embedding_ratio >= 1.0:
        return hidden_size
    return max(1, round(cfg.input_embedding_ratio * hidden_size))


def variational_mask(batch: int, size: int, p: float, like: Tensor) -> Tensor | None:
    """One inverted-dropout mask per sequence, reused at every time step (Gal & Ghahramani)."""
    if p <= 0.0:
        return None
    keep = torch.empty(batch, size, device=like.device, dtype=like.dtype).bernoulli_(1.0 - p)
    return keep / (1.0 - p)


class LanguageModel(nn.Module):
    """Thesis §4.2 eq. (1): next-token distributions from token ids, time-major [T, B]."""

    def __init__(
        self, cfg: TrainConfig, vocab_size: int, hidden_size: int, output_layer: bool = True
    ) -> None:
        """`output_layer=False` builds only embedding and layers (`features`): a seq2seq encoder."""
        super().__init__()
        self.cfg = cfg
        self.vocab_size = vocab_size
        self.hidden_size = n = hidden_size
        self.embedding_size = e = embedding_size(cfg, n)
        # With one-hot input (Maupomé & Meurs §3) there is no input embedding to tie to the output.
        one_hot = cfg.input_encoding == "one_hot"
        self.tied = cfg.word_level and not one_hot
        self.embedding: nn.Embedding | None = None
        if not one_hot:
            self.embedding = nn.Embedding(vocab_size, e)
            nn.init.uniform_(self.embedding.weight, -0.1, 0.1)
        first_input = vocab_size if one_hot else e
        self.layers = nn.ModuleList(
            make_cell(
                cfg.cell,
                first_input if layer == 0 else n,
                n,
                t_max=cfg.t_max,
                mogrifier_rounds=cfg.mogrifier_rounds,
                mogrifier_rank=cfg.mogrifier_rank,
                chrono_init=cfg.chrono_init,
                multiplicative_form=cfg.multiplicative_form,
                cuda_path=cfg.cuda_path,
                mogrifier_kernel=cfg.mogrifier_kernel,
                mogrifier_zigzag=cfg.mogrifier_zigzag,
            )
            for layer in range(cfg.num_layers)
        )
        mixture = output_layer and cfg.mos_components > 1
        # A bias-free projection into the embedding space when the sizes differ (Mogrifier App. A);
        # a mixture's latent layer maps into that space itself (Yang et al. 2017 §2.4).
        self.projection = nn.Linear(n, e, bias=False) if e != n and output_layer and not mixture else None
        untied = not self.tied and output_layer
        self.out_embedding = nn.Parameter(torch.empty(vocab_size, e).uniform_(-0.1, 0.1)) if untied else None
        self.out_bias = nn.Parameter(torch.zeros(vocab_size)) if output_layer else None
        # Mixture of Softmaxes (Mogrifier paper Table 1, "d2, MoS2"; Yang et al. 2017 §2.4).
        self.mos = MixtureOfSoftmaxes(n, e, cfg.mos_components) if mixture else None

    def zero_state(self, batch_size: int, device: torch.device | str | None = None) -> list[State]:
        p = next(self.layers.parameters())
        cells = [cast(RecurrentCell, cell) for cell in self.layers]
        return [cell.zero_state(batch_size, device or p.device, p.dtype) for cell in cells]

    @property
    def output_weight(self) -> Tensor:
        if self.out_embedding is not None:
            return self.out_embedding
        assert self.embedding is not None  # tied: a word-level model with an input embedding
        return self.embedding.weight

    def inputs(self, tokens: Tensor) -> Tensor:
        """x^0 [T, B, ·]: the tokens' input embeddings E^in[w], or with `input_encoding: one_hot`
        their one-hot vectors of the vocabulary's size (Maupomé & Meurs §3)."""
        if self.embedding is None:
            return F.one_hot(tokens, self.vocab_size).to(next(self.layers.parameters()).dtype)
        return self.embedding(tokens)

    def features(self, tokens: Tensor, state: list[State]) -> tuple[Tensor, list[State]]:
        """The pre-softmax features Σ_l x̂^l ⊙ M^out (thesis §4.2 eq. 1), projected if needed (never
        with a mixture of softmaxes, whose latent layer reads them at the hidden size)."""
        cfg, drop = self.cfg, self.training
        batch = tokens.shape[1]
        x = F.dropout(self.inputs(tokens), cfg.input_dropout, drop)  # x̂^0 = E^in[w] ⊙ M^in_t
        new_state: list[State] = []
        if cfg.architecture == "residual":
            total: Tensor | None = None  # Σ_{i<l} x̂^i, the residual stream
            for layer, cell in enumerate(self.layers):
                inp = x if layer == 0 else total
                mask = variational_mask(batch, self.hidden_size, cfg.state_dropout, x) if drop else None
                h, s = cell(inp, state[layer], mask)
                new_state.append(s)
                h = F.dropout(h, cfg.cell_output_dropout, drop)  # x̂^l = h^l ⊙ M^cell,l_t
                total = h if total is None else total + h
            out = total
        else:
            # Skip connections (Melis et al. 2018, Mogrifier paper §3.3), as lamb's SkipMultiRNNCell:
            # every layer's undropped output feeds the softmax (only output dropout applies there),
            # and inter-layer dropout masks only the next layer's input.
            out = None
            inp = x
            for layer, cell in enumerate(self.layers):
                mask = variational_mask(batch, self.hidden_size, cfg.state_dropout, x) if drop else None
                h, s = cell(inp, state[layer], mask)
                new_state.append(s)
                out = h if out is None else out + h
                inp = F.dropout(h, cfg.inter_layer_dropout, drop)
        assert out is not None
        out = F.dropout(out, cfg.output_dropout, drop)  # ⊙ M^out_t
        if self.projection is not None:
            # lamb/lm.py: the down-projected outputs take downprojected_output_dropout too.
            out = F.dropout(self.projection(out), cfg.downprojected_rate, drop)
        return out, new_state

    def scores(self, features: Tensor) -> OutputScores:
        """The output layer's scores for `features` [T, B, ·]: one softmax's logits, or with
        `mos_components` > 1 every component's logits and the prior's (Yang et al. 2017 §2.4), the
        latent contexts under `downprojected_output_dropout` while training (lamb/lm.py: the
        mixture's contexts go through the same `to_softmax` dropout as a down-projection)."""
        if self.mos is None:
            return OutputScores(F.linear(features, self.output_weight, self.out_bias))
        contexts, prior_logits = self.mos(features, self.cfg.downprojected_rate if self.training else 0.0)
        return OutputScores(F.linear(contexts, self.output_weight, self.out_bias), prior_logits)

    def forward(self, tokens: Tensor, state: list[State]) -> tuple[Tensor, list[State]]:
        """ln p(w_t | w_<t) [T, B, V] (float32 even under bf16 autocast) and the carried state.

        Log-probabilities, not logits, since a mixture of softmaxes has no single logit vector;
        `scores` gives what temperature scaling needs.
        """
        out, new_state = self.features(tokens, state)
        return self.scores(out).log_probs(), new_state


class ReverseCopyModel(nn.Module):
    """The reverse copy task's encoder–decoder (Mogrifier paper §4.3): two independent stacks.

    The encoder reads the sequence; the decoder starts from the encoder's last state, reads the
    marker and then the reversed sequence so far (teacher forcing), and predicts the next reversed
    token. Both use the configured cell and architecture; the decoder alone has a softmax.
    """

    def __init__(self, cfg: TrainConfig, vocab_size: int, hidden_size: int) -> None:
        super().__init__()
        self.cfg = cfg
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.encoder = LanguageModel(cfg, vocab_size, hidden_size, output_layer=False)
        self.decoder = LanguageModel(cfg, vocab_size, hidden_size)

    def zero_state(self, batch_size: int, device: torch.device | str | None = None) -> list[State]:
        """No state is carried between batches: every example starts from zero."""
        return []

    def forward(self, source: Tensor, decoder_input: Tensor) -> Tensor:
        """Decoder ln p [L, B, V] for source [L, B] and decoder input [L, B] (marker first)."""
        _, state = self.encoder.features(source, self.encoder.zero_state(source.shape[1]))
        log_probs, _ = self.decoder(decoder_input, state)
        return log_probs


def make_model(cfg: TrainConfig, vocab_size: int, hidden_size: int) -> LanguageModel | ReverseCopyModel:
    """The configured task's model: the reverse copy encoder–decoder or a language model."""
    if cfg.dataset == "reverse_copy":
        return ReverseCopyModel(cfg, vocab_size, hidden_size)
    return LanguageModel(cfg, vocab_size, hidden_size)


def detach_state(state: list[State]) -> list[State]:
    """Cut the graph between BPTT windows while carrying the values across."""
    return [tuple(t.detach() for t in s) for s in state]


def drop_states(state: list[State], p: float) -> list[State]:
    """Each sequence's carried state, in every layer, zeroed with probability `p` (not rescaled): one
    draw per sequence shared by all of its state tensors, as lamb/training.py does before every
    training step (`drop_state_probability`), so training also starts from the zero state that
    evaluation starts from. `p` = 0 draws nothing."""
    if p <= 0.0 or not state:
        return state
    first = state[0][0]
    keep = torch.empty(first.shape[0], 1, device=first.device, dtype=first.dtype).bernoulli_(1.0 - p)
    return [tuple(t * keep.to(t.dtype) for t in s) for s in state]


def count_parameters(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def solve_hidden_size(cfg: TrainConfig, vocab_size: int) -> int:
    """The largest hidden size whose model fits in `cfg.num_params` weights (thesis §4.6 budgets).

    Parameter counts grow monotonically with the hidden size, so a binary search over models
    built on the meta device (no memory, no init cost) finds it exactly.
    """
    if cfg.hidden_size is not None:
        return cfg.hidden_size
    budget = cfg.num_params
    assert budget is not None

    def size(n: int) -> int:
        with torch.device("meta"):
            return count_parameters(make_model(cfg, vocab_size, n))

    if size(1) > budget:
        raise ValueError(
            f"num_params={budget} is too small: even hidden size 1 needs {size(1)} weights "
            f"with a vocabulary of {vocab_size}"
        )
    lo, hi = 1, 2
    while size(hi) <= budget:
        lo, hi = hi, hi * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if size(mid) <= budget:
            lo = mid
        else:
            hi = mid
    return lo


def build_model(cfg: TrainConfig, vocab_size: int) -> LanguageModel | ReverseCopyModel:
    """A model of the configured task, cell and architecture, sized by hidden_size or the budget,
    its weights drawn by `cfg.init` with the forget-gate bias `cfg.forget_bias` (trainer/init.py)."""
    model = make_model(cfg, vocab_size, solve_hidden_size(cfg, vocab_size))
    initialize_(model, cfg)
    return model
