"""softmax, scaled dot-product, multi-head and grouped-query attention vs PyTorch's built-ins."""

import math

import pytest
import torch
import torch.nn.functional as F
from tensors import grads, rand
from torch import nn
from torch.testing import assert_close

from attncourse.attention import (
    MultiHeadAttention,
    grouped_query_attention,
    scaled_dot_product_attention,
    softmax,
)
from attncourse.masks import causal_mask, padding_mask


# ---------------------------------------------------------------- softmax (Eq. 14.3.14, 14.3.20)
@pytest.mark.parametrize("dim", [-1, 0, 1])
@pytest.mark.parametrize("temperature", [1.0, 0.3, 4.0])
def test_softmax_matches_torch_forward_and_backward(dim, temperature):
    x = rand(3, 5, 7) * 3
    ours, ref = (
        softmax(x, dim=dim, temperature=temperature),
        torch.softmax(x / temperature, dim=dim),
    )
    assert_close(ours, ref)
    up = torch.randn_like(ref)
    assert_close(grads(ours, x, up)[0], grads(ref, x, up)[0])


def test_softmax_mask_removes_entries_and_empty_rows_are_zero():
    x = rand(4, 6)
    mask = torch.tensor(
        [[1, 1, 0, 1, 0, 1], [0, 0, 0, 0, 0, 0], [1, 0, 0, 0, 0, 0], [1] * 6], dtype=torch.bool
    )
    ours = softmax(x, mask=mask)
    ref = torch.softmax(x.masked_fill(~mask, float("-inf")), dim=-1)
    assert_close(ours[[0, 2, 3]], ref[[0, 2, 3]])
    assert torch.equal(ours[1], torch.zeros(6, dtype=x.dtype))
    assert (ours[~mask] == 0).all()
    g = grads(ours, x)[0]
    assert torch.isfinite(g).all() and (g[1] == 0).all()


def test_softmax_is_stable_for_huge_float32_scores():
    x = torch.tensor([[1e4, -1e4, 0.0], [1e4, 1e4, 1e4], [-1e4, -1e4, -1e4]])
    out = softmax(x)
    assert torch.isfinite(out).all()
    assert_close(out, torch.softmax(x, -1))
    assert_close(out.sum(-1), torch.ones(3))


def test_softmax_leaves_its_input_unchanged():
    x = rand(3, 6)
    before = x.detach().clone()
    softmax(x, temperature=0.5, mask=torch.rand(3, 6) > 0.3).sum().backward()
    assert torch.equal(x.detach(), before)


# ---------------------------------------------------------------- scaled dot-product attention
SDPA_CASES = {
    "plain": {},
    "causal": {"causal": True},
    "scale": {"scale": 0.37},
    "causal+scale": {"causal": True, "scale": 2.0},
}


@pytest.mark.parametrize("case", SDPA_CASES)
@pytest.mark.parametrize("T,S,d_k,d_v", [(5, 5, 8, 8), (4, 9, 8, 3), (9, 4, 6, 10), (1, 1, 4, 4)])
def test_sdpa_matches_torch(case, T, S, d_k, d_v):
    kwargs = SDPA_CASES[case]
    q, k, v = rand(2, 3, T, d_k), rand(2, 3, S, d_k), rand(2, 3, S, d_v)
    out, weights = scaled_dot_product_attention(q, k, v, **kwargs)
    ref = F.scaled_dot_product_attention(
        q, k, v, is_causal=kwargs.get("causal", False), scale=kwargs.get("scale")
    )
    assert_close(out, ref)
    assert_close(weights.sum(-1), torch.ones(2, 3, T, dtype=q.dtype))
    up = torch.randn_like(ref)
    for ours_g, ref_g in zip(grads(out, (q, k, v), up), grads(ref, (q, k, v), up)):
        assert_close(ours_g, ref_g)


def test_sdpa_weights_are_softmax_of_scaled_scores():
    q, k, v = rand(2, 4, 8), rand(2, 6, 8), rand(2, 6, 5)
    _, weights = scaled_dot_product_attention(q, k, v)
    assert_close(weights, torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(8), dim=-1))


@pytest.mark.parametrize(
    "mask_shape", [(2, 3, 5, 7), (2, 1, 5, 7), (1, 3, 1, 7), (5, 7), (3, 5, 7), (2, 1, 1, 7)]
)
def test_sdpa_boolean_masks_broadcast_like_torch(mask_shape):
    q, k, v = rand(2, 3, 5, 4), rand(2, 3, 7, 4), rand(2, 3, 7, 6)
    mask = torch.rand(mask_shape) > 0.4
    mask[..., 0] = True  # keep every row non-empty so torch's output is defined
    out, weights = scaled_dot_product_attention(q, k, v, mask)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    assert_close(out, ref)
    assert (weights.masked_select(~mask.expand_as(weights)) == 0).all()
    up = torch.randn_like(ref)
    for ours_g, ref_g in zip(grads(out, (q, k, v), up), grads(ref, (q, k, v), up)):
        assert_close(ours_g, ref_g)


