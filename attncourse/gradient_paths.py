"""Gradient paths in recurrent networks and in attention: source 001 §5.4.1–5.4.3, source 000 §14.3.2, §14.3.6.

What chapter 04 measures, as plain functions that tests and benchmarks call:

* **Jacobians vs distance** (Eq. 5.4.2): ``input_jacobian`` gives the full Jacobian ∂y/∂x of a
  sequence model's output with respect to every input position in one backward pass;
  ``distance_profile`` turns it into g(k) = ‖∂y_T/∂x_{T-k}‖_F; ``rnn_gradient_norms`` and
  ``attention_gradient_norms`` build the chapter's RNN (W_hh = ρ · orthogonal) and attention layer;
  ``rnn_jacobian_profile`` and ``attention_jacobian_profile`` give the same profiles without autograd
  (the product of Eq. 5.4.2; attention's closed form), fast enough for a widget. ``spectral_radius``,
  ``largest_singular_value``, ``power_norms`` and ``shifted_identity`` (a non-normal example) compare
  the two meanings of the source's "λ_max".
* **Path lengths** (Eq. 5.4.5, Thm. 14.3.2, Vaswani et al. 2017 Table 1): ``shortest_path_lengths``
  (BFS on the graph A > ε), graphs of an RNN, a convolution and local attention, ``layers_to_connect``
  for stacks, ``receptive_field`` measured with autograd, ``count_flops`` and ``autograd_depth``.
* **Long-range recall**: ``recall_batch``, ``RecallRNN``, ``RecallAttention``, ``train_recall``,
  ``recall_accuracy`` (accuracy per distance).
* **Gradient clipping** (Pascanu et al. 2013): ``clip_gradients``, ``clip_grad_norm_`` and the
  ``exploding_training`` demonstration.
* **Information vs distance** (Thm. 14.3.12): ``gaussian_rnn_information``, exact for a linear RNN.
* **The widget**: ``gradient_curves`` (numbers), ``GradientPathPlot`` (figure, updated in place),
  ``gradient_widget_update`` (numbers + redraw) and ``gradient_widget`` (sliders).

Distances are counted backwards from the last position: distance k means input position T-1-k of
a length-T sequence (0-based), so k = 0 is the newest input.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Callable, NamedTuple, Sequence

import numpy as np
import torch
from torch import nn
from torch.overrides import TorchFunctionMode

from .attention import MultiHeadAttention
from .rnn import VanillaRNN
from .threads import single_thread
from .viz import BlittedFigure, figure_widget

# ------------------------------------------------------------------------------ matrices


def scaled_orthogonal(d: int, rho: float, generator: torch.Generator | None = None,
                      dtype=torch.float64) -> torch.Tensor:
    """rho * Q with Q a random (Haar) orthogonal d x d matrix: every eigenvalue and every singular
    value has modulus rho, so spectral radius = largest singular value = rho. Returns (d, d)."""
    a = torch.randn(d, d, generator=generator, dtype=torch.float64)  # (d, d)
    q, r = torch.linalg.qr(a)  # (d, d), (d, d)
    q = q * torch.sign(torch.diagonal(r))  # sign fix: Haar-distributed
    return (rho * q).to(dtype)  # (d, d)


def spectral_radius(W: torch.Tensor) -> float:
    """max |eigenvalue| of a square matrix: the long-run growth rate, ||W^k||^(1/k) -> rho(W) (Gelfand)."""
    return float(torch.linalg.eigvals(W.detach().double()).abs().max())


def largest_singular_value(W: torch.Tensor) -> float:
    """sigma_max(W) = ||W||_2: the most W can stretch a vector in one step; ||W^k||_2 <= sigma_max^k."""
    return float(torch.linalg.matrix_norm(W.detach().double(), ord=2))


def shifted_identity(d: int, rho: float, coupling: float, dtype=torch.float64) -> torch.Tensor:
    """rho * I + coupling * N, N the shift (ones just above the diagonal): a non-normal matrix whose
    only eigenvalue is rho, but whose largest singular value is about rho + coupling. (d, d)."""
    return rho * torch.eye(d, dtype=dtype) + coupling * torch.diag(torch.ones(d - 1, dtype=dtype), 1)


def power_norms(W: torch.Tensor, powers: Sequence[int]) -> list[float]:
    """||W^k||_2 for each k in ``powers`` (float64)."""
    W = W.detach().double()
    return [float(torch.linalg.matrix_norm(torch.linalg.matrix_power(W, k), ord=2)) for k in powers]


# ------------------------------------------------------------------------------ Jacobians


def input_jacobian(fn: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor) -> torch.Tensor:
    """Full Jacobian of fn at one input sequence, in a single backward pass.

    fn maps a batch (B, T, d_in) to outputs (B, d_out) row by row (no mixing across the batch).
    x: (T, d_in). Returns J (d_out, T, d_in) with J[a, t, i] = d fn(x)[a] / d x[t, i], the same
    as ``torch.autograd.functional.jacobian(lambda x: fn(x[None])[0], x)``: the input is repeated
    d_out times and copy a back-propagates the a-th output coordinate only.
    """
    x = x.detach()
    with torch.no_grad():
        d_out = fn(x[None]).shape[-1]
    xb = x.expand(d_out, *x.shape).clone().requires_grad_(True)  # (d_out, T, d_in)
    y = fn(xb)  # (d_out, d_out): row a is fn of copy a
    (grad,) = torch.autograd.grad(y.diagonal().sum(), xb)  # (d_out, T, d_in): row a = d y_a / d x
    return grad


def distance_profile(jacobian: torch.Tensor) -> torch.Tensor:
    """g(k) = ||d y / d x_{T-1-k}||_F for k = 0 .. T-1 from a Jacobian (d_out, T, d_in): (T,)."""
    return jacobian.pow(2).sum(dim=(0, 2)).sqrt().flip(0)  # (T,) index = distance k


def chapter_rnn(rho: float, nonlinearity: str = "tanh", d: int = 64, seed: int = 0,
                dtype=torch.float64) -> VanillaRNN:
    """The chapter's RNN: VanillaRNN(d, d) without bias, W_hh = rho * orthogonal, W_xh = I."""
    g = torch.Generator().manual_seed(seed)
    rnn = VanillaRNN(d, d, nonlinearity=nonlinearity, bias=False).to(dtype)
    with torch.no_grad():
        rnn.weight_hh.copy_(scaled_orthogonal(d, rho, g, dtype))
        rnn.weight_ih.copy_(torch.eye(d, dtype=dtype))
    return rnn


