"""The exercise checks pass a correct solution and explain each common mistake specifically."""

import math
import re

import pytest
import torch
import torch.nn.functional as F
from exercise_helpers import blank, fails, fails_with, passes_on_seeds, styles_per_check
from torch import softmax as bound_torch_softmax
from torch.nn.functional import softmax as bound_softmax

import attncourse.attention
import attncourse.metrics
from attncourse.exercises import ch01 as exercises
from attncourse.exercises import engine
from attncourse.exercises.ch01 import (
    check_entropy,
    check_masked_attention,
    check_scaled_scores,
    check_self_attention,
    check_softmax,
    check_weighted_average,
)
from attncourse.exercises.engine import Case, check_function

# ----------------------------------------------------------------------- correct solutions


def stable_softmax(s):
    e = torch.exp(s - s.amax(dim=-1, keepdim=True))
    return e / e.sum(dim=-1, keepdim=True)


def weighted_average(weights, values):
    return weights @ values


def scaled_scores(q, k):
    return q @ k.T / math.sqrt(q.shape[-1])


def masked_attention(
    q, k, v, mask, fill=float("-inf"), guard_empty=True, scale=None, subtract_max=True
):
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = (q @ k.transpose(-2, -1)) * scale
    scores = scores.masked_fill(~mask, fill)
    if subtract_max:
        top = scores.amax(dim=-1, keepdim=True)
        scores = scores - torch.where(torch.isfinite(top), top, torch.zeros_like(top))
    e = torch.exp(scores)
    total = e.sum(dim=-1, keepdim=True)
    if guard_empty:
        total = torch.where(total > 0, total, torch.ones_like(total))
    weights = e / total
    return weights @ v, weights


def entropy(p):
    return -torch.where(
        p > 0, p * torch.log(torch.where(p > 0, p, torch.ones_like(p))), torch.zeros_like(p)
    ).sum(-1)


def self_attention(x, w_q, w_k, w_v, w_o, mask, attend=None):
    z, w = attend(x @ w_q, x @ w_k, x @ w_v, mask)
    return z @ w_o, w


def returns_none(*args, **kwargs):
    return None


@pytest.mark.parametrize(
    "check, solution, count",
    [
        (check_softmax, stable_softmax, 11),
        (check_weighted_average, weighted_average, 7),
        (check_scaled_scores, scaled_scores, 5),
        (check_masked_attention, masked_attention, 7),
        (check_entropy, entropy, 8),
        (check_self_attention, self_attention, 5),
    ],
)
def test_a_correct_solution_passes_with_one_line(check, solution, count, capsys):
    assert check(solution) is None
    assert check(solution, seed=7) is None  # hidden tests draw other inputs
    assert (
        capsys.readouterr().out.splitlines()[0]
        == f"✓ {solution.__name__}: all {count} checks passed"
    )


@pytest.mark.parametrize(
    "check",
    [
        check_softmax,
        check_weighted_average,
        check_scaled_scores,
        check_masked_attention,
        check_entropy,
        check_self_attention,
    ],
)
def test_blank_none_and_wrong_type_fail_clearly(check):
    fails(check, blank, r"blank is not implemented yet: replace `raise NotImplementedError\(\)`")
    fails(check, returns_none, r"returned None: did you forget `return`\?")
    fails(
        check,
        lambda *a, **k: [1.0, 2.0],
        r"returned (a list of 2|float 2.0), expected a torch.Tensor|returned 2 values|"
        r"output: returned float",
    )
    fails(check, None, r"this check needs your function, got NoneType")


# -------------------------------------------------------------------------------- softmax


