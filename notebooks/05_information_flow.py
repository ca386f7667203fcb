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
# # Chapter 05 · Bidirectional, causal and cross attention: information flow
# *双向注意力的信息流* — source 002 (all of it: §1–§10, every table and code block); source 001
# §5.4.3 (Eq. 5.4.7–5.4.9); source 000 Def. 14.3.12 (Eq. 14.3.28)
#
# **After this chapter you can**
# - read a mask as an information-flow graph and *measure* what it lets through one layer and a
#   stack of L layers (boolean matrix powers, breadth-first search) — bidirectional, causal, cross,
#   local, strided and block masks;
# - compute source 002's flow statistics (forward / backward / self flow, their ratio, entropy,
#   top sources) on any `(B, H, T, S)` attention tensor with `attncourse.flow`, and say which of
#   them carry information and which the softmax fixes by itself;
# - explain with two trained models why a language model must be causal, and show a task that only
#   a bidirectional model can solve;
# - find the two-layer relay of Eq. (5.4.7)–(5.4.8) in a trained model: a previous-token head
#   feeding an induction head (Olsson et al. 2022);
# - compute attention rollout and attention flow (Abnar & Zuidema 2020) and show that they explain a
#   model's predictions better than its raw attention weights;
# - measure mean attention distance per layer and head (Dosovitskiy et al. 2021) and judge the
#   claim "shallow layers local, deep layers global" by what you measure.
#
# **Prerequisites**: chapter 01 (attention, masks: True = may attend), chapter 04 (path lengths,
# breadth-first search); matrix products; PyTorch autograd.
#
# **Time**: about 100 minutes (65 reading and experimenting, 35 for the exercises).
#
# Marks used in the claim checks: **✓ holds** · **⚠ holds only under a condition** (stated) ·
# **✗ wrong as printed** (counterexample and correct statement given) · **— nothing to measure**
# (advice or an undefined function).

# %% slideshow={"slide_type": "skip"}
import math
import time

import matplotlib.pyplot as plt
import numpy as np
import torch

from attncourse.attention import MultiHeadAttention, scaled_dot_product_attention, softmax
from attncourse.blocks import TransformerBlock
from attncourse.chapters.ch04_gradient_paths import autograd_depth
from attncourse.chapters.ch05_information_flow import (
    FILL_LENGTH,
    FILL_VOCAB,
    INDUCTION_LENGTH,
    INDUCTION_VOCAB,
    MASK_KINDS,
    FlowPlot,
    TinyTransformer,
    attention_explanations,
    blank_out_attribution,
    chapter_mask,
    compare_explanations,
    encoder_decoder_reachability,
    fill_accuracy,
    fill_loss,
    flow_view,
    flow_views,
    flow_widget,
    flow_widget_update,
    generation_accuracy,
    gradient_attribution,
    induction_accuracy,
    induction_batch,
    lm_loss,
    lm_loss_floor,
    masked_attention_times,
    mean_lm_loss,
    palindrome_batch,
    reach_table,
    relay_ablation,
    relay_scores,
    run_source_block,
    seaborn_stand_in,
    source_entropy,
    sparse_pair_counts,
    train,
    training_step_times,
)
from attncourse.flow import (
    directional_flow,
    flow_shares,
    flow_statistics,
    mean_attention_distance,
    top_sources,
)
from attncourse.masks import causal_mask
from attncourse.rnn import VanillaRNN

torch.manual_seed(0)
np.random.seed(0)
torch.set_num_threads(2)
torch.set_flush_denormal(True)
torch.set_printoptions(precision=4, sci_mode=False)
plt.rcParams.update({"figure.dpi": 80, "figure.figsize": (7, 3)})
SEEDS = (0, 1)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 1. A mask is an information-flow graph (source 002 §1, §8; source 000 Def. 14.3.12)
#
# Throughout, row i of an attention matrix is a **query** — the position that *receives* — and
# column j a **key**, the position that *sends*: output i = Σ_j A_ij v_j (source 001 Eq. 5.4.3), so
# a weight A_ij > 0 is an edge **j → i** along which information flows. A boolean mask (True = may
# attend, as in every chapter) says which edges exist at all. Source 002 §1 contrasts two of them
# with a small table: the decoder's lower-triangular mask ("the current position only sees the
# positions before it") and the encoder's all-ones mask ("sees every position"). The cell prints
# the package's masks next to the source's table.
#
# > **Glossary** · information flow 信息流 · bidirectional 双向 · causal / unidirectional 因果 / 单向 ·
# > mask 掩码 · query / key 查询 / 键 · cross-attention 交叉注意力 · reachability 可达性 ·
# > residual connection 残差连接 · sparse attention 稀疏注意力

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
print(run_source_block("mask_table").error)  # the table is not code: it is checked, not run
table_causal = torch.tensor([[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 1, 1]])
print("causal_mask(4):\n", causal_mask(4).int())
print(
    "source's lower-triangular table == causal_mask(4):",
    torch.equal(causal_mask(4).int(), table_causal),
)
print(
    "source's all-ones table == the bidirectional mask:",
    torch.equal(chapter_mask("bidirectional", 4).int(), torch.ones(4, 4, dtype=torch.long)),
)
assert torch.equal(causal_mask(4).int(), table_causal)

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Claim check — the mask table (§1) ✓**, with one word to fix: the causal row i has ones at
# j = 0 … i, *itself included* — "只能看到前面的位置" ("only the positions before it") should read
# "the positions up to and including itself". The diagonal matters below: it is the self flow.
#
# The chapter uses six masks on T = 16 positions (`chapter_mask`): **bidirectional** (an encoder);
# **causal** (a decoder); **cross** — a decoder reading an encoder, Z_cross = Attention(Q_dec,
# K_enc, V_enc) (source 000 Def. 14.3.12, Eq. 14.3.28), drawn here on the concatenation
# [encoder; decoder] of the two halves, so every query reads only the encoder half; **local**
# (|i − j| ≤ 2); **strided** (the Sparse Transformer's causal pattern with stride 4, Child et al.
# 2019); **block** (blocks of 4).

# %% slideshow={"slide_type": "subslide"}
fig, axes = plt.subplots(1, 6, figsize=(12, 2.4))
for ax, kind in zip(axes, MASK_KINDS):
    ax.imshow(chapter_mask(kind).numpy(), cmap="Greys", vmin=0, vmax=1.4)
    ax.set(title=kind, xticks=[0, 15], yticks=[0, 15])
axes[0].set(xlabel="key j (sends)", ylabel="query i (receives)")
plt.tight_layout()
plt.show()

# %% [markdown] slideshow={"slide_type": "-"}
# **After L layers.** A Transformer block adds its attention to its input, X^{(l+1)} =
# LN(X^{(l)} + Attention^{(l)}) (Eq. 5.4.8), so position i keeps its own information and gains
# what it reads. The graph of one layer is therefore M ∨ I, and output i after L layers can depend
# on input j exactly when a path i ← k₁ ← … ← j of L such steps exists: the boolean matrix power
# R_L = (M ∨ I)^L (`attncourse.flow.reachability`). Breadth-first search over layers gives the
# fewest layers that connect each pair (`layers_to_reach`; `inf` when none ever does). The tests
# check both against brute-force path enumeration.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
table = reach_table(16)
print(
    f"{'mask':>13} {'keys/query':>10} | share of the 256 (output, input) pairs connected after L layers"
    f" | {'depth':>5} {'never':>5}"
)
print(f"{'':>13} {'':>10} | {'L = 1':>7} {'L = 2':>7} {'L = 3':>7} {'L = 4':>7}{'':>31} |")
for kind, row in table.items():
    shares = " ".join(f"{row['reach'][L]:7.3f}" for L in (1, 2, 3, 4))
    print(
        f"{kind:>13} {row['edges_per_query']:10.3f} | {shares}{'':>31} | {row['depth']:5d} {row['never']:5d}"
    )
assert table["bidirectional"]["depth"] == 1 and table["bidirectional"]["never"] == 0
assert table["causal"]["never"] == 120  # the 15·16/2 pairs j > i: never, at any depth
assert table["local"]["depth"] == math.ceil(15 / 2) and table["local"]["never"] == 0
assert table["strided"]["depth"] == 2 and table["strided"]["never"] == 120
assert table["block"]["never"] == 256 - 4 * 16  # blocks never exchange information

# %% [markdown] slideshow={"slide_type": "-"}
# Read the table column by column:
# - **bidirectional**: every pair after one layer ("每个token都可以直接访问序列中任意位置的信息" ✓);
# - **causal**: the 136 pairs j ≤ i after one layer and *never* the other 120, however deep the
#   stack — information flows only forward ✓;
# - **cross**: every query reads the 8 encoder positions in one layer; the encoder never reads the
#   decoder half (the 120 "never" pairs include all of those);
# - **local** (window 2): the reach grows by 2 positions per layer, so covering 16 positions takes
#   ⌈15/2⌉ = 8 layers — a sparse mask trades one-layer reach for depth;
# - **strided** (stride 4): its causal triangle is complete after 2 layers (Child et al.'s point)
#   with about 5 keys per query instead of 8.5;
# - **block**: nothing ever crosses a block boundary; stacking does not help at all.
#
# **A real encoder–decoder** differs from the concatenation above in one way: every decoder layer's
# cross-attention reads the encoder's *final* states (Vaswani et al. 2017). The cell measures which
# inputs a decoder of 4 positions depends on (columns: 6 encoder inputs, then the 4 decoder inputs).

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
R = encoder_decoder_reachability(6, 4, encoder_layers=2, decoder_layers=1)  # (4, 10)
print("decoder output i (rows) <- [6 encoder inputs | 4 decoder inputs] after one decoder layer:")
print(R.int())
assert R[:, :6].all() and torch.equal(R[:, 6:], causal_mask(4))
try:
    directional_flow(torch.full((4, 6), 1 / 6))  # a cross-attention matrix: 4 queries, 6 keys
