"""The chapter-10 widget: a sparse pattern's mask, how far the last query reaches through L
layers, and the measured time and memory of exact, linear and sparse attention at that length.

``sparsity_numbers`` (numbers), ``SparsityPlot`` (figure, updated in place),
``sparsity_widget_update`` (numbers + redraw) and ``sparsity_widget`` (the controls). Time and
memory are read from the table ``costs`` measured once (``cost_table``), since measuring them
live takes seconds to minutes.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch

from ...i18n import say
from ...threads import single_thread
from ...viz import BlittedFigure, figure_widget
from .costs import LENGTHS, SIZES
from .patterns import pair_count, reach_of_last

PIXELS = 64  # the mask panel shows the first 4 x size positions, pooled into PIXELS²
REACH_LAYERS = 4
REACH_COLUMNS = 256  # the reach panel pools the n key positions into this many columns
BAR_METHODS = ("plain", "chunked", "linear")  # shown next to the chosen sparse method
SPARSE_METHODS = ("local", "strided", "block")


def measured(method: str, n: int, size: int = 0) -> tuple[float, float]:
    """(forward ms, extra peak MB) from the shipped table (``costs``)."""
    from .cost_table import TABLE

    return TABLE[method, n, size]


class SparsityNumbers(NamedTuple):
    """What the widget shows for one setting."""

    method: str
    n: int
    size: int
    corner: int  # the mask panel shows queries and keys 0 .. corner - 1
    zoom: torch.Tensor  # (PIXELS, PIXELS): fraction of kept pairs per pixel of that corner
    reach: torch.Tensor  # (REACH_LAYERS, n) bool: keys reaching the last query after L layers
    reached: list  # keys reached after L = 1 .. REACH_LAYERS layers
    layers_to_all: int | None  # layers until the last query reaches every earlier key
    pairs: int  # (query, key) pairs the pattern keeps
    dense_pairs: int  # n (n + 1) / 2, the causal dense count
    costs: dict  # method -> (ms, MB), measured


def layers_to_reach_all(method: str, n: int, size: int) -> int | None:
    """Layers until the last query's output depends on every key (causal pattern): local
    ceil((n - 1) / window); strided 1 if every gap 1 .. n - 1 is below the stride or a multiple of
    it (stride 1, or n <= stride + 1), else 2; block 1 if n <= block else never; dense 1."""
    if method == "dense" or n == 1:
        return 1
    if method == "local":
        return None if size == 0 else -(-(n - 1) // size)
    if method == "strided":
        return 1 if size == 1 or n <= size + 1 else 2
    if method == "block":
        return 1 if n <= size else None
    raise ValueError(f"method must be local, strided, block or dense, got {method!r}")


def mask_corner(method: str, corner: int, size: int, pixels: int = PIXELS) -> torch.Tensor:
    """The causal mask of queries and keys 0 .. corner - 1 as a (pixels, pixels) picture: in
    each row of pixels, one query (the middle of the row's span), and per pixel the fraction of
    its keys that this query may attend (corner a multiple of pixels). The patterns are those of
    ``patterns.pattern_mask`` (the tests check it), computed for these queries only."""
    cell = corner // pixels
    i = (np.arange(pixels) * cell + cell // 2)[:, None]  # (pixels, 1) the queries shown
    j = np.arange(corner)[None, :]  # (1, corner)
    gap = i - j  # (pixels, corner)
    if method == "local":
        keep = gap <= size
    elif method == "strided":
        keep = (gap < size) | (gap % size == 0)
    elif method == "block":
        keep = i // size == j // size
    else:
        keep = np.ones_like(gap, dtype=bool)
    keep = keep & (gap >= 0)
    return torch.from_numpy(keep.reshape(pixels, pixels, cell).mean(axis=2))  # (pixels, pixels)


def sparsity_numbers(
    n: int = 4096,
    method: str = "local",
    window: int = 64,
    stride: int = 64,
    block_size: int = 64,
) -> SparsityNumbers:
    """The widget's numbers for length ``n`` (one of ``LENGTHS``) and a sparse ``method`` with
    its size (one of ``SIZES``); the costs come from the measured table."""
    with single_thread():  # small tensor operations: a second thread only waits
        return _sparsity_numbers(n, method, window, stride, block_size)


def _sparsity_numbers(n, method, window, stride, block_size) -> SparsityNumbers:
    if method not in SPARSE_METHODS:
        raise ValueError(f"method must be one of {SPARSE_METHODS}, got {method!r}")
    if n not in LENGTHS:
        raise ValueError(f"n must be one of {LENGTHS} (the measured lengths), got {n}")
    size = {"local": window, "strided": stride, "block": block_size}[method]
    if size not in SIZES:
        raise ValueError(f"the {method} size must be one of {SIZES}, got {size}")
    corner = min(n, max(PIXELS, 4 * size))
    zoom = mask_corner(method, corner, size)  # (PIXELS, PIXELS)
    reach = reach_of_last(method, n, size, REACH_LAYERS)  # (L, n)
    costs = {m: measured(m, n) for m in BAR_METHODS}
    costs[method] = measured(method, n, size)
    return SparsityNumbers(
        method,
        n,
        size,
        corner,
        zoom,
        reach,
        reach.sum(dim=1).tolist(),
        layers_to_reach_all(method, n, size),
        pair_count(method, n, size),
        n * (n + 1) // 2,
        costs,
    )


# the widget's words, in the learner's language (``attncourse.i18n.say``; ``{...}``: filled in)
CAPTION = (
    "{method}, {name} {size}, n = {n}: {pairs} (query, key) pairs = {percent}% of causal dense "
    "attention (mask panel: positions 0..{corner})<br>keys reaching the last query after "
    "1..{layers} layers: {reached}; all of them {reach}<br>measured (one forward pass, "
    "B = H = 1, d = 64): {costs}"
)
NEVER = "never"
AFTER = "after {layers} layer(s)"
COST = "{method} {ms} ms, {mb} MB"
SIZE_NAMES = {"local": "window", "strided": "stride", "block": "block size"}
LENGTH, PATTERN = "length n", "pattern"
SENTENCES = (
    CAPTION,
    NEVER,
    AFTER,
    COST,
    *SIZE_NAMES.values(),
    LENGTH,
    PATTERN,
    *SPARSE_METHODS,
    *BAR_METHODS,
)


def sparsity_caption(s: SparsityNumbers) -> str:
    reach = say(NEVER) if s.layers_to_all is None else say(AFTER, layers=s.layers_to_all)
    reached = ", ".join(f"{r:,}" for r in s.reached)
    costs = "; ".join(
        say(COST, method=say(m), ms=f"{ms:.3g}", mb=f"{mb:.3g}") for m, (ms, mb) in s.costs.items()
    )
    return say(
        CAPTION,
        method=say(s.method),
        name=say(SIZE_NAMES[s.method]),
        size=s.size,
        n=f"{s.n:,}",
        pairs=f"{s.pairs:,}",
        percent=f"{100 * s.pairs / s.dense_pairs:.2f}",
        corner=s.corner - 1,
        layers=REACH_LAYERS,
        reached=reached,
        reach=reach,
        costs=costs,
    )


def _pooled(reach: torch.Tensor, columns: int = REACH_COLUMNS) -> np.ndarray:
    """(L, n) bool -> (L, columns) float: the fraction of reached keys in each column's span."""
    L, n = reach.shape
    edges = np.linspace(0, n, columns + 1).astype(int)
    counts = np.concatenate([np.zeros((L, 1)), reach.numpy().cumsum(axis=1)], axis=1)  # (L, n+1)
    width = np.maximum(edges[1:] - edges[:-1], 1)
    return (counts[:, edges[1:]] - counts[:, edges[:-1]]) / width  # (L, columns)


class SparsityPlot(BlittedFigure):
    """Three panels: the mask's corner, the reach of the last query through 1..REACH_LAYERS
    layers, and the measured time and memory bars (log scale). Drawn once; ``update(numbers)``
    changes the images' data and the bars' lengths (blitting, as every course widget)."""

    TIME_RANGE = (0.01, 1e5)  # ms
    MEMORY_RANGE = (0.01, 1e4)  # MB

    def __init__(self, pyplot: bool = False):
        super().__init__(pyplot, figsize=(10, 3.1), dpi=72)
        fig = self.figure
        grid = fig.add_gridspec(2, 3, width_ratios=(1, 1.7, 1.3), wspace=0.45, hspace=0.7)
        ax_mask = fig.add_subplot(grid[:, 0])
        ax_reach = fig.add_subplot(grid[:, 1])
        ax_time = fig.add_subplot(grid[0, 2])
        ax_memory = fig.add_subplot(grid[1, 2])
        self._mask = ax_mask.imshow(
            np.zeros((PIXELS, PIXELS)),
            cmap="Greys",
            vmin=0,
            vmax=1,
            interpolation="nearest",
            extent=(0, 4, 4, 0),
        )
        ax_mask.set(
            title="mask, first 4 x size positions",
            xlabel="key j / size",
            ylabel="query i / size",
        )
        self._reach = ax_reach.imshow(
            np.zeros((REACH_LAYERS, REACH_COLUMNS)),
            cmap="Blues",
            vmin=0,
            vmax=1,
            aspect="auto",
            interpolation="nearest",
            extent=(0, 1, REACH_LAYERS + 0.5, 0.5),
        )
        ax_reach.set(
            title="keys reaching the last query",
            xlabel="key position j / n",
            ylabel="layers L",
            yticks=range(1, REACH_LAYERS + 1),
        )
        labels = [*BAR_METHODS, "sparse (chosen)"]
        colors = ["tab:red", "tab:orange", "tab:purple", "tab:green"]
        self._bars = []
        for ax, title, lim in (
            (ax_time, "forward time (ms)", self.TIME_RANGE),
            (ax_memory, "extra peak memory (MB)", self.MEMORY_RANGE),
        ):
            bars = ax.barh(range(4), [lim[0]] * 4, color=colors, left=lim[0] / 10)
            ax.set(xscale="log", xlim=(lim[0] / 10, lim[1]), title=title)
            ax.set_yticks(range(4), labels, fontsize=8)
            ax.invert_yaxis()
            ax.tick_params(axis="x", labelsize=7)
            self._bars.append(bars)
        self._sparse_labels = (ax_time.get_yticklabels()[3], ax_memory.get_yticklabels()[3])
        fig.subplots_adjust(left=0.05, right=0.98, top=0.88, bottom=0.17)
        self.axes = (ax_mask, ax_reach, ax_time, ax_memory)
        self._animate((self._mask, self._reach, *self._bars[0], *self._bars[1]))

    def update(self, s: SparsityNumbers) -> None:
        self._mask.set_data(s.zoom.numpy())
        self._reach.set_data(_pooled(s.reach))
        order = [*BAR_METHODS, s.method]
        for bars, column, (lo, hi) in zip(self._bars, (0, 1), (self.TIME_RANGE, self.MEMORY_RANGE)):
            for bar, method in zip(bars, order):
                value = min(max(s.costs[method][column], lo), hi)
                bar.set_width(value - bar.get_x())  # bars start at lo / 10 on the log axis


def sparsity_widget_update(
    plot: SparsityPlot,
    n: int = 4096,
    method: str = "local",
    window: int = 64,
    stride: int = 64,
    block_size: int = 64,
):
    """One widget update: numbers, redraw, PNG -> (numbers, png, caption). The benchmark and the
    tests time exactly this function."""
    numbers = sparsity_numbers(n, method, window, stride, block_size)
    plot.update(numbers)
    return numbers, plot.render_png(), sparsity_caption(numbers)


def sparsity_widget(
    n: int = 4096, method: str = "local", window: int = 64, stride: int = 64, block_size: int = 64
):
    """The chapter-10 widget: length, sparse method, window, stride and block size as controls;
    the mask, the reach through layers and the measured costs update at once."""
    import ipywidgets as widgets

    plot = SparsityPlot()
    style = {"description_width": "90px"}

    def sizes(value, description):
        return widgets.SelectionSlider(
            options=list(SIZES), value=value, description=description, style=style
        )

    controls = {
        "n": widgets.SelectionSlider(
            options=list(LENGTHS), value=n, description=say(LENGTH), style=style
        ),
        "method": widgets.ToggleButtons(
            options=[(say(m), m) for m in SPARSE_METHODS],
            value=method,
            description=say(PATTERN),
            style=style,
        ),
        "window": sizes(window, say(SIZE_NAMES["local"])),
        "stride": sizes(stride, say(SIZE_NAMES["strided"])),
        "block_size": sizes(block_size, say(SIZE_NAMES["block"])),
    }
    return figure_widget(
        plot,
        sparsity_widget_update,
        controls,
        rows=[["n", "method"], ["window", "stride", "block_size"]],
    )
