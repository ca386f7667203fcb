"""Checks for chapter 02's exercises (the seq2seq bottleneck and alignment), each an
``attncourse.exercises.engine.Exercise``:

* ``check_additive_scores``      — Bahdanau's e_j = v_aᵀ tanh(W_a s + U_a h_j)      (source 003)
* ``check_local_m_weights``      — Luong's local-m alignment: softmax inside |j − t| ≤ D
                                   (positions counted from 0), from scratch
* ``check_mutual_information``   — I(X; Y) in bits from a joint table               (source 003)
* ``check_bottleneck_bits``      — Σ_i Fano bound: bits a decoder must have received

Each compares the learner's function with the course's reference on random and edge inputs and
names the mistake when the output equals a known wrong variant. ``seed=`` gives fresh inputs.
The two information checks allow an ε-guarded log, log(p + ε) with ε ≤ ``EPSILON`` (the
exercise text says so): each allows for the most such a guard can change its answer.
The answers are computed from plain tensor operations: a call into the course's package (its
``AdditiveAttention`` / ``LuongAttention``, its softmax, its information functions) is refused.
"""

from __future__ import annotations

import functools
import math

import torch

from .. import metrics as _metrics
from ..attention import alignment as _alignment
from ..attention import softmax as _softmax_function
from ..chapters.ch02_seq2seq_bottleneck import evaluation as _seq2seq
from ..i18n import say
from .engine import Case, Exercise, float32_hint, randn

# Bound once, at import (a later assignment to a module attribute changes nothing here).
_softmax_ref = _softmax_function
_mi_ref = _seq2seq.mutual_information_bits
_fano_ref = _seq2seq.fano_information_bound
_bits_ref = _seq2seq.transmitted_bits
# Refused while an answer runs, however it is reached (the source scan refuses every use of the
# course's package too; this also covers code it cannot read).
_ALIGNMENT_MODULES = [
    _alignment.AdditiveAttention.score,
    _alignment.AdditiveAttention.forward,
    _alignment.LuongAttention.score,
    _alignment.LuongAttention.forward,
    _alignment._align,
]
_PACKAGE_INFORMATION = [
    _metrics.entropy,
    _metrics.mutual_information,
    _seq2seq.mutual_information_bits,
    _seq2seq.entropy_bits,
    _seq2seq.fano_information_bound,
    _seq2seq.transmitted_bits,
    _seq2seq.binary_entropy_bits,
    _seq2seq.joint_table,
]
_LN2 = math.log(2.0)
EPSILON = 1e-12  # an ε-guarded log, log(p + ε), may use an ε up to this (the texts say so)


randn = functools.partial(randn, dtype=torch.float64)  # this chapter's checks work in float64


def _as_float64(value):
    """A Python number -> a 0-d float64 tensor; a 1-element tensor -> 0-d, its dtype kept (a
    float32 answer to float64 inputs is told to keep the inputs' dtype); anything else as it is."""
    if isinstance(value, torch.Tensor):
        if value.numel() != 1:
            return value  # compared as it is: the shape message says what is wrong
        return value.detach().reshape(())
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return torch.tensor(float(value), dtype=torch.float64)
    return value


def _first_hint(*hints):
    """A case hint that gives the first of ``hints`` with something to say."""

    def hint(got, expected):
        return next((h for h in (f(got, expected) for f in hints) if h), None)

    return hint


FLOAT32_PRECISION = (
    "right only to float32's precision (about 7 digits): part of the computation ran in float32 "
    "(a number made a tensor without dtype=torch.float64, as torch.tensor(0.5), the log of an "
    "integer tensor, or .float()); keep every step in float64 — or, if you guard the log as "
    "log(p + ε), ε is too large: use ε ≤ {epsilon}, or leave out the zero terms"
)
# right to float32's precision but not float64's: part of the answer was computed in float32
_float32_hint = float32_hint(FLOAT32_PRECISION, epsilon=f"{EPSILON:g}")


# ------------------------------------------------------------------------- 1: additive scores


def _additive_ref(s, H, W_a, U_a, v_a):
    """e_j = v_aᵀ tanh(W_a s + U_a h_j): s (B, d_s), H (B, S, d_h), W_a (k, d_s), U_a (k, d_h),
    v_a (k,) -> (B, S).
    """
    hidden = torch.tanh((s @ W_a.T).unsqueeze(1) + H @ U_a.T)  # (B, S, k)
    return hidden @ v_a  # (B, S)


