"""Initial weights (trainer/init.py): `init: lamb` against lamb's transcribed rules, `forget_bias`,
and `init: rnntune` left as the modules draw it."""

from __future__ import annotations

import math

import pytest
import torch

from trainer import make_config
from trainer.cells import LSTMCell
from trainer.cells.mogrifier import MogrifierGate, MogrifierLSTMCell
from trainer.config import ConfigError
from trainer.init import forget_gate_bias, initialize_
from trainer.model import LanguageModel, build_model

N, VOCAB = 256, 300


def lamb_model(**kw) -> LanguageModel:
    cfg = make_config(
        {"hidden_size": N, "num_layers": 1, "cell": "mogrifier_lstm", "mogrifier_rank": 16}
        | {"mogrifier_rounds": 2, "input_embedding_ratio": 0.5, "init": "lamb", "forget_bias": 1.0, **kw}
    )
    torch.manual_seed(0)
    model = build_model(cfg, VOCAB)
    assert isinstance(model, LanguageModel)
    return model


def assert_lamb_fan_in(t: torch.Tensor, fan_in: int, mean: float = 0.0) -> None:
    """lamb/utils.py variance_scaling_initializer(scale=1.0, mode='fan_in', 'truncated_normal', mean):

        fan_in = float(shape[-2]) if len(shape) > 1 else float(shape[-1])
        ...
        # To get stddev = math.sqrt(scale / n) need to adjust for truncated.
        trunc_stddev = math.sqrt(1.3 * scale / n)
        return tf.truncated_normal(shape, mean, trunc_stddev, dtype, seed=seed)

    tf.truncated_normal re-draws beyond two standard deviations, so the values lie within
    mean ± 2·trunc_stddev with standard deviation 0.8796·trunc_stddev ≈ 1/sqrt(fan_in)."""
    trunc_stddev = math.sqrt(1.3 / fan_in)
    assert (t - mean).abs().max().item() <= 2 * trunc_stddev + 1e-6
    assert t.mean().item() == pytest.approx(mean, abs=4 * trunc_stddev / math.sqrt(t.numel()))
    assert t.std().item() == pytest.approx(0.87962566 * trunc_stddev, rel=0.05)
    assert t.std().item() == pytest.approx(1 / math.sqrt(fan_in), rel=0.06)


def test_lstm_matrices_and_biases_follow_lambs_cell_initializer():
    """lamb/cell.py `make_lstm_column`: ('B_f', variance_scaling_initializer(scale=cell_init_factor,
    distribution='truncated_normal', mean=forget_bias)), ('W_.*', cell_initializer), ('B_.*',
    cell_initializer), each gate's W_x_g [m, n] and W_h_g [n, n] its own tile (tiled_linear.py: one
    initializer call per tile shape). So W_x ~ 1/sqrt(m), W_h ~ 1/sqrt(n), biases ~ 1/sqrt(n) around 0,
    B_f around forget_bias (1.0 in every published config)."""
    cell = lamb_model().layers[0]
    assert isinstance(cell, MogrifierLSTMCell)
    m = cell.input_size
    assert m == N // 2
    for g in range(4):  # each gate block has its tile's statistics
        assert_lamb_fan_in(cell.w_x[:, g * N : (g + 1) * N].detach(), m)
        assert_lamb_fan_in(cell.w_h[:, g * N : (g + 1) * N].detach(), N)
    bias = cell.bias.detach()
    for g, mean in ((0, 0.0), (1, 0.0), (2, 1.0), (3, 0.0)):  # i, j, f, o
        assert_lamb_fan_in(bias[g * N : (g + 1) * N], N, mean)
    assert torch.equal(forget_gate_bias(cell).detach(), bias[2 * N : 3 * N])


