"""Sparse attention: source 000 Def. 14.3.17 (Eq. 14.3.43) and Application 14.3.6.

* ``local_attention``, ``block_attention``, ``strided_attention``: exact attention restricted to
  the patterns of ``attncourse.masks`` (``local_mask``, ``block_mask``, ``strided_mask``; Child et
  al. 2019), computed block by block, so time and memory grow like T · (keys per query) instead
  of T²;
* ``soft_masked_attention``: attention under a mask with values in [0, 1],
  alpha_ij = m_ij e^{s_ij} / sum_j' m_ij' e^{s_ij'} = softmax(s + log m); with m in {0, 1} it is
  exactly masked attention. (The source's Eq. 14.3.43, softmax(M ⊙ S), is not: it sets a masked
  score to 0, which keeps the weight e^0 / Z.)
* ``gumbel_sigmoid``, ``annealed_temperature``, ``LearnableSparseMask``: a mask learned by
  gradient descent (App. 14.3.6) through the binary Concrete / Gumbel-softmax relaxation (Maddison
  et al. 2017; Jang et al. 2017) with an annealed temperature.
"""

import math

import torch
from torch import nn

from .._validation import check_mask, require_float, require_positive, require_positive_int
from .dot_product import check_qkv
from .softmax import softmax_

# ---------------------------------------------------------------- relaxed masks


