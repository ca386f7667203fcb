"""Chapter 07, positional encoding: source 000 §14.3.6 (Def. 14.3.14–14.3.15, Lemma
14.3.19–14.3.21, Thm. 14.3.12–14.3.14). Notebook ``07_positional_encoding``, checks
``attncourse.exercises.ch07``. The encodings themselves are mechanisms in ``attncourse.positional``.

* ``models``: a small Transformer with no / sinusoidal / learned / rotary / ALiBi positions, the
  "most recent marker" and "is it sorted?" tasks, training, and Press et al. 2022's
  train-short-test-long experiment;
* ``encodings``: permutation equivariance, the sinusoidal encoding's relative structure, RoPE's
  long-distance bound (Su et al. 2021), information about positions at finite precision, the
  transfer efficiency η of Def. 14.3.14 against distance;
* ``widget``: the encoding explorer (heatmap, similarity vs offset, RoPE plane, ALiBi row).
"""

from .encodings import (
    binary_code,
    decode_positions,
    dot_product_profile,
    entropy_bits_of_rows,
    inverse_frequencies,
    noisy_decoding_accuracy,
    offsets_from_pairs,
    permutation_gap,
    permutation_gaps,
    position_only_weights,
    rope_abel_bound,
    rope_pair_products,
    rope_partial_sums,
    rope_relative_bound,
    selection_information_bits,
    shift_distance_profile,
    sinusoidal_information,
    transfer_efficiency,
    wavelengths,
)
from .models import (
    ENCODINGS,
    MARKER_MODEL,
    MARKER_TRAINING,
    MARKER_VOCAB,
    NUM_MARKERS,
    PositionalBlock,
    PositionalSelfAttention,
    PositionalTransformer,
    marker_accuracy,
    marker_batch,
    sortedness_batch,
    sortedness_scores,
    train_model,
    train_short_test_long,
)
from .widget import (
    ALIBI_HEADS,
    WIDGET_ENCODINGS,
    WIDGET_POSITIONS,
    EncodingPlot,
    EncodingView,
    default_learned_table,
    encoding_caption,
    encoding_view,
    encoding_widget,
    encoding_widget_update,
)
