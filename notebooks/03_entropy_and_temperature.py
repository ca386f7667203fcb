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
# *Softmax 注意力的信息论特性：熵与温度* — source 000, §14.3.3; source 001, Eq. (5.4.6)
#
# In chapter 01 the word *it* learned to read *cat*: 0.87 of its attention went there. The verb
# *sat* could not decide — it split its weight evenly between *cat* and *mat*. Now divide every
# score by a number T before the softmax. Make T small: does *it* read *cat* alone? Does *sat*
# finally pick one? Make T large: what is left of the choice? And when a Transformer's attention
# grows **too** sharp, its training can fail (Zhai et al. 2023): why would a sharper choice stop
# a model from learning? One number answers all of these: the **entropy** of the weights,
# followed as the temperature changes.
#
# **After this chapter you can**
# - compute softmax at any temperature without overflow, and say how the weights and their
#   entropy move with T — ties included;
# - read softmax as a Gibbs distribution, the best trade between expected score and entropy;
# - explain why a sharp (saturated) softmax passes almost no gradient, from its Jacobian;
# - bound the entropy from below by the spread of the scores, $H \ge \log n - (\Delta s)^2/8$
#   (the source prints it the wrong way round);
# - write a cosine temperature schedule;
# - reproduce attention entropy collapse (Zhai et al. 2023) on a CPU and prevent it with
#   σReparam.
#
# **Prerequisites**: chapter 01 (softmax, attention entropy, the √d_k scale, the running
# sentence); a derivative, an expectation and a variance; a matrix's spectral norm ‖J‖₂ (its
# largest singular value; for a symmetric positive semi-definite J, the largest vᵀJv over unit
# vectors v); PyTorch at the level of `x.amax(dim=-1, keepdim=True)`.
#
# **Time**: main path about 85 min, appendix about 17 min (by `scripts/reading_time.py`: prose
# at 150 words a minute, code at 20 lines a minute, and each exercise's stated time).
#
# **How to read it.** Sections 1–7 are the main path. The **appendix** checks every claim the
# source makes about this topic and can be skipped on a first reading.

# %% slideshow={"slide_type": "skip"}
import math

import matplotlib.pyplot as plt
import numpy as np
import torch

from attncourse.attention import softmax
from attncourse.chapters import ch01_attention_as_selection as ch01
from attncourse.chapters import ch03_entropy_and_temperature as ch03
from attncourse.metrics import attention_entropy

torch.manual_seed(0)
np.random.seed(0)
torch.set_num_threads(2)
torch.set_flush_denormal(True)
torch.set_printoptions(precision=4, sci_mode=False)
plt.rcParams.update({"figure.dpi": 80, "figure.figsize": (7, 3)})

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 1. Temperature sharpens or flattens attention
#
# Our running example is chapter 01's sentence with its hand-made queries and keys: every word
# gets a row of scaled scores $s = q \cdot k / \sqrt{d_k}$, one per word it may read.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
x = ch01.sentence_embeddings()  # (T=10, d_model=6), float64
w_q, w_k, _ = ch01.hand_made_projections()  # (6, 2), (6, 2)
scores = (x @ w_q) @ (x @ w_k).T / math.sqrt(2)  # (T, T): row t holds q_t . k_s / sqrt(d_k)
it, sat = ch01.SENTENCE.index("it"), ch01.SENTENCE.index("sat")
print("words          :", ch01.SENTENCE)
print("scores of 'it' :", [round(v, 2) for v in scores[it].tolist()])
print("scores of 'sat':", [round(v, 2) for v in scores[sat].tolist()])

# %% [markdown] slideshow={"slide_type": "-"}
# *it* gives *cat* a score of 4.07 and every other word 0; *sat* gives 4.07 to both nouns. A
# **temperature** T divides the scores before the softmax (Def. 14.3.9):
#
# $$\alpha_i(T) = \frac{\exp(s_i/T)}{\sum_{j=1}^{n}\exp(s_j/T)} \qquad (14.3.20)$$
#
# T = 1 is the plain softmax. T < 1 stretches the differences between scores, so the weights
# sharpen; T > 1 shrinks them, so the weights flatten. Because `exp` is increasing, the
# temperature never changes **which** word ranks first — only how much the ranking counts.
#
# > **Glossary** · temperature 温度 · sharpen / flatten 锐化 / 平滑 · ranking 排序 ·
# > overflow 溢出

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
for T in (0.25, 1.0, 4.0):
    a, b = softmax(scores[it], temperature=T), softmax(scores[sat], temperature=T)  # (10,) each
    print(
        f"T = {T:4}: 'it' reads cat {a[1]:.3f} (any other word {a[0]:.3f});  "
        f"'sat' reads cat {b[1]:.3f}, mat {b[5]:.3f}"
    )

# %% [markdown] slideshow={"slide_type": "-"}
# At T = 0.25 *it* reads only *cat*; at T = 4 *it* gives *cat* only about a quarter of its weight
# (0.235, against 0.085 for each other word). *sat* stays split at every temperature: its two
# scores are equal, and dividing equal numbers by T leaves them equal. Keep that in mind for section 3.

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 1 · Softmax with a temperature
# **Difficulty** ●○○ · **Time** 8 min · **Points** 2 · **Practises** Eq. (14.3.20), overflow at
# a small temperature
#
# Write `my_softmax_t(scores, temperature)`: scores (..., n) and a temperature T > 0 (a Python
# float) → the weights softmax(scores / T) over the **last** dimension, same shape and dtype, for
# any number of leading dimensions. It must work at T = 0.001, where s / T runs into the
# thousands: subtract the row maximum of **s / T** before `exp` (chapter 01's trick, applied
# after dividing). Do not change the input in place. Write it from plain tensor operations
# (`exp`, `amax`, `sum`, `logsumexp` are fine); the check refuses PyTorch's softmax functions
# (`torch.softmax`, `F.softmax`, `x.softmax`, `log_softmax`, …) and the course's package. It
# compares in your input's dtype and allows a few units of that dtype's precision at the size of
# s / T.


# %% nbgrader={"grade": false, "grade_id": "ch03_softmax_temperature", "locked": false, "schema_version": 3, "solution": true} slideshow={"slide_type": "skip"}
def my_softmax_t(scores, temperature):
    """scores (..., n), temperature > 0 -> (..., n) = softmax(scores / temperature), last dim."""
    ### BEGIN SOLUTION
    z = scores / temperature  # (..., n)
    e = torch.exp(z - z.amax(dim=-1, keepdim=True))  # (..., n), max exp(0) = 1: no overflow
    return e / e.sum(dim=-1, keepdim=True)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch03_softmax_temperature_test", "locked": true, "points": 2, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"} tags=["raises-exception"]
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

# %% [markdown] slideshow={"slide_type": "-"}
# The whole sentence at three temperatures. (From here on the chapter calls the course's
# `softmax(scores, temperature=T)`, so it runs whether or not your exercises are done.)

# %% slideshow={"slide_type": "subslide"}
fig, ax = plt.subplots(1, 3, figsize=(13, 4))
for panel, T in zip(ax, (0.25, 1.0, 4.0)):
    ch01.show_weights(softmax(scores, temperature=T), ax=panel, title=f"T = {T}")
plt.tight_layout()
plt.show()

