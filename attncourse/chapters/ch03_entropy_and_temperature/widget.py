"""The chapter-03 widget: ``entropy_state`` (the numbers), ``EntropyPlot`` (a figure updated in
place), ``entropy_widget_update`` (numbers + redraw, what a slider move costs) and
``entropy_widget`` (the sliders).
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import torch

from ...attention import softmax
from ...i18n import say, speaking
from ...metrics import attention_entropy
from ...viz import BlittedFigure, figure_widget
from .temperature import jacobian_frobenius, score_range

PATTERNS = ("random q·k", "one key = q", "two keys = q (tie)")
T_GRID = torch.logspace(-2, 2, 81, dtype=torch.float64)  # temperatures of the curves, 0.01 … 100


class EntropyState(NamedTuple):
    """What the chapter-03 widget shows for one setting of its controls."""

    scores: torch.Tensor  # (n,) s = q·k_j (/ √d_k if scaled), before the temperature
    weights: torch.Tensor  # (n,) α = softmax(s / T)                     Eq. (14.3.20)
    temperature: float
    entropy: float  # H(α) in nats                                       Eq. (14.3.17)
    lower_bound: float  # log n − (Δs/T)²/8, Hoeffding (the corrected Thm. 14.3.5)
    printed_bound: float  # the same expression, which the source prints as an upper bound
    max_entropy: float  # log n (Lemma 14.3.11)
    jacobian_frobenius: float  # ‖diag(α) − ααᵀ‖_F
    temperatures: torch.Tensor  # (K,) T_GRID
    entropy_curve: torch.Tensor  # (K,) H at each temperature
    bound_curve: torch.Tensor  # (K,) max(0, log n − (Δs/T)²/8)
    jacobian_curve: torch.Tensor  # (K,) ‖J‖_F at each temperature


MAX_N, MAX_D_K = 128, 1024


@functools.lru_cache(maxsize=8)
def _widget_vectors(seed: int):
    """q (MAX_D_K,), keys (MAX_N, MAX_D_K): N(0, 1) entries from ``seed``; drawn once per seed."""
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(MAX_D_K, generator=g, dtype=torch.float64)  # (D,)
    keys = torch.randn(MAX_N, MAX_D_K, generator=g, dtype=torch.float64)  # (N, D)
    return q, keys


def widget_scores(
    pattern: str, d_k: int, n: int, scaled: bool = True, seed: int = 0
) -> torch.Tensor:
    """One query's scores over n keys: q, k_j ~ N(0, I_{d_k}) (seeded), s_j = q·k_j (/ √d_k): (n,).

    pattern "one key = q" sets k_0 = q (so s_0 = ‖q‖² ≈ d_k); "two keys = q (tie)" sets
    k_0 = k_1 = q. n ≤ 128 and d_k ≤ 1024; for one seed, the vectors of a smaller d_k or n are the
    leading coordinates and keys of the larger ones, so moving a slider changes only what it names.
    """
    if pattern not in PATTERNS:
        raise ValueError(f"pattern must be one of {PATTERNS}, got {pattern!r}")
    if not (2 <= n <= MAX_N and 1 <= d_k <= MAX_D_K):
        raise ValueError(
            f"need 2 <= n <= {MAX_N} keys and 1 <= d_k <= {MAX_D_K}, got n={n}, d_k={d_k}"
        )
    q_all, keys_all = _widget_vectors(int(seed))
    q = q_all[:d_k]  # (d_k,)
    keys = keys_all[:n, :d_k].clone()  # (n, d_k)
    if pattern != PATTERNS[0]:
        keys[0] = q
    if pattern == PATTERNS[2]:
        keys[1] = q
    s = keys @ q  # (n,)
    return s / math.sqrt(d_k) if scaled else s


def entropy_state(
    pattern: str = PATTERNS[0],
    temperature: float = 1.0,
    d_k: int = 16,
    n: int = 16,
    scaled: bool = True,
    seed: int = 0,
) -> EntropyState:
    """Everything the widget shows: the weights at temperature T, their entropy with its bounds, the
    Jacobian's norms, and the entropy, bound and Jacobian curves over ``T_GRID``."""
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    s = widget_scores(pattern, d_k, n, scaled, seed)  # (n,)
    temps = torch.cat([T_GRID, torch.tensor([float(temperature)], dtype=torch.float64)])  # (K + 1,)
    # one softmax for the curves and the current T
    w = softmax(s[None, :] / temps[:, None])  # (K + 1, n)
    h = attention_entropy(w)  # (K + 1,)
    jac = jacobian_frobenius(w)  # (K + 1,)
    log_n = math.log(n)
    spread = float(score_range(s))
    bound = log_n - (spread / temperature) ** 2 / 8
    return EntropyState(
        scores=s,
        weights=w[-1],
        temperature=float(temperature),
        entropy=float(h[-1]),
        lower_bound=bound,
        printed_bound=bound,
        max_entropy=log_n,
        jacobian_frobenius=float(jac[-1]),
        temperatures=T_GRID,
        entropy_curve=h[:-1],
        bound_curve=(log_n - (spread / T_GRID) ** 2 / 8).clamp_min(0),
        jacobian_curve=jac[:-1],
    )


