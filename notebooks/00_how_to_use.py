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
# # Chapter 00 · How to use this course
# *如何使用本课程*
#
# A course on attention mechanisms in eleven notebooks (00–10), built on five source chapters
# written in Chinese, and on `attncourse`, a small PyTorch package that implements every
# mechanism of the course from scratch.
#
# **After this notebook you can**
# - check that your environment is the one the course was tested with;
# - find your way around a chapter: its main path, its exercises, and the appendix you may skip;
# - solve an exercise, read its feedback, and know how it will be graded;
# - read the shape notation (B, H, T, S, d_k, d_v) used in every chapter;
# - find the source section behind each chapter, and the Chinese term behind each English one.
#
# **Prerequisites**: Python, and running a cell in Jupyter (Shift+Enter).
#
# **Time**: main path about 20 min (by `scripts/reading_time.py`, the rule of section 2).

# %% slideshow={"slide_type": "skip"}
import os
import sys

import ipywidgets as widgets
import numpy as np
import torch

from attncourse.attention import scaled_dot_product_attention
from attncourse.chapters.ch00_how_to_use import check_environment, temperature_bars

torch.manual_seed(0)
np.random.seed(0)
torch.set_num_threads(2)

# %% [markdown] slideshow={"slide_type": "slide"}
# Every chapter starts with a cell like the one above: it imports what the chapter needs, fixes
# the random seeds (so a rerun gives the same numbers; results of training may differ from the
# stored ones in the last digits on another CPU) and sets the CPU threads (2; chapter 10 uses 1,
# and the budgets below are measured that way). Run the notebook **top to bottom**; after editing an early
# cell, use *Kernel → Restart Kernel and Run All Cells* if later results look odd.
#
# ## 1. Environment check
#
# The course was tested with one exact set of versions (`constraints.txt`, which comes with the
# package). The cell compares what is installed with it, and checks that a font for the Chinese
# titles and glossary lines is there; for anything to fix it says what to install. A newer version
# is not fatal, but printed numbers may then differ slightly from the stored ones.

