"""Checks for chapter 07's exercises (positional encoding), each an
``attncourse.exercises.engine.Exercise``: it runs the learner's function on random and edge inputs,
compares it with the course's reference and names the mistake when it recognises one.

* ``check_shift_matrix``          — R_k with PE(p + k) = R_k PE(p)          (Lemma 14.3.21)
* ``check_rope``                  — RoPE's rotation of queries and keys      (Su et al. 2021)
* ``check_alibi_weights``         — causal attention weights with ALiBi's bias, from scratch
                                    (Press et al. 2022)
* ``check_selection_information`` — I(z; x_j) of a read-out that copies x_j with probability α
                                    (Def. 14.3.14)

Each takes ``seed=`` for fresh inputs (hidden tests use another seed).
"""

from __future__ import annotations

import math

import torch

from ..attention import softmax as _softmax_function
from ..chapters.ch07_positional_encoding import encodings as _encodings_module
from ..i18n import say
from ..positional import RotaryEmbedding as _RotaryEmbedding
from ..positional import alibi_bias as _alibi_bias_function
from ..positional import alibi_slopes as _alibi_slopes_function
from ..positional import sinusoidal_shift_matrix as _shift_matrix_function
from .engine import Case, Exercise, Label, randn

# Bound once, at import (a later assignment to a module attribute changes nothing here).
_softmax_ref = _softmax_function
_shift_ref_function = _shift_matrix_function
_alibi_slopes = _alibi_slopes_function
_selection_ref_function = _encodings_module.selection_information_bits
_rope_forward = _RotaryEmbedding.forward
DT = torch.float64

FLOAT32_ANGLES = (
    "the angles carry float32 round-off: compute θ in float64 "
    "(torch.arange(0, d, 2, dtype=torch.float64); the default float32 rounds θ by about 1e-7 of "
    "its size, far more than a float64 answer may differ)"
)


def _angles_hint(hint=None, *, relative=1e-3):
    """A case hint that names float32 angles: a float64 answer whose largest difference from the
    reference is small (at most ``relative`` of the output's magnitude) but above the tolerance,
    as θ rounded to float32 gives; otherwise ``hint`` (a string, or None to show the difference
    alone)."""

    def choose(got, expected):
        if (
            isinstance(got, torch.Tensor)
            and got.dtype == DT
            and expected.dtype == DT
            and got.shape == expected.shape
            and bool(torch.isfinite(got).all())
        ):
            off = float((got.detach() - expected).abs().max())
            if off <= relative * max(1.0, float(expected.abs().max())):
                return say(FLOAT32_ANGLES)
        return say(hint) if hint else None

    choose.texts = (FLOAT32_ANGLES, hint)
    return choose


# ------------------------------------------------------------------------ 1: the shift matrix


def _shift_ref(offset, dim, base):
    """R_k (dim, dim) float64 with PE(p + k) = R_k PE(p) for the interleaved (sin, cos) pairs."""
    return _shift_ref_function(offset, dim, base, dtype=DT)


