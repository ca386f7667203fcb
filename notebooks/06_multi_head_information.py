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
# *多头注意力与信息* — source 000, §14.3.2, §14.3.4 and §14.3.7; source 003 (从单头到多头)
#
# A small job for an attention layer: at every position i of a sequence, output **both
# neighbours**, the vector before it and the vector after it, $[x_{i-1}; x_{i+1}]$. A tagger needs
# exactly this (is *can* a verb or a noun? look left and right). An attention head gives each
# position one row of weights, hence one weighted average of the values. Can one head, as large as
# you like, do the job? Can two small heads? And once a trained model has dozens of heads, which of
# them does it need? This chapter takes multi-head attention apart, one term per head, and
# answers these questions by measurement.
#
# **After this chapter you can**
# - explain why one head cannot output both neighbours while two small heads can, and write
#   multi-head attention as a sum of per-head terms;
# - compute the head size that an attention pattern needs (the low-rank limit of small heads);
# - measure what heads carry *together* — redundancy and synergy — with the co-information and
#   contributions that add up;
# - rank the heads of a trained model by Michel et al.'s gradient score and by ablation, prune the
#   least important, and say when that works;
# - say what a loss must see to make heads differ.
#
# **Prerequisites**: chapter 01 (attention, softmax, entropy, a self-attention layer); training a
# classifier with a cross-entropy loss and autograd; matrix rank at the level of "a rank-r matrix
# is a sum of r outer products".
#
# **Time**: main path about 80 min, appendix about 40 min (by `scripts/reading_time.py`: prose
# at 150 words a minute, code at 20 lines a minute, and each exercise's stated time).
#
# **How to read it.** Sections 1–6 are the main path: each asks a question, gives the idea, lets
# you build it in an exercise, then uses it. The **appendix** checks every claim the sources make
# about multi-head attention — many are wrong as printed — and can be skipped on a first reading.

# %% slideshow={"slide_type": "skip"}
import inspect
import math

import matplotlib.pyplot as plt
import numpy as np
import torch

from attncourse.attention import MultiHeadAttention, softmax
from attncourse.chapters import ch06_multi_head_information as ch06
from attncourse.metrics import co_information, mutual_information
from attncourse.threads import side_by_side

torch.manual_seed(0)
np.random.seed(0)
torch.set_num_threads(2)
torch.set_flush_denormal(True)
torch.set_printoptions(precision=4, sci_mode=False)
plt.rcParams.update({"figure.dpi": 80, "figure.figsize": (7, 3)})

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 1. One head gives one average per query
#
# Take sequences of n = 8 positions whose vectors $x_j \in \mathbb{R}^m$ (m = 4) are random
# content, and ask for $t_i = [x_{i-1}; x_{i+1}]$ at every position (circularly: position 0's left
# neighbour is position 7).
#
# **One head.** Its output at position i is $W_O \sum_j \alpha_{ij} v_j + b$ with values
# $v_j = x_j W_V$. However the weights are chosen — by content, by position, anything — the sum
# $\sum_j \alpha_{ij} x_j$ is one vector of $\mathbb{R}^m$, so the output lies in one fixed
# m-dimensional (affine) subspace. The targets fill 2m dimensions with equal variance, so a single
# head misses **about half** of their variance, however large its $d_k$ (half in expectation; the
# exact bound on a finite sample is the sum of the m smallest eigenvalues of the targets' covariance over
# $\mathbb{E}\|t\|^2$: `ch06.one_head_error_bound`).
#
# **Two heads of size m.** Head 1 puts a large score on position i − 1, head 2 on i + 1 (positional
# scores, no content needed); both hand over the content, and the output matrix places head 1's
# result in the first m coordinates and head 2's in the last m:
#
# > **Glossary** · multi-head attention 多头注意力 · head 注意力头 · weighted average 加权平均 ·
# > subspace 子空间 · positional bias 位置偏置 · relative error 相对误差


# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
def two_heads(x, strength=30.0):
    """x (B, n, m) -> (B, n, 2m): head 1 reads position i - 1, head 2 reads i + 1."""
    n = x.shape[1]
    z1 = softmax(ch06.offset_bias(n, -1, strength)) @ x  # (B, n, m): weight ~1 on i - 1
    z2 = softmax(ch06.offset_bias(n, +1, strength)) @ x  # (B, n, m): weight ~1 on i + 1
    return torch.cat([z1, z2], dim=-1)  # W_O puts z1 in the first m outputs, z2 in the last m


