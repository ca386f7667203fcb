"""Chapter 09, Pre-LN vs Post-LN stability: source 004 §5.3.5 (Eq. 5.3.10–5.3.12); Xiong et al.
2020, Liu et al. 2020, Wang et al. 2022. Notebook ``09_pre_ln_vs_post_ln``, checks
``attncourse.exercises.ch09``.

* ``model``: the causal LM with Post-LN, Pre-LN or DeepNorm blocks, the per-layer gradient norms
  ‖∂L/∂W^{2,l}‖_F and the gradients at initialisation (Pre-LN taken apart: without its final
  LayerNorm, backward through the identity paths only);
* ``training``: the copy task, the warm-up schedule, training runs with the update/data ratio of
  each step, DeepNorm's constants, per-block histograms;
* ``widget``: the curves of one cell of a grid of runs (placement × depth × lr × warm-up).
"""

from .model import (
    NORM_PLACEMENTS,
    CausalLM,
    init_gradients,
    layer_gradient_norms,
)
from .training import (
    Run,
    block_histograms,
    copy_batch,
    copy_loss,
    deepnorm_constants,
    train_copy,
    update_data_ratio,
    warmup_schedule,
)
from .widget import (
    StabilityPlot,
    grid_key,
    smooth,
    stability_caption,
    stability_widget,
    stability_widget_update,
)