# the widget's words, in the learner's language (``attncourse.i18n.say``; ``{...}``: filled in)
CAPTION = (
    "T = {T}  |  max α = {top}  |  H = {H} nats;  Hoeffding lower bound {lower} ≤ H ≤ "
    "log n = {log_n}  |  source's 'H ≤ log n − (Δs)²/8' = {printed}: {verdict}  |  "
    "‖J‖_F = {J}"
)
HOLDS = "holds here"
VIOLATED = "VIOLATED by {excess}"
SCORES, TEMPERATURE, N_KEYS = "scores", "temperature", "n keys"
SCALED, SEED = "divide by √d_k", "score seed"
SENTENCES = (CAPTION, HOLDS, VIOLATED, SCORES, TEMPERATURE, N_KEYS, SCALED, SEED, *PATTERNS)


def entropy_caption(state: EntropyState) -> str:
    """One line of numbers: entropy and its bounds, the printed bound's verdict, ‖J‖_F."""
    excess = state.entropy - state.printed_bound  # > 0 for every non-constant score vector
    verdict = say(HOLDS) if excess <= 0 else say(VIOLATED, excess=f"{excess:.2g}")
    return say(
        CAPTION,
        T=f"{state.temperature:.3g}",
        top=f"{float(state.weights.max()):.3f}",
        H=f"{state.entropy:.3f}",
        lower=f"{max(state.lower_bound, 0.0):.3f}",
        log_n=f"{state.max_entropy:.3f}",
        printed=f"{state.printed_bound:.3f}",
        verdict=verdict,
        J=f"{state.jacobian_frobenius:.3f}",
    )


