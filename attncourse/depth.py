"""Deep stacks of plain, residual and highway layers: per-layer statistics at initialisation and
the depth experiment of Srivastava et al. (2015) at CPU scale (source 004 §5.3.1–5.3.2).

Three kinds of layer, applied ``depth`` times at a fixed width, between an input projection
(d_in → width, no activation) and a linear read-out (width → classes):

* ``"plain"``    h ← ReLU(N(h) W + b)                       He initialisation, W ~ N(0, 2/width)
* ``"residual"`` h ← h + ReLU(N(h)) W + b                   Eq. (5.3.1), a pre-activation branch
                                                            (He et al. 2016b), W ~ branch_scale · He
* ``"highway"``  h ← H · T + h · (1 − T)                    Eq. (5.3.4), H = ReLU(N(h) W_H + b_H),
                                                            T = sigmoid(N(h) W_T + b_T), b_T = gate_bias

N is the normalization at the input of each branch: ``"none"``, ``"layer"`` (LayerNorm),
``"rms"`` (RMSNorm) or ``"batch"`` (BatchNorm in training mode), all from ``attncourse.norms``
without learnable γ, β. With N = none, member m of a stack is exactly
``DeepStack.member_modules(m)``, written with ``attncourse.blocks.Residual`` and ``Highway``.

A ``DeepStack`` holds ``members`` independent networks side by side (every weight has a leading
member dimension and every matrix product is a batched one), so one call trains a whole grid of
learning rates and seeds: the networks never share a number, and each member gets exactly the
gradient it would get alone. On the 2-core CPU this is several times faster than training them
one after another.

* ``layer_statistics`` — one forward and backward pass of a random batch through a fresh stack:
  activation size, gradient norm ‖∂L/∂h_l‖ (Eq. 5.3.2) and the cosine similarity between the
  representations of different inputs, layer by layer. The chapter-08 widget shows it.
* ``train_stacks`` / ``depth_experiment`` — SGD with momentum on a teacher task, best of a
  learning-rate grid: plain networks stop training as they get deep, highway and residual
  networks do not (Srivastava et al. 2015, Fig. 1).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import torch
from torch import nn

from .blocks import Highway, Residual
from .norms import BatchNorm1d, LayerNorm, RMSNorm
from .threads import single_thread
from .viz import BlittedFigure, figure_widget

KINDS = ("plain", "residual", "highway")
NORMS = ("none", "layer", "rms", "batch")
# parameters per layer matched as in Srivastava et al. (2015): a highway layer has two matrices
# (2 · 24² = 1152 weights), a plain or residual layer one (34² = 1156)
DEFAULT_WIDTH = {"plain": 34, "residual": 34, "highway": 24}


def _check_choice(name: str, value, choices) -> None:
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")


def _check_positive_int(name: str, value) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")


# ---------------------------------------------------------------------------------- the task


def teacher_task(n: int = 2000, d_in: int = 20, classes: int = 10, hidden: int = 20, gain: float = 0.1,
                 keep: float = 0.3, seed: int = 0):
    """A random tanh teacher: x ~ N(0, I_d_in), label = argmax_c (tanh(gain · x A) B)_c.

    A (d_in, hidden) and B (hidden, classes) are Gaussian with variance 1/fan_in. Of n / keep
    points drawn, the n with the largest margin (top logit minus runner-up) are kept, so a
    10-layer network fits the task within a hundred steps and depth, not difficulty, decides
    who trains. With the small default gain the teacher is close to linear.
    Returns x (n, d_in) float32 and y (n,) int64.
    """
    _check_positive_int("n", n)
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


def cross_entropy(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Mean −log softmax(logits)[label] over the last-but-one dim: (..., B, C), (..., B) -> (...)."""
    log_p = logits - logits.logsumexp(dim=-1, keepdim=True)  # (..., B, C)
    return -log_p.gather(-1, labels.unsqueeze(-1)).squeeze(-1).mean(-1)  # (...)


# --------------------------------------------------------------------------------- the stack