# %% [markdown] slideshow={"slide_type": "-"}
# Cold (T = 0.25), every word that asks for something makes a hard choice — except *sat* and
# *was*, which ask for a noun and find two. The words that ask for nothing (the nouns and the
# function words) have equal scores and read every word evenly at every temperature. Hot
# (T = 4), every choice blurs towards the plain average.
#
# **Takeaway.** Dividing the scores by T keeps their ranking and sets how sharply it is followed;
# shift by the maximum of what you exponentiate: max(s / T) from s / T (or max s from s, then
# divide), never max s from s / T.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 2. Softmax is a Gibbs distribution: score against spread
#
# Why `exp`, and what exactly does T trade? Statistical mechanics answered this long before
# attention. A system whose states i have energies $E_i$ at temperature T occupies state i with
# the **Gibbs** (Boltzmann) probability
#
# $$P(i) = \frac{\exp(-E_i/T)}{\sum_j \exp(-E_j/T)} \qquad (14.3.16)$$
#
# With energies $E_i = -s_i$ (a high score is a low energy) this is softmax(s/T)
# (Lemma 14.3.10). What makes the link useful is what it optimises. To compare distributions we
# need one new quantity, the **Kullback–Leibler divergence** of α from a distribution β,
#
# $$\mathrm{KL}(\alpha\,\|\,\beta) = \sum_{i=1}^{n} \alpha_i \log\frac{\alpha_i}{\beta_i} \;\ge\; 0,$$
#
# which is 0 only when α = β (it measures, in nats, how badly β stands in for α; it is not
# symmetric). Write $Z = \sum_j e^{s_j/T}$, so that $\log \mathrm{softmax}(s/T)_i = s_i/T - \log Z$.
# Then for **any** distribution α, expanding the logarithm gives
#
# $$F(\alpha) \;=\; \underbrace{\textstyle\sum_i \alpha_i s_i}_{\text{expected score}} + \;T\,\underbrace{H(\alpha)}_{\text{spread}}
# \;=\; T\log Z \;-\; T\,\mathrm{KL}\big(\alpha\,\|\,\mathrm{softmax}(s/T)\big).$$
#
# Since KL ≥ 0, softmax(s/T) is the one distribution that maximises F — the **Gibbs variational
# principle** — and any other α falls short by exactly T·KL. Attention weights are therefore the
# best trade between **selection** (weight on high scores) and **spread** (entropy), and T is the
# exchange rate: T → 0 prices entropy at nothing (argmax), T → ∞ prices the scores at nothing
# (uniform). Below, 20 000 random distributions over the ten words try to beat the softmax of
# *it*'s scores.
#
# > **Glossary** · Gibbs (Boltzmann) distribution 吉布斯分布 · energy 能量 · partition function
# > 配分函数 · variational principle 变分原理 · KL divergence KL 散度

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
s = scores[it]  # (10,)
others = torch.distributions.Dirichlet(torch.full((10,), 0.5, dtype=torch.float64))
others = others.sample((20_000,))  # (20000, 10) random distributions over the words
for T in (0.25, 1.0, 4.0):
    gibbs = torch.exp(s / T) / torch.exp(s / T).sum()  # Eq. (14.3.16) with E = -s, written out
    F = (others * s).sum(-1) + T * attention_entropy(others)  # (20000,) expected score + T H
    F_best = gibbs @ s + T * attention_entropy(gibbs)
    log_Z = T * torch.logsumexp(s / T, dim=-1)
    kl = (others * torch.log(others / gibbs)).sum(-1)  # (20000,) KL(alpha || softmax(s / T))
    assert torch.allclose(gibbs, softmax(s, temperature=T)) and abs(F_best - log_Z) < 1e-12
    shortfall_is_kl = torch.allclose(log_Z - F, T * kl)
    assert shortfall_is_kl and (F_best > F).all()
    print(
        f"T = {T:4}: F(softmax) = T log Z = {F_best:.4f};  best of 20000 others "
        f"{F.max():.4f};  every shortfall = T·KL: {shortfall_is_kl}"
    )

# %% [markdown] slideshow={"slide_type": "-"}
# Sections 3 and 5 read their results off this identity.
#
# **Takeaway.** softmax(s/T) is the distribution with the best expected score for its entropy;
# T prices entropy in units of score.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 3. Entropy rises with temperature
#
# How many words does *it* read at a given temperature? The entropy of its weights says it:
#
# $$H(\alpha) = -\sum_{i=1}^{n}\alpha_i\log\alpha_i \qquad (14.3.17)$$
#
# (Def. 14.3.8: chapter 01's Eq. 14.3.3; source 001 writes it for row i of an attention matrix A
# as $H(A_i) = -\sum_j A_{ij}\log A_{ij}$, Eq. 5.4.6.) How does H change with T? At α = softmax(s/T)
# the KL of section 2 is 0, so $H = \log Z - \mathbb{E}_\alpha[s]/T$. Differentiating with β = 1/T,
# $\frac{d}{d\beta}\log Z = \mathbb{E}_\alpha[s]$ and $\frac{d}{d\beta}\mathbb{E}_\alpha[s] = \mathrm{Var}_\alpha(s)$, which gives
#
# $$\frac{dH}{dT} = \frac{\mathrm{Var}_{\alpha(T)}(s)}{T^3} \;\ge\; 0,$$
#
# zero only when all scores are equal. So H **increases strictly** with T for any scores that
# are not all equal. Its limits: as T → ∞ the weights become uniform and H → log n. As T → 0 all
# weight goes to the largest score — shared equally by the m positions that tie for it — so
# H → log m.
#
# > **⚠ The source says** (Lemma 14.3.12) that as T → 0 the weights become one-hot on the argmax
# > and H → 0. That holds only when the largest score is unique. *sat* has two largest scores,
# > *cat* and *mat*: its entropy falls to log 2 and stays there. Temperature never breaks a tie.
#
# > **Glossary** · attention entropy 注意力熵 · monotone 单调 · limit 极限 · tie 并列 ·
# > inverse temperature β = 1/T 逆温度 · underflow 下溢

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 2 · The entropy of softmax(s / T), at any temperature
# **Difficulty** ●●○ · **Time** 12 min · **Points** 3 · **Practises** Eq. (14.3.17) of
# Eq. (14.3.20)'s weights, 0 · log 0, float32 rounding at a small temperature
#
# Write `my_entropy_t(scores, temperature, softmax_t)`: scores (..., n) and T > 0 → the
# entropy of softmax(scores / T) in nats, shape (...), same dtype. `softmax_t(scores,
# temperature)` gives the weights: the check passes the course's own, so this exercise is judged
# on its own even if exercise 1 is unfinished; try it with yours as `my_entropy_t(s, T,
# my_softmax_t)`. (You may also ignore it and work with z = s / T directly.) The check goes down to
# T = 0.001 in float32, where small weights underflow to exactly 0: 0 · log 0 must count as 0,
# never `nan`. Either skip zero weights (`torch.where(α > 0, …)`) or guard the log,
# `log(α + ε)` with ε ≤ 1e-9, which changes H by at most n·ε and is allowed. If you use
# $H = \log\sum_j e^{z_j} - \sum_i \alpha_i z_i$, shift z by its row maximum first (H does not
# change): unshifted, both terms are in the thousands while H is at most log n. The tolerance is
# a few units of the dtype's precision at the size of s / T. The check refuses PyTorch's softmax
# functions, `torch.special.entr`, the cross-entropy and KL losses, `torch.distributions`'
# entropies and the course's package.


# %% nbgrader={"grade": false, "grade_id": "ch03_entropy_temperature", "locked": false, "schema_version": 3, "solution": true} slideshow={"slide_type": "skip"}
def my_entropy_t(scores, temperature, softmax_t):
    """scores (..., n), temperature > 0 -> (...) entropy of softmax(scores / temperature), nats;
    softmax_t(scores, temperature) -> the weights (..., n)."""
    ### BEGIN SOLUTION
    alpha = softmax_t(scores, temperature)  # (..., n)
    safe = torch.where(alpha > 0, alpha, torch.ones_like(alpha))  # log 1 = 0 where α underflowed
    return -(alpha * torch.log(safe)).sum(dim=-1)  # (...)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch03_entropy_temperature_test", "locked": true, "points": 3, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"} tags=["raises-exception"]
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

# %% [markdown] slideshow={"slide_type": "-"}
# The entropy of three rows of the running example from T = 0.001 to 1000: *it* (one largest
# score), *sat* (two tied) and *the* (all scores equal), with the course's `entropy_curve`.

# %% slideshow={"slide_type": "subslide"}
# NBVAL_CHECK_OUTPUT
temps = torch.logspace(-3, 3, 601, dtype=torch.float64)  # (601,)
rows = {"it": it, "sat": sat, "the": 0}
curves = ch03.entropy_curve(scores[list(rows.values())], temps)  # (3, 601)
fig, ax = plt.subplots(figsize=(7, 3))
for word, H in zip(rows, curves):
    ax.semilogx(temps, H, label=f"'{word}'")
    print(
        f"'{word}': H(T = 0.001) = {H[0]:.4f}, H(T = 1000) = {H[-1]:.4f}, "
        f"never decreases: {bool((H.diff() >= 0).all())}"
    )
