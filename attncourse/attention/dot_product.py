"""Scaled dot-product attention: source 000 Eq. (14.3.4), (14.3.14); source 001 Eq. (5.4.3)."""

import math

import torch

from .._validation import (
    broadcast_batch,
    check_mask,
    require_float,
    require_ndim,
    require_positive,
    require_same_dtype,
)
from ..masks import causal_mask
from .softmax import softmax_


def check_qkv(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> None:
    """q (..., T, d_k), k (..., S, d_k), v (..., S, d_v) with broadcastable batch dimensions."""
    for name, x in (("q", q), ("k", k), ("v", v)):
        require_float(name, x)
        require_ndim(name, x, (2, None), "(..., length, features)")
    require_same_dtype(q=q, k=k, v=v)
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(
            f"q and k must share d_k: q has d_k={q.shape[-1]} (shape {tuple(q.shape)}), "
            f"k has d_k={k.shape[-1]} (shape {tuple(k.shape)})"
        )
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(
            f"k and v must have the same number of keys S: k has {k.shape[-2]} "
            f"(shape {tuple(k.shape)}), v has {v.shape[-2]} (shape {tuple(v.shape)})"
        )
    broadcast_batch(("q", "k", "v"), q.shape[:-2], k.shape[:-2], v.shape[:-2])


def scaled_dot_product_attention(q, k, v, mask=None, *, causal=False, scale=None, temperature=1.0):
    """softmax((q k^T * scale + bias) / temperature) v with scale = 1/sqrt(d_k)   (Eq. 14.3.4).

    q: (..., T, d_k), k: (..., S, d_k), v: (..., S, d_v).
    mask: bool (True = may attend) or float (added to the scores, e.g. ``alibi_bias``),
    broadcastable to (..., T, S). ``causal`` adds ``causal_mask(T, S)`` (top-left aligned).
    Returns (output (..., T, d_v), weights (..., T, S)); a query with no visible key gets
    zero weights and a zero output.

    The (T, S) matrix is the costly part: the scale and the temperature multiply q (T x d_k
    numbers) instead, and the softmax is computed in place in the matmul's fresh output.
    """
    check_qkv(q, k, v)
    require_positive("temperature", temperature)
    T, S, d_k = q.shape[-2], k.shape[-2], q.shape[-1]
    scale = 1.0 / math.sqrt(d_k) if scale is None else scale
    scores = (q * (scale / temperature)) @ k.transpose(-2, -1)  # (..., T, S)
    keep = None
    if mask is not None:
        check_mask(mask, scores.shape)
        if mask.dtype == torch.bool:
            keep = mask
        else:
            scores.add_(mask / temperature)  # (..., T, S) an additive bias is part of the score
    if causal:
        causal_keep = causal_mask(T, S, device=q.device)  # (T, S)
        keep = causal_keep if keep is None else keep & causal_keep
    weights = softmax_(scores, dim=-1, keep=keep)  # (..., T, S), written over the scores
    return weights @ v, weights  # (..., T, d_v), (..., T, S)


def grouped_query_attention(q, k, v, mask=None, *, causal=False, scale=None, temperature=1.0):
    """Grouped-query attention (Ainslie et al. 2023); multi-query when k, v have one head.

    q: (B, H, T, d_k); k, v: (B, H_kv, S, d) with H a multiple of H_kv. Query head h reads
    key/value head h // (H / H_kv), as ``F.scaled_dot_product_attention(enable_gqa=True)``.
    """
    for name, x in (("q", q), ("k", k), ("v", v)):
        require_float(name, x)
        require_ndim(name, x, (3, None), "(..., heads, length, features)")
    H, H_kv = q.shape[-3], k.shape[-3]
    if v.shape[-3] != H_kv:
        raise ValueError(
            f"k and v must have the same number of heads, got {H_kv} and {v.shape[-3]}"
        )
    if H % H_kv:
        raise ValueError(f"query heads ({H}) must be a multiple of key/value heads ({H_kv})")
    group = H // H_kv
    if group > 1:  # (plain multi-head attention needs no copies)
        k = k.repeat_interleave(group, dim=-3)  # (B, H, S, d_k)
        v = v.repeat_interleave(group, dim=-3)  # (B, H, S, d_v)
    return scaled_dot_product_attention(
        q, k, v, mask, causal=causal, scale=scale, temperature=temperature
    )
