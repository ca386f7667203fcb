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
# # Chapter 06 · Multi-head attention and information
# *多头注意力与信息* — source 000, §14.3.2 (Def. 14.3.6, Lemma 14.3.7, Thm. 14.3.3, Application
# 14.3.1, Lemma 14.3.8, Thm. 14.3.4; Eq. 14.3.10–14.3.13), §14.3.4 (Def. 14.3.10–14.3.11,
# Lemma 14.3.13–14.3.15, Thm. 14.3.7–14.3.8, Cor. 14.3.4; Eq. 14.3.21–14.3.27) and §14.3.7
# (Def. 14.3.16–14.3.17, Lemma 14.3.22–14.3.23, Thm. 14.3.15, Application 14.3.5–14.3.6,
# Alg. 14.3.1; Eq. 14.3.42–14.3.45); and source 003's claims for multi-head attention (从单头到多头:
# subspace diversity, robustness)
#
# **After this chapter you can**
# - write multi-head attention as a **sum of per-head terms** W_O^h z_h (Eq. 14.3.10), and say
#   what h heads of size d/h can express that one head of size d cannot — and the reverse, the
#   **low-rank bottleneck** of small heads (Bhojanapalli et al. 2020);
# - compute the information quantities of §14.3.2 and §14.3.4 **exactly** on toy tasks, and tell
#   which identities hold, which need the **co-information with its sign** (redundancy vs
#   synergy), and which are not well defined as printed;
# - measure **head importance** (Michel et al. 2019's gradient score, the source's information
#   criterion) and prune heads of a trained model, and reproduce Michel et al.'s effect on a CPU;
# - say what the entropy and diversity **regularisers** of §14.3.7 do when minimised — and write
#   one that does separate the heads;
# - compute per-head output terms, the head size a pattern needs, co-information, chain-rule
#   contributions and Michel's importance (the graded exercises).
#
# **Prerequisites**: chapters 01 (attention, entropy, mutual information on tables) and 03
# (softmax as a distribution); the chain rule of mutual information; matrix rank and the SVD at the
# level of "a rank-r matrix is a sum of r outer products".
#
# **Time**: about 100 minutes (65 reading and experimenting, 35 for the exercises).
#
# Marks used in the claim checks: **✓ holds** · **⚠ holds only under a condition** (stated) ·
# **✗ wrong as printed** (counterexample and correct statement given).

# %% slideshow={"slide_type": "skip"}
import inspect
import math
import time

import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn.functional as F

from attncourse.attention import MultiHeadAttention, softmax
from attncourse.chapters.ch06_multi_head_information import (
    HeadMaskPlot,
    JointTable,
    alg_14_3_1_as_printed,
    argmax_position,
    argmax_selectable_keys,
    argmin_position,
    best_heads_to_keep,
    binned_self_information,
    bits,
    chapter_model,
    complementarity,
    descend,
    diversity_attention_loss,
    entropy_loss,
    eq_14_3_11,
    eq_14_3_12,
    eq_14_3_21,
    eq_14_3_25,
    gated_copy,
    grid_keys,
    head_contributions,
    head_entropies,
    head_for_pattern,
    head_mask,
    head_mask_state,
    head_mask_widget,
    head_mask_widget_update,
    information,
    joint_table,
    kmeans_codes,
    marginal_contributions,
    mean_pattern_information,
    neighbour_targets,
    net_contributions,
    one_head_error_bound,
    overlap_loss,
    pairwise_co_information_formula,
    pattern_of,
    pattern_rank,
    plugin_mutual_information,
    prune_all,
    prune_by_net_contribution,
    random_pattern,
    relative_error,
    sample_joint,
    sort_batch,
    total_correlation,
    train_model,
    train_one_head,
    two_head_copy,
)
from attncourse.metrics import co_information, mutual_information

