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
# # Chapter 09 · Pre-LN vs Post-LN stability
# *为什么 Attention 与 LN 可以深层堆叠* — source 004, §5.3.5
#
# Take two Transformers with six layers, the same weights, the same data — copy six random
# symbols after a separator — and the same optimiser, Adam at learning rate 10⁻². They differ in
# one line of code: where the LayerNorm sits. In the first, the LayerNorm comes **after** each
# residual sum; in the second, it comes **before** each sublayer. After 150 steps the second
# copies every symbol. The first has learnt nothing: its loss went down to ln 16 ≈ 2.77, the loss
# of guessing uniformly among the 16 symbols, and stayed there. **Why does the place of the norm
# decide whether a deep Transformer trains at all?** This chapter answers by looking at the
# gradients the two designs give each layer before the first step, then trains both across
# depths, learning rates and warm-up schedules, and ends with DeepNorm, which keeps the first
# design and makes it train.
#
# **After this chapter you can**
# - write the Post-LN and Pre-LN blocks and say what lies on the gradient's identity path in each;
# - measure per-layer gradient norms at initialisation and read Xiong et al.'s (2020) result from
#   them: Post-LN's top layers get large gradients at any depth, Pre-LN's scale down with depth;
# - explain learning-rate warm-up through the size of Adam's first steps, and measure that size
#   with the update/data ratio;
# - say how much larger a learning rate Pre-LN tolerates (it depends), and set up DeepNorm.
#
# **Prerequisites**: chapter 01 (a self-attention layer); chapter 08 (residual connections,
# LayerNorm and its Jacobian); PyTorch autograd (`backward`, `.grad`); what Adam and a
# learning-rate schedule are.
#
# **Time**: main path about 70 min, appendix about 19 min (by `scripts/reading_time.py`: prose
# at 150 words a minute, code at 20 lines a minute, and each exercise's stated time).
#
# **How to read it.** Sections 1–5 are the main path: each asks a question, gives the idea, lets
# you build it in an exercise, then uses it. The **appendix** checks every claim the source makes
# about this topic — some hold, some hold only under a condition, some are wrong — and can be
# skipped on a first reading.

# %% slideshow={"slide_type": "skip"}
import functools
import math

import matplotlib.pyplot as plt
import numpy as np
import torch

from attncourse.blocks import TransformerBlock
from attncourse.chapters import ch09_pre_ln_vs_post_ln as ch09
from attncourse.norms import LayerNorm
from attncourse.threads import side_by_side

torch.manual_seed(0)
np.random.seed(0)
torch.set_num_threads(2)
torch.set_flush_denormal(True)
torch.set_printoptions(precision=4, sci_mode=False)
plt.rcParams.update({"figure.dpi": 80, "figure.figsize": (7, 3)})
COLORS = ch09.StabilityPlot.COLORS  # post: red, pre: blue, deepnorm: green

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 1. Two places for the LayerNorm
#
# A Transformer block wraps each of its two sublayers F — self-attention, then the feed-forward
# network (FFN) — in a residual connection, and normalises with a LayerNorm (chapter 08). The
# original Transformer (Vaswani et al. 2017) normalises **after** the residual sum,
#
# $$\text{Post-LN:}\quad y = \mathrm{LN}(x + \mathcal{F}(x)) \qquad (5.3.10)$$
#
# and the Pre-LN Transformer normalises only the **input of the sublayer**,
#
# $$\text{Pre-LN:}\quad y = x + \mathcal{F}(\mathrm{LN}(x)) \qquad (5.3.11)$$
#
# Pre-LN is older than its best-known analysis: Tensor2Tensor's Transformer (Vaswani et al.
# 2018), deep translation models (Wang et al. 2019) and GPT-2 (Radford et al. 2019) used it, and
# Xiong et al. (2020) explained why it trains without warm-up. The difference is what lies on the
# **identity path** x → y. In Pre-LN nothing does: the stream of vectors that runs through the
# blocks, the **residual stream**, is a running sum of sublayer outputs, and a model adds one
# final LayerNorm before its output layer. In Post-LN every block's output is a LayerNorm's
# output, so everything that travels along the identity path — forward the signal, backward the
# gradient — passes through one LayerNorm per sublayer.
#
# The course's `TransformerBlock(d, heads, norm="post" | "pre")` builds both. The cell writes
# Eq. (5.3.10) out for a Post-LN block and checks it against the block.
#
# > **Glossary** · layer normalization 层归一化 · residual connection 残差连接 · sublayer 子层 ·
# > Post-LN 后置归一化 · Pre-LN 前置归一化 · residual stream 残差流 · identity path 恒等路径

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
torch.manual_seed(0)
post = TransformerBlock(16, 4, norm="post").double()
pre = TransformerBlock(16, 4, norm="pre").double()
pre.load_state_dict(post.state_dict())  # the same weights, only the placement differs
x = 3.0 * torch.randn(2, 5, 16, dtype=torch.float64) + 1.0  # (B, T, d), not normalised
with torch.no_grad():
    y_post, _ = post(x)  # (B, T, d)
    y_pre, _ = pre(x)  # (B, T, d)
    h = post.norm1(x + post.attn(x)[0])  # Eq. (5.3.10), the attention sublayer
    assert torch.allclose(y_post, post.norm2(h + post.ffn(h)))  # ... then the FFN sublayer
print(f"input          : mean {float(x.mean()):.2f}, std {float(x.std()):.2f}")
print(
    f"Post-LN output : |mean| < 1e-12: {abs(float(y_post.mean())) < 1e-12}, "
    f"std {float(y_post.std()):.2f}   (a LayerNorm's output)"
)

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 1 · The Pre-LN block
# **Difficulty** ●○○ · **Time** 8 min · **Points** 3 · **Practises** Eq. (5.3.11) applied to
# both sublayers, the identity path kept clean
#
# Write `my_pre_ln_block(x, attn, ffn, norm1, norm2)`. It takes x (B, T, d) and four callables,
# each mapping (..., T, d) to (..., T, d), and returns the output of a Pre-LN block: the attention
# sublayer with `norm1`, then the FFN sublayer with `norm2`, each as Eq. (5.3.11). Use the given `norm1` and
# `norm2`: the check refuses LayerNorm built-ins (`F.layer_norm`, `nn.LayerNorm`, the course's
# `LayerNorm`). Do not change `x` in place (`x += …` would change the caller's tensor; write
# `x = x + …`).


# %% nbgrader={"grade": false, "grade_id": "ch09_pre_ln_block", "locked": false, "schema_version": 3, "solution": true} slideshow={"slide_type": "skip"}
def my_pre_ln_block(x, attn, ffn, norm1, norm2):
    """x (B, T, d) -> (B, T, d): the two sublayers of a Pre-LN block, Eq. (5.3.11)."""
    ### BEGIN SOLUTION
    x = x + attn(norm1(x))  # (B, T, d)
    return x + ffn(norm2(x))  # (B, T, d)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch09_pre_ln_block_test", "locked": true, "points": 3, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"} tags=["raises-exception"]
from attncourse.exercises.ch09 import check_pre_ln_block

check_pre_ln_block(my_pre_ln_block)
### BEGIN HIDDEN TESTS
import importlib

import attncourse.exercises.ch09 as ex
import attncourse.exercises.engine as engine

engine = importlib.reload(engine)  # fresh copies: a patched check does not count
ex = importlib.reload(ex)
ex.check_pre_ln_block(my_pre_ln_block, seed=21)
### END HIDDEN TESTS

# %% [markdown] slideshow={"slide_type": "-"}
# Your block with the Pre-LN block's own sublayers, against the course's
# `TransformerBlock(norm="pre")` on the same input (while exercise 1 is unfinished, the cell says
# so and shows the course's block alone):

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
try:
    with torch.no_grad():
        mine = my_pre_ln_block(x, lambda v: pre.attn(v)[0], pre.ffn, pre.norm1, pre.norm2)
    print("your block = TransformerBlock(norm='pre'):", bool(torch.allclose(mine, y_pre)))
except NotImplementedError:
    print("finish exercise 1, then run this cell again to compare your block")
print(
    f"Pre-LN output  : mean {float(y_pre.mean()):.2f}, std {float(y_pre.std()):.2f}   (x + two updates)"
)

