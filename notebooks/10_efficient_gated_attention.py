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
# *高效、稀疏与门控注意力* — source 000, §14.3.7–14.3.8; source 002, §7–8
#
# A language model reads a book of 100,000 tokens. One attention head scores every token
# against every token: 10¹⁰ scores, and kept as float32 weights, as most code keeps them, 40 GB
# for one head of one layer. Yet such models run. Which part of that cost is real? This chapter
# takes attention's n² apart: it measures the wall, removes the memory half of it exactly, then
# trades exactness for time in three ways — read fewer keys, learn which keys to read, drop the
# softmax — and ends with a habit the softmax forces on every head, the attention sink, and the
# gate that removes the need for it.
#
# **After this chapter you can**
# - measure attention's time and memory against the length n, and say which of them must grow
#   like n²;
# - compute exact attention one tile of keys at a time with the online softmax, in memory that
#   grows like n;
# - write a mask that really masks, and say what local, strided and block patterns cost;
# - learn a mask by gradient descent through Gumbel-sigmoid samples;
# - derive linear attention from associativity, and predict the task it fails;
# - gate a head's output, and reproduce at CPU scale how the gate shrinks the attention sink.
#
# **Prerequisites**: chapter 01 (masked softmax attention), chapter 05 (a mask as a graph: what
# reaches a position through L layers); PyTorch at the level of `@`, `cumsum` and an Adam loop.
#
# **Time**: main path about 75 min, appendix about 50 min (by `scripts/reading_time.py`: prose
# at 150 words a minute, code at 20 lines a minute, and each exercise's stated time).
#
# **How to read it.** Sections 1–6 are the main path: each asks a question, gives the idea,
# lets you build it in an exercise, then uses it. The **appendix** checks every claim the sources
# make about these topics — some hold, some hold only under a condition, some are wrong — and
# can be skipped on a first reading.

# %% slideshow={"slide_type": "skip"}
import functools
import math

import matplotlib.pyplot as plt
import numpy as np
import torch

from attncourse.attention import (
    LearnableSparseMask,
    OutputGatedAttention,
    annealed_temperature,
    linear_attention,
    scaled_dot_product_attention,
    soft_masked_attention,
    softmax,
)
from attncourse.chapters import ch10_efficient_gated_attention as ch10
from attncourse.threads import side_by_side

torch.manual_seed(0)
np.random.seed(0)
torch.set_num_threads(1)  # small tensors throughout: a second thread would only wait
torch.set_flush_denormal(True)
torch.set_printoptions(precision=4, sci_mode=False)
plt.rcParams.update({"figure.dpi": 80, "figure.figsize": (7, 3)})

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 1. The n² wall
#
# Every query scores every key: n queries, n keys, n² scores. Source 002 (§8) lists
# bidirectional and causal self-attention as O(n²), and source 000 (Thm. 14.3.16) calls softmax
# attention "full access at O(n²) computation". The usual code also **keeps** the n² weights: the
# course's `scaled_dot_product_attention` returns them, and so does the source's own code.
#
# The chapter's running example is one causal head over n = 512 positions with d = 32, in
# float64. Its exact output is what every method below is compared with.
#
# > **Glossary** · computational complexity 计算复杂度 · memory (storage) 存储 · attention weights
# > 注意力权重 · quadratic 二次的

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
g = torch.Generator().manual_seed(0)
n, d = 512, 32
q, k, v = (torch.randn(n, d, generator=g, dtype=torch.float64) for _ in range(3))  # (n, d)
exact, weights = scaled_dot_product_attention(q, k, v, causal=True)  # (n, d), (n, n)
print(f"output {tuple(exact.shape)}: {exact.nelement():,} numbers")
print(f"weights {tuple(weights.shape)}: {weights.nelement():,} numbers")
for n_big in (16_384, 100_000):
    print(f"n = {n_big:>7,}: one head's weights in float32 take {4 * n_big**2 / 1e9:5.1f} GB")

# %% [markdown] slideshow={"slide_type": "-"}
# The output has n·d numbers; the weights, n², already 16 times more at n = 512. How does that
# show up in practice? The figure is measured: one causal forward pass at each n (d = 64, float32,
# one thread), each in a fresh process so that its peak memory is its own (the chapter's `costs`
# module; `python -m attncourse.chapters.ch10_efficient_gated_attention.costs --write` measures
# again on your machine, in about 20 minutes).

# %% slideshow={"slide_type": "subslide"}
# NBVAL_CHECK_OUTPUT
table = ch10.load_table()  # {(method, n, size): (ms, MB)}, measured
ch10.plot_costs(["plain"], table=table)
plt.show()
for n_big in (4096, 8192, 16384):
    ms, mb = table["plain", n_big, 0]
    print(f"plain attention, n = {n_big:>6,}: {ms:6.0f} ms, {mb:6.0f} MB")
assert table["plain", 16384, 0][1] > 3.5 * table["plain", 8192, 0][1]

# %% [markdown] slideshow={"slide_type": "-"}
# Each doubling of n multiplies both the time and the memory by about 4. At n = 16,384 one head
# takes 2 seconds and 1,538 MB (the table's MB are 2²⁰ bytes): the weights themselves are
# 16,384² float32 numbers, 1,024 MB, and the causal mask and its negation (two boolean n × n
# matrices, 256 MB each) nearly all the rest.
#
# **Takeaway.** Attention scores n² pairs, and the usual code stores all n² weights: time and
# memory both hit a quadratic wall.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 2. Exact attention in tiles: the online softmax
#
# The weights are only a means: the output needs n·d numbers. Could we compute it without ever
# holding all n² weights? The obstacle is the softmax: a weight $e^{s_j} / \sum_{j'} e^{s_{j'}}$
# needs the whole row's sum, and the largest score of the row (chapter 01 subtracts it to avoid
# overflow), before any weight is known.
#
# The way out is to read the keys **one tile at a time** and keep, for each query, three running
# quantities: the largest score so far m, the sum $l = \sum_j e^{s_j - m}$ and the unnormalised
# output $\mathrm{acc} = \sum_j e^{s_j - m} v_j$ over the keys seen. A new tile with scores $s'_j$
# and values $v'_j$ updates them (Milakov & Gimelshein 2018):
#
# $$m' = \max\bigl(m, \max_j s'_j\bigr), \qquad l' = l\,e^{m - m'} + \sum_j e^{s'_j - m'}, \qquad
# \mathrm{acc}' = \mathrm{acc}\,e^{m - m'} + \sum_j e^{s'_j - m'} v'_j .$$
#
# The factor $e^{m - m'} \le 1$ re-expresses the old terms relative to the new maximum. After the
# last tile, $\mathrm{acc}/l = \sum_j e^{s_j} v_j / \sum_j e^{s_j}$ (the $e^{-m}$ cancels):
# exactly softmax(s)·V, with only one tile of scores alive at a time. This is the core of FlashAttention
# (Dao et al. 2022).
#
# > **Glossary** · tile 分块 (tiling 分块计算) · online softmax 在线 softmax · running maximum 运行最大值 ·
# > rescaling 重新缩放 · recomputation 重计算

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 1 · One step of the online softmax
# **Difficulty** ●●● · **Time** 12 min · **Points** 3 · **Practises** the online-softmax update,
# rescaling by $e^{m - m'}$, a running maximum that starts at −∞
#
# Write `my_online_softmax_step(m, l, acc, scores, values)`: the state of T queries after some
# tiles — m (T, 1) the running maximum (−∞ before the first tile), l (T, 1) the running sum, acc
# (T, d) the unnormalised output — and the next tile, scores (T, c) and values (c, d) → the tuple
# `(m', l', acc')` of the update above. Return acc′ unnormalised: dividing by l is the caller's
# job, after the last tile. Keep the inputs' dtype and do not change them in place. One case
# brings scores of about 1000 after a state built from scores near 0: exponentiate only
# differences with the new maximum. At the first tile $e^{m - m'} = e^{-\infty} = 0$, which `exp`
# gives by itself. The check refuses PyTorch's softmax and attention functions and the course's
# package (the chapter's own step included).


# %% nbgrader={"grade": false, "grade_id": "ch10_online_softmax_step", "locked": false, "schema_version": 3, "solution": true} slideshow={"slide_type": "skip"}
def my_online_softmax_step(m, l, acc, scores, values):  # noqa: E741
    """(m (T, 1), l (T, 1), acc (T, d)) + tile (scores (T, c), values (c, d)) -> (m', l', acc')."""
    ### BEGIN SOLUTION
    m_new = torch.maximum(m, scores.amax(dim=-1, keepdim=True))  # (T, 1)
    p = torch.exp(scores - m_new)  # (T, c), <= 1
    shrink = torch.exp(m - m_new)  # (T, 1), 0 for the first tile (m = -inf)
    return m_new, l * shrink + p.sum(dim=-1, keepdim=True), acc * shrink + p @ values
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch10_online_softmax_step_test", "locked": true, "points": 3, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"} tags=["raises-exception"]
from attncourse.exercises.ch10 import check_online_softmax_step

check_online_softmax_step(my_online_softmax_step)
### BEGIN HIDDEN TESTS
import importlib

import attncourse.exercises.ch10 as ex
import attncourse.exercises.engine as engine

engine = importlib.reload(engine)  # fresh copies: a patched check does not count
ex = importlib.reload(ex)
ex.check_online_softmax_step(my_online_softmax_step, seed=105)
### END HIDDEN TESTS

# %% [markdown] slideshow={"slide_type": "-"}
# Now attention in tiles, in a dozen lines: a loop over tiles of keys that calls the update. It
# runs with your step; while exercise 1 is unfinished, with the course's.


# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
def tiled_attention(q, k, v, tile, step):
    """Causal attention, one tile of keys at a time; step(m, l, acc, scores, values) is the
    online-softmax update. Only an (n, tile) block of scores exists at any time."""
    n = q.shape[0]
    m = torch.full((n, 1), -math.inf, dtype=q.dtype)  # running maximum of each query's scores
    l = torch.zeros(n, 1, dtype=q.dtype)  # noqa: E741  running sum of e^(s - m)
    acc = torch.zeros(n, v.shape[1], dtype=q.dtype)  # running sum of e^(s - m) v
    for j0 in range(0, n, tile):
        keys = torch.arange(j0, min(j0 + tile, n))  # (c,) this tile's key positions
        s = q @ k[keys].T / math.sqrt(q.shape[1])  # (n, c) this tile's scores
        s = s.masked_fill(keys[None, :] > torch.arange(n)[:, None], -math.inf)  # causal
        m, l, acc = step(m, l, acc, s, v[keys])  # noqa: E741
    return acc / l  # (n, d_v)


for tile in (1, 7, 64, 512):
    try:
        tiled = tiled_attention(q, k, v, tile, my_online_softmax_step)
    except NotImplementedError:  # exercise 1 unfinished: the course's step
        tiled = tiled_attention(q, k, v, tile, ch10.online_softmax_step)
    error = float((tiled - exact).abs().max())
    print(
        f"tiles of {tile:>3} keys: largest block of scores {n} x {tile:<3}, "
        f"equal to the exact output (< 1e-12): {error < 1e-12}"
    )

# %% [markdown] slideshow={"slide_type": "-"}
# Every tile size gives the exact output; only the block of scores alive at one time changes.
# The package's `chunked_attention` is the same idea made fast (tiles of queries too, and the
# tiles above the causal diagonal skipped). Measured like plain attention:

# %% slideshow={"slide_type": "subslide"}
# NBVAL_CHECK_OUTPUT
ch10.plot_costs(["plain", "chunked"], table=table)
plt.show()
for method in ("plain", "chunked"):
    ms, mb = table[method, 16384, 0]
    print(f"{method:>8}, n = 16,384: {ms:6.0f} ms, {mb:7.1f} MB")
assert table["plain", 16384, 0][1] > 100 * table["chunked", 16384, 0][1]

