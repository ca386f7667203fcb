"""Entropy and temperature of softmax attention: source 000 §14.3.3 (Def. 14.3.7–14.3.9,
Lemma 14.3.9–14.3.12, Thm. 14.3.5–14.3.6, Application 14.3.2, Eq. 14.3.14–14.3.20) and source 001
Eq. (5.4.6).

* the softmax Jacobian diag(α) − ααᵀ and its norms (saturation);
* entropy as a function of temperature, and its derivative dH/dT = Var_α(s) / T³ (Lemma 14.3.12);
* the entropy bound of Thm. 14.3.5 stated correctly: H(α) ≥ log n − (Δs)²/8 (Hoeffding's lemma);
* the Gibbs variational principle behind Lemma 14.3.10;
* the cosine temperature schedule of Application 14.3.2;
* the statistics of q·k for random unit-variance q, k (Vaswani et al. 2017, footnote 4);
* the chapter-03 widget: ``entropy_state`` (the numbers), ``EntropyPlot`` (a figure updated in
  place), ``entropy_widget_update`` (numbers + redraw, what a slider move costs) and
  ``entropy_widget`` (the sliders).

Every softmax here is the package's own ``attncourse.attention.softmax``.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import torch

from .attention import softmax
from .metrics import attention_entropy
from .viz import BlittedFigure, figure_widget

# ------------------------------------------------------------------------------ the Jacobian


def softmax_jacobian(weights: torch.Tensor) -> torch.Tensor:
    """J = ∂α/∂s = diag(α) − α αᵀ of α = softmax(s), from the weights alone: (..., n) -> (..., n, n).

    J_ij = α_i (δ_ij − α_j). With a temperature, ∂softmax(s/T)/∂s = J / T.
    """
    return torch.diag_embed(weights) - weights.unsqueeze(-1) * weights.unsqueeze(-2)  # (..., n, n)


def jacobian_frobenius(weights: torch.Tensor) -> torch.Tensor:
    """‖diag(α) − ααᵀ‖_F without forming the matrix: sqrt(Σα² − 2Σα³ + (Σα²)²): (..., n) -> (...)."""
    p2 = (weights**2).sum(-1)  # (...)
    p3 = (weights**3).sum(-1)  # (...)
    return (p2 - 2 * p3 + p2**2).clamp_min(0).sqrt()  # (...)


def jacobian_spectral(weights: torch.Tensor) -> torch.Tensor:
    """‖diag(α) − ααᵀ‖₂, its largest eigenvalue (J is symmetric positive semi-definite): (...).

    Always ≤ 1/2 (Gershgorin: row i sums to 2α_i(1 − α_i) ≤ 1/2); = 1/2 for a two-way tie.
    """
    return torch.linalg.eigvalsh(softmax_jacobian(weights))[..., -1]  # (...)


# ----------------------------------------------------------------------- entropy and temperature


def entropy_of_scores(scores: torch.Tensor, temperature=1.0) -> torch.Tensor:
    """H(softmax(s / T)) in nats, computed stably as logsumexp(z) − Σ α z with z = s / T: (..., n) -> (...).

    ``temperature`` may be a float or a tensor broadcastable to scores[..., :1].
    """
    z = scores / temperature  # (..., n)
    z = z - z.amax(-1, keepdim=True)  # (..., n), max 0
    alpha = softmax(z)  # (..., n)
    log_total = torch.log(torch.exp(z).sum(-1))  # (...) logsumexp of the shifted scores
    return (log_total - (alpha * z).sum(-1)).clamp_min(0)  # (...)


def entropy_curve(scores: torch.Tensor, temperatures) -> torch.Tensor:
    """H(softmax(s / T)) for each T: scores (..., n), temperatures (K,) -> (..., K)."""
    t = torch.as_tensor(temperatures, dtype=scores.dtype)  # (K,)
    return entropy_of_scores(scores.unsqueeze(-2), t[:, None])  # (..., K)


def entropy_temperature_derivative(scores: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """dH/dT of α = softmax(s / T): Var_α(s) / T³ ≥ 0 (Lemma 14.3.12 made exact): (..., n) -> (...).

    Zero only when all scores are equal, so H(T) is strictly increasing otherwise.
    """
    alpha = softmax(scores, temperature=temperature)  # (..., n)
    mean = (alpha * scores).sum(-1, keepdim=True)  # (..., 1)
    return (alpha * (scores - mean) ** 2).sum(-1) / temperature**3  # (...)


def zero_temperature_entropy(scores: torch.Tensor, tol: float = 0.0) -> torch.Tensor:
    """lim_{T→0} H(softmax(s / T)) = log m, m = the number of scores equal to the maximum: (...)."""
    ties = (scores >= scores.amax(-1, keepdim=True) - tol).sum(-1)  # (...)
    return torch.log(ties.to(scores.dtype))  # (...)


# -------------------------------------------------------------------------- the entropy bound


def score_range(scores: torch.Tensor) -> torch.Tensor:
    """Δs = max_i s_i − min_i s_i: (..., n) -> (...)."""
    return scores.amax(-1) - scores.amin(-1)  # (...)


def score_range_from_weights(weights: torch.Tensor) -> torch.Tensor:
    """Δs recovered from softmax weights, log(max α / min α), since s_i − s_j = log α_i − log α_j."""
    return torch.log(weights.amax(-1)) - torch.log(weights.amin(-1))  # (...)


def hoeffding_entropy_bound(scores: torch.Tensor) -> torch.Tensor:
    """log n − (Δs)²/8: a **lower** bound on H(softmax(s)) (the corrected Thm. 14.3.5): (...).

    Proof: log n − H(α) = KL(α ‖ uniform) = E_α[s] − log E_u[e^s], and Hoeffding's lemma
    (Var ≤ (Δs)²/4 for any distribution on an interval of length Δs) gives KL ≤ (Δs)²/8.
    Source Eq. (14.3.18) prints the same expression as an *upper* bound, which is false.
    """
    n = scores.shape[-1]
    return math.log(n) - score_range(scores) ** 2 / 8  # (...)


def kl_to_uniform(weights: torch.Tensor) -> torch.Tensor:
    """KL(α ‖ uniform) = log n − H(α) ≥ 0 in nats: (..., n) -> (...)."""
    return math.log(weights.shape[-1]) - attention_entropy(weights)  # (...)


# ------------------------------------------------------------------------------- Gibbs (14.3.16)


def gibbs_objective(weights: torch.Tensor, scores: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """F(α) = Σ α_i s_i + T·H(α), i.e. −(free energy) with energies E_i = −s_i: (...).

    The Gibbs variational principle: over all distributions α, F is maximised exactly by
    α = softmax(s / T) (Eq. 14.3.16), and its maximum is T·logsumexp(s / T).
    """
    return (weights * scores).sum(-1) + temperature * attention_entropy(weights)  # (...)


def log_partition(scores: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """T·log Σ_j exp(s_j / T), computed stably: (..., n) -> (...)."""
    z = scores / temperature  # (..., n)
    top = z.amax(-1, keepdim=True)  # (..., 1)
    return temperature * (top.squeeze(-1) + torch.log(torch.exp(z - top).sum(-1)))  # (...)


# ----------------------------------------------------------------------- schedules (App. 14.3.2)


def cosine_temperature(step, total_steps: int, t_start: float, t_min: float):
    """T(t) = T_min + (T_0 − T_min)(1 + cos(π t / N)) / 2 for t = 0 … N   (Application 14.3.2).

    step: an int, float or tensor of steps; T(0) = T_0, T(N) = T_min, monotone in between and
    point-symmetric about t = N/2. Steps outside [0, N] are clamped (the schedule holds T_min).
    """
    if total_steps < 1:
        raise ValueError(f"total_steps must be >= 1, got {total_steps}")
    if isinstance(step, torch.Tensor):
        frac = step.to(torch.float64).clamp(0, total_steps) / total_steps
        return t_min + (t_start - t_min) * (1 + torch.cos(math.pi * frac)) / 2
    frac = min(max(float(step), 0.0), total_steps) / total_steps
    return t_min + (t_start - t_min) * (1 + math.cos(math.pi * frac)) / 2


def source_cosine_schedule(t_start: float, t_min: float, total_steps: int) -> list[float]:
    """The temperatures the source's pseudocode yields, literally: ``for t = 1 to T`` with the loop
    bound T also standing for the temperature. Its first value is T(1) < T_0: T_0 is never used."""
    return [cosine_temperature(t, total_steps, t_start, t_min) for t in range(1, total_steps + 1)]


# ------------------------------------------------------------- q·k statistics (Vaswani, fn. 4)


def dot_product_statistics(d_k: int, n_keys: int = 64, n_queries: int = 200, n_pairs: int = 4000,
                           generator: torch.Generator | None = None) -> dict:
    """var(q·k) / d_k for unit-variance q, k, and the softmax over ``n_keys`` keys with and without
    the 1/√d_k scale: mean largest weight, mean entropy (nats) and mean ‖J‖_F of the Jacobian."""
    a, b = torch.randn(2, n_pairs, d_k, generator=generator, dtype=torch.float64)
    q = torch.randn(n_queries, d_k, generator=generator, dtype=torch.float64)
    k = torch.randn(n_keys, d_k, generator=generator, dtype=torch.float64)
    raw = q @ k.T  # (n_queries, n_keys)
    out = {"var_ratio": float((a * b).sum(-1).var() / d_k)}
    for name, s in (("unscaled", raw), ("scaled", raw / math.sqrt(d_k))):
        w = softmax(s)  # (n_queries, n_keys)
        out[name] = {"max_weight": float(w.amax(-1).mean()), "entropy": float(attention_entropy(w).mean()),
                     "jacobian": float(jacobian_frobenius(w).mean())}
    return out


# --------------------------------------------------------------------------------- the widget

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
    """q (MAX_D_K,) and keys (MAX_N, MAX_D_K), N(0, 1) entries from ``seed``; drawn once per seed."""
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(MAX_D_K, generator=g, dtype=torch.float64)  # (D,)
    keys = torch.randn(MAX_N, MAX_D_K, generator=g, dtype=torch.float64)  # (N, D)
    return q, keys


def widget_scores(pattern: str, d_k: int, n: int, scaled: bool = True, seed: int = 0) -> torch.Tensor:
    """One query's scores over n keys: q, k_j ~ N(0, I_{d_k}) (seeded), s_j = q·k_j (/ √d_k): (n,).

    pattern "one key = q" sets k_0 = q (so s_0 = ‖q‖² ≈ d_k); "two keys = q (tie)" sets k_0 = k_1 = q.
    n ≤ 128 and d_k ≤ 1024; for one seed, the vectors of a smaller d_k or n are the leading
    coordinates and keys of the larger ones, so moving a slider changes only what it names.
    """
    if pattern not in PATTERNS:
        raise ValueError(f"pattern must be one of {PATTERNS}, got {pattern!r}")
    if not (2 <= n <= MAX_N and 1 <= d_k <= MAX_D_K):
        raise ValueError(f"need 2 <= n <= {MAX_N} keys and 1 <= d_k <= {MAX_D_K}, got n={n}, d_k={d_k}")
    q_all, keys_all = _widget_vectors(int(seed))
    q = q_all[:d_k]  # (d_k,)
    keys = keys_all[:n, :d_k].clone()  # (n, d_k)
    if pattern != PATTERNS[0]:
        keys[0] = q
    if pattern == PATTERNS[2]:
        keys[1] = q
    s = keys @ q  # (n,)
    return s / math.sqrt(d_k) if scaled else s


def entropy_state(pattern: str = PATTERNS[0], temperature: float = 1.0, d_k: int = 16, n: int = 16,
                  scaled: bool = True, seed: int = 0) -> EntropyState:
    """Everything the widget shows: the weights at temperature T, their entropy with its bounds, the
    Jacobian's norms, and the entropy, bound and Jacobian curves over ``T_GRID``."""
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    s = widget_scores(pattern, d_k, n, scaled, seed)  # (n,)
    temps = torch.cat([T_GRID, torch.tensor([float(temperature)], dtype=torch.float64)])  # (K + 1,)
    w = softmax(s[None, :] / temps[:, None])  # (K + 1, n): one softmax for the curves and the current T
    h = attention_entropy(w)  # (K + 1,)
    jac = jacobian_frobenius(w)  # (K + 1,)
    log_n = math.log(n)
    spread = float(score_range(s))
    bound = log_n - (spread / temperature) ** 2 / 8
    return EntropyState(
        scores=s, weights=w[-1], temperature=float(temperature), entropy=float(h[-1]), lower_bound=bound,
        printed_bound=bound, max_entropy=log_n, jacobian_frobenius=float(jac[-1]), temperatures=T_GRID,
        entropy_curve=h[:-1], bound_curve=(log_n - (spread / T_GRID) ** 2 / 8).clamp_min(0), jacobian_curve=jac[:-1],
    )