def test_low_rank_mogrifier_factors_follow_lambs_factorization_initializer():
    """lamb/utils.py `make_low_rank_factorization_initializer(shape, rank)`:

        fan_in = int(shape[0])
        variance = 1.0 / fan_in
        stddev = np.sqrt(np.sqrt(variance / rank))
        return tf.initializers.truncated_normal(stddev=stddev)

    with shape [num_y, num_x] (the gate's input size first), biases tf.zeros_initializer()
    (lamb/tiled_lstm.py `_do_feature_masking`)."""
    cell = lamb_model().layers[0]
    for gate in cell.gates:
        assert isinstance(gate, MogrifierGate)
        fan_in = gate.w_in.shape[0]
        stddev = (1.0 / fan_in / 16) ** 0.25
        for factor in (gate.w_in.detach(), gate.w_out.detach()):
            assert factor.abs().max().item() <= 2 * stddev + 1e-6
            assert factor.std().item() == pytest.approx(0.87962566 * stddev, rel=0.06)
        assert torch.count_nonzero(gate.bias) == 0
        # the product has about the variance 1/fan_in of a directly drawn matrix
        assert (gate.w_in @ gate.w_out).std().item() == pytest.approx(0.774 / math.sqrt(fan_in), rel=0.1)


def test_full_rank_mogrifier_gate_takes_the_cell_initializer():
    """lamb/tiled_lstm.py: rank 0 is `utils.linear(y, num_x, bias=True, scope=fm_name)` inside the
    cell's variable scope (initializer=self._initializer, the cell_initializer)."""
    gate = lamb_model(mogrifier_rank=0).layers[0].gates[0]
    assert_lamb_fan_in(gate.weight.detach(), gate.weight.shape[0])


def test_embeddings_and_orthogonal_projection_follow_lamb_lm():
    """lamb/lm.py: embedding_initializer = tf.variance_scaling_initializer(scale=embedding_init_factor,
    mode='fan_out', distribution='truncated_normal') on [vocab_size, input_embedding_size];
    output_initializer (mode='fan_in') on the softmax weights [output_embedding_size, vocab_size],
    softmax bias tf.zeros_initializer(); the down-projection `utils.linear(outputs, output_embedding_size,
    False, initializer=utils.orthogonal_initializer())`. TF's variance scaling divides the truncated
    normal's stddev by .87962566103423978, so the std is exactly sqrt(1 / e)."""
    model = lamb_model()
    e = model.embedding_size
    assert model.embedding is not None and model.out_embedding is not None
    for weight in (model.embedding.weight.detach(), model.out_embedding.detach()):
        assert weight.std().item() == pytest.approx(1 / math.sqrt(e), rel=0.03)
        assert weight.abs().max().item() <= 2 / math.sqrt(e) / 0.87962566 + 1e-6
    assert model.out_bias is not None and torch.count_nonzero(model.out_bias) == 0
    assert model.projection is not None
    w = model.projection.weight.detach()  # [e, n]: orthonormal rows
    assert torch.allclose(w @ w.t(), torch.eye(e), atol=1e-4)


def test_lamb_weights_are_about_two_and_a_half_times_rnntunes():
    """The issue's figure: U(±1/sqrt(m + n)) has std 1/sqrt(3(m + n)); lamb's, 1/sqrt(m) for W_x."""
    rnntune = lamb_model(init="rnntune", forget_bias=0.0).layers[0]
    lamb = lamb_model(input_embedding_ratio=1.0).layers[0]
    ratio = lamb.w_x.std().item() / rnntune.w_x.std().item()
    assert ratio == pytest.approx(math.sqrt(3 * (N // 2 + N) / N), rel=0.05)


def test_rnntune_init_is_unchanged_and_forget_bias_sets_b_f():
    """init rnntune with forget_bias 0 keeps the built weights; forget_bias sets b_f alone."""
    cfg = make_config({"hidden_size": 16, "num_layers": 2})
    torch.manual_seed(3)
    model = LanguageModel(cfg, 11, 16)
    before = [p.detach().clone() for p in model.parameters()]
    initialize_(model, cfg)
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters()))
    initialize_(model, cfg.model_copy(update={"forget_bias": 1.0}))
    for layer in model.layers:
        assert isinstance(layer, LSTMCell)
        assert torch.all(layer.bias[32:48] == 1.0) and torch.count_nonzero(layer.bias[:32]) == 0


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"forget_bias": 1.0, "chrono_init": True}, "forget_bias and chrono_init"),
        ({"forget_bias": 1.0, "cell": "mgru"}, "cells with a forget gate"),
    ],
)
def test_forget_bias_needs_a_forget_gate_and_no_chrono(values, message):
    with pytest.raises(ConfigError, match=message):
        make_config(values)
