"""The depth experiment of Srivastava et al. (2015) at CPU scale: ``train_stacks`` trains a grid of
learning rates and seeds of one (kind, depth) at once, ``depth_experiment`` the whole grid; plain
networks stop training as they get deep, highway and residual networks do not (their Fig. 1).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from ..._validation import require_choice, require_positive_int
from ...losses import cross_entropy
from ...threads import side_by_side, single_thread
from .stacks import DEFAULT_WIDTH, LAYER_KINDS, DeepStack, teacher_task


@dataclass
class GridResult:
    """A grid of runs of one (kind, depth): ``final_loss[s, r]`` for seed s and learning rate r."""

    kind: str
    depth: int
    width: int
    lrs: tuple
    seeds: tuple
    # (S, R) cross-entropy on the whole training set after training; inf = diverged
    final_loss: torch.Tensor
    curves: torch.Tensor  # (steps, S, R) minibatch loss at every step (NaN after divergence)

    @property
    def best(self) -> torch.Tensor:
        """(S,) the best final loss over the learning-rate grid, per seed."""
        return self.final_loss.min(dim=1).values

    @property
    def best_lr(self) -> tuple:
        """The learning rate that gave ``best``, per seed."""
        return tuple(self.lrs[i] for i in self.final_loss.argmin(dim=1).tolist())


def train_stacks(
    kind: str,
    depth: int,
    lrs,
    seeds=(0,),
    data=None,
    width: int | None = None,
    steps: int = 150,
    batch: int = 200,
    momentum: float = 0.9,
    gate_bias: float = -6.0,
    branch_scale: float | None = None,
) -> GridResult:
    """Train one network per (seed, learning rate) with SGD + momentum; all of them at once.

    data: (x (n, d_in), y (n,)), default ``teacher_task()``. width: default ``DEFAULT_WIDTH[kind]``.
    branch_scale (residual only): default 1/√depth. Each seed fixes the initialisation and the
    order of the minibatches (the same for all learning rates). The update is PyTorch's SGD:
    buf ← momentum · buf + grad, w ← w − lr · buf. A run whose loss becomes non-finite stops (its
    final loss is inf).
    """
    require_choice("kind", kind, LAYER_KINDS)
    require_positive_int("steps", steps)
    lrs, seeds = tuple(float(lr) for lr in lrs), tuple(int(s) for s in seeds)
    if not lrs or not seeds or any(not lr > 0 for lr in lrs):
        raise ValueError(f"lrs must be positive and lrs and seeds non-empty, got {lrs}, {seeds}")
    x, y = teacher_task() if data is None else data
    n = x.shape[0]
    require_positive_int("batch", batch)
    if batch > n:
        raise ValueError(f"batch ({batch}) is larger than the data set ({n})")
    width = DEFAULT_WIDTH[kind] if width is None else width
    branch_scale = 1 / math.sqrt(depth) if branch_scale is None else branch_scale
    S, R = len(seeds), len(lrs)
    member_seeds = [s for s in seeds for _ in lrs]  # member m = (seed m // R, lr m % R)
    with single_thread():
        stack = DeepStack(
            kind,
            depth,
            width,
            d_in=x.shape[1],
            classes=int(y.max()) + 1,
            members=S * R,
            gate_bias=gate_bias,
            branch_scale=branch_scale,
            seeds=member_seeds,
        )
        params = list(stack.parameters())
        buffers = [torch.zeros_like(p) for p in params]
        lr = torch.tensor(lrs * S)  # (M,)
        alive = torch.ones(S * R, dtype=torch.bool)  # (M,)
        orders = [torch.Generator().manual_seed(20_000 + s) for s in seeds]
        per_epoch = n // batch
        curves = torch.full((steps, S * R), float("nan"))
        for step in range(steps):
            if step % per_epoch == 0:  # a new epoch: every seed reshuffles its data
                perms = torch.stack([torch.randperm(n, generator=g) for g in orders])  # (S, n)
                perms = perms.repeat_interleave(R, dim=0)  # (M, n)
            start = (step % per_epoch) * batch
            idx = perms[:, start : start + batch]  # (M, batch) each member's minibatch
            loss = cross_entropy(stack(x[idx]), y[idx], reduction="none").mean(-1)  # (M,)
            ok = torch.isfinite(loss).detach() & alive
            curves[step] = torch.where(ok, loss.detach(), float("nan"))
            grads = torch.autograd.grad(torch.where(ok, loss, 0.0).sum(), params)
            alive &= ok
            step_size = torch.where(alive, lr, 0.0)  # (M,) a diverged run stays where it is
            with torch.no_grad():
                for p, buf, grad in zip(params, buffers, grads):
                    grad = torch.nan_to_num(grad, nan=0.0, posinf=0.0, neginf=0.0)
                    buf.mul_(momentum).add_(grad)
                    p.sub_(step_size.view(-1, *[1] * (p.dim() - 1)) * buf)
        with torch.no_grad():
            # (M,) on the whole set
            final = cross_entropy(stack(x), y.expand(S * R, -1), reduction="none").mean(-1)
        final = torch.where(torch.isfinite(final) & alive, final, float("inf"))
    return GridResult(kind, depth, width, lrs, seeds, final.view(S, R), curves.view(steps, S, R))


def depth_experiment(
    kinds=LAYER_KINDS,
    depths=(10, 100),
    lrs=(0.01, 0.03, 0.1, 0.3),
    seeds=(0,),
    steps: int = 150,
    progress: bool = True,
    **kwargs,
) -> dict:
    """``train_stacks`` for every (kind, depth): {(kind, depth): GridResult}, in the order of
    ``depths`` then ``kinds``. The grids are independent: they train side by side, one per core,
    the deepest first (they take longest)."""
    configs = [(k, d) for d in depths for k in kinds]
    deepest_first = sorted(configs, key=lambda config: -config[1])
    calls = [
        dict(kind=k, depth=d, lrs=lrs, seeds=seeds, steps=steps, **kwargs) for k, d in deepest_first
    ]
    grids = side_by_side(train_stacks, calls, desc="depth grids", progress=progress)
    done = dict(zip(deepest_first, grids))
    return {config: done[config] for config in configs}