x_nb = torch.randn(512, 8, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
t_nb = ch06.neighbour_targets(x_nb)  # (512, 8, 8): [x_{i-1}; x_{i+1}] at every position
err_two = ch06.relative_error(two_heads(x_nb), t_nb)  # E|t - y|^2 / E|t|^2
bound = ch06.one_head_error_bound(t_nb, content_dim=4)
print(f"two heads of size 4, by hand: relative error < 1e-12: {err_two < 1e-12}")
print(f"any single head: relative error >= {bound:.2f}")
assert err_two < 1e-12 and 0.45 < bound < 0.5

# %% [markdown] slideshow={"slide_type": "-"}
# Every other key gets a weight of about $e^{-30} \approx 10^{-13}$, so the two heads are exact to
# round-off. Training cannot beat the bound either: one head with content scores, a learned
# positional bias and $d_k = 16$ — twice the two heads' total size — fitted with Adam, lands just
# above it.

# %% slideshow={"slide_type": "-"}
# NBVAL_IGNORE_OUTPUT
one_head = ch06.train_one_head(x_nb[:256], steps=150, d_k=16, seed=0)  # fitted on half
err_one = ch06.relative_error(one_head(x_nb).detach(), t_nb)
print(f"one trained head of size 16: relative error {err_one:.3f} (bound {bound:.3f})")
assert bound - 1e-9 <= err_one < 0.7

# %% [markdown] slideshow={"slide_type": "-"}
# **Takeaway.** A head gives each query one weighted average; a job that needs two different
# averages per position needs two heads, whatever one head's size.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 2. Many heads write a sum of per-head terms
#
# Multi-head attention runs h heads side by side. Head h has its own projections
# $W_Q^h, W_K^h, W_V^h$ (each d × d/h) and computes $z_h = \mathrm{Attention}(x W_Q^h, x W_K^h,
# x W_V^h)$ in its own d/h-dimensional subspace. One output matrix fuses them (Eq. 14.3.10):
#
# $$\mathrm{MultiHead}(x) = W_O \begin{bmatrix} z_1 \\ \vdots \\ z_h \end{bmatrix} \qquad (14.3.10)$$
#
# Cut $W_O$ into h blocks of d/h columns, $W_O = [W_O^1 \cdots W_O^h]$. A block row times a
# stacked column is a sum:
#
# $$W_O \begin{bmatrix} z_1 \\ \vdots \\ z_h \end{bmatrix} = \sum_{h} W_O^h z_h .$$
#
# Each head writes **its own additive term** into the shared d-dimensional output. The two heads
# of section 1 are two such terms, one filling the first m coordinates, the other the last m. And
# "removing a head" is well defined: drop its term, i.e. multiply $z_h$ by a gate $\xi_h = 0$
# (Michel et al. 2019). Section 5 removes heads this way.
#
# > **Glossary** · output projection 输出投影 · block matrix 分块矩阵 · gate 门控 · head mask 头掩码

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 1 · Each head's term in the output
# **Difficulty** ●●○ · **Time** 8 min · **Points** 2 · **Practises** Eq. (14.3.10) as a sum over
# heads, which block of $W_O$ belongs to which head
#
# Write `my_head_terms(z, W_O)`: z (B, H, T, d_h) holds every head's output, `W_O` (d, d) with
# d = H·d_h is the output projection stored as `nn.Linear(d, d).weight`, so that the layer's
# output is `concat(z) @ W_O.T` where `concat` lays the heads side by side along the last
# dimension (head 0 first). Return (B, H, T, d): the term head h adds to the output (no bias), so
# that summing over the heads gives `concat(z) @ W_O.T`. Keep the input's dtype: the check passes
# float32 and float64 inputs and expects the answer in the same dtype. Any formulation is fine (a
# loop over heads, `einsum`, a reshape and a product).


# %% nbgrader={"grade": false, "grade_id": "ch06_head_terms", "locked": false, "schema_version": 3, "solution": true} slideshow={"slide_type": "skip"}
def my_head_terms(z, W_O):
    """z (B, H, T, d_h), W_O (d, d) -> (B, H, T, d): each head's term of concat(z) @ W_O.T."""
    ### BEGIN SOLUTION
    B, H, T, d_h = z.shape
    blocks = W_O.reshape(W_O.shape[0], H, d_h)  # (d, H, d_h): column block h belongs to head h
    return torch.einsum("bhtk,dhk->bhtd", z, blocks)  # (B, H, T, d)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch06_head_terms_test", "locked": true, "points": 2, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"} tags=["raises-exception"]
from attncourse.exercises.ch06 import check_head_terms

check_head_terms(my_head_terms)
### BEGIN HIDDEN TESTS
import importlib

import attncourse.exercises.ch06 as ex
import attncourse.exercises.engine as engine

engine = importlib.reload(engine)  # fresh copies: a patched check does not count
ex = importlib.reload(ex)
ex.check_head_terms(my_head_terms, seed=61)
### END HIDDEN TESTS

# %% [markdown] slideshow={"slide_type": "-"}
# The course's `MultiHeadAttention` computes the fused output in one product; its per-head terms
# (`ch06.head_contributions`, the same computation as your exercise) add up to it, and a gate at 0
# on one head removes exactly that head's term. `ch06.gated_copy` gives the same layer a gate per
# head.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
mha = MultiHeadAttention(12, 3).double()  # d = 12, three heads of size 4
x = torch.randn(2, 5, 12, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
out, _ = mha(x)  # (2, 5, 12)
terms = ch06.head_contributions(mha, x)  # (2, 3, 5, 12): W_O^h z_h for each head
print("output == sum of the three head terms + bias:", end=" ")
print(torch.allclose(terms.sum(1) + mha.out_proj.bias, out, atol=1e-12, rtol=0))
gated = ch06.gated_copy(mha)  # the same weights, a gate on every head
out_off, _, _ = gated(x, gates=torch.tensor([1.0, 0.0, 1.0], dtype=torch.float64))
print("gate of head 2 at 0 == the output without head 2's term:", end=" ")
print(torch.allclose(out_off, out - terms[:, 1], atol=1e-12, rtol=0))
assert torch.allclose(out_off, out - terms[:, 1], atol=1e-12, rtol=0)

# %% [markdown] slideshow={"slide_type": "-"}
# **Takeaway.** Multi-head attention is a sum of one term per head, $\sum_h W_O^h z_h$; removing a
# head removes its term and nothing else in that layer.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 3. Small heads have a rank limit
#
# Splitting d into h heads of size d/h is not free (Bhojanapalli et al. 2020, "Low-rank
# bottleneck in multi-head attention models"). A head's scores $S = QK^\top/\sqrt{d_k}$ are a
# product of two matrices with $d_k$ columns, so $\mathrm{rank}(S) \le d_k$. Which attention
# matrices P (n × n, every weight positive) can a head produce exactly? Softmax normalises each
# row, so adding a constant to a row of scores changes nothing: $\mathrm{softmax}(S) = P$ exactly
# when $S = \log P + c\,\mathbf{1}^\top$ for some column of constants c. Removing each row's mean
# from $\log P$ picks one such S and cannot raise the rank, so
#
# **a head with $d_k$ dimensions can produce P exactly iff rank(row-centred $\log P$) ≤ $d_k$.**
#
# The truncated SVD of the row-centred $\log P$ then gives the queries and keys
# (`ch06.head_for_pattern`). A generic n × n pattern needs $d_k = n - 1$.
#
# > **Glossary** · rank 秩 · low-rank bottleneck 低秩瓶颈 · singular value decomposition 奇异值分解 ·
# > row-centred 行中心化 · head size 头维度

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 2 · The head size a pattern needs
# **Difficulty** ●●○ · **Time** 10 min · **Points** 2 · **Practises** which scores give the same
# softmax, rank by singular values
#
# Write `my_pattern_head_size(P)`: P (n, n) float64, every entry positive and every row summing
# to one. Return, as an `int`, the smallest $d_k$ for which some queries and keys with $d_k$
# columns give $\mathrm{softmax}(QK^\top/\sqrt{d_k}) = P$ exactly. The uniform pattern (every weight 1/n) needs
# no query or key at all — any head whose scores are all equal produces it — and counts as
# $d_k = 0$ (the formula's $\sqrt{d_k}$ is undefined there; 0 is the convention). Count singular
# values below 1e-9 · max(1, the largest singular value) as 0. `torch.linalg` and numpy are fine.


# %% nbgrader={"grade": false, "grade_id": "ch06_pattern_head_size", "locked": false, "schema_version": 3, "solution": true} slideshow={"slide_type": "skip"}
def my_pattern_head_size(P):
    """P (n, n) positive, rows sum to 1 -> the least d_k (int) of a head producing P exactly."""
    ### BEGIN SOLUTION
    log_p = torch.log(P)
    centred = log_p - log_p.mean(dim=1, keepdim=True)  # scores are defined up to a per-row shift
    s = torch.linalg.svdvals(centred)
    return int((s > 1e-9 * max(1.0, float(s[0]))).sum())
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch06_pattern_head_size_test", "locked": true, "points": 2, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"} tags=["raises-exception"]
from attncourse.exercises.ch06 import check_pattern_head_size

check_pattern_head_size(my_pattern_head_size)
### BEGIN HIDDEN TESTS
import importlib

import attncourse.exercises.ch06 as ex
import attncourse.exercises.engine as engine

engine = importlib.reload(engine)  # fresh copies: a patched check does not count
ex = importlib.reload(ex)
ex.check_pattern_head_size(my_pattern_head_size, seed=62)
### END HIDDEN TESTS

# %% [markdown] slideshow={"slide_type": "-"}
# Four patterns on n = 8 positions. For each, the rank (`ch06.pattern_rank`, the same computation
# as your exercise), then the best head of every size $d_k$ = 1 … 8, built from the truncated SVD:
# ✓ where it reproduces P to round-off.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
n = 8
eye = torch.eye(n, dtype=torch.float64)
u, v = torch.arange(n, dtype=torch.float64), torch.linspace(-1, 1, n, dtype=torch.float64)
patterns = {
    "random (softmax of N(0,1))": ch06.random_pattern(n, seed=0),
    "self 0.9, rest uniform": 0.9 * eye + 0.1 / (n - 1) * (1 - eye),
    "scores u v^T (rank 1)": softmax(torch.outer(u, v), dim=-1),
    "uniform": torch.full((n, n), 1 / n, dtype=torch.float64),
}
print(f"{'pattern':>28} | rank of centred log P | exact with d_k = 1 2 3 4 5 6 7 8")
ranks = {}
for name, P in patterns.items():
    ranks[name] = ch06.pattern_rank(P)
    marks = []
    for d_k in range(1, n + 1):
        Q, K = ch06.head_for_pattern(P, d_k)  # (n, d_k) each
        error = float((ch06.pattern_of(Q, K) - P).abs().max())
        assert (error < 1e-12) == (d_k >= ranks[name]) and (error < 1e-12 or error > 1e-3)
        marks.append("✓" if error < 1e-12 else "✗")
    print(f"{name:>28} | {ranks[name]:21d} | {'':>17}" + " ".join(marks))
assert list(ranks.values()) == [7, 7, 1, 0]

# %% [markdown] slideshow={"slide_type": "-"}
# With d = 8 split into 4 heads of size 2, **no** head can produce the random pattern or even
# "attend to yourself with weight 0.9, spread the rest evenly"; one head of size 8 can produce
# either. (A *sharp* version — only the arg max on yourself — fits in $d_k = 2$ with keys on a
# circle: the limit is on exact weights.) Many small heads buy many different patterns of limited
# rank; one large head buys one arbitrary pattern. Bhojanapalli et al. therefore set the head
# size to the sequence length, independently of the number of heads.
#
# **Takeaway.** A head of size $d_k$ can only make patterns whose row-centred log has rank ≤ $d_k$:
# splitting d into many heads trades exactness of each pattern for more patterns.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 4. What heads know together: redundancy and synergy
#
# The outputs of the heads add up. Does what they *tell* about a target add up too? To answer
# exactly, take heads that each read one token with hard attention, so $Z_h$ is the token head h
# reads; the tokens are fair random bits $x_1, x_2, x_3$ and the target Y is a known function of
# them. `ch06.joint_table` enumerates every input into one exact probability table, and
# `attncourse.metrics` computes information in **bits** from entropies (chapter 01's H, with
# $\log_2$):
#
# - the **mutual information** $I(X; Y) = H(X) + H(Y) - H(X, Y)$: how much knowing X lowers the
#   uncertainty about Y (0 exactly when they are independent);
# - the **conditional** mutual information $I(X; Y \mid Z) = H(X, Z) + H(Y, Z) - H(X, Y, Z) -
#   H(Z)$: what X tells about Y once Z is known;
# - the **co-information** $I(Z_1; Z_2; Y) = I(Z_1; Y) - I(Z_1; Y \mid Z_2)$ (symmetric in its
#   three arguments): how much of what $Z_1$ tells about Y is lost once $Z_2$ is known.
#
# With these, the **chain rule** is exact:
#
# $$I(Z_1, Z_2; Y) = I(Z_1; Y) + I(Z_2; Y) - I(Z_1; Z_2; Y).$$
#
# Two heads tell the sum of what each tells, minus the co-information. Three cases show its
# **sign**. *Copies*: both heads read $x_1$ and $Y = x_1$; each tells 1 bit, together still 1, so the
# co-information is +1 bit — **redundancy**. *Split*: the heads read $x_1$ and $x_2$, $Y = (x_1,
# x_2)$; 1 + 1 = 2 bits, co-information 0. *XOR*: $Y = x_1 \oplus x_2$; each head alone tells
# **nothing** (0 bits), together everything (1 bit), so the co-information is −1 bit —
# **synergy**.
#
# > **⚠ The source says** (Lemma 14.3.7) $I(Z; Y) = \sum_h I(Z_h; Y) - \sum_{h_1 \neq h_2}
# > I(Z_{h_1}; Z_{h_2}; Y)$ (14.3.11), and calls the subtracted term "synergy information, the
# > degree of sharing". Sharing is redundancy, and synergy enters with the *opposite* sign: the
# > term is redundancy minus synergy. And the sum over $h_1 \neq h_2$ counts each pair twice: for
# > XOR it gives 0 + 0 − 2·(−1) = 2 bits where the truth is 1 (last column below). With each pair
# > once it is the chain rule above for two heads; three heads need a triple term too (appendix
# > A.2).
#
# > **Glossary** · mutual information 互信息 · conditional mutual information 条件互信息 ·
# > co-information 交互信息 · redundancy 冗余 · synergy 协同 · chain rule 链式法则

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
TOY_TASKS = {
    "copies: Z1 = Z2 = x1, Y = x1": {
        "Z1": lambda x: x[0],
        "Z2": lambda x: x[0],
        "Y": lambda x: x[0],
    },
    "split: Y = (x1, x2)": {"Z1": lambda x: x[0], "Z2": lambda x: x[1], "Y": lambda x: x[:2]},
    "XOR: Y = x1 xor x2": {"Z1": lambda x: x[0], "Z2": lambda x: x[1], "Y": lambda x: x[0] ^ x[1]},
}


def exact(v):
    """An exact quantity computed in float64, rounded far above round-off (no "-0")."""
    return round(v, 9) + 0.0


print(f"{'task':>29} | I(Z1;Y) I(Z2;Y) I(Z1,Z2;Y) | co-information | Eq. (14.3.11) as printed")
for name, variables in TOY_TASKS.items():
    jt = ch06.joint_table(ch06.bits(2), variables)  # exact p(z1, z2, y) over the 4 inputs
    i1, i2 = ch06.information(jt, ["Z1"], "Y"), ch06.information(jt, ["Z2"], "Y")
    both = ch06.information(jt, ["Z1", "Z2"], "Y")
    co = co_information(jt.table, 0, 1, 2)
    printed = ch06.eq_14_3_11(jt, ["Z1", "Z2"], "Y")
    row = [exact(v) for v in (i1, i2, both, co, printed)]
    print(
        f"{name:>29} | {row[0]:7.0f} {row[1]:7.0f} {row[2]:10.0f} | {row[3]:+14.0f} | {row[4]:24.0f}"
    )
    assert abs(both - (i1 + i2 - co)) < 1e-12  # the chain rule is exact

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 3 · Co-information, with its sign
# **Difficulty** ●●○ · **Time** 10 min · **Points** 3 · **Practises** the chain rule of mutual
# information, entropies of marginal tables, 0 · log 0 = 0
#
# Write `my_co_information(joint)`: `joint` (a, b, y) float64 is the probability table
# $p(z_1, z_2, y)$ of two heads' readings and a target. Return $I(Z_1; Z_2; Y) = I(Z_1; Y) -
# I(Z_1; Y \mid Z_2)$ **in bits**, positive for redundancy and negative for synergy, as a 0-dim
# float64 tensor (or a Python float): keep the table's dtype, float64 — a float32 answer is
# refused by name. Cells with probability 0 must count as 0 · log 0 = 0, not `nan` (a guarded log,
# `log2(p + eps)` with eps ≤ 1e-9, passes too). Any correct
# formula passes: conditional informations, or entropies of the marginal tables (inclusion–
# exclusion), vectorised or with loops. From scratch: the check refuses the entropy functions
# (`torch.special.entr`, the cross-entropy and KL losses, `torch.distributions`' entropies) and
# the course's own package (`attncourse.metrics`, `ch06`).


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


# %% nbgrader={"grade": true, "grade_id": "ch06_co_information_test", "locked": true, "points": 3, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"} tags=["raises-exception"]
from attncourse.exercises.ch06 import check_co_information

check_co_information(my_co_information)
### BEGIN HIDDEN TESTS
import importlib

import attncourse.exercises.ch06 as ex
import attncourse.exercises.engine as engine

engine = importlib.reload(engine)  # fresh copies: a patched check does not count
ex = importlib.reload(ex)
ex.check_co_information(my_co_information, seed=63)
### END HIDDEN TESTS

# %% [markdown] slideshow={"slide_type": "-"}
# **Contributions that add up.** For H heads the chain rule, applied one head at a time, splits
# the total exactly:
#
# $$I(Z_1, \dots, Z_H; Y) = \sum_{h=1}^{H} \Delta_h, \qquad \Delta_h = I(Z_1, \dots, Z_h; Y) -
# I(Z_1, \dots, Z_{h-1}; Y) = I(Z_h; Y \mid Z_1, \dots, Z_{h-1}),$$
#
# what head h adds given the heads before it — the corrected form of the source's Eq. (14.3.27)
# (appendix A.2). The sum does not depend on the order, but each $\Delta_h$ does: for XOR the first
# head adds 0 bits and the second 1 bit, whichever comes first. The last term of any order is what
# a head adds given **all** the others, $I(Z_h; Y \mid Z_{-h})$: a natural measure of how much a
# head matters. Section 5 asks what can be measured in a trained network instead.

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 4 · Marginal contributions that add up
# **Difficulty** ●●○ · **Time** 8 min · **Points** 2 · **Practises** the chain rule over many
# heads, marginalising a table over trailing dimensions
#
# Write `my_marginal_contributions(joint)`: `joint` (|Z₁|, …, |Z_H|, |Y|) float64 is the table of
# H heads' readings and the target (Y is the **last** dimension; H ≥ 1). Return a (H,) tensor of
# $\Delta_h = I(Z_1..Z_h; Y) - I(Z_1..Z_{h-1}; Y)$ in bits, heads in dimension order, so that
# $\sum_h \Delta_h = I(Z_1..Z_H; Y)$. Keep the table's dtype (float64; another dtype is refused by
# name). Zero cells count as 0 · log 0 = 0 (a guarded log, `log2(p + eps)` with eps ≤ 1e-9,
# passes too). Careful: `t.sum(())` sums over **all** dimensions in PyTorch; skip it when there
# is nothing to sum out. From scratch: the check refuses the same entropy functions as exercise 3
# and the course's own package.


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


# %% nbgrader={"grade": true, "grade_id": "ch06_marginal_contributions_test", "locked": true, "points": 2, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"} tags=["raises-exception"]
from attncourse.exercises.ch06 import check_marginal_contributions

check_marginal_contributions(my_marginal_contributions)
### BEGIN HIDDEN TESTS
import importlib

import attncourse.exercises.ch06 as ex
import attncourse.exercises.engine as engine

engine = importlib.reload(engine)  # fresh copies: a patched check does not count
ex = importlib.reload(ex)
ex.check_marginal_contributions(my_marginal_contributions, seed=64)
### END HIDDEN TESTS

# %% [markdown] slideshow={"slide_type": "-"}
# The course's version, `ch06.marginal_contributions(..., printed=False)`, on XOR in both orders,
# and on three heads that read $x_1$, $x_2$ and $x_1 \oplus x_2$ with target $(x_1, x_2)$: two
# heads suffice, so whichever head comes last adds nothing given the others.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
jt_xor = ch06.joint_table(ch06.bits(2), TOY_TASKS["XOR: Y = x1 xor x2"])
for order in (["Z1", "Z2"], ["Z2", "Z1"]):
    deltas = ch06.marginal_contributions(jt_xor, order, "Y", printed=False)
    print(f"XOR, order {order}: contributions {[exact(d) for d in deltas]} bits")
jt_three = ch06.joint_table(
    ch06.bits(2),
    {"Z1": lambda x: x[0], "Z2": lambda x: x[1], "Z3": lambda x: x[0] ^ x[1], "Y": lambda x: x},
)
for order in (["Z1", "Z2", "Z3"], ["Z3", "Z1", "Z2"]):
    deltas = ch06.marginal_contributions(jt_three, order, "Y", printed=False)
    total = ch06.information(jt_three, order, "Y")
    print(f"three heads, order {order}: {[exact(d) for d in deltas]}, sum {exact(total):.0f} bits")
    assert abs(sum(deltas) - total) < 1e-12

# %% [markdown] slideshow={"slide_type": "-"}
# **Takeaway.** Heads' information does not add up: copies share it (co-information > 0), XOR-like
# pairs create it (co-information < 0); chain-rule contributions add up exactly, but what a head
# adds depends on which heads are already there.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 5. Which heads matter: remove them and measure
#
# A trained model has many heads. Can some go without loss, and which? With a gate on every head
# (section 2), removing head h means setting $\xi_h = 0$. Two ways to rank heads:
#
# - **Single-head ablation**: remove head h alone, keep every other weight fixed, and measure how
#   much the cross-entropy loss rises on a batch — one evaluation per head. It measures how much
#   this trained network **relies** on the head. That is not the information the head adds given
#   the others, $I(Z_h; Y \mid Z_{-h})$ of section 4: a network may read one of two copies of a
#   head, so removing that copy hurts although the other copy holds the same information, and
#   measuring information would need a decoder refitted without the head (appendix A.5 shows
#   the difference on an exact toy). For pruning a trained network without retraining, reliance
#   is what counts.
# - **Michel et al.'s importance** (Michel, Levy & Neubig 2019, "Are Sixteen Heads Really Better
#   than One?"): $I_h = \mathbb{E}_x \left|\partial L(x)/\partial \xi_h\right|$ at $\xi = 1$, a
#   first-order estimate of the loss change when the gate goes from 1 to 0, for every head from one
#   backward pass, then divided by the ℓ2 norm of its layer's scores. Michel et al. removed up to
#   20 % (WMT) and 40 % (BERT) of the heads in this order without a noticeable loss, without
#   retraining; ablation was their reference order.
#
# > **Glossary** · head pruning 头剪枝 · importance score 重要性得分 · ablation 消融 ·
# > first-order (Taylor) estimate 一阶（泰勒）估计 · reliance 依赖

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 5 · Michel et al.'s head importance
# **Difficulty** ●○○ · **Time** 6 min · **Points** 2 · **Practises** reducing per-example
# gradients, normalising within a layer
#
# Write `my_head_importance(gate_grads)`: `gate_grads` (N, L, H) holds, for each of N examples,
# the gradient $\partial L(x)/\partial \xi_h$ of that example's loss with respect to the gate of
# every head of every layer (at ξ = 1). Return (L, H): $I_h$ = the mean over examples of
# $|\partial L(x)/\partial \xi_h|$, then each layer's row divided by its ℓ2 norm (each row of the
# result has norm 1). Keep the input's dtype: the check passes float32 and float64 gradients and
# expects the answer in the same dtype. Think about why the absolute value must come before the
# mean.


# %% nbgrader={"grade": false, "grade_id": "ch06_head_importance", "locked": false, "schema_version": 3, "solution": true} slideshow={"slide_type": "skip"}
def my_head_importance(gate_grads):
    """gate_grads (N, L, H) -> (L, H): mean_x |dL(x)/dxi_h|, each layer scaled to unit l2 norm."""
    ### BEGIN SOLUTION
    importance = gate_grads.abs().mean(dim=0)  # (L, H): opposite signs must not cancel
    return importance / importance.norm(dim=1, keepdim=True)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch06_head_importance_test", "locked": true, "points": 2, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"} tags=["raises-exception"]