def test_sdpa_float_mask_is_an_additive_bias_like_torch():
    q, k, v = rand(2, 3, 5, 4), rand(2, 3, 6, 4), rand(2, 3, 6, 4)
    bias = torch.randn(3, 5, 6, dtype=torch.float64)
    out, _ = scaled_dot_product_attention(q, k, v, bias)
    assert_close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=bias))


def test_sdpa_mask_and_causal_combine():
    q, k, v = rand(1, 2, 6, 4), rand(1, 2, 6, 4), rand(1, 2, 6, 4)
    mask = padding_mask(torch.tensor([4]))  # (1, 1, 1, 4) -> keys 4, 5 are padding
    mask = torch.nn.functional.pad(mask, (0, 2))
    out, weights = scaled_dot_product_attention(q, k, v, mask, causal=True)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask & causal_mask(6))
    assert_close(out, ref)
    assert (weights[..., 4:] == 0).all() and (weights.triu(1) == 0).all()


def test_sdpa_temperature_divides_the_scaled_scores():
    q, k, v = rand(2, 5, 4), rand(2, 5, 4), rand(2, 5, 3)
    out, weights = scaled_dot_product_attention(q, k, v, temperature=0.25)
    ref = F.scaled_dot_product_attention(q, k, v, scale=1 / (math.sqrt(4) * 0.25))
    assert_close(out, ref)
    _, w1 = scaled_dot_product_attention(q, k, v)

    def entropy(w):
        return -(w * w.log()).sum(-1)

    assert (entropy(weights) < entropy(w1)).all()


def test_sdpa_fully_masked_query_gets_zero_weights_and_output_not_nan():
    q, k, v = rand(1, 3, 4), rand(1, 5, 4), rand(1, 5, 4)
    mask = torch.ones(3, 5, dtype=torch.bool)
    mask[1] = False
    out, weights = scaled_dot_product_attention(q, k, v, mask)
    assert torch.equal(out[0, 1], torch.zeros(4, dtype=q.dtype))
    assert torch.equal(weights[0, 1], torch.zeros(5, dtype=q.dtype))
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    assert_close(out[0, [0, 2]], ref[0, [0, 2]])
    for g in grads(out, (q, k, v)):
        assert torch.isfinite(g).all()


def test_sdpa_float32_scores_of_1e4_stay_finite():
    q = torch.full((1, 4, 2), 100.0)
    q[0, 1] = -100.0
    k = torch.tensor([[[100.0, 100.0], [-100.0, 100.0], [100.0, -100.0]]])
    v = torch.randn(1, 3, 2)
    out, weights = scaled_dot_product_attention(q, k, v, scale=1.0 / 2)  # scores ±1e4
    assert torch.isfinite(out).all() and torch.isfinite(weights).all()
    assert_close(out, F.scaled_dot_product_attention(q, k, v, scale=0.5))


@pytest.mark.parametrize("causal", [False, True])
def test_sdpa_gradcheck(causal):
    q, k, v = rand(2, 4, 3), rand(2, 5, 3), rand(2, 5, 2)
    mask = torch.tensor([True, True, False, True, True])
    assert torch.autograd.gradcheck(
        lambda *t: scaled_dot_product_attention(*t, mask, causal=causal)[0], (q, k, v)
    )


def test_sdpa_float_mask_with_temperature_divides_the_bias_too():
    q, k, v = rand(2, 5, 4), rand(2, 6, 4), rand(2, 6, 3)
    bias = torch.randn(5, 6, dtype=torch.float64)
    out, _ = scaled_dot_product_attention(q, k, v, bias, temperature=0.5)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=bias / 0.5, scale=1 / (2 * 0.5))
    assert_close(out, ref)


@pytest.mark.parametrize("causal", [False, True])
def test_sdpa_backward_through_the_weights_matches_torch(causal):
    q, k, v = rand(2, 5, 4), rand(2, 5, 4), rand(2, 5, 3)
    mask = torch.tensor([True, True, False, True, True])
    out, weights = scaled_dot_product_attention(q, k, v, mask, causal=causal)
    keep = mask & causal_mask(5) if causal else mask.expand(5, 5)
    scores = (q @ k.transpose(-2, -1) / 2).masked_fill(~keep, float("-inf"))
    ref = torch.softmax(scores, dim=-1)
    assert_close(weights, ref)
    up_w, up_out = torch.randn_like(ref), torch.randn_like(out)
    ours_loss = (weights * up_w).sum() + (out * up_out).sum()
    ref_loss = (ref * up_w).sum() + (ref @ v * up_out).sum()
    one = torch.ones((), dtype=q.dtype)
    for ours_g, ref_g in zip(grads(ours_loss, (q, k, v), one), grads(ref_loss, (q, k, v), one)):
        assert_close(ours_g, ref_g)


def test_sdpa_gradgradcheck():
    q, k, v = rand(2, 4, 3), rand(2, 5, 3), rand(2, 5, 2)
    mask = torch.tensor([True, True, False, True, True])
    assert torch.autograd.gradgradcheck(
        lambda *t: scaled_dot_product_attention(*t, mask, causal=True)[0], (q, k, v)
    )