# %% [markdown] slideshow={"slide_type": "-"}
# Memory now grows like n: 4.5 MB instead of 1,538 MB at n = 16,384, for the same output. Time
# does not: every pair is still scored, and the time still grows about fourfold per doubling.
# (Chunked is about 4 times faster than plain here because it skips the masked half and never
# writes a gigabyte of weights to memory — a constant, not a new order.) Training needs the
# weights again for the gradient; FlashAttention's backward pass recomputes each tile from the
# saved m and l instead of storing them (Dao et al. 2022), and so does `chunked_attention`.
#
# > **⚠ The source says** attention has "O(n²) computation and storage complexity" (source 002,
# > §7). The computation holds for exact attention: every pair is scored. The storage holds only
# > for code that keeps the weights — the usual implementation, and the source's own — not for
# > attention itself: in tiles it needs memory for one (n, tile) block, as measured above.
#
# **Takeaway.** The online softmax computes exact attention one tile at a time: memory O(n),
# time still O(n²).

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 3. Attend to fewer keys: sparse masks
#
# Tiles removed the memory wall, not the time wall: at n = 16,384, half a second per head. To do
# less work, score fewer pairs. A **sparse pattern** lets each query read only k keys, for
# O(n·k) work: a **local window**, the query's own key and the w keys before it; a **strided**
# pattern (Child et al. 2019), the band of the last s keys plus every s-th key further back;
# **blocks** of b positions that read only their own block; **LogSparse** (Li et al. 2019), the
# keys 1, 2, 4, 8, … positions back.

# %% slideshow={"slide_type": "subslide"}
fig, axes = plt.subplots(1, 4, figsize=(11, 2.9))
patterns = {
    "local, window 3": ch10.pattern_mask("local", 32, 3),
    "strided, stride 6": ch10.pattern_mask("strided", 32, 6),
    "block, size 8": ch10.pattern_mask("block", 32, 8),
    "LogSparse": ch10.log_sparse_mask(32),
}
for ax, (title, mask) in zip(axes, patterns.items()):
    ax.imshow(mask.numpy(), cmap="Greys", interpolation="nearest")
    ax.set(title=f"{title}\n{int(mask.sum())} of 528 causal pairs", xlabel="key j")
axes[0].set_ylabel("query i")
plt.tight_layout()
plt.show()

# %% [markdown] slideshow={"slide_type": "-"}
# > **⚠ The source says** sparse attention is $\alpha = \mathrm{Softmax}(M \odot S)$ with a 0/1
# > mask M and ⊙ the elementwise product (Eq. 14.3.43). That does not mask: a dropped pair's score
# > becomes 0, not −∞, and $e^0 = 1$ still gets weight — when the kept scores are negative, the
# > dropped keys even get *more* weight than the kept ones. The mask must act on the
# > exponentials: $\alpha_{ij} = M_{ij} e^{s_{ij}} / \sum_{j'} M_{ij'} e^{s_{ij'}}$, that is
# > softmax(S + log M) with log 0 = −∞.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
s_row = torch.tensor([-3.0, -3.0, 5.0], dtype=torch.float64)  # scores of one query
m_row = torch.tensor([1.0, 1.0, 0.0], dtype=torch.float64)  # keep keys 0 and 1, drop key 2
print("printed softmax(M ⊙ S):", softmax(m_row * s_row).numpy().round(4))
print("masked softmax        :", softmax(s_row, mask=m_row.bool()).numpy().round(4))

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 2 · A mask that really masks
# **Difficulty** ●●○ · **Time** 10 min · **Points** 3 · **Practises** Eq. (14.3.43) corrected:
# $\alpha \propto m\,e^{s}$, a dropped key that must not set the shift, a row with nothing kept
#
# Write `my_masked_weights(scores, mask)`: scores (..., T, S) and a mask of the same shape with
# values in [0, 1] — 0 drops a pair, 1 keeps it, values in between keep it softly (section 4
# needs those) — → weights (..., T, S) with $\alpha_{ij} = m_{ij} e^{s_{ij}} / \sum_{j'} m_{ij'}
# e^{s_{ij'}}$ over the last dimension. A row whose mask is all 0 gets weights 0, not NaN. Keep
# the dtype. One case has scores of ±1000 and a dropped key with by far the largest score: shift
# by the largest $s + \log m$ over the kept keys only, or every kept term underflows to 0. Write
# it from plain operations (`exp`, `log`, `amax`, `where` and `logsumexp` are fine); the check
# refuses PyTorch's softmax functions and the course's package (`soft_masked_attention`).


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


# %% nbgrader={"grade": true, "grade_id": "ch10_masked_weights_test", "locked": true, "points": 3, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"} tags=["raises-exception"]
from attncourse.exercises.ch10 import check_masked_weights

check_masked_weights(my_masked_weights)
### BEGIN HIDDEN TESTS
import importlib

import attncourse.exercises.ch10 as ex
import attncourse.exercises.engine as engine

engine = importlib.reload(engine)  # fresh copies: a patched check does not count
ex = importlib.reload(ex)
ex.check_masked_weights(my_masked_weights, seed=101)
### END HIDDEN TESTS

# %% [markdown] slideshow={"slide_type": "-"}
# A mask alone saves nothing: masked attention still computes all n² scores and then drops most
# of them. The saving needs code that never forms the dropped pairs. For blocks that is a reshape:
# n/b small attentions of b positions each, O(n·b) work, equal to masked attention on the running
# example. (The package's `local_attention` and `strided_attention` do the same for their
# patterns.)


# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
def block_attention_by_reshape(q, k, v, b):
    """Causal attention inside blocks of b positions: n / b attentions of size b, O(n b) work."""
    blocks = [t.reshape(-1, b, t.shape[-1]) for t in (q, k, v)]  # (n / b, b, d) each
    out, _ = scaled_dot_product_attention(*blocks, causal=True)  # (n / b, b, d)
    return out.reshape(q.shape[0], -1)  # (n, d)


masked, _ = scaled_dot_product_attention(q, k, v, ch10.pattern_mask("block", n, 64))
error = float((block_attention_by_reshape(q, k, v, 64) - masked).abs().max())
print(f"blocks of 64 by reshape == masked attention (< 1e-12): {error < 1e-12}")
for method in ("plain", "local", "strided", "block"):
    ms, mb = table[method, 16384, 0 if method == "plain" else 64]
    print(f"{method:>8} (64), n = 16,384: {ms:7.1f} ms, {mb:7.1f} MB")

# %% [markdown] slideshow={"slide_type": "-"}
# At n = 16,384 the three patterns with size 64 run in 7–35 ms against plain attention's 2 s
# (strided keeps n/64 = 256 far keys per query, so it grows faster than the other two). The price
# is what a query can read: one layer of a window reads w + 1 keys, of blocks b. Through layers the
# reach grows, as chapter 05 showed for any mask: a strided pattern connects every pair in two
# layers, a window of w needs ⌈(n − 1)/w⌉, and disjoint blocks never connect (the widget in
# section 5 shows it).
#
# > **Glossary** · sparse attention 稀疏注意力 · sliding window 滑动窗口 · strided pattern 跨步模式 ·
# > block 分块 · mask 掩码 · reach 可达范围
#
# **Takeaway.** Mask before the exponential (softmax(S + log M)), and skip the dropped pairs in
# the code: then k keys per query cost O(n·k).

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 4. Learn which keys to keep
#
# Fixed patterns guess where the information is. Source 000 (App. 14.3.6) learns the mask
# instead, by gradient descent on a task loss plus a sparsity penalty. The difficulty: keep or
# drop is a discrete choice, and a discrete choice has no gradient.
#
# The fix is a **relaxation**. Give each pair a logit l, its keep probability σ(l). A hard sample
# keeps the pair when $l + \log u - \log(1 - u) > 0$ for u uniform in (0, 1) — the logistic noise
# $\log u - \log(1-u)$ is the difference of two Gumbel variables, so this is the Gumbel-max
# trick over {keep, drop}. Replace the step by a sigmoid at a **temperature** τ (Jang et al.
# 2017; Maddison et al. 2017):
#
# $$m = \sigma\!\left(\frac{l + \log u - \log(1 - u)}{\tau}\right), \qquad P\bigl(m > \tfrac12\bigr)
# = \sigma(l) \ \text{ at every } \tau .$$
#
# m is a number in (0, 1) with a gradient with respect to l; as τ → 0 it becomes exactly 0 or 1.
# So training anneals τ downwards — geometrically, to a floor above 0. The logits start at
# $\log\frac{p}{1-p}$, so that every pair starts with keep probability p — what the source's
# "initialise M ~ Bernoulli(p)" intends (p = ½ gives l = 0). The appendix runs the source's
# pseudo-code as printed.
#
# > **Glossary** · Gumbel-softmax 耿贝尔 softmax · relaxation 松弛 · logit 对数几率 ·
# > temperature annealing 温度退火 · sparsity penalty 稀疏惩罚

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 3 · A relaxed keep-or-drop sample
# **Difficulty** ●●○ · **Time** 8 min · **Points** 2 · **Practises** the two-class Gumbel-softmax
# as a sigmoid, where the temperature goes
#
# Write `my_gumbel_sigmoid(logits, u, temperature)`: logits (...), u (...) uniform in (0, 1),
# one number per entry, drawn for you (use them: draw no random numbers of your own), and a
# temperature > 0 → the relaxed sample (...) in (0, 1). Derive it from the Gumbel-softmax over
# the two classes {keep: logit l, drop: logit 0}, softmax((l + g₁, g₀)/τ)[keep] with g₀, g₁
# independent Gumbel(0, 1). Facts you may use: g₁ − g₀ is logistic, with inverse distribution
# function $F^{-1}(u) = \log u - \log(1 - u)$; and softmax((a, b))[0] = σ(a − b). Keep the dtype.
# `torch.sigmoid` is fine; the check refuses PyTorch's softmax functions (`F.gumbel_softmax`
# among them) and the course's `gumbel_sigmoid`.


# %% nbgrader={"grade": false, "grade_id": "ch10_gumbel_sigmoid", "locked": false, "schema_version": 3, "solution": true} slideshow={"slide_type": "skip"}
def my_gumbel_sigmoid(logits, u, temperature):
    """logits (...), u (...) in (0, 1), temperature > 0 -> relaxed sample (...) in (0, 1)."""
    ### BEGIN SOLUTION
    noise = torch.log(u) - torch.log1p(-u)  # Logistic(0, 1) = g1 - g0
    return torch.sigmoid((logits + noise) / temperature)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch10_gumbel_sigmoid_test", "locked": true, "points": 2, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"} tags=["raises-exception"]
from attncourse.exercises.ch10 import check_gumbel_sigmoid

check_gumbel_sigmoid(my_gumbel_sigmoid)
### BEGIN HIDDEN TESTS
import importlib

import attncourse.exercises.ch10 as ex
import attncourse.exercises.engine as engine

engine = importlib.reload(engine)  # fresh copies: a patched check does not count
ex = importlib.reload(ex)
ex.check_gumbel_sigmoid(my_gumbel_sigmoid, seed=102)
### END HIDDEN TESTS

# %% [markdown] slideshow={"slide_type": "-"}
# Now learn a mask whose right answer is known. A hidden mask M* on T = 16 positions keeps 1–3
# random keys per query; every step draws fresh random q, k, v and asks the learned mask's
# attention to reproduce attention under M*. The package's `LearnableSparseMask` draws the
# relaxed samples of exercise 3 (`mask(tau)`), and `soft_masked_attention` applies them as in
# exercise 2. The whole training:


# %% slideshow={"slide_type": "skip"}
def learn_mask(seed, steps=200, T=16):
    """Learn a (T, T) mask whose attention reproduces attention under a hidden mask M*."""
    g = torch.Generator().manual_seed(seed)
    true = ch10.true_pattern(T, g)  # (T, T) bool, M*: 1-3 random keys per query
    mask = LearnableSparseMask(T)  # logits log(p / (1 - p)) = 0: keep probability 1/2
    opt = torch.optim.Adam(mask.parameters(), lr=0.1)
    for step in range(steps):
        tau = annealed_temperature(step, steps, 1.0, 0.05)  # 1 -> 0.05, geometrically
        q, k, v = (torch.randn(32, T, 8, generator=g) for _ in range(3))  # (B, T, d), fresh
        target, _ = soft_masked_attention(q, k, v, true)  # (B, T, d): attention under M*
        out, _ = soft_masked_attention(q, k, v, mask(tau, generator=g))  # a relaxed sample
        loss = ((out - target) ** 2).mean() + 0.01 * mask.density()  # task + sparsity
        opt.zero_grad()
        loss.backward()
        opt.step()
    return true, mask