# %% slideshow={"slide_type": "-"}
# NBVAL_IGNORE_OUTPUT
check_environment()
print(f"torch threads: {torch.get_num_threads()} (the course uses 2),  CPU cores: {os.cpu_count()}")
assert sys.version_info >= (3, 11), "the course needs Python 3.11 or newer"

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 2. How to read a chapter
#
# Every chapter (01–10) is a path to understanding one idea about attention, in two parts.
#
# **The main path** — everything before the heading *Appendix* — takes about an hour to an hour
# and a half, exercises included, and has the same shape in every chapter:
#
# 1. **An opening**: the question the chapter answers, as a puzzle or a picture; what you can do
#    afterwards; the prerequisites; and the time, for the main path and for the appendix.
# 2. **4–7 sections**, each named after the concept it teaches. A section starts from a question
#    or a failure, gives the idea and its equation, lets **you build it** in an exercise right
#    there, then uses what you built: a plot, a widget or an experiment. It ends with a one-line
#    **takeaway**. Each chapter reproduces a published result at CPU scale, with an `assert` that
#    the effect is really there, and has at least one widget.
# 3. **A summary**: the takeaways, and a few *check yourself* questions whose answers are hidden
#    until you click them.
#
# **The appendix — "The source, checked"** — tests every claim that the chapter's source section
# makes, with a verdict: **✓ holds** · **⚠ holds only under a condition** (stated) · **✗ wrong as
# printed** (with a counterexample and the correct statement) · **—** not a checkable statement
# (advice, an analogy, an objective), with the reason · **→ ch. NN** checked in chapter NN. The
# sources are good guides but not
# always right. You can skip the appendix on a first reading: the main path never needs it. The few
# source errors that teach something about attention itself stand in the main path, in a short box
# that starts with **⚠ The source says**.
#
# **Times are computed, not guessed.** A chapter's stated times come from one rule that
# `scripts/reading_time.py` applies to every chapter: prose at 150 words a minute, code at 20 lines
# a minute, plus each exercise's stated minutes; a test keeps the statements honest. If you are new
# to the mathematics, expect more.
#
# Equations carry the source's numbers — "Eq. (14.3.4)" is equation 14.3.4 of source 000 — and
# each section has a one-line **glossary** (English · 中文).
#
# Cells whose output the mathematics fixes start with the comment `# NBVAL_CHECK_OUTPUT`, and the
# automatic tests compare a fresh run with the stored output. Cells that show widgets, timings or
# training results start with `# NBVAL_IGNORE_OUTPUT`. You can ignore both comments.
#
# ## 3. Notation
#
# | symbol | meaning | 中文 |
# |---|---|---|
# | B | batch size: independent sequences processed together | 批大小 |
# | H | number of attention heads | 头数 |
# | T | number of queries (target / query length) | 查询长度 |
# | S | number of keys and values (source / key length); S = T in self-attention | 键长度 |
# | n | the source's name for the number of positions (S) | 位置数 |
# | d_model | width of the token representations | 模型维度 |
# | d_k | dimension of queries and keys | 键维度 |
# | d_v | dimension of values (and of each head's output) | 值维度 |
# | α, `weights` | attention weights, shape (B, H, T, S); each row sums to 1 (0 where all its keys are masked; `GatedAttention`'s rows sum to its gate) | 注意力权重 |
# | mask | bool, broadcastable to (B, H, T, S); **True = may attend** | 掩码 |
#
# Tensors are batch-first; shapes are written in comments as `# (B, H, T, S)`. Logarithms are
# natural (entropy in **nats**) unless a result says **bits** (log₂). Every attention in the package
# returns `(output, weights)` (those built not to form the weights — chunked, linear, local, block
# and strided attention — return `(output, None)`):

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
B, H, T, S, d_k, d_v = 2, 4, 5, 7, 8, 16
q = torch.randn(B, H, T, d_k)  # (B, H, T, d_k) queries
k = torch.randn(B, H, S, d_k)  # (B, H, S, d_k) keys
v = torch.randn(B, H, S, d_v)  # (B, H, S, d_v) values
output, weights = scaled_dot_product_attention(q, k, v)
print("output :", tuple(output.shape), "= (B, H, T, d_v)")
print("weights:", tuple(weights.shape), "= (B, H, T, S)")
print("every row of weights sums to 1:", bool(torch.allclose(weights.sum(-1), torch.ones(B, H, T))))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 4. Widgets
#
# A widget is a slider (or checkbox) wired to a plain function; moving it recomputes and redraws
# at once (every widget of the course answers in under 100 ms on a laptop CPU). Try it: the
# slider sets a *temperature* that divides four fixed scores before the softmax. Behind the slider
# is the plain function `attncourse.chapters.ch00_how_to_use.temperature_bars`, which the tests and benchmarks call too.
#
# If you see text like `VBox(children=...)` instead of a slider, the notebook front end cannot
# show widgets: use JupyterLab ≥ 4 or Notebook ≥ 7 with `ipywidgets` 8 installed (the course's
# install does this) and reload the page. Widgets also need a running kernel: a notebook opened
# read-only (or on a web viewer) shows the stored picture at best.

# %% slideshow={"slide_type": "slide"}
# NBVAL_IGNORE_OUTPUT
scores = torch.tensor([2.0, 1.0, 0.5, -1.0])
readout = widgets.HTML()
temperature = widgets.FloatLogSlider(
    value=1.0,
    base=10,
    min=-1,
    max=1,
    step=0.05,
    description="temperature",
    style={"description_width": "initial"},  # the label in full
)


def show(_change=None):
    readout.value = temperature_bars(
        scores, temperature.value
    )  # softmax(scores / temperature) as bars


