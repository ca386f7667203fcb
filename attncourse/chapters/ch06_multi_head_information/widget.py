"""The chapter-06 widget: switch heads of the trained model on and off.

``head_mask_state`` (numbers: accuracy, loss and every head's pattern on one example under a head
mask), ``HeadMaskPlot`` (the patterns and the pruning curves, updated in place, the current
choice marked), ``head_mask_widget_update`` (numbers + redraw) and ``head_mask_widget`` (one toggle
per head, plus "remove the first k heads of an order").
"""

from __future__ import annotations

from dataclasses import dataclass

import matplotlib
import torch

from ...i18n import say
from ...losses import cross_entropy
from ...threads import single_thread
from ...viz import BlittedFigure, figure_widget
from .heads import HeadGatedEncoder
from .pruning import ABLATION, MICHEL, NET_INFORMATION

CURVE_COLOURS = {
    MICHEL: "tab:blue",
    ABLATION: "tab:green",
    NET_INFORMATION: "tab:orange",
    "random": "tab:gray",
}


@dataclass
class HeadMaskState:
    """What the widget shows for one head mask."""

    mask: torch.Tensor  # (L, H): 1 kept, 0 removed
    accuracy: float  # on the evaluation batch
    loss: float
    patterns: torch.Tensor  # (L, H, T, T) attention weights on the example, under this mask
    tokens: torch.Tensor  # (T,) the example


def head_mask(num_layers: int, num_heads: int, removed=(), order=(), k: int = 0) -> torch.Tensor:
    """(L, H) float mask: 0 for every (layer, head) in ``removed`` and for the first ``k`` flat
    indices (layer · H + head) of ``order``, 1 elsewhere."""
    mask = torch.ones(num_layers * num_heads)
    for layer, head in removed:
        mask[layer * num_heads + head] = 0.0
    for flat in list(order)[:k]:
        mask[int(flat)] = 0.0
    return mask.view(num_layers, num_heads)


@torch.no_grad()
@single_thread()
def head_mask_state(
    model: HeadGatedEncoder,
    x: torch.Tensor,
    y: torch.Tensor,
    mask: torch.Tensor,
    example: int = 0,
) -> HeadMaskState:
    """Accuracy and loss on (x, y) with the heads of ``mask`` kept, and every head's weights on
    sequence ``example`` (one forward pass)."""
    logits = model(x, mask)  # (B, T, C)
    accuracy = float((logits.argmax(-1) == y).double().mean())
    loss = float(cross_entropy(logits, y))
    patterns = torch.stack([w[example] for w in model.weights])  # (L, H, T, T)
    return HeadMaskState(mask.clone(), accuracy, loss, patterns, x[example])


# the widget's words, in the learner's language (``attncourse.i18n.say``; ``{...}``: filled in)
CAPTION = "{removed} of {total} heads removed  |  accuracy {accuracy}, loss {loss}"
TOGGLE = "layer {layer}, head {head}: on = kept"
ORDER, FIRST_K = "prune in the order", "first k heads of it"
SENTENCES = (CAPTION, TOGGLE, ORDER, FIRST_K, MICHEL, ABLATION, NET_INFORMATION)


def head_mask_caption(state: HeadMaskState) -> str:
    removed = int((state.mask == 0).sum())
    return say(
        CAPTION,
        removed=removed,
        total=state.mask.numel(),
        accuracy=f"{state.accuracy:.3f}",
        loss=f"{state.loss:.3f}",
    )


def pattern_mosaic(patterns: torch.Tensor, mask: torch.Tensor, faded: float = 0.25):
    """Every head's (T, T) pattern in one (L·(T+1) − 1, H·(T+1) − 1) image, layers as rows, a
    NaN line between tiles; a removed head's tile is scaled by ``faded``. patterns (L, H, T, T)."""
    L, H, T, _ = patterns.shape
    tiles = patterns * torch.where(mask > 0, 1.0, faded)[:, :, None, None]  # (L, H, T, T)
    padded = torch.nn.functional.pad(tiles, (0, 1, 0, 1), value=float("nan"))  # (L, H, T+1, T+1)
    image = padded.permute(0, 2, 1, 3).reshape(L * (T + 1), H * (T + 1))
    return image[:-1, :-1]  # (L(T+1) - 1, H(T+1) - 1)


