"""The language model (thesis §4.2 eq. 1): dropout masks, embeddings, the parameter budget."""

from __future__ import annotations

import pytest
import torch

from trainer.config import make_config
from trainer.model import LanguageModel, build_model, count_parameters, drop_states, solve_hidden_size


def cfg(**kw):
    base = {"hidden_size": 16, "num_layers": 2}
    base.update(kw)
    return make_config(base)


def capture_layer_inputs(model):
    seen = []
    for layer in model.layers:
        layer.register_forward_pre_hook(lambda mod, args: seen.append(args))
    return seen


def test_state_mask_is_one_per_sequence_and_layer():
    model = LanguageModel(cfg(state_dropout=0.5), vocab_size=11, hidden_size=16).train()
    seen = capture_layer_inputs(model)
    tokens = torch.randint(0, 11, (9, 3))
    model(tokens, model.zero_state(3))
    masks = [args[2] for args in seen]
    assert all(m.shape == (3, 16) for m in masks)  # no time axis: the same mask at every step
    assert not torch.equal(masks[0], masks[1])  # each layer its own
    assert set(masks[0].unique().tolist()) <= {0.0, 2.0}
    model.eval()
    seen.clear()
    model(tokens, model.zero_state(3))
    assert all(args[2] is None for args in seen)


def test_input_mask_differs_between_time_steps():
    model = LanguageModel(cfg(input_dropout=0.5), vocab_size=5, hidden_size=16).train()
    seen = capture_layer_inputs(model)
    model(torch.full((6, 2), 3), model.zero_state(2))
    x = seen[0][0]  # the same token at every step, so any difference is the mask
    zero = x == 0
    assert zero.any() and not all(torch.equal(zero[0], zero[t]) for t in range(1, 6))


def test_output_mask_differs_between_time_steps():
    model = LanguageModel(cfg(output_dropout=0.5), vocab_size=5, hidden_size=16).train()
    out, _ = model.features(torch.full((6, 2), 3), model.zero_state(2))
    zero = out == 0
    assert zero.any() and not all(torch.equal(zero[0], zero[t]) for t in range(1, 6))


def test_word_level_ties_embeddings_and_projects_when_smaller(tmp_path):
    c = make_config(
        {"dataset": "ptb", "data_dir": str(tmp_path), "hidden_size": 20, "input_embedding_ratio": 0.5}
    )
    model = LanguageModel(c, vocab_size=30, hidden_size=20)
    assert model.out_embedding is None and model.output_weight is model.embedding.weight
    assert model.embedding_size == 10 and model.projection is not None and model.projection.bias is None
    logits, _ = model(torch.randint(0, 30, (4, 2)), model.zero_state(2))
    assert logits.shape == (4, 2, 30)


def test_ratio_at_least_one_means_equal_sizes_no_projection():
    model = LanguageModel(cfg(input_embedding_ratio=1.7), vocab_size=7, hidden_size=16)
    assert model.embedding_size == 16 and model.projection is None and model.out_embedding is not None


@pytest.mark.parametrize("architecture", ["residual", "skip"])
def test_architectures_run_three_layers(architecture):
    model = LanguageModel(
        cfg(architecture=architecture, num_layers=3, cell_output_dropout=0.3, inter_layer_dropout=0.3),
        vocab_size=7,
        hidden_size=16,
    )
    logits, state = model(torch.randint(0, 7, (5, 2)), model.zero_state(2))
    assert logits.shape == (5, 2, 7) and len(state) == 3


@pytest.mark.parametrize("budget", [5_000, 40_000, 123_456])
def test_budget_solver_is_largest_size_within_budget(budget):
    c = make_config({"num_params": budget, "num_layers": 2})
    n = solve_hidden_size(c, vocab_size=50)
    fits = count_parameters(LanguageModel(c, 50, n))
    over = count_parameters(LanguageModel(c, 50, n + 1))
    assert fits <= budget < over


def test_budget_too_small_is_a_clear_error():
    with pytest.raises(ValueError, match="too small"):
        build_model(make_config({"num_params": 10}), vocab_size=1000)