temperature.observe(show, names="value")
show()
widgets.VBox([temperature, readout])

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 5. Exercises, feedback and grading
#
# Each chapter has 3–6 exercises, placed in the sections whose idea they build. An exercise is a
# header and two cells. The header says what to expect:
#
# > **Difficulty** ●●○ · **Time** 10 min · **Points** 3 · **Practises** shift invariance
#
# — difficulty from ●○○ (a few lines, once the idea is clear) to ●●● (edge cases to think
# through), the minutes a learner typically needs, the points it is worth, and the skill it
# practises. The text under the header states every rule the check enforces: shapes, dtype, what
# may not be called. One rule holds for every exercise and is stated only here: an answer must not
# change its inputs in place (`x -= m`, `x.exp_()`, `x[x == 0] = 1` on an input); it computes new
# tensors, since the caller still needs its inputs. Then:
#
# - a **solution cell** with a function to complete. In your copy its body reads
#   `# YOUR CODE HERE` and `raise NotImplementedError()`; replace those lines with your code;
# - a **check cell** under it (locked: do not edit it). Run it: it calls a check from
#   `attncourse.exercises` (chapter NN's checks are in `attncourse/exercises/chNN.py`) that tries
#   your function on random and edge inputs, compares it with the course's reference, and either
#   prints `✓ ... all N checks passed` or stops with a message that says what is wrong and on
#   which input — for example "overflow for scores of 1000: subtract the row max before exp",
#   "weights sum over the wrong axis", "missing 1/√d_k".
#
# Each exercise is judged **on its own**: where an exercise builds on an earlier one, its check
# hands it the course's version of the earlier piece, so a mistake in one costs only that one —
# unless your answer calls your own earlier answer, whose mistakes then count here too. Cells
# after an exercise use the course's own version of what you built, so the chapter runs even
# before you have done the exercises.
#
# Some exercises are **from scratch**: you re-implement something PyTorch already has (softmax,
# attention, LayerNorm, ...). Their checks refuse, before anything else, an answer that uses that
# built-in, however it is reached, or anything of its family: for a softmax also `log_softmax`,
# the cross-entropy losses, `scaled_dot_product_attention` and `torch.distributions`; for an
# entropy also `torch.special.entr`, the cross-entropy and KL losses and the distributions'
# entropies; for a gradient by hand also `.backward()`, `torch.autograd` and `torch.func`. Each
# exercise's text names what it refuses.
#
# **What any answer may use.** The public names of torch, numpy, math and the standard modules
# cmath, itertools, functools, collections, typing, dataclasses, numbers, fractions, statistics,
# heapq, bisect, warnings, time and sys (of time and sys only a few harmless names), Python's plain
# built-ins, and your own functions, your answers to earlier exercises included. Not the course's
# own package `attncourse`, not names that start with `_`, and nothing that hides what is called:
# `getattr`, `eval`, `exec`, `open`, `torch.ops`, `torch.jit`, `torch.load`, `numpy.load`, frame
# attributes, a module passed around as a value, `import *`. Nor a name the chapter's own cells
# define (a constant such as chapter 07's `DT`, its data, its helper functions): the grader runs only the
# answer cells, after the notebook's import lines, so the check refuses it too — define what you
# need in the answer's cell. A check that refuses an answer names the line and the rule, in the
# same words the grader uses.
#
# **Grading.** The check cell you see holds the *visible* tests. When your notebook is graded, the
# grader runs your answer cells (only those, in a sandbox) and calls your functions on *hidden*
# tests: the same kinds of input, with other numbers, so a function that passes the visible check
# for the right reason earns the points. Define everything your answer needs inside its answer cell
# (or in an earlier answer cell): cells you add yourself are not run when you are graded. Every
# check cell is worth the points written above it; a function that is wrong, raises or runs too
# long earns 0 for that exercise, and the other exercises are still graded. `attncourse progress`
# (in a terminal; it needs the `classroom` extra, `pip install -e ".[classroom]"` in a clone) shows
# which of your exercises pass, checked exactly as the grader does. The notebooks follow the format of [nbgrader](https://nbgrader.readthedocs.io), so a course can also
# grade them with nbgrader itself.
#
# **Try it now** with a 1-point demo.

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 0 · Uniform attention
# **Difficulty** ●○○ · **Time** 2 min · **Points** 1 · **Practises** reading a check's feedback
#
# Uniform attention — every weight 1/S — returns the plain mean of the values. Complete
# `uniform_attention(values)`: values (S, d) → (d,), keeping the input's dtype and leaving
# `values` unchanged (no in-place operations on it), and run the check cell below it. (Its check,
# `attncourse/exercises/ch00.py`, is about twenty lines: the inputs to try, the reference, and the two
# mistakes it recognises by name — a sum instead of a mean, and the wrong axis.)