torch.manual_seed(0)
np.random.seed(0)
torch.set_num_threads(2)
torch.set_flush_denormal(True)
torch.set_printoptions(precision=4, sci_mode=False)
plt.rcParams.update({"figure.dpi": 80, "figure.figsize": (7, 3)})

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 1. Heads are subspaces, and W_O adds them up (Def. 14.3.6, Eq. 14.3.10)
#
# Each head h has its own projections W_Q^h, W_K^h, W_V^h (d × d/h each) and computes
# z_h = Attention(x W_Q^h, x W_K^h, x W_V^h) in its own d/h-dimensional subspace. The source fuses
# them with one output matrix:
#
# $$\mathrm{MultiHead}(Q, K, V) = W_O \begin{bmatrix} z_1 \\ \vdots \\ z_h \end{bmatrix} \qquad (14.3.10)$$
#
# Cut W_O into h blocks of d/h columns, W_O = [W_O^1 ⋯ W_O^h]. A block matrix times a stacked vector
# is a sum: **W_O [z_1; …; z_h] = Σ_h W_O^h z_h**. Every head writes its own additive term into the
# shared d-dimensional output, so "removing a head" is well defined: drop its term, i.e. multiply
# z_h by a gate ξ_h = 0 (Michel et al. 2019). `GatedMultiHeadAttention` (chapter code: the
# package's `MultiHeadAttention` with a gate on each z_h before W_O) does exactly that; with every
# ξ_h = 1 it must give `attncourse.attention.MultiHeadAttention`'s output.
#
# > **Glossary** · multi-head attention 多头注意力 · head 注意力头 · subspace 子空间 ·
# > output projection 输出投影 · block matrix 分块矩阵 · gate 门控 · head mask 头掩码

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
mha = MultiHeadAttention(12, 3).double()
x = torch.randn(2, 5, 12, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
out, _ = mha(x)  # (2, 5, 12)
terms = head_contributions(mha, x)  # (2, 3, 5, 12): W_O^h z_h for each head
print("W_O [z_1; z_2; z_3] + b == sum of the three head terms + b:", end=" ")
print(torch.allclose(terms.sum(1) + mha.out_proj.bias, out, atol=1e-12, rtol=0))
gated = gated_copy(mha)
out_gated, _, _ = gated(x)
print("GatedMultiHeadAttention (all gates 1) == MultiHeadAttention:", end=" ")
print(torch.allclose(out_gated, out, atol=1e-12, rtol=0))
out_off, _, _ = gated(x, gates=torch.tensor([1.0, 0.0, 1.0], dtype=torch.float64))
print("gate of head 2 at 0 == dropping that head's term:", end=" ")
print(torch.allclose(out_off, out - terms[:, 1], atol=1e-12, rtol=0))
assert torch.allclose(out_off, out - terms[:, 1], atol=1e-12, rtol=0)

# %% [markdown] slideshow={"slide_type": "slide"}
# **Claim check — Def. 14.3.6, Eq. (14.3.10) ✓** (with the per-head projections that the
# definition leaves implicit: z_h = Attention(Q_h, K_h, V_h) with Q_h = Q W_Q^h, …). The fusion is
# linear, so it is a sum of per-head terms; the heads interact only through that sum (and, in a
# deeper model, through the layers after it).
#
# ## 2. What two heads of size d/2 can do that one head of size d cannot
#
# One head gives every query **one** distribution over the keys, so its output is one weighted
# average Σ_j α_ij v_j. Task: at every position i output both neighbours, [x_{i−1}; x_{i+1}], with
# x_j ∈ ℝ^m random content (m = 4, n = 8 positions, circular).
#
# - **Two heads of size m** (total d = 2m): head 1 attends to i − 1, head 2 to i + 1 (positional
#   score biases), values are the content, W_O places head 1's output in the first m coordinates
#   and head 2's in the last m. Every other key gets weight ≈ e^{−30} ≈ 10⁻¹³, so each output
#   coordinate is off by ~10⁻¹², and the relative error E‖t − ŷ‖²/E‖t‖² (a ratio of squared
#   norms) is of order e^{−60}: about 5·10⁻²⁵ here.
# - **One head of any size** whose values are a linear map of the content: its output is
#   W_O W_V (Σ_j α_ij x_j) + b. Whatever the weights α (content- or position-dependent), that lies
#   in one fixed affine subspace of dimension ≤ m, while the targets fill 2m dimensions with equal
#   variance. So it misses **at least half** of the target's variance — the sum of the m smallest
#   eigenvalues of the targets' covariance over E‖t‖² (`one_head_error_bound`, ≈ 0.5 on a finite
#   sample). (With absolute position embeddings added to the values, as in most transformers, the
#   position part Σ_j α_ij p_j can vary with the weights and the argument needs more care; the
#   point stands: one head is one average per query.)
#
# > **Glossary** · weighted average 加权平均 · affine subspace 仿射子空间 · eigenvalue 特征值 ·
# > positional bias 位置偏置 · relative error 相对误差

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
x_nb = torch.randn(512, 8, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
t_nb = neighbour_targets(x_nb)  # (512, 8, 8) = [x_{i-1}; x_{i+1}]
err_two = relative_error(two_head_copy(x_nb), t_nb)
bound = one_head_error_bound(t_nb, content_dim=4)
print(
    f"two heads of size 4, built by hand: relative error {'< 1e-12' if err_two < 1e-12 else err_two}"
)
print(f"any single head (values = linear map of the content): relative error >= {bound:.2f}")
assert err_two < 1e-12 and 0.45 < bound < 0.5

# %% [markdown] slideshow={"slide_type": "-"}
# A trained single head (content scores plus a learned positional bias, d_k = 16 — twice the total
# size of the two heads —, Adam) lands just above the bound, never below it:

# %% slideshow={"slide_type": "-"}
# NBVAL_IGNORE_OUTPUT
one_head = train_one_head(x_nb[:256], steps=150, d_k=16, seed=0)  # fitted on half
err_one = relative_error(one_head(x_nb).detach(), t_nb)
print(f"one trained head of size 16: relative error {err_one:.3f} (bound {bound:.3f})")
assert bound - 1e-9 <= err_one < 0.7

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 3. What one head of size d can do that small heads cannot: the low-rank bottleneck
#
# The reverse holds too (Bhojanapalli et al. 2020, "Low-rank bottleneck in multi-head attention
# models"). A head's scores Q Kᵀ/√d_k have rank ≤ d_k = d/h. softmax(S) = P exactly iff
# S = log P + c 1ᵀ (a constant per row), and removing each row's mean cannot raise a rank, so
#
# **a head with d_k dimensions can produce the attention matrix P iff rank(row-centred log P) ≤ d_k**
#
# (`pattern_rank`; the truncated SVD of the centred log P gives the queries and keys,
# `head_for_pattern`). A generic n × n pattern needs d_k = n − 1: with n = 8 positions and d = 8,
# one head of size 8 can produce it, none of 4 heads of size 2 can — however many of them there are.
# Even "attend to yourself with weight 0.9, spread the rest evenly" needs n − 1; a **sharp** version
# of it (arg max only) fits in d_k = 2 (keys on a circle), so the bottleneck is about exact weights.
# Bhojanapalli et al. therefore set the head size to the sequence length, independent of h.
#
# > **Glossary** · rank 秩 · low-rank bottleneck 低秩瓶颈 · singular value decomposition 奇异值分解 ·
# > row-centred 行中心化 · head size 头维度

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
n = 8
P_random = random_pattern(n, seed=0)  # (8, 8) softmax of Gaussian scores
eye = torch.eye(n, dtype=torch.float64)
P_self = 0.9 * eye + 0.1 / (n - 1) * (1 - eye)  # attend to yourself with weight 0.9
u, v = torch.arange(n, dtype=torch.float64), torch.linspace(-1, 1, n, dtype=torch.float64)
P_rank1 = softmax(torch.outer(u, v), dim=-1)  # scores of rank 1
P_uniform = torch.full((n, n), 1 / n, dtype=torch.float64)
print(f"{'pattern':>28} | rank of centred log P | exact with d_k = 1 2 3 4 5 6 7 8")
ranks = {}
for name, P in (
    ("random (softmax of N(0,1))", P_random),
    ("self 0.9, rest uniform", P_self),
    ("scores u v^T (rank 1)", P_rank1),
    ("uniform", P_uniform),
):
    ranks[name] = pattern_rank(P)
    marks = []
    for d_k in range(1, n + 1):
        Q, K = head_for_pattern(P, d_k)
        error = float((pattern_of(Q, K) - P).abs().max())
        assert (error < 1e-12) == (d_k >= ranks[name]) and (error < 1e-12 or error > 1e-3)
        marks.append("✓" if error < 1e-12 else "✗")
    print(f"{name:>28} | {ranks[name]:21d} | {'':>17}" + " ".join(marks))
errors = [
    float((pattern_of(*head_for_pattern(P_random, d_k)) - P_random).abs().max())
    for d_k in range(1, 8)
]
print("random pattern, best rank-d_k log-scores, max |softmax - P| for d_k = 1..7:", end=" ")
print(" ".join("<1e-12" if e < 1e-12 else f"{e:.3f}" for e in errors))
assert list(ranks.values()) == [7, 7, 1, 0]

# %% [markdown] slideshow={"slide_type": "slide"}
# Read the table row by row: the construction is exact (to round-off) from d_k = rank on, and **no**
# d_k below the rank can be exact (the truncated SVD gives the best rank-d_k approximation of the
# centred log P, not the best in weights, but any exact head would need rank ≥ the rank). With h heads of size d/h, each head's pattern is limited to rank
# d/h; what many small heads buy is **many different** patterns, what one large head buys is **one
# arbitrary** pattern.
#
# ## 4. Information of heads, exactly (Lemma 14.3.7, Cor. 14.3.4, Def. 14.3.11, Lemma 14.3.15, Thm. 14.3.8)
#
# The source states several identities about the information Z = (Z_1, …, Z_H) carries about a
# target Y:
#
# $$I(Z; Y) = \sum_{h=1}^{H} I(Z_h; Y) - \sum_{h_1 \neq h_2} I(Z_{h_1}; Z_{h_2}; Y) \qquad (14.3.11)$$
#
# $$I(Z; Y) = \sum_{h} I(Z_h; Y) - \sum_{h_1 \neq h_2} I(Z_{h_1}; Z_{h_2}) \qquad (14.3.25)$$
#
# $$\mathrm{Complementarity}(h_1, h_2) = I(Z_{h_1}; Y) + I(Z_{h_2}; Y) - I(Z_{h_1 \cup h_2}; Y) \qquad (14.3.26)$$
#
# $$\Delta_h = I(Z_h; Y) - I(Z_{<h}; Y), \qquad \sum_{h=1}^{H} \Delta_h = I(Z_{\text{all}}; Y) \qquad (14.3.27)$$
#
# and Lemma 14.3.15 reads (14.3.26) as "high = the heads learn different information, near 0 = they
# are redundant". To test them **exactly**, take toy tasks where each head reads one token with hard
# attention (Z_h = the token it attends to) and Y is a known function of fair random bits x_1, x_2,
# x_3. `joint_table` enumerates the inputs into one probability table; `attncourse.metrics`
# gives the exact information in bits. Z_{h1 ∪ h2} must mean the **pair** (Z_h1, Z_h2) read jointly.
#
# > **Glossary** · mutual information 互信息 · co-information 交互信息 · redundancy 冗余 ·
# > synergy 协同 · chain rule 链式法则 · marginal contribution 边际贡献 · complementarity 互补性

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
TOY_TASKS = {
    "copy: Z1=Z2=x1, Y=x1": {"Z1": lambda x: x[0], "Z2": lambda x: x[0], "Y": lambda x: x[0]},
    "split: Y=(x1,x2)": {"Z1": lambda x: x[0], "Z2": lambda x: x[1], "Y": lambda x: x[:2]},
    "XOR: Y=x1^x2": {"Z1": lambda x: x[0], "Z2": lambda x: x[1], "Y": lambda x: x[0] ^ x[1]},
    "AND: Y=x1&x2": {"Z1": lambda x: x[0], "Z2": lambda x: x[1], "Y": lambda x: x[0] & x[1]},
    "3 heads, Y=x1^x2^x3": {
        "Z1": lambda x: x[0],
        "Z2": lambda x: x[1],
        "Z3": lambda x: x[2],
        "Y": lambda x: x[0] ^ x[1] ^ x[2],
    },
    "3 heads x1,x2,x1^x2; Y=(x1,x2)": {
        "Z1": lambda x: x[0],
        "Z2": lambda x: x[1],
        "Z3": lambda x: x[0] ^ x[1],
        "Y": lambda x: x[:2],
    },
}
print(
    f"{'task':>31} | {'I(Z;Y)':>6} | {'(14.3.11)':>9} {'pairs once':>10} | {'(14.3.25)':>9} "
    f"{'once':>5} | {'(14.3.26)':>9} | {'sum D (27)':>10} {'chain rule':>10}"
)
toy = {}
for name, variables in TOY_TASKS.items():
    jt = joint_table(bits(3), variables)
    heads = [v for v in jt.names if v != "Y"]
    row = toy[name] = {
        "I": information(jt, heads, "Y"),
        "eq11": eq_14_3_11(jt, heads, "Y"),
        "once": pairwise_co_information_formula(jt, heads, "Y"),
        "eq25": eq_14_3_25(jt, heads, "Y"),
        "eq25 once": eq_14_3_25(jt, heads, "Y", ordered=False),
        "comp": complementarity(jt, "Z1", "Z2", "Y"),
        "sum printed": sum(marginal_contributions(jt, heads, "Y")),
        "sum chain": sum(marginal_contributions(jt, heads, "Y", printed=False)),
    }
    print(
        f"{name:>31} | {row['I']:6.3f} | {row['eq11']:9.3f} {row['once']:10.3f} | {row['eq25']:9.3f} "
        f"{row['eq25 once']:5.3f} | {row['comp']:9.3f} | {row['sum printed']:10.3f} {row['sum chain']:10.3f}"
    )
for row in toy.values():
    assert abs(row["sum chain"] - row["I"]) < 1e-12  # the chain rule is exact
assert (
    abs(toy["XOR: Y=x1^x2"]["eq11"] - 2.0) < 1e-9 and abs(toy["XOR: Y=x1^x2"]["comp"] + 1.0) < 1e-9
)
assert abs(toy["copy: Z1=Z2=x1, Y=x1"]["comp"] - 1.0) < 1e-9
assert abs(toy["split: Y=(x1,x2)"]["comp"]) < 1e-9

# %% [markdown] slideshow={"slide_type": "-"}
# What the table shows (every number exact):
#
# - **Lemma 14.3.7, Eq. (14.3.11) ✗ as printed.** The sum over h₁ ≠ h₂ counts each pair **twice**
#   (XOR: 0 + 0 − 2·(−1) = 2 bits, truth 1; copy: 1 + 1 − 2·1 = 0, truth 1). With each pair once it
#   is the chain rule for **two** heads, I(Z₁, Z₂; Y) = I(Z₁; Y) + I(Z₂; Y) − I(Z₁; Z₂; Y), where the
#   co-information I(Z₁; Z₂; Y) = I(Z₁; Y) − I(Z₁; Y | Z₂) is **positive for redundancy and negative
#   for synergy** (the source calls the term "synergy information … the degree of sharing": sharing
#   is redundancy; synergy enters with the opposite sign). For three heads pairs are not enough:
#   3-XOR has all singles and all pairwise co-informations 0 but 1 bit in the whole; the exact
#   expansion adds the triple co-information, Σ_h I − Σ_pairs I(·;·;Y) + I(Z₁; Z₂; Z₃; Y).
# - **Cor. 14.3.4, Eq. (14.3.25) ✗.** The subtracted term has no Y in it. XOR: heads independent,
#   formula 0, truth 1 bit. For **two** heads with the pair counted once it is a valid **lower
#   bound**: I(Z₁, Z₂; Y) = I(Z₁; Y) + I(Z₂; Y) − I(Z₁; Z₂) + I(Z₁; Z₂ | Y) ≥ … − I(Z₁; Z₂). For three
#   heads even that fails (last row: 3 > 2 bits); the correct bound subtracts the total correlation
#   Σ_h H(Z_h) − H(Z), not the pairwise informations.
# - **Def. 14.3.11, Eq. (14.3.26) ✓ as a definition, Lemma 14.3.15 ✗.** By the chain rule the
#   "complementarity" **is** the co-information: +1 for copies (pure redundancy), 0 for heads that
#   carry independent pieces (split: the textbook complementary pair), −1 for XOR (synergy). High
#   values mean **redundant** heads, the opposite of the lemma's reading; complementary heads sit at
#   0 or below.
# - **Thm. 14.3.8, Eq. (14.3.27) ✗ as printed, ✓ with the chain rule.** Σ_h [I(Z_h; Y) − I(Z_<h; Y)]
#   does not telescope (split: 1 instead of 2; XOR: 0 instead of 1). With
#   Δ_h = I(Z_≤h; Y) − I(Z_<h; Y) = I(Z_h; Y | Z_<h) the sum is I(Z_all; Y) exactly (last column).
#   "Δ_h should be as uniform as possible" is not a theorem: the Δ_h depend on the order of the heads,
#   and for XOR they are (0, 1) in either order although the pair is optimal.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
jt_xor = joint_table(bits(2), TOY_TASKS["XOR: Y=x1^x2"])
print("XOR: chain-rule contributions in the order (Z1, Z2):", end=" ")
print(marginal_contributions(jt_xor, ["Z1", "Z2"], "Y", printed=False))
print("XOR: chain-rule contributions in the order (Z2, Z1):", end=" ")
print(marginal_contributions(jt_xor, ["Z2", "Z1"], "Y", printed=False))
print(
    "co-information I(Z1; Z2; Y) =",
    co_information(jt_xor.table, 0, 1, 2),
    "= I(Z1; Y) - I(Z1; Y | Z2) =",
    mutual_information(jt_xor.table, 0, 2) - mutual_information(jt_xor.table, 0, 2, given=1),
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 5. Redundancy of attention patterns (Thm. 14.3.3, Eq. 14.3.12)
#
# $$\mathrm{Redundancy}(H) = \frac{1}{h^2} \sum_{h_1, h_2} H(\alpha^{(h_1)} \mid \alpha^{(h_2)}) \qquad (14.3.12)$$
#
# "Low redundancy means the heads learn complementary information; redundancy is high when one
# head's attention can be predicted from another's."
#
# **Not well defined as printed**: α^(h) is a distribution over positions, not a random variable,
# and a conditional entropy needs a joint distribution of two random variables. It has to mean:
# A_h = the attention pattern of head h **as a function of the input** (a random variable over
# inputs), e.g. the position it attends to. Then H(A₁ | A₂) is **small when A₁ is predictable from
# A₂** — exactly when the text says redundancy is *high*. Toy: four tokens from {0, 1, 2, 3}, all
# 256 sequences equally likely; head "max" attends to the position of the (first) largest token
# (`argmax_position`), "max copy" is the same head twice, "min" attends to the smallest
# (`argmin_position`), "first" always to position 0.
#
# > **Glossary** · conditional entropy 条件熵 · attention pattern 注意力模式 · predictable 可预测 ·
# > random variable 随机变量

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
sequences = [tuple(int(t) for t in s) for s in torch.cartesian_prod(*[torch.arange(4)] * 4)]
jt_patterns = joint_table(
    sequences,
    {
        "max": argmax_position,
        "max copy": argmax_position,
        "min": argmin_position,
        "first": lambda x: 0,
    },
)
print(f"{'heads':>24} | {'Eq. (14.3.12)':>13} | {'mean I(A_h1; A_h2)':>18}")
redundancy = {}
for pair in (("max", "max copy"), ("max", "min"), ("max", "first")):
    redundancy[pair] = eq_14_3_12(jt_patterns, pair)
    print(
        f"{' + '.join(pair):>24} | {redundancy[pair]:13.3f} | {mean_pattern_information(jt_patterns, pair):18.3f}"
    )
assert abs(redundancy["max", "max copy"]) < 1e-9
assert redundancy["max", "min"] > redundancy["max", "first"] > 0.4

# %% [markdown] slideshow={"slide_type": "slide"}
# **Claim check — Thm. 14.3.3, Eq. (14.3.12) ✗.** Two identical heads — the most redundant pair
# there is — score **0**, the "least redundant" value, and pairing "max" with a head that carries
# nothing ("first") scores far above that pair (H(A_max)/4 ≈ 0.475), though below max + min. The
# sum also includes h₁ = h₂ terms, which are 0. **Correct statement**: redundancy of patterns is
# measured by the mutual information I(A_h1; A_h2) (or the normalised 1 − H(A_h1 | A_h2)/H(A_h1)),
# large when one pattern predicts the other; the printed average of conditional entropies
# measures how **un**predictable the heads are from each other.
#
# ## 6. Q, K, V and the bottleneck objectives (Def. 14.3.10, Lemma 14.3.13, Thm. 14.3.7, Lemma 14.3.14, Lemma 14.3.8, Thm. 14.3.4)
#
# $$I(Q; K) + I(K; V) + I(Q; V) - I(Q; K; V) \qquad (14.3.21)$$
#
# $$I(X; Y) \le \min\{I(X; K), I(X; V)\} + I(K; V) \qquad (14.3.22)$$
#
# $$\eta = \frac{I(Q; V)}{I(X; V)} \qquad (14.3.23) \qquad\qquad \max I(Z; Y) \ \text{ s.t. } \ I(Z; X) \le C \qquad (14.3.24)$$
#
# Q, K, V are functions of the same input X; all of these need a joint distribution, so again the
# toys use discrete tokens. (14.3.21) first, on random joint tables of three variables: by
# inclusion–exclusion it is exactly the **total correlation** H(Q) + H(K) + H(V) − H(Q, K, V) ≥ 0.
#
# > **Glossary** · total correlation 总相关 · data processing inequality 数据处理不等式 ·
# > information bottleneck 信息瓶颈 · convex hull 凸包 · deterministic function 确定性函数

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
worst = 0.0
for seed in range(20):
    p = torch.rand(3, 4, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(seed))
    table = JointTable(
        p / p.sum(), ("Q", "K", "V"), (list(range(3)), list(range(4)), list(range(2)))
    )
    worst = max(
        worst, abs(eq_14_3_21(table, "Q", "K", "V") - total_correlation(table, ["Q", "K", "V"]))
    )
print(
    f"Eq. (14.3.21) - total correlation over 20 random tables: max |difference| {'< 1e-12' if worst < 1e-12 else worst}"
)
assert worst < 1e-12

# K and V carry different tokens; the output reads both:  X = (x1, x2), K = x1, V = x2, Y = (K, V)
jt_kv = joint_table(
    bits(2),
    {"X": lambda x: x, "K": lambda x: x[0], "V": lambda x: x[1], "Y": lambda x: (x[0], x[1])},
)
I_XY = mutual_information(jt_kv.table, jt_kv.dim("X"), jt_kv.dim("Y"))
I_XK = mutual_information(jt_kv.table, jt_kv.dim("X"), jt_kv.dim("K"))
I_XV = mutual_information(jt_kv.table, jt_kv.dim("X"), jt_kv.dim("V"))
I_KV = mutual_information(jt_kv.table, jt_kv.dim("K"), jt_kv.dim("V"))
print(
    f"Eq. (14.3.22): I(X;Y) = {I_XY:.0f} bits, bound min(I(X;K), I(X;V)) + I(K;V) = {min(I_XK, I_XV) + I_KV:.0f}"
)
print(f"  correct: I(X;Y) <= I(X;K) + I(X;V) - I(K;V) = {I_XK + I_XV - I_KV:.0f}")
assert min(I_XK, I_XV) + I_KV < I_XY <= I_XK + I_XV - I_KV + 1e-12

# Thm. 14.3.7: a pointer query Q (which of two positions) retrieves that position's token
jt_ptr = joint_table(
    bits(3),  # (pointer, x1, x2)
    {"Q": lambda x: x[0], "V": lambda x: x[1:], "X": lambda x: x, "Z": lambda x: x[1 + x[0]]},
)
eta = mutual_information(jt_ptr.table, jt_ptr.dim("Q"), jt_ptr.dim("V")) / mutual_information(
    jt_ptr.table, jt_ptr.dim("X"), jt_ptr.dim("V")
)
delivered = mutual_information(
    jt_ptr.table, jt_ptr.dim("Z"), jt_ptr.dim("X"), given=jt_ptr.dim("Q")
)
print(
    f"Eq. (14.3.23): a pointer head copies the asked-for token: eta = {eta:.0f}, "
    f"yet I(Z; X | Q) = {delivered:.0f} bit = all of the asked-for token"
)
assert abs(eta) < 1e-9 and abs(delivered - 1) < 1e-9

# %% [markdown] slideshow={"slide_type": "-"}
# - **Def. 14.3.10, Eq. (14.3.21) ✓** once Q, K, V have a joint distribution: it is the total
#   correlation TC(Q, K, V) = H(Q) + H(K) + H(V) − H(Q, K, V), the information shared anywhere among
#   the three (≥ 0). For continuous Q, K, V that are deterministic functions of the same X every
#   term is infinite; it is meaningful for discrete tokens, or with noise.
# - **Lemma 14.3.13, Eq. (14.3.22) ✗.** X = (x₁, x₂), K = x₁, V = x₂, Y = (K, V): 2 bits pass, the
#   bound says 1. **Correct** (when Y is computed from K and V and these are functions of X):
#   I(X; Y) ≤ I(X; K, V) = I(X; K) + I(X; V) − I(K; V) — a sum minus the overlap, not a min plus it.
# - **Thm. 14.3.7, Eq. (14.3.23) ⚠.** η ≤ 1 holds (V = g(X), so I(Q; V) ≤ H(V) = I(X; V)), but η does
#   not measure transfer: a head whose query is a pure pointer (independent of the contents) and that
#   copies exactly the asked-for token has η = 0, and Q = V gives η = 1 without moving anything.
#   What the head delivers is the output's information about the input given the question,
#   I(Z; X | Q): 1 bit here, all there is.
# - **Lemma 14.3.14, Eq. (14.3.24) ⚠** — the information-bottleneck problem (Tishby et al. 1999), an
#   objective one *may* impose, not what attention does by itself: plain training maximises a bound
#   on I(Z; Y) with no constraint. For a deterministic Z = f(X) of discrete X, I(Z; X) = H(Z), so the
#   constraint limits the entropy of the output; for continuous X it is infinite (next cell).
# - **Lemma 14.3.8, Eq. (14.3.13) ⚠ not well defined as printed.** "I(QK; X)" of the query–key
#   "interaction space": QK is a deterministic function of X, so I(QK; X) = H(QK) for discrete inputs
#   and ∞ for continuous ones (binning at finer and finer widths grows without limit, below). As a
#   *loss* with this sign it would have to be *maximised*. It must mean the IB Lagrangian
#   max I(Z; Y) − β I(Z; X) over a **stochastic** encoder p(z | x) (e.g. with noise or dropout), or
#   H(attention pattern) for discrete routing.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
print("X uniform on [0, 1], f(X) = X binned into k bins (deterministic): I(f(X); X) = H(f(X))")
for k in (10, 100, 1000, 10000):
    print(
        f"  k = {k:5d} bins: {binned_self_information(100000, k):6.2f} bits (log2 k = {math.log2(k):.2f})"
    )

# %% [markdown] slideshow={"slide_type": "-"}
# **Thm. 14.3.4 (key and value capacity)**: "C_K = log |𝒦| ≈ d_k log₂ M; C_V = H(V) ≤ d_v log₂ M" for
# M possible values per coordinate. As counts ✓: at most M^{d_k} distinct keys and H(V) ≤ log₂ M^{d_v}.
# As the capacity of **selection by dot product** ⚠: a key is the arg max of q·k for some query only
# if it is a vertex of the keys' convex hull (a key inside the hull is an average of others, never
# strictly above all of them). On the grid {0, …, M−1}^{d_k} only the 2^{d_k} corners are vertices —
# d_k bits, whatever M; keys on a sphere are all selectable, however many.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
print(
    f"{'M':>2} {'d_k':>3} | {'keys M^d_k':>10} {'d_k log2 M':>10} | {'selectable by argmax':>20} {'bits':>5}"
)
for M, d_k in ((2, 2), (3, 2), (4, 2), (3, 3), (4, 3)):
    keys = grid_keys(M, d_k)  # (M^d_k, d_k)
    chosen = int(argmax_selectable_keys(keys).sum())
    print(
        f"{M:2d} {d_k:3d} | {len(keys):10d} {d_k * math.log2(M):10.2f} | {chosen:20d} {math.log2(chosen):5.2f}"
    )
    assert chosen == 2**d_k
angles = torch.arange(50, dtype=torch.float64) * 2 * math.pi / 50
circle = torch.stack([angles.cos(), angles.sin()], dim=1)  # 50 keys on the unit circle, d_k = 2
print(f"50 unit keys in d_k = 2: {int(argmax_selectable_keys(circle).sum())} selectable")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 7. Pruning by information, on toy heads (App. 14.3.1, Alg. 14.3.1)
#
# App. 14.3.1 scores each head by its **net contribution** net_h = I(Z_h; Y) − Σ_{h'≠h} I(Z_h; Z_h')
# and prunes the smallest first (its comment; the pseudo-code sorts in descending order and returns
# the ranking, so pruning takes it from the end). Alg. 14.3.1 adds a marginal term
# I_total − I(Z_{−h}; Y) and combines the three with weights λ.
#
# A toy shows what a one-shot score misses. Three heads: A and A′ both read x₁ (copies), D reads x₃;
# the target is Y = (x₁, x₃ passed through a channel that flips it with probability 0.3), so D is
# worth 1 − h(0.3) ≈ 0.119 bits and A or A′ 1 bit. Copies look redundant **to each other**, so both
# get net 0 < net_D, and removing two heads removes both copies:

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
jt_prune = joint_table(
    bits(3),  # (x1, x3, flip)
    {
        "A": lambda x: x[0],
        "A'": lambda x: x[0],
        "D": lambda x: x[1],
        "Y": lambda x: (x[0], x[1] ^ x[2]),
    },
    weights=lambda x: 0.3 if x[2] else 0.7,
)
toy_heads = ["A", "A'", "D"]
print("net_h:", {h: round(v, 3) for h, v in net_contributions(jt_prune, toy_heads, "Y").items()})
for label, removed in (
    ("App. 14.3.1, scores computed once", prune_by_net_contribution(jt_prune, toy_heads, "Y", 2)),
    (
        "scores recomputed after each removal",
        prune_by_net_contribution(jt_prune, toy_heads, "Y", 2, recompute=True),
    ),
):
    kept = [h for h in toy_heads if h not in removed]
    print(
        f"{label:>38}: remove {removed}, keep {kept}: I(kept; Y) = {information(jt_prune, kept, 'Y'):.3f} bits"
    )
best, best_info = best_heads_to_keep(jt_prune, toy_heads, "Y", 1)
print(f"{'best single head to keep':>38}: {best}, {best_info:.3f} bits")
assert prune_by_net_contribution(jt_prune, toy_heads, "Y", 2) == ["A", "A'"]


# %% [markdown] slideshow={"slide_type": "-"}
# Alg. 14.3.1's pseudo-code, transcribed line for line (indentation included) as
# `alg_14_3_1_as_printed`, shown and run on this toy: the score line sits **after** the loop, so
# only the last head gets a score, and `sorted_heads[low_score_ratio:]` slices with a ratio.
# (App. 14.3.1's pseudo-code runs as transcribed: it is `net_contributions`.)

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
print(inspect.getsource(alg_14_3_1_as_printed))
try:
    alg_14_3_1_as_printed(toy_heads, jt_prune, "Y", low_score_ratio=0.5)
    print("low_score_ratio = 0.5: runs")
except TypeError:
    print("low_score_ratio = 0.5: raises TypeError (a float used as a slice index)")
candidates, scores = alg_14_3_1_as_printed(toy_heads, jt_prune, "Y", low_score_ratio=1)
print(
    f"low_score_ratio = 1: scores computed for {list(scores)} only; prune candidates {candidates}"
)
assert list(scores) == ["D"] and candidates == []

# %% [markdown] slideshow={"slide_type": "slide"}
# **Claim check — App. 14.3.1 ⚠** (pseudo-code runs; its ranking is one-shot): pruning both copies
# leaves 0.119 bits where keeping one copy keeps 1 bit. Re-scoring after each removal fixes this toy.
# The redundancy sum also mixes scales: I(Z_h; Z_h') can be as large as H(Z_h), far above the
# I(Z_h; Y) ≤ H(Y) it is subtracted from, and a head that shares its information with many others is
# charged once per partner (§8 shows what that does to a trained model). **Alg. 14.3.1 ✗ as printed**
# (score outside the loop, a ratio used as a slice index); with the score inside the loop and
# `sorted_heads[-round(ratio · H):]` as candidates it runs. Its marginal term I_total − I(Z_{−h}; Y),
# what head h adds given all the others, is better founded than net_h, but it is one-shot too: here
# each copy adds 0 given the other, so ranked once it would also drop both. §8 estimates it.
#
# ## 8. Reproduction: head pruning (Michel et al. 2019)
#
# **Paper** (Michel, Levy & Neubig 2019, "Are Sixteen Heads Really Better than One?"): put a gate ξ_h
# on every head, score it by I_h = E_x |∂L(x)/∂ξ_h| (a first-order estimate of the loss change when
# the head is removed), normalise the scores within each layer (ℓ2), and prune the lowest first —
# without retraining, in one order computed once. They removed up to 20 % (WMT) and 40 % (BERT)
# of the heads without a noticeable loss (their Fig. 3), and they set this order beside the order
# given by single-head ablation (the accuracy drop when each head alone is removed), which needs
# one evaluation per head instead of one backward pass. They did not compare with random orders;
# that a good order beats them is the second effect asserted here.
#
# **Setup** (CPU): sort 8 tokens from a vocabulary of 8 (`sort_batch`); `HeadGatedEncoder` — token
# embedding + sinusoidal positions, 2 Pre-LN layers of `GatedMultiHeadAttention` with **16 heads of
# size 4** (d = 64) and a ReLU FFN (128), trained with `attncourse.losses.cross_entropy`, AdamW and a
# one-cycle schedule (3·10⁻³), clip 1, batch 64, 600 steps; seeds 0 and 1. Importance and the
# information scores are computed on one batch of 256 sequences, accuracy on another 256.
# In a first setup (sorting 10 tokens from 16, 8 heads per layer, 1000 steps) the model used almost
# every head: removing 2 of its 16 heads in Michel's order already cost 2–8 points of accuracy, and
# in an earlier trial Michel's order did not beat random orders on one of two seeds. An easier task
# with more, smaller heads leaves the spare heads that Michel et al. found in large models.
#
# **Orders compared**: (a) Michel et al.'s I_h; (b) App. 14.3.1's net_h, with I(Z_h; Y) and
# I(Z_h; Z_h') estimated by k-means quantisation of the head outputs (16 cells) and plug-in counting
# with the Miller–Madow correction (`information_scores`); (c) Alg. 14.3.1's marginal term,
# I_total − I(Z_{−h}; Y), estimated with the model itself as the decoder: I(Z; Y) ≥ H(Y) − CE, so the
# marginal is the rise of the cross-entropy when head h alone is removed; (d) 8 random orders.
#
# **Pass** (both seeds): full accuracy ≥ 0.97; with Michel's order a quarter of the heads (8 of 32)
# go with accuracy still ≥ 0.9, and Michel's order beats the mean random order by ≥ 0.08 on average
# over 4–12 heads removed; the marginal order keeps ≥ 0.15 over random at 16 removed; App. 14.3.1's
# order is no better than random (mean gap over 1–16 removed ≤ 0.03). (Checked outside the notebook,
# the same asserts also held on seeds 2, 3 and 4, and on PyTorch's portable kernels.)
#
# > **Glossary** · head pruning 头剪枝 · importance score 重要性得分 · first-order (Taylor) estimate
# > 一阶（泰勒）估计 · ablation 消融 · quantisation 量化 · plug-in estimator 插入式估计量 ·
# > bias correction 偏差校正 · progress bar 进度条

# %% [markdown] slideshow={"slide_type": "-"}
# First the estimator, on samples of a table whose information is known exactly, and on quantised
# continuous vectors (8 well-separated clusters, one per class, vs. vectors independent of the class):

# %% slideshow={"slide_type": "-"}
# NBVAL_IGNORE_OUTPUT
noisy = torch.full((8, 8), 0.3 / 7, dtype=torch.float64)
noisy.fill_diagonal_(0.7)
noisy = noisy / 8  # p(y, z): z = y with probability 0.7, else another class
exact = mutual_information(noisy, 0, 1)
draws = sample_joint(noisy, 2048, seed=0)  # (2048, 2)
estimate = plugin_mutual_information(draws[:, 0], draws[:, 1])
raw = plugin_mutual_information(draws[:, 0], draws[:, 1], correct=False)
print(
    f"exact {exact:.3f} bits | plug-in {raw:.3f} | with Miller-Madow {estimate:.3f} (2048 samples)"
)
g = torch.Generator().manual_seed(0)
labels = torch.randint(8, (2048,), generator=g)
centres = 4 * torch.randn(8, 4, generator=g)
separated = centres[labels] + 0.1 * torch.randn(2048, 4, generator=g)
unrelated = torch.randn(2048, 4, generator=g)
i_sep = plugin_mutual_information(kmeans_codes(separated, 16), labels)
i_unrel = plugin_mutual_information(kmeans_codes(unrelated, 16), labels)
print(f"k-means + plug-in: separated clusters {i_sep:.3f} bits (H(Y) = 3), unrelated {i_unrel:.3f}")
assert abs(estimate - exact) < 0.06 and i_sep > 2.8 and i_unrel < 0.1

# %% slideshow={"slide_type": "-"}
# NBVAL_IGNORE_OUTPUT
models, losses = {}, {}
for seed in (0, 1):
    models[seed] = chapter_model(seed)
    losses[seed] = train_model(models[seed], steps=600, seed=seed, desc=f"sort, seed {seed}")
score_data = sort_batch(256, torch.Generator().manual_seed(7))
eval_data = sort_batch(256, torch.Generator().manual_seed(8))
results = {seed: prune_all(models[seed], score_data, eval_data, num_random=8) for seed in (0, 1)}

# %% slideshow={"slide_type": "-"}
# NBVAL_IGNORE_OUTPUT
ks = [0, 2, 4, 6, 8, 10, 12, 16, 24, 32]
for seed, result in results.items():
    print(
        f"seed {seed}: accuracy after removing k of 32 heads (final training loss {np.mean(losses[seed][-20:]):.3f})"
    )
    print(f"  {'k':>26}: " + " ".join(f"{k:5d}" for k in ks))
    for name, acc in result.accuracy.items():
        print(f"  {name:>26}: " + " ".join(f"{float(acc[k]):5.2f}" for k in ks))
for seed, r in results.items():
    acc, rnd = r.accuracy, r.accuracy["random"]
    gap_michel = float((acc["Michel et al."][4:13] - rnd[4:13]).mean())
    gap_info = float((acc["information (App. 14.3.1)"][1:17] - rnd[1:17]).mean())
    assert acc["Michel et al."][0] >= 0.97, seed
    assert acc["Michel et al."][8] >= 0.9 and gap_michel >= 0.08, (seed, gap_michel)
    assert acc["marginal (Alg. 14.3.1)"][16] - rnd[16] >= 0.15, seed
    assert gap_info <= 0.03, (seed, gap_info)
print(
    "Michel's order: 8 of 32 heads go at a small cost, far better than random; App. 14.3.1: not better than random"
)

# %% slideshow={"slide_type": "subslide"}
fig, axes = plt.subplots(1, 2, figsize=(11, 3.4), sharey=True)
colours = {
    "Michel et al.": "tab:blue",
    "information (App. 14.3.1)": "tab:orange",
    "marginal (Alg. 14.3.1)": "tab:green",
}
for ax, (seed, r) in zip(axes, results.items()):
    k_axis = range(33)
    ax.fill_between(
        k_axis,
        r.random_accuracy.min(0).values,
        r.random_accuracy.max(0).values,
        color="0.85",
        label="random orders (range)",
    )
    ax.plot(k_axis, r.accuracy["random"], color="0.4", lw=1.5, label="random orders (mean)")
    for name, colour in colours.items():
        ax.plot(k_axis, r.accuracy[name], color=colour, lw=2, label=name)
    ax.set(xlabel="heads removed (of 32)", title=f"seed {seed}", xlim=(0, 32), ylim=(0, 1.02))
    ax.grid(True, color="0.92")
axes[0].set_ylabel("accuracy (sorted tokens)")
axes[0].legend(fontsize=7, loc="lower left")
plt.tight_layout()
plt.show()

# %% [markdown] slideshow={"slide_type": "subslide"}
# What the measurement says (the numbers differ a little between CPUs; the asserts hold with
# margin):
#
# - **Michel et al.'s effect is reproduced**: in their order a quarter of the heads go for a few
#   points of accuracy, while random orders lose several times more; the gradient score, one
#   backward pass, ranks heads well.
# - **Alg. 14.3.1's marginal term** (the loss rise when a head alone is removed, i.e. the
#   conditional information I(Z_h; Y | Z_−h) with the model as decoder) also beats random orders
#   by a wide margin (asserted at 16 heads removed); it costs one evaluation per head. Against
#   Michel's order neither is best everywhere: in these runs the marginal order keeps more
#   accuracy in the middle of the range (around 12–16 heads removed) and can keep less once most
#   heads are gone (24 removed) — a single-head score says nothing about how heads fail together.
#   (Michel et al. compare the same two kinds of order, gradient score and single-head ablation.)
# - **App. 14.3.1's net contribution is no better than random** (on these two seeds it is mostly
#   worse): the redundancy sum dominates (Σ over 31 partners of I(Z_h; Z_h') comes to ten bits or
#   more, while I(Z_h; Y) ≤ 3), so it prunes first the heads that share the most with others —
#   which in a trained model are the informative ones. Direct information and pairwise overlaps
#   are the wrong quantities: what matters is what a head adds **given the others** (§4, §7).
#
# **Claim check — source 003, "multi-head attention … robustness: lowers the risk of a single
# head" (鲁棒性增强) ⚠ only for the right heads, and only with heads to spare.** The trained model
# does tolerate losing heads: in Michel's order a quarter of them (8 of 32) go with accuracy still
# ≥ 0.9 on both seeds (asserted). But the heads are not interchangeable: random orders lose much
# more for the same number of heads (Michel's order is ahead by ≥ 0.08 on average over 4–12
# removed, asserted), and with most heads gone every order fails. In the first setup, with fewer
# heads per layer, removing 2 of 16 already cost points. What survives pruning is spare capacity
# of a model with more heads than its task needs, found by a good ranking — not a guarantee that
# multi-head attention gives by itself. **"Diversity of representation subspaces"
# (表征子空间多样性) ✓ as a capacity**: each head writes its own term from its own subspace, and
# two heads do what one head of any size cannot (§1–§2); whether trained heads *use* different
# subspaces is an empirical matter, and the diversity loss of App. 14.3.5 does not enforce it (§9).

# %% slideshow={"slide_type": "subslide"}
# NBVAL_IGNORE_OUTPUT
r0 = results[0]
fig, ax = plt.subplots(1, 3, figsize=(12, 3))
for a, (values, title) in zip(
    ax,
    (
        (r0.importance, "Michel et al. I_h (layer-normalised)"),
        (r0.information.net.view(2, 16), "App. 14.3.1 net_h (bits)"),
        (r0.marginal, "Alg. 14.3.1 marginal (bits)"),
    ),
):
    image = a.imshow(values.numpy(), aspect="auto", cmap="viridis")
    a.set(yticks=[0, 1], yticklabels=["layer 1", "layer 2"], xlabel="head", title=title)
    a.set_xticks(range(0, 16, 3), [str(h + 1) for h in range(0, 16, 3)])  # heads 1..16
    fig.colorbar(image, ax=a, fraction=0.046)
plt.tight_layout()
plt.show()
rank_corr = np.corrcoef(
    r0.importance.flatten().argsort().argsort(), r0.marginal.flatten().argsort().argsort()
)[0, 1]
print(f"seed 0: rank correlation of Michel's I_h with the marginal term: {rank_corr:.2f}")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 9. The regularisers of §14.3.7 (Def. 14.3.16, Lemma 14.3.22, App. 14.3.5)
#
# $$\mathcal{L}_{\text{attn-ent}} = H(\alpha) = -\sum_i \alpha_i \log \alpha_i \qquad (14.3.42)$$
#
# Lemma 14.3.22: "L high: encourages spread attention; L low: allows concentrated attention."
# App. 14.3.5: "compute the difference of the entropies of different heads, encouraging the heads to
# learn different types of attention patterns", with the code below. First, the code **as printed**
# (`diversity_attention_loss`; docstring shortened, comments translated), on random attention:
#
# > **Glossary** · regulariser 正则项 · entropy loss 熵损失 · diversity 多样性 · variance 方差 ·
# > gradient descent 梯度下降 · overlap 重叠

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
print(inspect.getsource(diversity_attention_loss))
scores0 = 1.5 * torch.randn(
    2, 4, 6, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(3)
)
w0 = softmax(scores0, dim=-1)  # (2, 4, 6, 6) four heads
print(f"diversity loss of random attention: {float(diversity_attention_loss(w0)):.4f}")
same = w0[:, :1].expand(-1, 4, -1, -1)  # four identical heads
rolled = torch.stack([w0[:, 0].roll(k, dims=-1) for k in range(4)], dim=1)  # same shape, other keys
print(f"four identical heads: {float(diversity_attention_loss(same)):.4f}")
print(
    f"four heads reading different keys, equally sharp: {float(diversity_attention_loss(rolled)):.4f}"
)
print(
    f"overlap loss, identical vs different keys: {float(overlap_loss(same)):.3f} vs {float(overlap_loss(rolled)):.3f}"
)
assert float(diversity_attention_loss(same)) < 1e-12
assert float(diversity_attention_loss(rolled)) < 1e-12

# %% [markdown] slideshow={"slide_type": "-"}
# The loss is the **variance of the heads' entropies**. It cannot tell four copies of one head from
# four heads that read different keys with the same sharpness: both score 0. Now minimise it by
# gradient descent on free scores (as adding it to a training loss would), maximise it, and minimise
# an **overlap** loss instead — the mean over queries and distinct head pairs of ⟨α_i^h, α_i^h'⟩
# (`overlap_loss`; the disagreement regulariser of Li et al. 2018, in the spirit of Lin et al. 2017's
# ‖AAᵀ − I‖²), which is 1 for identical one-hot heads and 0 when no two heads share a key. The
# entropy loss of Def. 14.3.16 is run both ways too.

# %% slideshow={"slide_type": "-"}
# NBVAL_IGNORE_OUTPUT
start, after_min = descend(scores0, diversity_attention_loss, steps=300, lr=0.5)
_, after_max = descend(scores0, diversity_attention_loss, steps=300, lr=0.5, sign=-1.0)
near_same = scores0[:, :1].expand(-1, 4, -1, -1) + 0.01 * torch.randn(
    2, 4, 6, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(4)
)
same_start, after_overlap = descend(near_same, overlap_loss, steps=300, lr=20.0)
_, after_div_from_same = descend(near_same, diversity_attention_loss, steps=300, lr=0.5)
_, ent_min = descend(scores0, entropy_loss, steps=300, lr=10.0)
_, ent_max = descend(scores0, entropy_loss, steps=300, lr=10.0, sign=-1.0)
print("head entropies (nats), random start:      ", head_entropies(start).numpy().round(3))
print("  after minimising the diversity loss:     ", head_entropies(after_min).numpy().round(3))
print("  after maximising it:                     ", head_entropies(after_max).numpy().round(3))
print(f"near-identical heads: overlap {float(overlap_loss(same_start)):.3f}")
print(f"  minimise the overlap loss  -> overlap {float(overlap_loss(after_overlap)):.3f}")
print(f"  minimise the diversity loss-> overlap {float(overlap_loss(after_div_from_same)):.3f}")
print(
    f"entropy loss H(alpha): start {float(entropy_loss(start)):.3f}, minimised {float(entropy_loss(ent_min)):.3f}, "
    f"maximised {float(entropy_loss(ent_max)):.3f} (log 6 = {math.log(6):.3f})"
)
spread_min, spread_max = (
    float(head_entropies(after_min).std()),
    float(head_entropies(after_max).std()),
)
assert spread_min < 1e-3 < 0.1 < spread_max
assert float(overlap_loss(after_overlap)) < 0.5 * float(overlap_loss(same_start))
assert abs(float(overlap_loss(after_div_from_same)) - float(overlap_loss(same_start))) < 0.02
assert float(entropy_loss(ent_min)) < 0.5 * float(entropy_loss(start)) and float(
    entropy_loss(ent_max)
) > 0.95 * math.log(6)

# %% [markdown] slideshow={"slide_type": "slide"}
# - **Def. 14.3.16, Eq. (14.3.42) ✓; Lemma 14.3.22 ⚠**: what matters is the **sign** with which the
#   term enters the loss. Minimised (+λH), it **concentrates** attention (H drops towards 0);
#   to spread attention you must subtract it (−λH, maximising the entropy towards log n). "L high
#   encourages spread" describes the value, not the effect of the regulariser.
# - **App. 14.3.5 ✗.** Minimising the printed loss makes the heads' entropies **equal** (spread of
#   the entropies → 0) — the opposite of "encouraging differences"; maximising it spreads the
#   entropies (some heads sharp, some flat). Either way it only sees **how sharp** each head is, not
#   **where** it looks: identical heads and heads reading different keys score the same, and
#   minimising it leaves near-identical heads near-identical (overlap unchanged). To make heads
#   attend to different positions, penalise their overlap (`overlap_loss`, above: the overlap of
#   near-identical heads falls by more than half). Note also `torch.var` is the unbiased (n − 1)
#   variance, and the per-head entropy is **summed** over queries, so the loss grows with length.
#
# ## 10. The sparse-attention claims of §14.3.7 (Def. 14.3.17, Lemma 14.3.23, Thm. 14.3.15, App. 14.3.6)
#
# These belong to chapter 10 (sparse, learnable and efficient attention), which treats them in
# full; the verdicts, with the quickest check of each:

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
S = torch.tensor([3.0, 1.0, -2.0, 0.5], dtype=torch.float64)
M = torch.tensor([1.0, 0.0, 1.0, 0.0], dtype=torch.float64)  # keep keys 0 and 2
print("Softmax(M * S)  (Eq. 14.3.43):", softmax(M * S, dim=-1).numpy().round(4))
print("softmax with the mask        :", softmax(S, dim=-1, mask=M.bool()).numpy().round(4))
# Lemma 14.3.23: Y = x1; dense attention averages x1 and x2, sparse attention reads x1 only
jt_sparse = joint_table(
    bits(2), {"dense": lambda x: (x[0] + x[1]) / 2, "sparse": lambda x: x[0], "Y": lambda x: x[0]}
)
I_dense = mutual_information(jt_sparse.table, jt_sparse.dim("dense"), jt_sparse.dim("Y"))
I_sparse = mutual_information(jt_sparse.table, jt_sparse.dim("sparse"), jt_sparse.dim("Y"))
print(f"Lemma 14.3.23: I_sparse = {I_sparse:.2f} bits > I_dense = {I_dense:.2f} bits")
T_iter, T0 = 10, 1.0
temperatures = [T0 * (1 - t / T_iter) for t in range(1, T_iter + 1)]
sample = F.gumbel_softmax(torch.zeros(4, dtype=torch.float64), tau=temperatures[-1])
print(
    f"App. 14.3.6: temperature at the last step {temperatures[-1]}; gumbel_softmax there gives {sample.numpy()}"
)
assert softmax(M * S, dim=-1)[1] > 0 and I_sparse > I_dense and torch.isnan(sample).any()

# %% [markdown] slideshow={"slide_type": "slide"}
# - **Def. 14.3.17, Eq. (14.3.43) ✗**: M ⊙ S turns a masked score into **0**, not −∞, so masked
#   keys keep weight e⁰/Z (here key 1 gets more weight than the kept key 2). **Correct**:
#   softmax(S + log M) with log 0 = −∞, i.e. `masked_fill` (what `attncourse.masks` and the
#   `mask=` argument do).
# - **Lemma 14.3.23, Eq. (14.3.44) ✗ in general**: a sparse pattern can carry **more** information
#   about Y than a dense one (the dense average blurs x₁ with x₂). True only as "the best dense
#   pattern is at least as good as the best sparse one" (a mask only restricts the choice).
# - **Thm. 14.3.15, Eq. (14.3.45) ⚠**: without a sparsity constraint (‖M‖₀ ≤ k) or penalty the
#   arg min is the dense mask M = 1 (loss 0): trivial as printed.
# - **App. 14.3.6 ✗ as printed**: `mask * S` has the same defect as (14.3.43); the temperature
#   T(1 − t/T_iter) reaches 0 at the last step, where Gumbel-softmax divides by zero (NaN above);
#   and it returns the last random sample, not the learned logits. Chapter 10 builds a working
#   version.
#
# ## 11. Widget: switch heads on and off
#
# The trained model of seed 0. Each toggle keeps (on) or removes (off) one head ("1.4" is layer 1,
# head 4; layers and heads count from 1, as in the text); "prune in the order … first k heads"
# removes the first k heads of an order from §8 as well. The top row of the figure shows every
# head's attention on one sequence (rows = queries, columns = keys; a removed head is faded and
# crossed), the bottom the pruning curves of §8 with the current mask as a red dot.
# Things to try:
# 1. Remove the 8 lowest-ranked heads in Michel's order, then add the next few: where does it break?
# 2. The same k in App. 14.3.1's order: which heads go first, and what happens to the layer-2
#    patterns when layer-1 heads are removed?
# 3. Switch off all heads of layer 1: layer 2 can no longer find the right tokens to copy.
# 4. Find a head whose removal alone costs the most (the marginal order lists it last).
#
# Behind the widget: `head_mask_state` (the numbers) and `head_mask_widget_update` (numbers +
# redraw); the tests call both.

# %% slideshow={"slide_type": "slide"}
# NBVAL_IGNORE_OUTPUT
model0 = models[0]
curves0 = dict(results[0].accuracy)
head_mask_widget(model0, eval_data, curves0, results[0].orders)

# %% [markdown] slideshow={"slide_type": "subslide"}
# A static snapshot (for printed notes), and the cost of one widget update:

# %% slideshow={"slide_type": "subslide"}
# NBVAL_IGNORE_OUTPUT
snapshot = HeadMaskPlot(2, 16, 8, curves0, pyplot=True)
michel_8 = head_mask(2, 16, order=results[0].orders["Michel et al."], k=8)  # 8 heads removed
snapshot.update(head_mask_state(model0, *eval_data, michel_8))
plt.show()
timing_plot = HeadMaskPlot(2, 16, 8, curves0)
head_mask_widget_update(timing_plot, model0, eval_data)  # the first draw caches the background
times = []
for step in range(20):
    start_time = time.perf_counter()
    head_mask_widget_update(
        timing_plot,
        model0,
        eval_data,
        removed=[(step % 2, step % 16)],
        order=results[0].orders["Michel et al."],
        k=step % 20,
    )
    times.append(time.perf_counter() - start_time)
median_ms = 1000 * float(np.median(times))
print(
    f"one widget update (forward pass + redraw + PNG): median {median_ms:.1f} ms over 20 updates "
    f"({'within' if median_ms <= 100 else 'OVER'} the 100 ms budget)"
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 12. Claim checks at a glance
#
# | source claim | verdict | correct statement / condition |
# |---|---|---|
# | Def. 14.3.6, Eq. (14.3.10): MultiHead = W_O [z_1; …; z_h] | ✓ | = Σ_h W_O^h z_h, a sum of per-head terms (checked against `MultiHeadAttention`) |
# | Lemma 14.3.7, Eq. (14.3.11): I(Z;Y) = Σ I(Z_h;Y) − Σ_{h1≠h2} I(Z_h1;Z_h2;Y) | ✗ | ordered pairs double-count; exact for 2 heads with the pair once; ≥ 3 heads need higher-order co-information; the term is redundancy − synergy |
# | Thm. 14.3.3, Eq. (14.3.12): redundancy = mean H(α^(h1) \| α^(h2)) | ✗ (and ill-defined) | α must be read as a random variable over inputs; then identical heads score 0: use I(A_h1; A_h2) |
# | App. 14.3.1: prune by net_h = I(Z_h;Y) − Σ I(Z_h;Z_h') | ⚠ | runs; one-shot ranking prunes both copies of a needed head; on a trained model no better than random |
# | Lemma 14.3.8, Eq. (14.3.13): IB loss with I(QK; X) | ⚠ ill-defined | I(f(X); X) = H(f(X)) (discrete) or ∞ (continuous); needs a stochastic encoder; it is maximised, not minimised |
# | Thm. 14.3.4: C_K ≈ d_k log₂ M, C_V = H(V) ≤ d_v log₂ M | ✓ / ⚠ | bounds on counts ✓; selectable by arg max: only hull vertices (2^{d_k} on a grid) |
# | Def. 14.3.10, Eq. (14.3.21) | ✓ | equals the total correlation H(Q)+H(K)+H(V)−H(Q,K,V) |
# | Lemma 14.3.13, Eq. (14.3.22) | ✗ | I(X;Y) ≤ I(X;K) + I(X;V) − I(K;V) (Y computed from K, V; K, V functions of X) |
# | Thm. 14.3.7, Eq. (14.3.23): η = I(Q;V)/I(X;V) | ⚠ | η ≤ 1 holds; η = 0 for a perfect pointer head: not a transfer efficiency |
# | Lemma 14.3.14, Eq. (14.3.24) | ⚠ | the IB problem, an optional objective; I(Z;X) = H(Z) for deterministic Z |
# | Cor. 14.3.4, Eq. (14.3.25) | ✗ | no Y in the subtracted term; a lower bound for 2 heads (pair once), not for 3 |
# | Def. 14.3.11, Eq. (14.3.26) | ✓ | it is the co-information I(Z_h1; Z_h2; Y) |
# | Lemma 14.3.15: high complementarity = different information | ✗ | reversed: high = redundant, 0 = independent pieces, < 0 = synergy |
# | Thm. 14.3.8, Eq. (14.3.27) | ✗ / ✓ | with Δ_h = I(Z_h; Y \| Z_<h) the sum is exact; "uniform Δ_h" is not a theorem (order-dependent) |
# | Def. 14.3.16, Eq. (14.3.42) | ✓ | a definition |
# | Lemma 14.3.22 | ⚠ | minimising +H concentrates, maximising spreads: the sign decides |
# | App. 14.3.5: diversity loss | ✗ | minimising equalises head entropies; blind to where heads look; penalise overlap instead |
# | Def. 14.3.17, Eq. (14.3.43): Softmax(M ⊙ S) | ✗ | softmax(S + log M), masked scores −∞ |
# | Lemma 14.3.23, Eq. (14.3.44): I_sparse ≤ I_dense | ✗ | only for the best pattern of each kind |
# | Thm. 14.3.15, Eq. (14.3.45) | ⚠ | trivial (M = 1) without a sparsity constraint |
# | App. 14.3.6: learnable sparse attention | ✗ | mask ⊙ S, temperature → 0 (NaN), returns a sample (chapter 10) |
# | Alg. 14.3.1 | ✗ as printed / ✓ fixed | score outside the loop, ratio as slice index; its marginal term ranks heads far better than random (neither it nor Michel's score is best at every k) |
# | 003 (从单头到多头): multi-head gives diversity of representation subspaces | ✓ as a capacity | each head adds its own subspace's term; two heads copy both neighbours, one head of any size cannot (§1–§2); not enforced by App. 14.3.5's loss |
# | 003 (从单头到多头): robustness, less risk from a single head | ⚠ | a quarter of the heads can go at a small cost, but only in a good order (random orders lose much more) and only with heads to spare (§8) |
#
# Measured effects (two seeds, asserted with margins): one head of any size explains ≤ half of
# [x_{i−1}; x_{i+1}], two heads all of it; a generic n × n pattern needs head size n − 1; Michel et
# al.'s order removes a quarter of the heads at a small cost and beats random orders by a wide
# margin, as does the marginal order of Alg. 14.3.1; App. 14.3.1's information order does not
# beat random.

# %% [markdown] slideshow={"slide_type": "skip"}
# ## 13. Exercises (graded)
#
# Five exercises, 11 points. Write your code between the lines marked for it, run the cell, then
# run the check cell under it: it tests your function on random and edge inputs and tells you
# precisely what is wrong. When graded, more tests (hidden here) run on other inputs, so make your
# function correct in general, not just for the visible checks. Exercises 3 and 4 are from scratch:
# the checks fail if you call `attncourse.metrics` (`entropy`, `mutual_information`,
# `co_information`).

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 1 (2 points) — each head's term in the output, Eq. (14.3.10)
# `my_head_terms(z, W_O)`: z (B, H, T, d_h) holds every head's output, W_O (d, d) with d = H·d_h is
# the output projection (as `nn.Linear(d, d).weight`, so the output is concat(z) @ W_Oᵀ). Return
# (B, H, T, d): the term head h adds to the output (without bias), so that the sum over heads is the
# multi-head output. Which part of W_O belongs to head h?


# %% nbgrader={"grade": false, "grade_id": "ch06_head_terms", "locked": false, "schema_version": 3, "solution": true} slideshow={"slide_type": "skip"}
def my_head_terms(z, W_O):
    """z (B, H, T, d_h), W_O (d, d) -> (B, H, T, d): z_h @ (W_O[:, h*d_h:(h+1)*d_h])^T."""
    ### BEGIN SOLUTION
    B, H, T, d_h = z.shape
    blocks = W_O.reshape(W_O.shape[0], H, d_h)  # (d, H, d_h): column block h belongs to head h
    return torch.einsum("bhtk,dhk->bhtd", z, blocks)  # (B, H, T, d)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch06_head_terms_test", "locked": true, "points": 2, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"}
from attncourse.exercises.ch06 import check_head_terms

check_head_terms(my_head_terms)
### BEGIN HIDDEN TESTS
import importlib

import attncourse.exercises.ch06 as ex
import attncourse.exercises.engine as engine

engine = importlib.reload(engine)
ex = importlib.reload(ex)
ex.check_head_terms(my_head_terms, seed=61)
### END HIDDEN TESTS

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 2 (2 points) — the head size a pattern needs (Bhojanapalli et al. 2020)
# `my_pattern_head_size(P)`: P (n, n) float64, a strictly positive row-stochastic attention matrix.
# Return the smallest d_k for which some queries and keys of size d_k give softmax(Q Kᵀ/√d_k) = P
# exactly, as an `int` (treat singular values below 1e-9 · max(1, the largest) as 0). Think about
# which score matrices give the same softmax (§3).


# %% nbgrader={"grade": false, "grade_id": "ch06_pattern_head_size", "locked": false, "schema_version": 3, "solution": true} slideshow={"slide_type": "skip"}
def my_pattern_head_size(P):
    """P (n, n) positive, rows sum to 1 -> the least d_k (int) of a head producing P exactly."""
    ### BEGIN SOLUTION
    log_p = torch.log(P)
    centred = log_p - log_p.mean(dim=1, keepdim=True)  # scores are defined up to a per-row shift
    s = torch.linalg.svdvals(centred)
    return int((s > 1e-9 * max(1.0, float(s[0]))).sum())
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch06_pattern_head_size_test", "locked": true, "points": 2, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"}
from attncourse.exercises.ch06 import check_pattern_head_size

check_pattern_head_size(my_pattern_head_size)
### BEGIN HIDDEN TESTS
import importlib

import attncourse.exercises.ch06 as ex
import attncourse.exercises.engine as engine

engine = importlib.reload(engine)
ex = importlib.reload(ex)
ex.check_pattern_head_size(my_pattern_head_size, seed=62)
### END HIDDEN TESTS

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 3 (3 points) — co-information with its sign, Eq. (14.3.11) corrected
# `my_co_information(joint)`: joint (a, b, y) float64, the probability table p(z₁, z₂, y) of two
# heads' readings and a target. Return I(Z₁; Z₂; Y) = I(Z₁; Y) − I(Z₁; Y | Z₂) **in bits** as a 0-dim
# float64 tensor: positive for redundancy, negative for synergy. Cells with probability 0 must not
# produce `nan`. From scratch: `attncourse.metrics` is off limits.


# %% nbgrader={"grade": false, "grade_id": "ch06_co_information", "locked": false, "schema_version": 3, "solution": true} slideshow={"slide_type": "skip"}
def my_co_information(joint):
    """joint (a, b, y) -> I(Z1; Z2; Y) in bits, a 0-dim tensor."""

    ### BEGIN SOLUTION
    def H(p):  # entropy in bits of a table, 0 log 0 = 0
        p = p[p > 0]
        return -(p * torch.log2(p)).sum()

    H_a, H_b, H_y = H(joint.sum((1, 2))), H(joint.sum((0, 2))), H(joint.sum((0, 1)))
    H_ab, H_ay, H_by = H(joint.sum(2)), H(joint.sum(1)), H(joint.sum(0))
    return H_a + H_b + H_y - H_ab - H_ay - H_by + H(joint)  # inclusion-exclusion
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch06_co_information_test", "locked": true, "points": 3, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"}
from attncourse.exercises.ch06 import check_co_information

check_co_information(my_co_information)
### BEGIN HIDDEN TESTS
import importlib

import attncourse.exercises.ch06 as ex
import attncourse.exercises.engine as engine

engine = importlib.reload(engine)
ex = importlib.reload(ex)
ex.check_co_information(my_co_information, seed=63)
### END HIDDEN TESTS

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 4 (2 points) — marginal contributions that add up, Thm. 14.3.8 corrected
# `my_marginal_contributions(joint)`: joint (|Z₁|, …, |Z_H|, |Y|) float64, the table of H heads'
# readings and the target (Y is the **last** dimension). Return a (H,) float64 tensor of
# Δ_h = I(Z₁, …, Z_h; Y) − I(Z₁, …, Z_{h−1}; Y) in bits, heads in dimension order, so that
# Σ_h Δ_h = I(Z_all; Y). From scratch: `attncourse.metrics` is off limits.


# %% nbgrader={"grade": false, "grade_id": "ch06_marginal_contributions", "locked": false, "schema_version": 3, "solution": true} slideshow={"slide_type": "skip"}
def my_marginal_contributions(joint):
    """joint (|Z_1|, ..., |Z_H|, |Y|) -> (H,) chain-rule contributions in bits."""
    ### BEGIN SOLUTION
    H = joint.dim() - 1

    def entropy_bits(p):
        p = p[p > 0]
        return -(p * torch.log2(p)).sum()

    def info_first(h):  # I(Z_1..Z_h; Y)
        if h == 0:
            return torch.zeros((), dtype=joint.dtype)
        drop = tuple(range(h, H))  # the heads after h
        p = joint.sum(drop) if drop else joint  # (|Z_1|, ..., |Z_h|, |Y|)
        return entropy_bits(p.sum(-1)) + entropy_bits(p.sum(tuple(range(h)))) - entropy_bits(p)

    cumulative = torch.stack([info_first(h) for h in range(H + 1)])  # (H + 1,)
    return cumulative[1:] - cumulative[:-1]
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch06_marginal_contributions_test", "locked": true, "points": 2, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"}
from attncourse.exercises.ch06 import check_marginal_contributions

check_marginal_contributions(my_marginal_contributions)
### BEGIN HIDDEN TESTS
import importlib

import attncourse.exercises.ch06 as ex
import attncourse.exercises.engine as engine

engine = importlib.reload(engine)
ex = importlib.reload(ex)
ex.check_marginal_contributions(my_marginal_contributions, seed=64)
### END HIDDEN TESTS

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 5 (2 points) — Michel et al.'s head importance
# `my_head_importance(gate_grads)`: gate_grads (N, L, H) holds, for each of N examples, the gradient
# ∂L(x)/∂ξ_h of that example's loss with respect to every head's gate (at ξ = 1). Return (L, H):
# I_h = the mean over examples of |∂L(x)/∂ξ_h|, then divided by the ℓ2 norm of its layer's scores
# (each row of the result has norm 1). Why must the absolute value come before the mean?


# %% nbgrader={"grade": false, "grade_id": "ch06_head_importance", "locked": false, "schema_version": 3, "solution": true} slideshow={"slide_type": "skip"}
def my_head_importance(gate_grads):
    """gate_grads (N, L, H) -> (L, H): mean_x |dL(x)/dxi_h|, each layer scaled to unit l2 norm."""
    ### BEGIN SOLUTION
    importance = gate_grads.abs().mean(dim=0)  # (L, H): opposite signs must not cancel
    return importance / importance.norm(dim=1, keepdim=True)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch06_head_importance_test", "locked": true, "points": 2, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"}
