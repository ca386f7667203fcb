"""Information measures of attention: source 000 Def. 14.3.2 (Eq. 14.3.3), Lemma 14.3.2, 14.3.5.

Two families:

* statistics of attention weights, for any tensor of weights ``(..., S)`` such as the
  ``(B, H, T, S)`` returned by every attention of ``attncourse`` (or by another model):
  ``attention_entropy``, ``normalized_entropy``, ``effective_support``;
* exact information quantities of small *discrete* distributions, given as a joint probability
  table with one tensor dimension per variable: ``entropy``, ``mutual_information`` (optionally
  conditional) and ``co_information``. They let the course test the source's information-theory
  claims exactly instead of by estimation.

All entropies of weights are in nats (natural log), as in the source; the discrete measures
take ``base`` (2 = bits by default, since the source speaks of bits there).
"""

import math

import torch

from ._validation import require_float, require_tensor


def _plogp(p: torch.Tensor) -> torch.Tensor:
    """p log p elementwise with 0 log 0 = 0, and a finite (zero) gradient where p = 0."""
    safe = torch.where(p > 0, p, torch.ones_like(p))  # log(1) = 0 where p = 0
    return p * torch.log(safe)


def attention_entropy(weights: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """H(alpha) = -sum_i alpha_i log alpha_i in nats, with 0 log 0 = 0   (Eq. 14.3.3).

    weights: (..., S), e.g. (B, H, T, S), non-negative along ``dim`` (each slice normally sums
    to 1; an all-zero slice, a fully masked query, has entropy 0). Returns (...), e.g. (B, H, T).
    Bounds (Lemma 14.3.2): 0 (one-hot) <= H <= log S (uniform).
    """
    require_float("weights", weights)
    if (weights < 0).any():
        raise ValueError(
            f"attention weights must be >= 0, got a minimum of {weights.min().item():.3g}"
        )
    return 0.0 - _plogp(weights).sum(dim=dim)  # (...); "0.0 -" keeps an exact 0 from printing as -0


def normalized_entropy(weights: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """H(alpha) / log S in [0, 1]: 0 for one-hot, 1 for uniform (S = 1 gives 0)."""
    n = weights.shape[dim]
    h = attention_entropy(weights, dim)  # (...)
    return h / math.log(n) if n > 1 else torch.zeros_like(h)


def effective_support(weights: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """exp(H(alpha)): the 'effective number of attended positions' (perplexity), in [1, S]."""
    return torch.exp(attention_entropy(weights, dim))  # (...)


# ---------------------------------------------------------------- exact discrete measures


def _clean(x: float) -> float:
    """Exact measures of small tables: round-off below 1e-12 is reported as exactly 0."""
    return 0.0 if abs(x) < 1e-12 else x


def _check_joint(joint: torch.Tensor) -> None:
    require_tensor("joint", joint)
    require_float("joint", joint)
    if (joint < 0).any():
        raise ValueError("a joint probability table must be >= 0 everywhere")
    total = float(joint.sum())
    if abs(total - 1.0) > 1e-6:
        raise ValueError(f"a joint probability table must sum to 1, got {total:.6g}")


def _dims(joint: torch.Tensor, dims, name: str) -> tuple:
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    nd = joint.dim()
    out = tuple(d % nd for d in dims) if all(-nd <= d < nd for d in dims) else None
    if out is None:
        raise ValueError(f"{name} names dimensions {dims}, but the joint table has only {nd}")
    return out


def entropy(joint: torch.Tensor, dims=None, base: float = 2.0) -> float:
    """H(X_dims) of the marginal of a discrete joint table over ``dims`` (all dims if None).

    joint: a probability tensor with one dimension per variable, e.g. (2, 2, 2) for p(x1, x2, y).
    """
    _check_joint(joint)
    dims = tuple(range(joint.dim())) if dims is None else _dims(joint, dims, "dims")
    if not dims:
        return 0.0
    others = tuple(d for d in range(joint.dim()) if d not in dims)
    marginal = joint.sum(dim=others) if others else joint  # (|X_d| for d in dims)
    return _clean(float(-_plogp(marginal).sum() / math.log(base)))


def mutual_information(joint: torch.Tensor, x, y, given=(), base: float = 2.0) -> float:
    """I(X; Y | Z) = H(X,Z) + H(Y,Z) - H(X,Y,Z) - H(Z), exactly, from a discrete joint table.

    ``x``, ``y``, ``given``: a dimension or a tuple of dimensions of ``joint`` (a tuple is a
    joint variable, e.g. x=(0, 1) is the pair (X1, X2)). With ``given=()`` this is I(X; Y).
    """
    x, y = _dims(joint, x, "x"), _dims(joint, y, "y")
    z = _dims(joint, given, "given")
    if set(x) & set(y) or (set(x) | set(y)) & set(z):
        raise ValueError(f"x {x}, y {y} and given {z} must name different dimensions")
    h = lambda *groups: entropy(joint, sorted(set().union(*groups)), base)  # noqa: E731
    return max(0.0, _clean(h(x, z) + h(y, z) - h(x, y, z) - (h(z) if z else 0.0)))  # I >= 0


def co_information(joint: torch.Tensor, a, b, y, base: float = 2.0) -> float:
    """I(A; B; Y) = I(A; Y) - I(A; Y | B): positive = redundancy, negative = synergy.

    The chain rule gives exactly I(A,B; Y) = I(A; Y) + I(B; Y) - I(A; B; Y), the correct form of
    source Eq. (14.3.7); the 'redundancy' term there must be allowed to be negative.
    """
    return _clean(
        mutual_information(joint, a, y, base=base)
        - mutual_information(joint, a, y, given=b, base=base)
    )


# ---------------------------------------------------------------- span and coverage (chapter 04)


def _check_weights(weights: torch.Tensor, threshold: float, name: str) -> None:
    require_float("weights", weights)
    if weights.dim() < 2:
        raise ValueError(
            f"weights must be at least 2-D (..., T, S), got shape {tuple(weights.shape)}"
        )
    if not threshold >= 0:
        raise ValueError(f"{name} must be >= 0, got {threshold}")


def effective_span(weights: torch.Tensor, eps: float) -> torch.Tensor:
    """span_eff(i) = max{ |i - j| : A_ij > eps }   (source 001 Eq. 5.4.4).

    weights: (..., T, S), e.g. (B, H, T, S); query i and key j are positions 0.. (top-left
    aligned when T != S, as ``causal_mask``). Returns (...,  T) int64: how far back (or ahead) the
    farthest key that query i reads with weight above eps lies; 0 when no weight exceeds eps.
    Softmax weights are all > 0, so with eps = 0 every unmasked query spans the whole sequence:
    the measure means something only with eps > 0, and eps must shrink with S (uniform weights
    1/S are no longer above a fixed eps once S >= 1/eps).
    """
    _check_weights(weights, eps, "eps")
    T, S = weights.shape[-2], weights.shape[-1]
    i = torch.arange(T, device=weights.device).unsqueeze(1)  # (T, 1)
    j = torch.arange(S, device=weights.device).unsqueeze(0)  # (1, S)
    distance = (i - j).abs()  # (T, S)
    return torch.where(weights > eps, distance, torch.zeros_like(distance)).amax(dim=-1)  # (..., T)


def information_coverage(weights: torch.Tensor, tau: float) -> torch.Tensor:
    """|R(i)| with R(i) = { j : alpha_ij > tau }   (source 000 Def. 14.3.5, Eq. 14.3.8).

    weights: (..., T, S). Returns (..., T) int64, the number of positions query i reads with
    weight above tau (the set itself is ``weights > tau``; divide by S for a fraction). Because each
    row sums to at most 1, |R(i)| < 1/tau for tau > 0: full coverage R(i) = all S positions
    (Lemma 14.3.6) is impossible once S >= 1/tau.
    """
    _check_weights(weights, tau, "tau")
    return (weights > tau).sum(dim=-1)  # (..., T)
