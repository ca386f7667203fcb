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
# *注意力作为信息选择* — source 000, §14.3.1
#
# Read this sentence: *the cat sat on the mat because it was tired*. Which word does **it** stand
# for? You answered at once — *the cat*, because mats do not get tired — and to answer you read
# the other words **selectively**: *cat* and *tired* mattered, *the* and *on* did not. A network
# that wants a good vector for *it* has the same problem. Averaging every word's vector gives
# every word the same blurred summary of the sentence. This chapter builds, one piece at a time,
# the mechanism that chooses what to read instead: **attention**, a weighted average whose
# weights each word computes for itself.
#
# **After this chapter you can**
# - write attention as a weighted average of values whose weights are a softmax of scores;
# - measure how concentrated a query's attention is with its entropy;
# - explain what queries, keys and values are for, and why scores are divided by √d_k;
# - mask what a query may not read, and assemble your own self-attention layer that equals
#   PyTorch's.
#
# **Prerequisites**: chapter 00; matrix products, `exp` and `log`, what a probability
# distribution is; PyTorch at the level of `x @ y` and `x.sum(dim=-1)`.
#
# **Time**: main path about 85 min, appendix about 25 min (by `scripts/reading_time.py`: prose
# at 150 words a minute, code at 20 lines a minute, and each exercise's stated time).
#
# **How to read it.** Sections 1–7 are the main path: each asks a question, gives the idea,
# lets you build it in an exercise, then uses it. The **appendix** checks every claim the source
# makes about this topic — some hold, some hold only under a condition, some are wrong — and can
# be skipped on a first reading.

# %% slideshow={"slide_type": "skip"}
import math

import matplotlib.pyplot as plt
import numpy as np
import torch

from attncourse.attention import MultiHeadAttention, scaled_dot_product_attention, softmax
from attncourse.chapters import ch01_attention_as_selection as ch01
from attncourse.masks import causal_mask
from attncourse.metrics import attention_entropy

torch.manual_seed(0)
np.random.seed(0)
torch.set_num_threads(2)
torch.set_printoptions(precision=2, sci_mode=False)
plt.rcParams.update({"figure.dpi": 80, "figure.figsize": (7, 3)})

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 1. An average that chooses
#
# Our running example has ten words. To keep every number readable, each word gets a hand-made
# vector of six coordinates, one per *kind* of word: animal, thing, action, function word,
# pronoun, state. A real model learns such vectors (embeddings); ours are written by hand so you
# can see what each coordinate means.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
x = ch01.sentence_embeddings()  # (T=10, d_model=6): one row per word
print("features:", ch01.FEATURES)
for word, row in zip(ch01.SENTENCE, x.tolist()):
    print(f"{word:8s}", row)

# %% [markdown] slideshow={"slide_type": "-"}
# The simplest way to give each word some context is to replace it by the **average** of all
# words. Every word then gets the same vector — *it* learns that the sentence contains an animal,
# a thing, two actions, …, but not which of them *it* is. What we want is an average that
# **chooses**: for *it*, mostly *cat*.
#
# Source 000 writes this as its *information selection operator* (Def. 14.3.1): given vectors
# $x_1, \dots, x_n$ and weights $\alpha_1, \dots, \alpha_n$ with $\alpha_i \ge 0$ and
# $\sum_i \alpha_i = 1$,
#
# $$\mathrm{Attention}(X, \alpha) = \sum_{i=1}^{n} \alpha_i x_i \qquad (14.3.1)$$
#
# Equal weights $\alpha_i = 1/n$ give the plain average; all weight on one word copies that word.
# Because the weights are non-negative and sum to 1, the result always lies between the inputs
# (in their *convex hull*): attention mixes what is there, it never invents.
#
# > **Glossary** · weighted average 加权平均 · attention weight 注意力权重 · convex combination 凸组合 ·
# > information selection operator 信息选择算子

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
it = ch01.SENTENCE.index("it")
uniform = torch.full((10,), 1 / 10, dtype=torch.float64)  # (T,) every word weighs the same
chosen = torch.zeros(10, dtype=torch.float64)
chosen[ch01.SENTENCE.index("cat")], chosen[it] = 0.8, 0.2  # mostly "cat", a little of itself
print("plain average  :", sum(a * x_s for a, x_s in zip(uniform, x)).tolist())  # sum_s a_s x_s
print("chosen for it  :", sum(a * x_s for a, x_s in zip(chosen, x)).tolist())

# %% [markdown] slideshow={"slide_type": "-"}
# The chosen average carries *animal* (1.6) and *pronoun* (0.4): the new vector for *it* now
# says what *it* refers to. One query gives one row of weights; ten queries (one per word) give a
# (T, T) matrix of weights, one row per word reading, one column per word read. Row *t* of the
# outputs is $\sum_s \alpha_{ts} x_s$.

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 1 · All the weighted averages at once
# **Difficulty** ●○○ · **Time** 4 min · **Points** 1 · **Practises** Eq. (14.3.1) for every query
# at once, as one matrix product
#
# Write `my_weighted_average(weights, values)`: weights (T, S), each row a distribution over the
# S values, and values (S, d) → outputs (T, d), row *t* being $\sum_s$ `weights[t, s] * values[s]`.
# Keep the inputs' dtype. Any formulation is fine (a loop, a product, `einsum`).


# %% nbgrader={"grade": false, "grade_id": "ch01_weighted_average", "locked": false, "schema_version": 3, "solution": true} slideshow={"slide_type": "skip"}
def my_weighted_average(weights, values):
    """weights (T, S), values (S, d) -> (T, d): row t = sum_s weights[t, s] * values[s]."""
    ### BEGIN SOLUTION
    return weights @ values  # (T, d)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch01_weighted_average_test", "locked": true, "points": 1, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"} tags=["raises-exception"]
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

# %% [markdown] slideshow={"slide_type": "-"}
# Each row of the weights is one word's choice. With the plain average every row is the same;
# with a choice, rows differ. A heat map shows the whole matrix at once — you will see it again in
# every section, each time with better weights.

# %% slideshow={"slide_type": "subslide"}
fig, ax = plt.subplots(1, 2, figsize=(11, 4))
ch01.show_weights(uniform.expand(10, 10), ax=ax[0], title="the plain average: every row the same")
hand = uniform.expand(10, 10).clone()
hand[it] = chosen
ch01.show_weights(hand, ax=ax[1], title="'it' chooses 'cat'")
plt.tight_layout()
plt.show()

# %% [markdown] slideshow={"slide_type": "-"}
# **Takeaway.** Attention is a weighted average of vectors; the whole question is where the
# weights come from.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 2. Softmax turns scores into weights
#
# A word should weigh the words that *match* what it needs. The simplest measure of a match is a
# **dot product**: the score of word *s* for word *t* is $x_t \cdot x_s$, large when the two vectors
# point the same way. But scores can be negative and do not sum to 1. The **softmax** turns any
# real scores into weights:
#
# $$\alpha_i = \frac{\exp(s_i)}{\sum_{j=1}^{n} \exp(s_j)} \qquad (14.3.2)$$
#
# Every weight is positive, they sum to 1, and a larger score always gets a larger weight. The
# source reads $\alpha_i$ as $P(i \mid q)$, the probability that the query reads position *i*
# (the appendix shows when that reading is exact).
#
# One practical trap: `exp` overflows. In float32, `exp(89)` is already `inf`, and then
# `inf / inf = nan`. Softmax does not change if you add the same number to every score — the
# factor $e^c$ cancels between numerator and denominator — so subtract each row's largest score
# first: the largest exponent becomes `exp(0) = 1` and nothing can overflow.
#
# > **Glossary** · softmax 归一化指数函数 (Softmax) · score 分数 · similarity 相似度 ·
# > conditional probability 条件概率 · shift invariance 平移不变性 · overflow 溢出

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
s = torch.tensor([2.0, 1.0, 0.1])  # float32, as a model's scores usually are


def naive_softmax(s):
    return torch.exp(s) / torch.exp(s).sum()


print("naive, s        :", [f"{w:.4f}" for w in naive_softmax(s).tolist()])
print(
    "naive, s + 1000 :",
    naive_softmax(s + 1000).tolist(),
    " exp(1000) =",
    torch.exp(s + 1000)[0].item(),
)
shifted = s + 1000 - (s + 1000).max()  # subtract the largest score: 0, -1, -1.9
print("shifted first   :", [f"{w:.4f}" for w in naive_softmax(shifted).tolist()])

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 2 · A softmax that cannot overflow
# **Difficulty** ●●○ · **Time** 10 min · **Points** 3 · **Practises** Eq. (14.3.2), shift
# invariance, reductions over the last dimension with `keepdim=True`
#
# Write `my_softmax(scores)`: scores (..., n) → weights of the same shape, the softmax over the
# **last** dimension, for any number of leading dimensions, correct for scores like 1000 or
# −1000. Keep the input's dtype and do not change the input in place. Write it from plain tensor
# operations (`exp`, `amax`, `sum`, `logsumexp` are fine); the check refuses PyTorch's softmax
# functions (`torch.softmax`, `F.softmax`, `x.softmax`, `log_softmax`, `F.cross_entropy`,
# `nn.Softmax`, …) and the course's own package.