# %% slideshow={"slide_type": "subslide"}
# NBVAL_IGNORE_OUTPUT
learned = {seed: learn_mask(seed) for seed in (0, 1)}
for seed, (true, mask) in learned.items():
    right = float((mask.binary_mask() == true).double().mean())
    print(
        f"seed {seed}: {int(true.sum())} true pairs, {int(mask.binary_mask().sum())} learned, "
        f"entries right {right:.3f}"
    )
    assert right >= 0.98
true, mask = learned[0]
fig, axes = plt.subplots(1, 2, figsize=(6, 2.8))
axes[0].imshow(true.numpy(), cmap="Greys")
axes[0].set(title="hidden mask M*", xlabel="key", ylabel="query")
axes[1].imshow(mask.keep_probability().detach().numpy(), cmap="Greys", vmin=0, vmax=1)
axes[1].set(title="learned keep probability σ(l)", xlabel="key")
plt.tight_layout()
plt.show()

# %% [markdown] slideshow={"slide_type": "-"}
# The learned keep probabilities end near 0 or 1 and recover M* entry by entry (asserted: at
# least 98 % of the 256 entries, two seeds).
#
# **Takeaway.** A relaxed sample σ((l + log u − log(1 − u))/τ) gives a keep/drop choice a
# gradient; annealing τ makes the choice hard by the end of training.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 5. Drop the softmax: linear attention
#
# Sparse patterns save work by not reading keys. Another way keeps every key and makes the sum
# cheap. In softmax attention the score $e^{q_i \cdot k_j}$ ties each query to each key. Replace it
# by a product of features, $\phi(q_i)^\top \phi(k_j)$ with φ ≥ 0 (Eq. 14.3.46; Katharopoulos et
# al. 2020 use φ(x) = elu(x) + 1). Matrix products associate, $(\phi(Q)\phi(K)^\top)V =
# \phi(Q)(\phi(K)^\top V)$, so
#
# $$\mathrm{out}_i = \frac{\sum_j \phi(q_i)^\top \phi(k_j)\, v_j^\top}{\sum_j \phi(q_i)^\top \phi(k_j)}
# = \frac{\phi(q_i)^\top \bigl(\sum_j \phi(k_j) v_j^\top\bigr)}{\phi(q_i)^\top \bigl(\sum_j \phi(k_j)\bigr)}:$$
#
# the sums over keys are computed once, n·d_k·d_v work instead of n²·d. With a causal mask they
# run over j ≤ i, and the same computation is a recurrence — a transformer as an RNN:
#
# $$S_i = S_{i-1} + \phi(k_i) v_i^\top, \quad z_i = z_{i-1} + \phi(k_i), \quad
# \mathrm{out}_i = \frac{\phi(q_i)^\top S_i}{\phi(q_i)^\top z_i},$$
#
# a state of d_k × d_v + d_k numbers, whatever the length.
#
# > **Glossary** · linear attention 线性注意力 · feature map 特征映射 · kernel 核函数 · associativity
# > 结合律 · recurrent form 循环形式 · prefix sum 前缀和

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 4 · Causal linear attention
# **Difficulty** ●●○ · **Time** 10 min · **Points** 3 · **Practises** Eq. (14.3.46) with a causal
# mask, as prefix sums or a recurrence
#
# Write `my_causal_linear_attention(q, k, v)`: q, k (..., T, d_k), v (..., T, d_v) — the leading
# dimensions hold batches and heads, or are absent — → (..., T, d_v), with φ(x) = elu(x) + 1
# (`torch.nn.functional.elu` is allowed) and $\mathrm{out}_i = \sum_{j \le i} \phi(q_i)^\top
# \phi(k_j)\, v_j / \sum_{j \le i} \phi(q_i)^\top \phi(k_j)$: the current position j = i included,
# no ε in the denominator. Keep the dtype. Any correct computation passes — the (T, T) matrix of
# kernels cut to j ≤ i, prefix sums with `torch.cumsum`, or the recurrence — but the last two
# are the point. The check refuses PyTorch's softmax and attention functions and the course's
# package (`linear_attention`).


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


# %% nbgrader={"grade": true, "grade_id": "ch10_causal_linear_attention_test", "locked": true, "points": 3, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"} tags=["raises-exception"]
from attncourse.exercises.ch10 import check_causal_linear_attention

check_causal_linear_attention(my_causal_linear_attention)
### BEGIN HIDDEN TESTS
import importlib

import attncourse.exercises.ch10 as ex
import attncourse.exercises.engine as engine

engine = importlib.reload(engine)  # fresh copies: a patched check does not count
ex = importlib.reload(ex)
ex.check_causal_linear_attention(my_causal_linear_attention, seed=104)
### END HIDDEN TESTS

# %% [markdown] slideshow={"slide_type": "-"}
# On the running example, the package's prefix-sum form equals the (n, n) matrix of
# Eq. (14.3.46) — and differs from softmax attention, which it does not approximate:

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
phi = lambda x: torch.nn.functional.elu(x) + 1  # noqa: E731
kernel = (phi(q) @ phi(k).T).tril()  # (n, n) phi(q_i) . phi(k_j) for j <= i
matrix_form = kernel / kernel.sum(dim=-1, keepdim=True) @ v  # (n, d)
prefix_form, _ = linear_attention(q, k, v, causal=True, eps=0.0)  # (n, d), no (n, n) matrix
print(
    "prefix sums == matrix form (< 1e-12):", float((prefix_form - matrix_form).abs().max()) < 1e-12
)
print(f"state: {d * d + d:,} numbers for any n; the (n, n) weights: {n * n:,}")
print(f"largest difference from softmax attention: {float((prefix_form - exact).abs().max()):.2f}")

# %% [markdown] slideshow={"slide_type": "-"}
# Measured, the package's causal linear attention is the memory-hungry one at short lengths: its
# prefix sums keep one d_k × d_v state per position, 4,096 numbers per position at d = 64, so it
# beats storing the weights only from n > 4,096. Its time in the table grows faster than linearly
# (×3.0 from 8,192 to 16,384), but timed step by step (appendix A.7) it grows about linearly, and
# nearly all of it is the prefix sum over those n states, a memory-bound step. The recurrence above keeps one state instead.

# %% slideshow={"slide_type": "subslide"}
# NBVAL_CHECK_OUTPUT
ch10.plot_costs(["plain", "chunked", "linear"], table=table)
plt.show()
for n_big in (4096, 8192, 16384):
    ms, mb = table["linear", n_big, 0]
    print(f"linear, n = {n_big:>6,}: {ms:6.0f} ms, {mb:5.0f} MB")

# %% [markdown] slideshow={"slide_type": "-"}
# **What linear attention cannot do.** The bidirectional weight matrix $A = D^{-1}\phi(Q)\phi(K)^\top$
# passes through d_φ dimensions, so rank A ≤ d_φ, whatever n is (Lemma 14.3.24). A is
# non-negative with rows summing to 1, so its eigenvalues satisfy |λ| ≤ 1 and at most rank A of
# them are non-zero: trace A ≤ d_φ. Store n keys and query each with itself: the **average weight
# on the right key is at most d_φ / n**. Softmax has no such limit:

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
g = torch.Generator().manual_seed(6)
keys = torch.nn.functional.normalize(torch.randn(64, 8, generator=g, dtype=torch.float64), dim=-1)
A = ch10.linear_attention_matrix(keys, keys)  # (64, 64): each stored key queries itself
print(
    f"linear, d_phi = 8, n = 64: rank {ch10.numerical_rank(A)}, "
    f"mean weight on the right key {float(A.trace()) / 64:.4f} <= 8 / 64 = {8 / 64}"
)
for beta in (1.0, 10.0, 100.0):
    A_soft = softmax(beta * keys @ keys.T)  # (64, 64)
    print(
        f"softmax, inverse temperature {beta:>5}: mean weight on the right key "
        f"{float(A_soft.trace()) / 64:.4f}"
    )

# %% [markdown] slideshow={"slide_type": "-"}
# **Reproduction: associative recall beyond d_k pairs** (Schlag et al. 2021). 32 key–value pairs
# (keys distinct, of 64; values of 16), each embedded as one vector, then a query key; one
# attention layer with d_k = 8 must read out the value (`ch10.RecallModel`, Adam, 250 steps).
# Schlag et al. show that the memory $\sum_j \phi(k_j) v_j^\top$ holds about d_φ pairs without
# interference; here 32 pairs meet d_φ = 8. **Pass** (seeds 0 and 1): softmax ≥ 0.95 accuracy;
# linear ≤ 0.6, with mean weight on the right pair ≤ d_k / n = 0.25.


# %% slideshow={"slide_type": "subslide"}
# NBVAL_IGNORE_OUTPUT
def recall_model(kind, seed):
    torch.manual_seed(seed)
    model = ch10.RecallModel(kind, key_dim=8)
    ch10.train_recall(model, 32, steps=250, seed=seed, progress=False)
    return model


# the four runs are independent: side_by_side trains them at once, one per CPU core
runs = [(kind, seed) for kind in ("softmax", "linear") for seed in (0, 1)]
recall = dict(zip(runs, side_by_side(recall_model, runs, desc="recall models")))
for (kind, seed), model in recall.items():
    accuracy, right = ch10.recall_scores(model, 32)
    print(
        f"{kind:>7}, seed {seed}: accuracy {accuracy:.3f}, mean weight on the right pair {right:.3f}"
    )
    if kind == "softmax":
        assert accuracy >= 0.95
    else:
        assert accuracy <= 0.6 and right <= 0.25
fig, axes = plt.subplots(1, 2, figsize=(8, 3.2))
for ax, kind in zip(axes, ("softmax", "linear")):
    W = ch10.recall_weight_matrix(recall[kind, 0], 32)  # (32, 32): stored key j as the query
    ax.imshow(W.numpy(), cmap="viridis", vmin=0, vmax=float(W.max()))
    ax.set(title=f"{kind}: weights when key j asks", xlabel="pair", ylabel="query = key of pair")
plt.tight_layout()
plt.show()

# %% [markdown] slideshow={"slide_type": "-"}
# Softmax puts nearly all of a query's weight on its own pair (a bright diagonal); linear
# attention smears it over the pairs, and its diagonal cannot average more than 1/4. The same
# limit returns on a copy task: a one-layer causal model with 16 dimensions per head copies 8
# tokens with either attention, but at 32 tokens linear attention fails while softmax copies them
# all (the appendix runs both).
#
# **Play with it.** Choose the length n, a sparse pattern and its size. The widget shows the
# pattern's first positions, which keys reach the **last** query through 1–4 layers (dark =
# reached), and the measured time and memory of plain, chunked, linear and the chosen sparse
# attention at that n. Try: strided at n = 16,384 reaches everything in two layers; a window of
# 16 reaches 16 more keys per layer; blocks never leave their block; plain attention's memory bar
# passes a gigabyte at n = 16,384.