def _additive_case(g, B, S, d_s, d_h, k, dtype=torch.float64, scale=1.0):
    return (
        randn(g, B, d_s, dtype=dtype, scale=scale),
        randn(g, B, S, d_h, dtype=dtype, scale=scale),
        randn(g, k, d_s, dtype=dtype, scale=1 / math.sqrt(d_s)),
        randn(g, k, d_h, dtype=dtype, scale=1 / math.sqrt(d_h)),
        randn(g, k, dtype=dtype),
    )


def _additive_cases(g) -> list[Case]:
    """fn(s (B, d_s), H (B, S, d_h), W_a (k, d_s), U_a (k, d_h), v_a (k,)) -> scores e (B, S),
    e[b, j] = v_aᵀ tanh(W_a s_b + U_a H[b, j]) (Bahdanau et al. 2015; source 003, additive score).

    The scores only: no softmax. From scratch: attncourse's AdditiveAttention / LuongAttention are
    refused.
    """
    return [
        Case("B = S = 3, d_s = d_h = k = 4", _additive_case(g, 3, 3, 4, 4, 4)),
        Case(
            "B = 3, S = 7, d_s = 6, d_h = 8, k = 5 (all sizes differ)",
            _additive_case(g, 3, 7, 6, 8, 5),
            on_error=(
                "check the shapes: W_a (k, d_s) multiplies s, U_a (k, d_h) multiplies each h_j, "
                "so use s @ W_a.T (B, k) and H @ U_a.T (B, S, k), then broadcast over S"
            ),
        ),
        Case("one source position (S = 1)", _additive_case(g, 2, 1, 3, 3, 3)),
        Case("float32 inputs", _additive_case(g, 2, 6, 5, 5, 5, dtype=torch.float32)),
        Case("large inputs (tanh saturates)", _additive_case(g, 1, 4, 3, 3, 3, scale=10.0)),
    ]


def _additive_diagnoses():
    def no_tanh(s, H, W, U, v):
        return ((s @ W.T).unsqueeze(1) + H @ U.T) @ v

    def tanh_each(s, H, W, U, v):
        return (torch.tanh(s @ W.T).unsqueeze(1) + torch.tanh(H @ U.T)) @ v

    def swapped(s, H, W, U, v):
        if W.shape != U.shape or s.shape[-1] != H.shape[-1]:
            return None
        return _additive_ref(s, H, U, W, v)

    def transposed(s, H, W, U, v):
        if W.shape[0] != W.shape[1] or U.shape[0] != U.shape[1]:
            return None
        return _additive_ref(s, H, W.T, U.T, v)

    def w_transposed(s, H, W, U, v):
        return _additive_ref(s, H, W.T, U, v) if W.shape[0] == W.shape[1] else None

    def u_transposed(s, H, W, U, v):
        return _additive_ref(s, H, W, U.T, v) if U.shape[0] == U.shape[1] else None

    def normalised(s, H, W, U, v):
        return _softmax_ref(_additive_ref(s, H, W, U, v), dim=-1)

    def dot_only(s, H, W, U, v):
        if s.shape[-1] != H.shape[-1]:
            return None
        return (H @ s.unsqueeze(-1)).squeeze(-1)

    def not_broadcast(s, H, W, U, v):  # (B, k) + (B, S, k) lines B up with S
        return torch.tanh(s @ W.T + H @ U.T) @ v if s.shape[0] == H.shape[1] else None

    def no_v(s, H, W, U, v):
        return torch.tanh((s @ W.T).unsqueeze(1) + H @ U.T).sum(-1)

    def v_inside(s, H, W, U, v):
        return torch.tanh(((s @ W.T).unsqueeze(1) + H @ U.T) @ v)

    return [
        (
            "missing the tanh: e_j = v_aᵀ tanh(W_a s + U_a h_j), the non-linearity makes it a "
            "one-hidden-layer network",
            no_tanh,
        ),
        (
            "tanh was applied to W_a s and U_a h_j separately; add them first, then tanh the sum",
            tanh_each,
        ),
        (
            "W_a and U_a are swapped: W_a multiplies the decoder state s, "
            "U_a each encoder state h_j",
            swapped,
        ),
        (
            "the weight matrices are used transposed: W_a s is s @ W_a.T for a row vector s",
            transposed,
        ),
        (
            "W_a is used transposed: W_a s is s @ W_a.T for a batch of row vectors s (B, d_s)",
            w_transposed,
        ),
        (
            "U_a is used transposed: U_a h_j is H @ U_a.T for the rows h_j of H (B, S, d_h)",
            u_transposed,
        ),
        (
            "returned the softmax of the scores: this exercise asks for the scores e_j themselves",
            normalised,
        ),
        (
            "that is the dot score sᵀh_j (Luong); "
            "Bahdanau's additive score is v_aᵀ tanh(W_a s + U_a h_j)",
            dot_only,
        ),
        (
            "W_a s_b was added along the source positions instead of the batch: s @ W_a.T is "
            "(B, k); make it (B, 1, k) (`.unsqueeze(1)` or `[:, None]`) so that it broadcasts "
            "over the S positions of H @ U_a.T (B, S, k)",
            not_broadcast,
        ),
        (
            "missing v_a: the score is v_aᵀ tanh(...), a weighted sum over the k hidden units "
            "(`tanh(...) @ v_a`), not their plain sum",
            no_v,
        ),
        (
            "tanh was applied after v_a: first tanh(W_a s + U_a h_j) (k numbers), then the dot "
            "product with v_a",
            v_inside,
        ),
    ]