# %% nbgrader={"grade": false, "grade_id": "ch01_softmax", "locked": false, "schema_version": 3, "solution": true} slideshow={"slide_type": "skip"}
def my_softmax(scores):
    """scores (..., n) -> weights (..., n): exp(s_i) / sum_j exp(s_j) over the last dim."""
    ### BEGIN SOLUTION
    shifted = scores - scores.amax(dim=-1, keepdim=True)  # (..., n), max 0: no overflow
    e = torch.exp(shifted)  # (..., n)
    return e / e.sum(dim=-1, keepdim=True)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch01_softmax_test", "locked": true, "points": 3, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"} tags=["raises-exception"]
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

# %% [markdown] slideshow={"slide_type": "-"}
# Now let every word score every word by the dot product and take the softmax of each row. (From
# here on the chapter calls the course's `softmax`, so it runs whether or not your exercises are
# done; once your check passes, `my_softmax` gives the same weights.)

# %% slideshow={"slide_type": "subslide"}
# NBVAL_CHECK_OUTPUT
dot_weights = softmax(x @ x.T)  # (T, T): row t = softmax of x_t . x_s over s
print("row of 'it':", [f"{w:.2f}" for w in dot_weights[it].tolist()])
ch01.show_weights(dot_weights, title="softmax(x xᵀ): every word reads words like itself")
plt.show()

# %% [markdown] slideshow={"slide_type": "-"}
# With raw dot products every word reads the words **like itself**: *it* puts 0.86 of its weight
# on *it*, *cat* on *cat*, the two actions share theirs, the four function words theirs. A vector
# is most similar to itself and its kind, so "match what you are" cannot express "a pronoun looks
# for an animal". Section 4 fixes that.
#
# **Takeaway.** Softmax turns any scores into a distribution; subtract the row maximum before
# `exp` and it never overflows.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 3. Entropy measures how concentrated attention is
#
# Some rows above put almost all weight on one word; others spread it over four function words.
# One number says which: the **entropy** of a row of weights (Def. 14.3.2),
#
# $$H(\alpha) = -\sum_{i=1}^{n} \alpha_i \log \alpha_i \qquad (14.3.3)$$
#
# in nats (natural log), with the convention $0 \log 0 = 0$ (a masked word, weight exactly 0,
# adds nothing). It is **0** when one weight is 1 and at most **log n**, reached only when all
# weights are 1/n. Its exponential $e^{H}$ reads as the *effective number of words read*: uniform
# attention over 4 words has $e^H = 4$.
#
# > **Glossary** · entropy 熵 · nat 奈特 · uniform distribution 均匀分布 · one-hot 独热 ·
# > effective number of positions 有效位置数

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 3 · Attention entropy
# **Difficulty** ●○○ · **Time** 8 min · **Points** 2 · **Practises** Eq. (14.3.3), handling
# 0 · log 0
#
# Write `my_entropy(weights)`: weights (..., n), each slice along the last dimension a
# distribution → entropies (...) in nats. A weight of exactly 0 must contribute 0, not `nan`
# (`0 * log 0` is `0 * -inf = nan` in floating point). Either skip zero weights
# (`torch.where(p > 0, …)`) or guard the log with a tiny ε, `log(p + ε)` with ε ≤ 1e-9: that
# changes H by at most n·ε, which the check allows. Keep the dtype; write it with plain tensor
# operations: the check refuses `torch.special.entr`, the cross-entropy and KL losses,
# `torch.distributions`' entropies and the course's package.


# %% nbgrader={"grade": false, "grade_id": "ch01_entropy", "locked": false, "schema_version": 3, "solution": true} slideshow={"slide_type": "skip"}
def my_entropy(weights):
    """weights (..., n) -> H (...) = -sum_i w_i log w_i in nats, 0 log 0 = 0."""
    ### BEGIN SOLUTION
    safe = torch.where(weights > 0, weights, torch.ones_like(weights))  # log(1) = 0 where w = 0
    return -(weights * torch.log(safe)).sum(dim=-1)  # (...)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch01_entropy_test", "locked": true, "points": 2, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"} tags=["raises-exception"]
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

# %% [markdown] slideshow={"slide_type": "-"}
# The entropy of each word's row in the dot-product weights, against the bounds 0 and log 10:

# %% slideshow={"slide_type": "subslide"}
# NBVAL_CHECK_OUTPUT
h_dot = attention_entropy(dot_weights)  # (T,) one entropy per word
for word, h in zip(ch01.SENTENCE, h_dot.tolist()):
    print(f"{word:8s} H = {h:.2f} nats, e^H = {math.exp(h):.1f} words")
fig, ax = plt.subplots(figsize=(7, 2.6))
ax.bar(range(10), h_dot.exp(), color="tab:gray")
ax.axhline(10, ls="--", c="k", lw=1, label="10: the plain average")
ax.axhline(1, ls=":", c="k", lw=1, label="1: one word")
ax.set_xticks(range(10), ch01.SENTENCE, rotation=60)
ax.set(ylabel="e^H", title="the effective number of words each word reads")
ax.legend(fontsize=8)
plt.show()

# %% [markdown] slideshow={"slide_type": "-"}
# The four function words spread their weight over the four function words; $e^H ≈ 4.6$, not 4,
# because the six other words still get about 0.0045 each. *it* puts 0.86 on itself, yet
# $e^H ≈ 2.1$: the thin tail of 0.016 on each of the nine others counts for about one more word.
# Entropy tells you *how much* a word chooses, not whether it chose well.
#
# **Takeaway.** $0 \le H \le \log n$: low entropy means a sharp choice, high entropy a broad
# average.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 4. Queries and keys: what a word asks for, what it offers
#
# Dot products of the words themselves made every word look for itself. The fix (Def. 14.3.3):
# give each word three vectors, made by three learned matrices,
#
# - a **query** $q_t = x_t W_Q$: what word *t* is looking for;
# - a **key** $k_s = x_s W_K$: what word *s* offers to be found by;
# - a **value** $v_s = x_s W_V$: what word *s* hands over when it is read.
#
# The score is $q_t \cdot k_s$: "what *t* asks" against "what *s* offers". Because asking and
# offering are different maps, *it* can look for an animal without being one. A trained model
# learns $W_Q$ and $W_K$; here we write them by hand, with $d_k = 2$ key coordinates: coordinate 0
# means "animal" (pronouns and states ask for it, animals offer it), coordinate 1 means "noun"
# (actions ask for it, animals and things offer it). Nouns and function words ask for nothing.
# $W_V$ is the identity: each word hands over its own vector.
#
# > **Glossary** · query 查询 (信息请求) · key 键 (信息标签) · value 值 (信息内容) ·
# > projection matrix 投影矩阵 · self-attention 自注意力

# %% slideshow={"slide_type": "subslide"}
# NBVAL_CHECK_OUTPUT
kind = {f: i for i, f in enumerate(ch01.FEATURES)}  # feature name -> row of W_Q, W_K
w_q = torch.zeros(6, 2, dtype=torch.float64)  # (d_model, d_k): what each kind asks for
w_k = torch.zeros(6, 2, dtype=torch.float64)  # (d_model, d_k): what each kind offers
w_q[kind["pronoun"], 0] = w_q[kind["state"], 0] = 1.2  # "I am looking for an animal"
w_k[kind["animal"], 0] = 1.2  # "I am an animal"
w_q[kind["action"], 1] = 1.2  # "I am looking for a noun"
w_k[kind["animal"], 1] = w_k[kind["thing"], 1] = 1.2  # "I am a noun"
w_v = torch.eye(6, dtype=torch.float64)  # (d_model, d_v)
q, k, v = x @ w_q, x @ w_k, x @ w_v  # (T, 2), (T, 2), (T, 6)
qk_output, qk_weights = scaled_dot_product_attention(q, k, v)  # (T, 6), (T, T)
print("row of 'it':", [f"{w:.2f}" for w in qk_weights[it].tolist()])
print("new vector for 'it':", [round(c, 2) for c in qk_output[it].tolist()])
fig, ax = plt.subplots(1, 2, figsize=(11, 4))
ch01.show_weights(dot_weights, ax=ax[0], title="softmax(x xᵀ)")
ch01.show_weights(
    qk_weights, ax=ax[1], title="softmax(q kᵀ / √d_k): asking and offering"
)  # √d_k: section 5
plt.tight_layout()
plt.show()

