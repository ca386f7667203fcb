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
# # Chapter 07 · Positional encoding
# *位置编码* — source 000, §14.3.6; Vaswani et al. 2017, Su et al. 2021 (RoFormer), Press et al.
# 2022 (ALiBi)
#
# *Dog bites man* and *man bites dog* hold the same three words and mean opposite things. Feed
# both to a self-attention layer and you get the **same three vectors back**, only in another
# order; average them and the two sentences become identical. Attention, as chapter 01 built it,
# does not know where a word stands. This chapter puts order in — by adding a vector for each
# position, by rotating queries and keys, or by penalising distance — and finds out what each
# choice does when a model meets sequences longer than any it was trained on.
#
# **After this chapter you can**
# - show that self-attention without positions is *permutation-equivariant*, and name a task it
#   therefore cannot learn;
# - write the sinusoidal encoding's shift as a rotation, PE(p + k) = R_k PE(p);
# - write rotary embeddings (RoPE) and check that they make a score depend on the offset alone;
# - write causal attention with ALiBi's distance bias, and say which encodings make information
#   fade with distance;
# - reproduce Press et al.'s "train short, test long" effect on a CPU, and say what it does not
#   show.
#
# **Prerequisites**: chapter 01 (scaled dot-product attention, masks, softmax); chapter 04
# (gradient paths) helps with section 5 and the appendix; complex numbers,
# $e^{i\theta} = \cos\theta + i\sin\theta$, and 2 × 2 rotation matrices; mutual information in
# bits (chapter 01's appendix defines it).
#
# **Time**: main path about 85 min, appendix about 20 min (by `scripts/reading_time.py`: prose
# at 150 words a minute, code at 20 lines a minute, and each exercise's stated time).
#
# **How to read it.** Sections 1–6 are the main path: each asks a question and gives the idea;
# sections 2–5 let you build it in an exercise, then use it. The **appendix** checks every claim
# source 000 makes about long-range dependence and positions — some hold, some only under a
# condition, some are wrong — and can be skipped on a first reading.

# %% slideshow={"slide_type": "skip"}
import math

import matplotlib.pyplot as plt
import numpy as np
import torch

from attncourse.attention import MultiHeadAttention, softmax
from attncourse.chapters import ch07_positional_encoding as ch07
from attncourse.positional import (
    LearnedPositionalEmbedding,
    RotaryEmbedding,
    alibi_bias,
    alibi_slopes,
    sinusoidal_encoding,
    sinusoidal_shift_matrix,
)

torch.manual_seed(0)
np.random.seed(0)
torch.set_num_threads(2)
torch.set_flush_denormal(True)
torch.set_printoptions(precision=4, sci_mode=False)
plt.rcParams.update({"figure.dpi": 80, "figure.figsize": (7, 3)})
DT = torch.float64

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 1. Attention cannot see order
#
# Self-attention (chapter 01) computes, for the T rows of X,
# $\mathrm{Attn}(X) = \mathrm{softmax}\big(XW_Q (XW_K)^\top/\sqrt{d_k}\big)\, XW_V$. Reorder the
# tokens with a permutation matrix P. The scores become $P S P^\top$ — rows *and* columns
# reordered —, a row-wise softmax commutes with that, and
# $P A P^\top \cdot P X W_V = P A X W_V$ because $P^\top P = I$. So
#
# $$\mathrm{Attn}(PX) = P\,\mathrm{Attn}(X):$$
#
# shuffling the input shuffles the output the same way and changes nothing else. This is
# **permutation equivariance**. Layers that act on each row alone (feed-forward, LayerNorm) have
# it too, so a whole Transformer block has it, and a mean over positions afterwards is
# **invariant**: it cannot tell *dog bites man* from *man bites dog*.
#
# > **Glossary** · position 位置 · permutation 置换 · permutation equivariance 置换等变性 ·
# > permutation invariance 置换不变性 · positional encoding 位置编码

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
g = torch.Generator().manual_seed(0)
words = {w: torch.randn(16, generator=g, dtype=DT) for w in ("dog", "bites", "man")}
x = torch.stack([words["dog"], words["bites"], words["man"]])  # (T=3, d=16) "dog bites man"
swap = torch.tensor([2, 1, 0])  # "man bites dog": the same words, the other order
torch.manual_seed(0)
layer = MultiHeadAttention(16, num_heads=4).double()  # any weights: it holds for all
y, _ = layer(x[None])  # (1, 3, 16)
y_swapped, _ = layer(x[swap][None])  # (1, 3, 16)
print("Attn(P x) == P Attn(x):", torch.allclose(y_swapped[0], y[0][swap]))
print("mean over positions identical:", torch.allclose(y_swapped.mean(1), y.mean(1)))

# %% [markdown] slideshow={"slide_type": "-"}
# Does this matter for learning? Take a task that is *only* about order: **is the sequence
# sorted?** Each batch holds pairs: 8 tokens from a vocabulary of 16 in sorted order (label 1)
# and the *same* tokens shuffled (label 0). The model (`ch07.PositionalTransformer`): embedding →
# two bidirectional attention layers (4 heads, d = 32) → mean over positions → 2 logits.
#
# Without positions, the two members of a pair get the **same** logits, whatever the weights. If
# the model says "sorted" with probability q for both, the pair costs −ln q − ln(1 − q) ≥ 2 ln 2,
# with equality at q = ½. The mean loss can never go below ln 2 ≈ 0.693 — chance — and this is
# exact, not a matter of training longer. Let us train it anyway (300 steps):

# %% slideshow={"slide_type": "-"}
# NBVAL_IGNORE_OUTPUT
SORT_LENGTH = 8


def sort_model(encoding):
    torch.manual_seed(0)
    return ch07.PositionalTransformer(
        16, 2, encoding, num_layers=2, causal=False, pooled=True, max_len=SORT_LENGTH,
        dim_feedforward=0,
    )  # fmt: skip


sort_models = {"none": sort_model("none")}
sort_losses = {
    "none": ch07.train_model(sort_models["none"], "sorted", steps=300, length=SORT_LENGTH, seed=0)
}
accuracy, loss, gap = ch07.sortedness_scores(sort_models["none"], SORT_LENGTH)
print(f"no positions: accuracy {accuracy:.3f}, loss {loss:.4f} (ln 2 = {math.log(2):.4f})")
print(f"largest |logit(sorted) - logit(its shuffle)|, float64: {gap:.1e}")
assert gap < 1e-9, "no positions: the two members of a pair get identical logits"
assert loss > math.log(2) - 1e-4, "no positions: the loss cannot go below ln 2"

# %% [markdown] slideshow={"slide_type": "-"}
# The loss sits on ln 2 and the two logits of a pair agree to float64 round-off. Order has to be
# put in. Three ways are in use, one per section: **add** a vector for each position to the
# token's embedding (section 2), **rotate** queries and keys by their positions (section 3), or
# **bias** the scores by the distance (section 4).
#
# **Takeaway.** Without positions, attention is permutation-equivariant, and after pooling it is
# blind to order: some tasks are impossible, not just hard.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 2. Add a position: the sinusoidal encoding
#
# The simplest way is a table: one trained vector E[p] per position, added to the embedding
# (BERT, GPT-2; `LearnedPositionalEmbedding`). But a table of P rows has nothing to say about
# position P. Vaswani et al. (2017) instead add a vector made of clock hands:
#
# $$PE_{(p,\,2i)} = \sin(p\,\theta_i), \qquad PE_{(p,\,2i+1)} = \cos(p\,\theta_i), \qquad
# \theta_i = 10000^{-2i/d}, \quad i = 0, \dots, d/2 - 1 .$$
#
# Each pair (sin pθ_i, cos pθ_i) is a point on the unit circle that turns by θ_i radians per
# position: fast for i = 0 (one radian per position, a turn every 6.3 positions), slower and
# slower as i grows (source 000 states it as Lemma 14.3.21). It is defined at every position.
#
# **A shift is a rotation.** By the angle-sum formulas,
#
# $$\begin{pmatrix}\sin (p+k)\theta \\ \cos (p+k)\theta\end{pmatrix}
# = \begin{pmatrix}\cos k\theta & \sin k\theta \\ -\sin k\theta & \cos k\theta\end{pmatrix}
# \begin{pmatrix}\sin p\theta \\ \cos p\theta\end{pmatrix},$$
#
# so PE(p + k) = R_k PE(p), with R_k block-diagonal — one 2 × 2 rotation per pair — and
# **independent of p**. "Three positions further on" is one fixed linear map, wherever you are.
#
# > **Glossary** · sinusoidal 正弦 · frequency 频率 · wavelength 波长 · learned positional
# > embedding 可学习位置嵌入 · rotation matrix 旋转矩阵 · block diagonal 分块对角 · angle-sum
# > formula 和角公式


# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
def sinusoid(num_positions, d, base=10000.0):
    theta = base ** (-torch.arange(0, d, 2, dtype=DT) / d)  # (d/2,) radians per position
    angles = torch.arange(num_positions, dtype=DT)[:, None] * theta  # (P, d/2)
    return torch.stack((angles.sin(), angles.cos()), dim=-1).flatten(-2)  # (P, d) sin, cos, ...


pe = sinusoid(250, 64)  # (250, 64)
print(
    "equals the package's sinusoidal_encoding:",
    torch.allclose(pe, sinusoidal_encoding(250, 64, dtype=DT)),
)
print("PE(0)[:4] =", pe[0, :4].tolist(), "  PE(1)[:2] =", [round(v, 4) for v in pe[1, :2].tolist()])