check_additive_scores = Exercise(
    _additive_ref, _additive_cases, diagnoses=_additive_diagnoses(), refuse=_ALIGNMENT_MODULES
)


# ------------------------------------------------------------------------- 2: local-m weights


def _window(S, t, D, lo=None, hi=None):
    j = torch.arange(S)
    lo = -D if lo is None else lo
    hi = D if hi is None else hi
    return ((j - t) >= lo) & ((j - t) <= hi)  # (S,)


def _local_m_ref(scores, t, D):
    """α_j = softmax over {j : |j − t| ≤ D} of the scores, 0 outside: scores (..., S) ->
    (..., S).
    """
    return _softmax_ref(scores, dim=-1, mask=_window(scores.shape[-1], t, D))


WINDOW_OVERFLOW = "overflow for scores of 1000: subtract the window's max before exp"
WINDOW_MAX_ONLY = (
    "subtract the largest score inside the window: the largest of all positions (1000, outside "
    "it here) makes every exp in the window 0, and a smaller shift (a minimum, a mean) leaves "
    "exp(800), which overflows"
)


def _local_m_cases(g) -> list[Case]:
    """fn(scores (..., S), t, D) -> weights (..., S): Luong et al.'s local-m alignment for target
    step t (p_t = t): softmax of the scores over the window |j − t| ≤ D, exactly 0 outside.
    Positions count from 0: j = 0..S-1, the first target step is t = 0.

    From scratch: no softmax built-in (nor attncourse's softmax).
    """
    return [
        Case("8 scores, t = 4, D = 2", (randn(g, 8), 4, 2)),
        Case("a (3, 10) batch, t = 5, D = 3", (randn(g, 3, 10, scale=2.0), 5, 3)),
        Case(
            "the window cut by the start: t = 0, D = 2",
            (randn(g, 2, 6), 0, 2),
            on_error=(
                "the window is cut by the start here (t − D < 0): a negative slice start counts "
                "from the end (`scores[..., -2:3]` is empty), so start the window at "
                "max(0, t − D), or build it as a mask (j − t).abs() <= D"
            ),
        ),
        Case("the window cut by the end: t = 6, D = 3", (randn(g, 2, 7), 6, 3)),
        Case("D = 0: all weight on position t", (randn(g, 2, 5), 2, 0)),
        Case("a window wider than the sequence: plain softmax", (randn(g, 4, 5), 1, 10)),
        Case(
            "scores of 1000 inside the window",
            (torch.tensor([[1000.0, 999.0, 1001.0, 3.0, -1000.0]]), 1, 1),
            hint=lambda got, exp: (
                say(WINDOW_OVERFLOW)
                if isinstance(got, torch.Tensor) and not bool(torch.isfinite(got).all())
                else None
            ),
        ),
        Case(
            "1000 outside the window (first row), 800 inside it (second row)",
            (torch.tensor([[0.0, 1.0, 2.0, 1000.0, 5.0], [0.0, 800.0, 3.0, -5.0, 2.0]]), 1, 1),
            hint=lambda got, exp: (
                say(WINDOW_MAX_ONLY)
                if isinstance(got, torch.Tensor) and not bool(torch.isfinite(got).all())
                else None
            ),
        ),
        Case("float32 scores", (randn(g, 2, 9, dtype=torch.float32), 3, 2)),
    ]


