"""Chapter 02, the seq2seq bottleneck and alignment: source 003 and source 000 §14.3.5
(Def. 14.3.12, Eq. 14.3.28-14.3.29). Notebook ``02_seq2seq_bottleneck``, checks
``attncourse.exercises.ch02``.

* ``data``: the copy, reversal, duplicate (one-to-many) and merge (many-to-one) tasks (no
  downloads);
* ``model``: ``Seq2Seq``, a bidirectional GRU encoder and a GRU decoder reading a fixed context C
  (``"none"``, Cho et al. 2014), Bahdanau's additive attention or Luong's dot / general / concat /
  local-m attention (scores from ``attncourse.attention``), and ``greedy_decode``;
* ``training``: ``train_seq2seq`` and the chapter's shipped models (``scripts/train_ch02.py``);
* ``evaluation``: accuracy vs source length (Bahdanau et al. 2015, Fig. 2), parameters and
  FLOPs, alignments (Fig. 3), bits through the bottleneck (exact entropies from
  ``attncourse.metrics``, Fano's bound);
* ``plots``: alignment matrices side by side (Fig. 3) and accuracy against length (Fig. 2);
* ``widget``: greedy decoding step by step.
"""

from .data import (
    SQUARE_TASKS,
    TASKS,
    length_schedule,
    make_batch,
    make_target,
    source_bits,
    source_position,
    target_length,
    true_alignment,
)
from .evaluation import (
    accuracy_by_length,
    alignment_mass,
    alignment_matrices,
    binary_entropy_bits,
    decoding_flops,
    diagonal_fraction,
    entropy_bits,
    fano_information_bound,
    joint_table,
    mutual_information_bits,
    pair_sensitivity,
    parameter_count,
    peak_offsets,
    transmitted_bits,
)
from .model import (
    ATTENTION_KINDS,
    LUONG_KINDS,
    Seq2Seq,
    chapter_model,
    greedy_decode,
)
from .plots import STYLES, plot_accuracy, show_alignments
from .training import (
    CHAPTER_MODEL_SIZES,
    CHAPTER_MODELS,
    CHAPTER_OVERRIDES,
    CHAPTER_SIZES,
    CHAPTER_TRAINING,
    WEIGHTS_PATH,
    TrainingLog,
    chapter_sizes,
    load_chapter_info,
    load_chapter_models,
    save_chapter_models,
    train_chapter_models,
    train_seq2seq,
)
from .widget import (
    DecodingPlot,
    DecodingTrace,
    decoding_caption,
    decoding_traces,
    decoding_widget,
    decoding_widget_update,
    sequences_html,
)