def entropy_caption(state: EntropyState) -> str:
    """One line of numbers: entropy with its bounds, the printed bound's verdict, the Jacobian norms."""
    excess = state.entropy - state.printed_bound  # > 0 for every non-constant score vector
    verdict = "holds here" if excess <= 0 else f"VIOLATED by {excess:.2g}"
    return (f"T = {state.temperature:.3g}  |  max α = {float(state.weights.max()):.3f}  |  "
            f"H = {state.entropy:.3f} nats;  Hoeffding lower bound {max(state.lower_bound, 0.0):.3f} ≤ H ≤ "
            f"log n = {state.max_entropy:.3f}  |  source's 'H ≤ log n − (Δs)²/8' = {state.printed_bound:.3f}: "
            f"{verdict}  |  ‖J‖_F = {state.jacobian_frobenius:.3f}")


class EntropyPlot(BlittedFigure):
    """Three panels, drawn once: the weights α over the keys; entropy against temperature with its
    bounds; the Jacobian's Frobenius norm against temperature. ``update(state)`` moves the artists.

    ``pyplot=False`` (for widgets): a free-standing Agg figure whose static parts are cached; only
    the moving artists are redrawn (blitting); no axis limit depends on the state (keys are drawn on
    [0, 1], each 1/n wide), so the background never needs re-rendering.
    ``pyplot=True``: a pyplot figure for ``plt.show()``.
    """

    def __init__(self, pyplot: bool = False, figsize=(11.0, 3.3), dpi: int = 80):
        super().__init__(pyplot, figsize, dpi)
        fig = self.figure
        ax_w, ax_h, ax_j = fig.subplots(1, 3, gridspec_kw={"wspace": 0.32, "left": 0.05, "right": 0.98,
                                                          "top": 0.8 if pyplot else 0.88, "bottom": 0.16})
        self.axes = (ax_w, ax_h, ax_j)
        # weights: a filled step plot over the keys and the uniform level 1/n
        # (key j spans [j/n, (j+1)/n], so the axes do not change with n)
        self._stairs = ax_w.stairs([0.5, 0.5], [0.0, 0.5, 1.0], fill=True, color="tab:blue", alpha=0.8)
        (self._uniform,) = ax_w.plot([0, 1], [0.5, 0.5], "k--", lw=1, label="1/n (uniform)")
        ax_w.set(xlim=(0, 1), ylim=(0, 1.03), xticks=[], xlabel="keys j = 0 … n − 1", ylabel="weight α_j",
                 title="α = softmax(s / T)")
        ax_w.legend(fontsize=7, loc="upper right")
        # entropy against temperature
        T = T_GRID.tolist()
        (self._h_curve,) = ax_h.plot(T, [0] * len(T), color="tab:blue", lw=2, label="H(α) at each T")
        (self._lb_curve,) = ax_h.plot(T, [0] * len(T), color="tab:green", lw=1.5,
                                      label="log n − (Δs/T)²/8: a lower bound\n(the source prints it as an upper one)")
        (self._logn,) = ax_h.plot([T[0], T[-1]], [1, 1], "k--", lw=1, label="log n")
        (self._h_dot,) = ax_h.plot([1], [0], "o", color="tab:red", ms=8)
        ax_h.set(xscale="log", xlim=(T[0], T[-1]), ylim=(0, 1.04 * math.log(128)), xlabel="temperature T",
                 ylabel="entropy (nats)",
                 title="entropy and its bounds")
        ax_h.legend(fontsize=7, loc="upper left")
        # the Jacobian's norm against temperature
        (self._j_curve,) = ax_j.plot(T, [0] * len(T), color="tab:purple", lw=2)
        (self._j_dot,) = ax_j.plot([1], [0], "o", color="tab:red", ms=8)
        ax_j.set(xscale="log", xlim=(T[0], T[-1]), ylim=(0, 0.55), xlabel="temperature T",
                 ylabel="‖diag(α) − ααᵀ‖_F", title="softmax Jacobian (gradient size)")
        self._animate([self._stairs, self._uniform, self._h_curve, self._lb_curve, self._logn, self._h_dot,
                       self._j_curve, self._j_dot])
        self._title = fig.text(0.5, 0.97, "", ha="center", va="top", fontsize=8) if pyplot else None

    def update(self, state: EntropyState) -> None:
        """Move every artist to ``state`` (no new artists are created)."""
        n = state.weights.shape[0]
        self._stairs.set_data(state.weights.numpy(), torch.linspace(0, 1, n + 1, dtype=torch.float64).numpy())
        self._uniform.set_ydata([1 / n, 1 / n])
        self._h_curve.set_ydata(state.entropy_curve.numpy())
        self._lb_curve.set_ydata(state.bound_curve.numpy())
        self._logn.set_ydata([state.max_entropy, state.max_entropy])
        self._h_dot.set_data([state.temperature], [state.entropy])
        self._j_curve.set_ydata(state.jacobian_curve.numpy())
        self._j_dot.set_data([state.temperature], [state.jacobian_frobenius])
        if self._title is not None:
            self._title.set_text(entropy_caption(state))


