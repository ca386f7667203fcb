"""Softmax from scratch: source 000 Eq. (14.3.2)/(14.3.14), with temperature Eq. (14.3.20)."""

import torch

from .._validation import check_mask, require_float, require_positive


def softmax(x: torch.Tensor, dim: int = -1, temperature: float = 1.0, mask=None) -> torch.Tensor:
    """alpha_i = exp(s_i / T) / sum_j exp(s_j / T)   (Eq. 14.3.20; T = 1 is Eq. 14.3.14).

    ``mask`` (bool, True = keep) removes entries from the sum. A slice whose entries are all
    masked gets all-zero weights, never NaN. The row maximum is subtracted before ``exp``
    (softmax is shift-invariant), so scores of +-1e4 neither overflow nor underflow to 0/0.
    """
    require_float("x", x)
    require_positive("temperature", temperature)
    x = x / temperature
    if mask is not None:
        check_mask(mask, x.shape)
        if mask.dtype != torch.bool:
            raise ValueError(f"softmax's mask must be bool (True = keep), got {mask.dtype}")
        x = x.masked_fill(~mask, float("-inf"))
    row_max = x.detach().amax(dim=dim, keepdim=True)
    row_max = torch.where(torch.isfinite(row_max), row_max, torch.zeros_like(row_max))
    exps = torch.exp(x - row_max)  # masked entries: exp(-inf) = 0
    total = exps.sum(dim=dim, keepdim=True)
    return exps / torch.where(total > 0, total, torch.ones_like(total))  # empty rows stay 0
