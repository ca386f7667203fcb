"""Chapter 02's answer suite: correct answers in the styles a learner plausibly writes pass the
visible check and the hidden seeds; each common mistake fails with the message that names it; the
course's own functions and PyTorch's softmax are refused however they are reached."""

import math

import pytest
import torch
import torch.nn.functional as F
from exercise_helpers import (
    fails_on_seeds,
    fails_when_unfinished,
    fails_with,
    notebook_hidden_seeds,
    passes_on_seeds,
    styles_per_check,
)
from torch.nn.functional import softmax as bound_softmax

import attncourse.attention
import attncourse.chapters.ch02_seq2seq_bottleneck as chapter
import attncourse.metrics
from attncourse.attention import AdditiveAttention, LuongAttention
from attncourse.chapters.ch02_seq2seq_bottleneck import binary_entropy_bits, transmitted_bits
from attncourse.exercises import ch02 as exercises_ch02
from attncourse.exercises.ch02 import (
    check_additive_scores,
    check_bottleneck_bits,
    check_local_m_weights,
    check_mutual_information,
)

CHECKS = {  # the number of cases each check runs, and the notebook's hidden seed
    check_additive_scores: (5, 31),
    check_local_m_weights: (9, 32),
    check_mutual_information: (6, 33),
    check_bottleneck_bits: (6, 34),
}
MORE_SEEDS = (1, 7, 2024)


def seeds(check, more=MORE_SEEDS):
    """The visible seed 0, the seed of the notebook's hidden test, and ``more``."""
    return (0, CHECKS[check][1], *more)


# ------------------------------------------------------------------------- 1: additive scores


def additive(s, H, W, U, v):  # the broadcast the exercise text suggests
    return torch.tanh((s @ W.T)[:, None, :] + H @ U.T) @ v


def additive_loops(s, H, W, U, v):  # one (b, j) at a time, as the formula reads
    B, S = H.shape[:2]
    e = torch.empty(B, S, dtype=H.dtype)
    for b in range(B):
        for j in range(S):
            e[b, j] = v @ torch.tanh(W @ s[b] + U @ H[b, j])
    return e


def additive_einsum(s, H, W, U, v):
    hidden = torch.einsum("ks,bs->bk", W, s)[:, None] + torch.einsum("kh,bjh->bjk", U, H)
    return torch.einsum("bjk,k->bj", torch.tanh(hidden), v)


def additive_linear(s, H, W, U, v):  # F.linear(x, W) = x Wᵀ; v_a as a weighted sum
    hidden = torch.tanh(F.linear(s, W).unsqueeze(-2) + F.linear(H, U))  # (B, S, k)
    return (hidden * v).sum(-1)


def additive_concat(s, H, W, U, v):  # one layer on [s; h_j] with the weights side by side
    S = H.shape[1]
    pairs = torch.cat([s[:, None, :].expand(-1, S, -1), H], dim=-1)  # (B, S, d_s + d_h)
    return torch.tanh(pairs @ torch.cat([W, U], dim=1).T) @ v


def additive_float64(s, H, W, U, v):  # computed in float64, returned in the inputs' dtype
    return additive(s.double(), H.double(), W.double(), U.double(), v.double()).to(s.dtype)


def additive_column_vectors(s, H, W, U, v):  # W_a s as a matrix times column vectors
    Ws = (W @ s.unsqueeze(-1)).squeeze(-1)  # (B, k)
    Uh = (U @ H.unsqueeze(-1)).squeeze(-1)  # (B, S, k)
    return torch.matmul(torch.tanh(Ws.unsqueeze(1) + Uh), v)


# ------------------------------------------------------------------------- 2: local-m weights


def inside_window(scores, t, D):
    return (torch.arange(scores.shape[-1]) - t).abs() <= D  # (S,)


def local_m(scores, t, D):  # the notebook's: -inf outside, then a stable softmax
    masked = scores.masked_fill(~inside_window(scores, t, D), float("-inf"))
    e = torch.exp(masked - masked.amax(dim=-1, keepdim=True))
    return e / e.sum(dim=-1, keepdim=True)