ax.axhline(math.log(10), ls="--", c="k", lw=1, label="log 10")
ax.axhline(math.log(2), ls=":", c="k", lw=1, label="log 2")
ax.set(xlabel="temperature T", ylabel="H (nats)", title="entropy rises with T")
ax.legend(fontsize=8)
plt.tight_layout()
plt.show()
T0 = torch.tensor(0.7, dtype=torch.float64, requires_grad=True)
(dH,) = torch.autograd.grad(attention_entropy(softmax(scores[it], temperature=T0)), T0)
print(
    f"'it' at T = 0.7: dH/dT by autograd = {dH:.6f}, "
    f"Var(s)/T³ = {ch03.entropy_temperature_derivative(scores[it], 0.7):.6f}"
)

# %% [markdown] slideshow={"slide_type": "-"}
# *it* goes from 0 (one word) to log 10 (every word); *sat* from log 2 — the tie — to log 10;
# *the* stays at log 10, since its scores are all equal and Var(s) = 0.
#
# **Takeaway.** H(T) rises strictly unless all scores are equal, from log(number of tied maxima)
# at T → 0 to log n at T → ∞.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 4. Saturation: a sharp softmax stops learning
#
# If a low temperature makes such clean choices, why not always use one? Because a model learns
# its scores, through gradients that pass the softmax on their way from the loss to $W_Q$ and
# $W_K$. How much do the weights move when the scores move? That is the **Jacobian** of softmax,
# the n × n matrix $J_{ij} = \partial\alpha_i/\partial s_j$; a loss's gradient reaches the scores
# as $\partial L/\partial s = J^\top\,\partial L/\partial\alpha$. Derive it yourself first.
#
# > **Glossary** · saturation 饱和 · Jacobian 雅可比矩阵 · gradient 梯度 · vanishing gradient
# > 梯度消失 · spectral norm ‖·‖₂ 谱范数 · Frobenius norm 弗罗贝尼乌斯范数

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 3 · The softmax Jacobian
# **Difficulty** ●●○ · **Time** 12 min · **Points** 2 · **Practises** differentiating a quotient,
# outer products with batch dimensions
#
# Write `my_softmax_jacobian(weights)`: weights α = softmax(s) of shape (..., n) → the Jacobians
# `J[..., i, j]` = ∂α_i / ∂s_j of shape (..., n, n), one matrix per weight vector, same dtype,
# computed from α alone. Derive $J_{ij}$ by differentiating $e^{s_i} / \sum_k e^{s_k}$ — the
# cases i = j and i ≠ j differ — and check your derivation before you code it: every row of J
# must sum to 0 (why? softmax does not change when every $s_j$ grows by the same amount). The
# check refuses automatic differentiation (`torch.autograd`, `.backward()`, `torch.func`),
# PyTorch's softmax functions and the course's package.


# %% nbgrader={"grade": false, "grade_id": "ch03_softmax_jacobian", "locked": false, "schema_version": 3, "solution": true} slideshow={"slide_type": "skip"}
def my_softmax_jacobian(weights):
    """weights (..., n) -> Jacobians (..., n, n), J[..., i, j] = d alpha_i / d s_j."""
    ### BEGIN SOLUTION
    return torch.diag_embed(weights) - weights.unsqueeze(-1) * weights.unsqueeze(-2)  # (..., n, n)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch03_softmax_jacobian_test", "locked": true, "points": 2, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"} tags=["raises-exception"]
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

# %% [markdown] slideshow={"slide_type": "-"}
# The answer: $J_{ij} = \alpha_i(\delta_{ij} - \alpha_j)$, that is
#
# $$J = \mathrm{diag}(\alpha) - \alpha\alpha^\top,$$
#
# and with a temperature $\partial\,\mathrm{softmax}(s/T)/\partial s = J/T$. J is symmetric, and
# for any vector v, $v^\top J v = \sum_i \alpha_i v_i^2 - (\sum_i \alpha_i v_i)^2 = \mathrm{Var}_\alpha(v) \ge 0$.
# Its size says how much gradient reaches the scores:
# - **one-hot** α: J = 0. A saturated softmax passes no gradient at all.
# - **uniform** α over n keys: $J = I/n - \mathbf{1}\mathbf{1}^\top/n^2$, so
#   $\|J\|_2 = 1/n$ and $\|J\|_F = \sqrt{n-1}/n$ — small too when n is large.
# - **never more than ½**: for a unit vector v, $\mathrm{Var}_\alpha(v) \le (\max v - \min v)^2/4 \le ½$
#   (a distribution on an interval of length L has variance at most L²/4, and
#   $(v_i - v_j)^2 \le 2(v_i^2 + v_j^2) \le 2$). Equality needs half the weight at each of two
#   positions and none elsewhere: $\|J\|_2 = ½$ **only** at α = (½, ½, 0, …, 0), in some order —
#   which softmax weights reach only in the limit of a two-way tie as T → 0.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
auto = torch.autograd.functional.jacobian(lambda v: softmax(v), scores[it])  # (10, 10)
J = ch03.softmax_jacobian(softmax(scores[it]))  # (10, 10)
print("diag(α) − ααᵀ = autograd's Jacobian:", torch.allclose(J, auto))
w = torch.distributions.Dirichlet(torch.full((6,), 0.3, dtype=torch.float64)).sample((50_000,))
print(
    "50000 random α over 6 keys, all with ‖J‖₂ < 0.5:", bool(ch03.jacobian_spectral(w).max() < 0.5)
)
half = torch.tensor([0.5, 0.5, 0.0, 0.0], dtype=torch.float64)
tie = softmax(torch.tensor([1.0, 1.0, 0.0, 0.0], dtype=torch.float64))  # a tie at T = 1
print(
    f"‖J‖₂ at (½, ½, 0, 0) = {ch03.jacobian_spectral(half):.4f}; at the softmax of the tie "
    f"(1, 1, 0, 0) = {ch03.jacobian_spectral(tie):.4f}"
)
u = torch.full((10,), 0.1, dtype=torch.float64)
print(
    f"uniform over 10: ‖J‖₂ = {ch03.jacobian_spectral(u):.4f} = 1/10, "
    f"‖J‖_F = {ch03.jacobian_frobenius(u):.4f} = √9/10"
)
assert torch.allclose(J, auto) and ch03.jacobian_spectral(w).max() < 0.5
assert abs(ch03.jacobian_spectral(half) - 0.5) < 1e-12 and ch03.jacobian_spectral(tie) < 0.45

# %% [markdown] slideshow={"slide_type": "-"}
# Now the running example. The norms of J for *it* and *sat* as T goes from cold to hot:

# %% slideshow={"slide_type": "subslide"}
# NBVAL_CHECK_OUTPUT
temps = torch.logspace(-2, 2, 200, dtype=torch.float64)  # (200,)
fig, ax = plt.subplots(figsize=(7, 3))
for word, row, color in (("it", it, "tab:blue"), ("sat", sat, "tab:orange")):
    w = softmax(scores[row] / temps[:, None])  # (200, 10): the row's weights at each T
    ax.semilogx(temps, ch03.jacobian_spectral(w), color=color, label=f"'{word}': ‖J‖₂")
    ax.semilogx(temps, ch03.jacobian_frobenius(w), color=color, ls="--", label=f"'{word}': ‖J‖_F")
    print(
        f"'{word}': ‖J‖₂ = {ch03.jacobian_spectral(w[0]):.4f} at T = 0.01, "
        f"{ch03.jacobian_spectral(w[-1]):.4f} at T = 100 (uniform: 0.1000)"
    )
ax.axhline(0.5, ls=":", c="k", lw=1)
ax.set(xlabel="temperature T", ylabel="norm of diag(α) − ααᵀ", title="the gradient through softmax")
ax.legend(fontsize=8)
plt.tight_layout()
plt.show()

# %% [markdown] slideshow={"slide_type": "-"}
# Hot, both rows tend to the uniform values 1/10 and √9/10 ≈ 0.3. Cold, *it* saturates and its
# Jacobian vanishes: the loss can no longer move its scores. *sat*'s climbs to ½, the tie limit.
# (These are norms of J, the Jacobian with respect to s/T; with respect to s itself divide by T,
# so a very hot softmax passes little gradient too.)
#
# This is why chapter 01 divides scores by √d_k: for independent unit-variance components q·k
# has variance $d_k$ (Vaswani et al. 2017, footnote 4; chapter 01, section 5), so unscaled
# scores of a head of width $d_k$ behave like a temperature of $1/\sqrt{d_k}$. Below, 200 random
# queries over 64 random keys, unscaled and scaled (two seeds; `ch03.dot_product_statistics`).

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
header = (
    f"{'unscaled: max α':>15} {'H':>5} {'‖J‖_F':>6} | {'scaled: max α':>13} {'H':>5} {'‖J‖_F':>6}"
)
print(f"{'seed':>4} {'d_k':>5} | {header}")
for seed in (0, 1):
    g = torch.Generator().manual_seed(seed)
    for d_k in (4, 16, 64, 256, 1024):
        r = ch03.dot_product_statistics(d_k, generator=g)
        raw, fit = r["unscaled"], r["scaled"]
        print(
            f"{seed:>4} {d_k:>5} | {raw['max_weight']:>15.2f} {raw['entropy']:>5.2f} "
            f"{raw['jacobian']:>6.3f} | {fit['max_weight']:>13.2f} {fit['entropy']:>5.2f} "
            f"{fit['jacobian']:>6.3f}"
        )
        assert fit["entropy"] > 3.0, "the scaled softmax should stay diffuse"
        if d_k >= 256:
            assert raw["max_weight"] > 0.85 and raw["jacobian"] < fit["jacobian"]
