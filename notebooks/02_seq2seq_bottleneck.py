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
# # Chapter 02 · The seq2seq bottleneck and alignment
# *注意力解决的对齐问题和信息瓶颈* — source 003 (the whole note); source 000, §14.3.5
#
# Take twenty random tokens. Read them once, write a note of 32 numbers, put the tokens away, and
# write all twenty back from your note alone. That is the job of an encoder–decoder without
# attention, and a trained one gets only a few of them right. Now do it again, but glance back at
# the tokens while you write, one glance per token: easy at any length. This chapter is about that
# glance. A decoder that looks back at every source position, with weights it computes afresh at
# each step, is how attention entered deep learning (Bahdanau et al. 2015).
#
# **After this chapter you can**
# - explain why one fixed-size context vector limits an encoder–decoder, and measure it: accuracy
#   falls as the source gets longer;
# - write Bahdanau's additive score and Luong's local-m window, and say how Luong's dot, general
#   and concat scores differ from it;
# - reproduce Bahdanau et al.'s Fig. 2 (accuracy against length) and Fig. 3 (alignment matrices)
#   at CPU scale, and read an alignment matrix;
# - compute mutual information from a joint table, and turn a model's accuracy into a lower
#   bound on the bits that got through its bottleneck (Fano's inequality).
#
# **Prerequisites**: chapter 01 (softmax, attention as a weighted average, queries, keys and
# values, entropy); what a recurrent network does, $h_t = f(h_{t-1}, x_t)$ (a GRU is one); a
# table of probabilities p(x, y) and its row and column sums. Equations count positions from 1,
# as the papers do; code and plots count from 0, as tensors do.
#
# **Time**: main path about 80 min, appendix about 40 min (by `scripts/reading_time.py`: prose
# at 150 words a minute, code at 20 lines a minute, and each exercise's stated time).
#
# **How to read it.** Sections 1–6 are the main path. The **appendix** checks every claim of
# source 003 and of source 000 §14.3.5 and runs the source's code as printed; skip it on a first
# reading.

# %% slideshow={"slide_type": "skip"}
import math

import matplotlib.pyplot as plt
import numpy as np
import torch

from attncourse.attention import softmax
from attncourse.chapters import ch02_seq2seq_bottleneck as ch02

torch.manual_seed(0)
np.random.seed(0)
torch.set_num_threads(2)
torch.set_flush_denormal(True)
torch.set_printoptions(precision=2, sci_mode=False)
plt.rcParams.update({"figure.dpi": 80, "figure.figsize": (7, 3)})


def tokens(row, like=None):
    """A row of token ids as text; with ``like``, a dot where the two rows agree."""
    if like is None:
        return " ".join(f"{x:2d}" for x in row.tolist())
    return " ".join(" ." if a == b else f"{a:2d}" for a, b in zip(row.tolist(), like.tolist()))


# %% [markdown] slideshow={"slide_type": "slide"}
# ## 1. One vector for a whole sentence
#
# A **sequence-to-sequence** model reads a source $x = (x_1, \dots, x_n)$ and writes a target
# $y = (y_1, \dots, y_m)$: a translation, or — our test bed — a copy. The classic
# **encoder–decoder** (Cho et al. 2014; Sutskever et al. 2014) has two recurrent networks:
#
# ```
# x_1 … x_n  → encoder →  C (fixed size)  → decoder →  y_1 … y_m
# ```
#
# Our encoder is a bidirectional GRU: one GRU reads the source left to right, another right to
# left, and position j gets the state $h_j = [\overrightarrow{h}_j; \overleftarrow{h}_j]$ (32
# numbers). The **context vector** is where the two readings end,
# $C = [\overrightarrow{h}_n; \overleftarrow{h}_1]$: 32 numbers, whatever n is. The decoder is a
# GRU that starts from $s_0 = \tanh(W_s C)$ and reads $[y_{t-1}; C]$ at every step. Whatever it
# knows about the source, it knows through C: source 003 calls C the **信息瓶颈**, the information
# bottleneck.
#
# The task: sources of n tokens drawn uniformly from V = 20 symbols; the target is the source
# itself. The course ships models trained on sources of 5–30 tokens (`scripts/train_ch02.py`).
# Our **running example** is one source of twenty tokens, x★. The fixed-context model (`none`)
# and a model that may look back (`additive`, section 2) copy it:
#
# > **Glossary** · encoder 编码器 · decoder 解码器 · context vector 上下文向量 · fixed-length 固定长度 ·
# > information bottleneck 信息瓶颈 · token 词元 · greedy decoding 贪心解码

# %% slideshow={"slide_type": "-"}
# NBVAL_IGNORE_OUTPUT
models = ch02.load_chapter_models()  # {name: Seq2Seq}, trained by scripts/train_ch02.py
sources, _ = ch02.make_batch("copy", 20, 20, 20, torch.Generator().manual_seed(9))  # (20, 20)
x_star = sources[:1]  # (1, n=20) the running example
print(f"{'x★':>9}: {tokens(x_star[0])}")
for name in ("none", "additive"):
    y, _ = ch02.greedy_decode(models[name], x_star)  # (1, 20), each token fed back in
    print(f"{name:>9}: {tokens(y[0], like=x_star[0])}   ({int((y == x_star).sum())}/20 right)")

# %% [markdown] slideshow={"slide_type": "-"}
# A dot is a correct token: the fixed-context model gets a few, the other all. Is the first
# really reading the source only through C? Give each model its true C but replace the encoder
# states $h_1, \dots, h_n$ by noise, and compare the first step's output:

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
for name in ("none", "additive"):
    model = models[name]
    with torch.no_grad():
        H, C, s0 = model.encode(x_star)  # (1, 20, 32) states h_j, (1, 32) C, (1, 32) s_0
        y0 = torch.full((1,), model.bos)  # the start symbol
        logits, _, _ = model.step(y0, s0, H, C, 0)  # (1, V)
        noisy, _, _ = model.step(y0, s0, torch.randn_like(H), C, 0)  # same C, other h_j
    print(f"{name:>8}: output unchanged when h_1..h_n are noise: {torch.equal(logits, noisy)}")

# %% [markdown] slideshow={"slide_type": "-"}
# The model without attention does not notice: its output is a function of C alone. In the
# language of probability, X → C → Y is a **Markov chain** — given C, the output does not depend
# on the source any further. Section 5 turns that into a bound on information. Now the
# bottleneck itself: accuracy on 100 fresh sources at each length.

# %% slideshow={"slide_type": "-"}
# NBVAL_IGNORE_OUTPUT
lengths = [5, 10, 15, 20, 25, 30]
per_position = {}  # name -> one (n,) tensor per length: the accuracy at each target position
per_position["none"] = ch02.accuracy_by_length(models["none"], "copy", lengths, per_position=True)
acc = {"none": torch.stack([a.mean() for a in per_position["none"]])}  # (6,) token accuracy
print("source length n     :", "  ".join(f"{n:5d}" for n in lengths))
print("accuracy, fixed C   :", "  ".join(f"{a:5.2f}" for a in acc["none"].tolist()))
assert float(acc["none"][0]) >= 0.9 and float(acc["none"][-1]) <= 0.4

# %% [markdown] slideshow={"slide_type": "-"}
# Almost perfect at n = 5, then a steep fall that levels off above chance (1/20 = 0.05), as the
# first few tokens still get through (appendix A.1): the longer the source, the less of it gets
# through 32 numbers. That is not for lack of room — 32 float32 numbers have
# 1,024 bits, and thirty tokens need only 30 log₂ 20 ≈ 130 — but for lack of what a trained GRU
# manages to pack into C and unpack from it.
#
# **Takeaway.** An encoder–decoder without attention sees its source only through one
# fixed-size vector, and its accuracy falls as the source gets longer.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 2. Let the decoder look back: soft alignment
#
# To write $y_t$ of a copy, the decoder needs one token, $x_t$. So keep **all** encoder states
# $h_1, \dots, h_n$, and let the decoder compute a fresh context at every step t (source 003,
# 对齐问题的数学表述, steps 1–4):
#
# 1. a score for every source position: $e_{tj} = a(s_{t-1}, h_j)$;
# 2. weights by a softmax over the source: $\alpha_{tj} = \exp(e_{tj}) / \sum_k \exp(e_{tk})$;
# 3. the context $c_t = \sum_j \alpha_{tj} h_j$;
# 4. the next state and output from $s_{t-1}$, $c_t$ and $y_{t-1}$.
#
# This is chapter 01's attention: the decoder state is the **query**, the encoder states are the
# **keys** and **values** — *cross*-attention (source 000, Eq. 14.3.28). Each $\alpha_t$ is a soft
# choice of where to read; stacked for t = 1, …, m they form the **alignment matrix**, target
# steps down, source positions across. For a copy, the right alignment is the diagonal.
#
# Bahdanau et al. (2015) score each pair with a small network of one hidden layer, the
# **additive score**:
#
# $$e_{tj} = v_a^\top \tanh\left(W_a s_{t-1} + U_a h_j\right)$$
#
# $W_a$ (k × d_s) maps the decoder state, $U_a$ (k × d_h) each encoder state, into the same k
# hidden units; $v_a$ (k) weighs them into one number.
#
# > **Glossary** · alignment 对齐 · soft alignment 软对齐 · alignment matrix 对齐矩阵 · score function 打分函数 ·
# > additive attention 加性注意力 · cross-attention 交叉注意力 · query / key / value 查询 / 键 / 值

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 1 · Bahdanau's additive score
# **Difficulty** ●●○ · **Time** 10 min · **Points** 3 · **Practises** the additive score,
# broadcasting one decoder state against every encoder state
#
# Write `my_additive_scores(s, H, W_a, U_a, v_a)`: decoder states s (B, d_s), encoder states
# H (B, S, d_h), W_a (k, d_s), U_a (k, d_h), v_a (k,) → scores e (B, S) with
# e[b, j] = $v_a^\top \tanh(W_a s_b + U_a H_{b,j})$. Return the scores only, no softmax. The
# matrices act on column vectors as in the equation, so for the rows of s and H, $W_a s$ is
# `s @ W_a.T` (B, k) and $U_a h_j$ for every j is `H @ U_a.T` (B, S, k): give the first a position
# axis so the two broadcast. Keep the inputs' dtype (float32 in, float32 out). Loops, `einsum` and
# broadcasting all pass; the check refuses the course's `AdditiveAttention` and `LuongAttention`.


# %% nbgrader={"grade": false, "grade_id": "ch02_additive_scores", "locked": false, "schema_version": 3, "solution": true} slideshow={"slide_type": "skip"}
def my_additive_scores(s, H, W_a, U_a, v_a):
    """s (B, d_s), H (B, S, d_h), W_a (k, d_s), U_a (k, d_h), v_a (k,) -> e (B, S)."""
    ### BEGIN SOLUTION
    query = (s @ W_a.T).unsqueeze(1)  # (B, 1, k)
    keys = H @ U_a.T  # (B, S, k)
    return torch.tanh(query + keys) @ v_a  # (B, S)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch02_additive_scores_test", "locked": true, "points": 3, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"} tags=["raises-exception"]
from attncourse.exercises.ch02 import check_additive_scores

