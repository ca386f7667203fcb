"""What chapter 02 measures: accuracy vs source length (Bahdanau et al. 2015, Fig. 2), alignments
(Fig. 3), and bits through the bottleneck (source 003: I(X;Y) ≤ I(X;C) ≤ H(C) ≤ log|C|; Fano's
inequality).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from ...metrics import entropy, mutual_information
from ...threads import single_thread
from .data import make_batch
from .model import Seq2Seq, greedy_decode

# ------------------------------------------------------------------------------ evaluation


@torch.no_grad()
def accuracy_by_length(
    model: Seq2Seq,
    task: str,
    lengths: Sequence[int],
    samples: int = 100,
    seed: int = 1234,
    per_position: bool = False,
):
    """Greedy-decoding token accuracy on ``samples`` fresh sources of each length (Bahdanau Fig. 2).

    Returns a float64 tensor (len(lengths),), or with ``per_position`` a list of (n,) tensors (the
    accuracy at each target position, for the information bound).
    """
    g = torch.Generator().manual_seed(seed)
    out = []
    with single_thread():
        for n in lengths:
            source, target = make_batch(task, samples, int(n), model.num_tokens, g)
            tokens, _ = greedy_decode(model, source)
            correct = (tokens == target).double()  # (samples, n)
            out.append(correct.mean(0) if per_position else correct.mean())
    return out if per_position else torch.stack(out)


@torch.no_grad()
def alignment_matrices(model: Seq2Seq, source: torch.Tensor) -> torch.Tensor:
    """Greedy-decoding attention weights (B, T, S) for ``source`` (B, S); rows sum to 1."""
    if model.kind == "none":
        raise ValueError(
            "the 'none' model has no attention weights: "
            "it reads the same fixed context C at every step"
        )
    with single_thread():
        _, weights = greedy_decode(model, source)
    return weights


def diagonal_fraction(weights: torch.Tensor, task: str = "copy", band: int = 1) -> float:
    """Share of target rows whose attention peak lies within ±band of the task's true alignment.

    weights (..., T, S) with T = S: copy's alignment is j = t, reverse's j = n - 1 - t.
    """
    if weights.dim() < 2 or weights.shape[-1] != weights.shape[-2]:
        raise ValueError(
            "weights must be (..., n, n) with as many targets as sources, "
            f"got {tuple(weights.shape)}"
        )
    n = weights.shape[-1]
    peak = weights.argmax(dim=-1)  # (..., T)
    t = torch.arange(n)
    wanted = t if task == "copy" else n - 1 - t  # (T,)
    return float(((peak - wanted).abs() <= band).double().mean())


def peak_offsets(weights: torch.Tensor, task: str = "copy") -> torch.Tensor:
    """argmax_j α_tj minus the true source position, for every row: (..., T) long."""
    n = weights.shape[-1]
    t = torch.arange(weights.shape[-2])
    wanted = t if task == "copy" else n - 1 - t
    return weights.argmax(dim=-1) - wanted


# ------------------------------------------------------------------------------ information


def entropy_bits(p) -> float:
    """H(p) = -Σ p log2 p in bits of a probability table of any shape (0 log 0 = 0)."""
    return entropy(torch.as_tensor(p, dtype=torch.float64))


def mutual_information_bits(joint) -> float:
    """I(X; Y) = H(X) + H(Y) - H(X, Y) in bits, from a joint table p(x, y) of shape (|X|, |Y|)."""
    p = torch.as_tensor(joint, dtype=torch.float64)
    if p.dim() != 2:
        raise ValueError(f"joint must be a 2-D table p(x, y), got shape {tuple(p.shape)}")
    return mutual_information(p, 0, 1)


def joint_table(x_ids, y_ids, num_x: int, num_y: int, weights=None) -> torch.Tensor:
    """The joint distribution of two discrete variables from paired outcomes (with optional
    probabilities ``weights``, default uniform): (num_x, num_y) float64 summing to 1."""
    x = torch.as_tensor(x_ids, dtype=torch.long)
    y = torch.as_tensor(y_ids, dtype=torch.long)
    w = (
        torch.full(x.shape, 1.0 / x.numel(), dtype=torch.float64)
        if weights is None
        else torch.as_tensor(weights, dtype=torch.float64)
    )
    table = torch.zeros(num_x * num_y, dtype=torch.float64)
    table.index_add_(0, x * num_y + y, w)
    return table.view(num_x, num_y)


def binary_entropy_bits(p: float) -> float:
    """h(p) = -p log2 p - (1-p) log2 (1-p), with h(0) = h(1) = 0."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"p must be a probability in [0, 1], got {p}")
    return entropy(torch.tensor([p, 1.0 - p], dtype=torch.float64))


def fano_information_bound(error_rate: float, num_tokens: int) -> float:
    """Fano: H(X_i | Y_i) ≤ h(p) + p log2(V - 1), so a uniform token X_i decoded with error rate p
    gives I(X_i; Y_i) ≥ log2 V - h(p) - p log2(V - 1) bits (0 at chance, p = 1 - 1/V).
    Clipped at 0."""
    if num_tokens < 2:
        raise ValueError(f"num_tokens must be >= 2, got {num_tokens}")
    if not 0.0 <= error_rate <= 1.0:
        raise ValueError(f"error_rate must be in [0, 1], got {error_rate}")
    bound = (
        math.log2(num_tokens)
        - binary_entropy_bits(error_rate)
        - error_rate * math.log2(num_tokens - 1)
    )
    return max(0.0, bound)


def transmitted_bits(position_accuracy, num_tokens: int) -> float:
    """A lower bound on I(X; Y) from the accuracy at each target position: Σ_i Fano bound.

    For independent tokens, I(X; Y) ≥ Σ_i I(X_i; Y_i) (chain rule), and each term is bounded
    below by Fano's inequality. For a model without attention, Y is a function of C alone, so
    this is also a lower bound on I(X; C) ≤ H(C): the bits C must carry (source 003).
    """
    acc = torch.as_tensor(position_accuracy, dtype=torch.float64).flatten()
    return sum(fano_information_bound(1.0 - float(a), num_tokens) for a in acc)
