"""Multi-head attention as subspaces (source 000 Def. 14.3.6, Eq. 14.3.10): what h heads of size
d/h express that one head of size d cannot, and the reverse, the low-rank bottleneck of small
heads (Bhojanapalli et al. 2020).

* ``head_contributions``: W_O [z_1; …; z_h] = Σ_h W_O^h z_h — each head writes its own term;
* ``gated_copy``: a ``GatedMultiHeadAttention`` with the weights of a ``MultiHeadAttention``;
* ``neighbour_targets`` / ``two_head_copy`` / ``one_head_error_bound`` / ``train_one_head``: copying
  both neighbours [x_{i−1}; x_{i+1}] — two heads do it, one head of any size explains at most
  half of it;
* ``pattern_rank`` / ``head_for_pattern``: a head with d_k dimensions produces a given attention
  matrix P exactly iff rank(row-centred log P) ≤ d_k.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from ...attention import MultiHeadAttention, scaled_dot_product_attention, softmax
from ...threads import single_thread
from .heads import GatedMultiHeadAttention


def head_contributions(mha: MultiHeadAttention, x: torch.Tensor) -> torch.Tensor:
    """W_O^h z_h for every head: (B, H, T, d), where W_O^h is the h-th block of d/h columns of
    W_O. Their sum over heads plus the output bias is ``mha(x)[0]`` (Eq. 14.3.10)."""
    B, T, d = x.shape
    H, dh = mha.num_heads, mha.head_dim

    def split(t):
        return t.view(B, T, H, dh).transpose(1, 2)  # (B, H, T, d_h)

    q, k, v = split(mha.q_proj(x)), split(mha.k_proj(x)), split(mha.v_proj(x))
    z, _ = scaled_dot_product_attention(q, k, v)  # (B, H, T, d_h)
    w_o = mha.out_proj.weight.view(d, H, dh).permute(1, 2, 0)  # (H, d_h, d): W_O^h transposed
    return torch.einsum("bhtk,hkd->bhtd", z, w_o)  # (B, H, T, d)


def gated_copy(mha: MultiHeadAttention) -> GatedMultiHeadAttention:
    """A ``GatedMultiHeadAttention`` holding ``mha``'s weights (same dtype)."""
    ref = mha.q_proj.weight
    gated = GatedMultiHeadAttention(
        mha.d_model, mha.num_heads, bias=mha.q_proj.bias is not None
    ).to(dtype=ref.dtype)
    gated.load_state_dict(mha.state_dict())
    return gated


# ------------------------------------------------------------ both neighbours: 2 heads vs 1


def neighbour_targets(x: torch.Tensor) -> torch.Tensor:
    """[x_{i−1}; x_{i+1}] for every position i (circular): x (B, n, m) -> (B, n, 2m)."""
    return torch.cat([x.roll(1, dims=1), x.roll(-1, dims=1)], dim=-1)  # (B, n, 2m)


def offset_bias(n: int, offset: int, strength: float) -> torch.Tensor:
    """A positional score bias (n, n): ``strength`` where j = i + offset (mod n), else 0."""
    i = torch.arange(n)
    bias = torch.zeros(n, n, dtype=torch.float64)
    bias[i, (i + offset) % n] = strength
    return bias


def two_head_copy(x: torch.Tensor, strength: float = 30.0) -> torch.Tensor:
    """Two heads of size m, by hand: head 1 attends to i−1, head 2 to i+1 (positional score
    biases), values are the content x_j, and W_O puts head 1 in the first m outputs and head 2 in
    the last m. x (B, n, m) -> (B, n, 2m); equal to ``neighbour_targets`` up to ~n·e^−strength."""
    n = x.shape[1]
    scores = torch.stack([offset_bias(n, -1, strength), offset_bias(n, 1, strength)])  # (2, n, n)
    zeros = torch.zeros(x.shape[0], 2, n, 1, dtype=x.dtype)  # (B, 2, n, 1): no content in scores
    z, _ = scaled_dot_product_attention(
        zeros, zeros, x[:, None].expand(-1, 2, -1, -1), scores.to(x.dtype)
    )  # (B, 2, n, m)
    return torch.cat([z[:, 0], z[:, 1]], dim=-1)  # (B, n, 2m) = W_O [z_1; z_2]


