"""Checks for chapter 03's exercises (entropy and temperature), each an
``attncourse.exercises.engine.Exercise``: it runs the learner's function on random and edge inputs,
compares it with the course's reference and names the mistake when it recognises one.

* ``check_softmax_temperature``  — softmax(s / T), from scratch           (Eq. 14.3.20)
* ``check_entropy_temperature``  — H(softmax(s / T)), stable for small T   (Eq. 14.3.17, 14.3.20)
  (the learner's function takes ``softmax_t=``, and the check passes ``plain_softmax_t``)
* ``check_softmax_jacobian``     — diag(α) − α αᵀ
* ``check_cosine_temperature``   — the cosine temperature schedule        (Application 14.3.2)
* ``check_hoeffding_bound``      — log n − (Δs)²/8, the lower bound       (Thm. 14.3.5 corrected)

Each takes ``seed=`` for fresh inputs (hidden tests use another seed). Each is judged on its own:
the entropy's check hands the learner's function a softmax with temperature (``softmax_t=``),
never the learner's answer to the softmax exercise.
"""

from __future__ import annotations

import math

import torch

from ..attention import softmax as _softmax_function
from ..chapters.ch03_entropy_and_temperature import temperature as _temperature_module
from ..i18n import say
from .engine import Case, Exercise, Label, as_tensor, float32_hint, randn

# Bound once, at import (a later assignment to a module attribute changes nothing here).
_softmax_ref = _softmax_function

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
FLOAT32_CONSTANT = (
    "right only to float32's precision (about 7 digits): a constant was made a float32 tensor "
    "(torch.tensor(math.pi) or torch.tensor(float(n)) without a dtype); use Python floats "
    "(math.pi, math.log(n)) or give the tensor the input's dtype: float64 inputs are checked "
    "to float64's precision"
)
_float32_hint = float32_hint(FLOAT32_CONSTANT)


# ---------------------------------------------------------------------------- softmax with T


def _softmax_t_ref(scores, temperature):
    """softmax(s / T) over the last dimension: (..., n) -> (..., n)   (Eq. 14.3.20)."""
    return _softmax_ref(scores, temperature=temperature)  # (..., n)


def _scores_over_t(scores, temperature, **_) -> float:
    """The magnitude the answer is computed at: the scores divided by the temperature."""
    return float(scores.abs().max()) / temperature


def _softmax_t_cases(g) -> list[Case]:
    """fn(scores (..., n), temperature > 0) -> softmax(scores / temperature) over the last dim."""
    top = 3 * float(torch.rand((), generator=g))  # the tied maximum of the T = 0.001 case
    return [
        Case("5 scores at T = 1", (randn(g, 5), 1.0)),
        Case("a (4, 6) batch at T = 0.5", (randn(g, 4, 6, scale=2.0), 0.5)),
        Case("a (2, 3, 5) tensor at T = 3", (randn(g, 2, 3, 5), 3.0)),
        Case("float64 scores at T = 0.2", (randn(g, 3, 7, dtype=torch.float64), 0.2)),
        Case("T = 100 (nearly uniform)", (randn(g, 2, 4, scale=3.0), 100.0)),
        Case("equal scores (uniform at any T)", (torch.zeros(2, 5), 0.05)),
        Case("T = 0.01 (s / T in the hundreds)", (randn(g, 3, 6, scale=2.0), 0.01), hint=OVERFLOW),
        Case(
            "a tie for the largest score at T = 0.001",
            (as_tensor([[top - 2.0, top, top, top - 5.0]]), 0.001),
            hint=OVERFLOW,
        ),
    ]


check_softmax_temperature = Exercise(
    _softmax_t_ref,
    _softmax_t_cases,
    reimplements=("softmax",),
    scale=_scores_over_t,
    diagnoses=[
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
    ],
)


# ------------------------------------------------------------------------------ entropy at T


def plain_softmax_t(scores, temperature):
    """softmax(s / T) over the last dimension in plain tensor operations, as the softmax exercise
    asks for: what the entropy check hands the learner's function as ``softmax_t``, so that
    exercise is judged on its own. (..., n) -> (..., n)."""
    z = scores / temperature  # (..., n)
    e = torch.exp(z - z.amax(dim=-1, keepdim=True))  # (..., n), the largest is exp(0) = 1
    return e / e.sum(dim=-1, keepdim=True)


