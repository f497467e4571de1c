"""Evaluation: deterministic dropout and Monte Carlo dropout (Mogrifier paper §3.3)."""

from __future__ import annotations

import math

import pytest
import torch

from trainer.config import make_config
from trainer.evaluate import evaluate as deterministic
from trainer.evaluate import mc_evaluate, select_temperature
from trainer.model import LanguageModel
from trainer.objective import repeat_for_samples

DROPOUT = {"input_dropout": 0.3, "state_dropout": 0.4, "cell_output_dropout": 0.2, "output_dropout": 0.5}


def model_and_data(**kw):
    cfg = make_config({"hidden_size": 12, "num_layers": 2, **kw})
    torch.manual_seed(0)
    model = LanguageModel(cfg, vocab_size=9, hidden_size=12).eval()
    with torch.no_grad():  # weights far from init, so predictions differ from uniform
        for p in model.parameters():
            p.normal_(0.0, 0.7)
    return model, torch.randint(0, 9, (7, 3))


@pytest.mark.parametrize("temperature", [1.0, 0.8])
def test_mc_is_the_average_of_sampled_mask_predictions(temperature):
    """−ln (1/N Σ_n p(w | M^n)): probabilities averaged over N masks, by hand from the same draws."""
    model, data = model_and_data(**DROPOUT)
    samples = 5
    torch.manual_seed(7)
    got = mc_evaluate(model, data, bptt=10, samples=samples, temperatures=(temperature,))[0]
    assert not model.training  # the mode is restored
    torch.manual_seed(7)
    model.train()
    with torch.no_grad():
        x, y = data[:-1], data[1:]
        logits, _ = model(repeat_for_samples(x, samples), model.zero_state(samples * 3))
    probs = torch.softmax(logits / temperature, -1).view(6, samples, 3, 9)  # [T, N, B, V]
    mean_p = probs.mean(1).gather(-1, y[..., None])[..., 0]
    want = -mean_p.log().mean().item()
    assert got == pytest.approx(want, rel=1e-5)
    # ...and it is not the deterministic figure nor the average of per-mask log-likelihoods.
    per_mask = -probs.gather(-1, y[:, None, :, None].expand(6, samples, 3, 1)).log().mean().item()
    assert abs(got - per_mask) > 1e-4 and abs(got - deterministic(model, data, 10)[0]) > 1e-4


def test_mc_samples_in_chunks_carry_their_own_state(monkeypatch):
    from trainer import evaluate as module

    model, data = model_and_data(**DROPOUT)
    monkeypatch.setattr(module, "MC_CHUNK_ROWS", 6)  # chunks of 2 samples x 3 streams: 2 + 2 + 1
    losses = [mc_evaluate(model, data, bptt=3, samples=5)[0] for _ in range(3)]
    assert all(math.isfinite(v) and v > 0 for v in losses)
    assert len(set(losses)) == 3  # fresh masks every call


def test_without_dropout_mc_equals_deterministic_evaluation():
    model, data = model_and_data()
    for bptt in (3, 10):
        want = deterministic(model, data, bptt, (1.0, 0.9))
        got = mc_evaluate(model, data, bptt, samples=4, temperatures=(1.0, 0.9))
        assert got == pytest.approx(want, rel=1e-6)
    assert select_temperature(model, data, 4, mc_samples=3) == pytest.approx(
        select_temperature(model, data, 4)
    )


def test_mc_needs_a_sample():
    model, data = model_and_data()
    with pytest.raises(ValueError, match="samples"):
        mc_evaluate(model, data, 4, samples=0)


def test_mc_dropout_scale_multiplies_every_rate():
    """Mogrifier paper §3.3: "in the MC case dropout rates are scaled" (lamb: eval_dropout_multiplier)."""
    model, data = model_and_data(**DROPOUT)
    halved, _ = model_and_data(**{name: rate * 0.5 for name, rate in DROPOUT.items()})
    torch.manual_seed(3)
    scaled = mc_evaluate(model, data, bptt=4, samples=6, temperatures=(1.0, 0.9), dropout_scale=0.5)
    torch.manual_seed(3)
    want = mc_evaluate(halved, data, bptt=4, samples=6, temperatures=(1.0, 0.9))
    assert scaled == pytest.approx(want, rel=1e-6)
    assert model.cfg.state_dropout == DROPOUT["state_dropout"] and not model.training  # restored
    torch.manual_seed(3)
    unscaled = mc_evaluate(model, data, bptt=4, samples=6, temperatures=(1.0, 0.9))
    assert abs(unscaled[0] - scaled[0]) > 1e-4  # the unscaled variant is kept, and it differs
    with pytest.raises(ValueError, match="dropout scale"):
        mc_evaluate(model, data, 4, samples=2, dropout_scale=0.0)


