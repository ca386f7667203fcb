"""Boolean attention masks. Convention everywhere: ``True`` = the query may attend to the key,
the same as ``F.scaled_dot_product_attention``; every mask broadcasts to ``(B, H, T, S)``.

Sparse patterns are source 000 Def. 14.3.17 (Eq. 14.3.43): a mask M restricts which pairs
(i, j) take part in the softmax."""

import torch

from ._validation import require_positive, require_tensor


def _positions(T: int, S: int | None, device=None):
    S = T if S is None else S
    if T < 1 or S < 1:
        raise ValueError(f"mask sizes must be >= 1, got T={T}, S={S}")
    i = torch.arange(T, device=device).unsqueeze(1)  # (T, 1) query positions
    j = torch.arange(S, device=device).unsqueeze(0)  # (1, S) key positions
    return i, j


def causal_mask(T: int, S: int | None = None, device=None) -> torch.Tensor:
    """Query i may see key j iff j <= i (top-left aligned when T != S, as ``is_causal=True``)."""
    i, j = _positions(T, S, device)
    return j <= i  # (T, S)


def padding_mask(lengths, max_len: int | None = None) -> torch.Tensor:
    """Keys at positions >= length are padding: (B,) lengths -> (B, 1, 1, S) mask."""
    lengths = torch.as_tensor(lengths)
    if lengths.dim() != 1 or lengths.is_floating_point():
        raise ValueError(
            f"lengths must be a 1-D integer tensor (B,), got {lengths.dtype} {tuple(lengths.shape)}"
        )
    S = int(lengths.max()) if max_len is None else max_len
    if int(lengths.max()) > S or int(lengths.min()) < 0:
        raise ValueError(f"lengths must lie in [0, {S}], got {lengths.tolist()}")
    j = torch.arange(S, device=lengths.device)  # (S,)
    return (j < lengths.unsqueeze(1))[:, None, None, :]  # (B, 1, 1, S)


def local_mask(
    T: int, window: int, S: int | None = None, causal: bool = False, device=None
) -> torch.Tensor:
    """Sliding window: |i - j| <= window (and j <= i when causal)."""
    if window < 0:
        raise ValueError(f"window must be >= 0, got {window}")
    i, j = _positions(T, S, device)
    mask = (i - j).abs() <= window  # (T, S)
    return mask & (j <= i) if causal else mask


def strided_mask(T: int, stride: int, causal: bool = True, device=None) -> torch.Tensor:
    """Sparse Transformer's strided pattern (Child et al. 2019): the previous ``stride`` keys
    plus every key a multiple of ``stride`` away, so two layers connect every pair."""
    require_positive("stride", stride)
    i, j = _positions(T, None, device)
    mask = ((i - j).abs() < stride) | ((i - j) % stride == 0)  # (T, T)
    return mask & (j <= i) if causal else mask


def block_mask(T: int, block_size: int, S: int | None = None, device=None) -> torch.Tensor:
    """Block-diagonal: query i and key j attend iff they fall in the same block."""
    require_positive("block_size", block_size)
    i, j = _positions(T, S, device)
    return (i // block_size) == (j // block_size)  # (T, S)


def combine_masks(*masks) -> torch.Tensor | None:
    """Logical AND of boolean masks (``None`` entries are skipped), broadcast together."""
    result = None
    for mask in masks:
        if mask is None:
            continue
        require_tensor("mask", mask)
        if mask.dtype != torch.bool:
            raise ValueError(f"combine_masks takes boolean masks, got {mask.dtype}")
        if result is not None and not _broadcastable(result.shape, mask.shape):
            raise ValueError(
                f"masks of shapes {tuple(result.shape)} and {tuple(mask.shape)} do not broadcast"
            )
        result = mask if result is None else result & mask
    return result


def _broadcastable(a, b) -> bool:
    try:
        torch.broadcast_shapes(a, b)
        return True
    except RuntimeError:
        return False
