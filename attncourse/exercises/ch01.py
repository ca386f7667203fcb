"""Chapter 01's exercise checks: the weighted average, softmax, entropy, scaled scores, masked
attention and a self-attention layer (source 000 Eq. 14.3.1-14.3.4, Def. 14.3.3); softmax, entropy,
masked attention and the layer from scratch. Each ``check_*`` is an
``attncourse.exercises.engine.Exercise``: call it on a function, with ``seed=`` for the hidden
tests' other numbers. Each is judged on its own: the layer's check hands the learner's function
the course's attention (``attend=``), never the learner's answer to another exercise.
"""

from __future__ import annotations

import math

import torch

from ..attention import dot_product as _dot_product_module
from ..attention import softmax as _softmax_ref
from ..i18n import say
from ..metrics import attention_entropy as _entropy_ref
from .engine import Case, Exercise, nonfinite, randn

_sdpa_ref = _dot_product_module.scaled_dot_product_attention
_where = torch.where

# ------------------------------------------------------------------------------------ softmax

WRONG_AXIS = "weights sum over the wrong axis: normalise over the last dimension (keys)"
OVERFLOW = "overflow for scores of 1000: subtract the row max before exp"


def _softmax_without_keepdim(keep_max: bool, keep_sum: bool):
    def wrong(s):
        if s.dim() != 2 or s.shape[0] != s.shape[1]:
            return None  # only a square batch broadcasts silently
        e = torch.exp(
            s - s.amax(dim=-1, keepdim=keep_max)
        )  # without keepdim: broadcast along the wrong axis
        return e / e.sum(dim=-1, keepdim=keep_sum)

    return wrong


KEEPDIM = (
    "a reduction without keepdim=True broadcast along the wrong axis: use "
    "s.amax(dim=-1, keepdim=True) and e.sum(dim=-1, keepdim=True)"
)


def _softmax_cases(g) -> list[Case]:
    """fn(scores (..., n)) -> softmax over the last dimension, from scratch (Eq. 14.3.2)."""
    big = randn(g, 3, scale=2.0)  # (3,) offsets around ±1000
    cases = [
        Case("a vector of 5 scores", (randn(g, 5),)),
        Case("a (4, 4) batch of score rows", (randn(g, 4, 4, scale=2.0),)),
        Case("a (4, 6) batch of score rows", (randn(g, 4, 6),)),
        Case("a (2, 3, 5) tensor of scores", (randn(g, 2, 3, 5),)),
        Case("float64 scores", (randn(g, 3, 7, dtype=torch.float64),)),
        Case("equal scores (uniform weights)", (torch.zeros(2, 4),)),
        Case("a single key (n = 1)", (randn(g, 3, 1),)),
        Case(
            "scores around 1000 (and a row of equal ones)",
            (torch.stack([1000 + big, torch.full((3,), 1000.0)]).float(),),
            hint=OVERFLOW + (" (softmax is unchanged by a shift, and exp(0) = 1 cannot overflow)"),
        ),
        Case(
            "scores around -1000",
            ((-1000 + big).float()[None],),
            hint=(
                "underflow for scores of -1000: every exp(s) is 0 and 0/0 is NaN; "
                "subtract the row max before exp (the largest score then gives exp(0) = 1)"
            ),
        ),
        Case(
            "a row around 1000 next to a row around -1000",
            (torch.stack([1000 + big, -1000 - big]).float(),),
            hint=(
                "subtract each row's own max (s.amax(dim=-1, keepdim=True)), "
                "not the max of the whole tensor"
            ),
        ),
    ]
    spread = randn(g, 2, 6, scale=20.0)  # (2, 6) float32, one score 400 above the mean, one below
    spread[:, 0] += 400.0
    spread[:, 1] -= 400.0
    return [
        *cases,
        Case(
            "float32 rows whose scores lie hundreds apart",
            (spread,),
            hint=(
                "overflow: subtract the row's largest score, so that every exp is at most 1; "
                "a smaller shift (the row's minimum or mean) leaves an exp of several hundred, "
                "and float32 overflows beyond exp(88)"
            ),
        ),
    ]