check_additive_scores(my_additive_scores)
### BEGIN HIDDEN TESTS
import importlib

import attncourse.exercises.ch02 as ex
import attncourse.exercises.engine as engine

engine = importlib.reload(engine)  # fresh copies: a patched check does not count
ex = importlib.reload(ex)
ex.check_additive_scores(my_additive_scores, seed=31)
### END HIDDEN TESTS

# %% [markdown] slideshow={"slide_type": "-"}
# Steps 1–3 with the trained additive model, at the first decoding step of x★. (The cell calls
# the course's score, so it runs before your exercise is done; `attention.score` computes the
# same numbers as your function.)

# %% slideshow={"slide_type": "-"}
# NBVAL_IGNORE_OUTPUT
additive = models["additive"]
with torch.no_grad():
    H, C, s0 = additive.encode(x_star)  # (1, 20, 32), (1, 32), (1, 32)
    e = additive.attention.score(s0[:, None], H)[:, 0]  # step 1: (1, 20) scores e_1j
    alpha = softmax(e)  # step 2: (1, 20) weights over the source
    c = alpha @ H[0]  # step 3: (1, 32) the context, a weighted average of the h_j
    context, weights = additive.attention(s0, H)  # the module does the same three steps
print("alpha_1 :", [round(a, 2) for a in alpha[0].tolist()])
print(f"largest weight {float(alpha.max()):.2f} on source position {int(alpha.argmax())}")
assert torch.allclose(weights, alpha) and torch.allclose(context, c)

# %% [markdown] slideshow={"slide_type": "-"}
# The weight concentrates at the start of the source: the first step reads the first token. Every
# step does the same for its own token, which gives the alignment matrix of x★:

# %% slideshow={"slide_type": "subslide"}
align = {"additive": ch02.alignment_matrices(additive, sources)}  # (20, T=20, S=20)
ch02.show_alignments(
    {"additive, copy": align["additive"][0]},
    tasks={"additive, copy": "copy"},
    title="x★: where each step reads (red rings: the true alignment)",
    size=3.4,
)
plt.show()

# %% [markdown] slideshow={"slide_type": "-"}
# A bright line along the diagonal, one position to the left of the red rings: step t reads
# position t − 1. Section 4 explains the shift — the bidirectional encoder has already put
# $x_t$ into $h_{t-1}$. Either way the decoder no longer needs C to hold twenty tokens: it needs
# to *find* one token per step.
#
# **Takeaway.** Attention gives the decoder a new context $c_t = \sum_j \alpha_{tj} h_j$ at
# every step; the weights, one row per step, form the alignment matrix.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 3. Luong's scores, and a window that assumes order
#
# Luong et al. (2015) simplified the recipe. They run the decoder's recurrent step **first**,
# then score its **current** state $s_t$ against each $h_j$, and combine
# $\tilde h_t = \tanh(W_c [c_t; s_t])$ to predict $y_t$. Three scores:
#
# $$\text{dot: } s_t^\top h_j \qquad \text{general: } s_t^\top W_a h_j \qquad
# \text{concat: } v_a^\top \tanh\left(W_a [s_t; h_j]\right)$$
#
# Dot and general are **multiplicative** — a bilinear form, no hidden layer; dot has no
# parameters at all and needs $s_t$ and $h_j$ of the same size. Concat is not multiplicative:
# splitting $W_a = [W_1 \mid W_2]$ gives $W_a [s; h] = W_1 s + W_2 h$, which is Bahdanau's
# additive score applied to $s_t$ (the appendix checks it numerically).
#
# > **⚠ The source says** Luong's score is $e_{ij} = s_{i-1}^\top W_a h_j$, with the previous
# > decoder state. Luong et al. score the **current** state $s_t$, computed before attention;
# > the previous state is Bahdanau's order, which must attend before it can step. Both orders
# > work, but they are different models: the cell computes the weights of an untrained model of
# > the chapter's Luong architecture from $s_t$ by hand, and shows that $s_{t-1}$ gives other
# > weights.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
luong = ch02.chapter_model("general", seed=0, **ch02.CHAPTER_SIZES).double()  # untrained
src, tgt = ch02.make_batch("copy", 2, 6, 20, torch.Generator().manual_seed(3))
with torch.no_grad():
    H, C, s0 = luong.encode(src)  # (2, 6, 32), (2, 32), (2, 32)
    states, _ = luong.decoder(luong.tgt_embed(luong.decoder_inputs(tgt)), s0[None])  # s_1..s_6
    _, weights = luong(src, tgt)  # (2, 6, 6) the model's own alignment
    W_a = luong.attention.W_a.weight  # (32, 32)
    with_s_t = softmax(torch.einsum("btd,de,bje->btj", states, W_a, H))  # s_t^T W_a h_j
    previous = torch.cat([s0[:, None], states[:, :-1]], 1)  # s_(t-1)
    with_s_prev = softmax(torch.einsum("btd,de,bje->btj", previous, W_a, H))
print("Luong's weights = softmax(s_t^T W_a h_j)         :", torch.allclose(weights, with_s_t))
print("                = softmax(s_(t-1)^T W_a h_j) too :", torch.allclose(weights, with_s_prev))

# %% [markdown] slideshow={"slide_type": "-"}
# Global attention scores all n positions at every step: n² scores for a whole sequence. Luong
# et al. also propose **local** attention, which reads only a window of 2D + 1 positions around
# an aligned position $p_t$. Its simplest form, **local-m** ("monotonic"), sets $p_t = t$: step t
# reads $|j - t| \le D$. That is an assumption about the task — the target follows the source in
# order. Implemented as a mask before the softmax (chapter 01), the weights outside the window are
# exactly 0.
#
# > **Glossary** · multiplicative attention 乘性注意力 · global / local attention 全局 / 局部注意力 ·
# > monotonic alignment 单调对齐 · window 窗口

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 2 · Luong's local-m window
# **Difficulty** ●●○ · **Time** 12 min · **Points** 3 · **Practises** masking before the softmax,
# positions counted from 0, a window cut off by the ends
#
# Write `my_local_m_weights(scores, t, D)`: scores (..., S) of target step t over the S source
# positions (any number of leading dimensions) → weights (..., S): the softmax of the scores over
# the window |j − t| ≤ D, and exactly 0 outside it. **Positions count from 0**, as tensors index
# them: the source positions are j = 0, 1, …, S − 1 and the first target step is t = 0 (Luong et
# al. count both from 1; p_t = t is the same window either way). Near the ends the window is cut
# off: t = 0 reads j = 0, …, D. Keep it stable for scores like 1000 (subtract the window's
# largest score before `exp`), keep the input's dtype and do not change the input in place. Use
# plain tensor operations (`exp`, `amax`, `masked_fill`, `where`, `logsumexp` are fine); the check
# refuses PyTorch's softmax functions (`torch.softmax`, `F.softmax`, `x.softmax`, `log_softmax`,
# `nn.Softmax`) and the course's package.


# %% nbgrader={"grade": false, "grade_id": "ch02_local_m", "locked": false, "schema_version": 3, "solution": true} slideshow={"slide_type": "skip"}
def my_local_m_weights(scores, t, D):
    """scores (..., S), t, D -> weights (..., S): softmax inside |j - t| <= D, 0 outside."""
    ### BEGIN SOLUTION
    j = torch.arange(scores.shape[-1])
    inside = (j - t).abs() <= D  # (S,)
    masked = scores.masked_fill(~inside, float("-inf"))  # (..., S)
    e = torch.exp(masked - masked.amax(dim=-1, keepdim=True))  # exp(-inf) = 0 outside
    return e / e.sum(dim=-1, keepdim=True)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch02_local_m_test", "locked": true, "points": 3, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"} tags=["raises-exception"]
from attncourse.exercises.ch02 import check_local_m_weights

check_local_m_weights(my_local_m_weights)
### BEGIN HIDDEN TESTS
import importlib

import attncourse.exercises.ch02 as ex
import attncourse.exercises.engine as engine

engine = importlib.reload(engine)  # fresh copies: a patched check does not count
ex = importlib.reload(ex)
ex.check_local_m_weights(my_local_m_weights, seed=32)
### END HIDDEN TESTS

# %% [markdown] slideshow={"slide_type": "-"}
# The chapter's `local-m` model uses the general score inside a window of D = 3. Trained on
# copying, the assumption holds; trained on **reversal** (the target is the source backwards, so
# step t needs position n − 1 − t, the anti-diagonal), it does not. Global `general` attention,
# trained on reversal too, for comparison:

# %% slideshow={"slide_type": "subslide"}
# NBVAL_IGNORE_OUTPUT
for name in ("local-m", "local-m, reverse", "general, reverse"):
    align[name] = ch02.alignment_matrices(models[name], sources)  # (20, 20, 20)
task_of = {"local-m": "copy", "local-m, reverse": "reverse", "general, reverse": "reverse"}
ch02.show_alignments({name: align[name][0] for name in task_of}, tasks=task_of)
plt.show()
acc_n30 = {
    name: float(ch02.accuracy_by_length(models[name], task, [30])[0])
    for name, task in task_of.items()
}
print("accuracy at n = 30:", {name: round(a, 2) for name, a in acc_n30.items()})
assert acc_n30["local-m"] >= 0.8 and acc_n30["general, reverse"] >= 0.8
assert acc_n30["local-m, reverse"] <= 0.4

# %% [markdown] slideshow={"slide_type": "-"}
# On reversal, local-m can only look inside its band around the diagonal (middle panel), while the
# red rings run along the anti-diagonal. It still gets the middle of the sequence, where the two
# cross, but for long sources it is back to a bottleneck. Global attention has no such assumption
# and learns the anti-diagonal. A window is a **prior**: cheaper (chapter 10 returns to it), and
# right only when the alignment is nearly monotonic.
#
# **Takeaway.** Luong's dot and general scores are multiplicative, concat is additive; local-m
# attention reads a window around $p_t = t$ and fails when the target does not follow the source
# in order.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 4. Reproducing Bahdanau et al.: accuracy against length, and alignments
#
# **Paper.** On WMT'14 English→French, the BLEU score (overlap with reference translations, 0–100)
# of the encoder–decoder without attention (RNNencdec-30/50) falls steeply once sentences are
# longer than about 20 words; with attention (RNNsearch-50) it stays flat up to 60 words (Bahdanau
# et al. 2015, Fig. 2; Table 1, all sentences: RNNencdec-50 17.82 BLEU, RNNsearch-50 26.75).
# Their Fig. 3 shows alignments: mostly along the diagonal, with local reorderings.
#
# **Here.** Copying, V = 20, sources of 5–30 tokens; embeddings of 16, an encoder of 16 + 16
# units, a decoder of 32; Adam, 1,500 steps of 64 sources (3,000 for `dot`); token accuracy of
# greedy decoding on 100 fresh sources per length. Six models: `none`, `additive`, `dot`,
# `general`, `concat` and `local-m`. Is attention just buying capacity? `none, wide` gives the
# fixed context **twice the units** (3.3 times the parameters) and twice the steps, on two seeds.
#
# **Pass**: at n = 30 every global attention model ≥ 80 % and ≥ 40 points above `none`, which is
# ≤ 40 %; both wide models ≤ 40 % at n = 30.