except ValueError as error:
    print("directional_flow on cross-attention:", str(error).split(";")[1].strip())

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Claim check — source 002 §8's comparison table** (run as printed in §8 below):
# - masked self-attention: "仅前向 / 当前位置之前" (forward only / before the current position) ✓
#   forward only at every depth (never 120); ⚠ "before" includes the position itself;
# - cross-attention: "编码器→解码器 / 编码器全序列 / O(n×m)" ✓: one-way (the encoder never reads
#   the decoder), the whole encoder in one layer, n·m (query, key) pairs; and forward/backward flow
#   do not exist for it (two different sequences), which `directional_flow` refuses to compute;
# - sparse attention: "受限的全方向 / 部分序列" (restricted all-direction / part of the sequence)
#   ⚠: it depends on the pattern. Local masks reach everything, but only after ⌈(n − 1)/w⌉ layers;
#   the Sparse Transformer's strided pattern is causal (forward only) and complete after two
#   layers; block masks never connect blocks. Its cost is checked in §8.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 2. Forward, backward and self flow (source 002 §2, §6)
#
# Source 002 §2 computes the weights with `compute_attention_weights(Q, K, V)` and reads
# `attention_weights[0, i, j]` as "the information flow from position j to position i". Run as
# printed first (the block imports nothing), then with the two imports it needs:

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
g = torch.Generator().manual_seed(5)
Q3, K3, V3 = (torch.randn(1, 3, 4, generator=g) for _ in range(3))  # (B, T, d)
call = lambda ns: ns["compute_attention_weights"](Q3, K3, V3)  # noqa: E731
print("as printed            :", run_source_block("compute_attention_weights", call).summary())
run = run_source_block("compute_attention_weights", call, extra={"torch": torch, "math": math})
print("with torch and math   :", run.summary())
print("first printed line    :", run.printed.splitlines()[0].split(":")[0])
out_src, w_src = run.result
out_pkg, w_pkg = scaled_dot_product_attention(Q3, K3, V3)
print(
    "weights and output == attncourse's scaled_dot_product_attention:",
    torch.allclose(w_src, w_pkg, atol=1e-6) and torch.allclose(out_src, out_pkg, atol=1e-6),
)
Q4 = torch.randn(1, 2, 3, 4, generator=g)  # (B, H, T, d): multi-head input
run4 = run_source_block(
    "compute_attention_weights",
    lambda ns: ns["compute_attention_weights"](Q4, Q4, Q4),
    extra={"torch": torch, "math": math},
)
print("on a (B, H, T, d) input:", run4.summary())
assert run.ok and not run4.ok

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Claim check — `compute_attention_weights` (§2) ✓ / ⚠.** With its imports it computes exactly
# softmax(QKᵀ/√d_k) and prints T² lines "Position j → Position i", the direction convention of this
# chapter (✓). As printed it fails (`torch`, `math` are not imported), and on the multi-head
# (B, H, T, d) input of every real model it breaks: `seq_len = Q.size(1)` is then H, and
# `attention_weights[0, i, j]` is a whole row, which the f-string cannot format.
#
# The next block, `information_aggregation_analysis`, prints each position's sources — but calls
# `calculate_attention_weight`, which the source never defines, and skips `source_pos ==
# target_pos`: the **self** flow is left out of the picture. Section 4's trained encoder puts a
# sizeable share of its weight there.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
print(
    "information_aggregation_analysis():",
    run_source_block(
        "information_aggregation_analysis", lambda ns: ns["information_aggregation_analysis"]()
    ).summary(),
)

# %% [markdown] slideshow={"slide_type": "-"}
# **Flow statistics (§6).** `analyze_flow_statistics(attention_weights)` sums the weights below the
# diagonal (j < i: **forward** flow, from earlier positions), above it (j > i: **backward**) and on
# it (**self**), and divides forward by backward + 10⁻⁸. It also reports the total, the mean, the
# maximum and an entropy. As printed it stops at its first line: `calculate_attention_entropy` is
# never defined. Supplying it (the mean row entropy, Eq. 5.4.6) it runs; the package's
# `flow_statistics` computes the same numbers for a whole `(B, H, T, T)` tensor at once. Two 6 × 6
# matrices from the same scores, one bidirectional and one causal; then the source's function on the
# `(B, H, T, T)` tensors a model returns:

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
g = torch.Generator().manual_seed(1)
scores = torch.randn(6, 6, generator=g, dtype=torch.float64)
A_bi, A_causal = softmax(scores), softmax(scores, mask=causal_mask(6))
stats_call = lambda A: lambda ns: ns["analyze_flow_statistics"](A)  # noqa: E731
print("as printed:", run_source_block("analyze_flow_statistics", stats_call(A_bi)).summary())
for name, A in (("bidirectional", A_bi), ("causal", A_causal)):
    src = run_source_block(
        "analyze_flow_statistics",
        stats_call(A),
        extra={"calculate_attention_entropy": source_entropy},
    ).result
    pkg = flow_statistics(A)
    same = all(
        math.isclose(float(src[k_src]), float(getattr(pkg, k_pkg)), rel_tol=1e-12)
        for k_src, k_pkg in (
            ("总信息流", "total"),
            ("平均注意力强度", "mean"),
            ("最大注意力权重", "max"),
            ("前向信息流", "forward"),
            ("后向信息流", "backward"),
            ("自注意力", "self_loop"),
        )
    )
    print(
        f"{name:>13}: total {float(src['总信息流']):.4f}  mean {float(src['平均注意力强度']):.4f}"
        f"  forward {float(src['前向信息流']):.4f}  backward {float(src['后向信息流']):.4f}"
        f"  self {float(src['自注意力']):.4f}"
    )
    print(
        f"{'':>13}  source's ratio forward / (backward + 1e-8) = {float(src['前后向比例']):.4g}"
        f"   package: {float(pkg.ratio):.4g}   same other numbers: {same}"
    )
    assert same
shares = {name: flow_shares(A) for name, A in (("bidirectional", A_bi), ("causal", A_causal))}
for name, sh in shares.items():
    print(
        f"{name:>13} shares: forward {float(sh.forward):.4f}  backward {float(sh.backward):.4f}"
        f"  self {float(sh.self_loop):.4f}"
    )
entropy = {"calculate_attention_entropy": source_entropy}
W_one = A_bi[None, None]  # (B, H, T, T) = (1, 1, 6, 6): one sequence, one head
src = run_source_block("analyze_flow_statistics", stats_call(W_one), extra=entropy).result
print(
    f"on a (1, 1, 6, 6) tensor: seq_len = shape[0] = {W_one.shape[0]}; forward"
    f" {src['前向信息流']}, backward {src['后向信息流']}, ratio {src['前后向比例']},"
    f" self: a tensor of shape {tuple(src['自注意力'].shape)}"
)
W_two = torch.stack((A_bi, A_causal)).unsqueeze(1)  # (2, 1, 6, 6): two sequences, one head
run = run_source_block("analyze_flow_statistics", stats_call(W_two), extra=entropy)
print("on a (2, 1, 6, 6) tensor:", run.summary())
assert src["前向信息流"] == 0 and not run.ok

# %% [markdown] slideshow={"slide_type": "-"}
# Three of the statistics say nothing about the attention:
# - **total flow = T** for any softmax weights (each of the T rows sums to 1), and **mean = 1/T**
#   (1/S for S keys): both came out 6.0000 and 0.1667 for both matrices, and would for any other;
# - the **ratio** forward / (backward + 10⁻⁸) turns a causal model's backward = 0 into
#   forward × 10⁸ — a number set by the 10⁻⁸, not by the model. The package returns `inf`;
# - the entropy is undefined in the source; the mean row entropy (nats) is one reasonable reading.
#
# What does carry information is the **split**: shares forward / backward / self of the total
# (`flow_shares`), per head. Their reference points: uniform bidirectional attention over T positions
# gives (T − 1)/2T forward, the same backward, 1/T self; a causal mask forces backward = 0.
#
# **Claim check — `analyze_flow_statistics` (§6) ⚠**: the forward / backward / self sums are right
# (✓, same numbers as the package to 10⁻¹²); total and mean are constants of the softmax (✗ as
# statistics); the ratio is undefined for causal attention (✗ as printed: use shares, or `inf`); the
# entropy is undefined. And it takes the sequence length from `attention_weights.shape[0]`, so it is
# right only for one (T, T) matrix (✗ on a model's output): on a (B, H, T, T) tensor `shape[0]` is
# the batch size B and `attention_weights[i][j]` picks sequence i, head j. With B = H = 1 (the
# cell) it returns forward = backward = 0, ratio 0 and a whole (T, T) matrix as "self", without an
# error; for any B ≤ H it runs and adds up whole matrices of different sequences and heads; with
# B > H it fails with an `IndexError`. **Correct**: sum over the last two axes
# (`flow_statistics`, or exercise 1 below). `top_sources` (§4's `torch.topk` per query) and
# `mean_attention_distance` (§7 below) complete the package's set.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 3. The heat map of §6: where are forward and backward flow?
#
# Source 002 §6 draws the weights with `seaborn.heatmap` and adds two dashed lines,
# `plt.axhline(y=0, …, label='前向信息流')` (forward flow) and `plt.axvline(x=0, …,
# label='后向信息流')` (backward flow). The course does not install seaborn, so the block runs with
# `seaborn_stand_in`, which draws as `seaborn.heatmap` does (cell (i, j) covers [j, j + 1] ×
# [i, i + 1], row 0 at the top). Left: the source's figure as printed (its Chinese labels need a CJK
# font; without one they show as boxes). Right: the same weights with the lines where forward and
# backward flow really are.

# %% slideshow={"slide_type": "subslide"}
tokens_6 = ["A", "B", "C", "D", "E", "F"]
with seaborn_stand_in():
    run = run_source_block(
        "visualize_attention_flow",
        lambda ns: ns["visualize_attention_flow"](A_bi.numpy(), tokens_6),
    )