class DeepStack(nn.Module):
    """``members`` independent networks: input projection, ``depth`` layers of one ``kind``, read-out.

    Weights carry a leading member dimension M and are used as ``x @ W``: ``weight`` (M, depth,
    width, width) and ``bias`` (M, depth, 1, width) are W and b of every layer (W_H and b_H for
    highway layers, which also have ``gate_weight`` W_T and ``gate_bias`` b_T, initially
    ``gate_bias``). Plain and residual W, and W_H, are He-initialised; W_T has variance 1/width.
    Member m is initialised from
    ``torch.Generator().manual_seed(seeds[m])``, so members with the same seed start equal.
    ``branch_scale`` multiplies the He initialisation of the residual branch (1/√depth keeps
    the activations bounded at any depth: E|h_L|² ≈ e · E|h_0|² instead of 2^depth · E|h_0|²).
    """

    def __init__(self, kind: str, depth: int, width: int, d_in: int = 20, classes: int = 10, members: int = 1,
                 gate_bias: float = -6.0, norm: str = "none", branch_scale: float = 1.0, seeds=None):
        super().__init__()
        _check_choice("kind", kind, KINDS)
        _check_choice("norm", norm, NORMS)
        for name, value in (("depth", depth), ("width", width), ("d_in", d_in), ("classes", classes),
                            ("members", members)):
            _check_positive_int(name, value)
        seeds = tuple(range(members)) if seeds is None else tuple(seeds)
        if len(seeds) != members:
            raise ValueError(f"seeds must give one seed per member ({members}), got {len(seeds)}")
        self.kind, self.depth, self.width, self.members = kind, depth, width, members
        self.norm, self.initial_gate_bias, self.branch_scale = norm, float(gate_bias), float(branch_scale)

        w_in, weight, gate_weight, w_out = [], [], [], []
        for seed in seeds:
            g = torch.Generator().manual_seed(seed)
            w_in.append(torch.randn(d_in, width, generator=g) / math.sqrt(d_in))  # (d_in, width)
            w = torch.randn(depth, width, width, generator=g) * math.sqrt(2 / width)  # (depth, width, width) He
            weight.append(w * branch_scale if kind == "residual" else w)
            if kind == "highway":
                gate_weight.append(torch.randn(depth, width, width, generator=g) / math.sqrt(width))  # W_T
            w_out.append(torch.randn(width, classes, generator=g) / math.sqrt(width))  # (width, classes)
        self.w_in = nn.Parameter(torch.stack(w_in))  # (M, d_in, width)
        self.b_in = nn.Parameter(torch.zeros(members, 1, width))  # (M, 1, width)
        self.weight = nn.Parameter(torch.stack(weight))  # (M, depth, width, width): W, or W_H for highway
        self.bias = nn.Parameter(torch.zeros(members, depth, 1, width))  # (M, depth, 1, width)
        if kind == "highway":
            self.gate_weight = nn.Parameter(torch.stack(gate_weight))  # (M, depth, width, width) W_T
            self.gate_bias = nn.Parameter(torch.full((members, depth, 1, width), float(gate_bias)))  # b_T
        self.w_out = nn.Parameter(torch.stack(w_out))  # (M, width, classes)
        self.b_out = nn.Parameter(torch.zeros(members, 1, classes))  # (M, 1, classes)
        if norm == "layer":
            self.norms = nn.ModuleList([LayerNorm(width, elementwise_affine=False)])
        elif norm == "rms":
            self.norms = nn.ModuleList([RMSNorm(width, elementwise_affine=False)])
        elif norm == "batch":  # statistics per member and channel over the batch: M·width channels
            self.norms = nn.ModuleList(BatchNorm1d(members * width, affine=False, track_running_stats=False)
                                       for _ in range(depth))  # always the batch statistics

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
            layers = zip(self.weight.unbind(1), self.bias.unbind(1), self.gate_weight.unbind(1), self.gate_bias.unbind(1))
        for layer, params in enumerate(layers):
            n = self._normalize(layer, h)  # (M, B, width)
            if self.kind == "plain":
                h = torch.relu(torch.baddbmm(params[1], n, params[0]))  # (M, B, width)
            elif self.kind == "residual":
                h = h + torch.baddbmm(params[1], torch.relu(n), params[0])  # (M, B, width)   Eq. (5.3.1)
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
    """What the chapter-08 widget shows for one stack at initialisation (index l = layer l's output)."""

    kind: str
    depth: int
    norm: str
    activation_rms: torch.Tensor  # (depth + 1,) sqrt(mean h_l²)
    gradient_norm: torch.Tensor  # (depth + 1,) ‖∂L/∂h_l‖ over the batch     Eq. (5.3.2)
    cosine: torch.Tensor  # (depth + 1,) mean cosine similarity of h_l between different inputs
    gate_mean: torch.Tensor  # (depth,) mean transform gate T per highway layer (NaN otherwise)
    loss: float


