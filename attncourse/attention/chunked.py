"""Chunked (tiled) exact attention with the online softmax: FlashAttention (Dao et al. 2022),
online normaliser (Milakov & Gimelshein 2018); the backward pass recomputes each tile
(FlashAttention) from the saved log-sum-exp alone, as FlashAttention-2 (Dao 2023) does.

softmax(q k^T * scale) v is computed one (query chunk, key chunk) tile at a time, so the
(T, S) weight matrix is never stored: memory is O(n * chunk) instead of O(n^2)."""

import math

import torch

from .._validation import require_positive_int
from .dot_product import check_qkv
from .softmax import exp_


def _tiles(length: int, chunk: int):
    """[(start, end), ...] covering range(length) in steps of ``chunk``; the last may be shorter."""
    return [(start, min(start + chunk, length)) for start in range(0, length, chunk)]


def _causal_bias(i0: int, i1: int, j0: int, j1: int, like: torch.Tensor) -> torch.Tensor:
    """Additive mask of the tile (queries i0..i1-1, keys j0..j1-1): 0 where j <= i, else -inf."""
    i = torch.arange(i0, i1, device=like.device).unsqueeze(1)  # (Tq, 1)
    j = torch.arange(j0, j1, device=like.device).unsqueeze(0)  # (1, Tk)
    bias = torch.zeros(i1 - i0, j1 - j0, dtype=like.dtype, device=like.device)  # (Tq, Tk)
    return bias.masked_fill_(j > i, float("-inf"))  # (Tq, Tk)


class _ChunkedAttention(torch.autograd.Function):
    """q (N, T, d_k), k (N, S, d_k), v (N, S, d_v), with batch and heads flattened into N.

    Autograd is off inside forward/backward, so tiles are updated in place (sub_, exp_, ...).
    """

    @staticmethod
    def forward(ctx, q, k, v, chunk_size, causal, scale):
        N, T, _ = q.shape
        S, d_v = k.shape[1], v.shape[2]
        out = q.new_empty(N, T, d_v)  # (N, T, d_v)
        row_max = q.new_empty(N, T, 1)  # (N, T, 1) final running max m of each query
        log_sum = q.new_empty(N, T, 1)  # (N, T, 1) log of the final running sum l
        k_t = k.transpose(1, 2)  # (N, d_k, S)
        for i0, i1 in _tiles(T, chunk_size):
            q_i = q[:, i0:i1] * scale  # (N, Tq, d_k)
            m = l = acc = None  # noqa: E741  running max, running sum, unnormalised output
            for j0, j1 in _tiles(S, chunk_size):
                if causal and j0 > i1 - 1:
                    break  # this key tile (and every later one) lies above the diagonal
                s = torch.bmm(q_i, k_t[:, :, j0:j1])  # (N, Tq, Tk) scores of this tile
                if causal and j1 - 1 > i0:  # the tile crosses the diagonal
                    s.add_(_causal_bias(i0, i1, j0, j1, s))  # (N, Tq, Tk)
                m_tile = s.amax(dim=-1, keepdim=True)  # (N, Tq, 1)
                if m is None:  # first key tile: nothing to rescale yet
                    m = m_tile  # (N, Tq, 1)
                    p = exp_(s.sub_(m))  # (N, Tq, Tk) exp(s - m)
                    l = p.sum(dim=-1, keepdim=True)  # noqa: E741  (N, Tq, 1)
                    acc = torch.bmm(p, v[:, j0:j1])  # (N, Tq, d_v)
                    continue
                m_new = torch.maximum(m, m_tile)  # (N, Tq, 1)
                p = exp_(s.sub_(m_new))  # (N, Tq, Tk) exp(s - m_new)
                alpha = m.sub_(m_new).exp_()  # (N, Tq, 1) exp(m - m_new) rescales what came before
                l.mul_(alpha).add_(p.sum(dim=-1, keepdim=True))  # (N, Tq, 1)
                acc.mul_(alpha).baddbmm_(p, v[:, j0:j1])  # (N, Tq, d_v) acc * alpha + p v
                m = m_new
            out[:, i0:i1] = acc.div_(l)  # (N, Tq, d_v)
            row_max[:, i0:i1] = m  # (N, Tq, 1)
            log_sum[:, i0:i1] = l.log_()  # (N, Tq, 1)
        # logsumexp = m + log l, saved as its two parts: s - m stays exact in float32 even for
        # scores of 1e4, where m + log l would round off ~1e-3.
        ctx.save_for_backward(q, k, v, out, row_max, log_sum)
        ctx.chunk_size, ctx.causal, ctx.scale = chunk_size, causal, scale
        return out

    @staticmethod
    def backward(ctx, d_out):
        """Recompute each tile's weights P = exp(S - logsumexp) instead of storing them.

        D = rowsum(dO * O) (Dao et al. 2022; Dao 2023); per tile dV += P^T dO, dP = dO V^T,
        dS = P * (dP - D), dQ += dS K * scale, dK += dS^T Q * scale.
        """
        q, k, v, out, row_max, log_sum = ctx.saved_tensors
        chunk_size, causal, scale = ctx.chunk_size, ctx.causal, ctx.scale
        N, T, _ = q.shape
        S, d_v = k.shape[1], v.shape[2]
        d_out = d_out.contiguous()  # (N, T, d_v)
        D = (d_out * out).sum(dim=-1, keepdim=True)  # (N, T, 1)
        q_scaled = q * scale  # (N, T, d_k)
        dq = torch.zeros_like(q)  # (N, T, d_k)
        dk = torch.empty_like(k)  # (N, S, d_k)
        dv = torch.empty_like(v)  # (N, S, d_v)
        # keys in the outer loop: dK, dV of a key tile stay in one buffer
        for j0, j1 in _tiles(S, chunk_size):
            k_j, v_j = k[:, j0:j1], v[:, j0:j1]  # (N, Tk, d_k), (N, Tk, d_v)
            dk_j = torch.zeros_like(k_j)  # (N, Tk, d_k)
            dv_j = v.new_zeros(N, j1 - j0, d_v)  # (N, Tk, d_v)
            for i0, i1 in _tiles(T, chunk_size):
                if causal and i1 - 1 < j0:
                    continue  # every query of this tile comes before every key: all masked
                q_i, do_i = q_scaled[:, i0:i1], d_out[:, i0:i1]  # (N, Tq, d_k), (N, Tq, d_v)
                s = torch.bmm(q_i, k_j.transpose(1, 2))  # (N, Tq, Tk)
                if causal and j1 - 1 > i0:
                    s.add_(_causal_bias(i0, i1, j0, j1, s))  # (N, Tq, Tk)
                s.sub_(row_max[:, i0:i1]).sub_(log_sum[:, i0:i1])  # (N, Tq, Tk) S - logsumexp
                p = exp_(s)  # (N, Tq, Tk) the softmax weights of this tile
                dv_j.baddbmm_(p.transpose(1, 2), do_i)  # (N, Tk, d_v)  dV += P^T dO
                dp = torch.bmm(do_i, v_j.transpose(1, 2))  # (N, Tq, Tk)  dP = dO V^T
                ds = dp.sub_(D[:, i0:i1]).mul_(p)  # (N, Tq, Tk)  dS = P * (dP - D)
                dq[:, i0:i1] += torch.bmm(ds, k_j)  # (N, Tq, d_k)  dQ += dS K
                dk_j.baddbmm_(ds.transpose(1, 2), q_i)  # (N, Tk, d_k)  dK += dS^T (Q * scale)
            dk[:, j0:j1] = dk_j  # (N, Tk, d_k)
            dv[:, j0:j1] = dv_j  # (N, Tk, d_v)
        dq.mul_(scale)  # (N, T, d_k)
        return dq, dk, dv, None, None, None


