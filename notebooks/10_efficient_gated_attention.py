# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown] slideshow={"slide_type": "slide"}
# # Chapter 10 · Efficient, sparse and gated attention
# *高效、稀疏与门控注意力* — source 000, §14.3.7–14.3.8 (Def. 14.3.17–14.3.19, Lemma 14.3.23–14.3.26,
# Thm. 14.3.15–14.3.17, App. 14.3.6–14.3.7, Eq. 14.3.43–14.3.51); source 002, §7–8
#
# **After this chapter you can**
# - count what attention costs — pairs, time and peak memory against the length n — and tell the
#   compute from the memory: exact attention needs O(n²) work but only O(n) memory;
# - write a sparse mask correctly (the source's softmax(M ⊙ S) is not one), compute local, strided
#   and block attention in O(n · keys per query), and say how far information reaches through L
#   layers of each pattern;
# - learn a mask by gradient descent through the Gumbel-sigmoid relaxation with an annealed
#   temperature, and check it against a known answer;
# - derive the recurrent form of linear attention, measure its rank bound, and predict where it
#   fails (associative recall beyond d_k pairs) and where it works (copying);
# - write tiled attention with the online softmax (FlashAttention's idea);
# - fix the source's gated-attention class, and reproduce at CPU scale how an output gate reduces
#   the attention sink (Qiu et al. 2025);
# - say which information-theoretic claims of the source hold, which need conditions, and which
#   are wrong.
#
# **Prerequisites**: chapters 01 (masked softmax), 03 (softmax Jacobian, temperature) and 04
# (path lengths); entropy and mutual information of discrete variables.
#
# **Time**: about 100 minutes (65 reading and experimenting, 35 for the exercises).
#
# Marks used in the claim checks: **✓ holds** · **⚠ holds only under a condition** (stated) ·
# **✗ wrong as printed** (counterexample and correct statement given).

# %% slideshow={"slide_type": "skip"}
import math
import time

import matplotlib.pyplot as plt
import numpy as np
import torch

from attncourse.attention import (
    MultiHeadAttention,
    block_attention,
    chunked_attention,
    gumbel_sigmoid,
    linear_attention,
    local_attention,
    scaled_dot_product_attention,
    soft_masked_attention,
    softmax,
    strided_attention,
)
from attncourse.chapters.ch10_efficient_gated_attention import (
    FIXED_GATE_LINE,
    IMPORTS_A_READER_ADDS,
    LENGTHS,
    PRINTED_GATE_LINE,
    RecallModel,
    all_bit_vectors,
    attend,
    best_masks,
    bigram_backcopy,
    causal_positions_from_counting,
    copy_accuracy,
    costs,
    erasure_information,
    gaussian_channel_information,
    information,
    layers_to_connect,
    layers_to_reach_all,
    learn_sparse_mask,
    linear_attention_matrix,
    listings,
    log_sparse_mask,
    mask_information_table,
    numerical_rank,
    package_gated_from_source,
    pair_count,
    parallel_linear_attention,
    pattern_mask,
    permutation_equivariance_error,
    positive_random_features,
    printed_learnable_sparse,
    recall_scores,
    recall_weight_matrix,
    recurrent_linear_attention,
    relevant_weight,
    run_listing,
    source_gated_attention,
    sparsity_widget,
    steps_to_loss,
    survey_source_gated_attention,
    total_variation,
    train_copy,
    train_recall,
    train_sink,
    try_call,
    uniform_bos_share,
)
from attncourse.masks import local_mask
from attncourse.rnn import VanillaRNN
from attncourse.threads import single_thread

torch.manual_seed(0)
np.random.seed(0)
torch.set_num_threads(2)
torch.set_flush_denormal(True)
torch.set_printoptions(precision=4, sci_mode=False)
plt.rcParams.update({"figure.dpi": 80, "figure.figsize": (7, 3)})

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 1. What attention costs (source 002 §7–8; Thm. 14.3.16)
#
# Source 002 closes its note on bidirectional attention with three listings that return tables
# of claims: the advantages of bidirectional attention (global context, parallel computation,
# long-range modelling, rich representations), its challenges (O(n²) compute *and storage*,
# dependence on position encodings, diluted attention, interpretability) and a comparison of
# attention types (bidirectional and masked self-attention O(n²), cross-attention O(n × m), sparse
# attention "O(n√n) or O(n log n)"). First, the listings as printed:
#
# > **Glossary** · computational complexity 计算复杂度 · memory / storage 存储 · sparse attention
# > 稀疏注意力 · sliding window 滑动窗口 · strided 跨步 · block 分块 · query–key pair 查询–键对

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
for name in ("bidirectional_advantages", "bidirectional_challenges", "compare_attention_types"):
    table = run_listing(getattr(listings, "SOURCE_002_" + name.upper()))[name]()
    print(f"{name}() runs as printed and returns {len(table)} entries: {', '.join(table)}")
print("sparse attention, as printed:", table["稀疏注意力"])

# %% [markdown] slideshow={"slide_type": "-"}
# The listings compute nothing: they are claims in a dictionary. We check them by counting.
# A mask keeps some (query, key) pairs; the work and, in a plain implementation, the memory of one
# attention layer are proportional to their number. `pair_count` counts them without building
# the n × n mask (its formulas are checked against the masks in the tests): dense bidirectional
# n², causal n(n + 1)/2, cross-attention n·m, a causal sliding window of w keys about n(w + 1),
# Child et al.'s causal strided pattern with stride s about n(s + n/(2s)) (query i keeps the band
# of its last s keys and the ⌊i/s⌋ keys a multiple of s further back, i/s being n/2s on average),
# blocks of b about n(b + 1)/2, and LogSparse (Li et al. 2019: the keys 1, 2, 4, 8, … positions back) about n log₂ n.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
print(
    f"{'n':>6} | {'dense n²':>11} {'causal':>11} {'cross n·n/2':>11} | {'local w=64':>10} "
    f"{'strided √n':>10} {'block 64':>9} {'LogSparse':>9} | {'strided/(n√n)':>13} "
    f"{'LogSparse/(n log2 n)':>20}"
)
for n in (256, 1024, 4096, 16384):
    s = math.isqrt(n)
    strided, logsparse = pair_count("strided", n, s), pair_count("log-sparse", n)
    print(
        f"{n:>6} | {n * n:>11,} {pair_count('dense', n):>11,} {n * (n // 2):>11,} | "
        f"{pair_count('local', n, 64):>10,} {strided:>10,} {pair_count('block', n, 64):>9,} "
        f"{logsparse:>9,} | {strided / n**1.5:>13.3f} {logsparse / (n * math.log2(n)):>20.3f}"
    )
assert pair_count("dense", 1024) == 1024 * 1025 // 2
assert all(1.3 < pair_count("strided", n, math.isqrt(n)) / n**1.5 < 1.6 for n in (1024, 16384))

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Claim checks — source 002 §8's complexity table.** Bidirectional self-attention n² pairs ✓;
# masked (causal) self-attention O(n²) ✓ — exactly n(n + 1)/2, half the work, still quadratic;
# cross-attention O(n × m) ✓. Sparse attention "O(n√n) or O(n log n)" ⚠ — it depends on the
# pattern: strided with s = √n keeps ≈ 1.5 n√n pairs ✓, LogSparse ≈ n log₂ n ✓, but a fixed window
# or fixed blocks keep O(n) pairs (n(w + 1) and n(b + 1)/2), and a pattern can be anything in
# between. **Correct statement**: a sparse pattern costs O(n · k) for k keys per query; k = √n and
# k = log n are two common choices.
#
# The advantages "parallel computation: training tens of times faster than an RNN" and "direct
# modelling of any distance" are about sequential steps. An RNN layer needs n steps one after
# another; an attention layer needs one matrix product of all pairs. How much faster that is
# depends on the hardware and on n. The cell times one layer of each, forward and backward, on one
# CPU thread (the fastest of three runs); the ratio it prints is that of the machine it runs on:

# %% slideshow={"slide_type": "-"}
# NBVAL_IGNORE_OUTPUT
x_seq = torch.randn(8, 256, 64, requires_grad=True)  # (B, T, d)
rnn, mha = VanillaRNN(64, 64), MultiHeadAttention(64, 4)


def fastest_ms(fn, repeats=3):
    """Fastest of ``repeats`` forward + backward passes after one warm-up, on one thread."""
    best = float("inf")
    with single_thread():
        for run in range(repeats + 1):
            start = time.perf_counter()
            fn().square().mean().backward()
            best = min(best, time.perf_counter() - start) if run else best
    return 1000 * best