# %% slideshow={"slide_type": "slide"}
# NBVAL_IGNORE_OUTPUT
ch10.sparsity_widget()

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Takeaway.** Linear attention is an RNN with a d_k × d_v state: O(n) time and memory, but a
# state that holds only about d_k items, so recall beyond that fails.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 6. Gate the output: the attention sink
#
# Softmax weights sum to 1. A head that has nothing useful to read for some query must still put
# its weight somewhere. Trained models put it on the first token (often a beginning-of-sequence
# token, BOS), whose value they make harmless: an **attention sink** (named by Xiao et al. 2023,
# who found that streaming models break when the first tokens are evicted). The sink is a
# workaround for a head that cannot say "nothing".
#
# A **gate** lets it say so. Qiu et al. 2025 multiply each head's output by a sigmoid of the
# query's input, $Y'_h = Y_h \odot \sigma(x W_g + b_g)_h$: a gate near 0 switches the head off for
# that query, whatever its weights are. Source 000 (Def. 14.3.19, Eq. 14.3.48) writes
# $g = \sigma(W_g[q; k; v])$, $Z = g \odot \mathrm{Attention}(q, k, v)$; in self-attention q, k, v
# of one position are functions of that position's input, so it is a gate of the same kind (its
# class, App. 14.3.7, needs one line fixed: appendix). The gate, written out and compared with
# the package's `OutputGatedAttention` (one gate per head):
#
# > **Glossary** · gate 门控 · sigmoid S 型函数 · attention sink 注意力汇聚 (注意力沉没) · dormant
# > query 休眠查询 · head-wise gate 逐头门控

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
torch.manual_seed(0)
layer = OutputGatedAttention(8, num_heads=2, headwise=True).double()
x_g = torch.randn(1, 6, 8, dtype=torch.float64)  # (B, T, d_model)
z, _ = layer.head_outputs(x_g, causal=True)  # (B, H, T, d_h): each head's attention output
gate = torch.sigmoid(layer.gate_proj(x_g))  # (B, T, H): one gate per query and head
y = layer.merge_heads(gate.transpose(1, 2).unsqueeze(-1) * z)  # gate each head, then W_O
print(
    "sigmoid(x W_g) * head output, then W_O == OutputGatedAttention:",
    torch.allclose(y, layer(x_g, causal=True)[0]),
)

# %% [markdown] slideshow={"slide_type": "-"}
# **Reproduction: a gate shrinks the attention sink** (Qiu et al. 2025: in their trained 1.7B and
# 15B models the attention on the first token fell from 46.7 % to 4.8 %). The task is Guo et al.
# 2024's bigram-backcopy: BOS, then 22 tokens from a fixed random bigram table, except that after
# one of 4 trigger tokens the next token repeats the token *before* the trigger. A one-layer,
# one-head, attention-only model (d = 32) must copy at triggers and do nothing elsewhere — at the
# other ("dormant") queries the head has nothing to add. AdamW, 400 steps; plain softmax against
# the same model with a head-wise output gate. Measured at query positions 4–22: the mean weight
# on BOS at dormant queries, where an even spread would give 0.087. **Pass** (seeds 0 and 1):
# both models copy (accuracy after a trigger ≥ 0.7); softmax puts ≥ 0.4 of its dormant weight on
# BOS; the gated model ≤ 0.3, and less than half of softmax's.

# %% slideshow={"slide_type": "subslide"}
# NBVAL_IGNORE_OUTPUT
runs = [(kind, seed) for seed in (0, 1) for kind in ("softmax", "gated-headwise")]
train = functools.partial(ch10.train_sink, steps=400, progress=False)
sinks = dict(zip(runs, side_by_side(train, runs, desc="sink models")))  # one run per CPU core
for (kind, seed), (_, r) in sinks.items():
    gates = "" if kind == "softmax" else f", gate at dormant queries {r.gate_dormant:.2f}"
    print(
        f"{kind:>14}, seed {seed}: BOS weight at dormant queries {r.bos_dormant:.3f}, "
        f"copy accuracy {r.copy_accuracy:.3f}{gates}"
    )
for seed in (0, 1):
    plain, gated = sinks["softmax", seed][1], sinks["gated-headwise", seed][1]
    assert plain.copy_accuracy >= 0.7 and gated.copy_accuracy >= 0.7
    assert plain.bos_dormant >= 0.4
    assert gated.bos_dormant <= 0.3 and gated.bos_dormant < 0.5 * plain.bos_dormant
example = ch10.bigram_backcopy(1, torch.Generator().manual_seed(19))[:, :-1]  # (1, 23)
triggers = [i for i, t in enumerate(example[0].tolist()) if 1 <= t <= 4 and i >= 2]
fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
for ax, kind in zip(axes, ("softmax", "gated-headwise")):
    with torch.no_grad():
        _, (w_ex,) = sinks[kind, 0][0](example)  # (1, 1, T, T)
    ax.imshow(w_ex[0, 0].numpy(), cmap="viridis", vmin=0, vmax=1)
    ax.set_yticks(triggers, [f"trigger {i}" for i in triggers], fontsize=7)
    ax.set(title=f"{kind} (seed 0): one sequence", xlabel="key (0 = BOS)")
plt.tight_layout()
plt.show()

# %% [markdown] slideshow={"slide_type": "-"}
# Without a gate the dormant queries put most of their weight on BOS (the bright first column);
# with the gate, the gate closes for them (its value there is a few hundredths) and their weights
# stay spread out. At the trigger rows both models read the previous token and copy it. The sink
# is much reduced, down towards an even spread in these runs — reduced, not forbidden: the
# asserts require less than half of softmax's and at most 0.3, and the numbers move with the seed
# and the CPU. What this scale does not reproduce: the paper's gains in perplexity, stability and
# long contexts.
#
# **Takeaway.** Softmax makes a head spend its weight somewhere; an output gate lets it spend
# nothing, and the sink shrinks.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Summary
#
# - Attention scores **n² pairs**; the usual code also **stores** the n² weights — 1,024 MB per
#   head at n = 16,384.
# - The **online softmax** (running max m, sum l, accumulator acc, each rescaled by
#   $e^{m - m'}$) computes exact attention one tile at a time: memory O(n), time still O(n²).
# - **Sparse patterns** (window, strided, blocks) cost O(n·k) for k keys per query — but only with
#   code that skips the dropped pairs, and only if the mask acts on the exponentials:
#   softmax(S + log M), never softmax(M ⊙ S).
# - A mask can be **learned**: Gumbel-sigmoid samples σ((l + log u − log(1 − u))/τ) with τ
#   annealed to a floor above 0, and a sparsity penalty.
# - **Linear attention** replaces $e^{q \cdot k}$ by φ(q)·φ(k); associativity turns it into an RNN
#   with a d_k × d_v state, O(n), whose capacity is about d_k items: recall beyond it fails.
# - Softmax makes every head spend its weight, hence the **attention sink**; an **output gate**
#   lets a head output nothing, and the sink shrinks.

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Check yourself**
#
# 1. The next tile's largest score is below the running max m. What happens to m, l and acc?
# 2. With the printed Softmax(M ⊙ S), can a dropped key get a larger weight than every kept key?
#    When?
# 3. Linear attention (bidirectional, d_φ = 8) stores n = 64 pairs, and each stored key queries
#    the memory once. At most what average weight lands on the right pair?
# 4. At n = 16,384, which of time and memory does attention in tiles reduce by orders of
#    magnitude, and which by a constant at most?
# 5. A causal head has nothing to read at query 10. Without a gate, what must its weights still
#    do? What does an output gate change?
#
# <details><summary>Answers</summary>
#
# 1. m stays, so $e^{m - m'} = 1$: l and acc keep their old terms unchanged and add the tile's
#    terms $e^{s_j - m}$, each below 1.
# 2. Yes, exactly when every kept score of that row is negative: a dropped key's score becomes 0
#    and $e^0 = 1$ is larger than every kept $e^{s_j}$.
# 3. 8/64 = 1/8: the weight matrix has rank ≤ 8, its eigenvalues have |λ| ≤ 1, so its trace —
#    the sum of the 64 weights on the right pairs — is at most 8.
# 4. Memory: 1,538 MB → 4.5 MB measured, because only one tile of scores exists at a time. Time
#    stays quadratic: every pair is still scored (the measured factor of about 4 comes from
#    skipping the masked half and not writing the weights, a constant).
# 5. They must still sum to 1 over keys 0…10, so they land somewhere — in trained models on the
#    first token, whose value is made harmless. A gate σ(·) ≈ 0 multiplies the head's output to
#    about 0 whatever the weights are, so the weights no longer need a sink.
# </details>
#
# **Next** — this is the course's last chapter. Chapter 05's reach through layers and chapter
# 06's heads are the places to take these mechanisms next: `chunked_attention`,
# `local_attention`, `strided_attention`, `block_attention`, `LearnableSparseMask`,
# `linear_attention` and `OutputGatedAttention` work on any (B, H, T, d) tensors.

# %% [markdown] slideshow={"slide_type": "skip"}
# ## Appendix · The source, checked
#
# Source 000 §14.3.8 (linear and gated attention, hierarchical abstraction) and the
# sparse-attention part of §14.3.7 (Def. 14.3.17 – App. 14.3.6; its entropy regularisers are
# chapter 06's), and source 002 §7–8 (the advantages, challenges and comparison tables of its
# note on bidirectional attention) state the ideas above as definitions, lemmas, theorems and
# listings. This appendix checks each one. Marks: **✓ holds** · **⚠ holds only under a
# condition** (stated) · **✗ wrong as printed** (with a counterexample and the correct
# statement) · **—** not checkable here (said why).
#
# ### A.1 Source 002's listings, run as printed
#
# Source 002 closes with three functions that return tables of claims: the advantages of
# bidirectional attention (global context, parallel computation, long-range modelling, rich
# representations, each with a description, applications and an effect), its challenges (O(n²)
# computation and storage, dependence on position encodings, diluted attention,
# interpretability, each with an impact and a solution), and a comparison of attention types
# (direction of flow, visible range, complexity, use).

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
for name in ("bidirectional_advantages", "bidirectional_challenges", "compare_attention_types"):
    listing = getattr(ch10.listings, "SOURCE_002_" + name.upper())
    printed = ch10.run_listing(listing)[name]()
    print(f"{name}() runs as printed and returns {len(printed)} entries: {', '.join(printed)}")
print("sparse attention, as printed:", printed["稀疏注意力"])

# %% [markdown] slideshow={"slide_type": "skip"}
# **Claim check — the three listings of source 002 §7–8 ✓ run.** They compute nothing: each
# returns a dictionary of statements, checked one by one in A.2 and A.3.
#
# ### A.2 The cost and reach of each kind of attention (source 002 §8)
#
# The comparison table gives each kind of attention a complexity and a visible range. The work
# and, in a plain implementation, the memory of one layer are proportional to the (query, key)
# pairs it keeps; `ch10.pair_count` counts them without building the n × n mask (the tests
# check its formulas against the masks): dense bidirectional n², causal n(n + 1)/2,
# cross-attention n·m, a causal window of w earlier keys about n(w + 1), Child et al.'s strided pattern
# with stride s about n(s + n/(2s)), blocks of b about n(b + 1)/2, LogSparse about n log₂ n.

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
print(
    f"{'n':>6} | {'dense n²':>11} {'causal':>11} {'cross n·n/2':>11} | {'local w=64':>10} "
    f"{'strided √n':>10} {'block 64':>9} {'LogSparse':>9} | {'strided/(n√n)':>13} "
    f"{'LogSparse/(n log2 n)':>20}"
)
for n_big in (256, 1024, 4096, 16384):
    s = math.isqrt(n_big)
    strided, logsparse = ch10.pair_count("strided", n_big, s), ch10.pair_count("log-sparse", n_big)
    print(
        f"{n_big:>6} | {n_big * n_big:>11,} {ch10.pair_count('dense', n_big):>11,} "
        f"{n_big * (n_big // 2):>11,} | {ch10.pair_count('local', n_big, 64):>10,} {strided:>10,} "
        f"{ch10.pair_count('block', n_big, 64):>9,} {logsparse:>9,} | "
        f"{strided / n_big**1.5:>13.3f} {logsparse / (n_big * math.log2(n_big)):>20.3f}"
    )
assert ch10.pair_count("dense", 1024) == 1024 * 1025 // 2
assert all(1.3 < ch10.pair_count("strided", m, math.isqrt(m)) / m**1.5 < 1.6 for m in (1024, 16384))