def _entropy_t_ref(scores, temperature, softmax_t=None):
    """H(softmax(s / T)) in nats: (..., n) -> (...)   (Eq. 14.3.17, 14.3.20)."""
    return _entropy_of_scores_ref(scores, temperature)  # (...)


NOT_FINITE = (
    "NaN or inf at a small temperature: either exp(s / T) overflowed (subtract the row max of "
    "s / T before exp) or a weight underflowed to exactly 0 and 0·log 0 gave NaN (count 0·log 0 "
    "as 0, e.g. torch.where(p > 0, p, 1.0) inside the log)"
)


CANCELLATION = (
    "digits lost at a small temperature: z = s / T runs into the thousands, where a float32 "
    "number keeps about 4 decimals, so a term of the size of z (Σ α z, log Σ e^z) or a weight "
    "computed from such terms carries a rounding error larger than the allowance; shift first, "
    "u = z − max z (the entropy is unchanged), and compute from u: log Σ e^u − Σ α u, or "
    "−Σ α log α with α = softmax_t(scores, temperature)"
)


EPSILON = 1e-9  # an ε-guarded log, log(α + ε), may use an ε up to this (the text says so)


def _entropy_slack(scores, temperature, **_):
    """What log(α + ε) with ε ≤ EPSILON changes: α·log(1 + ε/α) ≤ ε for each of the n terms."""
    return scores.shape[-1] * EPSILON


def _entropy_hint(small_temperature: bool):
    """Name a NaN, lost digits at a small T, or an ε-guard too large to pass."""

    def hint(got, expected):
        if isinstance(got, torch.Tensor) and not bool(_isfinite(got.detach()).all()):
            return say(NOT_FINITE)
        if small_temperature:
            return say(CANCELLATION)
        if (
            isinstance(got, torch.Tensor)
            and got.shape == expected.shape
            and got.dtype == expected.dtype  # else the check names the dtype
        ):
            off = float((got.detach().double() - expected.double()).abs().max())
            if off < 1e-3:
                return say(GUARD_TOO_LARGE, off=f"{off:.1e}", epsilon=f"{EPSILON:g}")
        return None

    return hint


GUARD_TOO_LARGE = (
    "off by at most {off}, more than an ε-guard of {epsilon} explains: log(α + ε) shifts each "
    "term by up to ε, so use ε ≤ {epsilon}, or skip the zero weights with torch.where(α > 0, ...)"
)


def _entropy_t_cases(g) -> list[Case]:
    """fn(scores (..., n), temperature > 0, softmax_t=plain_softmax_t) -> H(softmax(scores / T))
    in nats, shape (...)."""
    one = randn(g, 4)  # a clear maximum unless two draws tie: they do not
    tie = randn(g, 5)
    tie[1] = tie[0] = tie.max() + 1.0  # a two-way tie for the maximum
    given = {"softmax_t": plain_softmax_t}
    cases = [
        Case("equal scores over 4 keys (H = log 4)", (torch.zeros(4), 1.0), given),
        Case("6 scores at T = 1", (randn(g, 6), 1.0), given),
        Case("a (3, 5) batch at T = 0.5", (randn(g, 3, 5, scale=2.0), 0.5), given),
        Case("a (2, 3, 4) tensor at T = 4", (randn(g, 2, 3, 4), 4.0), given),
        Case("float64 scores at T = 2", (randn(g, 2, 8, dtype=torch.float64), 2.0), given),
        Case("T = 0.001 with one clear maximum (H → 0)", (one[None], 0.001), given),
        Case("T = 0.001 with a two-way tie (H → log 2)", (tie[None], 0.001), given),
        Case(
            "T = 0.01 and scores up to ±5 (s / T in the hundreds)",
            (randn(g, 4, 7, scale=2.5), 0.01),
            given,
        ),
    ]
    for number, case in enumerate(cases):
        case.hint = _entropy_hint(small_temperature=number >= 5)
    return cases


def _plogp(p):
    return _where(p > 0, p * torch.log(_where(p > 0, p, torch.ones_like(p))), torch.zeros_like(p))