# %% [markdown] slideshow={"slide_type": "-"}
# > **⚠ The source says** PE_(pos, 2i) = sin(pos/10000^{2i/d}) — the sine features only — and that
# > relative positions can be read off by a linear map, citing sin(a − b) = sin a cos b − cos a sin b.
# > That identity needs the **cosines** too: with sine features alone, PE(0) = 0, and no linear map
# > sends the zero vector to PE(k) ≠ 0. The cos features at 2i + 1 are what make the shift a
# > rotation (appendix A.2 checks it).

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 1 · The shift as a rotation
# **Difficulty** ●●○ · **Time** 10 min · **Points** 2 · **Practises** the angle-sum formulas,
# block-diagonal rotations, the interleaved (sin, cos) layout
#
# Write `my_shift_matrix(offset, dim, base)`: the (dim, dim) float64 matrix R_k (k = `offset`,
# any integer, negative too) with PE(p + k) = R_k PE(p) for every position p, where
# PE(p)[2i] = sin(p θ_i), PE(p)[2i + 1] = cos(p θ_i), θ_i = base^(−2i/dim). Features 2i and 2i + 1
# form pair i. **Compute θ in float64** (`torch.arange(0, dim, 2, dtype=torch.float64)`): the
# default float32 rounds θ by about 1e-7 of its size, far more than a float64 answer may be off,
# and the check names that mistake ("the angles carry float32 round-off"). Loops,
# `torch.block_diag` or NumPy are all fine (return a torch tensor: `torch.from_numpy`); do not
# call the package's `sinusoidal_shift_matrix`. You may check your answer against `sinusoid`
# above, outside your function: like `DT`, it is defined by the chapter's cells, which are not
# run when you are graded, so the check refuses an answer that uses it.


# %% nbgrader={"grade": false, "grade_id": "ch07_shift_matrix", "locked": false, "schema_version": 3, "solution": true} slideshow={"slide_type": "skip"}
def my_shift_matrix(offset, dim, base):
    """offset (int), dim (even int), base (float) -> R_k (dim, dim) float64."""
    ### BEGIN SOLUTION
    theta = base ** (-torch.arange(0, dim, 2, dtype=torch.float64) / dim)  # (dim/2,)
    c, s = torch.cos(offset * theta), torch.sin(offset * theta)  # (dim/2,) each
    R = torch.zeros(dim, dim, dtype=torch.float64)
    R[0::2, 0::2] = torch.diag(c)  # sin((p+k)t) = sin(pt) cos(kt) + cos(pt) sin(kt)
    R[0::2, 1::2] = torch.diag(s)
    R[1::2, 0::2] = torch.diag(-s)  # cos((p+k)t) = cos(pt) cos(kt) - sin(pt) sin(kt)
    R[1::2, 1::2] = torch.diag(c)
    return R
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch07_shift_matrix_test", "locked": true, "points": 2, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"} tags=["raises-exception"]
from attncourse.exercises.ch07 import check_shift_matrix

check_shift_matrix(my_shift_matrix)
### BEGIN HIDDEN TESTS
import importlib

import attncourse.exercises.ch07 as ex
import attncourse.exercises.engine as engine

engine = importlib.reload(engine)  # fresh copies: a patched check does not count
ex = importlib.reload(ex)
ex.check_shift_matrix(my_shift_matrix, seed=71)
### END HIDDEN TESTS

# %% [markdown] slideshow={"slide_type": "-"}
# The course's `sinusoidal_shift_matrix` (the same matrix as yours, once your check passes)
# applied to a running example that sections 3 and 4 reuse: a query at position 10 and a key
# three positions back, at 7.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
R3 = sinusoidal_shift_matrix(3, 64, dtype=DT)  # (64, 64)
shift_error = float((pe[3:] - pe[:-3] @ R3.T).abs().max())  # PE(p + 3) - R_3 PE(p), every p
print(f"PE(p + 3) = R_3 PE(p) at all {len(pe) - 3} positions: {shift_error < 1e-12}")
print(f"PE(10)·PE(7) = {float(pe[10] @ pe[7]):.6f},  PE(50)·PE(47) = {float(pe[50] @ pe[47]):.6f}")

# %% [markdown] slideshow={"slide_type": "-"}
# The two dot products agree because PE(p)·PE(q) = Σ_i [sin pθ_i sin qθ_i + cos pθ_i cos qθ_i]
# = Σ_i cos((p − q)θ_i): a function of the offset alone, and an *even* one — "three before" and
# "three after" give the same product (the vectors differ; their product does not). The left map
# shows the clock hands, the right one the product against the offset:

# %% slideshow={"slide_type": "subslide"}
fig, ax = plt.subplots(1, 2, figsize=(11, 3.2))
image = ax[0].imshow(pe[:64], aspect="auto", cmap="RdBu_r", vmin=-1, vmax=1)
ax[0].set(xlabel="feature (2i: sin, 2i + 1: cos)", ylabel="position p", title="PE, d = 64")
fig.colorbar(image, ax=ax[0], fraction=0.046, pad=0.04)
offsets = np.arange(-100, 101)
for d_plot, color in ((16, "tab:orange"), (64, "tab:blue"), (256, "tab:green")):
    profile = ch07.dot_product_profile(offsets, d_plot) / (d_plot / 2)  # sum_i cos(k theta_i)
    ax[1].plot(offsets, profile, color=color, label=f"d = {d_plot}")
ax[1].set(xlabel="offset k = q - p", ylabel="PE(p)·PE(q) / (d/2)", title="the same for every p")
ax[1].legend(fontsize=8)
plt.tight_layout()
plt.show()

# %% [markdown] slideshow={"slide_type": "-"}
# Back to the sorting task: the same model, with sinusoidal positions added to the embeddings,
# and with a learned table of 8 positions.

# %% slideshow={"slide_type": "subslide"}
# NBVAL_IGNORE_OUTPUT
for encoding in ("sinusoidal", "learned"):
    sort_models[encoding] = sort_model(encoding)
    sort_losses[encoding] = ch07.train_model(
        sort_models[encoding], "sorted", steps=300, length=SORT_LENGTH, seed=0, desc=encoding
    )
fig, ax = plt.subplots(figsize=(6.5, 3))
for encoding, color in (("none", "tab:gray"), ("sinusoidal", "tab:blue"), ("learned", "tab:green")):
    accuracy = ch07.sortedness_scores(sort_models[encoding], SORT_LENGTH)[0]
    print(f"{encoding:>10}: accuracy on fresh pairs {accuracy:.3f}")
    assert encoding == "none" or accuracy >= 0.95, encoding
    curve = np.convolve(sort_losses[encoding], np.ones(20) / 20, mode="valid")
    width = 4 if encoding == "none" else 1.5  # "none" lies on ln 2: a band around its line
    ax.plot(curve, color=color, lw=width, label=f"{encoding} (mean of 20 steps)")
ax.axhline(math.log(2), ls=":", color="k", lw=1, label="ln 2: the bound without positions")
ax.set(xlabel="step", ylabel="training loss", title="is it sorted? (8 tokens)", ylim=(0, 0.9))
ax.legend(fontsize=8)
plt.tight_layout()
plt.show()

# %% [markdown] slideshow={"slide_type": "-"}
# Both learn the task (accuracy ≥ 0.95 asserted) where the model without positions cannot. The
# learned table, though, has rows for positions 0–7 only:

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
try:
    LearnedPositionalEmbedding(SORT_LENGTH, 32)(torch.zeros(1, SORT_LENGTH + 1, 32))
except ValueError as error:
    print("ValueError:", error)

# %% [markdown] slideshow={"slide_type": "-"}
# **Takeaway.** Sinusoidal positions are clock hands at geometric speeds; a shift by k is a fixed
# rotation R_k, and PE(p)·PE(q) depends on p − q alone.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 3. Rotate instead of add: rotary embeddings
#
# An added encoding enters the score tangled with the content: with
# $x_p + PE_p$ and $x_q + PE_q$, the score $(x_p + PE_p)^\top W (x_q + PE_q)$ mixes content with
# content, content with position and position with position, and the model must learn to pull
# the offset out. **RoPE** (Su et al. 2021) makes the offset the *only* way position enters. It
# adds nothing to x: it **rotates** each query and key by its position, pair (x_2i, x_2i+1) of the
# vector at position m turned counter-clockwise by mθ_i, θ_i = 10000^{−2i/d}: section 2's clock
# hands (its R_k, acting on pairs stored as (sin, cos), is a clockwise turn: RoPE's R_{−k}). Since
# $R_m^\top R_n = R_{n-m}$,
#
# $$\langle R_m q,\; R_n k\rangle = q^\top R_m^\top R_n k = \langle q,\; R_{n-m}\, k\rangle :$$
#
# the score sees the contents q, k and the offset n − m, and nothing else — exactly, for every q
# and k. Rotations keep lengths, so RoPE changes the angle between q and k, never their norms.
#
# > **Glossary** · rotary position embedding (RoPE) 旋转位置编码 · relative position 相对位置 ·
# > offset 偏移 · complex number 复数 · upper bound 上界 · long-distance decay 远程衰减

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 2 · Rotary embeddings
# **Difficulty** ●●○ · **Time** 12 min · **Points** 3 · **Practises** rotating feature pairs,
# broadcasting over leading dimensions, keeping the input's dtype
#
# Write `my_rope(x, positions, base)`: x has shape (..., T, d) with d even and any number of
# leading dimensions (batch, heads); `positions` is a (T,) integer tensor, row t of x sits at
# position `positions[t]` (not necessarily 0, 1, …). Return x with each pair (x_2i, x_2i+1) of row
# t rotated **counter-clockwise** by the angle positions[t] · θ_i, θ_i = base^(−2i/d):
# y_2i = x_2i cos − x_2i+1 sin, y_2i+1 = x_2i sin + x_2i+1 cos. Pair neighbouring features, as
# RoFormer does (not x_i with x_(i+d/2)). Same shape and **dtype** as x. **Compute θ and the angles
# in float64**, then cast cos and sin to x's dtype: float32 angles are off by about 1e-7 of their
# size, and on float64 inputs the check names that mistake ("the angles carry float32
# round-off"). Complex numbers, matrices or slicing are all fine; do not call the package's
# `RotaryEmbedding`.


