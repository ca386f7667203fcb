"""The chapter-07 widget: ``encoding_view`` (numbers), ``EncodingPlot`` (figure, updated in place),
``encoding_widget_update`` (numbers + redraw) and ``encoding_widget`` (controls).

Four panels for one encoding (sinusoidal / RoPE / ALiBi / learned), dimension and position: the
encoding as a heatmap, the similarity of position p with every q against q − p, RoPE's rotation
in one 2-D plane, and ALiBi's bias row of query p in each head.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import NamedTuple

import numpy as np
import torch

from ..._validation import require_choice
from ...i18n import say
from ...positional import RotaryEmbedding, alibi_bias, alibi_slopes, sinusoidal_encoding
from ...threads import single_thread
from ...viz import BlittedFigure, figure_widget

WIDGET_ENCODINGS = ("sinusoidal", "rope", "alibi", "learned")
WIDGET_POSITIONS = 64  # positions 0 .. 63 on every panel
ALIBI_HEADS = 8
MAX_DIM = 128


class EncodingView(NamedTuple):
    """What the chapter-07 widget shows for one setting."""

    encoding: str
    dim: int  # the encoding's dimension (a learned table keeps its own)
    position: int  # p
    plane: int  # the RoPE plane i (feature pair 2i, 2i + 1)
    heatmap: torch.Tensor  # (P, C) the encoding table (ALiBi: head 1's bias, query x key)
    offsets: torch.Tensor  # (2P − 1,) q − p for q = p − (P − 1) … p + (P − 1)
    similarity: torch.Tensor  # (2P − 1,) of p with q (NaN where q is not a position 0 … P − 1)
    spread: float  # max over offsets of the spread over p of the similarity (0: relative only)
    rope_path: torch.Tensor  # (p + 1, 2) plane i of R_m u, m = 0 … p, u a fixed unit vector
    theta: float  # RoPE's frequency of plane i, radians per position
    alibi_rows: torch.Tensor  # (H, p + 1): −m_h (p − j), j = 0 … p
    slopes: torch.Tensor  # (H,)


@lru_cache(maxsize=4)
def _rope_vector(dim: int) -> torch.Tensor:
    """A fixed random unit vector u in R^dim (the same at every call)."""
    u = torch.randn(dim, generator=torch.Generator().manual_seed(7), dtype=torch.float64)
    return u / u.norm()


@lru_cache(maxsize=1)
def default_learned_table() -> torch.Tensor:
    """An untrained learned table (16 positions, d = 32, N(0, 1)): shown when none is given."""
    return torch.randn(16, 32, generator=torch.Generator().manual_seed(3), dtype=torch.float64)


def _cosine_gram(table: torch.Tensor) -> torch.Tensor:
    unit = table / table.norm(dim=-1, keepdim=True).clamp_min(1e-12)  # (P, d)
    return unit @ unit.T  # (P, P)


def _by_offset(gram: torch.Tensor, p: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Row p of a (P, P) matrix placed on offsets q − p = −(P−1) … P−1 (NaN outside)."""
    P = WIDGET_POSITIONS
    offsets = torch.arange(-(P - 1), P)  # (2P − 1,)
    q = offsets + p
    inside = (q >= 0) & (q < gram.shape[1])
    values = torch.full((2 * P - 1,), float("nan"), dtype=torch.float64)
    values[inside] = gram[p, q[inside]]
    return offsets, values


def _spread(gram: torch.Tensor) -> float:
    """Largest spread (max − min over p) of gram[p, p + k], over the offsets k: 0 exactly when
    the similarity depends on q − p alone."""
    P = gram.shape[0]
    p = torch.arange(P)[:, None]  # (P, 1)
    q = p + torch.arange(-(P - 1), P)[None, :]  # (P, 2P − 1) key of row p at each offset
    inside = (q >= 0) & (q < P)
    values = gram[p, q.clamp(0, P - 1)]  # (P, 2P − 1)
    high = torch.where(inside, values, -torch.inf).amax(dim=0)  # (2P − 1,)
    low = torch.where(inside, values, torch.inf).amin(dim=0)
    return float((high - low).max())


