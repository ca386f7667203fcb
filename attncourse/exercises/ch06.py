"""Checks for chapter 06's exercises (multi-head attention and information), each an
``attncourse.exercises.engine.Exercise``: it runs the learner's function on random and edge inputs,
compares it with the course's reference and names the mistake when it recognises one.

* ``check_head_terms``             — W_O^h z_h, each head's term in the output    (Eq. 14.3.10)
* ``check_pattern_head_size``      — the least d_k that produces an attention matrix exactly
                                     (Bhojanapalli et al. 2020)
* ``check_co_information``         — I(Z1; Z2; Y) in bits, from scratch          (Eq. 14.3.11)
* ``check_marginal_contributions`` — Δ_h = I(Z_≤h; Y) − I(Z_<h; Y), from scratch (Thm. 14.3.8)
* ``check_head_importance``        — Michel et al. 2019's importance from per-example gate
                                     gradients

Each takes ``seed=`` for fresh inputs (hidden tests use another seed).
"""

from __future__ import annotations

import itertools
import math
import numbers

import torch

from ..chapters.ch06_multi_head_information.exact import (
    complementarity as _complementarity,
)
from ..chapters.ch06_multi_head_information.exact import information as _information
from ..chapters.ch06_multi_head_information.exact import (
    marginal_contributions as _marginal_contributions,
)
from ..chapters.ch06_multi_head_information.exact import (
    total_correlation as _total_correlation,
)
from ..chapters.ch06_multi_head_information.subspaces import (
    head_contributions as _head_contributions_function,
)
from ..chapters.ch06_multi_head_information.subspaces import pattern_rank as _pattern_rank_function
from ..i18n import say
from ..metrics import co_information as _co_information_function
from ..metrics import entropy as _entropy_function
from ..metrics import mutual_information as _mutual_information_function
from .engine import Case, Exercise, Label, randn

# Bound once, at import (a later assignment to a module attribute changes nothing here).
_pattern_rank = _pattern_rank_function
_head_contributions = _head_contributions_function
_PACKAGE_INFORMATION = [
    _co_information_function,
    _entropy_function,
    _mutual_information_function,
    _information,
    _complementarity,
    _marginal_contributions,
    _total_correlation,
]
DT = torch.float64
_LN2 = math.log(2.0)
INFORMATION_PRECISION = 4096  # sums of a few dozen p log p terms: ~1e-12 bits in float64
EPSILON = 1e-9  # an ε-guarded log, log2(p + ε), may use an ε up to this (the texts say so)


