"""Multi-head attention: source 000 Def. 14.3.6, Eq. (14.3.10); grouped/multi-query variants."""

import torch
from torch import nn

from .._validation import require_float, require_ndim, require_size
from .dot_product import grouped_query_attention


class MultiHeadAttention(nn.Module):
    """MultiHead(Q, K, V) = W_O [z_1; ...; z_h],  z_h = Attention(Q W_Q^h, K W_K^h, V W_V^h)
    (Eq. 14.3.10).

    ``num_kv_heads`` < ``num_heads`` shares each key/value head among a group of query heads
    (GQA; 1 = multi-query attention). Called as ``mha(query, key=None, value=None, mask=None,
    causal=False)``: self-attention when key/value are omitted. Inputs are (B, T, d_model);
    returns (output (B, T, d_model), per-head weights (B, H, T, S)).
    """

    def __init__(
        self, d_model: int, num_heads: int, num_kv_heads: int | None = None, bias: bool = True
    ):
        super().__init__()
        num_kv_heads = num_heads if num_kv_heads is None else num_kv_heads
        if num_heads < 1 or d_model % num_heads:
            raise ValueError(f"d_model ({d_model}) must be divisible by num_heads ({num_heads})")
        if num_kv_heads < 1 or num_heads % num_kv_heads:
            raise ValueError(
                f"num_heads ({num_heads}) must be a multiple of num_kv_heads ({num_kv_heads})"
            )
        self.d_model, self.num_heads, self.num_kv_heads = d_model, num_heads, num_kv_heads
        self.head_dim = d_model // num_heads
        kv_dim = num_kv_heads * self.head_dim
        self.q_proj = nn.Linear(d_model, d_model, bias=bias)
        self.k_proj = nn.Linear(d_model, kv_dim, bias=bias)
        self.v_proj = nn.Linear(d_model, kv_dim, bias=bias)
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)

    def _split_heads(self, x: torch.Tensor, heads: int) -> torch.Tensor:
        B, L, _ = x.shape
        return x.view(B, L, heads, self.head_dim).transpose(1, 2)  # (B, heads, L, head_dim)

    def _check_inputs(self, query, key, value) -> None:
        for name, x in (("query", query), ("key", key), ("value", value)):
            require_float(name, x)
            require_ndim(name, x, 3, "(B, length, d_model)")
            require_size(name, x, -1, self.d_model, "feature size")
        if key.shape[:2] != value.shape[:2]:
            raise ValueError(
                f"key and value must have the same (B, S), got key {tuple(key.shape)} "
                f"and value {tuple(value.shape)}"
            )
        if query.shape[0] != key.shape[0]:
            raise ValueError(
                f"query and key must have the same batch size, got {query.shape[0]} "
                f"and {key.shape[0]}"
            )

    def head_outputs(self, query, key=None, value=None, mask=None, causal: bool = False):
        """(z_1 … z_h as (B, H, T, hd), weights (B, H, T, S)): every head before W_O."""
        key = query if key is None else key
        value = key if value is None else value
        self._check_inputs(query, key, value)
        q = self._split_heads(self.q_proj(query), self.num_heads)  # (B, H, T, hd)
        k = self._split_heads(self.k_proj(key), self.num_kv_heads)  # (B, H_kv, S, hd)
        v = self._split_heads(self.v_proj(value), self.num_kv_heads)  # (B, H_kv, S, hd)
        return grouped_query_attention(q, k, v, mask, causal=causal)

    def merge_heads(self, z: torch.Tensor) -> torch.Tensor:
        """W_O [z_1; …; z_h]: (B, H, T, hd) -> (B, T, d_model)."""
        B, H, T, hd = z.shape
        return self.out_proj(z.transpose(1, 2).reshape(B, T, H * hd))  # (B, T, d_model)

    def forward(self, query, key=None, value=None, mask=None, causal: bool = False):
        z, weights = self.head_outputs(
            query, key, value, mask, causal
        )  # (B, H, T, hd), (B, H, T, S)
        return self.merge_heads(z), weights  # (B, T, d_model), (B, H, T, S)

    @classmethod
    def from_torch(cls, module: nn.MultiheadAttention) -> "MultiHeadAttention":
        """Copy ``nn.MultiheadAttention``'s weights (q, k, v of one embed dim; no bias_k/v)."""
        if not isinstance(module, nn.MultiheadAttention):
            raise ValueError(f"expected nn.MultiheadAttention, got {type(module).__name__}")
        if not module._qkv_same_embed_dim or module.bias_k is not None:
            raise ValueError(
                "only nn.MultiheadAttention with kdim = vdim = embed_dim and no add_bias_kv "
                "can be copied"
            )
        bias = module.in_proj_bias is not None
        ref = module.in_proj_weight
        mha = cls(module.embed_dim, module.num_heads, bias=bias).to(
            device=ref.device, dtype=ref.dtype
        )
        with torch.no_grad():
            for proj, w in zip(
                (mha.q_proj, mha.k_proj, mha.v_proj), module.in_proj_weight.chunk(3)
            ):
                proj.weight.copy_(w)
            mha.out_proj.weight.copy_(module.out_proj.weight)
            if bias:
                for proj, b in zip(
                    (mha.q_proj, mha.k_proj, mha.v_proj), module.in_proj_bias.chunk(3)
                ):
                    proj.bias.copy_(b)
                mha.out_proj.bias.copy_(module.out_proj.bias)
        return mha