def test_softmax_mistakes_are_named():
    fails(
        check_softmax,
        lambda s: (
            stable_softmax(s.transpose(0, -1)).transpose(0, -1)
            if s.dim() > 1
            else stable_softmax(s)
        ),
        r"weights sum over the wrong axis: normalise over the last dimension \(keys\)",
    )
    fails(
        check_softmax,
        lambda s: torch.exp(s) / torch.exp(s).sum(-1, keepdim=True),
        r"overflow for scores of 1000: subtract the row max before exp",
    )
    fails(
        check_softmax,
        lambda s: torch.exp(s - s.max()) / torch.exp(s - s.max()).sum(-1, keepdim=True),
        r"subtract each row's own max",
    )
    fails(
        check_softmax,
        lambda s: torch.exp(s - s.amax(-1)) / torch.exp(s - s.amax(-1)).sum(-1, keepdim=True),
        r"without keepdim=True broadcast along the wrong axis",
    )
    fails(
        check_softmax,
        lambda s: torch.exp(s - s.amax(-1, keepdim=True)),
        r"the weights do not sum to 1",
    )
    fails(check_softmax, lambda s: s / s.sum(-1, keepdim=True), r"no exp")
    fails(
        check_softmax,
        lambda s: stable_softmax(s).float(),
        r"returned dtype torch.float32, expected torch.float64",
    )
    fails(check_softmax, lambda s: stable_softmax(s)[..., :-1], r"returned shape")
    fails(check_softmax, lambda s: torch.exp(s - s.amax(dim=1, keepdim=True)), r"use dim=-1")


def in_place(s):
    s -= s.amax(dim=-1, keepdim=True)
    return stable_softmax(s)


def test_softmax_in_place_change_of_the_input_is_named():
    fails(check_softmax, in_place, r"changed its input in place")


@pytest.mark.parametrize(
    "builtin",
    [
        lambda s: torch.softmax(s, dim=-1),
        lambda s: F.softmax(s, dim=-1),
        lambda s: s.softmax(-1),
        lambda s: torch.special.softmax(s, -1),
        lambda s: bound_softmax(s, dim=-1),  # bound before the check patched anything
        lambda s: bound_torch_softmax(s, -1),  # a C function: only the torch-function mode sees it
        lambda s: F.softmin(-s, dim=-1),
        lambda s: torch.log_softmax(s, -1).exp(),
    ],
)
def test_softmax_refuses_built_ins(builtin):
    fails(check_softmax, builtin, r"must be written from scratch: line \d+ uses .*softm")


def swallows_the_refusal(s):
    try:
        return bound_softmax(s, dim=-1)
    except Exception:
        return stable_softmax(s)


def test_softmax_refuses_a_built_in_even_when_the_error_is_caught():
    fails(check_softmax, swallows_the_refusal, r"must be written from scratch")


def test_softmax_refuses_the_course_s_own_softmax_and_restores_it():
    fails(
        check_softmax,
        lambda s: attncourse.attention.softmax(s),
        r"the course's own attncourse.attention.softmax",
    )
    x = torch.randn(3, 4)
    assert torch.allclose(attncourse.attention.softmax(x), torch.softmax(x, -1))
    assert torch.allclose(F.softmax(x, -1), torch.softmax(x, -1))  # the guard is undone too


