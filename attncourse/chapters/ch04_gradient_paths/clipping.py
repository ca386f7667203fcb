"""Gradient clipping (Pascanu et al. 2013): ``clip_gradients``, ``clip_grad_norm_`` and the
``exploding_training`` demonstration.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import nn

from ...rnn import VanillaRNN
from ...threads import single_thread
from .jacobians import scaled_orthogonal


def clip_gradients(grads: Sequence[torch.Tensor], max_norm: float, eps: float = 1e-6):
    """Gradient-norm clipping (Pascanu et al. 2013, Alg. 1): if the global norm ||g|| of all
    gradients together exceeds max_norm, rescale every one by max_norm / ||g||.

    Returns (clipped grads as a tuple, total norm before clipping). The scale is
    min(1, max_norm / (||g|| + eps)), as ``torch.nn.utils.clip_grad_norm_``.
    """
    grads = tuple(grads)
    if not grads:
        return (), torch.tensor(0.0)
    total = torch.sqrt(sum((g.detach().double() ** 2).sum() for g in grads))  # () float64
    scale = torch.clamp(max_norm / (total + eps), max=1.0)  # ()
    return tuple(g * scale.to(g.dtype) for g in grads), total.to(grads[0].dtype)


def clip_grad_norm_(parameters, max_norm: float) -> torch.Tensor:
    """In place on each parameter's ``.grad`` (like ``torch.nn.utils.clip_grad_norm_``); returns the
    total norm before clipping."""
    params = [p for p in parameters if p.grad is not None]
    clipped, total = clip_gradients([p.grad for p in params], max_norm)
    with torch.no_grad():
        for p, g in zip(params, clipped):
            p.grad.copy_(g)
    return total


@single_thread()
def exploding_training(
    clip: float | None = None,
    steps: int = 100,
    lr: float = 0.1,
    rho: float = 1.2,
    T: int = 30,
    hidden: int = 16,
    lag: int = 3,
    seed: int = 0,
    progress: bool = False,
):
    """SGD on a linear RNN started in the exploding regime (W_hh = rho * orthogonal, rho > 1):
    predict the input ``lag`` steps back from the last state. Returns (losses, gradient norms
    before clipping) per step; with ``clip`` the global gradient norm is capped at ``clip``
    (``clip_grad_norm_``). A non-finite loss ends the run early (the rest is reported as nan)."""
    from tqdm.auto import tqdm

    g = torch.Generator().manual_seed(seed)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        rnn = VanillaRNN(1, hidden, nonlinearity="linear")
        readout = nn.Linear(hidden, 1)
    with torch.no_grad():
        rnn.weight_hh.copy_(scaled_orthogonal(hidden, rho, g, torch.float32))
    params = list(rnn.parameters()) + list(readout.parameters())
    opt = torch.optim.SGD(params, lr=lr)
    losses, norms = [], []
    for _ in tqdm(range(steps), desc=f"clip={clip}", disable=not progress, mininterval=0.5):
        x = torch.randn(32, T, 1, generator=g)  # (B, T, 1)
        loss = (readout(rnn(x)[:, -1])[:, 0] - x[:, -lag, 0]).pow(2).mean()
        if not torch.isfinite(loss):
            break
        opt.zero_grad()
        loss.backward()
        if clip is None:
            total = torch.sqrt(sum(p.grad.double().pow(2).sum() for p in params))
        else:
            total = clip_grad_norm_(params, clip)
        opt.step()
        losses.append(float(loss.detach()))
        norms.append(float(total))
    losses += [math.nan] * (steps - len(losses))
    norms += [math.nan] * (steps - len(norms))
    return losses, norms
