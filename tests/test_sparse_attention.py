"""Sparse attention (local, block, strided, soft-masked) and the learnable Gumbel-sigmoid mask
against PyTorch's masked attention and the formulas written out here."""

import math

import pytest
import torch
import torch.nn.functional as F
from tensors import grads, rand
from torch.testing import assert_close

from attncourse.attention.sparse import (
    LearnableSparseMask,
    annealed_temperature,
    block_attention,
    gumbel_sigmoid,
    local_attention,
    soft_masked_attention,
    strided_attention,
)
from attncourse.guard import forbidden_builtins
from attncourse.masks import block_mask, causal_mask, local_mask, strided_mask

DT = torch.float64


def qkv(batch, T, d_k=5, d_v=3):
    return rand(*batch, T, d_k), rand(*batch, T, d_k), rand(*batch, T, d_v)


def reference(q, k, v, mask):
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


def pattern(kind, T, size, causal):
    if kind == "local":
        return local_mask(T, size, causal=causal)
    if kind == "block":
        return block_mask(T, size) & (causal_mask(T) if causal else True)
    return strided_mask(T, size, causal=causal)


SPARSE = {"local": local_attention, "block": block_attention, "strided": strided_attention}


# ---------------------------------------------------------------- the patterns, computed sparsely


@pytest.mark.parametrize("kind", SPARSE)
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("T", [1, 2, 7, 16, 23])
@pytest.mark.parametrize("size", [1, 2, 4, 5, 30])
def test_sparse_attention_equals_torch_with_the_mask_forward_and_backward(kind, causal, T, size):
    torch.manual_seed(T * 31 + size)
    q, k, v = qkv((2, 3), T)
    out, weights = SPARSE[kind](q, k, v, size, causal=causal)
    ref = reference(q, k, v, pattern(kind, T, size, causal))
    assert weights is None
    assert_close(out, ref, atol=1e-12, rtol=0)
    upstream = torch.randn_like(ref)
    for ours, theirs in zip(grads(out, (q, k, v), upstream), grads(ref, (q, k, v), upstream)):
        assert_close(ours, theirs, atol=1e-12, rtol=0)


@pytest.mark.parametrize("causal", [False, True])
def test_local_window_zero_attends_to_itself_only(causal):
    q, k, v = qkv((2,), 9)
    out, _ = local_attention(q, k, v, 0, causal=causal)
    assert_close(out, v)


@pytest.mark.parametrize("kind", SPARSE)
def test_sparse_attention_broadcasts_batch_dims_and_takes_strided_views(kind):
    torch.manual_seed(3)
    q = rand(2, 23, 4, 6).transpose(1, 2)  # (2, 4, 23, 6), not contiguous (heads split)
    k, v = rand(2, 1, 23, 6), rand(2, 1, 23, 3)  # one key/value set for every head
    out, _ = SPARSE[kind](q, k, v, 4, causal=True, scale=0.7)
    mask = pattern(kind, 23, 4, True)
    ref = F.scaled_dot_product_attention(
        q, k.expand(2, 4, 23, 6), v.expand(2, 4, 23, 3), attn_mask=mask, scale=0.7
    )
    assert_close(out, ref, atol=1e-12, rtol=0)
    upstream = torch.randn_like(ref)
    for ours, theirs in zip(grads(out, (q, k, v), upstream), grads(ref, (q, k, v), upstream)):
        assert ours.shape == theirs.shape
        assert_close(ours, theirs, atol=1e-12, rtol=0)


@pytest.mark.parametrize("kind", SPARSE)
def test_sparse_attention_2d_and_float32(kind):
    torch.manual_seed(4)
    q, k, v = (torch.randn(40, 8) for _ in range(3))
    out, _ = SPARSE[kind](q, k, v, 6, causal=True)
    ref = reference(q.double(), k.double(), v.double(), pattern(kind, 40, 6, True))
    assert out.dtype == torch.float32 and (out.double() - ref).abs().max() < 1e-5