print(f"log 64 = {math.log(64):.2f}")

# %% [markdown] slideshow={"slide_type": "-"}
# Unscaled, the largest weight tends to 1, the entropy to 0 and the Jacobian to 0 as $d_k$
# grows; scaled, all three stay put.
#
# **Takeaway.** The gradient through softmax is $(\mathrm{diag}(\alpha) - \alpha\alpha^\top)/T$; it
# vanishes as attention saturates, so a too-sharp softmax stops learning. Dividing by √d_k keeps
# random scores out of saturation.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 5. Spread-out scores and the entropy: a lower bound
#
# What does it take to make attention sharp? Say a query's scores span a range
# $\Delta s = \max_i s_i - \min_i s_i$. How low can its entropy be?
#
# > **⚠ The source says** $H(\alpha) \le \log n - (\Delta s)^2/8$ (Thm. 14.3.5, Eq. 14.3.18): an
# > **upper** bound. Take n = 2 and s = (0, 3): H = 0.191 nats, but log 2 − 9/8 = −0.432, and no
# > entropy is negative. The inequality holds the **other way round**, for every score vector,
# > with equality only when all scores are equal:
# >
# > $$H(\alpha) \;\ge\; \log n - \frac{(\Delta s)^2}{8}.$$
#
# **Proof.** Let u be the uniform distribution. Then $\mathrm{KL}(\alpha\,\|\,u) = \sum_i \alpha_i\log(n\alpha_i) = \log n - H(\alpha)$,
# so we need KL ≤ (Δs)²/8. Write $\psi(\lambda) = \log \frac1n\sum_j e^{\lambda s_j}$, so ψ(0) = 0. By the
# calculation of section 3 (with λ in the place of β = 1/T), $\psi'(\lambda)$ is the mean and
# $\psi''(\lambda)$ the variance of s under softmax(λs). For α = softmax(s),
# $\mathrm{KL}(\alpha\,\|\,u) = \mathbb{E}_\alpha[s] - \psi(1) = \psi'(1) - \psi(1) = \int_0^1 \lambda\,\psi''(\lambda)\,d\lambda$,
# since $\frac{d}{d\lambda}(\lambda\psi' - \psi) = \lambda\psi''$. A distribution on an interval of length Δs has variance
# at most (Δs)²/4 (section 4 used the same fact), so $\mathrm{KL} \le \frac{(\Delta s)^2}{4}\int_0^1\lambda\,d\lambda = \frac{(\Delta s)^2}{8}$.
# This is **Hoeffding's lemma** in disguise.
#
# *Reading it.* Small score differences **guarantee** high entropy; large ones **allow** low
# entropy without forcing it (the third example below). For a query's entropy to fall below h,
# its score range must reach $\sqrt{8(\log n - h)}$.
#
# > **Glossary** · score range 分数差异 Δs · lower / upper bound 下界 / 上界 · Hoeffding's lemma
# > 霍夫丁引理 · counterexample 反例 · tight bound 紧界

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
for s in ([0.0, 3.0], [0.0, 1.0], [3.0, -3.0] + [0.0] * 62):
    s = torch.tensor(s, dtype=torch.float64)
    h, bound = attention_entropy(softmax(s)), math.log(len(s)) - (s.max() - s.min()) ** 2 / 8
    print(
        f"n = {len(s):2d}, Δs = {s.max() - s.min():.0f}: H = {h:.4f}, log n − (Δs)²/8 = "
        f"{bound:.4f}  ->  printed 'H <=' {'holds' if h <= bound else 'FAILS'}, "
        f"corrected 'H >=' {'holds' if h >= bound else 'FAILS'}"
    )

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 4 · The entropy lower bound
# **Difficulty** ●○○ · **Time** 6 min · **Points** 2 · **Practises** the corrected
# Eq. (14.3.18), reductions over the last dimension
#
# Write `my_hoeffding_bound(scores)`: scores (..., n) → the lower bound log n − (Δs)²/8 on
# H(softmax(s)), shape (...), one bound per score vector (each slice along the last dimension),
# in nats, same dtype. n is the size of the last dimension and Δs the range of each slice. Check
# your function with a number before you run the check: for s = (0, 3) the bound must lie below
# the true entropy 0.1909. Float64 scores are checked to float64's precision: make constants
# Python floats (`math.log`) or tensors of the scores' dtype, not `torch.tensor(...)` without a
# dtype (float32). The check refuses the course's package.


# %% nbgrader={"grade": false, "grade_id": "ch03_hoeffding_bound", "locked": false, "schema_version": 3, "solution": true} slideshow={"slide_type": "skip"}
def my_hoeffding_bound(scores):
    """scores (..., n) -> (...) the corrected lower bound on H(softmax(s)), in nats."""
    ### BEGIN SOLUTION
    spread = scores.amax(dim=-1) - scores.amin(dim=-1)  # (...)
    return math.log(scores.shape[-1]) - spread**2 / 8  # (...)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch03_hoeffding_bound_test", "locked": true, "points": 2, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"} tags=["raises-exception"]
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

# %% [markdown] slideshow={"slide_type": "-"}
# 20 000 random score vectors over 8 keys, their distance from uniform $\log n - H$ against their
# score range, and the bound $(\Delta s)^2/8$ (`ch03.hoeffding_entropy_bound`): every point lies
# below the green curve. Random vectors stay well below it; that 1/8 cannot be improved shows on
# vectors with half their scores at each end of the range (the appendix, A.4).

# %% slideshow={"slide_type": "subslide"}
# NBVAL_CHECK_OUTPUT
g = torch.Generator().manual_seed(1)
s = torch.randn(20_000, 8, dtype=torch.float64, generator=g)
s = s * torch.rand(20_000, 1, dtype=torch.float64, generator=g) * 3  # (20000, 8), many ranges
gap, spread = math.log(8) - ch03.entropy_of_scores(s), ch03.score_range(s)  # (20000,) each
below = bool((ch03.entropy_of_scores(s) >= ch03.hoeffding_entropy_bound(s) - 1e-12).all())
print("H >= log 8 − (Δs)²/8 for all 20000:", below)
grid = torch.linspace(0, float(spread.max()), 200, dtype=torch.float64)
fig, ax = plt.subplots(figsize=(7, 3.2))
ax.scatter(spread, gap, s=2, alpha=0.3, label="log n − H for 20000 random score vectors (n = 8)")
ax.plot(grid, grid**2 / 8, c="tab:green", label="(Δs)²/8: the bound")
ax.axhline(math.log(8), ls="--", c="k", lw=1, label="log 8: the largest possible gap")
ax.set(
    xlabel="score range Δs", ylabel="log n − H (nats)", ylim=(0, 2.6), title="H ≥ log n − (Δs)²/8"
)
ax.legend(fontsize=7, loc="upper left")
plt.tight_layout()
plt.show()
assert below

# %% [markdown] slideshow={"slide_type": "-"}
# **Play with it.** One query over n keys drawn from N(0, I) in $d_k$ dimensions (**score seed**
# picks the draw); **scores** picks random keys, one key equal to q, or two (a tie). Left: the
# weights; middle: H against T (blue), the current T (red), this section's bound (green) and
# log n; right: ‖J‖_F against T. Try:
# 1. Switch **divide by √d_k** off and raise $d_k$: the weights saturate, H falls, ‖J‖_F drops
#    (section 4). Switch it back on: with random keys the spread no longer grows with $d_k$. With
#    **one key = q** it still does, like √d_k: the scale tames products of independent vectors,
#    not of aligned ones.
# 2. **two keys = q (tie)** at T = 0.01: H stops at log 2 and ‖J‖_F at ½ (sections 3 and 4) —
#    with d_k ≥ 32; with fewer dimensions a random key can outscore ‖q‖² and win alone.
# 3. Watch the blue curve: it always rises (section 3) and never dips below the green one.
# 4. n = 128 at a large T: ‖J‖_F → √127/128 ≈ 0.088 — a uniform softmax passes little
#    gradient too.