check_softmax = Exercise(
    _softmax_ref,
    _softmax_cases,
    reimplements=("softmax",),
    diagnoses=[
        (WRONG_AXIS, lambda s: _softmax_ref(s, dim=0) if s.dim() > 1 else None),
        (WRONG_AXIS, lambda s: _softmax_ref(s, dim=-2) if s.dim() > 2 else None),
        (KEEPDIM, _softmax_without_keepdim(False, True)),
        (KEEPDIM, _softmax_without_keepdim(True, False)),
        (KEEPDIM, _softmax_without_keepdim(False, False)),
        (
            "the weights do not sum to 1: divide exp(s) by its sum over the last dimension",
            lambda s: torch.exp(s),
        ),
        (
            "the weights do not sum to 1: divide exp(s) by its sum over the last dimension",
            lambda s: torch.exp(s - s.amax(dim=-1, keepdim=True)),
        ),
        (
            "no exp: softmax is exp(s) / Σ exp(s), not s / Σ s",
            lambda s: s / s.sum(dim=-1, keepdim=True),
        ),
    ],
)


# --------------------------------------------------------------------------- weighted average


def _weighted_average_ref(weights, values):
    """o = Σ_i α_i v_i for each query (Eq. 14.3.1): (T, S), (S, d) -> (T, d)."""
    return (weights.unsqueeze(-1) * values.unsqueeze(-3)).sum(dim=-2)  # (T, S, d) summed over S


def _dyadic_weights(g, T, S, dtype=torch.float32):
    """(T, S) weights whose rows sum to exactly 1 in floating point (powers of 2, shuffled)."""
    row = [2.0 ** -(i + 1) for i in range(S - 1)]
    row.append(row[-1] if row else 1.0)  # 1/2 + 1/4 + ... + 1/2^(S-1) + 1/2^(S-1) = 1
    rows = [[row[i] for i in torch.randperm(S, generator=g).tolist()] for _ in range(T)]
    return torch.tensor(rows, dtype=dtype)


def _softmax_rows_not_exactly_one(g):
    """Softmax weights whose row sums differ from 1 by a rounding error (valid weights all the
    same).
    """
    while True:
        w = _softmax_ref(randn(g, 6, 7, scale=3.0))
        if bool((w.sum(dim=-1) != 1).any()):
            return w


def _weighted_average_cases(g) -> list[Case]:
    """fn(weights (T, S), values (S, d)) -> (T, d), o_t = Σ_i α_ti v_i   (Eq. 14.3.1).

    Also checks that valid weights are not rejected: rows that sum to 1 only up to rounding.
    """
    eye = torch.eye(4)[torch.randperm(4, generator=g)[:3]]  # (3, 4) each query selects a value
    return [
        Case("one query over 4 values", (_dyadic_weights(g, 1, 4), randn(g, 4, 3))),
        Case("3 queries over 5 values of dimension 2", (_dyadic_weights(g, 3, 5), randn(g, 5, 2))),
        Case("one-hot weights (each query selects one value)", (eye, randn(g, 4, 3))),
        Case("uniform weights (the plain mean)", (torch.full((2, 4), 0.25), randn(g, 4, 3))),
        Case("a single value (S = 1)", (torch.ones(2, 1), randn(g, 1, 3))),
        Case(
            "float64 inputs",
            (_dyadic_weights(g, 3, 4, torch.float64), randn(g, 4, 6, dtype=torch.float64)),
        ),
        Case(
            "valid softmax weights whose rows sum to 1 only up to rounding (e.g. 0.99999994)",
            (_softmax_rows_not_exactly_one(g), randn(g, 7, 3)),
            on_error="valid weights were rejected: rows of softmax weights sum to 1 only up to "
            "rounding, so compare float sums with torch.allclose, not ==",
        ),
    ]


check_weighted_average = Exercise(
    _weighted_average_ref,
    _weighted_average_cases,
    diagnoses=[
        (
            "divided by the number of values: the weights already sum to 1, so the average is "
            "Σ αᵢ vᵢ with no extra division",
            lambda w, v: _weighted_average_ref(w, v) / v.shape[0],
        ),
        (
            "ignores the weights: it returns the plain mean of the values",
            lambda w, v: v.mean(dim=0, keepdim=True).expand(w.shape[0], -1),
        ),
        (
            "the output is transposed: expected one row per query, shape (T, d)",
            lambda w, v: _weighted_average_ref(w, v).T,
        ),
    ],
)


# ------------------------------------------------------------------------------ scaled scores


def _scaled_scores_ref(q, k):
    """q kᵀ / √d_k   (Eq. 14.3.4): (T, d_k), (S, d_k) -> (T, S)."""
    return (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])  # (T, S)


