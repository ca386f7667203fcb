"""Chapter 10's exercise checks, in the chapter's order: one step of the online softmax
(attention in tiles: Milakov & Gimelshein 2018, FlashAttention), attention weights under a soft
mask (Eq. 14.3.43 corrected), the Gumbel-sigmoid relaxation (App. 14.3.6) and causal linear
attention (Eq. 14.3.46). Each ``check_*`` is an ``attncourse.exercises.engine.Exercise``: call it on
a function, with ``seed=`` for the hidden tests' other numbers. Each is judged on its own.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ..attention import chunked_attention, linear_attention, soft_masked_attention
from ..attention.sparse import gumbel_sigmoid
from ..chapters.ch10_efficient_gated_attention.tiles import online_softmax_step
from ..i18n import say
from .engine import Case, Exercise, float32_hint, nonfinite, randn

_where = torch.where


def _uniform(g, *shape, low=0.02, high=0.98, dtype=torch.float32):
    return (low + (high - low) * torch.rand(*shape, generator=g, dtype=torch.float64)).to(dtype)


# ------------------------------------------------------------------ 2. weights under a soft mask


def _masked_weights_ref(scores, mask):
    """alpha = m e^s / sum_j m e^s over the last dimension, 0 for a row whose mask is all 0."""
    kept = mask > 0
    logits = _where(kept, scores + torch.log(_where(kept, mask, torch.ones_like(mask))), -torch.inf)
    top = logits.amax(dim=-1, keepdim=True)
    e = torch.exp(logits - _where(torch.isfinite(top), top, torch.zeros_like(top)))
    total = e.sum(dim=-1, keepdim=True)
    return e / _where(total > 0, total, torch.ones_like(total))


def _naive_softmax(x):
    e = torch.exp(x - x.amax(dim=-1, keepdim=True))
    return e / e.sum(dim=-1, keepdim=True)


PRINTED_FORMULA = (
    "this is the source's Eq. (14.3.43) as printed, softmax(M ⊙ S): a mask value 0 turns the "
    "score into 0, and e^0 still gets weight; the mask must multiply the exponentials, "
    "m e^s / Σ m e^s = softmax(s + log m)"
)
NOT_RENORMALISED = (
    "the weights do not sum to 1: m ⊙ softmax(s) masks after normalising; divide m e^s by its "
    "own row sum"
)
MASK_IGNORED = "the mask is ignored: multiply each exp(s) by its mask value before normalising"
EMPTY_ROW = (
    "a query whose mask is all 0 must get zero weights, not NaN (0 / 0): give such a row weights 0"
)
OVERFLOW = (
    "overflow or underflow for scores of ±1000 (numerical care is the point of this case): "
    "subtract each row's largest s + log m over the kept keys before exp, so the largest term "
    "is e^0 = 1; a masked key's score must not take part in that maximum"
)


ZERO_WEIGHTS = "a row whose mask is all 0 must get weights 0"


def _empty_row_hint(got, expected):
    return say(EMPTY_ROW if nonfinite(got) else ZERO_WEIGHTS)


def _masked_weights_cases(g) -> list[Case]:
    """fn(scores (..., T, S), mask (..., T, S) in [0, 1]) -> weights (..., T, S)."""
    causal = torch.ones(5, 5).tril()  # (5, 5) a 0/1 float mask
    empty = _uniform(g, 3, 4)
    empty[int(torch.randint(3, (), generator=g))] = 0.0  # one query keeps nothing
    big = randn(g, 4, 6, scale=3.0) + 1000.0  # (4, 6) scores around 1000
    big[:, 1] -= 2000.0  # ... and some around -1000
    hard = (torch.rand(4, 6, generator=g) < 0.6).float()
    hard[:, 0] = 1.0
    hard[:, 3] = 0.0  # a masked key ...
    big[:, 3] = 3000.0  # ... with by far the largest score
    return [
        Case("a (4, 6) soft mask with values in (0, 1)", (randn(g, 4, 6), _uniform(g, 4, 6))),
        Case("a 0/1 causal mask (T = S = 5)", (randn(g, 5, 5, scale=2.0), causal)),
        Case("a (2, 3, 4, 5) batch", (randn(g, 2, 3, 4, 5), _uniform(g, 2, 3, 4, 5))),
        Case(
            "float64",
            (randn(g, 3, 7, dtype=torch.float64), _uniform(g, 3, 7, dtype=torch.float64)),
        ),
        Case("a row whose mask is all 0", (randn(g, 3, 4), empty), hint=_empty_row_hint),
        Case(
            "scores of ±1000 and a masked key with the largest score",
            (big, hard),
            hint=OVERFLOW,
        ),
    ]


def _masked_after_normalising(s, m):
    """m ⊙ softmax(s); None where a row keeps some key yet all its weights are 0 (the softmax
    sat on masked keys): those are also the zeros of an underflow, which the case's hint names."""
    weights = m * _naive_softmax(s)
    kept = (m > 0).any(dim=-1)
    if bool((kept & (weights == 0).all(dim=-1)).any()):
        return None
    return weights