def local_m_sliced(scores, t, D):  # softmax of the window's slice, zeros around it
    S = scores.shape[-1]
    lo, hi = max(0, t - D), min(S, t + D + 1)
    window = scores[..., lo:hi]
    e = torch.exp(window - window.amax(dim=-1, keepdim=True))
    out = torch.zeros_like(scores)
    out[..., lo:hi] = e / e.sum(dim=-1, keepdim=True)
    return out


def local_m_where(scores, t, D):  # torch.where instead of masked_fill, exact zeros outside
    j = torch.arange(scores.shape[-1])
    inside = (j >= t - D) & (j <= t + D)
    top = torch.where(inside, scores, -math.inf).amax(dim=-1, keepdim=True)
    e = torch.where(inside, torch.exp(scores - top), torch.zeros_like(scores))
    return e / e.sum(dim=-1, keepdim=True)


def local_m_logsumexp(scores, t, D):  # logsumexp is allowed: it is not a softmax
    masked = scores.masked_fill(~inside_window(scores, t, D), float("-inf"))
    return torch.exp(masked - torch.logsumexp(masked, dim=-1, keepdim=True))


def local_m_float64(scores, t, D):
    return local_m(scores.double(), t, D).to(scores.dtype)


def local_m_loops(scores, t, D):  # Python numbers, one row at a time
    S = scores.shape[-1]
    rows = scores.reshape(-1, S)
    out = torch.zeros_like(rows)
    window = [j for j in range(S) if abs(j - t) <= D]
    for r in range(rows.shape[0]):
        top = max(float(rows[r, j]) for j in window)
        e = [math.exp(float(rows[r, j]) - top) for j in window]
        for j, x in zip(window, e):
            out[r, j] = x / sum(e)
    return out.reshape(scores.shape)


# ------------------------------------------------------------------------- 3: mutual information


def mi(joint):  # the notebook's: Σ p log2 [p / (p(x) p(y))] over the non-zero cells, a float
    px, py = joint.sum(1, keepdim=True), joint.sum(0, keepdim=True)
    nz = joint > 0
    return float((joint[nz] * (joint / (px * py))[nz].log2()).sum())


def entropy(p):
    p = p[p > 0]
    return -(p * p.log2()).sum()


def mi_entropies(joint):  # H(X) + H(Y) - H(X, Y), a 0-d tensor
    return entropy(joint.sum(1)) + entropy(joint.sum(0)) - entropy(joint)


def mi_xlogy(joint):  # in nats with xlogy (0 log 0 = 0 built in), then converted to bits
    def h(p):
        return -torch.special.xlogy(p, p).sum()

    return (h(joint.sum(0)) + h(joint.sum(1)) - h(joint)) / math.log(2)


def mi_loops(joint):
    px, py = joint.sum(1).tolist(), joint.sum(0).tolist()
    total = 0.0
    for x, row in enumerate(joint.tolist()):
        for y, p in enumerate(row):
            if p > 0:
                total += p * math.log2(p / (px[x] * py[y]))
    return total


def mi_einsum(joint):  # the outer product by einsum, zero cells by torch.where, .item()
    outer = torch.einsum("x,y->xy", joint.sum(1), joint.sum(0))
    terms = torch.where(joint > 0, joint * (joint.log2() - outer.log2()), 0.0)
    return terms.sum().item()


def mi_nansum(joint):  # 0 · log 0 = NaN, dropped by nansum
    outer = torch.outer(joint.sum(1), joint.sum(0))
    return torch.nansum(joint * torch.log2(joint / outer))


def mi_epsilon_ratio(joint):  # an ε-guarded log of the ratio, as the text allows (ε ≤ 1e-12)
    px, py = joint.sum(1, keepdim=True), joint.sum(0, keepdim=True)
    return (joint * torch.log2((joint + 1e-12) / (px * py + 1e-12))).sum()


def mi_epsilon_entropies(joint):  # three ε-guarded entropies, H(X) + H(Y) - H(X, Y)
    def h(p):
        return -(p * torch.log2(p + 1e-12)).sum()

    return h(joint.sum(1)) + h(joint.sum(0)) - h(joint)


# ------------------------------------------------------------------------- 4: bottleneck bits


