"""The chapter-05 widget: one trained encoder run under each mask of ``MASK_KINDS``; for a chosen
mask, layer, head and query it shows the attention heat map, the flow graph (keys below, queries
above, edges as thick as their weight), the forward / backward / self shares, and the raw
attention of the query against its rollout through the layers so far.

``flow_views`` computes everything once (one forward pass per mask); ``flow_view`` picks what one
setting shows; ``FlowPlot`` draws it (updated in place, blitted); ``flow_widget_update`` is what a
slider move costs (numbers + redraw + PNG), and ``flow_widget`` wires the controls.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch
from matplotlib.collections import LineCollection
from matplotlib.patches import Rectangle

from ...flow import attention_rollout, flow_shares, reachability
from ...i18n import say
from ...viz import BlittedFigure, figure_widget
from .graphs import MASK_KINDS, chapter_mask


class FlowView(NamedTuple):
    """What the widget shows for one setting."""

    kind: str
    layer: int  # 1-based
    head: str  # "1", "2", … or "mean"
    query: int
    weights: np.ndarray  # (T, T) this layer's (head's) attention
    raw: np.ndarray  # (T,) the query's row of this layer, heads averaged
    rollout: np.ndarray  # (T,) the query's row of the rollout through layers 1..layer
    shares: tuple  # (forward, backward, self) of ``weights``
    reachable: int  # how many inputs the query can depend on after ``layer`` layers


@torch.no_grad()
def flow_views(model, tokens: torch.Tensor) -> dict:
    """Everything the widget needs, for every mask kind: {kind: {"weights": (L, H, T, T),
    "rollout": (L, T, T) (through layers 1..l), "mask": (T, T)}}. tokens (1, T)."""
    T = tokens.shape[1]
    views = {}
    for kind in MASK_KINDS:
        mask = chapter_mask(kind, T)
        _, weights = model(tokens, mask=mask)  # L x (1, H, T, T)
        rollouts = [attention_rollout(weights[: layer + 1])[0] for layer in range(len(weights))]
        views[kind] = {
            "weights": torch.stack([w[0] for w in weights]).double().numpy(),  # (L, H, T, T)
            "rollout": torch.stack(rollouts).double().numpy(),  # (L, T, T)
            "mask": mask,
        }
    return views


def flow_view(views: dict, kind: str, layer: int, head: str, query: int) -> FlowView:
    """One setting's numbers. ``layer`` is 1-based; ``head`` a 1-based number as text or
    "mean"."""
    data = views[kind]
    L, H, T, _ = data["weights"].shape
    if not 1 <= layer <= L or not 0 <= query < T:
        raise ValueError(f"layer must be in 1..{L} and query in 0..{T - 1}")
    layer_weights = data["weights"][layer - 1]  # (H, T, T)
    w = layer_weights.mean(0) if head == "mean" else layer_weights[int(head) - 1]  # (T, T)
    shares = flow_shares(torch.from_numpy(w))
    reach = reachability(data["mask"], layer)[query]  # (T,)
    return FlowView(
        kind,
        layer,
        head,
        query,
        w,
        layer_weights.mean(0)[query],
        data["rollout"][layer - 1][query],
        tuple(float(s) for s in shares),
        int(reach.sum()),
    )


# the widget's words, in the learner's language (``attncourse.i18n.say``; ``{...}``: filled in)
CAPTION = (
    "{kind} mask, layer {layer}, head {head}, query {query}  |  shares of this head's weight: "
    "forward (j < i) {forward}, backward (j > i) {backward}, self {own}  |  after {layer} "
    "layer(s) query {query} can depend on {reachable} of {T} inputs"
)
MASK, LAYER, HEAD, QUERY, MEAN = "mask", "layer", "head", "query i", "mean"
SENTENCES = (CAPTION, MASK, LAYER, HEAD, QUERY, MEAN, *MASK_KINDS)


def flow_caption(view: FlowView) -> str:
    forward, backward, own = view.shares
    return say(
        CAPTION,
        kind=say(view.kind),
        layer=view.layer,
        head=say(view.head),
        query=view.query,
        forward=f"{forward:.2f}",
        backward=f"{backward:.2f}",
        own=f"{own:.2f}",
        reachable=view.reachable,
        T=len(view.raw),
    )


class FlowPlot(BlittedFigure):
    """Three panels: the heat map (query row outlined), the flow graph of the layer and the
    query's raw attention vs its rollout. ``update(view)`` moves only what changes."""

    def __init__(self, length: int = 16, pyplot: bool = False):
        super().__init__(pyplot, figsize=(11.0, 3.3), dpi=80)
        T = length
        ax_heat, ax_graph, ax_bars = self.figure.subplots(1, 3, width_ratios=(1, 1.3, 1.3))
        self._image = ax_heat.imshow(np.zeros((T, T)), vmin=0, vmax=1, cmap="viridis")
        ax_heat.set(xlabel="key j (sends)", ylabel="query i (receives)", title="attention")
        self._row = Rectangle((-0.5, -0.5), T, 1, fill=False, ec="tab:red", lw=1.5)
        ax_heat.add_patch(self._row)
        pairs = [(i, j) for i in range(T) for j in range(T)]
        self._pairs = pairs
        segments = [[(j, 0.0), (i, 1.0)] for i, j in pairs]  # key j at the bottom, query i on top
        self._edges = LineCollection(segments, colors="0.35", linewidths=0.0)
        self._chosen = LineCollection(segments, colors="tab:red", linewidths=0.0)
        ax_graph.add_collection(self._edges)
        ax_graph.add_collection(self._chosen)
        ax_graph.scatter(range(T), [0.0] * T, s=14, c="k", zorder=3)
        ax_graph.scatter(range(T), [1.0] * T, s=14, c="k", zorder=3)
        ax_graph.set(xlim=(-0.7, T - 0.3), ylim=(-0.15, 1.15), yticks=[0, 1], title="flow graph")
        ax_graph.set_yticklabels(["keys", "queries"])
        ax_graph.set_xlabel("position")
        x = np.arange(T)
        self._raw = ax_bars.bar(x - 0.2, np.zeros(T), width=0.4, color="tab:blue", label="raw")
        self._roll = ax_bars.bar(
            x + 0.2, np.zeros(T), width=0.4, color="tab:orange", label="rollout"
        )
        self._marker = ax_bars.axvline(0, color="tab:red", lw=1, ls=":")
        ax_bars.set(ylim=(0, 1), xlabel="input position j", title="query's row: raw vs rollout")
        ax_bars.legend(fontsize=7, loc="upper right")
        self.figure.subplots_adjust(left=0.05, right=0.99, bottom=0.16, top=0.9, wspace=0.3)
        self.axes = (ax_heat, ax_graph, ax_bars)
        self._animate(
            (self._image, self._row, self._edges, self._chosen, self._marker, *self._raw)
            + tuple(self._roll)
        )

    def update(self, view: FlowView) -> None:
        w = view.weights  # (T, T)
        self._image.set_data(w)
        self._row.set_y(view.query - 0.5)
        widths = np.array([4.0 * w[i, j] for i, j in self._pairs])
        chosen = np.array([4.0 * w[i, j] if i == view.query else 0.0 for i, j in self._pairs])
        self._edges.set_linewidths(np.where(chosen > 0, 0.0, widths))
        self._chosen.set_linewidths(chosen)
        for bar, value in zip(self._raw, view.raw):
            bar.set_height(value)
        for bar, value in zip(self._roll, view.rollout):
            bar.set_height(value)
        self._marker.set_xdata([view.query, view.query])