def _scaled_scores_cases(g) -> list[Case]:
    """fn(q (T, d_k), k (S, d_k)) -> (T, S) = q kᵀ / √d_k   (Eq. 14.3.4)."""
    return [
        Case("3 queries, 5 keys, d_k = 8", (randn(g, 3, 8), randn(g, 5, 8))),
        Case("4 queries, 4 keys, d_k = 16", (randn(g, 4, 16), randn(g, 4, 16))),
        Case("one query, 6 keys, d_k = 2", (randn(g, 1, 2), randn(g, 6, 2))),
        Case(
            "float64, d_k = 64",
            (randn(g, 2, 64, dtype=torch.float64), randn(g, 3, 64, dtype=torch.float64)),
        ),
        Case("a zero query", (torch.zeros(1, 4), randn(g, 3, 4))),
    ]


def _d(q):
    return q.shape[-1]


check_scaled_scores = Exercise(
    _scaled_scores_ref,
    _scaled_scores_cases,
    diagnoses=[
        ("missing 1/√d_k: divide q kᵀ by √d_k (Eq. 14.3.4)", lambda q, k: q @ k.T),
        ("divided by d_k instead of √d_k", lambda q, k: q @ k.T / _d(q)),
        ("multiplied by √d_k instead of dividing by it", lambda q, k: q @ k.T * math.sqrt(_d(q))),
        (
            "the scores are transposed: rows are queries and columns keys, "
            "so compute q @ k.T (T, S)",
            lambda q, k: _scaled_scores_ref(k, q),
        ),
        (
            "scaled by the square root of the number of keys; d_k is the feature size, q.shape[-1]",
            lambda q, k: q @ k.T / math.sqrt(k.shape[0]),
        ),
        (
            "scaled by the square root of the number of queries; "
            "d_k is the feature size, q.shape[-1]",
            lambda q, k: q @ k.T / math.sqrt(q.shape[0]),
        ),
    ],
)


# --------------------------------------------------------------------------- masked attention

MASK_INVERTED = "mask inverted: True means may attend"
EMPTY_ROW_NAN = "a query whose keys are all masked must get zero weights and zero output, not NaN"


EMPTY_ROW_NAN_HINT = (
    EMPTY_ROW_NAN + " (when every score of a row is -inf, set that row's weights to 0)"
)
EMPTY_ROW_UNIFORM = (
    "a query whose keys are all masked must get zero weights and zero output, not uniform "
    "weights (a finite fill such as -1e9 spreads the weight evenly): zero those rows"
)


def _empty_row_hint(got, expected):
    return say(EMPTY_ROW_NAN_HINT if nonfinite(got) else EMPTY_ROW_UNIFORM)


def _attention_variant(
    q, k, v, mask, *, fill=None, scale=None, after=False, dim=-1, max_of_all=False
):
    """A deliberately wrong masked attention, to recognise a learner's mistake."""
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = (q @ k.transpose(-2, -1)) * scale  # (..., T, S)
    if max_of_all:  # the row's maximum over every key, masked ones included
        e = torch.exp(scores - scores.amax(-1, keepdim=True)).masked_fill(~mask, 0.0)
        w = torch.nan_to_num(e / e.sum(-1, keepdim=True))  # (..., T, S)
    elif after:
        w = _softmax_ref(scores) * mask  # masked after the softmax, not renormalised
    elif fill is not None:
        w = _softmax_ref(scores.masked_fill(~mask, fill), dim=dim)
    else:
        w = _softmax_ref(scores, dim=dim, mask=mask.expand_as(scores))
    return w @ v, w


BATCHED = (
    "this case has leading batch dimensions (2 sequences, 3 heads): transpose only the last two "
    "dimensions of k, k.transpose(-2, -1) (k.T reverses all of them), so one formula serves any "
    "batch"
)