@lru_cache(maxsize=256)
def _table_and_gram(encoding: str, dim: int) -> tuple[torch.Tensor, torch.Tensor, float]:
    """(heatmap (P, C), similarity matrix (P, P), its spread) of a built-in encoding."""
    P = WIDGET_POSITIONS
    if encoding == "sinusoidal":
        heatmap = sinusoidal_encoding(P, dim, dtype=torch.float64)  # (P, d)
        gram = heatmap @ heatmap.T / (dim / 2)  # (P, P) cosine: every row has norm sqrt(d/2)
    elif encoding == "rope":
        u = _rope_vector(dim).expand(P, dim)  # (P, d) the same vector at every position
        heatmap = RotaryEmbedding(dim)(u, torch.arange(P))  # (P, d) R_m u
        gram = heatmap @ heatmap.T  # (P, P) u^T R_(q-p) u (unit norm)
    else:  # alibi: head 1's bias (query x key, causal part) and e^bias
        bias = alibi_bias(ALIBI_HEADS, P, dtype=torch.float64)[0]  # (P, P) −|i − j| / 2
        heatmap = torch.where(torch.ones(P, P, dtype=torch.bool).tril(), bias, float("nan"))
        gram = bias.exp()  # (P, P) the factor on key q's weight
    return heatmap, gram, _spread(gram)


