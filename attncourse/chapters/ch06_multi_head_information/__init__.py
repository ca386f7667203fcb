"""Chapter 06, multi-head attention and information: source 000 §14.3.2 (Def. 14.3.6 – Thm.
14.3.4, Lemma 14.3.8), §14.3.4 (Def. 14.3.10 – Thm. 14.3.8) and §14.3.7 (Def. 14.3.16 – Alg.
14.3.1). Notebook ``06_multi_head_information``, checks ``attncourse.exercises.ch06``.

* ``heads``: ``GatedMultiHeadAttention`` (Eq. 14.3.10 with a gate per head), the small encoder
  ``HeadGatedEncoder``, the sort task, training and evaluation under a head mask;
* ``subspaces``: heads as subspaces (W_O [z_1; …; z_h] = Σ_h W_O^h z_h), two heads vs one head,
  the low-rank bottleneck of small heads (Bhojanapalli et al. 2020);
* ``exact``: exact joint tables of toy tasks and the source's formulas next to the chain
  rule (Eq. 14.3.11, 14.3.12, 14.3.21–14.3.27, App. 14.3.1, Alg. 14.3.1 as printed);
* ``estimators``: k-means + plug-in mutual information for head outputs;
* ``pruning``: Michel et al.'s importance, single-head ablation, App. 14.3.1's information
  criterion, pruning curves;
* ``regularisers``: the entropy loss (Def. 14.3.16), App. 14.3.5's diversity loss as printed, an
  overlap loss, gradient descent on free scores;
* ``widget``: the head-mask widget.
"""

from .estimators import kmeans_codes, plugin_mutual_information, sample_joint
from .exact import (
    JointTable,
    alg_14_3_1_as_printed,
    alg_14_3_1_repaired,
    argmax_position,
    argmax_selectable_keys,
    argmin_position,
    best_heads_to_keep,
    binned_self_information,
    bits,
    complementarity,
    eq_14_3_11,
    eq_14_3_12,
    eq_14_3_21,
    eq_14_3_25,
    grid_keys,
    information,
    joint_table,
    marginal_contributions,
    mean_pattern_information,
    net_contributions,
    pairwise_co_information_formula,
    prune_by_net_contribution,
    total_correlation,
)
from .heads import (
    HEADS,
    LAYERS,
    LENGTH,
    VOCAB,
    WIDTH,
    GatedMultiHeadAttention,
    HeadGatedEncoder,
    chapter_model,
    evaluate,
    sort_batch,
    train_model,
)
from .pruning import (
    ABLATION,
    MICHEL,
    NET_INFORMATION,
    InformationScores,
    PruningResult,
    ablation_scores,
    information_scores,
    michel_importance,
    order_by,
    prune_all,
    pruning_curve,
)
from .regularisers import (
    descend,
    diversity_attention_loss,
    entropy_loss,
    head_entropies,
    overlap_loss,
)
from .subspaces import (
    OneHead,
    centred_log,
    gated_copy,
    head_contributions,
    head_for_pattern,
    neighbour_targets,
    offset_bias,
    one_head_error_bound,
    pattern_of,
    pattern_rank,
    random_pattern,
    relative_error,
    train_one_head,
    two_head_copy,
)
from .widget import (
    CURVE_COLOURS,
    HeadMaskPlot,
    HeadMaskState,
    head_mask,
    head_mask_caption,
    head_mask_state,
    head_mask_widget,
    head_mask_widget_update,
    pattern_mosaic,
)