# %% nbgrader={"grade": false, "grade_id": "ch07_rope", "locked": false, "schema_version": 3, "solution": true} slideshow={"slide_type": "skip"}
def my_rope(x, positions, base):
    """x (..., T, d), positions (T,) long, base -> R_m applied to every row, same shape/dtype."""
    ### BEGIN SOLUTION
    d = x.shape[-1]
    theta = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)  # (d/2,)
    angles = positions.to(torch.float64)[:, None] * theta  # (T, d/2)
    cos, sin = torch.cos(angles).to(x.dtype), torch.sin(angles).to(x.dtype)
    even, odd = x[..., 0::2], x[..., 1::2]  # (..., T, d/2) each
    out = torch.empty_like(x)
    out[..., 0::2] = even * cos - odd * sin
    out[..., 1::2] = even * sin + odd * cos
    return out
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch07_rope_test", "locked": true, "points": 3, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"} tags=["raises-exception"]
from attncourse.exercises.ch07 import check_rope

check_rope(my_rope)
### BEGIN HIDDEN TESTS
import importlib

import attncourse.exercises.ch07 as ex
import attncourse.exercises.engine as engine

engine = importlib.reload(engine)  # fresh copies: a patched check does not count
ex = importlib.reload(ex)
ex.check_rope(my_rope, seed=72)
### END HIDDEN TESTS

# %% [markdown] slideshow={"slide_type": "-"}
# With the course's `RotaryEmbedding` (your `my_rope` gives the same numbers once its check
# passes): the running example's score — query at 10, key at 7 — and the same pair of contents
# moved anywhere along the sequence.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
rope = RotaryEmbedding(64)
g = torch.Generator().manual_seed(1)
q, k = torch.randn(64, generator=g, dtype=DT), torch.randn(64, generator=g, dtype=DT)


def rotated(v, m):
    return rope(v[None], torch.tensor([m]))[0]  # R_m v


scores = torch.tensor(
    [float(rotated(q, m) @ rotated(k, m - 3)) for m in range(10, 2000, 97)], dtype=DT
)
print(f"<R_10 q, R_7 k> = {float(scores[0]):.6f} = <q, R_-3 k> = {float(q @ rotated(k, -3)):.6f}")
print(
    "the same at m = 10, 107, ..., 1950 (spread < 1e-11):",
    float(scores.max() - scores.min()) < 1e-11,
)
print("norms kept:", abs(float(rotated(q, 1234).norm() - q.norm())) < 1e-12)

# %% [markdown] slideshow={"slide_type": "-"}
# **Does RoPE make far keys weaker?** Su et al. (2021, §3.4.3) write pair i of q and k as complex
# numbers q̃_i, k̃_i, bound the score by summation by parts (A.9 checks the bound), and call its
# *relative* form $\frac{1}{d/2}\sum_j |S_j(r)|$, with $S_j(r) = \sum_{l<j} e^{\mathrm{i}\, r
# \theta_l}$, a long-distance decay. Three things to keep apart:
#
# - it is a **bound**, and it falls only as a trend: at d = 128 it rises in 115 of the 256 unit
#   steps from r = 0 to 256 (the cell counts them);
# - for unrelated q and k the expected score is 0 at every distance — nothing to decay;
# - the score of a vector with **itself** is $q^\top R_r q = \sum_i |\tilde q_i|^2 \cos r\theta_i$.
#   It is proportional to section 2's curve Σ_i cos rθ_i only when **every pair has the same
#   norm**; for a random q the weights |q̃_i|² differ, and so does the curve (the cell compares
#   both). Its average over q ~ N(0, I) is 2 Σ_i cos rθ_i.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
r_axis = torch.arange(0, 257)
bound = ch07.rope_relative_bound(r_axis, 128)  # (257,) (1/(d/2)) sum_j |S_j(r)|
rises = int((bound[1:] > bound[:-1]).sum())
print(f"relative bound, d = 128: {float(bound[0]):.1f} at r = 0, {float(bound[256]):.2f} at r = 256;"
      f" it rises in {rises} of 256 unit steps")  # fmt: skip
theta = 10000 ** (-torch.arange(0, 128, 2, dtype=DT) / 128)  # (64,)
q128 = torch.randn(128, generator=torch.Generator().manual_seed(2), dtype=DT)
self_score = RotaryEmbedding(128)(q128.expand(257, 128)[None], r_axis)[0] @ q128  # q^T R_r q
pair_norms = q128[0::2] ** 2 + q128[1::2] ** 2  # (64,) |q~_i|^2
formula = torch.cos(r_axis[:, None] * theta) @ pair_norms  # sum_i |q~_i|^2 cos(r theta_i)
print(
    "q^T R_r q = sum_i |q~_i|^2 cos(r theta_i) for r = 0..256:", torch.allclose(self_score, formula)
)
equal_pairs = ch07.dot_product_profile(r_axis, 128)  # sum_i cos(r theta_i): every |q~_i| = 1
print(f"largest gap between the two curves, each / its value at 0: "
      f"{float((formula / formula[0] - equal_pairs / equal_pairs[0]).abs().max()):.2f}")  # fmt: skip
assert rises == 115 and torch.allclose(self_score, formula)

# %% slideshow={"slide_type": "subslide"}
fig, ax = plt.subplots(figsize=(7, 3))
ax.plot(r_axis, bound / bound[0], color="tab:red", label="Su et al.'s relative bound / value at 0")
ax.plot(r_axis, equal_pairs / equal_pairs[0], color="tab:blue", label="q^T R_r q, equal pair norms")
ax.plot(r_axis, formula / formula[0], color="tab:green", lw=0.8, label="q^T R_r q, a random q")
ax.axhline(0, color="0.6", lw=0.8, label="E[q^T R_r k], q, k independent: 0")
ax.set(
    xlabel="relative distance r",
    ylabel="÷ its value at r = 0",  # shapes only: a bound on |score| ÷ its value at 0 is none
    title="RoPE, d = 128: the shapes of a bound and of two self-scores",
)
ax.legend(fontsize=8)
plt.tight_layout()
plt.show()

# %% [markdown] slideshow={"slide_type": "-"}
# **Takeaway.** RoPE rotates q and k by their positions, so ⟨R_m q, R_n k⟩ = ⟨q, R_{n−m} k⟩: the
# score depends on the contents and the offset only. Its "long-distance decay" is a bound that
# falls on the whole, not a decay of every score.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 4. Bias by distance: ALiBi
#
# Sinusoidal and rotary scores are sums of cosines: bounded, and they come back up — neither can
# push a far key down without limit, and at positions beyond the training length both show the
# model angles it has never seen. **ALiBi** (Press et al. 2022) adds no vector and rotates nothing:
# head h adds a fixed penalty to the score of query i and key j ≤ i,
#
# $$s_{hij} = \frac{q_i \cdot k_j}{\sqrt{d_k}} - m_h\,(i - j),$$
#
# with slopes $m_h = 2^{-8h/H}$, h = 1 … H (1/2, 1/4, …, 1/256 for H = 8). For a head count that is
# not a power of two, the paper takes the n slopes of the largest power of two n below H, then
# the first H − n of every other slope of 2n heads. For keys of equal content the weights are
# exactly ∝ $e^{-m_h (i - j)}$: a recency prior, a different width in each head, the same at every
# length.
#
# > **Glossary** · attention with linear biases (ALiBi) 线性偏置注意力 · slope 斜率 · recency
# > prior 近因先验 · underflow 下溢 · single precision (float32) 单精度浮点数

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
print("slopes, 8 heads: ", [f"1/{round(1 / float(m))}" for m in alibi_slopes(8, dtype=DT)])
print("slopes, 12 heads:", [f"{float(m):.4f}" for m in alibi_slopes(12, dtype=DT)])
print("  = the 8 above, then every other slope of 16 heads:",
      [f"{float(m):.4f}" for m in alibi_slopes(16, dtype=DT)[0::2][:4]])  # fmt: skip

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 3 · Causal attention weights with ALiBi
# **Difficulty** ●●○ · **Time** 12 min · **Points** 3 · **Practises** a bias per head broadcast
# over (query, key), a causal mask before the softmax, a stable softmax
#
# Write `my_alibi_weights(scores, slopes)`: `scores` (B, H, T, T) are the already scaled q·k scores
# of H heads (dimension 2 the query i, dimension 3 the key j), `slopes` (H,) the heads' slopes.
# Return the causal attention weights (B, H, T, T): for query i, the softmax over the keys j ≤ i of
# scores[b, h, i, j] − slopes[h] · (i − j); keys j > i get weight exactly 0. Keep the dtype
# (float64 here) and do not change the inputs. Scores can be as large as 1000, where `exp`
# overflows: subtract each query's largest score first. From scratch: the check refuses PyTorch's
# softmax and attention functions, and the course's package (a stable softmax of your own, written
# in the answer cell, is fine).