print("visualize_attention_flow with the stand-in:", run.summary())
fig, ax = plt.subplots(figsize=(4.6, 3.6))
ax.imshow(A_bi.numpy(), cmap="YlOrRd", extent=(0, 6, 6, 0))
steps = np.repeat(np.arange(7), 2)  # 0 0 1 1 ... 6 6: staircases along the diagonal cells
ax.plot(steps[1:-2], steps[2:-1], color="tab:blue", lw=2.5)  # (0, 1) (1, 1) (1, 2) ... (5, 6)
ax.plot(steps[2:-1], steps[1:-2], color="tab:red", lw=2.5)  # (1, 0) (1, 1) (2, 1) ... (6, 5)
ax.text(0.3, 5.6, "forward", color="tab:blue", fontsize=9, weight="bold")
ax.text(3.7, 0.6, "backward", color="tab:red", fontsize=9, weight="bold")
ax.set(xlabel="key j (sends)", ylabel="query i (receives)", title="between the lines: self flow")
plt.tight_layout()
plt.show()

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Claim check — the heat map's `axhline(0)` / `axvline(0)` (§6) ✗.** In seaborn's coordinates the
# line y = 0 is the top edge of row 0 and x = 0 the left edge of column 0: they mark the borders of
# the first query's row and the first key's column, not any flow. (Their labels never show either:
# the block calls no `plt.legend()`.) **Correct**: forward flow (j < i) is the strictly lower
# triangle, backward (j > i) the strictly upper one, self the diagonal; the separators run along the
# diagonal cells: between the two staircases on the right.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 4. Why decoders are causal — and what only a bidirectional model can do (§1, §7, §8)
#
# A language model predicts token t + 1 from tokens 0 … t, and trains on all positions of a
# sequence at once ("teacher forcing"). With a **causal** mask position t sees only 0 … t. With a
# **bidirectional** mask it also sees position t + 1 — the answer — and nothing stops it from
# reading it off.
#
# **Data** (`induction_batch`, used again in §5): eight distinct tokens r₀ … r₇ out of 16, then
# eight pairs (r_k, r_{k+1}) with random k: "… A B … A → B". The best possible next-token loss is
# fixed by the data: token t of the first eight is one of the 16 − t not yet used, a pair's first
# token one of 7, its second is determined — **(Σ_{m=9}^{15} ln m + 8 ln 7)/23 nats**
# (`lm_loss_floor`). No model that reads only the past can go below it.
#
# **Models**: two attention-only decoders of 2 layers, one head, d = 32, learned positions
# (`TinyTransformer`), trained as language models (Adam, one-cycle learning rate peaking at 10⁻²,
# batch 64) — one causal (300 steps), one bidirectional (100 steps; it needs fewer). **Measured**:
# the loss on fresh data; the accuracy at the eight "A → B" predictions, teacher-forced (the whole
# sequence is the input) and generating (the input ends at the A whose successor is asked for).

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
floor = lm_loss_floor()
print(f"loss floor for any causal predictor: {floor:.4f} nats")
assert abs(floor - (sum(math.log(m) for m in range(9, 16)) + 8 * math.log(7)) / 23) < 1e-12

# %% slideshow={"slide_type": "-"}
# NBVAL_IGNORE_OUTPUT
decoders = {}
for seed in SEEDS:
    for name, causal, steps in (("causal", True, 300), ("bidirectional", False, 100)):
        torch.manual_seed(seed)
        model = TinyTransformer(
            INDUCTION_VOCAB, 32, 1, 2, INDUCTION_LENGTH, causal=causal, block="attention"
        )
        train(model, induction_batch, lm_loss, steps, seed=seed, desc=f"{name} LM, seed {seed}")
        decoders[name, seed] = model

# %% slideshow={"slide_type": "-"}
# NBVAL_IGNORE_OUTPUT
print(
    f"{'model':>22} | {'loss':>6} (floor {floor:.3f}) | {'teacher-forced':>14} {'generating':>10}"
)
lm_results = {}
for (name, seed), model in decoders.items():
    lm_results[name, seed] = (
        mean_lm_loss(model, 500),
        induction_accuracy(model, 500),
        generation_accuracy(model, 500),
    )
    loss, forced, generating = lm_results[name, seed]
    print(
        f"{name + ', seed ' + str(seed):>22} | {loss:6.3f}{'':>14} | {forced:14.3f} {generating:10.3f}"
    )
for seed in SEEDS:
    loss, forced, generating = lm_results["bidirectional", seed]
    assert loss < 0.5 * floor and forced >= 0.8 and generating <= 0.3, (seed, loss, generating)
    assert forced <= lm_results["causal", seed][1] + 0.05, seed  # reading the answer: no gain
    loss, forced, generating = lm_results["causal", seed]
    assert loss >= floor - 0.05 and abs(forced - generating) <= 0.01 and generating >= 0.9

# %% [markdown] slideshow={"slide_type": "-"}
# The bidirectional model's loss is far **below the floor** that no honest predictor can beat: it
# reads the next token instead of predicting it. Teacher-forced, with every answer in view, its
# accuracy at the "A → B" predictions is high but no higher than the causal model's (compare the
# two columns; asserted with a margin of 0.05); asked to generate, when the next token does not
# exist yet, it falls to about chance (1 in 7). The causal model sits above the floor and generates
# as well as it scores teacher-forced (asserted to within 0.01).
#
# For a causal model that equality is not luck. Its prediction at position t cannot depend on any
# token after t, *bit for bit*, whatever its weights: masked weights are exp(−∞) = 0 exactly. The
# cell changes every token after position 12 and compares the outputs at positions 0 … 12, for
# both seeds. The bidirectional model's outputs there do change; by how much is a training outcome
# (printed: the largest change of a logit; the assert asks for at least 1):

# %% slideshow={"slide_type": "-"}
# NBVAL_IGNORE_OUTPUT
x, _ = induction_batch(4, torch.Generator().manual_seed(3))
changed = x.clone()
changed[:, 13:] = (changed[:, 13:] + 5) % INDUCTION_VOCAB
with torch.no_grad():
    for (name, seed), model in decoders.items():
        before, _ = model(x)
        after, _ = model(changed)
        same = torch.equal(before[:, :13], after[:, :13])
        largest = float((before[:, :13] - after[:, :13]).abs().max())
        print(
            f"{name + ', seed ' + str(seed):>22}: outputs at positions 0..12 unchanged when tokens"
            f" 13.. change: {same}; largest change of a logit {largest:.3g}"
        )
        assert same if name == "causal" else largest >= 1.0, (name, seed, largest)

# %% [markdown] slideshow={"slide_type": "-"}
# **The other side: a task that needs the right context.** *Palindrome fill-in*
# (`palindrome_batch`): 16 tokens r + reversed(r) over 16 symbols, with some of them replaced by a
# MASK token; the model restores them. A masked token in the **left** half can be read only off its
# mirror image in the right half — to its right. **Models**: 3-layer encoders of
# `TransformerBlock`s (Pre-LN, with MLPs), 2 heads, d = 32, learned positions; three masks per
# training sequence; 250 steps bidirectional. The causal one gets 150 steps: its left-half answers
# are out of its reach at any length of training, as the bit-for-bit check shows. **Pass** (both
# seeds): bidirectional ≥ 0.95 on both halves; causal ≥ 0.9 on the right half (the answer is to its
# left) and ≤ 0.2 on the left half (chance is 1/16).

# %% slideshow={"slide_type": "-"}
# NBVAL_IGNORE_OUTPUT
encoders, fill = {}, {}
for seed in SEEDS:
    for name, causal, steps in (("bidirectional", False, 250), ("causal", True, 150)):
        torch.manual_seed(seed)
        model = TinyTransformer(FILL_VOCAB + 1, 32, 2, 3, FILL_LENGTH, causal=causal)
        train(
            model,
            palindrome_batch,
            fill_loss,
            steps,
            seed=seed,
            desc=f"{name} fill-in, seed {seed}",
        )
        encoders[name, seed] = model
        fill[name, seed] = fill_accuracy(model)

# %% slideshow={"slide_type": "-"}
# NBVAL_IGNORE_OUTPUT
print(f"{'encoder':>22} | {'mask in the left half':>21} {'mask in the right half':>22}")
for (name, seed), acc in fill.items():
    print(f"{name + ', seed ' + str(seed):>22} | {acc['left']:21.3f} {acc['right']:22.3f}")