# %% [markdown] slideshow={"slide_type": "-"}
# The Pre-LN output keeps the input's scale — it *is* the input plus two updates — while the
# Post-LN output is normalised whatever came in. Stack N Pre-LN blocks and the stream is
# $x_N = x_0 + \sum_k \mathcal{F}_k(\mathrm{LN}_k(x_k))$, the sum of every update (source 001
# calls this the residual highway; chapter 04 checks it).
#
# **Takeaway.** Post-LN puts a LayerNorm on the identity path; Pre-LN keeps the path an exact
# identity and normalises only what each sublayer reads.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 2. Where the norm sits decides the gradient at initialisation
#
# Before the first training step, which layers receive large gradients? Follow the gradient down
# the stack. Number the sublayers k; in Pre-LN each computes $x_{k+1} = x_k + \mathcal{F}_k(\mathrm{LN}_k(x_k))$, so
#
# $$\frac{\partial \mathcal{L}}{\partial x_k} = \frac{\partial \mathcal{L}}{\partial x_{k+1}}\left(I + \frac{\partial \mathcal{F}_k}{\partial x_k}\right) \qquad (5.3.12)$$
#
# with $\mathcal{F}_k$'s Jacobian taken through its LayerNorm. In Post-LN the same step is
# $\frac{\partial \mathcal{L}}{\partial x_{k+1}} J_{\mathrm{LN}}\,(I + J_{\mathcal{F}_k})$: the
# LayerNorm's Jacobian sits on the identity path. Chapter 08 derives it; for one token with
# mean μ, variance σ² and $\hat{x} = (x - \mu)/\sqrt{\sigma^2 + \varepsilon}$,
#
# $$J_{\mathrm{LN}} = \frac{1}{\sqrt{\sigma^2 + \varepsilon}}\,\mathrm{diag}(\gamma)\Big(I - \tfrac{1}{d}\mathbf{1}\mathbf{1}^\top - \tfrac{1}{d}\hat{x}\hat{x}^\top\Big).$$
#
# At ε = 0 the bracket is a projection — it removes the mean direction and the direction of
# $\hat{x}$ — followed by a scale of 1/σ. With ε > 0 it is a projection only approximately (it
# keeps a fraction ε/(σ² + ε) of the $\hat{x}$ component; appendix A.3), which is negligible when
# σ² ≫ ε. Either way a LayerNorm on the gradient's path divides the gradient by about the
# standard deviation of what it normalised.
#
# > **⚠ The source says** that through Eq. (5.3.12) the residual path "ensures" that the gradient
# > propagates effectively even in very deep networks (确保……梯度也能够有效地向前传播). Two things
# > stand in the way. (5.3.12) is the Jacobian of $y = x + \mathcal{F}(x)$,
# > the Pre-LN form; in Post-LN the factor $J_{\mathrm{LN}}$ multiplies it at every sublayer.
# > And even in Pre-LN, $I + J$ can shrink a gradient whenever J cancels part of it — a sublayer
# > that learns to subtract some of its input. The cell shows both: a cancelling J, and the
# > factor a LayerNorm applies to a gradient when its input has standard deviation 1, 2 or 4.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
g = torch.randn(16, dtype=torch.float64)
J = -0.9 * torch.outer(g, g) / (g @ g)  # a sublayer that cancels 90 % of its input along g
kept = ((torch.eye(16, dtype=torch.float64) + J).T @ g).norm() / g.norm()
print(f"a cancelling sublayer: |(I + J)^T g| / |g| = {float(kept):.2f}")
ln = LayerNorm(64).double()
shrink = {}
for sigma in (1.0, 2.0, 4.0):  # the std of x + F(x) that a Post-LN LayerNorm receives
    s_in = (sigma * torch.randn(8, 64, dtype=torch.float64)).requires_grad_(True)
    up = torch.randn(8, 64, dtype=torch.float64)  # a random upstream gradient dL/dy
    (down,) = torch.autograd.grad(ln(s_in), s_in, up)
    shrink[sigma] = float(down.norm() / up.norm())
    print(f"LayerNorm, input std {sigma:.0f}: |dL/dx| / |dL/dy| = {shrink[sigma]:.2f}")
assert shrink[4.0] < 0.3 < shrink[2.0] < 0.6 < shrink[1.0] < 1.2  # about 1 / sigma

# %% [markdown] slideshow={"slide_type": "-"}
# What does that do to a whole model? Xiong et al. (2020, Theorem 1) bound the gradient of the
# last FFN matrix $W^{2,L}$ at initialisation: $\|\partial\mathcal{L}/\partial W^{2,L}\|_F = O(d\sqrt{\ln d})$
# for Post-LN — no factor of the depth L — and $O(d\sqrt{\ln d / L})$ for Pre-LN. Their Fig. 3
# shows the layers one by one: Post-LN's gradients **grow towards the top layers**, Pre-LN's do
# not. Measure it yourself: the per-layer gradient norm is the quantity to plot.
#
# > **Glossary** · Jacobian 雅可比矩阵 · gradient norm 梯度范数 · Frobenius norm 弗罗贝尼乌斯范数 ·
# > initialisation 初始化 · projection 投影

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 2 · Per-layer gradient norms
# **Difficulty** ●●○ · **Time** 12 min · **Points** 3 · **Practises** one backward pass,
# Frobenius norms, reading a model's parameters by block
#
# Write `my_layer_gradient_norms(model, loss_fn)`. `model` is the chapter's causal language model
# (`ch09.CausalLM`): its N blocks are `model.blocks`, and block l's second FFN matrix $W^{2,l}$ is
# `model.blocks[l].ffn[2].weight`; `loss_fn(model)` computes the scalar loss. Return a tensor
# (N,) whose entry l is $\|\partial\mathcal{L}/\partial W^{2,l}\|_F$, bottom block first. Rules the
# check enforces: the model may hold gradients from an earlier backward pass in `.grad`, and they
# must not count (call `model.zero_grad()` first, or use `torch.autograd.grad`); return the
# weights' dtype (`torch.tensor([... .item() ...])` makes float32: `torch.stack` the 0-dim norms
# instead). The check refuses the chapter's `layer_gradient_norms` and `init_gradients`.


# %% nbgrader={"grade": false, "grade_id": "ch09_layer_gradient_norms", "locked": false, "schema_version": 3, "solution": true} slideshow={"slide_type": "skip"}
def my_layer_gradient_norms(model, loss_fn):
    """-> (N,) tensor: |dL/dW^{2,l}|_F for each block l, bottom first, L = loss_fn(model)."""
    ### BEGIN SOLUTION
    model.zero_grad(set_to_none=True)  # gradients of an earlier pass must not count
    loss_fn(model).backward()
    return torch.stack([block.ffn[2].weight.grad.norm() for block in model.blocks])  # (N,)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch09_layer_gradient_norms_test", "locked": true, "points": 3, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"} tags=["raises-exception"]
from attncourse.exercises.ch09 import check_layer_gradient_norms

check_layer_gradient_norms(my_layer_gradient_norms)
### BEGIN HIDDEN TESTS
import importlib

import attncourse.exercises.ch09 as ex
import attncourse.exercises.engine as engine

engine = importlib.reload(engine)  # fresh copies: a patched check does not count
ex = importlib.reload(ex)
ex.check_layer_gradient_norms(my_layer_gradient_norms, seed=25)
### END HIDDEN TESTS

# %% [markdown] slideshow={"slide_type": "-"}
# The course's `ch09.init_gradients(norm, N)` computes these norms for a freshly initialised
# model — d = 64, 4 heads, FFN 4d, Xavier-normal weights, in float64 — on random tokens, and
# averages them over eight initialisations: Theorem 1 is about the expected gradient, and the
# profile of a single initialisation is noisy. It also keeps the root mean square (RMS) of the
# residual stream after every block. Left: every layer of a 12-layer model. Right: the last
# layer's gradient as the depth L grows. The cell asserts the contrast Xiong et al. predict.