# %% [markdown] slideshow={"slide_type": "-"}
# Now *it* and *tired* read *cat* (0.87 of *it*'s weight), the two actions split their weight
# equally between the two nouns, and the words that ask for nothing — nouns and function words —
# get the plain average. *it*'s new vector is mostly *animal*: the layer has resolved the
# pronoun. Notice too that the weights are not symmetric — *it* reads *cat* (0.87), while *cat*,
# which asks for nothing, gives *it* only the uniform 0.1: the score $x_t W_Q W_K^\top x_s^\top$
# is symmetric in *t* and *s* only when $W_Q W_K^\top$ is a symmetric matrix, which learned
# matrices almost never are. The values never influence the weights; they only decide what is
# handed over.
#
# **Try it.** *sat* splits its weight between *cat* and *mat*, but only the cat sat. Change one
# line so that the actions read *cat*, and run the cell again.
#
# <details><summary>One way</summary>
#
# Let actions also ask for an animal: `w_q[kind["action"], 0] = 1.2`. An action's query is now
# (2.4, 2.4): *cat* offers both coordinates and scores twice what *mat* does, so *sat* puts about
# 0.98 of its weight on *cat*. A query can ask for several things at once; a key that offers more
# of them wins. Remove the line again and rerun the cell before going on: section 6 reuses these
# q, k, v.
# </details>
#
# **Takeaway.** Separate query and key maps let a word look for something it is not; the values
# decide what is passed on.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 5. Why divide by √d_k: scale and temperature
#
# The scores above were divided by $\sqrt{d_k}$ (Eq. 14.3.4):
#
# $$s(q, k_j) = \frac{q \cdot k_j}{\sqrt{d_k}} \qquad (14.3.4)$$
#
# Why? If the $d_k$ components of q and k are independent with mean 0 and variance 1, the dot
# product is a sum of $d_k$ such products, so its variance is $d_k$ (Vaswani et al. 2017,
# footnote 4). With $d_k = 512$ the scores have a standard deviation of about 23, and softmax of
# such scores puts nearly all weight on the largest one: attention *saturates* into a hard choice
# at initialisation, and its gradient almost vanishes (chapter 03). Dividing by $\sqrt{d_k}$
# brings the variance back to 1 whatever $d_k$ is.
#
# > **Glossary** · scaled dot product 缩放点积 · temperature 温度 · saturation 饱和 · variance 方差

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 4 · Scaled dot-product scores
# **Difficulty** ●○○ · **Time** 5 min · **Points** 2 · **Practises** Eq. (14.3.4): queries
# against keys in one product, which dimension is $d_k$
#
# Write `my_scaled_scores(q, k)`: queries (T, d_k) and keys (S, d_k) → scores (T, S), entry
# (t, s) = $q_t \cdot k_s / \sqrt{d_k}$, one row per query. Keep the dtype.


# %% nbgrader={"grade": false, "grade_id": "ch01_scaled_scores", "locked": false, "schema_version": 3, "solution": true} slideshow={"slide_type": "skip"}
def my_scaled_scores(q, k):
    """q (T, d_k), k (S, d_k) -> scores (T, S) = q k^T / sqrt(d_k)."""
    ### BEGIN SOLUTION
    return q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (T, S)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch01_scaled_scores_test", "locked": true, "points": 2, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"} tags=["raises-exception"]
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

# %% [markdown] slideshow={"slide_type": "-"}
# Now reproduce the footnote: 4,000 pairs of random unit-variance vectors for the variance, and
# 200 queries against 64 keys for the largest weight, with and without the scale. (The same
# experiment with a second seed is asserted, not printed.)


# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
def footnote_4(seed, dims=(4, 16, 64, 256)):
    """{d_k: (var(q.k) / d_k, mean largest weight unscaled, mean largest weight scaled)}."""
    g = torch.Generator().manual_seed(seed)
    rows = {}
    for d_k in dims:
        a, b = torch.randn(2, 4000, d_k, generator=g)  # 4000 pairs of unit-variance vectors
        Q, K = torch.randn(200, d_k, generator=g), torch.randn(64, d_k, generator=g)
        raw, scaled = softmax(Q @ K.T), softmax(Q @ K.T / math.sqrt(d_k))  # (200, 64) each
        rows[d_k] = (
            float((a * b).sum(-1).var() / d_k),
            float(raw.amax(-1).mean()),
            float(scaled.amax(-1).mean()),
        )
    return rows


print(f"{'d_k':>4} {'var(q.k)/d_k':>13} | {'largest of 64 weights: unscaled':>31} {'scaled':>7}")
for d_k, (ratio, m_raw, m_sc) in footnote_4(seed=0).items():
    print(f"{d_k:>4} {ratio:>13.2f} | {m_raw:>31.2f} {m_sc:>7.2f}")
for seed in (0, 1):
    for d_k, (ratio, m_raw, m_sc) in footnote_4(seed).items():
        assert 0.9 <= ratio <= 1.1, "var(q.k) should be d_k"
        assert m_sc < 0.3, "scaled scores should stay diffuse over 64 keys"
        assert d_k < 256 or m_raw > 0.85, "unscaled softmax should saturate at large d_k"

# %% [markdown] slideshow={"slide_type": "-"}
# var(q·k)/d_k stays at 1 for every $d_k$; unscaled, the largest of 64 weights grows towards 1
# as $d_k$ grows, scaled it stays small.
#
# Dividing the scores by a number τ is called a **temperature**: softmax(s / τ) is sharper for
# τ < 1, flatter for τ > 1, and never changes which key ranks first. The √d_k scale is a
# temperature chosen so that the scores have unit variance.
#
# **Play with it.** Six fixed keys A–F in a 2-D key space, each with a 2-D value (right). Move
# the query with **angle** and **|q|**, change the **temperature**, or switch the 1/√d_k scale
# off. The bars are the weights, the grey gauge their entropy between 0 and log 6, the star the
# output — the weighted average of the values. Try:
# 1. |q| = 0: every key gets 1/6, the entropy is log 6, the star sits at the centre.
# 2. Point the query at A and make it long: A's weight → 1, entropy → 0, star → v_A.
# 3. Temperature 0.1 and 10 at the same query: the same ranking, very different entropy.
# 4. Find a query that gives F the largest weight.
#
# <details><summary>Why you cannot do 4</summary>
#
# The score q·k is linear in k, and a linear function of points is largest at a corner of their
# convex hull. F lies inside the hull of A–E, so some other key always scores higher, whatever
# the query's length or the temperature. F is still *read* (its weight is positive), but no query
# can *select* it.
# </details>

# %% slideshow={"slide_type": "slide"}
# NBVAL_IGNORE_OUTPUT
ch01.selection_widget(angle=20.0, norm=2.0)

# %% [markdown] slideshow={"slide_type": "subslide"}
# > **⚠ The source says** keys need $d_k \ge \log_2 n$ dimensions to tell n positions apart
# > (Thm. 14.3.1). That counts sign patterns: with keys in $\{-1, +1\}^{d_k}$ there are only
# > $2^{d_k}$ distinct keys. Real-valued keys are not so limited: 64 keys on a circle, in
# > $d_k = 2$, can each be selected by a long enough query (the cell below). Packing many keys into
# > few dimensions costs **precision** instead: neighbouring keys get closer as n grows, so the
# > query must grow (like n² here). What does hold is a bound on bits: with b bits per coordinate
# > there are at most $2^{b\,d_k}$ distinct keys, so $b\,d_k \ge \log_2 n$ — a necessary
# > condition, not a sufficient one (F above is a distinct key that no query selects).

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
angle = torch.arange(64, dtype=torch.float64) * 2 * math.pi / 64
circle = torch.stack([angle.cos(), angle.sin()], dim=-1)  # (n=64, d_k=2) unit keys
w = softmax(1e4 * circle @ circle.T / math.sqrt(2))  # row j: the query 1e4 * k_j
print(
    "64 keys in d_k = 2, each selected by its own query:",
    bool((w.argmax(-1) == torch.arange(64)).all()),
)
print(f"smallest selected weight > 0.99: {bool(w.diagonal().min() > 0.99)}")