@pytest.mark.slow
def test_trainer_reports_mc_and_evaluate_command_takes_mc_samples(tmp_path, capsys):
    import json

    from tests.trainer.corpora import write_ptb
    from trainer import train
    from tuner.cli import main

    cfg = make_config(
        {
            "dataset": "ptb",
            "data_dir": str(write_ptb(tmp_path / "data", train=300, valid=40, test=40)),
            "hidden_size": 16,
            "batch_size": 8,
            "bptt": 10,
            "max_steps": 10,
            "eval_every": 10,
            "output_dropout": 0.5,
            "state_dropout": 0.3,
            "mc_dropout_samples": 3,
            "run_dir": str(tmp_path / "run"),
        }
    )
    result = train(cfg)
    assert result.mc_test_loss is not None and math.isfinite(result.mc_test_loss)
    assert result.mc_temperature is not None and result.mc_test_loss != result.test_loss
    from trainer.evaluate import MC_SCALE_GRID

    assert result.mc_dropout_scale in MC_SCALE_GRID  # chosen on validation (no scale was set)

    def command(*extra):
        assert main(["evaluate", result.best_checkpoint, "--json", *extra]) == 0
        return json.loads(capsys.readouterr().out)

    assert command("--mc-samples", "0")["loss"] == pytest.approx(result.test_loss, rel=1e-6)
    mc = command("--mc-samples", "3")
    assert mc["mc_samples"] == 3 and math.isfinite(mc["loss"]) and mc["loss"] != result.test_loss
    assert command("--mc-samples", "3")["loss"] == mc["loss"]  # seeded masks: a repeatable figure
    assert mc["mc_dropout_scale"] in MC_SCALE_GRID
    scaled = command("--mc-samples", "3", "--set", "mc_dropout_scale=0.5")  # rates halved, as set
    assert scaled["mc_dropout_scale"] == 0.5
    assert math.isfinite(scaled["loss"]) and scaled["loss"] != mc["loss"]


def test_mc_scale_and_temperature_are_chosen_together_on_validation():
    """Mogrifier paper §3.3: MC dropout runs at scaled rates, chosen like the temperature. With no
    scale set, the pair minimizing validation loss over both grids; a set scale is kept."""
    from trainer.evaluate import MC_SCALE_GRID, TEMPERATURE_GRID, select_mc

    model, data = model_and_data(**DROPOUT)
    torch.manual_seed(5)
    temperature, scale, loss = select_mc(model, data, bptt=4, samples=4, scale=None)
    losses = {}
    for candidate in MC_SCALE_GRID:
        torch.manual_seed(5)
        per_t = mc_evaluate(
            model, data, bptt=4, samples=4, temperatures=TEMPERATURE_GRID, dropout_scale=candidate
        )
        for t, value in zip(TEMPERATURE_GRID, per_t):
            losses[(t, candidate)] = value
    assert (temperature, scale) == min(losses, key=losses.__getitem__)
    assert loss == pytest.approx(min(losses.values()), rel=1e-9)
    assert len({round(v, 6) for v in losses.values()}) > len(TEMPERATURE_GRID)  # the scales differ
    torch.manual_seed(5)
    kept = select_mc(model, data, bptt=4, samples=4, scale=0.7)
    assert kept[1] == 0.7 and kept[2] == pytest.approx(min(v for (t, s), v in losses.items() if s == 0.7))


def test_mc_scales_are_the_ones_lambs_test_script_tries():
    """lamb/experiment/test.sh evaluates 200 MC samples at eval_dropout_multiplier 0.6, 0.7, 0.8, 0.9."""
    from trainer.evaluate import MC_SCALE_GRID

    assert MC_SCALE_GRID == (0.6, 0.7, 0.8, 0.9)


def test_same_masks_restores_the_generators_it_forks(monkeypatch):
    """CPU: the CPU generator only. An accelerator: that device's generator too, so on CUDA the scales
    draw the same masks as on the CPU (the CPU-only reset of before left CUDA masks differing)."""
    from trainer import evaluate as module

    state = torch.get_rng_state()
    with module.same_masks(torch.device("cpu")):
        first = torch.rand(5)
    with module.same_masks(torch.device("cpu")):
        assert torch.equal(torch.rand(5), first)
    assert torch.equal(torch.get_rng_state(), state)
    calls = []
    monkeypatch.setattr(torch.random, "fork_rng", lambda **kw: calls.append(kw))
    module.same_masks(torch.device("cuda", 1))
    assert calls == [{"devices": [1], "device_type": "cuda"}]


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_same_masks_repeats_cuda_draws():
    """On CUDA every block entered from the same state draws the same masks: the scales compare like
    for like on the device too."""
    from trainer.evaluate import same_masks

    device = torch.device("cuda")
    with same_masks(device):
        first = torch.empty(1000, device=device).bernoulli_(0.5)
    with same_masks(device):
        assert torch.equal(torch.empty(1000, device=device).bernoulli_(0.5), first)


def test_a_fixed_eval_temperature_is_the_test_figures_temperature(tmp_path):
    """eval_temperature (Maupomé & Meurs tune none): the test loss at that temperature, none chosen."""
    from tests.trainer.corpora import write_ptb
    from trainer import load_checkpoint, train
    from trainer.data import batchify, load_corpus

    settings = {
        "dataset": "ptb",
        "data_dir": str(write_ptb(tmp_path / "data", train=300, valid=40, test=40)),
        "hidden_size": 16,
        "batch_size": 8,
        "bptt": 10,
        "max_steps": 10,
        "eval_every": 10,
    }
    fixed = train(make_config({**settings, "eval_temperature": 1.0, "run_dir": str(tmp_path / "a")}))
    chosen = train(make_config({**settings, "run_dir": str(tmp_path / "b")}))
    assert fixed.temperature == 1.0 and chosen.temperature is not None
    model, cfg = load_checkpoint(fixed.best_checkpoint)
    test = batchify(load_corpus(cfg).test, cfg.eval_batch_size)
    assert fixed.test_loss == pytest.approx(deterministic(model, test, cfg.bptt, (1.0,))[0], rel=1e-6)