# %% slideshow={"slide_type": "slide"}
# NBVAL_IGNORE_OUTPUT
ch03.entropy_widget(pattern="random q·k", temperature=1.0, d_k=64, n=16)

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Takeaway.** $H \ge \log n - (\Delta s)^2/8$: small score ranges guarantee spread-out
# attention, and sharp attention needs a large score range.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 6. Temperature schedules
#
# One fixed temperature serves all of training. A **schedule** changes it as training goes: start
# hot — spread-out attention, whose Jacobian passes gradient to every score (section 4) — and
# cool down to sharp choices once the scores mean something. The source's schedule
# (Application 14.3.2) follows half a period of a cosine over N steps, from $T_0$ at t = 0 to
# $T_{\min}$ at t = N: flat at both ends, steepest in the middle. It is the cosine annealing that
# SGDR applies to learning rates (Loshchilov & Hutter 2017), applied to T. (The appendix runs the
# source's pseudocode as printed: it never uses $T_0$.)
#
# > **Glossary** · temperature schedule 温度调度 · cosine annealing 余弦退火 · warm-up / cool-down
# > 升温 / 降温 · exploration / exploitation 探索 / 利用

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 5 · A cosine temperature schedule
# **Difficulty** ●○○ · **Time** 8 min · **Points** 2 · **Practises** Application 14.3.2, fitting
# a curve to its two end conditions
#
# Write `my_cosine_temperature(steps, total_steps, t_start, t_min)`: a float tensor of steps t
# in [0, N] (shape (K,)), N, $T_0$ and $T_{\min}$ → the temperatures $T_t = a + b\cos(\pi t / N)$,
# same shape and dtype, with $T(0) = T_0$ and $T(N) = T_{\min}$. Find a and b from those two
# conditions, and check your answer with a number: halfway, T(N/2) must be the mean of $T_0$ and
# $T_{\min}$. It must also work when $T_0 < T_{\min}$ (a warming schedule). Use `torch.cos`
# (`math.cos` takes a single number). Float64 steps are checked to float64's precision: make
# constants Python floats (`math.pi`) or tensors of the steps' dtype, not `torch.tensor(...)`
# without a dtype (float32). The check refuses the course's package, the chapter's
# `cosine_temperature` among it.


# %% nbgrader={"grade": false, "grade_id": "ch03_cosine_schedule", "locked": false, "schema_version": 3, "solution": true} slideshow={"slide_type": "skip"}
def my_cosine_temperature(steps, total_steps, t_start, t_min):
    """steps (K,) of t in [0, N] -> (K,) temperatures of the cosine schedule, t_start to t_min."""
    ### BEGIN SOLUTION
    return t_min + (t_start - t_min) * (1 + torch.cos(math.pi * steps / total_steps)) / 2  # (K,)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch03_cosine_schedule_test", "locked": true, "points": 2, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"} tags=["raises-exception"]
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

# %% [markdown] slideshow={"slide_type": "-"}
# The two conditions give $a = (T_0 + T_{\min})/2$ and $b = (T_0 - T_{\min})/2$:
#
# $$T_t = T_{\min} + (T_0 - T_{\min})\,\frac{1 + \cos(\pi t / N)}{2}, \qquad t = 0, 1, \dots, N.$$
#
# Below, the schedule from $T_0$ = 5 to $T_{\min}$ = 0.2 over 100 steps, and what it does to
# *it*'s attention.

# %% slideshow={"slide_type": "subslide"}
# NBVAL_CHECK_OUTPUT
steps = torch.arange(101, dtype=torch.float64)  # t = 0 ... N, N = 100
schedule = ch03.cosine_temperature(steps, 100, 5.0, 0.2)  # (101,)
H_it = ch03.entropy_curve(scores[it], schedule)  # (101,) the entropy of 'it' along the schedule
print(f"T: {schedule[0]:.2f} -> {schedule[50]:.2f} -> {schedule[-1]:.2f} at t = 0, 50, 100")
print(f"H of 'it': {H_it[0]:.3f} -> {H_it[50]:.3f} -> {H_it[-1]:.3f} nats (log 10 = 2.303)")
fig, ax = plt.subplots(1, 2, figsize=(9, 3))
ax[0].plot(steps, schedule)
ax[0].set(xlabel="step t", ylabel="temperature T_t", title="cosine schedule, 5 → 0.2")
ax[1].plot(steps, H_it)
ax[1].set(xlabel="step t", ylabel="H (nats)", title="entropy of 'it' along it")
plt.tight_layout()
plt.show()
assert (schedule.diff() < 0).all() and (H_it.diff() < 0).all()

# %% [markdown] slideshow={"slide_type": "-"}
# By section 3 the entropy follows the temperature down: *it* starts reading almost every word
# and ends reading *cat*.
#
# **Takeaway.** A cosine schedule cools T smoothly from $T_0$ to $T_{\min}$, slowly at both ends;
# the entropy follows it.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 7. Entropy collapse, and σReparam against it
#
# Dividing by √d_k sets the scale of the scores **at initialisation**; training then moves
# $W_Q$ and $W_K$ freely. Zhai et al. (2023, "Stabilizing Transformer Training by Preventing
# Attention Entropy Collapse") observed that unstable Transformer training goes together with
# **attention entropy collapse**: the entropy of some layer's attention falls close to 0 — each
# query reads one or two keys — and the training loss oscillates or diverges. Section 5 says what
# must happen first: over n = 33 keys, an entropy below 1 nat needs a score range of at least
# $\sqrt{8(\log 33 - 1)} \approx 4.5$. In the model below, every token vector is normalised —
# rescaled to mean 0 and variance 1 over its features — before it enters attention (chapter 08
# calls this LayerNorm), so its scores can grow only if the projections $W_Q$, $W_K$ (with their
# biases) or the normalisation's learned scale grow.
#
# Their remedy, **σReparam**, uses every weight matrix W as
#
# $$\hat W = \frac{\gamma}{\sigma(W)}\,W,$$
#
# with σ(W) the largest singular value of W and γ a learned number. The largest singular value of
# $\hat W$ is then γ: one number, which Adam moves by about one learning rate per step, instead
# of the many entries of W moving together. σ(W) is estimated by **power iteration**, one step
# per training step, carrying u and v over from the step before:

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
g = torch.Generator().manual_seed(0)
W = torch.randn(32, 32, dtype=torch.float64, generator=g)  # (32, 32)
u = torch.randn(32, dtype=torch.float64, generator=g)  # (32,)
for _ in range(200):  # v <- Wᵀu / |Wᵀu|, u <- Wv / |Wv|: both turn towards the top singular pair
    v = W.T @ u
    v = v / v.norm()
    u = W @ v
    u = u / u.norm()
print(f"power iteration: σ(W) ≈ uᵀWv = {u @ W @ v:.4f}")
print(f"largest singular value       = {torch.linalg.matrix_norm(W, ord=2):.4f}")

# %% [markdown] slideshow={"slide_type": "-"}
# **The task**, chosen so that spread-out attention is the right answer: a CLS token followed by
# 32 random bits; say whether ones are the majority. The answer is read at the CLS position, so
# the count must travel through attention, and uniform attention over the bits returns exactly
# the fraction of ones.
#
# **The model** (CPU-sized): 2 Transformer layers — attention, then a small feed-forward
# network, each added back to its input (chapters 08–09 take these pieces apart) — with
# d = 32, one head, feed-forward width 64; Adam at learning rate 2 × 10⁻², no warm-up, batches of
# 64, 120 steps. A run takes seconds. The baseline has plain weights; the other run wraps every
# weight matrix in σReparam (`attncourse.reparam.sigma_reparam`).
#
# **What to expect.** In this toy a collapsed baseline reads a few bits, which say little about
# the majority of 32, so its loss stays near chance, log 2 ≈ 0.69 — this course's result at CPU
# scale, not the paper's (Zhai et al. report oscillating loss or divergence). σReparam should
# keep the entropy high and learn the task.
#
# > **Glossary** · entropy collapse 熵坍缩 · spectral norm 谱范数 · singular value 奇异值 ·
# > power iteration 幂迭代 · reparametrisation 重参数化 · majority 多数表决