from attncourse.exercises.ch06 import check_head_importance

check_head_importance(my_head_importance)
### BEGIN HIDDEN TESTS
import importlib

import attncourse.exercises.ch06 as ex
import attncourse.exercises.engine as engine

engine = importlib.reload(engine)
ex = importlib.reload(ex)
ex.check_head_importance(my_head_importance, seed=65)
### END HIDDEN TESTS

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Summary
#
# - Multi-head attention is a **sum of per-head terms** W_O^h z_h (Eq. 14.3.10). h heads can route
#   different positions into different subspaces (both neighbours: two heads exact, one head of any
#   size ≥ half the variance missed); one large head can produce patterns that no small head can
#   (rank of the centred log-pattern ≤ d_k; Bhojanapalli et al. 2020).
# - The information identities of §14.3.2/§14.3.4 must be read with the **chain rule**: the
#   co-information I(Z₁; Z₂; Y) is redundancy minus synergy and may be negative (XOR); Eq. (14.3.11)
#   double-counts and needs higher orders beyond two heads; (14.3.25) has no Y in its penalty;
#   "complementarity" (14.3.26) is the co-information, so high means **redundant**; marginal
#   contributions add up only as conditional informations I(Z_h; Y | Z_<h). The pattern redundancy
#   (14.3.12) points the wrong way; (14.3.21) is the total correlation; (14.3.22) is false.
# - **Michel et al. 2019, reproduced**: with a gate per head, the gradient score ranks heads so that
#   a quarter of them go at a small cost, far better than random; the conditional (marginal)
#   information also ranks heads far better than random (ahead of the gradient score over part of
#   the range, not everywhere); App. 14.3.1's net contribution is not better than random. So
#   "robustness" (source 003) holds only for the right heads, with heads to spare.
# - The §14.3.7 regularisers: the entropy loss concentrates or spreads depending on its sign; the
#   printed diversity loss, minimised, makes heads' entropies **equal** and never sees where heads
#   look — penalise the overlap of their patterns instead.
#
# | concept | what was measured | verdict · where |
# |---|---|---|
# | heads as subspaces (Eq. 14.3.10) | W_O [z_1; …; z_h] vs Σ_h W_O^h z_h, and a gated head | ✓ equal to round-off · §1 |
# | many small heads vs one large head | both neighbours: two heads exact, one head ≥ half the variance missed; head size a pattern needs = rank of centred log P | both directions hold · §2–§3 |
# | information of heads (14.3.11, 14.3.25–14.3.27) | exact tables of toy tasks vs the chain rule | ✗ as printed; co-information with its sign, Δ_h = I(Z_h; Y \| Z_<h) · §4 |
# | pattern redundancy (14.3.12) | identical, different and constant heads | ✗ points the wrong way; use I(A_h1; A_h2) · §5 |
# | Q, K, V bounds (14.3.21–14.3.24), key capacity | total correlation, counterexamples, hull vertices | ✓ / ✗ / ⚠ · §6 |
# | pruning by information (App. 14.3.1, Alg. 14.3.1) | toy heads; accuracy vs heads removed, two seeds | net_h ⚠ (one-shot; no better than random on the trained model); Alg. 14.3.1 ✗ as printed, its marginal term far better than random · §7–§8 |
# | Michel et al. 2019 | gradient importance, pruning curves vs random orders | ✓ reproduced: a quarter of the heads go at a small cost · §8 |
# | 003: robustness, subspace diversity | pruning curves; §1–§2 | ⚠ only the right heads, with heads to spare; ✓ as a capacity · §8 |
# | regularisers (14.3.42, App. 14.3.5) | gradient descent on free scores | sign decides (entropy); diversity loss ✗, overlap loss separates heads · §9 |
#
# **Next — chapter 07, positional encoding**: attention by itself ignores order (the toy heads here
# read "position i − 1" through positional biases); sinusoidal encodings, relative positions by
# rotation, RoPE and ALiBi, and how information transfer decays with distance.
