"""Identity paths around a layer: residual, highway and multi-scale highway connections, and the
Transformer block with its three normalization placements (source 004 §5.3.1–5.3.5)."""

import torch
import torch.nn.functional as F
from torch import nn

from ._validation import require_float, require_ndim, require_size
from .attention.multihead import MultiHeadAttention
from .attention.softmax import softmax
from .norms import LayerNorm


class Residual(nn.Module):
    """y = x + F(x)   (source 004 Eq. 5.3.1); its Jacobian is I + dF/dx (Eq. 5.3.2)."""

    def __init__(self, fn: nn.Module):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return x + self.fn(x)


class Highway(nn.Module):
    """y = H(x) · T(x) + x · (1 − T(x))   (source 004 Eq. 5.3.4; Srivastava et al. 2015).

    T(x) = sigmoid(W_T x + b_T) is the transform gate and C = 1 − T the carry gate (Eq. 5.3.3).
    A negative ``gate_bias`` starts every layer close to the identity (the paper used −1 … −3,
    deeper nets further). ``transform`` is H; by default ReLU(W_H x + b_H).
    """

    def __init__(self, dim: int, transform: nn.Module | None = None, gate_bias: float = -1.0):
        super().__init__()
        self.dim = dim
        self.transform = (
            nn.Sequential(nn.Linear(dim, dim), nn.ReLU()) if transform is None else transform
        )
        self.gate = nn.Linear(dim, dim)
        nn.init.constant_(self.gate.bias, gate_bias)

    def transform_gate(self, x: torch.Tensor) -> torch.Tensor:
        require_float("x", x)
        require_size("x", x, -1, self.dim, "feature size")
        return torch.sigmoid(self.gate(x))  # (..., dim), values in (0, 1)

    def forward(self, x):
        t = self.transform_gate(x)  # (..., dim)
        return self.transform(x) * t + x * (1 - t)  # (..., dim)


