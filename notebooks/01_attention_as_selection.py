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
# # Chapter 01 · Attention as information selection
# *注意力作为信息选择* — source 000, §14.3.1 (Def. 14.3.1–14.3.4, Lemma 14.3.1–14.3.5, Thm. 14.3.1,
# Eq. 14.3.1–14.3.7)
#
# **After this chapter you can**
# - write attention as a weighted average of values (Eq. 14.3.1) and read the weights as a
#   probability distribution over positions, P(i | q) (Eq. 14.3.2);
# - measure how concentrated attention is with its entropy (Eq. 14.3.3) and state its bounds;
# - explain the roles of queries, keys and values and why scores are divided by √d_k (Eq. 14.3.4);
# - say which of the source's information-theory claims hold, which hold only under conditions,
#   and which are wrong — with a counterexample for each wrong one;
# - implement softmax, attention scores, weighted averages, attention entropy and masked
#   attention from scratch (the graded exercises).
#
# **Prerequisites**: chapter 00; matrix products, the exponential and logarithm, a discrete
# probability distribution; PyTorch tensors at the level of `x @ y`, `x.sum(dim=-1)`.
#
# **Time**: about 75 minutes (45 reading and experimenting, 30 for the exercises).
#
# Marks used in the claim checks: **✓ holds** · **⚠ holds only under a condition** (stated) ·
# **✗ wrong as printed** (counterexample and correct statement given).

# %% slideshow={"slide_type": "skip"}
import math
import time

import matplotlib.pyplot as plt
import numpy as np
import torch

from attncourse.attention import MultiHeadAttention, scaled_dot_product_attention, softmax
from attncourse.chapters.ch01_attention_as_selection import (
    COLORS,
    KEY_NAMES,
    KEYS_2D,
    VALUES_2D,
    SelectionPlot,
    query_selection,
    selection_sweep,
    selection_widget,
    selection_widget_update,
)
from attncourse.metrics import (
    attention_entropy,
    co_information,
    effective_support,
    entropy,
    mutual_information,
)

torch.manual_seed(0)
np.random.seed(0)
torch.set_num_threads(2)
torch.set_printoptions(precision=4, sci_mode=False)
plt.rcParams.update({"figure.dpi": 80, "figure.figsize": (7, 3)})

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 1. Attention is a weighted average (Def. 14.3.1, Eq. 14.3.1)
#
# Given n input vectors $x_1, \dots, x_n \in \mathbb{R}^d$ (the rows of $X$) and weights
# $\alpha_i \ge 0$ with $\sum_i \alpha_i = 1$, the *information selection operator* is
#
# $$\mathrm{Attention}(X, \alpha) = \sum_{i=1}^{n} \alpha_i x_i \qquad (14.3.1)$$
#
# Because the weights form a probability distribution, the output is a **convex combination**:
# it always lies inside the convex hull of the inputs. With one weight equal to 1 the operator
# *copies* one input (hard selection); with equal weights it returns their mean (no selection).
#
# > **Glossary** · weighted average 加权平均 · attention weight 注意力权重 · convex combination 凸组合 ·
# > information selection operator 信息选择算子 · probability distribution 概率分布

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
X = torch.tensor(
    [[1.0, 0.0], [0.0, 2.0], [-1.0, -1.0], [3.0, 1.0]], dtype=torch.float64
)  # (n=4, d=2)
for name, alpha in {
    "one-hot on x_2": torch.tensor([0.0, 1.0, 0.0, 0.0]),
    "uniform": torch.full((4,), 0.25),
    "mostly x_4": torch.tensor([0.1, 0.1, 0.1, 0.7]),
}.items():
    out = alpha.double() @ X  # (d,) = sum_i alpha_i x_i   (Eq. 14.3.1)
    print(
        f"{name:15s} alpha={[round(a, 2) for a in alpha.tolist()]}  ->  output={[round(v, 3) for v in out.tolist()]}"
    )

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Claim check — Def. 14.3.1 ✓.** The package's attention returns exactly `weights @ values`,
# and the output never leaves the convex hull of the values: for every direction u,
# u·output ≤ max_j u·v_j (the support-function test of hull membership).

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
q = torch.randn(500, 2, dtype=torch.float64) * 3  # (T=500, d_k=2) random queries
out, w = scaled_dot_product_attention(q, KEYS_2D, VALUES_2D)  # (T, d_v), (T, S)
assert torch.allclose(out, w @ VALUES_2D)  # Eq. (14.3.1) with alpha = each row of w
assert torch.allclose(w.sum(-1), torch.ones(500, dtype=torch.float64)) and (w >= 0).all()
u = torch.randn(2, 200, dtype=torch.float64)  # 200 random directions
inside = ((out @ u) <= (VALUES_2D @ u).amax(0) + 1e-12).all()
print("500 outputs, 200 directions: all inside the convex hull of the values:", bool(inside))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 2. Softmax turns scores into P(i | q) (Lemma 14.3.1, Eq. 14.3.2)
#
# The weights come from similarity scores $s(q, x_i)$ through the softmax
#
# $$P(i \mid q) = \alpha_i = \frac{\exp(s(q, x_i))}{\sum_{j=1}^{n} \exp(s(q, x_j))} \qquad (14.3.2)$$
#
# Every real score vector gives a valid distribution: all weights are **strictly** positive and
# they sum to 1. Adding the same constant to every score changes nothing (softmax is
# *shift-invariant*), which is why an implementation subtracts the row maximum before `exp` —
# mathematically a no-op, numerically the difference between a number and `nan`.
#
# > **Glossary** · softmax 归一化指数函数 (Softmax) · score 分数 · similarity 相似度 ·
# > conditional probability P(i|q) 条件概率 · shift invariance 平移不变性 · overflow 溢出

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
s = torch.tensor([2.0, 1.0, 0.1, -3.0], dtype=torch.float64)
alpha = softmax(s)
print(
    "alpha           :",
    [round(a, 4) for a in alpha.tolist()],
    " sum =",
    round(float(alpha.sum()), 12),
)
print("alpha(s + 1000) :", [round(a, 4) for a in softmax(s + 1000).tolist()])
naive = torch.exp(s.float() + 1000) / torch.exp(s.float() + 1000).sum()  # no max subtraction
print("naive exp(s+1000)/sum in float32:", naive.tolist())
assert torch.allclose(softmax(s + 1000), alpha) and (alpha > 0).all()

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Claim check — Lemma 14.3.1 ✓ as a normalisation, ⚠ as a probability "of position i".**
# That softmax yields a distribution is all the printed proof shows. When is it really a
# *posterior* P(i | q)? Exactly in this model: position i is chosen with prior 1/n and the query is
# a noisy copy of its key, q ~ N(k_i, σ²I). Bayes' rule gives
# P(i | q) ∝ exp(−‖q − k_i‖²/2σ²) ∝ exp(q·k_i/σ² − ‖k_i‖²/2σ²), i.e. **softmax of dot products at
# temperature σ², provided all keys have the same norm** (otherwise each key needs a bias
# −‖k_i‖²/2σ²). The cell checks both halves.


# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
def gaussian_posterior(q, keys, sigma):
    """Exact Bayes posterior P(i | q) for q ~ N(k_i, sigma^2 I) with a uniform prior: (T, n)."""
    log_lik = -((q[:, None, :] - keys[None]) ** 2).sum(-1) / (2 * sigma**2)  # (T, n)
    return torch.exp(log_lik - log_lik.logsumexp(-1, keepdim=True))


sigma, n, d = 0.7, 5, 3
keys_equal = (
    torch.nn.functional.normalize(torch.randn(n, d, dtype=torch.float64), dim=-1) * 2
)  # all norms 2
i = torch.randint(n, (1000,))
queries = keys_equal[i] + sigma * torch.randn(1000, d, dtype=torch.float64)  # (1000, d)
gap_equal = (
    (gaussian_posterior(queries, keys_equal, sigma) - softmax(queries @ keys_equal.T / sigma**2))
    .abs()
    .max()
)
keys_unequal = keys_equal * torch.tensor([[0.5], [1.0], [1.5], [2.0], [1.0]], dtype=torch.float64)
gap_unequal = (
    (
        gaussian_posterior(queries, keys_unequal, sigma)
        - softmax(queries @ keys_unequal.T / sigma**2)
    )
    .abs()
    .max()
)
print(f"equal key norms  : max |posterior - softmax| < 1e-12: {bool(gap_equal < 1e-12)}")
print(f"unequal key norms: max |posterior - softmax| = {gap_unequal:.2f}")
assert gap_equal < 1e-12 and gap_unequal > 0.1

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 3. The entropy of attention (Def. 14.3.2, Eq. 14.3.3; Lemma 14.3.2; Cor. 14.3.1)
#
# How selective is one query? The source measures it with the entropy of its weights,
#
# $$H(X \mid q) = -\sum_{i=1}^{n} \alpha_i \log \alpha_i \qquad (14.3.3)$$
#
# in nats (natural log; 0 log 0 = 0). Lemma 14.3.2: it is **0** when one weight is 1 and at most
# **log n**, reached only by the uniform distribution. $e^{H}$ is the *effective number of
# attended positions*. A note on notation: (14.3.3) is the entropy of the position index I for
# **one given** query, H(I | Q = q). The conditional entropy H(I | Q) of information theory is
# its average over queries; §8 uses it.
#
# > **Glossary** · entropy 熵 · conditional entropy 条件熵 · nat 奈特 (natural unit) · bit 比特 ·
# > uniform distribution 均匀分布 · one-hot 独热 · effective support 有效支撑 / 有效位置数

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
n = 6
uniform = torch.full((n,), 1 / n, dtype=torch.float64)
one_hot = torch.eye(n, dtype=torch.float64)[2]
print(
    f"uniform : H = {float(attention_entropy(uniform)):.4f}  (log {n} = {math.log(n):.4f}),  e^H = {float(effective_support(uniform)):.2f}"
)
print(
    f"one-hot : H = {float(attention_entropy(one_hot)):.4f},  e^H = {float(effective_support(one_hot)):.2f}"
)
w = torch.distributions.Dirichlet(torch.full((n,), 0.5, dtype=torch.float64)).sample(
    (100_000,)
)  # (100000, n)
h, p_max = attention_entropy(w), w.amax(-1)
fano = -(p_max * p_max.log() + (1 - p_max) * (1 - p_max).clamp_min(1e-300).log()) + (
    1 - p_max
) * math.log(n - 1)
print(
    f"100000 random distributions: min H = {float(h.min()):.3f} >= 0, max H = {float(h.max()):.3f} <= log n"
)
assert (h >= 0).all() and (h <= math.log(n)).all()
assert (h >= -p_max.log() - 1e-12).all()  # H >= -log(max alpha): low entropy forces a large weight
assert (h <= fano + 1e-12).all()  # Fano: a large weight forces low entropy
print("H >= -log(max alpha) and H <= h(max alpha) + (1 - max alpha) log(n - 1) on every sample")

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Claim check — Lemma 14.3.2 ✓**, and sharper than printed: "low entropy ⇔ one dominant
# weight" is quantitative in both directions. $H \ge -\log \max_i \alpha_i$ (so H < ε forces
# $\max_i\alpha_i > e^{-\varepsilon}$) and, by Fano's inequality,
# $H \le h(\max_i\alpha_i) + (1-\max_i\alpha_i)\log(n-1)$ (a dominant weight forces low entropy).
#
# **Claim check — Cor. 14.3.1 (information bottleneck) ⚠.** "Selecting k ≪ n positions" is not
# what softmax does: every weight is strictly positive (Lemma 14.3.1), so all n positions are
# always read. Softmax compresses *softly*: the effective number of positions $e^{H}$ can be ≪ n,
# but exact k-sparsity needs a mask or a sparse normaliser (chapter 10). The plot shows one query
# direction grown longer: the entropy falls from log n towards 0, and $e^H$ with it, while the
# smallest weight stays above zero (until it underflows in floating point, which is not selection).