def _shift_variant(offset, dim, base, *, sign=1.0, exponent=2.0, layout="interleaved"):
    """A block-rotation matrix built with a chosen sign, frequency exponent and pairing."""
    i = torch.arange(dim // 2, dtype=DT)
    theta = base ** (-exponent * i / dim)  # (dim/2,)
    c, s = torch.cos(offset * theta), torch.sin(offset * theta)
    R = torch.zeros(dim, dim, dtype=DT)
    for n in range(dim // 2):
        a, b = (2 * n, 2 * n + 1) if layout == "interleaved" else (n, n + dim // 2)
        R[a, a], R[a, b], R[b, a], R[b, b] = c[n], sign * s[n], -sign * s[n], c[n]
    return R


def _shift_cases(g) -> list[Case]:
    """fn(offset: int, dim: int, base: float) -> (dim, dim) float64."""
    k = int(torch.randint(1, 20, (), generator=g))
    back = -int(torch.randint(1, 6, (), generator=g))
    far = int(torch.randint(400, 2000, (), generator=g))
    return [
        Case(Label("offset {k}, dim 8, base 10000", k=k), (k, 8, 10000.0), hint=_angles_hint()),
        Case(
            Label("a negative offset {k}, dim 6", k=back), (back, 6, 10000.0), hint=_angles_hint()
        ),
        Case(
            "offset 0, dim 4",
            (0, 4, 10000.0),
            hint="shifting by 0 positions changes nothing: R_0 is the identity",
        ),
        Case(
            Label("one pair only: offset {k}, dim 2", k=k + 3),
            (k + 3, 2, 10000.0),
            hint=_angles_hint(),
        ),
        Case(Label("base 100, offset {k}, dim 12", k=k), (k, 12, 100.0), hint=_angles_hint()),
        Case(
            Label("a far offset {k} (the angles wrap around), dim 16", k=far),
            (far, 16, 10000.0),
            hint=_angles_hint(),
        ),
    ]


check_shift_matrix = Exercise(
    _shift_ref,
    _shift_cases,
    refuse=[_shift_ref_function],
    diagnoses=[
        (
            "the sine terms have the wrong sign: this is R_(−k) = R_kᵀ, the shift backwards. "
            "From sin((p+k)θ) = sin pθ cos kθ + cos pθ sin kθ, the row of a sin feature is "
            "(cos kθ, sin kθ)",
            lambda k, d, b: _shift_variant(k, d, b, sign=-1.0),
        ),
        (
            "the frequencies are base^(−i/d): pair i (features 2i and 2i+1) turns at "
            "θ_i = base^(−2i/d)",
            lambda k, d, b: _shift_variant(k, d, b, exponent=1.0),
        ),
        (
            "the frequencies are base^(+2i/d): θ_i = base^(−2i/d) radians per position (the "
            "wavelengths 2π/θ_i grow with i)",
            lambda k, d, b: _shift_variant(k, d, b, exponent=-2.0),
        ),
        (
            "paired feature i with feature i + d/2; the encoding interleaves: feature 2i is the "
            "sin and 2i + 1 the cos of the same frequency",
            lambda k, d, b: _shift_variant(k, d, b, layout="half") if d > 2 else None,
        ),
        (
            "returned the identity: the matrix must depend on the offset k",
            lambda k, d, b: torch.eye(d, dtype=DT) if k else None,
        ),
    ],
)


# ------------------------------------------------------------------------------------ 2: RoPE


def _rope_ref(x, positions, base):
    """RoFormer's rotation of each pair (x_2i, x_2i+1) at position m by m·θ_i,
    θ_i = base^(−2i/d)."""
    return _rope_forward(_RotaryEmbedding(x.shape[-1], base), x, positions)


def _rope_variant(x, positions, base, *, sign=1.0, exponent=2.0, layout="interleaved"):
    d = x.shape[-1]
    angle_dtype = DT if x.dtype == DT else torch.float32
    theta = (base ** (-exponent * torch.arange(d // 2, dtype=DT) / d)).to(angle_dtype)
    angles = positions.to(angle_dtype)[:, None] * theta  # (T, d/2)
    cos, sin = torch.cos(angles).to(x.dtype), sign * torch.sin(angles).to(x.dtype)
    if layout == "interleaved":
        a, b = x[..., 0::2], x[..., 1::2]
        return torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1).flatten(-2)
    a, b = x[..., : d // 2], x[..., d // 2 :]
    return torch.cat((a * cos - b * sin, a * sin + b * cos), dim=-1)


def _rope_scale(x, positions, base) -> float:
    """The magnitude the answer is computed at: |x| times the largest angle m·θ_0 = m."""
    return float(x.abs().max()) * max(1.0, float(positions.abs().max()))


def _rope_cases(g) -> list[Case]:
    """fn(x (..., T, d), positions (T,) long, base) -> x with every pair rotated."""
    shuffled = torch.randperm(200, generator=g)[:6]  # six distinct positions, in no order
    return [
        Case(
            "x (2, 3, 5, 8), positions 0 … 4",
            (randn(g, 2, 3, 5, 8, dtype=DT), torch.arange(5), 10000.0),
            hint=_angles_hint(),
        ),
        Case(
            Label("x (6, 6), positions {positions}", positions=shuffled.tolist()),
            (randn(g, 6, 6, dtype=DT), shuffled, 10000.0),
            hint=_angles_hint(
                "row t of x sits at position positions[t]: rotate it by positions[t] · θ_i"
            ),
        ),
        Case(
            "one pair (d = 2), positions 0, 1, 2",
            (randn(g, 3, 2, dtype=DT), torch.arange(3), 10000.0),
            hint=_angles_hint(),
        ),
        Case(
            "base 100, x (2, 7, 12), positions 10 … 16",
            (randn(g, 2, 7, 12, dtype=DT), torch.arange(10, 17), 100.0),
            hint=_angles_hint(),
        ),
        Case(
            "float32 x (2, 4, 16), positions 0 … 3",
            (randn(g, 2, 4, 16), torch.arange(4), 10000.0),
            hint="keep the input's dtype (float32 in, float32 out)",
        ),
        Case(
            "a single position 0 (no rotation)",
            (randn(g, 3, 1, 8, dtype=DT), torch.zeros(1, dtype=torch.long), 10000.0),
            hint="at position 0 every angle is 0: the output equals the input",
        ),
    ]


check_rope = Exercise(
    _rope_ref,
    _rope_cases,
    refuse=[_rope_forward],
    scale=_rope_scale,
    diagnoses=[
        (
            "paired x_i with x_(i + d/2) (the GPT-NeoX / LLaMA layout); RoFormer's R_m rotates "
            "neighbouring features (x_2i, x_2i+1)",
            lambda x, p, b: _rope_variant(x, p, b, layout="half") if x.shape[-1] > 2 else None,
        ),
        (
            "rotated the wrong way (by −m·θ_i): y_2i = x_2i cos mθ_i − x_2i+1 sin mθ_i, "
            "y_2i+1 = x_2i sin mθ_i + x_2i+1 cos mθ_i",
            lambda x, p, b: _rope_variant(x, p, b, sign=-1.0),
        ),
        (
            "the frequencies are base^(−i/d): pair i turns at θ_i = base^(−2i/d)",
            lambda x, p, b: _rope_variant(x, p, b, exponent=1.0),
        ),
        (
            "the frequencies are base^(+2i/d): θ_i = base^(−2i/d) radians per position",
            lambda x, p, b: _rope_variant(x, p, b, exponent=-2.0),
        ),
        (
            "used the row index 0 … T−1 instead of the positions given",
            lambda x, p, b: (
                _rope_variant(x, torch.arange(len(p)), b)
                if not torch.equal(p, torch.arange(len(p)))
                else None
            ),
        ),
        (
            "counted positions from 1: the position given is m itself, rotate by m·θ_i",
            lambda x, p, b: _rope_variant(x, p + 1, b),
        ),
    ],
)


# ----------------------------------------------------------------------------------- 3: ALiBi


def _alibi_ref(scores, slopes):
    """softmax over keys of scores[b, h, i, j] − m_h (i − j), keys j ≤ i only (causal)."""
    T = scores.shape[-1]
    i = torch.arange(T)[:, None]
    j = torch.arange(T)[None, :]
    bias = -slopes[:, None, None] * (i - j).to(scores.dtype)  # (H, T, T)
    return _softmax_ref(scores + bias, mask=j <= i)  # (B, H, T, T)


def _alibi_variant(scores, slopes, *, sign=-1.0, causal=True, absolute=False, per="head", dim=-1):
    T = scores.shape[-1]
    i = torch.arange(T)[:, None]
    j = torch.arange(T)[None, :]
    distance = ((i - j).abs() if absolute else (i - j)).to(scores.dtype)  # (T, T)
    if per == "head":
        m = slopes[:, None, None]  # (H, 1, 1)
    elif per == "key":
        m = slopes[None, None, :]  # (1, 1, H): indexed by key, only when H == T
    elif per == "query":
        m = slopes[None, :, None]  # (1, H, 1): indexed by query, only when H == T
    else:
        m = torch.ones_like(slopes)[:, None, None]
    if per in ("key", "query") and slopes.shape[0] != T:
        return None
    z = scores + sign * m * distance
    if causal:
        z = z.masked_fill(~(j <= i), float("-inf"))
    z = z - z.amax(dim=dim, keepdim=True)
    e = torch.exp(z)
    return e / e.sum(dim=dim, keepdim=True)


def _alibi_cases(g) -> list[Case]:
    """fn(scores (B, H, T, T) float64, slopes (H,) float64) -> causal weights (B, H, T, T)."""
    return [
        Case(
            "scores (2, 4, 6, 6), the slopes of 4 heads",
            (randn(g, 2, 4, 6, 6, dtype=DT), _alibi_slopes(4, dtype=DT)),
        ),
        Case(
            "equal scores (1, 1, 5, 5), slope 1/2",
            (torch.zeros(1, 1, 5, 5, dtype=DT), torch.tensor([0.5], dtype=DT)),
            hint="with equal scores, query i's weights are ∝ e^(−m (i − j)) over its keys j ≤ i",
        ),
        Case(
            "scores (1, 3, 7, 7) of size ~3, 3 heads",
            (randn(g, 1, 3, 7, 7, dtype=DT, scale=3.0), _alibi_slopes(3, dtype=DT)),
        ),
        Case(
            "one position (2, 2, 1, 1)",
            (randn(g, 2, 2, 1, 1, dtype=DT), _alibi_slopes(2, dtype=DT)),
            hint="a single key gets the whole weight, 1",
        ),
        Case(
            "6 heads over 6 positions (1, 6, 6, 6)",
            (randn(g, 1, 6, 6, 6, dtype=DT), _alibi_slopes(6, dtype=DT)),
        ),
        Case(
            "scores (1, 8, 12, 12), the slopes of 8 heads",
            (randn(g, 1, 8, 12, 12, dtype=DT), _alibi_slopes(8, dtype=DT)),
        ),
        Case(
            "scores around 1000 (1, 2, 5, 5), 2 heads",
            (1000 + randn(g, 1, 2, 5, 5, dtype=DT, scale=2.0), _alibi_slopes(2, dtype=DT)),
            hint="overflow for scores of 1000: exp(1000) is inf; subtract each query's largest "
            "score over its keys before exp",
        ),
    ]


check_alibi_weights = Exercise(
    _alibi_ref,
    _alibi_cases,
    reimplements=("softmax", "attention"),
    refuse=[_alibi_bias_function, _alibi_slopes],
    diagnoses=[
        (
            "the bias has the wrong sign: ALiBi adds −m_h (i − j), so a key further back loses "
            "weight",
            lambda s, m: _alibi_variant(s, m, sign=1.0),
        ),
        (
            "future keys (j > i) got weight: this exercise is causal, mask them out before the "
            "softmax (their weight is exactly 0)",
            lambda s, m: _alibi_variant(s, m, causal=False, absolute=True),
        ),
        (
            "future keys (j > i) got weight, and −m (i − j) is a bonus for them: mask them out "
            "before the softmax",
            lambda s, m: _alibi_variant(s, m, causal=False),
        ),
        (
            "every head used slope 1: head h's bias is −slopes[h] · (i − j)",
            lambda s, m: _alibi_variant(s, m, per="one"),
        ),
        (
            "the slopes were indexed by the key position: slopes[h] belongs to head h (dimension "
            "1 of the scores)",
            lambda s, m: _alibi_variant(s, m, per="key"),
        ),
        (
            "the slopes were indexed by the query position: slopes[h] belongs to head h (dimension "
            "1 of the scores)",
            lambda s, m: _alibi_variant(s, m, per="query"),
        ),
        (
            "normalised over the queries: each query's weights over its keys (the last dimension) "
            "must sum to 1",
            lambda s, m: _alibi_variant(s, m, dim=-2) if s.shape[-1] > 1 else None,
        ),
    ],
)


# --------------------------------------------------------------- 4: information of a selection


def _selection_ref(alpha, vocab):
    """I(z; x_j) in bits, z = x_j with probability alpha, else a uniform token: (...,) float64."""
    return _selection_ref_function(alpha, vocab)


def _plogp2(p):
    return torch.where(p > 0, p * torch.log2(torch.where(p > 0, p, torch.ones_like(p))), 0.0)


def _conditional_entropy(alpha, vocab):
    hit = alpha + (1 - alpha) / vocab
    miss = (1 - alpha) / vocab
    return -(_plogp2(hit) + (vocab - 1) * _plogp2(miss))


EPSILON = 1e-9  # an ε-guarded log, log2(p + ε), may use an ε up to this (the text says so)


def _selection_slack(alpha, vocab):
    """What log2(p + ε) with ε ≤ EPSILON changes: p·log2(1 + ε/p) ≤ ε/ln 2 for each of the V
    terms of H(z | x_j)."""
    return vocab * EPSILON / math.log(2)


def _selection_cases(g) -> list[Case]:
    """fn(alpha (...,) float64 in [0, 1], vocab: int) -> I in bits, shape (...)."""

    def alphas(*shape):
        return 0.05 + 0.9 * torch.rand(*shape, generator=g, dtype=DT)

    return [
        Case("6 values of alpha, vocabulary 16", (alphas(6), 16)),
        Case("alpha (2, 3), vocabulary 2", (alphas(2, 3), 2)),
        Case(
            "alpha = 0 and alpha = 1, vocabulary 10",
            (torch.tensor([0.0, 1.0], dtype=DT), 10),
            hint="alpha = 0: the copy is never made, I = 0; alpha = 1: z = x_j, I = log2 V; "
            "count 0 · log 0 as 0",
        ),
        Case("a vocabulary of 1000", (alphas(4), 1000)),
        Case("alpha (5,), vocabulary 4", (alphas(5), 4)),
    ]


check_selection_information = Exercise(
    _selection_ref,
    _selection_cases,
    slack=_selection_slack,
    diagnoses=[
        (
            "in nats: the information is asked in bits (log2)",
            lambda a, V: _selection_ref(a, V) * math.log(2),
        ),
        (
            "returned η = I / log2 V; the exercise asks for I itself, in bits",
            lambda a, V: _selection_ref(a, V) / math.log2(V),
        ),
        (
            "returned H(z | x_j), the uncertainty left; the information is "
            "I = H(z) − H(z | x_j) with H(z) = log2 V",
            _conditional_entropy,
        ),
        (
            "P(z = x_j | x_j) is α + (1 − α)/V: the random token can also be x_j itself",
            lambda a, V: math.log2(V) + _plogp2(a) + (V - 1) * _plogp2((1 - a) / V),
        ),
        (
            "the fresh token was drawn from the V − 1 tokens other than x_j; it is uniform over "
            "all V, x_j included, so P(z = x_j | x_j) = α + (1 − α)/V",
            lambda a, V: math.log2(V) + _plogp2(a) + (V - 1) * _plogp2((1 - a) / (V - 1)),
        ),
        (
            "I is not α · log2 V: random copies dilute the information faster than in proportion "
            "(I ≈ (V − 1) α² / (2 ln 2) for small α); compute log2 V − H(z | x_j)",
            lambda a, V: a * math.log2(V),
        ),
        (
            "used the small-α approximation (V − 1) α² / (2 ln 2); compute it exactly",
            lambda a, V: (V - 1) * a**2 / (2 * math.log(2)),
        ),
    ],
)


__all__ = [
    "check_alibi_weights",
    "check_rope",
    "check_selection_information",
    "check_shift_matrix",
]
