"""Softmax from scratch: source 000 Eq. (14.3.2)/(14.3.14), with temperature Eq. (14.3.20)."""

import math

import torch

from .._validation import check_mask, require_float, require_positive


def softmax(x: torch.Tensor, dim: int = -1, temperature: float = 1.0, mask=None) -> torch.Tensor:
    """alpha_i = exp(s_i / T) / sum_j exp(s_j / T)   (Eq. 14.3.20; T = 1 is Eq. 14.3.14).

    ``mask`` (bool, True = keep) removes entries from the sum. A slice whose entries are all
    masked gets all-zero weights, never NaN. The row maximum is subtracted before ``exp``
    (softmax is shift-invariant), so scores of +-1e4 neither overflow nor underflow to 0/0.
    ``x`` itself is left unchanged.
    """
    require_float("x", x)
    require_positive("temperature", temperature)
    if mask is not None:
        check_mask(mask, x.shape)
        if mask.dtype != torch.bool:
            raise ValueError(f"softmax's mask must be bool (True = keep), got {mask.dtype}")
    return softmax_(x / temperature, dim, keep=mask)  # x / T is a new tensor: x stays as it was


def exp_(x: torch.Tensor) -> torch.Tensor:
    """e^x, computed in place in ``x``, as 2^(x log2 e): PyTorch's CPU ``exp2`` is several
    times faster than its ``exp``, which also takes a slow path on the -inf of masked scores."""
    return x.mul_(math.log2(math.e)).exp2_()


def softmax_(scores: torch.Tensor, dim: int = -1, keep=None) -> torch.Tensor:
    """softmax(scores) along ``dim``, computed in place: ``scores`` becomes the weights.

    For a tensor nothing else reads, e.g. a matmul's output: each step (mask, shift, exp,
    normalise) rewrites it instead of allocating a new (T, S) matrix. ``keep`` (bool,
    True = keep) is an optional mask, as in ``softmax``; inputs are not validated.
    """
    return _InPlaceSoftmax.apply(scores, keep, dim)


class _InPlaceSoftmax(torch.autograd.Function):
    """Forward: Eq. (14.3.14), in place. Backward: the upstream gradient g times the softmax
    Jacobian diag(alpha) - alpha alpha^T (chapter 03), ds_i = alpha_i (g_i - sum_j g_j alpha_j),
    from the weights alone. Autograd through the forward's steps would keep and replay each of
    them (mask, shift, exp, sum, divide) over the whole (T, S) matrix instead.
    """

    @staticmethod
    def forward(ctx, scores, keep, dim):
        if keep is not None:
            scores.masked_fill_(~keep, float("-inf"))  # masked entries: exp(-inf) = 0
        row_max = scores.amax(dim=dim, keepdim=True)
        row_max = torch.where(torch.isfinite(row_max), row_max, 0.0)  # an all-masked row's is -inf
        weights = exp_(scores.sub_(row_max))
        total = weights.sum(dim=dim, keepdim=True)
        weights.div_(torch.where(total > 0, total, 1.0))  # all-masked rows stay 0
        ctx.mark_dirty(scores)
        ctx.save_for_backward(weights)
        ctx.dim = dim
        return weights

    @staticmethod
    def backward(ctx, grad):
        (weights,) = ctx.saved_tensors
        grad_scores = grad * weights  # g_i alpha_i
        dot = grad_scores.sum(dim=ctx.dim, keepdim=True)  # sum_j g_j alpha_j
        return grad_scores.addcmul_(weights, dot, value=-1), None, None  # alpha_i (g_i - dot)