# %% [markdown] slideshow={"slide_type": "-"}
# **Takeaway.** Dividing by √d_k keeps the score variance at 1 at any width; a temperature
# trades a sharp choice against a broad average without changing the ranking.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 6. Masks: what a query may not read
#
# Sometimes a word must not read certain words. A model that writes a sentence left to right
# predicts word *t + 1* from words 0…t; if word *t* could read word *t + 1* during training, it
# would learn to copy the answer (chapter 05 shows exactly that failure). Sentences of different
# lengths in one batch are padded, and nobody should read the padding.
#
# A **mask** says, for each (query, key) pair, whether the query may read the key: `True` =
# may attend (the convention of `F.scaled_dot_product_attention`; `nn.MultiheadAttention` uses the
# opposite, section 7). The clean way to apply it is *before* the softmax: set the forbidden
# scores to −∞. Then `exp(−∞) = 0`, the forbidden weights are **exactly** 0, and the
# others still sum to 1. (Zeroing weights *after* the softmax leaves rows that no longer sum to
# 1.) The **causal mask** lets word *t* read words 0…t: a lower-triangular (T, T) matrix of
# `True`.
#
# One edge case: a query whose keys are **all** masked. Every score is −∞, the row maximum is
# −∞, and `exp(−∞ − (−∞)) = exp(nan)`. Such a query should read nothing: weights 0, output 0.
#
# > **Glossary** · mask 掩码 · causal mask 因果掩码 · padding mask 填充掩码

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
print(causal_mask(5).int())  # (T, T): row t may read columns 0..t

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 5 · Masked scaled dot-product attention, from scratch
# **Difficulty** ●●● · **Time** 15 min · **Points** 3 · **Practises** masking before the
# softmax, a fully masked row, shapes with batch and head dimensions
#
# Write `my_masked_attention(q, k, v, mask)`: q (..., T, d_k), k (..., S, d_k), v (..., S, d_v) —
# the leading dimensions `...` hold several sentences at once (and, from chapter 06, several
# heads), and there may be none — and mask (T, S) of
# bools, **True = may attend** → `(output (..., T, d_v), weights (..., T, S))`, where
# weights = softmax(q kᵀ / √d_k) over the keys a query may read; subtract the largest score *of
# those keys* before `exp` (mask first): a masked key's large score would otherwise send the
# allowed keys' exp to 0. Transpose only the last two dimensions of k (`k.transpose(-2, -1)`, or
# `k.mT`; `k.T` reverses all of them and breaks the batched case). Masked keys get weight exactly
# 0; a query whose keys are all masked gets a row of zeros (weights and output), not `nan`. Keep
# the dtype. The check refuses PyTorch's softmax and attention functions
# (`F.scaled_dot_product_attention`, `nn.MultiheadAttention`) and the course's package.


# %% nbgrader={"grade": false, "grade_id": "ch01_masked_attention", "locked": false, "schema_version": 3, "solution": true} slideshow={"slide_type": "skip"}
def my_masked_attention(q, k, v, mask):
    """q (..., T, d_k), k (..., S, d_k), v (..., S, d_v), mask (T, S) bool, True = may attend
    -> (output (..., T, d_v), weights (..., T, S))."""
    ### BEGIN SOLUTION
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (..., T, S)
    scores = scores.masked_fill(~mask, float("-inf"))  # (..., T, S)
    row_max = scores.amax(dim=-1, keepdim=True)  # (..., T, 1), -inf for a fully masked row
    row_max = torch.where(torch.isfinite(row_max), row_max, torch.zeros_like(row_max))
    e = torch.exp(scores - row_max)  # (..., T, S), exactly 0 where masked
    total = e.sum(dim=-1, keepdim=True)  # (..., T, 1)
    weights = e / torch.where(total > 0, total, torch.ones_like(total))  # zero rows stay 0
    return weights @ v, weights  # (..., T, d_v), (..., T, S)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch01_masked_attention_test", "locked": true, "points": 3, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"} tags=["raises-exception"]
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

# %% [markdown] slideshow={"slide_type": "-"}
# The running example under a causal mask: each word may read only itself and the words before
# it. *it* still finds *cat*, which came earlier; *the*, the first word, can read only itself.

# %% slideshow={"slide_type": "subslide"}
# NBVAL_CHECK_OUTPUT
_, causal_weights = scaled_dot_product_attention(q, k, v, causal_mask(10))  # (T, T)
print("row of 'it'  :", [f"{w:.2f}" for w in causal_weights[it].tolist()])
print("row of 'sat' :", [f"{w:.2f}" for w in causal_weights[ch01.SENTENCE.index("sat")].tolist()])
print("above the diagonal, all exactly 0:", bool((causal_weights.triu(1) == 0).all()))
ch01.show_weights(causal_weights, title="causal mask: no word reads a later word")
plt.show()

# %% [markdown] slideshow={"slide_type": "-"}
# *sat* had split its weight between *cat* and *mat*; now *mat* comes later, so *sat* reads
# almost only *cat* (0.97). The mask changed what a word *can* choose, not how it chooses.
#
# **Takeaway.** Mask by setting scores to −∞ before the softmax; a fully masked row reads
# nothing.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 7. Your own self-attention layer
#
# You now have every piece. A **self-attention layer** takes the word vectors x (T, d_model),
# makes queries, keys and values with $W_Q, W_K, W_V$, attends, and maps the result back to
# d_model with an output matrix $W_O$ (d_v, d_model), so that layers can be stacked:
#
# $$\mathrm{SelfAttention}(x) = \mathrm{softmax}\!\left(\frac{(xW_Q)(xW_K)^\top}{\sqrt{d_k}} + M\right) (xW_V)\, W_O$$
#
# where M is 0 where the mask allows reading and −∞ where it does not. This is PyTorch's
# `nn.MultiheadAttention` with one head and no biases (chapter 06 adds heads).
#
# > **Glossary** · self-attention layer 自注意力层 · output projection 输出投影 (W_O)

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 6 · Assemble a self-attention layer
# **Difficulty** ●●○ · **Time** 10 min · **Points** 2 · **Practises** Def. (14.3.3) and
# Eq. (14.3.4) put together: projections, attention, output map
#
# Write `my_self_attention(x, w_q, w_k, w_v, w_o, mask, attend)`: x (..., T, d_model);
# w_q, w_k (d_model, d_k); w_v (d_model, d_v); w_o (d_v, d_model); mask (T, T) bool →
# `(output (..., T, d_model), weights (..., T, T))`. Compute q, k, v as `x @ w_q` etc. (the
# matrices are laid out (in, out), so no transpose), call `attend(q, k, v, mask)` for the
# attention — a function like your `my_masked_attention` — and map its output with `w_o`. Do not
# divide by √d_k again: `attend` does it. The check passes the course's own attention as
# `attend`, so this exercise is judged on its own, whatever your exercise 5 does; below, the
# chapter passes yours. Like exercise 5, the check refuses PyTorch's softmax and attention
# functions and the course's package.


# %% nbgrader={"grade": false, "grade_id": "ch01_self_attention", "locked": false, "schema_version": 3, "solution": true} slideshow={"slide_type": "skip"}
def my_self_attention(x, w_q, w_k, w_v, w_o, mask, attend):
    """x (..., T, d_model) -> (output (..., T, d_model), weights (..., T, T)), with
    attend(q, k, v, mask) -> (z, weights) as the attention."""
    ### BEGIN SOLUTION
    q, k, v = x @ w_q, x @ w_k, x @ w_v  # (..., T, d_k), (..., T, d_k), (..., T, d_v)
    z, weights = attend(q, k, v, mask)  # (..., T, d_v), (..., T, T)
    return z @ w_o, weights  # (..., T, d_model)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch01_self_attention_test", "locked": true, "points": 2, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"} tags=["raises-exception"]
from attncourse.exercises.ch01 import check_self_attention

check_self_attention(my_self_attention)
### BEGIN HIDDEN TESTS
import importlib

import attncourse.exercises.ch01 as ex
import attncourse.exercises.engine as engine

engine = importlib.reload(engine)  # fresh copies: a patched check does not count
ex = importlib.reload(ex)
ex.check_self_attention(my_self_attention, seed=16)
### END HIDDEN TESTS

# %% [markdown] slideshow={"slide_type": "-"}
# Does your layer compute what the libraries compute? Give random weights to the course's
# `MultiHeadAttention` with one head and to PyTorch's `nn.MultiheadAttention`, copy the same
# matrices into your layer, and compare on the running example under the causal mask. Your layer
# runs with your own `my_masked_attention`; while exercise 5 is unfinished, with the course's.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
torch.manual_seed(1)
ours = MultiHeadAttention(6, num_heads=1, bias=False).double()  # (d_model = d_k = d_v = 6)
theirs = torch.nn.MultiheadAttention(6, num_heads=1, bias=False, batch_first=True).double()
with torch.no_grad():  # PyTorch stores W_Q, W_K, W_V stacked, as (out, in) matrices
    theirs.in_proj_weight.copy_(
        torch.cat([ours.q_proj.weight, ours.k_proj.weight, ours.v_proj.weight])
    )
    theirs.out_proj.weight.copy_(ours.out_proj.weight)
