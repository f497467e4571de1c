"""`input_encoding`: the first layer reads a learned embedding (the default, unchanged) or the
token's one-hot vector (Maupomé & Meurs §3, §5)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from tests.trainer.corpora import write_ptb_char
from tests.trainer.test_model import capture_layer_inputs, cfg
from trainer import ConfigError, load_checkpoint, make_config, train
from trainer.model import LanguageModel, build_model, count_parameters

V = 11


def test_an_embedding_model_is_unchanged_by_the_setting():
    """Pinned with the code before `input_encoding` existed (commit c52d095): the previous main's
    checkpoint gives the same log-probabilities in float64, and a seeded model draws the same
    initial weights in the same order."""
    model, _ = load_checkpoint(Path(__file__).parent / "data" / "previous-main-last.pt")
    model = model.double().eval()
    tokens = (torch.arange(24) * 7 % model.vocab_size).view(12, 2)
    with torch.no_grad():
        log_probs, _ = model(tokens, model.zero_state(2))
    assert log_probs.sum().item() == pytest.approx(-11457.061113367112, rel=1e-12)
    want = [-4.633365624965562, -4.611440318919953, -4.635442995440764, -4.634493907617767]
    assert log_probs[-1, 0, :4].tolist() == pytest.approx(want, rel=1e-12)

    torch.manual_seed(0)
    seeded = LanguageModel(cfg(hidden_size=8, cell="lstm"), vocab_size=10, hidden_size=8)
    sums = {k: v.double().sum().item() for k, v in seeded.state_dict().items()}
    assert sums == pytest.approx(
        {
            "out_embedding": -0.04576855944469571,
            "out_bias": 0.0,
            "embedding.weight": -0.6850543525652029,
            "layers.0.w_x": 1.4750538170337677,
            "layers.0.w_h": -1.0009189546108246,
            "layers.0.bias": 0.0,
            "layers.1.w_x": 2.4431280493736267,
            "layers.1.w_h": -5.215270608663559,
            "layers.1.bias": 0.0,
        },
        rel=1e-12,
    )


def test_one_hot_feeds_the_first_layer_the_tokens_one_hot_vectors():
    model = LanguageModel(cfg(input_encoding="one_hot", cell="mlstm"), vocab_size=V, hidden_size=16)
    assert model.embedding is None and "embedding.weight" not in model.state_dict()
    assert model.layers[0].input_size == V and model.layers[1].input_size == 16
    seen = capture_layer_inputs(model)
    tokens = torch.randint(0, V, (5, 3))
    model(tokens, model.zero_state(3))
    torch.testing.assert_close(seen[0][0], F.one_hot(tokens, V).float(), rtol=0, atol=0)


@pytest.mark.parametrize("cell", ["lstm", "mgru"])
def test_one_hot_is_an_embedding_fixed_at_the_identity(cell):
    """With hidden size = vocabulary size (so that the embedding is V wide), an embedding model
    whose embedding is the identity computes what the one-hot model does, given its weights."""
    one_hot = LanguageModel(cfg(input_encoding="one_hot", cell=cell), vocab_size=V, hidden_size=V)
    embedded = LanguageModel(cfg(cell=cell), vocab_size=V, hidden_size=V)
    embedded.load_state_dict({**one_hot.state_dict(), "embedding.weight": torch.eye(V)})
    tokens = torch.randint(0, V, (6, 2))
    one_hot.eval()
    embedded.eval()
    with torch.no_grad():
        torch.testing.assert_close(
            one_hot(tokens, one_hot.zero_state(2))[0], embedded(tokens, embedded.zero_state(2))[0]
        )


def test_one_hot_never_ties_and_the_budget_counts_the_wider_first_layer():
    word = LanguageModel(cfg(input_encoding="one_hot", dataset="ptb", data_dir="d"), V, hidden_size=16)
    assert not word.tied and word.out_embedding is not None
    budget = cfg(input_encoding="one_hot", hidden_size=None, num_params=20000, cell="mgru")
    model = build_model(budget, vocab_size=50)
    assert count_parameters(model) <= 20000
    assert count_parameters(LanguageModel(budget, 50, model.hidden_size + 1)) > 20000


def test_an_unknown_encoding_names_the_field_and_its_values():
    with pytest.raises(ConfigError, match=r"input_encoding: Input should be 'embedding' or 'one_hot'"):
        make_config({"input_encoding": "onehot"})


def test_a_one_hot_run_trains_and_its_checkpoint_rebuilds_it(tmp_path):
    config = make_config(
        {
            "dataset": "ptb_char",
            "data_dir": str(write_ptb_char(tmp_path / "data", n=60)),
            "input_encoding": "one_hot",
            "cell": "mlstm",
            "multiplicative_form": "corrected",
            "hidden_size": 16,
            "num_layers": 1,
            "batch_size": 4,
            "bptt": 20,
            "max_steps": 2,
            "eval_every": 2,
            "max_eval_tokens": 200,
            "run_dir": str(tmp_path / "run"),
            "device": "cpu",
        }
    )
    result = train(config, report=lambda m: m["step"] == 2)
    model, loaded = load_checkpoint(Path(result.run_dir) / "best.pt")
    assert loaded.input_encoding == "one_hot" and model.embedding is None
    # The intermediate state has the input's size, the alphabet's (§5.1).
    assert model.layers[0].w_mh.shape == (16, model.vocab_size)