def encoding_view(
    encoding: str,
    dim: int = 64,
    position: int = 10,
    plane: int = 0,
    learned_table: torch.Tensor | None = None,
) -> EncodingView:
    """The widget's numbers (all float64). ``learned_table`` (P', d') is the table shown for
    "learned" (default: ``default_learned_table()``); it has no rows beyond P' − 1."""
    require_choice("encoding", encoding, WIDGET_ENCODINGS)
    P = WIDGET_POSITIONS
    if not (isinstance(dim, int) and 2 <= dim <= MAX_DIM and dim % 2 == 0):
        raise ValueError(f"dim must be an even int in 2..{MAX_DIM}, got {dim!r}")
    if not (isinstance(position, int) and 0 <= position < P):
        raise ValueError(f"position must be an int in 0..{P - 1}, got {position!r}")
    with single_thread():  # tiny tensors: a second thread only adds synchronisation
        if encoding == "learned":
            table = default_learned_table() if learned_table is None else learned_table
            table = table.detach().to(torch.float64)[:P]  # (P', d')
            heatmap = torch.full((P, table.shape[1]), float("nan"), dtype=torch.float64)
            heatmap[: table.shape[0]] = table
            gram = _cosine_gram(table)  # (P', P')
            spread = _spread(gram)
            dim = table.shape[1]
        else:
            heatmap, gram, spread = _table_and_gram(encoding, dim)
        plane = min(max(int(plane), 0), dim // 2 - 1)
        if position >= gram.shape[0]:  # a learned table has no row here
            offsets = torch.arange(-(P - 1), P)
            similarity = torch.full((2 * P - 1,), float("nan"), dtype=torch.float64)
        else:
            offsets, similarity = _by_offset(gram, position)
        theta = _rope_theta(dim, plane)
        u = _rope_vector(dim)
        start = math.atan2(float(u[2 * plane + 1]), float(u[2 * plane]))
        angles = start + theta * torch.arange(position + 1, dtype=torch.float64)  # (p + 1,)
        rope_path = torch.stack((torch.cos(angles), torch.sin(angles)), dim=-1)  # (p + 1, 2)
        slopes = alibi_slopes(ALIBI_HEADS, dtype=torch.float64)  # (H,)
        j = torch.arange(position + 1, dtype=torch.float64)
        alibi_rows = -slopes[:, None] * (position - j)  # (H, p + 1)
    return EncodingView(
        encoding,
        dim,
        position,
        plane,
        heatmap,
        offsets,
        similarity,
        spread,
        rope_path,
        theta,
        alibi_rows,
        slopes,
    )


def _rope_theta(dim: int, plane: int) -> float:
    return 10000.0 ** (-2 * plane / dim)


SIMILARITY_LABELS = {
    "sinusoidal": "PE(p)·PE(q) / (d/2)",
    "rope": "(R_p u)·(R_q u) = u^T R_(q−p) u",
    "alibi": "e^(bias): factor on key q's weight (head 1)",
    "learned": "cosine(E[p], E[q])",
}


# the heat map's title and the similarity's axis, for each encoding (the figure's text is English,
# as in every chapter's figures)
HEATMAP_TITLES = {
    "sinusoidal": "the encoding: row p is PE(p), one column per feature",
    "rope": "RoPE: row p is R_p u, one column per feature",
    "alibi": "ALiBi, head 1: bias of query p (row) on key q (column)",
    "learned": "the learned table: row p is E[p], one column per feature",
}
# the heat map's first and last column: features, except for ALiBi's keys
HEATMAP_COLUMNS = {
    "alibi": ("key 0", f"key {WIDGET_POSITIONS - 1}"),
    **dict.fromkeys(("sinusoidal", "rope", "learned"), ("first feature", "last")),
}
SIMILARITY_AXES = {
    "sinusoidal": "PE(p)·PE(q) / (d/2)",
    "rope": "u^T R_(q−p) u",
    "alibi": "e^(bias), head 1",
    "learned": "cosine(E[p], E[q])",
}


# the widget's words, in the learner's language (``attncourse.i18n.say``; ``{...}``: filled in)
CAPTION = (
    "{what}, position p = {position}  |  similarity: {similarity}; {relative}  |  RoPE plane "
    "{plane}: θ = {theta} rad/position, angle p·θ = {angle} rad  |  ALiBi head 1 (m = 1/2): key "
    "0 gets e^({far}) = {factor} of the query's own weight"
)
WHAT = {
    "sinusoidal": "sinusoidal, d = {dim}",
    "rope": "RoPE on a fixed unit vector u, d = {dim}",
    "alibi": "ALiBi, {heads} heads, slopes 1/2 … 1/256",
    "learned": "learned table, {rows} positions, d = {dim}",
}
RELATIVE = "similarity depends on q − p only"
CHANGES = "similarity changes with p by up to {spread}"
NO_ROW = "no row for position {position}: a learned table cannot extrapolate"
ENCODING, DIMENSION, POSITION, PLANE = "encoding", "dimension d", "position p", "RoPE plane i"
OPTIONS = {"sinusoidal": "sinusoidal", "learned": "learned"}  # RoPE and ALiBi keep their names
SENTENCES = (
    CAPTION,
    *WHAT.values(),
    SIMILARITY_LABELS["alibi"],
    RELATIVE,
    CHANGES,
    NO_ROW,
    ENCODING,
    DIMENSION,
    POSITION,
    PLANE,
    *OPTIONS.values(),
)


def encoding_caption(v: EncodingView) -> str:
    """One line of numbers for the setting."""
    what = say(
        WHAT[v.encoding],
        dim=v.dim,
        heads=ALIBI_HEADS,
        rows=int(torch.isfinite(v.heatmap[:, 0]).sum()),
    )
    relative = say(RELATIVE) if v.spread < 1e-9 else say(CHANGES, spread=f"{v.spread:.3f}")
    if v.encoding == "learned" and not bool(torch.isfinite(v.similarity).any()):
        relative = say(NO_ROW, position=v.position)
    far = v.alibi_rows[0, 0]
    return say(
        CAPTION,
        what=what,
        position=v.position,
        similarity=say(SIMILARITY_LABELS[v.encoding]),
        relative=relative,
        plane=v.plane,
        theta=f"{v.theta:.3g}",
        angle=f"{v.position * v.theta:.3g}",
        far=f"{float(far):.1f}",
        factor=f"{math.exp(float(far)):.2g}",
    )


class EncodingPlot(BlittedFigure):
    """Four panels, drawn once per encoding (the heat map's title and the similarity's axis label
    name what the encoding shows: ``HEATMAP_TITLES``, ``HEATMAP_COLUMNS``, ``SIMILARITY_AXES``);
    ``update(view)`` moves only the image and the lines."""

    def __init__(self, pyplot: bool = False):
        super().__init__(pyplot, figsize=(9, 5.4), dpi=72)
        P = WIDGET_POSITIONS
        fig = self.figure
        ax_heat, ax_sim = fig.add_subplot(2, 2, 1), fig.add_subplot(2, 2, 2)
        ax_rope, ax_alibi = fig.add_subplot(2, 2, 3), fig.add_subplot(2, 2, 4)
        self._image = ax_heat.imshow(
            np.zeros((P, 2)),
            aspect="auto",
            cmap="RdBu_r",
            vmin=-1,
            vmax=1,
            extent=(0, 1, P - 0.5, -0.5),
            interpolation="nearest",
        )
        ax_heat.set(ylabel="position p")
        ax_heat.set_xticks([0, 1], HEATMAP_COLUMNS["sinusoidal"])
        self._heat_title = ax_heat.set_title(HEATMAP_TITLES["sinusoidal"], fontsize=9)
        (self._row,) = ax_heat.plot([0, 1], [0, 0], color="k", lw=1)
        ax_sim.set(xlim=(-(P - 1), P - 1), ylim=(-1.05, 1.05), xlabel="offset q − p")
        ax_sim.axhline(0, color="0.8", lw=0.8)
        ax_sim.axvline(0, color="0.8", lw=0.8)
        ax_sim.set_title("similarity of position p with q", fontsize=9)
        self._sim_axis = ax_sim.set_ylabel(SIMILARITY_AXES["sinusoidal"], fontsize=8)
        (self._sim,) = ax_sim.plot([], [], color="tab:blue", lw=1.5)
        circle = np.linspace(0, 2 * np.pi, 200)
        ax_rope.plot(np.cos(circle), np.sin(circle), color="0.85", lw=1)
        ax_rope.set(xlim=(-1.3, 1.3), ylim=(-1.3, 1.3), aspect="equal")
        ax_rope.set(xlabel="feature 2i", ylabel="feature 2i + 1")
        ax_rope.set_title("RoPE, plane i: R_m u for m = 0 … p", fontsize=9)
        (self._trail,) = ax_rope.plot([], [], ".", color="tab:orange", ms=3, alpha=0.6)
        (self._arrow,) = ax_rope.plot([], [], "-", color="tab:red", lw=2)
        (self._start,) = ax_rope.plot([], [], "s", color="tab:green", ms=6)
        ax_alibi.set(xlim=(0, P - 1), ylim=(-(P - 1) / 2 - 1, 1), xlabel="key position j ≤ p")
        ax_alibi.set_title("ALiBi bias row of query p: −m_h (p − j)", fontsize=9)
        self._alibi = [
            ax_alibi.plot([], [], color=_head_color(h), lw=1.2, label=f"m = 1/{2 ** (h + 1)}")[0]
            for h in range(ALIBI_HEADS)
        ]
        # lower right: there every row is near 0 (j close to p), or empty (j beyond p)
        ax_alibi.legend(fontsize=6, ncol=2, loc="lower right")
        (self._query,) = ax_alibi.plot([], [], "--", color="k", lw=0.8)
        fig.subplots_adjust(left=0.07, right=0.98, top=0.95, bottom=0.08, hspace=0.35, wspace=0.2)
        self.axes = (ax_heat, ax_sim, ax_rope, ax_alibi)
        self._animate(
            (self._image, self._row, self._sim, self._trail, self._arrow, self._start)
            + tuple(self._alibi)
            + (self._query,)
        )
        # the static part of each encoding, drawn at its first update (about 90 ms) and kept:
        # redrawing the two texts at every update would double its time
        self._shown, self._backgrounds = "sinusoidal", {}

    def update(self, v: EncodingView) -> None:
        if v.encoding != self._shown:
            self._backgrounds[self._shown] = self._background
            self._shown = v.encoding
            self._heat_title.set_text(HEATMAP_TITLES[v.encoding])
            self.axes[0].set_xticks([0, 1], HEATMAP_COLUMNS[v.encoding])
            self._sim_axis.set_text(SIMILARITY_AXES[v.encoding])
            self._background = self._backgrounds.get(v.encoding)  # None: drawn anew
        values = v.heatmap.numpy()
        finite = np.isfinite(values)
        scale = float(np.abs(values[finite]).max()) if finite.any() else 1.0
        self._image.set_data(values)
        self._image.set_clim(-scale, scale)
        self._row.set_data([0, 1], [v.position, v.position])
        self._sim.set_data(v.offsets.numpy(), v.similarity.numpy())
        path = v.rope_path.numpy()
        self._trail.set_data(path[:, 0], path[:, 1])
        self._arrow.set_data([0, path[-1, 0]], [0, path[-1, 1]])
        self._start.set_data([path[0, 0]], [path[0, 1]])
        j = np.arange(v.position + 1)
        for line, row in zip(self._alibi, v.alibi_rows.numpy()):
            line.set_data(j, row)
        self._query.set_data([v.position, v.position], [-(WIDGET_POSITIONS - 1) / 2 - 1, 1])


def _head_color(head: int):
    import matplotlib

    return matplotlib.colormaps["viridis"](head / (ALIBI_HEADS - 1))


def encoding_widget_update(
    plot: EncodingPlot,
    encoding: str,
    dim: int = 64,
    position: int = 10,
    plane: int = 0,
    learned_table: torch.Tensor | None = None,
):
    """One widget update: compute, redraw, render -> (view, png, caption). The benchmark and the
    tests time exactly this function."""
    view = encoding_view(encoding, dim, position, plane, learned_table)
    plot.update(view)
    return view, plot.render_png(), encoding_caption(view)


def encoding_widget(
    encoding: str = "sinusoidal",
    dim: int = 64,
    position: int = 10,
    plane: int = 0,
    learned_table: torch.Tensor | None = None,
):
    """The chapter-07 widget: encoding, dimension, position and RoPE plane as controls."""
    import ipywidgets as widgets

    plot = EncodingPlot()
    style = {"description_width": "90px"}
    controls = {
        "encoding": widgets.ToggleButtons(
            options=[(say(OPTIONS.get(e, e)), e) for e in WIDGET_ENCODINGS],
            value=encoding,
            description=say(ENCODING),
            style=style,
        ),
        "dim": widgets.IntSlider(
            value=dim, min=2, max=MAX_DIM, step=2, description=say(DIMENSION), style=style
        ),
        "position": widgets.IntSlider(
            value=position,
            min=0,
            max=WIDGET_POSITIONS - 1,
            description=say(POSITION),
            style=style,
        ),
        "plane": widgets.IntSlider(
            value=min(plane, dim // 2 - 1),
            min=0,
            max=dim // 2 - 1,
            description=say(PLANE),
            style=style,
        ),
    }

    def planes_of(change):  # d has d/2 planes: the slider stops at the last
        controls["plane"].max = change["new"] // 2 - 1

    controls["dim"].observe(planes_of, names="value")  # before the redraw, which comes next

    def update(plot, **values):
        return encoding_widget_update(plot, learned_table=learned_table, **values)

    return figure_widget(
        plot, update, controls, rows=[["encoding"], ["dim", "position"], ["plane"]]
    )
