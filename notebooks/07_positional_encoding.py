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
# *位置编码* — source 000, §14.3.6 (Def. 14.3.14–14.3.15, Lemma 14.3.19–14.3.21,
# Thm. 14.3.12–14.3.14, Eq. 14.3.36–14.3.41); Vaswani et al. 2017, Su et al. 2021 (RoFormer),
# Press et al. 2022 (ALiBi)
#
# **After this chapter you can**
# - prove that self-attention without positions is *permutation-equivariant*, and show a task it
#   therefore cannot learn at all;
# - write the sinusoidal encoding, derive the rotation R_k with PE(p + k) = R_k PE(p), and say
#   what its dimension buys (and what it does not);
# - use learned absolute positions, rotary embeddings (RoPE) and ALiBi's linear biases from
#   `attncourse.positional`, and explain Su et al.'s long-distance bound;
# - reproduce Press et al.'s "train short, test long" effect on a CPU: ALiBi keeps its accuracy
#   at 4× the training length, sinusoidal positions collapse;
# - say which of the source's statements on positions hold: how many dimensions n positions
#   really need, and which encodings make information decay with distance.
#
# **Prerequisites**: chapters 01 (scaled dot-product attention) and 04 (gradient paths,
# Thm. 14.3.12); complex numbers e^{iθ} = cos θ + i sin θ; 2 × 2 rotation matrices.
#
# **Time**: about 90 minutes (55 reading and experimenting, 35 for the exercises).
#
# Marks used in the claim checks: **✓ holds** · **⚠ holds only under a condition** (stated) ·
# **✗ wrong as printed** (counterexample and correct statement given). Section 14.3.6 prints no
# code, so every verdict below is about a formula or a sentence.

# %% slideshow={"slide_type": "skip"}
import math
import time

import matplotlib.pyplot as plt
import numpy as np
import torch

from attncourse.attention import softmax
from attncourse.chapters.ch07_positional_encoding import (
    MARKER_MODEL,
    MARKER_TRAINING,
    EncodingPlot,
    PositionalTransformer,
    binary_code,
    dot_product_profile,
    encoding_widget,
    encoding_widget_update,
    entropy_bits_of_rows,
    noisy_decoding_accuracy,
    offsets_from_pairs,
    permutation_gaps,
    position_only_weights,
    rope_abel_bound,
    rope_relative_bound,
    selection_information_bits,
    shift_distance_profile,
    sinusoidal_information,
    sortedness_scores,
    train_model,
    train_short_test_long,
    transfer_efficiency,
    wavelengths,
)
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
# ## 1. Attention by itself ignores order
#
# Self-attention (chapter 01) computes, for the n rows of X,
#
# $$\mathrm{Attn}(X) = \mathrm{softmax}\!\left(\frac{XW_Q (XW_K)^\top}{\sqrt{d_k}}\right) XW_V .$$
#
# Reorder the tokens with a permutation matrix P. The scores become P S Pᵀ (rows *and* columns
# reordered), a row-wise softmax commutes with that, and P A Pᵀ · P X W_V = P A X W_V because
# PᵀP = I. So **Attn(PX) = P Attn(X)**: shuffling the input shuffles the output in the same way and
# changes nothing else (*permutation equivariance*). The same holds for every layer that acts on
# each row alone (feed-forward, LayerNorm), hence for a whole Transformer block, and a mean over the
# positions afterwards is *invariant*: "dog bites man" and "man bites dog" look the same.
#
# Order has to be put in. Three ways are in use: **add** a vector for each position to the token
# embedding (sinusoidal or learned), **rotate** queries and keys by their positions (RoPE), or
# **bias** the scores by the distance (ALiBi). The cell measures max |f(PX) − P f(X)| for one
# attention layer in float64, without positions and with each of them (with them, the tokens move
# while the positions stay where they are). A causal mask breaks the symmetry as well: the t-th
# query sees t keys, so even "no positions" tells the first token from the last.
#
# > **Glossary** · positional encoding 位置编码 · permutation 置换 · permutation equivariance
# > 置换等变性 · invariance 不变性 · absolute / relative position 绝对 / 相对位置 · causal mask 因果掩码

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
gaps = permutation_gaps(T=12, d=16, num_heads=4, seed=0)
print("one attention layer, float64, T = 12: max |f(P x) - P f(x)|")
for name, gap in gaps.items():
    shown = "< 1e-12  (equivariant)" if gap < 1e-12 else f"{gap:.3f}   (not equivariant)"
    print(f"  {name:18s} {shown}")
assert gaps["none"] < 1e-12
assert all(gap > 1e-2 for name, gap in gaps.items() if name != "none")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 2. A task that needs order: "is the sequence sorted?"
#
# **Task** (`sortedness_batch`): 8 tokens from a vocabulary of 16; half of the sequences are sorted
# (label 1), the other half are shuffles of the *same* tokens that are not sorted (label 0), in
# pairs. **Model**: embedding (+ positions) → 2 bidirectional attention layers (4 heads, d = 32,
# pre-LN) → mean over positions → 2 logits; AdamW with a one-cycle schedule, 300 steps of 32.
#
# Without positions the model is permutation-invariant (§1), so a sorted sequence and its shuffle
# get the **same** logits, whatever the weights. If it says "sorted" with probability q for both,
# the pair costs −ln q − ln(1 − q) ≥ 2 ln 2 (equality at q = ½): the mean loss can never go below
# ln 2 ≈ 0.693, chance. This is exact, not a matter of training longer. With sinusoidal or learned
# positions the same model learns the task.

# %% slideshow={"slide_type": "-"}
# NBVAL_IGNORE_OUTPUT
SORT_LENGTH = 8
sort_models, sort_losses, sort_scores = {}, {}, {}
for encoding in ("none", "sinusoidal", "learned"):
    torch.manual_seed(0)
    sort_models[encoding] = PositionalTransformer(
        16, 2, encoding, num_layers=2, causal=False, pooled=True, max_len=SORT_LENGTH,
        dim_feedforward=0,
    )  # fmt: skip
    sort_losses[encoding] = train_model(
        sort_models[encoding], "sorted", steps=300, length=SORT_LENGTH, seed=0, desc=encoding
    )
    sort_scores[encoding] = sortedness_scores(sort_models[encoding], SORT_LENGTH)

# %% slideshow={"slide_type": "-"}
# NBVAL_IGNORE_OUTPUT
print(f"{'positions':>10} | {'accuracy':>8} {'loss':>7} | max |logit(sorted) - logit(shuffle)|")
for encoding, (accuracy, loss, gap) in sort_scores.items():
    print(f"{encoding:>10} | {accuracy:8.3f} {loss:7.3f} | {gap:.1e}")
