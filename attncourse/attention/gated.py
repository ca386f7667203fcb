"""Gated attention: source 000 Def. 14.3.19, Eq. (14.3.48): g = sigma(W_g [q; k; v]),
Z = g ⊙ Attention(q, k, v); and output gating as in Qiu et al. 2025 (a sigmoid gate on each
head's attention output, computed from the query's input)."""

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
    Seen from Qiu et al. 2025 it is a *head-wise* output gate whose score is an MLP of the query
    position (``OutputGatedAttention`` is their linear, element-wise or head-wise, version).
    """

    def __init__(self, d_model: int, num_heads: int, bias: bool = True):
        super().__init__(d_model, num_heads, bias=bias)
        self.gate = nn.Sequential(
            nn.Linear(3 * d_model, d_model), nn.GELU(), nn.Linear(d_model, num_heads), nn.Sigmoid()
        )

    def forward(self, x, mask=None, causal: bool = False):
        self._check_inputs(x, x, x)
        q, k, v = self.q_proj(x), self.k_proj(x), self.v_proj(x)  # (B, T, d_model) each
        g = self.gate(torch.cat([q, k, v], dim=-1))  # (B, T, H)
        g = g.transpose(1, 2).unsqueeze(-1)  # (B, H, T, 1)
        q, k, v = (self._split_heads(t, self.num_heads) for t in (q, k, v))  # (B, H, T, hd)
        out, weights = scaled_dot_product_attention(
            q, k, v, mask, causal=causal
        )  # (B, H, T, hd), (B, H, T, T)
        return self.merge_heads(g * out), g * weights  # (B, T, d_model), (B, H, T, T)


class OutputGatedAttention(MultiHeadAttention):
    """Multi-head attention with a sigmoid gate on each head's output (Qiu et al. 2025, "G1"):

        Y_h = softmax(q_h k_h^T / sqrt(d_h)) v_h,   Y'_h = Y_h ⊙ sigmoid(x W_g + b_g)_h,
        output = W_O [Y'_1; ...; Y'_H],

    where x is the query's input (the layer's input in self-attention), so the gate depends on
    the query alone. ``headwise=False``: one gate per head and channel (W_g: d_model x d_model);
    ``headwise=True``: one gate per head (W_g: d_model x H). A gate near 0 lets a head output
    nothing for a query without putting its softmax weight anywhere in particular, which is how
    the paper explains the missing attention sink. Called like ``MultiHeadAttention``; returns
    (output (B, T, d_model), the softmax weights (B, H, T, S), before the gate). ``gates(query)``
    gives the gate values (B, H, T, 1 or d_h).
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        num_kv_heads: int | None = None,
        headwise: bool = False,
        bias: bool = True,
    ):
        super().__init__(d_model, num_heads, num_kv_heads, bias=bias)
        self.headwise = headwise
        self.gate_proj = nn.Linear(d_model, num_heads if headwise else d_model, bias=bias)

    def gates(self, query: torch.Tensor) -> torch.Tensor:
        """sigmoid(x W_g + b_g) per head: (B, H, T, 1) head-wise, (B, H, T, d_h) element-wise."""
        B, T, _ = query.shape
        g = torch.sigmoid(self.gate_proj(query))  # (B, T, H) or (B, T, d_model)
        return g.view(B, T, self.num_heads, -1).transpose(1, 2)  # (B, H, T, 1 or hd)

    def forward(self, query, key=None, value=None, mask=None, causal: bool = False):
        z, weights = self.head_outputs(
            query, key, value, mask, causal
        )  # (B, H, T, hd), (B, H, T, S)
        return self.merge_heads(self.gates(query) * z), weights  # (B, T, d_model), (B, H, T, S)