def flow_widget_update(plot: FlowPlot, views: dict, kind, layer, head, query):
    """One widget update: numbers, redraw, PNG -> (view, png, caption). Timed by the benchmark."""
    view = flow_view(views, kind, layer, head, query)
    plot.update(view)
    return view, plot.render_png(), flow_caption(view)


def flow_widget(model, tokens: torch.Tensor, kind: str = "bidirectional", query: int = 3):
    """The chapter-05 widget over ``model`` (an encoder whose ``forward`` takes ``mask=``) and one
    sequence ``tokens`` (1, T)."""
    import ipywidgets as widgets

    views = flow_views(model, tokens)
    L, H, T, _ = views[kind]["weights"].shape
    plot = FlowPlot(T)
    style = {"description_width": "80px"}
    controls = {
        "kind": widgets.ToggleButtons(
            options=[(say(k), k) for k in MASK_KINDS], value=kind, description=say(MASK)
        ),
        "layer": widgets.IntSlider(value=1, min=1, max=L, description=say(LAYER), style=style),
        "head": widgets.ToggleButtons(
            options=[(str(h + 1), str(h + 1)) for h in range(H)] + [(say(MEAN), MEAN)],
            value=MEAN,
            description=say(HEAD),
        ),
        "query": widgets.IntSlider(value=query, min=0, max=T - 1, description=say(QUERY)),
    }

    def update(plot, kind, layer, head, query):
        return flow_widget_update(plot, views, kind, layer, head, query)

    return figure_widget(plot, update, controls, rows=[["kind"], ["layer", "query"], ["head"]])
