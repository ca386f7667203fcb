"""Checks for chapter 02's exercises (the seq2seq bottleneck and alignment), built on
``attncourse.exercises.check_function``:

* ``check_additive_scores``      — Bahdanau's e_j = v_aᵀ tanh(W_a s + U_a h_j)      (source 003)
* ``check_local_m_weights``      — Luong's local-m alignment: softmax inside |j − t| ≤ D,
                                   from scratch
* ``check_mutual_information``   — I(X; Y) in bits from a joint table               (source 003)
* ``check_bottleneck_bits``      — Σ_i Fano bound: bits a decoder must have received

Each compares the learner's function with the course's reference on random and edge inputs and
names the mistake when the output equals a known wrong variant. ``seed=`` gives fresh inputs.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import torch

from ..attention import softmax as _softmax_function
from ..attention.alignment import AdditiveAttention as _Additive
from ..attention.alignment import LuongAttention as _Luong
from ..attention.alignment import _align as _align_function
from ..chapters.ch02_seq2seq_bottleneck import evaluation as _seq2seq
from .engine import SOFTMAX_BUILTINS, Case, Refused, check_function, generator, randn

# Bound once, at import (a later assignment to a module attribute changes nothing here).
_softmax_ref = _softmax_function
_mi_ref = _seq2seq.mutual_information_bits
_fano_ref = _seq2seq.fano_information_bound
_bits_ref = _seq2seq.transmitted_bits
_ALIGNMENT = {
    "AdditiveAttention.score": _Additive.score,
    "AdditiveAttention.forward": _Additive.forward,
    "LuongAttention.score": _Luong.score,
    "LuongAttention.forward": _Luong.forward,
    "alignment._align": _align_function,
}
_PACKAGE_INFORMATION = [
    _seq2seq.mutual_information_bits,
    _seq2seq.entropy_bits,
    _seq2seq.fano_information_bound,
    _seq2seq.transmitted_bits,
    _seq2seq.binary_entropy_bits,
    _seq2seq.joint_table,
]
_LN2 = math.log(2.0)


randn = functools.partial(randn, dtype=torch.float64)  # this chapter's checks work in float64


def _as_float64(value):
    """A float, a 0-d tensor or a 1-element tensor -> a 0-d float64 tensor (None stays None)."""
    if value is None:
        return None
    if isinstance(value, torch.Tensor):
        if value.numel() != 1:
            return value  # compared as it is: the shape message says what is wrong
        return value.detach().reshape(()).to(torch.float64)
    if isinstance(value, (int, float)):
        return torch.tensor(float(value), dtype=torch.float64)
    return value


def _refused_alignment(*args, **kwargs):
    raise __import__("attncourse.guard", fromlist=["guard"]).BuiltinCalledError(
        "attncourse's "
        + __import__("sys")._getframe().f_code.co_name
        + " was called: this exercise asks you "
        "to compute the alignment yourself, from plain tensor operations"
    )


def _refuse_alignment() -> Refused:
    """While active, the package's alignment modules (``AdditiveAttention`` and ``LuongAttention``:
    their ``score`` and ``forward``) raise ``BuiltinCalledError``."""
    return Refused(_ALIGNMENT, _refused_alignment)


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


def check_additive_scores(fn: Callable, *, seed: int = 0) -> None:
    """fn(s (B, d_s), H (B, S, d_h), W_a (k, d_s), U_a (k, d_h), v_a (k,)) -> scores e (B, S),
    e[b, j] = v_aᵀ tanh(W_a s_b + U_a H[b, j]) (Bahdanau et al. 2015; source 003, additive score).

    The scores only: no softmax. From scratch: attncourse's AdditiveAttention / LuongAttention are
    refused.
    """
    __tracebackhide__ = True
    g = generator(seed)
    cases = [
        Case("B = 2, S = 5, d_s = d_h = k = 4", _additive_case(g, 2, 5, 4, 4, 4)),
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

    def normalised(s, H, W, U, v):
        return _softmax_ref(_additive_ref(s, H, W, U, v), dim=-1)

    def dot_only(s, H, W, U, v):
        if s.shape[-1] != H.shape[-1]:
            return None
        return (H @ s.unsqueeze(-1)).squeeze(-1)

    diagnoses = [
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
            "returned the softmax of the scores: this exercise asks for the scores e_j themselves",
            normalised,
        ),
        (
            "that is the dot score sᵀh_j (Luong); "
            "Bahdanau's additive score is v_aᵀ tanh(W_a s + U_a h_j)",
            dot_only,
        ),
    ]
    with _refuse_alignment():
        check_function(
            fn,
            _additive_ref,
            cases,
            name=getattr(fn, "__name__", None),
            diagnoses=diagnoses,
            from_scratch=True,
            builtins=frozenset(),
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


def check_local_m_weights(fn: Callable, *, seed: int = 0) -> None:
    """fn(scores (..., S), t, D) -> weights (..., S): Luong et al.'s local-m alignment for target
    step t (p_t = t): softmax of the scores over the window |j − t| ≤ D, exactly 0 outside.

    From scratch: no softmax built-in (nor attncourse's softmax).
    """
    __tracebackhide__ = True
    g = generator(seed)
    cases = [
        Case("8 scores, t = 4, D = 2", (randn(g, 8), 4, 2)),
        Case("a (3, 10) batch, t = 5, D = 3", (randn(g, 3, 10, scale=2.0), 5, 3)),
        Case("the window cut by the start: t = 0, D = 2", (randn(g, 2, 6), 0, 2)),
        Case("the window cut by the end: t = 6, D = 3", (randn(g, 2, 7), 6, 3)),
        Case("D = 0: all weight on position t", (randn(g, 2, 5), 2, 0)),
        Case("a window wider than the sequence: plain softmax", (randn(g, 4, 5), 1, 10)),
        Case(
            "scores of 1000 inside the window",
            (torch.tensor([[1000.0, 999.0, 1001.0, 3.0, -1000.0]]), 1, 1),
            hint=lambda got, exp: (
                "overflow for scores of 1000: subtract the window's max before exp"
                if isinstance(got, torch.Tensor) and not bool(torch.isfinite(got).all())
                else None
            ),
        ),
        Case("float32 scores", (randn(g, 2, 9, dtype=torch.float32), 3, 2)),
    ]

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

    diagnoses = [
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
    ]
    with _refuse_alignment():
        check_function(
            fn,
            _local_m_ref,
            cases,
            diagnoses=diagnoses,
            from_scratch=True,
            builtins=SOFTMAX_BUILTINS,
            references=[_softmax_function],
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


def check_mutual_information(fn: Callable, *, seed: int = 0) -> None:
    """fn(joint (|X|, |Y|) float64, non-negative, sums to 1) -> I(X; Y) in **bits** (a float or
    a 0-d tensor).

    I(X; Y) = Σ_{x,y} p(x, y) log2 [p(x, y) / (p(x) p(y))], with 0 log 0 = 0. From scratch:
    attncourse's information functions are refused.
    """
    __tracebackhide__ = True
    g = generator(seed)
    V = 4
    copy = torch.eye(V, dtype=torch.float64) / V  # Y = X, uniform: log2 V bits
    px, py = (
        torch.rand(3, generator=g, dtype=torch.float64),
        torch.rand(5, generator=g, dtype=torch.float64),
    )
    independent = (px / px.sum())[:, None] * (py / py.sum())[None, :]  # 0 bits
    many_to_one = torch.zeros(8, 2, dtype=torch.float64)
    many_to_one[torch.arange(8), torch.arange(8) % 2] = 1 / 8  # Y = X mod 2: 1 bit
    cases = [
        Case(
            "Y = X, 4 equally likely values (2 bits)",
            (copy,),
            hint=lambda got, exp: (
                "log of 0 gives -inf and 0 · (-inf) = NaN: leave out the cells where p(x, y) = 0 "
                "(0 log 0 = 0)"
                if isinstance(got, torch.Tensor) and bool(torch.isnan(got).any())
                else None
            ),
        ),
        Case("a random (4, 4) table", (_table(g, 4, 4),)),
        Case("independent X, Y (0 bits)", (independent,)),
        Case("Y = X mod 2 over 8 values (1 bit)", (many_to_one,)),
        Case("a random (3, 6) table with zeros", (_table(g, 3, 6, zeros=0.4),)),
        Case("a single x (0 bits)", (torch.full((1, 4), 0.25, dtype=torch.float64),)),
    ]

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

    diagnoses = [
        ("the answer is in nats: use log2 (or divide by ln 2) for bits", nats),
        ("that is the joint entropy H(X, Y); I(X; Y) = H(X) + H(Y) − H(X, Y)", joint_entropy),
        (
            "the marginals are swapped: p(x) sums over y (joint.sum(1)), "
            "p(y) over x (joint.sum(0))",
            swapped,
        ),
        ("that is H(X); the information Y carries about X also needs H(X | Y) subtracted", h_x),
        ("H(X, Y) must be subtracted: I(X; Y) = H(X) + H(Y) − H(X, Y)", sum_of_entropies),
    ]
    name = getattr(fn, "__name__", "your function")
    encoded = [(m, w) for m, w in diagnoses]
    check_function(
        lambda joint: _as_float64(fn(joint)),
        _mi_tensor,
        cases,
        name=name,
        diagnoses=encoded,
        from_scratch=True,
        builtins=frozenset(),
        references=_PACKAGE_INFORMATION,
        atol=1e-8,
        rtol=1e-6,
    )


# ------------------------------------------------------------------- 4: bits through the bottleneck


def _bits_tensor(accuracy, num_tokens):
    return torch.tensor(_bits_ref(accuracy, num_tokens), dtype=torch.float64)


def _fano_sum(accuracy, num_tokens, log=math.log2, error=True, extra=True, reduce=sum):
    terms = []
    for a in accuracy.tolist():
        p = 1.0 - a if error else a
        h = sum(-q * log(q) for q in (p, 1.0 - p) if q > 0)
        terms.append(log(num_tokens) - h - (p * log(num_tokens - 1) if extra else 0.0))
    return torch.tensor(float(reduce(terms)), dtype=torch.float64)


def check_bottleneck_bits(fn: Callable, *, seed: int = 0) -> None:
    """fn(position_accuracy (n,) float64 in [0, 1], num_tokens V) -> bits (a float or 0-d tensor):
    Σ_i [log2 V − h(p_i) − p_i log2(V − 1)], p_i = 1 − accuracy_i the error rate at position i and
    h the binary entropy in bits (0 log 0 = 0): Fano's lower bound on I(X; Y) ≤ I(X; C) ≤ H(C).
    """
    __tracebackhide__ = True
    g = generator(seed)

    def nan_hint(got, exp):
        if isinstance(got, torch.Tensor) and bool(torch.isnan(got).any()):
            return "NaN at accuracy 1 (or 0): p log p with p = 0 must count as 0"
        return None

    cases = [
        Case(
            "5 positions, V = 20",
            (torch.rand(5, generator=g, dtype=torch.float64) * 0.5 + 0.5, 20),
            hint=nan_hint,
        ),
        Case(
            "perfect accuracy at 10 positions, V = 20 (10 log2 20 bits)",
            (torch.ones(10, dtype=torch.float64), 20),
            hint=nan_hint,
        ),
        Case(
            "chance accuracy 1/V everywhere (0 bits)",
            (torch.full((6,), 0.1, dtype=torch.float64), 10),
            hint=nan_hint,
        ),
        Case(
            "30 positions of decreasing accuracy, V = 20",
            (torch.linspace(1.0, 0.05, 30, dtype=torch.float64), 20),
            hint=nan_hint,
        ),
        Case(
            "binary tokens (V = 2)",
            (torch.tensor([0.9, 0.75, 0.5], dtype=torch.float64), 2),
            hint=nan_hint,
        ),
    ]
    diagnoses = [
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
    ]
    check_function(
        lambda a, V: _as_float64(fn(a, V)),
        _bits_tensor,
        cases,
        name=getattr(fn, "__name__", None),
        diagnoses=diagnoses,
        from_scratch=True,
        builtins=frozenset(),
        references=_PACKAGE_INFORMATION,
        atol=1e-8,
        rtol=1e-6,
    )


__all__ = [
    "check_additive_scores",
    "check_bottleneck_bits",
    "check_local_m_weights",
    "check_mutual_information",
]
