"""Normalization layers from scratch: LayerNorm (source 004 Eq. 5.3.7; source 000
Eq. 14.3.33-14.3.34), RMSNorm (Zhang & Sennrich 2019; source 000 Application 14.3.4) and BatchNorm
(source 004 Eq. 5.3.8).

Parameter and buffer names are those of ``nn.LayerNorm``, ``nn.RMSNorm`` and ``nn.BatchNorm1d``,
so a ``state_dict`` moves between a layer here and its PyTorch counterpart in either direction.
"""

import numbers

import torch
from torch import nn

from ._validation import require_float, require_ndim, require_positive

_LOW_PRECISION = (torch.float16, torch.bfloat16)


def _as_shape(normalized_shape) -> tuple:
    shape = (
        (normalized_shape,)
        if isinstance(normalized_shape, numbers.Integral)
        else tuple(normalized_shape)
    )
    if len(shape) == 0 or any(int(n) < 1 for n in shape):
        raise ValueError(
            "normalized_shape must be a positive int or a non-empty tuple of them, "
            f"got {normalized_shape}"
        )
    return tuple(int(n) for n in shape)


def _require_eps(eps) -> None:
    if not eps >= 0:
        raise ValueError(f"eps must be >= 0, got {eps}")


def _check_trailing(name: str, x: torch.Tensor, shape: tuple) -> None:
    """x must end with ``shape``: the dimensions the statistics are taken over."""
    require_float(name, x)
    require_ndim(name, x, (len(shape), None), f"(..., {', '.join(map(str, shape))})")
    if tuple(x.shape[-len(shape) :]) != shape:
        raise ValueError(
            f"{name} must end with the normalized shape {shape}, got trailing shape "
            f"{tuple(x.shape[-len(shape) :])} (shape {tuple(x.shape)})"
        )


def _upcast(x: torch.Tensor) -> torch.Tensor:
    """Statistics of fp16/bf16 inputs are taken in float32, as PyTorch's kernels do."""
    return x.float() if x.dtype in _LOW_PRECISION else x


