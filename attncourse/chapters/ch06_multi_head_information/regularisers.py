"""The regularisers of source 000 §14.3.7 on multi-head attention, and what minimising them does.

* ``entropy_loss``: Def. 14.3.16, L = H(α) (Eq. 14.3.42), averaged over queries;
* ``diversity_attention_loss``: App. 14.3.5's code, unchanged (the variance across heads of each
  head's summed attention entropy);
* ``overlap_loss``: a loss that does separate the heads' patterns — the mean over queries and
  over pairs of distinct heads of ⟨α_i^h, α_i^h'⟩ (the disagreement idea of Li et al. 2018;
  Lin et al. 2017 penalise ‖A Aᵀ − I‖²);
* ``descend``: plain gradient descent on free attention scores (B, H, T, S), to see where a loss
  takes the heads.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from ...attention import softmax
from ...metrics import attention_entropy
from ...threads import single_thread


def entropy_loss(weights: torch.Tensor) -> torch.Tensor:
    """H(α) = −Σ_i α_i log α_i (Eq. 14.3.42) averaged over every query: weights (B, H, T, S)."""
    return attention_entropy(weights).mean()


def diversity_attention_loss(attention_weights):
    """App. 14.3.5 exactly as printed (comments translated): attention_weights
    (batch, heads, query_len, key_len) -> the variance across heads of each head's entropy
    summed over queries, averaged over the batch."""
    # entropy of each head
    entropy_per_head = []
    for h in range(attention_weights.shape[1]):
        alpha = attention_weights[:, h, :, :]  # [batch, q, k]
        # a small constant against log(0)
        alpha = alpha + 1e-8
        alpha = alpha / alpha.sum(dim=-1, keepdim=True)
        entropy = -torch.sum(alpha * torch.log(alpha), dim=(-1, -2))
        entropy_per_head.append(entropy)

    # encourage entropy differences between heads
    entropy_tensor = torch.stack(entropy_per_head, dim=1)  # [batch, heads]
    diversity_loss = torch.var(entropy_tensor, dim=1).mean()

    return diversity_loss


def overlap_loss(weights: torch.Tensor) -> torch.Tensor:
    """Mean over queries and distinct head pairs of ⟨α_i^h, α_i^h'⟩ ∈ [0, 1]: 1 when two heads
    put all their weight on the same key, 0 when no two heads share a key. weights (B, H, T, S)."""
    H = weights.shape[1]
    gram = torch.einsum("bhts,bgts->btgh", weights, weights)  # (B, T, H, H)
    off_diagonal = gram.sum((-1, -2)) - gram.diagonal(dim1=-2, dim2=-1).sum(-1)  # (B, T)
    return off_diagonal.mean() / (H * (H - 1))


@single_thread()
def descend(
    scores: torch.Tensor,
    loss_fn: Callable[[torch.Tensor], torch.Tensor],
    steps: int = 300,
    lr: float = 0.5,
    sign: float = 1.0,
) -> list[torch.Tensor]:
    """Gradient descent on ``sign * loss_fn(softmax(scores))`` (sign −1: ascent), starting from
    ``scores`` (B, H, T, S). Returns the weights before and after, each (B, H, T, S)."""
    s = scores.detach().clone().requires_grad_(True)
    start = softmax(s, dim=-1).detach()
    for _ in range(steps):
        loss = sign * loss_fn(softmax(s, dim=-1))
        (grad,) = torch.autograd.grad(loss, s)
        with torch.no_grad():
            s -= lr * grad
    return [start, softmax(s, dim=-1).detach()]


def head_entropies(weights: torch.Tensor) -> torch.Tensor:
    """Each head's attention entropy in nats, averaged over batch and queries: (H,)."""
    return attention_entropy(weights).mean(dim=(0, 2))
