"""Chapter 10's exercise checks pass correct answers written in different ways (at the visible
and the hidden seed) and name the common mistakes."""

import math

import pytest
import torch
import torch.nn.functional as F
from exercise_helpers import blank, fails

from attncourse.exercises.ch10 import (
    check_causal_linear_attention,
    check_gumbel_sigmoid,
    check_masked_weights,
    check_online_softmax_step,
    check_reach,
)

HIDDEN_SEEDS = {
    check_masked_weights: 101,
    check_gumbel_sigmoid: 102,
    check_reach: 103,
    check_causal_linear_attention: 104,
    check_online_softmax_step: 105,
}


def passes(check, fn):
    check(fn)
    check(fn, seed=HIDDEN_SEEDS[check])


# ------------------------------------------------------------------ 1. soft-mask weights


def weights_log_shift(scores, mask):
    kept = mask > 0
    logits = torch.where(kept, scores + torch.log(torch.where(kept, mask, 1.0)), -math.inf)
    top = logits.amax(dim=-1, keepdim=True)
    e = torch.exp(logits - torch.where(torch.isfinite(top), top, 0.0))
    total = e.sum(dim=-1, keepdim=True)
    return e / torch.where(total > 0, total, 1.0)


def weights_masked_max(scores, mask):
    """Shift by the largest *kept* score, multiply the exponentials by m."""
    kept = mask > 0
    top = scores.masked_fill(~kept, -math.inf).amax(dim=-1, keepdim=True)
    top = torch.nan_to_num(top, neginf=0.0)
    e = mask * torch.exp((scores - top).masked_fill(~kept, -math.inf))
    total = e.sum(dim=-1, keepdim=True)
    out = e / total
    return torch.nan_to_num(out, nan=0.0)


def weights_row_loop(scores, mask):
    flat_s, flat_m = scores.reshape(-1, scores.shape[-1]), mask.reshape(-1, mask.shape[-1])
    rows = []
    for s, m in zip(flat_s.double(), flat_m.double()):
        keep = m > 0
        row = torch.zeros_like(s)
        if keep.any():
            z = s[keep] + torch.log(m[keep])
            z = torch.exp(z - z.max())
            row[keep] = z / z.sum()
        rows.append(row)
    return torch.stack(rows).reshape(scores.shape).to(scores.dtype)


@pytest.mark.parametrize("fn", [weights_log_shift, weights_masked_max, weights_row_loop])
def test_masked_weights_accepts_correct_answers(fn):
    passes(check_masked_weights, fn)


def test_masked_weights_names_the_mistakes():
    def printed(s, m):
        z = m * s
        e = torch.exp(z - z.amax(-1, keepdim=True))
        return e / e.sum(-1, keepdim=True)

    def after(s, m):
        e = torch.exp(s - s.amax(-1, keepdim=True))
        return m * e / e.sum(-1, keepdim=True)

    def ignored(s, m):
        e = torch.exp(s - s.amax(-1, keepdim=True))
        return e / e.sum(-1, keepdim=True)

    def nan_rows(s, m):
        e = m * torch.exp(s - s.amax(-1, keepdim=True))
        return e / e.sum(-1, keepdim=True)

    def no_shift(s, m):
        e = m * torch.exp(s)
        total = e.sum(-1, keepdim=True)
        return e / torch.where(total > 0, total, 1.0)

    fails(check_masked_weights, printed, r"Eq\. \(14\.3\.43\) as printed, softmax\(M ⊙ S\)")
    fails(check_masked_weights, after, r"masks after normalising")
    fails(check_masked_weights, ignored, r"the mask is ignored")
    fails(check_masked_weights, nan_rows, r"mask is all 0 must get zero weights, not NaN")
    fails(check_masked_weights, no_shift, r"overflow or underflow for scores of ±1000")
    fails(check_masked_weights, blank, r"not implemented yet")


def test_masked_weights_refuses_softmax():
    fails(
        check_masked_weights,
        lambda s, m: torch.softmax(s + torch.log(m), dim=-1),
        r"must be written from scratch",
    )


# ------------------------------------------------------------------ 2. Gumbel-sigmoid


def gumbel_log1p(logits, u, temperature):
    return torch.sigmoid((logits + torch.log(u) - torch.log1p(-u)) / temperature)


def gumbel_logit(logits, u, temperature):
    return 1 / (1 + torch.exp(-(logits + torch.logit(u)) / temperature))


def gumbel_two_class(logits, u, temperature):
    """softmax over (l + noise, 0) / temperature, written out with exp."""
    a = (logits + torch.log(u / (1 - u))) / temperature
    top = torch.maximum(a, torch.zeros_like(a))
    return torch.exp(a - top) / (torch.exp(a - top) + torch.exp(-top))


@pytest.mark.parametrize("fn", [gumbel_log1p, gumbel_logit, gumbel_two_class])
def test_gumbel_sigmoid_accepts_correct_answers(fn):
    passes(check_gumbel_sigmoid, fn)


