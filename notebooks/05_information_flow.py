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
# *双向注意力的信息流* — source 002; source 001, Eq. (5.4.7)–(5.4.8)
#
# Continue this sequence: eight distinct tokens, then pairs that repeat a neighbouring couple from
# the start.
#
# `7 2 12 5 9 0 14 3 | 12 5 | 9 0 | 2 12 | 5 →` ?
#
# The answer is **9**: the token that followed 5 the first time. Three small Transformers trained
# on such sequences behave very differently:
# - a two-layer model with a causal mask learns the rule almost perfectly;
# - a one-layer causal model does not — although in one layer every token can already read every
#   earlier token;
# - a two-layer model *without* the mask reaches a loss below what any honest predictor can
#   reach, and then, asked to continue a sequence, is right about one time in seven.
#
# All three are facts about the **paths** information can take through attention: which paths a
# mask allows, which ones a trained model uses, and what a path through two layers can do that
# one layer cannot. This chapter builds the tools to see those paths.
#
# **After this chapter you can**
# - read a mask as a graph and compute which inputs each output can depend on after L layers;
# - split a layer's attention into forward, backward and self flow, and say why a decoder must be
#   causal and what only a bidirectional encoder can do;
# - compute attention rollout and attention flow, and explain why one layer's heat map is not the
#   flow from the inputs;
# - explain how two layers compose a relay — a previous-token head feeding an induction head — and
#   why depth buys composition, not reach.
#
# **Prerequisites**: chapter 01 (attention, masks with True = may attend, the causal mask);
# chapter 04 (path length: one attention step joins any two positions); matrix products; what
# training a model on a loss means (the chapter's helpers do the training).
#
# **Time**: main path about 80 min, appendix about 45 min (by `scripts/reading_time.py`: prose
# at 150 words a minute, code at 20 lines a minute, and each exercise's stated time).
#
# **How to read it.** Sections 1–5 are the main path: each asks a question, gives the idea, lets
# you build it in an exercise or measure it, then uses it. The **appendix** checks every claim of
# source 002 and of source 001's Eq. (5.4.7)–(5.4.8) — some hold, some hold only under a
# condition, some are wrong — and can be skipped on a first reading.

# %% slideshow={"slide_type": "skip"}
import math

import matplotlib.pyplot as plt
import numpy as np
import torch

from attncourse.chapters import ch05_information_flow as ch05
from attncourse.flow import flow_shares
from attncourse.masks import causal_mask
from attncourse.threads import side_by_side

torch.manual_seed(0)
np.random.seed(0)
torch.set_num_threads(2)
torch.set_flush_denormal(True)
torch.set_printoptions(precision=4, sci_mode=False)
plt.rcParams.update({"figure.dpi": 80, "figure.figsize": (7, 3)})
SEEDS = (0, 1)  # every trained result is checked on two seeds

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 1. A mask is an information-flow graph
#
# Which inputs can the prediction at position *t* depend on? In a recurrent network the answer is
# a chain, one step per position. In attention, output *i* is $\sum_j A_{ij} v_j$ (source 001,
# Eq. 5.4.3), so a weight $A_{ij} > 0$ is an **edge j → i**: key *j* sends, query *i* receives. A
# boolean mask (True = may attend) lists the edges that can exist at all. Six masks on 16
# positions, used throughout the chapter (`ch05.chapter_mask`):
#
# - **bidirectional** (an encoder): every query reads every key;
# - **causal** (a decoder): query *i* reads keys 0 … *i*;
# - **cross**: a decoder reading an encoder, drawn on the two halves [encoder; decoder] of one
#   sequence — every query reads only the encoder half;
# - **local** (|i − j| ≤ 2), **strided** (the Sparse Transformer's causal pattern with stride 4,
#   Child et al. 2019) and **block** (blocks of 4): sparse masks that keep fewer edges.
#
# > **Glossary** · information flow 信息流 · bidirectional 双向 · causal / unidirectional 因果 / 单向 ·
# > mask 掩码 · cross-attention 交叉注意力 · reachability 可达性 · residual connection 残差连接 ·
# > sparse attention 稀疏注意力

# %% slideshow={"slide_type": "subslide"}
fig, axes = plt.subplots(1, 6, figsize=(12, 2.4))
for ax, kind in zip(axes, ch05.MASK_KINDS):
    ax.imshow(ch05.chapter_mask(kind).numpy(), cmap="Greys", vmin=0, vmax=1.4)
    ax.set(title=kind, xticks=[0, 15], yticks=[0, 15])
axes[0].set(xlabel="key j (sends)", ylabel="query i (receives)")
plt.tight_layout()
plt.show()

# %% [markdown] slideshow={"slide_type": "-"}
# **After L layers.** A Transformer layer adds what a position reads to what it already holds
# (Eq. 5.4.8):
#
# $$X^{(l+1)} = \mathrm{LayerNorm}\big(X^{(l)} + \mathrm{Attention}^{(l)}(X^{(l)})\big) \qquad (5.4.8)$$
#
# The normalisation (chapter 08) works on one position's vector at a time and adds no edge; the
# **residual** term $X^{(l)}$ means that position *i* keeps its own information. So one layer's
# graph is the mask plus self loops, $M \lor I$, and output *i* after L layers can depend on input
# *j* exactly when a path *i* ← k₁ ← … ← *j* of L such steps exists: the boolean matrix power
# $R_L = (M \lor I)^L$.

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 1 · What a stack of layers lets through
# **Difficulty** ●●○ · **Time** 12 min · **Points** 3 · **Practises** Eq. (5.4.8)'s residual
# path, boolean matrix powers, the direction of an edge
#
# Write `my_reachability(mask, layers)`: mask (T, T) bool, True where query *i* may read key *j*
# (the same mask in every layer), and an int `layers` ≥ 0 → (T, T) bool, True where the output at
# position *i* after `layers` layers can depend on the input at position *j*. Remember the
# residual path: one layer's graph is M ∨ I, and zero layers give the identity. Return a bool
# tensor, like the mask. Any formulation passes (a loop of boolean products, a matrix power tested
# with `> 0`, sets of positions); the check refuses the course's package (`attncourse.flow`
# computes it).


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


# %% nbgrader={"grade": true, "grade_id": "ch05_reachability_test", "locked": true, "points": 3, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"} tags=["raises-exception"]
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

# %% [markdown] slideshow={"slide_type": "-"}
# The course's `reach_table` applies the same power to the six masks (through `attncourse.flow`,
# so the cell runs whether or not your exercise is done). For each mask: the share of the 256
# (output, input) pairs connected after L = 1 … 4 layers, the depth after which nothing new is
# reached, and how many pairs are never connected.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
table = ch05.reach_table(16)
print(f"{'mask':>13} | {'L = 1':>6} {'L = 2':>6} {'L = 3':>6} {'L = 4':>6} | depth never")
for kind, row in table.items():
    shares = " ".join(f"{row['reach'][L]:6.3f}" for L in (1, 2, 3, 4))
    print(f"{kind:>13} | {shares} | {row['depth']:5d} {row['never']:5d}")
assert table["bidirectional"]["depth"] == 1 and table["causal"]["never"] == 120
assert table["local"]["depth"] == math.ceil(15 / 2) and table["strided"]["depth"] == 2
assert table["block"]["never"] == 256 - 4 * 16  # blocks never exchange information

# %% [markdown] slideshow={"slide_type": "-"}
# - **bidirectional**: every pair after one layer; **causal**: the 136 pairs j ≤ i after one
#   layer and *never* the other 120, however deep the stack — information flows only forward.
#   For both dense masks, depth adds no reach at all: in the opening's puzzle, one causal layer
#   already lets the second 5 read the 9. Whatever the one-layer model lacks, it is not reach.
# - **cross**: every query reads the 8 encoder positions in one layer; nothing flows back from the
#   decoder half.
# - **local** (window 2): the reach grows by 2 positions to each side per layer, so the two ends,
#   15 apart, are connected after ⌈15/2⌉ = 8 layers; **strided**: its causal triangle is complete
#   after 2 layers with about 5 keys per query instead of 8.5; **block**: nothing ever crosses a
#   block boundary.
#
# In a real encoder–decoder every decoder layer's cross-attention reads the encoder's *final*
# states (Vaswani et al. 2017). Which inputs can the outputs of a one-layer decoder of 4 positions
# depend on? Columns: the 6 encoder inputs, then the 4 decoder inputs.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
R = ch05.encoder_decoder_reachability(6, 4, encoder_layers=2, decoder_layers=1)  # (4, 10)
print(R.int())
assert R[:, :6].all() and torch.equal(R[:, 6:], causal_mask(4))

# %% [markdown] slideshow={"slide_type": "-"}
# Every decoder position sees the whole source sentence, and its own sentence only up to itself.
#
# **Takeaway.** A mask is a graph; with the residual path, L layers connect exactly the pairs of
# $(M \lor I)^L$. Dense masks reach all they ever will in one layer; sparse ones trade reach for
# depth.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 2. Why a decoder must be causal
#
# A language model predicts token *t* + 1 from tokens 0 … *t*, and it trains on every position
# of a sequence at once: the whole sequence is the input, and each position's target is the next
# token. Without a mask, position *t* can read position *t* + 1 — the answer.
#
# To see where a layer's attention goes, sort its weights by direction (source 002 §6). With rows
# as queries *i* and columns as keys *j*:
#
# $$F = \sum_i \sum_{j<i} A_{ij}, \qquad B = \sum_i \sum_{j>i} A_{ij}, \qquad S = \sum_i A_{ii}$$
#
# **forward** flow from earlier positions, **backward** flow from later ones, **self** flow. The
# rows of a softmax sum to 1, so $F + B + S = T$, and $F/T$, $B/T$, $S/T$ are shares. A causal mask
# makes $B = 0$ exactly; uniform bidirectional attention gives shares $(T-1)/2T$, $(T-1)/2T$, $1/T$.
#
# > **Glossary** · forward / backward flow 前向 / 后向信息流 · language model 语言模型 ·
# > teacher forcing 教师强制 · encoder / decoder 编码器 / 解码器 · generation 生成

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 2 · Forward, backward and self flow
# **Difficulty** ●○○ · **Time** 8 min · **Points** 2 · **Practises** the three triangles of an
# attention matrix, sums over the last two dimensions
#
# Write `my_flow_split(weights)`: weights (..., T, T) — the leading dimensions are batch and
# heads, and there may be none; rows are queries *i*, columns keys *j* → a tuple
# `(forward, backward, self)` of tensors of shape (...): the plain sums over every query of the
# weights from earlier keys (j < i), from later keys (j > i) and from itself (j = i). Any
# non-negative tensor is allowed (its rows need not sum to 1). Keep the input's dtype: the check
# passes float32 weights and expects float32 sums. Any formulation passes (`tril`/`triu`, boolean
# masks, loops); the check refuses the course's package.


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