# %% nbgrader={"grade": false, "grade_id": "ch00_demo", "locked": false, "schema_version": 3, "solution": true} slideshow={"slide_type": "skip"}
def uniform_attention(values):
    """values (S, d) -> (d,): the output of attention with all S weights equal to 1/S."""
    ### BEGIN SOLUTION
    return values.sum(dim=0) / values.shape[0]  # (d,)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch00_demo_test", "locked": true, "points": 1, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"} tags=["raises-exception"]
from attncourse.exercises.ch00 import check_uniform_attention

check_uniform_attention(uniform_attention)
### BEGIN HIDDEN TESTS
import importlib

import attncourse.exercises.ch00 as ex
import attncourse.exercises.engine as engine

engine = importlib.reload(engine)  # fresh copies: a patched check does not count
ex = importlib.reload(ex)
ex.check_uniform_attention(uniform_attention, seed=7)
### END HIDDEN TESTS

# %% [markdown] slideshow={"slide_type": "-"}
# And this is what feedback looks like for a wrong answer — here a function that sums instead of
# averaging (the cell catches the `AssertionError` to print it):


# %% slideshow={"slide_type": "-"}
def summing_attention(values):
    return values.sum(dim=0)


try:
    check_uniform_attention(summing_attention)
except AssertionError as error:
    print("AssertionError:", error)