class EntropyPlot(BlittedFigure):
    """Three panels, drawn once: the weights α over the keys; entropy against temperature with its
    bounds; the Jacobian's Frobenius norm against temperature. ``update(state)`` moves the artists.

    ``pyplot=False`` (for widgets): a free-standing Agg figure whose static parts are cached; only
    the moving artists are redrawn (blitting); no axis limit depends on the state (keys are drawn on
    [0, 1], each 1/n wide), so the background never needs re-rendering.
    ``pyplot=True``: a pyplot figure for ``plt.show()``.
    """

    def __init__(self, pyplot: bool = False):
        super().__init__(pyplot, figsize=(11.0, 3.3), dpi=80)
        fig = self.figure
        ax_w, ax_h, ax_j = fig.subplots(
            1,
            3,
            gridspec_kw={
                "wspace": 0.32,
                "left": 0.05,
                "right": 0.98,
                "top": 0.8 if pyplot else 0.88,
                "bottom": 0.16,
            },
        )
        self.axes = (ax_w, ax_h, ax_j)
        # weights: a filled step plot over the keys and the uniform level 1/n
        # (key j spans [j/n, (j+1)/n], so the axes do not change with n)
        self._stairs = ax_w.stairs(
            [0.5, 0.5], [0.0, 0.5, 1.0], fill=True, color="tab:blue", alpha=0.8
        )
        (self._uniform,) = ax_w.plot([0, 1], [0.5, 0.5], "k--", lw=1, label="1/n (uniform)")
        ax_w.set(
            xlim=(0, 1),
            ylim=(0, 1.03),
            xticks=[],
            xlabel="keys j = 0 … n − 1",
            ylabel="weight α_j",
            title="α = softmax(s / T)",
        )
        ax_w.legend(fontsize=7, loc="upper right")
        # entropy against temperature
        T = T_GRID.tolist()
        (self._h_curve,) = ax_h.plot(
            T, [0] * len(T), color="tab:blue", lw=2, label="H(α) at each T"
        )
        (self._lb_curve,) = ax_h.plot(
            T,
            [0] * len(T),
            color="tab:green",
            lw=1.5,
            label="log n − (Δs/T)²/8: a lower bound\n(the source prints it as an upper one)",
        )
        (self._logn,) = ax_h.plot([T[0], T[-1]], [1, 1], "k--", lw=1, label="log n")
        (self._h_dot,) = ax_h.plot([1], [0], "o", color="tab:red", ms=8)
        ax_h.set(
            xscale="log",
            xlim=(T[0], T[-1]),
            ylim=(0, 1.04 * math.log(128)),
            xlabel="temperature T",
            ylabel="entropy (nats)",
            title="entropy and its bounds",
        )
        ax_h.legend(fontsize=7, loc="upper left")
        # the Jacobian's norm against temperature
        (self._j_curve,) = ax_j.plot(T, [0] * len(T), color="tab:purple", lw=2)
        (self._j_dot,) = ax_j.plot([1], [0], "o", color="tab:red", ms=8)
        ax_j.set(
            xscale="log",
            xlim=(T[0], T[-1]),
            ylim=(0, 0.55),
            xlabel="temperature T",
            ylabel="‖diag(α) − ααᵀ‖_F",
            title="softmax Jacobian (gradient size)",
        )
        self._animate(
            [
                self._stairs,
                self._uniform,
                self._h_curve,
                self._lb_curve,
                self._logn,
                self._h_dot,
                self._j_curve,
                self._j_dot,
            ]
        )
        self._title = fig.text(0.5, 0.97, "", ha="center", va="top", fontsize=8) if pyplot else None

    def update(self, state: EntropyState) -> None:
        """Move every artist to ``state`` (no new artists are created)."""
        n = state.weights.shape[0]
        self._stairs.set_data(
            state.weights.numpy(), torch.linspace(0, 1, n + 1, dtype=torch.float64).numpy()
        )
        self._uniform.set_ydata([1 / n, 1 / n])
        self._h_curve.set_ydata(state.entropy_curve.numpy())
        self._lb_curve.set_ydata(state.bound_curve.numpy())
        self._logn.set_ydata([state.max_entropy, state.max_entropy])
        self._h_dot.set_data([state.temperature], [state.entropy])
        self._j_curve.set_ydata(state.jacobian_curve.numpy())
        self._j_dot.set_data([state.temperature], [state.jacobian_frobenius])
        if self._title is not None:
            with speaking("en"):  # a figure's text stays English (its fonts have no CJK glyphs)
                self._title.set_text(entropy_caption(state))


def entropy_widget_update(
    plot: EntropyPlot,
    pattern: str = PATTERNS[0],
    temperature: float = 1.0,
    d_k: int = 16,
    n: int = 16,
    scaled: bool = True,
    seed: int = 0,
):
    """One widget update: compute the state, move the artists, render -> (state, png, caption).

    This is the whole cost of a slider move (less the transfer to the browser).
    """
    state = entropy_state(pattern, temperature, d_k, n, scaled, seed)
    plot.update(state)
    return state, plot.render_png(), entropy_caption(state)


def entropy_widget(
    pattern: str = PATTERNS[0], temperature: float = 1.0, d_k: int = 16, n: int = 16
):
    """The chapter-03 widget: controls for the scores (pattern and seed), the temperature, d_k, n
    and the 1/√d_k scale; every change recomputes ``entropy_state`` and redraws ``EntropyPlot``."""
    import ipywidgets as widgets

    plot = EntropyPlot()
    style = {"description_width": "90px"}
    controls = {
        "pattern": widgets.Dropdown(
            options=[(say(p), p) for p in PATTERNS],
            value=pattern,
            description=say(SCORES),
            style=style,
        ),
        "temperature": widgets.FloatLogSlider(
            value=temperature,
            base=10,
            min=-2,
            max=2,
            step=0.05,
            description=say(TEMPERATURE),
            style=style,
        ),
        "d_k": widgets.SelectionSlider(
            options=[2**i for i in range(11)], value=d_k, description="d_k", style=style
        ),
        "n": widgets.SelectionSlider(
            options=[2, 3, 4, 8, 16, 32, 64, 128], value=n, description=say(N_KEYS), style=style
        ),
        "scaled": widgets.Checkbox(value=True, description=say(SCALED)),
        "seed": widgets.IntSlider(value=0, min=0, max=20, description=say(SEED), style=style),
    }

    return figure_widget(
        plot,
        entropy_widget_update,
        controls,
        rows=[["pattern", "temperature", "scaled"], ["d_k", "n", "seed"]],
        font_size="11px",
    )
