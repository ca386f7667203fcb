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
# # Chapter 03 · Entropy and temperature
# *Softmax 注意力的信息论特性：熵与温度* — source 000, §14.3.3 (Def. 14.3.7–14.3.9,
# Lemma 14.3.9–14.3.12, Thm. 14.3.5–14.3.6, Application 14.3.2, Eq. 14.3.14–14.3.20);
# source 001, Eq. (5.4.6)
#
# **After this chapter you can**
# - say how the entropy of softmax attention depends on the scores and on a temperature: its
#   range [0, log n], its monotone dependence on T and its limits T → 0 and T → ∞;
# - read softmax as a Gibbs distribution and state the variational principle behind it;
# - explain the 1/√d_k scale from var(q·k) = d_k, and softmax saturation through its Jacobian
#   diag(α) − ααᵀ;
# - state the entropy bound of Thm. 14.3.5 correctly — as the **lower** bound
#   H(α) ≥ log n − (Δs)²/8 — prove it with Hoeffding's lemma, and show that the printed version fails;
# - use a cosine temperature schedule, and see where the source's pseudocode for it goes wrong;
# - reproduce *attention entropy collapse* (Zhai et al. 2023) on a CPU and prevent it with σReparam;
# - implement softmax with temperature, its entropy, its Jacobian, the cosine schedule and the
#   entropy bound (the graded exercises).
#
# **Prerequisites**: chapters 00–01 (softmax, attention entropy, the scaled dot product); a
# derivative and a variance; PyTorch at the level of `x.amax(dim=-1, keepdim=True)`.
#
# **Time**: about 90 minutes (55 reading and experimenting, 35 for the exercises).
#
# Marks used in the claim checks: **✓ holds** · **⚠ holds only under a condition** (stated) ·
# **✗ wrong as printed** (counterexample and correct statement given).

# %% slideshow={"slide_type": "skip"}
import math
import time

import matplotlib.pyplot as plt
import numpy as np
import torch

from attncourse.attention import softmax
from attncourse.chapters.ch03_entropy_and_temperature import (
    PATTERNS,
    EntropyPlot,
    cosine_temperature,
    dot_product_statistics,
    entropy_curve,
    entropy_of_scores,
    entropy_state,
    entropy_temperature_derivative,
    entropy_widget,
    entropy_widget_update,
    gibbs_objective,
    hoeffding_entropy_bound,
    jacobian_frobenius,
    jacobian_spectral,
    kl_to_uniform,
    log_partition,
    majority_batch,
    score_range,
    score_range_from_weights,
    softmax_jacobian,
    source_cosine_schedule,
    train_majority,
    zero_temperature_entropy,
)
from attncourse.metrics import attention_entropy

torch.manual_seed(0)
np.random.seed(0)
torch.set_num_threads(2)
torch.set_flush_denormal(True)
torch.set_printoptions(precision=4, sci_mode=False)
plt.rcParams.update({"figure.dpi": 80, "figure.figsize": (7, 3)})

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 1. Softmax attention and its maximum-entropy point (Def. 14.3.7, Lemma 14.3.9, Eq. 14.3.14–14.3.15)
#
# The weights are a softmax of scaled dot-product scores,
#
# $$\alpha_i = \frac{\exp(s_i)}{\sum_{j=1}^{n}\exp(s_j)}, \qquad s_i = \frac{q^\top k_i}{\sqrt{d_k}} \qquad (14.3.14)$$
#
# Lemma 14.3.9: equal scores $s_i = c$ give the uniform distribution $\alpha_i = 1/n$ (14.3.15), the
# distribution of largest entropy. The converse holds too, and it is the useful direction when
# reading a trained model: softmax is one-to-one up to a shift, $s_i - s_j = \log\alpha_i - \log\alpha_j$,
# so **uniform weights happen only when all scores are equal**. Every difference between scores
# shows up in the weights, and the score range can be read back from them:
# $\Delta s = \log(\max_i\alpha_i / \min_i\alpha_i)$ (used again in §6 and §9).
#
# > **Glossary** · softmax 归一化指数函数 · maximum-entropy distribution 最大熵分布 ·
# > uniform distribution 均匀分布 · shift invariance 平移不变性 · score range 分数差异 Δs

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
s_equal = torch.full((5,), 2.7, dtype=torch.float64)
print(
    "equal scores -> alpha =",
    [round(a, 4) for a in softmax(s_equal).tolist()],
    f" H = {float(attention_entropy(softmax(s_equal))):.4f} = log 5 = {math.log(5):.4f}",
)
s = torch.tensor([1.2, -0.4, 0.3, 2.0, -1.1], dtype=torch.float64)
alpha = softmax(s)
print(
    f"score range Δs = {float(score_range(s)):.4f};  read back from the weights: "
    f"log(max α / min α) = {float(score_range_from_weights(alpha)):.4f}"
)
assert torch.allclose(softmax(s_equal), torch.full((5,), 0.2, dtype=torch.float64))
assert torch.allclose(
    torch.log(alpha) - torch.log(alpha[0]), s - s[0]
)  # s_i - s_j = log a_i - log a_j

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Claim check — Def. 14.3.7 and Lemma 14.3.9 ✓**, with the converse: uniform ⇔ equal scores.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 2. Softmax is a Gibbs distribution (Lemma 14.3.10, Eq. 14.3.16)
#
# In statistical mechanics a system with states of energy $E_i$ at temperature $T$ occupies
# state i with probability
#
# $$P(i) = \frac{\exp(-E_i/T)}{\sum_j \exp(-E_j/T)} \qquad (14.3.16)$$
#
# With energies $E_i = -s_i$ (a high score is a low energy) and $T = 1$ this *is* softmax — the
# lemma is an identity. What makes the connection worth stating is the **Gibbs variational
# principle**: among all distributions α on the n positions, softmax(s/T) is the unique maximiser of
#
# $$F(\alpha) = \underbrace{\textstyle\sum_i \alpha_i s_i}_{\text{expected score}} + T\,H(\alpha),
# \qquad \max_\alpha F = T\log\sum_j e^{s_j/T},$$
#
# and the gap is a KL divergence, $T\log\sum_j e^{s_j/T} - F(\alpha) = T\cdot\mathrm{KL}(\alpha \,\|\, \mathrm{softmax}(s/T))$.
# Attention therefore trades **selection** (put weight on high scores) against **spread** (keep
# entropy), and the temperature sets the exchange rate: T → 0 maximises the score alone
# (argmax), T → ∞ the entropy alone (uniform). Equivalently, softmax(s/T) is the
# maximum-entropy distribution with a given expected score.
#
# > **Glossary** · Gibbs (Boltzmann) distribution 吉布斯分布 · energy 能量 · temperature 温度 ·
# > free energy 自由能 · partition function 配分函数 · variational principle 变分原理 ·
# > KL divergence KL 散度

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
s = torch.tensor([1.0, 0.2, -0.5, 2.1, 0.0], dtype=torch.float64)
for T in (0.3, 1.0, 4.0):
    energies = -s
    gibbs = torch.exp(-energies / T) / torch.exp(-energies / T).sum()  # Eq. (14.3.16), written out
    best = gibbs_objective(softmax(s, temperature=T), s, T)
    others = torch.distributions.Dirichlet(torch.full((5,), 0.7, dtype=torch.float64)).sample(
        (20_000,)
    )
    f_others = gibbs_objective(others, s, T)  # (20000,)
    kl = (others * torch.log(others / gibbs)).sum(-1)  # KL(alpha || Gibbs)
    assert torch.allclose(softmax(s, temperature=T), gibbs)
    assert abs(float(best - log_partition(s, T))) < 1e-12 and (f_others < best).all()
    assert torch.allclose(log_partition(s, T) - f_others, T * kl)
    print(
        f"T = {T}: softmax(s/T) = Gibbs;  F(softmax) = T log Z = {float(best):.4f};  "
        f"best of 20000 random alphas: {float(f_others.max()):.4f};  gap = T·KL exactly"
    )

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Claim check — Lemma 14.3.10 ✓** (an identity with $E_i = -s_i$, T = 1), and its content is the
# variational principle checked above: no distribution beats softmax(s/T) on "expected score +
# T × entropy", and the shortfall of any other is exactly T times its KL divergence from it.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 3. The range of attention entropy (Def. 14.3.8, Lemma 14.3.11, Eq. 14.3.17; source 001 Eq. 5.4.6)
#
# $$H(\alpha) = -\sum_{i=1}^{n}\alpha_i\log\alpha_i \qquad (14.3.17)$$
#
# is the same quantity as chapter 01's Eq. (14.3.3), and source 001 writes it for row i of an
# attention matrix A as $H(A_i) = -\sum_j A_{ij}\log A_{ij}$ (5.4.6). Lemma 14.3.11: $0 \le H \le \log n$,
# log n for uniform weights and 0 when one weight is 1. Both bounds hold for every distribution.
# For the weights that **softmax** produces there is a condition on attaining them: log n is
# reached exactly when all scores are equal (§1), but 0 is **never** reached by finite scores —
# every softmax weight is positive, so H > 0. It is approached as Δs → ∞ and reached in floating
# point when the small weights *underflow* to 0, a rounding artefact, not a property of softmax.
#
# > **Glossary** · attention entropy 注意力熵 · upper / lower bound 上界 / 下界 ·
# > underflow 下溢 · float32 / float64 单 / 双精度浮点

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
for n in (2, 8, 64):
    w = softmax(torch.randn(20_000, n, dtype=torch.float64) * 4)  # (20000, n) softmax weights
    h = attention_entropy(w)
    print(
        f"n = {n:2d}: 20000 softmax rows, H in [{float(h.min()):.1e}, {float(h.max()):.4f}] ⊂ (0, log n = {math.log(n):.4f}]"
    )
    assert (h > 0).all() and (h <= math.log(n) + 1e-12).all()
