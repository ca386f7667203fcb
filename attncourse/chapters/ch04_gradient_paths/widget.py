"""The chapter-04 widget: ``gradient_curves`` (numbers), ``GradientPathPlot`` (figure, updated in
place), ``gradient_widget_update`` (numbers + redraw) and ``gradient_widget`` (sliders).
``rnn_jacobian_profile`` and ``attention_jacobian_profile`` give the Jacobian profiles without
autograd, fast enough for a slider.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import NamedTuple

import numpy as np
import torch

from ...attention import MultiHeadAttention
from ...i18n import say
from ...viz import BlittedFigure, figure_widget
from .jacobians import chapter_attention, chapter_inputs, log_slope, scaled_orthogonal


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


def rnn_jacobian_profile(
    W_hh: torch.Tensor, W_xh: torch.Tensor, x: torch.Tensor, nonlinearity: str = "tanh"
) -> torch.Tensor:
    """g(k) = ||d h_T / d x_{T-k}||_F, k = 0..T-1, from the product of Eq. (5.4.2), no autograd.

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
        h = (
            np.tanh(pre[t])
            if nonlinearity == "tanh"
            else np.maximum(pre[t], 0.0)
            if nonlinearity == "relu"
            else pre[t]
        )
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
    """g(k) = ||d o_T / d x_{T-k}||_F for the last query of a one-head ``MultiHeadAttention``
    (causal or not: the last query sees every position), in closed form, no autograd. x (T, d).
    Returns (T,).

    With q = W_Q x_T + b_Q, k_j = W_K x_j + b_K, v_j = W_V x_j + b_V, a = softmax(K q / sqrt(d)),
    o = W_O sum_j a_j v_j + b_O, u = W_K^T q / sqrt(d) and v_bar = sum_i a_i v_i:

        d o / d x_j = a_j W_O (W_V + (v_j - v_bar) u^T)
                      [+ W_O sum_i a_i (v_i - v_bar) k_i^T W_Q / sqrt(d) for j = T].

    Equal to ``distance_profile(input_jacobian(...))`` (the tests check it).
    """
    if mha.num_heads != 1:
        raise ValueError(
            f"attention_jacobian_profile needs a one-head attention, got {mha.num_heads} heads"
        )
    p = {name: t.detach().double().cpu().numpy() for name, t in mha.state_dict().items()}
    X = x.detach().double().cpu().numpy()  # (T, d)
    d = X.shape[1]

    def proj(name, inp):
        out = inp @ p[f"{name}.weight"].T
        return out + p[f"{name}.bias"] if f"{name}.bias" in p else out

    # (d,), (T, d), (T, d)
    Q, K, V = proj("q_proj", X[-1:])[0], proj("k_proj", X), proj("v_proj", X)
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
    J_last = a[-1] * (A + np.outer(B[-1], u)) + (
        W_O @ ((a[:, None] * (V - v_bar)).T @ K) @ p["q_proj.weight"] / math.sqrt(d)
    )
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


def gradient_curves(
    rho: float,
    nonlinearity: str = "tanh",
    length: int = 100,
    input_scale: float = 0.3,
    d: int = 32,
    seed: int = 0,
) -> GradientCurves:
    """The widget's numbers: gradient norm vs distance for the RNN (W_hh = rho * orthogonal,
    W_xh = I, inputs input_scale * N(0, I)), from the product of Eq. (5.4.2)
    (``rnn_jacobian_profile``), and for one self-attention layer on unit-scale inputs (last query;
    ``attention_jacobian_profile``), both exact."""
    if not 2 <= length <= WIDGET_MAX_LENGTH:
        raise ValueError(f"length must be in 2..{WIDGET_MAX_LENGTH}, got {length}")
    q, x_all = _widget_setup(d, seed, WIDGET_MAX_LENGTH)
    eye = torch.eye(d, dtype=torch.float64)
    g_rnn = rnn_jacobian_profile(rho * q, eye, x_all[:length] * input_scale, nonlinearity)  # (L,)
    g_att = attention_jacobian_profile(_widget_attention(d, seed), x_all[:length])  # (L,)
    k = torch.arange(length, dtype=torch.float64)
    law = rho**k * math.sqrt(d)  # ||W_hh^k W_xh||_F for W_hh = rho * orthogonal, W_xh = I
    return GradientCurves(
        k,
        g_rnn,
        g_att,
        law,
        rho,
        nonlinearity,
        log_slope(g_rnn),
        float(g_rnn[1] / g_rnn[-1]),
        float(g_att[1] / g_att[-1]),
    )


# the widget's words, in the learner's language (``attncourse.i18n.say``; ``{...}``: filled in)
CAPTION = (
    "{nonlinearity} RNN, rho = {rho}, length {L}  |  RNN: slope of ln g = {slope} per step "
    "(ln rho = {ln_rho}), g(1)/g({last}) = {ratio_rnn}  |  attention: g(1)/g({last}) = "
    "{ratio_attention}"
)
RHO, NONLINEARITY = "spectral radius rho", "nonlinearity"
LENGTH, INPUT_SCALE = "length T", "input scale"
SENTENCES = (CAPTION, RHO, NONLINEARITY, LENGTH, INPUT_SCALE)