class MultiScaleHighway(nn.Module):
    """y = x + Σ_k w_k H_k(x),  w = softmax(fusion logits)   (source 004 Eq. 5.3.6).

    H_k is a ReLU convolution along the sequence with kernel size ``kernel_sizes[k]`` (its
    receptive field R_k), so one block mixes local and wider context. Input (B, T, dim).
    """

    def __init__(self, dim: int, kernel_sizes=(1, 3, 5)):
        super().__init__()
        if not kernel_sizes or any(k < 1 or k % 2 == 0 for k in kernel_sizes):
            raise ValueError(
                f"kernel_sizes must be odd positive integers, got {tuple(kernel_sizes)}"
            )
        self.dim = dim
        self.branches = nn.ModuleList(nn.Conv1d(dim, dim, k, padding=k // 2) for k in kernel_sizes)
        self.fusion_logits = nn.Parameter(torch.zeros(len(kernel_sizes)))

    @property
    def fusion_weights(self) -> torch.Tensor:
        return softmax(self.fusion_logits, dim=0)  # (K,), sums to 1

    def forward(self, x):
        require_float("x", x)
        require_ndim("x", x, 3, "(B, T, dim)")
        require_size("x", x, -1, self.dim, "feature size")
        channels_first = x.transpose(1, 2)  # (B, dim, T)
        scales = torch.stack(
            [F.relu(conv(channels_first)) for conv in self.branches]
        )  # (K, B, dim, T)
        mixed = (self.fusion_weights[:, None, None, None] * scales).sum(0)  # (B, dim, T)
        return x + mixed.transpose(1, 2)  # (B, T, dim)


class TransformerBlock(nn.Module):
    """Self-attention + feed-forward, each wrapped in a residual path, with the norm placed as

    "post":     x ← LN(x + F(x))        (source 004 Eq. 5.3.10; Vaswani et al. 2017)
    "pre":      x ← x + F(LN(x))        (source 004 Eq. 5.3.11; Xiong et al. 2020)
    "deepnorm": x ← LN(α x + F(x))      (Wang et al. 2022) with α = (2N)^¼ and the FFN, value
                and output projections initialised with gain β = (8N)^−¼, N = ``num_layers``.
    Called as ``block(x, mask=None, causal=False)`` on (B, T, d_model); returns (x, weights).
    """

    NORM_PLACEMENTS = ("post", "pre", "deepnorm")
    ACTIVATIONS = {"relu": nn.ReLU, "gelu": nn.GELU}

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        dim_feedforward: int | None = None,
        norm: str = "pre",
        activation: str = "relu",
        num_layers: int | None = None,
        eps: float = 1e-5,
        bias: bool = True,
    ):
        super().__init__()
        if norm not in self.NORM_PLACEMENTS:
            raise ValueError(f"norm must be one of {self.NORM_PLACEMENTS}, got {norm!r}")
        if activation not in self.ACTIVATIONS:
            raise ValueError(
                f"activation must be one of {tuple(self.ACTIVATIONS)}, got {activation!r}"
            )
        if norm == "deepnorm" and (num_layers is None or num_layers < 1):
            raise ValueError("norm='deepnorm' needs num_layers (the N in α = (2N)^¼, β = (8N)^−¼)")
        dim_feedforward = 4 * d_model if dim_feedforward is None else dim_feedforward
        self.norm = norm
        self.attn = MultiHeadAttention(d_model, num_heads, bias=bias)
        self.norm1 = LayerNorm(d_model, eps=eps, bias=bias)
        self.norm2 = LayerNorm(d_model, eps=eps, bias=bias)
        self.ffn = nn.Sequential(
            nn.Linear(d_model, dim_feedforward, bias=bias),
            self.ACTIVATIONS[activation](),
            nn.Linear(dim_feedforward, d_model, bias=bias),
        )
        self.alpha = 1.0
        if norm == "deepnorm":
            self.alpha = (2 * num_layers) ** 0.25
            beta = (8 * num_layers) ** -0.25
            for layer, gain in (
                (self.attn.q_proj, 1.0),
                (self.attn.k_proj, 1.0),
                (self.attn.v_proj, beta),
                (self.attn.out_proj, beta),
                (self.ffn[0], beta),
                (self.ffn[2], beta),
            ):
                nn.init.xavier_normal_(layer.weight, gain=gain)

    def forward(self, x, mask=None, causal: bool = False):
        if self.norm == "pre":
            # (B, T, d), (B, H, T, T)
            attended, weights = self.attn(self.norm1(x), mask=mask, causal=causal)
            x = x + attended  # (B, T, d)
            return x + self.ffn(self.norm2(x)), weights
        attended, weights = self.attn(x, mask=mask, causal=causal)  # (B, T, d), (B, H, T, T)
        x = self.norm1(self.alpha * x + attended)  # (B, T, d)
        return self.norm2(self.alpha * x + self.ffn(x)), weights

    @classmethod
    def from_torch(cls, layer: nn.TransformerEncoderLayer) -> "TransformerBlock":
        """A copy of ``nn.TransformerEncoderLayer``'s weights (norm_first: "pre", else "post")."""
        if not isinstance(layer, nn.TransformerEncoderLayer):
            raise ValueError(f"expected nn.TransformerEncoderLayer, got {type(layer).__name__}")
        activation = {1: "relu", 2: "gelu"}.get(layer.activation_relu_or_gelu)
        if activation is None:
            raise ValueError("only relu or gelu activations can be copied")
        ref = layer.linear1.weight
        block = cls(
            layer.self_attn.embed_dim,
            layer.self_attn.num_heads,
            layer.linear1.out_features,
            norm="pre" if layer.norm_first else "post",
            activation=activation,
            eps=layer.norm1.eps,
            bias=layer.linear1.bias is not None,
        ).to(device=ref.device, dtype=ref.dtype)
        block.attn = MultiHeadAttention.from_torch(layer.self_attn)
        block.ffn[0].load_state_dict(layer.linear1.state_dict())
        block.ffn[2].load_state_dict(layer.linear2.state_dict())
        block.norm1.load_state_dict(layer.norm1.state_dict())
        block.norm2.load_state_dict(layer.norm2.state_dict())
        return block
