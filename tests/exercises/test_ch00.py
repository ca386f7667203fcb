"""Chapter 00's demo check passes the mean in any style and names the two common mistakes."""

import pytest
import torch
from exercise_helpers import blank, fails

from attncourse.exercises.ch00 import check_uniform_attention

SEEDS = (0, 1, 7, 2024)


def mean_rows(v):
    return v.mean(dim=0)


def sum_then_divide(v):
    return v.sum(dim=0) / v.shape[0]


def weighted(v):
    return torch.full((v.shape[0],), 1.0 / v.shape[0], dtype=v.dtype) @ v


@pytest.mark.parametrize("answer", [mean_rows, sum_then_divide, weighted])
def test_correct_styles_pass_every_seed(answer, capsys):
    for seed in SEEDS:
        check_uniform_attention(answer, seed=seed)
    assert capsys.readouterr().out.count("✓") == len(SEEDS)


def test_the_mistakes_are_named():
    fails(check_uniform_attention, lambda v: v.sum(dim=0), "summed the values")
    fails(check_uniform_attention, lambda v: v.mean(dim=1), "averaged over the wrong axis")
    fails(check_uniform_attention, blank, "not implemented yet")