def test_a_subclass_of_tensor_cannot_fool_the_comparison():
    class AlwaysClose(torch.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return True

    fails(
        check_softmax,
        lambda s: torch.zeros_like(s).as_subclass(AlwaysClose),
        r"subclass of torch.Tensor",
    )


def test_patching_torch_after_import_does_not_change_a_verdict(monkeypatch):
    monkeypatch.setattr(torch, "allclose", lambda *a, **k: True)
    monkeypatch.setattr(torch, "isnan", lambda x: torch.zeros_like(x, dtype=torch.bool))
    fails(check_softmax, lambda s: torch.zeros_like(s), r"wrong values")


def test_checks_leave_the_global_random_stream_alone():
    torch.manual_seed(3)
    expected = torch.rand(2)
    torch.manual_seed(3)
    check_softmax(stable_softmax)
    check_masked_attention(masked_attention)
    assert torch.equal(torch.rand(2), expected)


# ----------------------------------------------------------------------- weighted average


def strict_weighted_average(weights, values):
    assert (weights.sum(-1) == 1).all(), "weights must sum to 1"
    return weights @ values


def test_weighted_average_mistakes_are_named():
    fails(
        check_weighted_average, lambda w, v: w @ v / v.shape[0], r"divided by the number of values"
    )
    fails(
        check_weighted_average,
        lambda w, v: v.mean(0, keepdim=True).expand(w.shape[0], -1),
        r"ignores the weights",
    )
    fails(check_weighted_average, lambda w, v: (w @ v).T, r"the output is transposed")
    fails(
        check_weighted_average,
        strict_weighted_average,
        r"valid weights were rejected: .* compare float sums with torch.allclose, not ==",
    )
    fails(check_weighted_average, lambda w, v: v.T @ w.T, r"the output is transposed")


def test_weighted_average_accepts_a_tolerant_validity_check():
    def careful(weights, values):
        assert torch.allclose(weights.sum(-1), torch.ones(weights.shape[0], dtype=weights.dtype))
        return weights @ values

    check_weighted_average(careful)


# -------------------------------------------------------------------------- scaled scores


def test_scaled_scores_mistakes_are_named():
    fails(check_scaled_scores, lambda q, k: q @ k.T, r"missing 1/√d_k")
    fails(
        check_scaled_scores, lambda q, k: q @ k.T / q.shape[-1], r"divided by d_k instead of √d_k"
    )
    fails(check_scaled_scores, lambda q, k: q @ k.T * math.sqrt(q.shape[-1]), r"multiplied by √d_k")
    fails(
        check_scaled_scores,
        lambda q, k: k @ q.T / math.sqrt(q.shape[-1]),
        r"the scores are transposed",
    )
    fails(check_scaled_scores, lambda q, k: q @ k.T / math.sqrt(k.shape[0]), r"number of keys")


# ----------------------------------------------------------------------- masked attention


def test_masked_attention_mistakes_are_named():
    fails(
        check_masked_attention,
        lambda q, k, v, m: masked_attention(q, k, v, ~m),
        r"mask inverted: True means may attend",
    )
    fails(
        check_masked_attention,
        lambda q, k, v, m: masked_attention(q, k, v, m, scale=1.0),
        r"missing 1/√d_k",
    )
    fails(
        check_masked_attention,
        lambda q, k, v, m: masked_attention(q, k, v, m, guard_empty=False),
        r"a query whose keys are all masked must get zero weights and zero output, not NaN",
    )
    fails(
        check_masked_attention,
        lambda q, k, v, m: masked_attention(q, k, v, m, fill=-1e9),
        r"a query whose keys are all masked must get zero weights and zero output, "
        r"not uniform weights",
    )
    fails(
        check_masked_attention,
        lambda q, k, v, m: masked_attention(q, k, v, m, fill=0.0),
        r"set to 0",
    )
    fails(
        check_masked_attention,
        lambda q, k, v, m: masked_attention(q, k, v, m, subtract_max=False),
        r"overflow for scores of 1000: subtract the row max before exp",
    )
    fails(
        check_masked_attention,
        lambda q, k, v, m: masked_attention(q, k, v, torch.ones_like(m)),
        r"weights: wrong values",
    )
    fails(
        check_masked_attention,
        lambda q, k, v, m: masked_attention(q, k, v, m)[0],
        r"returned a torch.float32 tensor of shape .*, expected a tuple \(output, weights\)",
    )
    fails(
        check_masked_attention,
        lambda q, k, v, m: (
            masked_attention(q, k, v, m)[1] @ v * 2,
            masked_attention(q, k, v, m)[1],
        ),
        r"output: wrong values",
    )

    def after_softmax(q, k, v, m):
        w = stable_softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])) * m
        return w @ v, w

    fails(check_masked_attention, after_softmax, r"masked keys were zeroed after the softmax")

    def max_before_masking(q, k, v, m):  # exact for small scores; at ±1000 the allowed ones vanish
        s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        e = torch.exp((s - s.amax(-1, keepdim=True)).masked_fill(~m, float("-inf")))
        w = torch.nan_to_num(e / e.sum(-1, keepdim=True))
        return w @ v, w

    fails(check_masked_attention, max_before_masking, r"maximum was taken over every key")