def _as_float64(value):
    """A Python number -> a 0-d float64 tensor; a one-element float tensor -> 0-d, its dtype kept
    (a float32 answer is then refused by name: "keep the input's dtype"); anything else
    unchanged."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return torch.tensor(float(value), dtype=DT)
    if isinstance(value, torch.Tensor) and value.numel() == 1 and value.is_floating_point():
        return value.detach().reshape(())
    return value


def _as_count(value):
    """An int (Python's or numpy's, or a one-element integer tensor) -> a 0-d int64 tensor;
    anything else unchanged."""
    if isinstance(value, bool):
        return value
    if isinstance(value, numbers.Integral):
        return torch.tensor(int(value), dtype=torch.long)
    if isinstance(value, torch.Tensor) and value.numel() == 1 and not value.is_floating_point():
        return value.detach().reshape(()).to(torch.long)
    return value


# ------------------------------------------------------------------------- 1: head terms


def _head_terms_ref(z, W_O):
    """W_O^h z_h for every head: z (B, H, T, d_h), W_O (d, d) -> (B, H, T, d); column block h of
    W_O (columns h·d_h … (h+1)·d_h − 1) multiplies head h (output = concat(z) @ W_Oᵀ)."""
    B, H, T, d_h = z.shape
    return torch.einsum("bhtk,dhk->bhtd", z, W_O.reshape(W_O.shape[0], H, d_h))


def _head_terms_variant(z, W_O, *, blocks="columns", average=False):
    B, H, T, d_h = z.shape
    d = W_O.shape[0]
    if blocks == "rows":
        W = W_O.reshape(H, d_h, d)  # (H, d_h, d): row block h
        out = torch.einsum("bhtk,hkd->bhtd", z, W)
    elif blocks == "interleaved":
        W = W_O.reshape(d, d_h, H)  # column h + H·k belongs to "head h"
        out = torch.einsum("bhtk,dkh->bhtd", z, W)
    else:
        out = _head_terms_ref(z, W_O)
    return out / H if average else out


def _head_terms_cases(g) -> list[Case]:
    """fn(z (B, H, T, d_h), W_O (d, d)) -> (B, H, T, d)."""
    cases = []
    for label, B, H, T, d_h, dtype in (
        ("B = 2, H = 4 heads of size 2, T = 3", 2, 4, 3, 2, torch.float32),
        ("B = 1, H = 3 heads of size 5, T = 4, float64", 1, 3, 4, 5, DT),
        ("H = 2 heads of size 3", 2, 2, 5, 3, torch.float32),
    ):
        d = H * d_h
        cases.append(
            Case(label, (randn(g, B, H, T, d_h, dtype=dtype), randn(g, d, d, dtype=dtype)))
        )
    cases.append(
        Case(
            "one head (H = 1): its term is the whole output concat(z) @ W_Oᵀ",
            (randn(g, 2, 1, 3, 4, dtype=DT), randn(g, 4, 4, dtype=DT)),
        )
    )
    return cases


check_head_terms = Exercise(
    _head_terms_ref,
    _head_terms_cases,
    refuse=[_head_contributions],
    diagnoses=[
        (
            "you took a block of **rows** of W_O: head h's slice of concat(z) meets the "
            "**columns** h·d_h … (h+1)·d_h − 1 of W_O, since the output is concat(z) @ W_Oᵀ",
            lambda z, W: _head_terms_variant(z, W, blocks="rows") if z.shape[1] > 1 else None,
        ),
        (
            "the columns of head h are contiguous (h·d_h … (h+1)·d_h − 1); reshaping W_O to "
            "(d, d_h, H) interleaves the heads",
            lambda z, W: (
                _head_terms_variant(z, W, blocks="interleaved")
                if z.shape[1] > 1 and z.shape[-1] > 1
                else None
            ),
        ),
        (
            "the heads' terms are added, not averaged: do not divide by H",
            lambda z, W: _head_terms_variant(z, W, average=True) if z.shape[1] > 1 else None,
        ),
    ],
)


# ------------------------------------------------------------------------- 2: pattern head size


def _pattern_size_ref(P):
    """The least d_k with softmax(Q Kᵀ / √d_k) = P exactly: rank of the row-centred log P."""
    return torch.tensor(_pattern_rank(P), dtype=torch.long)


def _rank(M):
    s = torch.linalg.svdvals(M)
    return torch.tensor(int((s > 1e-9 * max(1.0, float(s[0]))).sum()), dtype=torch.long)


def _count_hint(text=None):
    """A case hint that first says when the answer is not an int."""

    def hint(got, expected):
        if isinstance(got, float) or (isinstance(got, torch.Tensor) and got.is_floating_point()):
            return say(RETURN_INT)
        return say(text) if text else None

    hint.texts = (RETURN_INT, text)
    return hint


RETURN_INT = "return an int (a number of dimensions), not a float"


def _softmax_rows(S):
    e = torch.exp(S - S.amax(dim=-1, keepdim=True))
    return e / e.sum(dim=-1, keepdim=True)


def _pattern_cases(g) -> list[Case]:
    """fn(P (n, n) positive row-stochastic float64) -> int."""
    cases = []
    A, B = randn(g, 6, 2, dtype=DT), randn(g, 6, 2, dtype=DT)
    rows, columns = randn(g, 6, 1, dtype=DT, scale=3.0), randn(g, 1, 6, dtype=DT)
    cases.append(
        Case(
            "scores of rank 2, plus a constant per row, plus one shared row vector (6 × 6)",
            (_softmax_rows(A @ B.T + rows + columns),),
            hint=_count_hint(
                "a constant added to a row changes nothing, a vector added to every row does: "
                "the answer is 3 here"
            ),
        )
    )
    r = int(torch.randint(1, 4, (), generator=g))
    A, B = randn(g, 7, r, dtype=DT), randn(g, 7, r, dtype=DT)
    cases.append(
        Case(
            Label("scores of rank {r} (7 × 7)", r=r), (_softmax_rows(A @ B.T),), hint=_count_hint()
        )
    )
    n = int(torch.randint(5, 9, (), generator=g))
    cases.append(
        Case(
            Label("softmax of random ({n}, {n}) scores", n=n),
            (_softmax_rows(randn(g, n, n, dtype=DT)),),
            hint=_count_hint(),
        )
    )
    A, B = randn(g, 6, 2, dtype=DT), randn(g, 6, 2, dtype=DT)
    cases.append(
        Case(
            "scores of rank 2 plus a different constant in each row (6 × 6)",
            (_softmax_rows(A @ B.T + randn(g, 6, 1, dtype=DT, scale=3.0)),),
            hint=_count_hint(
                "softmax ignores a constant added to a row of scores: the answer is 2 here"
            ),
        )
    )
    m = int(torch.randint(4, 8, (), generator=g))
    eye = torch.eye(m, dtype=DT)
    cases.append(
        Case(
            Label("attend to yourself with weight 0.8, the rest evenly ({m} × {m})", m=m),
            (0.8 * eye + 0.2 / (m - 1) * (1 - eye),),
            hint=_count_hint(),
        )
    )
    cases.append(
        Case(
            "uniform weights (5 × 5): all scores equal, no dimension needed",
            (torch.full((5, 5), 0.2, dtype=DT),),
            hint=_count_hint(
                "the uniform pattern counts as d_k = 0 (the exercise's convention): its scores are "
                "all equal, so no query or key dimension is needed — the rank of the row-centred "
                "log P is 0 (singular values below 1e-9 · max(1, the largest) count as 0)"
            ),
        )
    )
    row = _softmax_rows(randn(g, 1, 6, dtype=DT))
    cases.append(
        Case(
            "every row the same distribution (6 × 6): one vector added to every row of scores",
            (row.expand(6, 6).clone(),),
            hint=_count_hint(
                "the same scores in every row are a vector added to every row: one dimension, the "
                "answer is 1 here"
            ),
        )
    )
    return cases


def _unless_uniform(wrong):
    """A diagnosis that abstains on the uniform pattern: there "at least 1" is a convention
    missed, not the mistake ``wrong`` names (the case's hint says so)."""

    def diagnosis(P):
        return None if _pattern_rank(P) == 0 else wrong(P)

    return diagnosis


def _unless_same_rows(wrong):
    """A diagnosis that abstains when every row of P is the same: removing the column means
    leaves 0 there, as any answer of 0 does (the case's hint names what is missed)."""

    def diagnosis(P):
        return None if bool((P[:1] == P).all()) else wrong(P)

    return diagnosis


def _centred(P, rows=True, columns=False):
    L = torch.log(P)
    if rows:
        L = L - L.mean(dim=1, keepdim=True)
    if columns:
        L = L - L.mean(dim=0, keepdim=True)
    return L


check_pattern_head_size = Exercise(
    _pattern_size_ref,
    _pattern_cases,
    refuse=[_pattern_rank],
    convert=_as_count,
    diagnoses=[
        (
            "you removed the **column** means: softmax normalises each row, so only a constant per "
            "row is free",
            _unless_same_rows(lambda P: _rank(_centred(P, rows=False, columns=True))),
        ),
        (
            "removing the column means as well changes the pattern: softmax(S + 1 cᵀ) ≠ "
            "softmax(S); centre the rows only",
            _unless_same_rows(lambda P: _rank(_centred(P, rows=True, columns=True))),
        ),
        (
            "that is the rank of log P itself: softmax ignores a constant added to each row of the "
            "scores, so centre each row of log P before taking the rank",
            _unless_uniform(lambda P: _rank(_centred(P, rows=False))),
        ),
        (
            "that is the rank of P; the head's scores S must satisfy softmax(S) = P, so work with "
            "log P (up to a constant per row)",
            _unless_uniform(lambda P: _rank(P)),
        ),
        (
            "that is n − 1 whatever the pattern: a generic pattern needs n − 1, but low-rank "
            "scores need fewer — take the rank of the row-centred log P",
            lambda P: torch.tensor(P.shape[0] - 1, dtype=torch.long),
        ),
    ],
)


# ------------------------------------------------------------------------- 3: co-information


def _plogp_bits(p):
    safe = torch.where(p > 0, p, torch.ones_like(p))
    return p * torch.log2(safe)


def _H(p):
    return -_plogp_bits(p).sum()


def _co_information_ref(joint):
    """I(A; B; Y) = I(A; Y) − I(A; Y | B) in bits, a 0-d float64 tensor (inclusion–exclusion)."""
    H_a, H_b, H_y = _H(joint.sum((1, 2))), _H(joint.sum((0, 2))), _H(joint.sum((0, 1)))
    H_ab, H_ay, H_by = _H(joint.sum(2)), _H(joint.sum(1)), _H(joint.sum(0))
    return H_a + H_b + H_y - H_ab - H_ay - H_by + _H(joint)


def _mi_bits(joint2):
    """I(X; Y) in bits of a 2-D table."""
    return _H(joint2.sum(1)) + _H(joint2.sum(0)) - _H(joint2)


def _table(g, *shape, zeros=0.0):
    p = torch.rand(*shape, generator=g, dtype=DT)
    if zeros:
        p = torch.where(torch.rand(*shape, generator=g, dtype=DT) < zeros, 0.0, p)
        p.view(-1)[0] = 1.0  # never all zero
    return p / p.sum()


def _rule_table(rule, sizes=(2, 2)):
    """p(z1, z2, y) for uniform independent z1, z2 and y = rule(z1, z2)."""
    outcomes = list(itertools.product(*(range(s) for s in sizes)))
    ys = [rule(*o) for o in outcomes]
    table = torch.zeros(*sizes, max(ys) + 1, dtype=DT)
    for o, y in zip(outcomes, ys):
        table[(*o, y)] += 1.0 / len(outcomes)
    return table


def _copies_table():
    table = torch.zeros(2, 2, 2, dtype=DT)
    table[0, 0, 0] = table[1, 1, 1] = 0.5
    return table


def _nan_hint(text=None):
    """A case hint that first names a dtype other than the table's float64, then NaN (0 · log 0
    not treated as 0)."""

    def hint(got, expected):
        if isinstance(got, torch.Tensor) and got.is_floating_point() and got.dtype != DT:
            return say(COMPUTED_IN, dtype=got.dtype)
        if isinstance(got, torch.Tensor) and bool(torch.isnan(got).any()):
            return say(ZERO_CELL_NAN)
        return say(text) if text else None

    hint.texts = (COMPUTED_IN, ZERO_CELL_NAN, text)
    return hint


COMPUTED_IN = "computed in {dtype}: keep the table's dtype, float64"
ZERO_CELL_NAN = "a cell with probability 0 gave NaN: count 0 · log 0 as 0"


def _guard_slack(joint):
    """What log2(p + ε) with ε ≤ EPSILON on each probability changes, in bits: a term
    p·log2(q + ε) with p ≤ q (a cell and a table it sums into) moves by at most ε/ln 2, and no
    formula of these exercises has more than 8 such terms per cell of the joint table."""
    return 8 * joint.numel() * EPSILON / _LN2


def _co_cases(g) -> list[Case]:
    """fn(joint (a, b, y) float64) -> I(Z1; Z2; Y) in bits (0-d tensor or float)."""
    return [
        Case(
            "XOR: y = z1 xor z2 (synergy, −1 bit)",
            (_rule_table(lambda a, b: a ^ b),),
            hint=_nan_hint(
                "each head alone says nothing about y, together everything: the co-information "
                "is negative (−1 bit)"
            ),
        ),
        Case("copies: z1 = z2 = y (redundancy, +1 bit)", (_copies_table(),), hint=_nan_hint()),
        Case("AND: y = z1 and z2", (_rule_table(lambda a, b: a & b),), hint=_nan_hint()),
        Case("a random (3, 2, 4) table", (_table(g, 3, 2, 4),), hint=_nan_hint()),
        Case(
            "a random (2, 3, 3) table with zeros",
            (_table(g, 2, 3, 3, zeros=0.4),),
            hint=_nan_hint(),
        ),
        Case(
            "y = (z1 + z2) mod 3 over three values each",
            (_rule_table(lambda a, b: (a + b) % 3, (3, 3)),),
            hint=_nan_hint(),
        ),
    ]


def _co_nats(joint):
    return _co_information_ref(joint) * _LN2


def _co_without_y(joint):
    return _mi_bits(joint.sum(2))


def _co_flipped(joint):
    return -_co_information_ref(joint)


def _co_doubled(joint):
    return 2 * _co_information_ref(joint)


check_co_information = Exercise(
    _co_information_ref,
    _co_cases,
    slack=_guard_slack,
    reimplements=("entropy",),
    refuse=_PACKAGE_INFORMATION,
    convert=_as_float64,
    precision=INFORMATION_PRECISION,
    diagnoses=[
        (
            "the sign is flipped: I(Z1; Z2; Y) = I(Z1; Y) − I(Z1; Y | Z2) is positive for "
            "redundancy (copies) and negative for synergy (XOR)",
            _co_flipped,
        ),
        ("the answer is in nats: use log2 (or divide by ln 2) for bits", _co_nats),
        (
            "that is I(Z1; Z2), which ignores Y (the mistake of Eq. 14.3.25): the co-information "
            "is I(Z1; Y) − I(Z1; Y | Z2)",
            _co_without_y,
        ),
        (
            "counted twice (the ordered pairs of Eq. 14.3.11): I(Z1; Z2; Y) once",
            _co_doubled,
        ),
    ],
)


# ------------------------------------------------------------------ 4: marginal contributions


def _info_first(joint, h):
    """I(Z_1..Z_h; Y) in bits, Y the last dimension of joint (|Z_1|, ..., |Z_H|, |Y|)."""
    H = joint.dim() - 1
    if h == 0:
        return torch.zeros((), dtype=joint.dtype)
    later = tuple(range(h, H))
    p = joint.sum(later) if later else joint  # (|Z_1|, ..., |Z_h|, |Y|)
    return _H(p.sum(-1)) + _H(p.sum(tuple(range(h)))) - _H(p)


def _marginal_ref(joint):
    """Δ_h = I(Z_1..Z_h; Y) − I(Z_1..Z_{h−1}; Y), h = 1..H, in bits: (H,) float64."""
    H = joint.dim() - 1
    cumulative = torch.stack([_info_first(joint, h) for h in range(H + 1)])  # (H + 1,)
    return cumulative[1:] - cumulative[:-1]


def _single_info(joint, h):
    """I(Z_h; Y) in bits (h 0-based)."""
    H = joint.dim() - 1
    others = tuple(i for i in range(H) if i != h)
    p = joint.sum(others) if others else joint  # (|Z_h|, |Y|)
    return _mi_bits(p)


def _marginal_printed(joint):
    H = joint.dim() - 1
    return torch.stack([_single_info(joint, h) - _info_first(joint, h) for h in range(H)])


def _marginal_singles(joint):
    return torch.stack([_single_info(joint, h) for h in range(joint.dim() - 1)])


def _marginal_cumulative(joint):
    return torch.stack([_info_first(joint, h) for h in range(1, joint.dim())])


def _marginal_reversed(joint):
    H = joint.dim() - 1
    if H < 2:
        return None
    flipped = joint.permute(*reversed(range(H)), H)  # heads in reverse order, Y still last
    return _marginal_ref(flipped).flip(0)


def _marginal_cases(g) -> list[Case]:
    """fn(joint (|Z_1|, ..., |Z_H|, |Y|) float64) -> (H,) float64 in bits."""
    return [
        Case(
            "three heads, a random (2, 3, 2, 3) table", (_table(g, 2, 3, 2, 3),), hint=_nan_hint()
        ),
        Case(
            "XOR, heads (z1, z2): y = z1 xor z2",
            (_rule_table(lambda a, b: a ^ b),),
            hint=_nan_hint(
                "for XOR the first head adds 0 bits and the second 1 bit (given the first)"
            ),
        ),
        Case(
            "split: y = (z1, z2) as one variable",
            (_rule_table(lambda a, b: 2 * a + b),),
            hint=_nan_hint(),
        ),
        Case("one head: a random (4, 3) table", (_table(g, 4, 3),), hint=_nan_hint()),
        Case(
            "four heads, a random (2, 2, 2, 2, 2) table with zeros",
            (_table(g, 2, 2, 2, 2, 2, zeros=0.3),),
            hint=_nan_hint(),
        ),
    ]


check_marginal_contributions = Exercise(
    _marginal_ref,
    _marginal_cases,
    slack=_guard_slack,
    reimplements=("entropy",),
    refuse=_PACKAGE_INFORMATION,
    precision=INFORMATION_PRECISION,
    diagnoses=[
        (
            "that is Eq. (14.3.27) as printed, Δ_h = I(Z_h; Y) − I(Z_<h; Y), which does not add up "
            "to I(Z_all; Y): use I(Z_≤h; Y) − I(Z_<h; Y), what head h adds given the heads before "
            "it",
            _marginal_printed,
        ),
        (
            "those are the heads' own informations I(Z_h; Y); the contribution is what head h adds "
            "given the heads before it, I(Z_≤h; Y) − I(Z_<h; Y)",
            _marginal_singles,
        ),
        (
            "those are the cumulative I(Z_1..Z_h; Y); return their successive differences",
            _marginal_cumulative,
        ),
        (
            "the heads are taken in reverse order: head h is conditioned on the heads **before** "
            "it in dimension order",
            _marginal_reversed,
        ),
        (
            "the answer is in nats: use log2 (or divide by ln 2) for bits",
            lambda j: _marginal_ref(j) * _LN2,
        ),
    ],
)


# ------------------------------------------------------------------------- 5: head importance


def _importance_ref(gate_grads):
    """Michel et al. 2019: I_h = mean_x |∂L(x)/∂ξ_h|, each layer divided by its ℓ2 norm: (L, H)."""
    importance = gate_grads.abs().mean(dim=0)  # (L, H)
    return importance / importance.norm(dim=1, keepdim=True)


def _importance_cases(g) -> list[Case]:
    """fn(gate_grads (N, L, H)) -> (L, H)."""
    cancelling = randn(g, 8, 2, 4, dtype=DT, scale=0.1)
    cancelling[:, 0, 1] = torch.tensor([1.0, -1.0] * 4, dtype=DT)  # mean 0, mean |g| = 1
    return [
        Case("N = 16 examples, L = 2 layers, H = 4 heads", (randn(g, 16, 2, 4),)),
        Case("N = 5, L = 3, H = 6, float64", (randn(g, 5, 3, 6, dtype=DT, scale=0.01),)),
        Case(
            "head (layer 0, head 1) has gradients +1 and −1 on alternate examples",
            (cancelling,),
            hint="a head whose removal raises the loss on some examples and lowers it on others "
            "is important: average |∂L/∂ξ|, not ∂L/∂ξ",
        ),
        Case("one layer, N = 32, H = 8", (randn(g, 32, 1, 8, scale=3.0),)),
    ]


def _importance_variant(g, *, reduce="abs_mean", norm="layer"):
    if reduce == "mean_abs_after":
        imp = g.mean(dim=0).abs()
    elif reduce == "square":
        imp = (g**2).mean(dim=0)
    else:
        imp = g.abs().mean(dim=0)
    if norm == "none":
        return imp
    if norm == "global":
        return imp / imp.norm()
    if norm == "head":
        return imp / imp.norm(dim=0, keepdim=True)
    if norm == "l1":
        return imp / imp.sum(dim=1, keepdim=True)
    return imp / imp.norm(dim=1, keepdim=True)


check_head_importance = Exercise(
    _importance_ref,
    _importance_cases,
    diagnoses=[
        (
            "the absolute value comes after the mean: gradients of opposite signs cancel, so a "
            "head that matters a lot on some examples looks unimportant; take |∂L(x)/∂ξ_h| per "
            "example, then the mean",
            lambda g: _importance_variant(g, reduce="mean_abs_after"),
        ),
        (
            "that is the mean squared gradient (a Fisher-style score); Michel et al. use the mean "
            "absolute gradient",
            lambda g: _importance_variant(g, reduce="square"),
        ),
        (
            "each layer must be scaled to unit ℓ2 norm (divide each row by its norm)",
            lambda g: _importance_variant(g, norm="none"),
        ),
        (
            "normalised over all layers together: divide each layer (row) by its own ℓ2 norm",
            lambda g: _importance_variant(g, norm="global") if g.shape[1] > 1 else None,
        ),
        (
            "normalised over the layers of each head (dim 0): normalise over the heads of a layer "
            "(dim 1)",
            lambda g: _importance_variant(g, norm="head"),
        ),
        (
            "divided by the sum (ℓ1 norm): use the ℓ2 norm, √(Σ_h I_h²)",
            lambda g: _importance_variant(g, norm="l1"),
        ),
    ],
)