check_masked_weights = Exercise(
    _masked_weights_ref,
    _masked_weights_cases,
    reimplements=("softmax",),
    refuse=[soft_masked_attention],
    diagnoses=[
        (PRINTED_FORMULA, lambda s, m: _naive_softmax(m * s)),
        (NOT_RENORMALISED, _masked_after_normalising),
        (MASK_IGNORED, lambda s, m: _naive_softmax(s)),
    ],
)


# ------------------------------------------------------------------ 3. Gumbel-sigmoid


def _gumbel_sigmoid_ref(logits, u, temperature):
    """sigmoid((logits + log u - log(1 - u)) / temperature): the binary Concrete sample."""
    return torch.sigmoid((logits + torch.log(u) - torch.log1p(-u)) / temperature)


OWN_NOISE = (
    "compare with m = sigmoid((l + log u - log(1 - u)) / temperature), computed from the u given, "
    "one number per entry (random numbers of your own give other values)"
)


def _gumbel_sigmoid_cases(g) -> list[Case]:
    """fn(logits (...), u (...) uniform in (0, 1), temperature > 0) -> sample (...) in (0, 1)."""
    cases = [
        Case("5 logits, temperature 1", (randn(g, 5), _uniform(g, 5), 1.0)),
        Case("a (3, 4) mask's logits, temperature 0.5", (randn(g, 3, 4), _uniform(g, 3, 4), 0.5)),
        Case(
            "float64, temperature 0.1 (nearly 0/1 samples)",
            (randn(g, 6, dtype=torch.float64), _uniform(g, 6, dtype=torch.float64), 0.1),
        ),
        Case(
            "temperature 5 (samples near 1/2)", (randn(g, 2, 3, scale=2.0), _uniform(g, 2, 3), 5.0)
        ),
        Case(
            "u close to 0 and to 1 (float64)",
            (
                randn(g, 4, dtype=torch.float64),
                torch.tensor([1e-9, 1e-4, 1 - 1e-4, 1 - 1e-9], dtype=torch.float64),
                0.7,
            ),
        ),
        Case(
            "logit 0 at temperature 1: the sample is u itself",
            (torch.zeros(4), _uniform(g, 4), 1.0),
        ),
    ]
    for case in cases:
        case.hint = OWN_NOISE
    return cases


check_gumbel_sigmoid = Exercise(
    _gumbel_sigmoid_ref,
    _gumbel_sigmoid_cases,
    reimplements=("softmax",),
    refuse=[gumbel_sigmoid],
    diagnoses=[
        (
            "the logistic noise has the wrong sign: it is log u - log(1 - u) (the inverse CDF "
            "of the logistic distribution); with log(1 - u) - log u a small u would keep the "
            "mask",
            lambda x, u, t: torch.sigmoid((x - torch.log(u) + torch.log1p(-u)) / t),
        ),
        (
            "the temperature multiplies: divide (logits + noise) by the temperature, so that a "
            "low temperature makes the sample nearly 0 or 1",
            lambda x, u, t: torch.sigmoid((x + torch.log(u) - torch.log1p(-u)) * t),
        ),
        (
            "no noise: sigmoid(logits / temperature) is the keep probability's relaxation, not a "
            "sample; add log u - log(1 - u)",
            lambda x, u, t: torch.sigmoid(x / t),
        ),
        (
            "one Gumbel variable -log(-log u) is not enough: the two-class Gumbel-softmax needs "
            "the difference of two Gumbels, which is logistic, log u - log(1 - u)",
            lambda x, u, t: torch.sigmoid((x - torch.log(-torch.log(u))) / t),
        ),
        (
            "g1 and g0 must be independent: built from one u (g1 from u, g0 from 1 - u) they are "
            "not, and their difference is not logistic; g1 - g0 is log u - log(1 - u)",
            lambda x, u, t: torch.sigmoid(
                (x - torch.log(-torch.log(u)) + torch.log(-torch.log1p(-u))) / t
            ),
        ),
        (
            "only the logits are divided by the temperature: divide logits + noise",
            lambda x, u, t: torch.sigmoid(x / t + torch.log(u) - torch.log1p(-u)),
        ),
    ],
)