# %% nbgrader={"grade": true, "grade_id": "ch05_flow_split_test", "locked": true, "points": 2, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"} tags=["raises-exception"]
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

# %% [markdown] slideshow={"slide_type": "-"}
# **Two decoders on the running task.** The data is the opening's: eight distinct tokens out of
# 16, then eight pairs (r_k, r_{k+1}) (`ch05.induction_batch`). The best possible next-token loss
# is fixed by the data: token *t* of the first eight is one of the 16 − *t* not yet used, a pair's
# first token one of 7, its second is determined — a mean of
# (Σ_{m=9}^{15} ln m + 8 ln 7)/23 nats over the 23 predictions. No model that reads only the past
# can go below it.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
floor = ch05.lm_loss_floor()
print(f"loss floor for any predictor that reads only the past: {floor:.4f} nats")
assert abs(floor - (sum(math.log(m) for m in range(9, 16)) + 8 * math.log(7)) / 23) < 1e-12

# %% [markdown] slideshow={"slide_type": "-"}
# Two models of 2 layers, one head each, d = 32: each layer is x + Attention(LayerNorm(x)),
# attention and its residual path with no MLP (an *attention-only* model), trained as language
# models with Adam. One is causal
# (300 steps), one bidirectional (100 steps; it needs fewer).


# %% slideshow={"slide_type": "-"}
# NBVAL_IGNORE_OUTPUT
def train_decoder(causal, steps, seed, layers=2):
    torch.manual_seed(seed)
    model = ch05.TinyTransformer(
        ch05.INDUCTION_VOCAB, 32, 1, layers, ch05.INDUCTION_LENGTH, causal=causal, block="attention"
    )
    ch05.train(model, ch05.induction_batch, ch05.lm_loss, steps, seed=seed, progress=False)
    return model


# the four runs are independent: side_by_side trains them at once, one per CPU core
runs = [(name, causal, steps, seed) for seed in SEEDS
        for name, causal, steps in (("causal", True, 300), ("bidirectional", False, 100))]  # fmt: skip
trained = side_by_side(train_decoder, [run[1:] for run in runs], desc="language models")
decoders = {(name, seed): model for (name, _, _, seed), model in zip(runs, trained)}

# %% [markdown] slideshow={"slide_type": "-"}
# For each model: the loss on fresh data; the accuracy at the eight "A → B" predictions,
# teacher-forced (the whole sequence is the input) and generating (the input ends at the A whose
# successor is asked for); and, per layer, the backward share $B/T$ and the mean weight a query
# puts on the very next position, $A_{t,t+1}$.

# %% slideshow={"slide_type": "-"}
# NBVAL_IGNORE_OUTPUT
x_ind, _ = ch05.induction_batch(500, torch.Generator().manual_seed(5))
print(f"{'model':>22} | loss  | forced  generating | backward L1, L2 | on t+1 L1, L2")
lm = {}
for (name, seed), model in decoders.items():
    with torch.no_grad():
        _, weights = model(x_ind[:, :-1])  # 2 layers x (500, 1, 23, 23)
    backward = [float(flow_shares(w).backward.mean()) for w in weights]
    next_token = [float(w.diagonal(offset=1, dim1=-2, dim2=-1).mean()) for w in weights]
    lm[name, seed] = scores = {
        "loss": ch05.mean_lm_loss(model, 500),
        "forced": ch05.induction_accuracy(model, 500),
        "generating": ch05.generation_accuracy(model, 500),
        "backward": backward,
        "next": next_token,
    }
    print(
        f"{name + ', seed ' + str(seed):>22} | {scores['loss']:.3f} | {scores['forced']:6.3f}"
        f" {scores['generating']:10.3f} | {backward[0]:7.3f} {backward[1]:6.3f}"
        f"  | {next_token[0]:7.3f} {next_token[1]:5.3f}"
    )
for seed in SEEDS:
    bi, ca = lm["bidirectional", seed], lm["causal", seed]
    assert bi["loss"] < 0.5 * floor and bi["generating"] <= 0.3 and max(bi["next"]) >= 0.7
    assert bi["forced"] >= 0.8 and bi["forced"] <= ca["forced"] + 0.05
    assert ca["backward"] == [0.0, 0.0] and ca["loss"] >= floor - 0.05
    assert ca["generating"] >= 0.9 and abs(ca["forced"] - ca["generating"]) <= 0.01

# %% [markdown] slideshow={"slide_type": "-"}
# The bidirectional model's loss is far **below the floor**. Its flow split says how: in one of
# its layers almost all the weight is backward, and nearly all of that on position *t* + 1 — it
# reads the next token instead of predicting it. Asked to generate, when the next token does not
# exist yet, it falls to about chance (1 in 7). The causal model's backward share is exactly 0 in
# both layers; it sits above the floor and generates as well as it scores teacher-forced.
#
# For a causal model that equality is not luck: its output at position *t* cannot depend on any
# token after *t*, bit for bit, whatever its weights — masked weights are exp(−∞) = 0 exactly. The
# cell changes every token after position 12 and compares the outputs at positions 0 … 12. The
# bidirectional model's outputs change (by how much is a training outcome; the assert asks for at
# least 1 in some logit):

# %% slideshow={"slide_type": "-"}
# NBVAL_IGNORE_OUTPUT
x, _ = ch05.induction_batch(4, torch.Generator().manual_seed(3))
changed = x.clone()
changed[:, 13:] = (changed[:, 13:] + 5) % ch05.INDUCTION_VOCAB
with torch.no_grad():
    for (name, seed), model in decoders.items():
        gap = float((model(x)[0][:, :13] - model(changed)[0][:, :13]).abs().max())
        print(f"{name + ', seed ' + str(seed):>22}: largest change at positions 0..12: {gap:.3g}")
        assert gap == 0 if name == "causal" else gap >= 1.0, (name, seed, gap)

# %% [markdown] slideshow={"slide_type": "-"}
# **The other side: a task that needs the right context.** *Palindrome fill-in*
# (`ch05.palindrome_batch`): 16 tokens r + reversed(r) over 16 symbols, some replaced by a MASK
# token; the model restores them. A masked token in the **left** half can be read only off its
# mirror image in the right half — to its right: it needs backward flow. Two encoders of 3
# layers, 2 heads, d = 32 (each layer attention and a small MLP, each with its residual path), one
# bidirectional (250 steps), one causal (150 steps: its left-half answers are out of its reach at
# any length of training).


# %% slideshow={"slide_type": "-"}
# NBVAL_IGNORE_OUTPUT
def train_encoder(causal, steps, seed):
    torch.manual_seed(seed)
    model = ch05.TinyTransformer(ch05.FILL_VOCAB + 1, 32, 2, 3, ch05.FILL_LENGTH, causal=causal)
    ch05.train(model, ch05.palindrome_batch, ch05.fill_loss, steps, seed=seed, progress=False)
    return model


runs = [(name, causal, steps, seed) for seed in SEEDS
        for name, causal, steps in (("bidirectional", False, 250), ("causal", True, 150))]  # fmt: skip
trained = side_by_side(train_encoder, [run[1:] for run in runs], desc="fill-in encoders")
encoders = {(name, seed): model for (name, _, _, seed), model in zip(runs, trained)}
fill = {key: ch05.fill_accuracy(model) for key, model in encoders.items()}
print(f"{'encoder':>22} | {'mask in the left half':>21} {'mask in the right half':>22}")
for (name, seed), acc in fill.items():
    print(f"{name + ', seed ' + str(seed):>22} | {acc['left']:21.3f} {acc['right']:22.3f}")
for seed in SEEDS:
    assert min(fill["bidirectional", seed].values()) >= 0.95, seed
    assert fill["causal", seed]["right"] >= 0.9 and fill["causal", seed]["left"] <= 0.2, seed

# %% [markdown] slideshow={"slide_type": "-"}
# Where the answer lies to the left, both encoders restore it; where it lies to the right, only
# the bidirectional one does — the causal one stays near chance (1 in 16).
#
# **Takeaway.** A causal mask makes backward flow exactly zero; that is what lets a model trained
# on all positions at once generate. A task whose answer lies to the right needs backward flow: an
# encoder.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 3. Attention weights are not information flow
#
# The heat map of one layer is what is usually shown as "what the model looks at". But a position
# in layer 3 reads *states*, and each state is already a mixture of many inputs made by layers 1
# and 2. Which **inputs** reach the output?
#
# Abnar & Zuidema (2020) compose the layers. With $\bar A_l$ the head-averaged weights of layer
# *l*, and the residual path counted as half of what a position receives,
#
# $$\tilde A_l = \tfrac12 I + \tfrac12 \bar A_l, \qquad \text{rollout} = \tilde A_L \cdots \tilde A_2 \tilde A_1$$
#
# Entry (*i*, *j*) of a product sums, over every path *j* → k → … → *i*, the product of the
# weights along the path: the weighted version of section 1's $(M \lor I)^L$. **Attention flow**
# reads the same $\tilde A_l$ as pipe capacities in the layered graph (inputs at the bottom, one
# row of nodes per layer) and asks for the **maximum flow** from input *j* to top position *i*.
#
# > **Glossary** · attention rollout 注意力展开 · attention flow 注意力流 · maximum flow 最大流 ·
# > capacity 容量 · attribution 归因 · blank-out (ablation) 遮蔽（消融） · rank correlation 秩相关

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 3 · Attention rollout
# **Difficulty** ●●○ · **Time** 12 min · **Points** 3 · **Practises** composing layers by matrix
# products, the residual path, averaging heads
#
# Write `my_rollout(layers)`: a tuple of per-layer attention tensors, each (B, H, T, T), first
# layer first → (B, T, T): the rollout $\tilde A_L \cdots \tilde A_1$ with
# $\tilde A_l = \frac12 I + \frac12$ (the mean over the heads of layer *l*). Row *i* of the result
# must say how much of each input reaches top position *i*, so think about which side each new
# layer goes on. Keep the input's dtype (make the identity with `dtype=` the weights' dtype): the
# check passes float32 weights and expects a float32 rollout. Re-normalising the rows is allowed
# (they already sum to 1); the check refuses the course's package.


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