def _local_m_diagnoses():
    def not_renormalised(s, t, D):
        return _softmax_ref(s, dim=-1) * _window(s.shape[-1], t, D)

    def strict(s, t, D):
        return _softmax_ref(s, dim=-1, mask=_window(s.shape[-1], t, D - 1)) if D > 0 else None

    def right_only(s, t, D):
        return _softmax_ref(s, dim=-1, mask=_window(s.shape[-1], t, D, lo=0))

    def left_only(s, t, D):
        return _softmax_ref(s, dim=-1, mask=_window(s.shape[-1], t, D, hi=0))

    def global_(s, t, D):
        return _softmax_ref(s, dim=-1)

    def wide(s, t, D):
        return _softmax_ref(s, dim=-1, mask=_window(s.shape[-1], t, D + 1))

    def end_excluded(s, t, D):  # scores[..., t - D : t + D]
        return _softmax_ref(s, dim=-1, mask=_window(s.shape[-1], t, D, hi=D - 1)) if D > 0 else None

    def centred_after(s, t, D):  # t counted from 1
        return _softmax_ref(s, dim=-1, mask=_window(s.shape[-1], t + 1, D))

    def centred_before(s, t, D):
        return _softmax_ref(s, dim=-1, mask=_window(s.shape[-1], t - 1, D))

    def negative_start(s, t, D):  # scores[..., t - D : t + D + 1] with t - D < 0
        if t - D >= 0:
            return None
        inside = torch.zeros(s.shape[-1], dtype=torch.bool)
        inside[t - D : t + D + 1] = True
        return _softmax_ref(s, dim=-1, mask=inside) if bool(inside.any()) else None

    def wrong_axis(s, t, D):  # normalised over the first axis (rows), not the keys
        if s.dim() < 2:
            return None
        masked = s.masked_fill(~_window(s.shape[-1], t, D), float("-inf"))
        e = torch.exp(masked - masked.amax(dim=0, keepdim=True))
        return e / e.sum(dim=0, keepdim=True)

    return [
        (
            "softmax over all positions, then zeroed outside the window: "
            "the weights no longer sum to 1; take the softmax over the window's positions only",
            not_renormalised,
        ),
        ("the window is |j − t| < D: it must include both ends, |j − t| ≤ D", strict),
        ("the window is |j − t| ≤ D + 1: one position too wide on each side", wide),
        (
            "the window only reaches forward (t ≤ j ≤ t + D): it is centred, t − D ≤ j ≤ t + D",
            right_only,
        ),
        (
            "the window only reaches back (t − D ≤ j ≤ t): it is centred, t − D ≤ j ≤ t + D",
            left_only,
        ),
        ("no window: that is global attention; local-m only reads |j − t| ≤ D", global_),
        (
            "the window stops at t + D − 1: a slice's end is excluded, so the window "
            "t − D ≤ j ≤ t + D is scores[..., t − D : t + D + 1]",
            end_excluded,
        ),
        (
            "the window is centred at t + 1: positions count from 0, so the window is "
            "t − D ≤ j ≤ t + D around position t itself",
            centred_after,
        ),
        (
            "the window is centred at t − 1: it is t − D ≤ j ≤ t + D, around position t itself",
            centred_before,
        ),
        (
            "near the start, t − D < 0 and a negative slice start counts from the end of the "
            "sequence: start the window at max(0, t − D)",
            negative_start,
        ),
        (
            "the weights are normalised over the wrong axis: take the max and the sum over the "
            "last dimension (the S positions, dim=-1), one softmax per row",
            wrong_axis,
        ),
    ]


check_local_m_weights = Exercise(
    _local_m_ref,
    _local_m_cases,
    diagnoses=_local_m_diagnoses(),
    reimplements=("softmax",),
    refuse=_ALIGNMENT_MODULES,
)


# ------------------------------------------------------------------------- 3: mutual information