def entropy_widget_update(plot: EntropyPlot, pattern: str = PATTERNS[0], temperature: float = 1.0, d_k: int = 16,
                          n: int = 16, scaled: bool = True, seed: int = 0):
    """One widget update: compute the state, move the artists, render -> (state, png, caption).

    This is the whole cost of a slider move (less the transfer to the browser).
    """
    state = entropy_state(pattern, temperature, d_k, n, scaled, seed)
    plot.update(state)
    return state, plot.render_png(), entropy_caption(state)


def entropy_widget(pattern: str = PATTERNS[0], temperature: float = 1.0, d_k: int = 16, n: int = 16):
    """The chapter-03 widget: controls for the scores (pattern and seed), the temperature, d_k, n and
    the 1/√d_k scale; every change recomputes ``entropy_state`` and redraws ``EntropyPlot``."""
    import ipywidgets as widgets

    plot = EntropyPlot()
    style = {"description_width": "90px"}
    controls = {
        "pattern": widgets.Dropdown(options=PATTERNS, value=pattern, description="scores", style=style),
        "temperature": widgets.FloatLogSlider(value=temperature, base=10, min=-2, max=2, step=0.05,
                                              description="temperature", style=style),
        "d_k": widgets.SelectionSlider(options=[2**i for i in range(11)], value=d_k, description="d_k", style=style),
        "n": widgets.SelectionSlider(options=[2, 3, 4, 8, 16, 32, 64, 128], value=n, description="n keys",
                                     style=style),
        "scaled": widgets.Checkbox(value=True, description="divide by √d_k"),
        "seed": widgets.IntSlider(value=0, min=0, max=20, description="score seed", style=style),
    }

    return figure_widget(plot, entropy_widget_update, controls,
                         rows=[["pattern", "temperature", "scaled"], ["d_k", "n", "seed"]], font_size="11px")


__all__ = [
    "EntropyPlot", "EntropyState", "PATTERNS", "T_GRID", "cosine_temperature", "dot_product_statistics",
    "entropy_caption", "entropy_curve", "entropy_of_scores", "entropy_state", "entropy_temperature_derivative",
    "entropy_widget", "entropy_widget_update", "gibbs_objective", "hoeffding_entropy_bound", "jacobian_frobenius",
    "jacobian_spectral", "kl_to_uniform", "log_partition", "score_range", "score_range_from_weights",
    "softmax_jacobian", "source_cosine_schedule", "widget_scores", "zero_temperature_entropy",
]
