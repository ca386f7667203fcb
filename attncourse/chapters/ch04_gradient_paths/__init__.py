"""Chapter 04, RNN vs attention gradient paths: source 001 §5.4.1-5.4.3, source 000 §14.3.2,
§14.3.6. Notebook ``04_gradient_paths``, checks ``attncourse.exercises.ch04``.

* ``jacobians``: ‖∂y_T/∂x_{T-k}‖ vs distance for RNNs and attention, spectral radius vs largest
  singular value, information vs distance in a linear Gaussian RNN (Thm. 14.3.12);
* ``path_lengths``: BFS path lengths, receptive fields and costs (Vaswani et al. 2017, Table 1);
* ``recall``: the long-range recall task;
* ``clipping``: gradient clipping (Pascanu et al. 2013);
* ``biases``: inductive biases (permutation / shift equivariance, a local task), the residual
  stream of Eq. 5.4.8-5.4.9, what one averaging layer keeps about each position (Lemma 14.3.19);
* ``widget``: the gradient-vs-distance curves without autograd.
"""

from .biases import (
    LocalAttention,
    LocalConv,
    attention_stack,
    averaging_information,
    local_batch,
    permutation_gap,
    shift_gap,
    train_local,
)
from .clipping import (
    clip_grad_norm_,
    clip_gradients,
    exploding_training,
)
from .jacobians import (
    attention_gradient_norms,
    chapter_attention,
    chapter_inputs,
    chapter_rnn,
    distance_profile,
    gaussian_rnn_information,
    input_jacobian,
    largest_singular_value,
    log_slope,
    power_norms,
    rnn_gradient_norms,
    scaled_orthogonal,
    shifted_identity,
    spectral_radius,
)
from .path_lengths import (
    attention_graph,
    autograd_depth,
    conv_graph,
    conv_stack,
    count_flops,
    layer_costs,
    layers_to_connect,
    local_attention_graph,
    max_path_length,
    path_lengths_from,
    receptive_field,
    rnn_graph,
    shortest_path_lengths,
)
from .recall import (
    RecallAttention,
    RecallRNN,
    recall_accuracy,
    recall_batch,
    train_recall,
)
from .widget import (
    WIDGET_MAX_LENGTH,
    GradientCurves,
    GradientPathPlot,
    attention_jacobian_profile,
    gradient_caption,
    gradient_curves,
    gradient_widget,
    gradient_widget_update,
    rnn_jacobian_profile,
)