# %% slideshow={"slide_type": "subslide"}
# NBVAL_CHECK_OUTPUT
depths = [2, 4, 8, 16]
shapes = [(norm, n) for norm in ("post", "pre") for n in (12, *depths)]  # (placement, layers)
measure = functools.partial(ch09.init_gradients, dtype=torch.float64)
profiles = dict(zip(shapes, side_by_side(measure, shapes, progress=False)))
grads = {norm: profiles[norm, 12] for norm in ("post", "pre")}
last = {norm: [float(profiles[norm, n]["w2"][-1]) for n in depths] for norm in ("post", "pre")}
fig, ax = plt.subplots(1, 2, figsize=(9, 3))
for norm, gr in grads.items():
    ax[0].plot(range(1, 13), gr["w2"], "o-", ms=3, color=COLORS[norm], label=f"{norm}-LN")
    ax[1].plot(depths, last[norm], "o-", color=COLORS[norm], label=f"{norm}-LN")
ax[1].plot(depths, [last["pre"][0] * math.sqrt(2 / n) for n in depths], "k--", lw=1, label="∝ 1/√L")
ax[0].set(
    xlabel="layer l", ylabel=r"$\|\partial L/\partial W^{2,l}\|_F$", yscale="log", title="L = 12"
)
ax[1].set(
    xlabel="depth L", ylabel="last layer's", xscale="log", yscale="log", title="the last layer"
)
ax[1].set_xticks(depths, [str(n) for n in depths])
ax[1].set_xticks([], minor=True)
for a in ax:
    a.legend(fontsize=8)
plt.tight_layout()
plt.show()
for norm, gr in grads.items():
    rms = " ".join(f"{gr['rms'][i]:.2f}" for i in (1, 4, 8, 12))
    print(
        f"{norm}-LN, L = 12: last/first layer = {gr['w2'][-1] / gr['w2'][0]:.2f};  stream RMS after blocks 1, 4, 8, 12: {rms}"
    )
    print(f"{norm}-LN, last layer at L = 2, 4, 8, 16: {' '.join(f'{v:.2f}' for v in last[norm])}")
assert grads["post"]["w2"][-1] / grads["post"]["w2"][0] >= 1.1  # grows towards the top
assert grads["pre"]["w2"][-1] / grads["pre"]["w2"][0] <= 0.5  # falls towards the top
assert grads["post"]["w2"][-1] >= 2 * grads["pre"]["w2"][-1]  # the top layer: Post-LN's larger
assert last["pre"][-1] / last["pre"][0] <= 0.5 and last["post"][-1] / last["post"][0] >= 1.0

# %% [markdown] slideshow={"slide_type": "-"}
# Post-LN's gradients grow towards the top layers — modestly, by about a fifth over 12 layers on
# average — and its last layer's does not shrink as the model gets deeper. Pre-LN's last layer's
# falls close to the $1/\sqrt{L}$ line, and the RMS numbers say why: the Pre-LN stream is a sum of
# updates, so its RMS grows with depth (roughly like √l), and the final LayerNorm divides the
# gradient by it. Post-LN's stream stays at RMS 1. So at the start of training, at 12 layers,
# Post-LN's top layer gets about three times Pre-LN's gradient; at 2 layers the two are
# comparable, and the gap widens with depth.
#
# Two details differ from the paper (appendix A.4 takes them apart): Pre-LN's per-layer profile
# here *falls* towards the top instead of staying flat, and Post-LN's last-layer gradient grows
# with L instead of staying put. Theorem 1 is an upper bound proved under idealisations
# (attention replaced by uniform averaging, large d); the contrast it is used for holds.
#
# **Takeaway.** At initialisation Post-LN's top layers get the largest gradients, and more so the
# deeper the model; Pre-LN's shrink like $1/\sqrt{L}$ because its stream grows.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 3. Warm-up: small first steps for Post-LN
#
# Large gradients on the top layers are dangerous only if the first updates are large. Xiong et
# al. trained a Post-LN Transformer on IWSLT14 German–English translation with Adam: **without**
# warm-up it reached 8.45 BLEU, against about 34 with 4,000 warm-up steps; Pre-LN trained without
# warm-up. **Warm-up** multiplies the learning rate by a factor that rises from near 0 to 1 over
# the first $T_{\text{warm}}$ steps; the linear one is
#
# $$\eta_t = \eta_{\text{peak}} \cdot \min\!\left(1, \frac{t + 1}{T_{\text{warm}}}\right), \qquad t = 0, 1, 2, \dots$$
#
# To reproduce the effect on a CPU we need depth and a large learning rate, not a large model: a
# copy task (the sequence is six random symbols from 16, a separator, then the same six; the
# model reads all but the last token and is scored on predicting the six copies), a causal
# language model with d = 32, 4 heads and 6 layers, Adam with β = (0.9, 0.98), batch 32, 150
# steps. A model that has learnt nothing scores loss ln 16 ≈ 2.77 and accuracy 1/16.
#
# > **Glossary** · warm-up 学习率预热 · learning-rate schedule 学习率调度 · copy task 复制任务 ·
# > stall 停滞

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
inputs, targets = ch09.copy_batch(2, 6, 16, torch.Generator().manual_seed(3))  # (B, 12), (B, 12)
print("input  :", inputs[0].tolist(), "(16 is the separator)")
print("scored :", targets[0].tolist(), "(-100: not scored)")

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 3 · A linear warm-up schedule
# **Difficulty** ●○○ · **Time** 6 min · **Points** 2 · **Practises** the warm-up factor
# min(1, (t + 1)/T_warm), indexing steps from 0
#
# Write `my_warmup_schedule(steps, peak_lr, warmup_steps)`, returning a **float64** tensor
# (steps,) with entry t = peak_lr · min(1, (t + 1) / warmup_steps) for t = 0 … steps − 1. Step 0 already trains,
# with peak_lr / warmup_steps; `warmup_steps = 0` means no warm-up, the constant peak_lr. Compute
# in float64 from the start (`torch.arange(steps, dtype=torch.float64)`): the check compares at
# float64's precision, and a float32 computation made float64 at the end is off in the eighth
# digit. The check refuses the chapter's `warmup_schedule`.


# %% nbgrader={"grade": false, "grade_id": "ch09_warmup", "locked": false, "schema_version": 3, "solution": true} slideshow={"slide_type": "skip"}
def my_warmup_schedule(steps, peak_lr, warmup_steps):
    """-> (steps,) float64 tensor: the learning rate of each step, t = 0 ... steps - 1."""
    ### BEGIN SOLUTION
    t = torch.arange(steps, dtype=torch.float64)  # (steps,)
    if warmup_steps == 0:
        return torch.full((steps,), float(peak_lr), dtype=torch.float64)
    return peak_lr * torch.clamp((t + 1) / warmup_steps, max=1.0)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch09_warmup_test", "locked": true, "points": 2, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"} tags=["raises-exception"]
from attncourse.exercises.ch09 import check_warmup_schedule

check_warmup_schedule(my_warmup_schedule)
### BEGIN HIDDEN TESTS
import importlib

import attncourse.exercises.ch09 as ex
import attncourse.exercises.engine as engine

engine = importlib.reload(engine)  # fresh copies: a patched check does not count
ex = importlib.reload(ex)
ex.check_warmup_schedule(my_warmup_schedule, seed=22)
### END HIDDEN TESTS

# %% [markdown] slideshow={"slide_type": "-"}
# Now the experiment (`ch09.train_copy`, which sets the learning rate of each step from
# `ch09.warmup_schedule`): at 6 layers and peak learning rate 10⁻², Post-LN and Pre-LN without
# warm-up, and Post-LN with 50 warm-up steps. Each run also records the size of its first 50
# updates, which section 4 uses. Each run takes a few seconds.

# %% slideshow={"slide_type": "-"}
# NBVAL_IGNORE_OUTPUT
runs = {}  # (norm, depth, peak lr, warm-up steps) -> [Run]
FIRST = [("post", 6, 1e-2, 0), ("pre", 6, 1e-2, 0), ("post", 6, 1e-2, 50)]
train = functools.partial(ch09.train_copy, seed=0, ratio_steps=50)
# the runs are independent: side_by_side trains them at once, one per CPU core
for key, run in zip(FIRST, side_by_side(train, FIRST, desc="training runs")):
    runs[key] = [run]

# %% slideshow={"slide_type": "subslide"}
# NBVAL_IGNORE_OUTPUT
fig, ax = plt.subplots(figsize=(7, 3))
for (norm, _, _, warm), (run,) in runs.items():
    label = f"{norm}-LN, warm-up {warm}: final accuracy {run.final_accuracy:.2f}"
    ax.plot(ch09.smooth(run.loss), color=COLORS[norm], ls="--" if warm else "-", label=label)
