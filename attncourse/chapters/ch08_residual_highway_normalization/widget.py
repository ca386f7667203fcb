"""The chapter-08 figures: ``plot_layer_statistics`` (several stacks' per-layer statistics side by
side), and the widget: ``layer_statistics`` of a fresh stack drawn by ``DepthPlot`` (updated in
place), ``depth_widget_update`` (numbers + redraw) and ``depth_widget`` (controls).
"""

from __future__ import annotations

import math

import torch

from ...i18n import say, speaking
from ...viz import BlittedFigure, figure_widget
from .stacks import LAYER_KINDS, LayerStats, layer_statistics

PANEL_TITLES = (
    "activation RMS of h_l",
    "gradient norm |dL/dh_l|",
    "cosine(h_l(x), h_l(x')), x != x'",
)


def plot_layer_statistics(named_stats: dict, axes=None, title: str = ""):
    """The widget's three panels for several stacks at once, one line each: {label: LayerStats}.

    Draws on ``axes`` (three matplotlib axes) or on a new pyplot figure; returns the axes.
    """
    if axes is None:
        import matplotlib.pyplot as plt

        _, axes = plt.subplots(1, 3, figsize=(11, 3))
    for label, stats in named_stats.items():
        layers = range(stats.depth + 1)
        axes[0].semilogy(layers, stats.activation_rms, label=label)
        axes[1].semilogy(layers, stats.gradient_norm, label=label)
        axes[2].plot(layers, stats.cosine, label=label)
    for ax, panel in zip(axes, PANEL_TITLES):
        ax.set(xlabel="layer l", title=panel)
    axes[2].set_ylim(-0.05, 1.05)
    axes[2].legend(fontsize=7)
    if title:
        axes[0].figure.suptitle(title, fontsize=10)
    axes[0].figure.tight_layout()
    return axes


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

    def __init__(self, pyplot: bool = False):
        super().__init__(pyplot, figsize=(10.5, 3.0), dpi=72)
        axes = self.figure.subplots(1, 3)
        self.figure.subplots_adjust(
            left=0.07, right=0.98, bottom=0.17, top=0.8 if pyplot else 0.86, wspace=0.32
        )
        self.lines = []
        for ax, title, log in zip(axes, PANEL_TITLES, (True, True, False)):
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
        self._title = (
            self.figure.text(0.5, 0.97, "", ha="center", va="top", fontsize=10) if pyplot else None
        )
        self._animate(self.lines)

    def update(self, stats: LayerStats) -> None:
        """Move the three lines to ``stats`` (no new artists are created)."""
        layers = list(range(stats.depth + 1))
        lo, hi = self.LOG_RANGE
        values = (
            stats.activation_rms.clamp(lo, hi),
            stats.gradient_norm.clamp(lo, hi),
            stats.cosine,
        )
        for line, v in zip(self.lines, values):
            line.set_data(layers, torch.nan_to_num(v.double(), nan=lo).tolist())
        if self._title is not None:
            with speaking("en"):  # a figure's text stays English (its fonts have no CJK glyphs)
                self._title.set_text(depth_caption(stats))


# the widget's words, in the learner's language (``attncourse.i18n.say``; ``{...}``: filled in)
CAPTION = (
    "{kind}, depth {depth}, norm {norm}  |  RMS h_0 = {first}, h_L = {last}  |  "
    "|dL/dh_0| / |dL/dh_L| = {ratio}  |  cosine at h_L = {cosine}"
)
GATE = "  |  mean gate T = {gate}"
NO_NORM = "none"
LAYER, DEPTH, NORM = "layer", "depth", "norm"
GATE_BIAS, SCALE_BRANCH = "gate bias", "residual branch x 1/sqrt(depth)"
SENTENCES = (CAPTION, GATE, NO_NORM, LAYER, DEPTH, NORM, GATE_BIAS, SCALE_BRANCH, *LAYER_KINDS)


def depth_caption(stats: LayerStats) -> str:
    """One line of numbers: first and last layer of each statistic, the mean gate, the loss."""
    r, g, c = stats.activation_rms, stats.gradient_norm, stats.cosine
    text = say(
        CAPTION,
        kind=say(stats.kind),
        depth=stats.depth,
        norm=say(stats.norm) if stats.norm == NO_NORM else stats.norm,
        first=f"{float(r[0]):.3g}",
        last=f"{float(r[-1]):.3g}",
        ratio=f"{float(g[0] / g[-1]):.3g}",
        cosine=f"{float(c[-1]):.3f}",
    )
    if stats.kind == "highway":
        text += say(GATE, gate=f"{float(stats.gate_mean.mean()):.4f}")
    return text


def depth_widget_update(
    plot: DepthPlot,
    kind: str,
    depth: int,
    norm: str = "none",
    gate_bias: float = -6.0,
    scale_branch: bool = False,
):
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
        "kind": widgets.Dropdown(
            options=[(say(k), k) for k in LAYER_KINDS],
            value=kind,
            description=say(LAYER),
            style=style,
        ),
        "depth": widgets.IntSlider(
            value=depth, min=1, max=100, step=1, description=say(DEPTH), style=style
        ),
        "norm": widgets.Dropdown(
            options=[
                (say(NO_NORM), "none"),
                ("LayerNorm", "layer"),
                ("RMSNorm", "rms"),
                ("BatchNorm", "batch"),
            ],
            value=norm,
            description=say(NORM),
            style=style,
        ),
        "gate_bias": widgets.FloatSlider(
            value=gate_bias, min=-10, max=4, step=0.5, description=say(GATE_BIAS), style=style
        ),
        "scale_branch": widgets.Checkbox(
            value=False,
            description=say(SCALE_BRANCH),
            indent=False,  # its description in full, beside the box
            layout=widgets.Layout(width="auto"),
        ),
    }

    return figure_widget(
        plot,
        depth_widget_update,
        controls,
        rows=[["kind", "depth", "norm"], ["gate_bias", "scale_branch"]],
    )