mask = causal_mask(10)  # (T, T), True = may attend
y_ours, _ = ours(x[None], mask=mask)  # (1, T, d_model)
y_theirs, _ = theirs(x[None], x[None], x[None], attn_mask=~mask)  # PyTorch: True = masked
print(
    "the course's MultiHeadAttention = torch.nn.MultiheadAttention:",
    bool(torch.allclose(y_ours, y_theirs)),
)
matrices = [m.weight.T for m in (ours.q_proj, ours.k_proj, ours.v_proj, ours.out_proj)]  # (in, out)
try:
    try:
        y_mine, _ = my_self_attention(x, *matrices, mask, attend=my_masked_attention)
    except NotImplementedError:  # exercise 5 unfinished: your layer with the course's attention
        y_mine, _ = my_self_attention(x, *matrices, mask, attend=scaled_dot_product_attention)
    print(
        "your my_self_attention = both                                :",
        bool(torch.allclose(y_mine, y_ours[0])),
    )
except NotImplementedError:
    print("finish exercise 6, then run this cell again to compare your layer")

# %% [markdown] slideshow={"slide_type": "-"}
# Two conventions differ between libraries and are worth remembering: PyTorch's `nn.Linear`
# stores a matrix as (out, in), so `x @ W.T`; and `nn.MultiheadAttention`'s boolean `attn_mask`
# means **True = masked**, the opposite of `F.scaled_dot_product_attention` and of this course.
#
# **Takeaway.** A self-attention layer is four matrix products around one masked softmax; yours
# equals PyTorch's.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Summary
#
# - Attention is a **weighted average** of value vectors (Eq. 14.3.1); it can only mix what is
#   there.
# - **Softmax** turns scores into weights that are positive and sum to 1 (Eq. 14.3.2); subtract
#   the row maximum before `exp`.
# - The **entropy** of a row, between 0 and log n, measures how sharply a query chooses;
#   $e^H$ is the effective number of positions read.
# - **Queries** say what a word looks for, **keys** what it offers, **values** what it hands
#   over; separate maps let a word look for what it is not, and make the weights asymmetric.
# - Scores are divided by **√d_k** because var(q·k) = d_k; a temperature sharpens or flattens
#   without changing the ranking.
# - A **mask** sets forbidden scores to −∞ before the softmax; a causal mask makes a left-to-right
#   model.
# - A self-attention layer is $W_Q, W_K, W_V$, a masked softmax and $W_O$ — and equals
#   `nn.MultiheadAttention` with one head.

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Check yourself**
#
# 1. All scores of a query are equal. What are its weights, its entropy and its output?
# 2. You add 5 to every score of one query. What changes?
# 3. Why does "set the score to −∞" give an exactly zero weight, while "set the score to 0" does
#    not?
# 4. A head has $d_k = 256$ and no 1/√d_k, and q and k have unit-variance components, as in
#    section 5. What do its weights look like at initialisation, and why is that bad for training?
# 5. Can a query give the largest weight to a key that lies inside the convex hull of the other
#    keys?
#
# <details><summary>Answers</summary>
#
# 1. All weights are 1/n, the entropy is log n (its maximum), the output is the plain mean of
#    the values.
# 2. Nothing: softmax is shift-invariant.
# 3. exp(−∞) = 0 exactly, so the key gets weight 0. A score of 0 is an ordinary score: the key
#    keeps weight e⁰ / Σ exp(s), which can even be the largest if the other scores are negative.
# 4. Scores have variance 256 (standard deviation 16), so softmax puts nearly all weight on one
#    key: a saturated softmax whose gradient is close to 0 (chapter 03).
# 5. No: q·k is linear in k, so its maximum over the keys is at a corner of their hull. (At
#    q = 0 all keys tie, so none is selected either.)
# </details>
#
# **Next — chapter 02, the seq2seq bottleneck and alignment**: what goes wrong when a decoder
# gets one fixed-size summary of a sentence instead of attending over all its words — and the
# first attention mechanisms, Bahdanau's and Luong's, that fixed it.

# %% [markdown] slideshow={"slide_type": "skip"}
# ## Appendix · The source, checked
#
# Source 000, §14.3.1 states the ideas above as definitions, lemmas and theorems, with short
# proofs. This appendix checks each one numerically. Marks: **✓ holds** · **⚠ holds only under a
# condition** (stated) · **✗ wrong as printed** (with a counterexample and the correct
# statement). A few terms of information theory are used here and defined where they first
# appear; the main path does not need them.
#
# ### A.1 The output is a convex combination (Def. 14.3.1)
#
# **Claim check — Def. 14.3.1 ✓.** The package's attention returns exactly `weights @ values`,
# and the output never leaves the convex hull of the values: for every direction u,
# u·output ≤ max_j u·v_j (the support-function test of hull membership).

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
q_many = torch.randn(500, 2, dtype=torch.float64) * 3  # (T=500, d_k=2) random queries
out, w = scaled_dot_product_attention(q_many, ch01.KEYS_2D, ch01.VALUES_2D)  # (T, d_v), (T, S)
assert torch.allclose(out, w @ ch01.VALUES_2D)  # Eq. (14.3.1) with alpha = each row of w
assert torch.allclose(w.sum(-1), torch.ones(500, dtype=torch.float64)) and (w >= 0).all()
u = torch.randn(2, 200, dtype=torch.float64)  # 200 random directions
inside = ((out @ u) <= (ch01.VALUES_2D @ u).amax(0) + 1e-12).all()
print("500 outputs, 200 directions: all inside the convex hull of the values:", bool(inside))

# %% [markdown] slideshow={"slide_type": "skip"}
# ### A.2 When softmax weights are a posterior P(i | q) (Lemma 14.3.1)
#
# **Claim check — Lemma 14.3.1 ✓ as a normalisation, ⚠ as a probability "of position i".**
# That softmax yields a distribution is all the printed proof shows. When is it really a
# *posterior* P(i | q)? For instance in this model: position i is chosen with prior 1/n and the query is
# a noisy copy of its key, q ~ N(k_i, σ²I). Bayes' rule gives
# P(i | q) ∝ exp(−‖q − k_i‖²/2σ²) ∝ exp(q·k_i/σ² − ‖k_i‖²/2σ²), i.e. **softmax of dot products at
# temperature σ², provided all keys have the same norm** (otherwise each key needs a bias
# −‖k_i‖²/2σ²). The cell checks both halves.


# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
def gaussian_posterior(q, keys, sigma):
    """Exact Bayes posterior P(i | q) for q ~ N(k_i, sigma^2 I) with a uniform prior: (T, n)."""
    log_lik = -((q[:, None, :] - keys[None]) ** 2).sum(-1) / (2 * sigma**2)  # (T, n)
    return torch.exp(log_lik - log_lik.logsumexp(-1, keepdim=True))


sigma, n, d = 0.7, 5, 3
keys_equal = torch.nn.functional.normalize(torch.randn(n, d, dtype=torch.float64), dim=-1) * 2
i = torch.randint(n, (1000,))
queries = keys_equal[i] + sigma * torch.randn(1000, d, dtype=torch.float64)  # (1000, d)
posterior = gaussian_posterior(queries, keys_equal, sigma)
gap_equal = (posterior - softmax(queries @ keys_equal.T / sigma**2)).abs().max()
keys_unequal = keys_equal * torch.tensor([[0.5], [1.0], [1.5], [2.0], [1.0]], dtype=torch.float64)
posterior = gaussian_posterior(queries, keys_unequal, sigma)
gap_unequal = (posterior - softmax(queries @ keys_unequal.T / sigma**2)).abs().max()
print(f"equal key norms  : max |posterior - softmax| < 1e-12: {bool(gap_equal < 1e-12)}")
print(f"unequal key norms: max |posterior - softmax| = {gap_unequal:.2f}")
assert gap_equal < 1e-12 and gap_unequal > 0.1