# %% slideshow={"slide_type": "subslide"}
# NBVAL_CHECK_OUTPUT
norms = torch.linspace(0, 12, 121, dtype=torch.float64)
W, H, _ = selection_sweep(50.0, norms)  # one query direction, growing |q|: (121, 6), (121,)
smallest = W.amin(-1)  # (121,)
fig, ax = plt.subplots(1, 2, figsize=(9, 3))
ax[0].plot(norms, H, label="H(alpha)")
ax[0].axhline(math.log(6), ls="--", c="k", lw=1, label="log n (uniform)")
ax[0].axhline(0, ls=":", c="k", lw=1, label="0 (one-hot)")
ax[0].set(xlabel="|q| (query at 50°)", ylabel="entropy (nats)", title="entropy falls as |q| grows")
ax[0].legend(fontsize=8)
ax[1].semilogy(norms, smallest)
ax[1].set(xlabel="|q|", ylabel="smallest weight", title="...but no weight reaches 0")
plt.tight_layout()
plt.show()
print(
    f"|q| = 0: H = {float(H[0]):.4f} = log 6;  |q| = 12: H = {float(H[-1]):.4f}, e^H = {math.exp(H[-1]):.3f}, "
    f"smallest weight = {float(smallest[-1]):.1e} > 0"
)
assert abs(H[0] - math.log(6)) < 1e-12 and (smallest > 0).all() and (H.diff() <= 1e-12).all()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 4. Queries, keys and values: request, label, content (Def. 14.3.3)
#
# From the same inputs $x_i$ three linear maps make three roles:
# $q_i = x_i W_Q \in \mathbb{R}^{d_k}$ (**request**: what do I need?),
# $k_j = x_j W_K \in \mathbb{R}^{d_k}$ (**label**: what do I offer?),
# $v_j = x_j W_V \in \mathbb{R}^{d_v}$ (**content**: what do I hand over?).
# The weights depend only on requests and labels; the output depends on the contents only
# linearly. Because $W_Q \ne W_K$, "i looks for j" is not "j looks for i": the score matrix
# $x W_Q W_K^\top x^\top$ is not symmetric.
#
# > **Glossary** · query 查询 (信息请求) · key 键 (信息标签) · value 值 (信息内容) ·
# > projection matrix 投影矩阵 · self-attention 自注意力 · asymmetric 非对称

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
T, d_model = 5, 8
x = torch.randn(1, T, d_model, dtype=torch.float64)  # (B=1, T, d_model)
mha = MultiHeadAttention(d_model, num_heads=1, bias=False).double()  # one head: W_Q, W_K, W_V, W_O
y, w_mha = mha(x)  # (1, T, d_model), (1, 1, T, T)
q, k, v = mha.q_proj(x), mha.k_proj(x), mha.v_proj(x)  # (1, T, d_k) each: request, label, content
out, w = scaled_dot_product_attention(q, k, v)  # (1, T, d_v), (1, T, T)
assert torch.allclose(w_mha[:, 0], w) and torch.allclose(y, mha.out_proj(out))

_, w_other_values = scaled_dot_product_attention(q, k, torch.randn_like(v))  # new contents
out_2v, _ = scaled_dot_product_attention(q, k, 2 * v)
scores = q[0] @ k[0].T  # (T, T)
print("weights unchanged when the values change      :", torch.equal(w, w_other_values))
print("output doubles when the values double         :", torch.allclose(out_2v, 2 * out))
print("scores symmetric with W_Q != W_K               :", torch.allclose(scores, scores.T))
print(
    "scores symmetric with W_Q == W_K (k used as q) :",
    torch.allclose(k[0] @ k[0].T, (k[0] @ k[0].T).T),
)

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Claim check — Def. 14.3.3 ✓** as a description of the computation: the package's
# multi-head attention with one head is exactly these three projections followed by Eq. (14.3.4);
# weights ignore the values; the output is linear in them. "Request / label / content" is an
# interpretation, not something a trained model is forced to respect.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 5. The scaled dot product (Lemma 14.3.3, Eq. 14.3.4–14.3.5)
#
# The score of Eq. (14.3.2) in a Transformer is
#
# $$s(q, k_j) = \frac{q^\top k_j}{\sqrt{d_k}} \qquad (14.3.4)$$
#
# **Why √d_k.** If the components of q and k are independent with mean 0 and variance 1, then
# $q^\top k$ has mean 0 and variance $d_k$ (Vaswani et al. 2017, §3.2.1, footnote 4). Unscaled
# scores therefore spread out as d_k grows, and the softmax saturates: one weight near 1, the
# others near 0 (and, chapter 03, gradients near 0). Dividing by √d_k keeps the variance at 1.
#
# > **Glossary** · scaled dot product 缩放点积 · variance 方差 · saturation 饱和 ·
# > key dimension d_k 键维度 · mutual information 互信息 · pointwise mutual information 点互信息

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Reproduction: Vaswani et al. 2017, §3.2.1, footnote 4 (CPU, < 1 s)
# Two seeds; 4000 (q, k) pairs per d_k for the variance; 200 queries over 64 keys for the
# softmax statistics. Expected (paper, and chapter 03 in depth): var(q·k)/d_k ≈ 1 for every d_k;
# unscaled softmax ever more peaked as d_k grows, scaled softmax unchanged.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
dims = [4, 16, 64, 256]
rows = {}
for seed in (0, 1):
    g = torch.Generator().manual_seed(seed)
    for d_k in dims:
        a, b = torch.randn(2, 4000, d_k, generator=g)  # 4000 pairs of unit-variance vectors
        ratio = float((a * b).sum(-1).var() / d_k)  # var(q.k) / d_k
        Q, K = torch.randn(200, d_k, generator=g), torch.randn(64, d_k, generator=g)
        raw, scaled = softmax(Q @ K.T), softmax(Q @ K.T / math.sqrt(d_k))  # (200, 64) each
        rows[seed, d_k] = (
            ratio,
            float(raw.amax(-1).mean()),
            float(attention_entropy(raw).mean()),
            float(scaled.amax(-1).mean()),
            float(attention_entropy(scaled).mean()),
        )
print(
    f"{'seed':>4} {'d_k':>4} {'var/d_k':>8} | {'unscaled: max w':>15} {'H':>5} | {'scaled: max w':>13} {'H':>5}"
)
for (seed, d_k), (ratio, m_raw, h_raw, m_sc, h_sc) in rows.items():
    print(
        f"{seed:>4} {d_k:>4} {ratio:>8.2f} | {m_raw:>15.2f} {h_raw:>5.2f} | {m_sc:>13.2f} {h_sc:>5.2f}"
    )
print(f"log 64 = {math.log(64):.2f}")
for (_seed, d_k), (ratio, m_raw, _h_raw, _m_sc, h_sc) in rows.items():
    assert 0.9 <= ratio <= 1.1, "var(q.k) should be d_k"
    assert h_sc > 3.0, "scaled softmax should stay diffuse"
    if d_k >= 256:
        assert m_raw > 0.85, "unscaled softmax should saturate at large d_k"

