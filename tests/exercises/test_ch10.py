"""Chapter 10's exercise checks pass correct answers written in different ways (at the visible
and the hidden seed) and name the common mistakes, a broken dtype rule included."""

import math

import pytest
import torch
import torch.nn.functional as F
from exercise_helpers import blank, fails, fails_when_unfinished, notebook_hidden_seeds

from attncourse.exercises import ch10 as exercises_ch10
from attncourse.exercises.ch10 import (
    check_causal_linear_attention,
    check_gumbel_sigmoid,
    check_masked_weights,
    check_online_softmax_step,
)

HIDDEN_SEEDS = notebook_hidden_seeds("10_efficient_gated_attention", exercises_ch10)
CHECKS = (
    check_online_softmax_step,
    check_masked_weights,
    check_gumbel_sigmoid,
    check_causal_linear_attention,
)


def test_every_check_has_its_hidden_seed_in_the_notebook():
    expected = {
        check_masked_weights: 101,
        check_gumbel_sigmoid: 102,
        check_causal_linear_attention: 104,
        check_online_softmax_step: 105,
    }
    assert expected == HIDDEN_SEEDS


@pytest.mark.parametrize("check", CHECKS)
def test_an_unfinished_answer_says_so(check):
    fails_when_unfinished(check)


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


def weights_logsumexp(scores, mask):
    """log-weights s + log m - logsumexp over the kept keys; an empty row handled apart."""
    logits = torch.where(mask > 0, scores + torch.log(mask.clamp_min(1e-300)), -math.inf)
    normaliser = torch.logsumexp(logits, dim=-1, keepdim=True)  # -inf for an empty row
    empty = torch.isinf(normaliser)
    weights = torch.exp(logits - torch.where(empty, torch.zeros_like(normaliser), normaliser))
    return torch.where(empty, torch.zeros_like(weights), weights)


@pytest.mark.parametrize(
    "fn", [weights_log_shift, weights_masked_max, weights_row_loop, weights_logsumexp]
)
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

    def max_over_every_key(s, m):  # a masked key's 1000 in the maximum: every kept exp is 0
        e = m * torch.exp(s - s.amax(-1, keepdim=True))
        total = e.sum(-1, keepdim=True)
        return torch.where(total > 0, e / total, torch.zeros_like(e))

    fails(check_masked_weights, max_over_every_key, r"must not take part in that maximum")
    fails(
        check_masked_weights,
        lambda s, m: weights_log_shift(s.double(), m.double()),
        r"keep the input's dtype",
    )
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
        check_gumbel_sigmoid,  # g1 from u and g0 from 1 - u: one u for both Gumbels
        lambda x, u, t: torch.sigmoid(
            (x - torch.log(-torch.log(u)) + torch.log(-torch.log(1 - u))) / t
        ),
        r"g1 and g0 must be independent",
    )
    fails(
        check_gumbel_sigmoid,
        lambda x, u, t: torch.sigmoid(x / t + torch.log(u) - torch.log(1 - u)),
        r"only the logits are divided",
    )
    fails(
        check_gumbel_sigmoid,
        lambda x, u, t: gumbel_log1p(x.float(), u.float(), t),
        r"keep the input's dtype",
    )
    fails(
        check_gumbel_sigmoid,
        lambda x, u, t: gumbel_log1p(x, torch.rand_like(u), t),
        r"computed from the u given",
    )
    fails(check_gumbel_sigmoid, blank, r"not implemented yet")


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


def test_an_epsilon_in_linear_attention_s_denominator_is_named():
    def with_epsilon(q, k, v):
        kernel = (phi(q) @ phi(k).transpose(-2, -1)).tril()
        return kernel @ v / (kernel.sum(-1, keepdim=True) + 1e-6)

    fails(check_causal_linear_attention, with_epsilon, r"no ε in the denominator")


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
    fails(
        check_causal_linear_attention,
        lambda q, k, v: linear_cumsum(q, k, v).float(),
        r"keep the input's dtype",
    )
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


def step_merge(m, l, acc, scores, values):  # noqa: E741
    """The tile as a state of its own (its max, sum and accumulator), merged with the old one."""
    m_tile = scores.amax(-1, keepdim=True)
    p = torch.exp(scores - m_tile)
    l_tile, acc_tile = p.sum(-1, keepdim=True), p @ values
    m_new = torch.maximum(m, m_tile)
    a, b = torch.exp(m - m_new), torch.exp(m_tile - m_new)
    return m_new, a * l + b * l_tile, a * acc + b * acc_tile


@pytest.mark.parametrize("fn", [step_maximum, step_where, step_loop, step_merge])
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
    fails(
        check_online_softmax_step,
        lambda *x: tuple(t.double() for t in step_maximum(*x)),
        r"keep the input's dtype",
    )
    fails(check_online_softmax_step, blank, r"not implemented yet")


def soft_masked_weights(scores, mask):
    from attncourse.attention import soft_masked_attention

    return soft_masked_attention(scores[..., None], scores[..., None], scores[..., None], mask)[1]


def test_each_exercise_refuses_the_course_function_it_asks_for():
    from attncourse.attention import chunked_attention, gumbel_sigmoid
    from attncourse.chapters.ch10_efficient_gated_attention import online_softmax_step

    fails(check_online_softmax_step, online_softmax_step, r"must be written from scratch")
    fails(
        check_masked_weights,
        lambda s, m: soft_masked_weights(s, m),
        r"must be written from scratch",
    )
    fails(
        check_gumbel_sigmoid, lambda x, u, t: gumbel_sigmoid(x, t), r"must be written from scratch"
    )

    def via_chunked(m, l, acc, s, v):  # noqa: E741
        chunked_attention(s[None], s[None], v[None])
        return step_maximum(m, l, acc, s, v)

    fails(check_online_softmax_step, via_chunked, r"must be written from scratch")
