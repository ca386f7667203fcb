"""Checks for chapter 05's exercises (information flow), each an
``attncourse.exercises.engine.Exercise``: it runs the learner's function on random and edge inputs,
compares it with the course's reference and names the mistake when it recognises one.

* ``check_reachability``    — exercise 1: which inputs reach which outputs after L layers
  (Eq. 5.4.8's residual path); the answer is a bool tensor, like the mask
* ``check_flow_split``      — exercise 2: forward / backward / self flow of a layer (source 002 §6)
* ``check_rollout``         — exercise 3: attention rollout (Abnar & Zuidema 2020), from scratch
* ``check_two_layer_flow``  — exercise 4: attention flow through two layers in closed form

Exercises 2–4 keep the input's dtype (their texts say so, and each check passes float32 inputs
and names the rule when the answer comes back in another dtype). Each check takes ``seed=`` for
fresh inputs (hidden tests use another seed). None may call the course's package: the answers
compute everything with plain tensor operations.
"""

from __future__ import annotations

import torch

from .. import flow as _flow_module
from ..masks import block_mask, causal_mask, local_mask, strided_mask
from .engine import Case, Exercise, Label, randn

# Bound once, at import (a later assignment to a module attribute changes nothing here).
_directional_flow = _flow_module.directional_flow
_flow_shares = _flow_module.flow_shares
_flow_statistics = _flow_module.flow_statistics
_reachability = _flow_module.reachability
_layers_to_reach = _flow_module.layers_to_reach
_attention_rollout = _flow_module.attention_rollout
_attention_flow = _flow_module.attention_flow
_max_flow = _flow_module.max_flow
_DT = torch.float64


def _rows(g, *shape, dtype=_DT, scale=2.0, mask=None):
    """Softmax rows of random scores (a mask's False entries get weight 0)."""
    s = randn(g, *shape, dtype=_DT, scale=scale)
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    e = torch.exp(s - s.amax(-1, keepdim=True))
    return (e / e.sum(-1, keepdim=True)).to(dtype)


# ------------------------------------------------------------------- 1: forward/backward/self


def _flow_split_ref(weights):
    """(forward, backward, self) = (Σ_i Σ_{j<i} A_ij, Σ_i Σ_{j>i} A_ij, Σ_i A_ii), each (...)."""
    return tuple(_directional_flow(weights))


def _flow_split_cases(g) -> list[Case]:
    T = 6
    return [
        Case("one (6, 6) softmax matrix", (_rows(g, T, T),)),
        Case("a (2, 3, 5, 5) batch of heads", (_rows(g, 2, 3, 5, 5),)),
        Case("causal weights: nothing from later keys", (_rows(g, 7, 7, mask=causal_mask(7)),)),
        Case("uniform weights 1/8", (torch.full((8, 8), 1 / 8, dtype=_DT),)),
        Case("each query reads only itself", (torch.eye(5, dtype=_DT).expand(2, 5, 5).clone(),)),
        Case("float32 weights", (_rows(g, 3, 6, 6, dtype=torch.float32),)),
        Case(
            "weights that need not sum to 1 (any non-negative tensor)",
            (torch.rand(4, 4, generator=g, dtype=_DT),),
        ),
    ]


def _totals(w):
    s = _directional_flow(w)
    return s.forward, s.backward, s.self_loop


check_flow_split = Exercise(
    _flow_split_ref,
    _flow_split_cases,
    refuse=[_directional_flow, _flow_shares, _flow_statistics],
    outputs=("forward", "backward", "self"),
    diagnoses=[
        (
            "forward and backward are swapped: forward flow comes from EARLIER keys, j < i "
            "(below the diagonal), backward flow from later keys, j > i",
            lambda w: (_totals(w)[1], _totals(w)[0], _totals(w)[2]),
        ),
        (
            "the diagonal (j = i) was counted in the forward flow: forward is strictly j < i, "
            "the diagonal is the self flow",
            lambda w: (_totals(w)[0] + _totals(w)[2], _totals(w)[1], _totals(w)[2]),
        ),
        (
            "the diagonal (j = i) was counted in the backward flow: backward is strictly j > i",
            lambda w: (_totals(w)[0], _totals(w)[1] + _totals(w)[2], _totals(w)[2]),
        ),
        (
            "divided the sums (by the number of queries or by the total weight): the source's "
            "flows are plain sums over every query i",
            lambda w: tuple(_flow_shares(w)),
        ),
        (
            "divided the sums (by the number of queries or by the total weight): the source's "
            "flows are plain sums over every query i",
            lambda w: tuple(t / w.shape[-2] for t in _totals(w)),
        ),
    ],
)


