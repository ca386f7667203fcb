"""Chunked (FlashAttention-style) attention and linear attention against independent references."""

import pytest
import torch
import torch.nn.functional as F

from attncourse.attention.chunked import chunked_attention
from attncourse.attention.linear import linear_attention
from attncourse.guard import forbidden_builtins

DOUBLE = torch.float64


def rand(*shape, dtype=DOUBLE, scale=1.0, grad=False):
    return (torch.randn(*shape, dtype=dtype) * scale).requires_grad_(grad)


def qkv(batch, T, S, d_k=8, d_v=8, dtype=DOUBLE, grad=True):
    return (
        rand(*batch, T, d_k, dtype=dtype, grad=grad),
        rand(*batch, S, d_k, dtype=dtype, grad=grad),
        rand(*batch, S, d_v, dtype=dtype, grad=grad),
    )


def grads(out, inputs, upstream):
    return torch.autograd.grad(out, inputs, upstream)


def assert_matches_torch(q, k, v, chunk_size, causal=False, scale=None, atol=1e-12):
    """Output and the gradients of q, k, v equal F.scaled_dot_product_attention's."""
    out, weights = chunked_attention(q, k, v, chunk_size=chunk_size, causal=causal, scale=scale)
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale)
    assert weights is None
    torch.testing.assert_close(out, ref, atol=atol, rtol=0)
    upstream = torch.randn_like(ref)
    for ours, theirs in zip(grads(out, (q, k, v), upstream), grads(ref, (q, k, v), upstream)):
        torch.testing.assert_close(ours, theirs, atol=atol, rtol=0)


# ---------------------------------------------------------------- chunked attention: exactness


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize(
    "T, chunk_size",
    [
        (37, 8),
        (37, 16),
        (37, 37),
        (37, 64),
        (48, 16),
        (48, 48),
    ],  # 37 % 8, 37 % 16 leave a ragged tile; 64 > T
)
def test_chunked_matches_torch_square(causal, T, chunk_size):
    torch.manual_seed(0)
    assert_matches_torch(*qkv((2, 3), T, T), chunk_size, causal)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("T, S, chunk_size", [(20, 45, 8), (45, 20, 7), (5, 33, 4), (33, 5, 4)])
def test_chunked_matches_torch_t_ne_s(causal, T, S, chunk_size):
    """Causal is top-left aligned (query i sees keys j <= i), as is_causal=True."""
    torch.manual_seed(1)
    assert_matches_torch(*qkv((2, 2), T, S), chunk_size, causal)


@pytest.mark.parametrize("causal", [False, True])
def test_chunked_d_v_differs_from_d_k(causal):
    torch.manual_seed(2)
    assert_matches_torch(*qkv((2, 3), 29, 29, d_k=6, d_v=11), 8, causal)


@pytest.mark.parametrize("causal", [False, True])
def test_chunked_custom_scale(causal):
    torch.manual_seed(3)
    assert_matches_torch(*qkv((2, 2), 24, 24), 5, causal, scale=0.7)


@pytest.mark.parametrize("causal", [False, True])
def test_chunked_3d_input(causal):
    torch.manual_seed(4)
    assert_matches_torch(*qkv((3,), 19, 19, d_k=4, d_v=5), 6, causal)


def test_chunked_2d_input():
    torch.manual_seed(5)
    assert_matches_torch(*qkv((), 13, 17, d_k=4, d_v=3), 5, causal=True)


@pytest.mark.parametrize("causal", [False, True])
def test_chunked_broadcasts_batch_dims(causal):
    """One key/value set shared by every head: its gradient sums over the heads."""
    torch.manual_seed(6)
    q = rand(2, 4, 21, 8, grad=True)
    k, v = rand(2, 1, 21, 8, grad=True), rand(2, 1, 21, 8, grad=True)
    out, _ = chunked_attention(q, k, v, chunk_size=8, causal=causal)
    ref = F.scaled_dot_product_attention(
        q, k.expand(2, 4, 21, 8), v.expand(2, 4, 21, 8), is_causal=causal
    )
    torch.testing.assert_close(out, ref, atol=1e-12, rtol=0)
    upstream = torch.randn_like(ref)
    for ours, theirs in zip(grads(out, (q, k, v), upstream), grads(ref, (q, k, v), upstream)):
        assert ours.shape == theirs.shape
        torch.testing.assert_close(ours, theirs, atol=1e-12, rtol=0)


def test_chunked_non_contiguous_input():
    """Heads split as in multi-head attention: (B, T, H, d).transpose(1, 2) is not contiguous."""
    torch.manual_seed(7)
    q, k, v = (rand(2, 23, 3, 8).transpose(1, 2).requires_grad_() for _ in range(3))
    assert not q.is_contiguous()
    assert_matches_torch(q, k, v, 8, causal=True)