# %% slideshow={"slide_type": "-"}
# NBVAL_IGNORE_OUTPUT
models = []  # the trained models, for the appendix
runs = {
    name: ch03.train_majority(reparam, seed=0, model_out=models)
    for name, reparam in (("baseline", False), ("σReparam", True))
}
for name, r in runs.items():
    print(
        f"{name:9s}: loss {r.eval_loss:.3f}, accuracy {r.eval_accuracy:.3f}, layer entropies "
        f"{[round(h, 2) for h in r.eval_entropies]} (log 33 = {math.log(33):.2f}), "
        f"‖W_Q W_Kᵀ‖₂/√d_k {[round(x, 2) for x in r.qk_norms]}"
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
    f"baseline: smallest layer entropy < 1 nat and loss > 0.4 (collapsed, near chance): {collapsed}"
)
print(f"σReparam: smallest layer entropy > 2 nats and loss < 0.1 (task learned)         : {kept}")
assert collapsed, f"expected a collapse: min H {base.min_entropy:.2f}, loss {base.eval_loss:.3f}"
assert kept, (
    f"expected σReparam to keep entropy: min H {reparam.min_entropy:.2f}, "
    f"loss {reparam.eval_loss:.3f}"
)

# %% [markdown] slideshow={"slide_type": "-"}
# The baseline's entropy falls steadily, to about 1 nat, and its loss never leaves chance;
# σReparam's attention stays near uniform and, after a few dozen steps at chance, its loss falls
# towards 0. The asserts leave margins (baseline below 1 nat and loss above 0.4; σReparam above
# 2 nats and loss below 0.1). Over seeds 0–5, when this was written, the baseline's smallest
# layer entropy ended between about 0.1 and 0.8 nats (seed 0, run here, the highest) with loss
# 0.64–0.73, σReparam's at 2.7 nats or more with loss below 0.09. At learning rate 3 × 10⁻³ the
# baseline learns without collapsing: the collapse comes with fast training.
#
# **Takeaway.** Attention can collapse during training even with the √d_k scale; σReparam ties
# each weight's largest singular value to one learned number that moves slowly, so the score
# range cannot race ahead, and — by section 5 — the entropy stays up.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Summary
#
# - A **temperature** divides the scores (Eq. 14.3.20): the ranking stays, its sharpness changes.
# - softmax(s/T) is a **Gibbs distribution**: it maximises expected score + T × entropy.
# - The entropy **rises strictly with T**, from log(number of tied maxima) at T → 0 — not always
#   0 — to log n at T → ∞.
# - The softmax Jacobian $\mathrm{diag}(\alpha) - \alpha\alpha^\top$ vanishes when attention
#   **saturates** and never exceeds ½ in norm; √d_k keeps random scores out of saturation.
# - The entropy is bounded **from below**, $H \ge \log n - (\Delta s)^2/8$ — not from above, as
#   printed in the source.
# - A **cosine schedule** cools T smoothly from $T_0$ to $T_{\min}$; the entropy follows.
# - Training can still **collapse** attention entropy (Zhai et al. 2023); **σReparam** ties the
#   weights' spectral norms to slowly moving learned numbers, so the scores cannot grow fast, and
#   keeps the entropy up.

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Check yourself**
#
# 1. A query has scores (2, 2, 0). What are its weights and entropy as T → 0, and as T → ∞?
# 2. Does dividing the scores by a temperature ever change which key gets the largest weight?
# 3. Why does a query whose softmax is one-hot stop learning where to look?
# 4. A query over 16 keys has all its scores within a range of 1. What can you say about its
#    entropy?
# 5. Why does tying the largest singular value of every weight matrix to one slowly moving
#    number keep attention entropy up?
#
# <details><summary>Answers</summary>
#
# 1. T → 0: (½, ½, 0), entropy log 2 (a tie is never broken). T → ∞: (⅓, ⅓, ⅓), entropy log 3.
# 2. Never: dividing by T > 0 keeps the order of the scores, and `exp` is increasing.
# 3. At a one-hot α the Jacobian diag(α) − ααᵀ is 0, so no gradient reaches its scores: the loss
#    cannot move them, and the pattern is frozen.
# 4. H ≥ log 16 − 1/8 ≈ 2.65 nats, close to the maximum log 16 ≈ 2.77.
# 5. With normalised inputs, the scores are bounded through the spectral norms of $W_Q$ and
#    $W_K$, which can then grow only as fast as their γ; a bounded score range bounds log n − H by
#    (Δs)²/8 (section 5).
# </details>
#
# **Next — chapter 04, RNN vs attention: gradient paths**: how far gradients travel through a
# recurrent network compared with the one-step paths of self-attention, and what that means for
# long-range dependencies.

# %% [markdown] slideshow={"slide_type": "skip"}
# ## Appendix · The source, checked
#
# Source 000, §14.3.3 states the ideas above as definitions, lemmas, theorems and one
# application, and source 001's Eq. (5.4.6) defines the entropy of a row of attention. This
# appendix checks each claim numerically. Marks: **✓ holds** · **⚠ holds only under a
# condition** (stated) · **✗ wrong as printed** (with a counterexample and the correct
# statement) · **→ ch. NN** checked in that chapter, which owns the claim.
#
# ### A.1 Softmax attention and equal scores (Def. 14.3.7, Lemma 14.3.9)
#
# **Claim check — Def. 14.3.7 ✓.** α = softmax(qᵀk_i/√d_k) (Eq. 14.3.14) is a definition; the
# package's attention returns exactly these weights.
#
# **Claim check — Lemma 14.3.9 ✓**, with its converse. Equal scores give uniform weights, the
# distribution of largest entropy (Eq. 14.3.15). Conversely, softmax is one-to-one up to a
# shift, $s_i - s_j = \log\alpha_i - \log\alpha_j$, so **uniform weights happen only when all scores
# are equal**, and the score range can be read back from the weights:
# $\Delta s = \log(\max_i\alpha_i / \min_i\alpha_i)$ (A.4 uses it on the trained models).

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
from attncourse.attention import scaled_dot_product_attention

g = torch.Generator().manual_seed(0)
q, k, v = (torch.randn(4, 8, dtype=torch.float64, generator=g) for _ in range(3))
_, weights = scaled_dot_product_attention(q, k, v)  # (4, 4)
print(
    "package weights = softmax(q kᵀ / √d_k):",
    torch.allclose(weights, softmax(q @ k.T / math.sqrt(8))),
)
s_equal = torch.full((5,), 2.7, dtype=torch.float64)
print(
    "equal scores -> α =",
    [round(a, 4) for a in softmax(s_equal).tolist()],
    f" H = {attention_entropy(softmax(s_equal)):.4f} = log 5 = {math.log(5):.4f}",
)
s = torch.tensor([1.2, -0.4, 0.3, 2.0, -1.1], dtype=torch.float64)
alpha = softmax(s)
print(
    f"Δs = {ch03.score_range(s):.4f};  read back from the weights: log(max α / min α) = "
    f"{ch03.score_range_from_weights(alpha):.4f}"
)
assert torch.allclose(torch.log(alpha) - torch.log(alpha[0]), s - s[0])

# %% [markdown] slideshow={"slide_type": "skip"}
# ### A.2 Softmax is a Gibbs distribution (Lemma 14.3.10)
#
# **Claim check — Lemma 14.3.10 ✓.** With energies $E_i = -s_i$ and T = 1, Eq. (14.3.16) is
# softmax — an identity (checked in section 2 for T = 0.25, 1 and 4). Its content is the
# variational principle of section 2: no distribution beats softmax(s/T) on "expected score + T ×
# entropy", and any other falls short by exactly T·KL. Equivalently, softmax(s/T) is the
# maximum-entropy distribution with its expected score.
#
# ### A.3 The entropy and its range (Def. 14.3.8, Lemma 14.3.11; source 001, Eq. 5.4.6)
#
# **Claim check — Def. 14.3.8 ✓.** Eq. (14.3.17) is the entropy of one query's weights, chapter
# 01's Eq. (14.3.3); source 001's Eq. (5.4.6) is the same quantity for row i of an attention
# matrix.
#
# **Claim check — Lemma 14.3.11 ✓ the closed range [0, log n]** — the same claim as chapter 01's
# Lemma 14.3.2, with the same verdict. Both bounds hold for every distribution over n positions
# and are attained: log n by uniform weights, 0 by one-hot weights. For the weights that softmax
# makes of **finite** scores there is a condition on attaining them, not on the range: log n is
# attained exactly when all scores are equal (A.1), while 0 is only approached as Δs → ∞, since
# every softmax weight is positive. In floating point it is reached when the small weights
# *underflow* to 0 — a rounding artefact.
#
# **Claim check — Eq. 5.4.6 ✓ the closed range [0, log n].** Source 001 says the same of a row of
# attention: largest entropy log n for uniform weights, smallest 0 for weights on one position.

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
for n in (2, 8, 64):
    w = softmax(torch.randn(20_000, n, dtype=torch.float64) * 4)  # (20000, n) softmax weights
    h = attention_entropy(w)
    inside = bool((h > 0).all() and (h <= math.log(n) + 1e-12).all())
    print(f"n = {n:2d}: 20000 softmax rows, all with 0 < H <= log n = {math.log(n):.4f}: {inside}")
