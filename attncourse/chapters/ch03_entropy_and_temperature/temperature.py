"""Entropy and temperature of softmax attention: source 000 §14.3.3 (Def. 14.3.7–14.3.9,
Lemma 14.3.9–14.3.12, Thm. 14.3.5–14.3.6, Application 14.3.2, Eq. 14.3.14–14.3.20) and source 001
Eq. (5.4.6).

* the softmax Jacobian diag(α) − ααᵀ and its norms (saturation);
* entropy as a function of temperature, and its derivative dH/dT = Var_α(s) / T³ (Lemma 14.3.12);
* the entropy bound of Thm. 14.3.5 stated correctly: H(α) ≥ log n − (Δs)²/8 (Hoeffding's lemma);
* the Gibbs variational principle behind Lemma 14.3.10;
* the cosine temperature schedule of Application 14.3.2;
* the statistics of q·k for random unit-variance q, k (Vaswani et al. 2017, footnote 4).

Every softmax here is the package's own ``attncourse.attention.softmax``.
"""

from __future__ import annotations

import math

import torch

from ...attention import softmax
from ...metrics import attention_entropy

# ------------------------------------------------------------------------------ the Jacobian


def softmax_jacobian(weights: torch.Tensor) -> torch.Tensor:
    """J = ∂α/∂s = diag(α) − ααᵀ of α = softmax(s), from the weights alone: (..., n) -> (..., n, n).

    J_ij = α_i (δ_ij − α_j). With a temperature, ∂softmax(s/T)/∂s = J / T.
    """
    return torch.diag_embed(weights) - weights.unsqueeze(-1) * weights.unsqueeze(-2)  # (..., n, n)


def jacobian_frobenius(weights: torch.Tensor) -> torch.Tensor:
    """‖diag(α) − ααᵀ‖_F without forming the matrix: √(Σα² − 2Σα³ + (Σα²)²): (..., n) -> (...)."""
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
    """H(softmax(s / T)) in nats: (..., n) -> (...).

    Computed stably as logsumexp(z) − Σ α z with z = s / T. ``temperature`` may be a float or a
    tensor broadcastable to scores[..., :1].
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
    """Δs from the softmax weights: log(max α / min α), since s_i − s_j = log α_i − log α_j."""
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


def gibbs_objective(
    weights: torch.Tensor, scores: torch.Tensor, temperature: float = 1.0
) -> torch.Tensor:
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


def dot_product_statistics(
    d_k: int,
    n_keys: int = 64,
    n_queries: int = 200,
    n_pairs: int = 4000,
    generator: torch.Generator | None = None,
) -> dict:
    """var(q·k) / d_k for unit-variance q, k, and the softmax over ``n_keys`` keys with and without
    the 1/√d_k scale: mean largest weight, mean entropy (nats) and mean ‖J‖_F of the Jacobian."""
    a, b = torch.randn(2, n_pairs, d_k, generator=generator, dtype=torch.float64)
    q = torch.randn(n_queries, d_k, generator=generator, dtype=torch.float64)
    k = torch.randn(n_keys, d_k, generator=generator, dtype=torch.float64)
    raw = q @ k.T  # (n_queries, n_keys)
    out = {"var_ratio": float((a * b).sum(-1).var() / d_k)}
    for name, s in (("unscaled", raw), ("scaled", raw / math.sqrt(d_k))):
        w = softmax(s)  # (n_queries, n_keys)
        out[name] = {
            "max_weight": float(w.amax(-1).mean()),
            "entropy": float(attention_entropy(w).mean()),
            "jacobian": float(jacobian_frobenius(w).mean()),
        }
    return out