# %% slideshow={"slide_type": "-"}
# NBVAL_IGNORE_OUTPUT
wide = ["none, wide", "none, wide, seed 1"]  # the fixed context with twice the units, two seeds
copy_models = ["additive", "dot", "general", "concat", "local-m", *wide]
for name in copy_models:
    per_position[name] = ch02.accuracy_by_length(models[name], "copy", lengths, per_position=True)
    acc[name] = torch.stack([a.mean() for a in per_position[name]])
params = {name: ch02.parameter_count(models[name]) for name in acc}
print(f"{'model':>18} {'params':>6} | " + " ".join(f"{'n=' + str(n):>6}" for n in lengths))
for name, a in acc.items():
    print(f"{name:>18} {params[name]:6d} | " + " ".join(f"{x:6.3f}" for x in a.tolist()))
for name in ("additive", "dot", "general", "concat"):
    assert float(acc[name][-1]) >= 0.8 and float(acc[name][-1] - acc["none"][-1]) >= 0.4, name
for name in wide:
    assert float(acc[name][-1]) <= 0.4 and float(acc[name][-1] - acc["none"][-1]) <= 0.2, name

# %% slideshow={"slide_type": "subslide"}
fig, ax = plt.subplots(figsize=(7, 3.4))
shown = ["none", "none, wide", "additive", "dot", "general", "concat", "local-m"]
ch02.plot_accuracy({name: acc[name] for name in shown}, lengths, ax=ax)
ax.set_title("copy task: the analogue of Bahdanau et al. 2015, Fig. 2")
plt.show()

# %% [markdown] slideshow={"slide_type": "-"}
# Every attention model stays near the top at every length, with about as many parameters as the
# fixed-context model. The wide fixed context holds on longer — most of a 10-token source — and
# still falls towards chance by n = 30. More units move the collapse; attention removes it.
# (Which model is cheaper to *run* is another question, answered in appendix A.5.)
#
# The same effect appears in seconds from scratch: two small models trained here for 150 steps on
# sources of 4–8 tokens. **Pass**: attention ≥ 90 % at n = 4 and 5, and ≥ 25 points above the
# fixed context at n = 8.

# %% slideshow={"slide_type": "-"}
# NBVAL_IGNORE_OUTPUT
live = {}
for kind in ("general", "none"):
    live[kind] = ch02.chapter_model(kind, seed=0, **ch02.CHAPTER_SIZES)
    ch02.train_seq2seq(
        live[kind],
        "copy",
        steps=150,
        lr=2e-2,
        final_lr_fraction=0.1,
        min_length=4,
        max_length=8,
        desc=f"{kind}, trained here",
    )
live_acc = {kind: ch02.accuracy_by_length(m, "copy", [4, 5, 6, 7, 8]) for kind, m in live.items()}
for kind, a in live_acc.items():
    print(f"{kind:>8}: " + " ".join(f"n={n}: {x:.2f}" for n, x in zip(range(4, 9), a.tolist())))
assert float(live_acc["general"][:2].min()) >= 0.9
assert float(live_acc["general"][-1] - live_acc["none"][-1]) >= 0.25

# %% [markdown] slideshow={"slide_type": "-"}
# **Alignments (Fig. 3).** On 20 sources of length 20 (x★ and 19 more), where does each row of
# each model's alignment matrix peak? **Pass**: ≥ 85 % of the peaks within ±1 of the true
# alignment (the diagonal for copy, the anti-diagonal for `general, reverse`).

# %% slideshow={"slide_type": "-"}
# NBVAL_IGNORE_OUTPUT
for name in ("dot", "general", "concat"):
    align[name] = ch02.alignment_matrices(models[name], sources)  # (20, 20, 20)
print(f"{'model':>17} | within ±1 | exactly on | most common offset of the peak")
for name in ("additive", "dot", "general", "concat", "local-m", "general, reverse"):
    task, w = ("reverse" if "reverse" in name else "copy"), align[name]
    offset = int(ch02.peak_offsets(w, task).flatten().mode().values)
    print(
        f"{name:>17} | {ch02.diagonal_fraction(w, task):9.3f} | "
        f"{ch02.diagonal_fraction(w, task, band=0):10.3f} | {offset:+d}"
    )
    assert ch02.diagonal_fraction(w, task) >= 0.85, name

# %% slideshow={"slide_type": "subslide"}
panels = {name: align[name][0] for name in ("additive", "dot", "concat", "general, reverse")}
ch02.show_alignments(panels, title="alignment matrices of x★ (rows sum to 1)")
plt.show()

# %% [markdown] slideshow={"slide_type": "-"}
# Sharp diagonals for copying and an anti-diagonal for reversal: each output step reads the one
# source position it needs. The additive model's peaks sit one position early (offset −1). It
# scores with $s_{t-1}$, before it has read $y_{t-1}$, and thanks to the bidirectional encoder
# $h_{t-1}$'s backward half already holds $x_t$ — a peak one position off still reads the right
# token, which is why the pass criterion is a band of ±1.
#
# > **Glossary** · BLEU 双语评估替补 · reproduction 复现 · parameter count 参数量 · reversal 反转

# %% [markdown] slideshow={"slide_type": "-"}
# **Takeaway.** Without attention, accuracy collapses with length even with twice the units; with
# any of the attention scores it does not, and the alignment matrices show each step reading its
# own source position — Bahdanau et al.'s Fig. 2 and 3 at CPU scale.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 5. How many bits got through?
#
# Source 003 explains the bottleneck with information theory. Three tools, for discrete random
# variables, with logarithms to base 2 (the unit is the **bit**):
#
# - the **entropy** $H(X) = -\sum_x p(x) \log_2 p(x)$: how uncertain X is (chapter 01's entropy,
#   in bits instead of nats). A uniform choice among V values has $H = \log_2 V$; a source of n
#   independent uniform tokens has $H(X) = n \log_2 V$, about 4.32 bits a token for V = 20.
# - the **mutual information** $I(X;Y) = \sum_{x,y} p(x,y) \log_2 \frac{p(x,y)}{p(x)\,p(y)}$,
#   where $p(x) = \sum_y p(x,y)$ and $p(y) = \sum_x p(x,y)$: how much knowing Y tells about X.
#   It is 0 when X and Y are independent, H(X) when Y determines X, and equals
#   $H(X) + H(Y) - H(X,Y)$.
# - the **data-processing inequality**: if X → C → Y is a Markov chain (Y depends on X only
#   through C, as section 1 showed for the fixed-context model), then $I(X;Y) \le I(X;C)$ —
#   processing cannot create information about X.
#
# > **Glossary** · entropy 熵 · bit 比特 · mutual information 互信息 · joint distribution 联合分布 ·
# > marginal 边缘分布 · data-processing inequality 数据处理不等式 · Markov chain 马尔可夫链

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 3 · Mutual information from a joint table
# **Difficulty** ●○○ · **Time** 10 min · **Points** 2 · **Practises** the marginals of a table,
# 0 · log 0 = 0, information in bits
#
# Write `my_mutual_information(joint)`: joint (|X|, |Y|) float64, non-negative, summing to 1 →
# I(X; Y) in **bits**, as a Python float or a 0-d (or 1-element) float64 tensor. Cells where
# p(x, y) = 0 contribute 0 (0 · log 0 = 0): leave them out (`joint > 0`), or guard the log,
# `log2(p + ε)` with ε ≤ 1e-12, which the check allows for. Keep every step in float64 — the check
# compares to about 14 digits, so one float32 step shows. The check refuses the course's
# information functions (`attncourse.metrics` and this chapter's).


# %% nbgrader={"grade": false, "grade_id": "ch02_mutual_information", "locked": false, "schema_version": 3, "solution": true} slideshow={"slide_type": "skip"}
def my_mutual_information(joint):
    """joint (|X|, |Y|) -> I(X; Y) in bits."""
    ### BEGIN SOLUTION
    px = joint.sum(dim=1, keepdim=True)  # (|X|, 1)
    py = joint.sum(dim=0, keepdim=True)  # (1, |Y|)
    nz = joint > 0
    return float((joint[nz] * (joint / (px * py))[nz].log2()).sum())
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch02_mutual_information_test", "locked": true, "points": 2, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"} tags=["raises-exception"]
from attncourse.exercises.ch02 import check_mutual_information

check_mutual_information(my_mutual_information)
### BEGIN HIDDEN TESTS
import importlib

import attncourse.exercises.ch02 as ex
import attncourse.exercises.engine as engine

engine = importlib.reload(engine)  # fresh copies: a patched check does not count
ex = importlib.reload(ex)
ex.check_mutual_information(my_mutual_information, seed=33)
### END HIDDEN TESTS

# %% [markdown] slideshow={"slide_type": "-"}
# For a fixed-context model, source 003 chains the inequalities:
#
# $$I(X;Y) \le I(X;C) \le H(C) \le \log_2 |C| \qquad \text{(B1)}$$
#
# (source 003 numbers no equations; this chapter calls its two displays (B1) and (B2)). The
# middle step holds because $I(X;C) = H(C) - H(C \mid X)$ and $H(C \mid X) \ge 0$. A small world
# where every probability is exact shows each step: X is 4 tokens out of V = 4 (256 equally
# likely sources), an "encoder" keeps the first two tokens (16 values) or only the number of
# distinct tokens (4 values), and a "decoder" copies C, loses part of it, or — like attention —
# also reads $x_3$ from the source directly.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
V, n = 4, 4
X = torch.cartesian_prod(*[torch.arange(V)] * n)  # (256, 4) every source, equally likely
x_id = (X * V ** torch.arange(n - 1, -1, -1)).sum(1)  # (256,) an index per source
first_two = X[:, 0] * V + X[:, 1]  # C = (x1, x2): 16 values
distinct = torch.tensor([len(set(r)) - 1 for r in X.tolist()])  # 4 values, not equally likely
worlds = {  # name: (C, |C|, Y, |Y|, is X -> C -> Y a Markov chain?)
    "C = x1 x2, Y = C": (first_two, V**2, first_two, V**2, True),
    "C = x1 x2, Y = (x1 + x2) mod 4": (first_two, V**2, (X[:, 0] + X[:, 1]) % V, V, True),
    "C = #distinct, Y = C": (distinct, n, distinct, n, True),
    "C = x1 x2, Y = (C, x3)": (first_two, V**2, first_two * V + X[:, 2], V**3, False),
}
print(f"{'encoder C, decoder Y':>31} | I(X;Y) I(X;C)   H(C) log2|C| | I(X;Y) <= I(X;C)")
for name, (c, size, y, y_size, markov) in worlds.items():
    I_xy = ch02.mutual_information_bits(ch02.joint_table(x_id, y, V**n, y_size))
    I_xc = ch02.mutual_information_bits(ch02.joint_table(x_id, c, V**n, size))
    H_c = ch02.entropy_bits(torch.bincount(c, minlength=size).double() / len(c))
    holds = "equal" if abs(I_xy - I_xc) < 1e-9 else "strict" if I_xy < I_xc else "FAILS"
    print(f"{name:>31} | {I_xy:6.3f} {I_xc:6.3f} {H_c:6.3f} {math.log2(size):7.3f} | {holds}")
    assert (I_xy <= I_xc + 1e-12) == markov and H_c <= math.log2(size) + 1e-12