def _masked_attention_cases(g) -> list[Case]:
    """fn(q (..., T, d_k), k (..., S, d_k), v (..., S, d_v), mask (T, S) bool) -> (output, weights).
    The leading dimensions ``...`` (batch, heads) may be absent.

    softmax(q kᵀ/√d_k) v with masked keys removed (True = may attend); output (..., T, d_v),
    weights (..., T, S). A query whose keys are all masked gets zero weights and a zero output.
    """
    causal = torch.ones(4, 4).tril().bool()  # (T, S) query i sees keys j <= i
    padded = torch.tensor(
        [[True, True, True, False, False]] * 3
    )  # (3, 5) the last two keys are padding
    random = torch.rand(4, 6, generator=g) < 0.6  # (4, 6)
    random[:, 0] = True  # every query keeps at least one key
    empty = torch.rand(3, 4, generator=g) < 0.5  # (3, 4)
    empty[:, 0] = True
    empty[int(torch.randint(3, (), generator=g))] = False  # one query sees nothing
    return [
        Case(
            "3 queries, 5 keys (two of them padding), d_v = 2",
            (randn(g, 3, 6), randn(g, 5, 6), randn(g, 5, 2), padded),
        ),
        Case(
            "4 queries, 4 keys, causal mask",
            (randn(g, 4, 8), randn(g, 4, 8), randn(g, 4, 8), causal),
        ),
        Case(
            "a batch (2, 3 heads) of 4 queries and 6 keys, random mask",
            (randn(g, 2, 3, 4, 8), randn(g, 2, 3, 6, 8), randn(g, 2, 3, 6, 5), random),
            on_error=BATCHED,
        ),
        Case(
            "an all-True mask",
            (randn(g, 3, 4), randn(g, 3, 4), randn(g, 3, 4), torch.ones(3, 3, dtype=torch.bool)),
        ),
        Case(
            "float64 inputs",
            (
                randn(g, 4, 8, dtype=torch.float64),
                randn(g, 4, 8, dtype=torch.float64),
                randn(g, 4, 3, dtype=torch.float64),
                causal,
            ),
        ),
        Case(
            "scores of about ±1000",
            (randn(g, 4, 16, scale=30.0), randn(g, 4, 16, scale=30.0), randn(g, 4, 3), causal),
            hint=OVERFLOW,
        ),
        Case(
            "a query whose keys are all masked",
            (randn(g, 3, 4), randn(g, 4, 4), randn(g, 4, 2), empty),
            hint=_empty_row_hint,
        ),
    ]


def _masked_attention_ref(q, k, v, mask):
    return _sdpa_ref(q, k, v, mask)


check_masked_attention = Exercise(
    _masked_attention_ref,
    _masked_attention_cases,
    reimplements=("attention",),
    outputs=("output", "weights"),
    order=(1, 0),
    diagnoses=[
        (MASK_INVERTED, lambda q, k, v, m: _sdpa_ref(q, k, v, ~m)),
        (
            "missing 1/√d_k: divide q kᵀ by √d_k (Eq. 14.3.4)",
            lambda q, k, v, m: _sdpa_ref(q, k, v, m, scale=1.0),
        ),
        (
            "divided by d_k instead of √d_k",
            lambda q, k, v, m: _sdpa_ref(q, k, v, m, scale=1 / q.shape[-1]),
        ),
        (WRONG_AXIS, lambda q, k, v, m: _attention_variant(q, k, v, m, dim=-2)),
        (
            "masked scores were set to 0, which still gets weight: fill them with float('-inf') "
            "before the softmax",
            lambda q, k, v, m: _attention_variant(q, k, v, m, fill=0.0),
        ),
        (
            "the row's maximum was taken over every key, masked ones too: a masked key's large "
            "score pushes the allowed keys' exp to 0; take the maximum over the keys the query "
            "may read (fill masked scores with float('-inf') first)",
            lambda q, k, v, m: _attention_variant(q, k, v, m, max_of_all=True),
        ),
        (
            "masked keys were zeroed after the softmax, so the weights no longer sum to 1: "
            "fill masked scores with float('-inf') before the softmax",
            lambda q, k, v, m: _attention_variant(q, k, v, m, after=True),
        ),
    ],
)


# ------------------------------------------------------------------------------------ entropy

LOG_OF_ZERO = "log of 0 gives NaN: treat 0·log 0 as 0"


ZERO_HINT = LOG_OF_ZERO + " (e.g. torch.where(p > 0, p * torch.log(p), 0.0))"


def _one_hot_rows(g, rows: int, n: int) -> torch.Tensor:
    return torch.eye(n)[torch.randint(n, (rows,), generator=g)]  # (rows, n)


EPSILON = 1e-9  # an ε-guarded log, log(p + ε), may use an ε up to this (the text says so)


def _entropy_slack(p):
    """What log(p + ε) with ε ≤ EPSILON changes: p·log(1 + ε/p) ≤ ε for each of the n terms."""
    return p.shape[-1] * EPSILON