# %% nbgrader={"grade": true, "grade_id": "ch05_rollout_test", "locked": true, "points": 3, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"} tags=["raises-exception"]
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
# ### Exercise 4 · Attention flow through two layers, in closed form
# **Difficulty** ●●● · **Time** 12 min · **Points** 2 · **Practises** maximum flow on a layered
# graph, paths that share no edge, broadcasting
#
# Write `my_two_layer_flow(first, second)`: the capacities of a two-layer attention graph, each
# (T, T) (already residual-mixed): `first[k, j]` is the capacity of the edge from input *j* to
# middle node *k*, `second[i, k]` that of the edge from middle node *k* to top node *i* → (T, T),
# entry [*i*, *j*] the **maximum flow** from input *j* to top node *i*. No flow algorithm is
# needed: think about what a path from *j* to *i* looks like in this graph, and whether two
# different paths can share an edge. Keep the input's dtype: the check passes float32 capacities
# and expects a float32 answer. Any formulation passes (broadcasting, loops); the check refuses
# the course's package.


# %% nbgrader={"grade": false, "grade_id": "ch05_two_layer_flow", "locked": false, "schema_version": 3, "solution": true} slideshow={"slide_type": "skip"}
def my_two_layer_flow(first, second):
    """first, second (T, T) capacities -> (T, T): max flow from input j (column) to top node i (row)."""
    ### BEGIN SOLUTION
    # every path is j -> k -> i for one middle k, and no two paths share an edge:
    # path k carries min(first[k, j], second[i, k]); the paths add up
    paths = torch.minimum(first.unsqueeze(0), second.unsqueeze(-1))  # (i, k, j)
    return paths.sum(dim=-2)  # (i, j)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch05_two_layer_flow_test", "locked": true, "points": 2, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"} tags=["raises-exception"]
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

# %% [markdown] slideshow={"slide_type": "-"}
# **Do rollout and flow explain the model better than its raw weights?** Abnar & Zuidema's test
# (their Table 1) asks the model itself which inputs matter and compares. On the two bidirectional
# fill-in encoders of section 2, with 40 fresh sequences of one masked token each, the output is
# the prediction at the masked position. The model's own answers: the **gradient** of the
# predicted token's log-probability with respect to each input embedding (its norm), and
# **blank-out** — how much that log-probability drops when input *j* is replaced by the MASK
# token. Compared with: each layer's raw attention (the masked position's row, heads averaged),
# rollout and flow (`ch05.compare_explanations`, through `attncourse.flow`). **Measured**: how
# often a method's top input (other than the masked position itself) is the input whose blanking
# hurts most, and Spearman's rank correlation with the gradient, averaged over sequences.

# %% slideshow={"slide_type": "-"}
# NBVAL_IGNORE_OUTPUT
explained = {seed: ch05.compare_explanations(encoders["bidirectional", seed]) for seed in SEEDS}
methods = [k for k in explained[0] if not k.startswith("_")]
print(f"{'':>31}" + "".join(f"{m:>9}" for m in methods))
for seed, res in explained.items():
    for key, label in (
        ("top1_blank", "top input = blank-out's"),
        ("spearman_gradient", "rank corr. with gradient"),
    ):
        print(f"seed {seed} {label:>24}" + "".join(f"{res[m][key]:9.2f}" for m in methods))
for seed, res in explained.items():
    last = res["raw L3"]
    assert res["_blank_top_is_mirror"] >= 0.9, seed  # what matters is the mirror token
    assert res["rollout"]["top1_blank"] >= 0.8 and res["flow"]["top1_blank"] >= 0.8, seed
    assert last["top1_blank"] <= 0.7 and res["rollout"]["top1_blank"] - last["top1_blank"] >= 0.25
    assert res["rollout"]["spearman_gradient"] - last["spearman_gradient"] >= 0.15, seed
    assert res["flow"]["spearman_gradient"] - last["spearman_gradient"] >= 0.1, seed

# %% [markdown] slideshow={"slide_type": "-"}
# The paper's effect is there on both seeds (asserted with margins): the last layer's heat map —
# the one usually shown — points at the input that matters in a minority of sequences, while
# rollout and flow find it almost always, and rank the inputs much more like the gradient does.
# Layer 1's raw attention happens to find it too: this encoder fetches the mirror token in its
# first layer. But without the attributions one could not know which layer to look at; rollout
# needs no such luck. One sequence in detail (each row scaled to its maximum):

# %% slideshow={"slide_type": "subslide"}
model = encoders["bidirectional", 0]
x, pos, _ = ch05.palindrome_batch(1, torch.Generator().manual_seed(19), masks=1)  # mask at 4
pos = pos[:, 0]
rows = dict(ch05.attention_explanations(model, x, pos))
rows["gradient"] = ch05.gradient_attribution(model, x, pos)[0].double()
rows["blank-out"] = ch05.blank_out_attribution(model, x, pos, model(x)[0][0, pos].argmax(-1))
fig, ax = plt.subplots(figsize=(8, 3.2))
ax.imshow(torch.cat([r / r.max() for r in rows.values()]).detach(), cmap="Greens", aspect="auto")
ax.set_yticks(range(len(rows)), list(rows))
ax.set_xticks(range(16), ["M" if int(t) == ch05.MASK else str(int(t)) for t in x[0]])
ax.axvline(int(pos), color="tab:red", lw=1, ls=":")
ax.axvline(15 - int(pos), color="tab:blue", lw=1, ls=":")
ax.set(
    xlabel="input (M = masked; red: its position, blue: its mirror)",
    title="what reaches the masked position, by method",
)
plt.tight_layout()
plt.show()

# %% [markdown] slideshow={"slide_type": "-"}
# **Takeaway.** One layer's attention says what a position reads from the *states* below it;
# what it gets from the *inputs* is a composition of all the layers and their residual paths —
# rollout multiplies them, flow bounds them by their bottlenecks.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 4. Two layers compose: the induction relay
#
# Back to the opening. In one causal layer, the second *5* can read every earlier token,
# including the *9* that followed its first copy (section 1: the dense causal mask reaches all it
# ever will in one layer). Yet a one-layer model cannot find that *9*. Reading the right token
# needs a **query** that matches its key, and nothing in token *9*'s own vector says "I follow a
# 5".
#
# > **⚠ The source says** (source 001, after Eq. 5.4.8), for "a two-layer case": position *n*
# > attends to *m* and *m* to position 1, so position 1's information reaches *n* through *m*, "in
# > two steps" — and it writes both steps with the **first** layer's weights, $A^{(1)}_{nm}$ and
# > $A^{(1)}_{m1}$. Within one layer both hops happen at the same time: *n* reads *m*'s **input**,
# > which has not yet read position 1. The relay needs hop 1 in layer 1 and hop 2 in layer 2, a
# > path of weight $A^{(2)}_{nm} A^{(1)}_{m1}$ — one term of the rollout product. And what the
# > source leaves out: under a dense mask *n* could read position 1 directly in one layer (every
# > pair is one hop apart, its own Eq. 5.4.5). The second layer adds no reach; it adds
# > **composition**: what *n* reads in layer 2 can depend on what *m* read in layer 1.
#
# The cell checks the graph *n* ← *m* ← 1 (positions 3 ← 2 ← 0, the others read themselves) with
# one-hot inputs, so that entry [*i*, *j*] of a state says how much of input *j* position *i* holds:

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
X1 = torch.eye(4, dtype=torch.float64)  # one-hot inputs: X1[i, j] = how much of input j is at i
bridge = X1[[0, 1, 0, 2]]  # row i = whom i reads: itself, but m = 2 reads 0 and n = 3 reads 2
X2 = X1 + bridge @ X1  # layer 1: both hops at once (the source's A(1)_nm and A(1)_m1)
X3 = X2 + bridge @ X2  # layer 2: n reads m's new state
print(f"position 1's input (index 0) at n after one layer : {float(X2[3, 0]):.4f}")
print(f"position 1's input (index 0) at n after two layers: {float(X3[3, 0]):.4f}")
assert X2[3, 0] == 0 and X3[3, 0] == 1

# %% [markdown] slideshow={"slide_type": "-"}
# **Induction** needs exactly this composition. To continue "… 5 9 … 5" with 9, the model must
# (layer 1) let the position of 9 read its **previous token**, so that 9's state says "I follow a
# 5"; then (layer 2) let the second 5 look for the state that follows a 5, and copy its token — an
# **induction head**. Olsson et al. (2022) find that one-layer attention-only models do not learn
# it and two-layer ones do, by this very composition. The causal decoders of section 2 have two
# layers; here one-layer decoders get the same training (300 steps). **Pass** (both seeds): 2
# layers ≥ 0.9 at the "A → B" predictions, 1 layer ≤ 0.35 (chance ≈ 0.14), a gap of ≥ 0.5.
#
# > **Glossary** · relay 中继 · induction head 归纳头 · previous-token head 前一词元头 ·
# > attention-only model 纯注意力模型 · ablation 消融 · composition 组合

# %% slideshow={"slide_type": "-"}
# NBVAL_IGNORE_OUTPUT
one_layer = dict(zip(SEEDS, side_by_side(train_decoder, [(True, 300, s, 1) for s in SEEDS])))
for seed in SEEDS:
    acc1, acc2 = ch05.induction_accuracy(one_layer[seed]), lm["causal", seed]["forced"]
    print(
        f"seed {seed}: accuracy at the 'A -> B' predictions: 1 layer {acc1:.3f}, 2 layers {acc2:.3f}"
    )
    assert acc2 >= 0.9 and acc1 <= 0.35 and acc2 - acc1 >= 0.5, (seed, acc1, acc2)