def _mean_pairwise_cosine(h: torch.Tensor) -> torch.Tensor:
    """Mean cosine similarity between different rows of h (..., B, width) -> (...): 1 = all inputs alike."""
    u = h / h.norm(dim=-1, keepdim=True).clamp_min(1e-30)  # (..., B, width) unit rows
    gram = u @ u.transpose(-2, -1)  # (..., B, B)
    B = h.shape[-2]
    return (gram.sum(dim=(-2, -1)) - gram.diagonal(dim1=-2, dim2=-1).sum(-1)) / (B * (B - 1))  # (...)


def layer_statistics(kind: str, depth: int, norm: str = "none", gate_bias: float = -6.0,
                     branch_scale: float = 1.0, width: int = 32, batch: int = 64, seed: int = 0) -> LayerStats:
    """Forward and backward pass of a random batch through a freshly initialised stack.

    The batch is ``batch`` inputs x ~ N(0, I_20) with random labels among 10 classes; the loss is
    their mean cross-entropy. Same arguments, same numbers (all randomness from ``seed``).
    """
    _check_positive_int("batch", batch)
    if batch < 2:
        raise ValueError("batch must be >= 2: the cosine similarity compares different inputs")
    with single_thread():
        stack = DeepStack(kind, depth, width, members=1, gate_bias=gate_bias, norm=norm,
                          branch_scale=branch_scale, seeds=(seed,))
        g = torch.Generator().manual_seed(10_000 + seed)
        x = torch.randn(batch, 20, generator=g)  # (B, 20)
        y = torch.randint(10, (1, batch), generator=g)  # (1, B)
        logits, states, gates = stack(x, hidden=True)  # (1, B, 10), depth + 1 × (1, B, width), ...
        loss = cross_entropy(logits, y)[0]
        grads = torch.autograd.grad(loss, states)  # ∂L/∂h_l for every layer
        with torch.no_grad():
            h = torch.cat(states)  # (depth + 1, B, width)
            rms = h.pow(2).mean(dim=(1, 2)).sqrt()  # (depth + 1,)
            gnorm = torch.cat(grads).flatten(1).norm(dim=1)  # (depth + 1,)
            cos = _mean_pairwise_cosine(h)  # (depth + 1,)
            gate = torch.cat(gates).mean(dim=(1, 2)) if gates else torch.full((depth,), float("nan"))  # (depth,)
    return LayerStats(kind, depth, norm, rms, gnorm, cos, gate, float(loss.detach()))


# ---------------------------------------------------------------------------------- training


@dataclass
class TrainResult:
    """A grid of runs of one (kind, depth): ``final_loss[s, r]`` for seed s and learning rate r."""

    kind: str
    depth: int
    width: int
    lrs: tuple
    seeds: tuple
    final_loss: torch.Tensor  # (S, R) cross-entropy on the whole training set after training; inf = diverged
    curves: torch.Tensor  # (steps, S, R) minibatch loss at every step (NaN after divergence)

    @property
    def best(self) -> torch.Tensor:
        """(S,) the best final loss over the learning-rate grid, per seed."""
        return self.final_loss.min(dim=1).values

    @property
    def best_lr(self) -> tuple:
        """The learning rate that gave ``best``, per seed."""
        return tuple(self.lrs[i] for i in self.final_loss.argmin(dim=1).tolist())