# %% slideshow={"slide_type": "subslide"}
fig, ax = plt.subplots(1, 2, figsize=(9, 3))
ax[0].plot(dims, [rows[0, d][0] for d in dims], "o-")
ax[0].axhline(1, ls="--", c="k", lw=1)
ax[0].set(
    xscale="log",
    ylim=(0, 1.5),
    xlabel="d_k",
    ylabel="var(q·k) / d_k",
    title="Vaswani et al., footnote 4",
)
ax[1].plot(dims, [rows[0, d][1] for d in dims], "o-", label="unscaled q·k")
ax[1].plot(dims, [rows[0, d][3] for d in dims], "s-", label="scaled q·k/√d_k")
ax[1].set(
    xscale="log",
    ylim=(0, 1),
    xlabel="d_k",
    ylabel="mean largest weight (64 keys)",
    title="saturation",
)
ax[1].legend(fontsize=8)
plt.tight_layout()
plt.show()

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Claim check — Eq. (14.3.5) "I(q; k_j) ≈ qᵀk_j" ✗ wrong as printed.** The source (引理 14.3.3)
# says the scaled dot product "等价于计算查询与各位置标签的互信息近似", justified by "内积与互信息成正比"
# in the exponential family. Two reasons it cannot hold:
#
# 1. *Type*: mutual information is a property of two **random variables** (a number ≥ 0 computed
#    from their joint distribution); qᵀk_j is a number computed from two **particular vectors**, and
#    it is negative whenever they point apart.
# 2. *Even as expectations* there is no monotone relation. Take q, k ∈ {−1, +1}: "k = q with
#    probability 0.9" and "k = −q with probability 0.9" have the **same** mutual information,
#    1 − h(0.1) = 0.531 bits, but E[qk] = +0.8 and −0.8. For Gaussian q, k ∈ ℝ^d with per-coordinate
#    correlation ρ: I(q; k) = −(d/2) ln(1 − ρ²) is even in ρ, while E[qᵀk] = dρ is odd.
#
# **Correct statement.** A score is, up to a constant per query, a **pointwise** mutual
# information: if position j is a priori uniform and α = softmax(s), then
# $\log\frac{P(j\mid q)}{P(j)} = s_j - \mathrm{logsumexp}(s) + \log n$, which may be negative. Its
# average under α is $\log n - H(\alpha) \ge 0$, the information this query gives about which
# position is read. Taking for P(j) the actual average weight $\bar\alpha_j$ over many queries, the
# average PMI over queries and positions is exactly the mutual information
# $I(Q; J) = H(\bar\alpha) - \mathbb{E}_q H(\alpha(q)) \ge 0$ (computed below for the widget's keys).

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
for p_same in (0.9, 0.1):
    joint = torch.tensor(
        [[p_same / 2, (1 - p_same) / 2], [(1 - p_same) / 2, p_same / 2]], dtype=torch.float64
    )
    values_pm = torch.tensor([-1.0, 1.0], dtype=torch.float64)
    e_qk = float(values_pm @ joint @ values_pm)  # E[q k] over the joint table p(q, k)
    print(
        f"P(k = q) = {p_same}:  E[q k] = {e_qk:+.3f}   I(q; k) = {mutual_information(joint, 0, 1):.3f} bits"
    )
rho = torch.linspace(-0.95, 0.95, 5, dtype=torch.float64)
d = 16
print("Gaussian, d = 16:  rho      :", [round(r, 2) for r in rho.tolist()])
print("                   E[q.k]   :", [round(r, 2) for r in (d * rho).tolist()])
print(
    "                   I (nats) :",
    [round(r, 2) for r in (d / 2 * torch.log(1 / (1 - rho**2))).tolist()],
)

# pointwise mutual information = score up to a per-query constant; its alpha-average = log n - H >= 0
s = torch.tensor([1.5, -0.3, 0.2, -2.0, 0.9], dtype=torch.float64)
alpha = softmax(s)
pmi = torch.log(alpha * len(s))  # log P(j|q)/P(j) with P(j) = 1/n
assert torch.allclose(pmi - s, (pmi - s)[0].expand(5))  # PMI = score + constant
assert abs(float(alpha @ pmi) - (math.log(5) - float(attention_entropy(alpha)))) < 1e-12
print("PMI of each position:", [round(p, 3) for p in pmi.tolist()], " (negative ones included)")
print(f"alpha-average of PMI = log n - H(alpha) = {float(alpha @ pmi):.4f} >= 0")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 6. Routing (Lemma 14.3.4)
#
# The source describes attention as a router: **QKᵀ decides where** information flows, the
# softmax weights **aggregate V**, and **d_k, d_v limit capacity**. The first two are exactly
# what §4 checked (weights independent of V, output linear in V). The routing picture below sweeps
# a query of fixed length around the circle and stacks the weights of the six fixed keys of the
# widget: each key owns an angular "territory" where it gets the largest weight.
#
# One consequence is easy to miss: a key **inside the convex hull** of the other keys (key F
# here) can **never** receive the largest weight, for any query — a linear function q·k attains
# its maximum over a set at a vertex of the set's hull. Position F can still be *read* (its weight
# is positive), but no query can *select* it.
#
# > **Glossary** · routing 路由 · aggregation 聚合 · capacity 容量 · convex hull 凸包 ·
# > rank 秩 · territory (region where a key wins) 主导区域

# %% slideshow={"slide_type": "subslide"}
# NBVAL_CHECK_OUTPUT
angles = torch.arange(-180, 180, 1.0)
fig, ax = plt.subplots(1, 2, figsize=(10, 3))
for a_i, norm in enumerate((1.0, 5.0)):
    W, _, _ = selection_sweep(angles, norm)  # (360, 6)
    ax[a_i].stackplot(angles, W.T, labels=KEY_NAMES, colors=COLORS)
    ax[a_i].set(
        xlim=(-180, 180),
        ylim=(0, 1),
        xlabel="query angle (degrees)",
        ylabel="weights (stacked)",
        title=f"|q| = {norm}",
    )
    winners = sorted({KEY_NAMES[j] for j in W.argmax(-1).tolist()})
    print(
        f"|q| = {norm}: keys that ever get the largest weight: {winners};  "
        f"min weight of F = {float(W[:, 5].min()):.2e}"
    )
    assert "F" not in winners
ax[1].legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=8)
plt.tight_layout()
plt.show()

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Claim check — Lemma 14.3.4, "d_k and d_v limit the information dimension" ⚠.** Two facts
# hold: the score matrix $QK^\top$ has rank at most d_k, and the output matrix (T × d_v) has rank at
# most d_v. But the **weights** are not rank-limited — `exp` is non-linear — so even d_k = 1 gives a
# full-rank T × S routing matrix. What d_k limits is *which* routings can be expressed (Bhojanapalli
# et al. 2020, "Low-rank bottleneck in multi-head attention models"): with d_k = 1, scores are
# $q_i k_j$, so every query's largest weight falls on the largest or the smallest key — at most
# **2** keys can ever be selected (checked in §8).

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
T = S = 8
q1, k1 = torch.randn(T, 1, dtype=torch.float64), torch.randn(S, 1, dtype=torch.float64)  # d_k = 1
v4 = torch.randn(S, 3, dtype=torch.float64)  # d_v = 3
out1, w1 = scaled_dot_product_attention(q1, k1, v4)
print("rank of Q K^T (d_k = 1):", int(torch.linalg.matrix_rank(q1 @ k1.T)))
print("rank of the weights    :", int(torch.linalg.matrix_rank(w1)), f"(full: {T})")
print("rank of the output     :", int(torch.linalg.matrix_rank(out1)), "(<= d_v = 3)")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 7. Widget: move a query, watch the selection
#
# Six fixed keys A–F live in a 2-D key space; each key has a 2-D value (right panel). Move the
# query with **angle** and **|q|**; change the **temperature** (scores are divided by it) or turn
# the **1/√d_k** scale off (d_k = 2). The bars are the weights (Eq. 14.3.2), the grey gauge their
# entropy between its bounds 0 and log 6 (Lemma 14.3.2), the star the output — the weighted average
# of the value points (Eq. 14.3.1). Things to try:
# 1. |q| = 0: every key gets 1/6, the entropy sits at log 6, the star at the centre of the values.
# 2. Point the query at A and make it long: the weight of A → 1, entropy → 0, the star → v_A.
# 3. Find a query that selects F. (You cannot: §6.)
# 4. Temperature 0.1 vs 10 at the same query: the same ranking of keys, very different entropy.
# 5. Point between two keys: the star moves along the segment between their values.
#
# Behind the widget are two plain functions, `query_selection` (the numbers) and
# `selection_widget_update` (numbers + redraw); the tests and `benchmarks/notebooks.py` call them.