@pytest.mark.parametrize(
    "builtin, called",
    [
        (
            lambda q, k, v, m: (F.scaled_dot_product_attention(q, k, v, m), None),
            "scaled_dot_product_attention",
        ),
        (
            lambda q, k, v, m: (
                None,
                torch.softmax((q @ k.transpose(-2, -1)).masked_fill(~m, -1e9), -1),
            ),
            "softmax",
        ),
        (
            lambda q, k, v, m: attncourse.attention.scaled_dot_product_attention(q, k, v, m),
            "course's own",
        ),
        (
            lambda q, k, v, m: (
                masked_attention(q, k, v, m)[:1] + (attncourse.attention.softmax(q @ k.mT, mask=m),)
            ),
            "course's own attncourse.attention.softmax",
        ),
    ],
)
def test_masked_attention_refuses_built_ins(builtin, called):
    fails(check_masked_attention, builtin, rf"must be written from scratch: .*{called}")


# -------------------------------------------------------------------------------- entropy


def test_entropy_mistakes_are_named():
    fails(
        check_entropy,
        lambda p: -(p * torch.log(p)).sum(-1),
        r"log of 0 gives NaN: treat 0·log 0 as 0",
    )
    fails(
        check_entropy,
        lambda p: entropy(p) / math.log(2),
        r"used log2: entropy in nats uses the natural log",
    )
    fails(
        check_entropy,
        lambda p: -torch.where(p > 0, p * torch.log2(p.clamp_min(1e-30)), 0.0).sum(-1),
        r"used log2",
    )
    fails(check_entropy, lambda p: -entropy(p), r"the sign is flipped")
    fails(
        check_entropy,
        lambda p: entropy(p.transpose(0, -1)) if p.dim() > 1 else entropy(p),
        r"summed over the wrong axis",
    )
    fails(
        check_entropy,
        lambda p: -torch.where(p > 0, p * torch.log(p), 0.0),
        r"returned -p log p for each key",
    )
    fails(check_entropy, lambda p: entropy(p) / p.shape[-1], r"averaged -p log p")
    fails(
        check_entropy,
        lambda p: attncourse.metrics.attention_entropy(p),
        r"the course's own attncourse.metrics.attention_entropy",
    )


# ------------------------------------------------------------------------- generic engine


def test_check_function_is_usable_for_new_exercises(capsys):
    cases = [
        Case("a (3, 4) input", (torch.randn(3, 4),)),
        Case("zeros", (torch.zeros(2),), hint="zeros broke it"),
    ]
    square = lambda x: x * x  # noqa: E731
    check_function(square, square, cases, name="square")
    assert capsys.readouterr().out == "✓ square: all 2 checks passed\n"
    with pytest.raises(
        AssertionError,
        match=r"square: you used \+\n  \(case 1 of 2: a \(3, 4\) input; inputs: a torch.float32 "
        r"tensor of shape \(3, 4\)\)",
    ):
        check_function(
            lambda x: x + x,
            square,
            cases,
            name="square",
            diagnoses=[("you used +", lambda x: x + x)],
        )
    with pytest.raises(AssertionError, match=r"zeros broke it"):
        check_function(lambda x: x * x + (x == 0).float(), square, cases, name="square")

    def boom(x):
        raise ZeroDivisionError("boom")

    with pytest.raises(
        AssertionError, match=r"square raised ZeroDivisionError: boom \(case 1 of 2"
    ):
        check_function(boom, square, cases, name="square")


def test_modules_export_the_documented_api():
    for name in [
        "check_softmax",
        "check_weighted_average",
        "check_scaled_scores",
        "check_masked_attention",
        "check_entropy",
        "check_self_attention",
    ]:
        assert name in exercises.__all__ and callable(getattr(exercises, name))
    for name in ["check_function", "Case", "Refused"]:
        assert name in engine.__all__ and callable(getattr(engine, name))


# ------------------------------------------------ correct answers in other styles, every seed

HIDDEN_SEEDS = (0, 11, 12, 13, 14, 15, 2024)  # the visible seed, the notebook's hidden ones, more


def softmax_logsumexp(s):
    return torch.exp(s - torch.logsumexp(s, dim=-1, keepdim=True))


def softmax_in_float64(s):
    e = torch.exp(s.double() - s.double().amax(dim=-1, keepdim=True))
    return (e / e.sum(dim=-1, keepdim=True)).to(s.dtype)