def gradient_caption(c: GradientCurves) -> str:
    """One line of numbers: the setting, the RNN's slope and both end-to-end ratios."""
    L = len(c.distances)
    return say(
        CAPTION,
        nonlinearity=c.nonlinearity,
        rho=f"{c.rho:.2f}",
        L=L,
        slope=f"{c.slope:+.3f}",
        ln_rho=f"{math.log(c.rho):+.3f}",
        last=L - 1,
        ratio_rnn=f"{c.ratio_rnn:.3g}",
        ratio_attention=f"{c.ratio_attention:.3g}",
    )


class GradientPathPlot(BlittedFigure):
    """Gradient norm vs distance on a log scale: the RNN, one attention layer and the linear law
    rho^k sqrt(d). Drawn once; ``update(curves)`` only moves the three lines (``set_data``).

    ``pyplot=False`` (the widget): a free-standing Agg figure whose static parts are rendered once
    and cached (blitting), so an update costs a few milliseconds. ``pyplot=True``: a figure made by
    ``matplotlib.pyplot``, for a static snapshot shown with ``plt.show()``. Values outside the
    fixed axes (1e-20 .. 1e20) are drawn at the edge.
    """

    YLIM = (1e-20, 1e20)

    def __init__(
        self,
        max_length: int = WIDGET_MAX_LENGTH,
        pyplot: bool = False,
    ):
        super().__init__(pyplot, figsize=(7.5, 3.4), dpi=80)
        ax = self.figure.add_subplot(1, 1, 1)
        ax.set(
            yscale="log",
            xlim=(0, max_length),
            ylim=self.YLIM,
            xlabel="distance k = T - t",
            ylabel="||d out_T / d x_t||_F",
        )
        ax.set_yticks([10.0**e for e in range(-20, 21, 5)])
        ax.grid(True, which="major", color="0.9", lw=0.8)
        (self._rnn,) = ax.plot([], [], color="tab:blue", lw=2, label="RNN")
        (self._att,) = ax.plot([], [], color="tab:orange", lw=2, label="self-attention (1 layer)")
        (self._law,) = ax.plot(
            [], [], color="0.4", lw=1, ls="--", label="linear RNN law rho^k sqrt(d)"
        )
        ax.legend(loc="upper left", fontsize=8)
        self.figure.subplots_adjust(
            left=0.12, right=0.98, top=0.88 if pyplot else 0.95, bottom=0.15
        )
        self._title = ax.set_title("") if pyplot else None
        self.axes = ax
        self._animate((self._rnn, self._att, self._law))

    def update(self, curves: GradientCurves) -> None:
        lo, hi = self.YLIM
        k = curves.distances.tolist()
        for line, values in zip(self._moving, (curves.rnn, curves.attention, curves.linear_law)):
            line.set_data(k, values.clamp(lo * 0.5, hi * 2).tolist())
        if self._title is not None:
            self._title.set_text(
                f"{curves.nonlinearity} RNN at rho = {curves.rho:.2f} vs one attention layer"
            )


def gradient_widget_update(
    plot: GradientPathPlot,
    rho: float,
    nonlinearity: str = "tanh",
    length: int = 100,
    input_scale: float = 0.3,
):
    """One widget update: compute, move the lines, render -> (curves, png, caption). The benchmark
    and the tests time exactly this function."""
    curves = gradient_curves(rho, nonlinearity, length, input_scale)
    plot.update(curves)
    return curves, plot.render_png(), gradient_caption(curves)


def gradient_widget(
    rho: float = 1.0, nonlinearity: str = "tanh", length: int = 100, input_scale: float = 0.3
):
    """The chapter-04 widget: spectral radius, nonlinearity, length and input scale as controls; the
    gradient-vs-distance curves of the RNN and of attention update at once."""
    import ipywidgets as widgets

    plot = GradientPathPlot()
    style = {"description_width": "150px"}  # "spectral radius rho" in full
    controls = {
        "rho": widgets.FloatSlider(
            value=rho,
            min=0.5,
            max=1.5,
            step=0.01,
            description=say(RHO),
            style=style,
            continuous_update=True,
        ),
        "nonlinearity": widgets.ToggleButtons(
            options=["linear", "tanh", "relu"],
            value=nonlinearity,
            description=say(NONLINEARITY),
            style=style,
        ),
        "length": widgets.IntSlider(
            value=length,
            min=10,
            max=WIDGET_MAX_LENGTH,
            step=10,
            description=say(LENGTH),
            style=style,
        ),
        "input_scale": widgets.FloatLogSlider(
            value=input_scale,
            base=10,
            min=-8,
            max=0.5,
            step=0.25,
            description=say(INPUT_SCALE),
            style=style,
        ),
    }

    return figure_widget(
        plot,
        gradient_widget_update,
        controls,
        rows=[["rho", "length"], ["nonlinearity"], ["input_scale"]],
    )