# %% nbgrader={"grade": false, "grade_id": "ch07_alibi_weights", "locked": false, "schema_version": 3, "solution": true} slideshow={"slide_type": "skip"}
def my_alibi_weights(scores, slopes):
    """scores (B, H, T, T), slopes (H,) -> causal ALiBi attention weights (B, H, T, T)."""
    ### BEGIN SOLUTION
    T = scores.shape[-1]
    i = torch.arange(T)[:, None]  # (T, 1) queries
    j = torch.arange(T)[None, :]  # (1, T) keys
    biased = scores - slopes[:, None, None] * (i - j).to(scores.dtype)  # (B, H, T, T)
    biased = biased.masked_fill(j > i, float("-inf"))  # future keys: weight exp(-inf) = 0
    e = torch.exp(biased - biased.amax(dim=-1, keepdim=True))
    return e / e.sum(dim=-1, keepdim=True)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch07_alibi_weights_test", "locked": true, "points": 3, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"} tags=["raises-exception"]
from attncourse.exercises.ch07 import check_alibi_weights

check_alibi_weights(my_alibi_weights)
### BEGIN HIDDEN TESTS
import importlib

import attncourse.exercises.ch07 as ex
import attncourse.exercises.engine as engine

engine = importlib.reload(engine)  # fresh copies: a patched check does not count
ex = importlib.reload(ex)
ex.check_alibi_weights(my_alibi_weights, seed=73)
### END HIDDEN TESTS

# %% [markdown] slideshow={"slide_type": "-"}
# The course's version: `alibi_bias` passed to the package's `softmax` with a causal mask. With
# equal contents (all scores 0) only the bias decides; in the running example, the key three
# positions back gets $e^{-3m}$ of the weight of the query's own position. And in float32 the weight
# of a far key does not just get small: it becomes **exactly 0**.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
causal = torch.ones(11, 11, dtype=torch.bool).tril()  # (T, T) query 10 reads keys 0..10
w_equal = softmax(alibi_bias(8, 11, dtype=DT), mask=causal)  # (8, 11, 11) equal contents
ratio = w_equal[:, 10, 7] / w_equal[:, 10, 10]  # key 7 against key 10, each head
print("w(10 -> 7) / w(10 -> 10) = e^(-3 m_h) in every head:",
      torch.allclose(ratio, torch.exp(-3 * alibi_slopes(8, dtype=DT))))  # fmt: skip
far = alibi_bias(8, 400, dtype=torch.float32)[0, -1]  # head 1 (m = 1/2), query 399, float32
w_far = softmax(far)  # (400,)
distance = 399 - torch.arange(400)
print("float32, m = 1/2, 400 keys: every key at distance >= 210 gets weight exactly 0:",
      bool((w_far[distance >= 210] == 0).all()), "| every key at distance <= 170 gets > 0:",
      bool((w_far[distance <= 170] > 0).all()))  # fmt: skip
assert bool((w_far[distance >= 210] == 0).all()) and bool((w_far[distance <= 170] > 0).all())
exact = softmax(far.double())  # (400,) the same weights in float64, not rounded away
normal, subnormal = (int(distance[exact < tiny].min()) for tiny in (2.0**-126, 2.0**-149))
print(f"the exact weights fall below 2^-126 from d = {normal}, below 2^-149 from d = {subnormal}")

# %% [markdown] slideshow={"slide_type": "-"}
# The weight $e^{-d/2}/Z$ ($Z \approx 2.54$) falls below float32's smallest normal number
# $2^{-126}$ from d = 173 and below its smallest subnormal $2^{-149}$ from d = 205 (the margins
# 170 and 210 hold with or without subnormals): beyond that the steepest head reads **nothing** of
# a key.
#
# **Takeaway.** ALiBi subtracts m_h (i − j) from each head's scores: a built-in recency prior,
# identical at every length, that can silence far keys completely.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 5. Does information fade with distance?
#
# Source 000 defines how much of position j's information reaches position i, the **transfer
# efficiency** η_ij = I(z_i; z_j)/H(z_i) (Def. 14.3.14, Eq. 14.3.36), a mutual information over an
# entropy. (Recall: the **mutual information** I(z; x) = H(z) − H(z | x) is the uncertainty about
# z that knowing x removes: 0 for independent z and x, H(z) when x fixes z.) Which of our
# encodings make it fall with the distance d = i − j, and how?
#
# An exact setting: tokens x_j uniform over V = 16 symbols; a read-out z that **copies** token x_j
# with probability α_j (its attention weight) and otherwise is an independent uniform token. Then
# H(z) = log₂ V, and the information z keeps about x_j depends on α_j alone:
#
# $$I(z; x_j) = \log_2 V - H(z \mid x_j) \approx \frac{(V-1)\,\alpha_j^2}{2\ln 2}\ \text{bits}
# \quad(\alpha_j \text{ small}),$$
#
# so η_j = I/log₂ V ∈ [0, 1] is a function of the weight — and it falls like the weight
# **squared**.
#
# > **Glossary** · transfer efficiency 信息传递效率 · mutual information 互信息 · conditional
# > entropy 条件熵 · decay length 衰减长度 · exponential decay 指数衰减 · dilution 稀释

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 4 · How much a selection tells
# **Difficulty** ●●○ · **Time** 10 min · **Points** 2 · **Practises** conditional distributions,
# I = H(z) − H(z | x), entropies in bits, 0 · log 0
#
# Write `my_selection_information(alpha, vocab)`: tokens are uniform over `vocab` symbols; a
# read-out z copies the token x_j with probability α and otherwise is a fresh uniform token,
# independent of x_j. Return I(z; x_j) **in bits** for every entry of the float64 tensor `alpha`
# (values in [0, 1], any shape), same shape and dtype. Derive P(z | x_j) first (careful: the fresh
# token can equal x_j too), then I = H(z) − H(z | x_j). At α = 0 and α = 1 some probabilities are
# exactly 0: count 0 · log 0 as 0, either with `torch.where` or with an ε-guarded log,
# log₂(p + ε) with ε ≤ 1e-9 (that changes I by at most V·ε/ln 2, which the check allows).


# %% nbgrader={"grade": false, "grade_id": "ch07_selection_information", "locked": false, "schema_version": 3, "solution": true} slideshow={"slide_type": "skip"}
def my_selection_information(alpha, vocab):
    """alpha (...,) float64 in [0, 1], vocab (int) -> I(z; x_j) in bits, shape (...)."""
    ### BEGIN SOLUTION
    hit = alpha + (1 - alpha) / vocab  # P(z = x_j | x_j)
    miss = (1 - alpha) / vocab  # P(z = any one other token | x_j)

    def plogp(p):
        return torch.where(p > 0, p * torch.log2(torch.where(p > 0, p, torch.ones_like(p))), 0.0)

    return math.log2(vocab) + plogp(hit) + (vocab - 1) * plogp(miss)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch07_selection_information_test", "locked": true, "points": 2, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"} tags=["raises-exception"]
from attncourse.exercises.ch07 import check_selection_information

check_selection_information(my_selection_information)
### BEGIN HIDDEN TESTS
import importlib

import attncourse.exercises.ch07 as ex
import attncourse.exercises.engine as engine

engine = importlib.reload(engine)  # fresh copies: a patched check does not count
ex = importlib.reload(ex)
ex.check_selection_information(my_selection_information, seed=74)
### END HIDDEN TESTS

# %% [markdown] slideshow={"slide_type": "-"}
# Now make the keys identical, so that only positions shape the last query's weights over 64 keys
# (`ch07.position_only_weights`; the values are still the tokens x_j), and read η at each distance
# with `ch07.transfer_efficiency`: no positions (uniform weights), sinusoidal positions (scores
# 4 · PE(i)·PE(j)/√64, the 4 sharpening the softmax), and two ALiBi heads.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
T_eta, distances = 64, [0, 1, 2, 5, 10, 20, 40, 60]
etas = {
    "none": ch07.transfer_efficiency(ch07.position_only_weights("none", T_eta)),
    "sinusoidal, x4": ch07.transfer_efficiency(
        ch07.position_only_weights("sinusoidal", T_eta, sharpness=4.0)
    ),
    "ALiBi m = 1/2": ch07.transfer_efficiency(ch07.position_only_weights("alibi", T_eta, head=0)),
    "ALiBi m = 1/8": ch07.transfer_efficiency(ch07.position_only_weights("alibi", T_eta, head=2)),
}
print(
    f"{'eta(d)':>15} "
    + " ".join(f"{'d=' + str(d_):>9}" for d_ in distances)
    + "  slope of ln eta, d = 30..63"
)
slopes_fit = {}
for name, eta in etas.items():
    slopes_fit[name] = np.polyfit(np.arange(30, T_eta), np.log(eta[30:].numpy()), 1)[0]
    rises = int((eta[1:] > 1.01 * eta[:-1]).sum())
    print(f"{name:>15} " + " ".join(f"{float(eta[d_]):9.2e}" for d_ in distances)
          + f"  {round(slopes_fit[name], 3) + 0.0:+.3f}   ({rises} rises)")  # fmt: skip
for n in (16, 64, 256):  # no positions, longer sequences
    eta = ch07.transfer_efficiency(ch07.position_only_weights("none", n))
    print(f"no positions, {n:3d} keys: eta = {float(eta[0]):.2e} at every distance:",
          float(eta.max() - eta.min()) < 1e-15)  # fmt: skip
assert (
    abs(slopes_fit["ALiBi m = 1/2"] + 1.0) < 1e-3 and abs(slopes_fit["ALiBi m = 1/8"] + 0.25) < 1e-2
)
assert int((etas["sinusoidal, x4"][1:] > 1.01 * etas["sinusoidal, x4"][:-1]).sum()) > 0