# ------------------------------------------------------------------------ 2: reachability


def _reachability_ref(mask, layers):
    """(M ∨ I)^L as a boolean matrix power: (T, T) bool."""
    return _reachability(mask, layers)


def _chain(T):
    chain = torch.zeros(T, T, dtype=torch.bool)
    chain[torch.arange(1, T), torch.arange(T - 1)] = True  # i reads i - 1 only, not itself
    return chain


def _reachability_cases(g) -> list[Case]:
    T = 8 + int(torch.randint(0, 3, (), generator=g))  # 8..10
    random = torch.rand(T, T, generator=g) < 0.2
    L = int(torch.randint(3, 5, (), generator=g))  # 3 or 4: "L - 1 layers" and "1 layer" differ
    return [
        Case("causal mask, 2 layers", (causal_mask(T), 2)),
        Case(Label("local window 1, {L} layers", L=L), (local_mask(T, 1), L)),
        Case("strided mask (stride 3), 2 layers", (strided_mask(T, 3), 2)),
        Case("blocks of 4, 5 layers", (block_mask(T, 4), 5)),
        Case(Label("a sparse random mask, {L} layers", L=L), (random, L)),
        Case(
            "a chain without self loops (i reads only i − 1), 3 layers",
            (_chain(T), 3),
            hint="every Transformer layer has a residual path: a position keeps its own "
            "information, so use M ∨ I for each layer",
        ),
        Case(
            "0 layers: each output depends on its own input only",
            (local_mask(T, 2), 0),
            hint="with no layer, position i can depend only on input i: the identity",
        ),
        Case("bidirectional, 1 layer", (torch.ones(T, T, dtype=torch.bool), 1)),
    ]


def _power(step, layers):
    reach = torch.eye(step.shape[-1], dtype=torch.bool)
    for _ in range(layers):
        reach = (step.double() @ reach.double()) > 0
    return reach


check_reachability = Exercise(
    _reachability_ref,
    _reachability_cases,
    refuse=[_layers_to_reach],
    diagnoses=[
        (
            "no residual path: after each layer a position must keep its own information too "
            "(Eq. 5.4.8, X + Attention), so the one-layer graph is M ∨ I, not M",
            lambda m, L: _power(m, L) if L > 0 else None,
        ),
        (
            "one layer too few: L layers compose L one-layer graphs",
            lambda m, L: _reachability(m, L - 1) if L > 1 else None,
        ),
        (
            "only one layer: after L layers the paths are L steps long (a boolean matrix power)",
            lambda m, L: _reachability(m, 1) if L > 1 else None,
        ),
        (
            "transposed: mask[i, j] = True means i reads j, so information flows j → i and "
            "R[i, j] asks whether output i can depend on input j",
            lambda m, L: _reachability(m, L).T,
        ),
    ],
)


# ----------------------------------------------------------------------------- 3: rollout


def _rollout_ref(layers):
    """Ã_L ⋯ Ã_1 with Ã_l = ½ I + ½ mean over heads of layer l: (B, T, T)."""
    return _attention_rollout(list(layers))


def _rollout_cases(g) -> list[Case]:
    def stack(n, B=2, H=2, T=5, dtype=_DT, mask=None):
        return tuple(_rows(g, B, H, T, T, dtype=dtype, mask=mask) for _ in range(n))

    return [
        Case("one layer, 3 heads", (stack(1, H=3),)),
        Case("two layers, 2 heads", (stack(2),)),
        Case("three layers, 4 heads, T = 6", (stack(3, H=4, T=6),)),
        Case("two causal layers", (stack(2, T=6, mask=causal_mask(6)),)),
        Case("three layers, one head", (stack(3, B=1, H=1),)),
        Case("float32 weights, two layers", (stack(2, dtype=torch.float32),)),
    ]


def _plain_rollout(layers, residual=0.5, order="top_left", heads="mean"):
    out = None
    for w in layers:
        if heads == "mean":
            a = w.mean(1)
        elif heads == "first":
            a = w[:, 0]
        else:
            a = w.sum(1)
        eye = torch.eye(w.shape[-1], dtype=w.dtype)
        if residual == "add":
            a = a + eye
        elif residual == "half_eye":  # ½ I + A
            a = 0.5 * eye + a
        else:
            a = residual * eye + (1 - residual) * a
        out = a if out is None else (a @ out if order == "top_left" else out @ a)
    return out