def bits(accuracy, V):  # the notebook's loop over positions
    total = 0.0
    for a in accuracy.tolist():
        p = 1 - a
        h = -sum(q * math.log2(q) for q in (p, 1 - p) if q > 0)
        total += math.log2(V) - h - p * math.log2(V - 1)
    return total


def bits_vectorised(accuracy, V):  # xlogy gives 0 log 0 = 0
    p = 1 - accuracy
    h = -(torch.xlogy(p, p) + torch.xlogy(1 - p, 1 - p)) / math.log(2)
    return (math.log2(V) - h - p * math.log2(V - 1)).sum()


def bits_clipped(accuracy, V):  # each term clipped at 0, as the course's function does
    p = 1 - accuracy
    h = -(torch.xlogy(p, p) + torch.xlogy(1 - p, 1 - p)) / math.log(2)
    return (math.log2(V) - h - p * math.log2(V - 1)).clamp(min=0).sum()


def bits_kl(accuracy, V):  # each term as KL((1 - p, p/(V-1), ...) || uniform)
    total = 0.0
    for a in accuracy.tolist():
        q = [a] + [(1 - a) / (V - 1)] * (V - 1)
        total += sum(x * math.log2(x * V) for x in q if x > 0)
    return total


def bits_nats_then_bits(accuracy, V):  # natural logs throughout, one conversion at the end
    p = 1 - accuracy
    h = -(torch.special.xlogy(p, p) + torch.special.xlogy(1 - p, 1 - p))
    return float((math.log(V) - h - p * math.log(V - 1)).sum() / math.log(2))


def bits_epsilon(accuracy, V):  # an ε-guarded binary entropy, as the text allows (ε ≤ 1e-12)
    p = 1 - accuracy
    h = -(p * torch.log2(p + 1e-12) + (1 - p) * torch.log2(1 - p + 1e-12))
    return (math.log2(V) - h - p * math.log2(V - 1)).sum()


def bits_clamped_error_rate(accuracy, V):  # p kept inside [ε, 1 − ε] so that log p is finite
    p = (1 - accuracy).clamp(1e-12, 1 - 1e-12)
    h = -(p * torch.log2(p) + (1 - p) * torch.log2(1 - p))
    return float((math.log2(V) - h - p * math.log2(V - 1)).sum())


def bits_where_float64(accuracy, V):  # log2 V as a float64 tensor, a (1,) tensor back
    p = 1 - accuracy
    log2V = torch.log2(torch.tensor(float(V), dtype=torch.float64))

    def plogp(q):
        return torch.where(q > 0, q * torch.log2(q.clamp(min=1e-300)), torch.zeros_like(q))

    h = -(plogp(p) + plogp(1 - p))
    return (log2V - h - p * math.log2(V - 1)).sum().reshape(1)


# ------------------------------------------------------------------- every style, every seed

STYLES = [
    (check_additive_scores, additive),
    (check_additive_scores, additive_loops),
    (check_additive_scores, additive_einsum),
    (check_additive_scores, additive_linear),
    (check_additive_scores, additive_concat),
    (check_additive_scores, additive_float64),
    (check_additive_scores, additive_column_vectors),
    (check_local_m_weights, local_m),
    (check_local_m_weights, local_m_sliced),
    (check_local_m_weights, local_m_where),
    (check_local_m_weights, local_m_logsumexp),
    (check_local_m_weights, local_m_float64),
    (check_local_m_weights, local_m_loops),
    (check_mutual_information, mi),
    (check_mutual_information, mi_entropies),
    (check_mutual_information, mi_xlogy),
    (check_mutual_information, mi_loops),
    (check_mutual_information, mi_einsum),
    (check_mutual_information, mi_nansum),
    (check_mutual_information, mi_epsilon_ratio),
    (check_mutual_information, mi_epsilon_entropies),
    (check_bottleneck_bits, bits),
    (check_bottleneck_bits, bits_vectorised),
    (check_bottleneck_bits, bits_clipped),
    (check_bottleneck_bits, bits_kl),
    (check_bottleneck_bits, bits_nats_then_bits),
    (check_bottleneck_bits, bits_where_float64),
    (check_bottleneck_bits, bits_epsilon),
    (check_bottleneck_bits, bits_clamped_error_rate),
]