def _mi_tensor(joint):
    return torch.tensor(_mi_ref(joint), dtype=torch.float64)


def _table(g, rows, cols, zeros=0.0):
    p = torch.rand(rows, cols, generator=g, dtype=torch.float64)
    if zeros:
        p = p * (torch.rand(rows, cols, generator=g, dtype=torch.float64) > zeros)
        p[0, 0] += 0.1  # never all zero
    return p / p.sum()


def _h(p):
    nz = p[p > 0]
    return -(nz * nz.log2()).sum()


NAN_MI = (
    "a cell with p(x, y) = 0 gave NaN (log 0 = -inf and 0 · (-inf) = NaN; where p(y) = 0 the "
    "ratio itself is 0/0): leave out the cells where p(x, y) = 0 (0 log 0 = 0)"
)


def _nan_hint_mi(got, expected):
    if isinstance(got, torch.Tensor) and bool(torch.isnan(got).any()):
        return say(NAN_MI)
    return None


def _mi_slack(joint):
    """The most an ε-guard (ε ≤ EPSILON) can change I(X; Y) in bits: log2(p + ε) moves a term
    p·log2 p by at most ε/ln 2, and log2(p(x)p(y) + ε) a term p·log2(p(x)p(y)) by at most
    ε·p/(p(x)p(y))/ln 2; an answer from three guarded entropies moves each of their terms by at
    most ε/ln 2."""
    p = joint.detach().double()
    q = p.sum(1, keepdim=True) * p.sum(0, keepdim=True)  # (|X|, |Y|) p(x) p(y)
    nz = p > 0
    ratio = float((p[nz] / q[nz]).sum())
    terms = p.shape[0] + p.shape[1] + 2 * p.numel()
    return EPSILON * (terms + ratio) / _LN2


def _with_zero_column(table, column):
    """``table`` with ``column`` set to 0, normalised again (its [0, 0] cell stays positive)."""
    table = table.clone()
    table[:, column] = 0.0
    return table / table.sum()


def _mi_cases(g) -> list[Case]:
    """fn(joint (|X|, |Y|) float64, non-negative, sums to 1) -> I(X; Y) in **bits** (a float or
    a 0-d tensor).

    I(X; Y) = Σ_{x,y} p(x, y) log2 [p(x, y) / (p(x) p(y))], with 0 log 0 = 0 (an ε-guarded log
    with ε ≤ EPSILON passes). From scratch: attncourse's information functions are refused.
    """
    V = 4
    copy = torch.eye(V, dtype=torch.float64) / V  # Y = X, uniform: log2 V bits
    px, py = (
        torch.rand(3, generator=g, dtype=torch.float64),
        torch.rand(5, generator=g, dtype=torch.float64),
    )
    independent = (px / px.sum())[:, None] * (py / py.sum())[None, :]  # 0 bits
    many_to_one = torch.zeros(8, 2, dtype=torch.float64)
    many_to_one[torch.arange(8), torch.arange(8) % 2] = 1 / 8  # Y = X mod 2: 1 bit
    return [
        Case(
            "Y = X, 4 equally likely values (2 bits)",
            (copy,),
            hint=_first_hint(_nan_hint_mi, _float32_hint),
        ),
        Case("a random (4, 4) table", (_table(g, 4, 4),), hint=_float32_hint),
        Case("independent X, Y (0 bits)", (independent,), hint=_float32_hint),
        Case("Y = X mod 2 over 8 values (1 bit)", (many_to_one,), hint=_float32_hint),
        Case(
            "a random (3, 6) table with zeros, one y never seen (a column of zeros)",
            (_with_zero_column(_table(g, 3, 6, zeros=0.4), 2),),
            hint=_first_hint(_nan_hint_mi, _float32_hint),
        ),
        Case(
            "a single x (0 bits)",
            (torch.full((1, 4), 0.25, dtype=torch.float64),),
            hint=_float32_hint,
        ),
    ]