def train_stacks(kind: str, depth: int, lrs, seeds=(0,), data=None, width: int | None = None, steps: int = 150,
                 batch: int = 200, momentum: float = 0.9, gate_bias: float = -6.0, branch_scale: float | None = None,
                 progress=None) -> TrainResult:
    """Train one network per (seed, learning rate) with SGD + momentum; all of them at once.

    data: (x (n, d_in), y (n,)), default ``teacher_task()``. width: default ``DEFAULT_WIDTH[kind]``.
    branch_scale (residual only): default 1/√depth. Each seed fixes the initialisation and the
    order of the minibatches (the same for all learning rates). The update is PyTorch's SGD:
    buf ← momentum · buf + grad, w ← w − lr · buf. A run whose loss becomes non-finite stops
    (its final loss is inf). ``progress``: anything with ``update(n)`` (a tqdm bar), called per step.
    """
    _check_choice("kind", kind, KINDS)
    _check_positive_int("steps", steps)
    lrs, seeds = tuple(float(lr) for lr in lrs), tuple(int(s) for s in seeds)
    if not lrs or not seeds or any(not lr > 0 for lr in lrs):
        raise ValueError(f"lrs must be positive and lrs and seeds non-empty, got {lrs}, {seeds}")
    x, y = teacher_task() if data is None else data
    n = x.shape[0]
    _check_positive_int("batch", batch)
    if batch > n:
        raise ValueError(f"batch ({batch}) is larger than the data set ({n})")
    width = DEFAULT_WIDTH[kind] if width is None else width
    branch_scale = 1 / math.sqrt(depth) if branch_scale is None else branch_scale
    S, R = len(seeds), len(lrs)
    member_seeds = [s for s in seeds for _ in lrs]  # member m = (seed m // R, lr m % R)
    with single_thread():
        stack = DeepStack(kind, depth, width, d_in=x.shape[1], classes=int(y.max()) + 1, members=S * R,
                          gate_bias=gate_bias, branch_scale=branch_scale, seeds=member_seeds)
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
            idx = perms[:, start:start + batch]  # (M, batch) each member's minibatch
            loss = cross_entropy(stack(x[idx]), y[idx])  # (M,)
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
            if progress is not None:
                progress.update(1)
        with torch.no_grad():
            final = cross_entropy(stack(x), y.expand(S * R, -1))  # (M,) the whole training set
        final = torch.where(torch.isfinite(final) & alive, final, float("inf"))
    return TrainResult(kind, depth, width, lrs, seeds, final.view(S, R), curves.view(steps, S, R))


def depth_experiment(kinds=KINDS, depths=(10, 100), lrs=(0.01, 0.03, 0.1, 0.3), seeds=(0,), steps: int = 150,
                     progress: bool = True, **kwargs) -> dict:
    """``train_stacks`` for every (kind, depth): {(kind, depth): TrainResult}, with one progress bar."""
    configs = [(k, d) for d in depths for k in kinds]
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(configs) * steps, desc="training", unit="step")
    results = {}
    try:
        for kind, depth in configs:
            if bar is not None:
                bar.set_postfix_str(f"{kind}-{depth}")
            results[kind, depth] = train_stacks(kind, depth, lrs, seeds=seeds, steps=steps, progress=bar, **kwargs)
    finally:
        if bar is not None:
            bar.close()
    return results


# ------------------------------------------------------------------------------------ widget