# %% [markdown] slideshow={"slide_type": "-"}
# **Commands** (in a terminal, in the course folder, with its environment active; `start` comes
# with every install, the others with an extra: `pip install -e ".[classroom]"` in a clone for
# `release`, `grade` and `progress`, `".[lecture]"` for `present`, `".[site]"` for `site`):
#
# | who | command | what it does |
# |---|---|---|
# | learner | `attncourse start [--workspace DIR]` | makes your own workspace (default `./workspace`) — student copies of the notebooks, without solutions — if it is not there yet, and opens JupyterLab on it; new chapters are added, your changed notebooks are left alone |
# | learner | `attncourse start --lang zh_CN` | the same workspace in Chinese: text, exercises and the checks' feedback (中文版) |
# | learner / instructor | `attncourse release [NOTEBOOK …] --out DIR` | writes student copies (no solution text, no hidden tests, no outputs); never overwrites a notebook you have changed (it says so and skips it; `--force` overrides) |
# | instructor | `attncourse grade SUBMISSION … [--csv FILE] [--feedback DIR]` | grades submissions headless, each in a sandbox of its own: it calls each learner's functions on the visible and the hidden inputs and judges the answers outside the learner's notebook; prints points per exercise and the total |
# | learner | `attncourse progress [--workspace DIR]` | which exercises of which chapters of your workspace pass, by the same checks |
# | lecturer | `attncourse present NN` | chapter NN as slides in the browser, with live widgets (Voilà's reveal.js slides; no network needed) |
# | reader | `attncourse site --out DIR` | a static HTML site of every chapter, from the stored outputs; open `DIR/index.html`, offline |
#
# `attncourse --help` lists every command (`course` and `merge`, for classes, too), and
# `attncourse COMMAND --help` its options.
#
# **Presenting inside JupyterLab.** Every chapter carries its slide layout (one slide per
# section, the widget on a slide of its own, the exercises skipped). With the `lecture` extra
# installed and the chapter open, click the Deck button in the notebook's toolbar, or run *Start
# Deck* from the command palette
# (Ctrl+Shift+C): the notebook becomes slides with its code and widgets live. Arrow keys and Space
# move, Shift+Enter runs a cell and moves on, *Stop Deck* goes back to the notebook.
#
# The notebooks in the repository's `notebooks/` folder are the **instructor versions**: solutions
# and stored outputs included. Work in your own workspace, not in them. Nothing in the course ever
# overwrites your work.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 6. Chapter map
#
# The chapters cite the five source documents (in Chinese) by number and by their own section and
# equation numbers, e.g. "source 000, Eq. (14.3.4)".
#
# | # | chapter | source sections | headline experiment (CPU, seconds) |
# |---|---|---|---|
# | 00 | How to use this course | — | environment check, widgets, exercises, notation |
# | 01 | Attention as information selection | 000 §14.3.1 | weighted average, softmax as P(i\|q), Q/K/V roles, scaled dot product; which information-theory claims hold |
# | 02 | The seq2seq bottleneck and alignment | 003; 000 §14.3.5 | fixed-context encoder–decoder vs Bahdanau and Luong attention: accuracy vs source length, alignment heatmaps |
# | 03 | Entropy and temperature | 000 §14.3.3; 001 (5.4.6) | entropy range, temperature, √d_k scaling, softmax saturation and its gradient, entropy bounds |
# | 04 | RNN vs attention: gradient paths | 001 §5.4.1–5.4.3; 000 §14.3.2, §14.3.6 | ‖∂h_T/∂x_t‖ vs distance for RNNs and self-attention; path lengths; long-range recall |
# | 05 | Bidirectional, causal and cross attention: information flow | 002; 001 (5.4.7–5.4.8) | masks; information-flow statistics; two-layer relay; local → global across layers |
# | 06 | Multi-head attention and information | 000 §14.3.2, §14.3.4, §14.3.7; 003 | head redundancy and complementarity, head pruning (Alg. 14.3.1), diversity regulariser |
# | 07 | Positional encoding | 000 §14.3.6 | sinusoidal encoding, relative position by rotation, RoPE, distance decay |
# | 08 | Residual, highway and normalization | 004 §5.3.1–5.3.4; 000 §14.3.5 | gradient through x + F(x), highway gates, LayerNorm vs BatchNorm vs RMSNorm, depth |
# | 09 | Pre-LN vs Post-LN stability | 004 §5.3.5 | gradient norms at initialisation; depth × learning rate × warm-up; DeepNorm |
# | 10 | Efficient, sparse and gated attention | 000 §14.3.7–14.3.8; 002 §7–8 | sparse masks, Gumbel-softmax sparsity, linear attention, gated attention, chunked online softmax |
#
# Source files: **000** §14.3 Attention through information theory · **001** §5.4 How attention
# models long-range dependencies · **002** Bidirectional attention information flow · **003**
# Alignment and the information bottleneck · **004** §5.3 Stability: identity mappings and
# reparameterisation.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 7. Glossary · 术语表
#
# | English | 中文 | English | 中文 |
# |---|---|---|---|
# | attention | 注意力 | softmax | 归一化指数函数 (Softmax) |
# | query / key / value | 查询 / 键 / 值 | temperature | 温度 |
# | attention weight | 注意力权重 | scaled dot product | 缩放点积 |
# | score, similarity | 分数, 相似度 | mask (causal, padding) | 掩码 (因果, 填充) |
# | weighted average | 加权平均 | self- / cross-attention | 自注意力 / 交叉注意力 |
# | entropy, conditional entropy | 熵, 条件熵 | multi-head attention, head | 多头注意力, 头 |
# | mutual information | 互信息 | positional encoding | 位置编码 |
# | information bottleneck | 信息瓶颈 | relative position | 相对位置 |
# | redundancy, synergy | 冗余, 协同 | residual connection | 残差连接 |
# | routing | 路由 | highway connection, gate | 高速公路连接, 门控 |
# | alignment | 对齐 | layer / batch normalization | 层归一化 / 批归一化 |
# | encoder, decoder | 编码器, 解码器 | vanishing / exploding gradient | 梯度消失 / 梯度爆炸 |
# | sequence-to-sequence (seq2seq) | 序列到序列 | long-range dependency | 长程依赖 |
# | path length | 路径长度 | sparse / linear attention | 稀疏注意力 / 线性注意力 |
# | lemma, theorem, corollary | 引理, 定理, 推论 | definition, proof | 定义, 证明 |
#
# **Next — chapter 01, attention as information selection**: which word does *it* stand for?
# You build attention piece by piece — the weighted average, softmax, entropy, queries and keys,
# the √d_k scale, masks — and assemble your own self-attention layer.