# %% [markdown] slideshow={"slide_type": "-"}
# **The two heads.** In the first eight tokens, the weight each query puts on its predecessor
# *i* − 1 (a uniform causal head would put 0.25 there on average); at each pair's first token A,
# the weight layer 2 puts on the token that followed A's earlier copy (B), and on that copy
# itself; and the weight of the two-step path A ← B ← A's copy, $A^{(2)}_{t,k+1}A^{(1)}_{k+1,k}$
# (`ch05.relay_scores`). **Pass** (both seeds): previous-token weight ≥ 1.5 × the uniform value;
# weight on B ≥ 0.5; on A's copy ≤ 0.2.

# %% slideshow={"slide_type": "-"}
# NBVAL_IGNORE_OUTPUT
for seed in SEEDS:
    s = ch05.relay_scores(decoders["causal", seed])
    print(
        f"seed {seed}: layer 1 on the previous token {s['previous_token'][0]:.2f} "
        f"(uniform {s['previous_token_uniform']:.2f}) | layer 2 on B {s['induction'][0]:.2f}, "
        f"on A's copy {s['same_token'][0]:.2f} | two-step path {s['two_hop']:.2f}"
    )
    assert s["previous_token"][0] >= 1.5 * s["previous_token_uniform"]
    assert s["induction"][0] >= 0.5 and s["same_token"][0] <= 0.2

# %% slideshow={"slide_type": "subslide"}
x, _ = ch05.induction_batch(1, torch.Generator().manual_seed(11))
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
# Left: in the first eight tokens (above and left of the dotted lines) the weight sits on and just
# below the diagonal — each token reads its predecessor (about half its weight) and itself. Lower
# down, the pairs' second tokens (every other row) park their weight on the first token, column 0.
# Right: each pair's first token (every other row
# below the dotted line) reads the key right *after* its earlier copy.
#
# **Is layer 1's job really "read the previous token"?** Replace layer 1's attention by fixed
# patterns and measure the induction accuracy again (`ch05.relay_ablation`): *itself* (no
# information moves in layer 1), the exact *previous-token* pattern, and the causal *uniform*
# average. **Pass** (both seeds): "itself" ≤ 0.2 — without the relay the induction head has
# nothing to match; the exact previous-token pattern recovers at least 0.3 more than that.

# %% slideshow={"slide_type": "-"}
# NBVAL_IGNORE_OUTPUT
for seed in SEEDS:
    a = ch05.relay_ablation(decoders["causal", seed])
    print(f"seed {seed}: layer 1 attends " + ", ".join(f"{k}: {v:.3f}" for k, v in a.items()))
    assert a["learned"] >= 0.9 and a["itself"] <= 0.2 and a["previous token"] >= a["itself"] + 0.3

# %% [markdown] slideshow={"slide_type": "-"}
# A detail worth seeing: what the relay carries (the token *before* B's position) ends up in B's
# **key**, so it decides *where* layer 2 reads, while the value layer 2 copies (B itself) travels
# one step. Olsson et al. call this *K-composition*.
#
# **Takeaway.** Under a dense mask depth buys no reach: it buys composition — a second layer can
# choose what to read by what the first layer has already moved.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 5. Exploring the flow of a trained encoder
#
# The seed-0 bidirectional fill-in encoder of section 2, run on one palindrome under each of the
# six masks of section 1 (trained bidirectionally; the other masks show what each graph lets
# through the same weights). Choose the **mask**, the **layer**, the **head** (or their mean) and
# the **query**. Left: the layer's attention, the query's row outlined. Middle: the flow graph —
# keys below, queries above, edges as thick as their weights, the query's in red. Right: the
# query's raw attention in this layer against its rollout through layers 1 … *l*. The caption
# gives the head's forward / backward / self shares and how many inputs the query can depend on
# after *l* layers. Try:
# 1. bidirectional, layer 1, query 4 (the masked token): its weight goes to the mirror, position
#    11. Step to layer 3: the raw row looks elsewhere, while the rollout keeps position 11 among
#    its largest entries (section 3).
# 2. causal: the backward share is 0 in every layer; query 4 can never reach its mirror.
# 3. local: the reachable count grows by up to 2 per side per layer; block: it stays at 4.
# 4. cross: a query of the right half reads only the left half — none of its red edges lands on
#    itself. (The caption's forward and backward shares count positions in the concatenated
#    sequence; for cross-attention they mean nothing, A.1.)

# %% slideshow={"slide_type": "slide"}
# NBVAL_IGNORE_OUTPUT
widget_tokens, widget_mask, _ = ch05.palindrome_batch(1, torch.Generator().manual_seed(9), masks=1)
print("masked position:", int(widget_mask), " its mirror:", 15 - int(widget_mask))
ch05.flow_widget(encoders["bidirectional", 0], widget_tokens, query=int(widget_mask))

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Takeaway.** The mask fixes which paths exist; the trained weights decide which ones carry
# anything — look at both, and at more than one layer.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Summary
#
# - A mask is a graph: weight $A_{ij}$ is an edge *j* → *i*. With the residual path, output *i*
#   after L layers can depend on input *j* exactly when $(M \lor I)^L$ has an entry there. Dense
#   masks reach all they ever will in one layer; local windows need ⌈(n − 1)/w⌉ layers; blocks
#   never connect.
# - Forward, backward and self flow split a layer's weight by direction. A causal mask makes the
#   backward flow exactly zero — and that is why a decoder, trained on every position at once, can
#   generate. A bidirectional language model reads the next token (loss below the data's floor)
#   and cannot generate.
# - A task whose answer lies to the right (fill-in) needs backward flow: only an encoder solves it.
# - One layer's heat map is not the flow from the inputs. Rollout multiplies the layers'
#   residual-mixed weights, flow takes their bottlenecks; both agree with the model's own
#   attributions far better than the last layer's map (Abnar & Zuidema 2020).
# - Two layers relay: hop 1 in layer 1, hop 2 in layer 2, path weight $A^{(2)}_{nm}A^{(1)}_{m1}$. A
#   previous-token head feeding an induction head does "… A B … A → B"; one layer cannot.
# - Under a dense mask depth buys composition, not reach.

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Check yourself**
#
# 1. A mask lets query *i* read only keys *i* − 1 and *i* + 1 (no self loop). Can output 5 depend
#    on input 5 after two layers? On input 8 after two layers?
# 2. A trained layer has forward share 0.08, backward 0.91, self 0.01. Can it be a layer of a
#    decoder? What would you suspect if it belongs to a language model?
# 3. Why is rollout's per-layer matrix ½ I + ½ Ā rather than Ā?
# 4. In one causal layer every position can read every earlier one. Why can a one-layer model
#    still not do induction?
#
# <details><summary>Answers</summary>
#
# 1. Yes: every layer keeps the residual path, so 5 always depends on itself. Not on 8: two
#    layers reach at most 2 positions to each side (with self loops, the graph is |i − j| ≤ 1).
# 2. No: a causal mask makes the backward share exactly 0. In a language model trained without a
#    mask, a backward share that large is the model reading the next token — the answer.
# 3. The residual connection passes each position's own state on unchanged; ½ I counts it as half
#    of what the position receives. Without it, rollout would ignore the path that carries most of
#    a token's own information.
# 4. Reach is not the problem; selection is. To find B the query needs B's state to say "I follow
#    an A", and that has to be written into B's position by an earlier layer.
# </details>
#
# **Next — chapter 06, multi-head attention and information**: how much the heads of a layer
# repeat each other, which ones a model can lose, and how to measure a head's contribution.

# %% [markdown] slideshow={"slide_type": "skip"}
# ## Appendix · The source, checked
#
# Source 002 (an interview note on bidirectional attention) and source 001's multi-layer relay
# (Eq. 5.4.7–5.4.8) make many claims about information flow, and source 002 prints its ideas as
# code. This appendix checks each claim numerically and runs each listing as printed. Marks:
# **✓ holds** · **⚠ holds only under a condition** (stated) · **✗ wrong as printed** (with a
# counterexample and the correct statement) · **— nothing to measure** (advice, or a benchmark
# claim a CPU cannot test) · **→ ch. NN**: checked in chapter NN, which owns the claim.
# `ch05.run_source_block(name, call, extra)` executes a listing's text unchanged in a fresh
# namespace (plus `extra` names), then `call`, and reports what it did.
#
# ### A.1 The mask table and the comparison table (002 §1, §8)
#
# Source 002 §1 contrasts two masks in a small table: the decoder's lower-triangular one ("the
# current position only sees the positions before it") and the encoder's all-ones one ("sees
# every position"). The table is not code: it is checked, not run.

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
print(ch05.run_source_block("mask_table").error)
table_causal = torch.tensor([[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 1, 1]])
print(
    "source's lower-triangular table == causal_mask(4):",
    torch.equal(causal_mask(4).int(), table_causal),
)
print(
    "source's all-ones table == the bidirectional mask:",
    torch.equal(ch05.chapter_mask("bidirectional", 4).int(), torch.ones(4, 4, dtype=torch.long)),
)
assert torch.equal(causal_mask(4).int(), table_causal)

# %% [markdown] slideshow={"slide_type": "skip"}
# **Claim check — the mask table (§1) ✓**, with one word to fix: the causal row *i* has ones at
# *j* = 0 … *i*, *itself included* — "只能看到前面的位置" ("only the positions before it") should
# read "the positions up to and including itself". The diagonal is the self flow (A.2).
#
# **Claim check — §8's comparison table** (the table itself is run in A.13; the reach table of
# section 1 is the evidence):
# - masked self-attention: "仅前向 / 当前位置之前" (forward only / before the current position) ✓
#   forward only at every depth (120 pairs never connected at T = 16); ⚠ "before" includes the
#   position itself;
# - cross-attention: "编码器→解码器 / 编码器全序列 / O(n×m)" ✓: one-way (the encoder never reads
#   the decoder), the whole encoder in one layer, n·m (query, key) pairs. Forward and backward
#   flow do not exist for it (two different sequences), which `attncourse.flow.directional_flow`
#   refuses to compute (the cell);
# - sparse attention: "受限的全方向 / 部分序列" (restricted all-direction / part of the sequence)
#   ⚠: it depends on the pattern. Local masks reach everything, but only after ⌈(n − 1)/w⌉
#   layers; the Sparse Transformer's strided pattern is causal (forward only) and complete after
#   two layers; block masks never connect blocks. Its cost is checked in A.10.

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
from attncourse.flow import directional_flow