ax.axhline(math.log(16), c="k", lw=1, ls=":")
ax.text(100, math.log(16) + 0.1, "ln 16: uniform guess", fontsize=8)
ax.set(xlabel="step", ylabel="training loss", title="6 layers, peak lr 1e-2")
ax.legend(fontsize=8)
plt.show()
post_run, pre_run, warm_run = (runs[key][0] for key in list(runs))
print(
    f"Post-LN without warm-up: final loss {post_run.final_loss:.2f} (ln 16 = {math.log(16):.2f}), any NaN: {bool(np.isnan(post_run.loss).any())}"
)
assert post_run.final_accuracy <= 0.3 and abs(post_run.final_loss - math.log(16)) < 0.15
assert np.isfinite(post_run.loss).all()  # a stall, not a divergence
assert pre_run.final_accuracy >= 0.95
assert warm_run.final_accuracy >= 0.8 and warm_run.final_accuracy - post_run.final_accuracy >= 0.5

# %% [markdown] slideshow={"slide_type": "-"}
# Xiong et al.'s effect, at CPU scale: without warm-up Post-LN does not learn; Pre-LN learns the
# copy; 50 warm-up steps rescue Post-LN (about 0.9–1.0 after 150 steps; the cell asserts ≥ 0.8;
# the exact numbers of a training run move with the CPU's rounding). Post-LN's failure is a
# **stall**, not an explosion: the loss drops to ln 16 — the model predicts the uniform
# distribution — and stays there, with finite values throughout. Other seeds give the same
# ordering; how far 50 warm-up steps get Post-LN within 150 steps varies with the seed (seed 2:
# 0.65).
#
# **Takeaway.** Post-LN at a large learning rate needs warm-up; Pre-LN does not. Without it,
# Post-LN stalls at the uniform guess.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 4. How large a step? Depth × learning rate × warm-up
#
# Why do the *first* steps matter so much? Adam divides each gradient by a running estimate of
# its own size, so its first update moves every weight that has a gradient by about the learning
# rate, **whatever the gradient's size** (after bias correction, $\hat m/\sqrt{\hat v} = \pm 1$ at
# step 1). A weight matrix with standard deviation 0.1 then changes by about 10 % in one step at
# lr 10⁻². The **update/data ratio** measures this for any optimiser,
#
# $$\frac{\mathrm{std}(W_{t+1} - W_t)}{\mathrm{std}(W_t)},$$
#
# usually on a log₁₀ scale. Karpathy plots it in *makemore* part 3, for an MLP trained with plain
# SGD, and reads about 10⁻³ there as a rough sign of a healthy learning rate; that is a heuristic
# for that setting, not a rule for Adam.
#
# > **Glossary** · update/data ratio 更新/数据比 · Adam optimiser Adam 优化器 · peak learning rate
# > 峰值学习率 · bias correction 偏差校正

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 4 · The update/data ratio
# **Difficulty** ●○○ · **Time** 5 min · **Points** 2 · **Practises** the size of one update
# relative to the weights, standard deviations
#
# Write `my_update_data_ratio(before, after)`. It takes a weight tensor before and after one
# optimiser step and returns a 0-dim tensor std(after − before) / std(before), in the inputs'
# dtype. Return the plain ratio
# (not its log₁₀). Either standard deviation convention is fine (dividing by n or by n − 1), as
# long as both use the same one. The check refuses the chapter's `update_data_ratio`.


# %% nbgrader={"grade": false, "grade_id": "ch09_update_ratio", "locked": false, "schema_version": 3, "solution": true} slideshow={"slide_type": "skip"}
def my_update_data_ratio(before, after):
    """-> 0-dim tensor: std(after - before) / std(before)."""
    ### BEGIN SOLUTION
    return (after - before).std() / before.std()
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch09_update_ratio_test", "locked": true, "points": 2, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"} tags=["raises-exception"]
from attncourse.exercises.ch09 import check_update_data_ratio

check_update_data_ratio(my_update_data_ratio)
### BEGIN HIDDEN TESTS
import importlib

import attncourse.exercises.ch09 as ex
import attncourse.exercises.engine as engine

engine = importlib.reload(engine)  # fresh copies: a patched check does not count
ex = importlib.reload(ex)
ex.check_update_data_ratio(my_update_data_ratio, seed=23)
### END HIDDEN TESTS

# %% [markdown] slideshow={"slide_type": "-"}
# The three runs of section 3 recorded log₁₀ of this ratio (`ch09.update_data_ratio`, averaged
# over each block's weight matrices) for their first 50 steps, one line per block:

# %% slideshow={"slide_type": "subslide"}
# NBVAL_IGNORE_OUTPUT
fig, ax = plt.subplots(1, 3, figsize=(10, 3), sharey=True)
first_steps = {}
for col, ((norm, _, _, warm), (run,)) in enumerate(runs.items()):
    for i in range(run.ratio.shape[1]):  # run.ratio: (50 steps, 6 blocks)
        ax[col].plot(ch09.smooth(run.ratio[:, i]), lw=1, label=f"block {i + 1}")
    ax[col].set(title=f"{norm}-LN, warm-up {warm}", xlabel="step")
    first_steps[norm, warm] = float(run.ratio[:10].mean())
ax[0].set_ylabel("log10 update / data")
ax[2].legend(fontsize=7)
plt.tight_layout()
plt.show()
for (norm, warm), v in first_steps.items():
    print(f"{norm}-LN, warm-up {warm:2d}: mean log10 update/data over the first 10 steps = {v:.2f}")
assert first_steps["post", 0] > first_steps["post", 50] + 0.5

# %% [markdown] slideshow={"slide_type": "-"}
# Without warm-up the first steps change every weight matrix by a few percent of its size, in
# Post-LN and Pre-LN alike; with warm-up they start several times smaller, as the learning rate
# does (over the first ten steps it averages 0.11 of the peak). Pre-LN survives the large
# first steps; Post-LN does not.
#
# How much larger can Pre-LN's learning rate be? The grid below adds, at 6 layers without warm-up,
# Post-LN at lr 3·10⁻³ and 5·10⁻³ and Pre-LN at 3·10⁻²; and 2-layer models at 10⁻². It is
# not a full product: these cells carry the argument.

# %% slideshow={"slide_type": "-"}
# NBVAL_IGNORE_OUTPUT
GRID = [("post", 6, lr, 0) for lr in (3e-3, 5e-3)] + [("pre", 6, 3e-2, 0)]
GRID += [("post", 2, 1e-2, 0), ("pre", 2, 1e-2, 0)]
for key, run in zip(GRID, side_by_side(functools.partial(ch09.train_copy, seed=0), GRID)):
    runs[key] = [run]
learns = {key: rs[0].final_accuracy >= 0.9 for key, rs in runs.items()}  # learnt in 150 steps
for norm, depth in (("post", 6), ("pre", 6), ("post", 2), ("pre", 2)):
    cells = sorted(
        (lr, rs[0].final_accuracy)
        for (n, N, lr, w), rs in runs.items()
        if (n, N, w) == (norm, depth, 0)
    )
    learnt = [f"{lr:g}" for lr, acc in cells if acc >= 0.9]
    print(
        f"{norm}-LN, {depth} layers, no warm-up: "
        + ", ".join(f"{acc:.2f} at lr {lr:g}" for lr, acc in cells)
        + f"  | largest lr that learns: {learnt[-1] if learnt else 'none'}"
    )
assert learns["post", 6, 3e-3, 0] and not learns["post", 6, 5e-3, 0]
assert not learns["post", 6, 1e-2, 0] and learns["post", 2, 1e-2, 0]
assert learns["pre", 6, 1e-2, 0] and learns["pre", 6, 3e-2, 0]