@pytest.mark.parametrize("check, answer", STYLES, ids=[a.__name__ for _, a in STYLES])
def test_every_correct_style_passes_the_visible_check_and_the_hidden_seeds(check, answer, capsys):
    passes_on_seeds(check, answer, seeds(check), capsys, cases=CHECKS[check][0])


def test_the_hidden_seeds_are_the_notebook_s():
    assert notebook_hidden_seeds("02_seq2seq_bottleneck", exercises_ch02) == {
        check: seed for check, (_, seed) in CHECKS.items()
    }


def test_each_exercise_has_at_least_three_correct_styles():
    counts = styles_per_check(STYLES, CHECKS)
    assert min(counts.values()) >= 3, counts


@pytest.mark.parametrize("check", list(CHECKS), ids=lambda c: c.reference.__name__)
def test_an_unfinished_or_returnless_answer_says_so(check):
    fails_when_unfinished(check)


# --------------------------------------------------------------------------- common mistakes


def window_softmax(scores, t, lo, hi, stable=True):  # softmax over t + lo <= j <= t + hi
    j = torch.arange(scores.shape[-1])
    masked = scores.masked_fill(~(((j - t) >= lo) & ((j - t) <= hi)), float("-inf"))
    e = torch.exp(masked - masked.amax(dim=-1, keepdim=True)) if stable else torch.exp(masked)
    return e / e.sum(dim=-1, keepdim=True)


def local_m_zeroed(scores, t, D):  # softmax over all positions, then cut to the window
    e = torch.exp(scores - scores.amax(-1, keepdim=True))
    return e / e.sum(-1, keepdim=True) * inside_window(scores, t, D)


def local_m_row_max(scores, t, D):  # shifted by the whole row's max: 1000 outside the window
    e = torch.exp(scores - scores.amax(-1, keepdim=True)) * inside_window(scores, t, D)
    return e / e.sum(-1, keepdim=True)  # leaves exp(-1000) = 0 everywhere inside: 0/0


def local_m_python_slice(scores, t, D):  # scores[..., t - D : t + D + 1] with t - D < 0
    window = scores[..., t - D : t + D + 1]
    e = torch.exp(window - window.amax(dim=-1, keepdim=True))
    out = torch.zeros_like(scores)
    out[..., t - D : t + D + 1] = e / e.sum(dim=-1, keepdim=True)
    return out


def local_m_slice_end_excluded(scores, t, D):
    S = scores.shape[-1]
    lo, hi = max(0, t - D), min(S, t + D)
    window = scores[..., lo:hi]
    e = torch.exp(window - window.amax(dim=-1, keepdim=True))
    out = torch.zeros_like(scores)
    out[..., lo:hi] = e / e.sum(dim=-1, keepdim=True)
    return out


def local_m_first_axis(scores, t, D):  # max and sum over dim 0, not the positions
    masked = scores.masked_fill(~inside_window(scores, t, D), float("-inf"))
    e = torch.exp(masked - masked.amax(dim=0, keepdim=True))
    return e / e.sum(dim=0, keepdim=True)


def local_m_in_place(scores, t, D):
    scores -= scores.amax(dim=-1, keepdim=True)  # changes the caller's tensor
    return local_m(scores, t, D)


def mi_nan(joint):  # 0 · log 0 = 0 · (-inf) = NaN
    px, py = joint.sum(1, keepdim=True), joint.sum(0, keepdim=True)
    return (joint * (joint / (px * py)).log2()).sum()


def mi_swapped_marginals(joint):
    px, py = joint.sum(0)[:, None], joint.sum(1)[None, :]
    nz = joint > 0
    return (joint[nz] * (joint / (px * py))[nz].log2()).sum()


def mi_not_outer(joint):  # p(x) p(y) without keepdim: two (n,) vectors
    px, py = joint.sum(1), joint.sum(0)
    nz = joint > 0
    return (joint[nz] * (joint / (px * py))[nz].log2()).sum()


def mi_unweighted(joint):
    px, py = joint.sum(1, keepdim=True), joint.sum(0, keepdim=True)
    return (joint / (px * py))[joint > 0].log2().sum()


