"""Gated attention: source 000 Def. 14.3.19, Eq. (14.3.48):
g = sigma(W_g [q; k; v]), Z = g ⊙ Attention(q, k, v)."""

import torch
from torch import nn

from .dot_product import scaled_dot_product_attention
from .multihead import MultiHeadAttention


class GatedAttention(MultiHeadAttention):
    """Multi-head self-attention whose every (head, query) output is scaled by a learned gate.

    The gate network follows the source's listing (Application 14.3.7): Linear(3d, d) -> GELU
    -> Linear(d, H) -> sigmoid on [q; k; v] of the same position, one gate per head and query.
    The listing reshapes the gate to (B, T, 1, H, 1), which does not broadcast against the
    (B, H, T, S) weights; the gate belongs on (B, H, T, 1), as here. Returns (output, gated
    weights g * alpha), so each weight row sums to its gate value and output = W_O (weights @ v).
    """

    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__(d_model, num_heads, bias=bias)
        self.gate = nn.Sequential(
            nn.Linear(3 * d_model, d_model), nn.GELU(), nn.Linear(d_model, num_heads), nn.Sigmoid()
        )

    def forward(self, x, mask=None, causal: bool = False):
        self._check_inputs(x, x, x)
        B, T, _ = x.shape
        q, k, v = self.q_proj(x), self.k_proj(x), self.v_proj(x)  # (B, T, d_model) each
        g = self.gate(torch.cat([q, k, v], dim=-1))  # (B, T, H)
        g = g.transpose(1, 2).unsqueeze(-1)  # (B, H, T, 1)
        q, k, v = (self._split_heads(t, self.num_heads) for t in (q, k, v))  # (B, H, T, hd)
        out, weights = scaled_dot_product_attention(
            q, k, v, mask, causal=causal
        )  # (B, H, T, hd), (B, H, T, T)
        out = (g * out).transpose(1, 2).reshape(B, T, self.d_model)  # (B, T, d_model)
        return self.out_proj(out), g * weights  # (B, T, d_model), (B, H, T, T)
