"""Exact information quantities of heads on discrete toy tasks (source 000 §14.3.2, §14.3.4).

A toy task is a finite list of equally likely (or weighted) inputs and named functions of them:
each head reads something (a token, the position it attends to), Y is a known function of the
tokens. ``joint_table`` enumerates them into one probability table with a dimension per variable,
so every quantity below is exact (``attncourse.metrics``), not estimated:

* the source's formulas as printed — Eq. (14.3.11), (14.3.12), (14.3.21), (14.3.22), (14.3.23),
  (14.3.25), (14.3.26), (14.3.27), App. 14.3.1's net contribution and Alg. 14.3.1's pseudo-code
  (``alg_14_3_1_as_printed``, run as printed, defects included, and ``alg_14_3_1_repaired``) —
  next to
* what the chain rule of mutual information says instead (co-information with its sign,
  conditional marginal contributions, total correlation).

Every function takes the table and dimension indices, as ``attncourse.metrics`` does.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence

import torch

from ...metrics import co_information, entropy, mutual_information


class JointTable:
    """A discrete joint distribution: ``table`` (one tensor dimension per variable, float64),
    ``names`` (the variables, in dimension order) and ``values`` (each variable's values, in index
    order). ``dim(name)`` gives a variable's dimension; ``dims(*names)`` a tuple of them."""

    def __init__(self, table: torch.Tensor, names: Sequence[str], values: Sequence[list]):
        self.table, self.names, self.values = table, tuple(names), tuple(values)

    def dim(self, name: str) -> int:
        if name not in self.names:
            raise ValueError(f"no variable {name!r}; the table has {self.names}")
        return self.names.index(name)

    def dims(self, *names: str) -> tuple:
        return tuple(self.dim(n) for n in names)

    def __repr__(self) -> str:
        sizes = ", ".join(f"{n}: {len(v)}" for n, v in zip(self.names, self.values))
        return f"JointTable({sizes})"


def joint_table(
    inputs: Iterable, variables: dict[str, Callable], weights: Callable | None = None
) -> JointTable:
    """Enumerate ``inputs`` (each equally likely, or with probability ∝ ``weights(x)``) and
    tabulate the named ``variables`` (functions of an input returning a hashable value) into
    one exact joint table."""
    inputs = list(inputs)
    w = [1.0 if weights is None else float(weights(x)) for x in inputs]
    total = sum(w)
    names = list(variables)
    outcomes = [tuple(f(x) for f in variables.values()) for x in inputs]
    values = [sorted({o[i] for o in outcomes}, key=repr) for i in range(len(names))]
    index = [{v: j for j, v in enumerate(vals)} for vals in values]
    table = torch.zeros(*(len(v) for v in values), dtype=torch.float64)
    for o, wx in zip(outcomes, w):
        table[tuple(index[i][v] for i, v in enumerate(o))] += wx / total
    return JointTable(table, names, values)


def bits(n: int) -> list[tuple]:
    """All 2^n tuples of n fair bits (the inputs of the toy tasks)."""
    return list(itertools.product((0, 1), repeat=n))


# ------------------------------------------------------------------- Eq. 14.3.11 and 14.3.25


def information(jt: JointTable, xs: Sequence[str], y: str) -> float:
    """I(X_1, ..., X_k; Y) in bits (the heads read jointly)."""
    return mutual_information(jt.table, jt.dims(*xs), jt.dim(y)) if xs else 0.0


def eq_14_3_11(jt: JointTable, heads: Sequence[str], y: str) -> float:
    """Σ_h I(Z_h; Y) − Σ_{h1≠h2} I(Z_h1; Z_h2; Y), the sum over ordered pairs, as printed."""
    singles = sum(information(jt, [h], y) for h in heads)
    pairs = sum(
        co_information(jt.table, jt.dim(a), jt.dim(b), jt.dim(y))
        for a, b in itertools.permutations(heads, 2)
    )
    return singles - pairs


def pairwise_co_information_formula(jt: JointTable, heads: Sequence[str], y: str) -> float:
    """Σ_h I(Z_h; Y) − Σ_{h1<h2} I(Z_h1; Z_h2; Y): each pair once (exact for two heads only)."""
    singles = sum(information(jt, [h], y) for h in heads)
    pairs = sum(
        co_information(jt.table, jt.dim(a), jt.dim(b), jt.dim(y))
        for a, b in itertools.combinations(heads, 2)
    )
    return singles - pairs


def eq_14_3_25(jt: JointTable, heads: Sequence[str], y: str, ordered: bool = True) -> float:
    """Σ_h I(Z_h; Y) − Σ_{h1≠h2} I(Z_h1; Z_h2), as printed (``ordered=False``: each pair once).
    The subtracted term has no Y in it."""
    singles = sum(information(jt, [h], y) for h in heads)
    pick = itertools.permutations if ordered else itertools.combinations
    pairs = sum(mutual_information(jt.table, jt.dim(a), jt.dim(b)) for a, b in pick(heads, 2))
    return singles - pairs