# %% [markdown] slideshow={"slide_type": "-"}
# The decoder that keeps all of C gets all of I(X; C), the lossy one less. The one that reads
# $x_3$ past C gets 6 bits through a 4-bit C: the chain X → C → Y is broken, and with it the
# bound. That is what attention does: (B1) bounds the fixed-context model only.
#
# > **⚠ The source says** $H(C) = \log|C|$. Entropy equals the log of the number of values only
# > for a **uniform** C; in general $H(C) \le \log_2|C|$. The "number of distinct tokens" takes 4
# > values but carries 1.41 bits, not 2 (third row).
#
# For the trained network (B1) says nothing useful: $\log_2|C|$ is 1,024 bits. What we *can*
# measure is a **lower** bound on the bits that got through, from the accuracy alone. Take
# position i, with uniform token $X_i$ and the decoder's guess $Y_i$, wrong with probability
# $p_i$. **Fano's inequality** bounds what remains unknown about $X_i$ after seeing $Y_i$:
#
# $$H(X_i \mid Y_i) \le h(p_i) + p_i \log_2 (V-1), \qquad h(p) = -p \log_2 p - (1-p)\log_2(1-p)$$
#
# ($h$ is the **binary entropy**: right or wrong; then, if wrong, which of the V − 1 others.) With
# $I(X_i;Y_i) = H(X_i) - H(X_i \mid Y_i)$ and $H(X_i) = \log_2 V$,
#
# $$I(X_i; Y_i) \ge \log_2 V - h(p_i) - p_i \log_2 (V-1).$$
#
# The right-hand side is never negative (it is the KL divergence between the error pattern —
# right with probability 1 − p_i, each wrong token with p_i/(V − 1) — and the uniform
# distribution) and is 0 exactly at chance accuracy 1/V. The source tokens are independent, so $I(X;Y) \ge \sum_i I(X_i;Y_i)$:
# the sum over positions counts bits that **must** have passed from x to y — for the
# fixed-context model, through C.
#
# > **Glossary** · Fano's inequality 法诺不等式 · binary entropy 二元熵 · KL divergence KL 散度 ·
# > lower bound 下界 · error rate 错误率

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 4 · Bits through the bottleneck
# **Difficulty** ●●○ · **Time** 10 min · **Points** 2 · **Practises** Fano's inequality, the
# binary entropy, summing a bound over positions
#
# Write `my_bottleneck_bits(position_accuracy, num_tokens)`: position_accuracy (n,) float64, the
# accuracy at each target position, and V = num_tokens → the lower bound in bits,
# $\sum_i [\log_2 V - h(p_i) - p_i \log_2(V-1)]$ with $p_i = 1 - \text{accuracy}_i$, as a Python
# float or a 0-d (or 1-element) float64 tensor. $h(0) = h(1) = 0$: leave out zero terms, or guard
# the log with ε ≤ 1e-12. No clipping is needed — each term is a KL divergence, ≥ 0 for every
# accuracy, below chance too. Keep every step in float64. The check refuses the course's
# information functions (`transmitted_bits`, `fano_information_bound`, …).


# %% nbgrader={"grade": false, "grade_id": "ch02_bottleneck_bits", "locked": false, "schema_version": 3, "solution": true} slideshow={"slide_type": "skip"}
def my_bottleneck_bits(position_accuracy, num_tokens):
    """position_accuracy (n,), V -> sum over positions of Fano's lower bound, in bits."""
    ### BEGIN SOLUTION
    total = 0.0
    for a in position_accuracy.tolist():
        p = 1.0 - a  # the error rate
        h = -sum(q * math.log2(q) for q in (p, 1.0 - p) if q > 0)  # binary entropy, 0 log 0 = 0
        total += math.log2(num_tokens) - h - p * math.log2(num_tokens - 1)
    return total
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch02_bottleneck_bits_test", "locked": true, "points": 2, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"} tags=["raises-exception"]
from attncourse.exercises.ch02 import check_bottleneck_bits

check_bottleneck_bits(my_bottleneck_bits)
### BEGIN HIDDEN TESTS
import importlib

import attncourse.exercises.ch02 as ex
import attncourse.exercises.engine as engine

engine = importlib.reload(engine)  # fresh copies: a patched check does not count
ex = importlib.reload(ex)
ex.check_bottleneck_bits(my_bottleneck_bits, seed=34)
### END HIDDEN TESTS

# %% [markdown] slideshow={"slide_type": "-"}
# Now the bits that provably reached the output (Fano's lower bound), from the per-position
# accuracies of section 4 (`transmitted_bits` is the course's version of your function). **Pass**:
# beyond n = 10 the fixed context's bound is no higher than at n = 5; the wide one's is above
# `none`'s at its best, and still falls; additive attention's is ≥ 90 % of H(X) at every length.

# %% slideshow={"slide_type": "-"}
# NBVAL_IGNORE_OUTPUT
bits = {name: [ch02.transmitted_bits(a, 20) for a in per_position[name]] for name in per_position}
source_bits = [ch02.source_bits(n, 20) for n in lengths]
print(f"{'bits, lower bound':>18} | " + " ".join(f"{'n=' + str(n):>6}" for n in lengths))
print(f"{'H(X) = n log2 20':>18} | " + " ".join(f"{b:6.1f}" for b in source_bits))
for name in ("none", *wide, "additive"):
    print(f"{name:>18} | " + " ".join(f"{b:6.1f}" for b in bits[name]))
assert max(bits["none"][2:]) <= bits["none"][0]
assert all(b >= 0.9 * h for b, h in zip(bits["additive"], source_bits))
for name in wide:
    assert max(bits[name]) >= max(bits["none"]) + 5 and bits[name][-1] < max(bits[name])

# %% slideshow={"slide_type": "subslide"}
fig, ax = plt.subplots(figsize=(7, 3.4))
ax.plot(lengths, source_bits, "k:", lw=1, label="H(X) = n log2 20: all the source holds")
for name in ("additive", "none, wide", "none"):
    colour, marker = ch02.STYLES[name]
    ax.plot(lengths, bits[name], marker, c=colour, label=name)
ax.set(xlabel="source length n", ylabel="bits (Fano lower bound)", title="bits that got through")
ax.legend(fontsize=8)
plt.show()

# %% [markdown] slideshow={"slide_type": "-"}
# With attention, the bound follows H(X) = n log₂ 20 up: the decoder reads each token where it
# is, and as I(X; Y) ≤ H(X), the bound is then the amount itself. Without attention it stops
# growing: at n = 5 it shows that nearly everything the source holds gets through; for longer
# sources it *falls* — the accuracy drops, and the bound is loose when errors spread thinly over
# many positions, so it no longer proves that more gets through. The wide context's bound is
# higher at its best, then falls the same way: a bigger bottleneck is still a bottleneck.
#
# **Takeaway.** A fixed context obeys I(X; Y) ≤ I(X; C) ≤ H(C); Fano's inequality turns accuracy
# into the bits that provably passed through it — for a fixed context a small number that stops
# growing, while attention's grows with the source.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 6. Watch a decoder read
#
# Pick a model and one of six sources of length 20 (example 0 is x★), then move the step t. The
# left panel fills the alignment matrix row by row (red + marks the true alignment), the right
# panel shows row t, the weights over the source (red ▼ marks the position step t must copy).
# Try:
# 1. `none`: there is nothing to show — the same C at every step. Find where its output goes wrong.
# 2. `additive`: the peak sits one position left of the ▼ and still writes the right token
#    (section 4).
# 3. `local-m, reverse`: the row stays inside its window around t and never reaches the ▼ for
#    the early and late steps.
# 4. `general, reverse`: the same score without a window finds the anti-diagonal.

# %% slideshow={"slide_type": "skip"}
traces = ch02.decoding_traces(
    {name: models[name] for name in ("none", "additive", "general", "local-m")}, "copy", sources[:6]
)
traces |= ch02.decoding_traces(
    {name: models[name] for name in ("general, reverse", "local-m, reverse")},
    "reverse",
    sources[:6],
)

# %% slideshow={"slide_type": "slide"}
# NBVAL_IGNORE_OUTPUT
ch02.decoding_widget(traces, model="additive", example=0, t=5)

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Takeaway.** At each step the decoder asks where to read, and the alignment row answers; with
# a fixed context there is no such question to ask.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Summary
#
# - Without attention, the decoder reads its source only through one fixed-size vector C
#   (X → C → Y); accuracy collapses as the source gets longer, and twice the units only delay it.
# - Attention gives the decoder a new context $c_t = \sum_j \alpha_{tj} h_j$ at every step: the
#   decoder state is the query, the encoder states are keys and values (cross-attention).
# - Bahdanau's additive score is a one-hidden-layer network, $v_a^\top \tanh(W_a s_{t-1} + U_a h_j)$;
#   Luong's dot and general scores are multiplicative and score the current state $s_t$; concat is
#   additive.
# - The rows of the weights form an alignment matrix: a diagonal for copying, an anti-diagonal for
#   reversal. Local-m attention assumes the diagonal and fails on reversal.
# - For a fixed context, $I(X;Y) \le I(X;C) \le H(C) \le \log_2|C|$ (data processing); attention
#   breaks the chain.
# - Fano's inequality turns per-position accuracy into a lower bound on the bits that got through:
#   a small, fixed amount through C, the whole source with attention.

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Check yourself**
#
# 1. Why does the fixed-context model's output not change when the encoder states $h_j$ are
#    replaced by noise, while the attention model's does?
# 2. Write the dot, general, concat and additive scores. Which have parameters, and which two are
#    the same form?
# 3. A local-m model with D = 3 is trained to reverse sequences of length 20. Which steps can it
#    get right?
# 4. A decoder is right at position i with probability 1/V. How many bits does Fano's bound give
#    for that position, and what if it is never right?
# 5. C holds 32 float32 numbers, 1,024 bits, and thirty tokens of V = 20 need about 130. Why does
#    the fixed-context model still fail to copy them?
#
# <details><summary>Answers</summary>
#
# 1. Its decoder reads only C (and its own outputs); the $h_j$ are never used, so X → C → Y is a
#    Markov chain. The attention model reads the $h_j$ at every step.
# 2. dot $s^\top h$ (no parameters, needs equal sizes), general $s^\top W_a h$, concat
#    $v_a^\top \tanh(W_a[s; h])$, additive $v_a^\top \tanh(W_a s + U_a h)$; concat and additive
#    are the same form, since $W_a [s; h] = W_1 s + W_2 h$.
# 3. Those whose source position n − 1 − t lies in the window |j − t| ≤ 3: t = 8 to 11 (counted
#    from 0), plus what the encoder states still carry about far tokens.
# 4. 0 bits at accuracy 1/V (the error pattern is uniform). Never right still gives
#    log₂ V − log₂(V − 1) > 0 bits: "never the true token" is information.
# 5. 1,024 bits bound what C could hold, not what a trained recurrent network packs into it and
#    reads back: its accuracy falls with n, and beyond n = 10 Fano's bound proves no more than at
#    n = 5 (asserted in section 5), at most 21.6 bits, far from the 130 a copy needs. The limit is
#    what the network learns to use, not capacity.
# </details>
#
# **Next — chapter 03, entropy and temperature**: how peaked an attention row is, measured by its
# entropy, and what temperature and the 1/√d_k scale do to it.

