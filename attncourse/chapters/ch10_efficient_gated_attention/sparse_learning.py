"""Learnable sparse attention (source 000 App. 14.3.6), on a task whose right pattern is known:
the targets are attention outputs under a fixed random mask M*, and a ``LearnableSparseMask``
trained through Gumbel-sigmoid samples with an annealed temperature must find M*."""

from __future__ import annotations

import math
from typing import NamedTuple

import torch

from ...attention import (
    LearnableSparseMask,
    annealed_temperature,
    soft_masked_attention,
    softmax,
)
from ...threads import single_thread


def true_pattern(T: int, generator: torch.Generator, max_keys: int = 3) -> torch.Tensor:
    """A (T, T) bool mask: each query keeps 1..max_keys keys chosen at random."""
    mask = torch.zeros(T, T, dtype=torch.bool)
    for i in range(T):
        count = int(torch.randint(1, max_keys + 1, (1,), generator=generator))
        mask[i, torch.randperm(T, generator=generator)[:count]] = True
    return mask


def printed_sparse_attention(q, k, v, mask):
    """Eq. (14.3.43) as printed: softmax(M ⊙ S) v with S = q k^T / sqrt(d): a mask entry 0 turns
    the score into 0, not into -inf."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (..., T, S)
    weights = softmax(mask * scores)  # (..., T, S)
    return weights @ v, weights


class LearnedMask(NamedTuple):
    true: torch.Tensor  # (T, T) bool, M*
    learned: torch.Tensor  # (T, T) bool, keep probability > 1/2
    keep_probability: torch.Tensor  # (T, T)
    losses: list
    temperatures: list
    output_error: float  # mean squared error of the learned binary mask's outputs vs the targets


@single_thread()
def learn_sparse_mask(
    seed: int,
    form: str = "corrected",
    T: int = 16,
    d: int = 8,
    steps: int = 200,
    temperatures: tuple = (1.0, 0.05),
    penalty: float = 0.01,
    lr: float = 0.1,
    batch_size: int = 32,
    progress: bool = True,
) -> LearnedMask:
    """Train a ``LearnableSparseMask`` (init keep probability 1/2) so that its attention matches
    attention under M* on fresh random q, k, v each step: loss = MSE + penalty x density.

    form "corrected": the mask enters as softmax(S + log m) (``soft_masked_attention``);
    "printed": as the source's softmax(m ⊙ S). The temperature falls geometrically from
    temperatures[0] to temperatures[1] (``annealed_temperature``).
    """
    from tqdm.auto import tqdm

    if form not in ("corrected", "printed"):
        raise ValueError(f"form must be 'corrected' or 'printed', got {form!r}")
    attend = soft_masked_attention if form == "corrected" else printed_sparse_attention
    g = torch.Generator().manual_seed(seed)
    true = true_pattern(T, g)
    mask = LearnableSparseMask(T)
    opt = torch.optim.Adam(mask.parameters(), lr=lr)
    losses, taus = [], []
    desc = f"mask, {form} form, seed {seed}"
    for step in tqdm(range(steps), desc=desc, disable=not progress, mininterval=0.5):
        tau = annealed_temperature(step, steps, *temperatures)
        q, k, v = (torch.randn(batch_size, T, d, generator=g) for _ in range(3))  # (B, T, d)
        target, _ = soft_masked_attention(q, k, v, true)  # (B, T, d)
        out, _ = attend(q, k, v, mask(tau, generator=g))  # (B, T, d)
        loss = ((out - target) ** 2).mean() + penalty * mask.density()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
        taus.append(tau)
    learned = mask.binary_mask()
    with torch.no_grad():
        q, k, v = (torch.randn(256, T, d, generator=g) for _ in range(3))
        target, _ = soft_masked_attention(q, k, v, true)
        out, _ = attend(q, k, v, learned.float())
        error = float(((out - target) ** 2).mean())
    return LearnedMask(true, learned, mask.keep_probability().detach(), losses, taus, error)