# %% [markdown] slideshow={"slide_type": "skip"}
# ### A.3 The entropy of attention and its bounds (Def. 14.3.2, Lemma 14.3.2, Cor. 14.3.1)
#
# **Notation.** The source calls (14.3.3) a conditional entropy (条件熵). It is the entropy of the
# position index I for **one given** query, H(I | Q = q); the *conditional entropy* H(I | Q) of
# information theory is its average over queries.
#
# **Claim check — Lemma 14.3.2 ✓**, and sharper than printed: "low entropy ⇔ one dominant
# weight" holds quantitatively in both directions. $H \ge -\log \max_i \alpha_i$, so H < ε forces
# $\max_i\alpha_i > e^{-\varepsilon}$. And a dominant weight forces low entropy by **Fano's
# inequality**: with the *binary entropy* $h(p) = -p\log p - (1-p)\log(1-p)$ of the largest weight,
# $H \le h(\max_i\alpha_i) + (1-\max_i\alpha_i)\log(n-1)$. The range is the closed interval
# [0, log n]: 0 is reached by a one-hot row (a mask or a hard choice), which softmax of finite
# scores approaches but never reaches.

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
n = 6
w = torch.distributions.Dirichlet(torch.full((n,), 0.5, dtype=torch.float64)).sample((100_000,))
h, p_max = attention_entropy(w), w.amax(-1)  # (100000,) each
binary = -(p_max * p_max.log() + (1 - p_max) * (1 - p_max).clamp_min(1e-300).log())
fano = binary + (1 - p_max) * math.log(n - 1)
print(
    f"uniform over {n}: H = {float(attention_entropy(torch.full((n,), 1 / n, dtype=torch.float64))):.4f} = log {n}"
)
print(f"one-hot: H = {float(attention_entropy(torch.eye(n, dtype=torch.float64)[0])):.4f}")
assert (h >= 0).all() and (h <= math.log(n)).all()
assert (h >= -p_max.log() - 1e-12).all()  # H >= -log(max alpha): low entropy forces a large weight
assert (h <= fano + 1e-12).all()  # Fano: a large weight forces low entropy
print("100000 random distributions: 0 <= H <= log n, H >= -log(max alpha), H <= Fano's bound")

# %% [markdown] slideshow={"slide_type": "skip"}
# **Claim check — Cor. 14.3.1 (information bottleneck, 信息瓶颈) ⚠.** "Selecting k ≪ n positions" is not
# what softmax does: every weight is strictly positive, so all n positions are always read.
# Softmax compresses *softly*: the effective number of positions $e^{H}$ can be ≪ n, but exact
# k-sparsity needs a mask or a sparse normaliser (chapter 10). The plot grows one query: the
# entropy falls from log n towards 0, and $e^H$ with it, while the smallest weight stays above
# zero (until it underflows in floating point, which is not selection).

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
norms = torch.linspace(0, 12, 121, dtype=torch.float64)
W, H, _ = ch01.selection_sweep(50.0, norms)  # one query direction, growing |q|: (121, 6), (121,)
smallest = W.amin(-1)  # (121,)
fig, ax = plt.subplots(1, 2, figsize=(9, 3))
ax[0].plot(norms, H, label="H(alpha)")
ax[0].axhline(math.log(6), ls="--", c="k", lw=1, label="log n (uniform)")
ax[0].set(xlabel="|q| (query at 50°)", ylabel="entropy (nats)", title="entropy falls as |q| grows")
ax[0].legend(fontsize=8)
ax[1].semilogy(norms, smallest)
ax[1].set(xlabel="|q|", ylabel="smallest weight", title="...but no weight reaches 0")
plt.tight_layout()
plt.show()
print(
    f"|q| = 0: H = log 6: {abs(H[0] - math.log(6)) < 1e-12};  |q| = 12: H = {float(H[-1]):.4f}, "
    f"e^H = {math.exp(H[-1]):.3f}, smallest weight = {float(smallest[-1]):.1e} > 0"
)
assert abs(H[0] - math.log(6)) < 1e-12 and (smallest > 0).all() and (H.diff() <= 1e-12).all()

# %% [markdown] slideshow={"slide_type": "skip"}
# ### A.4 Queries, keys, values (Def. 14.3.3)
#
# **Claim check — Def. 14.3.3 ✓** as a description of the computation: the package's multi-head
# attention with one head is exactly the three projections followed by Eq. (14.3.4); the weights
# ignore the values; the output is linear in them. "Request / label / content" is an
# interpretation, not something a trained model is forced to respect.
#
# **A note on symmetry** (the course's, not the source's: section 4 says the weights are not
# symmetric). The scores $x_t W_Q W_K^\top x_s^\top$ are *generically* asymmetric, and symmetric
# exactly when $M = W_Q W_K^\top$ is a symmetric matrix — which $W_Q \ne W_K$ does not rule out:
# $W_K = W_Q A$ with A symmetric, or $W_K = -W_Q$, give symmetric scores with $W_Q \ne W_K$.

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
T, d_model = 5, 8
xs = torch.randn(1, T, d_model, dtype=torch.float64)  # (B=1, T, d_model)
mha = MultiHeadAttention(d_model, num_heads=1, bias=False).double()  # W_Q, W_K, W_V, W_O
y, w_mha = mha(xs)  # (1, T, d_model), (1, 1, T, T)
q1, k1, v1 = mha.q_proj(xs), mha.k_proj(xs), mha.v_proj(xs)  # (1, T, d_k) each
out, w = scaled_dot_product_attention(q1, k1, v1)  # (1, T, d_v), (1, T, T)
assert torch.allclose(w_mha[:, 0], w) and torch.allclose(y, mha.out_proj(out))
_, w_other_values = scaled_dot_product_attention(q1, k1, torch.randn_like(v1))  # new contents
out_2v, _ = scaled_dot_product_attention(q1, k1, 2 * v1)
print("weights unchanged when the values change:", torch.equal(w, w_other_values))
print("output doubles when the values double   :", torch.allclose(out_2v, 2 * out))


def scores(w_query, w_key):
    return xs[0] @ w_query @ w_key.T @ xs[0].T  # (T, T) = x W_Q W_K^T x^T


w_query = torch.randn(d_model, 4, dtype=torch.float64)
a = torch.randn(4, 4, dtype=torch.float64)
for name, w_key in {
    "W_K random": torch.randn(d_model, 4, dtype=torch.float64),
    "W_K = W_Q A, A symmetric": w_query @ (a + a.T),
    "W_K = -W_Q": -w_query,
}.items():
    s_tt = scores(w_query, w_key)
    print(
        f"{name:26s} W_Q != W_K: {not torch.equal(w_query, w_key)},  scores symmetric: "
        f"{bool(torch.allclose(s_tt, s_tt.T))}"
    )

# %% [markdown] slideshow={"slide_type": "skip"}
# ### A.5 Scaled dot products and mutual information (Lemma 14.3.3)
#
# **Claim check — Lemma 14.3.3, Eq. (14.3.4) ✓** as a definition: the source calls the scaled dot
# product "信息相关性的度量" (a measure of information relevance) and gives no reason for the
# 1/√d_k; section 5 supplies Vaswani et al.'s (2017, footnote 4): var(q·k) = d_k. (Eq. 14.3.4 is
# printed as "(q, k_j) = …": the s of s(q, k_j) is missing.)
#
# **Claim check — Lemma 14.3.3, Eq. (14.3.5) "I(q; k_j) ≈ qᵀk_j" ✗ wrong as printed.** The source
# says the scaled dot product "等价于计算查询与各位置标签的互信息近似", because "内积与互信息成正比" in
# the exponential family. Recall the **mutual information** of two random variables,
# $I(A; B) = \sum_{a,b} p(a,b) \log \frac{p(a,b)}{p(a)p(b)} \ge 0$: how much knowing one tells about
# the other. Two reasons the claim cannot hold:
#
# 1. *Type*: mutual information is a property of two **random variables**; qᵀk_j is a number
#    computed from two **particular vectors**, and it is negative whenever they point apart.
# 2. *Even as expectations* there is no monotone relation. Take q, k ∈ {−1, +1}: "k = q with
#    probability 0.9" and "k = −q with probability 0.9" have the **same** mutual information,
#    1 − h(0.1) = 0.531 bits, but E[qk] = +0.8 and −0.8. For Gaussian q, k ∈ ℝ^d with per-coordinate
#    correlation ρ: I(q; k) = −(d/2) ln(1 − ρ²) is even in ρ, while E[qᵀk] = dρ is odd.
#
# **Correct statement.** A score is, up to a constant per query, a **pointwise** mutual
# information $\log\frac{P(j \mid q)}{P(j)}$ — the single-outcome term inside the sum above, which
# may be negative. If position j is a priori uniform and α = softmax(s), then
# $\log\frac{P(j\mid q)}{P(j)} = s_j - \mathrm{logsumexp}(s) + \log n$. Its average under α is
# $\log n - H(\alpha) \ge 0$, the information this query gives about which position is read.
# Taking for P(j) the average weight $\bar\alpha_j$ over many queries, the average over queries
# is exactly the mutual information $I(Q; J) = H(\bar\alpha) - \mathbb{E}_q H(\alpha(q)) \ge 0$
# (computed in A.7 for the widget's keys).

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
from attncourse.metrics import mutual_information

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
print("Gaussian, d = 16:  rho      :", [round(r, 2) for r in rho.tolist()])
print("                   E[q.k]   :", [round(r, 2) for r in (16 * rho).tolist()])
print(
    "                   I (nats) :",
    [round(r, 2) for r in (8 * torch.log(1 / (1 - rho**2))).tolist()],
)

