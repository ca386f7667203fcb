"""Chapter 07's exercise checks pass correct solutions written in several styles (on the visible
and the hidden seed) and name each common mistake."""

import math
import re

import numpy as np
import pytest
import torch
from exercise_helpers import fails_when_unfinished, fails_with, notebook_hidden_seeds

import attncourse.exercises.ch07 as exercises
import attncourse.positional
from attncourse.exercises.ch07 import (
    check_alibi_weights,
    check_rope,
    check_selection_information,
    check_shift_matrix,
)

HIDDEN = {
    check_shift_matrix: 71,
    check_rope: 72,
    check_alibi_weights: 73,
    check_selection_information: 74,
}

# ------------------------------------------------------------------------ 1: the shift matrix


def shift_loops(offset, dim, base):
    R = torch.zeros(dim, dim, dtype=torch.float64)
    for i in range(dim // 2):
        a = offset * base ** (-2 * i / dim)
        R[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = torch.tensor(
            [[math.cos(a), math.sin(a)], [-math.sin(a), math.cos(a)]], dtype=torch.float64
        )
    return R


def shift_block_diag(offset, dim, base):
    theta = base ** (-torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    c, s = torch.cos(offset * theta), torch.sin(offset * theta)
    blocks = [torch.stack((torch.stack((ci, si)), torch.stack((-si, ci)))) for ci, si in zip(c, s)]
    return torch.block_diag(*blocks)


def shift_matrix_power(offset, dim, base):
    """R_k = (R_1)^k: one step, composed k times (R_-k = (R_1^T)^k)."""
    theta = base ** (-torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    one = torch.zeros(dim, dim, dtype=torch.float64)
    one[0::2, 0::2] = torch.diag(torch.cos(theta))
    one[1::2, 1::2] = torch.diag(torch.cos(theta))
    one[0::2, 1::2] = torch.diag(torch.sin(theta))
    one[1::2, 0::2] = -torch.diag(torch.sin(theta))
    return torch.linalg.matrix_power(one if offset >= 0 else one.T, abs(offset))


def shift_numpy(offset, dim, base):
    R = np.zeros((dim, dim))
    for i in range(dim // 2):
        a = offset * base ** (-2.0 * i / dim)
        R[2 * i, 2 * i] = R[2 * i + 1, 2 * i + 1] = np.cos(a)
        R[2 * i, 2 * i + 1], R[2 * i + 1, 2 * i] = np.sin(a), -np.sin(a)
    return torch.from_numpy(R)


def shift_complex(offset, dim, base):
    """R_k from e^{ikθ}: the real and imaginary parts of one complex number per pair."""
    theta = base ** (-torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    z = torch.polar(torch.ones_like(theta), offset * theta)  # (dim/2,) e^{ikθ}
    R = torch.zeros(dim, dim, dtype=torch.float64)
    R[0::2, 0::2] = R[1::2, 1::2] = torch.diag(z.real)
    R[0::2, 1::2], R[1::2, 0::2] = torch.diag(z.imag), -torch.diag(z.imag)
    return R


def shift_float32_theta(offset, dim, base):
    """θ in float32 (torch.arange's default dtype): right formula, float32 angles."""
    theta = base ** (-torch.arange(0, dim, 2) / dim)  # float32
    c, s = torch.cos(offset * theta).double(), torch.sin(offset * theta).double()
    R = torch.zeros(dim, dim, dtype=torch.float64)
    R[0::2, 0::2] = R[1::2, 1::2] = torch.diag(c)
    R[0::2, 1::2], R[1::2, 0::2] = torch.diag(s), -torch.diag(s)
    return R


def shift_float32_theta_math(offset, dim, base):
    """θ in float32, each angle through math.cos: float32 angles once more."""
    theta = base ** (-torch.arange(0, dim, 2) / dim)  # float32
    R = torch.zeros(dim, dim, dtype=torch.float64)
    for i, t in enumerate(theta):
        a = float(offset * t)
        R[2 * i, 2 * i] = R[2 * i + 1, 2 * i + 1] = math.cos(a)
        R[2 * i, 2 * i + 1], R[2 * i + 1, 2 * i] = math.sin(a), -math.sin(a)
    return R


# ------------------------------------------------------------------------------------ 2: RoPE


def rope_interleave(x, positions, base):
    d = x.shape[-1]
    theta = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    angles = positions.double()[:, None] * theta
    cos, sin = torch.cos(angles).to(x.dtype), torch.sin(angles).to(x.dtype)
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1).flatten(-2)


def rope_complex(x, positions, base):
    d = x.shape[-1]
    theta = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    turn = torch.polar(torch.ones(len(positions), d // 2, dtype=torch.float64),
                       positions.double()[:, None] * theta)  # fmt: skip
    z = torch.view_as_complex(x.double().reshape(*x.shape[:-1], d // 2, 2).contiguous())
    return torch.view_as_real(z * turn).reshape(x.shape).to(x.dtype)


def rope_matrices(x, positions, base):
    d = x.shape[-1]
    out = torch.empty_like(x)
    for t, m in enumerate(positions.tolist()):
        R = torch.zeros(d, d, dtype=torch.float64)
        for i in range(d // 2):
            a = m * base ** (-2 * i / d)
            R[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = torch.tensor(
                [[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]], dtype=torch.float64
            )
        out[..., t, :] = (x[..., t, :].double() @ R.T).to(x.dtype)
    return out


def rope_float32_theta(x, positions, base):
    """θ and the angles in float32 (torch.arange's default dtype), then cast to x's dtype."""
    d = x.shape[-1]
    theta = base ** (-torch.arange(0, d, 2) / d)  # float32
    angles = positions[:, None] * theta  # float32
    cos, sin = torch.cos(angles).to(x.dtype), torch.sin(angles).to(x.dtype)
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1).flatten(-2)


# ----------------------------------------------------------------------------------- 3: ALiBi


def alibi_masked_fill(scores, slopes):
    T = scores.shape[-1]
    i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
    z = (scores - slopes[:, None, None] * (i - j)).masked_fill(j > i, float("-inf"))
    e = torch.exp(z - z.amax(-1, keepdim=True))
    return e / e.sum(-1, keepdim=True)


def alibi_key_bonus(scores, slopes):
    """+m·j instead of −m·(i − j): the same per query row (softmax ignores a shift)."""
    T = scores.shape[-1]
    j = torch.arange(T, dtype=scores.dtype)
    z = scores + slopes[:, None, None] * j
    keep = torch.ones(T, T, dtype=torch.bool).tril()
    e = torch.where(
        keep, torch.exp(z - torch.where(keep, z, -torch.inf).amax(-1, keepdim=True)), 0.0
    )
    return e / e.sum(-1, keepdim=True)


def alibi_loops(scores, slopes):
    B, H, T, _ = scores.shape
    out = torch.zeros_like(scores)
    for b in range(B):
        for h in range(H):
            for i in range(T):
                z = torch.tensor(
                    [float(scores[b, h, i, j]) - float(slopes[h]) * (i - j) for j in range(i + 1)],
                    dtype=torch.float64,
                )
                w = torch.exp(z - z.max())
                out[b, h, i, : i + 1] = w / w.sum()
    return out


# ----------------------------------------------------------------------- 4: selection information


def information_plogp(alpha, vocab):
    hit, miss = alpha + (1 - alpha) / vocab, (1 - alpha) / vocab

    def plogp(p):
        return torch.where(p > 0, p * torch.log2(torch.where(p > 0, p, torch.ones_like(p))), 0.0)

    return math.log2(vocab) + plogp(hit) + (vocab - 1) * plogp(miss)


def information_kl(alpha, vocab):
    """KL(P(z | x) || uniform) in nats, converted to bits."""
    hit, miss = alpha + (1 - alpha) / vocab, (1 - alpha) / vocab
    term = lambda p: torch.where(p > 0, p * torch.log(torch.clamp(p, min=1e-300) * vocab), 0.0)  # noqa: E731
    return (term(hit) + (vocab - 1) * term(miss)) / math.log(2)


def information_xlogy(alpha, vocab):
    hit, miss = alpha + (1 - alpha) / vocab, (1 - alpha) / vocab
    conditional = -(torch.special.xlogy(hit, hit) + (vocab - 1) * torch.special.xlogy(miss, miss))
    return math.log2(vocab) - conditional / math.log(2)


def information_eps_guard(alpha, vocab):
    """log2(p + ε) with ε = 1e-9, the guard the text allows."""
    hit, miss = alpha + (1 - alpha) / vocab, (1 - alpha) / vocab
    eps = 1e-9
    return (
        math.log2(vocab) + hit * torch.log2(hit + eps) + (vocab - 1) * miss * torch.log2(miss + eps)
    )


SOLUTIONS = [
    (check_shift_matrix, shift_loops, 6),
    (check_shift_matrix, shift_block_diag, 6),
    (check_shift_matrix, shift_matrix_power, 6),
    (check_shift_matrix, shift_numpy, 6),
    (check_shift_matrix, shift_complex, 6),
    (check_rope, rope_interleave, 6),
    (check_rope, rope_complex, 6),
    (check_rope, rope_matrices, 6),
    (check_alibi_weights, alibi_masked_fill, 7),
    (check_alibi_weights, alibi_key_bonus, 7),
    (check_alibi_weights, alibi_loops, 7),
    (check_selection_information, information_plogp, 5),
    (check_selection_information, information_kl, 5),
    (check_selection_information, information_xlogy, 5),
    (check_selection_information, information_eps_guard, 5),
]


@pytest.mark.parametrize(
    "check, solution, count", SOLUTIONS, ids=lambda v: getattr(v, "__name__", "")
)
@pytest.mark.parametrize("hidden", [False, True])
def test_correct_solutions_pass_on_the_visible_and_the_hidden_seed(
    check, solution, count, hidden, capsys
):
    check(solution, seed=HIDDEN[check] if hidden else 0)
    assert capsys.readouterr().out == f"✓ {solution.__name__}: all {count} checks passed\n"


def test_the_notebook_hides_the_seeds_this_suite_checks():
    assert notebook_hidden_seeds("07_positional_encoding", exercises) == HIDDEN


def test_every_check_has_three_correct_styles_or_more():
    counts = {check: sum(c is check for c, _, _ in SOLUTIONS) for check in HIDDEN}
    assert min(counts.values()) >= 3, counts


GOT_EXPECTED = re.compile(r"got (\S+), expected (\S+);")


def _never_two_equal_numbers(message):
    for got, expected in GOT_EXPECTED.findall(message):
        assert got != expected, message


@pytest.mark.parametrize("wrong", [shift_float32_theta, shift_float32_theta_math])
@pytest.mark.parametrize("seed", [0, HIDDEN[check_shift_matrix]])
def test_float32_angles_are_named_in_the_shift_matrix(wrong, seed):
    with pytest.raises(AssertionError) as info:
        check_shift_matrix(wrong, seed=seed)
    message = str(info.value)
    assert "float32 round-off: compute θ in float64" in message, message
    _never_two_equal_numbers(message)


@pytest.mark.parametrize("seed", [0, HIDDEN[check_rope]])
def test_float32_angles_are_named_in_rope(seed):
    with pytest.raises(AssertionError) as info:
        check_rope(rope_float32_theta, seed=seed)
    message = str(info.value)
    assert "float32 round-off: compute θ in float64" in message, message
    _never_two_equal_numbers(message)


def test_an_epsilon_guard_larger_than_allowed_fails():
    def eps_too_large(alpha, vocab):
        hit, miss = alpha + (1 - alpha) / vocab, (1 - alpha) / vocab
        eps = 1e-4
        return (
            math.log2(vocab)
            + hit * torch.log2(hit + eps)
            + (vocab - 1) * miss * torch.log2(miss + eps)
        )

    fails_with(check_selection_information, eps_too_large, "wrong values")


@pytest.mark.parametrize("check", list(HIDDEN))
def test_an_unfinished_exercise_says_so(check):
    fails_when_unfinished(check)


# ------------------------------------------------------------------------------- the mistakes


def _shift(offset, dim, base, sign=1.0, exponent=2.0, half=False):
    theta = base ** (-exponent * torch.arange(dim // 2, dtype=torch.float64) / dim)
    R = torch.zeros(dim, dim, dtype=torch.float64)
    for n in range(dim // 2):
        a, b = (n, n + dim // 2) if half else (2 * n, 2 * n + 1)
        c, s = math.cos(offset * theta[n]), math.sin(offset * theta[n])
        R[a, a], R[a, b], R[b, a], R[b, b] = c, sign * s, -sign * s, c
    return R


@pytest.mark.parametrize(
    "wrong, fragment",
    [
        (lambda k, d, b: _shift(k, d, b, sign=-1.0), "R_(−k)"),
        (lambda k, d, b: shift_loops(k, d, b).T, "R_(−k)"),
        (lambda k, d, b: _shift(k, d, b, exponent=1.0), "base^(−i/d)"),
        (lambda k, d, b: _shift(k, d, b, exponent=-2.0), "base^(+2i/d)"),
        (lambda k, d, b: _shift(k, d, b, half=d > 2), "interleaves"),
        (lambda k, d, b: torch.eye(d, dtype=torch.float64), "identity"),
        (lambda k, d, b: shift_loops(k, d, b).float(), "dtype"),
    ],
)
def test_shift_matrix_mistakes_are_named(wrong, fragment):
    fails_with(check_shift_matrix, wrong, fragment)


def _rope_half(x, positions, base):
    d = x.shape[-1]
    theta = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    angles = positions.double()[:, None] * theta
    cos, sin = torch.cos(angles).to(x.dtype), torch.sin(angles).to(x.dtype)
    a, b = x[..., : d // 2], x[..., d // 2 :]
    return torch.cat((a * cos - b * sin, a * sin + b * cos), dim=-1)


@pytest.mark.parametrize(
    "wrong, fragment",
    [
        (_rope_half, "GPT-NeoX"),
        (lambda x, p, b: rope_interleave(x, -p, b), "wrong way"),
        (lambda x, p, b: rope_interleave(x, p, math.sqrt(b)), "base^(−i/d)"),
        (lambda x, p, b: rope_interleave(x, torch.arange(len(p)), b), "row index"),
        (lambda x, p, b: rope_interleave(x, p + 1, b), "from 1"),
        (lambda x, p, b: rope_interleave(x, p, b).double(), "float32"),
        (lambda x, p, b: x.clone(), "wrong values"),
    ],
)
def test_rope_mistakes_are_named(wrong, fragment):
    fails_with(check_rope, wrong, fragment)


def test_rope_refuses_the_package():
    fails_with(
        check_rope,
        lambda x, p, b: attncourse.positional.RotaryEmbedding(x.shape[-1], b)(x, p),
        "from scratch",
    )


def _alibi(scores, slopes, sign=-1.0, causal=True, absolute=False, ones=False, dim=-1, stable=True):
    T = scores.shape[-1]
    i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
    distance = ((i - j).abs() if absolute else (i - j)).to(scores.dtype)
    m = torch.ones_like(slopes) if ones else slopes
    z = scores + sign * m[:, None, None] * distance
    if causal:
        z = z.masked_fill(j > i, float("-inf"))
    e = torch.exp(z - z.amax(dim, keepdim=True) if stable else z)
    return e / e.sum(dim, keepdim=True)


@pytest.mark.parametrize(
    "wrong, fragment",
    [
        (lambda s, m: _alibi(s, m, sign=1.0), "wrong sign"),
        (lambda s, m: _alibi(s, m, causal=False, absolute=True), "mask them out"),
        (lambda s, m: _alibi(s, m, causal=False), "a bonus for them"),
        (lambda s, m: _alibi(s, m, ones=True), "slope 1"),
        (lambda s, m: _alibi(s, m, dim=-2), "over the queries"),
        (lambda s, m: _alibi(s, m, stable=False), "overflow for scores of 1000"),
    ],
)
def test_alibi_mistakes_are_named(wrong, fragment):
    fails_with(check_alibi_weights, wrong, fragment)


def test_alibi_is_from_scratch():
    fails_with(
        check_alibi_weights,
        lambda s, m: torch.softmax(
            s - m[:, None, None] * (torch.arange(s.shape[-1])[:, None] - torch.arange(s.shape[-1])),
            dim=-1,
        ),
        "from scratch",
    )
    fails_with(
        check_alibi_weights,
        lambda s, m: attncourse.positional.alibi_bias(len(m), s.shape[-1]),
        "from scratch",
    )


@pytest.mark.parametrize(
    "wrong, fragment",
    [
        (lambda a, V: information_plogp(a, V) * math.log(2), "in nats"),
        (lambda a, V: information_plogp(a, V) / math.log2(V), "η"),
        (lambda a, V: math.log2(V) - information_plogp(a, V), "H(z | x_j)"),
        (
            lambda a, V: (
                math.log2(V)
                + torch.where(a > 0, a * torch.log2(a.clamp_min(1e-300)), 0.0)
                + (V - 1) * ((1 - a) / V) * torch.log2((1 - a).clamp_min(1e-300) / V)
            ),
            "the random token can also be x_j",
        ),
        (
            lambda a, V: (  # the fresh token read as one of the other V - 1, never x_j
                math.log2(V)
                + torch.where(a > 0, a * torch.log2(a.clamp_min(1e-300)), 0.0)
                + (1 - a) * torch.log2(((1 - a) / (V - 1)).clamp_min(1e-300))
            ),
            "the V − 1 tokens other than x_j",
        ),
        (lambda a, V: a * math.log2(V), "not α · log2 V"),
        (lambda a, V: (V - 1) * a**2 / (2 * math.log(2)), "approximation"),
        (
            lambda a, V: (
                math.log2(V)
                + (a + (1 - a) / V) * torch.log2(a + (1 - a) / V)
                + (V - 1) * ((1 - a) / V) * torch.log2((1 - a) / V)
            ),
            "0 · log 0",
        ),
    ],
)
def test_selection_information_mistakes_are_named(wrong, fragment):
    fails_with(check_selection_information, wrong, fragment)