def softmax_by_rows(s):
    rows = s.reshape(-1, s.shape[-1])
    out = torch.empty_like(rows)
    for i, row in enumerate(rows):
        e = torch.exp(row - row.max())
        out[i] = e / e.sum()
    return out.reshape(s.shape)


def average_einsum(w, v):
    return torch.einsum("ts,sd->td", w, v)


def average_broadcast(w, v):
    return (w[:, :, None] * v[None, :, :]).sum(dim=1)


def scores_einsum(q, k):
    return torch.einsum("td,sd->ts", q, k) / q.shape[-1] ** 0.5


def scores_split_scale(q, k):
    r = q.shape[-1] ** 0.25
    return (q / r) @ (k / r).transpose(-2, -1)


def masked_attention_finite_fill(q, k, v, mask):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    scores = scores.masked_fill(~mask, -1e9)
    e = torch.exp(scores - scores.amax(dim=-1, keepdim=True)) * mask
    w = e / e.sum(dim=-1, keepdim=True).clamp_min(1e-30)
    return w @ v, w


def masked_attention_logsumexp(q, k, v, mask):
    scores = torch.einsum("...td,...sd->...ts", q, k) / math.sqrt(q.shape[-1])
    scores = scores.masked_fill(~mask, float("-inf"))
    lse = torch.logsumexp(scores, dim=-1, keepdim=True)
    w = torch.nan_to_num(torch.exp(scores - lse), nan=0.0)
    return w @ v, w


def entropy_xlogy(p):
    return -torch.special.xlogy(p, p).sum(dim=-1)


def entropy_nan_to_num(p):
    return -torch.nan_to_num(p * torch.log(p)).sum(dim=-1)


def entropy_masked(p):
    logs = torch.log(p.clamp_min(torch.finfo(p.dtype).tiny))
    return -(p * logs).sum(dim=-1)


def entropy_eps_guarded(p):
    return -(p * torch.log(p + 1e-12)).sum(-1)


def entropy_logsumexp_style(p):
    """H = -Σ p log p written as an expectation of -log p over the nonzero weights."""
    return torch.stack(
        [-(row[row > 0] * row[row > 0].log()).sum() for row in p.reshape(-1, p.shape[-1])]
    ).reshape(p.shape[:-1])


def self_attention_einsum(x, w_q, w_k, w_v, w_o, mask, attend=None):
    q = torch.einsum("...td,dk->...tk", x, w_q)
    k = torch.einsum("...td,dk->...tk", x, w_k)
    v = torch.einsum("...td,dv->...tv", x, w_v)
    z, weights = attend(q, k, v, mask)
    return torch.einsum("...tv,vd->...td", z, w_o), weights


def self_attention_default_attend(x, w_q, w_k, w_v, w_o, mask, attend=None):
    """Uses its own masked attention when no attend is given; the check gives one."""
    attend = masked_attention if attend is None else attend
    q, k, v = x @ w_q, x @ w_k, x @ w_v
    z, weights = attend(q, k, v, mask)
    return z @ w_o, weights


def self_attention_ignoring_attend(x, w_q, w_k, w_v, w_o, mask, attend=None):
    """A correct layer that computes its attention itself (from scratch) instead of ``attend``."""
    z, weights = masked_attention(x @ w_q, x @ w_k, x @ w_v, mask)
    return z @ w_o, weights


STYLES = [
    (check_softmax, stable_softmax),
    (check_softmax, softmax_logsumexp),
    (check_softmax, softmax_in_float64),
    (check_softmax, softmax_by_rows),
    (check_weighted_average, weighted_average),
    (check_weighted_average, average_einsum),
    (check_weighted_average, average_broadcast),
    (check_scaled_scores, scaled_scores),
    (check_scaled_scores, scores_einsum),
    (check_scaled_scores, scores_split_scale),
    (check_masked_attention, masked_attention),
    (check_masked_attention, masked_attention_finite_fill),
    (check_masked_attention, masked_attention_logsumexp),
    (check_entropy, entropy),
    (check_entropy, entropy_xlogy),
    (check_entropy, entropy_nan_to_num),
    (check_entropy, entropy_masked),
    (check_entropy, entropy_eps_guarded),
    (check_entropy, entropy_logsumexp_style),
    (check_self_attention, self_attention),
    (check_self_attention, self_attention_einsum),
    (check_self_attention, self_attention_default_attend),
    (check_self_attention, self_attention_ignoring_attend),
]