# %% [markdown] slideshow={"slide_type": "-"}
# > **⚠ The source says** Pre-LN Transformers can use "about 10 times" the learning rate of the
# > standard configuration. The factor is not a constant. On this grid, at 6 layers without
# > warm-up, Post-LN learns the copy at 3·10⁻³ but not at 5·10⁻³, while Pre-LN still learns at
# > 3·10⁻², the largest rate tried: a factor of 10 between the largest rates that learn. But at
# > 2 layers Post-LN learns at 10⁻² too, and 50 warm-up steps make 10⁻² work for it at 6 layers.
# > In Xiong et al.'s BERT runs the factor was 3; in their translation runs Pre-LN used the same
# > peak rate as Post-LN and gained by dropping the warm-up (appendix A.7). What holds: Pre-LN
# > removes the need for warm-up and tolerates a larger peak rate, by a factor that depends on
# > depth, warm-up and task.
#
# **Play with it.** The widget shows the loss and accuracy curves of any cell of the grid
# (nothing is trained when you move it). Try 6 layers at lr 10⁻² with and without warm-up, then
# 2 layers, then 6 layers without warm-up from 3·10⁻³ up to 3·10⁻² (Post-LN and Pre-LN were trained
# at different rates there: a placement that was not trained shows no curve).

# %% slideshow={"slide_type": "slide"}
# NBVAL_IGNORE_OUTPUT
ch09.stability_widget(dict(runs))

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Takeaway.** Adam's first steps move every weight by about the learning rate; Post-LN survives
# them only when they are small — a small peak rate, a shallow model, or warm-up.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 5. DeepNorm: Post-LN that trains deep
#
# If Pre-LN trains so easily, why keep Post-LN? When it trains, it often ends slightly better:
# Liu et al. (2020) report 27.80 BLEU for Post-LN against 27.27 for Pre-LN on WMT14
# English–German with 6 + 6 layers. **DeepNorm** (Wang et al. 2022) keeps the Post-LN placement
# and makes it stable at any depth with two constants: it up-weights the identity path by α and
# shrinks the initialisation of the sublayers by β,
#
# $$x \leftarrow \mathrm{LN}(\alpha x + \mathcal{G}(x)),$$
#
# where β is the gain of the Xavier initialisation of the FFN's two matrices and of attention's
# value and output projections (queries and keys keep gain 1). With these the model's output moves
# by a bounded amount per update whatever the depth, and Wang et al. train 1,000 layers. The
# constants depend on the architecture (their Table 1):
#
# | architecture | α | β |
# |---|---|---|
# | encoder-only (BERT-like), N layers | (2N)^¼ | (8N)^−¼ |
# | decoder-only (GPT-like), M layers | (2M)^¼ | (8M)^−¼ |
# | encoder–decoder: the decoder's M layers | (3M)^¼ | (12M)^−¼ |
# | encoder–decoder: the encoder's N layers | $0.81\,(N^4 M)^{1/16}$ | $0.87\,(N^4 M)^{-1/16}$ |
#
# > **Glossary** · DeepNorm 深度归一化 · Xavier initialisation Xavier 初始化 · gain 增益 ·
# > decoder-only 仅解码器

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 5 · DeepNorm's constants for the chapter's model
# **Difficulty** ●○○ · **Time** 5 min · **Points** 2 · **Practises** choosing the row of
# Wang et al.'s table for an architecture
#
# The chapter's model predicts each token from the tokens before it with one stack of causal
# self-attention blocks. Write `my_deepnorm_constants(N)`, returning a **float64** tensor
# `[alpha, beta]` for that model with N layers (`torch.tensor` of Python floats is float32 unless you pass
# `dtype=torch.float64`). The check refuses the chapter's `deepnorm_constants`.


# %% nbgrader={"grade": false, "grade_id": "ch09_deepnorm", "locked": false, "schema_version": 3, "solution": true} slideshow={"slide_type": "skip"}
def my_deepnorm_constants(N):
    """N -> float64 tensor [alpha, beta]: DeepNorm's constants for the chapter's N-layer model."""
    ### BEGIN SOLUTION
    return torch.tensor([(2 * N) ** 0.25, (8 * N) ** -0.25], dtype=torch.float64)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch09_deepnorm_test", "locked": true, "points": 2, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"} tags=["raises-exception"]
from attncourse.exercises.ch09 import check_deepnorm_constants

check_deepnorm_constants(my_deepnorm_constants)
### BEGIN HIDDEN TESTS
import importlib

import attncourse.exercises.ch09 as ex
import attncourse.exercises.engine as engine

engine = importlib.reload(engine)  # fresh copies: a patched check does not count
ex = importlib.reload(ex)
ex.check_deepnorm_constants(my_deepnorm_constants, seed=24)
### END HIDDEN TESTS

# %% [markdown] slideshow={"slide_type": "-"}
# The chapter's model is decoder-only, the second row. The course's
# `TransformerBlock(norm="deepnorm", num_layers=N)` uses those constants; the cell writes its two
# sublayers out, then measures what section 2 measured for the other placements — the per-layer
# gradients at initialisation — and trains it as in section 3: 6 layers, lr 10⁻², no warm-up.

# %% slideshow={"slide_type": "subslide"}
# NBVAL_CHECK_OUTPUT
alpha, beta = ch09.deepnorm_constants(6).tolist()
torch.manual_seed(0)
deep = TransformerBlock(16, 4, norm="deepnorm", num_layers=6).double()
with torch.no_grad():
    h = deep.norm1(alpha * x + deep.attn(x)[0])  # x <- LN(alpha x + G(x)), attention
    assert torch.allclose(deep(x)[0], deep.norm2(alpha * h + deep.ffn(h)))  # ... then the FFN
print(f"N = 6: alpha = 12^(1/4) = {alpha:.3f}, beta = 48^(-1/4) = {beta:.3f}")
grads["deepnorm"] = ch09.init_gradients("deepnorm", 12, dtype=torch.float64)
fig, ax = plt.subplots(figsize=(5, 3))
for norm, gr in grads.items():
    ax.plot(range(1, 13), gr["w2"], "o-", ms=3, color=COLORS[norm], label=norm)
ax.set(
    xlabel="layer l",
    ylabel=r"$\|\partial L/\partial W^{2,l}\|_F$",
    yscale="log",
    title="L = 12, at initialisation",
)
ax.legend(fontsize=8)
plt.show()
for norm, gr in grads.items():
    print(f"{norm:8s} last/first layer gradient = {gr['w2'][-1] / gr['w2'][0]:.2f}")
assert abs(grads["deepnorm"]["w2"][-1] / grads["deepnorm"]["w2"][0] - 1) < 0.2

# %% slideshow={"slide_type": "-"}
# NBVAL_IGNORE_OUTPUT
runs["deepnorm", 6, 1e-2, 0] = [ch09.train_copy("deepnorm", 6, 1e-2, 0, seed=0)]
for norm in ("post", "deepnorm"):
    print(
        f"{norm:8s} 6 layers, lr 1e-2, no warm-up: final accuracy {runs[norm, 6, 1e-2, 0][0].final_accuracy:.2f}"
    )
assert runs["deepnorm", 6, 1e-2, 0][0].final_accuracy >= 0.95