one_hot = torch.eye(4, dtype=torch.float64)[2]
uniform = torch.full((4,), 0.25, dtype=torch.float64)
h_one_hot, h_uniform = attention_entropy(one_hot), attention_entropy(uniform)
print(f"one-hot weights: H = {h_one_hot:.1f};  uniform over 4: H = {h_uniform:.4f} = log 4")
s_far = torch.tensor([0.0, 200.0])
print(
    f"scores (0, 200): H = {attention_entropy(softmax(s_far.double())):.3e} in float64, "
    f"{attention_entropy(softmax(s_far)):.1f} in float32 (exp(-200) underflows to 0)"
)

# %% [markdown] slideshow={"slide_type": "skip"}
# ### A.4 The entropy bound (Thm. 14.3.5, Eq. 14.3.18)
#
# **Claim check — Thm. 14.3.5 ✗ wrong as printed.** Section 5 gave the counterexample, the
# correct lower bound $H \ge \log n - (\Delta s)^2/8$ and its proof. Here the printed upper bound
# is tried on 300 000 random score vectors of three distributions and five scales: it fails on
# every one whose slack is above float64 rounding, and the lower bound holds on all.

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
g = torch.Generator().manual_seed(0)
scales = torch.tensor([0.1, 0.5, 1.0, 2.0, 5.0], dtype=torch.float64).repeat_interleave(4000)
scales = scales[:, None]  # (20000, 1)
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
    h, bound = ch03.entropy_of_scores(s), ch03.hoeffding_entropy_bound(s)
    total += len(s)
    printed_fails += int((h > bound + 1e-12).sum())
    unresolved += int(((h - bound).abs() <= 1e-12).sum())  # slack ~ (Δs)^4: below rounding
    min_slack = min(min_slack, float((h - bound).min()))
print(f"{total} random score vectors (n = 2…128, 3 distributions, 5 scales):")
print(f"  printed upper bound H <= log n − (Δs)²/8 violated by {printed_fails}; the other")
print(f"  {unresolved} have H − bound < 1e-12 (tiny Δs), below float64 rounding")
print(f"  lower bound H >= log n − (Δs)²/8 on all of them: {min_slack > -1e-12}")
assert printed_fails + unresolved == total and min_slack > -1e-12