accuracy, loss, gap = sort_scores["none"]
assert gap < 1e-9, "no positions: the two members of a pair get identical logits (float64)"
assert loss > math.log(2) - 1e-4, "no positions: the loss cannot go below ln 2"
assert sort_scores["sinusoidal"][0] >= 0.95 and sort_scores["learned"][0] >= 0.95

# %% slideshow={"slide_type": "subslide"}
fig, ax = plt.subplots(figsize=(6.5, 3))
for encoding, color in (("none", "tab:gray"), ("sinusoidal", "tab:blue"), ("learned", "tab:green")):
    curve = np.convolve(sort_losses[encoding], np.ones(20) / 20, mode="valid")
    ax.plot(curve, color=color, label=f"{encoding} (mean of 20 steps)")
ax.axhline(math.log(2), ls=":", color="k", lw=1, label="ln 2: the bound without positions")
ax.set(xlabel="step", ylabel="training loss", title="is it sorted? (8 tokens)", ylim=(0, 0.9))
ax.legend(fontsize=8)
plt.tight_layout()
plt.show()

# %% [markdown] slideshow={"slide_type": "-"}
# Without positions the loss sits on ln 2 from the first step to the last; the pair gap printed
# above is zero up to float64 round-off. The positions are the *only* thing that tells the two
# members of a pair apart.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 3. The sinusoidal encoding (Lemma 14.3.21)
#
# Vaswani et al. (2017) add to the embedding of position p the vector
#
# $$PE_{(p,\,2i)} = \sin(p\,\theta_i), \qquad PE_{(p,\,2i+1)} = \cos(p\,\theta_i), \qquad
# \theta_i = 10000^{-2i/d}, \quad i = 0, \dots, d/2 - 1 .$$
#
# The source (Lemma 14.3.21) prints only the first half, PE_(pos, 2i) = sin(pos/10000^{2i/d}); the
# cos features are needed, as the first claim check shows. Each pair (sin pθ_i, cos pθ_i) is a
# point on the unit circle that turns by θ_i radians per position: a clock hand, fast for i = 0
# (one radian per position), slow for large i. `attncourse.positional.sinusoidal_encoding`.
#
# **Relative positions are a rotation.** By the angle-sum formulas,
#
# $$\begin{pmatrix}\sin (p+k)\theta \\ \cos (p+k)\theta\end{pmatrix}
# = \begin{pmatrix}\cos k\theta & \sin k\theta \\ -\sin k\theta & \cos k\theta\end{pmatrix}
# \begin{pmatrix}\sin p\theta \\ \cos p\theta\end{pmatrix},$$
#
# so PE(p + k) = R_k PE(p) with R_k block-diagonal — one 2 × 2 rotation per pair — and
# **independent of p** (`sinusoidal_shift_matrix`; you derive it in Exercise 1). A layer can
# therefore reach "k positions further" with a fixed linear map. The source states this with the
# difference formula sin(a − b) = sin a cos b − cos a sin b; same idea, either sign.
#
# > **Glossary** · sinusoidal 正弦 · frequency 频率 · wavelength 波长 · rotation matrix 旋转矩阵 ·
# > block diagonal 分块对角 · linear map 线性变换 · angle-sum formula 和角公式

# %% slideshow={"slide_type": "subslide"}
fig, ax = plt.subplots(1, 2, figsize=(11, 3.2))
pe_plot = sinusoidal_encoding(64, 64, dtype=DT)
image = ax[0].imshow(pe_plot, aspect="auto", cmap="RdBu_r", vmin=-1, vmax=1)
ax[0].set(xlabel="feature (2i: sin, 2i + 1: cos)", ylabel="position p", title="PE, d = 64")
fig.colorbar(image, ax=ax[0], fraction=0.046, pad=0.04)
offsets = np.arange(-100, 101)
for d_plot, color in ((16, "tab:orange"), (64, "tab:blue"), (256, "tab:green")):
    profile = dot_product_profile(offsets, d_plot) / (d_plot / 2)
    ax[1].plot(offsets, profile, color=color, label=f"d = {d_plot}")
ax[1].set(xlabel="offset k = q - p", ylabel="PE(p)·PE(q) / (d/2)", title="the same for every p")
ax[1].legend(fontsize=8)
plt.tight_layout()
plt.show()

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
d_pe, positions = 64, 200
pe = sinusoidal_encoding(positions + 50, d_pe, dtype=DT)  # (250, 64)
shift_error = max(
    float((pe[k : k + positions] - pe[:positions] @ sinusoidal_shift_matrix(k, d_pe, dtype=DT).T)
          .abs().max())
    for k in range(0, 50, 7)
)  # fmt: skip
R3, R5 = sinusoidal_shift_matrix(3, d_pe, dtype=DT), sinusoidal_shift_matrix(5, d_pe, dtype=DT)
print(
    "PE(p + k) = R_k PE(p) for p < 200 and k = 0, 7, ..., 49: max error < 1e-12:",
    shift_error < 1e-12,
)
print(
    "R_3 R_5 = R_8:", torch.allclose(R3 @ R5, sinusoidal_shift_matrix(8, d_pe, dtype=DT)),
    "| R_k orthogonal:", torch.allclose(R3 @ R3.T, torch.eye(d_pe, dtype=DT)),
    "| R_-3 = R_3^T:", torch.allclose(sinusoidal_shift_matrix(-3, d_pe, dtype=DT), R3.T),
)  # fmt: skip
sin_only = pe[:, 0::2]  # (250, 32) the source's formula: sin features only
print(
    "sin features only: PE(0) =", float(sin_only[0].abs().max()),
    f"(every linear map sends it to 0), but |PE(5)| = {float(sin_only[5].norm()):.3f}",
)  # fmt: skip
assert shift_error < 1e-12 and float(sin_only[0].abs().max()) == 0

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Claim check — Lemma 14.3.21, "relative positions can be extracted by a linear transformation"
# ✓** (exactly: PE(p + k) = R_k PE(p), error at float64 round-off; R_k is a rotation, R_j R_k =
# R_{j+k}). **The formula as printed ⚠**: with sin(pos/10000^{2i/d}) alone, PE(0) = 0 and no linear
# map sends 0 to PE(k) ≠ 0; the relative property needs the cos features PE_(pos, 2i+1) =
# cos(pos/10000^{2i/d}) that Vaswani et al. interleave with them.
#
# **The dot product depends on p − q only.** PE(p)·PE(q) = Σ_i [sin pθ_i sin qθ_i + cos pθ_i cos qθ_i]
# = Σ_i cos((p − q)θ_i). It is also *even* in p − q: from the dot product alone, "three before" and
# "three after" look the same (the vectors differ; their product does not).

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
gram = pe @ pe.T  # (250, 250)
closed_form = dot_product_profile(range(-40, 41), d_pe)  # (81,) sum_i cos(k theta_i)
spread = max(
    float((torch.diagonal(gram, k) - closed_form[k + 40]).abs().max()) for k in range(-40, 41)
)
print("max_p |PE(p)·PE(p+k) - sum_i cos(k theta_i)| < 1e-12 for every |k| <= 40:", spread < 1e-12)
print("even in k:", torch.equal(closed_form, closed_form.flip(0)))
print(
    "but PE(10 + 3) != PE(10 - 3):",
    not torch.allclose(pe[13], pe[7]),
    f"(distance {float((pe[13] - pe[7]).norm()):.3f})",
)
assert spread < 1e-12

