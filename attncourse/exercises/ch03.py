"""Checks for chapter 03's exercises (entropy and temperature), built on ``attncourse.exercises``'
generic engine ``check_function``: each runs the learner's function on random and edge inputs,
compares it with the course's reference and names the mistake when it recognises one.

* ``check_softmax_temperature``  — softmax(s / T), from scratch           (Eq. 14.3.20)
* ``check_entropy_temperature``  — H(softmax(s / T)), stable for small T   (Eq. 14.3.17, 14.3.20)
* ``check_softmax_jacobian``     — diag(α) − α αᵀ
* ``check_cosine_temperature``   — the cosine temperature schedule        (Application 14.3.2)
* ``check_hoeffding_bound``      — log n − (Δs)²/8, the lower bound       (Thm. 14.3.5 corrected)

Each takes ``seed=`` for fresh inputs (hidden tests use another seed).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from ..attention import softmax as _softmax_function
from ..chapters.ch03_entropy_and_temperature import temperature as _temperature_module
from ..metrics import attention_entropy as _entropy_function
from .engine import SOFTMAX_BUILTINS, Case, as_tensor, check_function, generator, randn

# Bound once, at import (a later assignment to a module attribute changes nothing here).
_softmax_ref = _softmax_function
_entropy_ref = _entropy_function
_entropy_of_scores_ref = _temperature_module.entropy_of_scores
_jacobian_ref = _temperature_module.softmax_jacobian
_hoeffding_ref = _temperature_module.hoeffding_entropy_bound
_where = torch.where
_isfinite = torch.isfinite

OVERFLOW = (
    "overflow at a small temperature: s / T can be in the hundreds, and exp of that is inf "
    "(inf / inf = NaN); subtract the row max of s / T before exp"
)
TEMPERATURE_TIMES = (
    "multiplied the scores by T: the temperature divides them, softmax(s / T) (Eq. 14.3.20)"
)
TEMPERATURE_IGNORED = "the temperature is ignored: compute softmax(s / T), not softmax(s)"
WRONG_AXIS = "normalised over the wrong axis: each row (the last dimension, the keys) must sum to 1"


# ---------------------------------------------------------------------------- softmax with T


def _softmax_t_ref(scores, temperature):
    """softmax(s / T) over the last dimension: (..., n) -> (..., n)   (Eq. 14.3.20)."""
    return _softmax_ref(scores, temperature=temperature)  # (..., n)


def check_softmax_temperature(fn: Callable, *, seed: int = 0) -> None:
    """fn(scores (..., n), temperature > 0) -> softmax(scores / temperature) over the last dim.

    From scratch: no softmax built-in (nor attncourse's softmax).
    """
    __tracebackhide__ = True
    g = generator(seed)
    cases = [
        Case("5 scores at T = 1", (randn(g, 5), 1.0)),
        Case("a (4, 6) batch at T = 0.5", (randn(g, 4, 6, scale=2.0), 0.5)),
        Case("a (2, 3, 5) tensor at T = 3", (randn(g, 2, 3, 5), 3.0)),
        Case("float64 scores at T = 0.2", (randn(g, 3, 7, dtype=torch.float64), 0.2)),
        Case("T = 100 (nearly uniform)", (randn(g, 2, 4, scale=3.0), 100.0)),
        Case("equal scores (uniform at any T)", (torch.zeros(2, 5), 0.05)),
        Case("T = 0.01 (s / T in the hundreds)", (randn(g, 3, 6, scale=2.0), 0.01), hint=OVERFLOW),
        Case(
            "a tie for the largest score at T = 0.001",
            (as_tensor([[1.0, 3.0, 3.0, -2.0]]), 0.001),
            hint=OVERFLOW,
        ),
    ]
    diagnoses = [
        (TEMPERATURE_TIMES, lambda s, t: _softmax_ref(s * t)),
        (TEMPERATURE_IGNORED, lambda s, t: _softmax_ref(s)),
        (
            "divided by T²: the temperature divides the scores once",
            lambda s, t: _softmax_ref(s / t**2),
        ),
        (
            "divided by √T: the temperature divides the scores itself",
            lambda s, t: _softmax_ref(s / math.sqrt(t)),
        ),
        (WRONG_AXIS, lambda s, t: _softmax_ref(s / t, dim=0) if s.dim() > 1 else None),
        (
            "the weights do not sum to 1: divide exp(s / T) by its sum over the last dimension",
            lambda s, t: torch.exp(s / t - (s / t).amax(dim=-1, keepdim=True)),
        ),
    ]
    check_function(
        fn,
        _softmax_t_ref,
        cases,
        diagnoses=diagnoses,
        from_scratch=True,
        builtins=SOFTMAX_BUILTINS,
        references=[_softmax_ref],
    )


# ------------------------------------------------------------------------------ entropy at T

NOT_FINITE = (
    "NaN or inf at a small temperature: either exp(s / T) overflowed (subtract the row max of "
    "s / T before exp) or a weight underflowed to exactly 0 and 0·log 0 gave NaN (count 0·log 0 "
    "as 0, e.g. torch.where(p > 0, p, 1.0) inside the log)"
)


def _entropy_hint(got, expected):
    if isinstance(got, torch.Tensor) and not bool(_isfinite(got.detach()).all()):
        return NOT_FINITE
    return None


def check_entropy_temperature(fn: Callable, *, seed: int = 0) -> None:
    """fn(scores (..., n), temperature > 0) -> H(softmax(scores / T)) in nats, shape (...).

    From scratch: no softmax built-in, nor attncourse's softmax or entropy (your own functions
    from this notebook are fine).
    """
    __tracebackhide__ = True
    g = generator(seed)
    cases = [
        Case("equal scores over 4 keys (H = log 4)", (torch.zeros(4), 1.0)),
        Case("6 scores at T = 1", (randn(g, 6), 1.0)),
        Case("a (3, 5) batch at T = 0.5", (randn(g, 3, 5, scale=2.0), 0.5)),
        Case("a (2, 3, 4) tensor at T = 4", (randn(g, 2, 3, 4), 4.0)),
        Case("float64 scores at T = 2", (randn(g, 2, 8, dtype=torch.float64), 2.0)),
        Case(
            "T = 0.001 with one clear maximum (H → 0)",
            (as_tensor([[0.0, 1.0, -1.0, 0.5]]), 0.001),
            hint=_entropy_hint,
        ),
        Case(
            "T = 0.001 with a two-way tie (H → log 2)",
            (as_tensor([[2.0, 2.0, -1.0, 0.0, 1.0]]), 0.001),
            hint=_entropy_hint,
        ),
        Case(
            "T = 0.01 and scores up to ±5 (s / T in the hundreds)",
            (randn(g, 4, 7, scale=2.5), 0.01),
            hint=_entropy_hint,
        ),
    ]

    def plogp(p):
        return _where(
            p > 0, p * torch.log(_where(p > 0, p, torch.ones_like(p))), torch.zeros_like(p)
        )

    diagnoses = [
        (TEMPERATURE_IGNORED, lambda s, t: _entropy_of_scores_ref(s, 1.0)),
        (TEMPERATURE_TIMES, lambda s, t: _entropy_of_scores_ref(s * t, 1.0)),
        (
            "used log2: entropy in nats uses the natural log (torch.log)",
            lambda s, t: _entropy_of_scores_ref(s, t) / math.log(2),
        ),
        ("the sign is flipped: H = −Σ α log α ≥ 0", lambda s, t: -_entropy_of_scores_ref(s, t)),
        (
            "returned −α log α for each key: sum it over the last dimension",
            lambda s, t: -plogp(_softmax_ref(s / t)),
        ),
        (
            "averaged −α log α over the keys: entropy is the sum, not the mean",
            lambda s, t: -plogp(_softmax_ref(s / t)).mean(dim=-1),
        ),
    ]
    check_function(
        fn,
        _entropy_of_scores_ref,
        cases,
        diagnoses=diagnoses,
        from_scratch=True,
        builtins=SOFTMAX_BUILTINS,
        references=[_softmax_ref, _entropy_ref, _entropy_of_scores_ref],
    )


# ------------------------------------------------------------------------------ the Jacobian


def check_softmax_jacobian(fn: Callable, *, seed: int = 0) -> None:
    """fn(weights (..., n)) -> (..., n, n) = diag(α) − α αᵀ, the Jacobian ∂α/∂s of
    α = softmax(s).
    """
    __tracebackhide__ = True
    g = generator(seed)
    cases = [
        Case("weights over 3 keys", (_softmax_ref(randn(g, 3)),)),
        Case("a (2, 4) batch of weights", (_softmax_ref(randn(g, 2, 4, scale=2.0)),)),
        Case("a (2, 3, 5) tensor of weights", (_softmax_ref(randn(g, 2, 3, 5)),)),
        Case("float64 weights", (_softmax_ref(randn(g, 6, dtype=torch.float64)),)),
        Case("uniform weights over 4 keys (J = I/4 − 1/16)", (torch.full((4,), 0.25),)),
        Case("one-hot weights (saturated: J = 0)", (as_tensor([0.0, 1.0, 0.0]),)),
    ]
    diag = torch.diag_embed
    outer = lambda a: a.unsqueeze(-1) * a.unsqueeze(-2)  # noqa: E731
    diagnoses = [
        (
            "the sign is flipped: J = diag(α) − α αᵀ (its diagonal α_i(1 − α_i) is ≥ 0)",
            lambda a: outer(a) - diag(a),
        ),
        (
            "missing −α αᵀ: the Jacobian of softmax is diag(α) − α αᵀ, not diag(α)",
            lambda a: diag(a),
        ),
        ("missing diag(α): the Jacobian of softmax is diag(α) − α αᵀ", lambda a: -outer(a)),
        (
            "only the diagonal α_i(1 − α_i): the off-diagonal entries are −α_i α_j",
            lambda a: diag(a - a * a),
        ),
        (
            "α αᵀ must be the outer product (an (n, n) matrix per row of weights), e.g. "
            "a.unsqueeze(-1) * a.unsqueeze(-2)",
            lambda a: diag(a) - (a * a).sum(-1)[..., None, None],
        ),
    ]
    check_function(
        fn,
        _jacobian_ref,
        cases,
        diagnoses=diagnoses,
        references=[_jacobian_ref],
        from_scratch=True,
        builtins=frozenset(),
    )


# ------------------------------------------------------------------------- cosine schedule


def _cosine_ref(steps, total_steps, t_start, t_min):
    """T(t) = T_min + (T_0 − T_min)(1 + cos(π t / N)) / 2   (Application 14.3.2): (K,) -> (K,)."""
    return t_min + (t_start - t_min) * (1 + torch.cos(math.pi * steps / total_steps)) / 2  # (K,)


def check_cosine_temperature(fn: Callable, *, seed: int = 0) -> None:
    """fn(steps (K,) float tensor, total_steps N, t_start T_0, t_min) -> (K,) temperatures, with
    T(0) = T_0 and T(N) = T_min (Application 14.3.2)."""
    __tracebackhide__ = True
    g = generator(seed)
    n = int(torch.randint(50, 200, (1,), generator=g))
    t0, tmin = (
        1.0 + 4 * float(torch.rand((), generator=g)),
        0.05 + 0.2 * float(torch.rand((), generator=g)),
    )
    cases = [
        Case(
            f"every step t = 0 … {n}, N = {n}, T_0 = {t0:.3f}, T_min = {tmin:.3f}",
            (torch.arange(n + 1, dtype=torch.float64), n, t0, tmin),
        ),
        Case("t = 0 (must give T_0)", (as_tensor([0.0]), 10, 2.0, 0.5)),
        Case("t = N (must give T_min)", (as_tensor([10.0]), 10, 2.0, 0.5)),
        Case("t = N/2 (halfway: (T_0 + T_min)/2)", (as_tensor([25.0]), 50, 3.0, 1.0)),
        Case("a few float32 steps", (as_tensor([3.0, 17.0, 41.0, 80.0]), 80, 1.0, 0.1)),
        Case(
            "a warming schedule, T_0 < T_min",
            (torch.arange(0, 21, 4, dtype=torch.float64), 20, 0.2, 2.0),
        ),
    ]
    diagnoses = [
        (
            "T_0 and T_min are swapped: the schedule must start at T_0 (t = 0) and end at T_min "
            "(t = N)",
            lambda t, N, a, b: _cosine_ref(t, N, b, a),
        ),
        (
            "missing the / 2: (1 + cos) runs from 2 to 0, so halve it to run from 1 to 0",
            lambda t, N, a, b: b + (a - b) * (1 + torch.cos(math.pi * t / N)),
        ),
        (
            "missing the 1 +: cos runs from 1 to −1, so (1 + cos(π t / N)) / 2 runs from 1 to 0",
            lambda t, N, a, b: b + (a - b) * torch.cos(math.pi * t / N) / 2,
        ),
        (
            "a full period cos(2π t / N) returns to T_0 at the end: use cos(π t / N)",
            lambda t, N, a, b: _cosine_ref(2 * t, N, a, b),
        ),
        (
            "a linear schedule: use the cosine, T_min + (T_0 − T_min)(1 + cos(π t / N)) / 2",
            lambda t, N, a, b: a + (b - a) * t / N,
        ),
        (
            "shifted by one step: the schedule starts at t = 0 (T(0) = T_0), not t = 1",
            lambda t, N, a, b: _cosine_ref(t + 1, N, a, b),
        ),
    ]
    check_function(fn, _cosine_ref, cases, diagnoses=diagnoses)


# ---------------------------------------------------------------------- Hoeffding lower bound


def check_hoeffding_bound(fn: Callable, *, seed: int = 0) -> None:
    """fn(scores (..., n)) -> (...) = log n − (max s − min s)² / 8, the lower bound on
    H(softmax(s)).
    """
    __tracebackhide__ = True
    g = generator(seed)
    cases = [
        Case("5 scores", (randn(g, 5),)),
        Case("a (3, 4) batch of scores", (randn(g, 3, 4, scale=2.0),)),
        Case("a (2, 3, 6) tensor of scores", (randn(g, 2, 3, 6),)),
        Case("float64 scores", (randn(g, 2, 9, dtype=torch.float64),)),
        Case("equal scores (bound = log n)", (torch.full((2, 7), 3.0),)),
        Case("two scores 4 apart (bound = log 2 − 2)", (as_tensor([[0.0, 4.0]]),)),
    ]
    rng = lambda s: s.amax(-1) - s.amin(-1)  # noqa: E731
    n = lambda s: s.shape[-1]  # noqa: E731
    diagnoses = [
        (
            "used log2 n: entropies here are in nats, so log n is the natural log",
            lambda s: math.log2(n(s)) - rng(s) ** 2 / 8,
        ),
        (
            "divided by 4 instead of 8 (Hoeffding: log E e^{λ(X−EX)} ≤ λ²(b − a)²/8)",
            lambda s: math.log(n(s)) - rng(s) ** 2 / 4,
        ),
        ("the score range must be squared: (Δs)² / 8", lambda s: math.log(n(s)) - rng(s) / 8),
        (
            "added the term: the bound is log n MINUS (Δs)²/8",
            lambda s: math.log(n(s)) + rng(s) ** 2 / 8,
        ),
        (
            "Δs is the range max s − min s, not the standard deviation",
            lambda s: math.log(n(s)) - s.std(-1) ** 2 / 8,
        ),
        (
            "Δs is the range of each row (over the last dimension), not of the whole tensor",
            lambda s: math.log(n(s)) - (s.amax() - s.amin()) ** 2 / 8,
        ),
        (
            "n is the number of keys, the size of the last dimension",
            lambda s: math.log(s.numel()) - rng(s) ** 2 / 8,
        ),
    ]
    check_function(fn, _hoeffding_ref, cases, diagnoses=diagnoses)


__all__ = [
    "check_cosine_temperature",
    "check_entropy_temperature",
    "check_hoeffding_bound",
    "check_softmax_jacobian",
    "check_softmax_temperature",
]