@pytest.mark.parametrize("kind", SPARSE)
def test_sparse_attention_scores_of_1e4_stay_finite(kind):
    q = torch.randn(2, 30, 4, dtype=DT).sign().requires_grad_()
    k = torch.randn(2, 30, 4, dtype=DT).sign().requires_grad_()
    v = torch.randn(2, 30, 3, dtype=DT, requires_grad=True)
    out, _ = SPARSE[kind](q, k, v, 5, causal=True, scale=2500.0)
    ref = F.scaled_dot_product_attention(
        q, k, v, attn_mask=pattern(kind, 30, 5, True), scale=2500.0
    )
    assert torch.isfinite(out).all()
    assert_close(out, ref, atol=1e-10, rtol=0)


@pytest.mark.parametrize("kind", SPARSE)
@pytest.mark.parametrize("causal", [False, True])
def test_sparse_attention_gradcheck(kind, causal):
    torch.manual_seed(5)
    q, k, v = qkv((2,), 9, d_k=3, d_v=2)
    assert torch.autograd.gradcheck(
        lambda q, k, v: SPARSE[kind](q, k, v, 3, causal=causal)[0], (q, k, v)
    )


def test_local_attention_memory_is_linear_in_length():
    """The largest tensor it makes holds T · 3 · window scores, not T²."""
    q, k, v = (torch.randn(1, 4096, 8) for _ in range(3))
    sizes = []

    class Spy(torch.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            if isinstance(out, torch.Tensor):
                sizes.append(out.numel())
            return out

    with Spy():
        local_attention(q, k, v, 16)
    assert max(sizes) <= 4096 * 3 * 16


# ---------------------------------------------------------------- soft-masked attention


def soft_masked_by_loops(q, k, v, m, scale):
    """alpha_ij = m_ij exp(s_ij) / sum_j m_ij exp(s_ij), one query at a time."""
    T, S = q.shape[0], k.shape[0]
    out, alpha = torch.zeros(T, v.shape[1], dtype=q.dtype), torch.zeros(T, S, dtype=q.dtype)
    for i in range(T):
        e = torch.stack([m[i, j] * torch.exp(scale * (q[i] @ k[j])) for j in range(S)])  # (S,)
        if e.sum() > 0:
            alpha[i] = e / e.sum()
            out[i] = alpha[i] @ v
    return out, alpha


def test_soft_masked_attention_is_the_formula():
    torch.manual_seed(6)
    q, k, v = rand(4, 3), rand(6, 3), rand(6, 2)
    m = torch.rand(4, 6, dtype=DT)
    m[1, 2] = m[2, :3] = 0.0
    m[3] = 0.0  # an all-zero row
    out, alpha = soft_masked_attention(q, k, v, m)
    ref_out, ref_alpha = soft_masked_by_loops(q, k, v, m, 1 / math.sqrt(3))
    assert_close(out, ref_out)
    assert_close(alpha, ref_alpha)
    assert (alpha[3] == 0).all() and (out[3] == 0).all()
    assert (alpha[m == 0] == 0).all()


@pytest.mark.parametrize("as_float", [False, True])
def test_a_0_1_mask_gives_exactly_masked_attention(as_float):
    torch.manual_seed(7)
    q, k, v = qkv((2, 2), 8)
    mask = torch.rand(8, 8) > 0.4
    mask |= torch.eye(8, dtype=torch.bool)  # every query keeps a key
    out, weights = soft_masked_attention(q, k, v, mask.to(DT) if as_float else mask)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    assert_close(out, ref, atol=1e-12, rtol=0)
    upstream = torch.randn_like(ref)
    for ours, theirs in zip(grads(out, (q, k, v), upstream), grads(ref, (q, k, v), upstream)):
        assert_close(ours, theirs, atol=1e-12, rtol=0)
    assert (weights[..., ~mask] == 0).all()


def test_the_sources_product_m_times_s_is_not_masking():
    """Eq. (14.3.43) as printed, softmax(M ⊙ S), keeps weight e^0 / Z on masked keys."""
    s = torch.tensor([[-3.0, -3.0, 5.0]], dtype=DT)
    m = torch.tensor([[1.0, 1.0, 0.0]], dtype=DT)
    printed = torch.softmax(m * s, dim=-1)
    assert printed[0, 2] > printed[0, 0]  # the masked key gets the largest weight
    q, k = torch.ones(1, 3, dtype=DT), torch.eye(3, dtype=DT) * s[0, :, None]  # q.k_j = s_j
    _, ours = soft_masked_attention(q, k, torch.eye(3, dtype=DT), m, scale=1.0)
    assert_close(ours, torch.tensor([[0.5, 0.5, 0.0]], dtype=DT))


def test_soft_masked_attention_extreme_scores_and_tiny_mask_values():
    q = torch.tensor([[1.0]], dtype=DT, requires_grad=True)
    k = torch.tensor([[1e4], [0.0], [-1e4]], dtype=DT)
    v = torch.tensor([[1.0], [2.0], [3.0]], dtype=DT)
    m = torch.tensor([[1e-30, 1.0, 0.0]], dtype=DT, requires_grad=True)
    out, w = soft_masked_attention(q, k, v, m, scale=1.0)
    assert_close(w, torch.tensor([[1.0, 0.0, 0.0]], dtype=DT))  # 1e-30 e^1e4 dominates e^0
    out.sum().backward()
    assert torch.isfinite(q.grad).all() and torch.isfinite(m.grad).all()


def test_soft_masked_attention_gradcheck():
    torch.manual_seed(8)
    q, k, v = qkv((2,), 5, d_k=3, d_v=2)
    m = (0.05 + 0.9 * torch.rand(2, 5, 5, dtype=DT)).requires_grad_()
    assert torch.autograd.gradcheck(
        lambda q, k, v, m: soft_masked_attention(q, k, v, m)[0], (q, k, v, m)
    )


# ---------------------------------------------------------------- Gumbel-sigmoid


def test_gumbel_sigmoid_is_the_binary_concrete_formula():
    logits = rand(3, 4, requires_grad=False)
    sample = gumbel_sigmoid(logits, 0.3, generator=torch.Generator().manual_seed(9))
    u = torch.rand(3, 4, generator=torch.Generator().manual_seed(9), dtype=DT)
    assert_close(sample, torch.sigmoid((logits + torch.log(u) - torch.log(1 - u)) / 0.3))


def test_gumbel_sigmoid_keeps_with_probability_sigmoid_logits_at_any_temperature():
    logits = torch.tensor([-2.0, -0.5, 0.0, 1.0, 3.0], dtype=DT).expand(200_000, 5)
    for temperature in (0.1, 1.0, 5.0):
        g = torch.Generator().manual_seed(10)
        kept = (gumbel_sigmoid(logits, temperature, generator=g) > 0.5).double().mean(0)
        assert (kept - torch.sigmoid(logits[0])).abs().max() < 0.005


def test_gumbel_sigmoid_is_the_two_class_gumbel_softmax_in_distribution():
    """softmax([l + g1, g0] / tau)[0] with g0, g1 ~ Gumbel(0, 1): same law (empirical CDFs)."""
    n, tau, logit = 100_000, 0.7, 0.8
    g = torch.Generator().manual_seed(11)
    ours = gumbel_sigmoid(torch.full((n,), logit, dtype=DT), tau, generator=g).sort().values
    gumbel = -torch.log(-torch.log(torch.rand(2, n, generator=g, dtype=DT)))
    pair = torch.stack([logit + gumbel[0], gumbel[1]], dim=-1) / tau  # (n, 2)
    theirs = torch.softmax(pair, dim=-1)[:, 0].sort().values
    grid = torch.linspace(0.01, 0.99, 99, dtype=DT)
    cdf = [torch.searchsorted(x, grid).double() / n for x in (ours, theirs)]
    assert (cdf[0] - cdf[1]).abs().max() < 0.01  # Kolmogorov-Smirnov distance


def test_gumbel_sigmoid_hard_is_0_1_with_the_soft_gradient():
    logits = rand(50)
    hard = gumbel_sigmoid(logits, 0.5, hard=True, generator=torch.Generator().manual_seed(12))
    soft = gumbel_sigmoid(logits, 0.5, generator=torch.Generator().manual_seed(12))
    assert set(hard.unique().tolist()) <= {0.0, 1.0}
    assert torch.equal(hard, (soft > 0.5).double())
    (g_hard,) = grads(hard, (logits,), torch.arange(50.0, dtype=DT))
    (g_soft,) = grads(soft, (logits,), torch.arange(50.0, dtype=DT))
    assert_close(g_hard, g_soft)


def test_gumbel_sigmoid_becomes_binary_as_the_temperature_falls():
    """At logit 0 and temperature 1 the sample is sigmoid(Logistic) = Uniform(0, 1); at 0.01
    almost every sample lies within 0.01 of 0 or 1."""
    logits = torch.zeros(100_000, dtype=DT)
    m = gumbel_sigmoid(logits, 1.0, generator=torch.Generator().manual_seed(13)).sort().values
    grid = torch.linspace(0.01, 0.99, 99, dtype=DT)
    assert (torch.searchsorted(m, grid).double() / m.numel() - grid).abs().max() < 0.01
    m = gumbel_sigmoid(logits, 0.01, generator=torch.Generator().manual_seed(13))
    assert ((m < 0.01) | (m > 0.99)).double().mean() > 0.97


def test_gumbel_sigmoid_gradcheck():
    logits = rand(2, 3)
    assert torch.autograd.gradcheck(
        lambda x: gumbel_sigmoid(x, 0.5, generator=torch.Generator().manual_seed(14)), (logits,)
    )


def test_annealed_temperature_is_geometric_and_never_zero():
    taus = [annealed_temperature(t, 11, 1.0, 0.01) for t in range(11)]
    assert taus[0] == 1.0 and math.isclose(taus[-1], 0.01)
    ratios = [b / a for a, b in zip(taus, taus[1:])]
    assert all(math.isclose(r, 0.01**0.1) for r in ratios)
    assert annealed_temperature(0, 1, 2.0, 0.5) == 0.5


def test_learnable_mask_initial_probability_eval_mode_and_penalty():
    mask = LearnableSparseMask(4, 6, init_keep_probability=0.3)
    assert_close(mask.keep_probability(), torch.full((4, 6), 0.3))
    assert mask(0.5, generator=torch.Generator().manual_seed(15)).shape == (4, 6)
    with torch.no_grad():
        mask.logits[1, 2] = 2.0
    assert mask.binary_mask().sum() == 1 and mask.binary_mask()[1, 2]
    mask.eval()
    assert torch.equal(mask(), mask.binary_mask().float())
    mask.train()
    mask.density().backward()
    p = mask.keep_probability().detach()
    assert_close(mask.logits.grad, p * (1 - p) / 24)  # d mean(sigmoid(l)) / dl


def test_learning_a_mask_recovers_a_known_pattern():
    """Targets made with a known mask; the learned mask (keep probability > 1/2) is that mask."""
    g = torch.Generator().manual_seed(16)
    T = 6
    true = torch.rand(T, T, generator=g) < 0.35
    true |= torch.eye(T, dtype=torch.bool)
    mask = LearnableSparseMask(T)
    opt = torch.optim.Adam(mask.parameters(), lr=0.1)
    for step in range(150):
        q, k, v = (torch.randn(16, T, 4, generator=g) for _ in range(3))
        target, _ = soft_masked_attention(q, k, v, true)
        m = mask(annealed_temperature(step, 150, 1.0, 0.05), generator=g)
        out, _ = soft_masked_attention(q, k, v, m)
        loss = ((out - target) ** 2).mean() + 1e-3 * mask.density()
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert torch.equal(mask.binary_mask(), true)


# ---------------------------------------------------------------- from scratch, bad input


def test_no_builtin_softmax_or_attention_is_called():
    torch.manual_seed(17)
    q, k, v = qkv((2,), 12)
    with forbidden_builtins():
        outs = {kind: SPARSE[kind](q, k, v, 3, causal=True)[0] for kind in SPARSE}
        soft, _ = soft_masked_attention(q, k, v, causal_mask(12))
        gumbel_sigmoid(q, 0.5).sum().backward()
    for kind, out in outs.items():
        assert_close(out, reference(q, k, v, pattern(kind, 12, 3, True)), atol=1e-12, rtol=0)
    assert_close(soft, reference(q, k, v, causal_mask(12)), atol=1e-12, rtol=0)


BAD = {
    "length mismatch": (
        lambda: local_attention(*qkv((), 5)[:1], rand(6, 5), rand(6, 3), 2),
        "T=5 and S=6",
    ),
    "window negative": (
        lambda: local_attention(*qkv((), 5), -1),
        r"window must be an int >= 0, got -1",
    ),
    "window float": (
        lambda: local_attention(*qkv((), 5), 1.5),
        r"window must be an int >= 0, got 1.5",
    ),
    "block size zero": (
        lambda: block_attention(*qkv((), 5), 0),
        r"block_size must be a positive int, got 0",
    ),
    "stride zero": (
        lambda: strided_attention(*qkv((), 5), 0),
        r"stride must be a positive int, got 0",
    ),
    "int tensors": (
        lambda: strided_attention(*(torch.ones(5, 4, dtype=torch.long),) * 3, 2),
        r"floating-point.*int64",
    ),
    "mask above 1": (
        lambda: soft_masked_attention(*qkv((), 4), torch.full((4, 4), 1.5)),
        r"\[0, 1\], got values in \[1.5, 1.5\]",
    ),
    "mask negative": (lambda: soft_masked_attention(*qkv((), 4), -torch.ones(4, 4)), r"\[0, 1\]"),
    "mask NaN": (
        lambda: soft_masked_attention(*qkv((), 4), torch.full((4, 4), float("nan"))),
        r"NaN",
    ),
    "mask integer": (
        lambda: soft_masked_attention(*qkv((), 4), torch.ones(4, 4, dtype=torch.long)),
        r"bool.*float.*int64",
    ),
    "mask shape": (
        lambda: soft_masked_attention(*qkv((), 4), torch.ones(3, 4)),
        r"\(3, 4\).*\(4, 4\)",
    ),
    "zero temperature": (
        lambda: gumbel_sigmoid(torch.zeros(3), 0.0),
        r"temperature must be > 0, got 0.0",
    ),
    "integer logits": (
        lambda: gumbel_sigmoid(torch.zeros(3, dtype=torch.long), 1.0),
        r"floating-point",
    ),
    "step past the end": (
        lambda: annealed_temperature(10, 10),
        r"step must lie in \[0, 9\], got 10",
    ),
    "end temperature 0": (
        lambda: annealed_temperature(0, 10, 1.0, 0.0),
        r"end must be > 0, got 0.0",
    ),
    "keep probability 1": (
        lambda: LearnableSparseMask(3, init_keep_probability=1.0),
        r"\(0, 1\), got 1.0",
    ),
    "mask size 0": (lambda: LearnableSparseMask(0), r"T must be a positive int, got 0"),
}


@pytest.mark.parametrize("name", BAD)
def test_bad_input_raises_value_error_with_expected_and_got(name):
    call, message = BAD[name]
    with pytest.raises(ValueError, match=message):
        call()
