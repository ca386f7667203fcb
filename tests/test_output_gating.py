"""Output-gated attention (Qiu et al. 2025) against its formula written out here."""

import math

import pytest
import torch
from tensors import rand
from torch.testing import assert_close

from attncourse.attention import MultiHeadAttention, OutputGatedAttention
from attncourse.guard import forbidden_builtins
from attncourse.masks import causal_mask


def formula(module, query, key, mask):
    """Y'_h = softmax(q_h k_h^T / sqrt(d_h) + mask) v_h ⊙ sigmoid(x W_g + b_g)_h, then W_O."""
    H, hd = module.num_heads, module.head_dim
    group = H // module.num_kv_heads
    q, k, v = module.q_proj(query), module.k_proj(key), module.v_proj(key)
    gate = torch.sigmoid(module.gate_proj(query))  # (B, T, H) or (B, T, d_model)
    heads = []
    for h in range(H):
        kv = slice((h // group) * hd, (h // group + 1) * hd)
        scores = q[..., h * hd : (h + 1) * hd] @ k[..., kv].transpose(1, 2) / math.sqrt(hd)
        alpha = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)  # (B, T, S)
        g = gate[..., h : h + 1] if module.headwise else gate[..., h * hd : (h + 1) * hd]
        heads.append(g * (alpha @ v[..., kv]))
    return module.out_proj(torch.cat(heads, dim=-1))


@pytest.mark.parametrize("headwise", [False, True])
@pytest.mark.parametrize("num_kv_heads", [None, 1])
def test_output_gated_attention_is_the_formula(headwise, num_kv_heads):
    torch.manual_seed(0)
    module = OutputGatedAttention(8, 2, num_kv_heads=num_kv_heads, headwise=headwise).double()
    x = rand(2, 5, 8)
    out, weights = module(x, causal=True)
    assert_close(out, formula(module, x, x, causal_mask(5)))
    assert weights.shape == (2, 2, 5, 5)
    assert_close(weights.sum(-1), torch.ones(2, 2, 5, dtype=torch.float64))  # before the gate
    gates = module.gates(x)
    assert gates.shape == (2, 2, 5, 1 if headwise else 4)
    assert ((gates > 0) & (gates < 1)).all()


def test_cross_attention_gate_comes_from_the_query():
    torch.manual_seed(1)
    module = OutputGatedAttention(6, 3).double()
    query, memory = rand(2, 4, 6), rand(2, 7, 6)
    out, weights = module(query, memory)
    assert weights.shape == (2, 3, 4, 7)
    assert_close(out, formula(module, query, memory, torch.ones(4, 7, dtype=torch.bool)))


def test_an_open_gate_is_plain_multi_head_attention():
    torch.manual_seed(2)
    gated = OutputGatedAttention(8, 4, headwise=True).double()
    with torch.no_grad():
        gated.gate_proj.weight.zero_()
        gated.gate_proj.bias.fill_(60.0)  # sigmoid(60) = 1 in float64 up to 1e-26
    plain = MultiHeadAttention(8, 4).double()
    plain.load_state_dict({k: v for k, v in gated.state_dict().items() if "gate" not in k})
    x = rand(3, 6, 8)
    assert_close(gated(x, causal=True)[0], plain(x, causal=True)[0])


def test_a_closed_gate_outputs_the_output_bias_only():
    gated = OutputGatedAttention(4, 2).double()
    with torch.no_grad():
        gated.gate_proj.weight.zero_()
        gated.gate_proj.bias.fill_(-80.0)
    out, _ = gated(rand(2, 3, 4))
    assert_close(out, gated.out_proj.bias.expand(2, 3, 4))


@pytest.mark.parametrize("headwise", [False, True])
def test_output_gated_attention_gradcheck(headwise):
    torch.manual_seed(3)
    module = OutputGatedAttention(4, 2, headwise=headwise).double()
    assert torch.autograd.gradcheck(lambda x: module(x, causal=True)[0], (rand(2, 3, 4),))


def test_output_gated_attention_calls_no_builtin():
    module = OutputGatedAttention(6, 2)
    x = torch.randn(2, 4, 6)
    with forbidden_builtins():
        out, _ = module(x, causal=True)
    assert_close(out, formula(module, x, x, causal_mask(4)))


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: OutputGatedAttention(10, 3), r"d_model \(10\).*num_heads \(3\)"),
        (lambda: OutputGatedAttention(12, 3)(torch.randn(2, 5, 10)), r"feature size 10.*12"),
        (lambda: OutputGatedAttention(12, 3)(torch.randn(5, 12)), r"3-D.*\(5, 12\)"),
        (
            lambda: OutputGatedAttention(12, 3)(torch.ones(2, 5, 12, dtype=torch.long)),
            r"floating-point",
        ),
    ],
)
def test_bad_input_raises_value_error(call, message):
    with pytest.raises(ValueError, match=message):
        call()
