"""Information flow through attention, for any attention tensor ``(B, H, T, S)``.

Source 002 (bidirectional attention information flow) §2 and §6, source 001 §5.4.3
(Eq. 5.4.7–5.4.9: the multi-layer relay) and source 000 Def. 14.3.12 (cross-attention flow).

Convention: row i of a weight matrix is a query (the position that *receives*), column j a key
(the position that *sends*): A_ij is the share of what i reads from j, "information flows j → i".
For self-attention (T == S) the flow is

* **forward** when j < i (from an earlier position: the only direction a causal mask lets through
  besides i itself),
* **backward** when j > i (from a later position: only bidirectional attention has it),
* a **self loop** when j = i.

Three families of tools:

* statistics of one layer's weights: ``directional_flow`` (source 002's forward / backward / self
  sums), ``flow_shares``, ``flow_statistics`` (every number of source 002's
  ``analyze_flow_statistics``, defined where the source's are not), ``top_sources``,
  ``mean_attention_distance`` (Dosovitskiy et al. 2021, Fig. 7);
* what a mask lets through a stack of layers: ``reachability`` (boolean matrix powers) and
  ``layers_to_reach`` (breadth-first search over layers);
* how much of each input reaches each output through a stack of layers (Abnar & Zuidema 2020):
  ``attention_rollout`` (products of residual-augmented, head-averaged weights) and
  ``attention_flow`` (a maximum flow through the layered attention graph, ``max_flow``).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from typing import NamedTuple

import torch

from ._validation import require_float, require_ndim, require_positive_int, require_tensor
from .metrics import attention_entropy

# ------------------------------------------------------------------------------ validation


def _check_weights(weights, name: str = "weights", square: bool = False) -> None:
    require_float(name, weights)
    require_ndim(name, weights, (2, None), "(..., T queries, S keys)")
    if square and weights.shape[-1] != weights.shape[-2]:
        raise ValueError(
            f"{name} must be self-attention weights with T == S to tell forward from backward "
            f"flow, got T={weights.shape[-2]}, S={weights.shape[-1]} (shape {tuple(weights.shape)})"
            "; cross-attention (a decoder reading an encoder) has no forward or backward"
        )
    if (weights < 0).any():
        raise ValueError(f"{name} must be >= 0, got a minimum of {weights.min().item():.3g}")


def _check_mask(mask, square: bool) -> None:
    require_tensor("mask", mask)
    if mask.dtype != torch.bool:
        raise ValueError(f"mask must be boolean (True = may attend), got {mask.dtype}")
    require_ndim("mask", mask, (2, None), "(..., T queries, S keys)")
    if square and mask.shape[-1] != mask.shape[-2]:
        raise ValueError(
            "stacking layers needs a square self-attention mask (T == S), got shape "
            f"{tuple(mask.shape)}: a cross-attention mask connects two different sequences"
        )


def _check_residual(residual: float) -> None:
    if not 0.0 <= residual <= 1.0:
        raise ValueError(f"residual must lie in [0, 1], got {residual}")


# ------------------------------------------------------------------- one layer's statistics


class FlowSplit(NamedTuple):
    """Attention weight split by direction (source 002 §6); each (...), e.g. (B, H)."""

    forward: torch.Tensor  # from earlier keys, j < i
    backward: torch.Tensor  # from later keys, j > i
    self_loop: torch.Tensor  # from the query's own position, j = i


def _triangles(T: int, device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    i = torch.arange(T, device=device).unsqueeze(1)  # (T, 1)
    j = torch.arange(T, device=device).unsqueeze(0)  # (1, T)
    return j < i, j > i, j == i  # (T, T) each


def directional_flow(weights: torch.Tensor) -> FlowSplit:
    """Forward, backward and self flow summed over every query, as source 002 §6 computes them:
    forward = Σ_i Σ_{j<i} A_ij, backward = Σ_i Σ_{j>i} A_ij, self = Σ_i A_ii.

    weights: (..., T, T) self-attention weights. Returns a ``FlowSplit`` of (...) tensors. For
    weights whose rows sum to 1 the three add up to T (one unit per query).
    """
    _check_weights(weights, square=True)
    earlier, later, same = _triangles(weights.shape[-1], weights.device)
    zero = weights.new_zeros(())
    return FlowSplit(
        torch.where(earlier, weights, zero).sum((-2, -1)),  # (...)
        torch.where(later, weights, zero).sum((-2, -1)),  # (...)
        torch.where(same, weights, zero).sum((-2, -1)),  # (...)
    )


def flow_shares(weights: torch.Tensor) -> FlowSplit:
    """``directional_flow`` divided by the total weight: shares in [0, 1] that add up to 1
    (all 0 for an all-zero tensor, e.g. every query masked). weights: (..., T, T)."""
    split = directional_flow(weights)
    total = split.forward + split.backward + split.self_loop  # (...)
    safe = torch.where(total > 0, total, torch.ones_like(total))
    return FlowSplit(*(part / safe for part in split))


class FlowStatistics(NamedTuple):
    """Every number of source 002's ``analyze_flow_statistics``, each (...) e.g. (B, H)."""

    total: torch.Tensor  # Σ_ij A_ij: the number of unmasked queries for softmax weights
    mean: torch.Tensor  # the mean weight: 1/S for softmax weights, whatever the attention does
    max: torch.Tensor  # the largest single weight
    entropy: torch.Tensor  # mean over queries of the row entropy H(A_i) in nats (Eq. 5.4.6)
    forward: torch.Tensor
    backward: torch.Tensor
    self_loop: torch.Tensor
    ratio: torch.Tensor  # forward / backward: inf when backward = 0 < forward, nan when both 0