# %% [markdown] slideshow={"slide_type": "-"}
# **Frequency coverage and resolution.** The frequencies θ_i = 10000^{−2i/d} form a geometric
# sequence from 1 radian per position down to almost 10⁻⁴; the wavelengths 2π/θ_i run from 2π ≈ 6.3
# positions to 2π · 10000^{(d−2)/d}. Neighbouring positions are told apart by the fast pairs, far
# ones by the slow pairs. And since PE(p + k) = R_k PE(p) with R_k orthogonal, the distance
# ‖PE(p + k) − PE(p)‖ = (Σ_i 4 sin²(kθ_i/2))^{1/2} is the same at every p: the resolution is
# uniform along the sequence.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
lam = wavelengths(64)
print("d = 64, wavelengths 2 pi / theta_i for i = 0, 1, 8, 16, 31:")
print("  " + "  ".join(f"{float(lam[i]):,.1f}" for i in (0, 1, 8, 16, 31)))
dist = torch.cdist(pe, pe)  # (250, 250)
dist_spread = max(
    float((torch.diagonal(dist, k) - shift_distance_profile([k], d_pe)).abs().max())
    for k in range(1, 40)
)
print(
    "||PE(p+k) - PE(p)|| = sqrt(sum_i 4 sin^2(k theta_i / 2)) at every p (error < 1e-12):",
    dist_spread < 1e-12,
)
print(f"{'d':>5} {'|PE(p)|':>8} {'|PE(p+1) - PE(p)|':>18} {'ratio':>6}")
for d_ in (16, 64, 256):
    step = float(shift_distance_profile([1], d_)[0])
    print(f"{d_:5d} {math.sqrt(d_ / 2):8.3f} {step:18.3f} {step / math.sqrt(d_ / 2):6.3f}")
assert dist_spread < 1e-12

# %% [markdown] slideshow={"slide_type": "-"}
# The step between neighbours grows like the length of the vector, √(d/2): relative to it, a
# bigger d does *not* separate neighbours better. What d buys is more clock hands between the
# fastest and the slowest, and that pays off when the encoding is read with noise. The cell decodes
# 512 positions from PE(p) + N(0, 0.5²) per coordinate by the nearest row of the table:

# %% slideshow={"slide_type": "-"}
# NBVAL_IGNORE_OUTPUT
decoding = noisy_decoding_accuracy(512, (2, 8, 32, 128), noise=0.5, samples=2000, seed=0)
print("positions recovered from PE(p) + noise (sigma = 0.5), 512 positions:")
for d_, share in decoding.items():
    print(f"  d = {d_:3d}: {share:.3f}")
values = list(decoding.values())
assert all(b > a for a, b in zip(values, values[1:])) and values[0] < 0.1 and values[-1] > 0.8

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Claim check — Lemma 14.3.21, "frequency coverage: 2i/d from low to high frequency" ✓**: the
# exponent 2i/d runs over [0, 1), so the frequencies run geometrically from 1 to 10⁻⁴·10^{8/d}
# (wavelengths 6.3 … 47,117 positions for d = 64). **"Resolution: O(d) independent frequency
# components; the dimension determines the precision" ⚠**: there are exactly d/2 frequencies; in
# exact arithmetic any d ≥ 2 already separates every position (θ_0 = 1 rad is not a rational
# multiple of 2π, §8); the range is set by the base 10000, the neighbour resolution relative to
# ‖PE‖ does not improve with d, and what d improves is robustness to noise (above: under 10 % of
# the positions recovered at d = 2, over 80 % at d = 128, as asserted).

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 4. Learned absolute positions
#
# BERT and GPT-2 (and Gehring et al. 2017 before them) simply train one vector per position:
# y = x + E[pos], E a (P, d) parameter (`attncourse.positional.LearnedPositionalEmbedding`). Nothing
# forces E[p]·E[q] to depend on p − q, and a table of P rows has nothing to say about position P:

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
table = LearnedPositionalEmbedding(SORT_LENGTH, 32)
try:
    table(torch.zeros(1, SORT_LENGTH + 1, 32))
except ValueError as error:
    print("ValueError:", error)

# %% slideshow={"slide_type": "subslide"}
learned = sort_models["learned"].learned.weight.detach().double()  # (8, 32) trained in section 2
sinus = sinusoidal_encoding(SORT_LENGTH, 32, dtype=DT)  # (8, 32)
fig, ax = plt.subplots(1, 2, figsize=(8.5, 3.2))
for a, (name, E) in zip(ax, (("learned (trained, section 2)", learned), ("sinusoidal", sinus))):
    unit = E / E.norm(dim=-1, keepdim=True)
    image = a.imshow(unit @ unit.T, cmap="RdBu_r", vmin=-1, vmax=1)
    a.set(xlabel="position q", ylabel="position p", title=f"cosine(E[p], E[q]): {name}")
fig.colorbar(image, ax=ax, fraction=0.03)
plt.show()

# %% [markdown] slideshow={"slide_type": "-"}
# The sinusoidal matrix is constant along every diagonal (it depends on q − p alone); the learned
# one is whatever made the task easy, with no such structure. In §9, a learned table could not even
# be run beyond its training length — the other encodings can, with very different results.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 5. Rotary embeddings: relative by construction (Su et al. 2021)
#
# RoPE does not add anything to x. It **rotates** each query and key by its position before the dot
# product: the pair (x_2i, x_2i+1) of the vector at position m is turned by the angle mθ_i,
# θ_i = 10000^{−2i/d} (`attncourse.positional.RotaryEmbedding`, the paper's interleaved pairs; you
# write it in Exercise 2). Since R_mᵀ R_n = R_{n−m},
#
# $$\langle R_m q,\; R_n k\rangle = q^\top R_m^\top R_n k = \langle q,\; R_{n-m}\, k\rangle,$$
#
# the score sees the offset n − m and nothing else — **exactly**, for every q and k, without the
# cross terms (content × position) that an added encoding puts into (x_p + PE_p)ᵀW(x_q + PE_q).
# Rotations keep norms, so RoPE changes the angle between q and k, never their lengths.
#
# > **Glossary** · rotary position embedding (RoPE) 旋转位置编码 · relative offset 相对偏移 ·
# > complex number 复数 · summation by parts 分部求和 · upper bound 上界 · long-distance decay 远程衰减

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
rope = RotaryEmbedding(64)
g = torch.Generator().manual_seed(1)
q, k = torch.randn(64, generator=g, dtype=DT), torch.randn(64, generator=g, dtype=DT)