def _mi_diagnoses():
    def nats(joint):
        return _mi_tensor(joint) * _LN2

    def joint_entropy(joint):
        return _h(joint)

    def swapped(joint):
        if joint.shape[0] != joint.shape[1]:
            return None
        ratio = joint / (joint.sum(0)[:, None] * joint.sum(1)[None, :])
        nz = joint > 0
        return (joint[nz] * ratio[nz].log2()).sum()

    def h_x(joint):
        return _h(joint.sum(1))

    def sum_of_entropies(joint):
        return _h(joint.sum(1)) + _h(joint.sum(0)) + _h(joint)

    def not_outer(joint):  # p(x) (|X|,) times p(y) (|Y|,) without a new axis
        if joint.shape[0] != joint.shape[1]:
            return None
        ratio = joint / (joint.sum(1) * joint.sum(0))
        nz = joint > 0
        return (joint[nz] * ratio[nz].log2()).sum()

    def sign_flipped(joint):
        return -_mi_tensor(joint)

    def unweighted(joint):
        ratio = joint / (joint.sum(1, keepdim=True) * joint.sum(0, keepdim=True))
        return ratio[joint > 0].log2().sum()

    return [
        ("the answer is in nats: use log2 (or divide by ln 2) for bits", nats),
        ("that is the joint entropy H(X, Y); I(X; Y) = H(X) + H(Y) − H(X, Y)", joint_entropy),
        (
            "the marginals are swapped: p(x) sums over y (joint.sum(1)), "
            "p(y) over x (joint.sum(0))",
            swapped,
        ),
        ("that is H(X); the information Y carries about X also needs H(X | Y) subtracted", h_x),
        ("H(X, Y) must be subtracted: I(X; Y) = H(X) + H(Y) − H(X, Y)", sum_of_entropies),
        (
            "p(x) p(y) must be the outer product, a (|X|, |Y|) table: joint.sum(1) and "
            "joint.sum(0) are both 1-D, so give them the axis they lost (keepdim=True, or "
            "[:, None] and [None, :])",
            not_outer,
        ),
        (
            "the sign is flipped: I(X; Y) = Σ p(x, y) log2 [p(x, y) / (p(x) p(y))] ≥ 0",
            sign_flipped,
        ),
        (
            "missing the weight p(x, y): I(X; Y) sums p(x, y) · log2 [p(x, y) / (p(x) p(y))], "
            "not the logs alone",
            unweighted,
        ),
    ]


check_mutual_information = Exercise(
    _mi_tensor,
    _mi_cases,
    diagnoses=_mi_diagnoses(),
    refuse=_PACKAGE_INFORMATION,
    convert=_as_float64,
    slack=_mi_slack,
)


# ------------------------------------------------------------------- 4: bits through the bottleneck


def _bits_tensor(accuracy, num_tokens):
    return torch.tensor(_bits_ref(accuracy, num_tokens), dtype=torch.float64)


def _fano_sum(
    accuracy,
    num_tokens,
    log=math.log2,
    error=True,
    extra=True,
    reduce=sum,
    entropy_log=None,
    entropy_sign=-1.0,
    first=None,
    second=None,
):
    """Σ_i [log V − h(p_i) − p_i log(V − 1)] and its mistakes: ``entropy_log`` the log of h,
    ``entropy_sign`` the sign h enters with, ``first`` / ``second`` the numbers whose logs stand
    where log V / log(V − 1) belong."""
    entropy_log = log if entropy_log is None else entropy_log
    first = num_tokens if first is None else first
    second = num_tokens - 1 if second is None else second
    terms = []
    for a in accuracy.tolist():
        p = 1.0 - a if error else a
        h = sum(-q * entropy_log(q) for q in (p, 1.0 - p) if q > 0)
        terms.append(log(first) + entropy_sign * h - (p * log(second) if extra else 0.0))
    return torch.tensor(float(reduce(terms)), dtype=torch.float64)


NAN_BITS = "NaN at accuracy 1 (or 0): p log p with p = 0 must count as 0"


def _nan_hint(got, expected):
    if isinstance(got, torch.Tensor) and bool(torch.isnan(got).any()):
        return say(NAN_BITS)
    return None


_bits_hint = _first_hint(_nan_hint, _float32_hint)


def _bits_slack(accuracy, num_tokens):
    """The most an ε-guard (ε ≤ EPSILON) can change the bound: per position, log2(p + ε) moves
    each of h's two terms by at most ε/ln 2, and clamping p into [ε, 1 − ε] moves h by at most
    ε·(log2(1/ε) + 2) and p·log2(V − 1) by ε·log2(V − 1)."""
    per_position = EPSILON * (2 * math.log2(1 / EPSILON) + math.log2(num_tokens) + 4)
    return accuracy.numel() * per_position


