"""Attention weights are not information flow: raw attention, attention rollout and attention
flow (Abnar & Zuidema 2020, via ``attncourse.flow``) judged against two attributions that ask
the model itself which inputs matter — the input gradient and blanking a token out.

All for the palindrome fill-in encoder: the output is the prediction at one masked position.
"""

from __future__ import annotations

import torch

from ...flow import attention_flow, attention_rollout
from ...losses import log_softmax
from ...threads import single_thread
from .tasks import MASK, palindrome_batch


def average_ranks(x: torch.Tensor) -> torch.Tensor:
    """Ranks 1..n along the last dimension, ties sharing the mean of their ranks. x (..., n)."""
    below = (x.unsqueeze(-1) > x.unsqueeze(-2)).sum(-1)  # (..., n) how many are smaller
    equal = (x.unsqueeze(-1) == x.unsqueeze(-2)).sum(-1)  # (..., n) itself included
    return below.double() + (equal.double() + 1) / 2


def spearman(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Spearman's rank correlation along the last dimension: the Pearson correlation of the
    (average) ranks. a, b (..., n) -> (...); nan where one of them is constant."""
    ra, rb = average_ranks(a), average_ranks(b)  # (..., n)
    ra = ra - ra.mean(-1, keepdim=True)
    rb = rb - rb.mean(-1, keepdim=True)
    return (ra * rb).sum(-1) / (ra.norm(dim=-1) * rb.norm(dim=-1))


def _at(logits: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    return logits[torch.arange(logits.shape[0]), positions]  # (B, V)


def gradient_attribution(model, tokens: torch.Tensor, positions: torch.Tensor):
    """‖∂ log p(ŷ_b) / ∂e_{b,j}‖ for every input position j, with ŷ_b the model's prediction at
    ``positions[b]`` and e the input embeddings (token + position): a saliency map (Simonyan et al.
    2014). tokens (B, T), positions (B,). Returns (attribution (B, T), predictions (B,))."""
    embedded = model.embed(tokens).detach().requires_grad_(True)  # (B, T, d)
    logits, _ = model.forward_embedded(embedded)  # (B, T, V)
    log_p = log_softmax(_at(logits, positions))  # (B, V)
    predicted = log_p.argmax(-1)  # (B,)
    log_p.gather(1, predicted[:, None]).sum().backward()
    return embedded.grad.norm(dim=-1), predicted  # (B, T), (B,)


@torch.no_grad()
def blank_out_attribution(model, tokens, positions, predicted, blank: int = MASK):
    """log p(ŷ) − log p(ŷ | token j replaced by ``blank``), for every j: how much the prediction
    loses when position j is blanked out (the paper's ablation scores). (B, T)."""
    B, T = tokens.shape
    base = log_softmax(_at(model(tokens)[0], positions)).gather(1, predicted[:, None])[:, 0]
    drops = torch.zeros(B, T, dtype=torch.float64)
    for j in range(T):
        blanked = tokens.clone()
        blanked[:, j] = blank
        log_p = log_softmax(_at(model(blanked)[0], positions))  # (B, V)
        drops[:, j] = (base - log_p.gather(1, predicted[:, None])[:, 0]).double()
    return drops


@torch.no_grad()
def attention_explanations(model, tokens, positions, flow: bool = True) -> dict:
    """What each attention-based method says position ``positions[b]`` reads from every input:
    ``raw L1`` … ``raw LN`` (the head-averaged weights of one layer, the usual heat map),
    ``rollout`` and ``flow``. Each (B, T), float64."""
    _, weights = model(tokens)  # L x (B, H, T, T)
    rows = torch.arange(tokens.shape[0])
    out = {
        f"raw L{layer + 1}": w.mean(1)[rows, positions].double() for layer, w in enumerate(weights)
    }
    out["rollout"] = attention_rollout(weights)[rows, positions].double()
    if flow:
        out["flow"] = attention_flow(weights, queries=positions)
    return out


@single_thread()
def compare_explanations(model, samples: int = 40, seed: int = 123) -> dict:
    """Abnar & Zuidema's comparison on the fill-in encoder, for ``samples`` sequences with one
    masked token each. For every method (raw attention of each layer, rollout, flow), the mean
    over sequences of:

    * ``spearman_gradient``: Spearman correlation with the gradient attribution;
    * ``spearman_blank``: Spearman correlation with the blank-out attribution;
    * ``top1_blank``: how often the method's highest-scoring input other than the masked
      position itself is the input whose blanking hurts the prediction most.
    """
    tokens, positions, _ = palindrome_batch(samples, torch.Generator().manual_seed(seed), masks=1)
    positions = positions[:, 0]  # (N,)
    grads, predicted = gradient_attribution(model, tokens, positions)
    blank = blank_out_attribution(model, tokens, positions, predicted)
    rows = torch.arange(samples)
    blank_top = blank.argmax(-1)  # (N,)
    results = {}
    for name, scores in attention_explanations(model, tokens, positions).items():
        others = scores.clone()
        others[rows, positions] = -1.0  # the query's own position does not count
        results[name] = {
            "spearman_gradient": float(spearman(scores, grads.double()).mean()),
            "spearman_blank": float(spearman(scores, blank).mean()),
            "top1_blank": float((others.argmax(-1) == blank_top).double().mean()),
        }
    results["_blank_top_is_mirror"] = float(
        (blank_top == tokens.shape[1] - 1 - positions).double().mean()
    )
    return results