class HeadMaskPlot(BlittedFigure):
    """Top: each head's attention pattern on one example, in one mosaic (layers as rows, queries
    down, keys across; a removed head is faded and crossed out). Bottom: accuracy against the
    number of heads removed for each pruning order, and the current mask as a red dot (the
    numbers are in the widget's caption: drawing text costs more than the rest of the redraw).
    ``curves``: name -> (L·H + 1,) accuracies. Three artists move, so an update is cheap."""

    def __init__(self, num_layers: int, num_heads: int, length: int, curves: dict, pyplot=False):
        super().__init__(pyplot, figsize=(10, 4.4), dpi=80)
        fig = self.figure
        L, H, T = num_layers, num_heads, length
        self._shape = (L, H, T)
        top = fig.add_axes((0.06, 0.6, 0.92, 0.36))
        blank = pattern_mosaic(torch.zeros(L, H, T, T), torch.ones(L, H)).numpy()
        cmap = matplotlib.colormaps["viridis"].with_extremes(bad="white")
        self._mosaic = top.imshow(blank, vmin=0, vmax=1, cmap=cmap, aspect="auto")
        (self._crosses,) = top.plot([], [], color="tab:red", lw=1)
        top.set_xticks(
            [h * (T + 1) + (T - 1) / 2 for h in range(H)], [f"h{h + 1}" for h in range(H)]
        )
        top.set_yticks(
            [la * (T + 1) + (T - 1) / 2 for la in range(L)], [f"layer {la + 1}" for la in range(L)]
        )
        top.tick_params(labelsize=7, length=0, labeltop=True, labelbottom=False)
        for side in top.spines.values():
            side.set_visible(False)
        ax = fig.add_axes((0.07, 0.11, 0.91, 0.4))
        n = L * H
        for name, acc in curves.items():
            ax.plot(range(n + 1), acc.tolist(), color=CURVE_COLOURS.get(name), lw=1.5, label=name)
        (self._dot,) = ax.plot([0], [1], "o", color="tab:red", ms=7, label="current mask")
        ax.set(xlim=(0, n), ylim=(0, 1.02), xlabel="heads removed", ylabel="accuracy")
        ax.grid(True, color="0.9")
        ax.legend(fontsize=7, loc="lower left")
        self.axes = (top, ax)
        self._animate([self._mosaic, self._crosses, self._dot])

    def update(self, state: HeadMaskState) -> None:
        L, H, T = self._shape
        self._mosaic.set_data(pattern_mosaic(state.patterns, state.mask).numpy())
        xs, ys = [], []
        for layer, head in (state.mask == 0).nonzero().tolist():
            x0, y0 = head * (T + 1) - 0.5, layer * (T + 1) - 0.5
            xs += [x0, x0 + T, float("nan"), x0, x0 + T, float("nan")]
            ys += [y0, y0 + T, float("nan"), y0 + T, y0, float("nan")]
        self._crosses.set_data(xs, ys)
        removed = int((state.mask == 0).sum())
        self._dot.set_data([removed], [state.accuracy])


def head_mask_widget_update(
    plot: HeadMaskPlot,
    model: HeadGatedEncoder,
    data: tuple,
    removed=(),
    order=(),
    k: int = 0,
):
    """One widget update: mask -> numbers -> redraw -> (state, png, caption). The benchmark and
    the tests time exactly this function."""
    mask = head_mask(model.num_layers, model.num_heads, removed, order, k)
    state = head_mask_state(model, *data, mask)
    plot.update(state)
    return state, plot.render_png(), head_mask_caption(state)


def head_mask_widget(model: HeadGatedEncoder, data: tuple, curves: dict, orders: dict):
    """The chapter-06 widget: a toggle per head (on = kept) and "remove the first k heads of an
    order"; accuracy, loss, the patterns and the marked point on the pruning curves follow.
    Labels number layers and heads from 1, as the chapter does ("1.4" = layer 1, head 4); the
    control names ``L{layer}H{head}`` and the (layer, head) pairs in the code count from 0."""
    import ipywidgets as widgets

    L, H = model.num_layers, model.num_heads
    plot = HeadMaskPlot(L, H, data[0].shape[1], curves)
    toggles = {
        f"L{layer}H{head}": widgets.ToggleButton(
            value=True,
            description=f"{layer + 1}.{head + 1}",
            tooltip=say(TOGGLE, layer=layer + 1, head=head + 1),
            layout=widgets.Layout(width="44px", padding="0px"),
        )
        for layer in range(L)
        for head in range(H)
    }
    style = {"description_width": "150px"}
    controls = {
        **toggles,
        "order": widgets.Dropdown(
            options=[(say(name), name) for name in orders],
            value=next(iter(orders)),
            description=say(ORDER),
            style=style,
        ),
        "k": widgets.IntSlider(value=0, min=0, max=L * H, description=say(FIRST_K), style=style),
    }

    def update(plot, order, k, **toggled):
        removed = [
            (int(name[1 : name.index("H")]), int(name[name.index("H") + 1 :]))
            for name, on in toggled.items()
            if not on
        ]
        return head_mask_widget_update(plot, model, data, removed, orders[order], k)

    rows = [[f"L{layer}H{head}" for head in range(H)] for layer in range(L)] + [["order", "k"]]
    return figure_widget(plot, update, controls, rows, font_size="11px")