def _entropy_hint(got, expected):
    """Name a log of 0, or an ε-guard too large to pass; None leaves the difference alone (and
    a dtype other than the weights', which the check names)."""
    if nonfinite(got):
        return say(ZERO_HINT)
    if (
        isinstance(got, torch.Tensor)
        and got.shape == expected.shape
        and got.dtype == expected.dtype
    ):
        off = float((got.detach().double() - expected.double()).abs().max())
        if off < 1e-3:
            return say(GUARD_TOO_LARGE, off=f"{off:.1e}", epsilon=f"{EPSILON:g}")
    return None


GUARD_TOO_LARGE = (
    "off by at most {off}, more than an ε-guard of {epsilon} explains: log(p + ε) shifts each "
    "term by up to ε, so use ε ≤ {epsilon}, or skip the zero weights with torch.where(p > 0, ...)"
)


def _entropy_cases(g) -> list[Case]:
    """fn(weights (..., n)) -> (...) entropy H = -Σ p log p in nats, with 0·log 0 = 0
    (Eq. 14.3.3). An ε-guarded log with ε ≤ EPSILON passes.
    """
    masked = _softmax_ref(randn(g, 2, 5), mask=torch.tensor([True, False, True, True, False]))
    cases = [
        Case("uniform weights over 4 keys (H = log 4)", (torch.full((4,), 0.25),)),
        Case("3 rows of softmax weights over 5 keys", (_softmax_ref(randn(g, 3, 5)),)),
        Case("a (2, 3, 6) batch of weights", (_softmax_ref(randn(g, 2, 3, 6, scale=2.0)),)),
        Case("float64 weights", (_softmax_ref(randn(g, 2, 4, dtype=torch.float64)),)),
        Case("one-hot weights (H = 0)", (_one_hot_rows(g, 2, 3),)),
        Case("weights with masked (zero) keys", (masked,)),
        Case(
            "float64 weights with zeros",
            (
                _softmax_ref(
                    randn(g, 3, 6, dtype=torch.float64),
                    mask=torch.tensor([True, True, False, True, False, True]),
                ),
            ),
        ),
        Case("a single key (n = 1, H = 0)", (torch.ones(3, 1),)),
    ]
    for case in cases:
        case.hint = _entropy_hint
    return cases


def _plogp(p):
    return _where(p > 0, p * torch.log(_where(p > 0, p, torch.ones_like(p))), torch.zeros_like(p))


check_entropy = Exercise(
    _entropy_ref,
    _entropy_cases,
    reimplements=("entropy",),
    slack=_entropy_slack,
    diagnoses=[
        (
            "used log2: entropy in nats uses the natural log (torch.log)",
            lambda p: _entropy_ref(p) / math.log(2),
        ),
        (
            "used log10: entropy in nats uses the natural log (torch.log)",
            lambda p: _entropy_ref(p) / math.log(10),
        ),
        ("the sign is flipped: H = -Σ p log p, which is ≥ 0", lambda p: -_entropy_ref(p)),
        (
            "summed over the wrong axis: sum -p log p over the last dimension (the keys)",
            lambda p: -_plogp(p).sum(dim=0) if p.dim() > 1 else None,
        ),
        ("returned -p log p for each key: sum it over the last dimension", lambda p: -_plogp(p)),
        (
            "averaged -p log p over the keys: entropy is the sum, not the mean",
            lambda p: -_plogp(p).mean(dim=-1),
        ),
    ],
)


# ------------------------------------------------------------------------- self-attention


def plain_attention(q, k, v, mask):
    """Masked scaled dot-product attention in plain tensor operations, as the masked-attention
    exercise asks for: what the self-attention check hands the learner's layer as ``attend``,
    so that exercise is judged on its own. (..., T, d_k), (..., S, d_k), (..., S, d_v), (T, S)
    -> (output (..., T, d_v), weights (..., T, S))."""
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])  # (..., T, S)
    scores = scores.masked_fill(~mask, float("-inf"))
    top = scores.amax(dim=-1, keepdim=True)  # (..., T, 1), -inf for a query that sees nothing
    e = torch.exp(scores - _where(torch.isfinite(top), top, torch.zeros_like(top)))
    total = e.sum(dim=-1, keepdim=True)  # (..., T, 1)
    weights = e / _where(total > 0, total, torch.ones_like(total))  # (..., T, S)
    return weights @ v, weights


