"""Chapter 10, efficient, sparse and gated attention: source 000 §14.3.7-14.3.8 (Def.
14.3.17-14.3.19, Lemma 14.3.23-14.3.26, Thm. 14.3.15-14.3.17, App. 14.3.6-14.3.7) and source 002
§7-8. Notebook ``10_efficient_gated_attention``, checks ``attncourse.exercises.ch10``.

* ``tiles``: the online-softmax update that attention in tiles is built on;
* ``patterns``: sparse masks, pair counts, reach through L layers, softmax dilution;
* ``sparse_learning``: a learnable Gumbel-sigmoid mask trained to find a known pattern;
* ``linear``: linear attention's parallel and recurrent forms, its rank, random features,
  associative recall (Schlag et al. 2021) and copying (Katharopoulos et al. 2020);
* ``sink``: attention sinks and output gating (Qiu et al. 2025) on the bigram-backcopy task;
* ``models``: the small causal language model the experiments train;
* ``claims``: the source's listings run as printed, and the exact information computations;
* ``costs`` / ``cost_table`` / ``stage_table``: time and memory against length, each measured in
  its own process, and where causal linear attention spends its time;
* ``widget``: mask, reach and measured costs for a length and a pattern.
"""

from .claims import (
    ALL_IMPORTS,
    FIXED_GATE_LINE,
    IMPORTS_A_READER_ADDS,
    PRINTED_GATE_LINE,
    all_bit_vectors,
    attend,
    best_masks,
    causal_positions_from_counting,
    erasure_information,
    gaussian_channel_information,
    information,
    mask_information_table,
    package_gated_from_source,
    permutation_equivariance_error,
    printed_learnable_sparse,
    run_listing,
    source_gated_attention,
    survey_source_gated_attention,
    try_call,
)
from .costs import (
    LENGTHS,
    METHODS,
    SIZES,
    attention_call,
    load_stages,
    load_table,
    measure,
    plot_costs,
)
from .linear import (
    NUM_KEYS,
    NUM_VALUES,
    RecallModel,
    causal_linear_stages,
    copy_accuracy,
    linear_attention_matrix,
    numerical_rank,
    parallel_linear_attention,
    positive_random_features,
    recall_batch,
    recall_scores,
    recall_weight_matrix,
    recurrent_linear_attention,
    steps_to_loss,
    total_variation,
    train_copy,
    train_recall,
)
from .models import TinyLM, train_lm
from .patterns import (
    KINDS,
    layers_to_connect,
    log_sparse_mask,
    pair_count,
    pattern_mask,
    reach,
    reach_of_last,
    relevant_weight,
)
from .sink import (
    SinkResult,
    bigram_backcopy,
    sink_statistics,
    train_sink,
    uniform_bos_share,
)
from .sparse_learning import LearnedMask, learn_sparse_mask, printed_sparse_attention, true_pattern
from .tiles import online_softmax_step
from .widget import (
    SparsityNumbers,
    SparsityPlot,
    layers_to_reach_all,
    mask_corner,
    measured,
    sparsity_caption,
    sparsity_numbers,
    sparsity_widget,
    sparsity_widget_update,
)