check_entropy_temperature = Exercise(
    _entropy_t_ref,
    _entropy_t_cases,
    reimplements=("softmax", "entropy"),
    refuse=[_softmax_ref, _entropy_of_scores_ref],
    scale=_scores_over_t,
    slack=_entropy_slack,
    diagnoses=[
        (TEMPERATURE_IGNORED, lambda s, t, **_: _entropy_of_scores_ref(s, 1.0)),
        (TEMPERATURE_TIMES, lambda s, t, **_: _entropy_of_scores_ref(s * t, 1.0)),
        (
            "used log2: entropy in nats uses the natural log (torch.log)",
            lambda s, t, **_: _entropy_of_scores_ref(s, t) / math.log(2),
        ),
        (
            "the sign is flipped: H = −Σ α log α ≥ 0",
            lambda s, t, **_: -_entropy_of_scores_ref(s, t),
        ),
        (
            "returned −α log α for each key: sum it over the last dimension",
            lambda s, t, **_: -_plogp(_softmax_ref(s / t)),
        ),
        (
            "averaged −α log α over the keys: entropy is the sum, not the mean",
            lambda s, t, **_: -_plogp(_softmax_ref(s / t)).mean(dim=-1),
        ),
    ],
)


# ------------------------------------------------------------------------------ the Jacobian


def _jacobian_cases(g) -> list[Case]:
    """fn(weights (..., n)) -> (..., n, n) = diag(α) − α αᵀ, the Jacobian ∂α/∂s of
    α = softmax(s).
    """
    return [
        Case("weights over 3 keys", (_softmax_ref(randn(g, 3)),)),
        Case("a (2, 4) batch of weights", (_softmax_ref(randn(g, 2, 4, scale=2.0)),)),
        Case("a (2, 3, 5) tensor of weights", (_softmax_ref(randn(g, 2, 3, 5)),)),
        Case("float64 weights", (_softmax_ref(randn(g, 6, dtype=torch.float64)),)),
        Case("uniform weights over 4 keys (J = I/4 − 1/16)", (torch.full((4,), 0.25),)),
        Case(
            "one-hot weights (saturated: J = 0)",
            (torch.eye(3)[int(torch.randint(3, (), generator=g))],),
        ),
    ]


def _outer(a):
    return a.unsqueeze(-1) * a.unsqueeze(-2)  # (..., n, n)


_diag = torch.diag_embed

check_softmax_jacobian = Exercise(
    _jacobian_ref,
    _jacobian_cases,
    reimplements=("autograd", "softmax"),
    diagnoses=[
        (
            "the sign is flipped: J = diag(α) − α αᵀ (its diagonal α_i(1 − α_i) is ≥ 0)",
            lambda a: _outer(a) - _diag(a),
        ),
        (
            "missing −α αᵀ: the Jacobian of softmax is diag(α) − α αᵀ, not diag(α)",
            lambda a: _diag(a),
        ),
        ("missing diag(α): the Jacobian of softmax is diag(α) − α αᵀ", lambda a: -_outer(a)),
        (
            "only the diagonal α_i(1 − α_i): the off-diagonal entries are −α_i α_j",
            lambda a: _diag(a - a * a),
        ),
        (
            "α αᵀ must be the outer product (an (n, n) matrix per row of weights), e.g. "
            "a.unsqueeze(-1) * a.unsqueeze(-2)",
            lambda a: _diag(a) - (a * a).sum(-1)[..., None, None],
        ),
    ],
)


# ------------------------------------------------------------------------- cosine schedule


def _cosine_ref(steps, total_steps, t_start, t_min):
    """T(t) = T_min + (T_0 − T_min)(1 + cos(π t / N)) / 2   (Application 14.3.2): (K,) -> (K,)."""
    return t_min + (t_start - t_min) * (1 + torch.cos(math.pi * steps / total_steps)) / 2  # (K,)