s = torch.tensor([1.5, -0.3, 0.2, -2.0, 0.9], dtype=torch.float64)
alpha = softmax(s)
pmi = torch.log(alpha * len(s))  # log P(j|q)/P(j) with P(j) = 1/n
assert torch.allclose(pmi - s, (pmi - s)[0].expand(5))  # PMI = score + constant
assert abs(float(alpha @ pmi) - (math.log(5) - float(attention_entropy(alpha)))) < 1e-12
print("PMI of each position:", [round(p, 3) for p in pmi.tolist()], " (negative ones included)")
print(f"alpha-average of PMI = log n - H(alpha) = {float(alpha @ pmi):.4f} >= 0")

# %% [markdown] slideshow={"slide_type": "skip"}
# ### A.6 Routing and capacity (Lemma 14.3.4)
#
# The source describes attention as a router: **QKᵀ decides where** information flows, the
# softmax weights **aggregate V**, and **d_k, d_v limit capacity**. The first two are what A.4
# checked. The routing picture sweeps a query of fixed length around the circle and stacks the
# weights of the widget's six keys: each key owns an angular territory where it wins — except F,
# inside the hull of the others (the widget's puzzle).
#
# **Claim check — Lemma 14.3.4 ✓ as routing** (QKᵀ decides where, the weights aggregate V: A.4),
# **⚠ "d_k and d_v limit the information dimension".** The score matrix $QK^\top$ has rank at most d_k and the output matrix (T × d_v) rank at most
# d_v. But the **weights** are not rank-limited — `exp` is non-linear — so even d_k = 1 gives a
# full-rank T × S routing matrix. What d_k limits is *which* routings can be expressed (Bhojanapalli
# et al. 2020): with d_k = 1, scores are $q_i k_j$, so every query's largest weight falls on the
# largest or the smallest key — at most **2** keys can ever be selected.

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
angles = torch.arange(-180, 180, 1.0)
fig, ax = plt.subplots(1, 2, figsize=(10, 3))
for a_i, norm in enumerate((1.0, 5.0)):
    W, _, _ = ch01.selection_sweep(angles, norm)  # (360, 6)
    ax[a_i].stackplot(angles, W.T, labels=ch01.KEY_NAMES, colors=ch01.COLORS)
    ax[a_i].set(
        xlim=(-180, 180),
        ylim=(0, 1),
        xlabel="query angle (degrees)",
        ylabel="weights (stacked)",
        title=f"|q| = {norm}",
    )
    winners = sorted({ch01.KEY_NAMES[j] for j in W.argmax(-1).tolist()})
    print(
        f"|q| = {norm}: keys that ever get the largest weight: {winners};  "
        f"min weight of F = {float(W[:, 5].min()):.2e}"
    )
    assert "F" not in winners
ax[1].legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=8)
plt.tight_layout()
plt.show()

T = S = 8
q_line, k_line = torch.randn(T, 1, dtype=torch.float64), torch.randn(S, 1, dtype=torch.float64)
out_line, w_line = scaled_dot_product_attention(
    q_line, k_line, torch.randn(S, 3, dtype=torch.float64)
)
print(
    "d_k = 1: rank of Q K^T:",
    int(torch.linalg.matrix_rank(q_line @ k_line.T)),
    f"; rank of the weights: {int(torch.linalg.matrix_rank(w_line))} (full: {T})",
    f"; rank of the output: {int(torch.linalg.matrix_rank(out_line))} (<= d_v = 3)",
)
sweep = torch.linspace(-50, 50, 1000, dtype=torch.float64)[:, None]  # q = 0 excluded: all tie
winners = torch.unique((sweep @ k_line.T).argmax(-1))
print(f"d_k = 1, n = 8: keys that any query q != 0 selects: {winners.numel()}")
assert winners.tolist() == sorted({int(k_line.argmax()), int(k_line.argmin())})

# %% [markdown] slideshow={"slide_type": "skip"}
# ### A.7 How many dimensions does selection need? (Thm. 14.3.1)
#
# **Claim check — Thm. 14.3.1, d_k ≥ log₂ n ⚠: holds for sign codes only.** Section 5 showed 64
# keys selectable in d_k = 2. With **binary/sign** keys ($k \in \{-1,+1\}^{d_k}$) there are only
# $2^{d_k}$ distinct keys, so n distinguishable keys need $d_k \ge \log_2 n$ — the printed bound,
# and tight: the 8 corners of the cube in d_k = 3 are all selectable. The real cost of packing
# many keys into few dimensions is **precision**: neighbouring keys on the circle differ by an
# angle 2π/n, so the score gap is $\beta(1-\cos(2\pi/n))/\sqrt{2}$ and the query norm needed for a
# given selectivity grows like n². **Correct statement:** if each coordinate of a key is stored
# with b bits there are at most $2^{b\,d_k}$ distinct keys, so $b\,d_k \ge \log_2 n$; with b = 1
# (signs) this is the printed bound.


# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
def circle_keys(n):
    angle = torch.arange(n, dtype=torch.float64) * 2 * math.pi / n
    return torch.stack([angle.cos(), angle.sin()], dim=-1)  # (n, 2) unit keys, d_k = 2


cube = torch.tensor(
    [[a, b, c] for a in (-1.0, 1.0) for b in (-1.0, 1.0) for c in (-1.0, 1.0)], dtype=torch.float64
)
w_cube = softmax(20 * cube @ cube.T / math.sqrt(3))  # (8, 8)
print(
    "sign keys, d_k = 3: all 2^3 = 8 corners selectable:",
    bool((w_cube.argmax(-1) == torch.arange(8)).all()),
    f" (smallest selected weight {float(w_cube.diagonal().min()):.4f})",
)


def norm_needed(n, target=0.9):
    """Smallest |q| on a fine log grid for which the query |q| * k_0 gives key 0 a weight >= target."""
    keys = circle_keys(n)
    betas = torch.logspace(0, 6, 6001, dtype=torch.float64)  # candidate |q|, steps of 0.23 %
    w0 = softmax(betas[:, None] * (keys @ keys[0])[None] / math.sqrt(2))[:, 0]  # (6001,)
    return float(betas[int((w0 >= target).nonzero()[0])])


ns = [8, 16, 32, 64, 128, 256]
needed = [norm_needed(m) for m in ns]
slope = np.polyfit(np.log(ns), np.log(needed), 1)[0]
print("n            :", ns)
print("|q| for 0.9  :", [round(b) for b in needed])
print(f"log-log slope: {slope:.2f}  (precision cost ~ n^2)")
assert 1.8 < slope < 2.2

# %% [markdown] slideshow={"slide_type": "skip"}
# **Claim check — Thm. 14.3.1, d_v ≥ H(Y | X) ✗ wrong as printed**, for two reasons. It compares a
# number of dimensions with a number of bits; and it uses the wrong quantity: the *conditional
# entropy* H(Y | X) = H(X, Y) − H(X) is what X does **not** tell about Y. If Y = X is one of 256
# equally likely symbols, H(Y | X) = 0 — the printed bound asks for nothing — yet 8 bits must
# pass. The natural repair, d_v ≥ I(X; Y) = 8, fails too: one real coordinate carries all 8 bits.
# Below, 256 keys on the circle (d_k = 2) and values $v_j = j$ (**d_v = 1**) return every symbol
# exactly. **Correct statement:** the information an attention output carries is bounded by its
# entropy, $I(X; Y) \le H(\text{output}) \le b\,d_v$ bits when each of its d_v coordinates is
# stored with b bits; dimensions bound information only together with precision.

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
from attncourse.metrics import entropy

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

# %% [markdown] slideshow={"slide_type": "skip"}
# Averaged over many queries, the same idea gives the exact mutual information between queries
# and selected positions, $I(Q; J) = H(\bar\alpha) - \mathbb{E}_q H(\alpha(q))$, with queries
# uniform on a circle of radius |q| around the widget's keys. It grows with |q| but stays below
# log₂ 5 bits, not log₂ 6: key F can never be selected.

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
for norm in (0.0, 1.0, 3.0, 10.0, 50.0):
    W, _, _ = ch01.selection_sweep(torch.arange(0, 360, 1.0), norm)  # (360, 6)
    joint = W / W.shape[0]  # p(q, j): queries uniform, j ~ alpha(q)
    print(f"|q| = {norm:5.1f}:  I(Q; J) = {mutual_information(joint, 0, 1):.3f} bits")
print(f"log2 5 = {math.log2(5):.3f},  log2 6 = {math.log2(6):.3f}")
assert mutual_information(joint, 0, 1) < math.log2(5)