def fano(accuracy, V, first=None, second=None, h_sign=-1, h_log=math.log2, extra=True):
    """Σ [log2 first + h_sign · h(p) − p log2 second] with mistakes on purpose."""
    first, second = V if first is None else first, V - 1 if second is None else second
    total = 0.0
    for a in accuracy.tolist():
        p = 1 - a
        h = -sum(q * h_log(q) for q in (p, 1 - p) if q > 0)
        total += math.log2(first) + h_sign * h - (p * math.log2(second) if extra else 0.0)
    return total


def bits_nan(accuracy, V):  # p log p at p = 0 is 0 · (-inf)
    p = 1 - accuracy
    h = -(p * p.log2() + (1 - p) * (1 - p).log2())
    return (math.log2(V) - h - p * math.log2(V - 1)).sum()


def mi_large_epsilon(joint):  # log2(p + 1e-6): a guard a million times the allowed one
    def h(p):
        return -(p * torch.log2(p + 1e-6)).sum()

    return h(joint.sum(1)) + h(joint.sum(0)) - h(joint)


def bits_large_epsilon(accuracy, V):
    p = 1 - accuracy
    h = -(p * torch.log2(p + 1e-6) + (1 - p) * torch.log2(1 - p + 1e-6))
    return (math.log2(V) - h - p * math.log2(V - 1)).sum()


def bits_float32_log(accuracy, V):  # torch.log2 of an integer tensor is float32
    p = 1 - accuracy
    h = -(torch.xlogy(p, p) + torch.xlogy(1 - p, 1 - p)) / math.log(2)
    return (torch.log2(torch.tensor(V)) - h - p * torch.log2(torch.tensor(V - 1))).sum()