def chapter_inputs(T: int, d: int, seed: int = 0, scale: float = 1.0, dtype=torch.float64) -> torch.Tensor:
    """scale * N(0, I) inputs (T, d) from their own generator (seed + 1000: independent of the weights)."""
    g = torch.Generator().manual_seed(seed + 1000)
    return torch.randn(T, d, generator=g, dtype=torch.float64).mul(scale).to(dtype)  # (T, d)


@single_thread()
def rnn_gradient_norms(rho: float, nonlinearity: str = "tanh", T: int = 100, d: int = 64, seed: int = 0,
                       input_scale: float = 0.3) -> torch.Tensor:
    """g(k) = ||d h_T / d x_{T-k}||_F, k = 0..T-1, for ``chapter_rnn`` on ``chapter_inputs`` (float64): (T,).

    Linear RNN: d h_T / d x_{T-k} = W_hh^k W_xh, so g(k) = rho^k sqrt(d) exactly (Eq. 5.4.2).
    """
    rnn = chapter_rnn(rho, nonlinearity, d, seed)
    x = chapter_inputs(T, d, seed, input_scale)
    return distance_profile(input_jacobian(lambda xb: rnn(xb)[:, -1], x))  # (T,)


def chapter_attention(d: int = 64, seed: int = 0, num_heads: int = 1, dtype=torch.float64) -> MultiHeadAttention:
    """One self-attention layer (``MultiHeadAttention``, default initialisation) seeded without
    touching the global random stream."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return MultiHeadAttention(d, num_heads).to(dtype)


@single_thread()
def attention_gradient_norms(T: int = 100, d: int = 64, seed: int = 0, causal: bool = True) -> torch.Tensor:
    """g(k) = ||d o_T / d x_{T-k}||_F for the last query of ``chapter_attention`` on N(0, I) inputs: (T,)."""
    mha = chapter_attention(d, seed)
    x = chapter_inputs(T, d, seed, 1.0)
    if causal:  # the last query alone: the same output as causal self-attention at position T-1, cheaper
        return distance_profile(input_jacobian(lambda xb: mha(xb[:, -1:], xb, xb)[0][:, 0], x))  # (T,)
    return distance_profile(input_jacobian(lambda xb: mha(xb)[0][:, -1], x))  # (T,)


def log_slope(g: torch.Tensor, start: int = 1) -> float:
    """Least-squares slope of ln g(k) against k over k >= start (per step; ln rho for a linear RNN)."""
    k = torch.arange(start, g.shape[-1], dtype=torch.float64)  # (K,)
    y = g[..., start:].double().log()  # (..., K)
    if y.dim() > 1:
        y = y.mean(dim=tuple(range(y.dim() - 1)))  # average ln g over seeds
    kc = k - k.mean()
    return float((kc * (y - y.mean())).sum() / (kc * kc).sum())


# ------------------------------------------------------------------------------ path lengths


def shortest_path_lengths(adjacency: torch.Tensor) -> torch.Tensor:
    """All-pairs shortest path lengths by breadth-first search (Eq. 5.4.5).

    adjacency: (n, n) bool, adjacency[i, j] = True when position i reads position j in one step
    (for attention: A_ij > eps). Returns dist (n, n) float64: dist[i, i] = 0, dist[i, j] = the
    fewest steps for information at j to reach i, inf when it never does.
    """
    if adjacency.dim() != 2 or adjacency.shape[0] != adjacency.shape[1]:
        raise ValueError(f"adjacency must be a square (n, n) matrix, got shape {tuple(adjacency.shape)}")
    edges = adjacency.bool().double()  # (n, n)
    n = edges.shape[0]
    dist = torch.full((n, n), math.inf, dtype=torch.float64)
    reached = torch.eye(n, dtype=torch.bool)  # (n, n) reached[i, j]: j reaches i within `step` steps
    dist[reached] = 0.0
    frontier = reached
    for step in range(1, n):
        frontier = ((frontier.double() @ edges) > 0) & ~reached  # (n, n) first reached at this step
        if not frontier.any():
            break
        dist[frontier] = float(step)
        reached = reached | frontier
    return dist  # (n, n)


def path_lengths_from(adjacency: torch.Tensor, source: int) -> torch.Tensor:
    """Single-source breadth-first search: dist[i] = the fewest steps for information at position
    ``source`` to reach position i (inf if never), on adjacency[i, j] = "i reads j". Returns (n,) float64.
    Cheaper than ``shortest_path_lengths`` (a vector per step instead of a matrix)."""
    edges = adjacency.bool().double()  # (n, n)
    n = edges.shape[0]
    dist = torch.full((n,), math.inf, dtype=torch.float64)
    reached = torch.zeros(n, dtype=torch.bool)
    reached[source] = True
    dist[source] = 0.0
    frontier = reached
    for step in range(1, n):
        frontier = ((edges @ frontier.double()) > 0) & ~reached  # (n,) reached first at this step
        if not frontier.any():
            break
        dist[frontier] = float(step)
        reached = reached | frontier
    return dist


def attention_graph(weights: torch.Tensor, eps: float) -> torch.Tensor:
    """The dependency graph of Eq. (5.4.5): edge i -> j when A_ij > eps. weights (..., T, S) -> bool."""
    return weights > eps


def max_path_length(adjacency: torch.Tensor) -> float:
    """The longest shortest path over all pairs (inf if some pair is not connected)."""
    return float(shortest_path_lengths(adjacency).max())


def rnn_graph(n: int) -> torch.Tensor:
    """One RNN step: position i reads itself (its input) and i - 1 (the previous state): (n, n)."""
    i = torch.arange(n)
    return (i[:, None] - i[None, :] >= 0) & (i[:, None] - i[None, :] <= 1)


def conv_graph(n: int, kernel_size: int = 3, dilation: int = 1) -> torch.Tensor:
    """One 'same'-padded convolution: i reads i + dilation * m for |m| <= (kernel_size - 1) / 2: (n, n)."""
    if kernel_size < 1 or kernel_size % 2 == 0:
        raise ValueError(f"kernel_size must be odd and >= 1, got {kernel_size}")
    offset = torch.arange(n)[None, :] - torch.arange(n)[:, None]  # (n, n) j - i
    half = (kernel_size - 1) // 2
    return (offset % dilation == 0) & (offset.abs() <= dilation * half)


def local_attention_graph(n: int, window: int, causal: bool = False) -> torch.Tensor:
    """Restricted (local) attention: i reads j for |i - j| <= window (and j <= i when causal)."""
    from .masks import local_mask

    return local_mask(n, window, causal=causal)


def layers_to_connect(graphs: Sequence[torch.Tensor], source: int | None = None) -> torch.Tensor:
    """For a stack of layers with one-step graphs ``graphs`` (applied in order, each (n, n) bool, i reads j):
    layers[i, j] = the fewest layers after which output i depends on input j, inf if the whole stack
    never connects them; (n, n) float64. With ``source`` only that input's column: (n,).
    For a stack of identical graphs with self-loops this is ``shortest_path_lengths``."""
    n = graphs[0].shape[0]
    if source is None:
        reach = torch.eye(n, dtype=torch.float64)  # (n, n) reach[i, j]: output i depends on input j
    else:
        reach = torch.zeros(n, 1, dtype=torch.float64)
        reach[source] = 1.0  # (n, 1)
    layers = torch.full(reach.shape, math.inf, dtype=torch.float64)
    for count, g in enumerate(graphs, start=1):
        reach = ((g.double() @ reach) > 0).double()
        new = (reach > 0) & torch.isinf(layers)
        layers[new] = float(count)
    return layers if source is None else layers[:, 0]


def conv_stack(num_layers: int, channels: int = 4, kernel_size: int = 3, dilated: bool = False,
               seed: int = 0) -> nn.Sequential:
    """num_layers of Conv1d(channels, channels, kernel_size, 'same' padding) + tanh, float64;
    with ``dilated`` layer l has dilation 2^l (WaveNet-style)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        layers = []
        for layer in range(num_layers):
            dilation = 2**layer if dilated else 1
            layers += [nn.Conv1d(channels, channels, kernel_size, padding=dilation * (kernel_size - 1) // 2,
                                 dilation=dilation, dtype=torch.float64), nn.Tanh()]
    return nn.Sequential(*layers)


