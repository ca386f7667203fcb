"""Chapter 05, bidirectional, causal and cross attention — information flow: source 002, source 001
§5.4.3 (Eq. 5.4.7–5.4.9), source 000 Def. 14.3.12. Notebook ``05_information_flow``, checks
``attncourse.exercises.ch05``. The flow measures themselves are mechanisms: ``attncourse.flow``.

* ``graphs``: the chapter's masks as information-flow graphs, reachability tables, an
  encoder–decoder's one-way flow, sparse patterns' pair counts and costs;
* ``models``: ``TinyTransformer`` (encoder, decoder or attention-only) and the training loop;
* ``tasks``: palindrome fill-in (needs right context) and induction (needs two layers);
* ``relay``: previous-token and induction heads, and what replacing layer 1's attention does;
* ``attribution``: raw attention vs rollout vs flow against gradient and blank-out attributions
  (Abnar & Zuidema 2020);
* ``source_002``: source 002's code blocks, run as printed;
* ``widget``: mask, layer, head and query → heat map, flow graph, shares, raw vs rollout.
"""

from .attribution import (
    attention_explanations,
    average_ranks,
    blank_out_attribution,
    compare_explanations,
    gradient_attribution,
    spearman,
)
from .graphs import (
    MASK_KINDS,
    chapter_mask,
    cross_mask,
    encoder_decoder_reachability,
    log_sparse_mask,
    masked_attention_times,
    reach_table,
    sparse_pair_counts,
    training_step_times,
)
from .models import AttentionOnlyBlock, TinyTransformer, train
from .relay import layer_one_patterns, relay_ablation, relay_scores
from .source_002 import (
    SECTIONS,
    SOURCE_BLOCKS,
    BlockRun,
    run_source_block,
    seaborn_stand_in,
    source_entropy,
)
from .tasks import (
    FILL_LENGTH,
    FILL_VOCAB,
    INDUCTION_KEYS,
    INDUCTION_LENGTH,
    INDUCTION_PAIRS,
    INDUCTION_VOCAB,
    MASK,
    fill_accuracy,
    fill_loss,
    generation_accuracy,
    induction_accuracy,
    induction_batch,
    induction_positions,
    lm_loss,
    lm_loss_floor,
    mean_lm_loss,
    palindrome_batch,
)
from .widget import (
    FlowPlot,
    FlowView,
    flow_caption,
    flow_view,
    flow_views,
    flow_widget,
    flow_widget_update,
)