MISTAKES = [
    # 1: additive scores
    (
        check_additive_scores,
        lambda s, H, W, U, v: ((s @ W.T)[:, None] + H @ U.T) @ v,
        "missing the tanh",
    ),
    (
        check_additive_scores,
        lambda s, H, W, U, v: (torch.tanh(s @ W.T)[:, None] + torch.tanh(H @ U.T)) @ v,
        "applied to W_a s and U_a h_j separately",
    ),
    (check_additive_scores, lambda s, H, W, U, v: additive(s, H, U, W, v), "swapped"),
    (  # W instead of Wᵀ
        check_additive_scores,
        lambda s, H, W, U, v: torch.tanh((s @ W)[:, None] + H @ U) @ v,
        "the weight matrices are used transposed",
    ),
    (
        check_additive_scores,
        lambda s, H, W, U, v: torch.tanh((s @ W)[:, None] + H @ U.T) @ v,
        "W_a is used transposed",
    ),
    (
        check_additive_scores,
        lambda s, H, W, U, v: torch.tanh((s @ W.T)[:, None] + H @ U) @ v,
        "U_a is used transposed",
    ),
    (
        check_additive_scores,
        lambda s, H, W, U, v: torch.softmax(additive(s, H, W, U, v), -1),
        "returned the softmax of the scores",
    ),
    (check_additive_scores, lambda s, H, W, U, v: (H @ s[:, :, None])[..., 0], "dot score"),
    (  # (B, k) + (B, S, k): no axis for the source positions
        check_additive_scores,
        lambda s, H, W, U, v: torch.tanh(s @ W.T + H @ U.T) @ v,
        "added along the source positions instead of the batch",
    ),
    (
        check_additive_scores,
        lambda s, H, W, U, v: torch.tanh((s @ W.T)[:, None] + H @ U.T).sum(-1),
        "missing v_a",
    ),
    (
        check_additive_scores,
        lambda s, H, W, U, v: torch.tanh(((s @ W.T)[:, None] + H @ U.T) @ v),
        "tanh was applied after v_a",
    ),
    (  # float64 inside, never cast back
        check_additive_scores,
        lambda s, H, W, U, v: additive(s.double(), H.double(), W.double(), U.double(), v.double()),
        "returned dtype torch.float64, expected torch.float32: keep the input's dtype",
    ),
    # 2: local-m
    (check_local_m_weights, local_m_zeroed, "no longer sum to 1"),
    (
        check_local_m_weights,
        lambda s, t, D: window_softmax(s, t, -(D - 1), D - 1) if D > 0 else local_m(s, t, D),
        "it must include both ends",
    ),
    (check_local_m_weights, lambda s, t, D: window_softmax(s, t, -D - 1, D + 1), "too wide"),
    (check_local_m_weights, lambda s, t, D: window_softmax(s, t, 0, D), "only reaches forward"),
    (check_local_m_weights, lambda s, t, D: window_softmax(s, t, -D, 0), "only reaches back"),
    (check_local_m_weights, lambda s, t, D: window_softmax(s, t, -99, 99), "global attention"),
    (check_local_m_weights, lambda s, t, D: local_m(s, t + 1, D), "centred at t + 1"),
    (check_local_m_weights, lambda s, t, D: local_m(s, t - 1, D), "centred at t − 1"),
    (check_local_m_weights, local_m_slice_end_excluded, "a slice's end is excluded"),
    (check_local_m_weights, local_m_python_slice, "negative slice start counts from the end"),
    (check_local_m_weights, local_m_first_axis, "normalised over the wrong axis"),
    (
        check_local_m_weights,
        lambda s, t, D: window_softmax(s, t, -D, D, stable=False),
        "overflow for scores of 1000: subtract the window's max before exp",
    ),
    (check_local_m_weights, local_m_in_place, "changed its input in place"),
    (check_local_m_weights, local_m_row_max, "subtract the largest score inside the window"),
    (
        check_local_m_weights,
        lambda s, t, D: local_m(s.double(), t, D),
        "returned dtype torch.float64, expected torch.float32",
    ),
    # 3: mutual information
    (check_mutual_information, lambda j: mi(j) * math.log(2), "the answer is in nats"),
    (check_mutual_information, entropy, "that is the joint entropy H(X, Y)"),
    (check_mutual_information, lambda j: entropy(j.sum(1)), "that is H(X)"),
    (
        check_mutual_information,
        lambda j: entropy(j.sum(1)) + entropy(j.sum(0)) + entropy(j),
        "H(X, Y) must be subtracted",
    ),
    (check_mutual_information, mi_nan, "0 · (-inf) = NaN"),
    (  # fine until a column is all zero: there p(x, y) / (p(x) p(y)) is 0/0
        check_mutual_information,
        lambda j: torch.xlogy(j, j / (j.sum(1, True) * j.sum(0, True))).sum() / math.log(2),
        "where p(y) = 0 the ratio itself is 0/0",
    ),
    (check_mutual_information, mi_swapped_marginals, "the marginals are swapped"),
    (check_mutual_information, mi_not_outer, "must be the outer product"),
    (check_mutual_information, lambda j: -mi(j), "the sign is flipped"),
    (check_mutual_information, mi_unweighted, "missing the weight p(x, y)"),
    (check_mutual_information, lambda j: mi(j.float()), "right only to float32's precision"),
    (check_mutual_information, mi_large_epsilon, "ε is too large: use ε ≤ 1e-12"),
    (
        check_mutual_information,
        lambda j: torch.tensor(mi(j)),
        "returned dtype torch.float32, expected torch.float64",
    ),
    (check_mutual_information, lambda j: "1.0", "expected a torch.Tensor"),
    # 4: bottleneck bits
    (check_bottleneck_bits, lambda a, V: bits(a, V) * math.log(2), "the answer is in nats"),
    (check_bottleneck_bits, lambda a, V: bits(1 - a, V), "p_i is the error rate"),
    (check_bottleneck_bits, lambda a, V: bits(a, V) / len(a), "SUM over positions"),
    (check_bottleneck_bits, lambda a, V: fano(a, V, extra=False), "missing the term p log2(V − 1)"),
    (check_bottleneck_bits, lambda a, V: fano(a, V, second=V), "the last term is p log2 V"),
    (
        check_bottleneck_bits,
        lambda a, V: fano(a, V, first=V - 1, second=V),
        "log2 V and log2(V − 1) are swapped",
    ),
    (check_bottleneck_bits, lambda a, V: fano(a, V, h_sign=1), "h(p) was added"),
    (check_bottleneck_bits, lambda a, V: fano(a, V, h_log=math.log), "h(p) is in nats"),
    (check_bottleneck_bits, bits_nan, "p log p with p = 0 must count as 0"),
    (check_bottleneck_bits, bits_float32_log, "right only to float32's precision"),
    (check_bottleneck_bits, bits_large_epsilon, "ε is too large: use ε ≤ 1e-12"),
    (
        check_bottleneck_bits,
        lambda a, V: torch.tensor(bits(a, V)),
        "returned dtype torch.float32, expected torch.float64",
    ),
]