rnn_ms = fastest_ms(lambda: rnn(x_seq))
mha_ms = fastest_ms(lambda: mha(x_seq, causal=True)[0])
print(
    f"T = 256, d = 64, batch 8, forward + backward: RNN {rnn_ms:.1f} ms (256 sequential steps), "
    f"attention {mha_ms:.1f} ms (1 step): ratio {rnn_ms / mha_ms:.1f}"
)

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Claim check — "training tens of times faster than an RNN" ⚠.** The sequential depth is
# exact: n steps against 1. The speed is not fixed by the maths: attention does about n² d work for
# its scores and weighted sums against the RNN's n d² (at n = 256, d = 64 attention does more), but
# in a few large products instead of n small dependent ones, so the wall-clock ratio printed above
# depends on the machine and can go either way on one CPU thread; for long sequences attention's
# n² term takes over. The large gains come from hardware that runs the n² products in parallel
# (a GPU), where the RNN's n sequential steps cannot be.
# **Correct statement**: attention removes the O(n) chain of sequential steps; whether that makes
# training faster, and by how much, depends on n, d and the hardware.
#
# Two more claims of source 002 §7 are exact properties, checked below. "Needs explicit position
# information" ✓ for bidirectional attention: without positions it is permutation-equivariant
# (permuting the inputs permutes the outputs, so order is invisible). ⚠ for causal attention: the
# mask itself leaks position — a layer that spreads its weight evenly over the prefix gives
# position i the output 1/(i + 1) on the sequence BOS, x, x, x, … (Haviv et al. 2022 train
# causal language models without any position encoding). "Attention can be too diffuse" ✓: one
# relevant key whose score exceeds the others' by Δ gets weight e^Δ/(e^Δ + n − 1), which falls
# to 0 as n grows; keeping it at 1/2 needs Δ = ln(n − 1).

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
print(
    "bidirectional, no positions: max |attn(P x) - P attn(x)| < 1e-12:",
    permutation_equivariance_error() < 1e-12,
)
print(
    "causal, BOS then identical tokens: outputs",
    [round(float(v), 4) for v in causal_positions_from_counting()],
)
print(f"{'n':>6} | weight of the one relevant key, gap 4 | gap needed for weight 1/2")
for n in (16, 256, 4096, 65536):
    print(f"{n:>6} | {relevant_weight(n, 4.0):>37.4f} | {math.log(n - 1):>25.2f}")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 2. Sparse masks, as printed and as they should be (Def. 14.3.17, Eq. 14.3.43)
#
# The source defines sparse attention with a binary mask M ∈ {0, 1}^{n×n}:
#
# $$\alpha^{\text{sparse}} = \mathrm{Softmax}(M \odot S) \qquad (14.3.43)$$
#
# "where ⊙ is elementwise multiplication and M decides which pairs can be attended to". Run it on
# real scores before teaching it: a masked entry's score becomes 0, not −∞, and e⁰ = 1 still
# gets weight. When the visible scores are negative, the masked keys even get *more* weight than
# the visible ones.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
s_row = torch.tensor([-3.0, -3.0, 5.0], dtype=torch.float64)
m_row = torch.tensor([1.0, 1.0, 0.0], dtype=torch.float64)
print("scores", s_row.tolist(), "mask", m_row.tolist())
print("  printed softmax(M ⊙ S):", softmax(m_row * s_row).numpy().round(4))
print("  masked softmax        :", softmax(s_row, mask=m_row.bool()).numpy().round(4))

g = torch.Generator().manual_seed(0)
q_s, k_s = (torch.randn(16, 16, generator=g, dtype=torch.float64) for _ in range(2))
scores = q_s @ k_s.T / 4.0  # (16, 16) real scaled dot-product scores
window = local_mask(16, 2, causal=True)  # (16, 16) each query keeps itself and 2 earlier keys
printed = softmax(window.double() * scores)  # Eq. (14.3.43) as printed
leak = printed.masked_fill(window, 0.0).sum(dim=-1)  # weight on masked keys, per query
print(
    f"causal window of 2 on 16 random queries: the printed formula puts {float(leak.mean()):.3f} "
    f"of each query's weight on masked keys on average (up to {float(leak.max()):.3f})"
)
assert float(leak.min()) > 0.3

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Claim check — Eq. (14.3.43) ✗.** Multiplying the scores by a 0/1 mask does not remove a pair:
# it replaces its score by 0. **Correct statement**: α = softmax(S + log M) with log 0 = −∞ —
# in code `scores.masked_fill(~M, -inf)` — so a masked key gets weight exactly 0; equivalently
# α_ij = M_ij e^{s_ij} / Σ_j′ M_ij′ e^{s_ij′}, which also makes sense for a soft mask with values in
# [0, 1] (`soft_masked_attention`, used in §4).
#
# A mask alone saves nothing: `scaled_dot_product_attention(q, k, v, mask)` still computes all n²
# scores and then throws most of them away. The saving needs an implementation that never forms the
# masked pairs. The package has three, each exactly equal to masked attention with the matching mask
# of `attncourse.masks`:
#
# - `local_attention(q, k, v, window)`: query blocks of `window` positions meet only the key blocks
#   next to them, O(n · window);
# - `block_attention(q, k, v, block_size)`: a reshape into blocks, O(n · block_size);
# - `strided_attention(q, k, v, stride)` (Child et al. 2019): the band of the last `stride` keys in
#   blocks, plus the keys a multiple of `stride` away, read along the columns of an
#   (n/stride) × stride grid of positions, both in one softmax: O(n (stride + n/stride)).

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
g = torch.Generator().manual_seed(1)
q3, k3, v3 = (torch.randn(2, 4, 203, 16, generator=g, dtype=torch.float64) for _ in range(3))
for name, sparse, size in (
    ("local", local_attention, 8),
    ("strided", strided_attention, 14),
    ("block", block_attention, 32),
):
    ours, _ = sparse(q3, k3, v3, size, causal=True)
    reference, _ = scaled_dot_product_attention(q3, k3, v3, pattern_mask(name, 203, size))
    error = float((ours - reference).abs().max())
    print(
        f"{name:>8} attention == masked attention (n = 203, float64): error < 1e-12: {error < 1e-12}"
    )
    assert error < 1e-12
corrected, _ = soft_masked_attention(q3, k3, v3, window.new_ones(203, 203).tril())
assert (
    float((corrected - scaled_dot_product_attention(q3, k3, v3, causal=True)[0]).abs().max())
    < 1e-12
)

# %% slideshow={"slide_type": "subslide"}
fig, axes = plt.subplots(1, 4, figsize=(11, 2.9))
for ax, (title, mask) in zip(
    axes,
    (
        ("local, window 3", pattern_mask("local", 32, 3)),
        ("strided, stride 6 (Child et al.)", pattern_mask("strided", 32, 6)),
        ("block, size 8", pattern_mask("block", 32, 8)),
        ("LogSparse (Li et al. 2019)", log_sparse_mask(32)),
    ),
):
    ax.imshow(mask.numpy(), cmap="Greys", interpolation="nearest")
    ax.set(title=f"{title}\n{int(mask.sum())} of 528 causal pairs", xlabel="key j")
axes[0].set_ylabel("query i")
plt.tight_layout()
plt.show()

# %% [markdown] slideshow={"slide_type": "-"}
# **How far does information reach?** One layer of a sparse pattern lets query i read only its
# kept keys; through L layers (with the residual stream carrying each position's own state) it
# reads everything within L hops: R_L = (I ∨ M)^L as a boolean matrix product (`reach`). The table
# gives the fewest layers after which *every* position depends on every earlier one
# (`layers_to_connect`, n = 64, from the n × n matrices) and after which the *last* query depends
# on all n keys (closed forms, checked against the matrices in the tests).

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
print(
    f"{'pattern':>20} | {'all pairs, n = 64':>17} | "
    + " | ".join(f"last query, n = {n:>5}" for n in (1024, 16384))
)
for name, kind, size_of in (
    ("dense (causal)", "dense", lambda n: 1),
    ("local, window 8", "local", lambda n: 8),
    ("strided, stride √n", "strided", lambda n: math.isqrt(n)),
    ("block, size 8", "block", lambda n: 8),
):
    small = layers_to_connect(pattern_mask(kind, 64, size_of(64)), max_layers=16)
    large = [layers_to_reach_all(kind, n, size_of(n)) for n in (1024, 16384)]
    print(
        f"{name:>20} | {str(small if small else 'never'):>17} | "
        + " | ".join(f"{str(v if v else 'never'):>21}" for v in large)
    )