# %% slideshow={"slide_type": "slide"}
# NBVAL_IGNORE_OUTPUT
selection_widget(angle=20.0, norm=2.0)

# %% [markdown] slideshow={"slide_type": "skip"}
# A static snapshot of the same figure (for printed notes), and the cost of one widget update:

# %% slideshow={"slide_type": "skip"}
# NBVAL_IGNORE_OUTPUT
snapshot = SelectionPlot(pyplot=True)
snapshot.update(query_selection(35.0, 3.0))
plt.show()
timing_plot = SelectionPlot()
selection_widget_update(timing_plot, 0.0, 1.0)  # first draw caches the static background
times = []
for step in range(30):
    start = time.perf_counter()
    selection_widget_update(timing_plot, -180.0 + 12 * step, 0.5 + (step % 6))
    times.append(time.perf_counter() - start)
median_ms = 1000 * float(np.median(times))
print(
    f"one widget update (compute + redraw + PNG): median {median_ms:.1f} ms over 30 moves "
    f"({'within' if median_ms <= 100 else 'OVER'} the 100 ms budget)"
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 8. How many dimensions does selection need? (Thm. 14.3.1)
#
# The source states two lower bounds "for lossless transfer": **d_k ≥ log₂ n** ("to encode n
# different positions") and **d_v ≥ H(Y | X)**.
#
# **Claim check — d_k ≥ log₂ n ✗ wrong for real-valued keys, ✓ for sign codes.**
# - Put n keys on the unit circle in d_k = 2. Every one of them is a vertex of their convex hull, so
#   the query $q = \beta k_j$ selects key j with weight → 1 as β grows. n = 64 > 2² keys in 2
#   dimensions, each selectable.
# - With **binary/sign** keys ($k \in \{-1,+1\}^{d_k}$) there are only $2^{d_k}$ distinct keys, so
#   n distinguishable keys need $d_k \ge \log_2 n$ — the printed bound, and tight: the 8 corners of
#   the cube in d_k = 3 are all selectable.
# - In d_k = 1 at most 2 keys can ever be selected (§6), whatever n is.
#
# The real cost of packing many keys into few dimensions is **precision**: neighbouring keys on
# the circle differ by an angle 2π/n, so the score gap is $\beta(1-\cos(2\pi/n))/\sqrt{2}$ and the
# query norm needed for a given selectivity grows like n². **Correct statement:** what is bounded
# is bits, not dimensions. If each coordinate of a key is stored with b bits, there are at most
# $2^{b\,d_k}$ distinct keys, so $b\,d_k \ge \log_2 n$; with b = 1 (signs) this is the printed bound.
#
# > **Glossary** · lower bound 下界 · sign code 符号编码 · precision 精度 · lossless 无损 ·
# > key dimension 键维度 d_k · value dimension 值维度 d_v


# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
def circle_keys(n):
    angle = torch.arange(n, dtype=torch.float64) * 2 * math.pi / n
    return torch.stack([angle.cos(), angle.sin()], dim=-1)  # (n, 2) unit keys, d_k = 2


n = 64
keys = circle_keys(n)
w = softmax(1e4 * keys @ keys.T / math.sqrt(2))  # row j: query 1e4 * k_j   (n, n)
print(
    f"d_k = 2, n = {n} (log2 n = {math.log2(n):.0f}): every key selected by its own query:",
    bool((w.argmax(-1) == torch.arange(n)).all()),
    f"  smallest selected weight = {float(w.diagonal().min()):.4f}",
)
assert (w.argmax(-1) == torch.arange(n)).all() and w.diagonal().min() > 0.99

cube = torch.tensor(
    [[a, b, c] for a in (-1.0, 1.0) for b in (-1.0, 1.0) for c in (-1.0, 1.0)], dtype=torch.float64
)
w_cube = softmax(20 * cube @ cube.T / math.sqrt(3))  # (8, 8)
print(
    "sign keys, d_k = 3: all 2^3 = 8 corners selectable:",
    bool((w_cube.argmax(-1) == torch.arange(8)).all()),
    f" (smallest selected weight {float(w_cube.diagonal().min()):.4f})",
)

k_line = torch.randn(10, 1, dtype=torch.float64)  # d_k = 1, n = 10
# 1000 queries from -50 to 50; q = 0 is not among them: there all ten scores tie
sweep = torch.linspace(-50, 50, 1000, dtype=torch.float64)[:, None]
winners = torch.unique((sweep @ k_line.T).argmax(-1))
print(f"d_k = 1, n = 10: keys that any query q != 0 selects: {winners.numel()}")
assert winners.tolist() == sorted({int(k_line.argmax()), int(k_line.argmin())})


def norm_needed(n, target=0.9):
    """Smallest |q| on a fine log grid for which the query |q| * k_0 gives key 0 a weight >= target."""
    keys = circle_keys(n)
    betas = torch.logspace(0, 6, 6001, dtype=torch.float64)  # candidate |q|, steps of 0.23 %
    w0 = softmax(betas[:, None] * (keys @ keys[0])[None] / math.sqrt(2))[
        :, 0
    ]  # (6001,) weight of key 0
    return float(betas[int((w0 >= target).nonzero()[0])])


ns = [8, 16, 32, 64, 128, 256]
needed = [norm_needed(m) for m in ns]
slope = np.polyfit(np.log(ns), np.log(needed), 1)[0]
print("n            :", ns)
print("|q| for 0.9  :", [round(b) for b in needed])
print(f"log-log slope: {slope:.2f}  (precision cost ~ n^2)")
assert 1.8 < slope < 2.2

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Claim check — d_v ≥ H(Y | X) ✗ wrong as printed.** It compares a number of dimensions with a
# number of bits, and it uses the wrong quantity: H(Y | X) is what X does **not** tell about Y. If
# Y = X is one of 256 equally likely symbols, H(Y | X) = 0 — the bound asks for nothing — yet 8 bits
# must pass. And one real coordinate can carry all 8: below, 256 keys on the circle (d_k = 2) and
# values $v_j = j$ (**d_v = 1**) return every symbol exactly. **Correct statement:** the information
# an attention output carries is bounded by its entropy, $I(X; Y) \le H(\text{output}) \le b\,d_v$ bits
# when each of its d_v coordinates is stored with b bits; dimensions bound information only
# together with precision.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
n = 256
keys = circle_keys(n)  # (256, 2)
values = torch.arange(n, dtype=torch.float64)[:, None]  # (256, 1): d_v = 1, v_j = j
sent = torch.arange(n)
out, _ = scaled_dot_product_attention(1e5 * keys[sent], keys, values)  # (256, 1)
received = out[:, 0].round().long()
print(
    f"256 symbols (8 bits) through d_k = 2, d_v = 1: all recovered exactly: {bool((received == sent).all())}"
)
same = torch.eye(n, dtype=torch.float64) / n  # p(x, y) with Y = X uniform on 256 symbols
print(
    f"H(Y | X) = H(X, Y) - H(X) = {entropy(same) - entropy(same, dims=0):.1f} bits,  "
    f"I(X; Y) = {mutual_information(same, 0, 1):.1f} bits"
)
assert (received == sent).all()

# %% [markdown] slideshow={"slide_type": "-"}
# Averaged over many queries the same idea gives the exact **mutual information between queries
# and selected positions**, $I(Q; J) = H(\bar\alpha) - \mathbb{E}_q H(\alpha(q))$, with queries
# uniform on a circle of radius |q| around the widget's keys. It grows with |q| but stays below
# log₂ 5 bits, not log₂ 6: key F can never be selected.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
for norm in (0.0, 1.0, 3.0, 10.0, 50.0):
    W, _, _ = selection_sweep(torch.arange(0, 360, 1.0), norm)  # (360, 6)
    joint = W / W.shape[0]  # p(q, j): queries uniform, j ~ alpha(q)
    print(f"|q| = {norm:5.1f}:  I(Q; J) = {mutual_information(joint, 0, 1):.3f} bits")
print(f"log2 5 = {math.log2(5):.3f},  log2 6 = {math.log2(6):.3f}")
assert mutual_information(joint, 0, 1) < math.log2(5)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 9. An entropy-regularised objective (Def. 14.3.4, Eq. 14.3.6)
#
# $$\mathcal{L}_{\text{attn}} = -\sum_i \alpha_i \log \alpha_i + \lambda \sum_{i,j} \alpha_i \alpha_j\, d(x_i, x_j) \qquad (14.3.6)$$
#
# The source says the first term "encourages diversity" and the second "penalises selecting
# similar positions". With d a distance both terms grow when attention spreads over **distant**
# positions, so that reading holds only if $\mathcal{L}$ is **maximised**.
#
# **Claim check — Def. 14.3.4 ⚠ (sign).** Minimised like a loss, $\mathcal{L} \ge 0$ reaches its
# minimum 0 at a one-hot α — the opposite of diversity. Maximised, it does what the source says:
# below, three near-duplicate inputs and one distinct input; the entropy alone (λ = 0) spreads
# attention evenly (so ¾ of it goes to the duplicates), the distance term (λ = 1) moves weight to
# the distinct input. As a loss to minimise, use $-\mathcal{L}_{\text{attn}}$ (added with a weight
# to the task loss).
#
# > **Glossary** · regularisation 正则化 · diversity 多样性 · distance 距离 · gradient ascent 梯度上升

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
x_pos = torch.tensor(
    [0.0, 0.05, 0.1, 3.0], dtype=torch.float64
)  # three near-duplicates and one distinct input
dist = (x_pos[:, None] - x_pos[None]).abs()  # d(x_i, x_j)   (4, 4)


def optimise(lam, sign, steps=200, lr=1.0):
    """Gradient descent on sign * L_attn (Eq. 14.3.6) over the softmax logits."""
    logits = torch.tensor([0.3, 0.0, 0.0, 0.0], dtype=torch.float64)
    for _ in range(steps):
        logits.requires_grad_(True)
        a = softmax(logits)  # (4,)
        objective = attention_entropy(a) + lam * a @ dist @ a  # Eq. (14.3.6)
        (grad,) = torch.autograd.grad(objective, logits)
        logits = (logits - sign * lr * grad).detach()
    return softmax(logits)


results = {}
for lam in (0.0, 1.0):
    for direction, sign in (("minimised", 1.0), ("maximised", -1.0)):
        a = results[lam, direction] = optimise(lam, sign)
        print(
            f"lambda = {lam}, L {direction}: alpha = {[round(v, 3) for v in a.tolist()]}, "
            f"H = {float(attention_entropy(a)):.3f}"
        )
assert all(
    float(results[lam, "minimised"].max()) > 0.99 for lam in (0.0, 1.0)
)  # a loss collapses to one input
assert (
    float(results[1.0, "maximised"][3]) > float(results[0.0, "maximised"][3]) + 0.1
)  # the distinct input gains

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 10. Diversity and redundancy (Lemma 14.3.5, Eq. 14.3.7)
#
# $$I(X_{\text{selected}}; Y) \approx \sum_i I(x_i; Y) - \mathrm{Redundancy}(X_{\text{selected}}) \qquad (14.3.7)$$
#
# with a non-negative redundancy, justified in the source by "the subadditivity of mutual
# information". **Claim check ✗ wrong as printed.** Mutual information is neither sub- nor
# superadditive over sources in general. With **synergy** the whole carries more than the sum of its parts: if X₁, X₂ are fair
# coins and Y = X₁ XOR X₂, each input alone carries **0** bits about Y, together **1** bit. No
# non-negative redundancy can make 0 + 0 − R equal 1. (Redundancy does exist too: with X₁ = X₂ = Y
# the parts sum to 2 bits, the whole is 1.)
#
# **Correct statement** (the chain rule, exact):
# $I(X_1, X_2; Y) = I(X_1; Y) + I(X_2; Y \mid X_1) = I(X_1; Y) + I(X_2; Y) - I(X_1; X_2; Y)$, where the
# co-information $I(X_1; X_2; Y) = I(X_1; Y) - I(X_1; Y \mid X_2)$ is positive for redundancy and
# **negative for synergy**. "Select diverse positions" is sound advice only when the selected
# inputs are not synergistic. (The same error returns in Eq. 14.3.11 for heads: chapter 06.)
#
# > **Glossary** · redundancy 冗余 · synergy 协同 · chain rule 链式法则 ·
# > co-information 交互信息 · subadditivity 次可加性 · XOR 异或


# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
def joint_table(rule):
    """p(x1, x2, y) for two fair coins x1, x2 and y = rule(x1, x2): a (2, 2, 2) table."""
    p = torch.zeros(2, 2, 2, dtype=torch.float64)
    for a in (0, 1):
        for b in (0, 1):
            p[a, b, rule(a, b)] = 0.25
    return p


print(f"{'y =':10s} {'I(X1;Y)':>8} {'I(X2;Y)':>8} {'sum':>6} {'I(X1,X2;Y)':>11} {'co-info':>8}")
for name, rule in (
    ("x1 XOR x2", lambda a, b: a ^ b),
    ("x1 AND x2", lambda a, b: a & b),
    ("x1", lambda a, b: a),
):
    p = joint_table(rule)
    i1, i2, i12 = (
        mutual_information(p, 0, 2),
        mutual_information(p, 1, 2),
        mutual_information(p, (0, 1), 2),
    )
    co = co_information(p, 0, 1, 2)
    print(f"{name:10s} {i1:8.3f} {i2:8.3f} {i1 + i2:6.3f} {i12:11.3f} {co:8.3f}")
    assert abs(i12 - (i1 + i2 - co)) < 1e-12  # the chain rule holds exactly
copy = torch.zeros(2, 2, 2, dtype=torch.float64)
copy[0, 0, 0] = copy[1, 1, 1] = 0.5  # x1 = x2 = y: pure redundancy
print(
    f"{'x1=x2=y':10s} {mutual_information(copy, 0, 2):8.3f} {mutual_information(copy, 1, 2):8.3f} "
    f"{2 * mutual_information(copy, 0, 2):6.3f} {mutual_information(copy, (0, 1), 2):11.3f} {co_information(copy, 0, 1, 2):8.3f}"
)
xor = joint_table(lambda a, b: a ^ b)
assert mutual_information(xor, 0, 2) < 1e-12 and abs(mutual_information(xor, (0, 1), 2) - 1) < 1e-12

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 11. Claim checks at a glance
#
# | source claim | verdict | correct statement / condition |
# |---|---|---|
# | Def. 14.3.1, Eq. (14.3.1): output = Σ αᵢxᵢ | ✓ | a convex combination: inside the hull of the values |
# | Lemma 14.3.1, Eq. (14.3.2): softmax = P(i \| q) | ✓ / ⚠ | always a distribution; an exact Bayes posterior for q ~ N(kᵢ, σ²I), uniform prior, **equal key norms**, temperature σ² |
# | Def. 14.3.2, Eq. (14.3.3): H(X \| q) | ✓ | it is H(I \| Q = q) for one query; H(I \| Q) is its average |
# | Lemma 14.3.2: 0 ≤ H ≤ log n | ✓ | plus H ≥ −log max α and Fano's H ≤ h(max α) + (1 − max α) log(n − 1) |
# | Cor. 14.3.1: select k ≪ n positions | ⚠ | softmax keeps all n weights > 0; e^H can be ≪ n; exact sparsity needs masks (ch. 10) |
# | Def. 14.3.3: Q/K/V roles | ✓ | weights ignore V, output linear in V, scores asymmetric when W_Q ≠ W_K |
# | Lemma 14.3.3, Eq. (14.3.4): scaled dot product | ✓ | var(q·k) = d_k for unit-variance components (Vaswani et al. 2017) |
# | Lemma 14.3.3, Eq. (14.3.5): I(q; k_j) ≈ qᵀk_j | ✗ | a score is a *pointwise* MI up to a per-query constant (can be < 0); α-average log n − H ≥ 0 |
# | Lemma 14.3.4: routing; d_k, d_v limit capacity | ✓ / ⚠ | rank(QKᵀ) ≤ d_k but weights can be full rank; d_k limits which routings exist; keys inside the hull are never selected |
# | Thm. 14.3.1: d_k ≥ log₂ n | ✗ / ⚠ | true for sign codes; real keys: 64 keys selectable in d_k = 2; bits, not dims: b·d_k ≥ log₂ n |
# | Thm. 14.3.1: d_v ≥ H(Y \| X) | ✗ | I(X; Y) ≤ H(output) ≤ b·d_v bits; 8 bits pass through d_v = 1 |
# | Def. 14.3.4, Eq. (14.3.6) | ⚠ | encourages diversity only when **maximised** (minimise −L) |
# | Lemma 14.3.5, Eq. (14.3.7) | ✗ | chain rule with co-information, which is negative under synergy (XOR) |

# %% [markdown] slideshow={"slide_type": "skip"}
# ## 12. Exercises (graded)
#
# Five exercises, 11 points. Write your code between the lines marked for it, run the cell, then
# run the check cell under it: it tests your function on random and edge inputs and tells you
# precisely what is wrong. Write each function from plain tensor operations: `exp`, `log`, `sum`,
# `amax`, `@`, `einsum`, `masked_fill`, `where`, `logsumexp` are all fine. What computes the answer
# for you is refused, before anything else is checked: any softmax of PyTorch's (`torch.softmax`,
# `F.softmax`, `x.softmax(...)`, `log_softmax`, `F.cross_entropy`, `nn.Softmax`, ...),
# `F.scaled_dot_product_attention` and `nn.MultiheadAttention` in exercise 5, `torch.special.entr`
# in exercise 4, and every function of the course's own package `attncourse`. When graded, the
# same kinds of input are tried again with other numbers (the hidden tests), so a function that
# passes the visible check for the right reason passes them too.

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 1 (3 points) — a numerically stable softmax, Eq. (14.3.2)
# `my_softmax(scores)`: scores of shape (..., n) → weights of the same shape, softmax over the
# last dimension. It must work for scores like 1000 or −1000 (hint: shift invariance, §2).


# %% nbgrader={"grade": false, "grade_id": "ch01_softmax", "locked": false, "schema_version": 3, "solution": true} slideshow={"slide_type": "skip"}
def my_softmax(scores):
    """scores (..., n) -> weights (..., n): exp(s_i) / sum_j exp(s_j) over the last dim."""
    ### BEGIN SOLUTION
    shifted = scores - scores.amax(dim=-1, keepdim=True)  # (..., n), max 0: no overflow
    e = torch.exp(shifted)  # (..., n)
    return e / e.sum(dim=-1, keepdim=True)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch01_softmax_test", "locked": true, "points": 3, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"}
