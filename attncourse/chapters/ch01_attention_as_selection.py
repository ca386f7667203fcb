"""Chapter 01: the running example and the interactive figure (source 000 Eq. 14.3.1-14.3.4).

* the running example: ``SENTENCE``, its hand-made ``sentence_embeddings`` and
  ``hand_made_projections`` (W_Q, W_K, W_V that let "it" find "cat"), drawn by ``show_weights``;
* ``query_selection(angle, norm, keys, values, ...)`` computes what the widget shows: scores,
  weights, their entropy and the output point; ``selection_sweep`` does it for many queries at once;
* ``SelectionPlot`` draws that state once and afterwards only updates its artists in place;
* ``selection_widget()`` wires sliders to the two and shows the figure as a PNG image widget.
"""

import math
from typing import NamedTuple

import torch

from ..attention import scaled_dot_product_attention
from ..i18n import say, speaking
from ..metrics import attention_entropy
from ..viz import BlittedFigure, figure_widget, plot_attention

# Six fixed 2-D keys and their 2-D values for the chapter-01 widget. Key "F" lies inside the
# convex hull of the others: no query can ever give it the largest weight (Lemma 14.3.4 checks).
KEY_NAMES = ("A", "B", "C", "D", "E", "F")
KEYS_2D = torch.tensor(
    [[2.0, 0.2], [0.8, 1.7], [-1.4, 1.2], [-1.9, -0.5], [0.2, -1.9], [0.1, 0.2]],
    dtype=torch.float64,
)  # (S=6, d_k=2)
VALUES_2D = torch.tensor(
    [[1.0, 0.0], [0.5, 0.87], [-0.5, 0.87], [-1.0, 0.0], [-0.5, -0.87], [0.5, -0.87]],
    dtype=torch.float64,
)  # (S=6, d_v=2)
COLORS = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown")


class SelectionState(NamedTuple):
    """What the chapter-01 widget shows for one query."""

    query: torch.Tensor  # (d_k,)
    scores: torch.Tensor  # (S,) q.k_j * scale / temperature, the softmax's input
    weights: torch.Tensor  # (S,) alpha = softmax(scores)        Eq. (14.3.2)
    entropy: float  # H(alpha) in nats                         Eq. (14.3.3)
    max_entropy: float  # log S, the upper bound of Lemma 14.3.2
    output: torch.Tensor  # (d_v,) sum_j alpha_j v_j                 Eq. (14.3.1)


def query_from_polar(angle_deg: float, norm: float, dtype=torch.float64) -> torch.Tensor:
    """The 2-D query of length ``norm`` at ``angle_deg`` degrees from the x-axis: (2,)."""
    a = math.radians(angle_deg)
    return torch.tensor([norm * math.cos(a), norm * math.sin(a)], dtype=dtype)  # (2,)


def query_selection(
    angle_deg: float,
    norm: float,
    keys=None,
    values=None,
    temperature: float = 1.0,
    scaled: bool = True,
) -> SelectionState:
    """Attention of one 2-D query over fixed keys and values (Eq. 14.3.1-14.3.4).

    q = norm * (cos angle, sin angle); alpha = softmax(q K^T * s / temperature) with
    s = 1/sqrt(d_k) when ``scaled`` (Eq. 14.3.4) else 1; output = alpha V (Eq. 14.3.1).
    keys: (S, d_k=2), values: (S, d_v); defaults ``KEYS_2D``, ``VALUES_2D``.
    """
    keys = KEYS_2D if keys is None else keys
    values = VALUES_2D if values is None else values
    q = query_from_polar(angle_deg, norm, dtype=keys.dtype)  # (2,)
    scale = 1.0 / math.sqrt(keys.shape[-1]) if scaled else 1.0
    out, w = scaled_dot_product_attention(
        q[None], keys, values, scale=scale, temperature=temperature
    )
    scores = (keys @ q) * scale / temperature  # (S,)
    return SelectionState(
        q, scores, w[0], float(attention_entropy(w[0])), math.log(keys.shape[0]), out[0]
    )