@single_thread()
def receptive_field(model: nn.Module, length: int, position: int | None = None, channels: int | None = None) -> int:
    """Measured receptive field: how many input positions the output at ``position`` (default: the
    middle) depends on, i.e. where d y[position] / d x is non-zero. model maps (1, C, length) -> (1, C, length)."""
    if channels is None:
        channels = next(p for p in model.parameters() if p.dim() == 3).shape[1]
    position = length // 2 if position is None else position
    g = torch.Generator().manual_seed(0)
    x = torch.randn(1, channels, length, generator=g, dtype=torch.float64).requires_grad_(True)
    y = model(x)  # (1, C, length)
    (grad,) = torch.autograd.grad(y[0, :, position].sum(), x)  # (1, C, length)
    return int((grad.abs().sum(dim=(0, 1)) > 0).sum())


def _product_flops(name: str, args, out) -> int:
    """2 x the multiply-adds of one matrix product or convolution, from its operands' shapes."""
    if name in ("matmul", "mm", "bmm", "mv", "dot", "__matmul__", "__rmatmul__"):
        a, b = (args[1], args[0]) if name == "__rmatmul__" else (args[0], args[1])
        k = a.shape[-1]
        return 2 * k * out.numel()  # every output entry is a sum of k products
    if name in ("addmm", "baddbmm", "addmv"):
        return 2 * args[1].shape[-1] * out.numel()
    if name == "linear":
        return 2 * args[0].shape[-1] * out.numel()
    if name in ("conv1d", "conv2d", "conv3d"):
        weight = args[1]
        return 2 * weight[0].numel() * out.numel()  # C_in / groups * kernel multiply-adds per output
    return 0