from attncourse.exercises.ch01 import check_softmax

check_softmax(my_softmax)
### BEGIN HIDDEN TESTS
import importlib

import attncourse.exercises.ch01 as ex
import attncourse.exercises.engine as engine

engine = importlib.reload(engine)  # fresh copies: a patched check does not count
ex = importlib.reload(ex)
ex.check_softmax(my_softmax, seed=11)
### END HIDDEN TESTS

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 2 (1 point) — attention as a weighted average, Eq. (14.3.1)
# `my_weighted_average(weights, values)`: weights (T, S), one distribution per row, and values
# (S, d) → outputs (T, d), row t being Σ_s weights[t, s] · values[s].


# %% nbgrader={"grade": false, "grade_id": "ch01_weighted_average", "locked": false, "schema_version": 3, "solution": true} slideshow={"slide_type": "skip"}
def my_weighted_average(weights, values):
    """weights (T, S), values (S, d) -> (T, d): row t = sum_s weights[t, s] * values[s]."""
    ### BEGIN SOLUTION
    return weights @ values  # (T, d)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch01_weighted_average_test", "locked": true, "points": 1, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"}
from attncourse.exercises.ch01 import check_weighted_average

check_weighted_average(my_weighted_average)
### BEGIN HIDDEN TESTS
import importlib

