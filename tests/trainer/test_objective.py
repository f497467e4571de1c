"""The multi-sample objective (thesis §4.3) and the papers' loss scale."""

from __future__ import annotations

import math

import torch

from trainer.objective import multi_sample_log_likelihood, repeat_for_samples, training_loss


def test_multi_sample_equals_log_mean_exp_of_likelihoods():
    torch.manual_seed(0)
    t, b, d, v = 3, 2, 4, 7
    logits = torch.randn(t, d * b, v)
    targets = torch.randint(0, v, (t, b))
    got = multi_sample_log_likelihood(torch.log_softmax(logits, -1), targets, d)  # the model's ln p
    probs = torch.softmax(logits, -1)
    for ti in range(t):
        for bi in range(b):
            ps = [probs[ti, di * b + bi, targets[ti, bi]].item() for di in range(d)]
            assert math.isclose(got[ti, bi].item(), math.log(sum(ps) / d), rel_tol=1e-5)


def test_one_sample_is_plain_log_likelihood():
    logits = torch.randn(2, 3, 5)
    targets = torch.randint(0, 5, (2, 3))
    log_probs = torch.log_softmax(logits, -1)
    expected = log_probs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    assert torch.equal(multi_sample_log_likelihood(log_probs, targets, 1), expected)


def test_repeat_is_sample_major():
    x = torch.tensor([[1, 2]])
    assert repeat_for_samples(x, 3).tolist() == [[1, 2, 1, 2, 1, 2]]


def test_loss_sums_over_window_averages_over_batch_plus_half_l2():
    ll = torch.tensor([[-1.0, -3.0], [-2.0, -4.0]])  # [T=2, B=2]
    w = [torch.tensor([1.0, 2.0]), torch.tensor([[3.0]])]
    loss = training_loss(ll, w, l2_penalty=0.1)
    assert math.isclose(loss.item(), (3.0 + 7.0) / 2 + 0.5 * 0.1 * 14.0, rel_tol=1e-6)