def test_gumbel_sigmoid_names_the_mistakes():
    fails(
        check_gumbel_sigmoid,
        lambda x, u, t: torch.sigmoid((x - torch.log(u) + torch.log(1 - u)) / t),
        r"wrong sign",
    )
    fails(
        check_gumbel_sigmoid,
        lambda x, u, t: torch.sigmoid((x + torch.log(u) - torch.log(1 - u)) * t),
        r"the temperature multiplies",
    )
    fails(check_gumbel_sigmoid, lambda x, u, t: torch.sigmoid(x / t), r"no noise")
    fails(
        check_gumbel_sigmoid,
        lambda x, u, t: torch.sigmoid((x - torch.log(-torch.log(u))) / t),
        r"one Gumbel variable",
    )
    fails(
        check_gumbel_sigmoid,
        lambda x, u, t: torch.sigmoid(x / t + torch.log(u) - torch.log(1 - u)),
        r"only the logits are divided",
    )
    fails(check_gumbel_sigmoid, blank, r"not implemented yet")


# ------------------------------------------------------------------ 3. reach


def reach_matmul(mask, layers):
    n = mask.shape[0]
    step = (mask | torch.eye(n, dtype=torch.bool)).float()
    result = torch.eye(n)
    for _ in range(layers):
        result = (result @ step).clamp(max=1)
    return result > 0


def reach_matrix_power(mask, layers):
    step = (mask | torch.eye(mask.shape[0], dtype=torch.bool)).double()
    return torch.linalg.matrix_power(step, layers) > 0


def reach_bfs(mask, layers):
    n = mask.shape[0]
    out = torch.zeros(n, n, dtype=torch.bool)
    for i in range(n):
        frontier = {i}
        seen = {i}
        for _ in range(layers):
            frontier = {j for k in frontier for j in range(n) if mask[k, j]} - seen
            seen |= frontier
        out[i, list(seen)] = True
    return out


@pytest.mark.parametrize("fn", [reach_matmul, reach_matrix_power, reach_bfs])
def test_reach_accepts_correct_answers(fn):
    passes(check_reach, fn)


def test_reach_names_the_mistakes():
    def no_residual(mask, layers):
        result = mask.double()
        for _ in range(layers - 1):
            result = ((result @ mask.double()) > 0).double()
        return result.bool()

    fails(check_reach, no_residual, r"forgot the residual stream")
    fails(check_reach, lambda m, L: reach_matmul(m, L).T, r"transposed")
    fails(check_reach, lambda m, L: reach_matmul(m, max(L - 1, 1)), r"one layer too few")
    fails(check_reach, lambda m, L: reach_matmul(m, L + 1), r"one layer too many")
    fails(check_reach, lambda m, L: reach_matmul(m, L).float(), r"dtype")
    fails(check_reach, blank, r"not implemented yet")


# ------------------------------------------------------------------ 4. causal linear attention


def phi(x):
    return F.elu(x) + 1


def linear_cumsum(q, k, v):
    fq, fk = phi(q), phi(k)
    states = torch.cumsum(fk.unsqueeze(-1) * v.unsqueeze(-2), dim=-3)  # (..., T, d_k, d_v)
    sums = torch.cumsum(fk, dim=-2)
    return (fq.unsqueeze(-2) @ states).squeeze(-2) / (fq * sums).sum(-1, keepdim=True)


def linear_matrix(q, k, v):
    kernel = torch.einsum("...id,...jd->...ij", phi(q), phi(k)).tril()
    return kernel @ v / kernel.sum(-1, keepdim=True)


def linear_recurrent(q, k, v):
    fq, fk = phi(q), phi(k)
    S = torch.zeros(*q.shape[:-2], q.shape[-1], v.shape[-1], dtype=q.dtype)
    z = torch.zeros(*q.shape[:-2], q.shape[-1], dtype=q.dtype)
    outs = []
    for i in range(q.shape[-2]):
        S = S + fk[..., i, :, None] * v[..., i, None, :]
        z = z + fk[..., i, :]
        num = torch.einsum("...d,...de->...e", fq[..., i, :], S)
        outs.append(num / (fq[..., i, :] * z).sum(-1, keepdim=True))
    return torch.stack(outs, dim=-2)


@pytest.mark.parametrize("fn", [linear_cumsum, linear_matrix, linear_recurrent])
def test_causal_linear_attention_accepts_correct_answers(fn):
    passes(check_causal_linear_attention, fn)