def selection_sweep(
    angles_deg, norms, keys=None, values=None, temperature: float = 1.0, scaled: bool = True
):
    """``query_selection`` for many queries at once (for plots and averages over queries).

    angles_deg, norms: sequences or tensors broadcastable to (A,). Returns (weights (A, S),
    entropies (A,) in nats, outputs (A, d_v)), equal row by row to ``query_selection``'s.
    """
    keys = KEYS_2D if keys is None else keys
    values = VALUES_2D if values is None else values
    a, r = torch.broadcast_tensors(
        torch.as_tensor(angles_deg, dtype=keys.dtype), torch.as_tensor(norms, dtype=keys.dtype)
    )
    a, r = torch.deg2rad(a.reshape(-1)), r.reshape(-1)  # (A,), (A,)
    q = torch.stack([r * torch.cos(a), r * torch.sin(a)], dim=-1)  # (A, 2)
    scale = 1.0 / math.sqrt(keys.shape[-1]) if scaled else 1.0
    out, w = scaled_dot_product_attention(
        q, keys, values, scale=scale, temperature=temperature
    )  # (A, d_v), (A, S)
    return w, attention_entropy(w), out


class SelectionPlot(BlittedFigure):
    """Three panels, drawn once: key space with the query, weights with an entropy gauge, and
    value space with the output point; ``update(state)`` moves the artists in place.

    ``pyplot=False`` (the default, for widgets): a free-standing Agg figure. Its static parts
    (axes, ticks, labels) are rendered once and cached; ``render_png`` restores that background
    and draws only the moving artists (blitting), so an update costs a few milliseconds.
    ``pyplot=True`` creates the figure through ``matplotlib.pyplot`` instead, for a static
    snapshot that ``plt.show()`` displays.
    """

    def __init__(
        self,
        keys=None,
        values=None,
        names=KEY_NAMES,
        colors=COLORS,
        pyplot: bool = False,
    ):
        self.keys = (KEYS_2D if keys is None else keys).detach().double()  # (S, 2)
        self.values = (VALUES_2D if values is None else values).detach().double()  # (S, 2)
        S = self.keys.shape[0]
        self.colors = [colors[i % len(colors)] for i in range(S)]
        names = list(names)[:S] if len(names) >= S else [str(i) for i in range(S)]
        super().__init__(pyplot, figsize=(10.5, 3.5), dpi=80)
        fig = self.figure
        grid = fig.add_gridspec(
            2,
            3,
            height_ratios=[6, 1],
            hspace=0.75,
            wspace=0.3,
            left=0.05,
            right=0.98,
            top=0.8 if pyplot else 0.86,
            bottom=0.1,
        )
        ax_k, ax_w, ax_v = (
            fig.add_subplot(grid[:, 0]),
            fig.add_subplot(grid[0, 1]),
            fig.add_subplot(grid[:, 2]),
        )
        ax_h = fig.add_subplot(grid[1, 1])
        moving = []  # the artists update() changes

        # key space: keys, the query arrow (a line plus a dot)
        lim = 6.2
        ax_k.set(
            xlim=(-lim, lim), ylim=(-lim, lim), aspect="equal", title="keys and query  (d_k = 2)"
        )
        ax_k.axhline(0, color="0.85", lw=0.8, zorder=0)
        ax_k.axvline(0, color="0.85", lw=0.8, zorder=0)
        ax_k.scatter(
            self.keys[:, 0].tolist(), self.keys[:, 1].tolist(), c=self.colors, s=60, zorder=3
        )
        for (x, y), name in zip(self.keys.tolist(), names):
            ax_k.annotate(name, (x, y), xytext=(4, 4), textcoords="offset points", fontsize=9)
        (self._q_line,) = ax_k.plot([0, 0], [0, 0], color="k", lw=2, zorder=4)
        (self._q_dot,) = ax_k.plot([0], [0], "k^", ms=8, zorder=5)
        moving += [self._q_line, self._q_dot]

        # weights: one bar per key; the entropy as a gauge between its bounds 0 and log S
        self._bars = list(ax_w.bar(range(S), [1.0 / S] * S, color=self.colors))
        ax_w.set(
            ylim=(0, 1.05),
            xticks=range(S),
            xticklabels=names,
            title="weights  alpha = softmax(q.k · scale / T)",
        )
        moving += list(self._bars)
        log_s = math.log(S)
        ax_h.set(xlim=(-0.05 * log_s, 1.05 * log_s), ylim=(0, 1), yticks=[])
        ax_h.set_xticks([0, log_s], ["0", f"log {S} = {log_s:.2f}"])
        ax_h.axvline(0, color="k", lw=1)
        ax_h.axvline(log_s, color="k", lw=1)
        self._h_bar = ax_h.barh([0.5], [0.0], height=0.8, color="tab:gray")[0]
        ax_h.text(
            0.5,
            1.12,
            "entropy H(alpha), nats",
            transform=ax_h.transAxes,
            ha="center",
            va="bottom",
            fontsize=9,
        )
        moving += [self._h_bar]

        # value space: values sized by their weight, the output as a star inside their hull
        pad = 0.4
        lo, hi = (
            (self.values.min(0).values - pad).tolist(),
            (self.values.max(0).values + pad).tolist(),
        )
        ax_v.set(
            xlim=(lo[0], hi[0]), ylim=(lo[1], hi[1]), aspect="equal", title="values and output"
        )
        self._v_scatter = ax_v.scatter(
            self.values[:, 0].tolist(),
            self.values[:, 1].tolist(),
            c=self.colors,
            s=[40] * S,
            alpha=0.8,
            zorder=3,
        )
        for (x, y), name in zip(self.values.tolist(), names):
            ax_v.annotate("v" + name, (x, y), xytext=(5, 5), textcoords="offset points", fontsize=9)
        (self._out_dot,) = ax_v.plot([0], [0], "k*", ms=16, zorder=5)
        ax_v.text(
            0.5,
            -0.08,
            "star: output = sum_j alpha_j v_j",
            transform=ax_v.transAxes,
            ha="center",
            va="top",
            fontsize=8,
        )
        moving += [self._v_scatter, self._out_dot]
        # the numbers: in the figure for a static snapshot; beside it (an HTML label) in the
        # widget, since re-rendering text is the slowest part of a redraw
        self._title = (
            fig.text(0.5, 0.97, "", ha="center", va="top", fontsize=10) if pyplot else None
        )
        self._S = S
        self._animate(moving)

    def update(self, state: SelectionState) -> None:
        """Move every artist to ``state`` (no new artists are created)."""
        qx, qy = float(state.query[0]), float(state.query[1])
        self._q_line.set_data([0, qx], [0, qy])
        self._q_dot.set_data([qx], [qy])
        w = state.weights.tolist()
        for bar, h in zip(self._bars, w):
            bar.set_height(h)
        self._h_bar.set_width(state.entropy)
        self._v_scatter.set_sizes([20 + 400 * x for x in w])
        self._out_dot.set_data([float(state.output[0])], [float(state.output[1])])
        if self._title is not None:
            with speaking("en"):  # a figure's text stays English (its fonts have no CJK glyphs)
                self._title.set_text(selection_caption(state))