class DepthPlot(BlittedFigure):
    """Three panels, one line each, against the layer l = 0 … 100: the activation RMS of h_l, the
    gradient norm ‖∂L/∂h_l‖ (both on fixed log axes, values beyond them drawn at the edge) and the
    cosine similarity between the representations of different inputs.

    Drawn once; ``update(stats)`` only moves the lines. Without pyplot (the widget) the static
    parts are rendered once and cached, and ``render_png`` redraws only the lines (blitting), so
    an update costs a few milliseconds. ``pyplot=True`` makes the figure through
    ``matplotlib.pyplot``, for a static snapshot that ``plt.show()`` displays.
    """

    LOG_RANGE = (1e-4, 1e12)
    MAX_DEPTH = 100

    def __init__(self, pyplot: bool = False, figsize=(10.5, 3.0), dpi: int = 72):
        super().__init__(pyplot, figsize, dpi)
        axes = self.figure.subplots(1, 3)
        self.figure.subplots_adjust(left=0.07, right=0.98, bottom=0.17, top=0.8 if pyplot else 0.86, wspace=0.32)
        titles = ("activation RMS of h_l", "gradient norm |dL/dh_l|", "cosine(h_l(x), h_l(x')), x != x'")
        self.lines = []
        for ax, title, log in zip(axes, titles, (True, True, False)):
            (line,) = ax.plot([0, 1], [1, 1], "o-", ms=2.5, lw=1.5, color="tab:blue", zorder=3)
            ax.set(title=title, xlabel="layer l", xlim=(-1, self.MAX_DEPTH + 1))
            if log:
                ax.set(yscale="log", ylim=self.LOG_RANGE)
                ax.axhline(1.0, color="0.6", lw=0.8, zorder=1)
            else:
                ax.set_ylim(-0.05, 1.05)
            ax.grid(alpha=0.3)
            self.lines.append(line)
        self.axes = axes
        self._title = self.figure.text(0.5, 0.97, "", ha="center", va="top", fontsize=10) if pyplot else None
        self._animate(self.lines)

    def update(self, stats: LayerStats) -> None:
        """Move the three lines to ``stats`` (no new artists are created)."""
        layers = list(range(stats.depth + 1))
        lo, hi = self.LOG_RANGE
        values = (stats.activation_rms.clamp(lo, hi), stats.gradient_norm.clamp(lo, hi), stats.cosine)
        for line, v in zip(self.lines, values):
            line.set_data(layers, torch.nan_to_num(v.double(), nan=lo).tolist())
        if self._title is not None:
            self._title.set_text(depth_caption(stats))


def depth_caption(stats: LayerStats) -> str:
    """One line of numbers: first and last layer of each statistic, the mean gate, the loss."""
    r, g, c = stats.activation_rms, stats.gradient_norm, stats.cosine
    text = (f"{stats.kind}, depth {stats.depth}, norm {stats.norm}  |  RMS h_0 = {float(r[0]):.3g}, "
            f"h_L = {float(r[-1]):.3g}  |  |dL/dh_0| / |dL/dh_L| = {float(g[0] / g[-1]):.3g}  |  "
            f"cosine at h_L = {float(c[-1]):.3f}")
    if stats.kind == "highway":
        text += f"  |  mean gate T = {float(stats.gate_mean.mean()):.4f}"
    return text


def depth_widget_update(plot: DepthPlot, kind: str, depth: int, norm: str = "none", gate_bias: float = -6.0,
                        scale_branch: bool = False):
    """One widget update: statistics, lines moved, figure drawn -> (stats, png, caption).

    ``scale_branch`` (residual only): initialise the branch at 1/√depth of He's scale."""
    branch_scale = 1 / math.sqrt(depth) if scale_branch else 1.0
    stats = layer_statistics(kind, depth, norm=norm, gate_bias=gate_bias, branch_scale=branch_scale)
    plot.update(stats)
    return stats, plot.render_png(), depth_caption(stats)


def depth_widget(kind: str = "plain", depth: int = 50, norm: str = "none", gate_bias: float = -6.0):
    """The chapter-08 widget: depth, layer kind, gate bias, normalization and residual branch scale
    as controls; every change recomputes ``layer_statistics`` and redraws."""
    import ipywidgets as widgets

    plot = DepthPlot()
    style = {"description_width": "90px"}
    controls = {
        "kind": widgets.Dropdown(options=list(KINDS), value=kind, description="layer", style=style),
        "depth": widgets.IntSlider(value=depth, min=1, max=100, step=1, description="depth", style=style),
        "norm": widgets.Dropdown(options=[("none", "none"), ("LayerNorm", "layer"), ("RMSNorm", "rms"),
                                          ("BatchNorm", "batch")], value=norm, description="norm", style=style),
        "gate_bias": widgets.FloatSlider(value=gate_bias, min=-10, max=4, step=0.5, description="gate bias",
                                         style=style),
        "scale_branch": widgets.Checkbox(value=False, description="residual branch x 1/sqrt(depth)"),
    }

    return figure_widget(plot, depth_widget_update, controls,
                         rows=[["kind", "depth", "norm"], ["gate_bias", "scale_branch"]])


__all__ = [
    "DEFAULT_WIDTH", "KINDS", "NORMS", "DeepStack", "DepthPlot", "LayerStats", "TrainResult", "cross_entropy",
    "depth_caption", "depth_experiment", "depth_widget", "depth_widget_update", "layer_statistics",
    "teacher_task", "train_stacks",
]
