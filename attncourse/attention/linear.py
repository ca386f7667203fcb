"""Linear attention: source 000 Def. 14.3.18, Eq. (14.3.46); Katharopoulos et al. 2020,
"Transformers are RNNs", with the feature map phi(x) = elu(x) + 1."""

import torch
import torch.nn.functional as F

from .dot_product import check_qkv


def elu_feature_map(x: torch.Tensor) -> torch.Tensor:
    """phi(x) = elu(x) + 1 > 0, so every kernel value phi(q)^T phi(k) is positive."""
    return F.elu(x) + 1.0


def linear_attention(q, k, v, causal: bool = False, eps: float = 1e-6):
    """alpha_ij = phi(q_i)^T phi(k_j) / sum_j' phi(q_i)^T phi(k_j')   (Eq. 14.3.46).

    Matrix products are associative, so sum_j alpha_ij v_j is computed without the (T, S)
    matrix: out_i = phi(q_i)^T (sum_j phi(k_j) v_j^T) / (phi(q_i)^T sum_j phi(k_j) + eps),
    O(n d_k d_v) time. ``causal`` restricts the sums to j <= i (top-left aligned) with prefix
    sums over positions, the "transformer as an RNN" form (one d_k x d_v state per position).

    q: (..., T, d_k), k: (..., S, d_k), v: (..., S, d_v), batch dimensions broadcast.
    Returns (output (..., T, d_v), None): the (T, S) weights are never materialised.
    """
    check_qkv(q, k, v)
    if k.shape[-2] == 0:
        raise ValueError(f"k and v must hold at least one key, got S=0 (k shape {tuple(k.shape)})")
    if not eps >= 0:
        raise ValueError(f"eps must be >= 0, got {eps}")
    phi_q, phi_k = elu_feature_map(q), elu_feature_map(k)  # (..., T, d_k), (..., S, d_k)
    if not causal:
        kv = phi_k.transpose(-2, -1) @ v  # (..., d_k, d_v)  sum_j phi(k_j) v_j^T
        z = phi_k.sum(dim=-2, keepdim=True)  # (..., 1, d_k)  sum_j phi(k_j)
        numerator = phi_q @ kv  # (..., T, d_v)
        denominator = (phi_q * z).sum(dim=-1, keepdim=True)  # (..., T, 1)
        return numerator / (denominator + eps), None  # (..., T, d_v)

    T, S = q.shape[-2], k.shape[-2]
    kv = torch.cumsum(
        phi_k.unsqueeze(-1) * v.unsqueeze(-2), dim=-3
    )  # (..., S, d_k, d_v) prefix sums
    z = torch.cumsum(phi_k, dim=-2)  # (..., S, d_k)
    if T != S:  # query i sees keys 0..min(i, S - 1)
        last = torch.arange(T, device=q.device).clamp(max=S - 1)  # (T,)
        kv, z = kv[..., last, :, :], z[..., last, :]  # (..., T, d_k, d_v), (..., T, d_k)
    numerator = (phi_q.unsqueeze(-2) @ kv).squeeze(-2)  # (..., T, d_v)
    denominator = (phi_q * z).sum(dim=-1, keepdim=True)  # (..., T, 1)
    return numerator / (denominator + eps), None  # (..., T, d_v)