def relative_error(prediction: torch.Tensor, target: torch.Tensor) -> float:
    """E‖target − prediction‖² / E‖target‖²."""
    return float(((target - prediction) ** 2).sum() / (target**2).sum())


def one_head_error_bound(target: torch.Tensor, content_dim: int) -> float:
    """The least relative error any single head can reach on these targets, when its values are a
    linear map of the content x_j ∈ R^m (positions may shape the scores in any way): its output is
    W_O W_V Σ_j α_ij x_j + b, inside a fixed affine subspace of dimension ≤ m, so the error is at
    least the sum of the 2m − m smallest eigenvalues of the targets' covariance over E‖t‖²."""
    t = target.reshape(-1, target.shape[-1]).double()  # (N, 2m)
    centred = t - t.mean(0)
    eigenvalues = torch.linalg.eigvalsh(centred.T @ centred / t.shape[0])  # ascending
    drop = t.shape[1] - content_dim
    return float(eigenvalues[:drop].sum() / (t**2).sum(1).mean())


class OneHead(nn.Module):
    """One attention head of any size d_k: scores = content q·k / √d_k + a learned (n, n)
    positional bias; values W_V x_j (content only); output W_O z + b."""

    def __init__(self, n: int, m: int, d_k: int):
        super().__init__()
        self.q, self.k = nn.Linear(m, d_k), nn.Linear(m, d_k)
        self.v, self.o = nn.Linear(m, d_k, bias=False), nn.Linear(d_k, 2 * m)
        self.bias = nn.Parameter(torch.zeros(n, n))

    def forward(self, x):
        z, _ = scaled_dot_product_attention(self.q(x), self.k(x), self.v(x), self.bias)
        return self.o(z)  # (B, n, 2m)


@single_thread()
def train_one_head(x: torch.Tensor, steps: int = 300, d_k: int = 16, seed: int = 0) -> OneHead:
    """Fit a ``OneHead`` to ``neighbour_targets(x)`` with Adam (float64)."""
    torch.manual_seed(seed)
    model = OneHead(x.shape[1], x.shape[2], d_k).double()
    opt = torch.optim.Adam(model.parameters(), lr=0.03)
    target = neighbour_targets(x)
    for _ in range(steps):
        loss = ((model(x) - target) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model


# ------------------------------------------------------------- the low-rank bottleneck


def centred_log(P: torch.Tensor) -> torch.Tensor:
    """log P with each row's mean removed: the scores softmax would need, up to row shifts."""
    log_p = torch.log(P)
    return log_p - log_p.mean(dim=-1, keepdim=True)  # (n, n)


def pattern_rank(P: torch.Tensor, tol: float = 1e-9) -> int:
    """rank(row-centred log P): the fewest key/query dimensions d_k of a head whose weights are
    exactly P (softmax(S) = P iff S = log P + c 1ᵀ, and centring the rows cannot raise a rank).
    Singular values below tol · max(1, the largest) count as 0."""
    s = torch.linalg.svdvals(centred_log(P.double()))
    return int((s > tol * max(1.0, float(s[0]))).sum())


def head_for_pattern(P: torch.Tensor, d_k: int):
    """Queries and keys (n, d_k) each, with Q Kᵀ/√d_k the best rank-d_k approximation of the
    row-centred log P (truncated SVD); exact when d_k ≥ ``pattern_rank(P)``."""
    U, s, Vh = torch.linalg.svd(centred_log(P.double()))
    root = s[:d_k].sqrt() * d_k**0.25  # split the singular values between Q and K, undo 1/√d_k
    return U[:, :d_k] * root, Vh[:d_k].T * root  # (n, d_k), (n, d_k)


def pattern_of(Q: torch.Tensor, K: torch.Tensor) -> torch.Tensor:
    """softmax(Q Kᵀ / √d_k): the (n, n) attention weights of a context-independent head."""
    return softmax(Q @ K.T / math.sqrt(Q.shape[1]), dim=-1)


def random_pattern(n: int, seed: int = 0, sharpness: float = 1.0) -> torch.Tensor:
    """A random positive row-stochastic (n, n) matrix: softmax of Gaussian scores."""
    g = torch.Generator().manual_seed(seed)
    return softmax(sharpness * torch.randn(n, n, generator=g, dtype=torch.float64), dim=-1)
