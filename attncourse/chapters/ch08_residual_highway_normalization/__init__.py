"""Chapter 08, residual, highway and normalization: source 004 §5.3.1-5.3.4, source 000 §14.3.5.
Notebook ``08_residual_highway_normalization``, checks ``attncourse.exercises.ch08``.

* ``stacks``: deep plain / residual / highway stacks (many independent networks side by side) and
  their per-layer statistics at initialisation;
* ``training``: the depth experiment of Srivastava et al. (2015) at CPU scale;
* ``widget``: the per-layer statistics drawn, for several stacks side by side and in the widget
  (kind, depth, normalization and gate bias as controls);
* ``identity_paths``: the gradient through a residual stack (Eq. 5.3.2 block by block), and
  §5.3.1's claims about the identity path, measured: near-identity targets learnt with and
  without it, attention stacks with and without the residual.
"""

from .identity_paths import (
    TARGETS,
    AttentionStackStats,
    attention_stack,
    identity_targets,
    near_identity_fit,
    residual_gradient,
)
from .stacks import (
    DEFAULT_WIDTH,
    LAYER_KINDS,
    NORM_TYPES,
    DeepStack,
    LayerStats,
    layer_statistics,
    teacher_task,
)
from .training import (
    GridResult,
    depth_experiment,
    train_stacks,
)
from .widget import (
    DepthPlot,
    depth_caption,
    depth_widget,
    depth_widget_update,
    plot_layer_statistics,
)