from attncourse.exercises.ch06 import check_head_importance

check_head_importance(my_head_importance)
### BEGIN HIDDEN TESTS
import importlib

import attncourse.exercises.ch06 as ex
import attncourse.exercises.engine as engine

engine = importlib.reload(engine)  # fresh copies: a patched check does not count
ex = importlib.reload(ex)
ex.check_head_importance(my_head_importance, seed=65)
### END HIDDEN TESTS

# %% [markdown] slideshow={"slide_type": "-"}
# Ablation is as simple as it sounds — one evaluation of the model per head, with a mask that
# removes that head alone:

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
print(inspect.getsource(ch06.ablation_scores))

# %% [markdown] slideshow={"slide_type": "-"}
# **The reproduction.** Task: sort 8 tokens from a vocabulary of 8 (`ch06.sort_batch`). Model
# (`ch06.chapter_model`): token embeddings and sinusoidal positions, 2 Pre-LN layers of gated
# multi-head attention with **16 heads of size 4** each (d = 64) and a feed-forward layer; AdamW
# with a one-cycle schedule, 400 steps, seeds 0 and 1. The scores (`ch06.michel_importance`, the
# package's version of your exercise, and `ch06.ablation_scores`) are computed on one batch of 256
# sequences, accuracy on another of 128. Each order removes heads one by one; 8 random orders are the
# baseline. Asserted on both seeds: accuracy ≥ 0.97 with every head; in Michel's order, 8 of the 32
# heads go with accuracy still ≥ 0.9, and the order beats the mean random order by ≥ 0.08 on
# average over 4–12 heads removed; the ablation order beats random by ≥ 0.15 at 16 removed.

# %% slideshow={"slide_type": "-"}
# NBVAL_IGNORE_OUTPUT
score_data = ch06.sort_batch(256, torch.Generator().manual_seed(7))
eval_data = ch06.sort_batch(128, torch.Generator().manual_seed(8))


def train_and_prune(seed):
    model = ch06.chapter_model(seed)
    losses = ch06.train_model(model, steps=400, seed=seed, progress=False)
    return model, losses, ch06.prune_all(model, score_data, eval_data, num_random=8)


# the two seeds are independent: side_by_side runs them at once, one per CPU core
models, losses, results = {}, {}, {}
for seed, run in enumerate(side_by_side(train_and_prune, [(0,), (1,)], desc="sort, seeds 0 and 1")):
    models[seed], losses[seed], results[seed] = run

# %% slideshow={"slide_type": "-"}
# NBVAL_IGNORE_OUTPUT
MICHEL, ABLATION = ch06.MICHEL, ch06.ABLATION
ks = [0, 2, 4, 6, 8, 10, 12, 16, 24, 32]
for seed, r in results.items():
    print(f"seed {seed}: accuracy after removing k of 32 heads")
    print(f"  {'k':>20}: " + " ".join(f"{k:5d}" for k in ks))
    for name in (MICHEL, ABLATION, "random"):
        print(f"  {name:>20}: " + " ".join(f"{float(r.accuracy[name][k]):5.2f}" for k in ks))
for seed, r in results.items():
    acc, rnd = r.accuracy, r.accuracy["random"]
    gap_michel = float((acc[MICHEL][4:13] - rnd[4:13]).mean())
    assert acc[MICHEL][0] >= 0.97, seed
    assert acc[MICHEL][8] >= 0.9 and gap_michel >= 0.08, (seed, gap_michel)
    assert acc[ABLATION][16] - rnd[16] >= 0.15, seed
print("Michel's order and ablation: 8 of 32 heads go at a small cost, far better than random")

# %% slideshow={"slide_type": "subslide"}
fig, axes = plt.subplots(1, 2, figsize=(11, 3.4), sharey=True)
for ax, (seed, r) in zip(axes, results.items()):
    k_axis = range(33)
    low, high = r.random_accuracy.min(0).values, r.random_accuracy.max(0).values
    ax.fill_between(k_axis, low, high, color="0.85", label="random orders (range)")
    ax.plot(k_axis, r.accuracy["random"], color="0.4", lw=1.5, label="random orders (mean)")
    for name in (MICHEL, ABLATION):
        ax.plot(k_axis, r.accuracy[name], color=ch06.CURVE_COLOURS[name], lw=2, label=name)
    ax.set(xlabel="heads removed (of 32)", title=f"seed {seed}", xlim=(0, 32), ylim=(0, 1.02))
    ax.grid(True, color="0.92")