def rotated(x, m):
    return rope(x[None], torch.tensor([m]))[0]  # R_m x


scores_same_offset = torch.tensor(
    [float(rotated(q, m) @ rotated(k, m + 7)) for m in range(0, 2000, 97)], dtype=DT
)
relative = float(q @ rope(k[None], torch.tensor([7]))[0])  # <q, R_7 k>
same_offset_spread = float(scores_same_offset.max() - scores_same_offset.min())
norm_change = max(abs(float(rotated(q, m).norm() - q.norm())) for m in range(0, 2000, 97))
print("<R_m q, R_(m+7) k> for m = 0, 97, ..., 1940: all equal (spread < 1e-11):",
      same_offset_spread < 1e-11)  # fmt: skip
print(
    f"... and equal to <q, R_7 k> = {relative:.6f}:",
    abs(float(scores_same_offset[0]) - relative) < 1e-11,
)
print("norms kept, ||R_m q| - |q|| < 1e-12 for every m:", norm_change < 1e-12)
assert same_offset_spread < 1e-11 and norm_change < 1e-12

# %% [markdown] slideshow={"slide_type": "-"}
# **Long-distance decay (Su et al. 2021, §3.4.3).** Write the score with complex numbers: pair i of
# q and k as q̃_i = q_2i + i q_2i+1, k̃_i likewise, h_i = q̃_i conj(k̃_i); then
# qᵀR_r k = Re Σ_i h_i e^{−irθ_i}. With the partial sums S_j = Σ_{l<j} e^{irθ_l} (and h_{d/2} = 0),
# Abel's summation by parts gives
#
# $$|q^\top R_r k| \;\le\; \max_i |h_{i+1} - h_i| \sum_{j=1}^{d/2} |S_j(r)| ,$$
#
# and the paper plots the *relative upper bound* (1/(d/2)) Σ_j |S_j(r)|, which falls with the
# distance r. Two things to keep apart: this is a bound, not the score; and a bound that decays
# does not make unrelated q and k decay — their expected score is 0 at every distance. What does
# decay is the score of a vector with *itself* (q = k, "similar content"): E[qᵀR_r q] =
# Σ_i cos(rθ_i) · E|q̃_i|² = 2 Σ_i cos(rθ_i) for q ~ N(0, I), the same curve as the sinusoidal
# dot product of §3.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
r_axis = torch.arange(0, 257)
bound = rope_relative_bound(r_axis, 128)  # (257,)
aligned = dot_product_profile(r_axis, 128) / 64  # E[q^T R_r q] / E[q^T q]
print("d = 128   r:            " + " ".join(f"{r:6d}" for r in (0, 1, 10, 50, 100, 200, 256)))
print(
    "relative upper bound:   "
    + " ".join(f"{float(bound[r]):6.2f}" for r in (0, 1, 10, 50, 100, 200, 256))
)
print(
    "E[q.R_r q] / E[q.q]:    "
    + " ".join(f"{float(aligned[r]):6.3f}" for r in (0, 1, 10, 50, 100, 200, 256))
)
worst = 0.0
for seed in range(5):
    gq = torch.Generator().manual_seed(10 + seed)
    qs, ks = torch.randn(128, generator=gq, dtype=DT), torch.randn(128, generator=gq, dtype=DT)
    for a, b in ((qs, ks), (qs, qs)):
        score, abel = rope_abel_bound(a, b, r_axis)
        worst = max(worst, float((score / abel).max()))
print(
    f"|q^T R_r k| <= Abel bound for 10 pairs and every r <= 256: {worst <= 1} (largest ratio {worst:.3f})"
)
assert worst <= 1 and float(bound[256]) < float(bound[0]) / 4

# %% slideshow={"slide_type": "subslide"}
fig, ax = plt.subplots(figsize=(7, 3))
ax.plot(r_axis, bound / bound[0], color="tab:red", label="Su et al.'s relative bound / value at 0")
ax.plot(r_axis, aligned, color="tab:blue", label="E[q^T R_r q] / E[q^T q] (q = k)")
ax.axhline(0, color="0.6", lw=0.8, label="E[q^T R_r k], q, k independent: 0")
ax.set(xlabel="relative distance r", title="RoPE, d = 128: what decays with distance")
ax.legend(fontsize=8)
plt.tight_layout()
plt.show()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 6. ALiBi: a linear penalty on distance (Press et al. 2022)
#
# ALiBi adds no vector and rotates nothing: head h adds **−m_h (i − j)** to the score of query i
# and key j ≤ i, with fixed slopes m_h = 2^{−8h/H} (1/2, 1/4, …, 1/256 for H = 8; other head counts
# interleave two such sequences) — `alibi_slopes`, `alibi_bias`, passed as the float `mask` of
# `scaled_dot_product_attention`. For keys of equal content the weights are then exactly
# ∝ e^{−m_h (i − j)}: a recency prior of a different width in each head, the same at every length.
# You write causal ALiBi attention in Exercise 3.
#
# > **Glossary** · attention with linear biases (ALiBi) 线性偏置注意力 · slope 斜率 · recency prior
# > 近因先验 · underflow 下溢 · subnormal number 次正规数 · single precision (float32) 单精度浮点数

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
print("slopes, 8 heads: ", [f"1/{round(1 / float(m))}" for m in alibi_slopes(8, dtype=DT)])
print("slopes, 12 heads:", [f"{float(m):.4f}" for m in alibi_slopes(12, dtype=DT)])
row = alibi_bias(8, 16, dtype=DT)[:, -1]  # (8, 16) query 15 over keys 0..15
w_equal = softmax(row)  # (8, 16) equal content: the bias alone decides
ratios = w_equal[:, 1:] / w_equal[:, :-1]  # (8, 15) w(j + 1) / w(j): one step closer
print(
    "w(j+1) / w(j) = e^(m_h) in every head:",
    torch.allclose(ratios, alibi_slopes(8, dtype=DT).exp()[:, None].expand(8, 15)),
)
far = alibi_bias(8, 400, dtype=torch.float32)[0, -1]  # head 1 (m = 1/2), query 399, float32
w_far = softmax(far)  # (400,)
distance = 399 - torch.arange(400)
print(
    "float32, m = 1/2, 400 keys: every key at distance >= 210 gets weight exactly 0:",
    bool((w_far[distance >= 210] == 0).all()),
    "| every key at distance <= 170 gets > 0:",
    bool((w_far[distance <= 170] > 0).all()),
)
assert bool((w_far[distance >= 210] == 0).all()) and bool((w_far[distance <= 170] > 0).all())