def test_skip_sums_undropped_outputs_and_drops_only_the_next_layers_input():
    """lamb's SkipMultiRNNCell: softmax input Σ_l h^l; inter-layer dropout on layer l+1's input only."""
    model = LanguageModel(
        cfg(architecture="skip", num_layers=3, inter_layer_dropout=0.5), vocab_size=7, hidden_size=16
    ).train()
    inputs, outputs = [], []

    def record(mod, args, out):
        inputs.append(args[0])
        outputs.append(out[0])

    for layer in model.layers:
        layer.register_forward_hook(record)
    torch.manual_seed(0)
    features, _ = model.features(torch.randint(0, 7, (5, 2)), model.zero_state(2))
    torch.testing.assert_close(features, outputs[0] + outputs[1] + outputs[2], rtol=0, atol=0)
    for below, above in zip(outputs[:-1], inputs[1:]):
        dropped = above == 0
        assert dropped.any() and (below[dropped] != 0).all()  # a real mask on the next input
        torch.testing.assert_close(above[~dropped], 2.0 * below[~dropped])  # inverted dropout, p = 0.5


def projected_features(model: LanguageModel, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The projection's input and the features it hands on, for one batch drawn with `seed`."""
    assert model.projection is not None
    seen: list[torch.Tensor] = []
    model.projection.register_forward_hook(lambda mod, args, out: seen.append(out))
    torch.manual_seed(seed)
    tokens = torch.randint(0, 11, (6, 3))
    out, _ = model.features(tokens, model.zero_state(3))
    return seen[-1], out


def test_output_dropout_applies_again_after_the_down_projection():
    """lamb/lm.py `output_module_1`: with input_embedding_ratio < 1 the projected outputs take
    downprojected_output_dropout, by default output_dropout's rate (lamb_flags.py: -1), fresh per step."""
    model = LanguageModel(cfg(input_embedding_ratio=0.5, output_dropout=0.5), vocab_size=11, hidden_size=16)
    assert model.embedding_size == 8 and model.projection is not None
    projected, out = projected_features(model.train(), seed=0)
    dropped = out == 0
    assert dropped.any() and not (projected == 0).any()  # zeros come after the projection
    torch.testing.assert_close(out[~dropped], projected[~dropped] / 0.5)  # inverted dropout at rate 0.5
    assert not all(torch.equal(dropped[0], dropped[t]) for t in range(1, 6))  # a fresh mask per step
    projected, out = projected_features(model.eval(), seed=0)
    assert torch.equal(out, projected)  # none in evaluation
    off = LanguageModel(
        cfg(input_embedding_ratio=0.5, output_dropout=0.5, downprojected_output_dropout=0.0),
        vocab_size=11,
        hidden_size=16,
    ).train()
    projected, out = projected_features(off, seed=0)
    assert torch.equal(out, projected)  # an explicit 0 turns the second dropout off


def test_no_down_projection_no_second_dropout():
    """Ratio ≥ 1: no projection, so output_dropout is the only output-side mask (lamb: to_softmax(x, None))."""
    model = LanguageModel(cfg(input_embedding_ratio=1.0, output_dropout=0.5), vocab_size=11, hidden_size=16)
    assert model.projection is None
    torch.manual_seed(0)
    out, _ = model.train().features(torch.randint(0, 11, (6, 3)), model.zero_state(3))
    share = (out == 0).float().mean().item()
    assert 0.3 < share < 0.7  # one mask at 0.5, not two (which would drop about 75%)


def test_drop_states_zeroes_whole_sequences_of_every_layer():
    """lamb/training.py: one draw per sequence, shared by every state tensor of every layer, not rescaled."""
    torch.manual_seed(0)
    state = [(torch.rand(400, 4) + 1, torch.rand(400, 4) + 1) for _ in range(2)]
    dropped = drop_states(state, 0.25)
    zero_rows = [(t == 0).all(dim=1) for s in dropped for t in s]
    assert all(torch.equal(zero_rows[0], rows) for rows in zero_rows[1:])  # the same sequences everywhere
    assert 60 < int(zero_rows[0].sum()) < 140  # about a quarter of 400
    kept = ~zero_rows[0]
    assert all(torch.equal(d[kept], t[kept]) for s, ds in zip(state, dropped) for t, d in zip(s, ds))
    rng = torch.get_rng_state()
    assert drop_states(state, 0.0) is state and torch.equal(torch.get_rng_state(), rng)  # 0 draws nothing