# the widget's words, in the learner's language (``attncourse.i18n.say``; ``{...}``: filled in)
CAPTION = (
    "q = ({qx}, {qy}), |q| = {norm}  |  max alpha = {top} (key {key})  |  H = {H} nats in "
    "[0, {H_max}], e^H = {e_H} keys  |  output = ({ox}, {oy})"
)
ANGLE = "angle (deg)"
TEMPERATURE = "temperature"
SCALED = "divide by sqrt(d_k)"
SENTENCES = (CAPTION, ANGLE, TEMPERATURE, SCALED)


def selection_caption(state: SelectionState) -> str:
    """One line of numbers for a state: query, largest weight, entropy and its bounds, output."""
    qx, qy = float(state.query[0]), float(state.query[1])
    w = state.weights
    top = int(w.argmax())
    name = KEY_NAMES[top] if top < len(KEY_NAMES) else str(top)
    return say(
        CAPTION,
        qx=f"{qx:.2f}",
        qy=f"{qy:.2f}",
        norm=f"{math.hypot(qx, qy):.2f}",
        top=f"{float(w[top]):.3f}",
        key=name,
        H=f"{state.entropy:.3f}",
        H_max=f"{state.max_entropy:.3f}",
        e_H=f"{math.exp(state.entropy):.2f}",
        ox=f"{float(state.output[0]):.2f}",
        oy=f"{float(state.output[1]):.2f}",
    )


