"""The chapter's two synthetic tasks and how the models are scored on them.

* **Palindrome fill-in** (why encoders are bidirectional): a sequence r + reversed(r) of 16
  tokens with some tokens replaced by a MASK token; the model must restore them. A masked token in
  the left half can only be read off its mirror image in the right half: right context.
* **Induction** (the two-layer relay, Olsson et al. 2022): eight distinct tokens, then eight
  pairs (q, a) in which a is the token that followed q among the first eight: "… A B … A → B".
"""

from __future__ import annotations

import math

import torch

from ...losses import cross_entropy
from ...threads import single_thread

# ---------------------------------------------------------------------- palindrome fill-in

FILL_VOCAB = 16  # tokens 0..15
MASK = FILL_VOCAB  # the mask token, 16
FILL_LENGTH = 16


def palindrome_batch(
    batch_size: int,
    generator: torch.Generator,
    masks: int = 3,
    length: int = FILL_LENGTH,
    vocab: int = FILL_VOCAB,
):
    """r + reversed(r) with ``masks`` tokens, from different mirror pairs, replaced by MASK.

    Returns (tokens (B, T) long with MASK at the masked positions, positions (B, masks) long,
    targets (B, masks) long: the original tokens there). Tokens are uniform over ``vocab``.
    """
    half = length // 2
    r = torch.randint(vocab, (batch_size, half), generator=generator)  # (B, T/2)
    full = torch.cat([r, r.flip(1)], dim=1)  # (B, T) a palindrome
    pair = torch.argsort(torch.rand(batch_size, half, generator=generator), 1)[:, :masks]
    left = torch.randint(2, (batch_size, masks), generator=generator) == 0  # which side is masked
    positions = torch.where(left, pair, length - 1 - pair)  # (B, masks) distinct mirror pairs
    tokens = full.scatter(1, positions, MASK)  # (B, T)
    return tokens, positions, full.gather(1, positions)


def fill_loss(model, batch) -> torch.Tensor:
    """Cross-entropy of the model's predictions at the masked positions."""
    tokens, positions, targets = batch
    logits, _ = model(tokens)  # (B, T, V)
    at_masks = logits.gather(1, positions[..., None].expand(-1, -1, logits.shape[-1]))  # (B, k, V)
    return cross_entropy(at_masks, targets)


@torch.no_grad()
@single_thread()
def fill_accuracy(model, samples: int = 2000, seed: int = 99) -> dict:
    """Accuracy at one masked token per sequence, split by where the mask is: ``left`` (the
    answer sits to the right of it) and ``right`` (the answer is to its left)."""
    tokens, positions, targets = palindrome_batch(
        samples, torch.Generator().manual_seed(seed), masks=1
    )
    logits, _ = model(tokens)  # (N, T, V)
    predicted = logits[torch.arange(samples), positions[:, 0]].argmax(-1)  # (N,)
    correct = (predicted == targets[:, 0]).double()
    left = positions[:, 0] < tokens.shape[1] // 2
    return {"left": float(correct[left].mean()), "right": float(correct[~left].mean())}


# -------------------------------------------------------------------------------- induction

INDUCTION_VOCAB = 16
INDUCTION_KEYS = 8  # the eight distinct tokens at the start
INDUCTION_PAIRS = 8
INDUCTION_LENGTH = INDUCTION_KEYS + 2 * INDUCTION_PAIRS  # 24 tokens, 23 predictions


def induction_batch(batch_size: int, generator: torch.Generator):
    """Eight distinct tokens r_0 … r_7, then eight pairs (r_k, r_{k+1}) with k uniform in 0..6.

    Returns (tokens (B, 24) long, scored (B, 23) bool): scored[b, t] marks the predictions of
    token t + 1 that induction can make (t at a pair's first token: "… A B … A → B").
    """
    n, p, V = INDUCTION_KEYS, INDUCTION_PAIRS, INDUCTION_VOCAB
    r = torch.argsort(torch.rand(batch_size, V, generator=generator), dim=1)[:, :n]  # (B, n)
    k = torch.randint(0, n - 1, (batch_size, p), generator=generator)  # (B, p)
    pairs = torch.stack([r.gather(1, k), r.gather(1, k + 1)], dim=2).reshape(batch_size, 2 * p)
    tokens = torch.cat([r, pairs], dim=1)  # (B, 24)
    scored = torch.zeros(batch_size, tokens.shape[1] - 1, dtype=torch.bool)
    scored[:, n::2] = True  # (B, 23) inputs at the pairs' first tokens
    return tokens, scored


def lm_loss(model, batch) -> torch.Tensor:
    """Next-token cross-entropy over every position (a language model's training loss)."""
    tokens, _ = batch
    logits, _ = model(tokens[:, :-1])  # (B, T-1, V)
    return cross_entropy(logits.reshape(-1, logits.shape[-1]), tokens[:, 1:].reshape(-1))


def lm_loss_floor() -> float:
    """The lowest mean next-token loss any predictor that sees only the past can reach on
    ``induction_batch`` data, in nats, exactly: predicting r_t after t distinct tokens is a choice
    among 16 − t (t = 1..7); a pair's first token is one of 7 equally likely; its second is
    determined. Mean over the 23 predictions: (Σ_{m=9}^{15} ln m + 8 ln 7) / 23."""
    n, p = INDUCTION_KEYS, INDUCTION_PAIRS
    first = sum(math.log(INDUCTION_VOCAB - t) for t in range(1, n))
    return (first + p * math.log(n - 1)) / (n - 1 + 2 * p)


@torch.no_grad()
@single_thread()
def induction_accuracy(model, samples: int = 1000, seed: int = 99, override=None) -> float:
    """Teacher-forced accuracy at the induction predictions (the whole sequence is the input)."""
    tokens, scored = induction_batch(samples, torch.Generator().manual_seed(seed))
    logits, _ = model(tokens[:, :-1], override=override)  # (N, 23, V)
    return float((logits.argmax(-1) == tokens[:, 1:])[scored].double().mean())


@torch.no_grad()
@single_thread()
def generation_accuracy(model, samples: int = 1000, seed: int = 99) -> float:
    """Accuracy at the same predictions when the model must generate: the input ends at the
    token whose successor is asked for, so nothing to its right exists yet."""
    tokens, _ = induction_batch(samples, torch.Generator().manual_seed(seed))
    correct = []
    for t in range(INDUCTION_KEYS, tokens.shape[1] - 1, 2):
        logits, _ = model(tokens[:, : t + 1])  # (N, t+1, V) the prefix only
        correct.append(logits[:, -1].argmax(-1) == tokens[:, t + 1])  # (N,)
    return float(torch.stack(correct).double().mean())


@torch.no_grad()
def mean_lm_loss(model, samples: int = 1000, seed: int = 99) -> float:
    """``lm_loss`` on fresh induction data (teacher-forced)."""
    return float(lm_loss(model, induction_batch(samples, torch.Generator().manual_seed(seed))))


def induction_positions(tokens: torch.Tensor):
    """For every scored input position t (a pair's first token, value r_k): the position k of the
    same token among the first eight, and k + 1, the position holding the answer. tokens (B, 24).
    Returns (queries (P,) long, k (B, P) long)."""
    n = INDUCTION_KEYS
    queries = torch.arange(n, tokens.shape[1] - 1, 2)  # (P,)
    matches = tokens[:, queries, None] == tokens[:, None, :n]  # (B, P, n)
    return queries, matches.double().argmax(-1)  # exactly one match: the tokens are distinct