def _bits_cases(g) -> list[Case]:
    """fn(position_accuracy (n,) float64 in [0, 1], num_tokens V) -> bits (a float or 0-d tensor):
    Σ_i [log2 V − h(p_i) − p_i log2(V − 1)], p_i = 1 − accuracy_i the error rate at position i and
    h the binary entropy in bits (0 log 0 = 0; an ε-guarded log with ε ≤ EPSILON passes): Fano's
    lower bound on I(X; Y) ≤ I(X; C) ≤ H(C).

    Every term is ≥ 0 (a KL divergence from the uniform distribution, 0 only at chance accuracy
    1/V), so the reference's clipping at 0 only removes round-off: the sum as written and the
    clipped sum agree for every accuracy, below chance too.
    """
    return [
        Case(
            "5 positions, V = 20",
            (torch.rand(5, generator=g, dtype=torch.float64) * 0.5 + 0.5, 20),
            hint=_bits_hint,
        ),
        Case(
            "perfect accuracy at 10 positions, V = 20 (10 log2 20 bits)",
            (torch.ones(10, dtype=torch.float64), 20),
            hint=_bits_hint,
        ),
        Case(
            "chance accuracy 1/V everywhere (0 bits)",
            (torch.full((6,), 0.1, dtype=torch.float64), 10),
            hint=_bits_hint,
        ),
        Case(
            "30 positions of decreasing accuracy, V = 20",
            (torch.linspace(1.0, 0.05, 30, dtype=torch.float64), 20),
            hint=_bits_hint,
        ),
        Case(
            "binary tokens (V = 2)",
            (torch.tensor([0.9, 0.75, 0.5], dtype=torch.float64), 2),
            hint=_bits_hint,
        ),
        Case(
            "accuracies below chance 1/V, down to 0 (each term stays ≥ 0), V = 20",
            (
                torch.cat(
                    [
                        torch.tensor([0.0, 0.05], dtype=torch.float64),
                        torch.rand(4, generator=g, dtype=torch.float64) * 0.05,
                    ]
                ),
                20,
            ),
            hint=_bits_hint,
        ),
    ]


_BITS_DIAGNOSES = [
    ("the answer is in nats: use log2 for bits", lambda a, V: _fano_sum(a, V, log=math.log)),
    (
        "used the accuracy as p: p_i is the error rate, 1 − accuracy_i",
        lambda a, V: _fano_sum(a, V, error=False),
    ),
    (
        "missing the term p log2(V − 1): an error can be any of the V − 1 wrong tokens",
        lambda a, V: _fano_sum(a, V, extra=False),
    ),
    (
        "averaged over positions: the bound on I(X; Y) is the SUM over positions",
        lambda a, V: _fano_sum(a, V, reduce=lambda t: sum(t) / len(t)),
    ),
    (
        "the last term is p log2 V: an error is one of the V − 1 OTHER tokens, p log2(V − 1)",
        lambda a, V: _fano_sum(a, V, second=V),
    ),
    (
        "log2 V and log2(V − 1) are swapped: the bound is log2 V − h(p) − p log2(V − 1)",
        lambda a, V: _fano_sum(a, V, first=V - 1, second=V),
    ),
    (
        "h(p) was added: Fano's bound subtracts it, log2 V − h(p) − p log2(V − 1)",
        lambda a, V: _fano_sum(a, V, entropy_sign=1.0),
    ),
    (
        "h(p) is in nats while log2 V is in bits: use log2 in the binary entropy too",
        lambda a, V: _fano_sum(a, V, entropy_log=math.log),
    ),
]


check_bottleneck_bits = Exercise(
    _bits_tensor,
    _bits_cases,
    diagnoses=_BITS_DIAGNOSES,
    refuse=_PACKAGE_INFORMATION,
    convert=_as_float64,
    slack=_bits_slack,
)


__all__ = [
    "check_additive_scores",
    "check_bottleneck_bits",
    "check_local_m_weights",
    "check_mutual_information",
]


# what the hints above say (``attncourse.exercises.messages``)
SENTENCES = (FLOAT32_PRECISION, WINDOW_OVERFLOW, WINDOW_MAX_ONLY, NAN_MI, NAN_BITS)
