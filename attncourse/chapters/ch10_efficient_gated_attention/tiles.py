"""Attention one tile of keys at a time: the online-softmax update (Milakov & Gimelshein 2018;
FlashAttention, Dao et al. 2022) that the chapter's tiled attention calls, and the learner's
exercise re-implements. The package's ``chunked_attention`` is the fast version of the same idea."""

from __future__ import annotations

import torch


def online_softmax_step(m, l, acc, scores, values):  # noqa: E741
    """One tile's update of the running state of T queries:

        m' = max(m, max_j s_j),  l' = l e^(m - m') + sum_j e^(s_j - m'),
        acc' = acc e^(m - m') + sum_j e^(s_j - m') v_j.

    m (T, 1) running max (-inf before the first tile), l (T, 1) running sum, acc (T, d) the
    unnormalised output; scores (T, c) and values (c, d) the next tile. After the last tile the
    output is acc / l, exactly softmax(s) v over every key seen. Returns (m', l', acc')."""
    m_new = torch.maximum(m, scores.amax(dim=-1, keepdim=True))  # (T, 1)
    p = torch.exp(scores - m_new)  # (T, c), every entry <= 1
    shrink = torch.exp(m - m_new)  # (T, 1), 0 at the first tile (m = -inf)
    return m_new, l * shrink + p.sum(dim=-1, keepdim=True), acc * shrink + p @ values
