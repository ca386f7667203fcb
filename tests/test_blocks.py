"""Residual, highway, multi-scale highway and Transformer blocks vs formulas and PyTorch."""

import math

import pytest
import torch
import torch.nn.functional as F
from tensors import grads, rand
from torch import nn
from torch.autograd.functional import jacobian
from torch.testing import assert_close

from attncourse.blocks import Highway, MultiScaleHighway, Residual, TransformerBlock
from attncourse.masks import causal_mask, padding_mask


def test_residual_output_and_jacobian_is_identity_plus_dF():
    layer = nn.Sequential(nn.Linear(4, 4), nn.Tanh()).double()
    block = Residual(layer)
    x = rand(4)
    assert_close(block(x), x + layer(x))
    assert_close(jacobian(block, x), torch.eye(4, dtype=x.dtype) + jacobian(layer, x))  # Eq. 5.3.2


def test_highway_is_srivastava_formula_and_gate_bias_starts_near_identity():
    hw = Highway(5, gate_bias=-2.0).double()
    x = rand(3, 5)
    W_H, b_H, W_T, b_T = hw.transform[0].weight, hw.transform[0].bias, hw.gate.weight, hw.gate.bias
    T = torch.sigmoid(x @ W_T.T + b_T)
    assert_close(hw(x), torch.relu(x @ W_H.T + b_H) * T + x * (1 - T))
    assert torch.equal(b_T, torch.full((5,), -2.0, dtype=x.dtype))
    closed = Highway(5, gate_bias=-30.0).double()
    assert_close(closed(x), x, atol=1e-10, rtol=0)  # carry gate open: identity


def test_highway_jacobian_includes_the_gate_derivative_term():
    """Eq. (5.3.5) as printed drops ∂T/∂x; the full Jacobian is
    T·∂H/∂x + (1−T)·I + (H − x)·∂T/∂x.
    """
    hw = Highway(4, transform=nn.Sequential(nn.Linear(4, 4), nn.Tanh()), gate_bias=0.0).double()
    x = rand(4)
    g, H = hw.transform_gate(x), hw.transform(x)
    dH, dT = jacobian(hw.transform, x), jacobian(hw.transform_gate, x)
    full = g[:, None] * dH + torch.diag(1 - g) + (H - x)[:, None] * dT
    printed = g[:, None] * dH + torch.diag(1 - g)
    J = jacobian(hw, x)
    assert_close(J, full)
    assert (J - printed).abs().max() > 1e-3


def test_multiscale_highway_is_equation_5_3_6():
    msh = MultiScaleHighway(4, kernel_sizes=(1, 3, 5)).double()
    with torch.no_grad():
        msh.fusion_logits.copy_(torch.tensor([0.5, -1.0, 2.0]))
    x = rand(2, 9, 4)
    w = torch.softmax(msh.fusion_logits, 0)
    ref = x.clone()
    for w_k, conv, k in zip(w, msh.branches, (1, 3, 5)):
        H_k = F.relu(F.conv1d(x.transpose(1, 2), conv.weight, conv.bias, padding=k // 2)).transpose(
            1, 2
        )
        ref = ref + w_k * H_k
    assert_close(msh(x), ref)
    assert_close(msh.fusion_weights.sum(), torch.tensor(1.0, dtype=x.dtype))


def torch_layer(norm_first, activation="relu", bias=True):
    layer = nn.TransformerEncoderLayer(
        12,
        3,
        dim_feedforward=20,
        dropout=0.0,
        activation=activation,
        batch_first=True,
        norm_first=norm_first,
        bias=bias,
        dtype=torch.float64,
    )
    with torch.no_grad():
        for p in layer.parameters():
            p.add_(torch.randn_like(p) * 0.2)  # norms' weights away from 1, biases away from 0
    return layer


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation,bias", [("relu", True), ("gelu", True), ("relu", False)])
def test_transformer_block_matches_torch_encoder_layer(norm_first, activation, bias):
    layer = torch_layer(norm_first, activation, bias)
    block = TransformerBlock.from_torch(layer)
    assert block.norm == ("pre" if norm_first else "post")
    x = rand(2, 6, 12)
    out, weights = block(x)
    ref = layer(x)
    assert_close(out, ref)
    up = torch.randn_like(ref)
    assert_close(grads(out, x, up)[0], grads(ref, x, up)[0])
    assert_close(weights.sum(-1), torch.ones(2, 3, 6, dtype=x.dtype))


@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_block_masks_match_torch(norm_first):
    layer = torch_layer(norm_first)
    block = TransformerBlock.from_torch(layer)
    x = rand(2, 5, 12)
    out, _ = block(x, causal=True)
    assert_close(out, layer(x, src_mask=~causal_mask(5), is_causal=True))
    lengths = torch.tensor([5, 3])
    out, _ = block(x, mask=padding_mask(lengths))
    ref = layer(x, src_key_padding_mask=~padding_mask(lengths)[:, 0, 0])
    assert_close(out[0], ref[0])
    assert_close(out[1, :3], ref[1, :3])


def test_deepnorm_block_is_wang_et_al_formula_and_init():
    N = 6
    torch.manual_seed(3)
    block = TransformerBlock(16, 4, dim_feedforward=32, norm="deepnorm", num_layers=N).double()
    alpha, beta = (2 * N) ** 0.25, (8 * N) ** -0.25
    assert block.alpha == pytest.approx(alpha)
    x = rand(2, 5, 16)
    attended, _ = block.attn(x)

    def ln(t, norm):
        return F.layer_norm(t, (16,), norm.weight, norm.bias, norm.eps)

    h = ln(alpha * x + attended, block.norm1)
    ref = ln(alpha * h + block.ffn(h), block.norm2)
    assert_close(block(x)[0], ref)
    # Xavier-normal std = gain * sqrt(2 / (fan_in + fan_out)): gain β for v, out and FFN; 1 for q, k
    for layer, gain in ((block.attn.v_proj, beta), (block.ffn[0], beta), (block.attn.q_proj, 1.0)):
        fan_out, fan_in = layer.weight.shape
        assert layer.weight.std().item() == pytest.approx(
            gain * math.sqrt(2 / (fan_in + fan_out)), rel=0.15
        )


@pytest.mark.parametrize("norm", ["post", "pre", "deepnorm"])
def test_transformer_block_gradcheck(norm):
    block = TransformerBlock(4, 2, dim_feedforward=6, norm=norm, num_layers=2).double()
    assert torch.autograd.gradcheck(lambda t: block(t, causal=True)[0], (rand(1, 3, 4),))


@pytest.mark.parametrize("module", [lambda: Highway(3), lambda: MultiScaleHighway(3, (1, 3))])
def test_highway_gradcheck(module):
    block = module().double()
    assert torch.autograd.gradcheck(block, (rand(1, 4, 3),))


def test_residual_gradcheck():
    block = Residual(nn.Sequential(nn.Linear(3, 3), nn.Tanh())).double()
    assert torch.autograd.gradcheck(block, (rand(2, 3),))