# %% [markdown] slideshow={"slide_type": "skip"}
# **Tightness.** The constant 1/8 cannot be improved: for n = 2 and s = (−Δ/2, Δ/2) the variance
# in the proof starts at exactly (Δs)²/4 (two equally likely points at the ends of the interval),
# so KL/((Δs)²/8) → 1 as Δs → 0; so it does for any even n with half the scores at each end.
# **No upper bound** of the form log n − f(Δs) with f > 0 can hold either: with
# s = (Δ/2, −Δ/2, 0, …, 0) the gap log n − H tends to 0 as n grows, at any fixed Δs.

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
deltas = torch.tensor([2.0, 1.0, 0.5, 0.1, 0.01], dtype=torch.float64)
for n in (2, 8):
    half = torch.cat([torch.full((n // 2,), -0.5), torch.full((n // 2,), 0.5)]).double()
    ratio = ch03.kl_to_uniform(softmax(deltas[:, None] * half[None])) / (deltas**2 / 8)  # (5,)
    print(
        f"n = {n}, half the scores at each end: KL / ((Δs)²/8) at Δs = {deltas.tolist()}: "
        f"{[round(r, 4) for r in ratio.tolist()]}"
    )
    assert (ratio < 1).all() and ratio[-1] > 0.9999
for n in (64, 4096):
    s_n = torch.zeros(n, dtype=torch.float64)
    s_n[0], s_n[1] = 3.0, -3.0  # Δs = 6: the printed bound would demand log n − H >= 4.5
    print(
        f"n = {n}, s = (3, −3, 0, …): log n − H = {math.log(n) - ch03.entropy_of_scores(s_n):.4f}"
    )

# %% [markdown] slideshow={"slide_type": "skip"}
# **In the trained models.** The corrected bound holds row by row in section 7's models too.
# From the weights alone each row's score range is $\Delta s = \log(\max\alpha/\min\alpha)$ (A.1),
# so every row can be held against $H \ge \log n - (\Delta s)^2/8$: collapsed rows have a large Δs
# (the bound says little), σReparam's rows a small one (the bound *guarantees* their entropy).

# %% slideshow={"slide_type": "skip"}
# NBVAL_IGNORE_OUTPUT
tokens, _ = ch03.majority_batch(256, generator=torch.Generator().manual_seed(5))  # (256, 33)
bound_holds = {}
for name, model in zip(runs, models):
    with torch.no_grad():
        _, weights = model(tokens)  # one (256, 1, 33, 33) per layer
    w = torch.stack(weights).double()  # (layers, 256, 1, 33, 33)
    h, ds = attention_entropy(w), ch03.score_range_from_weights(w)  # (layers, 256, 1, 33) each
    bound = math.log(33) - ds**2 / 8
    bound_holds[name] = bool((h >= bound - 1e-5).all())  # float32 weights: allow rounding
    median_ds = [round(float(x), 1) for x in ds.flatten(1).median(1).values]
    mean_h = [round(float(x), 2) for x in h.flatten(1).mean(1)]
    print(f"{name:9s}: per layer, median Δs = {median_ds}, mean H = {mean_h}")

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
print(
    "H >= log 33 − (Δs)²/8 on every attention row of both trained models:",
    all(bound_holds.values()),
)
assert all(bound_holds.values())

# %% [markdown] slideshow={"slide_type": "skip"}
# ### A.5 The √d_k scale (Cor. 14.3.3, Eq. 14.3.19)
#
# **Claim check — Cor. 14.3.3 ✓ / ⚠.** "The factor 1/√d_k prevents the low entropy that large
# score differences would cause when d_k is large." At initialisation, with independent mean-0,
# variance-1 components, ✓: the scale keeps the scores at variance 1, and section 4's table shows
# the scaled softmax neither saturating nor losing its gradient as $d_k$ grows. That variance,
# var(q·k) = d_k (Lemma 14.3.3, Eq. 14.3.4; Vaswani et al.'s footnote 4), is chapter 01's claim,
# reproduced there. ⚠ Nothing keeps **trained** queries and keys at variance 1: section 7's
# baseline collapsed with the scale in place, its $\|W_Q W_K^\top\|_2/\sqrt{d_k}$ grown far beyond
# σReparam's.

# %% slideshow={"slide_type": "skip"}
# NBVAL_IGNORE_OUTPUT
print("‖W_Q W_Kᵀ‖₂ / √d_k per layer after training:")
for name, r in runs.items():
    print(f"  {name:9s}: {[round(x, 2) for x in r.qk_norms]}")
assert max(runs["baseline"].qk_norms) > 10 * max(runs["σReparam"].qk_norms)

# %% [markdown] slideshow={"slide_type": "skip"}
# ### A.6 Temperature (Def. 14.3.9, Lemma 14.3.12, Thm. 14.3.6)
#
# **Claim check — Def. 14.3.9 ✓.** Eq. (14.3.20) is a definition; its Jacobian in the scores is
# $(\mathrm{diag}(\alpha) - \alpha\alpha^\top)/T$ (checked below against autograd).
#
# **Claim check — Lemma 14.3.12 ✓ / ⚠.** The entropy is monotone in T — strictly, unless all
# scores are equal, with dH/dT = Var_α(s)/T³ (section 3) — and T → ∞ gives log n ✓. T → 0 gives
# log m for the m positions tied at the largest score, which is 0 (one-hot) **only if the largest
# score is unique** ⚠. Below: three score vectors, from T = 0.001 to 1000.
#
# **Claim check — Thm. 14.3.6 ⚠** ("high T explores, low T exploits; high T prevents overfitting
# to a single position"): an interpretation, not a theorem; nothing in it can be proved or
# refuted. Its measurable part is Lemma 14.3.12 (high T, high entropy), and T never changes which
# position ranks first. Preventing overfitting is a hope about training, not a property of
# softmax; in section 7 a *low-entropy* solution was the failure and a high-entropy one the fix.

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
s = torch.tensor([1.0, 3.0, 2.5, -2.0, 0.0], dtype=torch.float64)
temperature = torch.tensor(0.7, dtype=torch.float64)
jac = torch.autograd.functional.jacobian(lambda v: softmax(v, temperature=temperature), s)  # (5, 5)
print(
    "∂softmax(s/T)/∂s = (diag(α) − ααᵀ)/T:",
    torch.allclose(jac, ch03.softmax_jacobian(softmax(s, temperature=temperature)) / temperature),
)
temps = torch.logspace(-3, 3, 601, dtype=torch.float64)
examples = {
    "distinct": s,
    "tie at the top": torch.tensor([1.0, 3.0, 3.0, -2.0, 0.0], dtype=torch.float64),
    "three-way tie": torch.tensor([3.0, 3.0, 3.0, -2.0, 0.0], dtype=torch.float64),
}
for name, example in examples.items():
    H = ch03.entropy_curve(example, temps)  # (601,)
    limit = float(ch03.zero_temperature_entropy(example))
    rising = bool((H.diff() >= 0).all())
    print(f"{name:15s}: H(T = 0.001) = {H[0]:.4f}, log m = {limit:.4f};  never decreases: {rising}")
    print(f"{'':15s}  H(T = 1000)  = {H[-1]:.4f}, log 5 = {math.log(5):.4f}")
    assert abs(H[0] - limit) < 1e-6 and abs(H[-1] - math.log(5)) < 1e-5 and (H.diff() >= 0).all()

# %% [markdown] slideshow={"slide_type": "skip"}
# ### A.7 The temperature schedule, run as printed and repaired (Application 14.3.2)
#
# The source's pseudocode, verbatim:
#
# ```
# 输入: 初始温度 T_0, 最小温度 T_min, 调度参数 k
# 输出: 温度序列 {T_t}
# for t = 1 to T do:
#     T_t = T_min + (T_0 - T_min) * (1 + cos(π * t / T)) / 2
#     yield T_t
# end for
# ```
#
# **Claim check — Application 14.3.2 ✓ / ⚠.** The formula ✓: $T_0$ at t = 0, $T_{\min}$ at t = N,
# monotone, point-symmetric about t = N/2, flat at both ends. The pseudocode ⚠ has three defects:
# 1. it writes the number of steps as **T**, the symbol of the temperature (`for t = 1 to T`,
#    `cos(π * t / T)`), so the formula reads as if it depended on the temperature;
# 2. its loop starts at **t = 1**, so $T_0$ is never used: the first temperature is already
#    $T_1 < T_0$ (run t = 0 … N, or use t − 1);
# 3. it takes a "schedule parameter k" that nothing uses.
#
# Below, the pseudocode transcribed line by line (the step count N in the place of its T), and
# repaired.


# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
def printed_schedule(t_0, t_min, k, N):
    """The source's pseudocode as printed: t = 1 … N (its 'T'); k is never used."""
    for t in range(1, N + 1):
        yield t_min + (t_0 - t_min) * (1 + math.cos(math.pi * t / N)) / 2


def repaired_schedule(t_0, t_min, N):
    """The same formula from t = 0: T_0 first, T_min last, N + 1 temperatures."""
    for t in range(N + 1):
        yield t_min + (t_0 - t_min) * (1 + math.cos(math.pi * t / N)) / 2


printed, repaired = (
    list(printed_schedule(5.0, 0.2, None, 100)),
    list(repaired_schedule(5.0, 0.2, 100)),
)
print(
    f"as printed: {len(printed)} temperatures, the first {printed[0]:.4f} (not T_0 = 5), ", end=""
)
print(f"the last {printed[-1]:.4f}")
print(f"repaired  : {len(repaired)} temperatures, the first {repaired[0]:.4f}, ", end="")
print(f"the last {repaired[-1]:.4f}")
schedule = ch03.cosine_temperature(torch.arange(101, dtype=torch.float64), 100, 5.0, 0.2)
same = torch.allclose(schedule, torch.tensor(repaired, dtype=torch.float64))
symmetric = torch.allclose(schedule + schedule.flip(0), torch.full_like(schedule, 5.2))
print(
    f"the course's cosine_temperature = the repaired loop: {same}; symmetric about N/2: {symmetric}"
)
assert torch.allclose(
    torch.tensor(printed), torch.tensor(ch03.source_cosine_schedule(5.0, 0.2, 100))
)
assert abs(printed[0] - 5.0) > 1e-3 and same and symmetric

# %% [markdown] slideshow={"slide_type": "skip"}
# ### A.8 Claim checks at a glance
#
# | source claim | verdict | correct statement / condition |
# |---|---|---|
# | Def. 14.3.7, Eq. (14.3.14): α = softmax(qᵀk/√d_k) | ✓ | a definition; equal to the package's attention weights (A.1) |
# | Lemma 14.3.9, Eq. (14.3.15): equal scores → uniform, max entropy | ✓ | and conversely: uniform only if all scores are equal (A.1) |
# | Lemma 14.3.10, Eq. (14.3.16): softmax = Gibbs distribution | ✓ | E_i = −s_i; softmax(s/T) maximises E_α[s] + T·H(α), the shortfall of any other α is T·KL (section 2, A.2) |
# | Def. 14.3.8, Eq. (14.3.17): attention entropy | ✓ | the entropy of one query's (one row's) weights; chapter 01's Eq. (14.3.3) (A.3) |
# | 001 Eq. (5.4.6): H(A_i), largest log n, smallest 0 | ✓ | the closed range [0, log n], the same claim as chapter 01's Lemma 14.3.2 (A.3) |
# | Lemma 14.3.11: 0 ≤ H ≤ log n | ✓ | the closed range [0, log n], the same claim as chapter 01's Lemma 14.3.2; softmax of finite scores attains log n iff the scores are equal and approaches 0 without reaching it (A.3) |
# | Thm. 14.3.5, Eq. (14.3.18): H ≤ log n − (Δs)²/8 | ✗ | false for every non-constant s; true: **H ≥ log n − (Δs)²/8** (Hoeffding), tight as Δs → 0 (section 5, A.4) |
# | Cor. 14.3.3, Eq. (14.3.19): 1/√d_k prevents low entropy | ✓ / ⚠ | at initialisation, for independent unit-variance components; training can still collapse (Zhai et al. 2023; sections 4 and 7, A.5) |
# | Lemma 14.3.3, Eq. (14.3.4): var(q·k) = d_k | → ch. 01 | see chapter 01, which reproduces Vaswani et al.'s footnote 4 |
# | Def. 14.3.9, Eq. (14.3.20): softmax(s/T) | ✓ | ∂softmax(s/T)/∂s = (diag(α) − ααᵀ)/T (A.6) |
# | Lemma 14.3.12: H monotone in T; limits | ✓ / ⚠ | dH/dT = Var_α(s)/T³ > 0 unless s is constant; T → 0 gives log(#tied maxima), one-hot only for a unique maximum (section 3, A.6) |
# | Thm. 14.3.6: high T explores, low T exploits | ⚠ | an interpretation; its measurable part is Lemma 14.3.12; T never changes the ranking (A.6) |
# | Application 14.3.2: cosine schedule | ✓ / ⚠ | formula right; pseudocode: step count named T, loop from t = 1 skips T_0, parameter k unused (section 6, A.7) |
#
# **Errata in one place.** Thm. 14.3.5 (Eq. 14.3.18) points the wrong way: the bound is a lower
# bound. Lemma 14.3.12's T → 0 limit is one-hot only for a unique largest score (log m for m
# ties). Application 14.3.2's pseudocode names the step count T, starts at t = 1 (skipping
# $T_0$) and takes an unused parameter k. Cor. 14.3.3 holds at initialisation only.
