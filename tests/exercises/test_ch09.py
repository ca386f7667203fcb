"""Chapter 09's exercise checks accept the reference and name the mistakes."""

import pytest
import torch

from attncourse.chapters.ch09_pre_ln_vs_post_ln import (
    deepnorm_constants,
    update_data_ratio,
    warmup_schedule,
)
from attncourse.exercises.ch09 import (
    check_deepnorm_constants,
    check_pre_ln_block,
    check_update_data_ratio,
    check_warmup_schedule,
)


def test_exercise_checks_accept_the_reference_and_name_mistakes():
    check_pre_ln_block(lambda x, a, f, n1, n2: (lambda h: h + f(n2(h)))(x + a(n1(x))))
    with pytest.raises(AssertionError, match="Post-LN"):
        check_pre_ln_block(lambda x, a, f, n1, n2: (lambda h: n2(h + f(h)))(n1(x + a(x))))
    check_warmup_schedule(warmup_schedule)
    with pytest.raises(AssertionError, match="off by one"):
        check_warmup_schedule(
            lambda s, p, w: (
                p * torch.clamp(torch.arange(s, dtype=torch.float64) / max(w, 1), max=1.0)
            )
        )
    check_update_data_ratio(update_data_ratio)
    with pytest.raises(AssertionError, match="inverted"):
        check_update_data_ratio(lambda b, a: b.std() / (a - b).std())
    check_deepnorm_constants(deepnorm_constants)
    with pytest.raises(AssertionError, match="swapped"):
        check_deepnorm_constants(
            lambda n: torch.tensor([(8 * n) ** -0.25, (2 * n) ** 0.25], dtype=torch.float64)
        )
