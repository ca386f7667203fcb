"""The identity path of source 004 §5.3.1: the gradient through a residual stack, and two claims
about it made measurable.

* ``residual_gradient``: Eq. (5.3.2) applied block by block, ∂L/∂x_l = ∂L/∂x_{l+1} (I + J_l), for
  every layer of a stack x_{l+1} = x_l + F_l(x_l) (the reference of the chapter's exercise);
* ``near_identity_fit``: "if the target is close to the identity, learning the residual
  F* = H* − x is much easier than learning H* directly". The same one-hidden-layer network G is
  trained as y = G(x) (plain) and as y = x + G(x) (residual, Eq. 5.3.1) on a target near the
  identity, H*(x) = x + 0.1 tanh(2xA), and on its mirror image, H*(x) = −x + 0.1 tanh(2xA), which
  is just as simple but far from the identity.
* ``attention_stack``: "in attention layers the residual carries the input's information even when
  attention's gradient is small". A stack of self-attention layers (``MultiHeadAttention``) with
  the output projection scaled by ``branch_scale`` (a small attention gradient), with and without
  the residual path: the gradient that reaches the input, and how distinct the tokens stay (pure
  attention averages tokens: its output collapses to one vector, Dong et al. 2021).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
from torch import nn

from ..._validation import require_choice, require_positive_int
from ...attention import MultiHeadAttention
from ...threads import single_thread

TARGETS = ("near", "mirror")


def residual_gradient(g: torch.Tensor, jacobians: torch.Tensor) -> torch.Tensor:
    """∂L/∂x_l for every layer of a residual stack x_{l+1} = x_l + F_l(x_l)   (Eq. 5.3.2).

    g (d,): ∂L/∂x_L, the gradient at the top, as a row vector; jacobians (L, d, d): block l's
    branch Jacobian, jacobians[l][i, j] = ∂F_l(x)_i / ∂x_j at x_l. Returns (L + 1, d): row l is
    ∂L/∂x_l = ∂L/∂x_{l+1} (I + J_l) = ∂L/∂x_{l+1} + ∂L/∂x_{l+1} J_l, row L is g itself.
    """
    rows = [g]  # from the top down: ∂L/∂x_L, ∂L/∂x_{L-1}, ...
    for J in reversed(jacobians.unbind(0)):  # (d, d) each, the last block first
        rows.append(rows[-1] + rows[-1] @ J)  # (d,) = g (I + J)
    return torch.stack(rows[::-1])  # (L + 1, d), row l = ∂L/∂x_l


def identity_targets(target: str, n: int = 256, d: int = 16, seed: int = 0):
    """x ~ N(0, I_d) (n, d) and H*(x) = ±x + 0.1 tanh(2 x A), A ~ N(0, 1/d): "near" takes +x (close
    to the identity), "mirror" −x (the same map reflected: far from the identity)."""
    require_choice("target", target, TARGETS)
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g)  # (n, d)
    a = torch.randn(d, d, generator=g) / math.sqrt(d)  # (d, d)
    wiggle = 0.1 * torch.tanh(2 * x @ a)  # (n, d)
    return x, (x if target == "near" else -x) + wiggle  # (n, d), (n, d)


@single_thread()
def near_identity_fit(
    target: str,
    residual: bool,
    *,
    seed: int = 0,
    steps: int = 200,
    width: int = 64,
    lr: float = 1e-2,
    **data,
) -> torch.Tensor:
    """Fit H* (``identity_targets(target, seed=seed, **data)``) with G(x) or x + G(x).

    G = Linear(d, width) → ReLU → Linear(width, d), PyTorch's default initialisation from
    ``torch.manual_seed(seed)``, full-batch Adam on the mean squared error. Returns the relative
    error MSE / Var(H*) before each step, (steps,): 1 is no better than predicting the mean.
    """
    require_positive_int("steps", steps)
    x, y = identity_targets(target, seed=seed, **data)  # (n, d), (n, d)
    d = x.shape[1]
    torch.manual_seed(seed)
    net = nn.Sequential(nn.Linear(d, width), nn.ReLU(), nn.Linear(width, d))
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    variance = (y - y.mean(0)).pow(2).mean()  # ()
    errors = torch.empty(steps)
    for step in range(steps):
        out = x + net(x) if residual else net(x)  # (n, d)   Eq. (5.3.1) or plain
        loss = (out - y).pow(2).mean()
        errors[step] = loss.detach() / variance
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return errors


class AttentionStackStats(NamedTuple):
    """One pass through a stack of self-attention layers (``attention_stack``)."""

    gradient_ratio: float  # ‖∂L/∂x_0‖ / ‖∂L/∂x_L‖ for a random upstream gradient at x_L
    spread_in: float  # ‖x_0 − mean over tokens‖ / ‖x_0‖: 0 = every token the same vector
    spread_out: float  # the same for the output x_L


def attention_stack(
    residual: bool,
    branch_scale: float = 1.0,
    *,
    depth: int = 12,
    d_model: int = 32,
    num_heads: int = 4,
    tokens: int = 16,
    batch: int = 4,
    seed: int = 0,
) -> AttentionStackStats:
    """x_{l+1} = x_l + A_l(x_l) (``residual``) or A_l(x_l), A_l a ``MultiHeadAttention`` whose
    output projection is scaled by ``branch_scale`` (PyTorch's default initialisation from
    ``torch.manual_seed(seed)``, float64, bias 0, no mask)."""
    require_positive_int("depth", depth)
    torch.manual_seed(seed)
    layers = [MultiHeadAttention(d_model, num_heads).double() for _ in range(depth)]
    with torch.no_grad():
        for layer in layers:
            layer.out_proj.weight.mul_(branch_scale)
            layer.out_proj.bias.zero_()
    g = torch.Generator().manual_seed(100 + seed)
    x0 = torch.randn(batch, tokens, d_model, generator=g, dtype=torch.float64)  # (B, T, d)
    x0.requires_grad_(True)
    x = x0
    for layer in layers:
        attended, _ = layer(x)  # (B, T, d)
        x = x + attended if residual else attended  # (B, T, d)
    upstream = torch.randn(batch, tokens, d_model, generator=g, dtype=torch.float64)  # dL/dx_L
    (grad,) = torch.autograd.grad(x, x0, upstream)  # (B, T, d) dL/dx_0

    def spread(t):
        t = t.detach()
        return float((t - t.mean(1, keepdim=True)).norm() / t.norm())

    return AttentionStackStats(float(grad.norm() / upstream.norm()), spread(x0), spread(x))