# ------------------------------------------------------------------ 4. causal linear attention


def _elu1(x):
    return F.elu(x) + 1.0


def _causal_linear_ref(q, k, v):
    """out_i = sum_{j<=i} phi(q_i).phi(k_j) v_j / sum_{j<=i} phi(q_i).phi(k_j), phi = elu + 1."""
    kernel = (_elu1(q) @ _elu1(k).transpose(-2, -1)).tril()  # (..., T, T)
    return (kernel / kernel.sum(dim=-1, keepdim=True)) @ v


def _linear_variant(q, k, v, phi=_elu1, causal=True, normalise=True, strict=False):
    kernel = phi(q) @ phi(k).transpose(-2, -1)
    if causal:
        kernel = kernel.tril(-1 if strict else 0)
    weights = kernel / kernel.sum(dim=-1, keepdim=True) if normalise else kernel
    return weights @ v


def _exp_causal(q, k, v):
    scores = q @ k.transpose(-2, -1)  # (..., T, T)
    T = scores.shape[-1]
    keep = torch.ones(T, T, dtype=torch.bool).tril()
    scores = scores.masked_fill(~keep, -torch.inf)
    e = torch.exp(scores - scores.amax(dim=-1, keepdim=True))
    return (e / e.sum(dim=-1, keepdim=True)) @ v


NO_EPSILON = (
    "right only to about 7 digits: the text asks for no ε in the denominator (an ε of 1e-6 shows "
    "in a float64 case), and every step in the input's dtype"
)


_no_epsilon_hint = float32_hint(NO_EPSILON)


def _causal_linear_cases(g) -> list[Case]:
    """fn(q (..., T, d_k), k (..., T, d_k), v (..., T, d_v)) -> (..., T, d_v)."""
    cases = [
        Case("T = 6, d_k = 4, d_v = 3", (randn(g, 6, 4), randn(g, 6, 4), randn(g, 6, 3))),
        Case("a single position (T = 1)", (randn(g, 1, 4), randn(g, 1, 4), randn(g, 1, 2))),
        Case(
            "a (2, 3) batch of heads, T = 5",
            (randn(g, 2, 3, 5, 4), randn(g, 2, 3, 5, 4), randn(g, 2, 3, 5, 6)),
        ),
        Case(
            "float64, T = 40",
            tuple(randn(g, 40, 8, dtype=torch.float64) for _ in range(3)),
        ),
        Case("d_k = 1", (randn(g, 7, 1), randn(g, 7, 1), randn(g, 7, 2))),
    ]
    for case in cases:
        case.hint = _no_epsilon_hint
    return cases


check_causal_linear_attention = Exercise(
    _causal_linear_ref,
    _causal_linear_cases,
    reimplements=("attention",),
    refuse=[linear_attention],
    diagnoses=[
        (
            "not causal: query i may use keys j <= i only (sum over the prefix)",
            lambda q, k, v: _linear_variant(q, k, v, causal=False),
        ),
        (
            "the current position is left out: the prefix sums include j = i",
            lambda q, k, v: _linear_variant(q, k, v, strict=True) if q.shape[-2] > 1 else None,
        ),
        (
            "not normalised: divide by phi(q_i) · sum_{j<=i} phi(k_j) (Eq. 14.3.46)",
            lambda q, k, v: _linear_variant(q, k, v, normalise=False),
        ),
        (
            "no feature map: phi(x) = elu(x) + 1 keeps every kernel value positive",
            lambda q, k, v: _linear_variant(q, k, v, phi=lambda x: x),
        ),
        (
            "this is softmax attention (the weights are exp(q · k) normalised); linear attention "
            "uses phi(q) · phi(k) with phi = elu + 1",
            lambda q, k, v: _exp_causal(q, k, v),
        ),
    ],
)


# ------------------------------------------------------------------ 1. one online-softmax step


_online_step_ref = online_softmax_step  # m' = max(m, max_j s_j), l' and acc' rescaled by e^(m - m')


