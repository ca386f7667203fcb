"""Synthetic sequence-to-sequence tasks for chapter 02: copy and reversal (no downloads).

A source x = (x_1, ..., x_n) of n tokens drawn uniformly from {0, ..., V-1}; the target is
x itself (**copy**: the true alignment is the diagonal, target position t reads source position t)
or x reversed (**reverse**: the anti-diagonal, t reads n-1-t). The target has the same length as
the source, so decoding runs exactly n steps and needs no end-of-sequence token. A batch holds
sequences of one length (no padding), which keeps the models free of masks and fast on a CPU.

With independent uniform tokens the source carries exactly H(X) = n log2 V bits: the number a
fixed-size context C must hold for a perfect copy (the chapter's information argument).
"""

from __future__ import annotations

import math

import torch

from ..._validation import require_choice, require_positive_int

TASKS = ("copy", "reverse")


def make_target(task: str, source: torch.Tensor) -> torch.Tensor:
    """The target of ``task`` for a source batch (B, n) of token ids: (B, n), same dtype."""
    require_choice("task", task, TASKS)
    if not isinstance(source, torch.Tensor) or source.dim() != 2:
        raise ValueError(
            f"source must be a (B, n) tensor of token ids, got {getattr(source, 'shape', source)!r}"
        )
    return source.clone() if task == "copy" else source.flip(1)  # (B, n)


def make_batch(
    task: str,
    batch_size: int,
    length: int,
    num_tokens: int = 20,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``batch_size`` random sources of ``length`` tokens from {0..num_tokens-1} and their targets.

    Returns (source, target), both (B, n) torch.long. Uses ``generator`` (or the global stream).
    """
    require_choice("task", task, TASKS)
    require_positive_int("batch_size", batch_size)
    require_positive_int("length", length)
    if not isinstance(num_tokens, int) or num_tokens < 2:
        raise ValueError(f"num_tokens must be an int >= 2, got {num_tokens!r}")
    source = torch.randint(0, num_tokens, (batch_size, length), generator=generator)  # (B, n)
    return source, make_target(task, source)


def true_alignment(task: str, length: int) -> torch.Tensor:
    """The alignment the task implies, as a 0/1 matrix (T = n target rows, S = n source columns):
    the identity for copy, the anti-diagonal for reverse. (n, n) float32."""
    require_choice("task", task, TASKS)
    require_positive_int("length", length)
    eye = torch.eye(length)  # (n, n)
    return eye if task == "copy" else eye.flip(1)


def source_position(task: str, t: int, length: int) -> int:
    """The source position that target position t (0-based) copies: t (copy) or n-1-t (reverse)."""
    require_choice("task", task, TASKS)
    if not 0 <= t < length:
        raise ValueError(f"t must be in [0, {length}), got {t}")
    return t if task == "copy" else length - 1 - t


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
    "TASKS",
    "length_schedule",
    "make_batch",
    "make_target",
    "source_bits",
    "source_position",
    "true_alignment",
]
