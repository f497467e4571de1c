"""The Mixture of Softmaxes output layer (Yang et al. 2017 §2.4; Mogrifier paper Table 1, "MoS2"),
trainer/mos.py and its use in trainer/model.py."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from trainer import ConfigError, load_checkpoint, make_config, train
from trainer.evaluate import dropout_on, evaluate
from trainer.model import LanguageModel, build_model, count_parameters
from trainer.objective import token_log_likelihood

VOCAB = 13


def mos_model(dtype: torch.dtype = torch.float32, **kw) -> LanguageModel:
    """A tiny model whose embedding (4) is smaller than its hidden state (8), so the contexts are
    of the output embedding's size, not the hidden size."""
    cfg = make_config({"hidden_size": 8, "num_layers": 1, "input_embedding_ratio": 0.5, **kw})
    torch.manual_seed(0)
    return LanguageModel(cfg, vocab_size=VOCAB, hidden_size=8).to(dtype)


def features(model: LanguageModel, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.randn(5, 3, model.hidden_size, dtype=dtype, generator=torch.Generator().manual_seed(1))


def test_the_mixture_is_a_distribution_over_the_vocabulary():
    model = mos_model(torch.float64, mos_components=3).eval()
    assert model.mos is not None and model.projection is None  # the latent layer maps n -> e itself
    scores = model.scores(features(model, torch.float64))
    assert scores.logits.shape == (5, 3, 3, VOCAB) and scores.prior_logits is not None
    assert scores.prior_logits.shape == (5, 3, 3)
    for temperature in (1.0, 0.8):
        p = scores.log_probs(temperature).exp()
        assert p.dtype == torch.float64 and p.shape == (5, 3, VOCAB)
        torch.testing.assert_close(p.sum(-1), torch.ones(5, 3, dtype=torch.float64), rtol=0, atol=1e-6)


def test_the_mixture_is_the_prior_weighted_sum_of_the_softmaxes():
    """P(w) = Σ_k π_k softmax(logits_k / T)(w), temperature on every component's logits, not the prior."""
    model = mos_model(torch.float64, mos_components=2).eval()
    scores = model.scores(features(model, torch.float64))
    assert scores.prior_logits is not None
    prior = scores.prior_logits.softmax(-1)
    for temperature in (1.0, 0.7):
        want = (prior.unsqueeze(-1) * (scores.logits / temperature).softmax(-1)).sum(-2)
        torch.testing.assert_close(scores.log_probs(temperature).exp(), want, rtol=1e-12, atol=1e-12)
    mixture_at_1 = scores.log_probs(1.0)
    assert not torch.allclose(scores.log_probs(0.7), (mixture_at_1 / 0.7).log_softmax(-1))


class Head(nn.Module):
    """The model's output layer alone, so that functional_call can swap its weights in."""

    def __init__(self, model: LanguageModel) -> None:
        super().__init__()
        self.model = model

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return self.model.scores(h).log_probs(0.9)


def test_the_gradient_matches_finite_differences():
    """Untied output layer (character level), so every weight of the head is its own."""
    model = mos_model(torch.float64, mos_components=2, downprojected_output_dropout=0.5).eval()  # dropout off
    head = Head(model)
    names = ["model.mos.latent.weight", "model.mos.latent.bias", "model.mos.prior.weight"]
    names += ["model.out_embedding", "model.out_bias"]
    params = dict(head.named_parameters())
    weights = tuple(params[n].detach().clone().requires_grad_() for n in names)
    h = features(model, torch.float64)[:2, :2].requires_grad_()

    def log_probs(h: torch.Tensor, *ws: torch.Tensor) -> torch.Tensor:
        return torch.func.functional_call(head, dict(zip(names, ws)), (h,), strict=False)

    assert torch.autograd.gradcheck(log_probs, (h, *weights), eps=1e-6, atol=1e-5)


def test_one_component_is_the_plain_softmax_bit_for_bit():
    default, one = mos_model(), mos_model(mos_components=1, downprojected_output_dropout=0.4)
    assert default.mos is None and one.mos is None
    assert count_parameters(one) == count_parameters(default)
    for (name, a), (name_b, b) in zip(default.state_dict().items(), one.state_dict().items(), strict=True):
        assert name == name_b and torch.equal(a, b)
    tokens = torch.randint(0, VOCAB, (7, 3), generator=torch.Generator().manual_seed(2))
    y = tokens[1:]
    for model in (default, one):
        model.eval()
        log_probs, _ = model(tokens[:-1], model.zero_state(3))
        # The code path before mixtures: logits = the output layer on the features, log_softmax,
        # the targets' entries.
        h, _ = model.features(tokens[:-1], model.zero_state(3))
        logits = F.linear(h, model.output_weight, model.out_bias)
        assert torch.equal(log_probs, F.log_softmax(logits, dim=-1))
        want_ll = F.log_softmax(logits, dim=-1).gather(-1, y.unsqueeze(-1)).squeeze(-1)
        assert torch.equal(token_log_likelihood(log_probs, y), want_ll)
        assert torch.equal(model.scores(h).log_probs(0.8), F.log_softmax(logits / 0.8, dim=-1))
        want_loss = -F.log_softmax(logits / 0.8, dim=-1).gather(-1, y.unsqueeze(-1)).sum().item() / y.numel()
        assert evaluate(model, tokens, bptt=10, temperatures=(0.8,)) == [want_loss]


def latent_contexts(model: LanguageModel, seed: int) -> torch.Tensor:
    """The mixture's contexts [T, B, K, e] for the same features at every one of 6 steps (any
    difference between steps is the dropout mask's), drawn from torch seeded with `seed`."""
    assert model.mos is not None
    seen: list[torch.Tensor] = []
    hook = model.mos.register_forward_hook(lambda mod, args, out: seen.append(out[0]))
    torch.manual_seed(seed)
    model.scores(features(model)[:1].expand(6, 3, -1))
    hook.remove()
    return seen[-1]


def test_latent_dropout_is_a_fresh_mask_per_step_at_output_dropouts_rate_by_default():
    """lamb's Wikitext-2 MoS configurations (downprojected_output_dropout -1, shared_mask_dropout
    False): the contexts take output_dropout's rate, a new mask at every time step."""
    model = mos_model(mos_components=2, output_dropout=0.5).train()
    assert model.cfg.downprojected_output_dropout is None and model.cfg.downprojected_rate == 0.5
    contexts = latent_contexts(model, seed=0)
    zero = contexts == 0
    assert not all(torch.equal(zero[0], zero[t]) for t in range(1, 6))  # the mask changes between steps
    assert not torch.equal(zero[:, 0], zero[:, 1])  # and between sequences
    share = zero.float().mean().item()
    assert 0.3 < share < 0.7  # about half of 144 contexts dropped at rate 0.5
    kept = ~zero
    undropped = latent_contexts(model.eval(), seed=0)
    torch.testing.assert_close(contexts[kept], undropped[kept] / 0.5)  # inverted dropout: kept × 1/(1-p)
    assert not (undropped == 0).any()  # no dropout in evaluation


def test_an_explicit_latent_rate_overrides_output_dropout_and_mc_dropout_scales_it():
    model = mos_model(mos_components=2, output_dropout=0.5, downprojected_output_dropout=0.0).train()
    assert not (latent_contexts(model, seed=1) == 0).any()
    model = mos_model(mos_components=2, downprojected_output_dropout=0.5).train()
    assert (latent_contexts(model, seed=1) == 0).any()
    with dropout_on(model, 0.5):  # Monte Carlo dropout scales it with the others
        assert model.cfg.downprojected_rate == pytest.approx(0.25)
    assert model.cfg.downprojected_output_dropout == 0.5
    following = mos_model(mos_components=2, output_dropout=0.4)
    with dropout_on(following, 0.5):  # None follows output_dropout, scaled once
        assert following.cfg.downprojected_output_dropout is None
        assert following.cfg.downprojected_rate == pytest.approx(0.2)


def test_older_configs_latent_dropout_is_read_as_the_downprojected_rate():
    """`mos_latent_dropout` (configs and checkpoints from before) still loads: with a mixture its rate
    is now the downprojected rate; with one component it was ignored and is dropped."""
    cfg = make_config({"mos_components": 2, "mos_latent_dropout": 0.29})
    assert cfg.downprojected_output_dropout == 0.29 and "mos_latent_dropout" not in cfg.to_dict()
    assert make_config({"mos_latent_dropout": 0.0}).downprojected_output_dropout is None


def test_log_probabilities_are_float32_under_bf16_autocast():
    model = mos_model(mos_components=2)
    tokens = torch.randint(0, VOCAB, (6, 2), generator=torch.Generator().manual_seed(3))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        log_probs, _ = model(tokens, model.zero_state(2))
    assert log_probs.dtype == torch.float32
    torch.testing.assert_close(log_probs.exp().sum(-1), torch.ones(6, 2), rtol=0, atol=1e-5)


def test_the_parameter_budget_counts_the_mixture():
    plain = build_model(make_config({"num_params": 40_000}), vocab_size=100)
    mixture = build_model(make_config({"num_params": 40_000, "mos_components": 2}), vocab_size=100)
    assert isinstance(mixture, LanguageModel) and mixture.mos is not None
    assert count_parameters(mixture) <= 40_000 and mixture.hidden_size < plain.hidden_size


def test_two_components_train_and_their_checkpoint_loads(tmp_path: Path):
    cfg = make_config(
        {
            "hidden_size": 16,
            "mos_components": 2,
            "downprojected_output_dropout": 0.3,
            "batch_size": 4,
            "bptt": 8,
            "max_steps": 2,
            "eval_every": 2,
            "max_eval_tokens": 200,
            "device": "cpu",
            "run_dir": str(tmp_path / "run"),
        }
    )
    result = train(cfg, report=lambda m: m["step"] == 2)
    assert result.steps == 2 and math.isfinite(result.best_val_loss)
    model, loaded = load_checkpoint(tmp_path / "run" / "best.pt")
    assert (loaded.mos_components, loaded.downprojected_output_dropout) == (2, 0.3)
    assert isinstance(model, LanguageModel) and model.mos is not None and model.mos.components == 2


def test_a_checkpoint_from_before_mixtures_loads_with_one_component():
    model, cfg = load_checkpoint(Path(__file__).parent / "data" / "previous-main-last.pt")
    assert (cfg.mos_components, cfg.downprojected_output_dropout) == (1, None)
    assert isinstance(model, LanguageModel) and model.mos is None


@pytest.mark.parametrize(
    ("settings", "field"),
    [
        ({"mos_components": 0}, "mos_components"),
        ({"downprojected_output_dropout": 1.0}, "downprojected_output_dropout"),
        ({"downprojected_output_dropout": -0.1}, "downprojected_output_dropout"),
    ],
)
def test_out_of_range_settings_name_their_field(settings, field):
    with pytest.raises(ConfigError, match=rf"{field}: Input should be"):
        make_config(settings)