# %% [markdown] slideshow={"slide_type": "skip"}
# ## Appendix · The source, checked
#
# Source 003 is an interview note: a model answer on the alignment problem and the information
# bottleneck, with short listings. Source 000 §14.3.5 states cross-attention's information flow as
# a definition, a lemma, a theorem and an algorithm. This appendix checks each claim numerically.
# Marks: **✓ holds** · **⚠ holds only under a condition** (stated) · **✗ wrong as printed** (with
# a counterexample and the correct statement) · **—** nothing to check.
#
# ### A.1 The fixed context (003, 对齐问题的本质)
#
# **Claim check — "the decoder can only rely on the fixed vector" ✓** (for this architecture).
# Section 1 gave the trained models their true C and noise for $h_1, \dots, h_n$: the
# fixed-context model's output did not change, the attention model's did. Its output is a
# function of C alone — the Markov chain X → C → Y that (B1) needs.
#
# **Claim check — "长序列的早期信息在编码过程中逐渐衰减" (early information fades during
# encoding) ⚠.** That is the picture for a *unidirectional* encoder, whose C is the state after
# the last token. With a bidirectional encoder, C = [→h_n; ←h_1] ends its backward pass on $x_1$:
# below, the fixed-context model copies the **first** tokens best and its errors pile up later in
# the output (where it must unpack more of C, and its own errors feed back as inputs). Which
# part is lost depends on the architecture.

# %% slideshow={"slide_type": "skip"}
# NBVAL_IGNORE_OUTPUT
fig, ax = plt.subplots(figsize=(6, 3))
for n_, a in zip(lengths[1::2], per_position["none"][1::2]):
    ax.plot(range(n_), a.numpy(), "o-", ms=3, label=f"n = {n_}")
ax.set(xlabel="target position i (from 0)", ylabel="accuracy", ylim=(0, 1.05))
ax.set_title("fixed context, bidirectional encoder: where the errors are")
ax.legend(fontsize=7)
plt.show()
first, last = per_position["none"][-1][:3].mean(), per_position["none"][-1][-3:].mean()
print(f"n = 30: first three positions {float(first):.2f}, last three {float(last):.2f}")
assert float(first) > float(last) + 0.3

# %% [markdown] slideshow={"slide_type": "skip"}
# ### A.2 Soft alignment and the additive score (003, 动态上下文计算; 对齐问题的数学表述; 具体实现示例)
#
# **Claim check — steps 1–4 and the additive score ✓.** `AdditiveAttention` against the formula
# written out one source position at a time, and against source 003's `bahdanau_attention` run
# as printed (the listing leaves `W_q`, `W_k`, `v_a` undefined; here they are passed in, and it
# calls `F.softmax`, which is fine for a comparison).

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
from attncourse.attention import AdditiveAttention, LuongAttention

g = torch.Generator().manual_seed(2)
B, S, d_s, d_h, k = 3, 7, 5, 6, 4
s_prev = torch.randn(B, d_s, generator=g, dtype=torch.float64)  # s_{t-1}
Hs = torch.randn(B, S, d_h, generator=g, dtype=torch.float64)  # h_1..h_S
add = AdditiveAttention(d_s, d_h, k).double()
context, alpha = add(s_prev, Hs)  # (B, d_h), (B, S)

W, U, v = add.W_a.weight.detach(), add.U_a.weight.detach(), add.v_a.weight[0].detach()
e = torch.tensor(
    [[float(v @ torch.tanh(W @ s_prev[b] + U @ Hs[b, j])) for j in range(S)] for b in range(B)],
    dtype=torch.float64,
)  # step 1 by hand
a_hand = torch.exp(e) / torch.exp(e).sum(1, keepdim=True)  # step 2
c_hand = torch.einsum("bj,bjd->bd", a_hand, Hs)  # step 3
print(
    "weights, context == the formula by hand:",
    torch.allclose(alpha, a_hand),
    torch.allclose(context, c_hand),
)


def bahdanau_attention(decoder_hidden, encoder_outputs, W_q, W_k, v_a):  # source 003, as printed
    query = W_q(decoder_hidden).unsqueeze(1)
    keys = W_k(encoder_outputs)
    scores = torch.tanh(query + keys)
    scores = v_a(scores).squeeze(-1)
    attention_weights = torch.nn.functional.softmax(scores, dim=1)
    context = torch.bmm(attention_weights.unsqueeze(1), encoder_outputs).squeeze(1)
    return context, attention_weights


c_src, a_src = bahdanau_attention(s_prev, Hs, add.W_a, add.U_a, add.v_a)
same = torch.allclose(c_src, context) and torch.allclose(a_src, alpha)
print("source 003's bahdanau_attention == AdditiveAttention:", same)
assert torch.allclose(alpha, a_hand) and torch.allclose(context, c_hand) and same

# %% [markdown] slideshow={"slide_type": "skip"}
# ### A.3 Luong's scores (003, 从 Additive 到 Multiplicative)
#
# **Claim check — "Multiplicative attention (Luong et al.): e_ij = s_{i−1}ᵀ W_a h_j" ⚠.** The
# general score is Luong's, but on the **current** state $s_t$; $s_{t-1}$ is Bahdanau's order.
# Section 3's box computed the chapter's Luong model's weights from $s_t$ by hand and showed that
# $s_{t-1}$ gives other weights.
#
# **Claim check — "Luong's scores are multiplicative" ⚠: dot and general are; concat is the
# additive form.** Split a concat score's $W_a$ (k × (d_s + d_h)) into the columns that act on s
# and those that act on $h_j$, $W_a = [W_1 \mid W_2]$, and load them into `AdditiveAttention` as
# $W_a = W_1$, $U_a = W_2$: the two modules give the same scores and weights.
#
# **Claim check — `luong_attention` as printed ⚠.** It runs, with the plain dot score, only when
# the decoder state and the encoder outputs have the **same size**: a decoder of 24 units over
# 32-feature encoder states fails, which `general` ($W_a$: 32 → 24) fixes.

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
g = torch.Generator().manual_seed(4)
with torch.random.fork_rng(devices=[]):  # initialising the modules leaves the global stream alone
    concat = LuongAttention(5, 6, score="concat", hidden_dim=4).double()
    as_additive = AdditiveAttention(5, 6, 4).double()
with torch.no_grad():
    as_additive.W_a.weight.copy_(concat.W_a.weight[:, :5])  # W_1: the decoder-state columns
    as_additive.U_a.weight.copy_(concat.W_a.weight[:, 5:])  # W_2: the encoder-state columns
    as_additive.v_a.weight.copy_(concat.v_a.weight)
    s_t = torch.randn(3, 5, generator=g, dtype=torch.float64)  # (B, d_s)
    H_j = torch.randn(3, 7, 6, generator=g, dtype=torch.float64)  # (B, S, d_h)
    same_scores = torch.allclose(
        concat.score(s_t[:, None], H_j), as_additive.score(s_t[:, None], H_j)
    )
    same_weights = torch.allclose(concat(s_t, H_j)[1], as_additive(s_t, H_j)[1])
print(
    "concat v^T tanh(W_a [s; h]) == additive v^T tanh(W_1 s + W_2 h):", same_scores and same_weights
)
assert same_scores and same_weights


def luong_attention(decoder_hidden, encoder_outputs):  # source 003, as printed
    scores = torch.bmm(decoder_hidden.unsqueeze(1), encoder_outputs.transpose(1, 2))
    attention_weights = torch.nn.functional.softmax(scores, dim=2)
    context = torch.bmm(attention_weights, encoder_outputs).squeeze(1)
    return context, attention_weights.squeeze(1)


print(
    "luong_attention, 32-unit decoder over 32 features:",
    tuple(luong_attention(torch.randn(2, 32), torch.randn(2, 6, 32))[1].shape),
)
try:
    luong_attention(torch.randn(2, 24), torch.randn(2, 6, 32))
    print("luong_attention, 24-unit decoder over 32 features: ran")
except RuntimeError as err:
    print(
        f"luong_attention, 24-unit decoder over 32 features: {type(err).__name__} (shapes do not match)"
    )
general = LuongAttention(24, 32, score="general")
print(
    "the general score instead:", tuple(general(torch.randn(2, 24), torch.randn(2, 6, 32))[1].shape)
)

# %% [markdown] slideshow={"slide_type": "skip"}
# **Claim check — Luong's local-m, p_t = t ⚠.** Right when the alignment is monotonic: section 3
# showed local-m copying at n = 30 as well as global attention, and failing on reversal, where
# global attention learns the anti-diagonal. (The chapter's `local-m` scores every position and
# masks all but the window, which shows the assumption but not the saving; a windowed
# implementation scores 2D + 1 positions a step.)
#
# ### A.4 From one head to many, and self-attention (003, 从单头到多头; 后续发展)
#
# Source 003 ends with two sketches and three claims: multi-head attention gives "diversity of
# representation subspaces", "parallelism: higher computational efficiency" and "robustness:
# less risk from a single head". The cell runs both sketches as printed. `multi_head_attention`
# calls helpers the source leaves undefined; here `linear_projection_i(x)` returns head i's
# projections of `MultiHeadAttention` (its i-th call gives head i), `attention` is
# `scaled_dot_product_attention` and `concat` joins along the features. Then it counts the FLOPs
# of `MultiHeadAttention(64, h)` on 128 positions for h = 1, 2, 4, 8 (chapter 04's `count_flops`:
# every matrix product it executes, 2 FLOPs per multiply-add).

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
from attncourse.attention import MultiHeadAttention, scaled_dot_product_attention
from attncourse.chapters.ch04_gradient_paths import count_flops

with torch.random.fork_rng(devices=[]):
    mha = MultiHeadAttention(16, num_heads=4).double()
    heads = {h: MultiHeadAttention(64, num_heads=h) for h in (1, 2, 4, 8)}
x_seq = torch.randn(2, 9, 16, generator=torch.Generator().manual_seed(5), dtype=torch.float64)


class NextHead:  # `linear_projection_i(x)`: the i-th call returns head i's Q_i, K_i, V_i
    def __init__(self, mha):
        self.mha, self.i = mha, 0

    def __call__(self, x):
        cols = slice(self.i * self.mha.head_dim, (self.i + 1) * self.mha.head_dim)
        self.i = (self.i + 1) % self.mha.num_heads
        projections = (self.mha.q_proj, self.mha.k_proj, self.mha.v_proj)
        return tuple(proj(x)[..., cols] for proj in projections)


linear_projection_i = NextHead(mha)


def attention(Q, K, V):
    return scaled_dot_product_attention(Q, K, V)[0]


def concat(outputs):
    return torch.cat(outputs, dim=-1)


def multi_head_attention(x, num_heads):  # source 003, as printed
    head_outputs = []
    for i in range(num_heads):  # noqa: B007  (as printed: i only names the projection)
        Qi, Ki, Vi = linear_projection_i(x)
        head_outputs.append(attention(Qi, Ki, Vi))
    return concat(head_outputs)


def self_attention(x):  # source 003, as printed
    Q = K = V = x  # 查询、键、值都来自同一个序列
    return attention(Q, K, V)