try:
    directional_flow(torch.full((4, 6), 1 / 6))  # a cross-attention matrix: 4 queries, 6 keys
except ValueError as error:
    print("directional_flow on cross-attention:", str(error).split(";")[1].strip())

# %% [markdown] slideshow={"slide_type": "skip"}
# ### A.2 The weights as flow, and the self flow (002 §2)
#
# Source 002 §2 computes the weights with `compute_attention_weights(Q, K, V)` and reads
# `attention_weights[0, i, j]` as "the information flow from position j to position i". Run as
# printed first (the block imports nothing), then with the two imports it needs:

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
from attncourse.attention import scaled_dot_product_attention, softmax

g = torch.Generator().manual_seed(5)
Q3, K3, V3 = (torch.randn(1, 3, 4, generator=g) for _ in range(3))  # (B, T, d)
call = lambda ns: ns["compute_attention_weights"](Q3, K3, V3)  # noqa: E731
print("as printed            :", ch05.run_source_block("compute_attention_weights", call).summary())
run = ch05.run_source_block("compute_attention_weights", call, extra={"torch": torch, "math": math})
print("with torch and math   :", run.summary())
print("first printed line    :", run.printed.splitlines()[0].split(":")[0])
out_src, w_src = run.result
out_pkg, w_pkg = scaled_dot_product_attention(Q3, K3, V3)
print(
    "weights and output == attncourse's scaled_dot_product_attention:",
    torch.allclose(w_src, w_pkg, atol=1e-6) and torch.allclose(out_src, out_pkg, atol=1e-6),
)
Q4 = torch.randn(1, 2, 3, 4, generator=g)  # (B, H, T, d): multi-head input
run4 = ch05.run_source_block(
    "compute_attention_weights",
    lambda ns: ns["compute_attention_weights"](Q4, Q4, Q4),
    extra={"torch": torch, "math": math},
)
print("on a (B, H, T, d) input:", run4.summary())
assert run.ok and not run4.ok

# %% [markdown] slideshow={"slide_type": "skip"}
# **Claim check — `compute_attention_weights` (§2) ✓ / ⚠.** With its imports it computes exactly
# softmax(QKᵀ/√d_k) and prints T² lines "Position j → Position i", the direction convention of this
# chapter (✓). As printed it fails (`torch`, `math` are not imported), and on the multi-head
# (B, H, T, d) input of every real model it breaks: `seq_len = Q.size(1)` is then H, and
# `attention_weights[0, i, j]` is a whole row, which the f-string cannot format.
#
# The next block, `information_aggregation_analysis`, prints each position's sources — but calls
# `calculate_attention_weight`, which the source never defines, and skips `source_pos ==
# target_pos`: the **self** flow is left out of the picture. How much does that leave out? The
# second cell measures the self share $S/T$ of every head of the two trained fill-in encoders of
# section 2, on 500 fresh sequences.

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
print(
    "information_aggregation_analysis():",
    ch05.run_source_block(
        "information_aggregation_analysis", lambda ns: ns["information_aggregation_analysis"]()
    ).summary(),
)

# %% slideshow={"slide_type": "skip"}
# NBVAL_IGNORE_OUTPUT
x_fill, _, _ = ch05.palindrome_batch(500, torch.Generator().manual_seed(5), masks=1)
self_shares = {}
with torch.no_grad():
    for seed in SEEDS:
        _, weights = encoders["bidirectional", seed](x_fill)
        own = torch.stack([flow_shares(w).self_loop.mean(0) for w in weights])  # (layers, heads)
        self_shares[seed] = own
        print(
            f"seed {seed}: self share per head, layers 1-3:",
            [[round(v, 3) for v in r] for r in own.tolist()],
        )
every = torch.cat([s.flatten() for s in self_shares.values()])
print(
    f"all 12 heads: from {float(every.min()):.3f} to {float(every.max()):.3f}, mean {float(every.mean()):.3f} (uniform: 1/16 = 0.0625)"
)
assert float(every.max()) <= 0.2 and 0.02 <= float(every.mean()) <= 0.12

# %% [markdown] slideshow={"slide_type": "skip"}
# In these encoders the self flow is small: a few hundredths per head, on average close to the
# 1/16 that uniform attention gives. So leaving it out costs little *here* — but nothing makes it
# small in general: the causal 6 × 6 example of A.3 puts half of its weight on the diagonal.
# **Claim check — `information_aggregation_analysis` (§2) ✗**: it cannot run (an undefined
# function), and a picture of a position's sources should include the position itself.
#
# ### A.3 The flow statistics (002 §6)
#
# `analyze_flow_statistics(attention_weights)` sums the weights below the diagonal (forward),
# above it (backward) and on it (self) — exercise 2's three sums — and divides forward by
# backward + 10⁻⁸. It also reports the total, the mean, the maximum and an entropy. As printed it
# stops at its first line: `calculate_attention_entropy` is never defined. Supplying it (the mean
# row entropy, Eq. 5.4.6) it runs; the package's `flow_statistics` computes the same numbers for a
# whole `(B, H, T, T)` tensor at once. Two 6 × 6 matrices from the same scores, one bidirectional
# and one causal; then the source's function on the `(B, H, T, T)` tensors a model returns:

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
from attncourse.flow import flow_statistics

g = torch.Generator().manual_seed(1)
scores = torch.randn(6, 6, generator=g, dtype=torch.float64)
A_bi, A_causal = softmax(scores), softmax(scores, mask=causal_mask(6))
stats_call = lambda A: lambda ns: ns["analyze_flow_statistics"](A)  # noqa: E731
entropy = {"calculate_attention_entropy": ch05.source_entropy}
print("as printed:", ch05.run_source_block("analyze_flow_statistics", stats_call(A_bi)).summary())
for name, A in (("bidirectional", A_bi), ("causal", A_causal)):
    src = ch05.run_source_block("analyze_flow_statistics", stats_call(A), extra=entropy).result
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
for name, A in (("bidirectional", A_bi), ("causal", A_causal)):
    sh = flow_shares(A)
    print(
        f"{name:>13} shares: forward {float(sh.forward):.4f}  backward {float(sh.backward):.4f}"
        f"  self {float(sh.self_loop):.4f}"
    )
W_one = A_bi[None, None]  # (B, H, T, T) = (1, 1, 6, 6): one sequence, one head
src = ch05.run_source_block("analyze_flow_statistics", stats_call(W_one), extra=entropy).result
print(
    f"on a (1, 1, 6, 6) tensor: seq_len = shape[0] = {W_one.shape[0]}; forward"
    f" {src['前向信息流']}, backward {src['后向信息流']}, ratio {src['前后向比例']},"
    f" self: a tensor of shape {tuple(src['自注意力'].shape)}"
)
W_two = torch.stack((A_bi, A_causal)).unsqueeze(1)  # (2, 1, 6, 6): two sequences, one head
run = ch05.run_source_block("analyze_flow_statistics", stats_call(W_two), extra=entropy)
print("on a (2, 1, 6, 6) tensor:", run.summary())
assert src["前向信息流"] == 0 and not run.ok

# %% [markdown] slideshow={"slide_type": "skip"}
# Three of the statistics say nothing about the attention:
# - **total flow = T** for any softmax weights (each of the T rows sums to 1), and **mean = 1/T**
#   (1/S for S keys): both came out 6.0000 and 0.1667 for both matrices, and would for any other;
# - the **ratio** forward / (backward + 10⁻⁸) turns a causal model's backward = 0 into
#   forward × 10⁸ — a number set by the 10⁻⁸, not by the model. The package returns `inf`;
# - the entropy is undefined in the source; the mean row entropy (nats) is one reasonable reading.
#
# What does carry information is the **split**: the shares forward / backward / self of the total
# (`flow_shares`), per head — what section 2 used to catch a language model reading the answer.
#
# **Claim check — `analyze_flow_statistics` (§6) ⚠**: the forward / backward / self sums are right
# (✓, the same numbers as the package to 10⁻¹²); total and mean are constants of the softmax (✗
# as statistics); the ratio is undefined for causal attention (✗ as printed: use shares, or
# `inf`); the entropy is undefined (✗ as code). And it takes the sequence length from
# `attention_weights.shape[0]`, so it is right only for one (T, T) matrix (✗ on a model's output):
# on a (B, H, T, T) tensor `shape[0]` is the batch size B and `attention_weights[i][j]` picks
# sequence *i*, head *j*. With B = H = 1 (the cell) it returns forward = backward = 0, ratio 0 and
# a whole (T, T) matrix as "self", without an error; for any B ≤ H it runs and adds up whole
# matrices of different sequences and heads; with B > H it fails with an `IndexError`.
# **Correct**: sum over the last two axes (`flow_statistics`, or exercise 2).
#
# ### A.4 The heat map's dashed lines (002 §6)
#
# Source 002 §6 draws the weights with `seaborn.heatmap` and adds two dashed lines,
# `plt.axhline(y=0, …, label='前向信息流')` (forward flow) and `plt.axvline(x=0, …,
# label='后向信息流')` (backward flow). The course does not install seaborn, so the block runs with
# `ch05.seaborn_stand_in`, which draws as `seaborn.heatmap` does (cell (i, j) covers [j, j + 1] ×
# [i, i + 1], row 0 at the top). First: the source's figure as printed (its Chinese labels need a
# CJK font; without one they show as boxes). Then: the same weights with the lines where forward
# and backward flow really are.