def selection_widget_update(
    plot: SelectionPlot,
    angle_deg: float,
    norm: float,
    temperature: float = 1.0,
    scaled: bool = True,
):
    """One widget update: compute the state, move the artists, render -> (state, png, caption).

    This is the whole cost of a slider move (less the transfer to the browser); the benchmark
    times exactly this function.
    """
    state = query_selection(
        angle_deg, norm, plot.keys, plot.values, temperature=temperature, scaled=scaled
    )
    plot.update(state)
    return state, plot.render_png(), selection_caption(state)


def selection_widget(keys=None, values=None, angle: float = 20.0, norm: float = 2.0):
    """The chapter-01 widget: controls for the query's angle and length, the softmax temperature
    and the 1/sqrt(d_k) scale; every change recomputes ``query_selection`` and redraws."""
    import ipywidgets as widgets

    plot = SelectionPlot(keys, values)
    style = {"description_width": "110px"}
    controls = {
        "angle_deg": widgets.FloatSlider(
            value=angle, min=-180, max=180, step=5, description=say(ANGLE), style=style
        ),
        "norm": widgets.FloatSlider(
            value=norm, min=0, max=6, step=0.1, description="|q|", style=style
        ),
        "temperature": widgets.FloatLogSlider(
            value=1.0,
            base=10,
            min=-1.3,
            max=1.3,
            step=0.05,
            description=say(TEMPERATURE),
            style=style,
        ),
        "scaled": widgets.Checkbox(value=True, description=say(SCALED)),
    }

    return figure_widget(
        plot,
        selection_widget_update,
        controls,
        rows=[["angle_deg", "norm"], ["temperature", "scaled"]],
    )


# ----------------------------------------------------------------------- the running example

SENTENCE = ("the", "cat", "sat", "on", "the", "mat", "because", "it", "was", "tired")
FEATURES = ("animal", "thing", "action", "function", "pronoun", "state")
_KIND = {
    "the": "function",
    "on": "function",
    "because": "function",
    "cat": "animal",
    "mat": "thing",
    "sat": "action",
    "was": "action",
    "it": "pronoun",
    "tired": "state",
}


def sentence_embeddings(dtype=torch.float64) -> torch.Tensor:
    """The chapter's running example: one hand-made vector per word of ``SENTENCE``, of length 2
    along the coordinate of the word's kind (``FEATURES``): (T=10, d_model=6)."""
    x = torch.zeros(len(SENTENCE), len(FEATURES), dtype=dtype)  # (T, d_model)
    for t, word in enumerate(SENTENCE):
        x[t, FEATURES.index(_KIND[word])] = 2.0
    return x


def hand_made_projections(dtype=torch.float64):
    """W_Q, W_K (d_model=6, d_k=2) and W_V (6, 6) for the running example (Def. 14.3.3).

    Key coordinate 0 says "I am an animal"; pronouns and states ask for it. Key coordinate 1
    says "I am a noun" (animals and things); actions ask for it. Function words ask for nothing.
    W_V is the identity: each word hands over its own vector.
    """
    w_q = torch.zeros(len(FEATURES), 2, dtype=dtype)  # (d_model, d_k)
    w_k = torch.zeros(len(FEATURES), 2, dtype=dtype)  # (d_model, d_k)
    animal, thing, action, pronoun, state = (
        FEATURES.index(f) for f in ("animal", "thing", "action", "pronoun", "state")
    )
    w_q[pronoun, 0] = w_q[state, 0] = 1.2  # "I am looking for an animal"
    w_k[animal, 0] = 1.2  # "I am an animal"
    w_q[action, 1] = 1.2  # "I am looking for a noun"
    w_k[animal, 1] = w_k[thing, 1] = 1.2  # "I am a noun"
    return w_q, w_k, torch.eye(len(FEATURES), dtype=dtype)


def show_weights(weights, ax=None, title=None, tokens=SENTENCE):
    """The (T, T) weights of the running example as a heat map, words on both axes, on one colour
    scale from 0 to 1 so that maps of different sections compare."""
    image = plot_attention(weights, ax=ax, x_labels=tokens, y_labels=tokens, title=title)
    image.set_clim(0.0, 1.0)
    image.axes.tick_params(axis="x", labelrotation=60)
    image.axes.set(xlabel="key (the word read)", ylabel="query (the word reading)")
    return image