import attncourse.exercises.ch01 as ex
import attncourse.exercises.engine as engine

engine = importlib.reload(engine)  # fresh copies: a patched check does not count
ex = importlib.reload(ex)
ex.check_weighted_average(my_weighted_average, seed=12)
### END HIDDEN TESTS

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 3 (2 points) — scaled dot-product scores, Eq. (14.3.4)
# `my_scaled_scores(q, k)`: queries (T, d_k) and keys (S, d_k) → scores (T, S), entry
# (t, s) = q_t · k_s / √d_k.


# %% nbgrader={"grade": false, "grade_id": "ch01_scaled_scores", "locked": false, "schema_version": 3, "solution": true} slideshow={"slide_type": "skip"}
def my_scaled_scores(q, k):
    """q (T, d_k), k (S, d_k) -> scores (T, S) = q k^T / sqrt(d_k)."""
    ### BEGIN SOLUTION
    return q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (T, S)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch01_scaled_scores_test", "locked": true, "points": 2, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"}
from attncourse.exercises.ch01 import check_scaled_scores

check_scaled_scores(my_scaled_scores)
### BEGIN HIDDEN TESTS
import importlib

import attncourse.exercises.ch01 as ex
import attncourse.exercises.engine as engine

engine = importlib.reload(engine)  # fresh copies: a patched check does not count
ex = importlib.reload(ex)
ex.check_scaled_scores(my_scaled_scores, seed=13)
### END HIDDEN TESTS

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 4 (2 points) — attention entropy, Eq. (14.3.3)
# `my_entropy(weights)`: weights (..., n), each slice a distribution → entropies (...) in nats,
# with 0 · log 0 = 0 (a weight of exactly 0 must not produce `nan`).