def chunked_attention(q, k, v, chunk_size: int = 128, causal: bool = False, scale=None):
    """Exact softmax(q k^T * scale) v, computed tile by tile with the online softmax.

    FlashAttention (Dao et al. 2022) / online softmax (Milakov & Gimelshein 2018): each query
    chunk keeps a running max m, running sum l and accumulator acc; a key tile with scores s
    updates m' = max(m, max_j s_j), l = l e^(m - m') + sum_j e^(s_j - m'),
    acc = acc e^(m - m') + sum_j e^(s_j - m') v_j, and the output is acc / l. The backward
    pass recomputes each tile (FlashAttention) from (q, k, v, out, logsumexp), so both
    passes need O(n * chunk_size) memory instead of O(n^2).

    q: (..., T, d_k), k: (..., S, d_k), v: (..., S, d_v); batch dimensions broadcast.
    ``causal``: query i sees keys j <= i (top-left aligned, as ``is_causal=True``); key tiles
    entirely above the diagonal are skipped, tiles crossing it are masked.
    ``scale`` defaults to 1/sqrt(d_k). ``chunk_size=128`` was the fastest of 32..256 on CPU
    for T=512, d=64: smaller tiles pay more Python overhead, larger ones waste work on the diagonal.
    Returns (output (..., T, d_v), None): the (T, S) weights are never materialised.
    """
    check_qkv(q, k, v)
    if k.shape[-2] == 0:
        raise ValueError(f"k and v must hold at least one key, got S=0 (k shape {tuple(k.shape)})")
    require_positive_int("chunk_size", chunk_size)
    T, S, d_k, d_v = q.shape[-2], k.shape[-2], q.shape[-1], v.shape[-1]
    scale = 1.0 / math.sqrt(d_k) if scale is None else float(scale)
    batch = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    q3 = q.expand(*batch, T, d_k).reshape(-1, T, d_k)  # (N, T, d_k)
    k3 = k.expand(*batch, S, d_k).reshape(-1, S, d_k)  # (N, S, d_k)
    v3 = v.expand(*batch, S, d_v).reshape(-1, S, d_v)  # (N, S, d_v)
    out = _ChunkedAttention.apply(q3, k3, v3, chunk_size, causal, scale)  # (N, T, d_v)
    return out.reshape(*batch, T, d_v), None  # (..., T, d_v)