for seed in SEEDS:
    assert min(fill["bidirectional", seed].values()) >= 0.95, seed
    assert fill["causal", seed]["right"] >= 0.9 and fill["causal", seed]["left"] <= 0.2, seed

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Claim check — "双向性使得编码器能够捕获丰富的上下文信息" (bidirectionality captures rich
# context, §1, §10) ✓** in the measurable sense: where the answer lies to the right, only the
# bidirectional encoder finds it; where it lies to the left, both do. **Why decoders are causal
# (§8's "掩码自注意力 … 生成任务")**: a bidirectional language model learns to copy the next token
# (loss below the data's floor) and cannot generate.
#
# Source 002 §7 also claims the global context "显著提升对歧义的处理能力" (markedly improves the
# handling of ambiguity) for named-entity recognition, tagging and parsing — **—**: a statement
# about natural-language benchmarks that nothing on a CPU here can test.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 5. The two-layer relay (source 001 Eq. 5.4.7–5.4.8): induction heads (Olsson et al. 2022)
#
# Source 001 §5.4.3 writes one layer as
#
# $$\text{Attention}^{(l)} = \text{Softmax}\Big(\frac{X^{(l)}W_Q^{(l)}(X^{(l)}W_K^{(l)})^\top}{\sqrt{d_k}}\Big)X^{(l)}W_V^{(l)}
# \quad(5.4.7)\qquad X^{(l+1)} = \text{LayerNorm}\big(X^{(l)} + \text{Attention}^{(l)}\big)\quad(5.4.8)$$
#
# and then sketches a relay: "the first layer learns a bridging pattern: position n attends to m,
# m attends to 1. With the first layer's weights A⁽¹⁾, the output of n is ≈ A⁽¹⁾_nm v_m and that of
# m ≈ A⁽¹⁾_m1 v_1, so position 1's information reaches n through m." As printed, both hops use
# layer 1's weights — that is a single layer, and a single layer cannot relay: n reads v_m, which
# layer 1 computes from m's *input* X⁽¹⁾_m, and that holds nothing of position 1 yet (m's reading of
# position 1 happens in the same layer, at the same time). What relays is hop 1 in layer 1 (m reads
# 1, so X⁽²⁾_m carries v_1) and hop 2 in layer 2 (n reads m's new state): a path of weight
# A⁽²⁾_nm A⁽¹⁾_m1 — the (M ∨ I)² of §1. **Induction** is a task that needs exactly this. To continue "… A B … A" with B, the model must (layer 1) let the
# position of B read its **previous token** A, so that B's state says "I follow an A"; then (layer
# 2) let the second A look for the state that follows an A, and copy its token B — an **induction
# head**. Olsson et al. (2022) find that one-layer attention-only models do not learn it and that
# two-layer ones do, by this very composition. The causal 2-layer decoders of §4 were trained on
# induction data; here one-layer decoders get the same training (300 steps, both seeds). **Pass**
# (both seeds): 2 layers ≥ 0.9 at the "A → B" predictions, 1 layer ≤ 0.35 (the answer is one of 7
# tokens of the first part: chance ≈ 0.14), a gap of ≥ 0.5.
#
# > **Glossary** · relay 中继 · induction head 归纳头 · previous-token head 前一词元头 ·
# > attention-only model 纯注意力模型 · ablation 消融 · composition 组合

# %% slideshow={"slide_type": "-"}
# NBVAL_IGNORE_OUTPUT
one_layer = {}
for seed in SEEDS:
    torch.manual_seed(seed)
    model = TinyTransformer(
        INDUCTION_VOCAB, 32, 1, 1, INDUCTION_LENGTH, causal=True, block="attention"
    )
    train(model, induction_batch, lm_loss, 300, seed=seed, desc=f"1-layer decoder, seed {seed}")
    one_layer[seed] = model

# %% slideshow={"slide_type": "-"}
# NBVAL_IGNORE_OUTPUT
induction = {
    seed: (induction_accuracy(one_layer[seed]), lm_results["causal", seed][1]) for seed in SEEDS
}
for seed, (acc1, acc2) in induction.items():
    print(
        f"seed {seed}: accuracy at the 'A -> B' predictions: 1 layer {acc1:.3f}, 2 layers {acc2:.3f}"
    )
    assert acc2 >= 0.9 and acc1 <= 0.35 and acc2 - acc1 >= 0.5, (seed, acc1, acc2)

# %% [markdown] slideshow={"slide_type": "-"}
# **The heads.** `relay_scores` reads the two-layer decoder's weights on fresh sequences. For layer
# 1: the weight a query i of the first eight tokens puts on i − 1 (a head that attends uniformly
# would put 1/(i + 1) there on average). For layer 2, at each pair's first token A = r_k: the weight
# on position k + 1 (the token after A's first occurrence, B — the induction target), and on
# position k (A's first occurrence itself). And the relay itself: the weight of the two-step path
# t ← k + 1 ← k, A₂[t, k + 1]·A₁[k + 1, k]. **Pass** (both seeds): previous-token weight ≥ 1.5 ×
# the uniform value; induction weight ≥ 0.5; weight on A's own first copy ≤ 0.2.

# %% slideshow={"slide_type": "-"}
# NBVAL_IGNORE_OUTPUT
scores_by_seed = {seed: relay_scores(decoders["causal", seed]) for seed in SEEDS}
for seed, s in scores_by_seed.items():
    print(
        f"seed {seed}: layer 1 previous-token weight {s['previous_token'][0]:.2f} "
        f"(uniform {s['previous_token_uniform']:.2f}) | layer 2 on B {s['induction'][0]:.2f}, "
        f"on A's first copy {s['same_token'][0]:.2f} (uniform {s['induction_uniform']:.2f}) | "
        f"two-step path {s['two_hop']:.2f}"
    )
    assert s["previous_token"][0] >= 1.5 * s["previous_token_uniform"]
    assert s["induction"][0] >= 0.5 and s["same_token"][0] <= 0.2

# %% slideshow={"slide_type": "subslide"}
x, _ = induction_batch(1, torch.Generator().manual_seed(11))
with torch.no_grad():
    _, (w1, w2) = decoders["causal", 0](x[:, :-1])
labels = [str(int(t)) for t in x[0, :-1]]
fig, axes = plt.subplots(1, 2, figsize=(11, 4.6))
for ax, w, title in (
    (axes[0], w1, "layer 1: previous-token head"),
    (axes[1], w2, "layer 2: induction head"),
):
    ax.imshow(w[0, 0].numpy(), cmap="viridis", vmin=0, vmax=1)
    ax.set_xticks(range(23), labels, fontsize=7)
    ax.set_yticks(range(23), labels, fontsize=7)
    ax.set(title=title, xlabel="key (token)", ylabel="query (token)")
    ax.axvline(7.5, color="w", lw=0.8, ls=":")
    ax.axhline(7.5, color="w", lw=0.8, ls=":")
plt.tight_layout()
plt.show()

# %% [markdown] slideshow={"slide_type": "-"}
# Left: in the first eight tokens (above and left of the dotted lines) the weight sits on the
# diagonal just below the main one — each token reads its predecessor (with some weight on itself).
# Right: each pair's first token (every other row below the dotted line) reads the key right
# *after* its earlier copy: the column of the token that followed it.
#
# **Ablation: is layer 1's job really "read the previous token"?** The cell replaces layer 1's
# attention by fixed patterns and measures the induction accuracy again (`relay_ablation`):
# *itself* (no information moves in layer 1), the exact *previous-token* pattern, and the causal
# *uniform* average. **Pass** (both seeds): "itself" ≤ 0.2 — without the relay the induction head
# has nothing to match; the exact previous-token pattern recovers at least 0.3 more than that.

# %% slideshow={"slide_type": "-"}
# NBVAL_IGNORE_OUTPUT
ablations = {seed: relay_ablation(decoders["causal", seed]) for seed in SEEDS}
print(f"{'layer 1 attends':>16}: " + "  ".join(f"{k:>14}" for k in ablations[0]))
for seed, a in ablations.items():
    print(f"{'seed ' + str(seed):>16}: " + "  ".join(f"{v:14.3f}" for v in a.values()))
    assert a["learned"] >= 0.9 and a["itself"] <= 0.2 and a["previous token"] >= a["itself"] + 0.3

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Claim check — the relay after Eq. (5.4.7)–(5.4.8) ✗ as printed, ✓ corrected.** As printed,
# both hops, A⁽¹⁾_nm and A⁽¹⁾_m1, are weights of the first layer: that describes one layer, and one
# layer relays nothing (n reads m's input, which has not yet read position 1; the cell below checks
# it on the graph n ← m ← 1). **Correct statement**: hop 1 (m reads 1) in layer 1, hop 2 (n reads
# m) in layer 2, path weight A⁽²⁾_nm A⁽¹⁾_m1. So corrected, the claim holds: a two-step path across
# two layers carries what one layer cannot; measured as a previous-token head feeding an induction
# head, and one layer fails at the task. Two more details of the sketch: "the output of position n
# is approximately A_nm v_m" holds only if one weight dominates and ignores the residual X^{(l)}
# that Eq. (5.4.8) adds (⚠); and in induction the relayed information (A) enters the *key* of B's
# position, so it decides *where* layer 2 reads, while the value it copies (B) travels one step
# (Olsson et al.'s "K-composition").
#
# **Eq. (5.4.9), X_i^{(L)} = X_i^{(0)} + ΔX_i^{(1)} + … + ΔX_i^{(L)}, "the final representation keeps a
# direct component of the original embedding"** — ⚠: true for Pre-LN blocks (the residual stream is
# a plain sum, the embedding enters with coefficient 1) but not for the Post-LN recurrence (5.4.8)
# printed just above it, where every layer renormalises the sum.
#
# The cell checks both: first the relay on the graph n ← m ← 1 (positions 3 ← 2 ← 0, the others
# read themselves; one-hot inputs, W_V = I, LayerNorm left out), then Eq. (5.4.9) with every
# attention and MLP weight set to 0 (ΔX = 0), where it says the output must equal the input:

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
X1 = torch.eye(4, dtype=torch.float64)  # one-hot inputs: X1[i, j] = how much of input j is at i
bridge = X1[[0, 1, 0, 2]]  # row i = whom i reads: itself, but m = 2 reads 0 and n = 3 reads 2
X2 = X1 + bridge @ X1  # layer 1: both hops at once (the source's A(1)_nm and A(1)_m1)
X3 = X2 + bridge @ X2  # layer 2: n reads m's new state
print(f"input 1 at position n after one layer : {float(X2[3, 0]):.4f}")
print(f"input 1 at position n after two layers: {float(X3[3, 0]):.4f}")
assert X2[3, 0] == 0 and X3[3, 0] == 1
x = 3.0 + 2.0 * torch.randn(
    2, 5, 8, generator=torch.Generator().manual_seed(2), dtype=torch.float64
)
for norm in ("pre", "post"):
    stack = [TransformerBlock(8, 2, norm=norm).double() for _ in range(3)]
    h = x
    with torch.no_grad():
        for block in stack:
            for p in list(block.attn.parameters()) + list(block.ffn.parameters()):
                p.zero_()  # no layer adds anything: Delta X = 0
            h, _ = block(h)
    gap = float((h - x).abs().max())
    print(
        f"{norm}-LN, 3 blocks, zero sublayers: max |X^(L) - X^(0)| = {'0 (exact)' if gap == 0 else f'{gap:.2f}'}"
    )
    assert (gap == 0) == (norm == "pre")

# %% [markdown] slideshow={"slide_type": "-"}
# **Head specialisation (source 002 §4) ⚠.** The source's table names "syntax heads (1–3
# tokens)", "semantic heads (any distance)", "position heads (regular intervals)" and "global heads"
# with typical distances. Run as printed it only returns that dictionary; nothing in it is
# measured. What a synthetic task *can* show: heads do specialise — the previous-token head above
# is a position head (it reads i − 1 whatever the token), the induction head a content head (it
# reads wherever the matching token was). That heads in large language models track syntactic
# relations was found by probing trained models (Clark et al. 2019; Voita et al. 2019 also found
# positional and rare-word heads); the categories and the distances in the table are illustrations,
# not results. Its companion `head_collaboration_analysis` needs `torch` imported, then prints each
# head's top-3 sources for position 0 and stops at `calculate_head_diversity`, which is never
# defined; its top-3 lists are `top_sources(weights, 3)` of the package.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
print(
    "multi_head_information_specialization():",
    run_source_block(
        "multi_head_information_specialization",
        lambda ns: ns["multi_head_information_specialization"](),
    ).summary(),
)
w_heads = softmax(torch.randn(1, 2, 5, 5, generator=torch.Generator().manual_seed(4)))
collaboration = lambda ns: ns["head_collaboration_analysis"](w_heads)  # noqa: E731
print(
    "head_collaboration_analysis(weights):",
    run_source_block("head_collaboration_analysis", collaboration).summary(),
)
run = run_source_block("head_collaboration_analysis", collaboration, extra={"torch": torch})
print("   ... with torch imported:", run.summary())
print("its first line for head 0:", run.printed.splitlines()[2].strip())
print(
    "top_sources(weights, 3) for position 0, head 0:", top_sources(w_heads, 3)[1][0, 0, 0].tolist()
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 6. Attention weights are not information flow: rollout and flow (Abnar & Zuidema 2020)
#
# Source 002 §3 tracks "the information flow through a multi-layer encoder" by storing each layer's
# attention map (`LayerwiseInformationFlow`). Run as printed, its `forward` fails at once
# (`self.encoder_layers` is never built), and its loop feeds each layer's attention *output* to the
# next layer, dropping the residual path of Eq. (5.4.8). More importantly, a stack of per-layer
# maps is not the flow from the **inputs**: in layer 3 a position reads states that are already
# mixtures of many tokens.
#
# Abnar & Zuidema (2020) compose the layers. With Ā_l the head-averaged weights of layer l and the
# residual connection counted as half the flow,
#
# $$\tilde A_l = \tfrac12 I + \tfrac12 \bar A_l, \qquad \text{rollout} = \tilde A_L \cdots \tilde A_2 \tilde A_1$$
#
# (`attncourse.flow.attention_rollout`; paths' weights multiply, paths add). **Attention flow**
# treats the same Ã_l as pipe capacities in the layered graph (input positions at the bottom, one
# row of nodes per layer) and takes the **maximum flow** from input j to top position i
# (`attention_flow`, Dinic's algorithm in `max_flow`; tested against brute-force minimum cuts).
# Their finding (Table 1 of the paper): raw attention, especially in the higher layers, correlates
# poorly with importance scores obtained from the model itself (blank-out ablation and input
# gradients); rollout and flow correlate clearly better.
#
# **Setup** (CPU, < 1 s each): the two trained fill-in encoders of §4 (3 layers, 2 heads); 40
# fresh sequences with one masked token; the output is the prediction at the masked position. Two
# attributions from the model: the **gradient** ‖∂ log p(ŷ)/∂e_j‖ of the predicted token's
# log-probability with respect to each input embedding, and **blank-out**: how much log p(ŷ)
# drops when input j is replaced by the MASK token. Compared with: raw attention of each layer (the
# masked position's row, heads averaged), rollout and flow. **Measured**: Spearman's rank
# correlation with the gradient, averaged over sequences (the paper's measure); and how often a
# method's top input (other than the masked position itself) is the input whose blanking hurts
# most. **Pass** (both seeds): rollout and flow pick blank-out's top input in ≥ 80 % of sequences,
# the last layer's raw attention in ≤ 70 % and ≥ 25 points fewer than rollout; rank correlation
# with the gradient ≥ 0.15 higher for rollout and ≥ 0.1 higher for flow than for the last layer.
#
# > **Glossary** · attention rollout 注意力展开 · attention flow 注意力流 · maximum flow 最大流 ·
# > capacity 容量 · attribution 归因 · saliency 显著性 · blank-out (ablation) 遮蔽（消融） ·
# > rank correlation 秩相关

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
print(
    "LayerwiseInformationFlow().forward(x):",
    run_source_block(
        "LayerwiseInformationFlow",
        lambda ns: ns["LayerwiseInformationFlow"]().forward(torch.zeros(1, 4, 8)),
    ).summary(),
)

# %% slideshow={"slide_type": "-"}
# NBVAL_IGNORE_OUTPUT
explained = {seed: compare_explanations(encoders["bidirectional", seed]) for seed in SEEDS}
methods = [k for k in explained[0] if not k.startswith("_")]
print(f"{'':>8} {'':>10}" + "".join(f"{m:>10}" for m in methods))
for seed, res in explained.items():
    for key, label in (
        ("top1_blank", "top input = blank-out's"),
        ("spearman_gradient", "Spearman vs gradient"),
        ("spearman_blank", "Spearman vs blank-out"),
    ):
        print(f"seed {seed} {label:>24}" + "".join(f"{res[m][key]:10.2f}" for m in methods))
    print(
        f"seed {seed}: blank-out's top input is the mirror of the masked token in {res['_blank_top_is_mirror']:.0%}"
    )
for seed, res in explained.items():
    last = res["raw L3"]
    assert res["_blank_top_is_mirror"] >= 0.9, seed
    assert res["rollout"]["top1_blank"] >= 0.8 and res["flow"]["top1_blank"] >= 0.8, seed
    assert last["top1_blank"] <= 0.7, seed
    assert res["rollout"]["top1_blank"] - last["top1_blank"] >= 0.25, seed
    assert res["rollout"]["spearman_gradient"] - last["spearman_gradient"] >= 0.15, seed
    assert res["flow"]["spearman_gradient"] - last["spearman_gradient"] >= 0.1, seed

# %% [markdown] slideshow={"slide_type": "-"}
# The paper's effect is there on both seeds: the last layer's heat map — the one usually shown —
# points at the input that matters in only a minority of sequences, while rollout and flow find it
# almost always, and both rank the inputs much more like the gradient does. Layer 1's raw attention
# happens to find it too: this encoder fetches the mirror token in its first layer. But without the
# attributions one could not know which layer to look at; rollout needs no such luck.
#
# Against blank-out the rank correlations are low for *every* method: blanking any input other than
# the mirror changes this model's prediction by almost nothing, so the ranks among those inputs are
# noise — which is why the top-input agreement is the clearer measure here. One sequence in detail
# (each row scaled to its maximum):

# %% slideshow={"slide_type": "subslide"}
model = encoders["bidirectional", 0]
x, pos, _ = palindrome_batch(1, torch.Generator().manual_seed(21), masks=1)
pos = pos[:, 0]
rows = dict(attention_explanations(model, x, pos))
grad, predicted = gradient_attribution(model, x, pos)
rows["gradient"] = grad.double()
rows["blank-out"] = blank_out_attribution(model, x, pos, predicted)
matrix = torch.cat([r / r.max() for r in rows.values()]).numpy()
fig, ax = plt.subplots(figsize=(8, 3.2))
ax.imshow(matrix, cmap="Greens", vmin=0, vmax=1, aspect="auto")
ax.set_yticks(range(len(rows)), list(rows))
labels = ["M" if int(t) == FILL_VOCAB else str(int(t)) for t in x[0]]
ax.set_xticks(range(FILL_LENGTH), labels)
ax.axvline(int(pos), color="tab:red", lw=1, ls=":")
ax.axvline(FILL_LENGTH - 1 - int(pos), color="tab:blue", lw=1, ls=":")
ax.set(
    xlabel="input token (M = masked; red: its position, blue: its mirror)",
    title="what the masked position reads, by method",
)
plt.tight_layout()
plt.show()

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Claim check — "可解释性 … 注意力可视化" (§7: attention visualisation as the answer to poor
# interpretability) and "提供可解释的注意力模式" (§10: attention patterns are interpretable) ⚠.** A
# single layer's heat map can mislead: here the last layer's points at the answer's source in a
# minority of sequences. Explanations must compose the layers and the residual paths (rollout, flow)
# and should be checked against what the model itself responds to (gradients, ablations).
# **`LayerwiseInformationFlow` (§3) ⚠**: recording the per-layer maps is a start, but its forward
# pass is broken as printed and the maps must be composed to say anything about the inputs.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 7. "Shallow layers local, deep layers global"? (002 §3; 001 §5.4.3; Dosovitskiy et al. 2021)
#
# Source 002 §3 (`attention_pattern_evolution`) and source 001 §5.4.3 say layers 1–2 attend locally
# (neighbouring positions, syntax), layers 3–4 at medium range, layers 5–6 globally. The measurement
# behind such statements is the **mean attention distance** Σ_j A_ij |i − j| per head, averaged over
# queries (`mean_attention_distance`). Dosovitskiy et al. (2021, ViT, Fig. 7) measured it (in
# pixels) per head and layer: the *lowest* layers hold both local and global heads, the higher ones
# only global heads — a spread at the bottom rather than "local first".
#
# Here: the fill-in encoders (3 layers × 2 heads, both seeds) and the induction decoders
# (2 layers), on fresh sequences. References: uniform attention over 16 positions gives
# (T² − 1)/(3T) = 5.31; a previous-token head gives about 1.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
run = run_source_block(
    "attention_pattern_evolution", lambda ns: ns["attention_pattern_evolution"]()
)
for layers, pattern in run.result.items():
    print(f"{layers}: {pattern['特征']}")
print(f"uniform attention over 16 positions: mean distance {(16 * 16 - 1) / 48:.4f}")

# %% slideshow={"slide_type": "-"}
# NBVAL_IGNORE_OUTPUT
distances = {}
x_fill, _, _ = palindrome_batch(500, torch.Generator().manual_seed(5), masks=1)
x_ind, _ = induction_batch(500, torch.Generator().manual_seed(5))
with torch.no_grad():
    for seed in SEEDS:
        _, w_enc = encoders["bidirectional", seed](x_fill)
        _, w_dec = decoders["causal", seed](x_ind[:, :-1])
        distances["encoder", seed] = torch.stack(
            [mean_attention_distance(w).mean(0) for w in w_enc]
        )
        distances["decoder", seed] = torch.stack(
            [mean_attention_distance(w).mean(0) for w in w_dec]
        )
uniform_16 = (16 * 16 - 1) / 48
for (kind, seed), d in distances.items():
    per_layer = " | ".join(
        f"layer {layer + 1}: " + " ".join(f"{v:5.2f}" for v in row.tolist())
        for layer, row in enumerate(d)
    )
    print(f"{kind} seed {seed} (mean distance per head)  {per_layer}")
for seed in SEEDS:
    d = distances["encoder", seed]  # (3 layers, 2 heads)
    assert d.min() >= 0.55 * uniform_16, "a local head in the encoder"
    first_minus_last = float(d[0].mean() - d[-1].mean())
    print(
        f"encoder seed {seed}: first layer minus last layer, mean over heads: {first_minus_last:+.2f}"
    )
    assert first_minus_last >= 0.5, "the encoder's first layer does not clearly read farther"

# %% slideshow={"slide_type": "subslide"}
fig, axes = plt.subplots(1, 2, figsize=(10, 3))
for ax, kind, ref in ((axes[0], "encoder", uniform_16), (axes[1], "decoder", 22 / 4)):
    for seed, marker in zip(SEEDS, ("o", "s")):
        d = distances[kind, seed]
        for head in range(d.shape[1]):
            ax.plot(
                range(1, d.shape[0] + 1),
                d[:, head],
                marker + "-",
                label=f"seed {seed}, head {head + 1}",
            )
    ax.axhline(ref, color="k", ls=":", lw=1, label="uniform attention")
    ax.set(xlabel="layer", ylabel="mean attention distance", title=kind, ylim=(0, 12))
    ax.set_xticks(range(1, distances[kind, 0].shape[0] + 1))
    ax.legend(fontsize=6)
plt.tight_layout()
plt.show()

# %% [markdown] slideshow={"slide_type": "-"}
# What is true here, on both seeds (asserted with margins): **no encoder head is local** — every
# head reads at a mean distance of more than half the uniform one — and the encoder's *first*
# layer reads farther, on average over its heads, than its last, by at least half a position: the
# task's long-range read (the mirror, on average 8 positions away) happens first. How large the gap
# is varies with the seed and the machine (printed above). In the decoder, the previous-token head of layer 1 is local on the first
# eight tokens (§5) but reads farther on the pairs, so its mean distance over all queries is not
# small either (printed, not asserted).
#
# **Claim check — "浅层局部、深层全局" (002 §3 `attention_pattern_evolution`; 001 §5.4.3) ✗ as a
# general law.** The depth at which a model attends locally follows the task and the data: induction
# needs a local (previous-token) step first, our fill-in task a long-range one first. ViT's
# measurements (Dosovitskiy et al. 2021, Fig. 7) show a mix of local and global heads in the lowest
# layers and global heads higher up — on images, whose locality the early layers exploit. **Correct
# statement**: measure the mean attention distance per head; do not assume it from the layer index.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 8. The rest of source 002: sparse cost, speed, positions, dilution, the remaining blocks
#
# **Sparse attention "O(n√n) 或 O(n log n)" (§8).** The cost of a sparse pattern is the number of
# (query, key) pairs it keeps. Counted for n = 128 … 1024, with the exponent of n fitted:

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
counts = sparse_pair_counts((128, 256, 512, 1024))
print(
    f"{'pattern':>24} " + "".join(f"{'n = ' + str(n):>11}" for n in counts["lengths"]) + "   n^p: p"
)
for name, c in counts["counts"].items():
    print(f"{name:>24} " + "".join(f"{v:11d}" for v in c) + f"   {counts['exponents'][name]:.2f}")
e = counts["exponents"]
assert abs(e["dense"] - 2) < 1e-12 and abs(e["local (window 8)"] - 1) < 0.02
assert abs(e["strided (stride sqrt n)"] - 1.5) < 0.05 and abs(e["block (size sqrt n)"] - 1.5) < 0.05
assert 1.0 < e["LogSparse"] < 1.25

# %% slideshow={"slide_type": "-"}
# NBVAL_IGNORE_OUTPUT
times = masked_attention_times(1024)
print("scaled_dot_product_attention at n = 1024 (ms):", {k: round(v, 1) for k, v in times.items()})

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Claim check — "稀疏注意力 … O(n×√n) 或 O(n×log n)" ⚠.** Pair counts confirm: strided and block
# patterns with stride (block size) √n keep O(n^1.5) pairs, LogSparse O(n log n) (fitted exponent
# just above 1), a fixed window O(n). So the cost depends on the pattern, and two conditions apply:
# (1) the saving needs a kernel that skips the masked pairs. A boolean mask on dense attention, as
# in the calls timed above, still computes all n² scores and then applies the mask: the strided
# mask keeps under 5 % of the pairs at n = 1024, but its call does all of the dense call's work and
# a masking pass on top, so it saves no time on any machine. The printed times compare the three
# calls on this machine; their values, and the gaps between them, depend on the machine and its
# load. (2) Fewer pairs per layer mean more layers to connect everything (§1: local window w needs
# ⌈(n − 1)/w⌉ layers; block masks never connect). Chapter 10 builds the kernels.
#
# **"训练速度比RNN快数十倍" (trains tens of times faster than an RNN, §7) ⚠.** What is structural —
# and exact — is the number of *sequential* steps: an RNN layer's n steps must run one after
# another, attention's whole layer has no step that waits for the previous position. The first
# cell below counts the longest chain of operations in each layer's autograd graph
# (`autograd_depth`, as in chapter 04): the recurrent chain grows by three operations per
# position, attention's stays the same at any n. How much faster that makes training in wall-clock
# time depends on the hardware (how much parallel work it can run at once) and on the
# implementations (the course's RNN is a Python loop; cuDNN fuses its steps): the second cell
# prints one pass of each on this machine, and their ratio changes with the machine and its load.
# "Tens of times" is therefore no constant; and it is a property of self-attention, causal or not —
# not of bidirectionality.
#
# **"长距离建模 … 避免了序列模型的长距离依赖衰减问题" (long-range modelling: direct dependencies at
# any distance avoid the long-range decay of sequential models, §7) ⚠.** What this chapter
# measures is the path: one bidirectional layer connects every pair of positions (§1: all 256 pairs
# at L = 1), and a dependency over distance d passes through one attention step instead of d
# recurrent ones (the chain counts below). That removes the cause of decay that grows with
# distance — a product of d Jacobians, whose gradient chapter 04 measured falling with distance.
# It does not make every distant signal arrive at full strength: its weight is one softmax share
# among n (the dilution below), and a deep stack still multiplies one Jacobian per layer.
# **Correct statement**: in self-attention the path between any two positions is one step per
# layer whatever their distance, so there is no decay *with distance* along the path; how strongly
# a distant position is read depends on the learnt weights, not on the distance.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
sequential = {}
rnn_8, mha_8 = VanillaRNN(8, 8), MultiHeadAttention(8, 2)
for n in (64, 256):
    x_seq = torch.randn(1, n, 8, generator=torch.Generator().manual_seed(n))
    sequential[n] = (autograd_depth(rnn_8(x_seq)[:, -1]), autograd_depth(mha_8(x_seq)[0]))
    print(
        f"n = {n}: longest chain of operations in one layer — recurrent {sequential[n][0]}, "
        f"self-attention {sequential[n][1]}"
    )
assert sequential[256][0] - sequential[64][0] == 3 * (256 - 64)  # three operations per position
assert sequential[256][1] == sequential[64][1]  # attention: the same chain at any length

# %% slideshow={"slide_type": "-"}
# NBVAL_IGNORE_OUTPUT
step_times = training_step_times(length=128, batch=4, repeats=2)
print(
    "one forward + backward pass, (4, 128, 64) inputs, one thread (ms): "
    + ", ".join(f"{k} {v:.1f}" for k, v in step_times.items())
)

# %% [markdown] slideshow={"slide_type": "-"}
# **"需要显式的位置信息编码" (needs explicit position encoding, §7 challenges) ✓ for bidirectional
# attention, ⚠ for causal.** Without positions, bidirectional self-attention is *permutation
# equivariant*: permuting the input permutes the output, so order is invisible. A causal mask breaks
# the symmetry by itself — a causal model can infer positions without any encoding (Haviv et al.
# 2022). Measured in float64 with a random permutation:

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
torch.manual_seed(8)
mha = MultiHeadAttention(8, 2).double()
xp = torch.randn(1, 10, 8, generator=torch.Generator().manual_seed(6), dtype=torch.float64)
perm = torch.randperm(10, generator=torch.Generator().manual_seed(7))
with torch.no_grad():
    for causal in (False, True):
        out, _ = mha(xp, causal=causal)
        out_perm, _ = mha(xp[:, perm], causal=causal)
        gap = float((out_perm - out[:, perm]).abs().max())
        label = "causal" if causal else "bidirectional"
        print(f"{label:>13}: max |f(P x) - P f(x)| {'< 1e-12' if gap < 1e-12 else f'= {gap:.2f}'}")
        assert (gap < 1e-12) == (not causal)

# %% [markdown] slideshow={"slide_type": "-"}
# **"注意力分散" (attention dilution, §7 challenges) ⚠.** If one key scores Δ above n − 1 equal
# others, its weight is 1/(1 + (n − 1)e^{−Δ}): at a fixed Δ it shrinks as n grows (✓), but a model
# can raise Δ — scores grow with ‖q‖‖k‖ — and Δ = Δ₀ + ln n keeps the weight fixed at any n:

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
for n in (10, 100, 1000, 10000):
    fixed = 1 / (1 + (n - 1) * math.exp(-3.0))
    growing = 1 / (1 + (n - 1) * math.exp(-(3.0 + math.log(n))))
    print(f"n = {n:5d}: top weight at Delta = 3: {fixed:.4f}   at Delta = 3 + ln n: {growing:.4f}")

# %% [markdown] slideshow={"slide_type": "-"}
# **The remaining blocks, run as printed.** `bidirectional_attention` (§1) uses `zeros` and
# `attention_score`, never defined; even with them it returns raw scores, not weights (no softmax).
# `trace_sentence_information_flow` and `long_distance_dependency_flow` (§5) call
# `simulate_attention_weights` and `trace_dependency_path`, never defined: their "information flow
# paths" are not computed anywhere. The four tables (§7 advantages and challenges, §8 comparison,
# §9 task-specific designs) run and return dictionaries; their claims are checked in this chapter
# where they can be measured, and §9's task recipes (sentiment, NER, reading comprehension,
# translation) are design advice with nothing to measure (—).

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
for name, call in (
    ("bidirectional_attention", lambda ns: ns["bidirectional_attention"](["我", "爱", "自然"])),
    ("trace_sentence_information_flow", lambda ns: ns["trace_sentence_information_flow"]()),
    ("long_distance_dependency_flow", lambda ns: ns["long_distance_dependency_flow"]()),
    ("bidirectional_advantages", lambda ns: ns["bidirectional_advantages"]()),
    ("bidirectional_challenges", lambda ns: ns["bidirectional_challenges"]()),
    ("compare_attention_types", lambda ns: ns["compare_attention_types"]()),
    ("task_specific_information_flow", lambda ns: ns["task_specific_information_flow"]()),
):
    print(f"{name + '()':>34}: {run_source_block(name, call).summary()}")
table_8 = run_source_block(
    "compare_attention_types", lambda ns: ns["compare_attention_types"]()
).result
print("§8 says sparse attention costs:", table_8["稀疏注意力"]["计算复杂度"])

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 9. Widget: masks, layers, heads and queries
#
# The seed-0 fill-in encoder of §4, run on one palindrome under each of the six masks of §1 (the
# model was trained bidirectionally; the other masks show what each graph lets through the same
# weights). Controls: the **mask**, the **layer**, the **head** (or their mean) and the **query**
# position. Left: the layer's attention, the query's row outlined. Middle: the flow graph — keys
# below, queries above, each edge as thick as its weight, the query's incoming edges in red. Right:
# the query's raw attention in this layer (heads averaged) against its rollout through layers 1 …
# l. The caption gives the head's forward / backward / self shares and how many inputs the query can
# depend on after l layers (`reachability`). Things to try:
# 1. bidirectional, layer 1, query 4 (the masked token): its weight goes to the mirror, position
#    11. Step to layer 3: the raw row looks elsewhere, while the rollout keeps position 11 among
#    its largest entries (§6).
# 2. causal: the backward share is 0 in every layer; query 4 cannot reach its mirror at any depth.
# 3. local: the reachable count grows by 2 per side per layer; block: it stays at 4.
# 4. cross: the queries of the right half read only the left half; the self share drops to 0 there.
#
# Behind the widget: `flow_views` (all numbers, once), `flow_view` and `flow_widget_update`
# (numbers + redraw); the tests call them.

# %% slideshow={"slide_type": "slide"}
# NBVAL_IGNORE_OUTPUT
widget_tokens, widget_mask, _ = palindrome_batch(1, torch.Generator().manual_seed(9), masks=1)
print("masked position:", int(widget_mask), " its mirror:", FILL_LENGTH - 1 - int(widget_mask))
flow_widget(encoders["bidirectional", 0], widget_tokens, query=int(widget_mask))

# %% [markdown] slideshow={"slide_type": "subslide"}
# A static snapshot (for printed notes) and the cost of one widget update:

# %% slideshow={"slide_type": "subslide"}
# NBVAL_IGNORE_OUTPUT
views = flow_views(encoders["bidirectional", 0], widget_tokens)
snapshot = FlowPlot(FILL_LENGTH, pyplot=True)
snapshot.update(flow_view(views, "bidirectional", 3, "mean", int(widget_mask)))
plt.show()
timing_plot = FlowPlot(FILL_LENGTH)
flow_widget_update(timing_plot, views, "bidirectional", 1, "mean", 3)  # caches the background
times = []
for step in range(20):
    start = time.perf_counter()
    flow_widget_update(
        timing_plot,
        views,
        MASK_KINDS[step % 6],
        1 + step % 3,
        ("1", "2", "mean")[step % 3],
        step % 16,
    )
    times.append(time.perf_counter() - start)
median_ms = 1000 * float(np.median(times))
print(
    f"one widget update (numbers + redraw + PNG): median {median_ms:.1f} ms over 20 moves "
    f"({'within' if median_ms <= 100 else 'OVER'} the 100 ms budget)"
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 10. Claim checks at a glance
#
# | source claim | verdict | correct statement / condition |
# |---|---|---|
# | 002 §1 mask table: lower-triangular vs all-ones | ✓ | the causal row includes the diagonal: "up to and including" the current position |
# | 002 §1/§10: every token accesses every position directly | ✓ | bidirectional, one layer (reach 100 % at L = 1) |
# | 002 §8: causal "forward only" | ✓ | at every depth: the 120 pairs j > i are never reached (T = 16) |
# | 002 §8: cross-attention encoder → decoder, whole encoder, O(n×m) | ✓ | one-way; forward/backward flow undefined for it |
# | 002 §8: sparse "restricted all-direction, part of the sequence" | ⚠ | pattern-dependent: local reaches all after ⌈(n−1)/w⌉ layers, strided is causal (2 layers), block never connects blocks |
# | 002 §8: sparse cost O(n√n) or O(n log n) | ⚠ | strided/block with √n: n^1.5, LogSparse: n log n, window: n; needs kernels that skip masked pairs |
# | 002 §2 `compute_attention_weights`, "A[0, i, j]: flow j → i" | ✓ / ⚠ | needs its imports; breaks on (B, H, T, d) inputs |
# | 002 §2 `information_aggregation_analysis` | ✗ | undefined function; leaves out the self flow |
# | 002 §6 `analyze_flow_statistics`: forward / backward / self | ✓ | the sums are right on one (T, T) matrix (same as `attncourse.flow`) |
# | 002 §6 `analyze_flow_statistics`: `seq_len = shape[0]` | ✗ on (B, H, T, T) | takes B as the length: runs silently for B ≤ H (B = H = 1: forward = backward = 0), `IndexError` for B > H; sum over the last two axes |
# | 002 §6: total flow, mean strength | ✗ as statistics | T and 1/S for any softmax weights |
# | 002 §6: ratio forward / (backward + 1e-8) | ✗ | undefined for causal attention (10⁸ × forward); use shares, or `inf` |
# | 002 §6: heat map `axhline(0)` / `axvline(0)` = forward / backward flow | ✗ | they mark row 0 and column 0; forward/backward are the triangles below/above the diagonal |
# | 002 §1/§10: bidirectionality captures rich context | ✓ | fill-in: only the bidirectional encoder restores left-half tokens |
# | 002 §8: decoders use masked attention for generation | ✓ | a bidirectional LM copies the next token (loss below the floor) and cannot generate |
# | 001 §5.4.3 after Eq. (5.4.7)–(5.4.8): relay n ← m ← 1 with both hops in layer 1 (A⁽¹⁾_nm, A⁽¹⁾_m1) | ✗ as printed | one layer cannot relay (n reads m's input); hop 1 in layer 1, hop 2 in layer 2 (path A⁽²⁾_nm A⁽¹⁾_m1) — so corrected ✓: previous-token head → induction head; one layer fails; ablating layer 1 breaks it |
# | 001 §5.4.3: "output of n ≈ A_nm v_m" | ⚠ | only with one dominant weight, ignoring the residual |
# | 001 Eq. (5.4.9): final representation keeps the embedding | ⚠ | exact for Pre-LN; Post-LN (5.4.8) renormalises it away |
# | 002 §4: head specialisation types and distances | ⚠ | heads specialise (position and content heads measured); the table's types and distances are not measurements |
# | 002 §3 `LayerwiseInformationFlow` | ⚠ | broken as printed; per-layer maps must be composed (rollout, flow) |
# | 002 §3 / 001 §5.4.3: shallow layers local, deep global | ✗ (here) | no local encoder head, first layer farthest; ViT: local and global heads in low layers; measure per head |
# | 002 §7/§10: attention patterns are interpretable | ⚠ | the last layer's raw weights mislead; rollout/flow agree with gradients and ablations (Abnar & Zuidema 2020) |
# | 002 §7: trains tens of times faster than an RNN | ⚠ | exact: attention's longest chain is the same at any n, an RNN's grows by 3 operations per position; the wall-clock ratio depends on hardware and implementation (printed in §8 for this machine) |
# | 002 §7: long-range modelling avoids the decay of sequential models | ⚠ | no decay with distance *along the path*: one step per layer at any distance (one layer connects all pairs, §1); how strongly a distant position is read is set by the learnt weights (dilution); gradient decay with distance is chapter 04's |
# | 002 §7: O(n²) compute and memory | ✓ | n² pairs per head (dense) |
# | 002 §7: needs explicit position encoding | ✓ / ⚠ | bidirectional is permutation-equivariant; causal masks leak order |
# | 002 §7: attention dilution | ⚠ | at a fixed score gap; a gap growing like ln n keeps the weight |
# | 002 §7: better ambiguity handling, richer transferable representations | — | benchmark claims, nothing to measure here |
# | 002 §1 `bidirectional_attention`; §5 sentence-tracing blocks; §4 `head_collaboration_analysis` | ✗ as code | undefined names (`zeros`, `simulate_attention_weights`, `trace_dependency_path`, `calculate_head_diversity`) |
# | 002 §9 task-specific designs | — | advice |

# %% [markdown] slideshow={"slide_type": "skip"}
# ## 11. Exercises (graded)
#
# Four exercises, 10 points. Write your code between the lines marked for it, run the cell, then
# run the check cell under it: it tests your function on random and edge inputs and tells you what
# is wrong. When graded, more tests (hidden here) run the same kinds of input with other numbers,
# so make your function correct in general. Use plain tensor operations: the checks refuse calls
# to the course's package (`attncourse.flow` computes all four).

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 1 (2 points) — forward, backward and self flow (source 002 §6)
# `my_flow_split(weights)`: weights (..., T, T) with rows = queries i and columns = keys j →
# a tuple `(forward, backward, self)` of tensors of shape (...): the sums over every query i of the
# weights from earlier keys (j < i), from later keys (j > i) and from i itself. Keep the dtype.


# %% nbgrader={"grade": false, "grade_id": "ch05_flow_split", "locked": false, "schema_version": 3, "solution": true} slideshow={"slide_type": "skip"}
def my_flow_split(weights):
    """weights (..., T, T) -> (forward, backward, self), each (...): sums over j < i, j > i, j = i."""
    ### BEGIN SOLUTION
    T = weights.shape[-1]
    i = torch.arange(T).unsqueeze(1)  # (T, 1)
    j = torch.arange(T).unsqueeze(0)  # (1, T)
    zero = torch.zeros((), dtype=weights.dtype)
    parts = (j < i, j > i, j == i)
    return tuple(torch.where(part, weights, zero).sum((-2, -1)) for part in parts)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch05_flow_split_test", "locked": true, "points": 2, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"}
from attncourse.exercises.ch05 import check_flow_split

check_flow_split(my_flow_split)
### BEGIN HIDDEN TESTS
import importlib

import attncourse.exercises.ch05 as ex
import attncourse.exercises.engine as engine

engine = importlib.reload(engine)  # fresh copies: a patched check does not count
ex = importlib.reload(ex)
ex.check_flow_split(my_flow_split, seed=51)
### END HIDDEN TESTS

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 2 (3 points) — what a stack of layers lets through (Eq. 5.4.7–5.4.8)
# `my_reachability(mask, layers)`: mask (T, T) bool (True = query i may read key j, the same mask
# in every layer), layers an int ≥ 0 → (T, T) bool, True where the output at position i after
# `layers` Transformer layers can depend on the input at position j. Remember Eq. (5.4.8): each
# layer adds what a position reads to what it already has.


# %% nbgrader={"grade": false, "grade_id": "ch05_reachability", "locked": false, "schema_version": 3, "solution": true} slideshow={"slide_type": "skip"}
def my_reachability(mask, layers):
    """mask (T, T) bool, layers >= 0 -> (T, T) bool: can output i after `layers` layers depend on input j?"""
    ### BEGIN SOLUTION
    T = mask.shape[-1]
    step = (mask | torch.eye(T, dtype=torch.bool)).double()  # one layer: read, and keep yourself
    reach = torch.eye(T, dtype=torch.double)  # zero layers: each output is its own input
    for _ in range(layers):
        reach = ((step @ reach) > 0).double()  # one more layer on top
    return reach > 0
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch05_reachability_test", "locked": true, "points": 3, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"}
from attncourse.exercises.ch05 import check_reachability

check_reachability(my_reachability)
### BEGIN HIDDEN TESTS
import importlib

import attncourse.exercises.ch05 as ex
import attncourse.exercises.engine as engine

engine = importlib.reload(engine)  # fresh copies: a patched check does not count
ex = importlib.reload(ex)
ex.check_reachability(my_reachability, seed=52)
### END HIDDEN TESTS

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 3 (3 points) — attention rollout (Abnar & Zuidema 2020)
# `my_rollout(layers)`: a tuple of per-layer attention tensors, each (B, H, T, T), first layer first
# → (B, T, T): the rollout Ã_L ⋯ Ã_1 with Ã_l = ½ I + ½ (the mean over the heads of layer l). Row i
# of the result must say how much of each input reaches top position i, so think about which side
# each new layer goes on.


# %% nbgrader={"grade": false, "grade_id": "ch05_rollout", "locked": false, "schema_version": 3, "solution": true} slideshow={"slide_type": "skip"}
def my_rollout(layers):
    """layers: tuple of (B, H, T, T) tensors, first layer first -> (B, T, T) rollout."""
    ### BEGIN SOLUTION
    T = layers[0].shape[-1]
    eye = torch.eye(T, dtype=layers[0].dtype)
    result = eye
    for weights in layers:
        mixed = 0.5 * eye + 0.5 * weights.mean(dim=1)  # (B, T, T) residual + head average
        result = mixed @ result  # the newer layer on the left
    return result
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch05_rollout_test", "locked": true, "points": 3, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"}
from attncourse.exercises.ch05 import check_rollout

check_rollout(my_rollout)
### BEGIN HIDDEN TESTS
import importlib

import attncourse.exercises.ch05 as ex
import attncourse.exercises.engine as engine

engine = importlib.reload(engine)  # fresh copies: a patched check does not count
ex = importlib.reload(ex)
ex.check_rollout(my_rollout, seed=53)
### END HIDDEN TESTS

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 4 (2 points) — attention flow through two layers, in closed form
# `my_two_layer_flow(first, second)`: the capacities of a two-layer attention graph, each (T, T)
# (already residual-mixed): first[k, j] is the capacity of the edge from input j to middle node k,
# second[i, k] that of the edge from middle node k to top node i → (T, T), entry [i, j] the
# **maximum flow** from input j to top node i. No flow algorithm is needed: think about what a path
# from j to i looks like in this graph, and whether two different paths can share an edge.


# %% nbgrader={"grade": false, "grade_id": "ch05_two_layer_flow", "locked": false, "schema_version": 3, "solution": true} slideshow={"slide_type": "skip"}
def my_two_layer_flow(first, second):
    """first, second (T, T) capacities -> (T, T): max flow from input j (column) to top node i (row)."""
    ### BEGIN SOLUTION
    # every path is j -> k -> i for one middle k, and no two paths share an edge:
    # path k carries min(first[k, j], second[i, k]); the paths add up
    return torch.minimum(first.unsqueeze(0), second.unsqueeze(-1)).sum(
        dim=-2
    )  # (i, k, j) -> (i, j)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch05_two_layer_flow_test", "locked": true, "points": 2, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"}
from attncourse.exercises.ch05 import check_two_layer_flow

check_two_layer_flow(my_two_layer_flow)
### BEGIN HIDDEN TESTS
import importlib

import attncourse.exercises.ch05 as ex
import attncourse.exercises.engine as engine

engine = importlib.reload(engine)  # fresh copies: a patched check does not count
ex = importlib.reload(ex)
ex.check_two_layer_flow(my_two_layer_flow, seed=54)
### END HIDDEN TESTS

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Summary
#
# - A mask is a graph; a stack of L residual layers lets output i depend on input j exactly when
#   (M ∨ I)^L has an entry there. Causal: forward only, at any depth; local window w: ⌈(n − 1)/w⌉
#   layers to connect everything; strided: 2 layers; block: never across blocks; cross: one way,
#   encoder → decoder.
# - Of source 002's flow statistics only the split carries information: total and mean are fixed by
#   the softmax, and the ratio with +10⁻⁸ is meaningless for causal attention. `attncourse.flow`
#   computes them for any `(B, H, T, S)` tensor. Forward and backward flow are the triangles below and
#   above the diagonal, not the lines the source's heat map draws.
# - A bidirectional language model copies the next token (loss below the data's floor) and cannot
#   generate; a task with its answer to the right needs bidirectional attention.
# - Two layers relay what one cannot — hop 1 in layer 1, hop 2 in layer 2 (the source's sketch puts
#   both in layer 1, which is one layer and relays nothing): a previous-token head feeding an
#   induction head (Olsson et al. 2022); one layer fails, and replacing layer 1's attention by
#   "read yourself" breaks the model.
# - Raw attention of a single layer is not the flow from the inputs; rollout and flow (Abnar &
#   Zuidema 2020) agree far better with the model's own attributions.
# - "Shallow local, deep global" did not hold here: measure the mean attention distance per head.
#
# | concept | what was measured | verdict · where |
# |---|---|---|
# | a mask as a flow graph | reach (M ∨ I)^L of six masks, T = 16 (exact) | bidirectional: all pairs in 1 layer ✓; causal: forward only at any depth ✓; sparse: pattern-dependent ⚠ · §1 |
# | flow statistics (002 §6) | forward / backward / self sums against `attncourse.flow` (float64) | split ✓; total and mean are constants ✗; ratio ✗ for causal; `shape[0]` ✗ on (B, H, T, T) · §2 |
# | the heat map's lines (002 §6) | where y = 0 and x = 0 fall | ✗: forward / backward are the triangles · §3 |
# | causal vs bidirectional | LM loss against the floor, generation; palindrome fill-in (2 seeds, asserted) | decoders must be causal ✓; an answer to the right needs bidirectional ✓ · §4 |
# | two-layer relay (001 §5.4.3) | one-hot relay (exact); 1 vs 2 layers on induction, head weights, ablation (2 seeds) | ✗ as printed (both hops in layer 1); ✓ with hop 2 in layer 2 · §5 |
# | the embedding survives the stack (Eq. 5.4.9) | zero sublayers, Pre-LN vs Post-LN (exact) | ⚠: Pre-LN only · §5 |
# | attention maps as explanations | raw, rollout, flow against gradient and blank-out (2 seeds) | ⚠: one layer's map can mislead; compose the layers · §6 |
# | shallow local, deep global | mean attention distance per head (2 seeds) | ✗ as a law: measure it per head · §7 |
# | sparse cost, speed, long range (002 §7–§8) | pair counts and chain lengths (exact); times (this machine only) | ⚠ each: kernels that skip pairs; wall-clock depends on the machine; no decay along the path · §8 |
# | positions, dilution (002 §7) | permutation equivariance (float64); top weight in closed form | ✓ bidirectional / ⚠ causal; ⚠ at a fixed score gap · §8 |
#
# **Next — chapter 06, multi-head attention and information**: how much the heads of a layer
# repeat each other, which ones a model can lose, and how to measure a head's contribution.
