"""Synthetic sequence-to-sequence tasks for chapter 02 (no downloads).

A source x = (x_1, ..., x_n) of n tokens drawn uniformly from {0, ..., V-1}; the target is
x itself (**copy**: the true alignment is the diagonal, target position t reads source position t),
x reversed (**reverse**: the anti-diagonal, t reads n-1-t), every token twice (**duplicate**,
x_1 x_1 x_2 x_2 ...: one-to-many, target steps 2j and 2j+1 read source position j) or the sums of
neighbouring pairs (**merge**, y_t = (x_{2t} + x_{2t+1}) mod V, a lone last token kept as it is:
many-to-one, target step t reads positions 2t and 2t+1). The target length follows from the
source length (``target_length``), so decoding runs a known number of steps and needs no
end-of-sequence token. A batch holds sequences of one length (no padding), which keeps the models
free of masks and fast on a CPU.

With independent uniform tokens the source carries exactly H(X) = n log2 V bits: the number a
fixed-size context C must hold for a perfect copy (the chapter's information argument).
"""

from __future__ import annotations

import math

import torch

from ..._validation import require_choice, require_positive_int

TASKS = ("copy", "reverse", "duplicate", "merge")
#: the tasks whose alignment is a permutation (target length = source length)
SQUARE_TASKS = ("copy", "reverse")


def target_length(task: str, length: int) -> int:
    """How many tokens the target of a length-n source has: n, 2n (duplicate) or ⌈n/2⌉ (merge)."""
    require_choice("task", task, TASKS)
    require_positive_int("length", length)
    return {"duplicate": 2 * length, "merge": (length + 1) // 2}.get(task, length)


def make_target(task: str, source: torch.Tensor, num_tokens: int | None = None) -> torch.Tensor:
    """The target of ``task`` for a source batch (B, n) of token ids: (B, target_length(task, n)),
    same dtype. ``merge`` adds modulo V, so it needs ``num_tokens``."""
    require_choice("task", task, TASKS)
    if not isinstance(source, torch.Tensor) or source.dim() != 2:
        raise ValueError(
            f"source must be a (B, n) tensor of token ids, got {getattr(source, 'shape', source)!r}"
        )
    if task == "copy":
        return source.clone()  # (B, n)
    if task == "reverse":
        return source.flip(1)  # (B, n)
    if task == "duplicate":
        return source.repeat_interleave(2, dim=1)  # (B, 2n) x_1 x_1 x_2 x_2 ...
    if not isinstance(num_tokens, int) or num_tokens < 2:
        raise ValueError(f"merge adds modulo V: pass num_tokens (an int >= 2), got {num_tokens!r}")
    first, second = source[:, 0::2], source[:, 1::2]  # (B, ceil(n/2)), (B, floor(n/2))
    merged = first.clone()
    merged[:, : second.shape[1]] = (first[:, : second.shape[1]] + second) % num_tokens
    return merged  # (B, ceil(n/2))


def make_batch(
    task: str,
    batch_size: int,
    length: int,
    num_tokens: int = 20,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``batch_size`` random sources of ``length`` tokens from {0..num_tokens-1} and their targets.

    Returns (source (B, n), target (B, target_length(task, n))), torch.long. Uses ``generator``
    (or the global stream).
    """
    require_choice("task", task, TASKS)
    require_positive_int("batch_size", batch_size)
    require_positive_int("length", length)
    if not isinstance(num_tokens, int) or num_tokens < 2:
        raise ValueError(f"num_tokens must be an int >= 2, got {num_tokens!r}")
    source = torch.randint(0, num_tokens, (batch_size, length), generator=generator)  # (B, n)
    return source, make_target(task, source, num_tokens)


def true_alignment(task: str, length: int) -> torch.Tensor:
    """The alignment the task implies, as a 0/1 matrix (T target rows, S = n source columns): the
    identity for copy, the anti-diagonal for reverse, two rows per column for duplicate, two
    columns per row for merge. (target_length(task, n), n) float32."""
    T = target_length(task, length)
    if task == "merge":
        t, j = torch.arange(T)[:, None], torch.arange(length)[None, :]
        return (j // 2 == t).float()  # (T, n) row t reads 2t and 2t+1
    rows = [source_position(task, t, length) for t in range(T)]
    return torch.eye(length)[rows]  # (T, n)


def source_position(task: str, t: int, length: int) -> int:
    """The one source position that target position t (0-based) reads: t (copy), n-1-t
    (reverse), t // 2 (duplicate). ``merge`` reads two positions: use ``true_alignment``."""
    T = target_length(task, length)
    if task == "merge":
        raise ValueError("merge reads two source positions per target step: use true_alignment")
    if not 0 <= t < T:
        raise ValueError(f"t must be in [0, {T}), got {t}")
    return {"copy": t, "reverse": length - 1 - t, "duplicate": t // 2}[task]


def length_schedule(
    steps: int, min_length: int, max_length: int, generator: torch.Generator | None = None
) -> list[int]:
    """One training length per step, uniform on {min_length..max_length}."""
    require_positive_int("min_length", min_length)
    if max_length < min_length:
        raise ValueError(f"max_length ({max_length}) must be >= min_length ({min_length})")
    return torch.randint(min_length, max_length + 1, (steps,), generator=generator).tolist()


def source_bits(length: int, num_tokens: int) -> float:
    """H(X) = n log2 V bits: the information in a uniform random source of n tokens."""
    require_positive_int("length", length)
    return length * math.log2(num_tokens)


__all__ = [
    "SQUARE_TASKS",
    "TASKS",
    "length_schedule",
    "make_batch",
    "make_target",
    "source_bits",
    "source_position",
    "target_length",
    "true_alignment",
]