assert layers_to_connect(pattern_mask("strided", 256, 16)) == 2

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Claim check — source 002 §8: sparse attention sees "part of the sequence" ⚠.** Per layer ✓;
# through layers the reach grows: Child et al.'s strided pattern connects every pair in **two**
# layers ✓ (their claim, for stride ≈ √n), a window of w needs ⌈(n − 1)/w⌉ layers, and disjoint
# blocks **never** connect — a pattern needs some path between blocks (a stride, a global token, a
# shifted block) to be more than n/b independent short sequences.
#
# > **Glossary** · receptive field 感受野 · reach through layers 跨层可达 · residual stream 残差流 ·
# > mask 掩码 · tiling 分块计算

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 3. Does sparsity lose information? (Lemma 14.3.23, Thm. 14.3.15)
#
# The source states
#
# $$I_{\text{sparse}} \le I_{\text{dense}} \qquad (14.3.44)$$
#
# $$M^* = \arg\min_M \bigl[ I(X; Y) - I_M(X; Y) \bigr] \qquad (14.3.45)$$
#
# ("the optimal sparse pattern minimises the trade-off between information loss and sparsity").
# Both can be computed exactly on a small example: X = n independent fair bits, each position's
# value is its bit, and Y_M is the output of one attention layer under mask M. Y is a function of X,
# so I(X; Y) = H(Y), computed by enumerating all 2ⁿ inputs (`information`).

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
x_bits = all_bit_vectors(4)  # (16, 4) every input, equally likely
dense, diagonal = torch.ones(4, 4, dtype=torch.bool), torch.eye(4, dtype=torch.bool)
random_scores = torch.randn(4, 4, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
rows = (
    ("dense, uniform scores (every query outputs the mean)", dense, None),
    ("sparse: each query keeps only its own key", diagonal, None),
    ("sparse: causal window of 1", local_mask(4, 1, causal=True), None),
    ("dense, random scores", dense, random_scores),
)
for label, mask, score in rows:
    print(f"{label:>55}: I(X; Y) = {information(attend(x_bits, mask, score)):.4f} bits")

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Claim check — Lemma 14.3.23 ✗.** The sparse "copy your own bit" layer keeps all 4 bits, the
# dense uniform layer only H(Binomial(4, ½)) = 2.03 bits: I_sparse > I_dense. A dense layer can
# lose information by *averaging*; a sparse one need not. And a dense layer with generic scores
# keeps everything (its output is an injective function of X), so for deterministic layers the
# inequality says nothing about sparsity. **Correct statements**: (i) under a mask, query i's
# output is a function of its visible keys only, so it carries no information about the others
# given those: I(Y_i; X_masked | X_visible) = 0; (ii) over all scores, dense attention can do
# whatever sparse attention does (add −c to the masked scores and let c → ∞), so the *best*
# dense layer is at least as informative as the best sparse one — a statement about capacity, not
# about a given pair of layers.
#
# For Thm. 14.3.15, enumerate every mask on n = 3 positions that leaves each query a key (343 of
# them) and evaluate the printed objective, with and without a penalty λ per kept pair (the
# "sparsity" the theorem's text mentions but its formula lacks).

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
masks_3 = mask_information_table(3)  # (mask, kept pairs, I(X; Y_M)) for uniform scores
generic = mask_information_table(
    3, torch.randn(3, 3, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
)
print(f"masks: {len(masks_3)}; dense (9 pairs) keeps {masks_3[-1][2]:.4f} bits of H(X) = 3")
negative = sum(masks_3[-1][2] - info < -1e-9 for _, _, info in masks_3)
print(
    f"uniform scores: the objective I_dense - I_M is negative for {negative} of {len(masks_3)} masks"
)
for penalty in (0.0, 0.05):
    best = best_masks(masks_3, penalty)
    kept = sorted({b[1] for b in best})
    print(
        f"uniform scores, penalty {penalty}: {len(best)} minimisers, objective {best[0][0]:+.4f}, "
        f"kept pairs {kept}, dense among them: {any(b[1] == 9 for b in best)}"
    )
print(
    "random scores: I(X; Y_M) = the number of keys the mask uses, for every mask:",
    all(abs(info - int(m.any(dim=0).sum())) < 1e-9 for m, _, info in generic),
)
for penalty in (0.0, 0.05):
    best = best_masks(generic, penalty)
    print(
        f"random scores, penalty {penalty}: {len(best)} minimisers, kept pairs "
        f"{sorted({b[1] for b in best})}, dense among them: {any(b[1] == 9 for b in best)}"
    )

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Claim check — Thm. 14.3.15 ✗ as printed.** The objective has no sparsity term, and with
# uniform scores it is *negative* for all but 7 of the 343 masks (336, printed above: most sparse
# masks keep more than the dense mask's 1.81 bits, 174 of them all 3), the dense mask is not a
# minimiser, and the minimiser is not unique (174 ties). With generic
# scores a layer's output is an injective function of every key some query sees, so I_M just
# counts the keys the mask uses: the objective is 0 for every mask that covers all keys (dense
# and "each query reads a different key" tie) and blind to how many pairs are kept.
# **Correct statement**: a trade-off needs both terms, e.g. M* = arg min_M [ −I_M + λ · |M| ]
# (or a budget |M| ≤ k); and with deterministic layers I_M is usually H(X), so the information
# must be measured with noise or finite precision (or replaced by the task loss, as App. 14.3.6
# does) before it can choose a pattern.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 4. Learning the mask: Gumbel-softmax with an annealed temperature (App. 14.3.6)
#
# The source's Application 14.3.6 learns the pattern:
#
# ```
# initialize learnable mask M_learnable ~ Bernoulli(p)
# for t = 1 to T_iter do:
#     mask = gumbel_softmax(M_learnable, temperature=T * (1 - t/T_iter))
#     alpha_sparse = softmax(mask * S)
#     L = task_loss + λ_sparse * sparsity_penalty(mask)
#     M_learnable = M_learnable - η ∇_M L
# return mask > 0.5
# ```
#
# Run as printed (PyTorch's `F.gumbel_softmax`, on a 16 × 16 score matrix, T_iter = 10, T = 1),
# three things go wrong: `gumbel_softmax` normalises over the keys, so each *row* of the mask sums
# to 1 — a distribution that picks about one key per query, not an independent keep/drop decision
# per pair; the temperature reaches exactly 0 at t = T_iter, where the relaxed sample divides by 0
# and becomes NaN; and the returned `mask > 0.5` is the last random sample (all False where NaN),
# not the learned parameters. Plus `softmax(mask * S)` repeats Eq. (14.3.43)'s error.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
trace, returned = printed_learnable_sparse(
    torch.randn(16, 16, generator=torch.Generator().manual_seed(2))
)
print("temperatures:", [round(tau, 2) for _, tau, _, _ in trace])
print(
    "every row of every sample sums to 1 before the last step:",
    all(bool(((sums - 1).abs() < 1e-5).all()) for _, _, sums, nan in trace[:-1]),
)
print(
    "NaN only at the last step (temperature 0):", [nan for *_, nan in trace] == [False] * 9 + [True]
)

# %% [markdown] slideshow={"slide_type": "-"}
# **The correct relaxation** keeps each pair with its own probability. For a binary variable the
# Gumbel-softmax over {keep, drop} with logits (l, 0) reduces to a sigmoid, because the difference
# of two Gumbel(0, 1) variables is Logistic(0, 1), log u − log(1 − u) for u ~ Uniform(0, 1)
# (Jang et al. 2017; the binary Concrete of Maddison et al. 2017):
#
# $$m = \sigma\!\left(\frac{l + \log u - \log(1 - u)}{\tau}\right), \qquad P(m > \tfrac12) = \sigma(l)
# \text{ at every } \tau .$$
#
# As τ → 0 the samples become exactly 0 or 1, so τ is annealed — geometrically, from τ₀ to
# τ_end > 0, never to 0 (`annealed_temperature`). The package's mechanism:
# `gumbel_sigmoid(logits, τ)`, `LearnableSparseMask(T)` (logits initialised to the keep
# probability p, the source's "Bernoulli(p)"; `density()` is the sparsity penalty; in eval mode it
# returns the binary mask logits > 0) and `soft_masked_attention`, which applies a mask with values in
# [0, 1] correctly: α_ij ∝ m_ij e^{s_ij}. (You write the last two yourself in Exercises 1–2.)

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
logits_grid = torch.tensor([-2.0, -0.5, 0.0, 1.0, 3.0], dtype=torch.float64).expand(100_000, 5)
worst = 0.0
for tau in (0.1, 1.0, 5.0):
    sample = gumbel_sigmoid(logits_grid, tau, generator=torch.Generator().manual_seed(3))
    kept = (sample > 0.5).double().mean(dim=0)
    worst = max(worst, float((kept - torch.sigmoid(logits_grid[0])).abs().max()))
print(
    "P(m > 1/2) = sigmoid(l) at temperatures 0.1, 1, 5 (100,000 samples): error < 0.01:",
    worst < 0.01,
)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Reproduction: learning a known pattern
#
# **Setup** (CPU, under a second per run): a true mask M* on T = 16 positions, each query keeping
# 1–3 random keys. Every step draws fresh random q, k, v (32 × 16 × 8) and the targets
# attention(q, k, v) under M*. A `LearnableSparseMask` (keep probability ½ everywhere) is trained
# with Adam (lr 0.1, 200 steps) on mean squared error + 0.01 × density, its samples drawn by
# `gumbel_sigmoid` at τ annealed from 1 to 0.05. The mask enters either correctly,
# softmax(S + log m), or as printed, softmax(m ⊙ S).
#
# **Expected**: the correct form recovers M* entry by entry; where its binary mask equals M*, it
# reproduces the targets (output error 0 up to round-off). **Pass** (seeds 0 and 1): learned = M*
# on ≥ 98 % of the 256 entries for the correct form, and output error < 10⁻⁶ whenever all its
# entries are right; the printed form's outputs stay wrong (error > 0.1) even when its mask is
# right.

# %% slideshow={"slide_type": "-"}
# NBVAL_IGNORE_OUTPUT
learned = {
    (form, seed): learn_sparse_mask(seed, form)
    for form in ("corrected", "printed")
    for seed in (0, 1)
}
for (form, seed), r in learned.items():
    agree = float((r.learned == r.true).double().mean())
    print(
        f"{form:>9}, seed {seed}: {int(r.true.sum())} true pairs, {int(r.learned.sum())} learned, "
        f"entries right {agree:.3f}, output error {r.output_error:.2e}"
    )
for seed in (0, 1):
    right = learned["corrected", seed]
    assert float((right.learned == right.true).double().mean()) >= 0.98
    assert right.output_error < 1e-6 or not bool((right.learned == right.true).all())
    assert learned["printed", seed].output_error > 0.1

# %% slideshow={"slide_type": "subslide"}
r0 = learned["corrected", 0]
fig, axes = plt.subplots(1, 4, figsize=(11, 2.8))
axes[0].imshow(r0.true.numpy(), cmap="Greys")
axes[0].set(title="true mask M*", xlabel="key", ylabel="query")
axes[1].imshow(r0.keep_probability.numpy(), cmap="Greys", vmin=0, vmax=1)
axes[1].set(title="learned keep probability", xlabel="key")
axes[2].semilogy(r0.losses, lw=1)
axes[2].set(title="loss (corrected form)", xlabel="step")
axes[3].semilogy(r0.temperatures)
axes[3].set(title="temperature", xlabel="step")
plt.tight_layout()
plt.show()

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Claim check — App. 14.3.6 ⚠.** The idea works: a mask relaxed with Gumbel noise and an
# annealed temperature is learned by gradient descent and finds the right pattern. As printed it
# does not run to the end: per-row `gumbel_softmax` is the wrong relaxation (one key per query),
# the linear schedule T(1 − t/T_iter) hits 0, `softmax(mask * S)` does not mask, and it returns a
# random sample. **Correct version**: independent binary Concrete samples per pair
# (`gumbel_sigmoid`), α ∝ m e^s (`soft_masked_attention`), a schedule with τ_end > 0
# (`annealed_temperature`), and the learned logits > 0 as the pattern
# (`LearnableSparseMask.binary_mask`).
#
# > **Glossary** · Gumbel-softmax 耿贝尔软最大化 · relaxation 松弛 · temperature annealing 温度退火 ·
# > straight-through estimator 直通估计 · sparsity penalty 稀疏惩罚

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 5. Exact attention in O(n) memory: tiles and the online softmax (FlashAttention)
#
# "O(n²) storage" (source 002 §7) is a property of the plain implementation, not of attention.
# Softmax weights can be computed one tile of keys at a time: keep, per query, the running
# maximum m, the running sum l = Σ e^{s_j − m} and the unnormalised output acc = Σ e^{s_j − m} v_j.
# A new tile with scores s′ and values V′ updates them (Milakov & Gimelshein 2018; Dao et al.
# 2022):
#
# $$m' = \max(m, \max_j s'_j),\quad l' = l\,e^{m-m'} + \sum_j e^{s'_j-m'},\quad
# \mathrm{acc}' = \mathrm{acc}\,e^{m-m'} + \sum_j e^{s'_j-m'} v'_j ,$$
#
# and after the last tile the output is acc / l — exactly softmax(s)·V, with only a (queries ×
# tile) block of scores alive at any time. `chunked_attention` does this (and recomputes the tiles
# in the backward pass, FlashAttention-2); you write the update in Exercise 5.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
g = torch.Generator().manual_seed(4)
qc, kc, vc = (torch.randn(2, 3, 300, 32, generator=g, dtype=torch.float64) for _ in range(3))
reference, _ = scaled_dot_product_attention(qc, kc, vc, causal=True)
for chunk in (1, 7, 64, 300):
    out, _ = chunked_attention(qc, kc, vc, chunk_size=chunk, causal=True)
    print(
        f"tiles of {chunk:>3} keys: max error vs plain < 1e-12: {float((out - reference).abs().max()) < 1e-12}"
    )
big = chunked_attention(*(t.float() for t in (qc, kc, vc)), causal=True)[0]
print(f"float32 vs float64 plain < 1e-5: {float((big.double() - reference).abs().max()) < 1e-5}")

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Time and memory against n, each measured in its own process
#
# One causal forward pass (B = H = 1, d = 64, float32) of plain attention (the (n, n) weights
# stored), chunked attention (tiles of 128), the package's causal linear attention, and local,
# strided and block attention (window, stride or block 64), on one thread. Memory is the growth
# of the process's peak resident set (`ru_maxrss`) in a fresh process per measurement; time is the
# processor time of the fastest of at least five runs (on a shared machine, wall-clock time would
# also count the waits for a free core). Measuring everything takes about twenty minutes, so the
# table was measured once on the course's 2-core machine (`python -m
# attncourse.chapters.ch10_efficient_gated_attention.costs --write` measures it again on yours);
# the cell reads it.

# %% slideshow={"slide_type": "subslide"}
# NBVAL_IGNORE_OUTPUT
table = costs.load_table()
shown = (("plain", 0), ("chunked", 0), ("linear", 0), ("local", 64), ("strided", 64), ("block", 64))
fig, axes = plt.subplots(1, 2, figsize=(11, 3.4))
for method, size in shown:
    for column, ax in enumerate(axes):
        label = method if not size else f"{method} ({size})"
        ax.loglog(LENGTHS, costs.series(table, method, size, column), "o-", ms=3, label=label)
ns = np.array(LENGTHS, dtype=float)
axes[1].loglog(ns, 4 * ns**2 / 2**20, "k:", lw=1, label="n² float32 numbers")
axes[0].set(xlabel="n", ylabel="ms", title="forward time (processor time, fastest run)")
axes[1].set(xlabel="n", ylabel="MB", title="extra peak memory")
axes[1].legend(fontsize=7)
plt.tight_layout()
plt.show()
print(f"{'n':>6} | " + " | ".join(f"{m + (f' {s}' if s else ''):>17}" for m, s in shown))
for n in LENGTHS:
    cells = [table[m, n, s] for m, s in shown]
    print(f"{n:>6} | " + " | ".join(f"{ms:7.2f} ms {mb:6.1f} MB" for ms, mb in cells))
for fast, size in (("chunked", 0), ("linear", 0), ("local", 64), ("strided", 64)):
    print(
        f"{fast} {size or ''} cheaper than plain from n = {costs.crossover(table, fast, 'plain', 0, size)} "
        f"(time), from n = {costs.crossover(table, fast, 'plain', 1, size)} (memory)"
    )
plain_mb, chunked_mb = table["plain", 16384, 0][1], table["chunked", 16384, 0][1]
assert plain_mb > 500 and chunked_mb < 100  # the O(n²) and O(n) memories at n = 16384
assert table["local", 16384, 64][1] < 100 and table["strided", 16384, 64][1] < 200

# %% [markdown] slideshow={"slide_type": "-"}
# What the measurements show (the crossovers are this machine's; yours will differ somewhat):
#
# - **Plain attention's memory grows like n²** (about 1.5 GB at n = 16384: the 16384² float32
#   weights, 1 GB, plus the causal mask and its negation as booleans), **chunked attention's like
#   n** (a few MB) — at the same result to 10⁻¹². Both do O(n²) work (the causal chunked version
#   skips the tiles above the diagonal, half of it): tiling changes what is stored, not the order
#   of what is computed.
# - **Local and block attention** are O(n · window) in both. **Strided attention** with a fixed
#   stride keeps n/stride far keys per query, so it grows faster than linearly; with stride ≈ √n
#   it is O(n√n).
# - **The package's causal linear attention is linear in n, with a large constant**: its parallel
#   form keeps the prefix sums Σ_{j≤i} φ(k_j)v_jᵀ for every position, n · d_k · d_v numbers, which
#   at d = 64 is 4096 numbers per position against n per position for the stored weights — it only
#   saves memory once n > d_k·d_v = 4096 (in the table from n = 8192), and it is slower than plain
#   attention up to n = 8192. The recurrent form below keeps one d_k × d_v state instead.
# - **Chunked attention is also faster** than plain attention here (3–4 times at n ≥ 4096): it
#   skips the tiles above the diagonal and never writes a gigabyte of weights to memory.
#
# **Claim check — source 002 §7: "O(n²) computation and storage" ✓ / ✗.** Computation ✓ (for exact
# attention). Storage ✗ — exact attention needs O(n) extra memory (FlashAttention; measured).
# **Thm. 14.3.16's "softmax: O(n²) complexity"** ✓ for time, ✗ for memory.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 6. Linear attention (Def. 14.3.18, Lemma 14.3.24, Thm. 14.3.16)
#
# $$\alpha_i = \frac{\phi(q)^\top \phi(k_i)}{\sum_j \phi(q)^\top \phi(k_j)} \qquad (14.3.46)$$
#
# with a feature map φ ≥ 0 (Katharopoulos et al. 2020 use φ(x) = elu(x) + 1, the package's
# `linear_attention`). Because matrix products associate, Σ_j α_ij v_j = φ(q_i)ᵀ(Σ_j φ(k_j)v_jᵀ) /
# φ(q_i)ᵀ(Σ_j φ(k_j)): the n × n matrix is never needed. With a causal mask the sums run over
# j ≤ i, and the same computation is a recurrence — a transformer as an RNN:
#
# $$S_i = S_{i-1} + \phi(k_i)v_i^\top,\quad z_i = z_{i-1} + \phi(k_i),\quad
# \mathrm{out}_i = \frac{\phi(q_i)^\top S_i}{\phi(q_i)^\top z_i}.$$
#
# Three computations of causal linear attention must agree: the (n, n) matrix of Eq. (14.3.46)
# (`parallel_linear_attention`), the recurrence with one d_k × d_v state
# (`recurrent_linear_attention`) and the package's prefix sums.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
g = torch.Generator().manual_seed(5)
q_l, k_l, v_l = (torch.randn(3, 50, 8, generator=g, dtype=torch.float64) for _ in range(3))
matrix_form, _ = parallel_linear_attention(q_l, k_l, v_l)
recurrent_form = recurrent_linear_attention(q_l, k_l, v_l)
package_form, _ = linear_attention(q_l, k_l, v_l, causal=True, eps=0.0)
print(
    "recurrent == matrix form (< 1e-12):", float((recurrent_form - matrix_form).abs().max()) < 1e-12
)
print("package == matrix form (< 1e-12):", float((package_form - matrix_form).abs().max()) < 1e-12)
print("state of the recurrent form: d_k x d_v + d_k =", 8 * 8 + 8, "numbers, whatever n is")

# %% [markdown] slideshow={"slide_type": "-"}
# **The rank bound (Lemma 14.3.24).** The source writes the "information capacity" of linear
# attention as C = rank(φφᵀ) ≤ d_φ. What is certain: the bidirectional weight matrix
# A = D⁻¹ φ(Q)φ(K)ᵀ is a product through d_φ dimensions, so rank A ≤ d_φ, whatever n is; a softmax
# matrix has no such limit. A consequence that can be used: A is row-stochastic and non-negative,
# so its eigenvalues have |λ| ≤ 1, and at most rank A of them are non-zero; hence
# trace A = Σ λ ≤ d_φ. If every stored key is queried once (the retrieval matrix, query i = key i),
# the **average weight on the right key is at most d_φ / n**. The causal mask lifts the rank bound
# (a triangular cut of a low-rank matrix can have full rank), which is why the causal model below
# still copies.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
g = torch.Generator().manual_seed(6)
n_keys, d_phi = 64, 8
keys = torch.randn(n_keys, d_phi, generator=g, dtype=torch.float64)
keys = keys / keys.norm(dim=-1, keepdim=True)  # unit keys; each key queries itself
A_lin = linear_attention_matrix(keys, keys)
A_causal = linear_attention_matrix(keys, keys, causal=True)
print(f"n = {n_keys}, d_phi = d_k = {d_phi}:")
print(
    f"  rank of linear attention: bidirectional {numerical_rank(A_lin)}, causal {numerical_rank(A_causal)}"
)
print(
    f"  linear: mean weight on the right key {float(A_lin.trace()) / n_keys:.4f} <= d_phi / n = {d_phi / n_keys:.4f}"
)
for beta in (1.0, 10.0, 100.0):
    A_soft = softmax(beta * keys @ keys.T)
    print(
        f"  softmax, inverse temperature {beta:>5}: rank {numerical_rank(A_soft)}, "
        f"mean weight on the right key {float(A_soft.trace()) / n_keys:.4f}"
    )
assert numerical_rank(A_lin) <= d_phi and float(A_lin.trace()) <= d_phi + 1e-9

# %% [markdown] slideshow={"slide_type": "-"}
# **Does linear attention approximate softmax?** The source says φ maps into a higher-dimensional
# space so that the kernel approximates softmax. elu + 1 does not (same dimension, a different
# kernel). Positive random features do (Choromanski et al. 2021, "Performer"):
# φ(x) = exp(Wᵀx − ‖x‖²/2)/√m with W ~ N(0, I) has E[φ(q)ᵀφ(k)] = e^{qᵀk}, so as the number m of
# features grows, linear attention converges to softmax attention — slowly, and with rank ≤ m.

# %% slideshow={"slide_type": "-"}
# NBVAL_IGNORE_OUTPUT
g = torch.Generator().manual_seed(7)
qp, kp = (torch.randn(64, 8, generator=g, dtype=torch.float64) / 8**0.25 for _ in range(2))
target = softmax(qp @ kp.T)  # softmax(q k^T / sqrt(8))
tv_elu = total_variation(linear_attention_matrix(qp * 8**0.25, kp * 8**0.25), target)
print(f"elu + 1 (8 features): total variation from softmax {tv_elu:.3f}")
tvs = {}
for m in (16, 256, 4096, 65536):
    W = torch.randn(8, m, generator=g, dtype=torch.float64)
    kernel = positive_random_features(qp, W) @ positive_random_features(kp, W).T
    tvs[m] = total_variation(kernel / kernel.sum(-1, keepdim=True), target)
    print(f"positive random features, m = {m:>5}: total variation {tvs[m]:.3f}")
assert tvs[65536] < 0.1 < tv_elu and tvs[65536] < tvs[16] / 3

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Claim check — Def. 14.3.18 ✓ / ⚠.** Eq. (14.3.46) is what the package computes (three forms
# agree). "φ maps to a higher-dimensional space" and "approximates softmax" ⚠: only for feature maps
# built for it (random features with m ≫ d: here the distance halves for every 16 times more
# features); the common elu + 1 keeps d_φ = d_k and is a different attention. **Lemma 14.3.24 ✓ / ⚠**: rank A ≤ d_φ holds for bidirectional linear
# attention (measured: 8 for n = 64), so the mean weight on the right one of n stored keys is at
# most d_φ / n; causal masking lifts the matrix's rank (64), but each query still reads one
# d_φ × d_v state.
#
# ### Reproduction: associative recall beyond d_k pairs (Schlag et al. 2021), and copying (Katharopoulos et al. 2020)
#
# **Setup, recall** (about 1 s per run): 32 key–value pairs (keys distinct out of 64, values out of
# 16), each pair embedded as one vector E_k[key] + E_v[value] (d = 64), then a query key; one
# attention layer with d_k = 8 query/key dimensions reads the value out (`RecallModel`). Adam 3e-3,
# batch 64, 250 steps; softmax against linear (elu + 1). Schlag et al. show that a linear
# attention's memory Σ φ(k)vᵀ holds about d_φ pairs without interference; here 32 pairs meet
# d_φ = 8. **Pass** (seeds 0, 1): softmax ≥ 0.95 accuracy; linear ≤ 0.6, and its mean weight on
# the right pair ≤ d_k / n = 0.25 (the trace bound).
#
# **Setup, copy** (about 1–2 s per run): 8 random tokens (of 9), a separator, the same 8 again; a
# one-layer causal model (d = 32, 2 heads, learned positions, Pre-LN, MLP; `TinyLM`), Adam 3e-3,
# batch 32, 200 steps. Katharopoulos et al. (§4.1) report linear attention converging on this task
# like softmax attention. **Pass** (seeds 0, 1): both ≥ 0.95 token accuracy.

# %% slideshow={"slide_type": "-"}
# NBVAL_IGNORE_OUTPUT
recall = {}
for kind in ("softmax", "linear"):
    for seed in (0, 1):
        torch.manual_seed(seed)
        model = RecallModel(kind, key_dim=8)
        losses = train_recall(model, 32, steps=250, seed=seed)
        recall[kind, seed] = (model, *recall_scores(model, 32))
        print(
            f"recall, {kind:>7}, seed {seed}: accuracy {recall[kind, seed][1]:.3f}, mean weight on the right pair {recall[kind, seed][2]:.3f}"
        )
copy = {}
for kind in ("softmax", "linear"):
    for seed in (0, 1):
        model, losses = train_copy(kind, 8, steps=200, seed=seed)
        copy[kind, seed] = (copy_accuracy(model, 8), steps_to_loss(losses))
        print(
            f"copy,   {kind:>7}, seed {seed}: accuracy {copy[kind, seed][0]:.3f}, loss < 0.05 from step {copy[kind, seed][1]}"
        )
for seed in (0, 1):
    assert recall["softmax", seed][1] >= 0.95
    assert recall["linear", seed][1] <= 0.6 and recall["linear", seed][2] <= 8 / 32
    assert copy["softmax", seed][0] >= 0.95 and copy["linear", seed][0] >= 0.95

# %% slideshow={"slide_type": "subslide"}
fig, axes = plt.subplots(1, 2, figsize=(8, 3.2))
for ax, kind in zip(axes, ("softmax", "linear")):
    W_r = recall_weight_matrix(recall[kind, 0][0], 32)
    ax.imshow(W_r.numpy(), cmap="viridis", vmin=0, vmax=float(W_r.max()))
    ax.set(
        title=f"{kind}: weights, stored key j queried", xlabel="pair", ylabel="query = key of pair"
    )
plt.tight_layout()
plt.show()

# %% [markdown] slideshow={"slide_type": "-"}
# Softmax attention puts nearly all of each query's weight on its own pair (a bright diagonal);
# linear attention's weights are smeared over the pairs — its diagonal cannot average more than
# d_k/n = 1/4. With 32 pairs in an 8-dimensional memory, recall fails, as Schlag et al. predict;
# copying works, because each causal query reads its own prefix state and the model addresses
# positions, not 32 stored associations at once. **Thm. 14.3.16 ✓**: softmax has full access at
# O(n²) work, linear attention has O(n) work and a capacity limited by d_φ — measured on both sides.
#
# > **Glossary** · linear attention 线性注意力 · feature map 特征映射 · kernel 核函数 ·
# > rank 秩 · associative recall 联想回忆 · recurrent form 循环形式

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 7. Gated attention (Def. 14.3.19, Lemma 14.3.25, App. 14.3.7)
#
# $$g = \sigma(W_g [q; k; v]), \quad Z = g \odot \mathrm{Attention}(q, k, v) \qquad (14.3.48)$$
#
# Application 14.3.7 gives a class. Run as printed: it has no imports, so `nn` is undefined; with
# `torch` and `torch.nn as nn` added, `math` is undefined; with `math` and `F` added too, the gate
# is reshaped to (B, T, 1, H, 1), which cannot multiply the (B, H, T, T) weights. Over every batch
# size, length and head count from 1 to 4:

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
print("as printed, no imports:", try_call(lambda: run_listing(listings.GATED_ATTENTION_14_3_7)))
printed_class = source_gated_attention(IMPORTS_A_READER_ADDS)
print("with torch, nn:", try_call(lambda: printed_class(8, 2)(torch.randn(2, 5, 8))))
outcomes = survey_source_gated_attention()
runs = [shape for shape, outcome in outcomes.items() if outcome == "runs"]
print(f"with math and F too: runs for {len(runs)} of {len(outcomes)} (B, T, H): {runs}")
print(
    "  e.g. (B, T, H) = (2, 5, 2):",
    try_call(lambda: source_gated_attention()(8, 2)(torch.randn(2, 5, 8))),
)
print(f"one line changed, {PRINTED_GATE_LINE!r} -> {FIXED_GATE_LINE!r}:")
fixed_outcomes = survey_source_gated_attention(fixed=True)
print(f"  runs for {sum(o == 'runs' for o in fixed_outcomes.values())} of {len(fixed_outcomes)}")
torch.manual_seed(0)
fixed = source_gated_attention(fixed=True)(8, 2).double()
ours = package_gated_from_source(fixed).double()
x_g = torch.randn(3, 5, 8, dtype=torch.float64)
with torch.no_grad():
    gap = float((fixed(x_g) - ours(x_g)[0]).abs().max())
print("  fixed listing == attncourse GatedAttention with its weights (< 1e-12):", gap < 1e-12)
assert gap < 1e-12

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Claim check — App. 14.3.7 ✗ as printed** (missing imports; the gate's reshape makes it fail for
# every shape but B = T = H = 1), **✓ after one line**: `gate.transpose(1, 2).unsqueeze(-1)` gives
# one gate per head and query, (B, H, T, 1). The fixed class is the package's `GatedAttention`
# (whose gate network reads [q; k; v] whole instead of head by head — the same function up to a
# permutation of the gate's input columns, used above to copy the weights).
#
# **Def. 14.3.19 ⚠**: [q; k; v] concatenates vectors of *one* position, so in self-attention the
# gate is a function of the query position alone; it cannot depend on which keys are attended.
# That is exactly what output gating needs (below).
#
# **Lemma 14.3.25** claims I(Z; X) ≈ g · I(Attention; X): the gate scales the information passed.
# Exactly, for A uniform on 8 levels (3 bits) and a gate g:

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
levels = torch.arange(8, dtype=torch.float64)
print(
    f"{'gate g':>6} | {'g * I(A; X)':>11} | {'Z = g A':>8} | {'Z = A w.p. g, else erased':>25} | {'Z = g A + N(0, 1)':>17}"
)
for gain in (1.0, 0.5, 0.25, 0.1):
    deterministic = information(gain * levels[:, None])
    print(
        f"{gain:>6} | {gain * 3:>11.3f} | {deterministic:>8.3f} | {erasure_information(3.0, gain):>25.3f} | "
        f"{gaussian_channel_information(levels, gain):>17.3f}"
    )

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Claim check — Lemma 14.3.25 ✗.** A deterministic gate g > 0 is invertible: Z = gA carries all
# 3 bits for every g. With noise after the gate, information falls much faster than g (like g² for
# small g: 0.037 bits at g = 0.1, not 0.3). **Correct statement**: I(Z; X) = g · I(A; X) holds for
# an *erasure* gate, one that passes A with probability g and blocks it otherwise; a multiplicative
# gate changes the signal-to-noise ratio of whatever follows, not the information in Z itself.
#
# ### Reproduction: output gating reduces the attention sink (Qiu et al. 2025)
#
# Qiu et al. 2025 put a head-wise or element-wise sigmoid gate on each head's attention output,
# computed from the query's input — Y′ = Y ⊙ σ(xW_g) (`OutputGatedAttention`; the source's fixed
# class is the head-wise case with an MLP gate). In their trained LLMs (1.7B dense, 15B MoE) it
# lowered the attention on the first token from 46.7 % to 4.8 % and made the gate values sparse
# (mostly near 0).
# Their explanation: a head that has nothing to contribute for some query must still spend its
# softmax weight somewhere; without a gate it learns to park it on a token whose value it makes
# harmless (the first token: an *attention sink*); a gate can switch the head off instead.
#
# **Setup** (about 2 s per run): the bigram-backcopy task of Guo et al. 2024 — BOS, then 22 tokens
# from a random bigram table, except that after one of 4 trigger tokens the next token repeats the
# token *before* the trigger. A one-layer, one-head, attention-only model (d = 32, learned
# positions; `TinyLM`) must copy at triggers and do nothing elsewhere. AdamW (lr 2e-2, weight
# decay 0.5), batch 32, 400 steps; softmax attention against `OutputGatedAttention` (head-wise).
# Measured at query positions 4–22: the mean weight on BOS at non-trigger ("dormant") queries,
# where an even spread would give 0.087.
#
# **Pass** (seeds 0 and 1): both models copy (accuracy after a trigger ≥ 0.7); softmax puts
# ≥ 0.4 of its dormant weight on BOS; the gated model ≤ 0.3 and less than half of softmax's.

# %% slideshow={"slide_type": "-"}
# NBVAL_IGNORE_OUTPUT
sinks = {}
for seed in (0, 1):
    for kind in ("softmax", "gated-headwise"):
        sinks[kind, seed] = train_sink(kind, seed, steps=400)
for (kind, seed), (_, r) in sinks.items():
    gate = (
        ""
        if kind == "softmax"
        else f", gate: dormant {r.gate_dormant:.2f}, at triggers {r.gate_active:.2f}"
    )
    print(
        f"{kind:>14}, seed {seed}: BOS weight at dormant queries {r.bos_dormant:.3f} "
        f"(even spread {uniform_bos_share():.3f}), copy accuracy {r.copy_accuracy:.3f}{gate}"
    )
for seed in (0, 1):
    plain, gated = sinks["softmax", seed][1], sinks["gated-headwise", seed][1]
    assert plain.copy_accuracy >= 0.7 and gated.copy_accuracy >= 0.7
    assert plain.bos_dormant >= 0.4
    assert gated.bos_dormant <= 0.3 and gated.bos_dormant < 0.5 * plain.bos_dormant

# %% slideshow={"slide_type": "subslide"}
example = bigram_backcopy(1, torch.Generator().manual_seed(19))[:, :-1]  # (1, 23)
triggers = [i for i, t in enumerate(example[0].tolist()) if 1 <= t <= 4 and i >= 2]
fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
for ax, kind in zip(axes, ("softmax", "gated-headwise")):
    with torch.no_grad():
        _, (w_ex,) = sinks[kind, 0][0](example)
    ax.imshow(w_ex[0, 0].numpy(), cmap="viridis", vmin=0, vmax=1)
    ax.set_yticks(triggers, [f"trigger {i}" for i in triggers], fontsize=7)
    ax.set(title=f"{kind} (seed 0): weights of one sequence", xlabel="key (0 = BOS)")
plt.tight_layout()
plt.show()

# %% [markdown] slideshow={"slide_type": "-"}
# The effect appears at this tiny scale: without a gate, the dormant queries put most of their
# weight on BOS (the bright first column); with an output gate the gate closes for them (its value
# there is a few hundredths) and their attention stays spread out; at the marked trigger rows both
# models put their weight on the previous token (just left of the diagonal) and copy it. The exact numbers change with the seed and the CPU — the asserts
# keep margins. What this does *not* reproduce: the paper's gains in perplexity, stability at large
# learning rates and long-context extrapolation, which need models far beyond a CPU budget.
#
# > **Glossary** · gate 门控 · sigmoid S 型函数 · attention sink 注意力汇聚 (注意力沉没) ·
# > dormant head 休眠头 · erasure channel 删除信道

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 8. Hierarchical abstraction (Lemma 14.3.26, Thm. 14.3.17)
#
# $$I(Z^{(l)}; Y) \ge I(Z^{(l-1)}; Y) \quad \text{for } l \text{ deep enough} \qquad (14.3.50)$$
#
# $$\beta_l\, I(X; Z^{(l)}) + (1 - \beta_l)\, I(Z^{(l-1)}; Z^{(l)}) = \text{const} \qquad (14.3.51)$$
#
# Every layer is a function of the one below, Z^(l) = f_l(Z^(l−1)), so Y → X → Z^(1) → Z^(2) → … is
# a Markov chain and the data-processing inequality gives the opposite of (14.3.50):
# I(Z^(l); Y) ≤ I(Z^(l−1); Y) ≤ I(X; Y), for every l. And for deterministic layers
# I(X; Z^(l)) = I(Z^(l−1); Z^(l)) = H(Z^(l)), so the left side of (14.3.51) is H(Z^(l)) for
# every β_l. A four-layer example, exact over all 16 inputs: X = four bits, Y = x₁ XOR x₂; layer 1
# averages within blocks of two (block attention), layer 2 averages everything, layer 3
# thresholds.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
x4 = all_bit_vectors(4)  # (16, 4)
y_xor = (x4[:, 0] != x4[:, 1]).double()[:, None]  # (16, 1) the label
z1 = attend(x4, pattern_mask("block", 4, 2, causal=False))[:, [1, 3]]  # block means
z2 = z1.mean(dim=1, keepdim=True)  # the overall mean
z3 = (z2 >= 0.5).double()  # a threshold
stack = (("X", x4), ("Z1 = block means", z1), ("Z2 = mean", z2), ("Z3 = [Z2 >= 1/2]", z3))
print(f"{'layer':>18} | {'I(Z; Y)':>8} | {'H(Z) = I(X; Z) = I(Z_prev; Z)':>30}")
previous = None
for name, z in stack:
    print(f"{name:>18} | {information(z, y_xor):>8.4f} | {information(z):>30.4f}")
    if previous is not None:
        assert information(z, y_xor) <= information(previous, y_xor) + 1e-12
    previous = z


def probe_mse(features, target):
    """Least-squares linear probe (with a bias): the mean squared error it cannot remove."""
    design = torch.cat([features, torch.ones(len(features), 1, dtype=torch.float64)], dim=1)
    solution = torch.linalg.lstsq(design, target).solution
    return float(((design @ solution - target) ** 2).mean())


relu_layer = torch.relu(x4[:, :2].sum(dim=1, keepdim=True) - 1)  # = x1 AND x2 for bits
richer = torch.cat([x4, relu_layer], dim=1)
print(
    f"linear probe for Y: on X MSE {probe_mse(x4, y_xor):.4f}, "
    f"on [X, relu(x1 + x2 - 1)] MSE {probe_mse(richer, y_xor):.4f} < 1e-12: "
    f"{probe_mse(richer, y_xor) < 1e-12}; I(Z; Y) {information(x4, y_xor):.4f} -> "
    f"{information(richer, y_xor):.4f} bits"
)

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Claim check — Lemma 14.3.26 ✗.** Information about Y never grows with depth
# (1 → 1 → 0.16 → 0.01 bits here; exact, and a theorem). **Correct statement**: what a deeper layer
# can increase is *usable* information — how much a simple read-out (here a linear probe) can extract:
# one ReLU unit leaves I(Z; Y) = 1 bit unchanged but takes the probe's error from 0.25 to 0
# (XOR becomes linear). That is the sense in which deeper representations are "more abstract"
# (Xu et al. 2020 call it V-information).
#
# **Claim check — Thm. 14.3.17 ✗.** For deterministic layers the left side of (14.3.51) is
# H(Z^(l)) whatever β_l is: 4, 3, 2.03, 0.90 bits above — not a constant. **Correct
# statement**: the information bottleneck (Tishby et al.) is an *objective* for one representation,
# min I(X; Z) − β I(Z; Y), a trade-off chosen by β, not a conservation law between layers; and it
# needs stochastic (or quantised) representations, since for a deterministic network I(X; Z) is
# just H(Z).

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 9. Widget: sparse patterns, their reach and their cost
#
# Choose the length n, the pattern (local, strided, block) and its size. The widget shows the
# mask's top-left corner (the first 4 × size positions), which keys reach the **last** query
# through 1–4 layers (dark = reached; columns pool the n positions), and the measured time and
# memory at that n of plain, chunked and linear attention and of the chosen sparse pattern's
# implementation (from the table of §5; log scales). Things to try: strided with n = 16384 reaches
# everything in two layers at 2–3 % of the pairs; local with a window of 16 reaches 16 more keys
# per layer; block never leaves its block; plain attention's memory bar passes a gigabyte at
# n = 16384.

# %% slideshow={"slide_type": "slide"}
# NBVAL_IGNORE_OUTPUT
sparsity_widget()

# %% [markdown] slideshow={"slide_type": "subslide"}
# The same function the widget calls, timed (it reads the table, computes the reach in O(n) per
# layer and redraws only what moves):

# %% slideshow={"slide_type": "subslide"}
# NBVAL_IGNORE_OUTPUT
from attncourse.chapters.ch10_efficient_gated_attention import (
    SparsityPlot,
    sparsity_numbers,
    sparsity_widget_update,
)

plot = SparsityPlot()  # blitted, as in the widget
settings = [
    (
        LENGTHS[i % 7],
        ("local", "strided", "block")[i % 3],
        *(16 * 2 ** ((i + j) % 5) for j in range(3)),
    )
    for i in range(20)
]
sparsity_widget_update(plot, *settings[-1])  # the first call draws the static background
times = []
for setting in settings:
    start = time.perf_counter()
    numbers, png, caption = sparsity_widget_update(plot, *setting)
    times.append(1000 * (time.perf_counter() - start))
print(f"median update {np.median(times):.0f} ms over {len(times)} settings (budget 100 ms)")
snapshot = SparsityPlot(pyplot=True)
snapshot.update(sparsity_numbers(16384, "strided", 64, 128, 64))
plt.show()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 10. Claim checks at a glance
#
# | source claim | verdict | correct statement / condition |
# |---|---|---|
# | 002 §7–8 listings (`bidirectional_advantages`, `bidirectional_challenges`, `compare_attention_types`) | ✓ run | they return dictionaries of claims; checked one by one below |
# | 002 §7: global context, every position reads every position | ✓ | one bidirectional layer: all n² pairs |
# | 002 §7: parallel, "training tens of times faster than an RNN" | ⚠ | sequential steps 1 vs n (exact); the wall-clock ratio (printed in §1) depends on n, d and the machine |
# | 002 §7: long-range modelling without decay | ⚠ | path length 1 (ch. 04), but a relevant key's weight e^Δ/(e^Δ + n − 1) dilutes with n |
# | 002 §7: rich representations from multiple heads | — | qualitative; not a checkable statement here |
# | 002 §7: O(n²) computation and storage | ✓ / ✗ | computation ✓; storage ✗: exact attention in O(n) memory (chunked, measured: about 1.5 GB vs a few MB at n = 16384) |
# | 002 §7: needs explicit position information | ✓ / ⚠ | bidirectional: permutation-equivariant (exact); causal masks leak position (1/(i + 1)) |
# | 002 §7: attention can be too diffuse | ✓ | weight e^Δ/(e^Δ + n − 1) → 0; Δ = ln(n − 1) keeps ½ |
# | 002 §7: interpretability | — | qualitative |
# | 002 §8: bidirectional / masked O(n²), cross O(n × m) | ✓ | pairs n², n(n + 1)/2, n·m |
# | 002 §8: sparse O(n√n) or O(n log n), "part of the sequence" | ⚠ | O(n·k) for k keys per query (strided √n: 1.5 n√n; LogSparse n log₂ n; window/block O(n)); per layer only — strided reaches all in 2 layers, blocks never |
# | Def. 14.3.17, Eq. (14.3.43): softmax(M ⊙ S) | ✗ | masked keys keep e⁰/Z (up to most of the weight); softmax(S + log M), i.e. fill with −∞ |
# | Lemma 14.3.23: I_sparse ≤ I_dense | ✗ | 4 bits (sparse) > 2.03 (dense uniform); true: sparse output is independent of masked keys given visible ones; best dense ≥ best sparse |
# | Thm. 14.3.15: M* = arg min [I − I_M] | ✗ | no sparsity term: negative for 336 of 343 masks, dense not optimal, or 0 for all; needs + λ\|M\| and a non-degenerate information |
# | App. 14.3.6: learnable mask, Gumbel-softmax, annealing | ⚠ | idea ✓ (recovers the known pattern, asserted ≥ 98 % of entries); as printed: per-row softmax, τ → 0 gives NaN, softmax(mask·S), returns a sample |
# | Def. 14.3.18, Eq. (14.3.46): linear attention | ✓ / ⚠ | formula ✓ (three forms agree); "approximates softmax" only with random features (total variation about 0.36 for elu + 1) |
# | Lemma 14.3.24: C = rank(φφᵀ) ≤ d_φ | ✓ / ⚠ | rank ≤ d_φ (bidirectional) ⇒ mean weight on the right key ≤ d_φ/n; causal masks lift the rank |
# | Thm. 14.3.16: softmax O(n²) full access, linear O(n) limited capacity | ✓ | measured: recall 32 pairs, d_k = 8: softmax ≈ 1.0, linear ≈ 0.35; copy: both 1.0; softmax's O(n²) is time, not memory |
# | Def. 14.3.19, Eq. (14.3.48): g = σ(W_g[q; k; v]) | ⚠ | in self-attention the gate depends on the query position only |
# | Lemma 14.3.25: I(Z; X) ≈ g · I(A; X) | ✗ | deterministic gate keeps all 3 bits; exact only for an erasure gate; with noise it falls like g² |
# | App. 14.3.7: `GatedAttention` listing | ✗ / ✓ | no imports, gate shape (B, T, 1, H, 1) fails except B = T = H = 1; one line fixes it (= package `GatedAttention`) |
# | Qiu et al. 2025: output gate removes the attention sink | ✓ (this scale) | BOS weight at dormant queries ≥ 0.4 without gate, ≤ 0.3 with (two seeds): much reduced, not always to an even spread |
# | Lemma 14.3.26: I(Z^(l); Y) grows with depth | ✗ | data processing: it never grows; usable (linearly decodable) information can |
# | Thm. 14.3.17: β I(X; Z) + (1 − β) I(Z_prev; Z) = const | ✗ | equals H(Z^(l)) for deterministic layers (4 → 0.90 bits); the bottleneck is an objective, not a conservation law |

# %% [markdown] slideshow={"slide_type": "skip"}
# ## 11. Exercises (graded)
#
# Five exercises, 13 points. Write your code between the lines marked for it, run the cell, then
# run the check cell under it: it tests your function on random and edge inputs and tells you
# what is wrong. When graded, the same kinds of input are tried again with other numbers. All five
# are from scratch: the checks refuse PyTorch's softmax and attention functions and the package's
# own versions of what you write. Your functions take and return tensors and numbers only.

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 1 (3 points) — attention weights under a soft mask, Eq. (14.3.43) corrected
# `my_masked_weights(scores, mask)`: scores (..., T, S), mask of the same shape with values in
# [0, 1] → weights (..., T, S) with α_ij = m_ij e^{s_ij} / Σ_j′ m_ij′ e^{s_ij′} over the last
# dimension. A row whose mask is all 0 gets weights 0. Numerical care is part of the exercise: one
# case has scores of ±1000 and a masked key with the largest score (why must that key not set the
# shift you subtract before `exp`?).


# %% nbgrader={"grade": false, "grade_id": "ch10_masked_weights", "locked": false, "schema_version": 3, "solution": true} slideshow={"slide_type": "skip"}
def my_masked_weights(scores, mask):
    """scores (..., T, S), mask (..., T, S) in [0, 1] -> weights m e^s / sum m e^s (..., T, S)."""
    ### BEGIN SOLUTION
    kept = mask > 0
    safe_mask = torch.where(kept, mask, torch.ones_like(mask))
    logits = torch.where(kept, scores + torch.log(safe_mask), torch.full_like(scores, -math.inf))
    top = logits.amax(dim=-1, keepdim=True)  # the largest kept s + log m
    top = torch.where(torch.isfinite(top), top, torch.zeros_like(top))  # an all-zero row
    e = torch.exp(logits - top)  # (..., T, S), exactly 0 where m = 0
    total = e.sum(dim=-1, keepdim=True)
    return e / torch.where(total > 0, total, torch.ones_like(total))
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch10_masked_weights_test", "locked": true, "points": 3, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"}
from attncourse.exercises.ch10 import check_masked_weights

check_masked_weights(my_masked_weights)
### BEGIN HIDDEN TESTS
import importlib

import attncourse.exercises.ch10 as ex
import attncourse.exercises.engine as engine

engine = importlib.reload(engine)
ex = importlib.reload(ex)
ex.check_masked_weights(my_masked_weights, seed=101)
### END HIDDEN TESTS

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 2 (2 points) — a Gumbel-sigmoid sample
# `my_gumbel_sigmoid(logits, u, temperature)`: logits (...), u (...) uniform in (0, 1) (one number
# per entry, drawn for you), temperature > 0 → the relaxed keep/drop sample (...) in (0, 1). Derive
# it from the Gumbel-softmax over the two classes {keep: logit l, drop: logit 0},
# softmax((l + g₁, g₀)/τ)[keep] with g₀, g₁ independent Gumbel(0, 1). Facts you may use: the
# difference g₁ − g₀ has the logistic distribution, whose inverse distribution function is
# F⁻¹(u) = log u − log(1 − u); and softmax((a, b))[0] = σ(a − b).


# %% nbgrader={"grade": false, "grade_id": "ch10_gumbel_sigmoid", "locked": false, "schema_version": 3, "solution": true} slideshow={"slide_type": "skip"}
def my_gumbel_sigmoid(logits, u, temperature):
    """logits (...), u (...) in (0, 1), temperature > 0 -> relaxed sample (...) in (0, 1)."""
    ### BEGIN SOLUTION
    noise = torch.log(u) - torch.log1p(-u)  # Logistic(0, 1) = g1 - g0
    return torch.sigmoid((logits + noise) / temperature)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch10_gumbel_sigmoid_test", "locked": true, "points": 2, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"}
from attncourse.exercises.ch10 import check_gumbel_sigmoid

check_gumbel_sigmoid(my_gumbel_sigmoid)
### BEGIN HIDDEN TESTS
import importlib

import attncourse.exercises.ch10 as ex
import attncourse.exercises.engine as engine

engine = importlib.reload(engine)
ex = importlib.reload(ex)
ex.check_gumbel_sigmoid(my_gumbel_sigmoid, seed=102)
### END HIDDEN TESTS

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 3 (2 points) — reach through L layers of a sparse mask
# `my_reach(mask, layers)`: mask (n, n) bool (query i may attend key j) and a number of layers
# L ≥ 1 → R (n, n) bool with R[i, j] = True iff key j's information can reach position i's output
# through L attention layers with this mask, where the residual stream carries every position's
# own state from one layer to the next. Think about what one layer connects before you compose L of
# them.


# %% nbgrader={"grade": false, "grade_id": "ch10_reach", "locked": false, "schema_version": 3, "solution": true} slideshow={"slide_type": "skip"}
def my_reach(mask, layers):
    """mask (n, n) bool, layers >= 1 -> reach (n, n) bool after that many layers."""
    ### BEGIN SOLUTION
    n = mask.shape[0]
    one_layer = mask | torch.eye(n, dtype=torch.bool)  # the residual keeps i's own state
    reach = torch.eye(n, dtype=torch.bool)
    for _ in range(layers):
        reach = (reach.double() @ one_layer.double()) > 0  # i <- k <- j
    return reach
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch10_reach_test", "locked": true, "points": 2, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"}
from attncourse.exercises.ch10 import check_reach

check_reach(my_reach)
### BEGIN HIDDEN TESTS
import importlib

import attncourse.exercises.ch10 as ex
import attncourse.exercises.engine as engine

engine = importlib.reload(engine)
ex = importlib.reload(ex)
ex.check_reach(my_reach, seed=103)
### END HIDDEN TESTS

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 4 (3 points) — causal linear attention, Eq. (14.3.46)
# `my_causal_linear_attention(q, k, v)`: q, k (..., T, d_k), v (..., T, d_v) → (..., T, d_v) with
# φ(x) = elu(x) + 1 (`torch.nn.functional.elu` is allowed) and
# out_i = Σ_{j≤i} φ(q_i)·φ(k_j) v_j / Σ_{j≤i} φ(q_i)·φ(k_j), no ε. Any correct computation passes;
# try the O(n) one — prefix sums (`torch.cumsum`) of φ(k_j)v_jᵀ and φ(k_j), or the recurrence of §6.


# %% nbgrader={"grade": false, "grade_id": "ch10_causal_linear_attention", "locked": false, "schema_version": 3, "solution": true} slideshow={"slide_type": "skip"}
def my_causal_linear_attention(q, k, v):
    """q, k (..., T, d_k), v (..., T, d_v) -> (..., T, d_v), phi = elu + 1, keys j <= i."""
    ### BEGIN SOLUTION
    phi_q = torch.nn.functional.elu(q) + 1  # (..., T, d_k)
    phi_k = torch.nn.functional.elu(k) + 1
    states = torch.cumsum(phi_k.unsqueeze(-1) * v.unsqueeze(-2), dim=-3)  # (..., T, d_k, d_v)
    sums = torch.cumsum(phi_k, dim=-2)  # (..., T, d_k)
    numerator = (phi_q.unsqueeze(-1) * states).sum(dim=-2)  # (..., T, d_v)
    return numerator / (phi_q * sums).sum(dim=-1, keepdim=True)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch10_causal_linear_attention_test", "locked": true, "points": 3, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"}
