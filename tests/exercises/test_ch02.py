"""Chapter 02's exercise checks pass correct solutions and name each common mistake specifically."""

import math

import pytest
import torch
from exercise_helpers import blank, fails_with

import attncourse.chapters.ch02_seq2seq_bottleneck
from attncourse.attention import AdditiveAttention, LuongAttention, softmax
from attncourse.exercises import ch02 as exercises_ch02
from attncourse.exercises.ch02 import (
    check_additive_scores,
    check_bottleneck_bits,
    check_local_m_weights,
    check_mutual_information,
)

# ------------------------------------------------------------------------- 1: additive scores


def additive(s, H, W, U, v):
    return torch.tanh((s @ W.T)[:, None, :] + H @ U.T) @ v


def additive_loops(s, H, W, U, v):  # one (b, j) at a time, as the formula reads
    B, S = H.shape[:2]
    e = torch.empty(B, S, dtype=H.dtype)
    for b in range(B):
        for j in range(S):
            e[b, j] = v @ torch.tanh(W @ s[b] + U @ H[b, j])
    return e


def test_additive_check_passes_correct_solutions(capsys):
    check_additive_scores(additive)
    check_additive_scores(additive_loops, seed=3)
    assert "all 5 checks passed" in capsys.readouterr().out


@pytest.mark.parametrize(
    "wrong, fragment",
    [
        (lambda s, H, W, U, v: ((s @ W.T)[:, None] + H @ U.T) @ v, "missing the tanh"),
        (
            lambda s, H, W, U, v: (torch.tanh(s @ W.T)[:, None] + torch.tanh(H @ U.T)) @ v,
            "separately",
        ),
        (lambda s, H, W, U, v: additive(s, H, U, W, v), "swapped"),
        (lambda s, H, W, U, v: additive(s, H, W.T, U.T, v), "transposed"),
        (lambda s, H, W, U, v: softmax(additive(s, H, W, U, v)), "softmax of the scores"),
        (lambda s, H, W, U, v: (H @ s[:, :, None])[..., 0], "dot score"),
    ],
)
def test_additive_check_names_each_mistake(wrong, fragment):
    fails_with(check_additive_scores, wrong, fragment)


def test_additive_check_reports_blank_and_refuses_the_package_module():
    fails_with(check_additive_scores, blank, "not implemented yet")
    fails_with(check_additive_scores, lambda s, H, W, U, v: None, "forget `return`")

    def with_module(s, H, W, U, v):
        attn = AdditiveAttention(W.shape[1], U.shape[1], W.shape[0]).to(s.dtype)
        attn.W_a.weight.data, attn.U_a.weight.data, attn.v_a.weight.data = W, U, v[None]
        return attn.score(s[:, None], H)[:, 0]

    fails_with(check_additive_scores, with_module, "from scratch", "AdditiveAttention.score")
    attn = AdditiveAttention(3, 3, 3)  # restored afterwards
    assert attn(torch.randn(2, 3), torch.randn(2, 4, 3))[1].shape == (2, 4)


# ------------------------------------------------------------------------- 2: local-m


def local_m(scores, t, D):
    j = torch.arange(scores.shape[-1])
    inside = (j - t).abs() <= D
    s = scores.masked_fill(~inside, float("-inf"))
    e = torch.exp(s - s.amax(dim=-1, keepdim=True))
    return e / e.sum(dim=-1, keepdim=True)


def window_softmax(scores, t, D, lo, hi, stable=True):
    j = torch.arange(scores.shape[-1])
    inside = ((j - t) >= lo) & ((j - t) <= hi)
    s = scores.masked_fill(~inside, float("-inf"))
    e = torch.exp(s - s.amax(dim=-1, keepdim=True)) if stable else torch.exp(s)
    return e / e.sum(dim=-1, keepdim=True)


def test_local_m_check_passes_a_correct_solution(capsys):
    check_local_m_weights(local_m)
    check_local_m_weights(local_m, seed=7)
    assert "all 8 checks passed" in capsys.readouterr().out


def zeroed(scores, t, D):
    e = torch.exp(scores - scores.amax(-1, keepdim=True))
    w = e / e.sum(-1, keepdim=True)
    return w * ((torch.arange(scores.shape[-1]) - t).abs() <= D)


@pytest.mark.parametrize(
    "wrong, fragment",
    [
        (zeroed, "no longer sum to 1"),
        (
            lambda s, t, D: window_softmax(s, t, D, -(D - 1), D - 1) if D > 0 else local_m(s, t, D),
            "both ends",
        ),
        (lambda s, t, D: window_softmax(s, t, D, -(D + 1), D + 1), "too wide"),
        (lambda s, t, D: window_softmax(s, t, D, 0, D), "only reaches forward"),
        (lambda s, t, D: window_softmax(s, t, D, -D, 0), "only reaches back"),
        (lambda s, t, D: window_softmax(s, t, D, -100, 100), "global attention"),
        (lambda s, t, D: window_softmax(s, t, D, -D, D, stable=False), "overflow"),
    ],
)
def test_local_m_check_names_each_mistake(wrong, fragment):
    fails_with(check_local_m_weights, wrong, fragment)


def test_local_m_check_refuses_softmax_builtins_and_the_package_softmax():
    fails_with(check_local_m_weights, blank, "not implemented yet")
    fails_with(check_local_m_weights, lambda s, t, D: torch.softmax(s, -1), "from scratch")
    fails_with(
        check_local_m_weights,
        lambda s, t, D: softmax(s, mask=(torch.arange(s.shape[-1]) - t).abs() <= D),
        "from scratch",
    )
    assert torch.allclose(softmax(torch.zeros(2)), torch.tensor([0.5, 0.5]))  # restored afterwards