def test_causal_linear_attention_names_the_mistakes():
    def variant(q, k, v, f=phi, causal=True, norm=True, strict=False):
        kernel = f(q) @ f(k).transpose(-2, -1)
        if causal:
            kernel = kernel.tril(-1 if strict else 0)
        return (kernel / kernel.sum(-1, keepdim=True) if norm else kernel) @ v

    fails(
        check_causal_linear_attention, lambda q, k, v: variant(q, k, v, causal=False), r"not causal"
    )
    fails(
        check_causal_linear_attention,
        lambda q, k, v: variant(q, k, v, strict=True),
        r"(current position is left out|NaN)",
    )
    fails(
        check_causal_linear_attention,
        lambda q, k, v: variant(q, k, v, norm=False),
        r"not normalised",
    )
    fails(
        check_causal_linear_attention,
        lambda q, k, v: variant(q, k, v, f=lambda x: x),
        r"no feature map",
    )

    def exp_attention(q, k, v):
        s = (q @ k.transpose(-2, -1)).masked_fill(
            ~torch.ones(q.shape[-2], q.shape[-2], dtype=torch.bool).tril(), -math.inf
        )
        e = torch.exp(s - s.amax(-1, keepdim=True))
        return e / e.sum(-1, keepdim=True) @ v

    fails(check_causal_linear_attention, exp_attention, r"this is softmax attention")
    fails(check_causal_linear_attention, blank, r"not implemented yet")


def test_causal_linear_attention_refuses_the_package():
    from attncourse.attention import linear_attention

    fails(
        check_causal_linear_attention,
        lambda q, k, v: linear_attention(q, k, v, causal=True, eps=0.0)[0],
        r"must be written from scratch",
    )


# ------------------------------------------------------------------ 5. online softmax step


def step_maximum(m, l, acc, scores, values):  # noqa: E741
    m_new = torch.maximum(m, scores.amax(-1, keepdim=True))
    p = torch.exp(scores - m_new)
    a = torch.exp(m - m_new)
    return m_new, l * a + p.sum(-1, keepdim=True), acc * a + p @ values


def step_where(m, l, acc, scores, values):  # noqa: E741
    tile_max = scores.max(dim=-1, keepdim=True).values
    m_new = torch.where(tile_max > m, tile_max, m)
    scale = torch.where(torch.isinf(m), torch.zeros_like(m), torch.exp(m - m_new))
    p = torch.exp(scores - m_new)
    return (
        m_new,
        scale * l + p.sum(-1, keepdim=True),
        scale * acc + torch.einsum("tc,cd->td", p, values),
    )


def step_loop(m, l, acc, scores, values):  # noqa: E741
    rows = []
    for i in range(scores.shape[0]):
        mi = max(float(m[i]), float(scores[i].max()))
        p = torch.exp(scores[i] - mi)
        a = math.exp(float(m[i]) - mi) if math.isfinite(float(m[i])) else 0.0
        rows.append((mi, float(l[i]) * a + float(p.sum()), acc[i] * a + p @ values))
    dt = scores.dtype
    return (
        torch.tensor([[r[0]] for r in rows], dtype=dt),
        torch.tensor([[r[1]] for r in rows], dtype=dt),
        torch.stack([r[2] for r in rows]).to(dt),
    )


@pytest.mark.parametrize("fn", [step_maximum, step_where, step_loop])
def test_online_softmax_step_accepts_correct_answers(fn):
    passes(check_online_softmax_step, fn)


def test_online_softmax_step_names_the_mistakes():
    def variant(m, l, acc, s, v, ra=True, rl=True, add=True, old=False):  # noqa: E741
        m_new = torch.maximum(m, s.amax(-1, keepdim=True))
        p = torch.exp(s - (m if old else m_new))
        a = torch.exp(m - m_new)
        return (
            m_new,
            (l * a if rl else l) + (p.sum(-1, keepdim=True) if add else 0),
            (acc * a if ra else acc) + p @ v,
        )

    fails(check_online_softmax_step, lambda *x: variant(*x, ra=False), r"acc is not rescaled")
    fails(check_online_softmax_step, lambda *x: variant(*x, rl=False), r"l is not rescaled")
    fails(
        check_online_softmax_step, lambda *x: variant(*x, add=False), r"missing the tile's own sum"
    )
    fails(
        check_online_softmax_step,
        lambda *x: variant(*x, old=True),
        r"(shifted by the old max|NaN|inf)",
    )

    def normalised(*x):
        m, l, acc = step_maximum(*x)  # noqa: E741
        return m, l, acc / l

    fails(check_online_softmax_step, normalised, r"returned the normalised output")
    fails(check_online_softmax_step, blank, r"not implemented yet")


def test_each_exercise_refuses_the_course_function_it_asks_for():
    from attncourse.attention import chunked_attention, gumbel_sigmoid
    from attncourse.chapters.ch10_efficient_gated_attention import reach

    fails(check_reach, lambda m, L: reach(m, L), r"must be written from scratch")
    fails(
        check_gumbel_sigmoid, lambda x, u, t: gumbel_sigmoid(x, t), r"must be written from scratch"
    )

    def via_chunked(m, l, acc, s, v):  # noqa: E741
        chunked_attention(s[None], s[None], v[None])
        return step_maximum(m, l, acc, s, v)

    fails(check_online_softmax_step, via_chunked, r"must be written from scratch")