axes[0].set_ylabel("accuracy (sorted tokens)")
axes[0].legend(fontsize=7, loc="lower left")
plt.tight_layout()
plt.show()

# %% [markdown] slideshow={"slide_type": "-"}
# What the curves say (the numbers differ a little between CPUs; the asserts hold with margin):
#
# - **Michel et al.'s effect is reproduced — with heads to spare.** In their order a quarter of
#   the heads go for a few points of accuracy, while random orders lose several times more. The
#   spare heads matter: a first setup with 8 heads of size 8 per layer on a harder task (sort 10
#   tokens from 16) used almost all of them, and removing 2 of its 16 heads in Michel's order
#   already cost 2–8 points of accuracy. Pruning finds spare capacity; it does not create it.
# - **Ablation ranks heads well** too, and is often ahead of the gradient score in the middle of
#   the range: the gradient score is a first-order estimate of exactly what ablation measures.
#   Neither is best everywhere: with most heads gone both fail, since a score of one head at a
#   time says nothing about how heads fail together.
#
# **Play with it.** The trained model of seed 0, one toggle per head ("1.4" is layer 1, head 4):
# switch heads off, or remove the first k heads of an order with the slider. The top row shows
# every head's attention on one sequence (rows: queries, columns: keys; a removed head is faded
# and crossed), the bottom the pruning curves with the current mask as a red dot (the orange
# curve is the source's information score of appendix A.5). Try:
# 1. Remove the 8 lowest heads in Michel's order, then a few more: where does it break?
# 2. Switch off all 16 heads of layer 1: can layer 2 still find the tokens to copy?
# 3. Find the head whose removal alone costs the most (ablation's order lists it last).

# %% slideshow={"slide_type": "slide"}
# NBVAL_IGNORE_OUTPUT
ch06.head_mask_widget(models[0], eval_data, dict(results[0].accuracy), results[0].orders)

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Takeaway.** A trained model can lose many heads if it has heads to spare and they go in a good
# order: rank them by how much the network relies on them (ablation, or Michel et al.'s gradient
# estimate of it).

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 6. Making heads differ: a loss must see where heads look
#
# Copies of one head waste capacity (section 4). Can a term in the loss push heads apart? The
# source proposes a *diversity loss* (App. 14.3.5): "compute the difference of the entropies of
# different heads, encouraging the heads to learn different types of attention patterns". Its
# code, as printed (`ch06.diversity_attention_loss`; comments translated), on random attention
# of four heads, on four copies of one head, and on four heads that read **different** keys with
# the same sharpness (one head's weights shifted by one key per head):
#
# > **Glossary** · regulariser 正则项 · diversity 多样性 · variance 方差 · overlap 重叠 ·
# > gradient descent 梯度下降

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
print(inspect.getsource(ch06.diversity_attention_loss))
scores0 = 1.5 * torch.randn(
    2, 4, 6, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(3)
)  # (B, H=4, T, S)
w0 = softmax(scores0, dim=-1)
same = w0[:, :1].expand(-1, 4, -1, -1)  # four copies of head 0
shifted = torch.stack([w0[:, 0].roll(k, dims=-1) for k in range(4)], dim=1)  # other keys
print(f"random heads: {float(ch06.diversity_attention_loss(w0)):.4f}")
print(f"four copies of one head: {float(ch06.diversity_attention_loss(same)):.4f}")
print(f"four heads reading different keys: {float(ch06.diversity_attention_loss(shifted)):.4f}")
assert float(ch06.diversity_attention_loss(same)) < 1e-12
assert float(ch06.diversity_attention_loss(shifted)) < 1e-12

# %% [markdown] slideshow={"slide_type": "-"}
# > **⚠ The source says** minimising this loss encourages heads to learn different patterns. In
# > fact it is the **variance of the heads' entropies**: it sees only *how sharp* each head is,
# > never *where* it looks — four copies and four heads reading different keys both score 0 — and
# > minimising a variance makes the entropies **equal**, the opposite of encouraging differences
# > (the descent below). A loss that separates heads must compare where they look, e.g. their
# > **overlap**: the mean, over queries and pairs of distinct heads, of $\langle \alpha_i^{h},
# > \alpha_i^{h'} \rangle$ — 1 for identical one-hot heads, 0 when no two heads share a key (the
# > idea of Li et al. 2018's disagreement regulariser; Lin et al. 2017 penalise $\|AA^\top -
# > I\|^2$). In a few lines:


# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
def overlap(weights):
    """weights (B, H, T, S) -> mean over queries and head pairs h != g of <alpha^h, alpha^g>."""
    H = weights.shape[1]
    gram = torch.einsum("bhts,bgts->btgh", weights, weights)  # (B, T, H, H)
    off_diagonal = gram.sum((-1, -2)) - gram.diagonal(dim1=-2, dim2=-1).sum(-1)  # (B, T)
    return off_diagonal.mean() / (H * (H - 1))


print(f"overlap: copies {float(overlap(same)):.3f}, different keys {float(overlap(shifted)):.3f}")
assert torch.allclose(overlap(w0), ch06.overlap_loss(w0)) and overlap(same) > overlap(shifted)

# %% [markdown] slideshow={"slide_type": "-"}
# Now let each loss act, as it would inside a training loss: plain gradient descent on free scores
# (`ch06.descend`) — the diversity loss minimised and maximised from random heads, and, from four
# near-identical heads, the overlap loss and the diversity loss minimised.

# %% slideshow={"slide_type": "-"}
# NBVAL_IGNORE_OUTPUT
start, after_min = ch06.descend(scores0, ch06.diversity_attention_loss, steps=300, lr=0.5)
_, after_max = ch06.descend(scores0, ch06.diversity_attention_loss, steps=300, lr=0.5, sign=-1.0)
near_same = scores0[:, :1].expand(-1, 4, -1, -1) + 0.01 * torch.randn(
    2, 4, 6, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(4)
)
same_start, after_overlap = ch06.descend(near_same, overlap, steps=300, lr=20.0)
_, after_div = ch06.descend(near_same, ch06.diversity_attention_loss, steps=300, lr=0.5)
print("head entropies (nats), random start:  ", ch06.head_entropies(start).numpy().round(3))
print("  diversity loss minimised:           ", ch06.head_entropies(after_min).numpy().round(3))
print("  diversity loss maximised:           ", ch06.head_entropies(after_max).numpy().round(3))
print(f"near-identical heads: overlap {float(overlap(same_start)):.3f}")
print(f"  after minimising the overlap loss:   {float(overlap(after_overlap)):.3f}")
print(f"  after minimising the diversity loss: {float(overlap(after_div)):.3f}")
spread_min = float(ch06.head_entropies(after_min).std())
spread_max = float(ch06.head_entropies(after_max).std())
assert spread_min < 1e-3 < 0.1 < spread_max
assert float(overlap(after_overlap)) < 0.5 * float(overlap(same_start))
assert abs(float(overlap(after_div)) - float(overlap(same_start))) < 0.02

# %% [markdown] slideshow={"slide_type": "-"}
# Minimised, the diversity loss makes the four entropies equal; maximised, it spreads them (some
# heads sharp, some flat) — either way about sharpness. From near-identical heads it changes
# nothing about where they look, while the overlap loss cuts their overlap by more than half.
#
# **Takeaway.** A regulariser acts only through what it measures: a loss on entropies sees
# sharpness; to make heads look at different positions, penalise their overlap.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Summary
#
# - **One head, one average**: a head gives each query one weighted average, so it cannot output
#   both neighbours, whatever its size; two heads of size m do it exactly.
# - Multi-head attention is a **sum of per-head terms** $\sum_h W_O^h z_h$ (Eq. 14.3.10); removing
#   a head drops its term.
# - **Small heads have a rank limit**: a head of size $d_k$ makes a pattern P exactly iff
#   rank(row-centred log P) ≤ $d_k$; many small heads give many limited patterns.
# - Heads' information **does not add up**: the co-information $I(Z_1; Z_2; Y)$ is positive for
#   redundancy (copies) and negative for synergy (XOR); chain-rule contributions add up, in an
#   order.
# - **Which heads matter** is measured by removing them: single-head ablation measures how much
#   the trained network relies on a head, Michel et al.'s gradient score estimates it in one
#   backward pass; both let a quarter of the heads go at a small cost — in a model with heads to
#   spare.
# - A **diversity loss on entropies** cannot make heads look at different positions; a loss on
#   their overlap can.

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Check yourself**
#
# 1. Why can no single head, however large its $d_k$, output $[x_{i-1}; x_{i+1}]$?
# 2. Two heads read the same token and the target is that token. What are $I(Z_1; Y)$,
#    $I(Z_1, Z_2; Y)$ and the co-information? What changes if the target is the XOR of two
#    tokens each head reads one of?
# 3. A head's attention pattern on n = 8 positions is uniform except that every query puts 0.9 on
#    itself. Can a head of size 4 produce it exactly?
# 4. Removing head A alone raises the loss a lot, yet another head B carries the same information.
#    Does that contradict anything? Why can Michel et al.'s order still prune well?
# 5. Four heads have exactly the same entropy. What is the printed diversity loss, and can it
#    tell four copies of one head from four heads that read different keys? Can the overlap loss?
#
# <details><summary>Answers</summary>
#
# 1. Its output at i is one weighted average $\sum_j \alpha_{ij} v_j$ passed through fixed linear
#    maps: it lies in one m-dimensional subspace, while the targets fill 2m dimensions with equal
#    variance — about half of the variance is missed (half in expectation; 0.48 on section 1's
#    sample).
# 2. 1 bit each and 1 bit together: co-information +1 (redundancy). With XOR, 0 bits each, 1 bit
#    together: co-information −1 (synergy).
# 3. No: its centred log has rank n − 1 = 7 > 4 (section 3's table); only a head of size ≥ 7 can.
# 4. No: ablation measures the network's reliance on A with the other weights fixed, not the
#    information A adds given B (which is 0). For pruning without retraining, reliance is what
#    matters, and Michel's gradient score is a first-order estimate of it.
# 5. 0, in both cases: it sees only the entropies, so copies and heads reading different keys
#    look the same to it. The overlap loss tells them apart: 1 for identical one-hot heads, 0 for
#    heads with no key in common.
# </details>
#
# **Next — chapter 07, positional encoding**: attention by itself ignores order (the two heads of
# section 1 read "position i − 1" through positional scores); sinusoidal encodings, relative
# position by rotation, RoPE and ALiBi, and how information transfer decays with distance.

