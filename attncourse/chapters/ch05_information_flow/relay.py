"""The two-layer relay of source 001 Eq. (5.4.7)–(5.4.8) in a trained induction model (Olsson et
al. 2022): a previous-token head in layer 1 feeds an induction head in layer 2.

The measurements read the attention-only decoder's weights on induction data and replace
layer 1's attention by fixed patterns to see what the model needs from it.
"""

from __future__ import annotations

import torch

from ...masks import causal_mask
from ...threads import single_thread
from .tasks import INDUCTION_KEYS, induction_accuracy, induction_batch, induction_positions


@torch.no_grad()
@single_thread()
def relay_scores(model, samples: int = 500, seed: int = 7) -> dict:
    """Per head, on fresh induction data:

    * ``previous_token`` (layer 1): mean weight of A[i, i − 1] over the first eight tokens' queries
      i = 1..7 (a uniform causal head gives the mean of 1/(i + 1), ``previous_token_uniform``);
    * ``induction`` (layer 2): mean weight that a pair's first token (value r_k) puts on position
      k + 1, the token that followed its earlier copy (``induction_uniform``: 1/(t + 1));
    * ``same_token`` (layer 2): the weight on position k, the earlier copy itself;
    * ``two_hop``: mean of A₂[t, k + 1] · A₁[k + 1, k] (head-averaged), the weight of the path
      t ← k + 1 ← k that carries "the token before k + 1" into the match (Eq. 5.4.7–5.4.8).
    """
    tokens, _ = induction_batch(samples, torch.Generator().manual_seed(seed))
    _, weights = model(tokens[:, :-1])  # L x (N, H, T, T)
    first, second = weights[0], weights[1]
    n = INDUCTION_KEYS
    rows = torch.arange(1, n)  # queries 1..7
    prev = first[:, :, rows, rows - 1].mean((0, 2))  # (H,)
    queries, k = induction_positions(tokens)  # (P,), (N, P)
    b = torch.arange(samples)[:, None]  # (N, 1)
    at_answer = second[b, :, queries[None, :], k + 1]  # (N, P, H)
    at_copy = second[b, :, queries[None, :], k]  # (N, P, H)
    mean_first, mean_second = first.mean(1), second.mean(1)  # (N, T, T)
    hop = mean_second[b, queries[None, :], k + 1] * mean_first[b, k + 1, k]  # (N, P)
    return {
        "previous_token": prev.tolist(),
        "previous_token_uniform": float((1.0 / (rows + 1).double()).mean()),
        "induction": at_answer.mean((0, 1)).tolist(),
        "same_token": at_copy.mean((0, 1)).tolist(),
        "induction_uniform": float((1.0 / (queries + 1).double()).mean()),
        "two_hop": float(hop.mean()),
    }


def layer_one_patterns(length: int, heads: int) -> dict:
    """Fixed attention patterns to put in place of layer 1's, each (1, H, T, T): ``itself``
    (every position reads only itself: no information moves), ``previous token`` (position i
    reads i − 1, position 0 itself) and ``uniform`` (the causal average)."""
    T = length
    itself = torch.eye(T)
    previous = torch.zeros(T, T)
    previous[0, 0] = 1.0
    previous[torch.arange(1, T), torch.arange(T - 1)] = 1.0
    causal = causal_mask(T).float()
    uniform = causal / causal.sum(-1, keepdim=True)
    return {
        name: pattern.expand(1, heads, T, T)
        for name, pattern in (
            ("itself", itself),
            ("previous token", previous),
            ("uniform", uniform),
        )
    }


def relay_ablation(model, samples: int = 1000, seed: int = 99) -> dict:
    """Induction accuracy with layer 1's attention as learned and replaced by each fixed pattern
    of ``layer_one_patterns`` (the same pattern for every sequence of the batch)."""
    T = 23  # inputs: 24 tokens minus the last
    heads = model.blocks[0].attn.num_heads
    results = {"learned": induction_accuracy(model, samples, seed)}
    for name, pattern in layer_one_patterns(T, heads).items():
        override = {0: pattern.expand(samples, heads, T, T)}
        results[name] = induction_accuracy(model, samples, seed, override=override)
    return results
