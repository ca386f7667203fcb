"""Chapter 00's demo exercise: uniform attention is the plain mean of the values.

Small on purpose: it shows what every check of the course is made of — the inputs to try, the
reference answer, and the common mistakes it recognises by name.
"""

from __future__ import annotations

import torch

from .engine import Case, Exercise, randn


def _uniform_attention_ref(values):
    """values (S, d) -> (d,): every weight 1/S, so the output is the mean of the rows."""
    return values.mean(dim=0)  # (d,)


def _uniform_attention_cases(g) -> list[Case]:
    return [
        Case("4 values of dimension 3", (randn(g, 4, 3),)),
        Case("a single value (S = 1)", (randn(g, 1, 5),)),
        Case("float64 values", (randn(g, 6, 2, dtype=torch.float64),)),
    ]


check_uniform_attention = Exercise(
    _uniform_attention_ref,
    _uniform_attention_cases,
    diagnoses=[
        (
            "summed the values: divide by their number S (each weight is 1/S)",
            lambda v: v.sum(dim=0),
        ),
        (
            "averaged over the wrong axis: average the rows (dim=0), one output of size d",
            lambda v: v.mean(dim=1) if v.shape[1] > 1 else None,
        ),
    ],
)

__all__ = ["check_uniform_attention"]
