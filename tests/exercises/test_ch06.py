"""Chapter 06's exercise checks pass correct solutions written in several styles (on the visible
and the hidden seed) and name each common mistake."""

import itertools
import math

import numpy as np
import pytest
import torch
from exercise_helpers import fails_when_unfinished, fails_with

import attncourse.metrics
from attncourse.exercises.ch06 import (
    check_co_information,
    check_head_importance,
    check_head_terms,
    check_marginal_contributions,
    check_pattern_head_size,
)

HIDDEN = {
    check_head_terms: 61,
    check_pattern_head_size: 62,
    check_co_information: 63,
    check_marginal_contributions: 64,
    check_head_importance: 65,
}

# ------------------------------------------------------------------------ 1: head terms


def terms_einsum(z, W_O):
    B, H, T, d_h = z.shape
    return torch.einsum("bhtk,dhk->bhtd", z, W_O.reshape(W_O.shape[0], H, d_h))


def terms_loop(z, W_O):
    H, d_h = z.shape[1], z.shape[3]
    return torch.stack(
        [z[:, h] @ W_O[:, h * d_h : (h + 1) * d_h].T for h in range(H)], dim=1
    )  # (B, H, T, d)


def terms_zero_padding(z, W_O):
    """Each head alone through the full projection: concat with the other heads set to zero."""
    B, H, T, d_h = z.shape
    out = []
    for h in range(H):
        alone = torch.zeros_like(z)
        alone[:, h] = z[:, h]
        out.append(alone.transpose(1, 2).reshape(B, T, H * d_h) @ W_O.T)
    return torch.stack(out, dim=1)


def terms_broadcast(z, W_O):
    B, H, T, d_h = z.shape
    blocks = W_O.T.reshape(H, d_h, W_O.shape[0])  # (H, d_h, d): rows of W_O^T = columns of W_O
    return (z.unsqueeze(-1) * blocks[None, :, None]).sum(-2)


# ------------------------------------------------------------------------ 2: pattern head size


def size_svd(P):
    L = torch.log(P)
    s = torch.linalg.svdvals(L - L.mean(1, keepdim=True))
    return int((s > 1e-9 * max(1.0, float(s[0]))).sum())


def size_projection(P):
    n = P.shape[0]
    C = torch.eye(n, dtype=P.dtype) - torch.full((n, n), 1.0 / n, dtype=P.dtype)
    s = torch.linalg.svdvals(torch.log(P) @ C)
    return int((s > 1e-9 * max(1.0, float(s.max()))).sum())


def size_numpy(P):
    L = np.log(P.numpy())
    L = L - L.mean(axis=1, keepdims=True)
    s = np.linalg.svd(L, compute_uv=False)
    return int(np.sum(s > 1e-9 * max(1.0, s[0])))


def size_numpy_integer(P):
    """numpy's own count, a numpy.int64, returned as it comes (an int, as the text asks)."""
    L = np.log(P.numpy())
    centred = L - L.mean(axis=1, keepdims=True)
    largest = np.linalg.svd(centred, compute_uv=False)[0]
    return np.linalg.matrix_rank(centred, tol=1e-9 * max(1.0, largest))


def size_matrix_rank(P):
    """torch.linalg.matrix_rank with the stated threshold; the uniform pattern handled first."""
    if torch.allclose(P, torch.full_like(P, 1.0 / P.shape[1])):
        return 0  # all scores equal: no query or key dimension (the exercise's convention)
    L = torch.log(P)
    centred = L - L.mean(1, keepdim=True)
    top = float(torch.linalg.matrix_norm(centred, ord=2))
    return int(torch.linalg.matrix_rank(centred, atol=1e-9 * max(1.0, top), rtol=0.0))


def size_first_column(P):
    """Subtract column 0 of log P from every column (another per-row shift); returns a tensor."""
    L = torch.log(P)
    s = torch.linalg.svdvals(L - L[:, :1])
    return torch.tensor(int((s > 1e-9 * max(1.0, float(s[0]))).sum()))


# ------------------------------------------------------------------------ 3: co-information


def _h_guarded(p):
    """The entropy with the guarded log the texts allow, log2(p + 1e-9): no mask for zeros."""
    return -(p * torch.log2(p + 1e-9)).sum()


def co_guarded_log(joint):
    h = _h_guarded
    return (
        h(joint.sum((1, 2))) + h(joint.sum((0, 2))) + h(joint.sum((0, 1)))
        - h(joint.sum(2)) - h(joint.sum(1)) - h(joint.sum(0)) + h(joint)
    )  # fmt: skip