# %% slideshow={"slide_type": "subslide"}
fig, ax = plt.subplots(figsize=(7, 3.2))
for (name, eta), color in zip(etas.items(), ("tab:gray", "tab:blue", "tab:red", "tab:orange")):
    ax.semilogy(np.arange(T_eta), eta.clamp_min(1e-30), color=color, label=name)
ax.set(xlabel="distance d = i - j", ylabel="eta = I(z; x_j) / H(z)", ylim=(1e-30, 1),
       title="transfer efficiency with equal contents: positions alone")  # fmt: skip
ax.legend(fontsize=8)
plt.tight_layout()
plt.show()

# %% [markdown] slideshow={"slide_type": "-"}
# > **⚠ The source says** the transfer efficiency decays exponentially with distance,
# > η_ij ≈ exp(−d/λ), λ "the attention decay length" (Thm. 14.3.12, Eq. 14.3.38), with no condition.
# > For attention, in fact, the decay is a property of the **positional encoding**. With ALiBi, ln η
# > falls on a straight line of slope −2m (−1.000 for m = 1/2, −0.25 for m = 1/8): λ = 1/(2m), the
# > weight decays like $e^{-md}$ and the information like its square. Without positions η is the
# > **same at every distance**. Sinusoidal positions give a fast drop near d = 0, then a slow,
# > uneven fall — η *rises* again at several distances — because their scores are bounded sums of
# > cosines. Content-based attention has no decay built in at all (chapter 04).
#
# One more distinction. Without positions η is flat in d, yet it is smaller for longer sequences
# (8.4·10⁻³ with 16 keys, 4.1·10⁻⁵ with 256, printed above): uniform weight 1/n spreads thinner
# as n grows. That is **dilution with n**, not decay with distance — every key, near or far,
# loses alike.
#
# **Takeaway.** How information fades with distance is a design choice: a linear bias (ALiBi)
# makes it exponential with λ = 1/(2m); no positions make it flat; sinusoidal positions make it
# bounded and non-monotone.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 6. Train short, test long
#
# **Paper** (Press, Smith and Lewis, ICLR 2022, Fig. 1): language models trained on sequences of
# length L = 512 or 1024 and evaluated on longer ones. With sinusoidal positions the perplexity
# blows up a few dozen tokens beyond L; rotary positions hold a little longer, then degrade too;
# ALiBi stays flat far beyond L. Beyond L, sinusoidal positions are vectors and RoPE offsets are
# angles the model never saw; ALiBi's penalty keeps growing, so keys farther back than any seen
# get almost no weight. A learned table has no rows there at all (section 2).
#
# **Setup** (a few seconds a run): the task "most recent marker" (`ch07.marker_batch`): tokens 0–3
# are markers (each position is one with probability 0.15), 4–15 noise; at every position the model
# must output the latest marker so far. Position matters, but mostly locally: the answer is
# usually a few tokens back (20 or more at 0.85²⁰ ≈ 4 % of positions past the 20th).
# **Model**: embedding → one causal attention layer (d = 32, 4 heads, no feed-forward) → 4
# logits, with no positions, sinusoidal, RoPE or ALiBi; 300 steps of 32 sequences of length
# **L = 32**. Accuracy over all positions of 256 fresh sequences of length L,
# 2L and 4L; seeds 0 and 1. **Pass** (both seeds): ALiBi ≥ 0.93 at 4L and within 0.03 of its
# accuracy at L; sinusoidal ≥ 0.9 at L and ≤ 0.7 at 4L; ALiBi − sinusoidal ≥ 0.25 at 4L; without
# positions ≤ 0.85 already at L.
#
# > **Glossary** · extrapolation 外推 · length generalisation 长度泛化 · training length 训练长度 ·
# > perplexity 困惑度 · locality 局部性

# %% slideshow={"slide_type": "-"}
# NBVAL_IGNORE_OUTPUT
results = ch07.train_short_test_long(
    encodings=("sinusoidal", "rope", "alibi", "none"), seeds=(0, 1), test_lengths=(32, 64, 128)
)
L = ch07.MARKER_TRAINING["length"]
print(
    f"accuracy over all positions   {'L = 32':>8} {'2L = 64':>8} {'4L = 128':>9} | beyond L at 4L"
)
for (encoding, seed), acc in results.items():
    row = " ".join(f"{float(acc[n].mean()):8.3f}" for n in (32, 64, 128))
    print(f"{encoding:>10}, seed {seed}          {row}  | {float(acc[128][L:].mean()):.3f}")
for seed in (0, 1):
    mean = {
        e: {n: float(results[e, seed][n].mean()) for n in (32, 64, 128)}
        for e in ("sinusoidal", "rope", "alibi", "none")
    }
    assert mean["alibi"][128] >= 0.93 and mean["alibi"][128] >= mean["alibi"][32] - 0.03, seed
    assert mean["sinusoidal"][32] >= 0.9 and mean["sinusoidal"][128] <= 0.7, seed
    assert mean["alibi"][128] - mean["sinusoidal"][128] >= 0.25, seed
    assert mean["none"][32] <= 0.85, seed
print("ALiBi holds at 4L on both seeds; sinusoidal collapses beyond L")

# %% slideshow={"slide_type": "subslide"}
fig, ax = plt.subplots(1, 2, figsize=(11, 3.3))
colors = {"sinusoidal": "tab:blue", "rope": "tab:purple", "alibi": "tab:red", "none": "tab:gray"}
for encoding, color in colors.items():
    curve = (results[encoding, 0][128] + results[encoding, 1][128]) / 2  # (128,) mean of 2 seeds
    ax[0].plot(
        np.convolve(curve.numpy(), np.ones(4) / 4, mode="valid"), color=color, label=encoding
    )
    means = [float((results[encoding, 0][n].mean() + results[encoding, 1][n].mean()) / 2)
             for n in (32, 64, 128)]  # fmt: skip
    ax[1].plot([1, 2, 3], means, "o-", color=color, label=encoding)
ax[0].axvline(L, ls="--", color="k", lw=1, label="training length L")
ax[0].set(xlabel="position (test length 4L = 128)", ylabel="accuracy (mean of 2 seeds)",
          ylim=(0, 1.05), title="accuracy at each position")  # fmt: skip
ax[1].set(xlabel="test length", ylabel="accuracy over all positions", ylim=(0, 1.05),
          title="train at L = 32, test at L, 2L, 4L")  # fmt: skip
ax[1].set_xticks([1, 2, 3], ["L = 32", "2L = 64", "4L = 128"])
ax[0].legend(fontsize=8)
plt.tight_layout()
plt.show()

# %% [markdown] slideshow={"slide_type": "-"}
# The effect of the paper's Fig. 1, at CPU scale: inside the training length every encoding but
# "none" is nearly perfect; past it, sinusoidal positions fall towards chance within a few
# positions, RoPE falls more slowly, and ALiBi hardly notices (its accuracy at 4L stays within the
# asserted 0.03 of its accuracy at L). Without positions the causal model stays far below the
# others even at L (≤ 0.85 asserted): its mask tells it *which* tokens came before, not *which came
# last*.
#
# **What this does not show.** The task is **local by design**: the answer is usually near, and
# ALiBi's recency prior is exactly the right bias for it. This model's steepest head (4 heads,
# slope m = 1/4) scales the weight of a key 20 positions back by $e^{-5} \approx 0.007$ against an
# equal score at the query: on a task whose answer lies far back, that bias works against it.
#
# **Play with it.** The four encodings side by side: the **encoding**, the **dimension** d, the
# **position** p and the **RoPE plane** i. Panels: the encoding as a heat map (rows: positions;
# the black line is p); the similarity of p with every q against q − p; RoPE's rotation of a fixed
# unit vector in plane i for m = 0 … p (green: m = 0, red: m = p); ALiBi's bias row of query p in
# each of 8 heads. "learned" is the table trained in section 2 (8 positions). Try:
# 1. sinusoidal, move p: the similarity curve slides but keeps its shape; change d: more slow
#    clock hands, a wider central peak.
# 2. learned, move p: the curve changes with p; past p = 7 there is no row at all.
# 3. RoPE, d = 64, plane 0 against plane 20 at p = 63: the fast plane has gone round ten times,
#    the slow one has barely moved — near positions are told apart by fast planes, far ones by
#    slow planes.
# 4. ALiBi at p = 63: the steepest head has all but forgotten key 0 ($e^{-31.5}$), the shallowest
#    still weighs it by $e^{-0.25}$.