def _self_attention_ref(x, w_q, w_k, w_v, w_o, mask, attend=None):
    """One self-attention layer (Def. 14.3.3, Eq. 14.3.4): q, k, v = x W_Q, x W_K, x W_V;
    (z, α) = attention(q, k, v, mask); output z W_O. x (..., T, d_model), W_Q and W_K
    (d_model, d_k), W_V (d_model, d_v), W_O (d_v, d_model) -> ((..., T, d_model), (..., T, T))."""
    z, weights = _sdpa_ref(x @ w_q, x @ w_k, x @ w_v, mask)  # (..., T, d_v), (..., T, T)
    return z @ w_o, weights


def _self_attention_cases(g) -> list[Case]:
    def layer(d_model, d_k, d_v, dtype=torch.float32):
        return (
            randn(g, d_model, d_k, dtype=dtype, scale=d_model**-0.5),
            randn(g, d_model, d_k, dtype=dtype, scale=d_model**-0.5),
            randn(g, d_model, d_v, dtype=dtype, scale=d_model**-0.5),
            randn(g, d_v, d_model, dtype=dtype, scale=d_v**-0.5),
        )

    causal = torch.ones(5, 5).tril().bool()  # (T, T) word t reads words 0..t
    padded = torch.tensor([[True] * 4 + [False] * 2] * 6)  # (6, 6) the last two are padding
    attend = {"attend": plain_attention}
    return [
        Case(
            "5 words, d_model = 8, d_k = 4, d_v = 6, causal mask",
            (randn(g, 5, 8), *layer(8, 4, 6), causal),
            attend,
        ),
        Case(
            "6 words, the last two padding, d_model = d_v = 6, d_k = 3",
            (randn(g, 6, 6), *layer(6, 3, 6), padded),
            attend,
        ),
        Case(
            "4 words, d_model = 5, d_k = 2, d_v = 3, every word reads every word",
            (randn(g, 4, 5), *layer(5, 2, 3), torch.ones(4, 4, dtype=torch.bool)),
            attend,
        ),
        Case(
            "a batch of 3 sentences of 5 words, causal mask",
            (randn(g, 3, 5, 8), *layer(8, 4, 4), causal),
            attend,
            on_error=BATCHED,
        ),
        Case(
            "float64 inputs",
            (randn(g, 5, 6, dtype=torch.float64), *layer(6, 4, 2, torch.float64), causal),
            attend,
        ),
    ]


def _swapped_q_and_k(x, w_q, w_k, w_v, w_o, mask, attend=None):
    z, weights = _sdpa_ref(x @ w_k, x @ w_q, x @ w_v, mask)
    return z @ w_o, weights


def _without_output_projection(x, w_q, w_k, w_v, w_o, mask, attend=None):
    return _sdpa_ref(x @ w_q, x @ w_k, x @ w_v, mask)


def _without_mask(x, w_q, w_k, w_v, w_o, mask, attend=None):
    return _self_attention_ref(x, w_q, w_k, w_v, w_o, torch.ones_like(mask))


def _scaled_twice(x, w_q, w_k, w_v, w_o, mask, attend=None):
    z, weights = _sdpa_ref((x @ w_q) / math.sqrt(w_q.shape[-1]), x @ w_k, x @ w_v, mask)
    return z @ w_o, weights


check_self_attention = Exercise(
    _self_attention_ref,
    _self_attention_cases,
    reimplements=("attention",),
    outputs=("output", "weights"),
    order=(1, 0),
    diagnoses=[
        (
            "queries and keys are swapped: q = x @ w_q (what a word asks for), "
            "k = x @ w_k (what it offers)",
            _swapped_q_and_k,
        ),
        ("the output skips W_O: return z @ w_o, weights", _without_output_projection),
        ("the mask was not passed on: call attend(q, k, v, mask)", _without_mask),
        (
            "scaled twice: attend already divides the scores by √d_k, so pass q = x @ w_q as it is",
            _scaled_twice,
        ),
    ],
)


__all__ = [
    "check_entropy",
    "check_masked_attention",
    "check_scaled_scores",
    "check_self_attention",
    "check_softmax",
    "check_weighted_average",
]


# what the hints above say (``attncourse.exercises.messages``)
SENTENCES = (EMPTY_ROW_NAN_HINT, EMPTY_ROW_UNIFORM, ZERO_HINT, GUARD_TOO_LARGE)