# %% [markdown] slideshow={"slide_type": "skip"}
# **Claim check — source 002 §8, bidirectional and masked self-attention O(n²), cross-attention
# O(n × m) ✓.** n² pairs; causal exactly n(n + 1)/2, half the work, still quadratic; n·m for n
# queries over m encoder positions.
#
# **Claim check — source 002 §8, sparse attention "O(n√n) or O(n log n)" ⚠.** It depends on the
# pattern: strided with s = √n keeps about 1.5 n√n pairs, LogSparse about n log₂ n, but a fixed
# window or fixed blocks keep O(n) pairs, and a pattern can be anything in between. **Correct
# statement**: a pattern with k keys per query costs O(n·k), in an implementation that skips the
# dropped pairs (section 3); k = √n and k = log n are two common choices.
#
# **Claim check — source 002 §8, masked self-attention's visible range "当前位置之前" ("before
# the current position") ⚠.** The causal mask keeps the diagonal: query i reads keys 0…i, the
# current position included (section 1's `causal=True`, `pattern_mask("dense", …)`). The entry
# should read "the current position and those before it".
#
# **Claim check — source 002 §8's directions and uses.** Bidirectional self-attention, "all
# directions, the whole sequence" **✓** (one layer keeps every pair). Masked self-attention,
# "forward only" **✓** at every depth, and "for generation and language modelling" **✓**: chapter 05
# measures both — no key after a query is ever reached through any number of causal layers, and
# a bidirectional language model reads the very token it must predict and cannot generate.
# Cross-attention, "encoder → decoder, the whole encoder sequence" **✓**: one-way, every encoder
# position in one layer (chapter 05). Sparse attention, "restricted all directions" **⚠**: it
# depends on the pattern — the strided and LogSparse patterns are causal (forward only), windows
# and blocks can be either; "for long sequences" **✓** (section 3: 7–35 ms against 2 s at
# n = 16,384). The uses "understanding tasks, feature extraction" and "sequence-to-sequence
# tasks" are advice (—; chapters 02 and 05 train such models).
#
# **How far does a sparse pattern reach?** One layer lets query i read only its kept keys;
# through L layers, with the residual stream carrying each position's own state, it reads
# everything within L hops (chapter 05: $R_L = (I \lor M)^L$ as a boolean matrix product). The
# table gives the fewest layers after which every position depends on every earlier one
# (`layers_to_connect`, n = 64, from the n × n matrices) and after which the last query depends
# on all n keys (closed forms, checked against the matrices in the tests).

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
print(
    f"{'pattern':>20} | {'all pairs, n = 64':>17} | "
    + " | ".join(f"last query, n = {m:>5}" for m in (1024, 16384))
)
for name, kind, size_of in (
    ("dense (causal)", "dense", lambda m: 1),
    ("local, window 8", "local", lambda m: 8),
    ("strided, stride √n", "strided", lambda m: math.isqrt(m)),
    ("block, size 8", "block", lambda m: 8),
):
    small = ch10.layers_to_connect(ch10.pattern_mask(kind, 64, size_of(64)), max_layers=16)
    large = [ch10.layers_to_reach_all(kind, m, size_of(m)) for m in (1024, 16384)]
    print(
        f"{name:>20} | {str(small if small else 'never'):>17} | "
        + " | ".join(f"{str(r if r else 'never'):>21}" for r in large)
    )
assert ch10.layers_to_connect(ch10.pattern_mask("strided", 256, 16)) == 2

# %% [markdown] slideshow={"slide_type": "skip"}
# **Claim check — source 002 §8, sparse attention sees "部分序列" (part of the sequence) ⚠.** Per
# layer ✓; through layers the reach grows: Child et al.'s strided pattern connects every pair in
# **two** layers (their claim, for stride ≈ √n), a window of w needs ⌈(n − 1)/w⌉ layers, and
# disjoint blocks **never** connect — a pattern needs some path between blocks (a stride, a
# global token, a shifted block) to be more than n/b independent short sequences.
#
# ### A.3 Advantages and challenges of bidirectional attention (source 002 §7)
#
# **"Global context: every position accesses the whole context" ✓**: one bidirectional layer
# keeps all n² pairs (A.2's first column).
#
# **"Parallel computation: training tens of times faster than an RNN"** is about sequential
# steps. An RNN layer needs n steps one after another; an attention layer one matrix product of
# all pairs. How much faster that is depends on the hardware and on n. The cell times one layer of
# each, forward and backward, on one CPU thread (the fastest of three runs); the ratio it prints
# is that of the machine it runs on.

# %% slideshow={"slide_type": "skip"}
# NBVAL_IGNORE_OUTPUT
import time

from attncourse.attention import MultiHeadAttention
from attncourse.rnn import VanillaRNN
from attncourse.threads import single_thread

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


rnn_ms, mha_ms = fastest_ms(lambda: rnn(x_seq)), fastest_ms(lambda: mha(x_seq, causal=True)[0])
print(
    f"T = 256, d = 64, batch 8, forward + backward: RNN {rnn_ms:.1f} ms (256 sequential steps), "
    f"attention {mha_ms:.1f} ms (1 step): ratio {rnn_ms / mha_ms:.1f}"
)

# %% [markdown] slideshow={"slide_type": "skip"}
# **Claim check — source 002 §7, "training tens of times faster than an RNN" ⚠.** The sequential
# depth is exact: n steps against 1. The speed is not fixed by the maths: attention does about
# n²·d work for its scores and weighted sums against the RNN's n·d² (at n = 256, d = 64 attention
# does more), but in a few large products instead of n small dependent ones, so the wall-clock
# ratio depends on the machine and can go either way on one CPU thread. The large gains come from
# hardware that runs the n² products in parallel (a GPU), where the RNN's n steps cannot be.
# **Correct statement**: attention removes the O(n) chain of sequential steps; whether that makes
# training faster, and by how much, depends on n, d and the hardware.
#
# Three more claims are exact properties, checked below. "Needs explicit position information":
# without positions bidirectional attention is permutation-equivariant — permuting the inputs
# permutes the outputs, so order is invisible. For causal attention the mask itself leaks
# position: a layer that spreads its weight evenly over the prefix gives position i the output
# 1/(i + 1) on the sequence BOS, x, x, x, … (Haviv et al. 2022 train causal language models
# without any position encoding). "Attention can be too diffuse, the weight of key information
# diluted": one relevant key whose score exceeds the n − 1 others' by Δ gets weight
# e^Δ/(e^Δ + n − 1), which falls to 0 as n grows. The source's remedy "structured attention"
# helps exactly here: under a window (the query's own key and w earlier ones) that contains the
# relevant key, it competes with w others only and gets e^Δ/(e^Δ + w), whatever n is.

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
print(
    "bidirectional, no positions: max |attn(P x) - P attn(x)| < 1e-12:",
    ch10.permutation_equivariance_error() < 1e-12,
)
print(
    "causal, BOS then identical tokens: outputs",
    [round(float(o), 4) for o in ch10.causal_positions_from_counting()],
)
print(f"{'n':>6} | relevant key's weight, gap 4: dense | window of 64 | gap needed for 1/2 (dense)")
for m in (16, 256, 4096, 65536):
    window = ch10.relevant_weight(min(m, 65), 4.0)  # the key and 64 others
    print(
        f"{m:>6} | {ch10.relevant_weight(m, 4.0):>35.4f} | {window:>12.4f} | {math.log(m - 1):>26.2f}"
    )

# %% [markdown] slideshow={"slide_type": "skip"}
# **Claim check — source 002 §7, "needs explicit position information" ✓ for bidirectional
# attention** (permutation-equivariant, exact) **and ⚠ for causal attention** (the mask leaks
# position: 1/(i + 1) above).
#
# **Claim check — source 002 §7, "attention may be too diffuse; the key information's weight
# diluted" ⚠**: at a fixed score gap, e^Δ/(e^Δ + n − 1) → 0; but a model can grow its scores, and
# a gap Δ = Δ₀ + ln(n − 1) keeps the weight at 1/(1 + e^{−Δ₀}) at every n (chapter 05 measures
# it) — dilution is a property of the scores learnt, not a fixed cost. **"Long-range modelling
# avoids the decay of sequential models" ⚠**: no decay with distance along the path (one step,
# chapter 04), but a relevant key is diluted by the number of keys, not by its distance — the
# two are different things. **Its solutions "attention regularisation, structured attention" ⚠**:
# a window or block keeps the relevant key's weight at e^Δ/(e^Δ + w) only if the key is inside
# it; entropy regularisers are chapter 06's.
#
# **Claim check — source 002 §7, "O(n²) computation and storage complexity".** Computation **✓**
# for exact attention (every pair is scored; sections 1–2). Storage **⚠**: it holds for the
# standard implementation and whenever the weights are kept — the source's own code keeps them —
# but exact attention runs in O(n·tile) memory (section 2, measured: 4.5 MB instead of 1,538 MB at
# n = 16,384). Its impact "long sequences are hard to process" ✓ (section 1). **Its solutions
# "sparse attention, linear attention, local windows" ⚠**: each cuts the cost at a price — sparse
# patterns and windows read fewer keys per layer (section 3), linear attention holds about d_k
# items (section 5) — and the exact remedy for the memory, tiles, is missing from the list.
#
# **Not checkable here —**: the effects "markedly better handling of ambiguity" and "learned
# representations generalise well", and "multiple heads capture many kinds of relation", are
# benchmark claims with nothing to measure at this scale, and so are the applications listed
# for each advantage; "improved position encodings" is chapter 07's subject.
#
# **Claim check — source 002 §7, interpretability and its solutions "attention visualisation,
# analysis tools" ⚠**: chapter 05 measures that the raw weight maps of one layer mislead, while
# rollout and flow, which compose the layers, agree with gradients and ablations.
#
# ### A.4 Sparse masks as printed (Def. 14.3.17, Eq. 14.3.43)
#
# Section 3's box showed one row. On real scores — a causal window of 2 on 16 random queries —
# the printed Softmax(M ⊙ S) puts a large share of every query's weight on the keys it was meant
# to drop:

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
from attncourse.attention import block_attention, local_attention, strided_attention

g = torch.Generator().manual_seed(0)
q_s, k_s = (torch.randn(16, 16, generator=g, dtype=torch.float64) for _ in range(2))
scores = q_s @ k_s.T / 4.0  # (16, 16) scaled dot-product scores, d = 16
window = ch10.pattern_mask("local", 16, 2)  # (16, 16) each query keeps itself and 2 earlier keys
printed = softmax(window.double() * scores)  # Eq. (14.3.43) as printed
leak = printed.masked_fill(window, 0.0).sum(dim=-1)  # weight on dropped keys, per query
print(
    f"the printed formula puts {float(leak.mean()):.3f} of each query's weight on dropped keys "
    f"on average (up to {float(leak.max()):.3f})"
)
assert float(leak.min()) > 0.3
g = torch.Generator().manual_seed(1)
q3, k3, v3 = (torch.randn(2, 4, 203, 16, generator=g, dtype=torch.float64) for _ in range(3))
for name, sparse, size in (
    ("local", local_attention, 8),
    ("strided", strided_attention, 14),
    ("block", block_attention, 32),
):
    ours, _ = sparse(q3, k3, v3, size, causal=True)
    reference, _ = scaled_dot_product_attention(q3, k3, v3, ch10.pattern_mask(name, 203, size))
    error = float((ours - reference).abs().max())
    print(f"{name:>8} attention == masked attention (n = 203, float64, < 1e-12): {error < 1e-12}")
    assert error < 1e-12
causal_01 = torch.ones(203, 203, dtype=torch.float64).tril()  # a 0/1 mask as numbers
soft, _ = soft_masked_attention(q3, k3, v3, causal_01)
assert float((soft - scaled_dot_product_attention(q3, k3, v3, causal=True)[0]).abs().max()) < 1e-12