# %% slideshow={"slide_type": "slide"}
# NBVAL_IGNORE_OUTPUT
learned = sort_models["learned"].learned.weight.detach().double()  # (8, 32) trained in section 2
ch07.encoding_widget(encoding="sinusoidal", dim=64, position=10, learned_table=learned)

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Takeaway.** What a model sees beyond its training length decides whether it extrapolates:
# ALiBi's penalties are the same at every length, sinusoidal vectors and RoPE angles are new — and
# a recency bias helps only where the answer is recent.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Summary
#
# - Self-attention is **permutation-equivariant**, Attn(PX) = P Attn(X); after a mean it is
#   invariant, and a task like "is it sorted?" is then impossible (loss ≥ ln 2). Order must be
#   put in: added, rotated, or as a bias.
# - **Sinusoidal** positions: PE(p + k) = R_k PE(p), R_k a block rotation independent of p (the cos
#   features are essential); PE(p)·PE(q) = Σ_i cos((p − q)θ_i). A **learned** table has no rows
#   beyond its length.
# - **RoPE** rotates q and k: ⟨R_m q, R_n k⟩ = ⟨q, R_{n−m} k⟩ exactly. Su et al.'s long-distance
#   decay is a bound that falls as a trend; qᵀR_r q = Σ_i |q̃_i|² cos rθ_i.
# - **ALiBi** subtracts m_h (i − j): equal-content weights ∝ $e^{-m d}$, and in float32 exactly 0
#   for far keys.
# - Information fades with distance only if a positional bias makes it: exponentially with ALiBi
#   (λ = 1/(2m)), not at all without positions (only dilution with n), boundedly with sinusoids.
# - Reproduced (Press et al. 2022): trained at L = 32, tested at 4L, ALiBi keeps its accuracy,
#   sinusoidal positions collapse, RoPE lies between — on a task that is local by design.

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Check yourself**
#
# 1. A model with no positional information and a mean over positions is trained on "is it
#    sorted?". What is the lowest mean loss it can reach on the paired batches, and why?
# 2. Why does the sinusoidal encoding need the cos features, when the sin features already differ
#    from position to position?
# 3. With RoPE, the same q and k sit at positions (5, 2) and at (105, 102). How do the two scores
#    compare? And at (5, 2) and (2, 5)?
# 4. An ALiBi head with slope m = 1/4 sees four keys of equal content at distances 0, 1, 2, 3 from
#    its query. What are their weights?
# 5. Without positions, η is the same at every distance. Is it then independent of the sequence
#    length too?
#
# <details><summary>Answers</summary>
#
# 1. ln 2, as a mean over the sequences. The two members of a pair get identical logits, so with
#    probability q of "sorted" the pair costs −ln q − ln(1 − q) ≥ 2 ln 2, equality at q = ½.
# 2. A shift must be a linear map: sin((p + k)θ) = sin pθ cos kθ + cos pθ sin kθ needs cos pθ, and
#    with sines only PE(0) = 0, which no linear map sends to PE(k) ≠ 0.
# 3. Equal: both are ⟨q, R_{−3} k⟩, the offset is the same. At (2, 5) the offset is +3, so the score
#    is ⟨q, R_3 k⟩, in general a different number (the same, for instance, when q = k).
# 4. Proportional to $e^0$, $e^{-1/4}$, $e^{-1/2}$, $e^{-3/4}$; divided by their sum ≈ 2.858, about
#    0.350, 0.273, 0.212, 0.165.
# 5. No: each key gets weight 1/n, so η falls as n grows — for large n like 1/n², since
#    I ≈ (V − 1)/(2 n² ln 2) bits. That is dilution, the same for near and far keys.
# </details>
#
# **Next — chapter 08, residual, highway and normalization**: what keeps the signal (and the
# positions added at the input) alive through many layers — identity paths x + F(x), gates, and
# LayerNorm vs BatchNorm vs RMSNorm.

# %% [markdown] slideshow={"slide_type": "skip"}
# ## Appendix · The source, checked
#
# Source 000, §14.3.6 analyses long-range dependence with information theory: a transfer
# efficiency between positions, its decay with distance, gradients and paths, and what a positional
# encoding must carry. It prints no code, so every verdict below is about a formula or a sentence.
# Marks: **✓ holds** · **⚠ holds only under a condition** (stated) · **✗ wrong as printed** (a
# counterexample and the correct statement). Source 000 does not mention RoPE or ALiBi; A.9 holds
# the course's own checks of what the main path says about them.
#
# ### A.1 Global access and long-range dependence (the section's opening)
#
# **Claim check — "attention solves long-range dependence by global access" ⚠.** One layer
# connects every pair of positions (chapter 04), but only with positions does it know which pair
# is which: section 1 measured Attn(PX) = P Attn(X) and a task whose loss cannot go below ln 2
# without them. The cell measures, for one attention layer in float64, max |f(PX) − P f(X)| with
# each way of putting positions in (the tokens move, the positions stay). A causal mask breaks the
# symmetry too: the t-th query sees t keys.

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
gaps = ch07.permutation_gaps(T=12, d=16, num_heads=4, seed=0)
print("one attention layer, float64, T = 12: max |f(P x) - P f(x)|")
for name, gap in gaps.items():
    shown = "< 1e-12  (equivariant)" if gap < 1e-12 else f"{gap:.3f}   (not equivariant)"
    print(f"  {name:18s} {shown}")
assert gaps["none"] < 1e-12
assert all(gap > 1e-2 for name, gap in gaps.items() if name != "none")

# %% [markdown] slideshow={"slide_type": "skip"}
# ### A.2 The sinusoidal encoding as printed (Lemma 14.3.21)
#
# **Claim check — Lemma 14.3.21, "relative positions can be extracted by a linear
# transformation" ✓**, exactly: PE(p + k) = R_k PE(p) with R_k a block rotation independent of p
# (section 2; R_j R_k = R_{j+k}, R_{−k} = R_kᵀ below). **Claim check — Lemma 14.3.21, the formula
# PE_(pos, 2i) = sin(pos/10000^{2i/d}) as printed ⚠**: with sin features alone PE(0) = 0 and no
# linear map sends 0 to PE(k) ≠ 0; the property needs the cos features PE_(pos, 2i+1) that Vaswani
# et al. interleave with them. The source's sin(a − b) formula is the same idea with the other
# sign.

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
R5 = sinusoidal_shift_matrix(5, 64, dtype=DT)
print("R_3 R_5 = R_8:", torch.allclose(R3 @ R5, sinusoidal_shift_matrix(8, 64, dtype=DT)),
      "| R_k orthogonal:", torch.allclose(R3 @ R3.T, torch.eye(64, dtype=DT)),
      "| R_-3 = R_3^T:", torch.allclose(sinusoidal_shift_matrix(-3, 64, dtype=DT), R3.T))  # fmt: skip
sin_only = pe[:, 0::2]  # (250, 32) the source's formula: sin features only
print("sin features only: PE(0) =", float(sin_only[0].abs().max()),
      f"(every linear map sends it to 0), but |PE(5)| = {float(sin_only[5].norm()):.3f}")  # fmt: skip
print("PE(10 + 3) != PE(10 - 3) though their products with PE(10) agree:",
      not torch.allclose(pe[13], pe[7]), bool(abs(pe[10] @ pe[13] - pe[10] @ pe[7]) < 1e-12))  # fmt: skip
assert float(sin_only[0].abs().max()) == 0

# %% [markdown] slideshow={"slide_type": "skip"}
# **Frequency coverage and resolution.** The frequencies θ_i = 10000^{−2i/d} form a geometric
# sequence from 1 radian per position down to almost 10⁻⁴; the wavelengths 2π/θ_i run from 2π ≈ 6.3
# positions to 2π · 10000^{(d−2)/d}. Since R_k is orthogonal, ‖PE(p + k) − PE(p)‖ =
# (Σ_i 4 sin²(kθ_i/2))^{1/2} at every p: the resolution is uniform along the sequence, and the
# step between neighbours grows like the length of the vector, √(d/2).

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
lam = ch07.wavelengths(64)
print("d = 64, wavelengths 2 pi / theta_i for i = 0, 1, 8, 16, 31:")
print("  " + "  ".join(f"{float(lam[i]):,.1f}" for i in (0, 1, 8, 16, 31)))
dist = torch.cdist(pe, pe)  # (250, 250)
dist_spread = max(
    float((torch.diagonal(dist, k_) - ch07.shift_distance_profile([k_], 64)).abs().max())
    for k_ in range(1, 40)
)
print("||PE(p+k) - PE(p)|| = sqrt(sum_i 4 sin^2(k theta_i / 2)) at every p (error < 1e-12):",
      dist_spread < 1e-12)  # fmt: skip
print(f"{'d':>5} {'|PE(p)|':>8} {'|PE(p+1) - PE(p)|':>18} {'ratio':>6}")
for d_ in (16, 64, 256):
    step = float(ch07.shift_distance_profile([1], d_)[0])
    print(f"{d_:5d} {math.sqrt(d_ / 2):8.3f} {step:18.3f} {step / math.sqrt(d_ / 2):6.3f}")
assert dist_spread < 1e-12

# %% [markdown] slideshow={"slide_type": "skip"}
# Relative to ‖PE‖, a bigger d does *not* separate neighbours better. What d buys is more clock
# hands between the fastest and the slowest, and that pays off when the encoding is read with
# noise: the cell decodes 512 positions from PE(p) + N(0, 0.5²) per coordinate by the nearest row.

# %% slideshow={"slide_type": "skip"}
# NBVAL_IGNORE_OUTPUT
decoding = ch07.noisy_decoding_accuracy(512, (2, 8, 32, 128), noise=0.5, samples=2000, seed=0)
print("positions recovered from PE(p) + noise (sigma = 0.5), 512 positions:")
for d_, share in decoding.items():
    print(f"  d = {d_:3d}: {share:.3f}")
values = list(decoding.values())
assert all(b > a for a, b in zip(values, values[1:])) and values[0] < 0.1 and values[-1] > 0.8

