"""Masks vs their definitions written out position by position."""

import pytest
import torch

from attncourse.masks import (
    block_mask,
    causal_mask,
    combine_masks,
    local_mask,
    padding_mask,
    strided_mask,
)


def by_rule(T, S, rule):
    return torch.tensor([[bool(rule(i, j)) for j in range(S)] for i in range(T)])


@pytest.mark.parametrize("T,S", [(5, 5), (3, 7), (7, 3), (1, 1)])
def test_causal_mask_is_top_left_aligned_like_torch(T, S):
    assert torch.equal(causal_mask(T, S), torch.ones(T, S, dtype=torch.bool).tril())
    assert torch.equal(causal_mask(T, S), by_rule(T, S, lambda i, j: j <= i))


def test_padding_mask_marks_real_keys():
    mask = padding_mask(torch.tensor([3, 1, 4]))
    assert mask.shape == (3, 1, 1, 4)
    assert mask[:, 0, 0].tolist() == [[1, 1, 1, 0], [1, 0, 0, 0], [1, 1, 1, 1]]
    assert padding_mask([2], max_len=5)[0, 0, 0].tolist() == [1, 1, 0, 0, 0]


@pytest.mark.parametrize("causal", [False, True])
def test_local_mask_is_a_band(causal):

    def rule(i, j):
        return abs(i - j) <= 2 and (j <= i or not causal)

    assert torch.equal(local_mask(9, 2, causal=causal), by_rule(9, 9, rule))


def test_strided_mask_follows_sparse_transformer_and_two_layers_reach_everything():
    T, stride = 64, 8
    mask = strided_mask(T, stride)
    assert torch.equal(
        mask, by_rule(T, T, lambda i, j: j <= i and ((i - j) < stride or (i - j) % stride == 0))
    )
    assert mask.sum() < causal_mask(T).sum() / 2  # sparse
    two_hops = (mask.double() @ mask.double()) > 0
    assert torch.equal(two_hops, causal_mask(T))  # every earlier key within two layers


def test_block_mask_is_block_diagonal():
    assert torch.equal(
        block_mask(6, 3), torch.block_diag(torch.ones(3, 3), torch.ones(3, 3)).bool()
    )
    assert torch.equal(block_mask(5, 2), by_rule(5, 5, lambda i, j: i // 2 == j // 2))


def test_combine_masks_is_logical_and_with_broadcasting():
    combined = combine_masks(causal_mask(4), None, padding_mask(torch.tensor([4, 2])))
    assert combined.shape == (2, 1, 4, 4)
    assert torch.equal(combined[0, 0], causal_mask(4))
    assert torch.equal(combined[1, 0], causal_mask(4) & torch.tensor([True, True, False, False]))
    assert combine_masks(None) is None


@pytest.mark.parametrize(
    "call",
    [
        lambda: causal_mask(0),
        lambda: local_mask(4, -1),
        lambda: strided_mask(4, 0),
        lambda: block_mask(4, 0),
        lambda: padding_mask(torch.tensor([1.5, 2.0])),
        lambda: padding_mask(torch.tensor([3, 6]), max_len=4),
        lambda: combine_masks(causal_mask(3), torch.ones(3, 3)),
        lambda: combine_masks(causal_mask(3), causal_mask(4)),
    ],
)
def test_bad_mask_arguments_raise_value_error(call):
    with pytest.raises(ValueError):
        call()