# %% [markdown] slideshow={"slide_type": "-"}
# (Where exactly the weights hit 0 depends on subnormal numbers: the weight e^{−d/2}/Z, with
# Z = Σ_j e^{−j/2} ≈ 2.54, falls below float32's smallest normal number 2^{−126} from d = 173 and
# below its smallest subnormal from d = 206. This notebook flushes subnormals to zero, so its zeros
# start at d = 173; the asserted margins, 170 and 210, hold either way.)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 7. Does information decay with distance? (Def. 14.3.14, Thm. 14.3.12, Lemma 14.3.19–14.3.20)
#
# The source defines the transfer efficiency η_ij = I(z_i; z_j)/H(z_i) (14.3.36), claims η_ij > 0
# for every pair under self-attention (Lemma 14.3.19, 14.3.37) and η_ij ≈ exp(−d/λ) with
# d = |i − j| (Thm. 14.3.12, 14.3.38). Chapter 04 tested the last one on RNNs and on attention's
# gradients; here it is tested **from the positions' side**: which encodings make attention decay
# with distance at all?
#
# An exact setting (attention as selection, source 000 Def. 14.3.1): tokens x_j uniform over V = 16
# symbols, and a read-out z that copies x_j with probability α_j (the attention weight), otherwise
# another, independent token. Then H(z) = log₂ V and
#
# $$I(z; x_j) = \log_2 V - H\big(\alpha_j\,\delta_{x_j} + (1 - \alpha_j)\,U\big)
# \approx \frac{(V-1)\,\alpha_j^2}{2\ln 2} \quad(\alpha_j \text{ small}),$$
#
# so η_j = I/log₂ V ∈ [0, 1] is a function of the weight alone (you derive I in Exercise 4). The
# cell gives every key the same content, so that only positions shape the weights, for the last
# query of 64: no positions (uniform), sinusoidal positions with identity projections and a query
# scaled by 4 (RoPE with q = k gives the same scores, §5), and two ALiBi heads.
#
# > **Glossary** · transfer efficiency 信息传递效率 · mutual information 互信息 · self-information
# > (entropy) 自信息（熵）· decay length 衰减长度 · exponential decay 指数衰减

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
T_eta, distances = 64, [0, 1, 2, 5, 10, 20, 40, 60]
etas = {
    "none": transfer_efficiency(position_only_weights("none", T_eta)),
    "sinusoidal, x4": transfer_efficiency(
        position_only_weights("sinusoidal", T_eta, sharpness=4.0)
    ),
    "ALiBi m = 1/2": transfer_efficiency(position_only_weights("alibi", T_eta, head=0)),
    "ALiBi m = 1/8": transfer_efficiency(position_only_weights("alibi", T_eta, head=2)),
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
    print(
        f"{name:>15} "
        + " ".join(f"{float(eta[d_]):9.2e}" for d_ in distances)
        + f"  {round(slopes_fit[name], 3) + 0.0:+.3f}   ({rises} rises)"
    )
assert (
    abs(slopes_fit["ALiBi m = 1/2"] + 1.0) < 1e-3 and abs(slopes_fit["ALiBi m = 1/8"] + 0.25) < 1e-2
)
assert float(etas["none"].max() - etas["none"].min()) < 1e-15
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

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Claim check — Thm. 14.3.12, η ≈ exp(−d/λ) ⚠ (from the positional side).** Only a **linear
# distance bias** produces it: with ALiBi, ln η falls on a straight line of slope −2m (−1.000 for
# m = 1/2, −0.25 for m = 1/8), i.e. λ = 1/(2m) — the weight decays like e^{−md} and the information
# like its square. **No positions: no decay at all** (η is the same at every distance). Sinusoidal
# positions (and RoPE on aligned vectors) give a fast drop near d = 0 and then a floor that
# oscillates (η *rises* again at several distances): their scores are sums of cosines, bounded by
# ±d/2, so they cannot push far keys down without limit. Content-based attention decays with
# nothing (chapter 04). So "λ, the decay length" is a design choice (ALiBi's slopes), not a law.
#
# **Claim check — Def. 14.3.14 (14.3.36) ✓ / ⚠**: for a discrete read-out like this one η is a
# fraction in [0, 1]; for continuous z, H(z_i) is a differential entropy that can be ≤ 0
# (chapter 04), and the ratio is not a fraction.
#
# **Claim check — Lemma 14.3.19, "η_ij > 0 for all i, j" (14.3.37) ⚠.** In exact arithmetic every
# softmax weight is positive, so η_ij > 0 for every pair that is *allowed*. But a causal mask makes
# η_ij = 0 exactly for j > i, and ALiBi's weights are exactly 0 in float32 beyond d ≈ 173–207 for
# m = 1/2 (§6): no information at all reaches those keys. The RNN half (η ≈ 0 for large |i − j|)
# holds for contractive recurrences (chapter 04, ρ < 1), not at ρ ≥ 1.
#
# **Claim check — Lemma 14.3.20 ✓ / ✗.** Eq. (14.3.39) is the chain rule ✓. "The importance of g_j
# is proportional to I(z_i; z_j)" ✗: for the averaged read-out z̄ = Σ_j α_j v_j, the gradient is
# ∂z̄/∂v_j = α_j, while I ≈ (V − 1) α_j²/(2 ln 2): the information is proportional to the **square**
# of the gradient, as chapter 04 found for the RNN:

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
V = 16
for alpha in (0.3, 0.1, 1e-2, 1e-4, 1e-6):
    info = float(selection_information_bits(torch.tensor(alpha, dtype=DT), V))
    g_sq = alpha**2  # (d zbar / d v_j)^2
    print(
        f"alpha = g = {alpha:7.0e}: I = {info:.3e} bits,  I / ((V-1) g^2 / (2 ln 2)) = "
        f"{info / ((V - 1) * g_sq / (2 * math.log(2))):.4f}"
    )
ratio_small = float(selection_information_bits(torch.tensor(1e-6, dtype=DT), V)) / (
    (V - 1) * 1e-12 / (2 * math.log(2))
)
assert abs(ratio_small - 1) < 1e-4

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Claim check — Thm. 14.3.13 (14.3.40) ✓ / ⚠**: the Jacobian of a stack is the sum over paths of
# the products along them ✓ (for two attention layers with fixed weights, (A₂A₁)_ij = Σ_k (A₂)_ik
# (A₁)_kj). "Several paths keep the gradient alive when one is blocked" ⚠: paths add with signs. A
# residual path y = x + f(x) with ∂f/∂x = −I has two open paths and a zero gradient:

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
A1 = softmax(torch.randn(5, 5, generator=torch.Generator().manual_seed(2), dtype=DT))
A2 = softmax(torch.randn(5, 5, generator=torch.Generator().manual_seed(3), dtype=DT))
paths = sum(A2[:, m : m + 1] @ A1[m : m + 1, :] for m in range(5))  # sum over the middle position
print("sum over paths == A2 A1:", torch.allclose(paths, A2 @ A1))
x_res = torch.randn(4, dtype=DT, requires_grad=True)
(x_res + (-x_res)).sum().backward()  # identity path + a path with Jacobian -I
print("two open paths, gradient:", x_res.grad.tolist())

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 8. How many dimensions do n positions need? (Def. 14.3.15, Thm. 14.3.14)
#
# The source asks an encoding PE_pos ∈ ℝ^{d_pe} for "I(PE; pos) ≈ log₂ n" (absolute) and
# "I(PE; pos₁ − pos₂)" (relative), and states as a theorem
#
# $$d_{pe} \;\ge\; \log_2 n + \log_2(\text{max distance}) \qquad (14.3.41).$$
#
# For a deterministic encoding and a position uniform over n values, I(PE; pos) = H(PE(pos)): it is
# log₂ n **exactly** when the n vectors are all different, and less when some coincide. Real-valued
# vectors can be all different in any dimension — at finite precision, the question is whether the
# *stored* vectors are. The cell counts distinct rows of the sinusoidal table for n = 4096 in four
# number formats, and tries a binary code with ⌈log₂ n⌉ coordinates in {−1, +1}.
#
# > **Glossary** · information-theoretic lower bound 信息论下界 · finite precision 有限精度 ·
# > number format 数值格式 · binary code 二进制编码 · counting argument 计数论证 · sphere packing 球填充

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
n_pos = 4096
dtypes = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32,
          "float64": torch.float64}  # fmt: skip
