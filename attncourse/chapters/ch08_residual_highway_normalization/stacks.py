"""Deep stacks of plain, residual and highway layers and their per-layer statistics at
initialisation (source 004 §5.3.1–5.3.2).

Three kinds of layer, applied ``depth`` times at a fixed width, between an input projection
(d_in → width, no activation) and a linear read-out (width → classes):

* ``"plain"``    h ← ReLU(N(h) W + b)          He initialisation, W ~ N(0, 2/width)
* ``"residual"`` h ← h + ReLU(N(h)) W + b      Eq. (5.3.1), a pre-activation branch
                                               (He et al. 2016b), W ~ branch_scale · He
* ``"highway"``  h ← H · T + h · (1 − T)       Eq. (5.3.4), H = ReLU(N(h) W_H + b_H),
                                               T = sigmoid(N(h) W_T + b_T), b_T = gate_bias

N is the normalization at the input of each branch: ``"none"``, ``"layer"`` (LayerNorm),
``"rms"`` (RMSNorm) or ``"batch"`` (BatchNorm in training mode), all from ``attncourse.norms``
without learnable γ, β. With N = none, member m of a stack is exactly
``DeepStack.member_modules(m)``, written with ``attncourse.blocks.Residual`` and ``Highway``.

A ``DeepStack`` holds ``members`` independent networks side by side (every weight has a leading
member dimension and every matrix product is a batched one), so one forward and backward pass
serves a whole grid of learning rates and seeds (``training.train_stacks``): the networks never
share a number, and each member gets exactly the gradient it would get alone.

``layer_statistics``: one forward and backward pass of a random batch through a fresh stack:
activation size, gradient norm ‖∂L/∂h_l‖ (Eq. 5.3.2), the cosine similarity between the
representations of different inputs, and the gradients of each layer's own weights (and highway
gate biases), layer by layer.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
from torch import nn

from ..._validation import require_choice, require_positive_int
from ...blocks import Highway, Residual
from ...losses import cross_entropy
from ...norms import BatchNorm1d, LayerNorm, RMSNorm
from ...threads import single_thread

LAYER_KINDS = ("plain", "residual", "highway")
NORM_TYPES = ("none", "layer", "rms", "batch")
# parameters per layer matched as in Srivastava et al. (2015): a highway layer has two matrices
# (2 · 24² = 1152 weights), a plain or residual layer one (34² = 1156)
DEFAULT_WIDTH = {"plain": 34, "residual": 34, "highway": 24}


# ---------------------------------------------------------------------------------- the task


def teacher_task(
    n: int = 2000,
    d_in: int = 20,
    classes: int = 10,
    hidden: int = 20,
    gain: float = 0.1,
    keep: float = 0.3,
    seed: int = 0,
):
    """A random tanh teacher: x ~ N(0, I_d_in), label = argmax_c (tanh(gain · x A) B)_c.

    A (d_in, hidden) and B (hidden, classes) are Gaussian with variance 1/fan_in. Of n / keep
    points drawn, the n with the largest margin (top logit minus runner-up) are kept, so a
    10-layer network fits the task within a hundred steps and depth, not difficulty, decides
    who trains. With the small default gain the teacher is close to linear.
    Returns x (n, d_in) float32 and y (n,) int64.
    """
    require_positive_int("n", n)
    if not 0 < keep <= 1:
        raise ValueError(f"keep must be in (0, 1], got {keep}")
    g = torch.Generator().manual_seed(seed)
    m = math.ceil(n / keep)
    x = torch.randn(m, d_in, generator=g)  # (m, d_in)
    a = torch.randn(d_in, hidden, generator=g) / math.sqrt(d_in)  # (d_in, hidden)
    b = torch.randn(hidden, classes, generator=g) / math.sqrt(hidden)  # (hidden, classes)
    logits = torch.tanh(gain * x @ a) @ b  # (m, classes)
    top2 = logits.topk(2, dim=-1).values  # (m, 2)
    chosen = (top2[:, 0] - top2[:, 1]).argsort(descending=True)[:n]  # the n largest margins
    return x[chosen], logits[chosen].argmax(-1)  # (n, d_in), (n,)


# --------------------------------------------------------------------------------- the stack


class DeepStack(nn.Module):
    """``members`` independent networks: input projection, ``depth`` ``kind`` layers, read-out.

    Weights carry a leading member dimension M and are used as ``x @ W``: ``weight`` (M, depth,
    width, width) and ``bias`` (M, depth, 1, width) are W and b of every layer (W_H and b_H for
    highway layers, which also have ``gate_weight`` W_T and ``gate_bias`` b_T, initially
    ``gate_bias``). Plain and residual W, and W_H, are He-initialised; W_T has variance 1/width.
    Member m is initialised from ``torch.Generator().manual_seed(seeds[m])``, so members with the
    same seed start equal. ``branch_scale`` multiplies the He initialisation of the residual
    branch (1/√depth keeps the activations bounded at any depth: E|h_L|² ≈ e · E|h_0|² instead of
    2^depth · E|h_0|²).
    """

    def __init__(
        self,
        kind: str,
        depth: int,
        width: int,
        d_in: int = 20,
        classes: int = 10,
        members: int = 1,
        gate_bias: float = -6.0,
        norm: str = "none",
        branch_scale: float = 1.0,
        seeds=None,
    ):
        super().__init__()
        require_choice("kind", kind, LAYER_KINDS)
        require_choice("norm", norm, NORM_TYPES)
        for name, value in (
            ("depth", depth),
            ("width", width),
            ("d_in", d_in),
            ("classes", classes),
            ("members", members),
        ):
            require_positive_int(name, value)
        seeds = tuple(range(members)) if seeds is None else tuple(seeds)
        if len(seeds) != members:
            raise ValueError(f"seeds must give one seed per member ({members}), got {len(seeds)}")
        self.kind, self.depth, self.width, self.members = kind, depth, width, members
        self.norm, self.initial_gate_bias, self.branch_scale = (
            norm,
            float(gate_bias),
            float(branch_scale),
        )

        w_in, weight, gate_weight, w_out = [], [], [], []
        for seed in seeds:
            g = torch.Generator().manual_seed(seed)
            w_in.append(torch.randn(d_in, width, generator=g) / math.sqrt(d_in))  # (d_in, width)
            # (depth, width, width) He
            w = torch.randn(depth, width, width, generator=g) * math.sqrt(2 / width)
            weight.append(w * branch_scale if kind == "residual" else w)
            if kind == "highway":
                # W_T (depth, width, width)
                gate_weight.append(torch.randn(depth, width, width, generator=g) / math.sqrt(width))
            # (width, classes)
            w_out.append(torch.randn(width, classes, generator=g) / math.sqrt(width))
        self.w_in = nn.Parameter(torch.stack(w_in))  # (M, d_in, width)
        self.b_in = nn.Parameter(torch.zeros(members, 1, width))  # (M, 1, width)
        # (M, depth, width, width): W, or W_H for highway
        self.weight = nn.Parameter(torch.stack(weight))
        self.bias = nn.Parameter(torch.zeros(members, depth, 1, width))  # (M, depth, 1, width)
        if kind == "highway":
            # W_T (M, depth, width, width)
            self.gate_weight = nn.Parameter(torch.stack(gate_weight))
            # b_T (M, depth, 1, width)
            self.gate_bias = nn.Parameter(torch.full((members, depth, 1, width), float(gate_bias)))
        self.w_out = nn.Parameter(torch.stack(w_out))  # (M, width, classes)
        self.b_out = nn.Parameter(torch.zeros(members, 1, classes))  # (M, 1, classes)
        if norm == "layer":
            self.norms = nn.ModuleList([LayerNorm(width, elementwise_affine=False)])
        elif norm == "rms":
            self.norms = nn.ModuleList([RMSNorm(width, elementwise_affine=False)])
        elif norm == "batch":  # statistics per member and channel over the batch: M·width channels
            self.norms = nn.ModuleList(
                BatchNorm1d(members * width, affine=False, track_running_stats=False)
                for _ in range(depth)
            )  # always the batch statistics

    def _normalize(self, layer: int, h: torch.Tensor) -> torch.Tensor:
        if self.norm == "none":
            return h
        if self.norm != "batch":
            return self.norms[0](h)  # (M, B, width) over each row's features
        M, B, w = h.shape
        flat = h.transpose(0, 1).reshape(B, M * w)  # (B, M·width) one channel per member and unit
        return self.norms[layer](flat).reshape(B, M, w).transpose(0, 1)  # (M, B, width)

    def forward(self, x: torch.Tensor, hidden: bool = False):
        """x (B, d_in) or (M, B, d_in) -> logits (M, B, classes).

        With ``hidden=True``: (logits, states, gates), states = [h_0, ..., h_depth] every layer's
        output (M, B, width), h_0 being the input projection, and gates = the transform gate T of
        every highway layer (M, B, width) (an empty list for the other kinds).
        """
        if x.dim() == 2:
            x = x.expand(self.members, -1, -1)  # (M, B, d_in) the same inputs for every member
        h = torch.baddbmm(self.b_in, x, self.w_in)  # (M, B, width)
        states, gates = [h], []
        layers = zip(self.weight.unbind(1), self.bias.unbind(1))
        if self.kind == "highway":
            layers = zip(
                self.weight.unbind(1),
                self.bias.unbind(1),
                self.gate_weight.unbind(1),
                self.gate_bias.unbind(1),
            )
        for layer, params in enumerate(layers):
            n = self._normalize(layer, h)  # (M, B, width)
            if self.kind == "plain":
                h = torch.relu(torch.baddbmm(params[1], n, params[0]))  # (M, B, width)
            elif self.kind == "residual":
                # (M, B, width)   Eq. (5.3.1)
                h = h + torch.baddbmm(params[1], torch.relu(n), params[0])
            else:
                transform = torch.relu(torch.baddbmm(params[1], n, params[0]))  # (M, B, width) H
                gate = torch.sigmoid(torch.baddbmm(params[3], n, params[2]))  # (M, B, width) T
                h = torch.lerp(h, transform, gate)  # (M, B, width) = H·T + h·(1 − T)   Eq. (5.3.4)
                gates.append(gate)
            states.append(h)
        logits = torch.baddbmm(self.b_out, h, self.w_out)  # (M, B, classes)
        return (logits, states, gates) if hidden else logits

    def member_modules(self, m: int = 0) -> nn.Sequential:
        """Member m written with the chapter's blocks (``Residual``, ``Highway``) and ``nn.Linear``:
        the same function, for reading and for checking. Only for ``norm="none"``."""
        if self.norm != "none":
            raise ValueError("member_modules is defined for norm='none' only")
        w = self.width

        def linear(weight, bias):  # weight (in, out) as used in x @ weight
            layer = nn.Linear(weight.shape[0], weight.shape[1])
            with torch.no_grad():
                layer.weight.copy_(weight.T)
                layer.bias.copy_(bias.reshape(-1))
            return layer

        layers = [linear(self.w_in[m], self.b_in[m])]
        for i in range(self.depth):
            weight, bias = self.weight[m, i], self.bias[m, i]  # (width, width), (1, width)
            if self.kind == "plain":
                layers.append(nn.Sequential(linear(weight, bias), nn.ReLU()))
            elif self.kind == "residual":
                layers.append(Residual(nn.Sequential(nn.ReLU(), linear(weight, bias))))
            else:
                block = Highway(w)
                block.transform[0] = linear(weight, bias)
                block.gate = linear(self.gate_weight[m, i], self.gate_bias[m, i])
                layers.append(block)
        layers.append(linear(self.w_out[m], self.b_out[m]))
        return nn.Sequential(*layers).to(self.weight.dtype)


# ------------------------------------------------------------------------ per-layer statistics


class LayerStats(NamedTuple):
    """What the chapter-08 widget shows of a stack at initialisation (index l: layer l's output)."""

    kind: str
    depth: int
    norm: str
    activation_rms: torch.Tensor  # (depth + 1,) sqrt(mean h_l²)
    gradient_norm: torch.Tensor  # (depth + 1,) ‖∂L/∂h_l‖ over the batch     Eq. (5.3.2)
    cosine: torch.Tensor  # (depth + 1,) mean cosine similarity of h_l between different inputs
    gate_mean: torch.Tensor  # (depth,) mean transform gate T per highway layer (NaN otherwise)
    loss: float
    # (depth,) ‖∂L/∂W_l‖_F of each layer's weight (W_H for highway layers: it carries diag(T))
    weight_gradient: torch.Tensor
    # (depth,) ‖∂L/∂b_T‖ of each highway layer's gate bias (it carries (H − h)·T(1 − T)), else NaN
    gate_bias_gradient: torch.Tensor


def _mean_pairwise_cosine(h: torch.Tensor) -> torch.Tensor:
    """Mean cosine similarity between different rows of h: (..., B, width) -> (...).

    1 means all inputs alike.
    """
    u = h / h.norm(dim=-1, keepdim=True).clamp_min(1e-30)  # (..., B, width) unit rows
    gram = u @ u.transpose(-2, -1)  # (..., B, B)
    B = h.shape[-2]
    return (gram.sum(dim=(-2, -1)) - gram.diagonal(dim1=-2, dim2=-1).sum(-1)) / (
        B * (B - 1)
    )  # (...)


def layer_statistics(
    kind: str,
    depth: int,
    norm: str = "none",
    gate_bias: float = -6.0,
    branch_scale: float = 1.0,
    width: int = 32,
    batch: int = 64,
    seed: int = 0,
) -> LayerStats:
    """Forward and backward pass of a random batch through a freshly initialised stack.

    The batch is ``batch`` inputs x ~ N(0, I_20) with random labels among 10 classes; the loss is
    their mean cross-entropy. Same arguments, same numbers (all randomness from ``seed``). Besides
    the gradient reaching each layer's output, the gradients of each layer's own weights (and, for
    highway layers, gate biases): what that layer learns from, not what passes through it.
    """
    require_positive_int("batch", batch)
    if batch < 2:
        raise ValueError("batch must be >= 2: the cosine similarity compares different inputs")
    with single_thread():
        stack = DeepStack(
            kind,
            depth,
            width,
            members=1,
            gate_bias=gate_bias,
            norm=norm,
            branch_scale=branch_scale,
            seeds=(seed,),
        )
        g = torch.Generator().manual_seed(10_000 + seed)
        x = torch.randn(batch, 20, generator=g)  # (B, 20)
        y = torch.randint(10, (1, batch), generator=g)  # (1, B)
        logits, states, gates = stack(x, hidden=True)  # (1, B, 10), depth + 1 × (1, B, width), ...
        loss = cross_entropy(logits, y)  # the mean over the batch
        params = [stack.weight] + ([stack.gate_bias] if kind == "highway" else [])
        grads = torch.autograd.grad(loss, states + params)
        # ∂L/∂h_l for every layer, ∂L/∂W (1, depth, width, width) [, ∂L/∂b_T (1, depth, 1, width)]
        grads, param_grads = grads[: len(states)], grads[len(states) :]
        with torch.no_grad():
            h = torch.cat(states)  # (depth + 1, B, width)
            rms = h.pow(2).mean(dim=(1, 2)).sqrt()  # (depth + 1,)
            gnorm = torch.cat(grads).flatten(1).norm(dim=1)  # (depth + 1,)
            cos = _mean_pairwise_cosine(h)  # (depth + 1,)
            gate = (
                torch.cat(gates).mean(dim=(1, 2)) if gates else torch.full((depth,), float("nan"))
            )  # (depth,)
            weight_gnorm = param_grads[0][0].flatten(1).norm(dim=1)  # (depth,)
            gate_bias_gnorm = (
                param_grads[1][0].flatten(1).norm(dim=1)
                if kind == "highway"
                else torch.full((depth,), float("nan"))
            )  # (depth,)
    return LayerStats(
        kind,
        depth,
        norm,
        rms,
        gnorm,
        cos,
        gate,
        float(loss.detach()),
        weight_gnorm,
        gate_bias_gnorm,
    )