# %% [markdown] slideshow={"slide_type": "-"}
# DeepNorm's gradient profile is flat where Post-LN's grew towards the top, and at the learning
# rate that stalled Post-LN it learns the copy without warm-up, with every block's output still a
# LayerNorm's output.
#
# **Takeaway.** DeepNorm keeps Post-LN's placement and makes it trainable by weighting the
# identity path by α and shrinking the sublayers' initialisation by β — constants that depend on
# the architecture.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Summary
#
# - **Post-LN** (Eq. 5.3.10) puts a LayerNorm on the identity path; **Pre-LN** (Eq. 5.3.11) keeps
#   the path an exact identity, so its residual stream is a sum of updates that grows with depth.
# - A LayerNorm on the gradient's path divides the gradient by about the standard deviation of
#   what it normalised; Eq. (5.3.12)'s identity term protects the gradient only in Pre-LN, and
#   even there a cancelling sublayer can shrink it.
# - At initialisation Post-LN's top layers get the largest gradients, and its last layer's does
#   not shrink with depth; Pre-LN's shrinks like $1/\sqrt{L}$ (Xiong et al. 2020) because its
#   stream grows.
# - Adam's first steps move every weight by about the learning rate; warm-up makes them small.
#   Without it, a 6-layer Post-LN model at lr 10⁻² stalls at the uniform guess; Pre-LN learns.
# - How much larger a learning rate Pre-LN tolerates depends on depth, warm-up and task: 10× on
#   this chapter's grid, 3× in Xiong et al.'s BERT runs.
# - DeepNorm keeps Post-LN and trains it at any depth with α and β chosen by architecture: for a
#   decoder-only model of N layers, α = (2N)^¼ and β = (8N)^−¼.

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Check yourself**
#
# 1. A Post-LN block whose sublayer outputs 0: what does the gradient through it lose, compared
#    with a Pre-LN block whose sublayer outputs 0?
# 2. Why does the gradient of Pre-LN's last FFN matrix shrink as the model gets deeper, while
#    Post-LN's does not?
# 3. Adam at lr 10⁻² takes its first step on a weight matrix with standard deviation 0.1 whose
#    gradient entries are all non-zero. About how large is the update/data ratio?
# 4. Warm-up changes the first steps. Does it change the gradients at initialisation?
# 5. What are DeepNorm's α and β for a 6-layer GPT-like model, and for the decoder of an
#    encoder–decoder model with 6 decoder layers?
#
# <details><summary>Answers</summary>
#
# 1. The Post-LN block is then y = LN(x), so the gradient is multiplied by $J_{\mathrm{LN}}$: it
#    is multiplied elementwise by γ, divided by $\sqrt{\sigma^2 + \varepsilon}$, and loses its
#    component along the all-ones direction (for any ε) and along $\hat x$ (all of it at ε = 0,
#    all but a fraction ε/(σ² + ε) otherwise). The Pre-LN block is then y = x: its Jacobian is
#    the identity, and the gradient passes unchanged.
# 2. Pre-LN's stream is a sum of one update per sublayer, so its size grows with depth (RMS
#    roughly ∝ √L), and the final LayerNorm divides the gradient by it; Post-LN's stream is
#    renormalised after every sublayer, so the last layer sees RMS 1 at any depth.
# 3. About 0.1: each entry moves by ±10⁻² (Adam's first step is ±lr per weight, up to its ε), so
#    std(ΔW) ≈ 10⁻² when the signs are mixed, against std(W) = 0.1.
# 4. No: the model and its gradients at step 0 are the same; warm-up only scales the step each
#    gradient produces (step t uses peak · (t + 1)/T_warm until t + 1 = T_warm).
# 5. GPT-like (decoder-only): α = 12^¼ ≈ 1.861, β = 48^−¼ ≈ 0.380. The decoder of an
#    encoder–decoder model: α = 18^¼ ≈ 2.060, β = 72^−¼ ≈ 0.343.
# </details>
#
# **Next — chapter 10, efficient, sparse and gated attention**: with training made stable, the
# cost of attention itself — sparse masks, linear attention, gated attention, and attention
# computed in tiles so that its memory grows linearly with the sequence.

# %% [markdown] slideshow={"slide_type": "skip"}
# ## Appendix · The source, checked
#
# Source 004, §5.3.5 explains why attention and LayerNorm can be stacked deep, in prose and three
# equations. This appendix checks each claim numerically or against the papers it paraphrases.
# Marks: **✓ holds** · **⚠ holds only under a condition** (stated) · **✗ wrong as printed** (with a
# counterexample and the correct statement) · **— not checked here** · **→ ch. NN**: checked in
# chapter NN, which owns the verdict.
#
# ### A.1 The two placements (Eq. 5.3.10, 5.3.11)
#
# **Claim check — Eq. (5.3.10) ✓.** Post-LN is the original Transformer's placement; section 1's
# first cell writes it out and matches the course's block.
#
# **Claim check — Eq. (5.3.11) ✓.** Section 1 compares the Pre-LN block with the course's; a
# Pre-LN model needs a final LayerNorm before its output layer (the chapter's model has one), since
# its stream is an unnormalised sum. The source calls it "the Pre-LN Transformer" without a
# reference; it was used in Tensor2Tensor (Vaswani et al. 2018), deep translation models (Wang et
# al. 2019) and GPT-2 (Radford et al. 2019) before Xiong et al. (2020) analysed it.
#
# ### A.2 "Pre-LN stabilises training and is more robust to hyper-parameters"
#
# **Claim check — stabilises training ✓.** Section 3: without warm-up Pre-LN learns the copy where
# Post-LN stalls; Xiong et al. found the same on translation and BERT.
#
# **Claim check — more robust to hyper-parameters ⚠.** Robust to the learning rate and to warm-up,
# measured (section 4). But robustness is not quality: when Post-LN trains, it can end slightly
# better (Liu et al. 2020: 27.80 against 27.27 BLEU on WMT14 En–De, 6 + 6 layers), which is why
# DeepNorm keeps it.
#
# ### A.3 The identity term of Eq. (5.3.12), and LayerNorm's Jacobian
#
# **Claim check — Eq. (5.3.12) ✗ as a guarantee.** The equation is the Jacobian of x + F(x), but
# the conclusion drawn from it — the residual path "ensures" that the gradient propagates
# effectively even in very deep networks — does not follow. The identity is added to ∂F/∂x; it
# does not bound the product from below: a sublayer that cancels 90 % of its input along the
# gradient leaves 0.10 of it (section 2). And (5.3.12) describes a Pre-LN sublayer
# only: a Post-LN block multiplies by $J_{\mathrm{LN}}(I + J_F)$, and $J_{\mathrm{LN}}$ scales the
# gradient by about $1/\sigma(x + F(x))$ (about 0.5 and 0.25 at σ = 2 and 4, section 2). **Correct
# statement**: with nothing else on the identity path (Pre-LN), $\partial\mathcal{L}/\partial x_l$
# contains $\partial\mathcal{L}/\partial x_L$ unchanged, so the gradient cannot vanish *through
# multiplication over depth*; other terms can still cancel it, and Post-LN has no such clean path.
#
# **LayerNorm's Jacobian is a projection and a scale only at ε = 0.** Write the bracket of
# section 2's $J_{\mathrm{LN}}$ as $P = I - \tfrac{1}{d}\mathbf{1}\mathbf{1}^\top - r\,uu^\top$ with
# u the unit vector along $\hat x$ and $r = \|\hat x\|^2/d = \sigma^2/(\sigma^2 + \varepsilon)$.
# Since u ⊥ 𝟏, $P^2 - P = -r(1 - r)\,uu^\top$, so $\|P^2 - P\| = r(1 - r)$: 0 at ε = 0, and for a
# token with variance 0.09 and ε = 10⁻² (r = 0.9) it is 0.09. With the course's ε = 10⁻⁵ and
# σ ≈ 1 it is about 10⁻⁵. The cell checks the formula against autograd's Jacobian.

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
d = 64
for var, eps in ((0.09, 1e-2), (0.09, 0.0), (1.0, 1e-5)):
    v = torch.randn(d, dtype=torch.float64, generator=torch.Generator().manual_seed(4))
    v = 0.7 + var**0.5 * (v - v.mean()) / v.std(unbiased=False)  # variance exactly var
    J_ln = torch.autograd.functional.jacobian(LayerNorm(d, eps=eps).double(), v)  # (d, d)
    P = J_ln * math.sqrt(var + eps)  # the bracket (gamma = 1)
    r = var / (var + eps)
    gap = float(torch.linalg.matrix_norm(P @ P - P, ord=2))
    print(f"var {var}, eps {eps:g}: |P^2 - P| = {gap:.6f}, r(1 - r) = {r * (1 - r):.6f}")
    assert abs(gap - r * (1 - r)) < 1e-9

# %% [markdown] slideshow={"slide_type": "skip"}
# ### A.4 Xiong et al.'s Theorem 1 and Fig. 3, measured
#
# The source cites no theorem; the chapter uses Xiong et al.'s to explain its claims, so their
# statements are checked too.
#
# **Claim check — Theorem 1, Pre-LN's last layer ∝ $1/\sqrt{L}$ ✓.** Section 2: from L = 2 to 16
# the last layer's gradient falls by a factor close to $\sqrt{2/16} ≈ 0.35$.
#
# **Claim check — Theorem 1, Post-LN's last layer independent of L ⚠.** Averaged over eight
# initialisations it grows from L = 2 to 16 (by about 1.6×; it does not shrink). Theorem 1 is an *upper bound* proved under idealisations — attention replaced by uniform
# averaging (weights independent of the input), ReLU FFN with Gaussian weights, holding with high
# probability for large d — so "independent of L" means "no factor of L in the bound", not an
# equal number at every depth.
#
# **Claim check — Fig. 3, Post-LN's gradient grows with the layer index ✓**, in expectation and
# modestly here: averaged over eight initialisations, last/first ≈ 1.2 (asserted ≥ 1.1, section
# 2). A single initialisation's profile is noisy — the cell shows each of the eight — which is
# why section 2 averages.

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
ratios = [w2[-1] / w2[0] for w2 in grads["post"]["w2_each"]]  # each of the eight initialisations
print(
    "Post-LN, L = 12, one initialisation each: last/first =", " ".join(f"{r:.2f}" for r in ratios)
)
print(
    f"grow: {sum(r > 1 for r in ratios)} of 8;  their average profile: {grads['post']['w2'][-1] / grads['post']['w2'][0]:.2f}"
)
assert sum(r > 1.05 for r in ratios) == 6 and sum(r < 0.95 for r in ratios) == 2