def marginal_guarded_log(joint):
    H = joint.dim() - 1
    infos = [torch.zeros((), dtype=joint.dtype)]
    for h in range(1, H + 1):
        p = joint.sum(tuple(range(h, H))) if h < H else joint  # (|Z_1|, ..., |Z_h|, |Y|)
        infos.append(_h_guarded(p.sum(-1)) + _h_guarded(p.sum(tuple(range(h)))) - _h_guarded(p))
    return torch.stack(infos[1:]) - torch.stack(infos[:-1])


def _h(p):
    p = p[p > 0]
    return -(p * torch.log2(p)).sum()


def co_inclusion_exclusion(joint):
    return (
        _h(joint.sum((1, 2)))
        + _h(joint.sum((0, 2)))
        + _h(joint.sum((0, 1)))
        - _h(joint.sum(2))
        - _h(joint.sum(1))
        - _h(joint.sum(0))
        + _h(joint)
    )


def co_conditional(joint):
    """I(A; Y) − I(A; Y | B), the conditional one written out over b."""

    def mi(p):  # I of a 2-D table
        return _h(p.sum(1)) + _h(p.sum(0)) - _h(p)

    i_ay = mi(joint.sum(1))
    i_ay_given_b = sum(
        joint[:, b].sum() * mi(joint[:, b] / joint[:, b].sum())
        for b in range(joint.shape[1])
        if joint[:, b].sum() > 0
    )
    return float(i_ay - i_ay_given_b)


def co_loops(joint):
    """Σ p log [p(ab) p(ay) p(by) / (p(a) p(b) p(y) p(aby))] with plain Python loops."""
    a_, b_, y_ = joint.shape
    pa, pb, py = joint.sum((1, 2)), joint.sum((0, 2)), joint.sum((0, 1))
    pab, pay, pby = joint.sum(2), joint.sum(1), joint.sum(0)
    total = 0.0
    for a, b, y in itertools.product(range(a_), range(b_), range(y_)):
        p = float(joint[a, b, y])
        if p > 0:
            ratio = pab[a, b] * pay[a, y] * pby[b, y] / (pa[a] * pb[b] * py[y] * p)
            total += p * math.log2(float(ratio))
    return torch.tensor(total, dtype=torch.float64)


def co_one_element(joint):
    """A one-element float64 tensor of shape (1,), by conditional entropies."""

    def cond(p, given):  # H(all) - H(given)
        return _h(p) - _h(p.sum(tuple(d for d in range(p.dim()) if d not in given)))

    i_ay = _h(joint.sum((1, 2))) - cond(joint.sum(1), (1,))  # H(A) - H(A | Y)
    i_ay_b = cond(joint.sum(2), (1,)) - cond(joint, (1, 2))  # H(A | B) - H(A | B, Y)
    return (i_ay - i_ay_b).reshape(1)


# ------------------------------------------------------------------------ 4: marginal contributions


def marginal_cumulative(joint):
    H = joint.dim() - 1

    def info(h):
        if h == 0:
            return torch.zeros((), dtype=joint.dtype)
        p = joint.sum(tuple(range(h, H))) if h < H else joint
        return _h(p.sum(-1)) + _h(p.sum(tuple(range(h)))) - _h(p)

    cumulative = torch.stack([info(h) for h in range(H + 1)])
    return cumulative.diff()


def marginal_reshaped(joint):
    """Flatten the first h heads into one variable, then I = H(Z) + H(Y) − H(Z, Y)."""
    H, shape = joint.dim() - 1, joint.shape
    out, before = [], 0.0
    for h in range(1, H + 1):
        p = joint.sum(tuple(range(h, H))) if h < H else joint
        p = p.reshape(-1, shape[-1])  # (|Z_1..Z_h|, |Y|)
        now = float(_h(p.sum(1)) + _h(p.sum(0)) - _h(p))
        out.append(now - before)
        before = now
    return torch.tensor(out, dtype=torch.float64)


def marginal_conditional(joint):
    """Δ_h = I(Z_h; Y | Z_<h) = H(Z_≤h) − H(Z_<h) + H(Z_<h, Y) − H(Z_≤h, Y)... as entropies."""
    H = joint.dim() - 1

    def ent(keep_heads, with_y):
        drop = tuple(i for i in range(H) if i not in keep_heads) + (() if with_y else (H,))
        return _h(joint.sum(drop)) if drop else _h(joint)

    deltas = []
    for h in range(H):
        before, upto = tuple(range(h)), tuple(range(h + 1))
        deltas.append(ent(upto, False) - ent(before, False) + ent(before, True) - ent(upto, True))
    return torch.stack(deltas)


# ------------------------------------------------------------------------ 5: head importance


def importance_plain(g):
    imp = g.abs().mean(0)
    return imp / imp.norm(dim=1, keepdim=True)