# %% [markdown] slideshow={"slide_type": "skip"}
# ### A.8 An entropy-regularised objective (Def. 14.3.4, Eq. 14.3.6)
#
# $$\mathcal{L}_{\text{attn}} = -\sum_i \alpha_i \log \alpha_i + \lambda \sum_{i,j} \alpha_i \alpha_j\, d(x_i, x_j) \qquad (14.3.6)$$
#
# The source says the first term "encourages diversity" and the second "penalises selecting
# similar positions". With d a distance both terms grow when attention spreads over **distant**
# positions, so that reading holds only if $\mathcal{L}$ is **maximised**.
#
# **Claim check — Def. 14.3.4 ⚠ (sign).** The source calls $\mathcal{L}$ an objective ("注意力目标")
# without saying whether to minimise or maximise it. Read as a loss — minimised — $\mathcal{L} \ge 0$
# reaches its minimum 0 at a one-hot α, the opposite of diversity. Maximised, it does what the source says:
# below, three near-duplicate inputs and one distinct input; the entropy alone (λ = 0) spreads
# attention evenly (so ¾ of it goes to the duplicates), the distance term (λ = 1) moves weight to
# the distinct input. As a loss to minimise, use $-\mathcal{L}_{\text{attn}}$.

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
x_pos = torch.tensor([0.0, 0.05, 0.1, 3.0], dtype=torch.float64)  # three near-duplicates, one apart
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
assert all(float(results[lam, "minimised"].max()) > 0.99 for lam in (0.0, 1.0))  # collapses
assert float(results[1.0, "maximised"][3]) > float(results[0.0, "maximised"][3]) + 0.1

# %% [markdown] slideshow={"slide_type": "skip"}
# ### A.9 Diversity and redundancy (Lemma 14.3.5, Eq. 14.3.7)
#
# $$I(X_{\text{selected}}; Y) \approx \sum_i I(x_i; Y) - \mathrm{Redundancy}(X_{\text{selected}}) \qquad (14.3.7)$$
#
# with a non-negative redundancy, justified in the source by "the subadditivity of mutual
# information". **Claim check — Lemma 14.3.5 ✗ wrong as printed.** Mutual information is neither
# sub- nor superadditive over sources in general. With **synergy** the whole carries more than
# the sum of its parts: if X₁, X₂ are fair coins and Y = X₁ XOR X₂, each input alone carries **0**
# bits about Y, together **1** bit. No non-negative redundancy can make 0 + 0 − R equal 1.
# (Redundancy exists too: with X₁ = X₂ = Y the parts sum to 2 bits, the whole is 1.)
#
# **Correct statement** (the chain rule, exact). With the *conditional mutual information*
# $I(X_2; Y \mid X_1)$ — what X₂ tells about Y once X₁ is known —
# $I(X_1, X_2; Y) = I(X_1; Y) + I(X_2; Y \mid X_1) = I(X_1; Y) + I(X_2; Y) - I(X_1; X_2; Y)$, where the
# *co-information* $I(X_1; X_2; Y) = I(X_1; Y) - I(X_1; Y \mid X_2)$ is positive for redundancy and
# **negative for synergy**. (Some texts call the opposite sign "interaction information"; this
# course uses the co-information sign throughout.) "Select diverse positions" is sound advice only when the selected
# inputs are not synergistic. (The same error returns in Eq. 14.3.11 for heads: chapter 06.)
#
# > **Glossary** · mutual information 互信息 · conditional mutual information 条件互信息 ·
# > redundancy 冗余 · synergy 协同 · chain rule 链式法则 · co-information 交互信息 (共信息, with the
# > sign stated) · subadditivity 次可加性


# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
from attncourse.metrics import co_information


def joint_table(rule):
    """p(x1, x2, y) for two fair coins x1, x2 and y = rule(x1, x2): a (2, 2, 2) table."""
    p = torch.zeros(2, 2, 2, dtype=torch.float64)
    for a in (0, 1):
        for b in (0, 1):
            p[a, b, rule(a, b)] = 0.25
    return p


copy = torch.zeros(2, 2, 2, dtype=torch.float64)
copy[0, 0, 0] = copy[1, 1, 1] = 0.5  # x1 = x2 = y: pure redundancy
tables = {
    "x1 XOR x2": joint_table(lambda a, b: a ^ b),
    "x1 AND x2": joint_table(lambda a, b: a & b),
    "x1": joint_table(lambda a, b: a),
    "x1=x2=y": copy,
}
print(f"{'y =':10s} {'I(X1;Y)':>8} {'I(X2;Y)':>8} {'sum':>6} {'I(X1,X2;Y)':>11} {'co-info':>8}")
for name, p in tables.items():
    i1, i2 = mutual_information(p, 0, 2), mutual_information(p, 1, 2)
    i12, co = mutual_information(p, (0, 1), 2), co_information(p, 0, 1, 2)
    print(f"{name:10s} {i1:8.3f} {i2:8.3f} {i1 + i2:6.3f} {i12:11.3f} {co:8.3f}")
    assert abs(i12 - (i1 + i2 - co)) < 1e-12  # the chain rule holds exactly
xor = tables["x1 XOR x2"]
assert mutual_information(xor, 0, 2) < 1e-12 and abs(mutual_information(xor, (0, 1), 2) - 1) < 1e-12

# %% [markdown] slideshow={"slide_type": "skip"}
# ### A.10 Claim checks at a glance
#
# | source claim | verdict | correct statement / condition |
# |---|---|---|
# | Def. 14.3.1, Eq. (14.3.1): output = Σ αᵢxᵢ | ✓ | a convex combination: inside the hull of the values (A.1) |
# | Lemma 14.3.1, Eq. (14.3.2): softmax gives a distribution | ✓ | every weight > 0, the weights sum to 1 (section 2, A.2) |
# | Lemma 14.3.1, Eq. (14.3.2): the weights are P(i \| q) | ⚠ | an exact Bayes posterior for q ~ N(kᵢ, σ²I), uniform prior, **equal key norms**, temperature σ² (A.2) |
# | Def. 14.3.2, Eq. (14.3.3): H(X \| q) | ✓ | it is H(I \| Q = q) for one query; H(I \| Q) is its average (A.3) |
# | Lemma 14.3.2: 0 ≤ H ≤ log n | ✓ | the closed range [0, log n]; plus H ≥ −log max α and Fano's H ≤ h(max α) + (1 − max α) log(n − 1) (A.3) |
# | Cor. 14.3.1: compression, select k ≪ n positions | ⚠ | softmax keeps all n weights > 0; e^H can be ≪ n; exact sparsity needs masks (ch. 10) (A.3) |
# | Cor. 14.3.1: retention, keep I(Y; X) | — | not checked here: it needs a task Y; chapter 02 measures what passes a bottleneck |
# | Def. 14.3.3: Q/K/V roles | ✓ | weights ignore V, output linear in V (A.4) |
# | Lemma 14.3.3, Eq. (14.3.4): scaled dot product | ✓ | as a definition; the reason, var(q·k) = d_k, is Vaswani et al.'s (section 5); "(q, k_j)" lacks its s |
# | Lemma 14.3.3, Eq. (14.3.5): I(q; k_j) ≈ qᵀk_j | ✗ | a score is a *pointwise* MI up to a per-query constant (can be < 0); α-average log n − H ≥ 0 (A.5) |
# | Lemma 14.3.4: routing by QKᵀ, aggregation of V | ✓ | weights from queries and keys only, output linear in V (A.4, A.6) |
# | Lemma 14.3.4: d_k, d_v limit capacity | ⚠ | rank(QKᵀ) ≤ d_k but the weights can be full rank; d_k limits which routings exist; keys inside the hull are never selected (A.6) |
# | Thm. 14.3.1: d_k ≥ log₂ n | ⚠ | holds for sign codes; real keys: 64 keys selectable in d_k = 2; bits, not dims: b·d_k ≥ log₂ n, necessary only (section 5, A.7) |
# | Thm. 14.3.1: d_v ≥ H(Y \| X) | ✗ | the wrong quantity, and dims are not bits: I(X; Y) ≤ H(output) ≤ b·d_v bits; 8 bits pass through d_v = 1 (A.7) |
# | Def. 14.3.4, Eq. (14.3.6) | ⚠ | an objective of unstated direction: encourages diversity only when **maximised** (minimise −L) (A.8) |
# | Lemma 14.3.5, Eq. (14.3.7) | ✗ | chain rule with co-information, which is negative under synergy (XOR) (A.9) |
# | §14.3.1's opening: attention "adaptively allocates computation" | ⚠ | as a metaphor: every query costs the same n scores; what adapts is the weighting, not the compute |
#
# **Errata in one place.** Wrong as printed: Eq. (14.3.5), the d_v half of Thm. 14.3.1 and
# Lemma 14.3.5's "subadditivity". Right only under a condition: the d_k half of Thm. 14.3.1 (sign
# codes), Lemma 14.3.1 as a posterior, Lemma 14.3.4's capacity limit, Cor. 14.3.1's "k ≪ n", and
# Def. 14.3.4 (maximise it). Typo: Eq. (14.3.4) drops the s of s(q, k_j).