@pytest.mark.parametrize("check, answer, message", MISTAKES)
def test_each_common_mistake_is_named_on_the_visible_and_the_hidden_seed(check, answer, message):
    fails_on_seeds(check, answer, seeds(check, more=(7,)), message)


def test_a_window_cut_by_the_start_raising_an_error_gets_the_reason():
    message = fails_with(
        check_local_m_weights,
        local_m_python_slice,
        "the window is cut by the start here (t − D < 0)",
        "case 3 of 9",
    )
    assert "it raised" in message  # the learner's own error is shown too


# ---------------------------------------- the course's functions and the built-ins are refused


def additive_by_module(s, H, W, U, v):
    attn = AdditiveAttention(W.shape[1], U.shape[1], W.shape[0]).to(s.dtype)
    attn.W_a.weight.data, attn.U_a.weight.data, attn.v_a.weight.data = W, U, v[None]
    return attn.score(s[:, None], H)[:, 0]


def local_m_by_luong(scores, t, D):  # the scores as 1-d keys of a query 1: q · k_j = scores
    S = scores.shape[-1]
    keys = scores.reshape(-1, S, 1)
    query = torch.ones(keys.shape[0], 1, dtype=scores.dtype)
    mask = inside_window(scores, t, D)[None, :]
    return LuongAttention(1, score="dot")(query, keys, mask=mask)[1].reshape(scores.shape)


class CallableAnswer:
    """An answer whose source the check cannot read: the refusal at run time still stops it."""

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, *args):
        return self.fn(*args)


REFUSED = [
    (check_additive_scores, additive_by_module, ["from scratch", "AdditiveAttention"]),
    (check_additive_scores, CallableAnswer(additive_by_module), ["AdditiveAttention.score"]),
    (check_local_m_weights, local_m_by_luong, ["from scratch", "LuongAttention"]),
    (check_local_m_weights, CallableAnswer(local_m_by_luong), ["from scratch", "Luong"]),
    (check_local_m_weights, lambda s, t, D: torch.softmax(s, -1), ["torch.softmax"]),
    (
        check_local_m_weights,
        lambda s, t, D: bound_softmax(s.masked_fill(~inside_window(s, t, D), -math.inf), -1),
        ["torch.nn.functional.softmax"],
    ),
    (
        check_local_m_weights,
        lambda s, t, D: s.masked_fill(~inside_window(s, t, D), -math.inf).softmax(-1),
        [".softmax()"],
    ),
    (
        check_local_m_weights,
        lambda s, t, D: torch.nn.Softmax(dim=-1)(s.masked_fill(~inside_window(s, t, D), -1e9)),
        ["torch.nn.Softmax"],
    ),
    (
        check_local_m_weights,
        lambda s, t, D: F.log_softmax(s.masked_fill(~inside_window(s, t, D), -1e9), -1).exp(),
        ["torch.nn.functional.log_softmax"],
    ),
    (
        check_local_m_weights,
        lambda s, t, D: attncourse.attention.softmax(s, mask=inside_window(s, t, D)),
        ["course's own", "softmax"],
    ),
    (
        check_local_m_weights,
        CallableAnswer(
            lambda s, t, D: attncourse.attention.softmax(s, mask=inside_window(s, t, D))
        ),
        ["from scratch", "softmax"],
    ),
    (check_mutual_information, chapter.mutual_information_bits, ["from scratch"]),
    (
        check_mutual_information,
        lambda j: attncourse.metrics.mutual_information(j, 0, 1),
        ["course's own", "mutual_information"],
    ),
    (
        check_mutual_information,
        lambda j: (
            chapter.entropy_bits(j.sum(0))
            + chapter.entropy_bits(j.sum(1))
            - chapter.entropy_bits(j)
        ),
        ["course's own", "entropy_bits"],
    ),
    (
        check_mutual_information,
        CallableAnswer(lambda j: attncourse.metrics.mutual_information(j, 0, 1)),
        ["from scratch", "mutual_information"],
    ),
    (check_bottleneck_bits, transmitted_bits, ["from scratch"]),
    (
        check_bottleneck_bits,
        lambda a, V: sum(chapter.fano_information_bound(1 - float(x), V) for x in a),
        ["course's own", "fano_information_bound"],
    ),
    (
        check_bottleneck_bits,
        lambda a, V: sum(
            math.log2(V) - binary_entropy_bits(1 - x) - (1 - x) * math.log2(V - 1)
            for x in a.tolist()
        ),
        ["course's own", "binary_entropy_bits"],
    ),
    (check_bottleneck_bits, CallableAnswer(transmitted_bits), ["from scratch", "transmitted_bits"]),
]


