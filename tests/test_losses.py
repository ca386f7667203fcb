"""log_softmax and cross_entropy against PyTorch's built-ins, forward and backward, in float64."""

import pytest
import torch
import torch.nn.functional as F
from tensors import grads, rand
from torch.testing import assert_close

from attncourse.losses import cross_entropy, log_softmax


@pytest.mark.parametrize("shape, dim", [((7,), -1), ((4, 9), -1), ((2, 3, 5), 1), ((2, 3, 5), 0)])
def test_log_softmax_equals_torch_forward_and_backward(shape, dim):
    x = rand(*shape) * 3
    ours, ref = log_softmax(x, dim), F.log_softmax(x, dim)
    assert_close(ours, ref)
    upstream = torch.randn_like(ref)
    assert_close(grads(ours, x, upstream), grads(ref, x, upstream))


def test_log_softmax_keeps_large_and_very_negative_logits_finite():
    x = torch.tensor([[1e4, 1e4 - 1.0, -1e4], [-1e4, -1e4 - 2.0, -1e4 - 4.0]], dtype=torch.float32)
    ours = log_softmax(x)
    assert torch.isfinite(ours[:, :2]).all()
    assert_close(ours, F.log_softmax(x, -1))
    assert_close(ours.exp().sum(-1), torch.ones(2))


@pytest.mark.parametrize("reduction", ["mean", "none"])
@pytest.mark.parametrize("shape", [(6, 5), (2, 3, 7)])
def test_cross_entropy_equals_torch_forward_and_backward(shape, reduction):
    logits = rand(*shape) * 2
    target = torch.randint(shape[-1], shape[:-1])
    ours = cross_entropy(logits, target, reduction=reduction)
    # torch puts the classes in dimension 1: (N, C, d1, ...)
    ref = F.cross_entropy(logits.movedim(-1, 1), target, reduction=reduction)
    assert ours.shape == ref.shape
    assert_close(ours, ref)
    upstream = torch.randn_like(ref)
    assert_close(grads(ours, logits, upstream), grads(ref, logits, upstream))


def test_cross_entropy_of_a_sure_right_answer_is_zero_and_of_a_uniform_guess_is_log_v():
    logits = torch.tensor([[50.0, 0.0, 0.0], [0.0, 0.0, 0.0]], dtype=torch.float64)
    loss = cross_entropy(logits, torch.tensor([0, 2]), reduction="none")
    assert_close(
        loss, torch.tensor([0.0, torch.log(torch.tensor(3.0)).item()], dtype=torch.float64)
    )


def test_gradcheck():
    logits = rand(3, 4)
    target = torch.tensor([0, 3, 1])
    assert torch.autograd.gradcheck(lambda z: cross_entropy(z, target), (logits,))
    assert torch.autograd.gradcheck(lambda z: log_softmax(z, 0), (logits,))


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: log_softmax(torch.tensor([1, 2])), "floating-point"),
        (lambda: cross_entropy(torch.randn(3, 4), torch.tensor([0.0, 1.0, 2.0])), "torch.long"),
        (
            lambda: cross_entropy(torch.randn(3, 4), torch.tensor([0, 1])),
            r"shape without the class",
        ),
        (
            lambda: cross_entropy(torch.randn(3, 4), torch.tensor([0, 1, 2]), reduction="sum"),
            "one of",
        ),
        (lambda: cross_entropy(torch.randn(3, 4), [0, 1, 2]), "torch.Tensor"),
    ],
)
def test_bad_input_says_what_was_expected(call, message):
    with pytest.raises(ValueError, match=message):
        call()
