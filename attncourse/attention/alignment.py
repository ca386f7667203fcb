"""Encoder-decoder alignment attention: Bahdanau (additive) and Luong (dot and general, which are
multiplicative, and concat, which is additive).

Source 003: e_tj = a(s_{t-1}, h_j), alpha_tj = softmax_j(e_tj), c_t = sum_j alpha_tj h_j.
"""

import torch
from torch import nn

from .._validation import check_mask, require_float, require_ndim, require_size
from .softmax import softmax


def _align(score_fn, query_dim: int, key_dim: int, query, keys, values, mask):
    """Shared soft-alignment step: scores -> softmax over source positions -> context.

    query: (B, d_q) for one decoding step, or (B, T, d_q); keys: (B, S, d_k); values: (B, S, d_v).
    """
    values = keys if values is None else values
    require_float("query", query)
    require_ndim("query", query, (2, 3), "(B, d_q) or (B, T, d_q)")
    require_size("query", query, -1, query_dim, "feature size")
    for name, x in (("keys", keys), ("values", values)):
        require_float(name, x)
        require_ndim(name, x, 3, "(B, S, features)")
    require_size("keys", keys, -1, key_dim, "feature size")
    if keys.shape[:2] != values.shape[:2]:
        raise ValueError(
            f"keys and values must have the same (B, S), got {tuple(keys.shape)} "
            f"and {tuple(values.shape)}"
        )
    if query.shape[0] != keys.shape[0]:
        raise ValueError(
            f"query and keys must have the same batch size B, got {query.shape[0]} "
            f"and {keys.shape[0]}"
        )
    single_step = query.dim() == 2
    q = query.unsqueeze(1) if single_step else query  # (B, T, d_q)
    scores = score_fn(q, keys)  # (B, T, S)
    if mask is not None:
        check_mask(mask, scores.shape)
    weights = softmax(scores, dim=-1, mask=mask)  # (B, T, S)
    context = weights @ values  # (B, T, d_v)
    if single_step:
        return context.squeeze(1), weights.squeeze(1)  # (B, d_v), (B, S)
    return context, weights


class AdditiveAttention(nn.Module):
    """Bahdanau et al. 2015: e_tj = v_a^T tanh(W_a s + U_a h_j)   (source 003, additive score).

    Called as ``attn(query, keys, values=None, mask=None)`` -> (context, weights); ``mask`` is
    bool (True = may attend) broadcastable to (B, T, S), e.g. ``padding_mask(lengths)[:, 0]``.
    """

    def __init__(self, query_dim: int, key_dim: int, hidden_dim: int):
        super().__init__()
        self.query_dim, self.key_dim = query_dim, key_dim
        self.W_a = nn.Linear(query_dim, hidden_dim, bias=False)
        self.U_a = nn.Linear(key_dim, hidden_dim, bias=False)
        self.v_a = nn.Linear(hidden_dim, 1, bias=False)

    def score(self, q: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        hidden = torch.tanh(
            self.W_a(q).unsqueeze(2) + self.U_a(keys).unsqueeze(1)
        )  # (B, T, S, hidden)
        return self.v_a(hidden).squeeze(-1)  # (B, T, S)

    def forward(self, query, keys, values=None, mask=None):
        return _align(self.score, self.query_dim, self.key_dim, query, keys, values, mask)


class LuongAttention(nn.Module):
    """Luong et al. 2015 scores (source 003):

    dot: s^T h_j  ·  general: s^T W_a h_j  ·  concat: v_a^T tanh(W_a [s; h_j]).
    dot and general are multiplicative; concat is the additive form (as in Bahdanau's score).
    Same call and return as ``AdditiveAttention``. "dot" needs query_dim == key_dim.
    """

    SCORES = ("dot", "general", "concat")

    def __init__(
        self,
        query_dim: int,
        key_dim: int | None = None,
        score: str = "general",
        hidden_dim: int | None = None,
    ):
        super().__init__()
        key_dim = query_dim if key_dim is None else key_dim
        if score not in self.SCORES:
            raise ValueError(f"score must be one of {self.SCORES}, got {score!r}")
        if score == "dot" and key_dim != query_dim:
            raise ValueError(
                f"the dot score needs query_dim == key_dim, got {query_dim} and {key_dim}"
            )
        self.query_dim, self.key_dim, self.kind = query_dim, key_dim, score
        if score == "general":
            self.W_a = nn.Linear(key_dim, query_dim, bias=False)
        elif score == "concat":
            hidden_dim = query_dim if hidden_dim is None else hidden_dim
            self.W_a = nn.Linear(query_dim + key_dim, hidden_dim, bias=False)
            self.v_a = nn.Linear(hidden_dim, 1, bias=False)

    def score(self, q: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        if self.kind == "dot":
            return q @ keys.transpose(1, 2)  # (B, T, S)
        if self.kind == "general":
            return q @ self.W_a(keys).transpose(1, 2)  # (B, T, S)
        B, T, S = q.shape[0], q.shape[1], keys.shape[1]
        pairs = torch.cat(
            [q.unsqueeze(2).expand(B, T, S, -1), keys.unsqueeze(1).expand(B, T, S, -1)], dim=-1
        )  # (B, T, S, d_q + d_k)
        return self.v_a(torch.tanh(self.W_a(pairs))).squeeze(-1)  # (B, T, S)

    def forward(self, query, keys, values=None, mask=None):
        return _align(self.score, self.query_dim, self.key_dim, query, keys, values, mask)