with torch.no_grad():
    sketch = multi_head_attention(x_seq, 4)  # (2, 9, 16)
    full, _ = mha(x_seq)  # (2, 9, 16) = W_O [z_1; ...; z_4] + b_O
    print("sketch == MultiHeadAttention before W_O:", torch.allclose(mha.out_proj(sketch), full))
    print("sketch == MultiHeadAttention itself    :", torch.allclose(sketch, full))
    scores = x_seq @ x_seq.transpose(1, 2)  # (2, 9, 9): what self_attention scores with
    print(
        "self_attention(x) runs; its scores x_i . x_j are symmetric (nothing learned in it):",
        tuple(self_attention(x_seq).shape),
        torch.allclose(scores, scores.transpose(1, 2)),
    )
assert torch.allclose(mha.out_proj(sketch), full) and not torch.allclose(sketch, full)

x128 = torch.randn(1, 128, 64, generator=torch.Generator().manual_seed(6))
print(f"{'heads h':>8} | {'FLOPs (matrix products)':>23} | {'attention weights stored':>24}")
head_flops = {}
for h, layer in heads.items():
    with torch.no_grad():
        head_flops[h] = count_flops(layer, x128)
        _, w = layer(x128)  # w: (1, h, 128, 128)
    print(f"{h:8d} | {head_flops[h]:23,d} | {w.numel():24,d}")
assert len(set(head_flops.values())) == 1

# %% [markdown] slideshow={"slide_type": "skip"}
# **Claim check — the `multi_head_attention` sketch ⚠ (incomplete).** Its heads are right —
# `MultiHeadAttention` equals the sketch followed by $W^O$ — but it stops before the output
# projection. Vaswani et al. 2017 define MultiHead(Q, K, V) = Concat(head_1, …, head_h) $W^O$;
# without $W^O$ every output feature comes from one head, and the heads never mix.
#
# **Claim check — the `self_attention` sketch, Q = K = V = x ⚠.** It runs, but it has no
# $W_Q, W_K, W_V$: its scores $x_i \cdot x_j$ are symmetric and fixed by the embeddings, and nothing
# in the layer can learn what to attend to. Real self-attention projects first (chapter 01).
#
# **Claim check — "multi-head: parallelism, higher computational efficiency" ✗.** The matrix
# products cost exactly the same for 1, 2, 4 or 8 heads (h heads of size d/h: h · n² · d/h =
# n² · d), as Vaswani et al. §3.2.2 say ("similar to that of single-head attention with full
# dimensionality"); one head is one large matrix product, just as parallel; and h heads store h
# weight matrices of n × n instead of one. What multi-head buys is h different attention patterns
# for the same cost, not speed.
#
# **Claim check — "robustness" and "subspace diversity" ⚠ (not measured here).** Chapter 06
# removes heads one by one and measures how redundant or complementary they are (Michel et al.
# 2019).
#
# ### A.5 Attention or a larger hidden size? (003, 性能提升)
#
# Source 003: "计算效率：相比增加隐层维度，注意力机制提供更好的性价比" — compared with a larger
# hidden size, attention gives more for its cost. Section 4 measured the accuracy; here is the
# cost: each model's parameter count and the FLOPs of encoding one source and decoding it greedily
# (`decoding_flops`: 2 per multiply-add of every matrix product, from the sizes; the tests check
# it against `torch.utils.flop_counter`, so the numbers are exact).

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
cost_models = ["none", "none, wide", "additive", "dot", "general", "concat", "local-m"]
cost = {
    name: (
        ch02.parameter_count(models[name]),
        ch02.decoding_flops(models[name], 30),
        ch02.decoding_flops(models[name], 100),
    )
    for name in cost_models
}
print(
    f"{'model':>11} | {'parameters':>10} | {'FLOPs, n = 30':>13} | {'FLOPs, n = 100':>14} | FLOPs / wide's"
)
for name, (p_, f30, f100) in cost.items():
    ratio = f"{f30 / cost['none, wide'][1]:.2f}, {f100 / cost['none, wide'][2]:.2f}"
    print(f"{name:>11} | {p_:10,d} | {f30:13,d} | {f100:14,d} | {ratio}")
assert cost["none, wide"][0] > 3 * cost["none"][0]
assert all(cost["dot"][i] < cost["none, wide"][i] for i in range(3))
assert all(cost[name][2] > 2 * cost["none, wide"][2] for name in ("additive", "general", "concat"))
assert (
    cost["additive"][1] > cost["none, wide"][1] and cost["concat"][1] > 1.5 * cost["none, wide"][1]
)

# %% [markdown] slideshow={"slide_type": "skip"}
# **Claim check — "attention beats a larger hidden size on cost" ✓ / ⚠: ✓ read as accuracy for
# the cost, ⚠ read as "attention is cheaper".** Read as accuracy per cost, it holds at this
# scale: the wide fixed context (3.3 times the parameters of `none`, twice the training steps,
# two seeds) still falls towards chance by n = 30, where every attention model copies at ≥ 80 %
# (section 4) — no amount of its cost buys what attention does. Read as "attention costs less to
# run", it holds **only for `dot`**, the one score with fewer FLOPs than `none, wide` at both
# lengths: 0.74 M against 2.79 M at n = 30 and 3.36 M against 9.28 M at n = 100 (every attention
# model has fewer parameters than the wide one). The other scores cost about as much or more: `additive` 2.83 M FLOPs at n = 30 (a little above the
# wide model's 2.79 M) and 24.7 M at n = 100 (2.7 times 9.3 M); `general` and `local-m`
# 2.58 M / 23.8 M; `concat` 4.43 M / 44.3 M (1.6 and 4.8 times). The reason: attention's cost
# grows with n² — each of the n steps scores all n positions, and this implementation's
# `additive`, `general`, `concat` and `local-m` re-project every key at every step — a fixed context's with
# n. **Correct statement:** at equal cost attention is far more accurate, and only the
# parameter-free `dot` score is also cheaper than a wider fixed context; on long sources the
# other scores cost more FLOPs (a windowed local-m would not).
#
# ### A.6 Alignment matrices (003, 机器翻译中的对齐可视化; 注意力权重的语义)
#
# **Claim check — "soft alignment, an interpretable alignment matrix" ✓ / ⚠.** ✓ as section 4
# measured: the diagonal for copying and the anti-diagonal for reversal, ≥ 85 % of the peaks
# within ±1. ⚠ as an explanation: a row shows which encoder *states* a step reads, and a state
# of a bidirectional encoder mixes neighbouring tokens (the additive model's peaks sit one
# position early and still read the right token). The next check makes that sharp.
#
# **Claim check — "一对多/多对一的复杂对齐" (one-to-many / many-to-one alignments) ✓ / ⚠.**
# Copying and reversal are permutations. Two more tasks: **duplicate** writes every token twice
# ($x_1 x_1 x_2 x_2 \dots$: target steps 2j and 2j + 1 read source position j, one-to-many), and
# **merge** writes the sums of neighbouring pairs ($y_t = (x_{2t} + x_{2t+1}) \bmod 20$: each step
# needs two source tokens, many-to-one). Global `general` attention, two seeds each, trained like
# the others (duplicate on sources of 5–15 tokens; merge for 3,000 steps, since it must also learn
# addition modulo 20); measured on 20 sources of length 10. For merge the cell also asks whether
# the output really depends on both tokens (`pair_sensitivity`: replace only $x_{2t}$, or only
# $x_{2t+1}$, and see whether $y_t$ changes). **Pass** (both seeds): duplicate: accuracy ≥ 85 %,
# ≥ 85 % of the rows peak exactly at their source position ⌊t/2⌋. Merge: accuracy ≥ 80 %, ≥ 90 %
# of each row's weight on its pair — and a largest weight ≥ 85 % (one position, not split) while
# changing either token of the pair changes $y_t$ ≥ 90 % of the time.

# %% slideshow={"slide_type": "skip"}
# NBVAL_IGNORE_OUTPUT
src10, _ = ch02.make_batch("copy", 20, 10, 20, torch.Generator().manual_seed(10))
print(
    f"{'model':>26} | {'accuracy':>8} | {'peak on its source':>18} | {'weight on the pair':>18} | "
    f"{'largest weight':>14} | {'y_t changes with x_2t, x_2t+1':>29}"
)
align_many = {}
for task in ("duplicate", "merge"):
    for seed_name in ("", ", seed 1"):
        name = f"general, {task}{seed_name}"
        w = ch02.alignment_matrices(models[name], src10, steps=ch02.target_length(task, 10))
        align_many[name] = w  # (20, T, 10)
        accuracy = float(ch02.accuracy_by_length(models[name], task, [10])[0])
        mass, largest = float(ch02.alignment_mass(w, task).mean()), float(w.amax(-1).mean())
        if task == "duplicate":
            on_source = ch02.diagonal_fraction(w, task, band=0)
            print(
                f"{name:>26} | {accuracy:8.3f} | {on_source:18.3f} | {'':>18} | {largest:14.3f} |"
            )
            assert accuracy >= 0.85 and on_source >= 0.85, name
        else:
            sensitive = ch02.pair_sensitivity(models[name], src10)  # (2,)
            print(
                f"{name:>26} | {accuracy:8.3f} | {'':>18} | {mass:18.3f} | {largest:14.3f} | "
                f"{float(sensitive[0]):14.2f} {float(sensitive[1]):14.2f}"
            )
            assert accuracy >= 0.8 and mass >= 0.9 and largest >= 0.85, name
            assert float(sensitive.min()) >= 0.9, name

# %% slideshow={"slide_type": "skip"}
# NBVAL_IGNORE_OUTPUT
many = ("general, duplicate", "general, merge", "general, merge, seed 1")
ch02.show_alignments(
    {name.removeprefix("general, "): align_many[name][0] for name in many},
    title="duplicate: two rows per column; merge: one column per row, a different one on each seed",
)
plt.show()

