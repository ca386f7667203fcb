"""Bahdanau, Luong and gated attention vs their papers' formulas written out here."""

import math

import pytest
import torch
import torch.nn.functional as F
from tensors import rand
from torch.testing import assert_close

from attncourse.attention.alignment import AdditiveAttention, LuongAttention
from attncourse.attention.gated import GatedAttention
from attncourse.masks import causal_mask


def context_by_loops(score, s, H, values):
    """c = Σ_j softmax_j(score(s, h_j)) v_j for one query vector s, one source position at a
    time.
    """
    e = torch.stack([score(s, H[j]) for j in range(H.shape[0])])  # (S,)
    alpha = torch.exp(e - e.max()) / torch.exp(e - e.max()).sum()
    return alpha @ values, alpha


def test_additive_attention_is_bahdanau_formula():
    attn = AdditiveAttention(query_dim=5, key_dim=6, hidden_dim=7).double()
    W, U, v = attn.W_a.weight, attn.U_a.weight, attn.v_a.weight[0]
    query, keys = rand(3, 5), rand(3, 4, 6)
    context, weights = attn(query, keys)
    for b in range(3):
        ref_c, ref_a = context_by_loops(
            lambda s, h: v @ torch.tanh(W @ s + U @ h), query[b], keys[b], keys[b]
        )
        assert_close(context[b], ref_c)
        assert_close(weights[b], ref_a)


@pytest.mark.parametrize("kind", ["dot", "general", "concat"])
def test_luong_scores_are_the_papers_formulas(kind):
    attn = LuongAttention(6, 6, score=kind, hidden_dim=5).double()
    formulas = {
        "dot": lambda s, h: s @ h,
        "general": lambda s, h: s @ attn.W_a.weight @ h,
        "concat": lambda s, h: attn.v_a.weight[0] @ torch.tanh(attn.W_a.weight @ torch.cat([s, h])),
    }
    query, keys, values = rand(2, 3, 6), rand(2, 5, 6), rand(2, 5, 4)
    context, weights = attn(query, keys, values)
    for b in range(2):
        for t in range(3):
            ref_c, ref_a = context_by_loops(formulas[kind], query[b, t], keys[b], values[b])
            assert_close(context[b, t], ref_c)
            assert_close(weights[b, t], ref_a)


def test_alignment_mask_and_single_step_query():
    attn = LuongAttention(4, score="dot")
    query, keys = rand(2, 4), rand(2, 6, 4)
    mask = torch.tensor([[True] * 6, [True] * 3 + [False] * 3])[:, None, :]  # (B, 1, S)
    context, weights = attn(query, keys, mask=mask)
    assert weights.shape == (2, 6)
    assert (weights[1, 3:] == 0).all()
    assert_close(weights[1, :3], torch.softmax(keys[1, :3] @ query[1], -1))
    assert_close(context[1], weights[1, :3] @ keys[1, :3])


@pytest.mark.parametrize(
    "module",
    [
        lambda: AdditiveAttention(3, 4, 5),
        lambda: LuongAttention(3, 4, "general"),
        lambda: LuongAttention(3, 4, "concat"),
    ],
)
def test_alignment_gradcheck(module):
    attn = module().double()
    query, keys = rand(2, 3), rand(2, 4, 4)
    assert torch.autograd.gradcheck(lambda q, k: attn(q, k)[0], (query, keys))


def test_gated_attention_is_the_sources_equation_14_3_48():
    torch.manual_seed(1)
    ga = GatedAttention(8, num_heads=2).double()
    x = rand(2, 5, 8)
    out, weights = ga(x, causal=True)
    # Z_h = g_h ⊙ softmax(q_h k_h^T / sqrt(d)) v_h with g = sigmoid(W2 GELU(W1 [q; k; v])),
    # merged by W_O
    q, k, v = (lin(x) for lin in (ga.q_proj, ga.k_proj, ga.v_proj))
    lin1, lin2 = ga.gate[0], ga.gate[2]
    g = torch.sigmoid(lin2(F.gelu(lin1(torch.cat([q, k, v], -1)))))  # (B, T, H)
    heads = []
    for h in range(2):
        sl = slice(4 * h, 4 * h + 4)
        scores = q[..., sl] @ k[..., sl].transpose(1, 2) / math.sqrt(4)
        alpha = torch.softmax(scores.masked_fill(~causal_mask(5), float("-inf")), -1)
        assert_close(weights[:, h], g[..., h, None] * alpha)
        heads.append(g[..., h, None] * (alpha @ v[..., sl]))
    assert_close(out, ga.out_proj(torch.cat(heads, -1)))
    assert_close(weights.sum(-1), g.transpose(1, 2))  # each row sums to its gate, not to 1


def test_gated_attention_gradcheck():
    ga = GatedAttention(4, 2).double()
    assert torch.autograd.gradcheck(lambda t: ga(t)[0], (rand(1, 3, 4),))
