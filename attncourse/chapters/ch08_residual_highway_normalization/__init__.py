"""Chapter 08, residual, highway and normalization: source 004 §5.3.1-5.3.4, source 000 §14.3.5.
Notebook ``08_residual_highway_normalization``, checks ``attncourse.exercises.ch08``.

* ``stacks``: deep plain / residual / highway stacks (many independent networks side by side) and
  their per-layer statistics at initialisation;
* ``training``: the depth experiment of Srivastava et al. (2015) at CPU scale;
* ``widget``: per-layer statistics against kind, depth, normalization and gate bias.
"""

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
)