@pytest.mark.parametrize("check, answer, fragments", REFUSED)
def test_the_course_s_functions_and_the_softmax_built_ins_are_refused(check, answer, fragments):
    fails_with(check, answer, "must be written from scratch", *fragments)


def test_what_a_refused_answer_called_works_again_afterwards():
    for check, answer, _ in REFUSED:
        with pytest.raises(AssertionError):
            check(answer)
    attn = AdditiveAttention(3, 3, 3)
    assert attn(torch.randn(2, 3), torch.randn(2, 4, 3))[1].shape == (2, 4)
    assert LuongAttention(2, score="dot")(torch.ones(1, 2), torch.ones(1, 3, 2))[1].shape == (1, 3)
    assert torch.allclose(attncourse.attention.softmax(torch.zeros(2)), torch.tensor([0.5, 0.5]))
    assert torch.allclose(torch.softmax(torch.zeros(2), -1), torch.tensor([0.5, 0.5]))
    assert chapter.mutual_information_bits(torch.eye(2) / 2) == pytest.approx(1.0)
    assert transmitted_bits([1.0], 4) == pytest.approx(2.0)


# ------------------------------------------------------------------------------ the answers' form


def test_a_scalar_answer_may_be_a_float_a_0d_or_a_1_element_float64_tensor():
    for answer in (
        mi,
        lambda j: torch.tensor(mi(j), dtype=torch.float64),
        lambda j: torch.tensor([mi(j)], dtype=torch.float64),
    ):
        check_mutual_information(answer)
    check_bottleneck_bits(lambda a, V: torch.tensor([[bits(a, V)]], dtype=torch.float64))
    fails_with(check_bottleneck_bits, lambda a, V: torch.tensor([bits(a, V)] * 2), "shape")


def test_below_chance_the_sum_as_written_equals_the_course_s_clipped_sum():
    # Fano's term is a KL divergence, >= 0 for every accuracy: the unclipped sum of the exercise
    # text and the reference's clipped sum agree, also for accuracies below 1/V
    below = torch.tensor([0.0, 0.01, 0.02, 0.049, 0.05, 0.3, 1.0], dtype=torch.float64)
    reference = transmitted_bits(below, 20)
    assert bits(below, 20) == pytest.approx(reference, abs=1e-12)
    terms = [bits(below[i : i + 1], 20) for i in range(len(below))]
    assert min(terms) > -1e-12 and terms[0] == pytest.approx(math.log2(20 / 19))


def test_the_allowance_for_an_epsilon_guard_is_what_the_text_allows_and_no_more():
    # ε = 1e-12 passes on every seed (the styles above); the allowance is tens of ε, far below
    # the float32 round-off it must still catch
    from attncourse.exercises.ch02 import EPSILON, _bits_slack, _mi_slack

    assert EPSILON == 1e-12
    table = torch.full((3, 6), 1 / 18, dtype=torch.float64)
    assert 1e-11 < _mi_slack(table) < 1e-9
    assert 1e-11 < _bits_slack(torch.ones(30, dtype=torch.float64), 20) < 1e-8
    for seed in (0, 33, 7):
        for case in check_mutual_information.inputs(seed):
            (joint,) = case.args
            off = abs(mi_epsilon_entropies(joint) - mi(joint))
            assert off <= _mi_slack(joint), (seed, case.label)


def test_every_check_is_exported():
    assert sorted(exercises_ch02.__all__) == sorted(
        [
            "check_additive_scores",
            "check_bottleneck_bits",
            "check_local_m_weights",
            "check_mutual_information",
        ]
    )