# %% [markdown] slideshow={"slide_type": "skip"}
# **Claim check — Lemma 14.3.21, "frequency coverage: 2i/d from low to high frequency" ✓**: the
# exponent 2i/d runs over [0, 1), so the frequencies run geometrically from 1 to 10⁻⁴·10^{8/d}
# (wavelengths 6.3 … 47,117 positions for d = 64). **Claim check — Lemma 14.3.21, "O(d)
# independent frequency components; the dimension determines the precision" ⚠**: there are
# exactly d/2 frequencies; in exact arithmetic any d ≥ 2 already separates every position
# (θ_0 = 1 rad is not a rational multiple of 2π, A.8); the range is set by the base 10000, the
# neighbour resolution relative to ‖PE‖ does not improve with d, and what d improves is robustness
# to noise (under 10 % of the positions recovered at d = 2, over 80 % at d = 128, as asserted).
#
# ### A.3 The transfer efficiency (Def. 14.3.14)
#
# **Claim check — Def. 14.3.14 (Eq. 14.3.36), η_ij = I(z_i; z_j)/H(z_i), for discrete z ✓**: for a
# discrete read-out such as section 5's, 0 ≤ I(z_i; z_j) ≤ H(z_i), so η is a fraction in [0, 1]
# (Exercise 4). **Claim check — Def. 14.3.14 for continuous z ⚠**: H(z_i) is then a differential
# entropy, which can be zero or negative (a Gaussian with variance below 1/(2πe)), and the ratio is
# no fraction; chapter 04 (A.6) meets this with Gaussian hidden states.
#
# ### A.4 "η_ij > 0 for every pair" (Lemma 14.3.19)
#
# **Claim check — Lemma 14.3.19 (Eq. 14.3.37), attention's half, "η_ij > 0 for all i, j" ⚠: for the
# pairs the causal mask allows (η_ij = 0 exactly for j > i).** In exact arithmetic every softmax
# weight over the allowed keys is positive, so η_ij > 0 for those pairs. The attention of this
# chapter's sections 4–6 is causal: the cell builds ALiBi's causal weights for 12 positions and
# reads η with section 5's read-out — exactly 0 for every j > i, positive for every j ≤ i. And even
# an allowed pair can get exactly nothing: in float32, ALiBi's steepest head gives keys beyond
# about 173 positions weight 0 (section 4). **Claim check — Lemma 14.3.19, the RNN half, "η_ij ≈ 0
# for large |i − j|" ⚠**: it holds for contractive recurrences and fails at ρ = 1, where a linear
# Gaussian RNN keeps the same information about every past input (chapter 04, A.6); gated RNNs
# are built to keep information too.

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
T_c = 12
mask_c = torch.ones(T_c, T_c, dtype=torch.bool).tril()  # (T, T) j <= i allowed
qk = torch.randn(1, 4, T_c, T_c, generator=torch.Generator().manual_seed(4), dtype=DT)
w_causal = softmax(qk + alibi_bias(4, T_c, dtype=DT), mask=mask_c)  # (1, 4, T, T)
eta_causal = ch07.transfer_efficiency(w_causal)  # (1, 4, T, T)
print("causal ALiBi, 4 heads, 12 positions: eta_ij == 0 exactly for every j > i:",
      bool((eta_causal[..., ~mask_c] == 0).all()), "| eta_ij > 0 for every j <= i:",
      bool((eta_causal[..., mask_c] > 0).all()))  # fmt: skip
assert (eta_causal[..., ~mask_c] == 0).all() and (eta_causal[..., mask_c] > 0).all()

# %% [markdown] slideshow={"slide_type": "skip"}
# ### A.5 Exponential decay with distance (Thm. 14.3.12)
#
# **Claim check — Thm. 14.3.12 (Eq. 14.3.38), η ≈ exp(−d/λ) ⚠: only with a linear distance bias,
# or a contractive recurrence.** Section 5 measured it from the positions' side: ALiBi gives
# exactly ln η ≈ −2m d + const (λ = 1/(2m)); no positions give a flat η (smaller for longer
# sequences, by dilution, not by distance); sinusoidal positions give a bounded, non-monotone η.
# Chapter 04 (A.6) adds the recurrences: a linear Gaussian RNN with ρ < 1 decays with slope 2 ln ρ
# exactly, and at ρ ≥ 1 does not decay. "λ, the attention decay length" is a design choice (ALiBi's
# slopes), not a law of attention.
#
# ### A.6 Gradients and information (Lemma 14.3.20)
#
# **Claim check — Lemma 14.3.20, Eq. (14.3.39), g_j = Σ_i ∂L/∂z_i · ∂z_i/∂z_j ✓**: the chain rule.
#
# **Claim check — Lemma 14.3.20, "the importance of g_j is proportional to I(z_i; z_j)" ✗.** Two
# counterexamples, each in the chapter's own read-outs:
#
# 1. *Not proportional.* For the averaged read-out z̄ = Σ_j α_j v_j the gradient is ∂z̄/∂v_j = α_j,
#    while section 5's information is I ≈ (V − 1) α_j²/(2 ln 2): the **square** of the gradient
#    (the first table: the ratio to the square law → 1 as α → 0). Tripling the gradient from 0.1 to
#    0.3 multiplies the information by 6.5, not 3.
# 2. *Not even a function of the gradient.* For Gaussian values v_k ~ N(0, I_d), the averaged
#    output o = Σ_k α_k v_k keeps I(o; v_j) = (d/2) ln(Σ_k α_k² / (Σ_k α_k² − α_j²)) nats about
#    v_j. Two heads with the **same** gradient ∂o/∂v_j = α_j = 0.1 keep 0.098 nats (the rest of the
#    weight on one other key, 0.9) and 0.843 nats (spread over nine keys of 0.1): 8.6 times as much
#    information for an identical gradient. Chapter 04 (A.6) finds the same for a linear RNN,
#    where a thousandfold smaller input scale shrinks every gradient a thousandfold and leaves
#    every I unchanged.
#
# **Correct statement**: at a fixed read-out, I grows with |g_j| — for small signals as its square,
# relative to the other paths' share (I ≈ ‖g‖²/(2s) in chapter 04's RNN) — but the gradient alone
# determines neither its size nor the ranking of two positions across read-outs.

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
V = 16
for alpha in (0.3, 0.1, 1e-2, 1e-4, 1e-6):
    info = float(ch07.selection_information_bits(torch.tensor(alpha, dtype=DT), V))
    print(f"alpha = g = {alpha:7.0e}: I = {info:.3e} bits,  I / ((V-1) g^2 / (2 ln 2)) = "
          f"{info / ((V - 1) * alpha**2 / (2 * math.log(2))):.4f}")  # fmt: skip
i_03, i_01 = (
    float(ch07.selection_information_bits(torch.tensor(a, dtype=DT), V)) for a in (0.3, 0.1)
)
print(f"gradient x 3 (0.1 -> 0.3): information x {i_03 / i_01:.1f}")


def averaged_information(alpha, j, d=16):
    """I(o; v_j) in nats for o = sum_k alpha_k v_k, v_k ~ N(0, I_d) independent."""
    total = float((alpha**2).sum())
    return d / 2 * math.log(total / (total - float(alpha[j]) ** 2))


one_other = torch.tensor([0.1, 0.9], dtype=DT)
nine_others = torch.full((10,), 0.1, dtype=DT)
i_one, i_nine = averaged_information(one_other, 0), averaged_information(nine_others, 0)
print(f"gradient 0.1 on v_0 in both: I(o; v_0) = {i_one:.3f} nats (one other key at 0.9), "
      f"{i_nine:.3f} nats (nine others at 0.1)")  # fmt: skip
assert abs(i_03 / i_01 - 6.5) < 0.05 and i_nine > 8 * i_one

# %% [markdown] slideshow={"slide_type": "skip"}
# ### A.7 Gradients as a sum over paths (Thm. 14.3.13)
#
# **Claim check — Thm. 14.3.13 (Eq. 14.3.40), g_j as a sum over paths ✓**: the Jacobian of a
# stack is the sum over paths of the products along them (two attention layers with fixed
# weights: (A₂A₁)_ij = Σ_k (A₂)_ik (A₁)_kj). **Claim check — Thm. 14.3.13, "several paths keep the
# gradient alive when one is blocked" ⚠**: paths add with signs and can cancel. A residual path
# y = x + f(x) with ∂f/∂x = −I has two open paths and a zero gradient:

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
A1 = softmax(torch.randn(5, 5, generator=torch.Generator().manual_seed(2), dtype=DT))
A2 = softmax(torch.randn(5, 5, generator=torch.Generator().manual_seed(3), dtype=DT))
paths = sum(A2[:, m : m + 1] @ A1[m : m + 1, :] for m in range(5))  # sum over the middle position
print("sum over paths == A2 A1:", torch.allclose(paths, A2 @ A1))
x_res = torch.randn(4, dtype=DT, requires_grad=True)
(x_res + (-x_res)).sum().backward()  # identity path + a path with Jacobian -I
print("two open paths, gradient:", x_res.grad.tolist())

# %% [markdown] slideshow={"slide_type": "skip"}
# ### A.8 How many dimensions do n positions need? (Def. 14.3.15, Thm. 14.3.14)
#
# The source asks an encoding PE_pos ∈ ℝ^{d_pe} for "I(PE; pos) ≈ log₂ n" (absolute) and
# "I(PE; pos₁ − pos₂)" (relative), and states as a theorem d_pe ≥ log₂ n + log₂(max distance)
# (Eq. 14.3.41). For a deterministic encoding and a position uniform over n values,
# I(PE; pos) = H(PE(pos)): it is log₂ n **exactly** when the n vectors are all different, and less
# when some coincide. Real vectors can be all different in any dimension; at finite precision the
# question is whether the *stored* vectors are. The cell counts distinct rows of the sinusoidal
# table for n = 4096 in four number formats, and tries a binary code with ⌈log₂ n⌉ coordinates in
# {−1, +1}.

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
n_pos = 4096
dtypes = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32,
          "float64": torch.float64}  # fmt: skip
