"""σReparam (Zhai et al. 2023): Ŵ = γ/σ(W)·W with a power-iteration estimate of σ(W)."""

import pytest
import torch
from torch import nn
from torch.testing import assert_close

from attncourse.blocks import TransformerBlock
from attncourse.reparam import SigmaReparamLinear, sigma_reparam


def spectral_norm(w):
    return float(torch.linalg.matrix_norm(w.detach(), ord=2))


def test_power_iteration_estimates_the_largest_singular_value():
    layer = SigmaReparamLinear(12, 7, init_iters=200)
    assert float(layer.sigma().detach()) == pytest.approx(spectral_norm(layer.weight), rel=1e-5)
    assert spectral_norm(layer.effective_weight()) == pytest.approx(1.0, rel=1e-5)  # γ = 1 at start


def test_one_iteration_per_training_forward_tracks_a_changing_weight():
    layer = SigmaReparamLinear(16, 16).double()
    with torch.no_grad():
        layer.weight.mul_(3).add_(torch.randn(16, 16, dtype=torch.float64))
    x = torch.randn(2, 16, dtype=torch.float64)
    layer.train()
    for _ in range(300):
        layer(x)
    assert float(layer.sigma().detach()) == pytest.approx(spectral_norm(layer.weight), rel=1e-6)
    u = layer.u.clone()
    layer.eval()
    layer(x)
    assert torch.equal(layer.u, u)  # eval mode: no power iteration
    layer.train()
    layer(x)
    assert torch.allclose(layer.u, u)  # converged: one more iteration changes nothing
    fresh = SigmaReparamLinear(16, 16, init_iters=0)
    u0 = fresh.u.clone()
    fresh(torch.randn(1, 16))
    assert not torch.allclose(fresh.u, u0)  # a training-mode forward iterates


def test_forward_is_x_times_the_rescaled_weight_plus_bias():
    linear = nn.Linear(5, 3).double()
    layer = SigmaReparamLinear.from_linear(linear, init_iters=100)
    layer.eval()
    x = torch.randn(4, 5, dtype=torch.float64)
    sigma = spectral_norm(linear.weight)
    assert_close(layer(x), x @ (linear.weight / sigma).T + linear.bias, rtol=1e-7, atol=1e-9)
    with torch.no_grad():
        layer.gamma.fill_(sigma)  # γ = σ(W): the original layer again
    assert_close(layer(x), linear(x), rtol=1e-7, atol=1e-9)


def test_gradients_reach_the_weight_and_gamma():
    layer = SigmaReparamLinear(6, 4)
    loss = layer(torch.randn(3, 6)).square().sum()
    loss.backward()
    assert layer.weight.grad.abs().sum() > 0 and float(layer.gamma.grad.detach()) != 0.0
    # the gradient through σ = uᵀWv makes the loss invariant to rescaling W: no radial component
    radial = float((layer.weight.grad * layer.weight.detach()).sum())
    assert abs(radial) < 1e-4 * float(layer.weight.grad.norm() * layer.weight.detach().norm())


def test_sigma_reparam_replaces_every_linear_layer_and_keeps_the_function_up_to_scale():
    torch.manual_seed(0)
    block = TransformerBlock(8, 2, norm="pre").double()
    n_linear = sum(isinstance(m, nn.Linear) for m in block.modules())
    assert n_linear == 6
    sigma_reparam(block)
    assert sum(isinstance(m, nn.Linear) for m in block.modules()) == 0
    layers = [m for m in block.modules() if isinstance(m, SigmaReparamLinear)]
    assert len(layers) == 6 and all(float(m.gamma.detach()) == 1.0 for m in layers)
    for m in layers:
        assert spectral_norm(m.effective_weight()) == pytest.approx(
            1.0, rel=2e-2
        )  # 15 power iterations
        m.power_iteration(500)
        assert spectral_norm(m.effective_weight()) == pytest.approx(1.0, rel=1e-6)
    y, w = block(torch.randn(2, 5, 8, dtype=torch.float64))
    assert y.shape == (2, 5, 8) and torch.allclose(
        w.sum(-1), torch.ones(2, 2, 5, dtype=torch.float64)
    )