def _online_variant(m, l, acc, s, v, rescale_acc=True, rescale_l=True, add=True, old_max=False):  # noqa: E741
    m_new = torch.maximum(m, s.amax(dim=-1, keepdim=True))
    shift = m if old_max else m_new
    p = torch.exp(s - shift)
    alpha = torch.exp(m - m_new)
    l_new = (l * alpha if rescale_l else l) + (p.sum(dim=-1, keepdim=True) if add else 0.0)
    acc_new = (acc * alpha if rescale_acc else acc) + p @ v
    return m_new, l_new, acc_new


def _normalised(m, total, acc):
    return m, total, acc / total


def _state(g, T, d, tiles=1, dtype=torch.float32, scale=1.0):
    """A running state after ``tiles`` earlier tiles of 3 keys (tiles = 0: the start)."""
    m = torch.full((T, 1), -torch.inf, dtype=dtype)
    l = torch.zeros(T, 1, dtype=dtype)  # noqa: E741
    acc = torch.zeros(T, d, dtype=dtype)
    for _ in range(tiles):
        m, l, acc = _online_step_ref(  # noqa: E741
            m, l, acc, randn(g, T, 3, dtype=dtype, scale=scale), randn(g, 3, d, dtype=dtype)
        )
    return m, l, acc


def _online_cases(g) -> list[Case]:
    """fn(m (T, 1), l (T, 1), acc (T, d), scores (T, c), values (c, d)) -> (m', l', acc')."""
    first = _state(g, 3, 2, tiles=0)
    later = _state(g, 4, 3, tiles=2)
    low = _state(g, 3, 2, tiles=1, scale=0.1)
    m_low = low[0] + 5.0  # the running max is far above this tile's scores
    big = _state(g, 2, 3, tiles=1, scale=1.0)
    return [
        Case("the first tile (m = -inf, l = 0, acc = 0)", (*first, randn(g, 3, 4), randn(g, 4, 2))),
        Case(
            "a later tile whose scores are larger (the old sums must shrink)",
            (*later, randn(g, 4, 5, scale=2.0, shift=3.0), randn(g, 5, 3)),
        ),
        Case(
            "a tile entirely below the running max",
            (m_low, low[1], low[2], randn(g, 3, 2, scale=0.1), randn(g, 2, 2)),
        ),
        Case(
            "float64, a tile of one key",
            (
                *_state(g, 5, 4, tiles=2, dtype=torch.float64),
                randn(g, 5, 1, dtype=torch.float64),
                randn(g, 1, 4, dtype=torch.float64),
            ),
        ),
        Case(
            "scores around 1000 after a state built from scores around 0 (numerical care)",
            (*big, randn(g, 2, 4, shift=1000.0), randn(g, 4, 3)),
            hint=(
                "exp overflows at scores of 1000: exponentiate s - m' with the new running max "
                "m' = max(m, max_j s_j), never s itself"
            ),
        ),
    ]


check_online_softmax_step = Exercise(
    _online_step_ref,
    _online_cases,
    reimplements=("attention",),
    refuse=[chunked_attention],
    outputs=("m", "l", "acc"),
    diagnoses=[
        (
            "acc is not rescaled: when the running max grows from m to m', multiply the old "
            "accumulator by e^(m - m') before adding the new tile",
            lambda *a: _online_variant(*a, rescale_acc=False),
        ),
        (
            "l is not rescaled: multiply the old sum by e^(m - m') before adding the tile's sum",
            lambda *a: _online_variant(*a, rescale_l=False),
        ),
        (
            "the tile's exponentials are shifted by the old max m: shift them by the new one, "
            "m' = max(m, max_j s_j)",
            lambda *a: (
                _online_variant(*a, old_max=True) if bool(torch.isfinite(a[0]).all()) else None
            ),
        ),
        (
            "l' is missing the tile's own sum Σ_j e^(s_j - m')",
            lambda *a: _online_variant(*a, add=False),
        ),
        (
            "returned the normalised output acc' / l': keep the accumulator unnormalised and "
            "divide by l only after the last tile",
            lambda *a: _normalised(*_online_step_ref(*a)),
        ),
    ],
)


__all__ = [
    "check_causal_linear_attention",
    "check_gumbel_sigmoid",
    "check_masked_weights",
    "check_online_softmax_step",
]


# what the hints above say (``attncourse.exercises.messages``)
SENTENCES = (EMPTY_ROW, ZERO_WEIGHTS)