def flow_statistics(weights: torch.Tensor) -> FlowStatistics:
    """Source 002's flow statistics for any (..., T, T) self-attention tensor, batched.

    The source's version takes one (T, T) matrix, leaves its entropy undefined and divides by
    backward + 1e-8, which turns a causal model's backward = 0 into a ratio of about 10⁸ × forward.
    Here the entropy is the mean row entropy (``attncourse.metrics.attention_entropy``) and the
    ratio is exact: ``inf`` when there is no backward flow.
    """
    split = directional_flow(weights)
    T = weights.shape[-2]
    flat = weights.flatten(-2)  # (..., T*S)
    ratio = torch.where(
        split.backward > 0,
        split.forward / torch.where(split.backward > 0, split.backward, 1.0),
        torch.where(split.forward > 0, math.inf, math.nan),
    )
    return FlowStatistics(
        flat.sum(-1),
        flat.mean(-1),
        flat.amax(-1),
        attention_entropy(weights).sum(-1) / T,  # (...) mean over the T queries
        split.forward,
        split.backward,
        split.self_loop,
        ratio,
    )


def top_sources(weights: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The k keys each query reads most: (values, indices), each (..., T, k), largest first.

    weights: (..., T, S). Equal weights come in an unspecified order (as ``torch.topk``).
    """
    _check_weights(weights)
    require_positive_int("k", k)
    if k > weights.shape[-1]:
        raise ValueError(f"k must be at most the number of keys S={weights.shape[-1]}, got {k}")
    values, indices = torch.topk(weights, k, dim=-1)  # (..., T, k) each
    return values, indices


def mean_attention_distance(weights: torch.Tensor, per_query: bool = False) -> torch.Tensor:
    """d(i) = Σ_j A_ij |i − j|: how far query i reads on average (Dosovitskiy et al. 2021, Fig. 7,
    in positions instead of pixels), averaged over the queries unless ``per_query``.

    weights: (..., T, S); query i and key j at positions 0, 1, … (top-left aligned, as
    ``causal_mask``). Returns (...) or (..., T). Uniform bidirectional attention over T positions
    gives (T² − 1) / (3T); a query that reads only itself, 0. Queries whose weights are all 0
    (fully masked) count as distance 0.
    """
    _check_weights(weights)
    T, S = weights.shape[-2], weights.shape[-1]
    i = torch.arange(T, device=weights.device).unsqueeze(1)  # (T, 1)
    j = torch.arange(S, device=weights.device).unsqueeze(0)  # (1, S)
    distance = (i - j).abs().to(weights.dtype)  # (T, S)
    per_row = (weights * distance).sum(-1)  # (..., T)
    return per_row if per_query else per_row.mean(-1)


# ------------------------------------------------------------------------- what masks allow


def _one_layer(mask: torch.Tensor, residual: bool) -> torch.Tensor:
    if not residual:
        return mask
    eye = torch.eye(mask.shape[-1], dtype=torch.bool, device=mask.device)
    return mask | eye  # (..., T, T) the residual path keeps each position's own information


def reachability(mask: torch.Tensor, layers: int, residual: bool = True) -> torch.Tensor:
    """R[i, j] = True when the output at position i after ``layers`` attention layers can depend
    on the input at position j: a path i ← k₁ ← … ← j of ``layers`` steps along the mask's edges
    (source 001 Eq. 5.4.7–5.4.8: position n reads m, m reads 1).

    mask: (..., T, T) bool, True = may attend (one mask for every layer). With ``residual`` (as
    in a Transformer block, Eq. 5.4.8–5.4.9) every position also keeps its own information, so R
    is the boolean matrix power (M ∨ I)^L; without it, paths have exactly L steps, M^L.
    ``layers=0`` gives the identity. A one-layer cross-attention mask (T != S) is returned as it is.
    """
    if not isinstance(layers, int) or isinstance(layers, bool) or layers < 0:
        raise ValueError(f"layers must be an int >= 0, got {layers!r}")
    _check_mask(mask, square=layers != 1 or residual)
    step = _one_layer(mask, residual)  # (..., T, T)
    if layers == 0:
        return torch.eye(mask.shape[-1], dtype=torch.bool, device=mask.device).expand(mask.shape)
    reach, as_float = step, step.to(torch.float32)
    for _ in range(layers - 1):
        reach = (as_float @ reach.to(torch.float32)) > 0  # (..., T, T) one more layer in front
    return reach


def layers_to_reach(
    mask: torch.Tensor, residual: bool = True, max_layers: int | None = None
) -> torch.Tensor:
    """The fewest layers after which position i can depend on position j, by breadth-first search
    over layers: (..., T, T) float64, 0 on the diagonal, ``inf`` when no number of layers (up to
    ``max_layers``, default T) connects them.

    ``max(layers_to_reach(mask))`` is the depth a stack needs for every position to see every
    other (inf for a block-diagonal mask: blocks never exchange information).
    """
    _check_mask(mask, square=True)
    T = mask.shape[-1]
    limit = T if max_layers is None else max_layers
    if not isinstance(limit, int) or limit < 0:
        raise ValueError(f"max_layers must be an int >= 0, got {max_layers!r}")
    step = _one_layer(mask, True).to(torch.float32)  # paths may pause: a shorter path counts too
    if not residual:
        step = mask.to(torch.float32)
    eye = torch.eye(T, dtype=torch.bool, device=mask.device).expand(mask.shape)
    hops = torch.full(mask.shape, math.inf, dtype=torch.float64, device=mask.device)
    hops[eye] = 0.0
    reach = eye.clone()  # (..., T, T) reachable in <= L layers (with residual) or == L (without)
    seen = eye.clone()
    for layer in range(1, limit + 1):
        reach = (step @ reach.to(torch.float32)) > 0
        new = reach & ~seen
        if not new.any() and residual:
            break
        hops[new] = float(layer)
        seen |= new
    return hops


# --------------------------------------------------------------- attention rollout and flow


def _layer_matrices(weights, residual: float) -> list[torch.Tensor]:
    """Abnar & Zuidema's per-layer matrix: Ã = residual · I + (1 − residual) · mean_h A, rows
    renormalised. weights: a sequence of (..., H, T, T) tensors, first layer first."""
    if isinstance(weights, torch.Tensor):
        raise ValueError(
            "weights must be a sequence of per-layer tensors (..., H, T, T), first layer first "
            f"(e.g. a list), got one tensor of shape {tuple(weights.shape)}"
        )
    if len(weights) == 0:
        raise ValueError("weights must hold at least one layer")
    _check_residual(residual)
    shape = None
    out = []
    for number, w in enumerate(weights):
        name = f"weights[{number}]"
        _check_weights(w, name, square=True)
        require_ndim(name, w, (3, None), "(..., H heads, T, T)")
        if shape is not None and w.shape != shape:
            raise ValueError(
                f"every layer must have the same shape, got {tuple(shape)} and {tuple(w.shape)}"
            )
        shape = w.shape
        eye = torch.eye(w.shape[-1], dtype=w.dtype, device=w.device)
        mixed = residual * eye + (1.0 - residual) * w.mean(-3)  # (..., T, T) heads averaged
        total = mixed.sum(-1, keepdim=True)
        out.append(mixed / torch.where(total > 0, total, torch.ones_like(total)))
    return out


def attention_rollout(weights: Sequence[torch.Tensor], residual: float = 0.5) -> torch.Tensor:
    """Attention rollout (Abnar & Zuidema 2020): Ã_L ⋯ Ã_2 Ã_1 with Ã_l = ½ I + ½ Ā_l.

    weights: one (..., H, T, T) tensor per layer, first layer first (e.g. the ``(B, H, T, T)``
    weights of each ``TransformerBlock``). Heads are averaged (Ā_l); ``residual`` is the share
    given to the identity for the residual connection (Eq. 5.4.8–5.4.9; the paper's 0.5; 0 gives
    the plain product of the head-averaged weights). Returns (..., T, T): row i is how much of
    each input position reaches position i at the top of the stack, if every layer mixed its
    inputs linearly with these weights (rows sum to 1).
    """
    matrices = _layer_matrices(weights, residual)
    rolled = matrices[0]
    for layer in matrices[1:]:
        rolled = layer @ rolled  # (..., T, T) one more layer on top
    return rolled


def max_flow(capacity, source: int, sink: int, tol: float = 1e-12) -> float:
    """The maximum flow from ``source`` to ``sink`` in a directed graph with capacities
    ``capacity[u][v]`` (a square tensor, array or nested list, >= 0), by Dinic's algorithm
    (breadth-first level graph, then blocking flows along shortest augmenting paths; exact up to
    ``tol``). Computed in float64 with plain Python numbers: the graphs here have a few hundred
    nodes at most.
    """
    rows = capacity.tolist() if hasattr(capacity, "tolist") else [list(r) for r in capacity]
    n = len(rows)
    if any(len(r) != n for r in rows):
        raise ValueError("capacity must be a square (N, N) matrix")
    if any(c < 0 for r in rows for c in r) or any(c != c for r in rows for c in r):
        raise ValueError("capacities must be >= 0 (and not NaN)")
    for name, node in (("source", source), ("sink", sink)):
        if not isinstance(node, int) or not 0 <= node < n:
            raise ValueError(f"{name} must be a node index in 0..{n - 1}, got {node!r}")
    if source == sink:
        raise ValueError("source and sink must differ")
    return _dinic(rows, _neighbours(rows, tol), source, sink, tol)


def _neighbours(rows, tol):
    n = len(rows)
    return [[v for v in range(n) if rows[u][v] > tol or rows[v][u] > tol] for u in range(n)]


def _dinic(rows, adjacency, source, sink, tol) -> float:
    residual = [list(r) for r in rows]  # residual capacities, updated in place
    n, total = len(rows), 0.0
    while True:
        level = [-1] * n
        level[source] = 0
        queue = deque([source])
        while queue:  # breadth-first search: the level graph of shortest paths
            u = queue.popleft()
            for v in adjacency[u]:
                if level[v] < 0 and residual[u][v] > tol:
                    level[v] = level[u] + 1
                    queue.append(v)
        if level[sink] < 0:
            return total
        next_edge = [0] * n
        while (
            sent := _augment(source, sink, math.inf, adjacency, residual, level, next_edge, tol)
        ) > tol:
            total += sent


def _augment(u, sink, limit, adjacency, residual, level, next_edge, tol) -> float:
    """Push flow along one augmenting path of the level graph from u (depth <= number of levels);
    ``next_edge`` remembers the edges already found useless in this phase (Dinic's pointer)."""
    if u == sink:
        return limit
    edges = adjacency[u]
    while next_edge[u] < len(edges):
        v = edges[next_edge[u]]
        if level[v] == level[u] + 1 and residual[u][v] > tol:
            sent = _augment(
                v, sink, min(limit, residual[u][v]), adjacency, residual, level, next_edge, tol
            )
            if sent > tol:
                residual[u][v] -= sent
                residual[v][u] += sent
                return sent
        next_edge[u] += 1
    return 0.0


def flow_network(layer_matrices: Sequence[torch.Tensor]) -> torch.Tensor:
    """The layered attention graph of Abnar & Zuidema (2020) for one example: node l·T + t is
    position t at layer l (l = 0 the input, L the top); the edge from (l, j) to (l + 1, i) has
    capacity Ã_{l+1}[i, j]. layer_matrices: L tensors (T, T). Returns the (N, N) capacity matrix,
    N = (L + 1)·T, float64."""
    T, L = layer_matrices[0].shape[-1], len(layer_matrices)
    capacity = torch.zeros((L + 1) * T, (L + 1) * T, dtype=torch.float64)
    for layer, A in enumerate(layer_matrices):
        rows = slice(layer * T, (layer + 1) * T)  # senders: layer l
        cols = slice((layer + 1) * T, (layer + 2) * T)  # receivers: layer l + 1
        capacity[rows, cols] = A.detach().to(torch.float64).T  # (T, T) edge j -> i carries A[i, j]
    return capacity


def attention_flow(
    weights: Sequence[torch.Tensor], residual: float = 0.5, queries=None
) -> torch.Tensor:
    """Attention flow (Abnar & Zuidema 2020): the maximum flow from input position j to position i
    at the top of the stack through the layered attention graph whose capacities are the rollout's
    matrices Ã_l = ½ I + ½ Ā_l (``flow_network``).

    Where rollout multiplies weights along paths and adds the paths up, flow treats the weights as
    pipe capacities: paths that share an edge share its capacity. weights: one (B, H, T, T) tensor
    per layer (or (H, T, T), for one example). ``queries``: None (every top position: returns
    (B, T, T)), an int (one position for every example: (B, T)) or a (B,) integer tensor (one per
    example: (B, T)). Without a batch dimension the B is dropped. float64, no gradient. One max
    flow per (example, query, input): O(B · T²) flows for the full matrix, so ask for the rows
    you need.
    """
    matrices = _layer_matrices(weights, residual)
    batched = matrices[0].dim() == 3
    if not batched:
        if matrices[0].dim() != 2:
            raise ValueError("attention_flow takes (B, H, T, T) or (H, T, T) tensors per layer")
        matrices = [m.unsqueeze(0) for m in matrices]
    B, T, L = matrices[0].shape[0], matrices[0].shape[-1], len(matrices)
    if queries is None:
        rows = [list(range(T))] * B
    elif isinstance(queries, int) and not isinstance(queries, bool):
        rows = [[queries]] * B
    else:
        require_tensor("queries", queries)
        if queries.is_floating_point() or queries.shape != (B,):
            raise ValueError(
                f"queries must be None, an int or a ({B},) integer tensor, got "
                f"{queries.dtype} {tuple(queries.shape)}"
            )
        rows = [[int(q)] for q in queries]
    if any(not 0 <= q < T for r in rows for q in r):
        raise ValueError(f"query positions must lie in 0..{T - 1}")
    out = torch.zeros(B, len(rows[0]), T, dtype=torch.float64)
    for b in range(B):
        capacity = flow_network([m[b] for m in matrices]).tolist()
        adjacency = _neighbours(capacity, 1e-12)
        for r, query in enumerate(rows[b]):
            for j in range(T):
                out[b, r, j] = _dinic(capacity, adjacency, j, L * T + query, 1e-12)
    if queries is not None:
        out = out[:, 0]  # (B, T)
    return out if batched else out[0]


__all__ = [
    "FlowSplit",
    "FlowStatistics",
    "attention_flow",
    "attention_rollout",
    "directional_flow",
    "flow_network",
    "flow_shares",
    "flow_statistics",
    "layers_to_reach",
    "max_flow",
    "mean_attention_distance",
    "reachability",
    "top_sources",
]