# %% [markdown] slideshow={"slide_type": "skip"}
# **Claim check — Fig. 3, Pre-LN's gradient about flat across layers ⚠.** Here it *falls* towards
# the top, by about 4× over 12 layers (measured at initialisation, as Xiong et al. measured their
# 6-layer IWSLT model, where it stayed about flat). Where does the fall come from? Every layer's
# gradient passes once through the final LayerNorm's Jacobian — a matrix that could tilt the
# profile — and through the factors $(I + J_{F_k}J_{\mathrm{LN}_k})$ of the sublayers above it. The cell takes the 12-layer Pre-LN
# model apart, with the same weights and tokens: as built; without the final LayerNorm; and with
# the backward pass restricted to the identity paths (each sublayer reads a detached copy of the
# stream: the forward pass is unchanged, the $J_{F_k}J_{\mathrm{LN}_k}$ terms are gone).

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
variants = {
    "as built": {},
    "without the final LayerNorm": {"final_norm": False},
    "identity paths only (no J_F J_LN)": {"through_branches": False},
}
print(f"{'Pre-LN, N = 12':34s} {'last/first |dL/dW2|':>20} {'|dL/dx_1| / |dL/dx_12|':>24}")
measure = functools.partial(ch09.init_gradients, "pre", 12, dtype=torch.float64)
taken_apart = side_by_side(measure, list(variants.values())[1:], progress=False)
tilt = {}
for name, gr in zip(variants, [grads["pre"], *taken_apart]):
    tilt[name] = gr["w2"][-1] / gr["w2"][0]
    print(f"{name:34s} {tilt[name]:20.2f} {gr['dx'][1] / gr['dx'][-1]:24.2f}")
assert (
    tilt["as built"] <= 0.8
    and abs(tilt["without the final LayerNorm"] / tilt["as built"] - 1) < 0.25
)
assert tilt["identity paths only (no J_F J_LN)"] >= 0.9

# %% [markdown] slideshow={"slide_type": "skip"}
# Removing the final LayerNorm leaves the fall as it is (first column); removing the branch terms
# removes it (what is left, a ratio near 1, comes from the blocks' FFN activations differing a
# little). So the final LayerNorm does not set the tilt here: Pre-LN's per-layer profile is set
# by the product of $(I + J_{F_k}J_{\mathrm{LN}_k})$ over the sublayers above, and how steep it is
# depends on the setup — the depth, and how large each update is relative to the stream, since
# $J_{\mathrm{LN}_k}$ scales like $1/\sigma(x_k)$. Xiong et al.'s "about flat" and our 4× fall
# are both instances; Theorem 1, about the last layer only, is not affected.
#
# The second column, the ratio of input-gradient norms, does move without the final LayerNorm,
# and it measures something else. The stream, and with it the blocks' backward map, is the same in
# both rows; only the vector $\partial\mathcal{L}/\partial x_{12}$ that enters that map differs:
# without the final LayerNorm the output layer reads $x_{12}$ at its own scale (RMS ≈ 3.5 instead
# of 1), so the logits are larger and their gradient points elsewhere. A ratio of norms through a
# fixed matrix depends on the direction of what goes in. The per-layer profile of the weight
# gradients is the first column.
#
# ### A.5 "LayerNorm keeps every layer's input in a reasonable range"
#
# **Claim check — "LN keeps every layer's input in a reasonable range" ⚠.** True for Post-LN, whose
# every block outputs a LayerNorm's output. Not for Pre-LN: its LayerNorms sit on the branches,
# and the stream itself is a sum that grows with depth — RMS from about 0.8 to 3.5 over 12
# blocks at initialisation (section 2), roughly like √l. The sublayers' *inputs* are normalised;
# the stream is not. Karpathy's *makemore*-style histograms of every block's output and its
# gradient show the same for the 6-layer models of section 3, at initialisation:

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
slope = np.polyfit(np.log(np.arange(1, 13)), np.log(grads["pre"]["rms"][1:]), 1)[0]
print(
    f"Pre-LN, 12 layers: log-log slope of the stream's RMS against l = {slope:.2f}  (0.5 would be sqrt(l))"
)
inputs, targets = ch09.copy_batch(32, 6, 16, torch.Generator().manual_seed(5))
fig, ax = plt.subplots(2, 2, figsize=(9, 5))
stds = {}
for col, norm in enumerate(("post", "pre")):
    torch.manual_seed(0)
    model = ch09.CausalLM(17, 32, 4, 6, norm=norm, max_len=13).double()
    hist = ch09.block_histograms(model, inputs, targets)
    for i, hb in enumerate(hist):
        ax[0, col].plot(hb["act"][1], hb["act"][0], label=f"block {i + 1}")
        ax[1, col].plot(hb["grad"][1], hb["grad"][0], label=f"block {i + 1}")
    ax[0, col].set(title=f"{norm}-LN: block outputs", xlabel="value")
    ax[1, col].set(title=f"{norm}-LN: their gradients", xlabel="value", yscale="log")
    stds[norm] = [hb["act_std"] for hb in hist]
    print(f"{norm}-LN activation std per block: {' '.join(f'{v:.2f}' for v in stds[norm])}")
ax[0, 1].legend(fontsize=7)
plt.tight_layout()
plt.show()
assert max(stds["post"]) < 1.05 and stds["pre"][-1] > 2 * stds["pre"][0] and 0.4 < slope < 0.8

# %% [markdown] slideshow={"slide_type": "skip"}
# ### A.6 "Stable statistics that do not depend on the shape of the input distribution"
#
# **Claim check — LN's output statistics do not depend on the shape of the input distribution ⚠.**
# LayerNorm fixes two numbers per token: the mean of its features (0) and their variance (≈ 1,
# exactly 1 when ε = 0). It is an **affine map per token** (subtract a number, divide by a
# number), so everything else about the features' distribution — skew, heavy tails, a few huge
# features — passes through unchanged. The kurtosis (fourth moment over variance squared, 3 for
# a Gaussian) is invariant under affine maps; the cell measures it before and after LayerNorm for
# features drawn from three distributions. **Correct statement**: LN normalises the location and
# scale of each token, not the shape of its feature distribution. (That LN's output has mean 0
# and standard deviation 1 is §5.3.4's claim, repeated in §5.3.5: chapter 08 checks it — only
# before γ and β, and with standard deviation σ/√(σ² + ε).)


# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
def kurtosis(v):
    centred = v - v.mean()
    return float(centred.pow(4).mean() / centred.pow(2).mean() ** 2)


torch.manual_seed(7)
d = 4096
tokens = {
    "Gaussian": torch.randn(1, d, dtype=torch.float64),
    "Laplace": torch.distributions.Laplace(0.0, 1.0).sample((1, d)).double(),
    "Student t, 5 dof": torch.distributions.StudentT(5.0).sample((1, d)).double(),
}
ln = LayerNorm(d).double()
for name, feats in tokens.items():
    feats = 4.0 * feats + 3.0  # any location and scale
    with torch.no_grad():
        out = ln(feats)  # (1, d)
    print(
        f"{name:17s} kurtosis in {kurtosis(feats):5.2f}, out {kurtosis(out):5.2f} | out mean 0: "
        f"{abs(float(out.mean())) < 1e-12}, std {float(out.std(unbiased=False)):.4f}"
    )
    assert abs(kurtosis(out) - kurtosis(feats)) < 1e-9 and abs(float(out.mean())) < 1e-9