# %% [markdown] slideshow={"slide_type": "skip"}
# **Claim check — Def. 14.3.17, Eq. (14.3.43) ✗.** Multiplying the scores by a 0/1 mask does not
# remove a pair: it replaces its score by 0. **Correct statement**: α = softmax(S + log M) with
# log 0 = −∞ — in code `scores.masked_fill(~M, -inf)` — so a dropped key gets weight exactly 0;
# equivalently α_ij = M_ij e^{s_ij} / Σ_j′ M_ij′ e^{s_ij′} (exercise 2), which also makes sense
# for a soft mask with values in [0, 1] (`soft_masked_attention`, equal to masked attention for a
# 0/1 mask, checked above). The package's `local_attention`, `strided_attention` and
# `block_attention` compute exactly masked attention while skipping the dropped pairs.
#
# ### A.5 Does sparsity lose information? (Lemma 14.3.23, Thm. 14.3.15)
#
# $$I_{\text{sparse}} \le I_{\text{dense}} \qquad (14.3.44) \qquad\qquad
# M^* = \arg\min_M \bigl[ I(X; Y) - I_M(X; Y) \bigr] \qquad (14.3.45)$$
#
# ("the optimal sparse pattern minimises the trade-off between information loss and sparsity").
# Both can be computed exactly on a small example: X = n independent fair bits, each position's
# value its bit, and Y_M the output of one attention layer under mask M. Y is a function of X, so
# I(X; Y) = H(Y), computed by enumerating all 2ⁿ inputs (`ch10.information`).

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
x_bits = ch10.all_bit_vectors(4)  # (16, 4) every input, equally likely
dense, diagonal = torch.ones(4, 4, dtype=torch.bool), torch.eye(4, dtype=torch.bool)
random_scores = torch.randn(4, 4, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
rows = (
    ("dense, uniform scores (every query outputs the mean)", dense, None),
    ("sparse: each query keeps only its own key", diagonal, None),
    ("sparse: causal window of 1", ch10.pattern_mask("local", 4, 1), None),
    ("dense, random scores", dense, random_scores),
)
for label, mask_4, score in rows:
    print(f"{label:>55}: I(X; Y) = {ch10.information(ch10.attend(x_bits, mask_4, score)):.4f} bits")

# %% [markdown] slideshow={"slide_type": "skip"}
# **Claim check — Lemma 14.3.23 ✗.** The sparse "copy your own bit" layer keeps all 4 bits, the
# dense uniform layer only H(Binomial(4, ½)) = 2.03 bits: I_sparse > I_dense. A dense layer can
# lose information by *averaging*; a sparse one need not. And a dense layer with generic scores
# keeps everything (its output is an injective function of X), so for deterministic layers the
# inequality says nothing about sparsity. **Correct statements**: (i) under a mask, query i's
# output is a function of its visible keys only, so it carries no information about the others
# given those: I(Y_i; X_masked | X_visible) = 0; (ii) over all scores, dense attention can do
# whatever sparse attention does (add −c to the dropped scores and let c → ∞), so the *best*
# dense layer is at least as informative as the best sparse one — a statement about capacity, not
# about a given pair of layers.
#
# For Thm. 14.3.15, enumerate every mask on n = 3 positions that leaves each query a key (343 of
# them) and evaluate the printed objective, with and without a penalty λ per kept pair (the
# "sparsity" the theorem's text mentions but its formula lacks).

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
masks_3 = ch10.mask_information_table(3)  # (mask, kept pairs, I(X; Y_M)) for uniform scores
generic = ch10.mask_information_table(
    3, torch.randn(3, 3, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
)
print(f"masks: {len(masks_3)}; dense (9 pairs) keeps {masks_3[-1][2]:.4f} bits of H(X) = 3")
negative = sum(masks_3[-1][2] - info < -1e-9 for _, _, info in masks_3)
print(
    f"uniform scores: the objective I_dense - I_M is negative for {negative} of {len(masks_3)} masks"
)
for penalty in (0.0, 0.05):
    best = ch10.best_masks(masks_3, penalty)
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
    best = ch10.best_masks(generic, penalty)
    print(
        f"random scores, penalty {penalty}: {len(best)} minimisers, kept pairs "
        f"{sorted({b[1] for b in best})}, dense among them: {any(b[1] == 9 for b in best)}"
    )

# %% [markdown] slideshow={"slide_type": "skip"}
# **Claim check — Thm. 14.3.15 ✗ as printed.** The objective has no sparsity term, and with
# uniform scores it is *negative* for all but 7 of the 343 masks (336, printed above: most sparse
# masks keep more than the dense mask's 1.81 bits, 174 of them all 3): the dense mask is **not a
# minimiser**, and the minimiser is not unique (174 ties). With generic scores a layer's output is
# an injective function of every key some query sees, so I_M just counts the keys the mask uses:
# the objective is 0 for every mask that covers all keys (dense and "each query reads a different
# key" tie) and blind to how many pairs are kept. **Correct statement**: a trade-off needs both
# terms, e.g. M* = arg min_M [ −I_M + λ · |M| ] (or a budget |M| ≤ k); and with deterministic
# layers I_M is usually H(X), so the information must be measured with noise or finite precision
# (or replaced by the task loss, as App. 14.3.6 does) before it can choose a pattern.
#
# ### A.6 The learnable mask as printed (App. 14.3.6)
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
# Run as printed (PyTorch's `F.gumbel_softmax`, a 16 × 16 score matrix, T_iter = 10, T = 1), it
# goes wrong in four places: `gumbel_softmax` normalises over the keys, so each *row* of the mask
# sums to 1 — a distribution that picks about one key per query, not an independent keep/drop
# decision per pair; the temperature reaches exactly 0 at t = T_iter, where the relaxed sample
# divides by 0 and becomes NaN; the returned `mask > 0.5` is the last random sample (all False
# where NaN), not the learned parameters; and `softmax(mask * S)` repeats Eq. (14.3.43)'s error.
# Its initialisation is off too: Bernoulli(p) samples used as logits give keep probabilities
# σ(0) = ½ and σ(1) = 0.73, not p; a keep probability p needs the logit log(p/(1 − p)).

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
from attncourse.attention import gumbel_sigmoid

trace, returned = ch10.printed_learnable_sparse(
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
print("keep probabilities of the logits 0 and 1:", torch.sigmoid(torch.tensor([0.0, 1.0])).tolist())
logits_grid = torch.tensor([-2.0, -0.5, 0.0, 1.0, 3.0], dtype=torch.float64).expand(100_000, 5)
worst = 0.0
for tau in (0.1, 1.0, 5.0):
    sample = gumbel_sigmoid(logits_grid, tau, generator=torch.Generator().manual_seed(3))
    kept_share = (sample > 0.5).double().mean(dim=0)
    worst = max(worst, float((kept_share - torch.sigmoid(logits_grid[0])).abs().max()))
print("the repair: P(m > 1/2) = sigmoid(l) at temperatures 0.1, 1, 5 (error < 0.01):", worst < 0.01)

# %% [markdown] slideshow={"slide_type": "skip"}
# The repaired version is section 4's: independent Gumbel-sigmoid samples per pair, α ∝ m e^s,
# τ annealed to a floor, the learned logits > 0 returned. The same training with the mask entering
# as printed, softmax(m ⊙ S), may well find the right mask, but its attention outputs stay wrong
# (output error above 0.1, asserted): the chapter's `learn_sparse_mask` (the loop of section 4,
# with the form as a parameter) measures the output error of the final binary mask on fresh data
# for both forms.

# %% slideshow={"slide_type": "skip"}
# NBVAL_IGNORE_OUTPUT
for seed in (0, 1):
    for form in ("corrected", "printed"):
        r = ch10.learn_sparse_mask(seed, form, progress=False)
        right = float((r.learned == r.true).double().mean())
        print(
            f"{form:>9}, seed {seed}: entries right {right:.3f}, output error {r.output_error:.2e}"
        )
        if form == "corrected":
            assert torch.equal(r.learned, learned[seed][1].binary_mask())  # section 4's run
            assert r.output_error < 1e-6 or not bool((r.learned == r.true).all())
        else:
            assert r.output_error > 0.1

# %% [markdown] slideshow={"slide_type": "skip"}
# **Claim check — App. 14.3.6 ⚠.** The idea works: a mask relaxed with Gumbel noise and an
# annealed temperature is learned by gradient descent and finds the right pattern (section 4).
# As printed it does not run to the end: per-row `gumbel_softmax` is the wrong relaxation (one key
# per query), the linear schedule T(1 − t/T_iter) hits 0, `softmax(mask * S)` does not mask (its
# outputs stay wrong even when its mask is right), it returns a random sample, and Bernoulli(p)
# logits do not give keep probability p. **Correct version**: independent binary Concrete samples
# per pair (`gumbel_sigmoid`), α ∝ m e^s (`soft_masked_attention`), a schedule with τ_end > 0
# (`annealed_temperature`), logits initialised to log(p/(1 − p)), and the learned logits > 0 as
# the pattern (`LearnableSparseMask.binary_mask`).
#
# ### A.7 Linear attention (Def. 14.3.18, Lemma 14.3.24, Thm. 14.3.16)
#
# $$\alpha_i = \frac{\phi(q)^\top \phi(k_i)}{\sum_j \phi(q)^\top \phi(k_j)} \qquad (14.3.46)
# \qquad\qquad C_{\text{linear}} = \mathrm{rank}(\phi\phi^\top) \le d_\phi \qquad (14.3.47)$$
#
# Three computations of causal linear attention agree: the (n, n) matrix of Eq. (14.3.46), the
# recurrence with one d_k × d_v state, one position at a time, and the package's prefix sums.
# The causal cut of the matrix, unlike the bidirectional one, has full rank.

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
g = torch.Generator().manual_seed(5)
q_l, k_l, v_l = (torch.randn(3, 50, 8, generator=g, dtype=torch.float64) for _ in range(3))
matrix_l, _ = ch10.parallel_linear_attention(q_l, k_l, v_l)
recurrent_l = ch10.recurrent_linear_attention(q_l, k_l, v_l)
package_l, _ = linear_attention(q_l, k_l, v_l, causal=True, eps=0.0)
print("recurrent == matrix form (< 1e-12):", float((recurrent_l - matrix_l).abs().max()) < 1e-12)
print("package == matrix form (< 1e-12):", float((package_l - matrix_l).abs().max()) < 1e-12)
A_causal = ch10.linear_attention_matrix(keys, keys, causal=True)  # section 5's 64 keys, d_phi = 8
print(
    f"rank of linear attention over 64 keys, d_phi = 8: bidirectional "
    f"{ch10.numerical_rank(A)}, causal {ch10.numerical_rank(A_causal)}"
)

# %% [markdown] slideshow={"slide_type": "skip"}
# **Does linear attention approximate softmax?** The source says φ maps into a
# higher-dimensional space so that the kernel approximates softmax. elu + 1 does not (same
# dimension, a different kernel). Positive random features do (Choromanski et al. 2021,
# "Performer"): φ(x) = exp(Wᵀx − ‖x‖²/2)/√m with W ~ N(0, I) has E[φ(q)ᵀφ(k)] = e^{qᵀk}, so as the
# number m of features grows, linear attention converges to softmax attention — slowly, and with
# rank ≤ m.

# %% slideshow={"slide_type": "skip"}
# NBVAL_IGNORE_OUTPUT
g = torch.Generator().manual_seed(7)
qp, kp = (torch.randn(64, 8, generator=g, dtype=torch.float64) / 8**0.25 for _ in range(2))
target = softmax(qp @ kp.T)  # softmax(q k^T / sqrt(8))
tv_elu = ch10.total_variation(ch10.linear_attention_matrix(qp * 8**0.25, kp * 8**0.25), target)
print(f"elu + 1 (8 features): total variation from softmax {tv_elu:.3f}")
tvs = {}
for m in (16, 256, 4096, 65536):
    W = torch.randn(8, m, generator=g, dtype=torch.float64)
    kernel_m = ch10.positive_random_features(qp, W) @ ch10.positive_random_features(kp, W).T
    tvs[m] = ch10.total_variation(kernel_m / kernel_m.sum(-1, keepdim=True), target)
    print(f"positive random features, m = {m:>5}: total variation {tvs[m]:.3f}")
assert tvs[65536] < 0.1 < tv_elu and tvs[65536] < tvs[16] / 3

# %% [markdown] slideshow={"slide_type": "skip"}
# **Capacity at matched load.** Section 5's recall asks 32 pairs of a d_k = 8 memory. Does causal
# linear attention escape the limit on a copy task because the causal mask lifts the rank (the
# causal matrix above has full rank)? The copy task (Katharopoulos et al. 2020, §4.1, shrunk): L
# random tokens (of 9), a separator, the same L again; a one-layer causal model (d = 32, 2 heads
# of 16 dimensions, learned positions, Pre-LN, MLP; `ch10.train_copy`), Adam, 200 steps. At
# L = 8 the 8 tokens fit in a 16-dimensional state; at L = 32 they do not — the load of the recall
# task. **Pass** (seed 0): at L = 8 both ≥ 0.95 token accuracy; at L = 32 softmax ≥ 0.95 and
# linear ≤ 0.6.

# %% slideshow={"slide_type": "skip"}
# NBVAL_IGNORE_OUTPUT
runs = [(kind, length) for length in (8, 32) for kind in ("softmax", "linear")]
train = functools.partial(ch10.train_copy, steps=200, seed=0, progress=False)
copiers = {
    run: model for run, (model, _) in zip(runs, side_by_side(train, runs, desc="copy models"))
}
for length in (8, 32):
    accuracy = {
        kind: ch10.copy_accuracy(copiers[kind, length], length) for kind in ("softmax", "linear")
    }
    print(
        f"copy {length:>2} tokens: softmax {accuracy['softmax']:.3f}, linear {accuracy['linear']:.3f}"
    )
    assert accuracy["softmax"] >= 0.95
    if length == 8:
        assert accuracy["linear"] >= 0.95
    else:
        assert accuracy["linear"] <= 0.6

# %% [markdown] slideshow={"slide_type": "skip"}
# Linear attention copies 8 tokens and fails at 32 while softmax copies both: at matched load the
# causal model fails like the recall model. The full rank of the causal matrix does not help,
# because each query still reads the prefix through one d_k × d_v state; what decides is how many
# items that state must hold.
#
# **Where the time goes.** Section 5's table shows linear attention's time ×3.0 from n = 8,192 to
# 16,384, faster than linear growth. The chapter's `stage_table` times the forward pass again and
# each of its steps separately (`ch10.causal_linear_stages`, in a fresh process per length, on the
# same machine as the cost table): the n outer products φ(k_j)v_jᵀ, their prefix sum over the
# positions as the package stores them (positions first, one 64 × 64 state after another), the
# read-out φ(q_i)ᵀS_i — and the same prefix sum on a copy stored positions last.

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
stages = ch10.load_stages()  # {n: {stage: ms}}, measured
ms_8k, ms_16k = table["linear", 8192, 0][0], table["linear", 16384, 0][0]
print(f"cost table, linear attention: {ms_8k:.0f} ms -> {ms_16k:.0f} ms, x{ms_16k / ms_8k:.1f}")
print(f"{'stage table':>28} | {'n = 8,192':>9} | {'n = 16,384':>10} | ratio")
for stage, ms in stages[16384].items():
    print(
        f"{stage:>28} | {stages[8192][stage]:9.0f} | {ms:10.0f} | {ms / stages[8192][stage]:5.1f}"
    )
whole, prefix = stages[16384]["whole forward"], stages[16384]["prefix sum"]
slow = prefix / stages[16384]["prefix sum, positions last"]
print(
    f"at 16,384: the prefix sum is {prefix / whole:.0%} of the whole forward pass, and "
    f"{slow:.1f} times slower than the same sum stored positions last"
)
assert prefix > 0.6 * whole and slow > 2

# %% [markdown] slideshow={"slide_type": "skip"}
# Measured again, the whole forward pass grows ×2.2 per doubling, not ×3.0, and every step about
# twofold: the ×3.0 of the cost table comes from its measurement at n = 8,192, which ran much
# faster than this one (the course's machine is shared with other work, and a memory-bound step
# feels that most). Nearly all of the time is the prefix sum, and it is several times slower than
# it needs to be: stored positions first, consecutive positions of one entry of the state lie
# 64 × 64 numbers (16 KB) apart, so the sum reads memory with that stride; stored positions last,
# the same sum reads memory in order. **Correct statement** (for section 5's "faster than n"):
# the work is linear in n; the time is dominated by a memory-bound prefix sum over n·d_k·d_v
# numbers, whose speed depends on how the states are laid out and on what else the machine is
# doing.
#
# **Claim check — Def. 14.3.18, Eq. (14.3.46) ✓** as a formula: it is what the package computes
# (three forms agree). **"φ maps to a higher-dimensional space" so that it "approximates Softmax"
# ⚠**: only for feature maps built for it (random features with m ≫ d: here the distance halves for
# every 16 times more features); the common elu + 1 keeps d_φ = d_k and is a different attention.
#
# **Claim check — Lemma 14.3.24, Eq. (14.3.47) ✓ for bidirectional linear attention**: rank A ≤
# d_φ (measured: 8 for n = 64), so the mean weight on the right one of n stored keys is at most
# d_φ/n (section 5). **⚠ for causal linear attention**: the causal cut has full rank (64), so the
# rank is not the capacity; the state each query reads still has d_φ × d_v numbers, and recall and
# copying fail beyond about d_φ items (section 5, above).
#
# **Claim check — Thm. 14.3.16, softmax: "full information access, but O(n²) computation" ✓**:
# every query reads every key (recall: ≈ 1.0 at 32 pairs), at n² scores (section 1). The theorem
# claims computation only; the memory is section 2's matter. **Linear: "O(n) computation, but
# information capacity may be limited" ✓**: O(n·d_k·d_v) work and one state per query; recall of
# 32 pairs with d_k = 8 fails, and copying fails at matched load (32 tokens, 16 dimensions per
# head) while 8 tokens copy.
#
# ### A.8 Gated attention (Def. 14.3.19, Lemma 14.3.25, App. 14.3.7)
#
# $$g = \sigma(W_g [q; k; v]), \quad Z = g \odot \mathrm{Attention}(q, k, v) \qquad (14.3.48)
# \qquad\qquad I(Z; X) \approx g \cdot I(\mathrm{Attention}; X) \qquad (14.3.49)$$
#
# App. 14.3.7 gives a class. Run as printed: it has no imports, so `nn` is undefined; with
# `torch` and `torch.nn as nn` added, `math` is undefined; with `math` and `F` added too, the gate
# is reshaped to (B, T, 1, H, 1), which cannot multiply the (B, H, T, T) weights. Over every batch
# size, length and head count from 1 to 4:

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
print(
    "as printed, no imports:",
    ch10.try_call(lambda: ch10.run_listing(ch10.listings.GATED_ATTENTION_14_3_7)),
)
printed_class = ch10.source_gated_attention(ch10.IMPORTS_A_READER_ADDS)
print("with torch, nn:", ch10.try_call(lambda: printed_class(8, 2)(torch.randn(2, 5, 8))))
outcomes = ch10.survey_source_gated_attention()
runs = [shape for shape, outcome in outcomes.items() if outcome == "runs"]
print(f"with math and F too: runs for {len(runs)} of {len(outcomes)} (B, T, H): {runs}")
print(
    "  e.g. (B, T, H) = (2, 5, 2):",
    ch10.try_call(lambda: ch10.source_gated_attention()(8, 2)(torch.randn(2, 5, 8))),
)
print(f"one line changed, {ch10.PRINTED_GATE_LINE!r} -> {ch10.FIXED_GATE_LINE!r}:")
fixed_outcomes = ch10.survey_source_gated_attention(fixed=True)
print(f"  runs for {sum(o == 'runs' for o in fixed_outcomes.values())} of {len(fixed_outcomes)}")
torch.manual_seed(0)
fixed = ch10.source_gated_attention(fixed=True)(8, 2).double()
ours = ch10.package_gated_from_source(fixed).double()
x_fixed = torch.randn(3, 5, 8, dtype=torch.float64)
with torch.no_grad():
    gap = float((fixed(x_fixed) - ours(x_fixed)[0]).abs().max())
print("  fixed listing == attncourse GatedAttention with its weights (< 1e-12):", gap < 1e-12)
assert gap < 1e-12

# %% [markdown] slideshow={"slide_type": "skip"}
# **Claim check — App. 14.3.7 ✗ as printed**: missing imports, and the gate's reshape makes it fail
# for every shape but B = T = H = 1. **✓ after one line**: `gate.transpose(1, 2).unsqueeze(-1)`
# gives one gate per head and query, (B, H, T, 1). The fixed class is the package's
# `GatedAttention` (whose gate network reads [q; k; v] whole instead of head by head — the same
# function up to a permutation of the gate's input columns, used above to copy the weights).
#
# **Claim check — Def. 14.3.19, Eq. (14.3.48) ⚠**: [q; k; v] concatenates vectors of *one*
# position, so in self-attention the gate is a function of the query position alone; it cannot
# depend on which keys are attended. That is exactly what output gating needs (section 6).
#
# **Lemma 14.3.25** claims I(Z; X) ≈ g · I(Attention; X): the gate scales the information passed.
# Exactly, for A uniform on 8 levels (3 bits) and a gate g: a deterministic gate Z = gA; an
# erasure gate that passes A with probability g; and a gate followed by noise, Z = gA + N(0, 1),
# whose fair baseline is g times the information the same channel passes without the gate,
# g · I(A + N; A) (the last column).

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
levels = torch.arange(8, dtype=torch.float64)
no_gate = ch10.gaussian_channel_information(levels, 1.0)  # I(A + N; A)
print(
    f"{'gate g':>6} | {'g * I(A)':>8} | {'Z = g A':>7} | {'erasure':>7} | "
    f"{'Z = g A + N':>11} | {'g * I(A + N; A)':>15}"
)
for gain in (1.0, 0.5, 0.25, 0.1):
    noisy = ch10.gaussian_channel_information(levels, gain)
    print(
        f"{gain:>6} | {gain * 3:>8.3f} | {ch10.information(gain * levels[:, None]):>7.3f} | "
        f"{ch10.erasure_information(3.0, gain):>7.3f} | {noisy:>11.3f} | {gain * no_gate:>15.3f}"
    )

# %% [markdown] slideshow={"slide_type": "skip"}
# **Claim check — Lemma 14.3.25, Eq. (14.3.49) ✗.** A deterministic gate g > 0 is invertible:
# Z = gA carries all 3 bits for every g. With noise after the gate, the information falls faster
# than g: at g = 0.1 it is 0.037 bits, against g · I(A + N; A) = 0.126 for the same channel —
# about g² for small g, since the signal-to-noise ratio goes with g². **Correct statement**:
# I(Z; X) = g · I(A; X) holds for an *erasure* gate, one that passes A with probability g and
# blocks it otherwise; a multiplicative gate changes the signal-to-noise ratio of whatever
# follows, not the information in Z itself.
#
# **Claim check — Qiu et al. 2025 (reproduced in section 6): an output gate reduces the attention
# sink ✓ at this scale.** The BOS weight at dormant queries falls from ≥ 0.4 to ≤ 0.3 and below
# half of the ungated model's (asserted, two seeds): much reduced, towards an even spread in these
# runs — not removed by construction, since the gate leaves the softmax as it is.
#
# ### A.9 Hierarchical abstraction (Lemma 14.3.26, Thm. 14.3.17)
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

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
x4 = ch10.all_bit_vectors(4)  # (16, 4)
y_xor = (x4[:, 0] != x4[:, 1]).double()[:, None]  # (16, 1) the label
z1 = ch10.attend(x4, ch10.pattern_mask("block", 4, 2, causal=False))[:, [1, 3]]  # block means
z2 = z1.mean(dim=1, keepdim=True)  # the overall mean
z3 = (z2 >= 0.5).double()  # a threshold
stack = (("X", x4), ("Z1 = block means", z1), ("Z2 = mean", z2), ("Z3 = [Z2 >= 1/2]", z3))
print(f"{'layer':>18} | {'I(Z; Y)':>8} | {'H(Z) = I(X; Z) = I(Z_prev; Z)':>30}")
previous = None
for name, z_l in stack:
    print(f"{name:>18} | {ch10.information(z_l, y_xor):>8.4f} | {ch10.information(z_l):>30.4f}")
    if previous is not None:
        assert ch10.information(z_l, y_xor) <= ch10.information(previous, y_xor) + 1e-12
    previous = z_l


def probe_mse(features, target):
    """Least-squares linear probe (with a bias): the mean squared error it cannot remove."""
    design = torch.cat([features, torch.ones(len(features), 1, dtype=torch.float64)], dim=1)
    solution = torch.linalg.lstsq(design, target).solution
    return float(((design @ solution - target) ** 2).mean())


relu_layer = torch.relu(x4[:, :2].sum(dim=1, keepdim=True) - 1)  # = x1 AND x2 for bits
richer = torch.cat([x4, relu_layer], dim=1)
print(
    f"linear probe for Y: on X MSE {probe_mse(x4, y_xor):.4f}, "
    f"on [X, relu(x1 + x2 - 1)] MSE < 1e-12: {probe_mse(richer, y_xor) < 1e-12}; "
    f"I(Z; Y) {ch10.information(x4, y_xor):.4f} -> {ch10.information(richer, y_xor):.4f} bits"
)

# %% [markdown] slideshow={"slide_type": "skip"}
# **Claim check — Lemma 14.3.26, Eq. (14.3.50) ✗.** Information about Y never grows with depth
# (1 → 1 → 0.16 → 0.01 bits here; exact, and a theorem). **Correct statement**: what a deeper
# layer can increase is *usable* information — how much a simple read-out (here a linear probe)
# can extract: one ReLU unit leaves I(Z; Y) = 1 bit unchanged but takes the probe's error from
# 0.25 to 0 (XOR becomes linear). That is the sense in which deeper representations are "more
# abstract" (Xu et al. 2020 call it V-information).
#
# **Claim check — Thm. 14.3.17, Eq. (14.3.51) ✗.** For deterministic layers the left side is
# H(Z^(l)) whatever β_l is: 4, 3, 2.03, 0.90 bits above — not a constant. **Correct statement**:
# the information bottleneck (Tishby et al.) is an *objective* for one representation,
# min I(X; Z) − β I(Z; Y), a trade-off chosen by β, not a conservation law between layers; and it
# needs stochastic (or quantised) representations, since for a deterministic network I(X; Z) is
# just H(Z).
#
# ### A.10 The promise of §14.3.7
#
# **Claim check — §14.3.7's opening, "optimisation methods based on information theory, by
# controlling the information properties of the attention distribution directly, achieve better
# training and generalisation" —.** No setting, baseline or measure is given, so there is nothing
# to reproduce as stated. What the course does measure about these methods: sparse masks change
# the cost and what a query can read, not (by themselves) the accuracy (sections 3–4; A.5 shows the
# information criterion cannot even choose a mask); the entropy and diversity regularisers are
# chapter 06's, where minimising the printed diversity loss equalises head entropies instead of
# diversifying the heads.
#
# ### A.11 Claim checks at a glance
#
# | source claim | verdict | correct statement / condition |
# |---|---|---|
# | 002 §7–8 listings (`bidirectional_advantages`, `bidirectional_challenges`, `compare_attention_types`) | ✓ run | they return dictionaries of claims, checked one by one below (A.1) |
# | 002 §7: global context, every position reads the whole sequence | ✓ | one bidirectional layer keeps all n² pairs (A.2) |
# | 002 §7: parallel computation, "training tens of times faster than an RNN" | ⚠ | sequential steps 1 vs n (exact); the wall-clock ratio depends on n, d and the hardware (A.3) |
# | 002 §7: long-range modelling avoids the decay of sequential models | ⚠ | one step at any distance (ch. 04), but a relevant key is diluted by the number of keys, e^Δ/(e^Δ + n − 1), not by its distance (A.3) |
# | 002 §7: rich representations from multiple heads; effects "better handling of ambiguity", "good generalisation" | — | benchmark claims, nothing to measure at this scale (A.3) |
# | 002 §7: O(n²) computation | ✓ | exact attention scores every pair (sections 1–2) |
# | 002 §7: O(n²) storage | ⚠ | for code that keeps the weights (the usual kind, and the source's own); exact attention in tiles needs O(n·tile): 4.5 MB instead of 1,538 MB at n = 16,384 (section 2, A.3) |
# | 002 §7: impact "long sequences are hard to process" | ✓ | time and memory ×4 per doubling of n: 2 s and 1,538 MB per head at n = 16,384 (section 1) |
# | 002 §7: solutions "sparse attention, linear attention, local windows" | ⚠ | each cuts the cost at a price (fewer keys per layer; a state of about d_k items); tiles, the exact remedy for memory, are missing (sections 2–5, A.3) |
# | 002 §7: needs explicit position information, bidirectional attention | ✓ | permutation-equivariant without positions, exactly (A.3) |
# | 002 §7: needs explicit position information, causal attention | ⚠ | the causal mask leaks position: an even spread gives position i the output 1/(i + 1) (A.3) |
# | 002 §7: attention may be too diffuse, key information diluted | ⚠ | at a fixed score gap: e^Δ/(e^Δ + n − 1) → 0; a gap Δ₀ + ln(n − 1) keeps the weight exactly (A.3; chapter 05) |
# | 002 §7: solutions "attention regularisation, structured attention" | ⚠ | a window keeps e^Δ/(e^Δ + w) only if it contains the relevant key; the regularisers are chapter 06's (A.3) |
# | 002 §7: interpretability, and its solutions "visualisation, analysis tools" | ⚠ | raw weight maps mislead; rollout and flow agree with gradients and ablations (chapter 05 measures it) (A.3) |
# | 002 §7: the applications listed for each advantage (tagging, parsing, long documents, transfer learning) | — | examples, nothing to measure here (A.3) |
# | 002 §7: solution "improved position encodings" | — | chapter 07's subject (A.3) |
# | 002 §8: bidirectional and masked self-attention O(n²), cross-attention O(n × m) | ✓ | pairs n², n(n + 1)/2, n·m (A.2) |
# | 002 §8: bidirectional self-attention: all directions, the whole sequence | ✓ | one layer keeps every pair (A.2) |
# | 002 §8: masked self-attention: forward only | ✓ | at every depth: no key after a query is reached through any number of causal layers (chapter 05 measures it) (A.2) |
# | 002 §8: masked self-attention sees the positions "before the current one" | ⚠ | and the current one: the causal mask keeps the diagonal (A.2) |
# | 002 §8: masked self-attention for generation and language modelling | ✓ | a bidirectional language model reads the token it must predict and cannot generate (chapter 05 measures it) (A.2) |
# | 002 §8: cross-attention: encoder → decoder, the whole encoder sequence | ✓ | one-way; every encoder position in one layer (chapter 05) (A.2) |
# | 002 §8: sparse attention: "restricted all directions" | ⚠ | depends on the pattern: strided and LogSparse are causal, windows and blocks can be either (A.2) |
# | 002 §8: sparse attention for long sequences | ✓ | 7–35 ms against 2 s per head at n = 16,384 (section 3) |
# | 002 §8: uses "understanding, feature extraction", "sequence-to-sequence" | — | advice; chapters 02 and 05 train such models (A.2) |
# | 002 §8: sparse attention O(n√n) or O(n log n) | ⚠ | O(n·k) for k keys per query: strided √n about 1.5 n√n, LogSparse about n log₂ n, window and blocks O(n) (A.2) |
# | 002 §8: sparse attention sees "part of the sequence" | ⚠ | per layer; through layers strided reaches everything in 2, a window in ⌈(n − 1)/w⌉, blocks never (A.2) |
# | Def. 14.3.17, Eq. (14.3.43): Softmax(M ⊙ S) | ✗ | dropped keys keep e⁰/Z, up to most of the weight; softmax(S + log M), i.e. fill with −∞ (section 3, A.4) |
# | Lemma 14.3.23, Eq. (14.3.44): I_sparse ≤ I_dense | ✗ | 4 bits (sparse) > 2.03 (dense, uniform scores); true: a sparse output carries nothing about dropped keys given the visible ones, and the best dense layer ≥ the best sparse one (A.5) |
# | Thm. 14.3.15, Eq. (14.3.45): M* = arg min [I − I_M] | ✗ | no sparsity term: the dense mask is not a minimiser (negative objective for 336 of 343 masks, 174 ties) or every covering mask ties at 0; needs + λ\|M\| and a non-degenerate information (A.5) |
# | App. 14.3.6: learnable mask, Gumbel-softmax, annealing | ⚠ | the idea works (section 4: ≥ 98 % of entries, two seeds); as printed: per-row softmax, τ → 0 gives NaN, softmax(mask · S), returns a sample, Bernoulli(p) logits (A.6) |
# | Def. 14.3.18, Eq. (14.3.46): linear attention | ✓ | matrix, prefix-sum and recurrent forms agree (section 5, A.7) |
# | Def. 14.3.18: φ maps to a higher dimension, approximating softmax | ⚠ | only for random features with m ≫ d (Performer); elu + 1 is another attention (total variation about 0.36) (A.7) |
# | Lemma 14.3.24, Eq. (14.3.47): C = rank(φφᵀ) ≤ d_φ, bidirectional | ✓ | rank ≤ d_φ, so the mean weight on the right key is ≤ d_φ/n (section 5, A.7) |
# | Lemma 14.3.24: the same for causal linear attention | ⚠ | the causal cut has full rank; the limit is the d_φ × d_v state: recall and copying fail beyond about d_φ items (A.7) |
# | Thm. 14.3.16: softmax, full access at O(n²) computation | ✓ | recall ≈ 1.0 at 32 pairs; n² scores; the theorem makes no memory claim (sections 1, 5, A.7) |
# | Thm. 14.3.16: linear, O(n) computation with limited capacity | ✓ | recall of 32 pairs with d_k = 8 fails; copying fails at matched load (32 tokens), not at 8 (section 5, A.7) |
# | Def. 14.3.19, Eq. (14.3.48): g = σ(W_g[q; k; v]) | ⚠ | in self-attention a function of the query position only — what output gating needs (section 6, A.8) |
# | Lemma 14.3.25, Eq. (14.3.49): I(Z; X) ≈ g · I(A; X) | ✗ | a deterministic gate keeps all 3 bits; exact for an erasure gate only; with noise 0.037 bits at g = 0.1 against g · I(A + N; A) = 0.126 (A.8) |
# | App. 14.3.7: `GatedAttention` as printed | ✗ | no imports; the gate's shape (B, T, 1, H, 1) fails except at B = T = H = 1 (A.8) |
# | App. 14.3.7: `GatedAttention` with one line fixed | ✓ | gate (B, H, T, 1); then it is the package's `GatedAttention` (A.8) |
# | Qiu et al. 2025 (reproduced): an output gate reduces the attention sink | ✓ (this scale) | BOS weight at dormant queries ≥ 0.4 without the gate, ≤ 0.3 and under half with it (two seeds): much reduced, not removed by construction (section 6, A.8) |
# | Lemma 14.3.26, Eq. (14.3.50): I(Z^(l); Y) grows with depth | ✗ | data processing: it never grows; usable (linearly decodable) information can (A.9) |
# | Thm. 14.3.17, Eq. (14.3.51): β I(X; Z) + (1 − β) I(Z_prev; Z) = const | ✗ | equals H(Z^(l)) for deterministic layers (4 → 0.90 bits); the bottleneck is an objective, not a conservation law (A.9) |
# | §14.3.7: information-theoretic regularisers give better training and generalisation | — | no setting or baseline given; what sparse masks change is cost and reach; the regularisers are chapter 06's (A.10) |
#
# **Errata in one place.** Wrong as printed: Eq. (14.3.43) (a 0/1 mask multiplied into the scores
# does not mask), Lemma 14.3.23, Thm. 14.3.15 (no sparsity term), Lemma 14.3.25, Lemma 14.3.26,
# Thm. 14.3.17, and App. 14.3.7's listing (no imports, the gate's reshape). Right only under a
# condition: App. 14.3.6 (the idea; its pseudo-code has a per-row relaxation, a schedule that hits
# τ = 0, softmax(mask · S), a returned sample and Bernoulli(p) logits), Def. 14.3.18's
# "approximates softmax", Lemma 14.3.24 for causal attention, Def. 14.3.19; in source 002 §7 the
# O(n²) storage, the speed-up over RNNs, "no decay", causal attention's need for positions,
# dilution, interpretability and the two lists of solutions; in §8 the sparse complexity, its
# direction and "part of the sequence". Wording: source 002 §8's visible range of masked
# self-attention, "当前位置之前" (before the current position), leaves out the current position,
# which the causal mask keeps.