info = ch07.sinusoidal_information(n_pos, (2, 4, 8), tuple(dtypes.values()))
print(f"I(PE; pos) in bits for n = {n_pos} positions (log2 n = 12; Thm. 14.3.14 asks d_pe >= "
      f"{math.log2(n_pos) + math.log2(n_pos - 1):.1f}):")  # fmt: skip
print(f"{'d_pe':>6} " + " ".join(f"{name:>9}" for name in dtypes))
for d_ in (2, 4, 8):
    print(f"{d_:6d} " + " ".join(f"{info[d_, dt]:9.2f}" for dt in dtypes.values()))
code = ch07.binary_code(1024)  # (1024, 10)
g = torch.Generator().manual_seed(5)
p_idx, q_idx = torch.randint(1024, (2000,), generator=g), torch.randint(1024, (2000,), generator=g)
offsets_read = ch07.offsets_from_pairs(code, p_idx, q_idx)
print(f"binary code, n = 1024 in d_pe = {code.shape[1]}: I(code; pos) = "
      f"{ch07.entropy_bits_of_rows(code):.2f} bits; p - q read back from (code(p), code(q)) for "
      f"2000 random pairs: {int((offsets_read == p_idx - q_idx).sum())} / 2000 right "
      f"(Thm. 14.3.14 asks d_pe >= {math.log2(1024) + math.log2(1023):.1f})")  # fmt: skip
assert info[2, torch.float64] == 12 and info[2, torch.float16] < 11 and info[4, torch.float16] == 12
assert int((offsets_read == p_idx - q_idx).sum()) == 2000

# %% [markdown] slideshow={"slide_type": "skip"}
# **Claim check — Def. 14.3.15, "I(PE; pos) ≈ log₂ n" ✓ (with "=")** for any encoding whose n
# stored vectors are distinct (position uniform). **Claim check — Def. 14.3.15 at finite precision
# ⚠**: rows can merge; sinusoidal with d_pe = 2 keeps all 12 bits in float32 and float64 but not
# in float16 or bfloat16, and d_pe = 4 is enough even there. **Claim check — Def. 14.3.15, the
# relative requirement I(PE; pos₁ − pos₂) ✓** as a requirement; it comes free: two distinct codes
# determine both positions, hence their difference (the binary code above reads every offset
# back).
#
# **Claim check — Thm. 14.3.14, d_pe ≥ log₂ n + log₂(max distance) ✗.** Counterexamples: a binary
# code with d_pe = log₂ n = 10 coordinates encodes 1024 positions *and* every offset (the theorem
# asks for 20); the sinusoidal encoding with d_pe = 2 separates 4096 positions in float64 (the
# theorem asks for 24). **Correct statements**: with b bits per coordinate there are at most
# 2^{b·d_pe} distinct vectors, so I(PE; pos) ≤ min(log₂ n, b·d_pe) and d_pe ≥ log₂ n / b is what
# counting demands; if the vectors must stay apart by δ inside a ball of radius r (noise, limited
# resolution), a packing argument gives n ≤ (1 + 2r/δ)^{d_pe}, i.e. d_pe ≥ log₂ n / log₂(1 + 2r/δ)
# — logarithmic in n, with a constant set by the resolution, and no extra term for distances.
#
# ### A.9 The course's own checks: RoPE's bound and learned positions
#
# Not claims of source 000, but of section 3 and section 2. **Su et al.'s Abel bound** holds for
# every pair tried, |qᵀR_r k| ≤ max_i |h_{i+1} − h_i| Σ_j |S_j(r)| with h_i = q̃_i · conj(k̃_i)
# and h_{d/2} = 0 (summation by parts), for random pairs and for q = k, at every r ≤ 256. And the
# **learned table** trained in section 2 has none of the sinusoidal table's structure: its cosine
# similarities are not constant along diagonals.

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
worst = 0.0
for seed in range(5):
    gq = torch.Generator().manual_seed(10 + seed)
    qs, ks = torch.randn(128, generator=gq, dtype=DT), torch.randn(128, generator=gq, dtype=DT)
    for a, b in ((qs, ks), (qs, qs)):
        score, abel = ch07.rope_abel_bound(a, b, r_axis)
        worst = max(worst, float((score / abel).max()))
print(f"|q^T R_r k| <= Abel bound for 10 pairs and every r <= 256: {worst <= 1}")
assert worst <= 1

# %% slideshow={"slide_type": "skip"}
sinus = sinusoidal_encoding(SORT_LENGTH, 32, dtype=DT)  # (8, 32)
fig, ax = plt.subplots(1, 2, figsize=(8.5, 3.2))
for a, (name, E) in zip(ax, (("learned (trained, section 2)", learned), ("sinusoidal", sinus))):
    unit = E / E.norm(dim=-1, keepdim=True)
    image = a.imshow(unit @ unit.T, cmap="RdBu_r", vmin=-1, vmax=1)
    a.set(xlabel="position q", ylabel="position p", title=f"cosine(E[p], E[q]): {name}")
fig.colorbar(image, ax=ax, fraction=0.03)
plt.show()

# %% [markdown] slideshow={"slide_type": "skip"}
# ### A.10 Claim checks at a glance
#
# | source claim | verdict | correct statement / condition |
# |---|---|---|
# | §14.3.6 opening: attention solves long-range dependence by global access | ⚠ | only with positions: without them attention cannot tell any order (section 1, A.1) |
# | Def. 14.3.14, Eq. (14.3.36): η_ij = I(z_i; z_j)/H(z_i), discrete z | ✓ | a fraction in [0, 1] (section 5, A.3) |
# | Def. 14.3.14, Eq. (14.3.36): η_ij for continuous z | ⚠ | H(z_i) is a differential entropy that can be ≤ 0: not a fraction (A.3) |
# | Lemma 14.3.19, Eq. (14.3.37): η_ij > 0 for all i, j under self-attention | ⚠ | for the pairs the causal mask allows (η_ij = 0 exactly for j > i); allowed far keys get exactly 0 in float32 under ALiBi (A.4) |
# | Lemma 14.3.19: η_ij ≈ 0 in an RNN for large \|i − j\| | ⚠ | contractive recurrences only; a linear RNN at ρ = 1 keeps the same information at every distance (chapter 04, A.6) |
# | Thm. 14.3.12, Eq. (14.3.38): η ≈ exp(−d/λ) | ⚠ | only with a linear distance bias (ALiBi: λ = 1/(2m)) or a contractive recurrence; none: flat; sinusoidal: bounded, non-monotone (section 5, A.5) |
# | Lemma 14.3.20, Eq. (14.3.39): g_j by the chain rule | ✓ | — (A.6) |
# | Lemma 14.3.20: the importance of g_j is proportional to I(z_i; z_j) | ✗ | I ≈ (V − 1) g²/(2 ln 2), the square; equal gradients can carry 8.6× different information (A.6) |
# | Thm. 14.3.13, Eq. (14.3.40): g_j as a sum over paths | ✓ | the Jacobian of a stack, for fixed weights (A.7) |
# | Thm. 14.3.13: several paths keep the gradient alive when one is blocked | ⚠ | paths add with signs and can cancel (A.7) |
# | Def. 14.3.15: I(PE; pos) ≈ log₂ n | ✓ | = log₂ n exactly when the n stored vectors are distinct (A.8) |
# | Def. 14.3.15: I(PE; pos) at finite precision | ⚠ | rows merge: sinusoidal d_pe = 2 keeps 12 bits in float32/64, not in float16/bfloat16 (A.8) |
# | Def. 14.3.15: relative information I(PE; pos₁ − pos₂) | ✓ | free from any injective encoding; the dot product alone loses the sign of q − p (A.2, A.8) |
# | Lemma 14.3.21: PE_(pos,2i) = sin(pos/10000^{2i/d}) | ⚠ | the cos features PE_(pos,2i+1) are needed: with sin only, PE(0) = 0 and no linear map reaches PE(k) (section 2, A.2) |
# | Lemma 14.3.21: frequency coverage from low to high | ✓ | geometric frequencies 1 … ≈10⁻⁴, wavelengths 6.3 … 47,117 (d = 64) (A.2) |
# | Lemma 14.3.21: O(d) frequencies, the dimension determines the precision | ⚠ | d/2 frequencies; any d ≥ 2 is injective in exact arithmetic; d buys robustness to noise; the base sets the range (A.2) |
# | Lemma 14.3.21: relative position by a linear map (sin(a − b)) | ✓ | exactly: PE(p + k) = R_k PE(p), R_k a block rotation independent of p (section 2, A.2) |
# | Thm. 14.3.14, Eq. (14.3.41): d_pe ≥ log₂ n + log₂(max distance) | ✗ | a binary code with d_pe = log₂ n and sinusoidal d_pe = 2 suffice; counting gives d_pe ≥ log₂ n / b (b bits per coordinate), packing d_pe ≥ log₂ n / log₂(1 + 2r/δ) (A.8) |
#
# **Listings.** Section 14.3.6 prints no code.
#
# **Errata in one place.** Wrong as printed: Lemma 14.3.20's "importance ∝ I(z_i; z_j)" (the
# information goes with the square of the gradient, and is not fixed by it) and Thm. 14.3.14's
# bound. Right only under a condition: the opening's "global access" (with positions), Def. 14.3.14
# for continuous z, both halves of Lemma 14.3.19 (allowed pairs; contractive RNNs), Thm. 14.3.12
# (a linear bias or a contractive recurrence), Thm. 14.3.13's "several paths keep the gradient
# alive" (paths can cancel), Def. 14.3.15 at finite precision, and Lemma 14.3.21's sine-only
# formula and its "the dimension determines the precision".