# ---------------------------------------------------------------- grouped-query attention
@pytest.mark.parametrize("H,H_kv", [(8, 2), (6, 1), (4, 4)])
@pytest.mark.parametrize("causal", [False, True])
def test_gqa_matches_torch_enable_gqa(H, H_kv, causal):
    q, k, v = rand(2, H, 5, 4), rand(2, H_kv, 7, 4), rand(2, H_kv, 7, 3)
    out, weights = grouped_query_attention(q, k, v, causal=causal)
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)
    assert_close(out, ref)
    up = torch.randn_like(ref)
    for ours_g, ref_g in zip(grads(out, (q, k, v), up), grads(ref, (q, k, v), up)):
        assert_close(ours_g, ref_g)


def test_gqa_gradcheck():
    q, k, v = rand(1, 4, 3, 2), rand(1, 2, 3, 2), rand(1, 2, 3, 2)
    assert torch.autograd.gradcheck(
        lambda *t: grouped_query_attention(*t, causal=True)[0], (q, k, v)
    )


# ------------------------------------------------------------- multi-head attention (Eq. 14.3.10)
def torch_mha(d_model=12, heads=3, bias=True):
    ref = nn.MultiheadAttention(d_model, heads, bias=bias, batch_first=True, dtype=torch.float64)
    with torch.no_grad():  # non-zero biases, so a bias mix-up shows
        for p in ref.parameters():
            p.normal_(0, 0.3)
    return ref


@pytest.mark.parametrize("bias", [True, False])
def test_mha_self_attention_matches_torch(bias):
    ref = torch_mha(bias=bias)
    ours = MultiHeadAttention.from_torch(ref)
    x = rand(2, 5, 12)
    out, weights = ours(x)
    ref_out, ref_w = ref(x, x, x, average_attn_weights=False)
    assert_close(out, ref_out)
    assert_close(weights, ref_w)
    up = torch.randn_like(out)
    dx, dq, dv, do = grads(
        out, (x, ours.q_proj.weight, ours.v_proj.weight, ours.out_proj.weight), up
    )
    ref_dx, ref_din, ref_do = grads(ref_out, (x, ref.in_proj_weight, ref.out_proj.weight), up)
    assert_close(dx, ref_dx)
    assert_close(dq, ref_din[:12])
    assert_close(dv, ref_din[24:])
    assert_close(do, ref_do)


def test_mha_cross_attention_with_key_padding_and_causal_masks():
    ref = torch_mha()
    ours = MultiHeadAttention.from_torch(ref)
    query, memory = rand(3, 4, 12), rand(3, 7, 12)
    lengths = torch.tensor([7, 3, 5])
    out, weights = ours(query, memory, mask=padding_mask(lengths))
    ignore = ~padding_mask(lengths)[:, 0, 0]  # torch: True = ignore this key
    ref_out, ref_w = ref(query, memory, memory, key_padding_mask=ignore, average_attn_weights=False)
    assert_close(out, ref_out)
    assert_close(weights, ref_w)

    x = rand(2, 6, 12)
    out, _ = ours(x, causal=True)
    ref_out, _ = ref(x, x, x, attn_mask=~causal_mask(6), is_causal=True)
    assert_close(out, ref_out)


def test_mha_separate_value_input():
    ref = torch_mha()
    ours = MultiHeadAttention.from_torch(ref)
    q, k, v = rand(2, 3, 12), rand(2, 5, 12), rand(2, 5, 12)
    assert_close(ours(q, k, v)[0], ref(q, k, v)[0])


def test_mha_with_kv_heads_equals_gqa_on_its_projections():
    mha = MultiHeadAttention(16, num_heads=4, num_kv_heads=2).double()
    x = rand(2, 5, 16)
    out, weights = mha(x, causal=True)
    q = mha.q_proj(x).view(2, 5, 4, 4).transpose(1, 2)
    k = mha.k_proj(x).view(2, 5, 2, 4).transpose(1, 2)
    v = mha.v_proj(x).view(2, 5, 2, 4).transpose(1, 2)
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    assert_close(out, mha.out_proj(ref.transpose(1, 2).reshape(2, 5, 16)))
    assert weights.shape == (2, 4, 5, 5) and torch.equal(
        weights[:, 0] > 0, causal_mask(5).expand(2, 5, 5)
    )
    assert mha.k_proj.weight.shape == (8, 16)


def test_mha_gradcheck():
    mha = MultiHeadAttention(4, 2).double()
    x = rand(1, 3, 4)
    assert torch.autograd.gradcheck(lambda t: mha(t, causal=True)[0], (x,))


def test_softmax_gradcheck_with_temperature_and_mask():
    x = rand(3, 5)
    mask = torch.rand(3, 5) > 0.3
    assert torch.autograd.gradcheck(lambda t: softmax(t, temperature=0.7, mask=mask), (x,))