def total_correlation(jt: JointTable, names: Sequence[str]) -> float:
    """TC(X_1..X_k) = Σ H(X_i) − H(X_1..X_k) ≥ 0 (multi-information), in bits."""
    return sum(entropy(jt.table, jt.dim(n)) for n in names) - entropy(jt.table, jt.dims(*names))


def eq_14_3_21(jt: JointTable, q: str, k: str, v: str) -> float:
    """I(Q;K) + I(K;V) + I(Q;V) − I(Q;K;V) (Def. 14.3.10), as printed. Equal to TC(Q, K, V)."""
    t, (dq, dk, dv) = jt.table, jt.dims(q, k, v)
    return (
        mutual_information(t, dq, dk)
        + mutual_information(t, dk, dv)
        + mutual_information(t, dq, dv)
        - co_information(t, dq, dk, dv)
    )


# ---------------------------------------------------------------- Eq. 14.3.26 and 14.3.27


def complementarity(jt: JointTable, a: str, b: str, y: str) -> float:
    """I(Z_a; Y) + I(Z_b; Y) − I(Z_a, Z_b; Y) (Def. 14.3.11, Eq. 14.3.26). By the chain rule
    this is exactly the co-information I(Z_a; Z_b; Y): positive for redundancy, negative for
    synergy, 0 for heads that carry independent pieces."""
    return information(jt, [a], y) + information(jt, [b], y) - information(jt, [a, b], y)


def marginal_contributions(jt: JointTable, heads: Sequence[str], y: str, printed: bool = True):
    """Δ_h for the heads in the given order (Thm. 14.3.8). ``printed=True``: Eq. (14.3.27)'s
    Δ_h = I(Z_h; Y) − I(Z_<h; Y); ``printed=False``: the chain rule's
    Δ_h = I(Z_≤h; Y) − I(Z_<h; Y) = I(Z_h; Y | Z_<h), whose sum is I(Z_all; Y) exactly."""
    out = []
    for i, h in enumerate(heads):
        before = information(jt, list(heads[:i]), y)
        now = information(jt, [h], y) if printed else information(jt, list(heads[: i + 1]), y)
        out.append(now - before)
    return out


# -------------------------------------------------------------------------------- Eq. 14.3.12


def eq_14_3_12(jt: JointTable, patterns: Sequence[str]) -> float:
    """(1/h²) Σ_{h1,h2} H(A_h1 | A_h2), as printed, with A_h the attention pattern of head h read
    as a discrete random variable (which position it attends to, as a function of the input)."""
    h = len(patterns)
    t = jt.table
    total = 0.0
    for a, b in itertools.product(patterns, repeat=2):
        total += entropy(t, jt.dims(a, b)) - entropy(t, jt.dim(b)) if a != b else 0.0
    return total / h**2


def argmax_position(x: Sequence) -> int:
    """The position of the first largest token of ``x``: a hard-attention head that attends to
    the maximum, as a function of the input."""
    return max(range(len(x)), key=lambda i: (x[i], -i))


def argmin_position(x: Sequence) -> int:
    """The position of the first smallest token of ``x``."""
    return min(range(len(x)), key=lambda i: (x[i], i))


def mean_pattern_information(jt: JointTable, patterns: Sequence[str]) -> float:
    """(1/h²) Σ_{h1,h2} I(A_h1; A_h2) over distinct pairs: large when patterns predict each other
    (a redundancy measure that points the right way)."""
    h = len(patterns)
    return (
        sum(
            mutual_information(jt.table, jt.dim(a), jt.dim(b))
            for a, b in itertools.permutations(patterns, 2)
        )
        / h**2
    )


# ---------------------------------------------------------- App. 14.3.1: pruning by information


def net_contributions(jt: JointTable, heads: Sequence[str], y: str) -> dict[str, float]:
    """App. 14.3.1's net_h = I(Z_h; Y) − Σ_{h'≠h} I(Z_h; Z_h'), computed once for every head."""
    return {
        h: information(jt, [h], y)
        - sum(mutual_information(jt.table, jt.dim(h), jt.dim(o)) for o in heads if o != h)
        for h in heads
    }


def prune_by_net_contribution(
    jt: JointTable, heads: Sequence[str], y: str, remove: int, recompute: bool = False
) -> list[str]:
    """The ``remove`` heads App. 14.3.1 prunes first (smallest net_h first; ties in the given
    order). ``recompute=True`` re-evaluates net_h among the heads that remain after each removal."""
    kept, removed = list(heads), []
    scores = net_contributions(jt, kept, y)
    for _ in range(remove):
        if recompute:
            scores = net_contributions(jt, kept, y)
        worst = min(kept, key=lambda h: scores[h])
        kept.remove(worst)
        removed.append(worst)
    return removed


