"""Log-softmax and cross-entropy from plain tensor operations: every chapter trains with these.

The loss of a classifier with logits z and true class y is −log softmax(z)_y (the negative
log-likelihood; source 000 Eq. 14.3.2 gives the softmax). Computed as
z − max z − log Σ exp(z − max z), so logits of ±1e4 neither overflow nor lose the answer to 0 · ∞.
"""

import torch

from ._validation import require_choice, require_float, require_tensor


def log_softmax(logits: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """log α_i = z_i − log Σ_j exp(z_j), shifted by max z (softmax is shift-invariant).

    Same shape as ``logits``.
    """
    require_float("logits", logits)
    shifted = logits - logits.detach().amax(dim=dim, keepdim=True)  # (..., V, ...) max is 0
    return shifted - shifted.exp().sum(dim=dim, keepdim=True).log()  # (..., V, ...)


def cross_entropy(
    logits: torch.Tensor, target: torch.Tensor, reduction: str = "mean"
) -> torch.Tensor:
    """−log softmax(logits)[target] over the last dimension: logits (..., V), target (...) long.

    ``reduction="mean"`` averages over every position (a scalar, as ``F.cross_entropy``);
    ``"none"`` returns the loss of each position, shape (...).
    """
    require_float("logits", logits)
    require_tensor("target", target)
    require_choice("reduction", reduction, ("mean", "none"))
    if target.dtype != torch.long:
        raise ValueError(f"target must hold class indices (torch.long), got dtype {target.dtype}")
    if target.shape != logits.shape[:-1]:
        raise ValueError(
            "target must have the logits' shape without the class dimension, "
            f"{tuple(logits.shape[:-1])}, got {tuple(target.shape)}"
        )
    nll = -log_softmax(logits).gather(-1, target.unsqueeze(-1)).squeeze(-1)  # (...)
    return nll.mean() if reduction == "mean" else nll