# %% [markdown] slideshow={"slide_type": "skip"}
# ## Appendix · The source, checked
#
# Source 000 states the ideas of this chapter in §14.3.2 (Def. 14.3.6 – Thm. 14.3.4), §14.3.4
# (Def. 14.3.10 – Thm. 14.3.8) and §14.3.7 (Def. 14.3.16 – Alg. 14.3.1) as definitions, lemmas and
# theorems; source 003 lists what multi-head attention gives (从单头到多头). This appendix checks
# each claim numerically. Marks: **✓ holds** · **⚠ holds only under a condition** (stated) · **✗
# wrong as printed** (with a counterexample and the correct statement) · **→ ch. NN** checked in
# that chapter. Section 4 defined the mutual information, the conditional mutual information and
# the co-information used here.
#
# ### A.1 Heads as a sum of terms (Def. 14.3.6, Eq. 14.3.10)
#
# **Claim check — Def. 14.3.6, Eq. (14.3.10) ✓**, with the per-head projections that the
# definition leaves implicit ($z_h = \mathrm{Attention}(QW_Q^h, KW_K^h, VW_V^h)$). The fusion is
# linear, so it is the sum of per-head terms $\sum_h W_O^h z_h$ (section 2: equal to round-off, and
# a closed gate removes exactly its head's term; the tests hold the gated layer against
# `nn.MultiheadAttention`, forward and backward). The heads interact only through that sum and,
# in deeper models, through the layers after it.
#
# ### A.2 The information of heads (Lemma 14.3.7, Cor. 14.3.4, Def. 14.3.11, Lemma 14.3.15, Thm. 14.3.8)
#
# $$I(Z; Y) = \sum_{h=1}^{H} I(Z_h; Y) - \sum_{h_1 \neq h_2} I(Z_{h_1}; Z_{h_2}; Y) \qquad (14.3.11)$$
#
# $$I(Z; Y) = \sum_{h} I(Z_h; Y) - \sum_{h_1 \neq h_2} I(Z_{h_1}; Z_{h_2}) \qquad (14.3.25)$$
#
# $$\mathrm{Complementarity}(h_1, h_2) = I(Z_{h_1}; Y) + I(Z_{h_2}; Y) - I(Z_{h_1 \cup h_2}; Y) \qquad (14.3.26)$$
#
# $$\Delta_h = I(Z_h; Y) - I(Z_{<h}; Y), \qquad \sum_{h=1}^{H} \Delta_h = I(Z_{\text{all}}; Y) \qquad (14.3.27)$$
#
# Lemma 14.3.15 reads (14.3.26) as "high = the heads learn different information, near 0 = they
# are redundant". $Z_{h_1 \cup h_2}$ must mean the pair $(Z_{h_1}, Z_{h_2})$ read jointly. The
# toys of section 4 plus three more, every number exact: "pairs once" is (14.3.11) with each
# unordered pair once, "once" the same for (14.3.25), the last two columns the sum of the printed
# $\Delta_h$ and of the chain rule's.

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
MORE_TASKS = {
    "AND: Y = x1 and x2": {"Z1": lambda x: x[0], "Z2": lambda x: x[1], "Y": lambda x: x[0] & x[1]},
    "3 heads, Y = x1^x2^x3": {
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
for name, variables in {**TOY_TASKS, **MORE_TASKS}.items():
    jt = ch06.joint_table(ch06.bits(3), variables)
    heads = [v for v in jt.names if v != "Y"]
    row = toy[name] = {  # each value exact, rounded far above round-off by exact()
        "I": ch06.information(jt, heads, "Y"),
        "eq11": ch06.eq_14_3_11(jt, heads, "Y"),
        "once": ch06.pairwise_co_information_formula(jt, heads, "Y"),
        "eq25": ch06.eq_14_3_25(jt, heads, "Y"),
        "eq25 once": ch06.eq_14_3_25(jt, heads, "Y", ordered=False),
        "comp": ch06.complementarity(jt, "Z1", "Z2", "Y"),
        "sum printed": sum(ch06.marginal_contributions(jt, heads, "Y")),
        "sum chain": sum(ch06.marginal_contributions(jt, heads, "Y", printed=False)),
    }
    row = {key: exact(value) for key, value in row.items()}
    print(
        f"{name:>31} | {row['I']:6.3f} | {row['eq11']:9.3f} {row['once']:10.3f} | {row['eq25']:9.3f} "
        f"{row['eq25 once']:5.3f} | {row['comp']:9.3f} | {row['sum printed']:10.3f} {row['sum chain']:10.3f}"
    )
for row in toy.values():
    assert abs(row["sum chain"] - row["I"]) < 1e-12  # the chain rule is exact
xor = toy["XOR: Y = x1 xor x2"]
assert abs(xor["eq11"] - 2.0) < 1e-9 and abs(xor["comp"] + 1.0) < 1e-9
assert abs(toy["copies: Z1 = Z2 = x1, Y = x1"]["comp"] - 1.0) < 1e-9
assert abs(toy["split: Y = (x1, x2)"]["comp"]) < 1e-9

# %% [markdown] slideshow={"slide_type": "skip"}
# **Claim check — Lemma 14.3.7, Eq. (14.3.11) ✗ as printed.** The sum over $h_1 \neq h_2$ counts
# each pair **twice** (XOR: 0 + 0 − 2·(−1) = 2 bits, truth 1; copies: 1 + 1 − 2·1 = 0, truth 1).
# With each pair once it is the chain rule for **two** heads, where the co-information is
# redundancy minus synergy (the source calls it "synergy information … the degree of sharing").
# For three heads pairs are not enough: with $Y = x_1 \oplus x_2 \oplus x_3$ every single and
# every pairwise co-information is 0, yet the whole carries 1 bit; the exact expansion adds the
# triple co-information, $\sum_h I - \sum_{\text{pairs}} I(\cdot;\cdot;Y) + I(Z_1; Z_2; Z_3; Y)$.
# (Chapter 01, appendix A.9, checks the same pattern for positions, Eq. 14.3.7.)
#
# **Claim check — Cor. 14.3.4, Eq. (14.3.25) ✗.** The subtracted term has no Y in it. XOR: the
# heads are independent, the formula gives 0, the truth is 1 bit. For **two** heads with the pair
# counted once it is a valid **lower bound**: $I(Z_1, Z_2; Y) = I(Z_1; Y) + I(Z_2; Y) -
# I(Z_1; Z_2) + I(Z_1; Z_2 \mid Y) \ge \ldots - I(Z_1; Z_2)$. For three heads even that fails (last row: 3 > 2
# bits); the correct bound subtracts the total correlation $\sum_h H(Z_h) - H(Z)$.
#
# **Claim check — Def. 14.3.11, Eq. (14.3.26) ✓** as a definition: by the chain rule the
# "complementarity" **is** the co-information $I(Z_{h_1}; Z_{h_2}; Y)$.
#
# **Claim check — Lemma 14.3.15 ✗ (reversed).** The complementarity is +1 for copies (pure
# redundancy), 0 for heads that carry independent pieces (split: the textbook complementary pair),
# −1 for XOR (synergy). High values mean **redundant** heads; complementary heads sit at 0 or
# below.
#
# **Claim check — Thm. 14.3.8, Eq. (14.3.27) ✗ as printed, ✓ with the chain rule.**
# $\sum_h [I(Z_h; Y) - I(Z_{<h}; Y)]$ does not telescope (split: 1 instead of 2; XOR: 0 instead of
# 1). With $\Delta_h = I(Z_{\le h}; Y) - I(Z_{<h}; Y) = I(Z_h; Y \mid Z_{<h})$ (section 4, exercise
# 4) the sum is $I(Z_{\text{all}}; Y)$ exactly. "Δ_h should be as uniform as possible" is not a
# theorem: the $\Delta_h$ depend on the order of the heads, and for XOR they are (0, 1) in either
# order although the pair is optimal.
#
# ### A.3 Redundancy of attention patterns (Thm. 14.3.3, Eq. 14.3.12)
#
# $$\mathrm{Redundancy}(H) = \frac{1}{h^2} \sum_{h_1, h_2} H(\alpha^{(h_1)} \mid \alpha^{(h_2)}) \qquad (14.3.12)$$
#
# "Low redundancy means the heads learn complementary information; redundancy is high when one
# head's attention can be predicted from another's." As printed $\alpha^{(h)}$ is a distribution
# over positions, not a random variable, and a conditional entropy needs a joint distribution of
# two random variables. It has to mean: $A_h$ = head h's attention pattern **as a function of the
# input**, e.g. the position it attends to. Then $H(A_1 \mid A_2)$ is **small when $A_1$ is
# predictable from $A_2$** — exactly when the text says redundancy is *high*. Toy: four tokens from
# {0, 1, 2, 3}, all 256 sequences equally likely; head "max" attends to the position of the (first)
# largest token, "max copy" is the same head twice, "min" attends to the smallest, "first" always
# to position 0.

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
sequences = [tuple(int(t) for t in s) for s in torch.cartesian_prod(*[torch.arange(4)] * 4)]
jt_patterns = ch06.joint_table(
    sequences,
    {
        "max": ch06.argmax_position,
        "max copy": ch06.argmax_position,
        "min": ch06.argmin_position,
        "first": lambda x: 0,
    },
)
print(f"{'heads':>24} | {'Eq. (14.3.12)':>13} | {'mean I(A_h1; A_h2)':>18}")
redundancy = {}
for pair in (("max", "max copy"), ("max", "min"), ("max", "first")):
    redundancy[pair] = ch06.eq_14_3_12(jt_patterns, pair)
    mean_info = ch06.mean_pattern_information(jt_patterns, pair)
    print(f"{' + '.join(pair):>24} | {redundancy[pair]:13.3f} | {mean_info:18.3f}")
assert abs(redundancy["max", "max copy"]) < 1e-9
assert redundancy["max", "min"] > redundancy["max", "first"] > 0.4

# %% [markdown] slideshow={"slide_type": "skip"}
# **Claim check — Thm. 14.3.3, Eq. (14.3.12) ✗ (and ill-defined as printed).** Two identical
# heads — the most redundant pair there is — score **0**, the "least redundant" value, and pairing
# "max" with a head that carries nothing ("first") scores far above that pair (H(A_max)/4 ≈ 0.475),
# though below max + min. The sum also includes $h_1 = h_2$ terms, which are 0. **Correct
# statement**: redundancy of patterns is measured by the mutual information $I(A_{h_1}; A_{h_2})$
# (or the normalised $1 - H(A_{h_1} \mid A_{h_2})/H(A_{h_1})$), large when one pattern predicts the
# other; the printed average of conditional entropies measures how **un**predictable the heads are
# from each other.
#
# ### A.4 Q, K, V and the bottleneck objectives (Def. 14.3.10, Lemma 14.3.13, Thm. 14.3.7, Lemma 14.3.14, Lemma 14.3.8, Thm. 14.3.4)
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

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
worst = 0.0
for seed in range(20):
    p = torch.rand(3, 4, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(seed))
    table = ch06.JointTable(
        p / p.sum(), ("Q", "K", "V"), (list(range(3)), list(range(4)), list(range(2)))
    )
    gap = ch06.eq_14_3_21(table, "Q", "K", "V") - ch06.total_correlation(table, ["Q", "K", "V"])
    worst = max(worst, abs(gap))
print(
    f"Eq. (14.3.21) - total correlation, 20 random tables: max |difference| < 1e-12: {worst < 1e-12}"
)
assert worst < 1e-12

# K and V carry different tokens; the output reads both:  X = (x1, x2), K = x1, V = x2, Y = (K, V)
jt_kv = ch06.joint_table(
    ch06.bits(2),
    {"X": lambda x: x, "K": lambda x: x[0], "V": lambda x: x[1], "Y": lambda x: (x[0], x[1])},
)


def mi(jt, a, b, given=None):
    """I(a; b) or I(a; b | given) in bits, variables by name."""
    return mutual_information(
        jt.table, jt.dim(a), jt.dim(b), given=() if given is None else jt.dim(given)
    )


I_XY, I_XK, I_XV, I_KV = (
    mi(jt_kv, "X", "Y"),
    mi(jt_kv, "X", "K"),
    mi(jt_kv, "X", "V"),
    mi(jt_kv, "K", "V"),
)
print(
    f"Eq. (14.3.22): I(X;Y) = {I_XY:.0f} bits, bound min(I(X;K), I(X;V)) + I(K;V) = {min(I_XK, I_XV) + I_KV:.0f}"
)
print(f"  correct: I(X;Y) <= I(X;K) + I(X;V) - I(K;V) = {I_XK + I_XV - I_KV:.0f}")
assert min(I_XK, I_XV) + I_KV < I_XY <= I_XK + I_XV - I_KV + 1e-12

# Thm. 14.3.7: a pointer query Q (which of two positions) retrieves that position's token
jt_ptr = ch06.joint_table(
    ch06.bits(3),  # (pointer, x1, x2)
    {"Q": lambda x: x[0], "V": lambda x: x[1:], "X": lambda x: x, "Z": lambda x: x[1 + x[0]]},
)
eta = mi(jt_ptr, "Q", "V") / mi(jt_ptr, "X", "V")
delivered = mi(jt_ptr, "Z", "X", given="Q")
print(
    f"Eq. (14.3.23): a pointer head copies the asked-for token: eta = {eta:.0f}, "
    f"yet I(Z; X | Q) = {delivered:.0f} bit = all of the asked-for token"
)
assert abs(eta) < 1e-9 and abs(delivered - 1) < 1e-9

# %% [markdown] slideshow={"slide_type": "skip"}
# **Claim check — Def. 14.3.10, Eq. (14.3.21) ✓** once Q, K, V have a joint distribution: it is
# the total correlation TC(Q, K, V) = H(Q) + H(K) + H(V) − H(Q, K, V), the information shared
# anywhere among the three (≥ 0). For continuous Q, K, V that are deterministic functions of the
# same X every term is infinite; it is meaningful for discrete tokens, or with noise.
#
# **Claim check — Lemma 14.3.13, Eq. (14.3.22) ✗.** X = (x₁, x₂), K = x₁, V = x₂, Y = (K, V): 2
# bits pass, the bound says 1. **Correct** (when Y is computed from K and V and these are
# functions of X): I(X; Y) ≤ I(X; K, V) = I(X; K) + I(X; V) − I(K; V) — a sum minus the overlap,
# not a min plus it.
#
# **Claim check — Thm. 14.3.7, Eq. (14.3.23) ⚠.** η ≤ 1 holds (V = g(X), so I(Q; V) ≤ H(V) =
# I(X; V)), but η does not measure transfer: a head whose query is a pure pointer (independent of
# the contents) and that copies exactly the asked-for token has η = 0, and Q = V gives η = 1
# without moving anything. What the head delivers is the output's information about the input
# given the question, I(Z; X | Q): 1 bit here, all there is.
#
# **Claim check — Lemma 14.3.14, Eq. (14.3.24) ⚠** — the information-bottleneck problem (Tishby et
# al. 1999), an objective one *may* impose, not what attention does by itself: plain training
# maximises a bound on I(Z; Y) with no constraint. For a deterministic Z = f(X) of discrete X,
# I(Z; X) = H(Z), so the constraint limits the entropy of the output; for continuous X it is
# infinite (next cell).
#
# **Claim check — Lemma 14.3.8, Eq. (14.3.13) ⚠ not well defined as printed.** "I(QK; X)" of the
# query–key "interaction space": QK is a deterministic function of X, so I(QK; X) = H(QK) for
# discrete inputs and ∞ for continuous ones (binning at finer and finer widths grows without
# limit, below). As a *loss* with this sign it would have to be *maximised*. It must mean the IB
# Lagrangian max I(Z; Y) − β I(Z; X) over a **stochastic** encoder p(z | x) (e.g. with noise or
# dropout), or H(attention pattern) for discrete routing.

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
print("X uniform on [0, 1], f(X) = X binned into k bins (deterministic): I(f(X); X) = H(f(X))")
for k in (10, 100, 1000, 10000):
    info = ch06.binned_self_information(100000, k)
    print(f"  k = {k:5d} bins: {info:6.2f} bits (log2 k = {math.log2(k):.2f})")

# %% [markdown] slideshow={"slide_type": "skip"}
# **Claim check — Thm. 14.3.4 ✓ / ⚠ (key and value capacity).** "C_K = log |𝒦| ≈ d_k log₂ M;
# C_V = H(V) ≤ d_v log₂ M" for M possible values per coordinate. As counts ✓: at most $M^{d_k}$
# distinct keys and H(V) ≤ log₂ $M^{d_v}$. As the capacity of **selection by dot product** ⚠: a key
# is the arg max of q·k for some query only if it is a vertex of the keys' convex hull (a key
# inside the hull is an average of others, never strictly above all of them). On the grid {0, …,
# M−1}^{d_k} only the $2^{d_k}$ corners are vertices — $d_k$ bits, whatever M; keys on a sphere are
# all selectable, however many.

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
print(
    f"{'M':>2} {'d_k':>3} | {'keys M^d_k':>10} {'d_k log2 M':>10} | {'selectable by argmax':>20} {'bits':>5}"
)
for M, d_k in ((2, 2), (3, 2), (4, 2), (3, 3), (4, 3)):
    keys = ch06.grid_keys(M, d_k)  # (M^d_k, d_k)
    chosen = int(ch06.argmax_selectable_keys(keys).sum())
    print(
        f"{M:2d} {d_k:3d} | {len(keys):10d} {d_k * math.log2(M):10.2f} | {chosen:20d} {math.log2(chosen):5.2f}"
    )
    assert chosen == 2**d_k
angles = torch.arange(50, dtype=torch.float64) * 2 * math.pi / 50
circle = torch.stack([angles.cos(), angles.sin()], dim=1)  # 50 keys on the unit circle, d_k = 2
print(f"50 unit keys in d_k = 2: {int(ch06.argmax_selectable_keys(circle).sum())} selectable")

# %% [markdown] slideshow={"slide_type": "skip"}
# ### A.5 Pruning by information (App. 14.3.1, Alg. 14.3.1)
#
# App. 14.3.1 scores each head by its **net contribution** $\mathrm{net}_h = I(Z_h; Y) -
# \sum_{h' \neq h} I(Z_h; Z_{h'})$ and prunes the smallest first (its comment; the pseudo-code
# sorts in descending order and returns the ranking, so pruning takes it from the end; as
# transcribed it runs: `ch06.net_contributions`). Alg. 14.3.1 adds a marginal term
# $I_{\text{total}} - I(Z_{-h}; Y) = I(Z_h; Y \mid Z_{-h})$ and combines the three with weights λ:
# score = λ₁·direct + λ₂·marginal − λ₃·redundancy.
#
# A toy shows what a one-shot score misses. Three heads: A and A′ both read $x_1$ (copies), D reads
# $x_3$; the target is $Y = (x_1,\ x_3$ passed through a channel that flips it with probability
# 0.3$)$, so D is worth $1 - h(0.3) \approx 0.119$ bits and A or A′ 1 bit. Copies look redundant
# **to each other**, so both get net 0 < net_D, and removing two heads removes both copies:

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
jt_prune = ch06.joint_table(
    ch06.bits(3),  # (x1, x3, flip)
    {
        "A": lambda x: x[0],
        "A'": lambda x: x[0],
        "D": lambda x: x[1],
        "Y": lambda x: (x[0], x[1] ^ x[2]),
    },
    weights=lambda x: 0.3 if x[2] else 0.7,
)
toy_heads = ["A", "A'", "D"]
net = ch06.net_contributions(jt_prune, toy_heads, "Y")
print("net_h:", {h: round(v, 3) for h, v in net.items()})
for label, removed in (
    (
        "App. 14.3.1, scores computed once",
        ch06.prune_by_net_contribution(jt_prune, toy_heads, "Y", 2),
    ),
    (
        "scores recomputed after each removal",
        ch06.prune_by_net_contribution(jt_prune, toy_heads, "Y", 2, recompute=True),
    ),
):
    kept = [h for h in toy_heads if h not in removed]
    info = ch06.information(jt_prune, kept, "Y")
    print(f"{label:>38}: remove {removed}, keep {kept}: I(kept; Y) = {info:.3f} bits")
best, best_info = ch06.best_heads_to_keep(jt_prune, toy_heads, "Y", 1)
print(f"{'best single head to keep':>38}: {best}, {best_info:.3f} bits")
assert ch06.prune_by_net_contribution(jt_prune, toy_heads, "Y", 2) == ["A", "A'"]

# %% [markdown] slideshow={"slide_type": "skip"}
# Alg. 14.3.1's pseudo-code, transcribed line for line (indentation included) as
# `ch06.alg_14_3_1_as_printed`, run on this toy: the score line sits **after** the loop, so only
# the last head gets a score, and `sorted_heads[low_score_ratio:]` slices with a ratio. Then the
# repaired version (`ch06.alg_14_3_1_repaired`: the score inside the loop, the lowest
# round(ratio · H) heads as candidates) with λ = (1, 1, 1).

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
print(inspect.getsource(ch06.alg_14_3_1_as_printed))
try:
    ch06.alg_14_3_1_as_printed(toy_heads, jt_prune, "Y", low_score_ratio=0.5)
    print("low_score_ratio = 0.5: runs")
except TypeError:
    print("low_score_ratio = 0.5: raises TypeError (a float used as a slice index)")
candidates, scores = ch06.alg_14_3_1_as_printed(toy_heads, jt_prune, "Y", low_score_ratio=1)
print(
    f"low_score_ratio = 1: scores computed for {list(scores)} only; prune candidates {candidates}"
)
assert list(scores) == ["D"] and candidates == []
candidates, scores = ch06.alg_14_3_1_repaired(toy_heads, jt_prune, "Y", prune_ratio=2 / 3)
print("repaired, lambda = (1, 1, 1): scores", {h: round(s, 3) for h, s in scores.items()})
kept = [h for h in toy_heads if h not in candidates]
print(f"  prunes {candidates}, keeps {kept}: {ch06.information(jt_prune, kept, 'Y'):.3f} bits")
assert candidates == ["A", "A'"]

# %% [markdown] slideshow={"slide_type": "skip"}
# **Claim check — App. 14.3.1 ⚠** (the pseudo-code runs; its ranking is one-shot): pruning both
# copies leaves 0.119 bits where keeping one copy keeps 1 bit. Re-scoring after each removal fixes
# this toy. The redundancy sum also mixes scales: $I(Z_h; Z_{h'})$ can be as large as $H(Z_h)$, far
# above the $I(Z_h; Y) \le H(Y)$ it is subtracted from, and a head that shares its information with
# many others is charged once per partner (the trained model below shows what that does).
#
# **Claim check — Alg. 14.3.1 ✗ as printed** (score outside the loop, a ratio used as a slice
# index); repaired, it runs, but its marginal term $I(Z_h; Y \mid Z_{-h})$ is one-shot too: each copy
# adds 0 given the other, so with λ = (1, 1, 1) it prunes both copies, like App. 14.3.1.
#
# **What section 5 measures is not this marginal term.** Section 5's ablation measures the rise of
# the cross-entropy when one head is removed and every other weight is kept. One might read it as
# an estimate of $I(Z_h; Y \mid Z_{-h}) = I(Z; Y) - I(Z_{-h}; Y)$, since $H(Y) - \mathrm{CE}$ is a
# lower bound on an information for any decoder. But with the decoder fixed, $H(Y) -
# \mathrm{CE}_{\text{without } h}$ is a loose lower bound on $I(Z_{-h}; Y)$, and the difference of two
# lower bounds bounds nothing. The toy above with a fixed decoder: it reads $x_1$ from the sum of the
# two copies' ±1 readings (weight 2 each) and $x_3$ from D with the Bayes-optimal weight
# $\ln(0.7/0.3)$; removing a head sets its reading to 0.


# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
def fixed_decoder_loss(removed=()):
    """Cross-entropy in bits of the fixed decoder of Y = (x1, y2), heads in `removed` set to 0."""
    w, u = 2.0, math.log(0.7 / 0.3)  # log-odds weights for x1 and for y2
    loss = 0.0
    for x1, x3, flip in ch06.bits(3):
        p = 0.25 * (0.3 if flip else 0.7)  # probability of this input
        read = {"A": 2 * x1 - 1, "A'": 2 * x1 - 1, "D": 2 * x3 - 1}  # each head's reading, +-1
        read = {h: 0 if h in removed else r for h, r in read.items()}
        logits = (w * (read["A"] + read["A'"]), u * read["D"])  # log-odds that x1 = 1, y2 = 1
        for target, logit in zip((x1, x3 ^ flip), logits):
            loss += p * math.log1p(math.exp(-(2 * target - 1) * logit))  # -log sigmoid
    return loss / math.log(2)


rise = {h: fixed_decoder_loss([h]) - fixed_decoder_loss() for h in toy_heads}
conditional = {
    h: ch06.information(jt_prune, toy_heads, "Y")
    - ch06.information(jt_prune, [o for o in toy_heads if o != h], "Y")
    for h in toy_heads
}
print(f"{'head':>4} | loss rise when removed alone (bits) | I(Z_h; Y | Z_-h) (bits)")
for h in toy_heads:
    print(f"{h:>4} | {rise[h]:35.3f} | {conditional[h]:23.3f}")
for name, score in (("ablation", rise), ("I(Z_h; Y | Z_-h)", conditional)):
    kept = [sorted(toy_heads, key=score.get)[-1]]  # keep the top head, remove the other two
    print(
        f"remove the two lowest by {name}: keep {kept}, {ch06.information(jt_prune, kept, 'Y'):.3f} bits"
    )
assert rise["A"] > 0.1 and abs(conditional["A"]) < 1e-12
assert abs(rise["D"] - conditional["D"]) < 1e-12

# %% [markdown] slideshow={"slide_type": "skip"}
# The fixed decoder relies on both copies, so removing either raises its loss by 0.157 bits,
# although each copy adds **0** bits given the other; for D, whose weight is optimal and whose
# information nobody else holds, the two agree. (A head the decoder ignores would score 0 whatever
# it carries.) So section 5's ablation is Michel et al.'s reference order, a measure of
# **reliance**, and the good rankings there are ablation's, not the algorithm's conditional
# information — which, ranked once, would drop both copies here.
#
# **The trained model.** App. 14.3.1's order and Alg. 14.3.1's combined score need $I(Z_h; Y)$ and
# $I(Z_h; Z_{h'})$ of continuous head outputs, so they are estimated: k-means quantisation of each
# head's output (16 cells) and plug-in counting with the Miller–Madow bias correction
# (`ch06.information_scores`). First the estimator, on samples of a table whose information is
# known exactly, and on quantised vectors (8 separated clusters, one per class, vs vectors
# independent of the class):
#
# > **Glossary** · quantisation 量化 · plug-in estimator 插入式估计量 · bias correction 偏差校正

# %% slideshow={"slide_type": "skip"}
# NBVAL_IGNORE_OUTPUT
noisy = torch.full((8, 8), 0.3 / 7, dtype=torch.float64)
noisy.fill_diagonal_(0.7)
noisy = noisy / 8  # p(y, z): z = y with probability 0.7, else another class
exact = mutual_information(noisy, 0, 1)
draws = ch06.sample_joint(noisy, 2048, seed=0)  # (2048, 2)
estimate = ch06.plugin_mutual_information(draws[:, 0], draws[:, 1])
raw = ch06.plugin_mutual_information(draws[:, 0], draws[:, 1], correct=False)
print(
    f"exact {exact:.3f} bits | plug-in {raw:.3f} | with Miller-Madow {estimate:.3f} (2048 samples)"
)
g = torch.Generator().manual_seed(0)
labels = torch.randint(8, (2048,), generator=g)
centres = 4 * torch.randn(8, 4, generator=g)
separated = centres[labels] + 0.1 * torch.randn(2048, 4, generator=g)
unrelated = torch.randn(2048, 4, generator=g)
i_sep = ch06.plugin_mutual_information(ch06.kmeans_codes(separated, 16), labels)
i_unrel = ch06.plugin_mutual_information(ch06.kmeans_codes(unrelated, 16), labels)
print(f"k-means + plug-in: separated clusters {i_sep:.3f} bits (H(Y) = 3), unrelated {i_unrel:.3f}")
assert abs(estimate - exact) < 0.06 and i_sep > 2.8 and i_unrel < 0.1

# %% [markdown] slideshow={"slide_type": "skip"}
# Now the two trained models of section 5: App. 14.3.1's net-information order (computed by
# `ch06.prune_all` with the others), and Alg. 14.3.1's combined score with section 5's ablation (in
# bits) standing in for its marginal term, for two choices of λ: (1, 1, 1) as printed, and
# (1, 1, 1/31), which charges the mean overlap with the 31 other heads instead of the sum.
# Asserted on both seeds: the net-information order and the λ = (1, 1, 1) score are no better than
# random (mean gap over 1–16 heads removed ≤ 0.03).

# %% slideshow={"slide_type": "skip"}
# NBVAL_IGNORE_OUTPUT
NET = ch06.NET_INFORMATION
combined_accuracy = {}
for seed, r in results.items():
    info, ablation_bits = r.information, r.ablation.flatten() / math.log(2)
    overlaps = info.pairs.sum(1)  # sum over the 31 other heads of I(Z_h; Z_h'), bits
    print(
        f"seed {seed}: I(Z_h; Y) {float(info.direct.min()):.2f}..{float(info.direct.max()):.2f} bits, "
        f"overlap sums {float(overlaps.min()):.1f}..{float(overlaps.max()):.1f} bits, "
        f"ablation {float(ablation_bits.min()):.2f}..{float(ablation_bits.max()):.2f} bits"
    )
    rnd = r.accuracy["random"]
    for lam in ((1.0, 1.0, 1.0), (1.0, 1.0, 1 / 31)):
        score = lam[0] * info.direct + lam[1] * ablation_bits - lam[2] * overlaps
        acc, _ = ch06.pruning_curve(models[seed], ch06.order_by(score), *eval_data)
        combined_accuracy[seed, lam] = acc
    curves = {
        NET: r.accuracy[NET],
        "combined (1, 1, 1)": combined_accuracy[seed, (1.0, 1.0, 1.0)],
        "combined (1, 1, 1/31)": combined_accuracy[seed, (1.0, 1.0, 1 / 31)],
        ABLATION: r.accuracy[ABLATION],
    }
    for name, acc in curves.items():
        gap = float((acc[1:17] - rnd[1:17]).mean())
        print(
            f"  {name:>22}: accuracy at k = 4, 8, 16: "
            + ", ".join(f"{float(acc[k]):.2f}" for k in (4, 8, 16))
            + f";  mean gap over random (k = 1..16) {gap:+.2f}"
        )
    assert float((r.accuracy[NET][1:17] - rnd[1:17]).mean()) <= 0.03, seed
    assert float((combined_accuracy[seed, (1.0, 1.0, 1.0)][1:17] - rnd[1:17]).mean()) <= 0.03, seed

# %% slideshow={"slide_type": "skip"}
r0 = results[0]
fig, ax = plt.subplots(1, 3, figsize=(12, 3))
for a, (values, title) in zip(
    ax,
    (
        (r0.importance, "Michel et al. I_h (layer-normalised)"),
        (r0.ablation / math.log(2), "ablation: loss rise (bits)"),
        (r0.information.net.view(2, 16), "App. 14.3.1 net_h (bits)"),
    ),
):
    image = a.imshow(values.numpy(), aspect="auto", cmap="viridis")
    a.set(yticks=[0, 1], yticklabels=["layer 1", "layer 2"], xlabel="head", title=title)
    a.set_xticks(range(0, 16, 3), [str(h + 1) for h in range(0, 16, 3)])  # heads 1..16
    fig.colorbar(image, ax=a, fraction=0.046)
plt.tight_layout()
plt.show()

# %% [markdown] slideshow={"slide_type": "skip"}
# **Claim check — App. 14.3.1 ⚠, on the trained model: no better than random** (on these seeds
# mostly worse). The redundancy sum dominates — summed over 31 partners it comes to about nine
# bits or more, while $I(Z_h; Y) \le 3$ — so the score prunes first the heads that share the most with
# others, which in a trained model are the informative ones.
#
# **Claim check — Alg. 14.3.1, combined score ✗ with λ = (1, 1, 1).** The redundancy sum swamps
# the other two terms, so the order is close to App. 14.3.1's and no better than random (asserted).
# With λ₃ = 1/31 (the mean overlap) it beats random in these runs, but does not reach ablation
# alone; the λ are free parameters the source does not fix, and the term that carries the ranking
# is the ablation that stands in for the marginal term.
#
# ### A.6 What source 003 says multi-head attention gives (从单头到多头)
#
# **Claim check — 003, "diversity of representation subspaces" (表征子空间多样性) ✓ as a
# capacity.** Each head writes its own term from its own subspace, and two heads do what one head
# of any size cannot (sections 1–2); whether trained heads *use* different subspaces is an
# empirical matter, and the diversity loss of App. 14.3.5 does not enforce it (section 6).
#
# **Claim check — 003, "robustness: lowers the risk of a single head" (鲁棒性增强) ⚠ only for the
# right heads, and only with heads to spare.** The trained model of section 5 tolerates losing a
# quarter of its heads in Michel's order (asserted), but random orders lose much more for the same
# number of heads, and with most heads gone every order fails. In the first setup (8 heads of size
# 8 per layer, sorting 10 tokens from 16, 1000 steps) removing 2 of 16 heads in Michel's order
# already cost 2–8 points on both seeds (rerun outside the notebook: about 2 points on seed 0, 8 on
# seed 1). What survives pruning is spare
# capacity of a model with more heads than its task needs, found by a good ranking — not a
# guarantee that multi-head attention gives by itself.
#
# **Claim check — 003, "parallelisation: improves computational efficiency" (并行化能力：提高计算效率)
# ✗ as a property of multiple heads.** At a fixed width d, h heads of size d/h do exactly the
# matrix-multiplication work of one head of size d — the projections are the same four d × d
# products, and the scores cost h · T² · (d/h) = T² d multiply-adds either way — plus h times as
# many softmax weights (h · T² exponentials instead of T²). Vaswani et al. (2017, §3.2.2) say only
# that the total cost is "similar to that of single-head attention with full dimensionality". The
# parallelism is attention's: every position at once, where a recurrence goes step by step
# (chapter 04). Counted with PyTorch's FLOP counter on the course's `MultiHeadAttention`
# (d = 64, T = 128, batch 1):

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
from torch.utils.flop_counter import FlopCounterMode

x_flops = torch.randn(1, 128, 64)
print(f"{'heads':>5} {'head size':>9} | {'matmul FLOPs':>12} | {'softmax weights':>15}")
counted = {}
for h in (1, 4, 16):
    layer = MultiHeadAttention(64, h)
    with FlopCounterMode(display=False) as counter:
        _, weights = layer(x_flops)  # weights (1, h, 128, 128)
    counted[h] = counter.get_total_flops()
    print(f"{h:5d} {64 // h:9d} | {counted[h]:12d} | {weights.numel():15d}")
assert counted[1] == counted[4] == counted[16]

# %% [markdown] slideshow={"slide_type": "skip"}
# ### A.7 The entropy and diversity regularisers (Def. 14.3.16, Lemma 14.3.22, App. 14.3.5)
#
# $$\mathcal{L}_{\text{attn-ent}} = H(\alpha) = -\sum_i \alpha_i \log \alpha_i \qquad (14.3.42)$$
#
# Lemma 14.3.22: "L high: encourages spread attention; L low: allows concentrated attention." The
# entropy loss (`ch06.entropy_loss`, averaged over queries) minimised and maximised by gradient
# descent on section 6's random scores:

# %% slideshow={"slide_type": "skip"}
# NBVAL_IGNORE_OUTPUT
_, ent_min = ch06.descend(scores0, ch06.entropy_loss, steps=300, lr=10.0)
_, ent_max = ch06.descend(scores0, ch06.entropy_loss, steps=300, lr=10.0, sign=-1.0)
print(
    f"entropy loss H(alpha): start {float(ch06.entropy_loss(start)):.3f}, "
    f"minimised {float(ch06.entropy_loss(ent_min)):.3f}, "
    f"maximised {float(ch06.entropy_loss(ent_max)):.3f} (log 6 = {math.log(6):.3f})"
)
assert float(ch06.entropy_loss(ent_min)) < 0.5 * float(ch06.entropy_loss(start))
assert float(ch06.entropy_loss(ent_max)) > 0.95 * math.log(6)

# %% [markdown] slideshow={"slide_type": "skip"}
# **Claim check — Def. 14.3.16, Eq. (14.3.42) ✓**: a definition.
#
# **Claim check — Lemma 14.3.22 ⚠**: what matters is the **sign** with which the term enters the
# loss. Minimised (+λH), it **concentrates** attention (H drops towards 0); to spread attention you
# must subtract it (−λH, maximising the entropy towards log n). "L high encourages spread"
# describes the value, not the effect of the regulariser.
#
# **Claim check — App. 14.3.5 ✗.** Minimising the printed loss makes the heads' entropies
# **equal** — the opposite of "encouraging differences"; maximising it spreads the entropies.
# Either way it sees only **how sharp** each head is, not **where** it looks: identical heads and
# heads reading different keys score the same, and minimising it leaves near-identical heads
# near-identical (section 6). To make heads attend to different positions, penalise their overlap
# (section 6). The listing runs as printed; note that `torch.var` is the unbiased (n − 1) variance
# and that each head's entropy is **summed** over queries, so the loss grows with the length.
#
# ### A.8 Sparse attention in §14.3.7 (Def. 14.3.17, Lemma 14.3.23, Thm. 14.3.15, App. 14.3.6) → chapter 10
#
# §14.3.7 also defines sparse attention, Softmax(M ⊙ S) (Eq. 14.3.43), compares the information of
# sparse and dense attention (Lemma 14.3.23, Eq. 14.3.44), states an optimal mask (Thm. 14.3.15,
# Eq. 14.3.45) and learns a mask with Gumbel-softmax (App. 14.3.6). Chapter 10 (efficient, sparse
# and gated attention) checks all four in full and owns their verdicts: see chapter 10.
#
# ### A.9 Claim checks at a glance
#
# | source claim | verdict | correct statement / condition |
# |---|---|---|
# | Def. 14.3.6, Eq. (14.3.10): MultiHead = W_O [z_1; …; z_h] | ✓ | = Σ_h W_O^h z_h, a sum of per-head terms (section 2, A.1) |
# | Lemma 14.3.7, Eq. (14.3.11): I(Z;Y) = Σ I(Z_h;Y) − Σ_{h1≠h2} I(Z_h1;Z_h2;Y) | ✗ | ordered pairs double-count; exact for 2 heads with the pair once; ≥ 3 heads need higher-order co-information; the term is redundancy − synergy (section 4, A.2) |
# | Thm. 14.3.3, Eq. (14.3.12): redundancy = mean H(α^(h1) \| α^(h2)) | ✗ (and ill-defined) | α must be read as a random variable over inputs; then identical heads score 0: use I(A_h1; A_h2) (A.3) |
# | App. 14.3.1: prune by net_h = I(Z_h;Y) − Σ I(Z_h;Z_h') | ⚠ | runs; one-shot ranking prunes both copies of a needed head; on a trained model no better than random (A.5) |
# | Lemma 14.3.8, Eq. (14.3.13): IB loss with I(QK; X) | ⚠ ill-defined | I(f(X); X) = H(f(X)) (discrete) or ∞ (continuous); needs a stochastic encoder; it is maximised, not minimised (A.4) |
# | Thm. 14.3.4: C_K ≈ d_k log₂ M, C_V = H(V) ≤ d_v log₂ M | ✓ / ⚠ | bounds on counts ✓; selectable by arg max: only hull vertices (2^{d_k} on a grid) (A.4) |
# | Def. 14.3.10, Eq. (14.3.21) | ✓ | equals the total correlation H(Q)+H(K)+H(V)−H(Q,K,V) (A.4) |
# | Lemma 14.3.13, Eq. (14.3.22) | ✗ | I(X;Y) ≤ I(X;K) + I(X;V) − I(K;V) (Y computed from K, V; K, V functions of X) (A.4) |
# | Thm. 14.3.7, Eq. (14.3.23): η = I(Q;V)/I(X;V) | ⚠ | η ≤ 1 holds; η = 0 for a perfect pointer head: not a transfer efficiency (A.4) |
# | Lemma 14.3.14, Eq. (14.3.24) | ⚠ | the IB problem, an optional objective; I(Z;X) = H(Z) for deterministic Z (A.4) |
# | Cor. 14.3.4, Eq. (14.3.25) | ✗ | no Y in the subtracted term; a lower bound for 2 heads (pair once), not for 3 (A.2) |
# | Def. 14.3.11, Eq. (14.3.26) | ✓ | it is the co-information I(Z_h1; Z_h2; Y) (A.2) |
# | Lemma 14.3.15: high complementarity = different information | ✗ | reversed: high = redundant, 0 = independent pieces, < 0 = synergy (A.2) |
# | Thm. 14.3.8, Eq. (14.3.27) | ✗ / ✓ | with Δ_h = I(Z_h; Y \| Z_<h) the sum is exact; "uniform Δ_h" is not a theorem (order-dependent) (section 4, A.2) |
# | Def. 14.3.16, Eq. (14.3.42) | ✓ | a definition (A.7) |
# | Lemma 14.3.22 | ⚠ | minimising +H concentrates, maximising spreads: the sign decides (A.7) |
# | App. 14.3.5: diversity loss | ✗ | minimising equalises head entropies; blind to where heads look; penalise overlap instead (section 6, A.7) |
# | Def. 14.3.17, Eq. (14.3.43): Softmax(M ⊙ S) | → ch. 10 | see chapter 10, which owns it (A.8) |
# | Lemma 14.3.23, Eq. (14.3.44): I_sparse ≤ I_dense | → ch. 10 | see chapter 10, which owns it (A.8) |
# | Thm. 14.3.15, Eq. (14.3.45): the optimal mask | → ch. 10 | see chapter 10, which owns it (A.8) |
# | App. 14.3.6: learnable sparse attention | → ch. 10 | see chapter 10, which owns it (A.8) |
# | Alg. 14.3.1 (pseudo-code) | ✗ as printed / ⚠ repaired | score outside the loop, ratio as slice index; repaired it runs, but its one-shot marginal term drops both copies (A.5) |
# | Alg. 14.3.1: marginal term I_total − I(Z_−h; Y), read from a trained model | ⚠ | what section 5 measures is single-head ablation, the loss rise with the other weights fixed: reliance, not I(Z_h; Y \| Z_−h) (toy: 0.157 bits vs 0); the good ranking is ablation's, Michel et al.'s reference order (A.5) |
# | Alg. 14.3.1: combined score λ₁·direct + λ₂·marginal − λ₃·redundancy | ✗ | λ = (1, 1, 1): the redundancy sum swamps the rest, no better than random on both seeds; λ₃ = 1/31 beats random but not ablation alone (A.5) |
# | 003 (从单头到多头): diversity of representation subspaces | ✓ as a capacity | each head adds its own subspace's term; two heads copy both neighbours, one head of any size cannot (sections 1–2); not enforced by App. 14.3.5's loss (A.6) |
# | 003 (从单头到多头): robustness, less risk from a single head | ⚠ | a quarter of the heads can go at a small cost, but only in a good order (random orders lose much more) and only with heads to spare (section 5, A.6) |
# | 003 (从单头到多头): parallelisation improves efficiency | ✗ | at equal width, h heads cost the same matmul FLOPs as one head plus h× the softmax weights; the parallelism is attention's, not the heads' (A.6) |
# | Michel et al. 2019 (reproduced): many heads can be pruned without retraining | ✓ with heads to spare | 16 heads of size 4 per layer on an easy task: a quarter go at a small cost, far better than random (asserted, two seeds); with 8 heads per layer on a harder task, 2 of 16 already cost 2–8 points (section 5, A.6) |
#
# **Errata in one place.** Eq. (14.3.11) double-counts pairs and reverses the meaning of its term;
# Eq. (14.3.25) has no Y in its penalty; Lemma 14.3.15 reads complementarity backwards; Eq.
# (14.3.27) does not telescope (it needs $I(Z_{\le h}; Y)$); Eq. (14.3.12) is ill-defined and points
# the wrong way; Eq. (14.3.22) is false (a sum minus the overlap, not a min plus it); Eq. (14.3.13)
# is infinite for continuous inputs and has the wrong sign for a loss; Alg. 14.3.1 scores only the
# last head and slices with a ratio; App. 14.3.5's loss equalises what it claims to diversify.