def importance_sum_sqrt(g):
    imp = g.abs().sum(0)  # the sum: the normalisation removes the 1/N
    return imp / torch.sqrt((imp**2).sum(-1, keepdim=True))


def importance_loops(g):
    N, L, H = g.shape
    out = torch.zeros(L, H, dtype=g.dtype)
    for layer in range(L):
        row = torch.stack([g[:, layer, h].abs().mean() for h in range(H)])
        out[layer] = row / row.norm()
    return out


SOLUTIONS = [
    (check_head_terms, terms_einsum, 4),
    (check_head_terms, terms_loop, 4),
    (check_head_terms, terms_zero_padding, 4),
    (check_head_terms, terms_broadcast, 4),
    (check_pattern_head_size, size_svd, 7),
    (check_pattern_head_size, size_projection, 7),
    (check_pattern_head_size, size_numpy, 7),
    (check_pattern_head_size, size_numpy_integer, 7),
    (check_pattern_head_size, size_first_column, 7),
    (check_pattern_head_size, size_matrix_rank, 7),
    (check_co_information, co_inclusion_exclusion, 6),
    (check_co_information, co_guarded_log, 6),
    (check_co_information, co_conditional, 6),
    (check_co_information, co_loops, 6),
    (check_co_information, co_one_element, 6),
    (check_marginal_contributions, marginal_cumulative, 5),
    (check_marginal_contributions, marginal_reshaped, 5),
    (check_marginal_contributions, marginal_conditional, 5),
    (check_marginal_contributions, marginal_guarded_log, 5),
    (check_head_importance, importance_plain, 4),
    (check_head_importance, importance_sum_sqrt, 4),
    (check_head_importance, importance_loops, 4),
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


@pytest.mark.parametrize("check", list(HIDDEN))
def test_an_unfinished_exercise_says_so(check):
    fails_when_unfinished(check)


# ------------------------------------------------------------------------------- the mistakes


def _terms_rows(z, W_O):
    B, H, T, d_h = z.shape
    return torch.einsum("bhtk,hkd->bhtd", z, W_O.reshape(H, d_h, W_O.shape[0]))


def _terms_interleaved(z, W_O):
    B, H, T, d_h = z.shape
    return torch.einsum("bhtk,dkh->bhtd", z, W_O.reshape(W_O.shape[0], d_h, H))


@pytest.mark.parametrize(
    "wrong, fragment",
    [
        (_terms_rows, "**rows**"),
        (_terms_interleaved, "interleaves"),
        (lambda z, W: terms_einsum(z, W) / z.shape[1], "not averaged"),
        (lambda z, W: terms_einsum(z, W.T), "**rows**"),  # a column block of W_O^T is a row block
    ],
)
def test_head_terms_mistakes_are_named(wrong, fragment):
    fails_with(check_head_terms, wrong, fragment)


def _rank(M):
    s = torch.linalg.svdvals(M)
    return int((s > 1e-9 * max(1.0, float(s[0]))).sum())


@pytest.mark.parametrize(
    "wrong, fragment",
    [
        (lambda P: _rank(torch.log(P)), "rank of log P itself"),
        (lambda P: _rank(P), "the rank of P"),
        (
            lambda P: _rank(torch.log(P) - torch.log(P).mean(0, keepdim=True)),
            "**column** means",
        ),
        (
            lambda P: _rank(
                (lambda R: R - R.mean(0, keepdim=True))(
                    torch.log(P) - torch.log(P).mean(1, keepdim=True)
                )
            ),
            "centre the rows only",
        ),
        (lambda P: P.shape[0] - 1, "whatever the pattern"),
        # right wherever the all-ones vector lies in the row space of log P: not when every row
        # is the same distribution
        (lambda P: _rank(torch.log(P)) - 1, "one dimension, the answer is 1 here"),
        (lambda P: float(size_svd(P)), "return an int"),
    ],
)
def test_pattern_head_size_mistakes_are_named(wrong, fragment):
    fails_with(check_pattern_head_size, wrong, fragment)


@pytest.mark.parametrize(
    "wrong, fragment",
    [
        (lambda j: -co_inclusion_exclusion(j), "sign is flipped"),
        (lambda j: co_inclusion_exclusion(j) * math.log(2), "nats"),
        (lambda j: _h(j.sum((1, 2))) + _h(j.sum((0, 2))) - _h(j.sum(2)), "ignores Y"),
        (lambda j: 2 * co_inclusion_exclusion(j), "counted twice"),
        (
            lambda j: (
                (lambda p: -(p * torch.log2(p)).sum())(j.sum((1, 2)))
                + (lambda p: -(p * torch.log2(p)).sum())(j.sum((0, 2)))
                + (lambda p: -(p * torch.log2(p)).sum())(j.sum((0, 1)))
                - (lambda p: -(p * torch.log2(p)).sum())(j.sum(2))
                - (lambda p: -(p * torch.log2(p)).sum())(j.sum(1))
                - (lambda p: -(p * torch.log2(p)).sum())(j.sum(0))
                + (lambda p: -(p * torch.log2(p)).sum())(j)
            ),
            "0 · log 0",
        ),
    ],
)
def test_co_information_mistakes_are_named(wrong, fragment):
    fails_with(check_co_information, wrong, fragment)


def test_co_information_is_from_scratch():
    fails_with(
        check_co_information,
        lambda j: attncourse.metrics.co_information(j, 0, 1, 2),
        "from scratch",
    )
    fails_with(
        check_co_information,
        lambda j: torch.special.entr(j).sum() / math.log(2),
        "from scratch",
    )


def _singles(joint):
    H = joint.dim() - 1
    out = []
    for h in range(H):
        p = joint.sum(tuple(i for i in range(H) if i != h)) if H > 1 else joint
        out.append(_h(p.sum(1)) + _h(p.sum(0)) - _h(p))
    return torch.stack(out)


def _cumulative(joint):
    return torch.cumsum(marginal_cumulative(joint), 0)


def _printed(joint):
    singles, cumulative = _singles(joint), _cumulative(joint)
    before = torch.cat([torch.zeros(1, dtype=joint.dtype), cumulative[:-1]])
    return singles - before


def _reversed(joint):
    H = joint.dim() - 1
    return marginal_cumulative(joint.permute(*reversed(range(H)), H)).flip(0)


@pytest.mark.parametrize(
    "wrong, fragment",
    [
        (_printed, "as printed"),
        (_singles, "own informations"),
        (_cumulative, "successive differences"),
        (_reversed, "reverse order"),
        (lambda j: marginal_cumulative(j) * math.log(2), "nats"),
    ],
)
def test_marginal_contributions_mistakes_are_named(wrong, fragment):
    fails_with(check_marginal_contributions, wrong, fragment)


def test_marginal_contributions_is_from_scratch():
    fails_with(
        check_marginal_contributions,
        lambda j: torch.tensor(
            [attncourse.metrics.mutual_information(j, tuple(range(j.dim() - 1)), j.dim() - 1)]
        ),
        "from scratch",
    )


@pytest.mark.parametrize(
    "wrong, fragment",
    [
        (
            lambda g: (lambda imp: imp / imp.norm(dim=1, keepdim=True))(g.mean(0).abs()),
            "comes after the mean",
        ),
        (
            lambda g: (lambda imp: imp / imp.norm(dim=1, keepdim=True))((g**2).mean(0)),
            "Fisher",
        ),
        (lambda g: g.abs().mean(0), "unit ℓ2 norm"),
        (lambda g: g.abs().mean(0) / g.abs().mean(0).norm(), "all layers together"),
        (
            lambda g: (lambda imp: imp / imp.norm(dim=0, keepdim=True))(g.abs().mean(0)),
            "(dim 0)",
        ),
        (
            lambda g: (lambda imp: imp / imp.sum(dim=1, keepdim=True))(g.abs().mean(0)),
            "ℓ1 norm",
        ),
    ],
)
def test_head_importance_mistakes_are_named(wrong, fragment):
    fails_with(check_head_importance, wrong, fragment)


# ------------------------------------------------------------------ the stated rules, named


def test_head_terms_and_importance_name_the_dtype_rule():
    """The text says "keep the input's dtype"; an answer computed in float64 for float32 inputs
    is refused with those words, not as wrong values."""
    fails_with(
        check_head_terms,
        lambda z, W: terms_einsum(z.double(), W.double()),
        "returned dtype torch.float64, expected torch.float32",
        "keep the input's dtype",
    )
    fails_with(
        check_head_importance,
        lambda g: importance_plain(g.double()),
        "returned dtype torch.float64, expected torch.float32",
        "keep the input's dtype",
    )


def test_information_answers_in_float32_are_refused_by_name():
    fails_with(
        check_co_information,
        lambda j: co_inclusion_exclusion(j.float()),
        "computed in torch.float32: keep the table's dtype, float64",
    )
    fails_with(
        check_marginal_contributions,
        lambda j: marginal_cumulative(j.float()),
        "computed in torch.float32: keep the table's dtype, float64",
    )


def test_the_uniform_pattern_convention_is_named_not_misdiagnosed():
    """An answer of "at least 1" differs only on the uniform pattern: the check names the
    convention (d_k = 0), not a missing centring."""
    message = fails_with(
        check_pattern_head_size,
        lambda P: max(1, size_svd(P)),
        "the uniform pattern counts as d_k = 0",
    )
    assert "centre each row" not in message and "rank of P" not in message