class LayerNorm(nn.Module):
    """y = gamma * (x - mu) / sqrt(sigma^2 + eps) + beta over each sample's features
    (source 004 Eq. 5.3.7).

    mu and sigma^2 (the biased, 1/d variance) are taken over the trailing ``normalized_shape``
    dimensions of every sample (source 000 Eq. 14.3.33); gamma = ``weight`` and beta = ``bias``
    have that shape (Eq. 14.3.34 is the eps = 0 case). ``elementwise_affine=False`` drops both,
    ``bias=False`` drops beta, as ``nn.LayerNorm``. Source 004 quotes eps ~ 1e-6; the default
    here is PyTorch's 1e-5.
    """

    def __init__(
        self,
        normalized_shape,
        eps: float = 1e-5,
        elementwise_affine: bool = True,
        bias: bool = True,
    ):
        super().__init__()
        _require_eps(eps)
        self.normalized_shape = _as_shape(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = nn.Parameter(torch.ones(self.normalized_shape))  # gamma
            self.bias = nn.Parameter(torch.zeros(self.normalized_shape)) if bias else None  # beta
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _check_trailing("x", x, self.normalized_shape)
        dims = tuple(range(-len(self.normalized_shape), 0))  # the feature dimensions
        xf = _upcast(x)  # (..., *normalized_shape)
        mu = xf.mean(dim=dims, keepdim=True)  # (..., 1, ..., 1)
        var = ((xf - mu) ** 2).mean(dim=dims, keepdim=True)  # (..., 1, ..., 1) biased: 1/d
        y = (xf - mu) * torch.rsqrt(var + self.eps)  # (..., *normalized_shape) x_hat
        if self.weight is not None:
            y = y * self.weight  # (..., *normalized_shape)
        if self.bias is not None:
            y = y + self.bias  # (..., *normalized_shape)
        return y.to(x.dtype)

    def extra_repr(self) -> str:
        return (
            f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"
        )


class RMSNorm(nn.Module):
    """y = x / sqrt(mean(x^2) + eps) * gamma (Zhang & Sennrich 2019; source 000 Application 14.3.4).

    LayerNorm without the mean subtraction and without beta: only the scale is normalized.
    The mean of squares is over the trailing ``normalized_shape`` dimensions. ``eps=None``
    follows ``nn.RMSNorm``: the machine epsilon of the type the statistics are computed in,
    ``torch.finfo(torch.float64).eps`` for float64 and ``torch.finfo(torch.float32).eps`` for
    float32 *and* for fp16/bf16 (which are upcast to float32), not ``finfo(x.dtype).eps``.
    """

    def __init__(self, normalized_shape, eps: float | None = None, elementwise_affine: bool = True):
        super().__init__()
        if eps is not None:
            _require_eps(eps)
        self.normalized_shape = _as_shape(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = nn.Parameter(torch.ones(self.normalized_shape))  # gamma
        else:
            self.register_parameter("weight", None)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _check_trailing("x", x, self.normalized_shape)
        dims = tuple(range(-len(self.normalized_shape), 0))  # the feature dimensions
        xf = _upcast(x)  # (..., *normalized_shape)
        eps = torch.finfo(xf.dtype).eps if self.eps is None else self.eps
        ms = (xf * xf).mean(dim=dims, keepdim=True)  # (..., 1, ..., 1) mean of squares
        y = xf * torch.rsqrt(ms + eps)  # (..., *normalized_shape)
        if self.weight is not None:
            y = y * self.weight  # (..., *normalized_shape)
        return y.to(x.dtype)

    def extra_repr(self) -> str:
        return (
            f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"
        )


class BatchNorm1d(nn.Module):
    """y = gamma_c (x - mu^(c)) / sqrt(sigma^2(c) + eps) + beta_c, statistics per channel c
    (source 004 Eq. 5.3.8).

    Input (N, C) or (N, C, L). In training mu^(c) and the biased sigma^2(c) are taken over the
    batch (N, and L when present), so every sample's output depends on the rest of the batch;
    a channel with a single value has sigma^2 = 0 and nothing to normalize against, hence the
    ValueError for a training batch of size 1 (N * L == 1). The running estimates follow
    r <- (1 - momentum) r + momentum * batch_stat, with the *unbiased* variance (n / (n - 1));
    ``momentum=None`` makes them the cumulative average over all batches seen. In eval mode
    the running estimates replace the batch statistics, so each sample is normalized alone.
    ``track_running_stats=False`` keeps no estimates and always uses batch statistics.
    """

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
    ):
        super().__init__()
        require_positive("num_features", num_features)
        _require_eps(eps)
        if momentum is not None and not 0 <= momentum <= 1:
            raise ValueError(
                f"momentum must be in [0, 1] or None (cumulative average), got {momentum}"
            )
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = nn.Parameter(torch.ones(num_features))  # (C,) gamma
            self.bias = nn.Parameter(torch.zeros(num_features))  # (C,) beta
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", torch.zeros(num_features))  # (C,)
            self.register_buffer("running_var", torch.ones(num_features))  # (C,)
            self.register_buffer("num_batches_tracked", torch.tensor(0, dtype=torch.long))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1.0)
            self.num_batches_tracked.zero_()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        require_float("x", x)
        require_ndim("x", x, (2, 3), "(N, C) or (N, C, L)")
        if x.shape[1] != self.num_features:
            raise ValueError(
                f"x must have {self.num_features} channels in dim 1, got {x.shape[1]} "
                f"(shape {tuple(x.shape)})"
            )
        dims = (0, 2) if x.dim() == 3 else (0,)  # every dimension but the channels
        shape = (1, -1, 1) if x.dim() == 3 else (1, -1)  # broadcast (C,) against x
        use_batch_stats = self.training or not self.track_running_stats
        xf = _upcast(x)  # (N, C[, L])
        if use_batch_stats:
            n = xf.numel() // xf.shape[1]  # values per channel: N * L
            if n <= 1:
                raise ValueError(
                    "batch statistics need more than one value per channel, "
                    f"got input shape {tuple(x.shape)} "
                    f"({n} value per channel): BatchNorm cannot train on a batch of size 1 "
                    "(use a larger batch, call .eval() to use the running statistics, "
                    "or use LayerNorm)"
                )
            mu = xf.mean(dim=dims)  # (C,)
            var = ((xf - mu.view(shape)) ** 2).mean(dim=dims)  # (C,) biased: normalizes the batch
            if self.training and self.track_running_stats:
                self._update_running_stats(mu, var, n)
        else:
            mu, var = self.running_mean, self.running_var  # (C,), (C,)
        y = (xf - mu.view(shape)) * torch.rsqrt(var.view(shape) + self.eps)  # (N, C[, L])
        if self.affine:
            y = y * self.weight.view(shape) + self.bias.view(shape)  # (N, C[, L])
        return y.to(x.dtype)

    @torch.no_grad()
    def _update_running_stats(self, mu: torch.Tensor, var: torch.Tensor, n: int) -> None:
        self.num_batches_tracked.add_(1)
        # momentum None: a cumulative average, the k-th batch gets weight 1/k
        factor = 1.0 / float(self.num_batches_tracked) if self.momentum is None else self.momentum
        unbiased = var * (n / (n - 1))  # (C,)
        self.running_mean.mul_(1 - factor).add_(factor * mu.to(self.running_mean.dtype))
        self.running_var.mul_(1 - factor).add_(factor * unbiased.to(self.running_var.dtype))

    def extra_repr(self) -> str:
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
            f"track_running_stats={self.track_running_stats}"
        )