info = sinusoidal_information(n_pos, (2, 4, 8), tuple(dtypes.values()))
print(f"I(PE; pos) in bits for n = {n_pos} positions (log2 n = 12; Thm. 14.3.14 asks d_pe >= "
      f"{math.log2(n_pos) + math.log2(n_pos - 1):.1f}):")  # fmt: skip
print(f"{'d_pe':>6} " + " ".join(f"{name:>9}" for name in dtypes))
for d_ in (2, 4, 8):
    print(f"{d_:6d} " + " ".join(f"{info[d_, dt]:9.2f}" for dt in dtypes.values()))
code = binary_code(1024)  # (1024, 10)
g = torch.Generator().manual_seed(5)
p_idx, q_idx = (
    torch.randint(1024, (2000,), generator=g),
    torch.randint(1024, (2000,), generator=g),
)
offsets_read = offsets_from_pairs(code, p_idx, q_idx)
print(
    f"binary code, n = 1024 in d_pe = {code.shape[1]}: I(code; pos) = {entropy_bits_of_rows(code):.2f} bits; "
    f"p - q read back from (code(p), code(q)) for 2000 random pairs: "
    f"{int((offsets_read == p_idx - q_idx).sum())} / 2000 right (Thm. 14.3.14 asks d_pe >= "
    f"{math.log2(1024) + math.log2(1023):.1f})"
)
assert info[2, torch.float64] == 12 and info[2, torch.float16] < 11 and info[4, torch.float16] == 12
assert int((offsets_read == p_idx - q_idx).sum()) == 2000

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Claim check — Def. 14.3.15, "I(PE; pos) ≈ log₂ n" ✓ (with "=")** for any encoding whose n
# stored vectors are distinct (position uniform); ⚠ at finite precision, where rows can merge:
# sinusoidal with d_pe = 2 keeps all 12 bits in float32 and float64 but not in float16 or bfloat16,
# and d_pe = 4 is enough even there. **The relative requirement ✓** as a requirement; note that it
# comes free: two distinct codes determine both positions, hence their difference.
#
# **Claim check — Thm. 14.3.14, d_pe ≥ log₂ n + log₂(max distance) ✗.** Counterexamples: a binary
# code with d_pe = log₂ n = 10 coordinates encodes 1024 positions *and* every offset (the theorem
# asks for 20); the sinusoidal encoding with d_pe = 2 separates 4096 positions in float64 (the
# theorem asks for 24). **Correct statements**: with b bits per coordinate there are at most
# 2^{b·d_pe} distinct vectors, so I(PE; pos) ≤ min(log₂ n, b·d_pe) and d_pe ≥ log₂ n / b is what
# counting demands; if the vectors must stay apart by δ inside a ball of radius r (noise, limited
# resolution), a packing argument gives n ≤ (1 + 2r/δ)^{d_pe}, i.e. d_pe ≥ log₂ n / log₂(1 + 2r/δ)
# — logarithmic in n, with a constant set by the resolution, and no extra term for distances.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 9. Reproduction: train short, test long (Press et al. 2022)
#
# **Paper** (Press, Smith and Lewis, ICLR 2022, Fig. 1): language models trained on sequences of
# length L = 512 or 1024 and evaluated on longer ones. With sinusoidal positions the perplexity
# blows up a few dozen tokens beyond L; rotary positions hold a little longer, then degrade too;
# ALiBi stays flat far beyond L (extrapolation). The reason is what each encoding shows the model
# at positions it never saw: new vectors (sinusoidal), new rotation angles (RoPE), or the same
# distance penalties as always (ALiBi). A learned table has no rows there at all (§4).
#
# **Setup** (CPU, a few seconds a run): the task "most recent marker" (`marker_batch`): tokens 0–3
# are markers (each position is one with probability 0.15), 4–15 noise; at every position the model
# must output the latest marker so far. Position matters, but only locally (the answer is a few
# tokens back, at any length). **Model**: embedding → one causal attention layer (d = 32, 4 heads,
# pre-LN, no feed-forward) → LN → 4 logits, with no positions, sinusoidal positions, RoPE or ALiBi;
# AdamW, one-cycle schedule peaking at 3·10⁻³, 400 steps of 32 sequences of length **L = 32**.
# Accuracy over all positions of 256 fresh sequences of length L, 2L and 4L; seeds 0 and 1.
#
# **Expected**: ALiBi about as accurate at 4L as at L; sinusoidal near-perfect at L, collapsing
# beyond it; RoPE in between. **Pass** (both seeds): ALiBi ≥ 0.93 at 4L and within 0.03 of its
# accuracy at L; sinusoidal ≥ 0.9 at L and ≤ 0.7 at 4L; ALiBi − sinusoidal ≥ 0.25 at 4L; without
# positions ≤ 0.85 already at L.
#
# > **Glossary** · extrapolation 外推 · length generalisation 长度泛化 · linear bias 线性偏置 ·
# > slope 斜率 · recency 近因 · perplexity 困惑度