from attncourse.exercises.ch10 import check_causal_linear_attention

check_causal_linear_attention(my_causal_linear_attention)
### BEGIN HIDDEN TESTS
import importlib

import attncourse.exercises.ch10 as ex
import attncourse.exercises.engine as engine

engine = importlib.reload(engine)
ex = importlib.reload(ex)
ex.check_causal_linear_attention(my_causal_linear_attention, seed=104)
### END HIDDEN TESTS

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 5 (3 points) — one step of the online softmax (FlashAttention)
# `my_online_softmax_step(m, l, acc, scores, values)`: the running state of T queries after some
# key tiles — m (T, 1) the running max (−∞ before the first tile), l (T, 1) the running sum,
# acc (T, d) the unnormalised output — and the next tile, scores (T, c) and values (c, d) → the
# updated (m′, l′, acc′) of §5, as a tuple. Numerical care is the point: one case brings scores of
# about 1000 after a state built from scores near 0.


# %% nbgrader={"grade": false, "grade_id": "ch10_online_softmax_step", "locked": false, "schema_version": 3, "solution": true} slideshow={"slide_type": "skip"}
def my_online_softmax_step(m, l, acc, scores, values):  # noqa: E741
    """(m (T, 1), l (T, 1), acc (T, d)) + tile (scores (T, c), values (c, d)) -> (m', l', acc')."""
    ### BEGIN SOLUTION
    m_new = torch.maximum(m, scores.amax(dim=-1, keepdim=True))  # (T, 1)
    p = torch.exp(scores - m_new)  # (T, c), <= 1
    shrink = torch.exp(m - m_new)  # (T, 1), 0 for the first tile (m = -inf)
    return m_new, l * shrink + p.sum(dim=-1, keepdim=True), acc * shrink + p @ values
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch10_online_softmax_step_test", "locked": true, "points": 3, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"}
from attncourse.exercises.ch10 import check_online_softmax_step

