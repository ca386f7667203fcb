"""σReparam: spectral reparametrisation of linear layers (Zhai et al. 2023, "Stabilizing Transformer
Training by Preventing Attention Entropy Collapse", ICML).

Every weight matrix W is used as

    Ŵ = γ / σ(W) · W

where σ(W) is the largest singular value of W, estimated with **one power iteration per training
step** (the singular vectors u, v are buffers carried from step to step), and γ is a learnable
scalar (initialised to 1). The spectral norm of Ŵ is γ, so the scores x W_Q W_Kᵀ xᵀ of an attention
layer can only grow as fast as the two scalars γ_Q γ_K grow, not as fast as Adam can move every
entry of W_Q and W_K. By the entropy lower bound of chapter 03 (Hoeffding, H(α) ≥ log n − (Δs)²/8),
a bounded score range keeps attention entropy up.

Built from plain tensor operations (matmul, norm); ``torch.nn.utils.parametrizations.spectral_norm``
is not used.
"""

from __future__ import annotations

import torch
from torch import nn


def _normalise(x: torch.Tensor, eps: float) -> torch.Tensor:
    return x / (x.norm() + eps)


class SigmaReparamLinear(nn.Module):
    """y = x Ŵᵀ + b with Ŵ = γ / σ(W) · W   (Zhai et al. 2023, Eq. 3).

    σ(W) ≈ uᵀ W v, the Rayleigh estimate of the largest singular value from the buffers u (out,)
    and v (in,). In training mode every forward call first advances u, v by one power iteration
    (v ← Wᵀu/‖Wᵀu‖, u ← Wv/‖Wv‖, without gradient); the gradient flows through σ = uᵀ W v as in the
    paper. In eval mode u, v stay as they are. ``init_iters`` power iterations at construction make
    the first estimate accurate.
    """

    def __init__(
        self,
        in_features: int,
        out_features: int,
        bias: bool = True,
        init_iters: int = 15,
        eps: float = 1e-12,
    ):
        super().__init__()
        self.in_features, self.out_features, self.eps = in_features, out_features, eps
        self.weight = nn.Parameter(torch.empty(out_features, in_features))
        self.bias = nn.Parameter(torch.zeros(out_features)) if bias else None
        self.gamma = nn.Parameter(torch.ones(()))
        nn.init.kaiming_uniform_(self.weight, a=5**0.5)  # nn.Linear's default
        self.register_buffer("u", _normalise(torch.randn(out_features), eps))  # (out,)
        self.register_buffer("v", _normalise(torch.randn(in_features), eps))  # (in,)
        self.power_iteration(init_iters)

    @classmethod
    def from_linear(cls, linear: nn.Linear, init_iters: int = 15) -> SigmaReparamLinear:
        """σReparam around an existing ``nn.Linear`` (its weight and bias are copied; γ = 1)."""
        layer = cls(
            linear.in_features, linear.out_features, bias=linear.bias is not None, init_iters=0
        )
        layer = layer.to(device=linear.weight.device, dtype=linear.weight.dtype)
        with torch.no_grad():
            layer.weight.copy_(linear.weight)
            if linear.bias is not None:
                layer.bias.copy_(linear.bias)
        layer.power_iteration(init_iters)
        return layer

    @torch.no_grad()
    def power_iteration(self, iters: int = 1) -> None:
        """Advance the singular-vector estimates u, v by ``iters`` power iterations."""
        W = self.weight  # (out, in)
        for _ in range(iters):
            self.v.copy_(_normalise(W.T @ self.u, self.eps))  # (in,)
            self.u.copy_(_normalise(W @ self.v, self.eps))  # (out,)

    def sigma(self) -> torch.Tensor:
        """The current estimate uᵀ W v of the spectral norm σ(W) (differentiable in W): ()."""
        return self.u @ (self.weight @ self.v)  # ()

    def effective_weight(self) -> torch.Tensor:
        """Ŵ = γ / σ(W) · W: (out, in), with spectral norm ≈ γ."""
        return self.weight * (self.gamma / self.sigma())  # (out, in)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.training:
            self.power_iteration(1)
        y = x @ self.effective_weight().T  # (..., out)
        return y if self.bias is None else y + self.bias  # (..., out)

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"bias={self.bias is not None}"
        )


def sigma_reparam(module: nn.Module, init_iters: int = 15) -> nn.Module:
    """Replace every ``nn.Linear`` inside ``module`` by a ``SigmaReparamLinear`` with the same
    weights (in place; returns ``module``). As in Zhai et al., all linear layers are reparametrised:
    the query, key, value and output projections and both feed-forward layers."""
    for name, child in list(module.named_children()):
        if isinstance(child, nn.Linear):
            setattr(module, name, SigmaReparamLinear.from_linear(child, init_iters))
        else:
            sigma_reparam(child, init_iters)
    return module


__all__ = ["SigmaReparamLinear", "sigma_reparam"]
