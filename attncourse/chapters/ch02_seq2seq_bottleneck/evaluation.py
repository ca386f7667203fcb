"""What chapter 02 measures: accuracy vs source length (Bahdanau et al. 2015, Fig. 2), the cost of
a model (parameters, FLOPs of greedy decoding), alignments (Fig. 3), and bits through the
bottleneck (source 003: I(X;Y) ≤ I(X;C) ≤ H(C) ≤ log|C|; Fano's inequality).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from ...metrics import entropy, mutual_information
from ...threads import single_thread
from .data import SQUARE_TASKS, make_batch, source_position, target_length, true_alignment
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
            tokens, _ = greedy_decode(model, source, steps=target.shape[1])
            correct = (tokens == target).double()  # (samples, n)
            out.append(correct.mean(0) if per_position else correct.mean())
    return out if per_position else torch.stack(out)


def parameter_count(model: torch.nn.Module) -> int:
    """The number of trained numbers in a model."""
    return sum(p.numel() for p in model.parameters())


def decoding_flops(model: Seq2Seq, length: int, task: str = "copy") -> int:
    """FLOPs of the matrix products in encoding one length-n source and greedily decoding its
    target (2 per multiply-add, the convention of ``torch.utils.flop_counter``, which the tests
    check this count against): the two encoder GRUs, s_0, the decoder GRU, the attention and the
    read-out. Depends only on the sizes, never on the weights or the data.

    Attention's cost grows with n² (each of the T steps scores all n positions; ``general`` and
    ``concat``, as written here, also project every key at every step); a fixed context's with n.
    """
    c = model.config
    n, T = length, target_length(task, length)
    E, He, V = c["emb_dim"], c["enc_hidden"], c["num_tokens"]
    K, Hd, A = model.key_dim, model.dec_hidden, c["attn_hidden"] or model.dec_hidden
    kind = model.kind
    decoder_input = E + (K if kind in ("none", "additive") else 0)
    macs = 2 * n * 3 * He * (E + He)  # bidirectional encoder GRU: 3 gates, 2 directions
    macs += K * Hd  # s_0 = tanh(W_s C)
    per_step = 3 * Hd * (decoder_input + Hd)  # decoder GRU
    per_step += (K + Hd) * Hd + Hd * V  # read-out: combine [c_t; s_t], then the logits
    if kind == "additive":
        per_step += Hd * A + n * K * A + n * A  # W_a s, U_a h_j for every j, v_a
    elif kind == "dot":
        per_step += n * K  # s^T h_j
    elif kind in ("general", "local-m"):
        per_step += n * K * Hd + n * Hd  # W_a h_j for every j, then s^T (W_a h_j)
    elif kind == "concat":
        per_step += n * (Hd + K) * A + n * A  # W_a [s; h_j] for every j, v_a
    if kind != "none":
        per_step += n * K  # c_t = Σ_j α_tj h_j
    return 2 * (macs + T * per_step)


@torch.no_grad()
def alignment_matrices(
    model: Seq2Seq, source: torch.Tensor, steps: int | None = None
) -> torch.Tensor:
    """Greedy-decoding attention weights (B, T, S) for ``source`` (B, S), T = ``steps`` (default
    S); rows sum to 1."""
    if model.kind == "none":
        raise ValueError(
            "the 'none' model has no attention weights: "
            "it reads the same fixed context C at every step"
        )
    with single_thread():
        _, weights = greedy_decode(model, source, steps=steps)
    return weights


def _wanted_positions(weights: torch.Tensor, task: str) -> torch.Tensor:
    """The source position each target row should read: (T,) long, checked against the shape."""
    if task == "merge":
        raise ValueError("merge reads two source positions per row: use alignment_mass")
    rows, S = weights.shape[-2:] if weights.dim() >= 2 else (0, 0)
    if weights.dim() < 2 or S < 1 or target_length(task, S) != rows:
        layout = "(..., n, n)" if task in SQUARE_TASKS else "(..., 2n, n)"
        raise ValueError(
            f"weights for {task} must be {layout} with as many targets as the task writes, "
            f"got {tuple(weights.shape)}"
        )
    return torch.tensor([source_position(task, t, S) for t in range(rows)])  # (T,)


def diagonal_fraction(weights: torch.Tensor, task: str = "copy", band: int = 1) -> float:
    """Share of target rows whose attention peak lies within ±band of the task's true alignment.

    weights (..., T, S): copy's alignment is j = t, reverse's j = n - 1 - t (T = S = n),
    duplicate's j = t // 2 (T = 2n).
    """
    wanted = _wanted_positions(weights, task)  # (T,)
    peak = weights.argmax(dim=-1)  # (..., T)
    return float(((peak - wanted).abs() <= band).double().mean())


def peak_offsets(weights: torch.Tensor, task: str = "copy") -> torch.Tensor:
    """argmax_j α_tj minus the true source position, for every row: (..., T) long."""
    return weights.argmax(dim=-1) - _wanted_positions(weights, task)


def alignment_mass(weights: torch.Tensor, task: str) -> torch.Tensor:
    """The weight each target row puts on the source positions the task says it reads (one for
    copy / reverse / duplicate, the pair 2t, 2t+1 for merge): (..., T) in [0, 1]."""
    T, S = weights.shape[-2:]
    truth = true_alignment(task, S)  # (T', S)
    if truth.shape[0] != T:
        raise ValueError(
            f"weights for {task} with {S} source positions need {truth.shape[0]} rows, got {T}"
        )
    return (weights * truth.to(weights.dtype)).sum(-1)  # (..., T)


@torch.no_grad()
def pair_sensitivity(model: Seq2Seq, source: torch.Tensor, shift: int = 7) -> torch.Tensor:
    """For the merge task (y_t reads x_{2t} and x_{2t+1}): how often the greedy output at step t
    changes when only x_{2t} (first entry) or only x_{2t+1} (second) is replaced by
    (x + shift) mod V. Averaged over the examples and the complete pairs: (2,) float64."""
    B, S = source.shape
    pairs = S // 2
    if pairs < 1:
        raise ValueError(f"the source must hold at least one pair, got length {S}")
    if shift % model.num_tokens == 0:
        raise ValueError(f"shift must change the token (not a multiple of V), got {shift}")
    steps = target_length("merge", S)
    with single_thread():
        base, _ = greedy_decode(model, source, steps=steps)  # (B, T)
        changed = torch.zeros(2, dtype=torch.float64)
        for t in range(pairs):
            for which in (0, 1):
                edited = source.clone()
                edited[:, 2 * t + which] = (edited[:, 2 * t + which] + shift) % model.num_tokens
                out, _ = greedy_decode(model, edited, steps=steps)
                changed[which] += (out[:, t] != base[:, t]).double().mean()
    return changed / pairs


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
    gives I(X_i; Y_i) ≥ log2 V - h(p) - p log2(V - 1) bits.

    The bound is never negative: it is the KL divergence between (1 - p, p/(V-1), ..., p/(V-1))
    and the uniform distribution, 0 only at chance (p = 1 - 1/V) and positive on both sides
    (accuracy 0 still gives log2 V - log2(V - 1) bits: "never the right token" is information).
    ``max(0, ·)`` only removes round-off at chance."""
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
    """A lower bound on I(X; Y) from the accuracy at each target position: Σ_i Fano bound (each
    term ≥ 0 for every accuracy, see ``fano_information_bound``).

    For independent tokens, I(X; Y) ≥ Σ_i I(X_i; Y_i) (chain rule), and each term is bounded
    below by Fano's inequality. For a model without attention, Y is a function of C alone, so
    this is also a lower bound on I(X; C) ≤ H(C): the bits C must carry (source 003).
    """
    acc = torch.as_tensor(position_accuracy, dtype=torch.float64).flatten()
    return sum(fano_information_bound(1.0 - float(a), num_tokens) for a in acc)