# %% slideshow={"slide_type": "-"}
# NBVAL_IGNORE_OUTPUT
print("model:", MARKER_MODEL, "| training:", MARKER_TRAINING)
results = train_short_test_long(
    encodings=("sinusoidal", "rope", "alibi", "none"), seeds=(0, 1), test_lengths=(32, 64, 128)
)

# %% slideshow={"slide_type": "-"}
# NBVAL_IGNORE_OUTPUT
L = MARKER_TRAINING["length"]
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
    means = [
        float((results[encoding, 0][n].mean() + results[encoding, 1][n].mean()) / 2)
        for n in (32, 64, 128)
    ]
    ax[1].plot([1, 2, 3], means, "o-", color=color, label=encoding)
ax[0].axvline(L, ls="--", color="k", lw=1, label="training length L")
ax[0].set(xlabel="position (test length 4L = 128)", ylabel="accuracy (mean of 2 seeds)", ylim=(0, 1.05),
          title="accuracy at each position")  # fmt: skip
ax[1].set(xlabel="test length", ylabel="accuracy over all positions", ylim=(0, 1.05),
          title="train at L = 32, test at L, 2L, 4L")  # fmt: skip
ax[1].set_xticks([1, 2, 3], ["L = 32", "2L = 64", "4L = 128"])
ax[0].legend(fontsize=8)
plt.tight_layout()
plt.show()

# %% [markdown] slideshow={"slide_type": "-"}
# The effect of the paper's Fig. 1, at CPU scale: inside the training length every encoding but
# "none" is nearly perfect; past it, sinusoidal positions fall towards chance within a few
# positions, RoPE falls more slowly, and ALiBi does not notice the difference (its accuracy at 4L
# stays within the asserted 0.03 of its accuracy at L; in our runs much closer). Without positions
# the causal model stays far below the others even at L (≤ 0.85 asserted, about 0.7 in our runs):
# its mask tells it *which* tokens came before, but not *which came last*.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 10. Widget: the four encodings side by side
#
# Controls: the **encoding** (sinusoidal / RoPE / ALiBi / learned), the **dimension** d, the
# **position** p and the **RoPE plane** i. Panels: the encoding as a heatmap (rows: positions; the
# black line is p); the similarity of p with every q against q − p; RoPE's rotation of a fixed unit
# vector u in plane i for m = 0 … p (green: m = 0, red: m = p); ALiBi's bias row of query p in each
# of 8 heads. The "learned" table is the one trained in §2 (8 positions). Things to try:
# 1. sinusoidal, move p: the similarity curve slides but keeps its shape (caption: "depends on
#    q − p only"); change d: more slow clock hands, a wider central peak.
# 2. learned, move p: the curve changes with p; past p = 7 there is no row at all.
# 3. RoPE, plane 0 vs plane 20 at p = 63: the fast plane has gone round ten times, the slow one
#    has barely moved — near positions are told apart by fast planes, far ones by slow planes.
# 4. ALiBi at p = 63: the steepest head has all but forgotten key 0 (e^{−31.5}), the shallowest
#    still weighs it by e^{−0.25}.
#
# Behind the widget: `encoding_view` (the numbers) and `encoding_widget_update` (numbers + redraw);
# the tests call both.

# %% slideshow={"slide_type": "slide"}
# NBVAL_IGNORE_OUTPUT
encoding_widget(encoding="sinusoidal", dim=64, position=10, learned_table=learned)

# %% [markdown] slideshow={"slide_type": "subslide"}
# A static snapshot (for printed notes) and the cost of one widget update:

# %% slideshow={"slide_type": "subslide"}
# NBVAL_IGNORE_OUTPUT
snapshot = EncodingPlot(pyplot=True)
view, _, caption = encoding_widget_update(EncodingPlot(), "rope", 64, 40, 2)
snapshot.update(view)
plt.show()
print(caption)
timing_plot = EncodingPlot()
encoding_widget_update(timing_plot, "sinusoidal", 64, 10)  # the first draw caches the background
times = []
for step in range(20):
    start = time.perf_counter()
    encoding_widget_update(
        timing_plot, ("sinusoidal", "rope", "alibi", "learned")[step % 4], 2 + 6 * step,
        (7 * step) % 64, step % 5, learned,
    )  # fmt: skip
    times.append(time.perf_counter() - start)
median_ms = 1000 * float(np.median(times))
print(f"one widget update (compute + redraw + PNG): median {median_ms:.1f} ms over 20 moves "
      f"({'within' if median_ms <= 100 else 'OVER'} the 100 ms budget)")  # fmt: skip

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 11. Claim checks at a glance
#
# | source claim | verdict | correct statement / condition |
# |---|---|---|
# | §14.3.6 intro: attention solves long-range dependence by global access | ⚠ | only with positions: without them attention cannot tell any order (§1–2) |
# | Def. 14.3.14, η_ij = I(z_i; z_j)/H(z_i) (14.3.36) | ✓ / ⚠ | a fraction in [0, 1] for discrete z; for continuous z, H is differential and can be ≤ 0 |
# | Lemma 14.3.19, η_ij > 0 for all i, j (14.3.37) | ⚠ | for allowed pairs in exact arithmetic; 0 exactly under a causal mask (j > i) and for ALiBi in float32 beyond d ≈ 173 (m = ½); RNN part: contractive only |
# | Thm. 14.3.12, η ≈ exp(−d/λ) (14.3.38) | ⚠ | from positions, only a linear bias gives it (ALiBi: slope −2m, λ = 1/(2m)); none: flat; sinusoidal/RoPE: bounded, non-monotone |
# | Lemma 14.3.20, g_j by the chain rule (14.3.39) | ✓ | — |
# | Lemma 14.3.20, importance of g_j ∝ I(z_i; z_j) | ✗ | I ≈ (V − 1) g²/(2 ln 2): proportional to the square |
# | Thm. 14.3.13, sum over paths (14.3.40) | ✓ / ⚠ | paths add with signs and can cancel |
# | Def. 14.3.15, I(PE; pos) ≈ log₂ n | ✓ / ⚠ | = log₂ n iff the stored vectors are distinct; float16/bfloat16 merge rows at d_pe = 2 |
# | Def. 14.3.15, relative information I(PE; pos₁ − pos₂) | ✓ | free from any injective encoding; sinusoidal: PE(q) = R_{q−p} PE(p); the dot product alone loses the sign of q − p |
# | Lemma 14.3.21, PE_(pos,2i) = sin(pos/10000^{2i/d}) | ⚠ | the cos features PE_(pos,2i+1) are needed: with sin only, PE(0) = 0 and no linear map reaches PE(k) |
# | Lemma 14.3.21, frequency coverage | ✓ | geometric frequencies 1 … ≈10⁻⁴, wavelengths 6.3 … 47,117 (d = 64) |
# | Lemma 14.3.21, O(d) frequencies, d determines precision | ⚠ | d/2 frequencies; any d ≥ 2 is injective in exact arithmetic; d buys robustness to noise; the range is set by the base |
# | Lemma 14.3.21, relative position by a linear map (sin(a − b)) | ✓ | exactly: PE(p + k) = R_k PE(p), R_k a block rotation independent of p |
# | Thm. 14.3.14, d_pe ≥ log₂ n + log₂(max distance) (14.3.41) | ✗ | d_pe = log₂ n binary code, d_pe = 2 sinusoidal suffice; counting gives d_pe ≥ log₂ n / b (b bits per coordinate), packing d_pe ≥ log₂ n / log₂(1 + 2r/δ) |