@pytest.mark.parametrize("causal", [False, True])
def test_chunked_gradcheck(causal):
    torch.manual_seed(8)
    q, k, v = qkv((2,), 7, 7, d_k=3, d_v=2)
    assert torch.autograd.gradcheck(
        lambda q, k, v: chunked_attention(q, k, v, 3, causal)[0], (q, k, v)
    )


def test_chunked_gradcheck_t_ne_s_causal():
    torch.manual_seed(9)
    q, k, v = qkv((1,), 6, 9, d_k=3, d_v=4)
    assert torch.autograd.gradcheck(
        lambda q, k, v: chunked_attention(q, k, v, 4, True)[0], (q, k, v)
    )


def test_chunked_result_does_not_depend_on_chunk_size():
    torch.manual_seed(10)
    q, k, v = qkv((2, 2), 50, 50, grad=False)
    outs = [chunked_attention(q, k, v, chunk_size=c, causal=True)[0] for c in (1, 3, 16, 50, 128)]
    for out in outs[1:]:
        torch.testing.assert_close(out, outs[0], atol=1e-13, rtol=0)


def test_chunked_causal_ignores_future_keys():
    torch.manual_seed(11)
    q, k, v = qkv((2,), 30, 30, grad=False)
    out, _ = chunked_attention(q, k, v, chunk_size=8, causal=True)
    k2, v2 = k.clone(), v.clone()
    k2[:, 20:], v2[:, 20:] = torch.randn(2, 10, 8), v[:, 20:] + 100.0  # change only keys 20..29
    out2, _ = chunked_attention(q, k2, v2, chunk_size=8, causal=True)
    torch.testing.assert_close(out2[:, :20], out[:, :20], atol=0, rtol=0)
    assert (out2[:, 20:] - out[:, 20:]).abs().amin() > 1e-3  # queries 20..29 do see them


# ---------------------------------------------------- chunked attention: float32, large scores


@pytest.mark.parametrize("causal", [False, True])
def test_chunked_float32_agrees_with_float64_reference(causal):
    torch.manual_seed(12)
    q, k, v = qkv((2, 4), 300, 300, d_k=64, d_v=64, dtype=torch.float32, grad=False)
    out, _ = chunked_attention(q, k, v, chunk_size=64, causal=causal)
    ref = F.scaled_dot_product_attention(q.double(), k.double(), v.double(), is_causal=causal)
    assert out.dtype == torch.float32
    assert (out.double() - ref).abs().max() < 1e-5


@pytest.mark.parametrize("dtype", [torch.float32, DOUBLE])
@pytest.mark.parametrize("causal", [False, True])
def test_chunked_scores_of_1e4_stay_finite(dtype, causal):
    """Scores of +-1e4 (exp overflows without the running max); the row maximum often arrives in
    a later key tile, so the running output must be rescaled by exp(m_old - m_new) = 0."""
    torch.manual_seed(13)
    q = torch.randn(2, 40, 4, dtype=dtype).sign().requires_grad_()
    k = torch.randn(2, 40, 4, dtype=dtype).sign().requires_grad_()
    v = torch.randn(2, 40, 3, dtype=dtype).requires_grad_()
    scale = 2500.0  # q.k in {-4, -2, 0, 2, 4}: scores up to +-1e4
    out, _ = chunked_attention(q, k, v, chunk_size=8, causal=causal, scale=scale)
    (dq, dk, dv) = grads(out, (q, k, v), torch.ones_like(out))
    assert all(torch.isfinite(t).all() for t in (out, dq, dk, dv))
    q64, k64, v64 = (t.detach().double().requires_grad_() for t in (q, k, v))
    ref = F.scaled_dot_product_attention(q64, k64, v64, is_causal=causal, scale=scale)
    assert (out.double() - ref).abs().max() < 1e-5
    ref_dv = grads(ref, (v64,), torch.ones_like(ref))[0]
    assert (dv.double() - ref_dv).abs().max() < 1e-5


# ---------------------------------------------------------------- linear attention


def phi(x):
    return F.elu(x) + 1


def quadratic_linear_attention(q, k, v, causal):
    """Eq. 14.3.46 written out with the full (T, S) matrix: A_ij = phi(q_i).phi(k_j) / sum_j'."""
    kernel = phi(q) @ phi(k).transpose(-2, -1)  # (..., T, S)
    if causal:
        T, S = kernel.shape[-2:]
        allowed = torch.arange(S)[None, :] <= torch.arange(T)[:, None]  # (T, S) j <= i
        kernel = kernel * allowed
    A = kernel / kernel.sum(dim=-1, keepdim=True)  # (..., T, S)
    return A @ v


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("T, S", [(17, 17), (9, 21), (21, 9)])
def test_linear_matches_quadratic_formula(causal, T, S):
    torch.manual_seed(20)
    q, k, v = qkv((2, 3), T, S, d_k=5, d_v=7)
    out, weights = linear_attention(q, k, v, causal=causal, eps=0.0)
    ref = quadratic_linear_attention(q, k, v, causal)
    assert weights is None
    torch.testing.assert_close(out, ref, atol=1e-12, rtol=0)
    upstream = torch.randn_like(ref)
    for ours, theirs in zip(grads(out, (q, k, v), upstream), grads(ref, (q, k, v), upstream)):
        torch.testing.assert_close(ours, theirs, atol=1e-12, rtol=0)