def alg_14_3_1_as_printed(heads, jt, y, low_score_ratio, lam=(1.0, 1.0, 1.0)):
    """Source Alg. 14.3.1, line for line ('estimate_mutual_information' is exact here)."""
    I_direct, I_without, marginal, redundancy, score = {}, {}, {}, {}, {}
    I_total = information(jt, heads, y)
    for h in heads:
        I_direct[h] = information(jt, [h], y)  # method 1
        I_without[h] = information(jt, [o for o in heads if o != h], y)  # method 2
        marginal[h] = I_total - I_without[h]
        redundancy[h] = 0.0  # (never initialised in the source)
        for h2 in heads:  # method 3
            if h2 != h:
                redundancy[h] += mutual_information(jt.table, jt.dim(h), jt.dim(h2))
    score[h] = lam[0] * I_direct[h] + lam[1] * marginal[h] - lam[2] * redundancy[h]
    sorted_heads = sorted(score, key=score.get, reverse=True)
    prune_candidates = sorted_heads[low_score_ratio:]
    return prune_candidates, score


def alg_14_3_1_repaired(heads, jt, y, prune_ratio, lam=(1.0, 1.0, 1.0)):
    """Alg. 14.3.1 with its two defects repaired: the score line inside the loop (every head gets
    a score) and the lowest ``round(prune_ratio · H)`` heads as the prune candidates (a ratio is
    not a slice index). Returns (prune candidates, lowest score first; scores)."""
    I_total = information(jt, heads, y)
    score = {}
    for h in heads:
        others = [o for o in heads if o != h]
        direct = information(jt, [h], y)  # method 1: I(Z_h; Y)
        marginal = I_total - information(jt, others, y)  # method 2: I(Z_h; Y | Z_-h)
        redundancy = sum(mutual_information(jt.table, jt.dim(h), jt.dim(o)) for o in others)
        score[h] = lam[0] * direct + lam[1] * marginal - lam[2] * redundancy
    ranked = sorted(score, key=score.get)  # lowest score first (stable: ties in head order)
    return ranked[: round(prune_ratio * len(heads))], score


def best_heads_to_keep(jt: JointTable, heads: Sequence[str], y: str, keep: int):
    """(the subset of ``keep`` heads with the most information about Y, that information)."""
    best = max(itertools.combinations(heads, keep), key=lambda s: information(jt, list(s), y))
    return list(best), information(jt, list(best), y)


# -------------------------------------------------------------- Thm. 14.3.4: key capacity


def argmax_selectable_keys(
    keys: torch.Tensor, num_queries: int = 20000, seed: int = 0
) -> torch.Tensor:
    """Which keys (n, d_k) are the unique arg max of q · k for some query: only the vertices of
    their convex hull can be. Estimated with random Gaussian queries (float64); returns a (n,)
    bool tensor. A key that is not a vertex never wins (it is a convex combination of others)."""
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(num_queries, keys.shape[1], generator=g, dtype=torch.float64)  # (N, d_k)
    scores = q @ keys.double().T  # (N, n)
    top2 = scores.topk(2, dim=1).values  # (N, 2)
    unique = top2[:, 0] - top2[:, 1] > 1e-9  # (N,) no near-tie
    winners = scores.argmax(dim=1)[unique]  # (N',)
    selectable = torch.zeros(keys.shape[0], dtype=torch.bool)
    selectable[winners] = True
    return selectable


def grid_keys(levels: int, d_k: int) -> torch.Tensor:
    """All levels^d_k keys with coordinates in {0, 1, ..., levels−1}: (levels^d_k, d_k)."""
    return torch.tensor(list(itertools.product(range(levels), repeat=d_k)), dtype=torch.float64)


# ----------------------------------------------------- Lemma 14.3.8: information of a function


def binned_self_information(num_points: int, num_bins: int) -> float:
    """I(X_b; X) = H(X_b) in bits for X uniform on [0, 1] (represented by the ``num_points`` grid
    points (i + ½)/N) and X_b = X binned into ``num_bins`` equal bins, a deterministic function of
    X: log2(num_bins) when the bins divide the grid evenly. As the bins shrink it grows without
    limit, so I(f(X); X) of an injective f of a continuous X is infinite."""
    bins = torch.arange(num_points) * num_bins // num_points  # (N,) the bin of (i + 1/2)/N
    counts = torch.bincount(bins, minlength=num_bins).double()
    p = counts[counts > 0] / num_points
    return float(-(p * torch.log2(p)).sum())