# %% slideshow={"slide_type": "skip"}
with ch05.seaborn_stand_in():
    run = ch05.run_source_block(
        "visualize_attention_flow",
        lambda ns: ns["visualize_attention_flow"](A_bi.numpy(), ["A", "B", "C", "D", "E", "F"]),
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

# %% [markdown] slideshow={"slide_type": "skip"}
# **Claim check — the heat map's `axhline(0)` / `axvline(0)` (§6) ✗.** In seaborn's coordinates
# the line y = 0 is the top edge of row 0 and x = 0 the left edge of column 0: they mark the
# borders of the first query's row and the first key's column, not any flow. (Their labels never
# show either: the block calls no `plt.legend()`.) **Correct**: forward flow (j < i) is the
# strictly lower triangle, backward (j > i) the strictly upper one, self the diagonal; the
# separators run along the diagonal cells, between the two staircases of the second figure.
#
# ### A.5 Context, generation and ambiguity (002 §1, §7, §8, §10)
#
# **Claim check — "双向性使得编码器能够捕获丰富的上下文信息" (bidirectionality lets the encoder
# capture rich context, §1, §10) ✓** in the measurable sense of section 2: where the answer lies
# to the right, only the bidirectional encoder finds it; where it lies to the left, both do.
#
# **Claim check — "掩码自注意力 … 生成任务、语言建模" (decoders use masked self-attention for
# generation, §8) ✓**, with the reason section 2 measured: a bidirectional language model learns
# to copy the next token (loss below the data's floor, backward share about 0.9 in one layer) and
# cannot generate.
#
# Source 002 §7 also claims the global context "显著提升对歧义的处理能力" (markedly improves the
# handling of ambiguity) for named-entity recognition, tagging and parsing, and that the learned
# representations "具有良好的泛化能力" (transfer well) — **—**: statements about natural-language
# benchmarks that nothing on a CPU here can test.
#
# ### A.6 The relay and the residual sum (source 001, Eq. 5.4.7–5.4.9)
#
# Source 001 §5.4.3 writes one layer as
#
# $$\text{Attention}^{(l)} = \text{Softmax}\Big(\frac{X^{(l)}W_Q^{(l)}(X^{(l)}W_K^{(l)})^\top}{\sqrt{d_k}}\Big)X^{(l)}W_V^{(l)} \qquad (5.4.7)$$
#
# with the Post-LN recurrence (5.4.8) of section 1, and then "considers a two-layer case"
# (考虑一个两层的情况): "the first layer learns a bridging pattern: position n attends to m, m
# attends to 1. With the first layer's weights A⁽¹⁾, the output of n is ≈ A⁽¹⁾_nm v_m and that of m
# ≈ A⁽¹⁾_m1 v_1, so position 1's information reaches n through m" — "not directly (it needs two
# steps)" (需要两步).
#
# **Claim check — the relay after Eq. (5.4.7)–(5.4.8) ✗ as printed, ✓ corrected.** The source
# does set up two layers and two steps; its error is writing both hops with the first layer's
# weights, A⁽¹⁾_nm and A⁽¹⁾_m1. Inside one layer the hops happen at once, and *n* reads *m*'s
# input, which holds nothing of position 1 yet (section 4's one-hot cell: 0 after one layer, 1
# after two). **Correct statement**: hop 1 (m reads 1) in layer 1, hop 2 (n reads m) in layer 2,
# path weight A⁽²⁾_nm A⁽¹⁾_m1. So corrected, the claim holds and is measured in section 4: a
# previous-token head feeding an induction head, one layer failing at the task, and layer 1's
# attention replaced by "read yourself" breaking it.
#
# **Claim check — the relay "models very long-range dependencies" (after Eq. 5.4.8) ⚠.** What the
# source leaves out: with a dense mask every pair of positions is already one hop apart (its own
# Eq. 5.4.5; section 1: all pairs after one layer), so a relay adds no reach. What depth adds is
# **composition** (section 4). Relays are needed for *reach* only under sparse masks (a local
# window of w needs ⌈(n − 1)/w⌉ layers, section 1).
#
# **Claim check — "the output of n is ≈ A_nm v_m" (after Eq. 5.4.8) ⚠**: only if one weight
# dominates the row, and it ignores the residual X^{(l)} that Eq. (5.4.8) adds. In induction the
# relayed information (A) enters B's *key*, so it decides *where* layer 2 reads, while the value
# it copies (B) travels one step (Olsson et al.'s K-composition).
#
# **Eq. (5.4.9)**, X_i^{(L)} = X_i^{(0)} + ΔX_i^{(1)} + … + ΔX_i^{(L)}, "the final representation
# keeps a direct component of the original embedding", is chapter 04's to judge — see chapter 04
# (its verdict: ⚠, it holds for Pre-LN blocks, where the residual stream is a plain sum, but not
# for the Post-LN recurrence (5.4.8) printed just above it, where every layer renormalises the
# sum). The cell repeats the one check this chapter made: every attention and MLP weight set to
# 0 (ΔX = 0), where Eq. (5.4.9) says the output must equal the input.

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
from attncourse.blocks import TransformerBlock

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

# %% [markdown] slideshow={"slide_type": "skip"}
# ### A.7 Head specialisation (002 §4)
#
# The source's table names "syntax heads (1–3 tokens)", "semantic heads (any distance)", "position
# heads (regular intervals)" and "global heads" with typical distances. Run as printed it only
# returns that dictionary; nothing in it is measured. Its companion `head_collaboration_analysis`
# needs `torch` imported, then prints each head's top-3 sources for position 0 and stops at
# `calculate_head_diversity`, which is never defined; its top-3 lists are `top_sources(weights,
# 3)` of the package.

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
from attncourse.flow import top_sources

print(
    "multi_head_information_specialization():",
    ch05.run_source_block(
        "multi_head_information_specialization",
        lambda ns: ns["multi_head_information_specialization"](),
    ).summary(),
)
w_heads = softmax(torch.randn(1, 2, 5, 5, generator=torch.Generator().manual_seed(4)))
collaboration = lambda ns: ns["head_collaboration_analysis"](w_heads)  # noqa: E731
print(
    "head_collaboration_analysis(weights):",
    ch05.run_source_block("head_collaboration_analysis", collaboration).summary(),
)
run = ch05.run_source_block("head_collaboration_analysis", collaboration, extra={"torch": torch})
print("   ... with torch imported:", run.summary())
print("its first line for head 0:", run.printed.splitlines()[2].strip())
print(
    "top_sources(weights, 3) for position 0, head 0:", top_sources(w_heads, 3)[1][0, 0, 0].tolist()
)

# %% [markdown] slideshow={"slide_type": "skip"}
# **Claim check — head specialisation (§4) ⚠.** Heads do specialise — section 4's previous-token
# head is a position head (it reads *i* − 1 whatever the token), the induction head a content
# head (it reads wherever the matching token was). That heads in large language models track
# syntactic relations was found by probing trained models (Clark et al. 2019; Voita et al. 2019
# also found positional and rare-word heads); the table's categories and distances are
# illustrations, not results.
#
# ### A.8 Layer-wise maps and interpretability (002 §3, §7, §10)
#
# Source 002 §3 tracks "the information flow through a multi-layer encoder" by storing each
# layer's attention map (`LayerwiseInformationFlow`). Run as printed, its `forward` fails at once
# (`self.encoder_layers` is never built), and its loop feeds each layer's attention *output* to
# the next layer, dropping the residual path of Eq. (5.4.8).

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
print(
    "LayerwiseInformationFlow().forward(x):",
    ch05.run_source_block(
        "LayerwiseInformationFlow",
        lambda ns: ns["LayerwiseInformationFlow"]().forward(torch.zeros(1, 4, 8)),
    ).summary(),
)

# %% [markdown] slideshow={"slide_type": "skip"}
# **Claim check — `LayerwiseInformationFlow` (§3) ⚠**: recording the per-layer maps is a start,
# but its forward pass is broken as printed, and the maps must be composed (rollout, flow: section
# 3) to say anything about the inputs.
#
# **Claim check — "可解释性 … 注意力可视化" (§7: attention visualisation as the answer to poor
# interpretability) and "提供可解释的注意力模式" (§10: attention patterns are interpretable) ⚠.**
# A single layer's heat map can mislead: in section 3 the last layer's points at the answer's
# source in a minority of sequences. Explanations must compose the layers and the residual paths
# (rollout, flow) and should be checked against what the model itself responds to (gradients,
# ablations; Abnar & Zuidema 2020).
#
# ### A.9 What the layers encode: "shallow local, deep global"? (002 §3; 001 §5.4.3)
#
# Source 002 §3 (`attention_pattern_evolution`) says layers 1–2 attend locally ("strong
# connections between neighbouring positions", syntax and lexical information), layers 3–4 at
# medium range (phrases, clauses, semantic composition), layers 5–6 globally (sentence-level,
# "high-level semantics and topic"). Source 001 §5.4.3 says the same of layers near the input and
# near the output. The measurement behind the distance part is the **mean attention distance**
# Σ_j A_ij |i − j| per head, averaged over queries (`attncourse.flow.mean_attention_distance`).
# Dosovitskiy et al. (2021, ViT, Fig. 7) measured it (in pixels) per head and layer: the lowest
# layers hold both local and global heads, the higher ones only global heads — on average the
# distance rises with depth, with a spread at the bottom.
#
# Here: the fill-in encoders (3 layers × 2 heads) and the induction decoders (2 layers × 1
# head), both seeds, on fresh sequences. References: uniform attention over 16 positions gives
# (T² − 1)/(3T) = 5.31; uniform causal attention over 23 positions gives 22/4 = 5.5; a
# previous-token head gives about 1.

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
run = ch05.run_source_block(
    "attention_pattern_evolution", lambda ns: ns["attention_pattern_evolution"]()
)
for layers, pattern in run.result.items():
    print(f"{layers}: {pattern['特征']} / {pattern['模式']}")
print(f"uniform attention over 16 positions: mean distance {(16 * 16 - 1) / 48:.4f}")

# %% slideshow={"slide_type": "skip"}
# NBVAL_IGNORE_OUTPUT
from attncourse.flow import mean_attention_distance

distances = {}
with torch.no_grad():
    for seed in SEEDS:
        _, w_enc = encoders["bidirectional", seed](x_fill)
        _, w_dec = decoders["causal", seed](x_ind[:, :-1])
        for kind, ws in (("encoder", w_enc), ("decoder", w_dec)):
            distances[kind, seed] = torch.stack([mean_attention_distance(w).mean(0) for w in ws])
for (kind, seed), d in distances.items():
    per_layer = " | ".join(
        f"layer {layer + 1}: " + " ".join(f"{v:5.2f}" for v in row.tolist())
        for layer, row in enumerate(d)
    )
    first, last = float(d[0].mean()), float(d[-1].mean())
    print(
        f"{kind} seed {seed}: {per_layer}   (first -> last layer, mean over heads: {first:.2f} -> {last:.2f})"
    )
for seed in SEEDS:
    enc, dec = distances["encoder", seed], distances["decoder", seed]
    assert enc.min() >= 0.55 * 5.3125, "a local head in the encoder"
    assert float(enc[0].mean() - enc[-1].mean()) >= 0.5, "the encoder's first layer reads farther"
    assert float(dec[-1].mean() - dec[0].mean()) >= 0.1, "the decoder's last layer reads farther"

# %% slideshow={"slide_type": "skip"}
fig, axes = plt.subplots(1, 2, figsize=(10, 3))
for ax, kind, ref in ((axes[0], "encoder", (16 * 16 - 1) / 48), (axes[1], "decoder", 22 / 4)):
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

# %% [markdown] slideshow={"slide_type": "skip"}
# Per model, on both seeds (asserted with margins): in the **decoder** the mean distance rises
# from layer 1 to layer 2, as the claim says — the previous-token head of layer 1 is local on the
# first eight tokens but reads farther on the pairs, and the induction head reads far back. In
# the **encoder** it falls: the first layer reads farthest — the task's long-range read (the
# mirror, on average 8 positions away) happens first — and no encoder head is local (every one
# reads at a mean distance of more than half the uniform one). How large the gaps are varies with
# the seed and the machine (printed above).
#
# **Claim check — "浅层局部、深层全局" (shallow layers local, deep layers global; 002 §3
# `attention_pattern_evolution`; 001 §5.4.3) ⚠: a tendency that depends on the task, to be
# reported per model.** It held in our induction decoders and in ViT (on images, whose locality the
# early layers exploit); it was reversed in our fill-in encoders, whose task needs a long-range
# read first. **Correct statement**: measure the mean attention distance per head and per model;
# do not assume it from the layer index.
#
# **Claim check — what layers 1–6 *encode* (syntax and words → phrases and semantic composition →
# high-level semantics and topic; 002 §3) ⚠: not checkable at this scale.** What can be checked
# here is only the distance half (above). The content half needs natural-language models with
# six or more layers and probes of what each layer's states encode; our models have two or three
# layers and synthetic tasks with no syntax, phrases or topics. Probing studies of BERT report a
# rough ordering of this kind — surface and syntactic information peaking in lower and middle
# layers, semantic information higher (Tenney et al. 2019; Jawahar et al. 2019) — as a tendency
# spread over many layers, not as the clean two-layer bands the table draws.
#
# ### A.10 What sparse attention costs (002 §8)
#
# **"稀疏注意力 … O(n×√n) 或 O(n×log n)" (§8).** The cost of a sparse pattern is the number of
# (query, key) pairs it keeps. Counted for n = 128 … 1024, with the exponent of n fitted:

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
counts = ch05.sparse_pair_counts((128, 256, 512, 1024))
print(
    f"{'pattern':>24} " + "".join(f"{'n = ' + str(n):>11}" for n in counts["lengths"]) + "   n^p: p"
)
for name, c in counts["counts"].items():
    print(f"{name:>24} " + "".join(f"{v:11d}" for v in c) + f"   {counts['exponents'][name]:.2f}")
e = counts["exponents"]
assert abs(e["dense"] - 2) < 1e-12 and abs(e["local (window 8)"] - 1) < 0.02
assert abs(e["strided (stride sqrt n)"] - 1.5) < 0.05 and abs(e["block (size sqrt n)"] - 1.5) < 0.05
assert 1.0 < e["LogSparse"] < 1.25

# %% slideshow={"slide_type": "skip"}
# NBVAL_IGNORE_OUTPUT
times = ch05.masked_attention_times(1024)
print("scaled_dot_product_attention at n = 1024 (ms):", {k: round(v, 1) for k, v in times.items()})

# %% [markdown] slideshow={"slide_type": "skip"}
# **Claim check — "稀疏注意力 … O(n×√n) 或 O(n×log n)" ⚠.** Pair counts confirm: strided and block
# patterns with stride (block size) √n keep O(n^1.5) pairs, LogSparse O(n log n) (fitted exponent
# just above 1), a fixed window O(n). So the cost depends on the pattern, and two conditions apply:
# (1) the saving needs a kernel that skips the masked pairs. A boolean mask on dense attention, as
# in the calls timed above, still computes all n² scores and then applies the mask: the strided
# mask keeps under 5 % of the pairs at n = 1024, but its call does all of the dense call's work
# and a masking pass on top, so it saves none of the n² work. The printed times show no saving:
# any gap between them is the masking pass or run-to-run noise; their values depend on the
# machine and its load. (2) Fewer pairs per layer mean more layers to connect everything (section 1: a local
# window w needs ⌈(n − 1)/w⌉ layers; block masks never connect). Chapter 10 builds the kernels.
#
# ### A.11 Speed and long range (002 §7)
#
# **"训练速度比RNN快数十倍" (trains tens of times faster than an RNN).** What is structural — and
# exact — is the number of *sequential* steps: an RNN layer's n steps must run one after another,
# attention's whole layer has no step that waits for the previous position. The first cell counts
# the longest chain of operations in each layer's autograd graph (`autograd_depth`, as in chapter
# 04): the recurrent chain grows by three operations per position, attention's stays the same at
# any n. How much faster that makes training in wall-clock time depends on the hardware (how much
# parallel work it can run at once) and on the implementations (the course's RNN is a Python
# loop; cuDNN fuses its steps): the second cell prints one pass of each on this machine, and their
# ratio changes with the machine and its load.

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
from attncourse.attention import MultiHeadAttention
from attncourse.chapters.ch04_gradient_paths import autograd_depth
from attncourse.rnn import VanillaRNN

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

# %% slideshow={"slide_type": "skip"}
# NBVAL_IGNORE_OUTPUT
step_times = ch05.training_step_times(length=128, batch=4, repeats=2)
print(
    "one forward + backward pass, (4, 128, 64) inputs, one thread (ms): "
    + ", ".join(f"{k} {v:.1f}" for k, v in step_times.items())
)

# %% [markdown] slideshow={"slide_type": "skip"}
# **Claim check — "训练速度比RNN快数十倍" (§7) ⚠**: exact in the number of sequential steps; the
# wall-clock factor is no constant (hardware, implementation), and it is a property of
# self-attention, causal or not — not of bidirectionality.
#
# **Claim check — "长距离建模 … 避免了序列模型的长距离依赖衰减问题" (long-range modelling: direct
# dependencies at any distance avoid the long-range decay of sequential models, §7) ⚠.** What this
# chapter measures is the path: one bidirectional layer connects every pair of positions (section
# 1), and a dependency over distance d passes through one attention step instead of d recurrent
# ones (the chain counts above). That removes the cause of decay that grows with distance — a
# product of d Jacobians, whose gradient chapter 04 measured falling with distance. It does not
# make every distant signal arrive at full strength: its weight is one softmax share among n (the
# dilution of A.12), and a deep stack still multiplies one Jacobian per layer. **Correct
# statement**: in self-attention the path between any two positions is one step per layer
# whatever their distance, so there is no decay *with distance* along the path; how strongly a
# distant position is read depends on the learnt weights, not on the distance.
#
# **"O(n²)的计算和存储复杂度" (O(n²) compute and memory, §7 challenges)**: a dense head scores
# all n² pairs (A.10's dense row: n² exactly); the memory is n² only for code that stores the
# weights. Chapter 10 owns this claim and measures both halves.
#
# ### A.12 Positions and dilution (002 §7)
#
# **"需要显式的位置信息编码" (needs explicit position encoding, §7 challenges).** Without
# positions, bidirectional self-attention is *permutation equivariant*: permuting the input
# permutes the output, so order is invisible. A causal mask breaks the symmetry by itself — a
# causal model can infer positions without any encoding (Haviv et al. 2022). Measured in float64
# with a random permutation:

# %% slideshow={"slide_type": "skip"}
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

# %% [markdown] slideshow={"slide_type": "skip"}
# **Claim check — "需要显式的位置信息编码" ✓ / ⚠**: ✓ for bidirectional attention, ⚠ for causal
# attention, whose mask leaks order.
#
# **"注意力分散" (attention dilution, §7 challenges).** If one key scores Δ above n − 1 equal
# others, its weight is $1/(1 + (n-1)e^{-\Delta})$: at a fixed Δ it shrinks as n grows. But a model
# can raise Δ — scores grow with ‖q‖‖k‖. Which growth keeps the weight fixed? With
# Δ = Δ₀ + ln(n − 1) the factor (n − 1)e^{−Δ} is e^{−Δ₀} at every n, so the weight is
# 1/(1 + e^{−Δ₀}) **exactly**; with the rounder Δ = Δ₀ + ln n it is 1/(1 + e^{−Δ₀}(n − 1)/n),
# which drifts towards that value as n grows:


# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
def top_weight(n, delta):
    """The weight of one key that scores delta above n - 1 equal others."""
    return 1 / (1 + (n - 1) * math.exp(-delta))


print(f"{'n':>6} | {'Delta = 3':>9} | {'3 + ln n':>8} | {'3 + ln(n - 1)':>13}")
for n in (10, 100, 1000, 10000):
    exact = top_weight(n, 3.0 + math.log(n - 1))
    print(
        f"{n:6d} | {top_weight(n, 3.0):9.4f} | {top_weight(n, 3.0 + math.log(n)):8.4f} | {exact:13.4f}"
    )
    assert abs(exact - 1 / (1 + math.exp(-3.0))) < 1e-12

# %% [markdown] slideshow={"slide_type": "skip"}
# **Claim check — "注意力分散" ⚠**: at a fixed score gap the top weight shrinks like 1/n (✓); a
# gap that grows like ln(n − 1) keeps it fixed exactly (ln n: to within 0.005 here, exactly only
# as n → ∞). Dilution is a property of the scores a model learns, not a fixed cost of
# bidirectionality.
#
# ### A.13 The remaining listings, and the dependency example (002 §1, §5, §7–§9)
#
# `bidirectional_attention` (§1) uses `zeros` and `attention_score`, never defined; even with them
# it returns raw scores, not weights (no softmax). `trace_sentence_information_flow` and
# `long_distance_dependency_flow` (§5) call `simulate_attention_weights` and
# `trace_dependency_path`, never defined: their "information flow paths" are not computed
# anywhere. The four tables (§7 advantages and challenges, §8 comparison, §9 task-specific
# designs) run and return dictionaries; their claims are checked in this appendix where they can
# be measured, and §9's task recipes (sentiment, NER, reading comprehension, translation) are
# design advice with nothing to measure (—).

# %% slideshow={"slide_type": "skip"}
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
    print(f"{name + '()':>34}: {ch05.run_source_block(name, call).summary()}")
run = ch05.run_source_block(
    "long_distance_dependency_flow", lambda ns: ns["long_distance_dependency_flow"]()
)
print("long_distance_dependency_flow's first line:", run.printed.splitlines()[0])
table_8 = ch05.run_source_block(
    "compare_attention_types", lambda ns: ns["compare_attention_types"]()
).result
print("§8 says sparse attention costs:", table_8["稀疏注意力"]["计算复杂度"])

# %% [markdown] slideshow={"slide_type": "skip"}
# **The dependency example (§5).** `long_distance_dependency_flow` lists five dependencies of
# *The book [that John, who lives in Paris, wrote] is famous*, the last one
# `("lives", "Paris", "动宾关系", "短距离")`: *Paris* as the **object** of *lives* (a verb–object
# relation), at short distance. **Claim check — the label "lives → Paris: 动宾关系" (§5) ✗.**
# *Lives* is intransitive here; *Paris* is the object of the preposition *in*, and the phrase *in
# Paris* modifies *lives*: lives →(prep) in →(pobj) Paris in Stanford dependencies, or lives
# →(obl) Paris with *in* as its case marker in Universal Dependencies — in neither scheme a
# verb–object relation. The distance label (short: two words apart) is right. Two more details of
# the list: the subject of *lives* is the relative pronoun *who*, whose antecedent is *John*; and
# the list leaves out the dependency the sentence is built around — *book* is the object of
# *wrote*, seven words later, linked through *that* — the kind of long-range link the section is
# about.
#
# ### A.14 Claim checks at a glance
#
# | source claim | verdict | correct statement / condition |
# |---|---|---|
# | 002 §1 mask table: lower-triangular vs all-ones | ✓ | the causal row includes the diagonal: "up to and including" the current position (A.1) |
# | 002 §1/§10: every token accesses every position directly | ✓ | bidirectional, one layer: all 256 pairs at L = 1 (section 1) |
# | 002 §8: masked self-attention "forward only" | → ch. 10 | see chapter 10, which owns it; here: at every depth: the 120 pairs j > i are never reached at T = 16; "before" includes the position itself (section 1, A.1) |
# | 002 §8: cross-attention encoder → decoder, whole encoder, O(n×m) | → ch. 10 | see chapter 10, which owns it; here: one-way; forward/backward flow undefined for it (section 1, A.1) |
# | 002 §8: sparse "restricted all-direction, part of the sequence" | → ch. 10 | see chapter 10, which owns it; here: pattern-dependent: local reaches all after ⌈(n−1)/w⌉ layers, strided is causal (2 layers), block never connects blocks (section 1) |
# | 002 §8: sparse cost O(n√n) or O(n log n) | → ch. 10 | see chapter 10, which owns it; here: strided/block with √n: n^1.5, LogSparse: n log n, window: n; needs kernels that skip masked pairs (A.10) |
# | 002 §2 `compute_attention_weights`, "A[0, i, j]: flow j → i" | ✓ / ⚠ | needs its imports; breaks on (B, H, T, d) inputs (A.2) |
# | 002 §2 `information_aggregation_analysis` | ✗ | undefined function; leaves out the self flow — measured 0.02–0.10 per head in the trained encoders (mean ≈ 1/16, the uniform value), 0.51 in the causal 6 × 6 example (A.2, A.3) |
# | 002 §6 `analyze_flow_statistics`: forward / backward / self | ✓ | the sums are right on one (T, T) matrix (same as `attncourse.flow`, exercise 2) (A.3) |
# | 002 §6 `analyze_flow_statistics`: `seq_len = shape[0]` | ✗ on (B, H, T, T) | takes B as the length: runs silently for B ≤ H (B = H = 1: forward = backward = 0), `IndexError` for B > H; sum over the last two axes (A.3) |
# | 002 §6: total flow, mean strength | ✗ as statistics | T and 1/S for any softmax weights (A.3) |
# | 002 §6: ratio forward / (backward + 1e-8) | ✗ | undefined for causal attention (10⁸ × forward); use shares, or `inf` (A.3) |
# | 002 §6: `calculate_attention_entropy` | ✗ as code | never defined; the mean row entropy is one reading (A.3) |
# | 002 §6: heat map `axhline(0)` / `axvline(0)` = forward / backward flow | ✗ | they mark row 0 and column 0; forward/backward are the triangles below/above the diagonal (A.4) |
# | 002 §1/§10: bidirectionality captures rich context | ✓ | fill-in: only the bidirectional encoder restores left-half tokens (section 2, A.5) |
# | 002 §8: decoders use masked attention for generation | → ch. 10 | see chapter 10, which owns it; here: a bidirectional LM reads the next token (backward share ≈ 0.9 in one layer, loss below the floor) and cannot generate (section 2, A.5) |
# | 001 Eq. (5.4.7)–(5.4.8), two-layer relay written with A⁽¹⁾_nm and A⁽¹⁾_m1 | ✗ as printed / ✓ corrected | both hops in layer 1 relay nothing (n reads m's input); hop 2 in layer 2, path A⁽²⁾_nm A⁽¹⁾_m1: previous-token → induction head; one layer fails; ablating layer 1 breaks it (section 4, A.6) |
# | 001 after Eq. (5.4.8): the relay "models very long-range dependencies" | ⚠ | under a dense mask every pair is one hop apart (Eq. 5.4.5): depth buys composition, not reach; reach needs depth only under sparse masks (sections 1, 4; A.6) |
# | 001 after Eq. (5.4.8): "output of n ≈ A_nm v_m" | ⚠ | only with one dominant weight, ignoring the residual (A.6) |
# | 001 Eq. (5.4.9): final representation keeps the embedding | → ch. 04 | see chapter 04, which owns it: it holds for Pre-LN, not for the source's Post-LN stack (A.6) |
# | 002 §4: head specialisation types and distances | ⚠ | heads specialise (a position head and a content head measured); the table's types and distances are not measurements (A.7) |
# | 002 §3 `LayerwiseInformationFlow` | ⚠ | broken as printed; per-layer maps must be composed (rollout, flow) (A.8) |
# | 002 §7/§10: attention patterns are interpretable | ⚠ | the last layer's raw weights mislead; rollout/flow agree with gradients and ablations (section 3, A.8) |
# | 002 §3 / 001 §5.4.3: shallow layers local, deep global | ⚠ | a tendency that depends on the task, per model: rises in the induction decoders and in ViT, falls in the fill-in encoders; measure per head (A.9) |
# | 002 §3: layers 1–6 encode syntax → semantic composition → topic | ⚠ | not checkable at this scale (2–3 layers, synthetic tasks); BERT probing finds a rough ordering spread over many layers (A.9) |
# | 002 §7: trains tens of times faster than an RNN | → ch. 10 | see chapter 10, which owns it; here: exact: attention's longest chain is the same at any n, an RNN's grows by 3 operations per position; the wall-clock ratio depends on hardware and implementation (A.11) |
# | 002 §7: long-range modelling avoids the decay of sequential models | → ch. 10 | see chapter 10, which owns it; here: no decay with distance *along the path*; how strongly a distant position is read is set by the learnt weights (dilution); gradient decay with distance is chapter 04's (A.11) |
# | 002 §7: O(n²) compute and memory | → ch. 10 | see chapter 10, which owns it; here: n² pairs per head (dense) (A.10) |
# | 002 §7: needs explicit position encoding | → ch. 10 | see chapter 10, which owns it; here: bidirectional is permutation-equivariant; causal masks leak order (A.12) |
# | 002 §7: attention dilution | → ch. 10 | see chapter 10, which owns it; here: at a fixed score gap; a gap growing like ln(n − 1) keeps the weight exactly (ln n only as n → ∞) (A.12) |
# | 002 §7: better ambiguity handling, richer transferable representations | → ch. 10 | see chapter 10, which owns it; here: benchmark claims, nothing to measure here (A.5) |
# | 002 §1 `bidirectional_attention`; §5 sentence-tracing blocks; §4 `head_collaboration_analysis` | ✗ as code | undefined names (`zeros`, `simulate_attention_weights`, `trace_dependency_path`, `calculate_head_diversity`); `bidirectional_attention` returns scores, not weights (A.7, A.13) |
# | 002 §5: "lives → Paris: 动宾关系" (verb–object) | ✗ | Paris is the object of the preposition *in*; *lives* is intransitive (A.13) |
# | 002 §9 task-specific designs | — | advice (A.13) |
#
# **Errata in one place.** Source 001's relay writes both hops with the first layer's weights
# (A⁽¹⁾_nm, A⁽¹⁾_m1): the second hop is A⁽²⁾_nm. Source 002's `analyze_flow_statistics` takes the
# sequence length from `shape[0]`, divides by backward + 10⁻⁸ and calls an undefined entropy; its
# heat map's dashed lines mark row 0 and column 0, not forward and backward flow; five listings
# call names that are never defined (`zeros`, `calculate_attention_weight`,
# `calculate_head_diversity`, `simulate_attention_weights`, `trace_dependency_path`) and
# `LayerwiseInformationFlow` never builds its layers; "only the positions before it" should read
# "up to and including it"; and in §5 *Paris* is the object of *in*, not of *lives*.
