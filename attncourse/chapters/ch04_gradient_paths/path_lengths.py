"""Path lengths between positions (source 001 Eq. 5.4.5, source 000 Thm. 14.3.2, Vaswani et al.
2017 Table 1).

``shortest_path_lengths`` (BFS on the graph A > ε), the graphs of an RNN, a convolution and local
attention, ``layers_to_connect`` for stacks, ``receptive_field`` measured with autograd,
``count_flops``, ``autograd_depth`` and ``layer_costs``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import torch
from torch import nn
from torch.overrides import TorchFunctionMode

from ...threads import single_thread


def shortest_path_lengths(adjacency: torch.Tensor) -> torch.Tensor:
    """All-pairs shortest path lengths by breadth-first search (Eq. 5.4.5).

    adjacency: (n, n) bool, adjacency[i, j] = True when position i reads position j in one step
    (for attention: A_ij > eps). Returns dist (n, n) float64: dist[i, i] = 0, dist[i, j] = the
    fewest steps for information at j to reach i, inf when it never does.
    """
    if adjacency.dim() != 2 or adjacency.shape[0] != adjacency.shape[1]:
        raise ValueError(
            f"adjacency must be a square (n, n) matrix, got shape {tuple(adjacency.shape)}"
        )
    edges = adjacency.bool().double()  # (n, n)
    n = edges.shape[0]
    dist = torch.full((n, n), math.inf, dtype=torch.float64)
    # (n, n) reached[i, j]: j reaches i within `step` steps
    reached = torch.eye(n, dtype=torch.bool)
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
    ``source`` to reach position i (inf if never), on adjacency[i, j] = "i reads j". Returns (n,)
    float64. Cheaper than ``shortest_path_lengths`` (a vector per step instead of a matrix)."""
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
    """The dependency graph of Eq. (5.4.5): edge i -> j when A_ij > eps.

    weights (..., T, S) -> bool (..., T, S).
    """
    return weights > eps


def max_path_length(adjacency: torch.Tensor) -> float:
    """The longest shortest path over all pairs (inf if some pair is not connected)."""
    return float(shortest_path_lengths(adjacency).max())


def rnn_graph(n: int) -> torch.Tensor:
    """One RNN step: position i reads itself (its input) and i - 1 (the previous state): (n, n)."""
    i = torch.arange(n)
    return (i[:, None] - i[None, :] >= 0) & (i[:, None] - i[None, :] <= 1)


def conv_graph(n: int, kernel_size: int = 3, dilation: int = 1) -> torch.Tensor:
    """One 'same'-padded convolution: i reads i + dilation * m for |m| <= (kernel_size - 1) / 2.

    Returns (n, n) bool.
    """
    if kernel_size < 1 or kernel_size % 2 == 0:
        raise ValueError(f"kernel_size must be odd and >= 1, got {kernel_size}")
    offset = torch.arange(n)[None, :] - torch.arange(n)[:, None]  # (n, n) j - i
    half = (kernel_size - 1) // 2
    return (offset % dilation == 0) & (offset.abs() <= dilation * half)


def local_attention_graph(n: int, window: int, causal: bool = False) -> torch.Tensor:
    """Restricted (local) attention: i reads j for |i - j| <= window (and j <= i when causal)."""
    from ...masks import local_mask

    return local_mask(n, window, causal=causal)


def layers_to_connect(graphs: Sequence[torch.Tensor], source: int | None = None) -> torch.Tensor:
    """For a stack of layers with one-step graphs ``graphs`` (applied in order, each (n, n) bool,
    i reads j): layers[i, j] = the fewest layers after which output i depends on input j, inf if
    the whole stack never connects them; (n, n) float64. With ``source`` only that input's column:
    (n,). For a stack of identical graphs with self-loops this is ``shortest_path_lengths``."""
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


def conv_stack(
    num_layers: int, channels: int = 4, kernel_size: int = 3, dilated: bool = False, seed: int = 0
) -> nn.Sequential:
    """num_layers of Conv1d(channels, channels, kernel_size, 'same' padding) + tanh, float64;
    with ``dilated`` layer l has dilation 2^l (WaveNet-style)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        layers = []
        for layer in range(num_layers):
            dilation = 2**layer if dilated else 1
            layers += [
                nn.Conv1d(
                    channels,
                    channels,
                    kernel_size,
                    padding=dilation * (kernel_size - 1) // 2,
                    dilation=dilation,
                    dtype=torch.float64,
                ),
                nn.Tanh(),
            ]
    return nn.Sequential(*layers)


@single_thread()
def receptive_field(
    model: nn.Module, length: int, position: int | None = None, channels: int | None = None
) -> int:
    """Measured receptive field: how many input positions the output at ``position`` (default: the
    middle) depends on, i.e. where d y[position] / d x is non-zero. model maps (1, C, length) to
    (1, C, length)."""
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
        # C_in / groups * kernel multiply-adds per output
        return 2 * weight[0].numel() * out.numel()
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
    Attention is the core softmax(q k^T / sqrt d) v (the n x n part; projections are excluded, as
    in the table); the RNN is h_t = tanh(W_hh h_{t-1} + W_xh x_t); the convolution is
    Conv1d(d, d, k)."""
    from ...attention import scaled_dot_product_attention

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