check_online_softmax_step(my_online_softmax_step)
### BEGIN HIDDEN TESTS
import importlib

import attncourse.exercises.ch10 as ex
import attncourse.exercises.engine as engine

engine = importlib.reload(engine)
ex = importlib.reload(ex)
ex.check_online_softmax_step(my_online_softmax_step, seed=105)
### END HIDDEN TESTS

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Summary
#
# - **Cost.** Exact attention does O(n²) work; it does **not** need O(n²) memory: tiles and the
#   online softmax (FlashAttention) give the same result to 10⁻¹² with memory linear in n (measured:
#   about 1.5 GB against a few MB at n = 16384).
# - **Sparse masks** cost O(n · keys per query) only with an implementation that skips the masked
#   pairs (`local_attention`, `strided_attention`, `block_attention`). Written as the source's
#   softmax(M ⊙ S) a mask does not mask; softmax(S + log M) does. Reach through L layers: strided
#   connects everything in 2, a window w in ⌈(n − 1)/w⌉, disjoint blocks never.
# - **Learning a mask** works with independent Gumbel-sigmoid samples, α ∝ m e^s and a temperature
#   annealed to a positive floor; it recovers a known pattern (asserted ≥ 98 % of entries).
# - **Linear attention** has an exact O(n) recurrent form with a d_k × d_v state; its weight matrix
#   has rank ≤ d_φ, so on average at most d_φ/n of the weight can land on the right key: recall of
#   32 pairs with d_k = 8 fails while copying works (Schlag et al.; Katharopoulos et al.).
# - **Gating.** The source's gated class needs one line to run; its information lemma is wrong for
#   deterministic gates. An output gate computed from the query lets a head switch itself off, and
#   the attention sink is much reduced (BOS weight at dormant queries asserted ≤ 0.3 and under half
#   of the ungated model's), even in a one-head model trained for seconds (Qiu et al. 2025).
# - **Information-theoretic claims** about deterministic layers mostly collapse: sparse layers can
#   keep *more* information than dense ones, information never grows with depth, and
#   bottleneck "conservation laws" reduce to H(Z^(l)). What changes with depth is how *usable* the
#   information is.
#
# **Where next.** This is the course's last numbered chapter. Chapter 06's head analysis (its
# head-pruning reproduction, and its own look at the sparse-attention claims of §14.3.7) and
# chapter 09's stability experiments use the same package; the mechanisms of
# this chapter (`local_attention`, `strided_attention`, `block_attention`, `LearnableSparseMask`,
# `OutputGatedAttention`, `chunked_attention`, `linear_attention`) work on any `(B, H, T, d)`
# tensors — try them in a model of your own, and re-measure the cost table on your machine with
# `python -m attncourse.chapters.ch10_efficient_gated_attention.costs --write`.