s_far = torch.tensor([0.0, 200.0])
print(
    f"scores (0, 200): H = {float(attention_entropy(softmax(s_far.double()))):.3e} in float64, "
    f"{float(attention_entropy(softmax(s_far))):.1f} in float32 (exp(-200) underflows to 0)"
)

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Claim check — Lemma 14.3.11 ✓ / ⚠.** The range is right. For softmax weights the upper bound is
# attained iff the scores are equal and the lower bound is never attained (H > 0), except through
# floating-point underflow.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 4. Temperature and entropy (Def. 14.3.9, Lemma 14.3.12, Eq. 14.3.20)
#
# $$\alpha_i(T) = \frac{\exp(s_i/T)}{\sum_j\exp(s_j/T)} \qquad (14.3.20)$$
#
# Lemma 14.3.12 says the entropy is monotone in T, with H → log n as T → ∞ and H → 0 (one-hot on
# the argmax) as T → 0. Exactly: with β = 1/T, $H = \log Z - \beta\,\mathbb{E}_\alpha[s]$ and
# $\frac{d}{d\beta}\mathbb{E}_\alpha[s] = \mathrm{Var}_\alpha(s)$, so
#
# $$\frac{dH}{dT} = \frac{\mathrm{Var}_{\alpha(T)}(s)}{T^3} \;\ge\; 0,$$
#
# zero only if all scores are equal: **H increases strictly with T** for any non-constant scores.
# The T → ∞ limit is right. The T → 0 limit needs a condition: the weights tend to the uniform
# distribution over the **m positions that share the largest score**, so $H \to \log m$; the
# printed "one-hot, H → 0" holds only when the maximum is unique. Temperature never changes the
# *ranking* of the positions, only how much weight the ranking gets.
#
# > **Glossary** · temperature 温度 · monotone 单调 · limit 极限 · tie 并列 (最大值) ·
# > inverse temperature β = 1/T 逆温度 · argmax 最大值位置

# %% slideshow={"slide_type": "subslide"}
# NBVAL_CHECK_OUTPUT
temps = torch.logspace(-3, 3, 601, dtype=torch.float64)
examples = {
    "distinct": torch.tensor([1.0, 3.0, 2.5, -2.0, 0.0], dtype=torch.float64),
    "tie at the top": torch.tensor([1.0, 3.0, 3.0, -2.0, 0.0], dtype=torch.float64),
    "three-way tie": torch.tensor([3.0, 3.0, 3.0, -2.0, 0.0], dtype=torch.float64),
}
fig, ax = plt.subplots(figsize=(7, 3))
for name, s in examples.items():
    H = entropy_curve(s, temps)  # (601,)
    ax.semilogx(temps, H, label=name)
    limit = float(zero_temperature_entropy(s))
    print(
        f"{name:15s}: H(T = 0.001) = {float(H[0]):.4f} -> log m = {limit:.4f};  "
        f"H(T = 1000) = {float(H[-1]):.4f} -> log 5 = {math.log(5):.4f};  never decreases: {bool((H.diff() >= 0).all())}"
    )
    assert (
        abs(float(H[0]) - limit) < 1e-6
        and abs(float(H[-1]) - math.log(5)) < 1e-5
        and (H.diff() >= 0).all()
    )
ax.axhline(math.log(5), ls="--", c="k", lw=1)
ax.set(
    xlabel="temperature T",
    ylabel="H(softmax(s/T)) (nats)",
    title="entropy rises with T; at T → 0 it is log(#ties)",
)
ax.legend(fontsize=8)
plt.tight_layout()
plt.show()