@pytest.mark.parametrize("check, answer", STYLES, ids=lambda x: getattr(x, "__name__", ""))
def test_every_correct_style_passes_the_visible_and_the_hidden_seeds(check, answer, capsys):
    passes_on_seeds(check, answer, HIDDEN_SEEDS, capsys)


def test_each_exercise_has_at_least_three_correct_styles():
    counts = styles_per_check(STYLES, {check for check, _ in STYLES})
    assert len(counts) == 6 and min(counts.values()) >= 3, counts


MISTAKES = [
    (check_softmax, lambda s: torch.exp(s) / torch.exp(s).sum(-1, keepdim=True), "overflow"),
    (
        check_softmax,
        lambda s: torch.exp(s - s.max()) / torch.exp(s - s.max()).sum(-1, keepdim=True),
        "each row's own max",
    ),
    (  # shifted, but not by the largest score: fine around ±1000, not for rows 800 wide
        check_softmax,
        lambda s: torch.exp(s - s.amin(-1, True)) / torch.exp(s - s.amin(-1, True)).sum(-1, True),
        "a smaller shift",
    ),
    (
        check_softmax,
        lambda s: torch.exp(s - s.mean(-1, True)) / torch.exp(s - s.mean(-1, True)).sum(-1, True),
        "a smaller shift",
    ),
    (check_softmax, lambda s: torch.nn.functional.softmax(s, dim=-1), "from scratch: line"),
    (check_softmax, lambda s: attncourse.attention.softmax(s), "course's own"),
    (check_scaled_scores, lambda q, k: q @ k.T, r"missing 1/√d_k"),
    (check_scaled_scores, lambda q, k: q @ k.T / q.shape[-1], r"divided by d_k instead of √d_k"),
    (check_masked_attention, lambda q, k, v, m: masked_attention(q, k, v, ~m), "mask inverted"),
    (
        check_masked_attention,
        lambda q, k, v, m: masked_attention(q, k, v, m, scale=1.0),
        r"missing 1/√d_k",
    ),
    (check_entropy, lambda p: -(p * torch.log(p)).sum(-1), r"log of 0 gives NaN"),
    (check_entropy, lambda p: -(p * torch.log2(p.clamp_min(1e-30))).sum(-1), "used log2"),
    (check_entropy, lambda p: attncourse.metrics.attention_entropy(p), "course's own"),
]


@pytest.mark.parametrize("check, answer, message", MISTAKES)
def test_common_mistakes_fail_with_their_name_on_every_seed(check, answer, message):
    for seed in HIDDEN_SEEDS[:3]:
        with pytest.raises(AssertionError, match=message):
            check(answer, seed=seed)


def test_a_batched_case_answered_with_k_T_is_told_to_transpose_the_last_two_dimensions():
    def unbatched(q, k, v, mask):
        w = stable_softmax((q @ k.T / math.sqrt(q.shape[-1])).masked_fill(~mask, -1e9))
        return w @ v, w

    fails(check_masked_attention, unbatched, r"transpose only the last two dimensions")


# ------------------------------------------------------------ entropy: an ε-guarded log


def test_an_eps_guarded_log_passes_and_a_large_eps_is_named():
    check_entropy(entropy_eps_guarded)
    message = fails_with(
        check_entropy,
        lambda p: -(p * torch.log(p + 1e-6)).sum(-1),
        "more than an ε-guard of 1e-09 explains",
        "use ε ≤ 1e-09",
    )
    got, expected = re.search(r"got (\S+), expected (\S+);", message).groups()
    assert got != expected, message  # never "got x, expected x"


def test_an_entropy_in_another_dtype_is_told_its_dtype_not_an_eps_guard():
    def entropy_in_float64(p):  # right, computed in float64 and never cast back: no ε anywhere
        w = p.double()
        return -torch.xlogy(w, w).sum(-1)

    message = fails_with(check_entropy, entropy_in_float64, "returned dtype torch.float64")
    assert "ε-guard" not in message, message