# %% [markdown] slideshow={"slide_type": "skip"}
# One-to-many ✓: on duplicate each source column is the peak of two consecutive rows. Many-to-one
# ⚠: the merge models compute sums that depend on **both** tokens — replacing either one changes
# the output almost every time — yet each row puts nearly all its weight on **one** position of
# the pair, and not even the same one on the two seeds. The reason is the bidirectional encoder:
# $h_{2t}$ already holds $x_{2t+1}$ in its backward half, $h_{2t+1}$ holds $x_{2t}$ in its
# forward half, so reading one state is enough. (Seen while preparing the chapter, not rerun
# here: after 1,500 steps, half trained, the same models still split their rows over the pair —
# what the matrix shows also depends on how far training got.) **Correct statement**: an
# alignment row shows which encoder *states* a step reads; when those states mix neighbouring
# tokens, it does not show which source *tokens* the output depends on — attention weights are
# not explanations by themselves (Jain & Wallace 2019).
#
# ### A.7 Performance (003, 性能提升; 注意力机制的优势)
#
# **Claim check — "BLEU: +3–5 points on WMT" ⚠.** It depends on the setup: Bahdanau et al.'s
# Table 1 gives +7.6 (RNNsearch-30 over RNNencdec-30) and +8.9 (the 50-word models); Luong et al.
# report +5.0 for local attention over none (their abstract). Not checked here (no translation
# data).
#
# **Claim check — "long sequences lose information through a fixed C; attention fixes it" ✓.**
# Section 4: without attention the copy accuracy falls from nearly 100 % at n = 5 to under 40 %
# at n = 30, while every global attention model stays ≥ 80 %.
#
# **Claim check — "50词以上句子的翻译质量显著改善" (sentences over 50 words improve markedly)
# ✓ (from the paper).** Bahdanau et al.'s Fig. 2: RNNsearch-50 stays flat up to 60 words, where
# the models without attention have collapsed. This chapter's CPU analogue stops at n = 30.
#
# **Claim check — "信息保持：避免了中间压缩步骤的信息损失" (attention avoids the compression
# step) ⚠.** Each context $c_t$ has as many numbers as C (32 here): every step is a bottleneck
# too. What attention changes is that the context is recomputed for every step, so what can pass
# grows with the number of steps — section 5 measured the bits following H(X) up — instead of
# being fixed by one vector.
#
# ### A.8 The fixed-context bound (003, 信息瓶颈的信息论分析: (B1))
#
# **Claim check — (B1) I(X; Y) ≤ I(X; C) ≤ H(C) = log|C| ✓ / ✗.** Section 5's small world:
# I(X; Y) ≤ I(X; C) ✓ with the Markov chain X → C → Y — equal when the decoder keeps everything C
# has, strict when it loses some (2 bits of 4), and broken (6 bits through a 4-bit C) as soon as
# the decoder reads the source by another path, which is what attention does. I(X; C) ≤ H(C) ✓
# (equality for a deterministic C). "H(C) = log|C|" ✗: the "number of distinct tokens" C takes 4
# values but carries 1.41 bits. And for a network, whose C is 32 float32 numbers, log₂|C| =
# 1,024 bits is far above what can pass (I(X; Y) ≤ H(X), about 130 bits for section 5's longest
# source): the bound is true but loose. **Correct statement**: I(X; Y) ≤ I(X; C) ≤ H(C) ≤ log₂|C| when
# X → C → Y, with equality in the last step iff C is uniform.
#
# ### A.9 One context per step (003, 信息瓶颈的信息论分析: (B2))
#
# For attention, source 003 writes $I(X;Y) \le \sum_t I(X;C_t) \le \sum_t H(C_t)$ (B2), with
# one context $C_t$ per decoding step t = 1, …, m. The second step always holds for discrete
# contexts ($I(X;C_t) \le H(C_t)$). The first needs two conditions, and each has a
# counterexample with X two fair bits $(x_1, x_2)$:
#
# - (a) **A decoder that also starts from C.** Every model of this chapter starts its decoder from
#   $s_0 = \tanh(W_s C)$, so Y depends on the source through C as well as through the $C_t$. With
#   C = $x_1$ and contexts that read a position holding nothing about X (each $C_t$ constant), the
#   decoder can write $x_1$: I(X; Y) = 1 bit while $\sum_t I(X;C_t) = 0$, **for every m**.
#   (A tempting example, C = $x_1$ and every $C_t = x_2$, refutes the intermediate step
#   I(X; Y) ≤ I(X; C_1, …, C_m) = 1 bit at every m, but not the printed sum: m bits, ≥ I(X; Y) =
#   2 bits as soon as m ≥ 2. The cell shows both.)
# - (b) **Random contexts** (dropout, sampling), even without C: X one fair bit, N an independent
#   fair bit, $C_1 = N$, $C_2 = X \oplus N$. Each context alone says nothing about X; the decoder
#   that writes $C_1 \oplus C_2$ gets X exactly.


# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
def info(a, b, num_a, num_b):
    """I(A; B) in bits for paired outcomes, all equally likely."""
    return ch02.mutual_information_bits(ch02.joint_table(a, b, num_a, num_b))


x1, x2 = torch.tensor([0, 0, 1, 1]), torch.tensor([0, 1, 0, 1])  # X = (x1, x2): 4 equally likely
x_pair, nothing = 2 * x1 + x2, torch.zeros(4, dtype=torch.long)
print("(a) C = x1, every C_t constant, Y = (C, C_1..C_m) = x1:")
for m in (1, 2, 5):
    I_y, total = info(x_pair, x1, 4, 2), m * info(x_pair, nothing, 4, 1)
    print(f"    m = {m}: I(X;Y) = {I_y:.3f} > sum_t I(X;C_t) = {total:.3f}: {I_y > total}")
    assert I_y > total + 0.5
print("    C = x1, every C_t = x2, Y = (x1, x2):")
for m in (1, 2, 3):
    I_y, total = info(x_pair, x_pair, 4, 4), m * info(x_pair, x2, 4, 2)
    print(
        f"    m = {m}: I(X;Y) = {I_y:.3f}, sum_t I(X;C_t) = {total:.3f}: the sum bound holds: {I_y <= total + 1e-12}"
    )

x_bit, noise = torch.tensor([0, 0, 1, 1]), torch.tensor([0, 1, 0, 1])  # 4 equally likely (x, N)
c1, c2 = noise, x_bit ^ noise
I_1, I_2, I_y = info(x_bit, c1, 2, 2), info(x_bit, c2, 2, 2), info(x_bit, c1 ^ c2, 2, 2)
print(f"(b) I(X;C1) = {I_1:.3f}, I(X;C2) = {I_2:.3f}, I(X; Y = C1 xor C2) = {I_y:.3f} bit")
assert I_1 == 0 and I_2 == 0 and abs(I_y - 1) < 1e-12

# %% [markdown] slideshow={"slide_type": "skip"}
# **Claim check — (B2) ⚠: holds for a decoder that reads the source only through the contexts,
# when they are deterministic functions of X.** Then X → (C_1, …, C_m) → Y is a Markov chain and
# $I(X;Y) \le H(C_1, \dots, C_m) \le \sum_t H(C_t) = \sum_t I(X;C_t)$. **Correct statement** for
# decoders that start from C (all of this chapter's): with deterministic contexts,
# $I(X;Y) \le I(X;C) + \sum_t I(X;C_t) \le H(C) + \sum_t H(C_t)$ — in (a), 1 ≤ 1 + 0. With random
# contexts the sum of separate informations is no bound at all, (b). The lesson the source draws
# stands: with attention the capacity grows with the number of steps, instead of being fixed by
# one C (section 5 measured it).
#
# ### A.10 Cross-attention in source 000 (Def. 14.3.12, Lemma 14.3.16, Thm. 14.3.9)
#
# **Claim check — Def. 14.3.12 (Eq. 14.3.28) ✓.**
# $Z_\text{cross} = \text{Attention}(Q_\text{dec}, K_\text{enc}, V_\text{enc})$: the chapter's
# Luong models are exactly this, with $Q = s_t$ and $K = V = h$ (section 3 computed their weights
# by hand).
#
# **Claim check — Lemma 14.3.16 (Eq. 14.3.29) ✗ wrong as printed.** "I(Z_cross; Y) ≤ I(Z_enc; Y)":
# $Z_\text{cross}$ is a function of the encoder output **and of the decoder's query**. The
# data-processing inequality gives $I(Z_\text{cross}; Y) \le I(Z_\text{enc}, Q_\text{dec}; Y)$,
# not ≤ I(Z_enc; Y): when the query carries information about Y — and in a decoder it does, since
# it is computed from the previous target tokens — cross-attention passes on information the
# encoder never had. Counterexample: a constant encoder (keys $k_1 = (1, 0)$, $k_2 = (-1, 0)$,
# values 0 and 1: no information about anything) and a query ±5·(1, 0) that depends on a fair bit Y.

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
keys = torch.tensor([[[1.0, 0.0], [-1.0, 0.0]]])  # (1, 2, 2) the same for every Y: I(Z_enc; Y) = 0
values = torch.tensor([[[0.0], [1.0]]])  # (1, 2, 1)
z_cross = []
for y_bit in (0, 1):
    q = torch.tensor([[[5.0 if y_bit == 0 else -5.0, 0.0]]])  # (1, 1, 2) the query depends on Y
    out, _ = scaled_dot_product_attention(q, keys, values)
    z_cross.append(round(float(out), 4))
z_ids = torch.tensor([sorted(set(z_cross)).index(z) for z in z_cross])
I_cross = info(torch.tensor([0, 1]), z_ids, 2, 2)
print(f"Z_cross for Y = 0, 1: {z_cross} -> I(Z_cross; Y) = {I_cross:.3f} bit, I(Z_enc; Y) = 0")
assert abs(I_cross - 1.0) < 1e-12

# %% [markdown] slideshow={"slide_type": "skip"}
# **Correct statement**: $I(Z_\text{cross}; Y) \le I(Z_\text{enc}, Q_\text{dec}; Y)$; the printed
# form holds when the query carries no information about Y beyond the encoder's (Y → Z_enc →
# Z_cross a Markov chain, e.g. a query that is a function of Z_enc).
#
# Thm. 14.3.9 (Eq. 14.3.30) — minimise $I(Q_\text{dec}; Z_\text{enc})$ subject to
# $I(Z_\text{dec}; Y) \ge I_\text{min}$ — is an objective, a design principle, not a statement that
# can be true or false (—); nothing in this chapter's models optimises it.
#
# ### A.11 Finding the bottleneck layer (source 000, Application 14.3.3)
#
# The source's pseudocode estimates $I_l = I(Z_l; Y)$ for every encoder layer, computes a
# "compression rate" $I_l / I_0$ and calls its argmin the bottleneck layer. As printed, the line
# `compression_rate[l] = I_l / I_0` sits **after** the loop: it runs once, with l and $I_l$ left
# at the last layer. The cell runs it as printed (in Python, with $I_0$ the first stored value),
# then with the line moved into the loop, then with the ratio between consecutive layers, on a
# toy encoder whose information is exact: X = 4 tokens from V = 4 (section 5's world), Y = X
# (copying), five layers $Z_0 = X$, $Z_1 = X$ (an invertible layer), $Z_2 = (x_1, x_2)$ (keeps
# half), $Z_3 = (x_1, x_2 \bmod 2)$, $Z_4 = x_1$. The worst compression is layer 2: it keeps 4 of
# 8 bits.

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
layer_outputs = [x_id, x_id, first_two, X[:, 0] * 2 + X[:, 1] % 2, X[:, 0]]  # Z_l as ids


def estimate_mutual_information(z, y):  # exact here: every source is equally likely
    return info(z, y, int(z.max()) + 1, int(y.max()) + 1)


layers, Y_target = range(len(layer_outputs)), x_id
stored = []
for layer in layers:  # source 000, Application 14.3.3, as printed
    I_l = estimate_mutual_information(layer_outputs[layer], Y_target)
    stored.append(I_l)  # store I_l