# %% nbgrader={"grade": false, "grade_id": "ch01_entropy", "locked": false, "schema_version": 3, "solution": true} slideshow={"slide_type": "skip"}
def my_entropy(weights):
    """weights (..., n) -> H (...) = -sum_i w_i log w_i in nats, 0 log 0 = 0."""
    ### BEGIN SOLUTION
    safe = torch.where(weights > 0, weights, torch.ones_like(weights))  # log(1) = 0 where w = 0
    return -(weights * torch.log(safe)).sum(dim=-1)  # (...)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch01_entropy_test", "locked": true, "points": 2, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"}
from attncourse.exercises.ch01 import check_entropy

check_entropy(my_entropy)
### BEGIN HIDDEN TESTS
import importlib

import attncourse.exercises.ch01 as ex
import attncourse.exercises.engine as engine

engine = importlib.reload(engine)  # fresh copies: a patched check does not count
ex = importlib.reload(ex)
ex.check_entropy(my_entropy, seed=14)
### END HIDDEN TESTS

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 5 (3 points) — masked scaled dot-product attention, from scratch
# `my_masked_attention(q, k, v, mask)`: q (..., T, d_k), k (..., S, d_k), v (..., S, d_v) — the
# leading dimensions `...` are batch and heads, and there may be none — and mask (T, S) of bools
# with **True = may attend** → `(output (..., T, d_v), weights (..., T, S))`. Masked keys get
# weight exactly 0; a query whose keys are **all** masked gets a row of zeros (weights and output),
# not `nan`. (Hint: the scores of masked keys become −∞; think about what `exp(-inf - (-inf))` is.)


# %% nbgrader={"grade": false, "grade_id": "ch01_masked_attention", "locked": false, "schema_version": 3, "solution": true} slideshow={"slide_type": "skip"}
def my_masked_attention(q, k, v, mask):
    """q (T, d_k), k (S, d_k), v (S, d_v), mask (T, S) bool (True = may attend) -> (out (T, d_v), w (T, S))."""
    ### BEGIN SOLUTION
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (T, S)
    scores = scores.masked_fill(~mask, float("-inf"))  # (T, S)
    row_max = scores.amax(dim=-1, keepdim=True)  # (T, 1), -inf for a fully masked row
    row_max = torch.where(torch.isfinite(row_max), row_max, torch.zeros_like(row_max))
    e = torch.exp(scores - row_max)  # (T, S), exactly 0 where masked
    total = e.sum(dim=-1, keepdim=True)  # (T, 1)
    weights = e / torch.where(total > 0, total, torch.ones_like(total))  # (T, S), zero rows stay 0
    return weights @ v, weights  # (T, d_v), (T, S)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch01_masked_attention_test", "locked": true, "points": 3, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"}
from attncourse.exercises.ch01 import check_masked_attention

check_masked_attention(my_masked_attention)
### BEGIN HIDDEN TESTS
import importlib

import attncourse.exercises.ch01 as ex
import attncourse.exercises.engine as engine

engine = importlib.reload(engine)  # fresh copies: a patched check does not count
ex = importlib.reload(ex)
ex.check_masked_attention(my_masked_attention, seed=15)
### END HIDDEN TESTS

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Summary
#
# - Attention is a **weighted average** (Eq. 14.3.1) whose weights are a softmax of scores
#   (Eq. 14.3.2): always a distribution, and an exact Bayes posterior only in the equal-norm
#   Gaussian model.
# - Its **entropy** (Eq. 14.3.3) lies in [0, log n]; e^H counts the positions effectively read.
#   Softmax never selects exactly: all weights stay positive.
# - **Queries** request, **keys** label, **values** carry content; scores are divided by **√d_k**
#   because var(q·k) = d_k (Vaswani et al. 2017), otherwise softmax saturates.
# - Wrong or conditional in the source, each with the correct statement above: I(q; k) ≈ qᵀk
#   (Eq. 14.3.5), d_k ≥ log₂ n and d_v ≥ H(Y|X) (Thm. 14.3.1), the sign of Eq. (14.3.6), and the
#   additive decomposition Eq. (14.3.7) (synergy).
# - The metrics you used (`attncourse.metrics.attention_entropy`, `mutual_information`, ...) accept
#   any attention tensor (B, H, T, S) or discrete joint table, also from other models.
#
# **Next — chapter 02, the seq2seq bottleneck and alignment**: what goes wrong when a decoder
# gets one fixed-size summary of the source instead of a query over all its positions, and how
# Bahdanau (additive) and Luong (dot / general / concat) attention fix it.