@pytest.mark.parametrize("causal", [False, True])
def test_linear_3d_and_broadcast_input(causal):
    torch.manual_seed(21)
    q, k, v = rand(3, 11, 4), rand(1, 11, 4), rand(1, 11, 6)
    out, _ = linear_attention(q, k, v, causal=causal, eps=0.0)
    torch.testing.assert_close(out, quadratic_linear_attention(q, k, v, causal), atol=1e-12, rtol=0)


@pytest.mark.parametrize("causal", [False, True])
def test_linear_eps_adds_to_the_denominator(causal):
    torch.manual_seed(22)
    q, k, v = qkv((2,), 10, 10, d_k=3, d_v=2, grad=False)
    exact, _ = linear_attention(q, k, v, causal=causal, eps=0.0)
    kernel = phi(q) @ phi(k).transpose(-2, -1)  # (2, T, S)
    if causal:
        kernel = kernel.tril()
    denominator = kernel.sum(dim=-1, keepdim=True)
    out, _ = linear_attention(q, k, v, causal=causal, eps=0.5)
    torch.testing.assert_close(out, exact * denominator / (denominator + 0.5), atol=1e-12, rtol=0)
    default, _ = linear_attention(q, k, v, causal=causal)
    torch.testing.assert_close(
        default, exact * denominator / (denominator + 1e-6), atol=1e-12, rtol=0
    )


@pytest.mark.parametrize("causal", [False, True])
def test_linear_gradcheck(causal):
    torch.manual_seed(23)
    q, k, v = qkv((2,), 6, 6, d_k=3, d_v=2)
    assert torch.autograd.gradcheck(
        lambda q, k, v: linear_attention(q, k, v, causal=causal)[0], (q, k, v)
    )


# ---------------------------------------------------------------- from scratch, bad input


def test_no_builtin_softmax_or_attention_is_called():
    torch.manual_seed(30)
    q, k, v = qkv((2,), 12, 12, grad=False)
    expected_chunked = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    expected_linear = quadratic_linear_attention(q, k, v, causal=True)
    with forbidden_builtins():
        chunked, _ = chunked_attention(q, k, v, chunk_size=5, causal=True)
        linear, _ = linear_attention(q, k, v, causal=True, eps=0.0)
    torch.testing.assert_close(chunked, expected_chunked, atol=1e-12, rtol=0)
    torch.testing.assert_close(linear, expected_linear, atol=1e-12, rtol=0)


@pytest.mark.parametrize("chunk_size", [0, -3, 2.5, "8", True])
def test_chunked_rejects_bad_chunk_size(chunk_size):
    q, k, v = qkv((1,), 4, 4, grad=False)
    with pytest.raises(ValueError, match=r"chunk_size must be a positive int, got"):
        chunked_attention(q, k, v, chunk_size=chunk_size)


ATTENTIONS = [chunked_attention, linear_attention]


@pytest.mark.parametrize("attention", ATTENTIONS)
def test_rejects_mismatched_d_k(attention):
    q, k, v = rand(2, 5, 8), rand(2, 5, 6), rand(2, 5, 6)
    with pytest.raises(ValueError, match=r"q has d_k=8.*k has d_k=6"):
        attention(q, k, v)


@pytest.mark.parametrize("attention", ATTENTIONS)
def test_rejects_mismatched_key_value_lengths(attention):
    q, k, v = rand(2, 5, 8), rand(2, 5, 8), rand(2, 7, 8)
    with pytest.raises(ValueError, match=r"k has 5 .*v has 7"):
        attention(q, k, v)


@pytest.mark.parametrize("attention", ATTENTIONS)
def test_rejects_zero_keys(attention):
    with pytest.raises(ValueError, match=r"at least one key, got S=0"):
        attention(rand(2, 5, 8), rand(2, 0, 8), rand(2, 0, 8), causal=True)


@pytest.mark.parametrize("attention", ATTENTIONS)
def test_rejects_int_tensors(attention):
    q = torch.ones(2, 5, 8, dtype=torch.int64)
    with pytest.raises(
        ValueError, match=r"q must be a floating-point tensor, got dtype torch.int64"
    ):
        attention(q, q, q)


@pytest.mark.parametrize("attention", ATTENTIONS)
def test_rejects_1d_input(attention):
    with pytest.raises(ValueError, match=r"q must be at least 2-D"):
        attention(rand(8), rand(5, 8), rand(5, 8))


def test_linear_rejects_negative_eps():
    q, k, v = qkv((1,), 4, 4, grad=False)
    with pytest.raises(ValueError, match=r"eps must be >= 0, got -1"):
        linear_attention(q, k, v, eps=-1.0)
