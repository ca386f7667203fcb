"""Sparse patterns (source 000 Def. 14.3.17; Child et al. 2019): the masks, the number of
(query, key) pairs they keep, how far information reaches through L layers of them, and how
a dense softmax dilutes one relevant key among many (source 002 §7)."""

from __future__ import annotations

import math

import numpy as np
import torch

from ...masks import block_mask, causal_mask, local_mask, strided_mask

KINDS = ("local", "strided", "block", "dense")


def pattern_mask(kind: str, n: int, size: int = 1, causal: bool = True) -> torch.Tensor:
    """The (n, n) bool mask of a pattern: ``size`` is the window (local), the stride (strided)
    or the block size (block); "dense" is plain (causal) attention."""
    if kind == "local":
        return local_mask(n, size, causal=causal)
    if kind == "strided":
        return strided_mask(n, size, causal=causal)
    if kind == "block":
        mask = block_mask(n, size)
        return mask & causal_mask(n) if causal else mask
    if kind == "dense":
        return causal_mask(n) if causal else torch.ones(n, n, dtype=torch.bool)
    raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")


def log_sparse_mask(n: int) -> torch.Tensor:
    """LogSparse (Li et al. 2019): query i sees itself and the keys i - 1, i - 2, i - 4, ...:
    about log2(n) keys per query, O(n log n) pairs."""
    i = torch.arange(n).unsqueeze(1)  # (n, 1)
    j = torch.arange(n).unsqueeze(0)  # (1, n)
    gap = i - j  # (n, n)
    power_of_two = (gap > 0) & ((gap & (gap - 1)) == 0)
    return (gap == 0) | power_of_two


def reach(mask: torch.Tensor, layers: int) -> torch.Tensor:
    """R_L (n, n) bool: R_L[i, j] iff information at position j can reach position i's output
    through ``layers`` layers of ``mask`` (the residual stream keeps each position's own
    information: R_1 = I ∨ M, R_L = R_{L-1} ∘ R_1 as a boolean matrix product)."""
    step = (mask | torch.eye(mask.shape[-1], dtype=torch.bool)).double()  # (n, n) I ∨ M
    result = torch.eye(mask.shape[-1], dtype=torch.float64)
    for _ in range(layers):
        result = ((result @ step) > 0).double()  # (n, n)
    return result.bool()


def layers_to_connect(mask: torch.Tensor, max_layers: int = 64) -> int | None:
    """The fewest layers after which every position reaches every position it may (every
    earlier one for a causal mask, every one otherwise); None if ``max_layers`` do not suffice."""
    n = mask.shape[-1]
    causal = not bool(mask.triu(1).any())
    goal = causal_mask(n) if causal else torch.ones(n, n, dtype=torch.bool)
    current = torch.eye(n, dtype=torch.bool)
    step = (mask | current).double()
    for layers in range(1, max_layers + 1):
        current = (current.double() @ step) > 0
        if torch.equal(current, goal):
            return layers
    return None


def _any_within_after(r: np.ndarray, width: int) -> np.ndarray:
    """out[j] = any(r[j .. j + width]) for a bool vector r (n,)."""
    n = r.shape[0]
    counts = np.concatenate([[0], np.cumsum(r)])  # (n + 1,)
    j = np.arange(n)
    return counts[np.minimum(j + width + 1, n)] - counts[j] > 0


def _suffix_any(grid: np.ndarray, axis: int) -> np.ndarray:
    """Along ``axis``: out[..., j, ...] = any(grid[..., i, ...] for i >= j)."""
    flipped = np.flip(grid, axis=axis)
    return np.flip(np.logical_or.accumulate(flipped, axis=axis), axis=axis)


def _padded_grid(r: np.ndarray, width: int) -> np.ndarray:
    rows = -(-r.shape[0] // width)
    padded = np.zeros(rows * width, dtype=bool)
    padded[: r.shape[0]] = r
    return padded.reshape(rows, width)


def reach_of_last(kind: str, n: int, size: int, layers: int) -> torch.Tensor:
    """(layers, n) bool: row L - 1 marks the keys j whose information reaches the last query
    (position n - 1) through L layers of the causal pattern; O(n) per layer (NumPy), so
    n = 16384 takes about a millisecond (the same as ``reach(pattern_mask(kind, n, size),
    L)[n - 1]``)."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    r = np.zeros(n, dtype=bool)
    r[-1] = True
    rows = []
    for _ in range(layers):
        if kind == "dense":
            new = np.ones(n, dtype=bool)
        elif kind == "local":
            new = _any_within_after(r, size)
        elif kind == "strided":  # the band |i - j| < s, and the column j ≡ i (mod s)
            column = _suffix_any(_padded_grid(r, size), axis=0).reshape(-1)[:n]
            new = _any_within_after(r, size - 1) | column
        else:  # the same block, j <= i
            new = _suffix_any(_padded_grid(r, size), axis=1).reshape(-1)[:n]
        r = r | new
        rows.append(r)
    return torch.from_numpy(np.stack(rows))  # (layers, n)


def pair_count(kind: str, n: int, size: int = 1) -> int:
    """The number of (query, key) pairs a causal pattern keeps, without building the mask:
    dense i + 1 per query i; local min(i, w) + 1; strided min(i, s - 1) + 1 + floor(i / s);
    block (i mod b) + 1; "log-sparse" (``log_sparse_mask``) 1 + floor(log2 i) + 1 (i >= 1)."""
    i = np.arange(n, dtype=np.int64)
    if kind == "log-sparse":
        return int(n + sum(int(x).bit_length() for x in range(1, n)))
    if kind == "dense":
        per_query = i + 1
    elif kind == "local":
        per_query = np.minimum(i, size) + 1
    elif kind == "strided":
        per_query = np.minimum(i, size - 1) + 1 + i // size
    elif kind == "block":
        per_query = i % size + 1
    else:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    return int(per_query.sum())


def relevant_weight(n: int, gap: float) -> float:
    """Softmax weight of one key whose score exceeds the n - 1 others' by ``gap``:
    e^gap / (e^gap + n - 1) -> 0 as n grows (dilution): keeping it at 1/2 needs gap = ln(n - 1)."""
    return 1.0 / (1.0 + (n - 1) * math.exp(-gap))