def _cosine_cases(g) -> list[Case]:
    """fn(steps (K,) float tensor, total_steps N, t_start T_0, t_min) -> (K,) temperatures, with
    T(0) = T_0 and T(N) = T_min (Application 14.3.2)."""
    n = int(torch.randint(50, 200, (1,), generator=g))
    t0, tmin = (
        1.0 + 4 * float(torch.rand((), generator=g)),
        0.05 + 0.2 * float(torch.rand((), generator=g)),
    )
    return [
        Case(
            Label(
                "every step t = 0 … {n}, N = {n}, T_0 = {t0}, T_min = {tmin}",
                n=n,
                t0=f"{t0:.3f}",
                tmin=f"{tmin:.3f}",
            ),
            (torch.arange(n + 1, dtype=torch.float64), n, t0, tmin),
            hint=_float32_hint,
        ),
        Case("t = 0 (must give T_0)", (as_tensor([0.0]), 10, 2.0, 0.5)),
        Case("t = N (must give T_min)", (as_tensor([10.0]), 10, 2.0, 0.5)),
        Case("t = N/2 (halfway: (T_0 + T_min)/2)", (as_tensor([25.0]), 50, 3.0, 1.0)),
        Case("a few float32 steps", (as_tensor([3.0, 17.0, 41.0, 80.0]), 80, 1.0, 0.1)),
        Case(
            "a warming schedule, T_0 < T_min",
            (torch.arange(0, 21, 4, dtype=torch.float64), 20, 0.2, 2.0),
            hint=_float32_hint,
        ),
    ]


check_cosine_temperature = Exercise(
    _cosine_ref,
    _cosine_cases,
    refuse=[_temperature_module.cosine_temperature],
    diagnoses=[
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
    ],
)


# ---------------------------------------------------------------------- Hoeffding lower bound


def _hoeffding_cases(g) -> list[Case]:
    """fn(scores (..., n)) -> (...) = log n − (max s − min s)² / 8, the lower bound on
    H(softmax(s)).
    """
    gap = 1 + 4 * float(torch.rand((), generator=g))
    return [
        Case("5 scores", (randn(g, 5),)),
        Case("a (3, 4) batch of scores", (randn(g, 3, 4, scale=2.0),)),
        Case("a (2, 3, 6) tensor of scores", (randn(g, 2, 3, 6),)),
        Case("float64 scores", (randn(g, 2, 9, dtype=torch.float64),), hint=_float32_hint),
        Case("equal scores (bound = log n)", (torch.full((2, 7), gap),)),
        Case(
            Label("two scores {gap} apart (bound = log 2 − Δs²/8)", gap=f"{gap:.3f}"),
            (as_tensor([[0.0, gap]]),),
        ),
    ]


def _range(s):
    return s.amax(-1) - s.amin(-1)  # (...)


def _n(s):
    return s.shape[-1]


check_hoeffding_bound = Exercise(
    _hoeffding_ref,
    _hoeffding_cases,
    diagnoses=[
        (
            "used log2 n: entropies here are in nats, so log n is the natural log",
            lambda s: math.log2(_n(s)) - _range(s) ** 2 / 8,
        ),
        (
            "divided by 4 instead of 8 (Hoeffding: log E e^{λ(X−EX)} ≤ λ²(b − a)²/8)",
            lambda s: math.log(_n(s)) - _range(s) ** 2 / 4,
        ),
        ("the score range must be squared: (Δs)² / 8", lambda s: math.log(_n(s)) - _range(s) / 8),
        (
            "added the term: the bound is log n MINUS (Δs)²/8",
            lambda s: math.log(_n(s)) + _range(s) ** 2 / 8,
        ),
        (
            "Δs is the range max s − min s, not the standard deviation",
            lambda s: math.log(_n(s)) - s.std(-1) ** 2 / 8,
        ),
        (
            "Δs is the range of each row (over the last dimension), not of the whole tensor",
            lambda s: math.log(_n(s)) - (s.amax() - s.amin()) ** 2 / 8,
        ),
        (
            "n is the number of keys, the size of the last dimension",
            lambda s: math.log(s.numel()) - _range(s) ** 2 / 8,
        ),
    ],
)


__all__ = [
    "check_cosine_temperature",
    "check_entropy_temperature",
    "check_hoeffding_bound",
    "check_softmax_jacobian",
    "check_softmax_temperature",
]


# what the hints above say (``attncourse.exercises.messages``)
SENTENCES = (NOT_FINITE, CANCELLATION, GUARD_TOO_LARGE)