# %% [markdown] slideshow={"slide_type": "skip"}
# ### A.7 "Pre-LN can use about 10× larger learning rates"
#
# **Claim check — "Pre-LN allows about 10× larger learning rates" ⚠ (the factor is not a
# constant).** What the papers used: Xiong et al.'s BERT runs had Post-LN at lr 1e-4 with 10k
# warm-up steps against Pre-LN at 3e-4 without (Post-LN at 3e-4 diverged) — 3× — and Pre-LN
# reached the same validation loss 40 % sooner; in translation Pre-LN used the **same** peak rate
# as Post-LN and won by dropping the warm-up. What this chapter's grid shows (6 layers, copy task,
# 150 steps, no warm-up; section 4): Post-LN learns the copy at 3e-3 but no longer at 5e-3 or 1e-2,
# while Pre-LN still learns at 1e-2 and 3e-2, the largest rate tried — 10× between the largest rates
# that learn. At 2 layers Post-LN learns at 1e-2 too, and with 50 warm-up steps at 6 layers.
# **Correct statement**: Pre-LN removes the need for warm-up and tolerates a larger peak learning
# rate, by a factor that depends on depth, warm-up and task — 3× in the cited BERT experiment, 1× in
# the cited translation runs, 10× on this grid. The cell prints the grid once more, with the runs'
# final accuracies.

# %% slideshow={"slide_type": "skip"}
# NBVAL_IGNORE_OUTPUT
for (norm, depth, lr, warm), rs in runs.items():
    print(
        f"{norm:8s} N={depth} lr={lr:<6g} warm-up={warm:<3d} final accuracy {rs[0].final_accuracy:.2f}"
    )

# %% [markdown] slideshow={"slide_type": "skip"}
# ### A.8 The section's other claims
#
# **Claim check — "LN avoids (internal) covariate shift" ⚠.** An explanation, not a measurement;
# for BatchNorm, Santurkar et al. (2018) found that the benefit does not come from reducing
# internal covariate shift. Nothing in this chapter needs it: the gradients of section 2 explain
# the measured effects.
#
# **Claim check — "residual + LN: gradients neither vanish nor explode" ⚠.** Not a guarantee: at
# initialisation Post-LN's gradients grow towards the top layers (section 2), and without warm-up
# Post-LN stalls (section 3).
#
# **Claim check — "hundreds or even thousands of layers" ⚠.** 1,000 layers were trained with
# DeepNorm (Wang et al. 2022), not with plain Post-LN; Pre-LN trains deep, but its stream grows
# (A.5).
#
# **Claim check — "deeper costs linearly more compute and memory" ✓.** Every block has the same
# shape, so compute and activation memory grow linearly in N at fixed width and sequence length.
#
# **"The marginal returns of depth diminish" — not checked here.** A statement about trained
# models at scale; Kaplan et al. (2020) find loss falling as a power law in parameters, and the
# split between depth and width mattering little over a wide range, but the chapter's copy task
# cannot test it.
#
# ### A.9 Claim checks at a glance
#
# | source claim | verdict | correct statement / condition |
# |---|---|---|
# | Eq. (5.3.10): Post-LN y = LN(x + F(x)) | ✓ | the original Transformer's placement; LN sits on the identity path (section 1) |
# | Eq. (5.3.11): Pre-LN y = x + F(LN(x)) | ✓ | needs a final LN before the output layer; the stream is an unnormalised sum; used before Xiong et al. 2020 analysed it (A.1) |
# | §5.3.5: Pre-LN stabilises training | ✓ | no warm-up needed at 6 layers, lr 1e-2, where Post-LN stalls (section 3) |
# | §5.3.5: Pre-LN is more robust to hyper-parameters | ⚠ | to lr and warm-up, measured; Post-LN can end slightly better when it trains (Liu et al. 2020) (A.2) |
# | Eq. (5.3.12): the residual path ensures the gradient propagates in very deep networks | ✗ | ‖(I + J)ᵀg‖ can be ≪ ‖g‖ (0.10); (5.3.12) is the Pre-LN Jacobian only — a Post-LN block multiplies by J_LN, which scales the gradient by ≈ 1/σ(x + F(x)) (section 2, A.3) |
# | §5.3.5: LN keeps every layer's input in a reasonable range | ⚠ | for Post-LN; Pre-LN's residual stream grows ~√l at init (RMS 0.8 → 3.5 over 12 blocks) (section 2, A.5) |
# | §5.3.5: LN rescales activations to mean 0, std 1 | → ch. 08 | see chapter 08: only x̂, before γ and β, with std σ/√(σ² + ε) |
# | §5.3.5: LN's output statistics do not depend on the shape of the input distribution | ⚠ | only each token's mean (0) and variance (≈ 1) are fixed; LN is affine per token, so skew and tails pass unchanged (kurtosis in = out) (A.6) |
# | §5.3.5: without normalisation the activations' variance accumulates layer by layer | → ch. 08 | see chapter 08: a plain ReLU stack's size drifts with the draw, a He-scaled residual stack's grows like $2^{l/2}$; a LayerNorm in each branch holds it to about √l |
# | §5.3.5: a larger learning rate explores the loss surface better and finds better solutions | — | not checked here: this chapter measures whether a learning rate trains at all, not the quality of the solution at scale |
# | §5.3.5: Pre-LN allows about 10× larger learning rates | ⚠ | the factor depends on depth, warm-up and task: 3× in Xiong et al.'s BERT runs, the same peak lr in their translation runs, 10× on this chapter's 6-layer grid; at 2 layers, or with warm-up, Post-LN learns at 1e-2 (section 4, A.7) |
# | Xiong et al. Thm. 1: Pre-LN's last-layer gradient O(d√(ln d/L)) | ✓ | ~1/√L measured (section 2, A.4) |
# | Xiong et al. Thm. 1: Post-LN's last-layer gradient O(d√ln d), independent of L | ⚠ | grows with L here (≈ 1.6× from L = 2 to 16): an upper bound under idealisations (uniform attention, large d) (A.4) |
# | Xiong et al. Fig. 3: Post-LN's gradient grows with the layer index | ✓ | in expectation (last/first ≈ 1.2 over 12 layers, 8 initialisations); a single initialisation can fall (section 2, A.4) |
# | Xiong et al. Fig. 3: Pre-LN's gradient about flat across layers | ⚠ | falls here (last/first ≈ 1/4): the branch terms Π(I + J_F J_LN) of the sublayers above set it, not the final LayerNorm; how steep depends on the setup (A.4) |
# | §5.3.5: LN avoids (internal) covariate shift | ⚠ | an explanation, not a measurement; for BatchNorm, Santurkar et al. 2018 found the benefit does not come from reducing it (A.8) |
# | §5.3.5: residual + LN: gradients neither vanish nor explode | ⚠ | not a guarantee: Post-LN's gradients grow towards the top layers, and without warm-up Post-LN stalls (sections 2–3) |
# | §5.3.5: hundreds or even thousands of layers | ⚠ | 1,000 layers with DeepNorm (Wang et al. 2022), not with plain Post-LN (section 5, A.8) |
# | §5.3.5: deeper costs linearly more compute and memory | ✓ | every block has the same shape (A.8) |
# | §5.3.5: the marginal returns of depth diminish | — | not checked here: a statement about trained models at scale (A.8) |
# | Eq. (5.4.9) (source 001): X^(L) = X^(0) + Σ ΔX^(l) | → ch. 04 | see chapter 04: holds for Pre-LN (section 1), not for Post-LN |
#
# **The source's listings.** Source 004, §5.3.5 prints no code; its three equations are run in
# sections 1 and 2.
#
# **Errata in one place.** Wrong as printed: the conclusion drawn from Eq. (5.3.12), that the
# residual path ensures the gradient propagates effectively in very deep networks (A.3). Right only under a condition: "LN keeps
# every layer's input in a reasonable range" (Post-LN only, A.5); "stable statistics that do not
# depend on the shape of the input distribution" (mean and variance only, A.6); "about 10× larger
# learning rates" (a factor that depends on depth, warm-up and task, A.7); "more robust to
# hyper-parameters" (A.2); "gradients neither vanish nor explode", "thousands of layers" and
# "avoids covariate shift" (A.8).
