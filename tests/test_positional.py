"""Sinusoidal encodings and their shift matrices, learned positions, RoPE and ALiBi checked against
their papers' formulas (written out here) and PyTorch's nn.Embedding."""

import math

import pytest
import torch
from torch.testing import assert_close

from attncourse.attention import scaled_dot_product_attention
from attncourse.positional import (
    LearnedPositionalEmbedding,
    RotaryEmbedding,
    alibi_bias,
    alibi_slopes,
    sinusoidal_encoding,
    sinusoidal_shift_matrix,
)

DT = torch.float64


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


# ----------------------------------------------------------------------------- sinusoidal


@pytest.mark.parametrize("P, d, base", [(20, 8, 10000.0), (7, 2, 10000.0), (16, 6, 100.0)])
def test_sinusoidal_matches_formula(P, d, base):
    pe = sinusoidal_encoding(P, d, base, dtype=DT)
    expected = torch.empty(P, d, dtype=DT)
    for pos in range(P):
        for i in range(d // 2):
            angle = pos / base ** (2 * i / d)
            expected[pos, 2 * i] = math.sin(angle)
            expected[pos, 2 * i + 1] = math.cos(angle)
    assert_close(pe, expected)


def test_sinusoidal_dtype_default_and_cast():
    assert sinusoidal_encoding(4, 4).dtype == torch.get_default_dtype()
    assert_close(
        sinusoidal_encoding(50, 16, dtype=torch.float32),
        sinusoidal_encoding(50, 16, dtype=DT).float(),
    )


def block_rotation(k: int, d: int, base: float = 10000.0) -> torch.Tensor:
    """M_k acting on (sin, cos) pairs: sin(a + b) = sin a cos b + cos a sin b,
    cos(a + b) = cos a cos b - sin a sin b.
    """
    M = torch.zeros(d, d, dtype=DT)
    for i in range(d // 2):
        w = k / base ** (2 * i / d)
        M[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = torch.tensor(
            [[math.cos(w), math.sin(w)], [-math.sin(w), math.cos(w)]]
        )
    return M


@pytest.mark.parametrize("k", [1, 3, 17])
def test_sinusoidal_relative_position_is_a_fixed_rotation(k):
    """Source 000 Lemma 14.3.21: PE[pos + k] = M_k PE[pos] with M_k independent of pos."""
    P, d = 40, 12
    pe = sinusoidal_encoding(P + k, d, dtype=DT)
    M = block_rotation(k, d)
    assert_close(pe[k:], pe[:-k] @ M.T)  # every pos at once
    assert not torch.allclose(pe[k:], pe[:-k] @ block_rotation(k + 1, d).T, atol=1e-3)


def test_sinusoidal_bad_sizes():
    with pytest.raises(ValueError, match="even"):
        sinusoidal_encoding(10, 7)
    with pytest.raises(ValueError, match="num_positions must be > 0"):
        sinusoidal_encoding(0, 8)
    with pytest.raises(ValueError, match="dim must be > 0"):
        sinusoidal_encoding(4, -2)


# ----------------------------------------------------------------------------- RoPE


def rope_matrix(m: int, d: int, base: float = 10000.0) -> torch.Tensor:
    """RoFormer's R^d_{Theta, m}: block-diagonal 2x2 rotations by m * theta_i,
    theta_i = base^(-2i/d).
    """
    R = torch.zeros(d, d, dtype=DT)
    for i in range(d // 2):
        a = m * base ** (-2 * i / d)
        R[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = torch.tensor(
            [[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]]
        )
    return R


@pytest.mark.parametrize("positions", [None, [3, 7, 0, 100, 2048]])
@pytest.mark.parametrize("base", [10000.0, 50.0])
def test_rope_matches_rotation_matrix(positions, base):
    B, H, T, d = 2, 3, 5, 8
    rope = RotaryEmbedding(d, base)
    x = torch.randn(B, H, T, d, dtype=DT)
    pos = list(range(T)) if positions is None else positions
    out = rope(x) if positions is None else rope(x, torch.tensor(positions))
    for t, m in enumerate(pos):
        expected = x[:, :, t] @ rope_matrix(m, d, base).T  # R_m x for each (b, h)
        assert_close(out[:, :, t], expected)


def test_rope_position_zero_is_identity_and_norms_are_kept():
    rope = RotaryEmbedding(16)
    x = torch.randn(4, 10, 16, dtype=DT)
    out = rope(x)
    assert_close(out[:, 0], x[:, 0])
    assert_close(out.norm(dim=-1), x.norm(dim=-1))
    assert not torch.allclose(out[:, 1:], x[:, 1:], atol=1e-3)


def test_rope_score_depends_only_on_offset():
    d = 8
    rope = RotaryEmbedding(d)
    q, k = torch.randn(1, d, dtype=DT), torch.randn(1, d, dtype=DT)

    def score(m, n):
        return (rope(q, torch.tensor([m])) @ rope(k, torch.tensor([n])).T).item()

    for diff in (0, 3, -5):
        scores = [score(n + diff, n) for n in (0, 1, 10, 250)]
        assert_close(torch.tensor(scores, dtype=DT), torch.full((4,), scores[0], dtype=DT))
    assert abs(score(3, 0) - score(4, 0)) > 1e-3  # and it does depend on the offset
    # <R_m q, R_n k> = <q, R_{n-m} k>
    assert_close(score(9, 2), (q @ (k @ rope_matrix(2 - 9, d).T).T).item())


def test_rope_float32():
    rope = RotaryEmbedding(8)
    x = torch.randn(3, 6, 8)
    out = rope(x)
    assert out.dtype == torch.float32
    assert_close(out, rope(x.double()).float())


def test_rope_gradcheck():
    rope = RotaryEmbedding(6)
    x = torch.randn(2, 4, 6, dtype=DT, requires_grad=True)
    assert torch.autograd.gradcheck(lambda x: rope(x, torch.tensor([0, 5, 2, 9])), (x,))


def test_rope_bad_input():
    with pytest.raises(ValueError, match="even"):
        RotaryEmbedding(7)
    rope = RotaryEmbedding(8)
    with pytest.raises(ValueError, match="head_dim 6"):
        rope(torch.randn(2, 3, 6))
    with pytest.raises(ValueError, match="floating-point"):
        rope(torch.ones(3, 8, dtype=torch.long))
    with pytest.raises(ValueError, match="length 2"):
        rope(torch.randn(3, 8), torch.tensor([0, 1]))
    with pytest.raises(ValueError, match="integer"):
        rope(torch.randn(3, 8), torch.tensor([0.0, 1.0, 2.0]))
    with pytest.raises(ValueError, match="at least 2-D"):
        rope(torch.randn(8))


# ----------------------------------------------------------------------------- ALiBi


def paper_slopes(n):
    """The ALiBi paper's reference code (Press et al. 2022), restated."""

    def power_of_2(n):
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        return [start * start**i for i in range(n)]

    if math.log2(n).is_integer():
        return power_of_2(n)
    closest = 2 ** math.floor(math.log2(n))
    return power_of_2(closest) + paper_slopes(2 * closest)[0::2][: n - closest]


def test_alibi_slopes_power_of_two():
    assert_close(alibi_slopes(8, dtype=DT), torch.tensor([2.0**-h for h in range(1, 9)], dtype=DT))
    assert_close(
        alibi_slopes(16, dtype=DT), torch.tensor([2.0 ** (-h / 2) for h in range(1, 17)], dtype=DT)
    )


def test_alibi_slopes_other_head_counts():
    expected_12 = [2.0**-h for h in range(1, 9)] + [2.0**-0.5, 2.0**-1.5, 2.0**-2.5, 2.0**-3.5]
    assert_close(alibi_slopes(12, dtype=DT), torch.tensor(expected_12, dtype=DT))
    for H in (1, 2, 3, 5, 6, 12, 20, 24, 40):
        assert_close(
            alibi_slopes(H, dtype=DT), torch.tensor(paper_slopes(H), dtype=DT), msg=f"H={H}"
        )


@pytest.mark.parametrize("T, S", [(5, None), (3, 6), (6, 2)])
def test_alibi_bias_values(T, S):
    H = 4
    bias = alibi_bias(H, T, S, dtype=DT)
    S_ = T if S is None else S
    slopes = paper_slopes(H)
    expected = torch.tensor(
        [[[-slopes[h] * abs(i - j) for j in range(S_)] for i in range(T)] for h in range(H)],
        dtype=DT,
    )
    assert_close(bias, expected)
    for i in range(T):  # causal part: the paper's -m (i - j)
        for j in range(min(i + 1, S_)):
            assert bias[1, i, j].item() == pytest.approx(-slopes[1] * (i - j))


def test_alibi_bias_in_attention():
    """As a float mask, the bias is added to the scaled scores before the softmax."""
    B, H, T, d = 2, 4, 5, 8
    q, k, v = (torch.randn(B, H, T, d, dtype=DT) for _ in range(3))
    bias = alibi_bias(H, T, dtype=DT)
    out, weights = scaled_dot_product_attention(q, k, v, bias)
    expected_w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(d) + bias, dim=-1)
    assert_close(weights, expected_w)
    assert_close(out, expected_w @ v)


def test_alibi_bad_sizes():
    with pytest.raises(ValueError, match="num_heads must be > 0"):
        alibi_slopes(0)
    with pytest.raises(ValueError, match="T must be > 0"):
        alibi_bias(4, 0)


# ----------------------------------------------------------------------------- shift matrix


@pytest.mark.parametrize("k, d, base", [(1, 8, 10000.0), (17, 12, 10000.0), (-4, 6, 100.0)])
def test_shift_matrix_is_the_block_rotation_of_the_angle_sum_formulas(k, d, base):
    assert_close(sinusoidal_shift_matrix(k, d, base, dtype=DT), block_rotation(k, d, base))


@pytest.mark.parametrize("k", [0, 1, 5, -3, 250])
def test_shift_matrix_moves_every_position_by_k(k):
    """Source 000 Lemma 14.3.21: PE[pos + k] = R_k PE[pos], the same R_k at every pos."""
    P, d = 60, 16
    pe = sinusoidal_encoding(P + 300, d, dtype=DT)
    R = sinusoidal_shift_matrix(k, d, dtype=DT)
    start = max(0, -k)
    assert_close(pe[start + k : start + k + P], pe[start : start + P] @ R.T)


def test_shift_matrices_compose_and_invert():
    R = lambda k: sinusoidal_shift_matrix(k, 10, dtype=DT)  # noqa: E731
    assert_close(R(3) @ R(4), R(7))
    assert_close(R(-5), R(5).T)
    assert_close(R(5) @ R(5).T, torch.eye(10, dtype=DT))
    assert_close(R(0), torch.eye(10, dtype=DT))
    assert sinusoidal_shift_matrix(2, 4).dtype == torch.get_default_dtype()


def test_shift_matrix_bad_input():
    with pytest.raises(ValueError, match="even"):
        sinusoidal_shift_matrix(1, 5)
    with pytest.raises(ValueError, match="offset must be an int"):
        sinusoidal_shift_matrix(1.5, 4)
    with pytest.raises(ValueError, match="offset must be an int"):
        sinusoidal_shift_matrix(True, 4)
    with pytest.raises(ValueError, match="base must be > 0"):
        sinusoidal_shift_matrix(1, 4, base=0.0)


# ----------------------------------------------------------------------------- learned table


def test_learned_positions_add_the_table_row_of_each_position():
    """y = x + E[pos], against nn.Embedding holding the same table."""
    P, d = 12, 6
    table = LearnedPositionalEmbedding(P, d).double()
    reference = torch.nn.Embedding(P, d).double()
    with torch.no_grad():
        reference.weight.copy_(table.weight)
    x = torch.randn(2, 3, 7, d, dtype=DT)
    assert_close(table(x), x + reference(torch.arange(7)))
    positions = torch.tensor([11, 0, 3, 3, 5, 9, 1])
    assert_close(table(x, positions), x + reference(positions))
    y = torch.randn(5, d, dtype=DT)
    expected = torch.stack([y[t] + table.weight[t] for t in range(5)])  # row by row
    assert_close(table(y), expected)


def test_learned_positions_initialisation_and_dtype():
    torch.manual_seed(3)
    table = LearnedPositionalEmbedding(4000, 8, init_std=0.5)
    assert abs(float(table.weight.detach().std()) - 0.5) < 0.02
    assert table(torch.zeros(3, 8, dtype=DT)).dtype == DT  # the table is cast to x's dtype
    assert "num_positions=4000, dim=8" in repr(table)


def test_learned_positions_gradcheck():
    table = LearnedPositionalEmbedding(6, 4).double()
    x = torch.randn(2, 5, 4, dtype=DT, requires_grad=True)
    positions = torch.tensor([5, 1, 1, 0, 2])
    assert torch.autograd.gradcheck(lambda x, w: x + w[positions], (x, table.weight))
    assert torch.autograd.gradcheck(lambda x: table(x, positions), (x,))
    table(x, positions).sum().backward()
    counts = torch.bincount(positions, minlength=6).to(DT) * 2  # batch of 2
    assert_close(table.weight.grad, counts[:, None].expand(6, 4))  # each use adds 1


def test_learned_positions_cannot_extrapolate_and_reject_bad_input():
    table = LearnedPositionalEmbedding(8, 4)
    with pytest.raises(ValueError, match="cannot extrapolate"):
        table(torch.zeros(1, 9, 4))
    with pytest.raises(ValueError, match=r"lie in \[0, 7\]"):
        table(torch.zeros(2, 4), torch.tensor([0, 8]))
    with pytest.raises(ValueError, match=r"lie in \[0, 7\]"):
        table(torch.zeros(2, 4), torch.tensor([-1, 0]))
    with pytest.raises(ValueError, match="integer"):
        table(torch.zeros(2, 4), torch.tensor([0.0, 1.0]))
    with pytest.raises(ValueError, match="length 2"):
        table(torch.zeros(3, 4), torch.tensor([0, 1]))
    with pytest.raises(ValueError, match="feature size 5"):
        table(torch.zeros(3, 5))
    with pytest.raises(ValueError, match="floating-point"):
        table(torch.zeros(3, 4, dtype=torch.long))
    with pytest.raises(ValueError, match="num_positions must be > 0"):
        LearnedPositionalEmbedding(0, 4)
    with pytest.raises(ValueError, match="init_std must be > 0"):
        LearnedPositionalEmbedding(3, 4, init_std=0.0)