# %% [markdown] slideshow={"slide_type": "skip"}
# ## 12. Exercises (graded)
#
# Four exercises, 10 points. Write your code between the lines marked for it, run the cell, then
# run the check cell under it: it tests your function on random and edge inputs and tells you
# precisely what is wrong. When graded, more tests (hidden here) run on other inputs of the same
# kinds. Write every function yourself from tensor operations: the checks refuse the package's
# `sinusoidal_shift_matrix`, `RotaryEmbedding`, `alibi_bias`, its softmax and attention, and
# PyTorch's softmax and attention. Precision is not the lesson here: the inputs are float64
# (except where a case says float32, where the answer must stay float32).

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 1 (2 points) — the shift matrix of the sinusoidal encoding
# `my_shift_matrix(offset, dim, base)`: return the (dim, dim) float64 matrix R_k (k = offset, any
# integer) with PE(p + k) = R_k PE(p) for every position p, where PE(p)[2i] = sin(p θ_i),
# PE(p)[2i + 1] = cos(p θ_i), θ_i = base^(−2i/dim). Derive it from the angle-sum formulas; check
# your own answer against `sinusoidal_encoding` if you like (but do not call it inside).


# %% nbgrader={"grade": false, "grade_id": "ch07_shift_matrix", "locked": false, "schema_version": 3, "solution": true} slideshow={"slide_type": "skip"}
def my_shift_matrix(offset, dim, base):
    """offset (int), dim (even int), base (float) -> R_k (dim, dim) float64."""
    ### BEGIN SOLUTION
    R = torch.zeros(dim, dim, dtype=torch.float64)
    for i in range(dim // 2):
        angle = offset * base ** (-2 * i / dim)
        c, s = math.cos(angle), math.sin(angle)
        R[2 * i, 2 * i], R[2 * i, 2 * i + 1] = (
            c,
            s,
        )  # sin((p+k)t) = sin(pt) cos(kt) + cos(pt) sin(kt)
        R[2 * i + 1, 2 * i], R[2 * i + 1, 2 * i + 1] = -s, c  # cos((p+k)t) = cos cos - sin sin
    return R
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch07_shift_matrix_test", "locked": true, "points": 2, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"}
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

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 2 (3 points) — rotary embeddings
# `my_rope(x, positions, base)`: x has shape (..., T, d) with d even, positions is a (T,) integer
# tensor (row t of x sits at position positions[t]). Return x with each feature pair
# (x_2i, x_2i+1) of row t rotated counter-clockwise by the angle positions[t] · θ_i,
# θ_i = base^(−2i/d) — RoFormer's R_m, neighbouring features paired. Same shape and dtype as x.


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


# %% nbgrader={"grade": true, "grade_id": "ch07_rope_test", "locked": true, "points": 3, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"}
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

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 3 (3 points) — causal attention weights with ALiBi
# `my_alibi_weights(scores, slopes)`: scores (B, H, T, T) are the already scaled q·k scores of H
# heads (query i, key j), slopes (H,) the heads' ALiBi slopes. Return the causal attention weights
# (B, H, T, T): the softmax over the keys j ≤ i of scores[b, h, i, j] − slopes[h] · (i − j); keys
# j > i get weight 0. From scratch: no softmax or attention function, yours or the course's.


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


# %% nbgrader={"grade": true, "grade_id": "ch07_alibi_weights_test", "locked": true, "points": 3, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"}
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

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 4 (2 points) — how much a selection tells (Def. 14.3.14)
# `my_selection_information(alpha, vocab)`: tokens are uniform over `vocab` symbols; a read-out z
# copies the token x_j with probability α and otherwise is a fresh uniform token, independent of
# x_j. Return I(z; x_j) **in bits** for every entry of the float64 tensor alpha (values in [0, 1]),
# same shape. Derive P(z | x_j) first (careful: the fresh token can equal x_j too), then
# I = H(z) − H(z | x_j). At α = 0 and α = 1, count 0 · log 0 as 0.


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


# %% nbgrader={"grade": true, "grade_id": "ch07_selection_information_test", "locked": true, "points": 2, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"}
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

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Summary
#
# - Self-attention is **permutation-equivariant** (Attn(PX) = P Attn(X), exactly); with a mean
#   read-out it is invariant, and a task like "is it sorted?" is then impossible (loss ≥ ln 2 on
#   pairs of the same tokens). Positions must be put in: added, rotated or as a bias.
# - **Sinusoidal**: PE(p + k) = R_k PE(p) with R_k a block rotation independent of p (the cos
#   features are essential); PE(p)·PE(q) = Σ cos((p − q)θ_i), even in p − q; d buys robustness to
#   noise, the base sets the range. **Learned** tables fit the task but have no structure and no
#   rows beyond their length.
# - **RoPE** makes the score a function of the offset exactly, ⟨R_m q, R_n k⟩ = ⟨q, R_{n−m} k⟩; Su
#   et al.'s long-distance decay is a bound (and the score of aligned vectors), not a decay of
#   unrelated ones. **ALiBi** adds −m_h (i − j): equal-content weights ∝ e^{−m d}.
# - From the positional side, Thm. 14.3.12's η ≈ exp(−d/λ) holds for ALiBi (λ = 1/(2m)), not without
#   positions, not for sinusoidal ones. Information ∝ gradient², not gradient.
# - n positions need far fewer dimensions than Thm. 14.3.14 says: any injective code carries
#   log₂ n bits and every offset; the real limits are bits per coordinate and resolution.
# - Reproduced (Press et al. 2022): trained at L = 32 and tested at 4L, ALiBi keeps its accuracy
#   (≥ 0.93 asserted), sinusoidal positions collapse (≤ 0.7 asserted), RoPE lies in between.
#
# **Next — chapter 08, residual, highway and normalization**: what keeps the signal (and the
# positions added at the input) alive through many layers — identity paths x + F(x), gates, and
# LayerNorm vs BatchNorm vs RMSNorm.