def test_a_wrong_value_message_never_shows_two_identical_numbers():
    """Differences below the sixth significant digit are printed with the digits that differ."""
    message = fails_with(check_softmax, lambda s: stable_softmax(s) * (1 + 1e-9), "wrong values")
    got, expected = re.search(r"got (\S+), expected (\S+);", message).groups()
    assert got != expected and float(got) != float(expected), message


# ---------------------------------------------------------------- self-attention layer


def test_the_self_attention_reference_is_the_libraries_one_head_attention():
    """The check's reference equals the course's MultiHeadAttention and torch's
    nn.MultiheadAttention with one head, and ``plain_attention`` equals the course's attention."""
    torch.manual_seed(0)
    x = torch.randn(2, 7, 8, dtype=torch.float64)
    mask = torch.ones(7, 7, dtype=torch.bool).tril()
    ours = attncourse.attention.MultiHeadAttention(8, 1, bias=False).double()
    theirs = torch.nn.MultiheadAttention(8, 1, bias=False, batch_first=True).double()
    with torch.no_grad():
        theirs.in_proj_weight.copy_(
            torch.cat([ours.q_proj.weight, ours.k_proj.weight, ours.v_proj.weight])
        )
        theirs.out_proj.weight.copy_(ours.out_proj.weight)
    matrices = [m.weight.T for m in (ours.q_proj, ours.k_proj, ours.v_proj, ours.out_proj)]
    out, weights = exercises._self_attention_ref(x, *matrices, mask)
    expected, expected_weights = ours(x, mask=mask)
    torch.testing.assert_close(out, expected)
    torch.testing.assert_close(weights, expected_weights[:, 0])
    torch.testing.assert_close(out, theirs(x, x, x, attn_mask=~mask)[0])
    for seed in HIDDEN_SEEDS:
        for case in check_masked_attention.inputs(seed):
            for a, b in zip(
                exercises.plain_attention(*case.args), check_masked_attention.expected(case)
            ):
                torch.testing.assert_close(a, b)


def test_self_attention_is_judged_on_its_own():
    """A layer whose default attention (the learner's exercise 5) is unfinished still passes:
    the check hands it the course's attention."""

    def unfinished(q, k, v, mask):
        raise NotImplementedError()

    def layer(x, w_q, w_k, w_v, w_o, mask, attend=None):
        attend = unfinished if attend is None else attend
        z, weights = attend(x @ w_q, x @ w_k, x @ w_v, mask)
        return z @ w_o, weights

    check_self_attention(layer)


def test_self_attention_mistakes_are_named():
    def swapped(x, w_q, w_k, w_v, w_o, mask, attend=None):
        z, w = attend(x @ w_k, x @ w_q, x @ w_v, mask)
        return z @ w_o, w

    def no_output_map(x, w_q, w_k, w_v, w_o, mask, attend=None):
        return attend(x @ w_q, x @ w_k, x @ w_v, mask)

    def no_mask(x, w_q, w_k, w_v, w_o, mask, attend=None):
        z, w = attend(x @ w_q, x @ w_k, x @ w_v, torch.ones_like(mask))
        return z @ w_o, w

    def scaled_twice(x, w_q, w_k, w_v, w_o, mask, attend=None):
        z, w = attend(x @ w_q / math.sqrt(w_q.shape[-1]), x @ w_k, x @ w_v, mask)
        return z @ w_o, w

    fails(check_self_attention, swapped, r"queries and keys are swapped")
    fails(check_self_attention, no_output_map, r"the output skips W_O|returned shape")
    fails(check_self_attention, no_mask, r"the mask was not passed on")
    fails(check_self_attention, scaled_twice, r"scaled twice")


def test_self_attention_refuses_the_built_in_attention():
    def builtin(x, w_q, w_k, w_v, w_o, mask, attend=None):
        q, k, v = x @ w_q, x @ w_k, x @ w_v
        z = F.scaled_dot_product_attention(q, k, v, mask)
        return z @ w_o, None

    fails(check_self_attention, builtin, r"must be written from scratch: .*scaled_dot_product")
