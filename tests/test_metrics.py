"""attncourse.metrics: attention entropy (Eq. 14.3.3, Lemma 14.3.2) and exact discrete
information measures (used to check source 000 Lemma 14.3.3, Thm. 14.3.1, Eq. 14.3.7)."""

import math

import pytest
import torch
from torch.testing import assert_close

from attncourse.attention import scaled_dot_product_attention
from attncourse.masks import padding_mask
from attncourse.metrics import (
    attention_entropy,
    co_information,
    effective_support,
    entropy,
    mutual_information,
    normalized_entropy,
)


@pytest.mark.parametrize("n", [1, 2, 7, 64])
def test_uniform_weights_have_entropy_log_n_and_one_hot_zero(n):
    uniform = torch.full((3, n), 1.0 / n, dtype=torch.float64)
    assert_close(attention_entropy(uniform), torch.full((3,), math.log(n), dtype=torch.float64))
    one_hot = torch.zeros(3, n, dtype=torch.float64)
    one_hot[:, -1] = 1
    assert torch.equal(attention_entropy(one_hot), torch.zeros(3, dtype=torch.float64))
    assert_close(effective_support(uniform), torch.full((3,), float(n), dtype=torch.float64))
    assert torch.equal(normalized_entropy(one_hot), torch.zeros(3, dtype=torch.float64))


def test_entropy_of_a_bhts_tensor_agrees_with_the_direct_formula():
    q, k, v = (torch.randn(2, 3, 5, 4, dtype=torch.float64) for _ in range(3))  # (B, H, T, d)
    _, w = scaled_dot_product_attention(q, k, v)  # (B, H, T, S)
    direct = -(w * w.log()).sum(-1)  # no zeros here, so the plain formula is defined
    h = attention_entropy(w)
    assert h.shape == (2, 3, 5)
    assert_close(h, direct)
    assert ((h >= 0) & (h <= math.log(5) + 1e-12)).all()
    assert_close(attention_entropy(w.transpose(-1, -2), dim=-2), direct)  # any dim


def test_zero_weights_count_as_zero_log_zero_with_finite_gradient():
    w = torch.tensor(
        [[0.5, 0.5, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]], dtype=torch.float64, requires_grad=True
    )
    h = attention_entropy(w)
    assert_close(h, torch.tensor([math.log(2), 0.0], dtype=torch.float64))
    h.sum().backward()
    assert torch.isfinite(w.grad).all()
    # a fully masked query (zero weights, from the package's convention) has entropy 0, not NaN
    q = k = v = torch.randn(2, 1, 3, 4)
    _, weights = scaled_dot_product_attention(q, k, v, padding_mask(torch.tensor([3, 0])))
    assert torch.equal(attention_entropy(weights)[1], torch.zeros(1, 3))


def test_entropy_stays_within_lemma_14_3_2_bounds_on_random_distributions():
    w = torch.distributions.Dirichlet(torch.full((10,), 0.3, dtype=torch.float64)).sample(
        (1000,)
    )  # (1000, 10)
    h = attention_entropy(w)
    assert (h >= 0).all() and (h <= math.log(10)).all()
    assert (h >= -w.max(-1).values.log() - 1e-12).all()  # min-entropy bound: H >= -log max alpha


def test_negative_or_integer_weights_are_rejected():
    with pytest.raises(ValueError, match=">= 0"):
        attention_entropy(torch.tensor([0.5, -0.1, 0.6]))
    with pytest.raises(ValueError, match="floating-point"):
        attention_entropy(torch.tensor([1, 0]))


def xor_joint():
    p = torch.zeros(2, 2, 2, dtype=torch.float64)  # p(x1, x2, y), y = x1 xor x2
    for a in (0, 1):
        for b in (0, 1):
            p[a, b, a ^ b] = 0.25
    return p


def test_discrete_entropy_and_mutual_information_exact_values():
    fair_bits = torch.full((2, 2), 0.25, dtype=torch.float64)  # two independent fair bits
    assert entropy(fair_bits) == pytest.approx(2.0)
    assert entropy(fair_bits, dims=0) == pytest.approx(1.0)
    assert entropy(fair_bits, dims=0, base=math.e) == pytest.approx(math.log(2))
    assert mutual_information(fair_bits, 0, 1) == pytest.approx(0.0, abs=1e-12)
    copy = torch.tensor([[0.5, 0.0], [0.0, 0.5]], dtype=torch.float64)  # Y = X
    assert mutual_information(copy, 0, 1) == pytest.approx(1.0)
    # binary symmetric channel with flip probability 0.1: I = 1 - h(0.1)
    bsc = torch.tensor([[0.45, 0.05], [0.05, 0.45]], dtype=torch.float64)
    h = -(0.1 * math.log2(0.1) + 0.9 * math.log2(0.9))
    assert mutual_information(bsc, 0, 1) == pytest.approx(1 - h)
    assert mutual_information(bsc.T.contiguous(), 1, 0) == pytest.approx(1 - h)


def test_xor_synergy_and_copy_redundancy():
    p = xor_joint()
    assert mutual_information(p, 0, 2) == pytest.approx(0.0, abs=1e-12)
    assert mutual_information(p, 1, 2) == pytest.approx(0.0, abs=1e-12)
    assert mutual_information(p, (0, 1), 2) == pytest.approx(1.0)
    assert mutual_information(p, 0, 2, given=1) == pytest.approx(1.0)
    assert co_information(p, 0, 1, 2) == pytest.approx(-1.0)  # synergy
    r = torch.zeros(2, 2, 2, dtype=torch.float64)
    r[0, 0, 0] = r[1, 1, 1] = 0.5  # X1 = X2 = Y
    assert co_information(r, 0, 1, 2) == pytest.approx(1.0)  # redundancy
    # chain rule, exactly: I(X1,X2;Y) = I(X1;Y) + I(X2;Y) - I(X1;X2;Y), on a random joint
    g = torch.rand(3, 4, 2, dtype=torch.float64)
    g = g / g.sum()
    lhs = mutual_information(g, (0, 1), 2)
    rhs = mutual_information(g, 0, 2) + mutual_information(g, 1, 2) - co_information(g, 0, 1, 2)
    assert lhs == pytest.approx(rhs)


def test_bad_joint_tables_are_rejected():
    with pytest.raises(ValueError, match="sum to 1"):
        entropy(torch.ones(2, 2, dtype=torch.float64))
    with pytest.raises(ValueError, match="only 2"):
        mutual_information(torch.full((2, 2), 0.25, dtype=torch.float64), 0, 3)
    with pytest.raises(ValueError, match="different dimensions"):
        mutual_information(torch.full((2, 2), 0.25, dtype=torch.float64), 0, 0)