I_0 = stored[0]
compression_rate = {}
compression_rate[layer] = I_l / I_0  # after the loop: layer and I_l are the last layer's
bottleneck_layer = min(compression_rate, key=compression_rate.get)
print("I(Z_l; Y) in bits:", [round(v, 3) for v in stored])
print(f"as printed: compression_rate = {compression_rate} -> bottleneck layer {bottleneck_layer}")
cumulative = {j: stored[j] / stored[0] for j in layers}  # the line moved into the loop
print(
    "I_l / I_0 inside the loop:",
    {j: round(r, 3) for j, r in cumulative.items()},
    "-> argmin",
    min(cumulative, key=cumulative.get),
)
step = {j: stored[j] / stored[j - 1] for j in layers if j > 0}  # what each layer keeps
print(
    "I_l / I_(l-1), per layer: ",
    {j: round(r, 3) for j, r in step.items()},
    "-> argmin",
    min(step, key=step.get),
)
assert all(a >= b - 1e-12 for a, b in zip(stored, stored[1:]))  # data processing: never grows
assert bottleneck_layer == 4 and min(cumulative, key=cumulative.get) == 4
assert min(step, key=step.get) == 2

# %% [markdown] slideshow={"slide_type": "skip"}
# **Claim check — Application 14.3.3 ✗ as printed.** It computes one ratio, after the loop, so the
# "bottleneck" is the last layer whatever the layers do. Moving the line into the loop does not
# fix it: the layers form a Markov chain X → Z_0 → Z_1 → … (each is computed from the one before),
# so $I(Z_l; Y)$ never grows with l (data processing, printed above) and $I_l / I_0$ is
# non-increasing — its argmin is always the deepest layer with a drop, here layer 4, not the layer
# that compresses most. **Correct version**: compare consecutive layers, $I_l / I_{l-1}$ (or the
# drop $I_{l-1} - I_l$), whose argmin is layer 2. (Estimating $I(Z_l; Y)$ for real, continuous
# layers is the hard part the pseudocode hides in `estimate_mutual_information`.)
#
# ### A.12 Is every bottleneck a loss? (003, 信息论洞察; 传统模型的信息损失)
#
# Two more statements of source 003. (i) "最优的信息传递不应经过压缩瓶颈" — optimal information
# transfer should not pass through a compression bottleneck. (ii) Its list of what a
# fixed-context model loses starts with "梯度消失" — vanishing gradients: the gradient of early
# information decays during backpropagation. The cell checks (i) on section 5's 256 sources with a
# task that needs little — Y = (x_1 + x_2 + x_3 + x_4) mod 4 — and two bottlenecks: C = the same
# sum (2 bits of the 8) and C = (x_1, x_2) (4 bits). For (ii) it takes a linear recurrence with
# Gaussian inputs, $h_T = \sum_m c \rho^m x_{T-m}$ (chapter 04), where the information
# $I(h_T; x_{T-k})$ is exact, and shrinks the input weight c a thousandfold.

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
y_sum = X.sum(1) % V  # (256,) a task that needs 2 bits of the 8
for name, (c, size) in {
    "C = the sum mod 4 (2 bits)": (y_sum, V),
    "C = (x1, x2) (4 bits)": (first_two, V**2),
}.items():
    print(f"{name:>27}: I(C; Y) = {info(c, y_sum, size, V):.3f} bits of I(X; Y) = 2.000")
assert abs(info(y_sum, y_sum, V, V) - 2) < 1e-12 and info(first_two, y_sum, V**2, V) < 1e-12

rho, T_len, k_far = 0.9, 60, 30
s_sum = sum(rho ** (2 * m) for m in range(T_len))  # Var(h_T) / c^2
info_k = {}
for c_in in (1.0, 1e-3):
    var_h, cov = c_in**2 * s_sum, c_in * rho**k_far  # Var(h_T), Cov(h_T, x_(T-k)), Var(x) = 1
    info_k[c_in] = 0.5 * math.log(var_h / (var_h - cov**2))  # I(h_T; x_(T-k)) in nats, Gaussian
    print(
        f"c = {c_in:g}: gradient dh_T/dx_(T-{k_far}) = {c_in * rho**k_far:.2e}, "
        f"I(h_T; x_(T-{k_far})) = {info_k[c_in]:.6f} nats"
    )
assert abs(info_k[1.0] - info_k[1e-3]) < 1e-12

# %% [markdown] slideshow={"slide_type": "skip"}
# **Claim check — (i) "optimal transfer avoids a compression bottleneck" ⚠.** A 2-bit bottleneck
# that keeps the sum loses nothing the task needs, I(C; Y) = I(X; Y) = 2 bits, while a larger one
# that keeps the wrong thing carries 0. What hurts is a bottleneck that drops what Y needs —
# copying n tokens needs all n log₂ V bits, which is why a fixed C fails at it. Compression is even
# the goal of source 000's own Thm. 14.3.9 (an information bottleneck objective, Tishby et al.
# 1999). **Correct statement**: transfer through C loses nothing iff C keeps a sufficient
# statistic of X for Y, I(C; Y) = I(X; Y).
#
# **Claim check — (ii) vanishing gradients as an information loss ⚠.** A thousand times smaller
# gradient, the same information: gradient size and information are different things (chapter 04
# relates them). Vanishing gradients are a **training** problem — the signal that would teach the
# encoder to keep early tokens is weak (Bengio et al. 1994) — so they can *cause* a trained model
# to lose information, but they are not a loss in the forward pass. And A.1's fixed-context model
# with a bidirectional encoder lost its *late* tokens, not its early ones.
#
# ### A.13 Claim checks at a glance
#
# | source claim | verdict | correct statement / condition |
# |---|---|---|
# | 003: the decoder of a fixed-context model relies only on C | ✓ | the Markov chain X → C → Y, checked by replacing h_1..h_n (section 1, A.1) |
# | 003: "early information fades during encoding" | ⚠ | for a unidirectional encoder; with a bidirectional one the errors sit later in the output (A.1) |
# | 003: attention steps 1–4 (scores, softmax, c_t = Σ α h, output) | ✓ | `AdditiveAttention` = the formula by hand (A.2) |
# | 003: additive score v_aᵀ tanh(W_a s_{i−1} + U_a h_j) | ✓ | Bahdanau et al. 2015 (section 2, A.2) |
# | 003: `bahdanau_attention` listing | ✓ | runs as printed once W_q, W_k, v_a are given; equals `AdditiveAttention` (A.2) |
# | 003: multiplicative score s_{i−1}ᵀ W_a h_j (Luong) | ⚠ | Luong et al. score the current state s_t; s_{t−1} is Bahdanau's order (section 3) |
# | "Luong's scores are multiplicative" | ⚠ | dot and general are; concat v_aᵀ tanh(W_a[s; h]) is the additive form (A.3) |
# | 003: `luong_attention` (dot) | ⚠ | needs decoder size = encoder output size; `general` lifts it (A.3) |
# | Luong local-m: p_t = t | ⚠ | right when the alignment is monotonic (copy), fails on reversal (section 3) |
# | 003: `multi_head_attention` sketch | ⚠ | the heads are right, W_O is missing: MultiHead = Concat(heads) W^O (A.4) |
# | 003: `self_attention` sketch, Q = K = V = x | ⚠ | runs, but without W_Q, W_K, W_V nothing in it can learn (A.4) |
# | 003: multi-head adds parallelism, computational efficiency | ✗ | the same FLOPs for 1–8 heads (Vaswani §3.2.2), h n × n weight matrices (A.4) |
# | 003: multi-head adds robustness, subspace diversity | ⚠ | not measured here: chapter 06 |
# | 003: attention beats a larger hidden size on cost | ✓ / ⚠ | ✓ as accuracy for the cost: twice the units (3.3× the parameters, 2× the steps, two seeds) still fail at n = 30; ⚠ as "cheaper": every attention model has fewer parameters than the wide one, but only `dot` has fewer FLOPs at both lengths (0.74 M vs 2.79 M at n = 30, 3.36 M vs 9.28 M at n = 100); `general` and `local-m` only at n = 30 (2.58 M); additive 2.83 M vs 2.79 M at n = 30 and 24.7 M vs 9.3 M at n = 100, concat 4.43 M; attention's FLOPs grow as n² (A.5) |
# | 003: soft alignment, interpretable alignment matrix | ✓ / ⚠ | diagonal for copy, anti-diagonal for reverse, peaks within ±1 (section 4); a row shows which encoder states are read, not which source tokens the output depends on (A.6) |
# | 003: one-to-many / many-to-one alignments | ✓ / ⚠ | one-to-many shows (duplicate: two rows per column); many-to-one does not: merge outputs depend on both tokens, but each row reads one state, which holds both (A.6) |
# | 003: BLEU +3–5 on WMT | ⚠ | Bahdanau Table 1: +7.6 (30) and +8.9 (50); Luong: +5.0; it depends on the setup (A.7) |
# | 003: long sequences lose information through a fixed C; attention fixes it | ✓ | Fig. 2 analogue: without attention from nearly 100 % to under 40 %, attention ≥ 80 % at n = 30 (section 4) |
# | 003: sentences over 50 words improve markedly | ✓ | Bahdanau Fig. 2 (RNNsearch-50 flat up to 60 words); here up to n = 30 (A.7) |
# | 003: attention avoids the compression step | ⚠ | each c_t is as small as C; capacity grows with the number of steps (section 5, A.7) |
# | 003 (B1): I(X;Y) ≤ I(X;C) ≤ H(C) = log\|C\| | ✓ / ✗ | needs X → C → Y (strict for a lossy decoder, broken by one that reads X directly); ≤ H(C) ≤ log\|C\|, equality iff C uniform; loose for float vectors (section 5, A.8) |
# | 003 (B2): I(X;Y) ≤ Σ_t I(X;C_t) ≤ Σ_t H(C_t) | ⚠ | holds for a decoder that reads only deterministic contexts; one that starts from C: I(X;Y) ≤ I(X;C) + Σ_t I(X;C_t) (fails without C for every m); random contexts: no bound (A.9) |
# | 000 Def. 14.3.12 (Eq. 14.3.28): cross-attention | ✓ | the Luong models here are exactly this, Q = s_t, K = V = h (A.10) |
# | 000 Lemma 14.3.16 (Eq. 14.3.29): I(Z_cross; Y) ≤ I(Z_enc; Y) | ✗ | ≤ I(Z_enc, Q_dec; Y); the query can carry Y (A.10) |
# | 000 Thm. 14.3.9 (Eq. 14.3.30) | — | an objective, not a checkable statement (A.10) |
# | 000 Application 14.3.3: bottleneck = argmin I_l / I_0 | ✗ | as printed one ratio, after the loop; I_l / I_0 never grows (data processing), so it always names the deepest layer; use I_l / I_{l−1} (A.11) |
# | 003: optimal transfer should not pass a compression bottleneck | ⚠ | lossless iff C keeps a sufficient statistic for Y, I(C;Y) = I(X;Y); 000's Thm. 14.3.9 asks for compression (A.12) |
# | 003: vanishing gradients as an information loss | ⚠ | a training problem: 1000× smaller gradient, the same information (A.12) |
#
# **Errata in one place.** (B1)'s "H(C) = log|C|" needs a uniform C; (B2) needs a decoder that
# reads only deterministic contexts (this chapter's decoders also start from C); Lemma 14.3.16
# omits the query; Application 14.3.3 computes its ratio once, after the loop, and against the
# wrong reference; Luong's score uses $s_t$, not $s_{i-1}$; the multi-head sketch lacks $W^O$; the
# self-attention sketch lacks projections; multi-head attention is not faster than one head.