check_rollout = Exercise(
    _rollout_ref,
    _rollout_cases,
    refuse=[_attention_flow],
    diagnoses=[
        (
            "the layers are multiplied in the wrong order: the last layer goes on the left, "
            "Ã_L ⋯ Ã_2 Ã_1 (row i of the result is the top position i)",
            lambda ls: _plain_rollout(ls, order="bottom_left") if len(ls) > 1 else None,
        ),
        (
            "no residual: Abnar & Zuidema add the identity for the residual connection, "
            "Ã = ½ I + ½ A",
            lambda ls: _plain_rollout(ls, residual=0.0),
        ),
        (
            "A + I is not a distribution (its rows sum to 2): take ½ I + ½ A",
            lambda ls: _plain_rollout(ls, residual="add"),
        ),
        (
            "used one head: average the heads of each layer first",
            lambda ls: _plain_rollout(ls, heads="first") if ls[0].shape[1] > 1 else None,
        ),
        (
            "the attention term lacks its ½: Ã = ½ I + ½ A (its rows sum to 1; those of ½ I + A "
            "sum to 1.5)",
            lambda ls: _plain_rollout(ls, residual="half_eye"),
        ),
        (
            "summed the heads: average them (each row must still sum to 1)",
            lambda ls: _plain_rollout(ls, heads="sum") if ls[0].shape[1] > 1 else None,
        ),
        (
            "averaged the layers: rollout multiplies them (paths through several layers)",
            lambda ls: (
                sum(0.5 * torch.eye(w.shape[-1], dtype=w.dtype) + 0.5 * w.mean(1) for w in ls)
                / len(ls)
                if len(ls) > 1
                else None
            ),
        ),
    ],
)


# --------------------------------------------------------------------- 4: two-layer flow


def _two_layer_flow_ref(first, second):
    """flow[i, j] = max flow from input j to top position i through capacities
    first[k, j] (j → k) and second[i, k] (k → i) = Σ_k min(first[k, j], second[i, k]) (equal to
    ``attncourse.flow.attention_flow`` with residual=0 on these two matrices: the tests check)."""
    return torch.minimum(first.unsqueeze(0), second.unsqueeze(-1)).sum(-2)  # (i, j)


def _two_layer_flow_cases(g) -> list[Case]:
    def mixed(T, dtype=_DT, mask=None):
        eye = torch.eye(T, dtype=_DT)
        return (0.5 * eye + 0.5 * _rows(g, T, T, mask=mask)).to(dtype)

    T = 5
    sparse = torch.rand(T, T, generator=g) < 0.4
    return [
        Case("two random layers, T = 5", (mixed(T), mixed(T))),
        Case("T = 7", (mixed(7), mixed(7))),
        Case("causal layers", (mixed(6, mask=causal_mask(6)), mixed(6, mask=causal_mask(6)))),
        Case(
            "sparse layers (many capacities 0)",
            (mixed(T, mask=sparse | torch.eye(T, dtype=torch.bool)), mixed(T)),
        ),
        Case(
            "identity layers: each position keeps only itself",
            (torch.eye(4, dtype=_DT), torch.eye(4, dtype=_DT)),
        ),
        Case("float32 layers", (mixed(T, dtype=torch.float32), mixed(T, dtype=torch.float32))),
    ]


check_two_layer_flow = Exercise(
    _two_layer_flow_ref,
    _two_layer_flow_cases,
    refuse=[_attention_flow, _max_flow],
    diagnoses=[
        (
            "that is rollout (a sum of PRODUCTS along paths); flow treats the weights as "
            "capacities: a path j → k → i carries at most the smaller of its two capacities",
            lambda a, b: b @ a,
        ),
        (
            "took the largest path only: the paths j → k → i for different k share no edge, so "
            "their flows add up",
            lambda a, b: torch.minimum(a.unsqueeze(0), b.unsqueeze(-1)).amax(-2),
        ),
        (
            "the layers are swapped: the first layer's capacity first[k, j] carries j → k, the "
            "second's second[i, k] carries k → i",
            lambda a, b: _two_layer_flow_ref(b, a),
        ),
        (
            "transposed: row i is the top position (the receiver), column j the input",
            lambda a, b: _two_layer_flow_ref(a, b).T,
        ),
        (
            "min of the two totals: the bottleneck is per path (per middle position k), not of "
            "the sums",
            lambda a, b: torch.minimum(a.sum(0).unsqueeze(0), b.sum(1).unsqueeze(1)),
        ),
    ],
)


__all__ = ["check_flow_split", "check_reachability", "check_rollout", "check_two_layer_flow"]