T0 = torch.tensor(0.7, dtype=torch.float64, requires_grad=True)
s = examples["distinct"]
(dH,) = torch.autograd.grad(attention_entropy(softmax(s, temperature=T0)), T0)
print(
    f"dH/dT at T = 0.7: autograd {float(dH):.6f},  Var(s)/T^3 = {float(entropy_temperature_derivative(s, 0.7)):.6f}"
)
assert abs(float(dH) - float(entropy_temperature_derivative(s, 0.7))) < 1e-12

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Claim check — Def. 14.3.9 ✓; Lemma 14.3.12 ✓ / ⚠.** Monotone (strictly, unless all scores are
# equal), with dH/dT = Var_α(s)/T³; T → ∞ gives log n; T → 0 gives log m, which is 0 (one-hot)
# **only if the largest score is unique**.
#
# **Claim check — Thm. 14.3.6 ("high T explores, low T exploits") ⚠** — an interpretation, not a
# theorem: nothing in it can be proved or refuted. Its measurable part is Lemma 14.3.12 (high T,
# high entropy) and the fact that T never changes which position ranks first. "Prevents
# overfitting to a single position" is a hope about training, not a property of softmax; §9 shows
# a training run in which a *low-entropy* solution is the failure and a higher-entropy one the fix.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 5. Why 1/√d_k, and softmax saturation (Def. 14.3.7, Cor. 14.3.3, Eq. 14.3.19)
#
# Cor. 14.3.3: the factor in $s_i = q^\top k_i/\sqrt{d_k}$ (14.3.19) keeps the scores from spreading
# when d_k is large, which would make the entropy too low. The reason (Vaswani et al. 2017, §3.2.1,
# footnote 4): if the components of q and k are independent with mean 0 and variance 1, then
# $q^\top k = \sum_{l=1}^{d_k} q_l k_l$ is a sum of d_k independent terms of variance 1, so
# **var(q·k) = d_k**. Unscaled scores have standard deviation √d_k; divided by √d_k they keep
# variance 1 at every d_k.
#
# **Saturation and the gradient.** How fast do the weights move when the scores move? The
# Jacobian of softmax is
#
# $$J = \frac{\partial\alpha}{\partial s} = \mathrm{diag}(\alpha) - \alpha\alpha^\top, \qquad J_{ij} = \alpha_i(\delta_{ij} - \alpha_j)$$
#
# (with a temperature, $\partial\,\mathrm{softmax}(s/T)/\partial s = J/T$). J is symmetric and
# positive semi-definite with $J\mathbf{1} = 0$ (a shift of all scores changes nothing). Its norm:
# - $\|J\|_2 \le \tfrac12$ always (row i of |J| sums to $2\alpha_i(1-\alpha_i) \le \tfrac12$), with equality for a
#   two-way tie;
# - at one-hot weights J = 0: a **saturated** softmax passes (almost) no gradient to its scores;
# - at uniform weights $J = I/n - \mathbf{1}\mathbf{1}^\top/n^2$, $\|J\|_2 = 1/n$ and $\|J\|_F = \sqrt{n-1}/n$.
#
# > **Glossary** · saturation 饱和 · Jacobian 雅可比矩阵 · gradient 梯度 ·
# > vanishing gradient 梯度消失 · positive semi-definite 半正定 · Frobenius norm 弗罗贝尼乌斯范数

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
s = torch.randn(6, dtype=torch.float64, requires_grad=True)
auto = torch.autograd.functional.jacobian(
    lambda x: softmax(x), s
)  # (6, 6) by automatic differentiation
J = softmax_jacobian(softmax(s.detach()))
print(
    "diag(α) − ααᵀ equals autograd's Jacobian:",
    torch.allclose(J, auto),
    "  J·1 = 0:",
    torch.allclose(J.sum(-1), torch.zeros(6, dtype=torch.float64)),
)
w = torch.distributions.Dirichlet(torch.full((8,), 0.3, dtype=torch.float64)).sample((50_000,))
print(f"50000 random weight vectors: max ‖J‖₂ = {float(jacobian_spectral(w).max()):.4f} <= 0.5")
tie = torch.tensor([0.5, 0.5, 0.0, 0.0], dtype=torch.float64)
print(
    f"two-way tie: ‖J‖₂ = {float(jacobian_spectral(tie)):.4f};  one-hot: ‖J‖_F = "
    f"{float(jacobian_frobenius(torch.eye(4, dtype=torch.float64)[1])):.4f};  uniform over 64: "
    f"‖J‖₂ = {float(jacobian_spectral(torch.full((64,), 1 / 64, dtype=torch.float64))):.4f} = 1/64, "
    f"‖J‖_F = {float(jacobian_frobenius(torch.full((64,), 1 / 64, dtype=torch.float64))):.4f} = √63/64"
)
assert torch.allclose(J, auto) and float(jacobian_spectral(w).max()) <= 0.5 + 1e-12
assert abs(float(jacobian_spectral(tie)) - 0.5) < 1e-12

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Reproduction: Vaswani et al. 2017, §3.2.1, footnote 4 (CPU, < 1 s)
# Two seeds; for each d_k, 4000 (q, k) pairs for the variance and 200 queries over 64 keys for the
# softmax statistics, with and without the 1/√d_k. Expected: var(q·k)/d_k ≈ 1 at every d_k; the
# unscaled softmax saturates as d_k grows (largest weight → 1, entropy → 0, Jacobian → 0), the
# scaled one does not change with d_k.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
dims = [4, 16, 64, 256, 1024]
stats = {
    (seed, d_k): dot_product_statistics(d_k, generator=torch.Generator().manual_seed(seed))
    for seed in (0, 1)
    for d_k in dims
}
print(
    f"{'seed':>4} {'d_k':>5} {'var/d_k':>7} | {'unscaled: max α':>15} {'H':>5} {'‖J‖_F':>6} | "
    f"{'scaled: max α':>13} {'H':>5} {'‖J‖_F':>6}"
)
for (seed, d_k), r in stats.items():
    u, c = r["unscaled"], r["scaled"]
    print(
        f"{seed:>4} {d_k:>5} {r['var_ratio']:>7.2f} | {u['max_weight']:>15.2f} {u['entropy']:>5.2f} "
        f"{u['jacobian']:>6.3f} | {c['max_weight']:>13.2f} {c['entropy']:>5.2f} {c['jacobian']:>6.3f}"
    )
print(f"log 64 = {math.log(64):.2f}")
for (_seed, d_k), r in stats.items():
    assert 0.9 <= r["var_ratio"] <= 1.1, "var(q.k) should be d_k"
    assert r["scaled"]["entropy"] > 3.0, "the scaled softmax should stay diffuse"
    if d_k >= 256:
        assert r["unscaled"]["max_weight"] > 0.85, "the unscaled softmax should saturate"
        assert r["unscaled"]["jacobian"] < r["scaled"]["jacobian"], (
            "saturation should shrink the Jacobian"
        )

# %% [markdown] slideshow={"slide_type": "-"}
# Both sides of saturation shrink the gradient. Scaling one fixed score vector by a factor c
# (c plays the role of √d_k, or of 1/T), the Jacobian's norm first **grows** — from the uniform
# value 1/n at c = 0 — and then **decays to 0** as the softmax saturates:

# %% slideshow={"slide_type": "subslide"}
# NBVAL_CHECK_OUTPUT
z = torch.randn(16, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
c = torch.logspace(-2, 2.5, 200, dtype=torch.float64)
w = softmax(c[:, None] * z[None, :])  # (200, 16)
fig, ax = plt.subplots(1, 2, figsize=(9, 3))
ax[0].semilogx(c, jacobian_spectral(w), label="‖J‖₂")
ax[0].semilogx(c, jacobian_frobenius(w), label="‖J‖_F")
ax[0].axhline(0.5, ls=":", c="k", lw=1)
ax[0].set(
    xlabel="score scale c", ylabel="norm of diag(α) − ααᵀ", title="the gradient through softmax"
)
ax[0].legend(fontsize=8)
ax[1].semilogx(c, attention_entropy(w))
ax[1].axhline(math.log(16), ls="--", c="k", lw=1)
ax[1].set(xlabel="score scale c", ylabel="entropy (nats)", title="the entropy")
plt.tight_layout()
plt.show()
peak = int(jacobian_frobenius(w).argmax())
print(
    f"‖J‖_F: {float(jacobian_frobenius(w[0])):.3f} at c = 0.01, peak {float(jacobian_frobenius(w[peak])):.3f} "
    f"at c = {float(c[peak]):.2f}, {float(jacobian_frobenius(w[-1])):.1e} at c = {float(c[-1]):.0f}"
)
assert jacobian_frobenius(w[-1]) < 1e-3 < jacobian_frobenius(w[0]) < jacobian_frobenius(w[peak])

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Claim check — Cor. 14.3.3 ✓ / ⚠.** With independent, mean-0, variance-1 components the scale
# keeps var(s) = 1, so the softmax neither saturates nor loses its gradient as d_k grows (table
# above). That is a statement **at initialisation**: nothing keeps trained queries and keys at
# variance 1. Training can grow $W_Q$, $W_K$ until the softmax saturates anyway — §9 shows it happen.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 6. The entropy bound, stated correctly (Thm. 14.3.5, Eq. 14.3.18)
#
# The source states, for the score range $\Delta s = \max_i s_i - \min_i s_i$,
#
# $$H(\alpha) \le \log n - \frac{(\Delta s)^2}{8} \qquad (14.3.18,\ \text{as printed})$$
#
# **Claim check ✗ wrong as printed.** Take n = 2 and s = (0, 3): H = 0.191 nats, but the right-hand
# side is log 2 − 9/8 = −0.432 < 0, and no entropy is negative. A small range does not save it:
# s = (0, 1) gives H = 0.5822 > log 2 − 1/8 = 0.5681. In fact it fails for **every** score vector
# that is not constant, because the inequality holds the other way round, strictly:
#
# $$\boxed{H(\alpha) \;\ge\; \log n - \frac{(\Delta s)^2}{8}} \qquad\text{(equality only for equal scores)}$$
#
# **Proof.** $\log n - H(\alpha) = \mathrm{KL}(\alpha\,\|\,u)$, the divergence from the uniform
# distribution u, and with $\alpha = \mathrm{softmax}(s)$,
# $\mathrm{KL}(\alpha\|u) = \mathbb{E}_\alpha[s] - \log\mathbb{E}_u[e^{s}] = \psi'(1) - \psi(1)$ for the cumulant
# function $\psi(\lambda) = \log\mathbb{E}_u[e^{\lambda s}]$ (ψ(0) = 0). Since
# $\frac{d}{d\lambda}(\lambda\psi' - \psi) = \lambda\psi''$,
# $\mathrm{KL} = \int_0^1 \lambda\,\psi''(\lambda)\,d\lambda$, and $\psi''(\lambda)$ is the variance of s under
# softmax(λs), at most $(\Delta s)^2/4$ for any distribution on an interval of length Δs. So
# $\mathrm{KL} \le \tfrac12(\Delta s)^2/4 = (\Delta s)^2/8$. This is **Hoeffding's lemma**,
# $\log\mathbb{E}e^{\lambda(X - \mathbb{E}X)} \le \lambda^2(b-a)^2/8$, in disguise.
#
# *Reading it.* Small score differences **guarantee** high entropy; large ones allow low entropy
# but do not force it. No upper bound of the form log n − f(Δs) with f > 0 can hold: with
# s = (Δ/2, −Δ/2, 0, …, 0) the gap log n − H tends to 0 as n grows, at any fixed Δs. Over n = 64 keys,
# s = (3, −3, 0, …, 0) has Δs = 6 and yet H = 3.68 of the maximum log 64 = 4.16.
#
# > **Glossary** · Hoeffding's lemma 霍夫丁引理 · KL divergence KL 散度 · cumulant function 累积量生成函数 ·
# > counterexample 反例 · tight bound 紧界 · lower bound 下界

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
for s in ([0.0, 3.0], [0.0, 1.0]):
    s = torch.tensor(s, dtype=torch.float64)
    h, rhs = float(attention_entropy(softmax(s))), float(hoeffding_entropy_bound(s))
    print(
        f"s = {s.tolist()}: H = {h:.4f},  log n − (Δs)²/8 = {rhs:.4f}  ->  printed 'H <=' "
        f"{'holds' if h <= rhs else 'FAILS'}, corrected 'H >=' {'holds' if h >= rhs else 'FAILS'}"
    )
for n in (64, 4096):
    s_n = torch.zeros(n, dtype=torch.float64)
    s_n[0], s_n[1] = 3.0, -3.0  # Δs = 6: the printed bound would demand H <= log n − 4.5
    h = float(attention_entropy(softmax(s_n)))
    print(
        f"n = {n}, s = (3, -3, 0, ...): H = {h:.4f}, log n − H = {math.log(n) - h:.4f} (printed bound: >= 4.5)"
    )

g = torch.Generator().manual_seed(0)
scales = torch.tensor([0.1, 0.5, 1.0, 2.0, 5.0], dtype=torch.float64).repeat_interleave(4000)[
    :, None
]  # (20000, 1)
total, printed_fails, unresolved, min_slack = 0, 0, 0, float("inf")
for n in (2, 3, 8, 32, 128):
    two_point = torch.randint(0, 2, (20_000, n), generator=g).double() * 2
    two_point[:, 0], two_point[:, -1] = 0.0, 2.0  # both values present: Δs = 2·scale
    s = torch.cat(
        [
            torch.randn(20_000, n, generator=g, dtype=torch.float64),  # normal
            (torch.rand(20_000, n, generator=g, dtype=torch.float64) - 0.5) * 4,  # uniform
            two_point,
        ]
    ) * scales.repeat(3, 1)  # (60000, n): 3 distributions x 5 scales x 4000
    h, bound = entropy_of_scores(s), hoeffding_entropy_bound(s)
    total += len(s)
    printed_fails += int((h > bound + 1e-12).sum())
    unresolved += int(((h - bound).abs() <= 1e-12).sum())  # slack ~ (Δs)^4: below rounding
    min_slack = min(min_slack, float((h - bound).min()))
print(f"{total} random score vectors (n = 2…128, 3 distributions, 5 scales):")
print(
    f"  printed upper bound H <= log n − (Δs)²/8 violated by {printed_fails}; the other {unresolved} "
    f"have H − bound < 1e-12 (tiny Δs), below float64 rounding"
)
print(
    f"  lower bound H >= log n − (Δs)²/8 on all of them (smallest slack H − bound > −1e-12: {min_slack > -1e-12})"
)
assert printed_fails + unresolved == total and min_slack > -1e-12

# %% [markdown] slideshow={"slide_type": "-"}
# **Tightness.** The constant 1/8 cannot be improved: for n = 2 and s = (−Δ/2, Δ/2) the variance in
# the proof starts at exactly $(\Delta s)^2/4$ (two equally likely points at the ends of the
# interval), so KL/((Δs)²/8) → 1 as Δs → 0. The same holds for any even n with half the scores
# at each end. For large Δs the bound is loose — it even drops below 0 — and KL saturates at log n.
# Below, the slack over 20 000 random 8-key score vectors, and the ratio for the two-point case.

# %% slideshow={"slide_type": "subslide"}
# NBVAL_CHECK_OUTPUT
deltas = torch.tensor([2.0, 1.0, 0.5, 0.1, 0.01], dtype=torch.float64)
for n in (2, 8):
    half = torch.cat([torch.full((n // 2,), -0.5), torch.full((n // 2,), 0.5)]).double()
    ratio = kl_to_uniform(softmax(deltas[:, None] * half[None])) / (deltas**2 / 8)  # (5,)
    print(
        f"n = {n}, half the scores at each end: KL / ((Δs)²/8) at Δs = {deltas.tolist()}: "
        f"{[round(r, 4) for r in ratio.tolist()]}"
    )
    assert (ratio < 1).all() and ratio[-1] > 0.9999

s = (
    torch.randn(20_000, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    * torch.rand(20_000, 1, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    * 3
)
kl, dsr = kl_to_uniform(softmax(s)), score_range(s)
grid = torch.linspace(0, float(dsr.max()), 200, dtype=torch.float64)
fig, ax = plt.subplots(figsize=(7, 3.2))
ax.scatter(
    dsr, kl, s=2, alpha=0.3, label="KL(α‖uniform) = log n − H, 20000 random score vectors (n = 8)"
)
ax.plot(grid, grid**2 / 8, c="tab:green", label="(Δs)²/8: the Hoeffding bound")
ax.axhline(math.log(8), ls="--", c="k", lw=1, label="log 8: the largest possible KL")
ax.set(
    xlabel="score range Δs",
    ylabel="log n − H(α)  (nats)",
    ylim=(0, 2.6),
    title="H ≥ log n − (Δs)²/8",
)
ax.legend(fontsize=7, loc="upper left")
plt.tight_layout()
plt.show()
assert (kl <= dsr**2 / 8).all()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 7. Temperature schedules (Application 14.3.2)
#
# The source anneals the temperature during training with a cosine schedule,
#
# $$T_t = T_{\min} + (T_0 - T_{\min})\,\frac{1 + \cos(\pi t / N)}{2}, \qquad t = 0, 1, \dots, N,$$
#
# from $T_0$ (high entropy: spread attention, "explore") to $T_{\min}$ ("exploit"); it is the
# schedule of SGDR's cosine learning-rate annealing (Loshchilov & Hutter 2017) applied to T.
# The formula is right: $T_0$ at t = 0, $T_{\min}$ at t = N, monotone, symmetric about t = N/2, flat
# at both ends. **Claim check ✓ / ⚠** — the formula ✓, but the printed pseudocode has three defects:
# 1. it writes the number of steps as **T**, the symbol of the temperature (`for t = 1 to T`,
#    `cos(π * t / T)`), so the formula reads as if it depended on the temperature;
# 2. its loop starts at **t = 1**, so $T_0$ itself is never used: the first temperature is already
#    $T_1 < T_0$ (the loop should run over t = 0 … N, or use t − 1);
# 3. it takes a "schedule parameter k" that nothing uses.
#
# > **Glossary** · temperature schedule 温度调度 · cosine annealing 余弦退火 ·
# > exploration / exploitation 探索 / 利用 · pseudocode 伪代码 · off-by-one 差一错误

# %% slideshow={"slide_type": "subslide"}
# NBVAL_CHECK_OUTPUT
t0, t_min, N = 5.0, 0.2, 100
steps = torch.arange(N + 1, dtype=torch.float64)
temps_schedule = cosine_temperature(steps, N, t0, t_min)  # (101,)
printed = source_cosine_schedule(t0, t_min, N)  # the pseudocode's t = 1 … N
print(
    f"T(0) = {float(temps_schedule[0]):.4f}, T(N/2) = {float(temps_schedule[N // 2]):.4f}, "
    f"T(N) = {float(temps_schedule[-1]):.4f};  monotone: {bool((temps_schedule.diff() < 0).all())};  "
    f"symmetric: {torch.allclose(temps_schedule + temps_schedule.flip(0), torch.full_like(temps_schedule, t0 + t_min))}"
)
print(
    f"the pseudocode yields {len(printed)} temperatures, the first {printed[0]:.4f} (not T_0 = {t0}), "
    f"the last {printed[-1]:.4f}"
)
assert abs(printed[0] - t0) > 1e-3 and printed[-1] == t_min
s_fixed = torch.tensor([2.0, 1.5, 0.5, 0.0, -1.0, -1.0, -2.0, 0.7], dtype=torch.float64)
H_sched = entropy_curve(s_fixed, temps_schedule)  # entropy of one score vector along the schedule
fig, ax = plt.subplots(1, 2, figsize=(9, 3))
ax[0].plot(steps, temps_schedule)
ax[0].set(xlabel="step t", ylabel="temperature T_t", title="cosine schedule, T_0 = 5 → T_min = 0.2")
ax[1].plot(steps, H_sched)
ax[1].axhline(math.log(8), ls="--", c="k", lw=1)
ax[1].set(xlabel="step t", ylabel="H(softmax(s / T_t))", title="entropy of one score vector")
plt.tight_layout()
plt.show()
print(
    f"entropy along the schedule: {float(H_sched[0]):.3f} -> {float(H_sched[-1]):.3f} nats (log 8 = {math.log(8):.3f})"
)
assert (H_sched.diff() < 0).all()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 8. Widget: scores, temperature, d_k and n
#
# One query over n keys, with q and every key drawn from N(0, I) in d_k dimensions (the **score
# seed** picks the draw). **scores** chooses the pattern: random keys; one key equal to q (its
# score ‖q‖² grows like d_k); or two keys equal to q (a tie). The left panel shows the weights
# α = softmax(s/T) (key j drawn over [j/n, (j+1)/n]); the middle one the entropy against T with
# the current T as the red dot, the Hoeffding lower bound (green) and log n; the right one the
# Jacobian's norm. The line above the figure gives the numbers, and says whether the source's
# printed upper bound happens to hold (it does only for equal scores). Things to try:
# 1. Turn **divide by √d_k** off and raise d_k: the weights saturate, the entropy falls, the
#    Jacobian's norm drops (§5). Turn it back on: with random keys the spread no longer grows
#    with d_k. With **one key = q** it still does, like √d_k: the scale normalises the dot products
#    of independent vectors, not of aligned ones.
# 2. Pattern **two keys = q (tie)**, T → 0.01: the entropy stops at log 2, not 0 (§4), and
#    ‖J‖_F at 0.5.
# 3. Watch the blue curve: it is increasing (Lemma 14.3.12) and never below the green one (§6).
# 4. n = 128 with T large: H → log 128 and ‖J‖_F → √127/128 ≈ 0.088 — a uniform softmax also
#    passes little gradient per score.
#
# Behind the widget are two plain functions, `entropy_state` (the numbers) and
# `entropy_widget_update` (numbers + redraw); tests call them.

# %% slideshow={"slide_type": "slide"}
# NBVAL_IGNORE_OUTPUT
entropy_widget(pattern="random q·k", temperature=1.0, d_k=64, n=16)

# %% [markdown] slideshow={"slide_type": "subslide"}
# A static snapshot of the same figure (for printed notes), and the cost of one widget update:

# %% slideshow={"slide_type": "subslide"}
# NBVAL_IGNORE_OUTPUT
snapshot = EntropyPlot(pyplot=True)
snapshot.update(entropy_state(PATTERNS[2], temperature=0.3, d_k=256, n=32, scaled=False))
plt.show()
timing_plot = EntropyPlot()
entropy_widget_update(timing_plot)  # first draw caches the static background
times = []
for step in range(20):
    start = time.perf_counter()
    entropy_widget_update(
        timing_plot,
        PATTERNS[step % 3],
        10 ** (-2 + 4 * ((step * 0.37) % 1)),
        2 ** (step % 11),
        [2, 3, 4, 8, 16, 32, 64, 128][step % 8],
        step % 4 != 0,
        step % 5,
    )
    times.append(time.perf_counter() - start)
median_ms = 1000 * float(np.median(times))
print(
    f"one widget update (compute + redraw + PNG): median {median_ms:.1f} ms over 20 moves "
    f"({'within' if median_ms <= 100 else 'OVER'} the 100 ms budget)"
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 9. Entropy collapse and σReparam (Zhai et al. 2023)
#
# §5 ended with a warning: 1/√d_k fixes the score scale only at initialisation. Zhai et al. (2023,
# "Stabilizing Transformer Training by Preventing Attention Entropy Collapse") observed that
# unstable Transformer training goes together with **attention entropy collapse**: the attention
# entropy of some layer falls to near 0 — every query attends to one or two keys — and the loss
# stalls or diverges. The corrected Thm. 14.3.5 says what must happen for that: the score range
# must grow, $\Delta s \ge \sqrt{8(\log n - H)}$ (to get H below 1 nat over n = 33 keys, Δs ≥ 4.5).
# With normalised inputs the scores are $\hat x_i W_Q W_K^\top \hat x_j^\top/\sqrt{d_k}$, so $W_Q W_K^\top$ (or the
# LayerNorm gains) must grow.
# Their fix, **σReparam**, reparametrises every weight matrix as
#
# $$\hat W = \frac{\gamma}{\sigma(W)}\,W,$$
#
# with σ(W) the largest singular value (estimated with one power iteration per training step)
# and γ a learned scalar. The spectral norm of $\hat W$ is then γ, which Adam moves by about one
# learning rate per step, instead of the many entries of W moving at once.
#
# **The task** (diffuse attention is the right answer): a CLS token followed by 32 random bits; say
# whether ones are the majority. The CLS position is read out, so the count must travel through
# attention, and uniform attention over the bits returns exactly the fraction of ones. A model
# whose attention collapses reads a few bits and is near chance (loss log 2 ≈ 0.693).
#
# **The setup** (CPU-sized): 2 Pre-LN Transformer layers (x ← x + F(LN(x)), `TransformerBlock(norm="pre")`),
# d = 32, one head, feed-forward width 64, Adam with learning rate 2 × 10⁻², no warm-up, batches of 64,
# 120 steps (a few seconds a run). The same model at lr 3 × 10⁻³ learns the task without
# collapse, and the effect was checked on six seeds: baseline min-layer entropy ≤ 0.6 nats with loss
# ≥ 0.6, σReparam ≥ 2.7 nats with loss ≤ 0.09 (a larger setting, 4 layers, d = 64, 300 steps, lr 10⁻²,
# collapses as well). Expected, as in the paper: the baseline's entropy collapses and its loss stays
# near chance; with σReparam the entropy stays high and the task is learned.
#
# > **Glossary** · entropy collapse 熵坍缩 · spectral norm 谱范数 · power iteration 幂迭代 ·
# > reparametrisation 重参数化 · majority 多数表决 · learning rate 学习率 · Pre-LN 前置层归一化

# %% slideshow={"slide_type": "-"}
# NBVAL_IGNORE_OUTPUT
models = []  # the trained models, for the check below
runs = {
    name: train_majority(reparam, seed=0, model_out=models)
    for name, reparam in (("baseline", False), ("σReparam", True))
}
for name, r in runs.items():
    print(
        f"{name:9s}: loss {r.eval_loss:.3f}, accuracy {r.eval_accuracy:.3f}, layer entropies "
        f"{[round(h, 2) for h in r.eval_entropies]} (log 33 = {math.log(33):.2f}), "
        f"‖W_Q W_Kᵀ‖₂/√d_k {[round(x, 2) for x in r.qk_norms]}, {r.seconds:.1f} s"
    )

# %% slideshow={"slide_type": "subslide"}
fig, ax = plt.subplots(1, 2, figsize=(10, 3.2))
for (name, r), color in zip(runs.items(), ("tab:red", "tab:blue")):
    ents = np.array(r.entropies)  # (steps, layers)
    for layer in range(ents.shape[1]):
        ax[0].plot(
            ents[:, layer], color=color, ls=("-", "--")[layer], label=f"{name}, layer {layer + 1}"
        )
    ax[1].plot(np.convolve(r.losses, np.ones(5) / 5, mode="valid"), color=color, label=name)
ax[0].axhline(math.log(33), ls=":", c="k", lw=1)
ax[0].set(xlabel="training step", ylabel="mean attention entropy (nats)", title="entropy per layer")
ax[0].legend(fontsize=7)
ax[1].axhline(math.log(2), ls=":", c="k", lw=1)
ax[1].set(
    xlabel="training step", ylabel="training loss (5-step mean)", title="loss (chance = log 2)"
)
ax[1].legend(fontsize=8)
plt.tight_layout()
plt.show()

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
base, reparam = runs["baseline"], runs["σReparam"]
collapsed = base.min_entropy < 1.0 and base.eval_loss > 0.4
kept = reparam.min_entropy > 2.0 and reparam.eval_loss < 0.1
print(
    f"baseline: smallest layer entropy < 1 nat and loss > 0.4 (collapse, near chance): {collapsed}"
)
print(f"σReparam: smallest layer entropy > 2 nats and loss < 0.1 (task learned)        : {kept}")
assert collapsed, (
    f"expected entropy collapse: min H {base.min_entropy:.2f}, loss {base.eval_loss:.3f}"
)
assert kept, (
    f"expected σReparam to keep entropy: min H {reparam.min_entropy:.2f}, loss {reparam.eval_loss:.3f}"
)

# %% [markdown] slideshow={"slide_type": "-"}
# The corrected bound of §6 holds row by row in the trained models too. From the attention
# weights alone the score range of each row is $\Delta s = \log(\max\alpha/\min\alpha)$ (§1), so every
# row can be checked against H ≥ log n − (Δs)²/8: collapsed rows have a huge Δs (the bound says
# nothing), the σReparam rows a small one (the bound *guarantees* their high entropy).

# %% slideshow={"slide_type": "-"}
# NBVAL_IGNORE_OUTPUT
tokens, _ = majority_batch(
    256, generator=torch.Generator().manual_seed(5)
)  # (256, 33) fresh sequences
bound_holds = {}
for name, model in zip(runs, models):
    with torch.no_grad():
        _, weights = model(tokens)  # list of (256, 1, 33, 33), one per layer
    w = torch.stack(weights).double()  # (layers, 256, 1, 33, 33)
    h, ds = attention_entropy(w), score_range_from_weights(w)  # (layers, 256, 1, 33) each
    bound = math.log(33) - ds**2 / 8
    bound_holds[name] = bool((h >= bound - 1e-5).all())  # float32 weights: allow rounding
    print(
        f"{name:9s}: per layer, median Δs = {[round(float(x), 1) for x in ds.flatten(1).median(1).values]}, "
        f"mean H = {[round(float(x), 2) for x in h.flatten(1).mean(1)]}, "
        f"median bound = {[round(float(x), 2) for x in bound.flatten(1).median(1).values]}"
    )

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
print(
    "H >= log 33 − (Δs)²/8 on every attention row of both trained models:",
    all(bound_holds.values()),
)
assert all(bound_holds.values())

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 10. Claim checks at a glance
#
# | source claim | verdict | correct statement / condition |
# |---|---|---|
# | Def. 14.3.7, Eq. (14.3.14): α = softmax(qᵀk/√d_k) | ✓ | a definition; equal to the package's attention weights |
# | Lemma 14.3.9, Eq. (14.3.15): equal scores → uniform, max entropy | ✓ | and conversely: uniform only if all scores are equal |
# | Lemma 14.3.10, Eq. (14.3.16): softmax = Gibbs distribution | ✓ | E_i = −s_i; softmax(s/T) maximises E_α[s] + T·H(α), the gap is T·KL |
# | Def. 14.3.8, Eq. (14.3.17); 001 Eq. (5.4.6) | ✓ | the entropy of one query's (one row's) weights |
# | Lemma 14.3.11: 0 ≤ H ≤ log n | ✓ / ⚠ | for softmax weights: log n iff equal scores; H > 0 always (0 only by underflow) |
# | Thm. 14.3.5, Eq. (14.3.18): H ≤ log n − (Δs)²/8 | ✗ | false for every non-constant s; true: **H ≥ log n − (Δs)²/8** (Hoeffding), tight as Δs → 0 |
# | Cor. 14.3.3, Eq. (14.3.19): 1/√d_k prevents low entropy | ✓ / ⚠ | var(q·k) = d_k for independent unit-variance components; at initialisation only — training can still collapse (Zhai et al. 2023) |
# | Def. 14.3.9, Eq. (14.3.20): softmax(s/T) | ✓ | ∂softmax(s/T)/∂s = (diag(α) − ααᵀ)/T |
# | Lemma 14.3.12: H monotone in T; limits | ✓ / ⚠ | dH/dT = Var_α(s)/T³ > 0 unless s constant; T → 0 gives log(#tied maxima), one-hot only for a unique maximum |
# | Thm. 14.3.6: high T explores, low T exploits | ⚠ | an interpretation; measurable part = Lemma 14.3.12; T never changes the ranking |
# | Application 14.3.2: cosine schedule | ✓ / ⚠ | formula right; pseudocode: step count named T, loop from t = 1 skips T_0, parameter k unused |

# %% [markdown] slideshow={"slide_type": "skip"}
# ## 11. Exercises (graded)
#
# Five exercises, 11 points. Write your code between the lines marked for it, run the cell, then
# run the check cell under it: it tests your function on random and edge inputs and tells you
# precisely what is wrong. Use plain tensor operations (`exp`, `log`, `sum`, `amax`, `cos`, `@`,
# `logsumexp`, `where`, ...). What computes the answer for you is refused before anything else is
# checked: any softmax of PyTorch's (`torch.softmax`, `F.softmax`, `x.softmax(...)`,
# `log_softmax`, ...), automatic differentiation in exercise 3 (`torch.autograd`, `.backward()`,
# `torch.func`), and every function of the course's own package `attncourse` (the chapter's
# `hoeffding_entropy_bound` or `cosine_temperature` among them). You may call your own functions
# from earlier exercises. When graded, the same kinds of input are tried again with other numbers
# (the hidden tests), so a function that passes the visible check for the right reason passes them.

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 1 (2 points) — softmax with a temperature, Eq. (14.3.20)
# `my_softmax_t(scores, temperature)`: scores (..., n) and a temperature T > 0 → weights
# softmax(scores / T) over the last dimension. It must work at T = 0.001 (hint: chapter 01's
# max subtraction, applied to s / T).


# %% nbgrader={"grade": false, "grade_id": "ch03_softmax_temperature", "locked": false, "schema_version": 3, "solution": true} slideshow={"slide_type": "skip"}
def my_softmax_t(scores, temperature):
    """scores (..., n), temperature > 0 -> (..., n) = softmax(scores / temperature) over the last dim."""
    ### BEGIN SOLUTION
    z = scores / temperature  # (..., n)
    e = torch.exp(z - z.amax(dim=-1, keepdim=True))  # (..., n), max exp(0) = 1: no overflow
    return e / e.sum(dim=-1, keepdim=True)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch03_softmax_temperature_test", "locked": true, "points": 2, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"}
from attncourse.exercises.ch03 import check_softmax_temperature

check_softmax_temperature(my_softmax_t)
### BEGIN HIDDEN TESTS
import importlib

import attncourse.exercises.ch03 as ex
import attncourse.exercises.engine as engine

engine = importlib.reload(engine)  # fresh copies: a patched check does not count
ex = importlib.reload(ex)
ex.check_softmax_temperature(my_softmax_t, seed=31)
### END HIDDEN TESTS

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 2 (3 points) — the entropy of softmax(s / T), Eq. (14.3.17)
# `my_entropy_t(scores, temperature)`: scores (..., n) → H(softmax(scores / T)) in nats, shape
# (...). **Numerical care is the lesson here**: the checks go down to T = 0.001, where z = s / T runs
# into the thousands and a float32 number keeps about 7 significant digits. At small T some weights
# underflow to exactly 0, and 0 · log 0 must count as 0, never `nan`. Either build on your
# `my_softmax_t`, or derive from Eq. (14.3.17) and α_i = e^{z_i} / Σ_j e^{z_j} an expression of H in
# z alone — but then ask which of its terms are in the thousands, and what a shift of every z_i by
# the same constant does to H (nothing) and to those terms (everything).


# %% nbgrader={"grade": false, "grade_id": "ch03_entropy_temperature", "locked": false, "schema_version": 3, "solution": true} slideshow={"slide_type": "skip"}
def my_entropy_t(scores, temperature):
    """scores (..., n), temperature > 0 -> (...) entropy of softmax(scores / temperature) in nats."""
    ### BEGIN SOLUTION
    alpha = my_softmax_t(scores, temperature)  # (..., n)
    safe = torch.where(
        alpha > 0, alpha, torch.ones_like(alpha)
    )  # log 1 = 0 where alpha underflowed
    return -(alpha * torch.log(safe)).sum(dim=-1)  # (...)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch03_entropy_temperature_test", "locked": true, "points": 3, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"}
from attncourse.exercises.ch03 import check_entropy_temperature

check_entropy_temperature(my_entropy_t)
### BEGIN HIDDEN TESTS
import importlib

import attncourse.exercises.ch03 as ex
import attncourse.exercises.engine as engine

engine = importlib.reload(engine)  # fresh copies: a patched check does not count
ex = importlib.reload(ex)
ex.check_entropy_temperature(my_entropy_t, seed=32)
### END HIDDEN TESTS

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 3 (2 points) — the softmax Jacobian
# `my_softmax_jacobian(weights)`: weights α = softmax(s) of shape (..., n) → the Jacobians
# J_ij = ∂α_i / ∂s_j of shape (..., n, n), one matrix per weight vector, computed from α alone (no
# automatic differentiation). Derive J_ij by differentiating the quotient e^{s_i} / Σ_k e^{s_k} —
# the cases i = j and i ≠ j differ — and check your derivation before you code it: every row of J
# must sum to 0 (why? softmax is unchanged when every s_j grows by the same amount).


# %% nbgrader={"grade": false, "grade_id": "ch03_softmax_jacobian", "locked": false, "schema_version": 3, "solution": true} slideshow={"slide_type": "skip"}
def my_softmax_jacobian(weights):
    """weights (..., n) -> Jacobians (..., n, n), J[..., i, j] = d alpha_i / d s_j."""
    ### BEGIN SOLUTION
    return torch.diag_embed(weights) - weights.unsqueeze(-1) * weights.unsqueeze(-2)  # (..., n, n)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch03_softmax_jacobian_test", "locked": true, "points": 2, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"}
from attncourse.exercises.ch03 import check_softmax_jacobian

check_softmax_jacobian(my_softmax_jacobian)
### BEGIN HIDDEN TESTS
import importlib

import attncourse.exercises.ch03 as ex
import attncourse.exercises.engine as engine

engine = importlib.reload(engine)  # fresh copies: a patched check does not count
ex = importlib.reload(ex)
ex.check_softmax_jacobian(my_softmax_jacobian, seed=33)
### END HIDDEN TESTS

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 4 (2 points) — the cosine temperature schedule, Application 14.3.2
# `my_cosine_temperature(steps, total_steps, t_start, t_min)`: a tensor of steps t (floats in
# [0, N]) → the temperatures of a schedule that follows half a period of a cosine,
# T_t = a + b · cos(π t / N), same shape and dtype, with T(0) = T_0 and T(N) = T_min (§7: the
# source's pseudocode misses T(0)). Find a and b from those two conditions, and check your answer
# with a number: halfway, T(N/2) must be the mean of T_0 and T_min. The schedule must also work
# when T_0 < T_min (a warming schedule).


# %% nbgrader={"grade": false, "grade_id": "ch03_cosine_schedule", "locked": false, "schema_version": 3, "solution": true} slideshow={"slide_type": "skip"}
def my_cosine_temperature(steps, total_steps, t_start, t_min):
    """steps (K,) tensor of t in [0, N] -> (K,) temperatures of the cosine schedule from t_start to t_min."""
    ### BEGIN SOLUTION
    return t_min + (t_start - t_min) * (1 + torch.cos(math.pi * steps / total_steps)) / 2  # (K,)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch03_cosine_schedule_test", "locked": true, "points": 2, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"}
from attncourse.exercises.ch03 import check_cosine_temperature

check_cosine_temperature(my_cosine_temperature)
### BEGIN HIDDEN TESTS
import importlib

import attncourse.exercises.ch03 as ex
import attncourse.exercises.engine as engine

engine = importlib.reload(engine)  # fresh copies: a patched check does not count
ex = importlib.reload(ex)
ex.check_cosine_temperature(my_cosine_temperature, seed=34)
### END HIDDEN TESTS

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 5 (2 points) — the entropy lower bound, Thm. 14.3.5 corrected
# `my_hoeffding_bound(scores)`: scores (..., n) → (...) the lower bound on H(softmax(s)) that §6
# derived from Hoeffding's lemma, one bound per score vector of the batch, in nats. Which n and which
# Δs belong to one score vector? Check your function with a number before you run the check: for
# s = (0, 3) the bound must lie below the true entropy 0.1909 — and is it positive?


# %% nbgrader={"grade": false, "grade_id": "ch03_hoeffding_bound", "locked": false, "schema_version": 3, "solution": true} slideshow={"slide_type": "skip"}
def my_hoeffding_bound(scores):
    """scores (..., n) -> (...) the corrected lower bound on H(softmax(s)), in nats."""
    ### BEGIN SOLUTION
    spread = scores.amax(dim=-1) - scores.amin(dim=-1)  # (...)
    return math.log(scores.shape[-1]) - spread**2 / 8  # (...)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch03_hoeffding_bound_test", "locked": true, "points": 2, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"}
from attncourse.exercises.ch03 import check_hoeffding_bound

check_hoeffding_bound(my_hoeffding_bound)
### BEGIN HIDDEN TESTS
import importlib

import attncourse.exercises.ch03 as ex
import attncourse.exercises.engine as engine

engine = importlib.reload(engine)  # fresh copies: a patched check does not count
ex = importlib.reload(ex)
ex.check_hoeffding_bound(my_hoeffding_bound, seed=35)
### END HIDDEN TESTS

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Summary
#
# - Softmax weights are a **Gibbs distribution** (energies −s, temperature T): the distribution
#   that maximises expected score + T × entropy. Equal scores ⇔ uniform weights ⇔ H = log n.
# - The entropy of softmax attention lies in (0, log n]; it **increases strictly with T**
#   (dH/dT = Var_α(s)/T³) from log(#tied maxima) at T → 0 to log n at T → ∞.
# - **var(q·k) = d_k** for independent unit-variance components; dividing by √d_k keeps scores at
#   variance 1 so the softmax neither saturates nor loses its gradient — the Jacobian
#   diag(α) − ααᵀ has norm ≤ 1/2 and vanishes at saturation. This holds at initialisation only.
# - The source's Thm. 14.3.5 points the wrong way: the truth is the **lower bound
#   H(α) ≥ log n − (Δs)²/8** (Hoeffding's lemma on KL(α‖uniform)), tight as Δs → 0.
# - The cosine schedule T_t = T_min + (T_0 − T_min)(1 + cos(πt/N))/2 is right; its pseudocode
#   starts one step late and names the step count T.
# - Training can still **collapse** attention entropy (Zhai et al. 2023): at a large learning rate a
#   2-layer Pre-LN Transformer's attention collapses and it fails a majority task that needs diffuse
#   attention; **σReparam** (Ŵ = γ W / σ(W)) bounds the scores, keeps the entropy high and learns it.
# - Package functions used here (`attncourse.chapters.ch03_entropy_and_temperature`, `attncourse.reparam`,
#   `attncourse.chapters.ch03_entropy_and_temperature`) work on any scores, weights or `nn.Module`.
#
# **Next — chapter 04, RNN vs attention: gradient paths**: how far gradients travel through a
# recurrent network compared with the one-step paths of self-attention, and what that means for
# long-range dependencies.