class _FlopCounter(TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.flops = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if isinstance(out, torch.Tensor):
            self.flops += _product_flops(getattr(func, "__name__", ""), args, out)
        return out


def count_flops(fn: Callable, *args, **kwargs) -> int:
    """Floating-point operations of the matrix products and convolutions that fn(*args) executes,
    counted call by call from their operands' shapes (2 per multiply-add, the convention of
    ``torch.utils.flop_counter``)."""
    with _FlopCounter() as counter:
        fn(*args, **kwargs)
    return counter.flops


def autograd_depth(output: torch.Tensor) -> int:
    """Length of the longest chain of operations in ``output``'s autograd graph: the operations that
    must run one after another however many processors there are ("sequential operations")."""
    root = output.grad_fn
    if root is None:
        return 0
    depth: dict = {}
    stack = [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if node in depth:
            continue
        children = [c for c, _ in node.next_functions if c is not None]
        if expanded:
            depth[node] = 1 + max((depth[c] for c in children), default=0)
        else:
            stack.append((node, True))
            stack.extend((c, False) for c in children if c not in depth)
    return depth[root]


def _rnn_recurrence(x, W_hh, W_xh):
    h = x.new_zeros(x.shape[-1])  # (d,)
    xw = x @ W_xh.T  # (n, d) the input projections, all at once
    for t in range(x.shape[0]):
        h = torch.tanh(W_hh @ h + xw[t])  # (d,) each step waits for the previous one
    return h


@single_thread()
def layer_costs(n: int, d: int, kernel_size: int = 3, seed: int = 0) -> dict[str, dict[str, float]]:
    """Measured per-layer cost of self-attention, a recurrent layer and a convolution on n positions
    of width d (Vaswani et al. 2017, Table 1): FLOPs (``count_flops``), sequential operations
    (``autograd_depth``) and the path length from the first to the last position (breadth-first
    search on the layer's graph; for a convolution: the number of stacked layers needed).
    Attention is the core softmax(q k^T / sqrt d) v (the n x n part; projections are excluded, as in
    the table); the RNN is h_t = tanh(W_hh h_{t-1} + W_xh x_t); the convolution is Conv1d(d, d, k)."""
    from .attention import scaled_dot_product_attention

    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g, dtype=torch.float64, requires_grad=True)  # (n, d)
    W = torch.randn(2, d, d, generator=g, dtype=torch.float64) / math.sqrt(d)  # W_hh, W_xh
    conv = nn.Conv1d(d, d, kernel_size, padding=kernel_size // 2, bias=False, dtype=torch.float64)
    out = {}
    out["self-attention"] = {
        "flops": count_flops(scaled_dot_product_attention, x, x, x),
        "sequential": autograd_depth(scaled_dot_product_attention(x, x, x)[0]),
        "path": float(path_lengths_from(scaled_dot_product_attention(x, x, x)[1] > 0, 0)[-1]),
    }
    out["recurrent"] = {
        "flops": count_flops(_rnn_recurrence, x, W[0], W[1]),
        "sequential": autograd_depth(_rnn_recurrence(x, W[0], W[1])),
        "path": float(path_lengths_from(rnn_graph(n), 0)[-1]),  # first position -> last
    }
    out["convolutional"] = {
        "flops": count_flops(conv, x.T[None]),
        "sequential": autograd_depth(conv(x.T[None])),
        "path": float(path_lengths_from(conv_graph(n, kernel_size), 0)[-1]),  # = layers needed
    }
    return out


# ------------------------------------------------------------------------------ recall task


def recall_batch(batch_size: int, generator: torch.Generator | None = None, num_tokens: int = 4,
                 max_distance: int = 10):
    """The long-range recall task: ``max_distance`` random tokens in 0..num_tokens-1, then a query
    token num_tokens + k - 1 asking for the token k positions back (k uniform in 1..max_distance).

    Returns (x (B, max_distance + 1) long, target (B,) long, k (B,) long): target = x[:, max_distance - k].
    """
    seq = torch.randint(num_tokens, (batch_size, max_distance), generator=generator)  # (B, K)
    k = torch.randint(1, max_distance + 1, (batch_size,), generator=generator)  # (B,)
    x = torch.cat([seq, (num_tokens + k - 1)[:, None]], dim=1)  # (B, K + 1)
    return x, seq[torch.arange(batch_size), max_distance - k], k


class RecallRNN(nn.Module):
    """Embedding -> VanillaRNN (tanh) -> linear read-out of the last state (the answer)."""

    def __init__(self, num_tokens: int = 4, max_distance: int = 10, d: int = 32, hidden: int = 64):
        super().__init__()
        self.num_tokens, self.max_distance = num_tokens, max_distance
        self.embed = nn.Embedding(num_tokens + max_distance, d)
        self.rnn = VanillaRNN(d, hidden, nonlinearity="tanh")
        self.out = nn.Linear(hidden, num_tokens)

    def forward(self, x):
        return self.out(self.rnn(self.embed(x))[:, -1])  # (B, num_tokens)


class RecallAttention(nn.Module):
    """Embedding + learned absolute positions -> one self-attention layer -> linear read-out at the
    last (query) position. ``forward`` returns logits; ``attention(x)`` the weights (B, H, T, T)."""

    def __init__(self, num_tokens: int = 4, max_distance: int = 10, d: int = 32, num_heads: int = 1):
        super().__init__()
        self.num_tokens, self.max_distance = num_tokens, max_distance
        self.embed = nn.Embedding(num_tokens + max_distance, d)
        self.position = nn.Parameter(0.5 * torch.randn(max_distance + 1, d))
        self.attn = MultiHeadAttention(d, num_heads)
        self.out = nn.Linear(d, num_tokens)

    def attention(self, x):
        return self.attn(self.embed(x) + self.position, causal=True)  # (B, T, d), (B, H, T, T)

    def forward(self, x):
        return self.out(self.attention(x)[0][:, -1])  # (B, num_tokens)


@single_thread()
def train_recall(model: nn.Module, steps: int = 250, lr: float = 1e-2, batch_size: int = 64, seed: int = 0,
                 progress: bool = True, desc: str | None = None) -> list[float]:
    """Adam on cross-entropy for ``steps`` batches of ``recall_batch``; returns the losses."""
    from tqdm.auto import tqdm

    g = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    losses = []
    bar = tqdm(range(steps), desc=desc or type(model).__name__, disable=not progress, mininterval=0.5)
    for _ in bar:
        x, y, _ = recall_batch(batch_size, g, model.num_tokens, model.max_distance)
        logits = model(x)  # (B, V)
        loss = -_log_softmax(logits)[torch.arange(len(y)), y].mean()  # cross-entropy
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
        bar.set_postfix(loss=f"{losses[-1]:.3f}", refresh=False)
    return losses


def _log_softmax(logits):
    """log softmax over the last dim from plain operations (the course's rule: no built-in softmax)."""
    shifted = logits - logits.detach().amax(dim=-1, keepdim=True)  # (B, V)
    return shifted - shifted.exp().sum(dim=-1, keepdim=True).log()


@torch.no_grad()
@single_thread()
def recall_accuracy(model: nn.Module, samples: int = 4000, seed: int = 999) -> torch.Tensor:
    """Accuracy per distance k = 1..max_distance on fresh sequences: (max_distance,)."""
    x, y, k = recall_batch(samples, torch.Generator().manual_seed(seed), model.num_tokens, model.max_distance)
    correct = (model(x).argmax(dim=-1) == y).double()  # (samples,)
    return torch.stack([correct[k == j].mean() for j in range(1, model.max_distance + 1)])


# ------------------------------------------------------------------------------ clipping


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
def exploding_training(clip: float | None = None, steps: int = 100, lr: float = 0.1, rho: float = 1.2,
                       T: int = 30, hidden: int = 16, lag: int = 3, seed: int = 0, progress: bool = False):
    """SGD on a linear RNN started in the exploding regime (W_hh = rho * orthogonal, rho > 1): predict
    the input ``lag`` steps back from the last state. Returns (losses, gradient norms before clipping)
    per step; with ``clip`` the global gradient norm is capped at ``clip`` (``clip_grad_norm_``).
    A non-finite loss ends the run early (the rest is reported as nan)."""
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


# ------------------------------------------------------------------------------ information


def gaussian_rnn_information(W_hh: torch.Tensor, W_xh: torch.Tensor, T: int, distances: Sequence[int]) -> list[float]:
    """I(h_T; x_{T-k}) in nats, exactly, for a linear RNN h_t = W_hh h_{t-1} + W_xh x_t, h_0 = 0, with
    i.i.d. N(0, I) inputs: h_T = sum_m A_m x_{T-m}, A_m = W_hh^m W_xh, so with S = sum_m A_m A_m^T,
    I = (log det S - log det(S - A_k A_k^T)) / 2."""
    W_hh, W_xh = W_hh.detach().double(), W_xh.detach().double()
    A = [W_xh]
    for _ in range(T - 1):
        A.append(W_hh @ A[-1])  # (d, d_in) A_m = W_hh^m W_xh
    S = sum(a @ a.T for a in A)  # (d, d)
    logdet = torch.linalg.slogdet(S)[1]
    return [float(0.5 * (logdet - torch.linalg.slogdet(S - A[k] @ A[k].T)[1])) for k in distances]


# ------------------------------------------------------------------------------ widget


class GradientCurves(NamedTuple):
    """What the chapter-04 widget shows for one setting."""

    distances: torch.Tensor  # (L,) k = 0 .. L-1
    rnn: torch.Tensor  # (L,) ||d h_T / d x_{T-k}||_F of the RNN
    attention: torch.Tensor  # (L,) ||d o_T / d x_{T-k}||_F of one self-attention layer
    linear_law: torch.Tensor  # (L,) rho^k sqrt(d): the linear RNN's exact curve
    rho: float
    nonlinearity: str
    slope: float  # least-squares slope of ln g_RNN per step
    ratio_rnn: float  # g(1) / g(L-1)
    ratio_attention: float


def rnn_jacobian_profile(W_hh: torch.Tensor, W_xh: torch.Tensor, x: torch.Tensor,
                         nonlinearity: str = "tanh") -> torch.Tensor:
    """g(k) = ||d h_T / d x_{T-k}||_F, k = 0..T-1, straight from the product of Eq. (5.4.2), no autograd.

    h_t = f(a_t), a_t = W_hh h_{t-1} + W_xh x_t, h_0 = 0. With D_t = diag f'(a_t):
    d h_T / d x_{T-k} = D_T W_hh D_{T-1} W_hh ... D_{T-k} W_xh, accumulated from the left end:
    M_0 = D_T, M_k = M_{k-1} W_hh D_{T-k}, g(k) = ||M_k W_xh||_F. W_hh (d, d), W_xh (d, d_in),
    x (T, d_in). Returns (T,) float64. Equal to ``distance_profile(input_jacobian(...))`` of a
    bias-free ``VanillaRNN`` with these weights (the tests check it). Computed in NumPy float64: a
    few hundred tiny matrix products cost far less there than as separate PyTorch calls.
    """
    if nonlinearity not in ("tanh", "relu", "linear"):
        raise ValueError(f"nonlinearity must be 'tanh', 'relu' or 'linear', got {nonlinearity!r}")
    W = W_hh.detach().double().cpu().numpy()  # (d, d)
    U = W_xh.detach().double().cpu().numpy()  # (d, d_in)
    xw = x.detach().double().cpu().numpy() @ U.T  # (T, d)
    T, d = xw.shape
    pre = np.empty((T, d))  # a_t
    h = np.zeros(d)
    for t in range(T):
        pre[t] = W @ h + xw[t]  # (d,)
        h = np.tanh(pre[t]) if nonlinearity == "tanh" else np.maximum(pre[t], 0.0) if nonlinearity == "relu" else pre[t]
    if nonlinearity == "tanh":
        slopes = 1.0 - np.tanh(pre) ** 2  # (T, d) tanh'(a_t)
    elif nonlinearity == "relu":
        slopes = (pre > 0).astype(np.float64)
    else:
        slopes = np.ones((T, d))
    identity_input = U.shape[0] == U.shape[1] and np.array_equal(U, np.eye(d))
    M = np.diag(slopes[-1])  # (d, d) M_0 = D_T
    g = np.empty(T)
    for k in range(T):
        if k:
            M = (M @ W) * slopes[T - 1 - k]  # (d, d) right-multiplying by D = scaling its columns
        g[k] = np.sqrt(((M if identity_input else M @ U) ** 2).sum())
    return torch.from_numpy(g)  # (T,)


def attention_jacobian_profile(mha: MultiHeadAttention, x: torch.Tensor) -> torch.Tensor:
    """g(k) = ||d o_T / d x_{T-k}||_F for the last query of a one-head ``MultiHeadAttention`` (causal or
    not: the last query sees every position), in closed form, no autograd. x (T, d). Returns (T,).

    With q = W_Q x_T + b_Q, k_j = W_K x_j + b_K, v_j = W_V x_j + b_V, a = softmax(K q / sqrt(d)),
    o = W_O sum_j a_j v_j + b_O and u = W_K^T q / sqrt(d):
    d o / d x_j = a_j W_O (W_V + (v_j - v_bar) u^T)  [+ W_O sum_i a_i (v_i - v_bar) k_i^T W_Q / sqrt(d) for j = T],
    v_bar = sum_i a_i v_i. Equal to ``distance_profile(input_jacobian(...))`` (the tests check it).
    """
    if mha.num_heads != 1:
        raise ValueError(f"attention_jacobian_profile needs a one-head attention, got {mha.num_heads} heads")
    p = {name: t.detach().double().cpu().numpy() for name, t in mha.state_dict().items()}
    X = x.detach().double().cpu().numpy()  # (T, d)
    d = X.shape[1]

    def proj(name, inp):
        out = inp @ p[f"{name}.weight"].T
        return out + p[f"{name}.bias"] if f"{name}.bias" in p else out

    Q, K, V = proj("q_proj", X[-1:])[0], proj("k_proj", X), proj("v_proj", X)  # (d,), (T, d), (T, d)
    s = K @ Q / math.sqrt(d)  # (T,)
    a = np.exp(s - s.max())
    a = a / a.sum()  # (T,)
    v_bar = a @ V  # (d,)
    W_O, W_V = p["out_proj.weight"], p["v_proj.weight"]
    A = W_O @ W_V  # (d, d)
    B = (V - v_bar) @ W_O.T  # (T, d) rows b_j = W_O (v_j - v_bar)
    u = p["k_proj.weight"].T @ Q / math.sqrt(d)  # (d,)
    # ||A + b u^T||_F^2 = ||A||^2 + 2 b^T A u + ||b||^2 ||u||^2, for every j at once
    sq = (A**2).sum() + 2 * B @ (A @ u) + (B**2).sum(axis=1) * (u @ u)  # (T,)
    g = a * np.sqrt(np.maximum(sq, 0.0))  # (T,)
    J_last = a[-1] * (A + np.outer(B[-1], u)) + W_O @ ((a[:, None] * (V - v_bar)).T @ K) @ p["q_proj.weight"] / math.sqrt(d)
    g[-1] = np.sqrt((J_last**2).sum())
    return torch.from_numpy(g[::-1].copy())  # (T,) index = distance k


@lru_cache(maxsize=8)
def _widget_setup(d: int, seed: int, max_length: int):
    g = torch.Generator().manual_seed(seed)
    q = scaled_orthogonal(d, 1.0, g)  # (d, d) orthogonal; W_hh = rho * q
    x = chapter_inputs(max_length, d, seed)  # (max_length, d) unit-scale inputs
    return q, x


@lru_cache(maxsize=8)
def _widget_attention(d: int, seed: int) -> MultiHeadAttention:
    return chapter_attention(d, seed).requires_grad_(False)


WIDGET_MAX_LENGTH = 200


def gradient_curves(rho: float, nonlinearity: str = "tanh", length: int = 100, input_scale: float = 0.3,
                    d: int = 32, seed: int = 0) -> GradientCurves:
    """The widget's numbers: gradient norm vs distance for the RNN (W_hh = rho * orthogonal, W_xh = I,
    inputs input_scale * N(0, I)), from the product of Eq. (5.4.2) (``rnn_jacobian_profile``), and for
    one self-attention layer on unit-scale inputs (last query; ``attention_jacobian_profile``), both exact."""
    if not 2 <= length <= WIDGET_MAX_LENGTH:
        raise ValueError(f"length must be in 2..{WIDGET_MAX_LENGTH}, got {length}")
    q, x_all = _widget_setup(d, seed, WIDGET_MAX_LENGTH)
    eye = torch.eye(d, dtype=torch.float64)
    g_rnn = rnn_jacobian_profile(rho * q, eye, x_all[:length] * input_scale, nonlinearity)  # (L,)
    g_att = attention_jacobian_profile(_widget_attention(d, seed), x_all[:length])  # (L,)
    k = torch.arange(length, dtype=torch.float64)
    law = rho**k * math.sqrt(d)  # ||W_hh^k W_xh||_F for W_hh = rho * orthogonal, W_xh = I
    return GradientCurves(k, g_rnn, g_att, law, rho, nonlinearity, log_slope(g_rnn),
                          float(g_rnn[1] / g_rnn[-1]), float(g_att[1] / g_att[-1]))


def gradient_caption(c: GradientCurves) -> str:
    """One line of numbers for the widget: the setting, the RNN's slope and both end-to-end ratios."""
    L = len(c.distances)
    return (f"{c.nonlinearity} RNN, rho = {c.rho:.2f}, length {L}  |  RNN: slope of ln g = {c.slope:+.3f} per step "
            f"(ln rho = {math.log(c.rho):+.3f}), g(1)/g({L - 1}) = {c.ratio_rnn:.3g}  |  attention: "
            f"g(1)/g({L - 1}) = {c.ratio_attention:.3g}")


class GradientPathPlot(BlittedFigure):
    """Gradient norm vs distance on a log scale: the RNN, one attention layer and the linear law
    rho^k sqrt(d). Drawn once; ``update(curves)`` only moves the three lines (``set_data``).

    ``pyplot=False`` (the widget): a free-standing Agg figure whose static parts are rendered once
    and cached (blitting), so an update costs a few milliseconds. ``pyplot=True``: a figure made by
    ``matplotlib.pyplot``, for a static snapshot shown with ``plt.show()``. Values outside the
    fixed axes (1e-20 .. 1e20) are drawn at the edge.
    """

    YLIM = (1e-20, 1e20)

    def __init__(self, max_length: int = WIDGET_MAX_LENGTH, pyplot: bool = False, figsize=(7.5, 3.4), dpi: int = 80):
        super().__init__(pyplot, figsize, dpi)
        ax = self.figure.add_subplot(1, 1, 1)
        ax.set(yscale="log", xlim=(0, max_length), ylim=self.YLIM, xlabel="distance k = T - t",
               ylabel="||d out_T / d x_t||_F")
        ax.set_yticks([10.0**e for e in range(-20, 21, 5)])
        ax.grid(True, which="major", color="0.9", lw=0.8)
        (self._rnn,) = ax.plot([], [], color="tab:blue", lw=2, label="RNN")
        (self._att,) = ax.plot([], [], color="tab:orange", lw=2, label="self-attention (1 layer)")
        (self._law,) = ax.plot([], [], color="0.4", lw=1, ls="--", label="linear RNN law rho^k sqrt(d)")
        ax.legend(loc="upper left", fontsize=8)
        self.figure.subplots_adjust(left=0.12, right=0.98, top=0.88 if pyplot else 0.95, bottom=0.15)
        self._title = ax.set_title("") if pyplot else None
        self.axes = ax
        self._animate((self._rnn, self._att, self._law))

    def update(self, curves: GradientCurves) -> None:
        lo, hi = self.YLIM
        k = curves.distances.tolist()
        for line, values in zip(self._moving, (curves.rnn, curves.attention, curves.linear_law)):
            line.set_data(k, values.clamp(lo * 0.5, hi * 2).tolist())
        if self._title is not None:
            self._title.set_text(f"{curves.nonlinearity} RNN at rho = {curves.rho:.2f} vs one attention layer")


def gradient_widget_update(plot: GradientPathPlot, rho: float, nonlinearity: str = "tanh", length: int = 100,
                           input_scale: float = 0.3):
    """One widget update: compute, move the lines, render -> (curves, png, caption). The benchmark
    and the tests time exactly this function."""
    curves = gradient_curves(rho, nonlinearity, length, input_scale)
    plot.update(curves)
    return curves, plot.render_png(), gradient_caption(curves)


def gradient_widget(rho: float = 1.0, nonlinearity: str = "tanh", length: int = 100, input_scale: float = 0.3):
    """The chapter-04 widget: spectral radius, nonlinearity, length and input scale as controls; the
    gradient-vs-distance curves of the RNN and of attention update at once."""
    import ipywidgets as widgets

    plot = GradientPathPlot()
    style = {"description_width": "120px"}
    controls = {
        "rho": widgets.FloatSlider(value=rho, min=0.5, max=1.5, step=0.01, description="spectral radius rho",
                                   style=style, continuous_update=True),
        "nonlinearity": widgets.ToggleButtons(options=["linear", "tanh", "relu"], value=nonlinearity,
                                              description="nonlinearity", style=style),
        "length": widgets.IntSlider(value=length, min=10, max=WIDGET_MAX_LENGTH, step=10, description="length T",
                                    style=style),
        "input_scale": widgets.FloatLogSlider(value=input_scale, base=10, min=-8, max=0.5, step=0.25,
                                              description="input scale", style=style),
    }

    return figure_widget(plot, gradient_widget_update, controls,
                         rows=[["rho", "length"], ["nonlinearity"], ["input_scale"]])


__all__ = [
    "GradientCurves", "GradientPathPlot", "RecallAttention", "RecallRNN", "attention_graph",
    "attention_jacobian_profile",
    "attention_gradient_norms", "autograd_depth", "chapter_attention", "chapter_inputs", "chapter_rnn",
    "clip_grad_norm_", "clip_gradients", "conv_graph", "conv_stack", "count_flops", "distance_profile",
    "exploding_training", "gaussian_rnn_information", "gradient_caption", "gradient_curves", "gradient_widget",
    "gradient_widget_update", "input_jacobian", "largest_singular_value", "layer_costs", "layers_to_connect",
    "local_attention_graph", "log_slope", "max_path_length", "path_lengths_from", "power_norms", "receptive_field", "recall_accuracy",
    "recall_batch", "rnn_graph", "rnn_gradient_norms", "rnn_jacobian_profile", "scaled_orthogonal", "shifted_identity",
    "shortest_path_lengths", "spectral_radius", "train_recall",
]