def gumbel_sigmoid(
    logits: torch.Tensor,
    temperature: float,
    *,
    hard: bool = False,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """A relaxed Bernoulli(sigmoid(logits)) sample in (0, 1): the Gumbel-softmax over the two
    classes {keep, drop} (Jang et al. 2017), i.e. the binary Concrete (Maddison et al. 2017):

        m = sigmoid((logits + log u - log(1 - u)) / temperature),   u ~ Uniform(0, 1),

    since the difference of two Gumbel(0, 1) variables is Logistic(0, 1) = log u - log(1 - u).
    P(m > 1/2) = sigmoid(logits) at every temperature; as temperature -> 0 the samples become
    exactly 0 or 1. ``hard=True`` returns the 0/1 sample (m > 1/2) in the forward pass with the
    relaxed sample's gradient (straight-through). ``u`` is drawn with ``generator``, in
    ``logits``' dtype, one number per entry.
    """
    require_float("logits", logits)
    require_positive("temperature", temperature)
    u = torch.rand(logits.shape, generator=generator, dtype=logits.dtype, device=logits.device)
    tiny = torch.finfo(logits.dtype).tiny
    u = u.clamp(tiny, 1.0 - torch.finfo(logits.dtype).eps)  # log u and log(1 - u) finite
    noise = torch.log(u) - torch.log1p(-u)  # Logistic(0, 1)
    soft = torch.sigmoid((logits + noise) / temperature)
    if not hard:
        return soft
    return (soft > 0.5).to(soft.dtype) + (soft - soft.detach())  # exactly 0/1, soft's gradient


def annealed_temperature(step: int, total_steps: int, start: float = 1.0, end: float = 0.05):
    """tau_t = start · (end / start)^(t / (total_steps - 1)): exponential annealing from ``start``
    at step 0 to ``end`` at the last step, never 0. (App. 14.3.6's tau = T (1 - t / T_iter) is 0
    at t = T_iter, where the relaxed sample divides by zero.)"""
    require_positive_int("total_steps", total_steps)
    require_positive("start", start)
    require_positive("end", end)
    if not 0 <= step < total_steps:
        raise ValueError(f"step must lie in [0, {total_steps - 1}], got {step}")
    if total_steps == 1:
        return float(end)
    return float(start * (end / start) ** (step / (total_steps - 1)))


def soft_masked_attention(q, k, v, mask, *, scale=None):
    """alpha_ij = m_ij exp(s_ij) / sum_j' m_ij' exp(s_ij'),  s = q k^T · scale,  i.e.
    softmax(s + log m): the attention under a mask m with values in [0, 1] (source 000
    Eq. 14.3.43, corrected; App. 14.3.6).

    With m in {0, 1} this is exactly masked attention (a masked key gets weight 0); with a relaxed
    sample (``gumbel_sigmoid``) it is differentiable in m. A query whose mask row is all 0 gets
    zero weights and a zero output. Entries with m = 0 get no gradient (as with any hard mask).

    q: (..., T, d_k), k: (..., S, d_k), v: (..., S, d_v); mask: bool or float in [0, 1],
    broadcastable to (..., T, S); ``scale`` defaults to 1/sqrt(d_k).
    Returns (output (..., T, d_v), weights (..., T, S)).
    """
    check_qkv(q, k, v)
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = (q * scale) @ k.transpose(-2, -1)  # (..., T, S)
    check_mask(mask, scores.shape)
    if mask.dtype == torch.bool:
        mask = mask.to(scores.dtype)
    elif bool(torch.isnan(mask).any()) or bool((mask < 0).any()) or bool((mask > 1).any()):
        raise ValueError(
            "a soft mask holds values in [0, 1], got values in "
            f"[{float(mask.min()):.3g}, {float(mask.max()):.3g}]"
            + (" and NaN" if bool(torch.isnan(mask).any()) else "")
        )
    kept = mask > 0  # (..., T, S)
    log_mask = torch.log(torch.where(kept, mask, torch.ones_like(mask)))  # 0 where m = 0
    logits = torch.where(kept, scores + log_mask, float("-inf"))  # (..., T, S)  s + log m
    shift = logits.detach().amax(dim=-1, keepdim=True)  # (..., T, 1) exact: it cancels below
    shift = torch.where(torch.isfinite(shift), shift, 0.0)  # an all-zero mask row
    e = torch.exp(logits - shift)  # (..., T, S), <= 1, exactly 0 where m = 0
    total = e.sum(dim=-1, keepdim=True)  # (..., T, 1)
    weights = e / torch.where(total > 0, total, 1.0)  # (..., T, S)
    return weights @ v, weights  # (..., T, d_v), (..., T, S)


class LearnableSparseMask(nn.Module):
    """A (T, S) attention mask learned by gradient descent (source 000 App. 14.3.6).

    Each entry holds a logit l_ij; its keep probability is sigmoid(l_ij), initialised to
    ``init_keep_probability`` (the source's "initialise M ~ Bernoulli(p)"). ``forward(temperature)``
    returns, in training mode, a relaxed sample ``gumbel_sigmoid(l, temperature)`` (T, S) to pass to
    ``soft_masked_attention``; in eval mode the binary mask l > 0 (keep probability > 1/2) as 0/1
    floats. ``density()`` is the mean keep probability, the sparsity penalty to add to the loss;
    ``binary_mask()`` the learned pattern as bools.
    """

    def __init__(self, T: int, S: int | None = None, init_keep_probability: float = 0.5):
        super().__init__()
        S = T if S is None else S
        require_positive_int("T", T)
        require_positive_int("S", S)
        if not 0 < init_keep_probability < 1:
            raise ValueError(
                f"init_keep_probability must lie in (0, 1), got {init_keep_probability}"
            )
        p = init_keep_probability
        self.logits = nn.Parameter(torch.full((T, S), math.log(p / (1 - p))))  # (T, S)

    def keep_probability(self) -> torch.Tensor:
        return torch.sigmoid(self.logits)  # (T, S)

    def density(self) -> torch.Tensor:
        """Mean keep probability: the expected fraction of (query, key) pairs kept."""
        return self.keep_probability().mean()

    def binary_mask(self) -> torch.Tensor:
        return self.logits.detach() > 0  # (T, S) bool

    def forward(self, temperature: float = 1.0, hard: bool = False, generator=None):
        if not self.training:
            return self.binary_mask().to(self.logits.dtype)  # (T, S) 0/1
        return gumbel_sigmoid(self.logits, temperature, hard=hard, generator=generator)  # (T, S)


# ---------------------------------------------------------------- patterns, computed sparsely


def _check_self_attention(q, k, v) -> None:
    check_qkv(q, k, v)
    if not q.shape[-2] == k.shape[-2]:
        raise ValueError(
            "local, block and strided patterns relate positions of one sequence: q and k must "
            f"have the same length, got T={q.shape[-2]} and S={k.shape[-2]}"
        )


def _flatten(q, k, v):
    """Broadcast the batch dimensions and flatten them: (N, T, d) each, plus the batch shape."""
    batch = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    flat = tuple(t.expand(*batch, *t.shape[-2:]).reshape(-1, *t.shape[-2:]) for t in (q, k, v))
    return (*flat, batch)


def _pad_to(x: torch.Tensor, length: int, front: int = 0) -> torch.Tensor:
    """x (N, T, d) with ``front`` zero rows before and zero rows after, to ``length`` rows."""
    N, T, d = x.shape
    out = x.new_zeros(N, length, d)
    out[:, front : front + T] = x
    return out


def _band(q, k, v, c: int, window: int, causal: bool, scale: float):
    """Scores of the band |i - j| <= window (j <= i if causal) in blocks of c >= window queries.

    Query block b (positions bc .. bc + c - 1) meets key blocks b - 1, b (and b + 1 unless
    causal): K = 2c or 3c keys. Returns scores (N, nb, c, K), keep (nb, c, K) and the values
    (N, nb, K, d_v) of those keys.
    """
    N, T, _ = q.shape
    nb = -(-T // c)  # ceil
    P, K = nb * c, (2 if causal else 3) * c
    q_blocks = _pad_to(q * scale, P).view(N, nb, c, -1)  # (N, nb, c, d_k)
    back = 0 if causal else c
    k_ctx = _pad_to(k, P + c + back, front=c).unfold(1, K, c)  # (N, nb, d_k, K) key blocks
    v_ctx = _pad_to(v, P + c + back, front=c).unfold(1, K, c).transpose(-2, -1)  # (N, nb, K, d_v)
    scores = q_blocks @ k_ctx  # (N, nb, c, K)
    r = torch.arange(c, device=q.device).view(1, c, 1)  # row in the block
    u = torch.arange(K, device=q.device).view(1, 1, K)  # key slot
    b = torch.arange(nb, device=q.device).view(nb, 1, 1)
    offset = c + r - u  # (1, c, K)  i - j
    j = b * c - c + u  # (nb, 1, K) key position
    keep = (offset.abs() <= window) & (j >= 0) & (j < T)  # (nb, c, K)
    if causal:
        keep = keep & (offset >= 0)
    return scores, keep, v_ctx


def local_attention(q, k, v, window: int, causal: bool = False, scale=None):
    """Sliding-window attention: query i attends to keys |i - j| <= ``window`` (and j <= i when
    ``causal``), exactly ``scaled_dot_product_attention(q, k, v, local_mask(T, window, causal))``
    (source 000 Def. 14.3.17), computed in blocks of max(window, 1) queries that each meet two or
    three key blocks: O(T · window) time and memory instead of O(T²).

    q, k, v: (..., T, d) of one sequence (T = S), batch dimensions broadcast.
    Returns (output (..., T, d_v), None).
    """
    _check_self_attention(q, k, v)
    if not isinstance(window, int) or isinstance(window, bool) or window < 0:
        raise ValueError(f"window must be an int >= 0, got {window!r}")
    T, d_k, d_v = q.shape[-2], q.shape[-1], v.shape[-1]
    scale = 1.0 / math.sqrt(d_k) if scale is None else float(scale)
    q3, k3, v3, batch = _flatten(q, k, v)
    c = max(min(window, T), 1)
    scores, keep, v_ctx = _band(q3, k3, v3, c, window, causal, scale)  # (N, nb, c, K)
    weights = softmax_(scores, dim=-1, keep=keep)  # (N, nb, c, K)
    out = (weights @ v_ctx).reshape(q3.shape[0], -1, d_v)[:, :T]  # (N, T, d_v)
    return out.reshape(*batch, T, d_v), None  # (..., T, d_v)


def block_attention(q, k, v, block_size: int, causal: bool = False, scale=None):
    """Block-diagonal attention: query i attends to key j iff both lie in the same block of
    ``block_size`` positions (and j <= i when ``causal``), exactly ``scaled_dot_product_attention``
    with ``block_mask(T, block_size)``: O(T · block_size) time and memory.

    q, k, v: (..., T, d) of one sequence (T = S). Returns (output (..., T, d_v), None).
    """
    _check_self_attention(q, k, v)
    require_positive_int("block_size", block_size)
    T, d_k, d_v = q.shape[-2], q.shape[-1], v.shape[-1]
    scale = 1.0 / math.sqrt(d_k) if scale is None else float(scale)
    q3, k3, v3, batch = _flatten(q, k, v)
    N, c = q3.shape[0], min(block_size, T)
    nb = -(-T // c)
    P = nb * c
    qb = _pad_to(q3 * scale, P).view(N, nb, c, d_k)  # (N, nb, c, d_k)
    kb = _pad_to(k3, P).view(N, nb, c, d_k)  # (N, nb, c, d_k)
    vb = _pad_to(v3, P).view(N, nb, c, d_v)  # (N, nb, c, d_v)
    scores = qb @ kb.transpose(-2, -1)  # (N, nb, c, c)
    pos = torch.arange(P, device=q.device).view(nb, c)  # (nb, c)
    keep = (pos < T).unsqueeze(1).expand(nb, c, c)  # (nb, c, c) padding keys of the last block
    if causal:
        keep = keep & torch.ones(c, c, dtype=torch.bool, device=q.device).tril()
    weights = softmax_(scores, dim=-1, keep=keep)  # (N, nb, c, c)
    out = (weights @ vb).reshape(N, P, d_v)[:, :T]  # (N, T, d_v)
    return out.reshape(*batch, T, d_v), None


def strided_attention(q, k, v, stride: int, causal: bool = True, scale=None):
    """The Sparse Transformer's strided pattern (Child et al. 2019) in one softmax: query i attends
    to the previous ``stride`` keys |i - j| < stride and to every key a multiple of ``stride`` away
    (j <= i when ``causal``), exactly ``scaled_dot_product_attention`` with
    ``strided_mask(T, stride, causal)``.

    The two parts are computed apart and share one softmax: the band in blocks of ``stride``
    queries (as ``local_attention``), the strided keys by viewing positions i = a·stride + r as a
    (T / stride, stride) grid whose columns r are attended along. Keys per query:
    about 2·stride + T / stride, so with stride ~ sqrt(T) time and memory grow like T sqrt(T).

    q, k, v: (..., T, d) of one sequence (T = S). Returns (output (..., T, d_v), None).
    """
    _check_self_attention(q, k, v)
    require_positive_int("stride", stride)
    T, d_k, d_v = q.shape[-2], q.shape[-1], v.shape[-1]
    scale = 1.0 / math.sqrt(d_k) if scale is None else float(scale)
    q3, k3, v3, batch = _flatten(q, k, v)
    N, s = q3.shape[0], stride
    band, band_keep, v_band = _band(q3, k3, v3, s, s - 1, causal, scale)  # (N, A, s, K)
    A, K = band.shape[1], band.shape[-1]
    P = A * s

    def columns(x):  # (N, T, d) -> (N, s, A, d): column r holds positions r, s + r, 2s + r, ...
        return _pad_to(x, P).view(N, A, s, -1).transpose(1, 2)

    far = columns(q3 * scale) @ columns(k3).transpose(-2, -1)  # (N, s, A, A)
    a = torch.arange(A, device=q.device)
    r = torch.arange(s, device=q.device)
    key_pos = a.view(1, 1, A) * s + r.view(s, 1, 1)  # (s, 1, A)
    far_keep = (key_pos < T) & (a.view(1, A, 1) != a.view(1, 1, A))  # (s, A, A) j != i
    if causal:
        far_keep = far_keep & (a.view(1, 1, A) < a.view(1, A, 1))
    # one softmax over both parts, query by query: (N, P, K + A)
    scores = torch.cat(
        [band.reshape(N, P, K), far.permute(0, 2, 1, 3).reshape(N, P, A)], dim=-1
    )  # (N, P, K + A)
    keep = torch.cat(
        [band_keep.reshape(P, K), far_keep.permute(1, 0, 2).reshape(P, A)], dim=-1
    )  # (P, K + A)
    weights = softmax_(scores, dim=-1, keep=keep)  # (N, P, K + A)
    w_band, w_far = weights.split([K, A], dim=-1)  # (N, P, K), (N, P, A)
    out = (w_band.reshape(N, A, s, K) @ v_band).reshape(N, P, d_v)  # (N, P, d_v)
    far_out = w_far.reshape(N, A, s, A).transpose(1, 2) @ columns(v3)  # (N, s, A, d_v)
    out = out + far_out.transpose(1, 2).reshape(N, P, d_v)  # (N, P, d_v)
    return out[:, :T].reshape(*batch, T, d_v), None