def test_local_m_check_refuses_the_package_alignment_module():
    def with_luong(
        scores, t, D
    ):  # scores as keys of a dot-score query e_t: softmax(q . k_j) = softmax(scores)
        S = scores.shape[-1]
        keys = scores.reshape(-1, S, 1)
        query = torch.ones(keys.shape[0], 1, dtype=scores.dtype)
        mask = ((torch.arange(S) - t).abs() <= D)[None, :]
        return LuongAttention(1, score="dot")(query, keys, mask=mask)[1].reshape(scores.shape)

    assert torch.allclose(
        with_luong(torch.tensor([1.0, 2.0, 3.0]), 0, 1),
        local_m(torch.tensor([1.0, 2.0, 3.0]), 0, 1),
    )
    fails_with(check_local_m_weights, with_luong, "from scratch", "LuongAttention")
    assert LuongAttention(2, score="dot")(torch.ones(1, 2), torch.ones(1, 3, 2))[1].shape == (
        1,
        3,
    )  # restored


# ------------------------------------------------------------------------- 3: mutual information


def mi(joint):
    px, py = joint.sum(1, keepdim=True), joint.sum(0, keepdim=True)
    nz = joint > 0
    return float((joint[nz] * (joint / (px * py))[nz].log2()).sum())


def entropy(p):
    p = p[p > 0]
    return -(p * p.log2()).sum()


def test_mutual_information_check_passes_correct_solutions(capsys):
    check_mutual_information(mi)
    check_mutual_information(
        lambda j: entropy(j.sum(1)) + entropy(j.sum(0)) - entropy(j), seed=2
    )  # a tensor is fine
    assert "all 6 checks passed" in capsys.readouterr().out


def mi_nan(joint):
    px, py = joint.sum(1, keepdim=True), joint.sum(0, keepdim=True)
    return (joint * (joint / (px * py)).log2()).sum()


@pytest.mark.parametrize(
    "wrong, fragment",
    [
        (lambda j: mi(j) * math.log(2), "nats"),
        (lambda j: entropy(j), "joint entropy"),
        (lambda j: entropy(j.sum(1)), "H(X)"),
        (lambda j: entropy(j.sum(1)) + entropy(j.sum(0)) + entropy(j), "must be subtracted"),
        (mi_nan, "0 log 0"),
    ],
)
def test_mutual_information_check_names_each_mistake(wrong, fragment):
    fails_with(check_mutual_information, wrong, fragment)


def test_mutual_information_check_names_swapped_marginals():
    def swapped(joint):
        px, py = joint.sum(0)[:, None], joint.sum(1)[None, :]
        nz = joint > 0
        return (joint[nz] * (joint / (px * py))[nz].log2()).sum()

    fails_with(check_mutual_information, swapped, "marginals are swapped")


def test_mutual_information_check_refuses_the_package_and_a_blank():
    fails_with(check_mutual_information, blank, "not implemented yet")
    fails_with(
        check_mutual_information,
        attncourse.chapters.ch02_seq2seq_bottleneck.mutual_information_bits,
        "from scratch",
    )
    assert attncourse.chapters.ch02_seq2seq_bottleneck.mutual_information_bits(
        torch.eye(2) / 2
    ) == pytest.approx(1.0)  # restored


# ------------------------------------------------------------------------- 4: bottleneck bits


def bits(accuracy, V):
    total = 0.0
    for a in accuracy.tolist():
        p = 1 - a
        h = -sum(q * math.log2(q) for q in (p, 1 - p) if q > 0)
        total += math.log2(V) - h - p * math.log2(V - 1)
    return total


def test_bottleneck_bits_check_passes_a_correct_solution(capsys):
    check_bottleneck_bits(bits)
    check_bottleneck_bits(lambda a, V: torch.tensor(bits(a, V)), seed=5)
    assert "all 5 checks passed" in capsys.readouterr().out


def bits_nan(accuracy, V):
    p = 1 - accuracy
    h = -(p * p.log2() + (1 - p) * (1 - p).log2())
    return (math.log2(V) - h - p * math.log2(V - 1)).sum()


@pytest.mark.parametrize(
    "wrong, fragment",
    [
        (lambda a, V: bits(a, V) * math.log(2), "nats"),
        (lambda a, V: bits(1 - a, V), "error rate"),
        (lambda a, V: bits(a, V) / len(a), "SUM over positions"),
        (bits_nan, "must count as 0"),
    ],
)
def test_bottleneck_bits_check_names_each_mistake(wrong, fragment):
    fails_with(check_bottleneck_bits, wrong, fragment)


def test_bottleneck_bits_check_names_the_missing_term():
    def no_term(accuracy, V):
        total = 0.0
        for a in accuracy.tolist():
            p = 1 - a
            total += math.log2(V) + sum(q * math.log2(q) for q in (p, 1 - p) if q > 0)
        return total

    fails_with(check_bottleneck_bits, no_term, "p log2(V − 1)")


def test_bottleneck_bits_check_refuses_the_package_and_a_blank():
    fails_with(check_bottleneck_bits, blank, "not implemented yet")
    fails_with(
        check_bottleneck_bits,
        attncourse.chapters.ch02_seq2seq_bottleneck.transmitted_bits,
        "from scratch",
    )
    assert attncourse.chapters.ch02_seq2seq_bottleneck.transmitted_bits([1.0], 4) == pytest.approx(
        2.0
    )  # restored


def test_every_check_is_exported():
    assert sorted(exercises_ch02.__all__) == sorted(
        [
            "check_additive_scores",
            "check_bottleneck_bits",
            "check_local_m_weights",
            "check_mutual_information",
        ]
    )
