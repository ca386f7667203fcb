"""Chapter 03, entropy and temperature: source 000 §14.3.3 and source 001 Eq. (5.4.6). Notebook
``03_entropy_and_temperature``, checks ``attncourse.exercises.ch03``.

* ``temperature``: the softmax Jacobian, entropy vs temperature, the correct entropy bound, Gibbs,
  temperature schedules and the statistics of q·k;
* ``collapse``: the majority task and the entropy-collapse experiment (Zhai et al. 2023, σReparam);
* ``widget``: entropy against temperature, d_k and the score pattern.
"""

from .collapse import (
    CLS,
    CollapseRun,
    MajorityTransformer,
    layer_entropies,
    majority_batch,
    qk_spectral_norms,
    train_majority,
)
from .temperature import (
    cosine_temperature,
    dot_product_statistics,
    entropy_curve,
    entropy_of_scores,
    entropy_temperature_derivative,
    gibbs_objective,
    hoeffding_entropy_bound,
    jacobian_frobenius,
    jacobian_spectral,
    kl_to_uniform,
    log_partition,
    score_range,
    score_range_from_weights,
    softmax_jacobian,
    source_cosine_schedule,
    zero_temperature_entropy,
)
from .widget import (
    PATTERNS,
    T_GRID,
    EntropyPlot,
    EntropyState,
    entropy_caption,
    entropy_state,
    entropy_widget,
    entropy_widget_update,
    widget_scores,
)
