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
# # Chapter 08 · Residual, highway and normalization
# *残差连接、Highway 连接与归一化* — source 004, §5.3.1–5.3.4; source 000, §14.3.5
#
# Take two ReLU networks for the same 10-class task, one with 10 layers and one with 100, every
# layer equally wide and initialised by He's rule, which keeps the size of the signal constant
# from layer to layer on average. Train both for 150 steps. The 10-layer network fits the task;
# the 100-layer one hardly learns. Now add each layer's input to its output, y = x + F(x), with
# each branch F started small, and the 100-layer network trains as fast as the 10-layer one. **Why
# does depth alone stop a network from learning, and why does one added x fix it?** This chapter
# follows a deep stack at initialisation, layer by layer, and adds the three pieces every
# Transformer block is built from: an identity path, a gate, and a normalization. Section 5
# trains the stacks and reproduces the depth effect of Srivastava et al. (2015).
#
# **After this chapter you can**
# - write the gradient through a stack of residual blocks, x + F(x), and say what the identity
#   path guarantees and what it does not;
# - build a highway layer and its full Jacobian, and choose its gate bias;
# - implement LayerNorm, RMSNorm and BatchNorm, say which one works for a batch of one, and
#   what LayerNorm throws away — in its output and in its gradient;
# - explain why a 100-layer plain network does not train and a 100-layer highway or residual
#   network does.
#
# **Prerequisites**: chapter 01; the chain rule with Jacobian matrices; the sigmoid and ReLU
# functions; mean and variance; PyTorch at the level of `x.mean(dim=-1, keepdim=True)` and `@`.
#
# **Time**: main path about 85 min, appendix about 45 min (by `scripts/reading_time.py`: prose
# at 150 words a minute, code at 20 lines a minute, and each exercise's stated time).
#
# **How to read it.** Sections 1–5 are the main path, with six exercises. The **appendix** checks
# every claim the source makes about this topic and can be skipped on a first reading.

# %% slideshow={"slide_type": "skip"}
import math
import warnings

import matplotlib.pyplot as plt
import numpy as np
import torch
from torch import nn
from torch.autograd.functional import jacobian

from attncourse.blocks import Highway
from attncourse.chapters import ch08_residual_highway_normalization as ch08
from attncourse.norms import BatchNorm1d, LayerNorm, RMSNorm

torch.manual_seed(0)
np.random.seed(0)
torch.set_num_threads(2)
torch.set_flush_denormal(True)
torch.set_printoptions(precision=4, sci_mode=False)
plt.rcParams.update({"figure.dpi": 80, "figure.figsize": (7, 3)})
# float(t) of a layer's output (which requires grad) is what we want when printing numbers
warnings.filterwarnings("ignore", message="Converting a tensor with requires_grad=True to a scalar")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 1. Deep stacks forget their input
#
# The running example is a stack of 50 layers of width 32 (`ch08.DeepStack`): an input
# projection from 20 features, 50 layers, a read-out to 10 classes. The **plain** layer is
#
# $$h_{l+1} = \mathrm{ReLU}(h_l W_l + b_l),$$
#
# with He initialisation: the entries of $W_l$ have variance 2/width, so that, averaged over
# initialisations, the mean square of $h_l$ stays the same from layer to layer (ReLU zeroes half
# of the variance; the factor 2 puts it back).
#
# `ch08.layer_statistics` sends 64 random inputs through a freshly initialised stack,
# back-propagates a cross-entropy loss, and reports three numbers for every layer l: the size of
# the activations (the RMS of $h_l$); the gradient norm $\lVert\partial\mathcal{L}/\partial h_l\rVert$, what reaches
# layer l from the loss; and the mean **cosine similarity** between the representations of two
# different inputs — 1 means that, at layer l, every input looks the same.
#
# > **Glossary** · plain network 普通网络 · He initialisation He 初始化 · activation 激活值 ·
# > gradient norm 梯度范数 · cosine similarity 余弦相似度

# %% slideshow={"slide_type": "subslide"}
# NBVAL_CHECK_OUTPUT
L = 50
plain = ch08.layer_statistics("plain", depth=L)  # one forward and backward pass at initialisation
rms, grad, cosine = plain.activation_rms, plain.gradient_norm, plain.cosine  # (L + 1,) each
print(f"RMS of h_l:           l = 0: {float(rms[0]):.2g},   l = 50: {float(rms[-1]):.2g}")
print(f"|dL/dh_0| / |dL/dh_50|: {float(grad[0] / grad[-1]):.2g}")
print(
    f"cosine of two inputs: l = 0: {round(float(cosine[0]), 2) + 0.0:.2f}, l = 50: {float(cosine[-1]):.2f}"
)
ch08.plot_layer_statistics({"plain (He)": plain})
plt.show()

# %% [markdown] slideshow={"slide_type": "-"}
# He's rule holds the size only on average over initialisations; one network of width 32 drifts:
# here, an unlucky draw, the activations shrink about a hundredfold over 50 layers (over seeds
# 0–19 the factor runs from 0.01 to 3.7), the gradient about sixfold. The sharper failure is
# the **cosine**. Two random inputs start unrelated (cosine 0); every ReLU layer pulls their
# representations closer, and by layer 50 all inputs point the same way. The read-out sees nearly
# the same vector whatever the input, and the gradient says almost nothing about which input
# caused the loss. A network whose last layer
# cannot tell its inputs apart cannot learn to classify them.
#
# **Takeaway.** A deep plain stack at a careful initialisation keeps the size of its signal only
# on average (this one's shrank about a hundredfold), and it loses the differences between its
# inputs.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 2. An identity path: x + F(x)
#
# A **residual block** (He et al. 2016) adds its input to what its layers compute:
#
# $$\mathbf{y} = \mathbf{x} + \mathcal{F}(\mathbf{x}) \qquad (5.3.1)$$
#
# The layers learn only the change $\mathcal{F}(\mathbf{x}) = \mathcal{H}(\mathbf{x}) - \mathbf{x}$ to the wanted map $\mathcal{H}$; with
# $\mathcal{F} = 0$ the block is exactly the identity. In a stack $\mathbf{x}_{l+1} = \mathbf{x}_l + \mathcal{F}_l(\mathbf{x}_l)$ the chain rule
# gives, for the gradient written as a row vector,
#
# $$\frac{\partial \mathcal{L}}{\partial \mathbf{x}_l} = \frac{\partial \mathcal{L}}{\partial \mathbf{x}_{l+1}}
# \left(\mathbf{I} + \frac{\partial \mathcal{F}_l(\mathbf{x}_l)}{\partial \mathbf{x}_l}\right) \qquad (5.3.2)$$
#
# A plain layer multiplies the gradient by its own Jacobian only. The residual block adds the
# identity matrix I: a path on which the gradient reaches layer l without passing through any
# layer's weights, while the branch's Jacobian $J_l = \partial\mathcal{F}_l/\partial\mathbf{x}_l$ adds a correction.
#
# > **Glossary** · residual connection 残差连接 · residual function 残差函数 · identity mapping 恒等映射 ·
# > Jacobian 雅可比矩阵 · chain rule 链式法则 · vanishing gradient 梯度消失 · exploding gradient 梯度爆炸

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 1 · The gradient through a residual stack
# **Difficulty** ●●○ · **Time** 10 min · **Points** 3 · **Practises** Eq. (5.3.2) block by block,
# row-vector gradients, the order of a product of Jacobians
#
# Write `my_residual_gradient(g, jacobians)`. `g` (d,) is $\partial\mathcal{L}/\partial\mathbf{x}_L$, the gradient at the
# top of a stack of L residual blocks, as a row vector; `jacobians` (L, d, d) holds the branch
# Jacobians, `jacobians[l][i, j]` $= \partial\mathcal{F}_l(\mathbf{x})_i/\partial x_j$ at $\mathbf{x}_l$. Return an (L + 1, d) tensor
# whose row l is $\partial\mathcal{L}/\partial\mathbf{x}_l$ by Eq. (5.3.2); row L is g itself. Keep the input's dtype (an
# identity made with `torch.eye(d, dtype=g.dtype)` does; so does writing g(I + J) as
# `g + g @ J`). Multiply by hand — the chain rule is the exercise, so the check refuses
# `torch.autograd` and `torch.func`. Loops, `@` and `einsum` are all fine.


# %% nbgrader={"grade": false, "grade_id": "ch08_residual_gradient", "locked": false, "schema_version": 3, "solution": true} slideshow={"slide_type": "skip"}
def my_residual_gradient(g, jacobians):
    """g (d,), jacobians (L, d, d) -> (L + 1, d): row l = dL/dx_l, row L = g."""
    ### BEGIN SOLUTION
    rows = [g]  # from the top down
    for J in reversed(jacobians):  # (d, d), the last block first
        rows.append(rows[-1] + rows[-1] @ J)  # (d,) = dL/dx_(l+1) (I + J_l)
    return torch.stack(rows[::-1])  # (L + 1, d)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch08_residual_gradient_test", "locked": true, "points": 3, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"} tags=["raises-exception"]
from attncourse.exercises.ch08 import check_residual_gradient

check_residual_gradient(my_residual_gradient)
### BEGIN HIDDEN TESTS
import importlib

import attncourse.exercises.ch08 as ex
import attncourse.exercises.engine as engine

engine = importlib.reload(engine)  # fresh copies: a patched check does not count
ex = importlib.reload(ex)
ex.check_residual_gradient(my_residual_gradient, seed=26)
### END HIDDEN TESTS

# %% [markdown] slideshow={"slide_type": "-"}
# Now feed it a real stack. The running example's residual branch is
# $\mathcal{F}_l(h) = \mathrm{ReLU}(h)W_l + b_l$, with Jacobian $J_l[i, j] = W_l[j, i]\,\mathbb{1}[h_{l,j} > 0]$. Below, a 50-block
# stack's Jacobians at one input go through the course's `ch08.residual_gradient` (your function
# gives the same rows once its check passes), compared with autograd. The branches are
# He-initialised, once at full scale and once multiplied by $1/\sqrt{L}$.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
x_one = torch.randn(1, 20, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
for scale in (1.0, 1 / math.sqrt(L)):
    stack = ch08.DeepStack("residual", L, 32, branch_scale=scale).double()
    _, states, _ = stack(x_one, hidden=True)  # h_0 ... h_50, each (1, 1, 32)
    h = torch.cat(states[:-1])[:, 0]  # (50, 32) the input of every block
    J = stack.weight[0].transpose(1, 2) * (h > 0)[:, None, :]  # (50, 32, 32): W_l[j, i] 1[h_j > 0]
    # a random dL/dh_50, then dL/dh_l for every l, and dL/dh_0 by back-propagation
    top = torch.randn(32, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    rows = ch08.residual_gradient(top, J.detach())  # (51, 32), row l = dL/dh_l
    (autograd,) = torch.autograd.grad(states[-1][0, 0], states[0], top)  # (1, 1, 32)
    print(
        f"branches x {scale:.2f}: |dL/dh_0| / |dL/dh_50| = {float(rows[0].norm() / top.norm()):8.3g};"
        f"  equals autograd: {torch.allclose(rows[0], autograd[0, 0])}"
    )

# %% [markdown] slideshow={"slide_type": "-"}
# > **⚠ The source says** that because of I the gradient at layer l "stays at least as large as"
# > the gradient at layer l + 1. Eq. (5.3.2) is right; that guarantee is not. With
# > $J = \partial\mathcal{F}/\partial\mathbf{x}$ and g the gradient above the block,
# > $(1 - \lVert J\rVert_2)\,\lVert g\rVert \le \lVert g(\mathbf{I} + J)\rVert \le (1 + \lVert J\rVert_2)\,\lVert g\rVert$: the gradient is *nearly
# > preserved when the branch is small*, and nothing more. A branch can cancel the identity —
# > F(x) = −x/2 halves the gradient, F(x) = −x removes it (a case of your check) — and a
# > large branch multiplies it.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
g4 = torch.randn(4, dtype=torch.float64)
for name, c in (("F(x) = +x/2", 0.5), ("F(x) = -x/2", -0.5), ("F(x) = -x", -1.0)):
    rows = ch08.residual_gradient(g4, c * torch.eye(4, dtype=torch.float64)[None])  # J = c I
    print(f"{name:12s}: |dL/dx_l| / |dL/dx_(l+1)| = {float(rows[0].norm() / g4.norm()):.2f}")

# %% [markdown] slideshow={"slide_type": "-"}
# That is what happened above. A He-initialised branch is as large as its input, so each block
# roughly doubles the expected squared size of both the activations and the gradient: their
# norms grow exponentially, by a factor of order $2^{25} \approx 3 \times 10^7$ over 50 blocks on average
# ($1.6 \times 10^6$ for this one network and input). The identity path stops the gradient from
# *vanishing*, not from exploding. Branches scaled by $1/\sqrt{L}$ add only about $1/L$ to the squared
# size each, and $(1 + 1/L)^{L} < e$. The three stacks of the running example side by side:

# %% slideshow={"slide_type": "subslide"}
stacks = {
    "plain (He)": plain,
    "residual (He)": ch08.layer_statistics("residual", L),
    "residual (He / sqrt L)": ch08.layer_statistics("residual", L, branch_scale=1 / math.sqrt(L)),
}
ch08.plot_layer_statistics(stacks)
plt.show()

# %% [markdown] slideshow={"slide_type": "-"}
# With small branches the activations and the gradient stay within a factor of about 2 over
# all 50 layers, and the cosine stays far from 1: $\mathbf{x}_L = \mathbf{x}_0 + \sum_l \mathcal{F}_l(\mathbf{x}_l)$ still contains
# the input itself.
#
# **In a Transformer** the path matters even more: attention outputs weighted *averages*, and
# averages of averages drive all tokens towards one vector. Below, 12 self-attention layers
# (d = 32, 4 heads, 16 tokens) with and without the residual; s scales every output projection
# (s = 0.01: attention's own gradient is small). The **token spread** $\lVert x - \bar{x}\rVert / \lVert x\rVert$, with $\bar{x}$
# the mean over tokens, is 0 when every token has become the same vector.


# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
def tiny(v, floor=1e-12):
    """Round-off is printed as a threshold: it varies with the CPU."""
    return f"< {floor:.0e}" if v < floor else f"{v:.2g}"


attention = {}  # (residual, s) -> the stack's statistics
print(f"{'12 attention layers':22s} {'|dL/dx_0| / |dL/dx_12|':>23} {'token spread in -> out':>23}")
for s_branch in (1.0, 0.01):
    for residual in (True, False):
        a = attention[residual, s_branch] = ch08.attention_stack(residual, s_branch)
        name = f"{'x + s A(x)' if residual else 's A(x)'}, s = {s_branch:g}"
        print(
            f"{name:22s} {tiny(a.gradient_ratio):>23} {a.spread_in:12.2f} -> {tiny(a.spread_out):>7}"
        )

# %% [markdown] slideshow={"slide_type": "-"}
# Without the residual the gradient vanishes and the tokens collapse into one vector (pure
# attention loses rank doubly exponentially with depth, Dong, Cordonnier & Loukas 2021); with it,
# both survive even at s = 0.01.
#
# **Takeaway.** x + F(x) gives the gradient an identity path and the input a way to the top;
# it keeps the gradient from vanishing, but only small branches keep it from exploding.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 3. Gates: the highway layer
#
# A residual block always adds all of x. A **highway layer** (Srivastava et al. 2015) lets the
# layer decide, per unit and per input, how much to transform and how much to carry:
#
# $$\mathbf{y} = \mathbf{H}(\mathbf{x}, \mathbf{W}_H)\cdot\mathbf{T}(\mathbf{x}, \mathbf{W}_T) + \mathbf{x}\cdot\mathbf{C}(\mathbf{x}, \mathbf{W}_C) \qquad (5.3.3)$$
#
# with the **transform gate** $\mathbf{T} = \sigma(\mathbf{x}\mathbf{W}_T + \mathbf{b}_T)$, between 0 and 1, and, in the usual tied
# form, the **carry gate** $\mathbf{C} = 1 - \mathbf{T}$:
#
# $$\mathbf{y} = \mathbf{H}\cdot\mathbf{T} + \mathbf{x}\cdot(1 - \mathbf{T}) \qquad (5.3.4)$$
#
# The products are element by element. T ≈ 0 copies the input, T ≈ 1 is a plain layer H; here
# $\mathbf{H} = \mathrm{ReLU}(\mathbf{x}\mathbf{W}_H + \mathbf{b}_H)$. The **gate bias** $\mathbf{b}_T$ sets where every layer starts:
# with $b_T = -6$, T ≈ σ(−6) ≈ 0.0025 and a deep highway stack begins as almost the identity.
#
# > **Glossary** · highway network 高速公路网络 (Highway 网络) · transform gate 变换门 ·
# > carry gate 携带门 · gate bias 门偏置 · sigmoid S 型函数 · gating 门控

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 2 · A highway layer
# **Difficulty** ●○○ · **Time** 5 min · **Points** 2 · **Practises** Eq. (5.3.4), gates as
# element-wise weights
#
# Write `my_highway(x, W_H, b_H, W_T, b_T)`: x (B, d), the weights (d, d) used as `x @ W`, the
# biases (d,) → y (B, d) $= \mathbf{H}\cdot\mathbf{T} + \mathbf{x}\cdot(1 - \mathbf{T})$ with $\mathbf{H} = \mathrm{ReLU}(\mathbf{x}\mathbf{W}_H + \mathbf{b}_H)$ and
# $\mathbf{T} = \sigma(\mathbf{x}\mathbf{W}_T + \mathbf{b}_T)$. Keep the input's dtype. `torch.relu` and `torch.sigmoid` are fine;
# the check refuses the course's `Highway`.


# %% nbgrader={"grade": false, "grade_id": "ch08_highway", "locked": false, "schema_version": 3, "solution": true} slideshow={"slide_type": "skip"}
def my_highway(x, W_H, b_H, W_T, b_T):
    """x (B, d), W_H (d, d), b_H (d,), W_T (d, d), b_T (d,) -> y (B, d) = H T + x (1 - T)."""
    ### BEGIN SOLUTION
    H = torch.relu(x @ W_H + b_H)  # (B, d) transform
    T = torch.sigmoid(x @ W_T + b_T)  # (B, d) transform gate
    return H * T + x * (1 - T)  # (B, d) carry gate C = 1 - T
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch08_highway_test", "locked": true, "points": 2, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"} tags=["raises-exception"]
from attncourse.exercises.ch08 import check_highway

check_highway(my_highway)
### BEGIN HIDDEN TESTS
import importlib

import attncourse.exercises.ch08 as ex
import attncourse.exercises.engine as engine

engine = importlib.reload(engine)  # fresh copies: a patched check does not count
ex = importlib.reload(ex)
ex.check_highway(my_highway, seed=24)
### END HIDDEN TESTS

# %% [markdown] slideshow={"slide_type": "-"}
# How does the gradient get through a highway layer? The source differentiates
# $\mathbf{y} = \mathbf{H}(\mathbf{x})\,\mathbf{g} + \mathbf{x}(1 - \mathbf{g})$ with the gate $\mathbf{g} = \mathbf{T}(\mathbf{x})$ and prints
#
# $$\frac{\partial\mathbf{y}}{\partial\mathbf{x}} = \frac{\partial\mathbf{H}}{\partial\mathbf{x}}\cdot\mathbf{g} + \mathbf{I}\cdot(1 - \mathbf{g}) \qquad (5.3.5)$$
#
# > **⚠ The source says** Eq. (5.3.5) is the layer's Jacobian. It treats the gate as a constant,
# > but T depends on x: compared with automatic differentiation on one layer, the printed
# > formula is off by about 0.1 in its largest entry.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
hw = Highway(4, transform=nn.Sequential(nn.Linear(4, 4), nn.Tanh()), gate_bias=0.0).double()
x4 = torch.randn(4, dtype=torch.float64)
with torch.no_grad():
    T = hw.transform_gate(x4)  # (4,)
printed = torch.diag(T) @ jacobian(hw.transform, x4) + torch.diag(1 - T)  # Eq. (5.3.5)
print(
    f"max |autograd's Jacobian - Eq. (5.3.5)| = {float((jacobian(hw, x4) - printed).abs().max()):.3f}"
)

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 3 · The full Jacobian of a highway layer
# **Difficulty** ●●● · **Time** 15 min · **Points** 3 · **Practises** the product rule on a gated
# layer, the Jacobian of a sigmoid gate, row and column conventions
#
# Write `my_highway_jacobian(x, W_H, b_H, W_T, b_T)`: one input x (d,) and the weights of
# exercise 2, in the row-vector convention $\mathbf{z} = \mathbf{x}\mathbf{W}_H + \mathbf{b}_H$, $\mathbf{H} = \mathrm{ReLU}(\mathbf{z})$,
# $\mathbf{T} = \sigma(\mathbf{x}\mathbf{W}_T + \mathbf{b}_T)$, $\mathbf{y} = \mathbf{T}\odot\mathbf{H} + (1 - \mathbf{T})\odot\mathbf{x}$ → the (d, d) matrix J with
# **J[i, j] = ∂y_i/∂x_j**. Keep the input's dtype. Derive it by hand: the check refuses
# `torch.autograd`, `torch.func` and `.backward()`.
#
# Apply the product rule to $y_i = T_i H_i + (1 - T_i)\,x_i$ — every factor that depends on x
# contributes a term, and Eq. (5.3.5) keeps only two of them. Work out $\partial H_i/\partial x_j$ and
# $\partial T_i/\partial x_j$ entry by entry (which index of W meets $x_j$?), then assemble J (loops or
# broadcasting are both fine). Two sanity checks: with the gate shut ($b_T = -30$, T = 0) J is the
# identity, and with $W_T = 0$ the term you added to Eq. (5.3.5) vanishes.


# %% nbgrader={"grade": false, "grade_id": "ch08_highway_jacobian", "locked": false, "schema_version": 3, "solution": true} slideshow={"slide_type": "skip"}
def my_highway_jacobian(x, W_H, b_H, W_T, b_T):
    """x (d,), W_H (d, d), b_H (d,), W_T (d, d), b_T (d,) -> J (d, d), J[i, j] = dy_i / dx_j."""
    ### BEGIN SOLUTION
    z = x @ W_H + b_H  # (d,) pre-activation of H
    H = torch.relu(z)  # (d,)
    T = torch.sigmoid(x @ W_T + b_T)  # (d,)
    dH = (z > 0).to(x.dtype)[:, None] * W_H.T  # (d, d) dH_i/dx_j
    dT = (T * (1 - T))[:, None] * W_T.T  # (d, d) dT_i/dx_j
    return T[:, None] * dH + torch.diag(1 - T) + (H - x)[:, None] * dT
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch08_highway_jacobian_test", "locked": true, "points": 3, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"} tags=["raises-exception"]
from attncourse.exercises.ch08 import check_highway_jacobian

check_highway_jacobian(my_highway_jacobian)
### BEGIN HIDDEN TESTS
import importlib

import attncourse.exercises.ch08 as ex
import attncourse.exercises.engine as engine

engine = importlib.reload(engine)  # fresh copies: a patched check does not count
ex = importlib.reload(ex)
ex.check_highway_jacobian(my_highway_jacobian, seed=25)
### END HIDDEN TESTS

# %% [markdown] slideshow={"slide_type": "-"}
# The missing term is $\mathrm{diag}(\mathbf{H} - \mathbf{x})\,\partial\mathbf{T}/\partial\mathbf{x}$, with
# $\partial\mathbf{T}/\partial\mathbf{x} = \mathrm{diag}\big(\mathbf{T}(1 - \mathbf{T})\big)\mathbf{W}_T^\top$: it vanishes only where H = x or where the gate is
# saturated (appendix A.4 checks the full formula against autograd).
#
# **Choosing the gate bias.** Two different gradients are at stake. The gradient *through* the
# layer tends to I as T → 0 (pure carry). But a layer's gradient *for its own weights* carries a
# factor T, because y depends on $\mathbf{W}_H$ only through H·T:
# $\partial\mathcal{L}/\partial\mathbf{W}_H = \mathbf{x}^\top\big(g\odot\mathbf{T}\odot\mathbb{1}[\mathbf{z} > 0]\big)$ for an upstream gradient g. The table
# measures both on the running example's 50 layers at initialisation; the last column is the
# smallest, over the layers, of a layer's own gradient.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
print(
    f"{'gate bias':>9} {'mean T':>8} {'|g_0|/|g_50|':>13} {'cosine at h_50':>15} {'min_l |dL/dW_H|':>16}"
)
smallest = {}  # gate bias -> min over the 50 layers of |dL/dW_H|
for bias in (-10.0, -6.0, -4.0, -3.0, -2.0, 0.0, 2.0):
    s = ch08.layer_statistics("highway", L, gate_bias=bias)
    smallest[bias] = float(s.weight_gradient.min())
    print(
        f"{bias:9.0f} {float(s.gate_mean.mean()):8.4f} {float(s.gradient_norm[0] / s.gradient_norm[-1]):13.2g}"
        f" {round(float(s.cosine[-1]), 2) + 0.0:15.2f} {smallest[bias]:16.2g}"
    )
# the trade-off: the smallest W_H gradient peaks between the ends and falls on both sides
assert smallest[-4.0] > 10 * max(smallest[-10.0], smallest[0.0], smallest[2.0])

# %% [markdown] slideshow={"slide_type": "-"}
# Gate biases of −10 … −6 pass the gradient through all 50 layers and keep the inputs apart, but
# at −10 a layer's own gradient is about seventy times smaller than at −4: the layers barely
# learn. Gates in the middle (−2 … 0) make the stack a plain one again: the cosine goes to 1 and
# the gradient through it falls by a factor of about 70 (bias −2) to 20,000 (bias 0).
#
# > **⚠ The source says** gradients flow as long as the gate is not near 0 or 1. Both ends fail,
# > for different gradients: T ≈ 1 blocks the gradient *through* depth, T ≈ 0 blocks each
# > layer's *learning*. Start with a small but non-zero T: for this 50-layer stack a gate bias
# > near −4, the table's best; a shallower stack can start nearer −1 (Srivastava et al. suggest
# > −1 to −3).
#
# **Takeaway.** A gate lets each layer choose between transforming and carrying; its bias sets
# the starting point, which must be near the identity but not at it.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 4. Normalise every token: LayerNorm, RMSNorm, BatchNorm
#
# The He-scaled residual stack of section 2 exploded because every branch is as large as its
# input, and the input grows. Scaling the branches by $1/\sqrt{L}$ is one cure. The one every
# Transformer uses is to **normalise** what enters each branch, so that the branch sees
# unit-scale numbers whatever the size of the stream. **LayerNorm** does it for each token (each
# row of a (…, d) tensor) over its d features:
#
# $$\mu = \frac1d\sum_{i=1}^{d} x_i, \quad \sigma^2 = \frac1d\sum_{i=1}^{d}(x_i - \mu)^2, \quad
# \hat{x}_i = \frac{x_i - \mu}{\sqrt{\sigma^2 + \epsilon}}, \quad y_i = \gamma_i\,\hat{x}_i + \beta_i \qquad (5.3.7)$$
#
# The variance is the *biased* one (divided by d), ε (about 10⁻⁵) keeps a constant row finite,
# and the learnable affine parameters γ and β (one number per feature, initialised to 1 and 0)
# let the layer undo the normalization where that helps.
#
# > **Glossary** · layer normalization 层归一化 · RMS normalization 均方根归一化 ·
# > batch normalization 批归一化 · biased variance 有偏方差 · affine parameters γ, β 仿射参数 ·
# > running statistics 滑动统计量 · training / evaluation mode 训练 / 推理模式 · invariance 不变性 ·
# > orthogonal projection 正交投影

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 4 · LayerNorm from scratch
# **Difficulty** ●●○ · **Time** 8 min · **Points** 3 · **Practises** Eq. (5.3.7), reductions over
# the last dimension with `keepdim=True`, where ε goes
#
# Write `my_layer_norm(x, gamma, beta, eps=1e-5)`: x (..., d) with any number of leading
# dimensions, gamma and beta (d,) → the same shape as x, Eq. (5.3.7) over the **last**
# dimension, using the eps it is given. A constant row must give β, not NaN. Keep the input's
# dtype. Write it from plain tensor operations (`mean`, `var(unbiased=False)`, `sqrt`, `rsqrt`
# are fine); the check refuses `F.layer_norm`, `F.rms_norm`, `F.batch_norm`, `F.group_norm`, the
# `nn` norm layers and the course's `attncourse.norms`.


# %% nbgrader={"grade": false, "grade_id": "ch08_layer_norm", "locked": false, "schema_version": 3, "solution": true} slideshow={"slide_type": "skip"}
def my_layer_norm(x, gamma, beta, eps=1e-5):
    """x (..., d), gamma (d,), beta (d,) -> (..., d): LayerNorm over the last dimension."""
    ### BEGIN SOLUTION
    mu = x.mean(dim=-1, keepdim=True)  # (..., 1)
    var = ((x - mu) ** 2).mean(dim=-1, keepdim=True)  # (..., 1) biased: 1/d
    return (x - mu) / torch.sqrt(var + eps) * gamma + beta  # (..., d)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch08_layer_norm_test", "locked": true, "points": 3, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"} tags=["raises-exception"]
from attncourse.exercises.ch08 import check_layer_norm

check_layer_norm(my_layer_norm)
### BEGIN HIDDEN TESTS
import importlib

import attncourse.exercises.ch08 as ex
import attncourse.exercises.engine as engine

engine = importlib.reload(engine)  # fresh copies: a patched check does not count
ex = importlib.reload(ex)
ex.check_layer_norm(my_layer_norm, seed=21)
### END HIDDEN TESTS

# %% [markdown] slideshow={"slide_type": "-"}
# **RMSNorm** (Zhang & Sennrich 2019) drops the centring and β: it only divides each token by its
# root mean square, $y_i = \gamma_i\,x_i\,/\sqrt{\frac1d\sum_j x_j^2 + \epsilon}$ — less arithmetic, and in
# practice as good for Transformers (LLaMA uses it).

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 5 · RMSNorm
# **Difficulty** ●○○ · **Time** 4 min · **Points** 2 · **Practises** the root mean square over
# the last dimension, ε inside the root
#
# Write `my_rms_norm(x, gamma, eps=1e-6)`: x (..., d), gamma (d,) → $\gamma\,x/\sqrt{\frac1d\sum_j x_j^2 + \epsilon}$
# over the last dimension, using the eps it is given; no mean subtraction, no β. A zero row must
# give 0, not NaN. Keep the input's dtype; the same functions as in exercise 4 are refused.


# %% nbgrader={"grade": false, "grade_id": "ch08_rms_norm", "locked": false, "schema_version": 3, "solution": true} slideshow={"slide_type": "skip"}
def my_rms_norm(x, gamma, eps=1e-6):
    """x (..., d), gamma (d,) -> (..., d): x / sqrt(mean(x^2) + eps) * gamma over the last dimension."""
    ### BEGIN SOLUTION
    ms = (x * x).mean(dim=-1, keepdim=True)  # (..., 1) mean of squares
    return x / torch.sqrt(ms + eps) * gamma  # (..., d)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch08_rms_norm_test", "locked": true, "points": 2, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"} tags=["raises-exception"]
from attncourse.exercises.ch08 import check_rms_norm

check_rms_norm(my_rms_norm)
### BEGIN HIDDEN TESTS
import importlib

import attncourse.exercises.ch08 as ex
import attncourse.exercises.engine as engine

engine = importlib.reload(engine)  # fresh copies: a patched check does not count
ex = importlib.reload(ex)
ex.check_rms_norm(my_rms_norm, seed=22)
### END HIDDEN TESTS

# %% [markdown] slideshow={"slide_type": "-"}
# **BatchNorm** (Ioffe & Szegedy 2015), the norm of convolutional networks, takes its statistics
# along the other axis: for each channel (feature) c, over the N samples of the batch (and over
# the L positions of a sequence, if there are any),
#
# $$\mu^{(c)} = \frac{1}{N}\sum_{n=1}^{N} x_n^{(c)}, \qquad \sigma^{2(c)} = \frac{1}{N}\sum_{n=1}^{N}\big(x_n^{(c)} - \mu^{(c)}\big)^2 \qquad (5.3.8)$$
#
# then normalises and rescales as LayerNorm does. A sample's output therefore depends on the
# other samples in its batch.

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 6 · BatchNorm in training mode
# **Difficulty** ●○○ · **Time** 6 min · **Points** 2 · **Practises** Eq. (5.3.8), statistics
# over the batch axes, broadcasting a (C,) parameter
#
# Write `my_batch_norm_train(x, gamma, beta, eps=1e-5)`: x (N, C) or (N, C, L), gamma and beta
# (C,) → the same shape as x, each channel c normalised with the mean and the *biased* variance
# of all its values in the batch (over N, and over L when there is an L), using the eps it is
# given. Keep the input's dtype; the same functions as in exercise 4 are refused.


# %% nbgrader={"grade": false, "grade_id": "ch08_batch_norm", "locked": false, "schema_version": 3, "solution": true} slideshow={"slide_type": "skip"}
def my_batch_norm_train(x, gamma, beta, eps=1e-5):
    """x (N, C) or (N, C, L), gamma (C,), beta (C,) -> x's shape: training-mode BatchNorm."""
    ### BEGIN SOLUTION
    dims = (0, 2) if x.dim() == 3 else (0,)  # every dimension but the channels
    shape = (1, -1, 1) if x.dim() == 3 else (1, -1)  # (C,) broadcast against x
    mu = x.mean(dim=dims, keepdim=True)  # (1, C[, 1])
    var = ((x - mu) ** 2).mean(dim=dims, keepdim=True)  # (1, C[, 1]) biased
    return (x - mu) / torch.sqrt(var + eps) * gamma.view(shape) + beta.view(shape)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch08_batch_norm_test", "locked": true, "points": 2, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"} tags=["raises-exception"]
from attncourse.exercises.ch08 import check_batch_norm_train

check_batch_norm_train(my_batch_norm_train)
### BEGIN HIDDEN TESTS
import importlib

import attncourse.exercises.ch08 as ex
import attncourse.exercises.engine as engine

engine = importlib.reload(engine)  # fresh copies: a patched check does not count
ex = importlib.reload(ex)
ex.check_batch_norm_train(my_batch_norm_train, seed=23)
### END HIDDEN TESTS

# %% [markdown] slideshow={"slide_type": "-"}
# **A batch of one.** LayerNorm and RMSNorm normalise each token by itself: the same function for
# one sample as inside any batch, in training and in evaluation. BatchNorm in training has
# nothing to normalise a single vector against (each channel's one value *is* its mean), so it
# refuses; in evaluation it uses running averages of the training statistics — a different
# function from the one it trained with. (The course's `attncourse.norms` from here on.)

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
bn, ln = BatchNorm1d(8).double(), LayerNorm(8).double()
batch = torch.randn(32, 8, dtype=torch.float64) * 2 + 1
for _ in range(5):
    bn(batch[torch.randperm(32)[:16]])  # a few training batches update the running statistics
one = batch[:1]  # a batch of one sample, (1, 8)
try:
    bn(one)
except ValueError as error:
    print(
        "BatchNorm, training, batch of 1 -> ValueError:", str(error).split(": ")[1].split(" (")[0]
    )
print(
    "LayerNorm, one sample alone = the same sample in a batch of 32:",
    torch.allclose(ln(one), ln(batch)[:1]),
)
print(
    "LayerNorm: training mode = evaluation mode:", torch.equal(ln.train()(batch), ln.eval()(batch))
)
gap = (bn.train()(batch) - bn.eval()(batch)).abs().max()
print(f"BatchNorm: max |training - evaluation output| = {float(gap):.2f}")

# %% [markdown] slideshow={"slide_type": "-"}
# **What LayerNorm throws away.** Shifting a token by the same number in every feature, or
# scaling it, changes μ and σ but not $\hat{x}$. The source states it as $\mathrm{LN}(a\mathbf{x} + b) = \mathrm{LN}(\mathbf{x})$
# (Eq. 5.3.9).
#
# > **⚠ The source says** LN(ax + b) = LN(x). With $\mu_{ax+b} = a\mu + b$ and $\sigma_{ax+b} = |a|\sigma$, the
# > identity holds exactly for **a scalar a > 0 and a scalar b** at ε = 0 (with ε > 0, when
# > $a^2\sigma^2 \gg \epsilon$). A negative a flips the sign of $\hat{x}$ (the output becomes
# > $-\gamma\odot\hat{x} + \beta$); a per-feature a or b changes it.
# > RMSNorm keeps only the scale invariance, also only for a > 0: RMSNorm(−x) = −RMSNorm(x).

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
x16 = torch.randn(64, 16, generator=torch.Generator().manual_seed(3), dtype=torch.float64) * 2 + 1
ln0, rms0 = LayerNorm(16, eps=0.0).double(), RMSNorm(16, eps=0.0).double()
per_feature = torch.linspace(-1, 1, 16, dtype=torch.float64)
transforms = {
    "3x": 3 * x16,
    "3x - 2": 3 * x16 - 2,
    "-3x": -3 * x16,
    "x + per-feature b": x16 + per_feature,
}
print(f"{'max |N(z) - N(x)|, eps = 0':28s} {'LayerNorm':>10} {'RMSNorm':>10}")
for name, z in transforms.items():
    diffs = [float((norm(z) - norm(x16)).abs().max()) for norm in (ln0, rms0)]
    print(
        f"z = {name:24s}"
        + "".join(f"{'0 (< 1e-9)' if v < 1e-9 else f'{v:.2f}':>11}" for v in diffs)
    )
print("RMSNorm(-x) = -RMSNorm(x):", torch.allclose(rms0(-x16), -rms0(x16)))

# %% [markdown] slideshow={"slide_type": "-"}
# **The gradient through LayerNorm** inherits the same blindness. Write $s = \sqrt{\sigma^2 + \epsilon}$, so
# $\hat{\mathbf{x}} = (\mathbf{x} - \mu)/s$. The mean moves with every $x_j$, so $\partial(\mathbf{x} - \mu)/\partial\mathbf{x} = \mathbf{I} - \frac1d\mathbf{1}\mathbf{1}^\top$; and
# $\partial s/\partial x_j = (x_j - \mu)/(d\,s) = \hat{x}_j/d$. The quotient rule gives
# $\partial\hat{\mathbf{x}}/\partial\mathbf{x} = \frac1s\big(\mathbf{I} - \frac1d\mathbf{1}\mathbf{1}^\top\big) - \frac{1}{s^2}(\mathbf{x} - \mu)\,\frac{\hat{\mathbf{x}}^\top}{d}$, and with γ,
#
# $$J_{\mathrm{LN}} = \frac{\partial\mathbf{y}}{\partial\mathbf{x}} = \frac{1}{s}\,\mathrm{diag}(\gamma)\Big(\mathbf{I} - \frac1d\mathbf{1}\mathbf{1}^\top - \frac1d\hat{\mathbf{x}}\hat{\mathbf{x}}^\top\Big).$$
#
# At ε = 0, $\lVert\hat{\mathbf{x}}\rVert^2 = d$ and $\hat{\mathbf{x}} \perp \mathbf{1}$, so the bracket P is the orthogonal **projection** that removes
# the directions of 1 (a shift) and of $\hat{\mathbf{x}}$ (a scaling): $J_{\mathrm{LN}}$ is a projection followed by a
# scale by $\gamma/\sigma$. The gradient through LayerNorm loses the two directions its output
# ignores, and is divided by σ (chapter 09 builds on this). With ε > 0 it is only nearly a
# projection: $\lVert\hat{\mathbf{x}}\rVert^2 = d\,c$ with $c = \sigma^2/(\sigma^2 + \epsilon) < 1$, so P multiplies the $\hat{\mathbf{x}}$ direction
# by 1 − c instead of removing it, and $\lVert P^2 - P\rVert_2 = c(1 - c)$ — negligible for $\sigma^2 \gg \epsilon$.


# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
def ln_jacobian_formula(x, gamma, eps):
    """(1/s) diag(gamma) (I - 11^T/d - x_hat x_hat^T/d) for one token x (d,)."""
    d = x.shape[0]
    s = torch.sqrt(((x - x.mean()) ** 2).mean() + eps)
    x_hat = (x - x.mean()) / s  # (d,)
    P = (
        torch.eye(d, dtype=x.dtype)
        - torch.ones(d, d, dtype=x.dtype) / d
        - torch.outer(x_hat, x_hat) / d
    )
    return torch.diag(gamma) @ P / s, P


token = torch.randn(8, generator=torch.Generator().manual_seed(4), dtype=torch.float64) * 0.3 + 1
for eps in (0.0, 1e-2):
    norm = LayerNorm(8, eps=eps).double()
    with torch.no_grad():
        norm.weight.uniform_(0.5, 1.5)
    J_ln, P = ln_jacobian_formula(token, norm.weight.detach(), eps)
    c = float(token.var(unbiased=False) / (token.var(unbiased=False) + eps))
    print(
        f"eps = {eps:g}: formula = autograd: {torch.allclose(J_ln, jacobian(norm, token))};"
        f"  |J 1| < 1e-12: {bool((J_ln @ torch.ones(8, dtype=torch.float64)).norm() < 1e-12)};"
        f"  |P x_hat| / |x_hat| = {float((P @ (token - token.mean())).norm() / (token - token.mean()).norm()):.3f} (1 - c = {1 - c:.3f});"
        f"  |P^2 - P| = {float(torch.linalg.matrix_norm(P @ P - P, ord=2)):.3f} (c(1 - c) = {c * (1 - c):.3f})"
    )

# %% [markdown] slideshow={"slide_type": "-"}
# Back to the running example, now with a LayerNorm at the input of every branch. For the
# He-scaled residual stack the branches no longer grow with the stream, so each adds a constant
# amount: the activations grow like $\sqrt{l}$ instead of $2^{l/2}$, and the gradient stays within
# a small factor. A *plain* stack with LayerNorm keeps a healthy forward signal, but its
# backward pass explodes: normalization does not replace the identity path (for BatchNorm in
# plain networks this is the result of Yang et al. 2019).

# %% slideshow={"slide_type": "-"}
# NBVAL_IGNORE_OUTPUT
print(f"{'depth 50':28s} {'RMS h_50':>9} {'|g_0|/|g_50|':>13} {'cosine at h_50':>15}")
normed = {}
for kind, norm in (("residual", "none"), ("residual", "layer"), ("plain", "layer")):
    s = normed[kind, norm] = ch08.layer_statistics(kind, L, norm=norm)
    print(
        f"{kind + (' + LayerNorm' if norm == 'layer' else ' (He)'):28s} {float(s.activation_rms[-1]):9.2g}"
        f" {float(s.gradient_norm[0] / s.gradient_norm[-1]):13.2g} {float(s.cosine[-1]):15.2f}"
    )
ratio = {key: float(s.gradient_norm[0] / s.gradient_norm[-1]) for key, s in normed.items()}
assert ratio["residual", "none"] > 1e5 and ratio["residual", "layer"] < 20  # tamed by LayerNorm
assert ratio["plain", "layer"] > 1e3 and float(normed["plain", "layer"].cosine[-1]) < 0.9

# %% [markdown] slideshow={"slide_type": "-"}
# **Play with it.** The three panels of section 1 for any stack: the **layer** kind, the
# **depth** (1–100), a **norm** at the input of every branch (none, LayerNorm, RMSNorm,
# BatchNorm), the highway **gate bias**, and, for residual stacks, the 1/√depth branch scale.
# Every change builds a fresh stack and runs one forward and backward pass. Try:
# 1. plain, depth 1 → 100: the cosine climbs to 1.
# 2. residual without the 1/√depth box: activations and gradients explode (the log axes clip at
#    10¹²; the numbers above the figure are exact). Tick the box, or choose LayerNorm: bounded.
# 3. highway at depth 50, gate bias from −10 to +2: watch the stack turn into a plain one.
# 4. plain with LayerNorm or BatchNorm: a tame forward signal, an exploding gradient.

# %% slideshow={"slide_type": "slide"}
# NBVAL_IGNORE_OUTPUT
ch08.depth_widget(kind="residual", depth=50, norm="layer")

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Takeaway.** LayerNorm and RMSNorm normalise each token by itself, so they work for a batch
# of one and in both modes; they discard a token's shift and scale, in the output and in the
# gradient, and on a residual stream they keep every branch at unit scale.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 5. Depth, trained: Srivastava et al. (2015)
#
# Srivastava et al. trained plain and highway networks of 10 to 100 layers on MNIST (their
# Fig. 1): plain networks stopped training at 50–100 layers; highway networks of 100 layers
# trained as well as shallow ones.
#
# **The CPU version** (`ch08.depth_experiment`, about 15 s on 2 cores). A teacher task: 2000 points
# $x \sim N(0, I_{20})$, 10 classes from a random tanh teacher, keeping the points farthest from its
# decision boundaries, so that depth, not difficulty, decides. Plain layers (He), residual layers
# (branches He × 1/√L) and highway layers (gate bias −6), at depth 10 and 100, with about the same
# number of weights per layer. SGD with momentum 0.9, batch 200, 150 steps; for each network the
# best final training loss over four learning rates. The test suite repeats it with seed 1.
#
# **Expected**: highway-100 ≤ 0.1; plain-100 at least 10 × highway-100 and at least 5 × plain-10;
# residual-100 ≤ 0.1.
#
# > **Glossary** · training loss 训练损失 · learning rate 学习率 · momentum 动量 ·
# > teacher network 教师网络

# %% slideshow={"slide_type": "-"}
# NBVAL_IGNORE_OUTPUT
results = ch08.depth_experiment(
    kinds=("plain", "residual", "highway"), depths=(10, 100), seeds=(0,)
)
print(
    f"{'network':14s} {'width':>5} "
    + " ".join(f"lr={lr:<5}" for lr in results["plain", 10].lrs)
    + "   best"
)
for (kind, depth), r in results.items():
    cells = " ".join(f"{v:8.3f}" for v in r.final_loss[0].tolist())
    print(
        f"{kind + '-' + str(depth):14s} {r.width:5d} {cells}   {float(r.best[0]):.4f} (lr {r.best_lr[0]})"
    )

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
best = {key: float(r.best[0]) for key, r in results.items()}
_, labels = ch08.teacher_task()
frequency = torch.bincount(labels).double() / len(labels)
print(
    f"loss of predicting the class frequencies (label entropy): {float(-(frequency * frequency.log()).sum()):.2f}"
)
criteria = {
    "highway-100 <= 0.1": best["highway", 100] <= 0.1,
    "plain-100 >= 10 x highway-100": best["plain", 100] >= 10 * best["highway", 100],
    "plain-100 >= 5 x plain-10": best["plain", 100] >= 5 * best["plain", 10],
    "residual-100 <= 0.1": best["residual", 100] <= 0.1,
}
for name, ok in criteria.items():
    print(f"{name:32s} {ok}")
assert all(criteria.values()), "the depth effect of Srivastava et al. (2015) did not appear"

# %% slideshow={"slide_type": "subslide"}
fig, axes = plt.subplots(1, 2, figsize=(10, 3), sharey=True)
for ax, depth in zip(axes, (10, 100)):
    for kind, color in (("plain", "tab:red"), ("residual", "tab:green"), ("highway", "tab:blue")):
        r = results[kind, depth]
        j = int(r.final_loss[0].argmin())
        ax.semilogy(r.curves[:, 0, j], color=color, label=f"{kind} (lr {r.lrs[j]})")
    ax.set(title=f"depth {depth}", xlabel="step", ylim=(1e-3, 5))
    ax.legend(fontsize=8)
axes[0].set_ylabel("minibatch loss")
plt.tight_layout()
plt.show()

# %% [markdown] slideshow={"slide_type": "-"}
# The plain 100-layer network is left far behind: its best loss is many times that of the
# 10-layer plain network and of both 100-layer networks with an identity path. Depending on the
# seed it gets part of the way below the loss of predicting the class frequencies or stays on
# it — it learns a little, or nothing. Section 1 showed why: the plain stack maps all inputs to
# nearly one direction; the other two start near the identity, every input still distinct.
#
# **Takeaway.** With an identity path — fixed (residual) or gated (highway), its branches started
# small — depth stops being an obstacle to training; without one, a 100-layer network barely
# trains.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Summary
#
# - A deep **plain** ReLU stack at He initialisation keeps its signal's size on average but
#   **collapses** its inputs to one direction.
# - A **residual** block has Jacobian **I + ∂F/∂x** (Eq. 5.3.2): an identity path for the
#   gradient, bounded by (1 ± ‖J‖₂)‖g‖ — branches must start small, or the stack explodes. In
#   attention stacks it also keeps the tokens from collapsing into one vector.
# - A **highway** layer mixes transform and input with a learned gate; its Jacobian has a gate
#   term that Eq. (5.3.5) omits. A negative gate bias starts it near the identity — near, not at.
# - **LayerNorm** normalises each token, **RMSNorm** only its scale, **BatchNorm** each channel
#   over the batch. LN(ax + b) = LN(x) needs a scalar a > 0 and a scalar b; LayerNorm's Jacobian
#   projects out the shift and scale directions and divides by σ.
# - Srivastava et al.'s depth effect, reproduced: at 100 layers the plain network barely trains,
#   the highway and residual networks still train to a loss near zero (at most 0.1, against 1.86
#   for predicting the class frequencies), as at 10 layers.

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Check yourself**
#
# 1. A residual block's branch is F(x) = −x/2. By what factor does it change the gradient
#    passing through it? And for F(x) = −x?
# 2. Why does a 50-block residual stack with He-initialised branches explode, and what are two
#    ways to prevent it?
# 3. A highway stack is initialised with gate bias −30. What happens when you train it?
# 4. You must train with batches of one vector (shape (1, d)). Which of LayerNorm, RMSNorm and
#    BatchNorm can you use in training mode, and why?
# 5. For which a does RMSNorm(a·x) = RMSNorm(x) hold?
#
# <details><summary>Answers</summary>
#
# 1. The block's Jacobian is I − I/2 = I/2, so every gradient is halved (factor 0.5, exactly).
#    For F(x) = −x it is I − I = 0: no gradient passes, because the block maps every input to 0.
# 2. A He-initialised branch is about as large as its input, so each block roughly doubles the
#    mean square of the activations and of the gradient: about $2^{50}$ over 50 blocks ($2^{25}$
#    in norm). Scale the branches down at initialisation (by 1/√L, or start their last layer at
#    zero), or normalise each branch's input (LayerNorm).
# 3. σ(−30) ≈ 10⁻¹³: every layer is the identity to within round-off. The gradient passes through
#    untouched, but each layer's own gradients carry the factor T or T(1 − T), about 10⁻¹³: the
#    layers cannot learn, only the input projection and the read-out train — a linear model.
# 4. LayerNorm and RMSNorm: they normalise each vector over its own features. BatchNorm in
#    training normalises each channel over the batch; with one vector each channel's single value
#    is its own mean, so x − μ = 0 (PyTorch and the course's BatchNorm refuse it).
# 5. For every a > 0: exactly at ε = 0, approximately when a²·mean(x²) ≫ ε. A negative a flips
#    the sign, RMSNorm(a·x) = −RMSNorm(x); a = 0 gives 0 (for ε > 0; at ε = 0 it is 0/0).
# </details>
#
# **Next — chapter 09, Pre-LN vs Post-LN stability**: where the LayerNorm goes in a Transformer
# block (Eq. 5.3.10 vs 5.3.11) decides how the gradient at initialisation is spread across depth,
# whether a learning-rate warm-up is needed, and how DeepNorm makes Post-LN trainable.

# %% [markdown] slideshow={"slide_type": "skip"}
# ## Appendix · The source, checked
#
# Source 004, §5.3.1–5.3.4 and source 000, §14.3.5 (Lemma 14.3.17–14.3.18, Thm. 14.3.10–14.3.11,
# Cor. 14.3.5, Def. 14.3.13, Eq. 14.3.31–14.3.35, Application 14.3.4) state the ideas above as
# equations and claims. This appendix checks each one numerically. Marks: **✓ holds** · **⚠ holds
# only under a condition** (stated) · **✗ wrong as printed** (with a counterexample and the correct
# statement) · **—** not checked (an interpretation, or measured in another chapter). Where to
# put the LayerNorm in a Transformer block (§5.3.5, Post-LN vs Pre-LN) is chapter 09's. A few terms
# (mutual information, the data-processing inequality, Lipschitz constants) are used here and
# defined where they appear; the main path does not need them.
#
# ### A.1 The residual block and its gradient (Eq. 5.3.1–5.3.2)
#
# **Claim check — Eq. (5.3.1)–(5.3.2) ✓.** The package's `Residual` computes x + F(x), and its
# Jacobian is I + ∂F/∂x (below; section 2 also checks the product over a 50-block stack against
# autograd).
#
# **Claim check — "the gradient keeps at least the size of ∂L/∂x_{l+1}" ✗.** The source (004
# §5.3.1) concludes from (5.3.2) that even when ∂F/∂x is close to zero, "thanks to I the gradient
# ∂L/∂x_l stays at least as large as ∂L/∂x_{l+1}", and that the gradient passes "losslessly". For a
# row vector g and $J = \partial\mathcal{F}/\partial\mathbf{x}$ the correct statement is
# $(1 - \lVert J\rVert_2)\lVert g\rVert \le \lVert g(\mathbf{I} + J)\rVert \le (1 + \lVert J\rVert_2)\lVert g\rVert$: nearly preserved when the
# branch is small, and nothing more (F = −x gives 0). Checked below on 20,000 random (g, J) pairs
# with ‖J‖₂ anywhere in (0, 2); in about a quarter of them the gradient shrinks.

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
from attncourse.blocks import Residual

F_branch = nn.Sequential(nn.Linear(4, 4), nn.Tanh()).double()
x = torch.randn(4, dtype=torch.float64)
J = jacobian(Residual(F_branch), x)  # (4, 4), J[i, j] = dy_i / dx_j
print(
    "Jacobian of x + F(x) equals I + dF/dx:",
    torch.allclose(J, torch.eye(4, dtype=torch.float64) + jacobian(F_branch, x)),
)

g = torch.Generator().manual_seed(1)
d = 6
Js = torch.randn(20_000, d, d, generator=g, dtype=torch.float64)
Js = (
    Js
    / torch.linalg.matrix_norm(Js, ord=2)[:, None, None]
    * 2
    * torch.rand(20_000, 1, 1, generator=g, dtype=torch.float64)
)
gs = torch.randn(20_000, 1, d, generator=g, dtype=torch.float64)
spectral = torch.linalg.matrix_norm(Js, ord=2)  # (20000,)
ratio = (gs @ (torch.eye(d, dtype=torch.float64) + Js)).norm(dim=(1, 2)) / gs.norm(dim=(1, 2))
print("lower bound (1 - |J|) held in every draw:", bool((ratio >= 1 - spectral - 1e-12).all()))
print("upper bound (1 + |J|) held in every draw:", bool((ratio <= 1 + spectral + 1e-12).all()))
print(f"draws where the gradient shrank (ratio < 1): {float((ratio < 1).double().mean()):.0%}")

# %% [markdown] slideshow={"slide_type": "skip"}
# ### A.2 In attention layers (§5.3.1)
#
# **Claim check — "in attention layers the residual carries the input even when attention's
# gradient is small" ✓** (with A.1's caveat), measured in section 2 on 12 self-attention layers
# (`ch08.attention_stack`, float64): with the residual, the gradient reaches the input at about its
# full size and the tokens stay as distinct as they came in, for s = 1 and s = 0.01 alike. Without
# it the gradient vanishes — already at s = 1 — and the tokens collapse into one vector (Dong,
# Cordonnier & Loukas 2021: pure attention loses rank doubly exponentially with depth; the skip
# connection is what stops it). The asserts below hold section 2's numbers to that reading.
# A branch that cancels its input can still remove the gradient: the identity path guarantees a
# term of size 1, nothing more.

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
for s_branch in (1.0, 0.01):
    with_residual, without = attention[True, s_branch], attention[False, s_branch]
    assert 0.5 < with_residual.gradient_ratio < 2 and with_residual.spread_out > 0.5
    assert without.gradient_ratio < 1e-6 and without.spread_out < 1e-9
print("with the residual: gradient ratio in (0.5, 2), spread > 0.5; without: < 1e-6 and < 1e-9")

# %% [markdown] slideshow={"slide_type": "skip"}
# ### A.3 Feature reuse, the identity in function space, and near-identity targets (§5.3.1)
#
# Unrolling (5.3.1) gives $\mathbf{x}_L = \mathbf{x}_0 + \sum_{l<L}\mathcal{F}(\mathbf{x}_l)$: the input is still *in* the last
# layer's representation. The source concludes that low-level features are reused by later
# layers. One measurable version: **how much of the first layer's representation $h_0$ can a
# linear map recover from $h_l$** (R² of a least-squares fit, 512 inputs)? And with $\mathcal{F} = 0$ a
# residual block *is* the identity, while a plain block ReLU(xW + b) of the same width cannot be:
# its output is never negative.
#
# > **Glossary** · feature reuse 特征重用 · representation 表示 · least squares 最小二乘 ·
# > coefficient of determination R² 决定系数 · function space 函数空间


# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
def linear_recovery(states, target):
    """R² of the least-squares fit target ≈ h A + c, for each h in states: a list of numbers in [0, 1]."""
    y = target.double() - target.double().mean(0)  # (N, width) centred
    r2 = []
    for h in states:
        u, s, _ = torch.linalg.svd(
            h.double() - h.double().mean(0), full_matrices=False
        )  # (N, width), (width,)
        u = u[:, s > 1e-10 * s.max()]  # an orthonormal basis of the centred column space
        r2.append(float((u.T @ y).pow(2).sum() / y.pow(2).sum()))  # |projection of y|² / |y|²
    return r2


inputs = torch.randn(512, 20, generator=torch.Generator().manual_seed(5))  # (N, d_in)
recovery_stacks = {
    "plain": ch08.DeepStack("plain", L, 32),
    "residual (1/sqrt L)": ch08.DeepStack("residual", L, 32, branch_scale=1 / math.sqrt(L)),
    "highway": ch08.DeepStack("highway", L, 32),
}
shown = (0, 5, 10, 25, 50)
print(f"{'R² of h_0 from h_l':22s}", "  ".join(f"l={layer:<3d}" for layer in shown))
for name, stack in recovery_stacks.items():
    with torch.no_grad():
        _, states, _ = stack(inputs, hidden=True)  # L + 1 tensors (1, N, 32)
    r2 = linear_recovery([states[layer][0] for layer in shown], states[0][0])
    print(f"{name:22s}", "  ".join(f"{v:5.2f}" for v in r2))

zero_branch = nn.Sequential(nn.ReLU(), nn.Linear(32, 32))
nn.init.zeros_(zero_branch[1].weight)
nn.init.zeros_(zero_branch[1].bias)
h = torch.randn(8, 32)
print(
    "residual block with a zero branch is the identity:", torch.equal(Residual(zero_branch)(h), h)
)
print(
    "a ReLU layer's output is never negative, so never equals an input with negative entries:",
    bool((torch.relu(nn.Linear(32, 32)(h)) >= 0).all()),
)

# %% [markdown] slideshow={"slide_type": "skip"}
# **Claim check — feature reuse ✓ (measured), identity in the function space ✓.** The plain
# stack loses the linear trace of its first layer within a few layers; the residual and highway
# stacks keep it to the end. (R² measures *linear* recoverability; the information-theoretic
# version, and where it fails, is A.11.)
#
# **"A near-identity target is much easier to learn as a residual."** The source's last argument
# for (5.3.1): if the wanted map $\mathcal{H}^*$ is close to the identity, learning $\mathcal{F}^* = \mathcal{H}^* - \mathbf{x}$ is much
# easier than learning $\mathcal{H}^*$. Measured with one network G (16 → 64 → 16, ReLU, PyTorch's default
# initialisation), trained as G(x) (plain) and as x + G(x) (residual), full-batch Adam (lr 0.01)
# for 200 steps on 256 points, on two targets that are equally simple:
#
# - **near** the identity: $\mathcal{H}^*(\mathbf{x}) = \mathbf{x} + 0.1\tanh(2\mathbf{x}A)$;
# - its **mirror** image, far from the identity: $\mathcal{H}^*(\mathbf{x}) = -\mathbf{x} + 0.1\tanh(2\mathbf{x}A)$.
#
# The error is relative (MSE / variance of the target: 1 = no better than predicting the mean);
# two seeds; the outcome of training, so the numbers move a little from CPU to CPU and the cell
# asserts the effect with margins.

# %% slideshow={"slide_type": "skip"}
# NBVAL_IGNORE_OUTPUT
from tqdm.auto import tqdm

fits = {
    (target, residual, seed): ch08.near_identity_fit(target, residual, seed=seed)
    for target, residual, seed in tqdm(
        [(t, r, s) for t in ("near", "mirror") for r in (True, False) for s in (0, 1)], desc="fits"
    )
}  # (200,) relative error before each step


def steps_to(errors, level=1e-2):
    """The first step whose relative error is below ``level`` (len(errors) if none is)."""
    below = (errors < level).nonzero()
    return int(below[0]) if len(below) else len(errors)


print(f"{'target':7s} {'model':9s} {'seed':>4} {'start':>7} {'steps to 1 %':>13} {'after 200':>10}")
for (target, residual, seed), e in fits.items():
    print(
        f"{target:7s} {'x + G(x)' if residual else 'G(x)':9s} {seed:4d} {float(e[0]):7.3f} "
        f"{steps_to(e):13d} {float(e[-1]):10.1e}"
    )
for seed in (0, 1):
    near_res, near_plain = fits["near", True, seed], fits["near", False, seed]
    mirror_res, mirror_plain = fits["mirror", True, seed], fits["mirror", False, seed]
    assert 4 * steps_to(near_res) <= steps_to(near_plain) and near_res[-1] < near_plain[-1] / 2
    assert mirror_res[-1] > 2 * mirror_plain[-1]  # far from the identity the residual form hurts

# %% [markdown] slideshow={"slide_type": "skip"}
# **Claim check — "a near-identity target is much easier to learn as a residual" ⚠ (true for
# targets near the identity, and only for them).** On the near target the residual network starts
# close (x + G(x) with a small G is already near x), reaches 1 % error in a small fraction of the
# plain network's steps and ends several times lower. On the mirror target the same residual form
# *hurts*: x + G(x) must learn G = −2x + …, starts worse than predicting the mean, and stays behind
# the plain network, which does not care which of the two targets it gets. The identity path is a
# prior — "the layer probably changes its input only a little" — that pays when it is true, as it
# is for most blocks of a deep stack, which is why residual branches start small (section 2).
#
# ### A.4 Highway layers (Eq. 5.3.3–5.3.5)
#
# **Claim check — Eq. (5.3.3)–(5.3.4) ✓** (the package's `Highway` is tested against the formula),
# and the two limits T → 0 (identity) and T → 1 (plain layer) as the source says. Note that
# (5.3.3) with an *untied* carry gate C is not a convex mixture: with C ≈ 1 and T ≈ 1 the layer
# returns x + H, a residual block; tying C = 1 − T makes T the only knob.

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
x6 = torch.randn(5, 6)
hw = Highway(6, gate_bias=-30.0)
copies = torch.allclose(hw(x6), x6, atol=1e-6)
print("gate bias -30 (T = 0): the layer copies its input:", copies)
hw = Highway(6, gate_bias=30.0)
plain_layer = torch.allclose(hw(x6), hw.transform(x6), atol=1e-6)
print("gate bias +30 (T = 1): the layer is the plain layer H:", plain_layer)
assert copies and plain_layer

# %% [markdown] slideshow={"slide_type": "skip"}
# **Claim check — Eq. (5.3.5) ✗ (a term is missing).** The source differentiates
# $\mathbf{y} = \mathbf{H}(\mathbf{x})\,\mathbf{g} + \mathbf{x}(1 - \mathbf{g})$ treating the gate $\mathbf{g} = \mathbf{T}(\mathbf{x})$ as a constant. By the
# product rule the full Jacobian is
#
# $$\frac{\partial\mathbf{y}}{\partial\mathbf{x}} = \mathrm{diag}(\mathbf{T})\,\frac{\partial\mathbf{H}}{\partial\mathbf{x}} + \mathrm{diag}(1 - \mathbf{T}) + \mathrm{diag}(\mathbf{H} - \mathbf{x})\,\frac{\partial\mathbf{T}}{\partial\mathbf{x}},
# \qquad \frac{\partial\mathbf{T}}{\partial\mathbf{x}} = \mathrm{diag}\big(\mathbf{T}(1 - \mathbf{T})\big)\,\mathbf{W}_T^\top$$
#
# (for $\mathbf{T} = \sigma(\mathbf{x}\mathbf{W}_T + \mathbf{b}_T)$), checked against autograd on one layer.

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
hw = Highway(4, transform=nn.Sequential(nn.Linear(4, 4), nn.Tanh()), gate_bias=0.0).double()
with torch.no_grad():
    T, H = hw.transform_gate(x4), hw.transform(x4)  # (4,), (4,)
dH, dT = jacobian(hw.transform, x4), jacobian(hw.transform_gate, x4)  # (4, 4) each
printed = torch.diag(T) @ dH + torch.diag(1 - T)  # Eq. (5.3.5) as printed
full = printed + torch.diag(H - x4) @ dT  # + (H - x) dT/dx
J = jacobian(hw, x4)  # autograd, the ground truth
print(f"max |J - Eq. (5.3.5) as printed| = {float((J - printed).abs().max()):.3f}")
print(f"max |J - full Jacobian|          < 1e-12: {bool((J - full).abs().max() < 1e-12)}")
assert torch.allclose(J, full) and (J - printed).abs().max() > 1e-2

# %% [markdown] slideshow={"slide_type": "skip"}
# **Claim check — "gradients flow as long as g is not near 0 or 1" ⚠.** Section 3's table: the
# gradient *through* the layer tends to I as T → 0, while the gradients of the layer's own
# parameters carry a factor T. With an upstream gradient g (row vector) and $\mathbf{z} = \mathbf{x}\mathbf{W}_H + \mathbf{b}_H$,
#
# $$\frac{\partial \mathcal{L}}{\partial \mathbf{W}_H} = \mathbf{x}^\top\Big(g \odot \mathbf{T} \odot \mathbb{1}[\mathbf{z} > 0]\Big), \qquad
# \frac{\partial \mathcal{L}}{\partial \mathbf{b}_T} = g \odot (\mathbf{H} - \mathbf{x}) \odot \mathbf{T}(1 - \mathbf{T}).$$
#
# The cell checks both formulas against autograd on one layer, with the same weights at four gate
# biases, and prints, for the same gate biases, the smallest per-layer gate-bias
# gradient $|\partial\mathcal{L}/\partial\mathbf{b}_T|$ in section 3's 50-layer stack. **Correct statement**: start with a small but non-zero
# T (for this 50-layer stack a gate bias near −4; a shallower stack can start nearer −1);
# neither end is safe.

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
x6 = torch.randn(5, 6, generator=torch.Generator().manual_seed(12), dtype=torch.float64)
up6 = torch.randn(5, 6, generator=torch.Generator().manual_seed(13), dtype=torch.float64)  # dL/dy
print(
    f"{'gate bias':>9} {'mean T':>8} {'|dL/dW_H|':>10} {'|dL/db_T|':>10}  formulas = autograd  {'min_l |dL/db_T| (depth 50)':>27}"
)
for bias in (-10.0, -6.0, -2.0, 0.0):
    torch.manual_seed(14)  # the same W_H, b_H, W_T at every gate bias
    hw = Highway(6, gate_bias=bias).double()
    dW_H, db_T = torch.autograd.grad(hw(x6), (hw.transform[0].weight, hw.gate.bias), up6)
    with torch.no_grad():
        T, z = hw.transform_gate(x6), hw.transform[0](x6)  # (5, 6) each
        H = torch.relu(z)  # (5, 6)
        formula_W_H = (up6 * T * (z > 0)).T @ x6  # (6, 6), stored (out, in) like nn.Linear
        formula_b_T = (up6 * (H - x6) * T * (1 - T)).sum(0)  # (6,)
    ok = torch.allclose(dW_H, formula_W_H) and torch.allclose(db_T, formula_b_T)
    in_stack = float(ch08.layer_statistics("highway", L, gate_bias=bias).gate_bias_gradient.min())
    print(
        f"{bias:9.0f} {float(T.mean()):8.1e} {float(dW_H.norm()):10.1e} {float(db_T.norm()):10.1e}  {str(ok):19s} {in_stack:27.2g}"
    )
    assert ok

# %% [markdown] slideshow={"slide_type": "skip"}
# ### A.5 "Highway is a simplified LSTM" (§5.3.2)
#
# The source calls a highway layer a simplified LSTM unrolled into a feed-forward network. An LSTM
# cell updates its state as $\mathbf{c}_t = \mathbf{f}_t\odot\mathbf{c}_{t-1} + \mathbf{i}_t\odot\mathbf{g}_t$ and outputs
# $\mathbf{h}_t = \mathbf{o}_t\odot\tanh(\mathbf{c}_t)$, with forget, input and output gates f, i, o and candidate
# $\mathbf{g}_t = \tanh(\cdot)$, all computed from the input $\mathbf{x}_t$ and $\mathbf{h}_{t-1}$. Below, PyTorch's
# `nn.LSTMCell` is fed the highway layer's input x as its input, with $\mathbf{h}_{t-1} = 0$ and
# $\mathbf{c}_{t-1} = \mathbf{x}$.

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
torch.manual_seed(15)
cell = nn.LSTMCell(6, 6).double()  # weights stacked in PyTorch's gate order: i, f, g, o
zeros = torch.zeros(5, 6, dtype=torch.float64)
with torch.no_grad():
    W_i, W_f, W_g, _ = cell.weight_ih.clone().chunk(4)  # (6, 6) each, used as x @ W.T
    b_i, b_f, b_g, _ = (cell.bias_ih + cell.bias_hh).chunk(4)  # (6,) each (h_{t-1} = 0)
    _, c_t = cell(x6, (zeros, x6))  # input x, h_{t-1} = 0, c_{t-1} = x
    T, C = torch.sigmoid(x6 @ W_i.T + b_i), torch.sigmoid(x6 @ W_f.T + b_f)  # input, forget gates
    H = torch.tanh(x6 @ W_g.T + b_g)  # the candidate
    untied = torch.allclose(c_t, H * T + x6 * C)
    print("c_t = H·T + x·C, Eq. (5.3.3) with T = input gate, C = forget gate:", untied)
    cell.weight_ih[6:12] = -W_i  # couple the gates: forget = sigmoid(-(...)) = 1 - input
    cell.bias_ih[6:12], cell.bias_hh[6:12] = -b_i, 0.0
    _, c_tied = cell(x6, (zeros, x6))
    hw = Highway(6, transform=nn.Sequential(nn.Linear(6, 6), nn.Tanh())).double()
    hw.transform[0].weight.copy_(W_g)
    hw.transform[0].bias.copy_(b_g)
    hw.gate.weight.copy_(W_i)
    hw.gate.bias.copy_(b_i)
    tied = torch.allclose(c_tied, hw(x6))
    print("with forget = 1 - input: c_t = Highway(x), Eq. (5.3.4):", tied)
assert untied and tied

# %% [markdown] slideshow={"slide_type": "skip"}
# **Claim check — "Highway is a simplified LSTM" ⚠ (true of the gating, stated precisely).** One
# highway layer is one LSTM *cell-state* update: layer l ↔ time step t, the carried x ↔ the cell
# state $\mathbf{c}_{t-1}$, transform gate T ↔ input gate i, carry gate C ↔ forget gate f, H ↔ the
# candidate g; the tied form (5.3.4) is an LSTM with coupled input and forget gates (the "CIFG"
# variant of Greff et al. 2017). A GRU's update $\mathbf{h} \leftarrow \mathbf{z}\odot\mathbf{h} + (1 - \mathbf{z})\odot\tilde{\mathbf{h}}$ has the tied
# form directly. What the highway layer leaves out or changes: there is no output gate and no tanh
# on the state (the state itself is passed on, not $\mathbf{o}\odot\tanh(\mathbf{c})$); its gates read the
# carried state, not a fresh input $\mathbf{x}_t$ and $\mathbf{h}_{t-1}$; and **every layer has its own weights**,
# where an LSTM shares one set across time steps — so "simplified" holds for the gates, not for the
# number of parameters.
#
# The source also reads the gate as adaptive — "simple" inputs get T ≈ 0, "complex" ones T ≈ 1,
# and in a Transformer a gate would pass relevant key–value pairs and suppress the rest. That is
# an interpretation of what training may produce; nothing in Eq. (5.3.4) makes it so, and it is
# not checked here (—). Chapter 10 measures a gated attention output.
#
# ### A.6 Multi-scale highway (Eq. 5.3.6)
#
# $$\mathbf{y} = \mathbf{x} + \sum_{k=1}^{K}\mathbf{w}_k\,\mathbf{H}_k(\mathbf{x}, \mathbf{W}_k), \qquad \mathbf{w} = \mathrm{softmax}(\text{fusion logits}) \qquad (5.3.6)$$
#
# In `attncourse.blocks.MultiScaleHighway` each $\mathbf{H}_k$ is a ReLU convolution along the sequence
# with its own kernel size (its receptive field $R_k$), here 1, 3 and 5. Despite the name, (5.3.6)
# has **no gate on the identity**: x always passes with weight 1, so it is a residual block whose
# branch is a convex mixture of scales. The source claims that "even with limited depth, MHC
# achieves a very large effective receptive field". Below: which input positions can change output
# position 16 — the non-zero entries of the gradient of $y_{16}$ with respect to the input sequence —
# for 1, 2 and 3 stacked blocks.
#
# > **Glossary** · multi-scale 多尺度 · receptive field 感受野 · convolution 卷积 · kernel size 卷积核大小 ·
# > fusion weight 融合权重 · convex mixture 凸组合


# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
from attncourse.blocks import MultiScaleHighway


def receptive_field(blocks, T=33, position=16, dim=4, trials=8):
    """Input positions whose change moves output ``position`` of the stacked blocks, for any of
    ``trials`` random inputs (a ReLU that is off for one input can be on for another)."""
    reached = torch.zeros(T, dtype=torch.bool)
    g = torch.Generator().manual_seed(11)
    for _ in range(trials):
        x = torch.randn(1, T, dim, generator=g, dtype=torch.float64).requires_grad_()  # (B, T, dim)
        y = x
        for b in blocks:
            y = b(y)
        (grad,) = torch.autograd.grad(y[0, position].sum(), x)  # (1, T, dim)
        reached |= grad[0].abs().sum(-1) > 0
    return reached.nonzero().flatten().tolist()


msh = MultiScaleHighway(4, kernel_sizes=(1, 3, 5)).double()
with torch.no_grad():
    msh.fusion_logits.copy_(torch.tensor([1.0, 0.0, -1.0]))  # learnable; here set by hand
    weights = msh.fusion_weights  # (K,) softmax of the logits
print(
    "fusion weights (softmax):",
    [round(w, 3) for w in weights.tolist()],
    " sum =",
    round(float(weights.sum()), 12),
)
for depth in (1, 2, 3):
    blocks = [MultiScaleHighway(4, kernel_sizes=(1, 3, 5)).double() for _ in range(depth)]
    rf = receptive_field(blocks)
    print(
        f"{depth} block(s): output 16 depends on inputs {rf[0]}..{rf[-1]}  ({len(rf)} positions = 1 + {depth} x (5 - 1))"
    )
    assert len(rf) == 1 + depth * 4

# %% [markdown] slideshow={"slide_type": "skip"}
# **Claim check — Eq. (5.3.6) ✓ as a formula** (softmax fusion weights sum to 1; the package is
# tested against it). **"A very large receptive field with limited depth" ⚠ — only as large as the
# widest branch: mixing adds no reach beyond it.** One block sees as far as its widest branch
# ($\max_k R_k$ = 5 positions here), and L blocks see $1 + L(\max_k R_k - 1)$ — linear in depth,
# exactly as a plain stack of the widest convolution alone. So the claim holds when one branch is
# wide (the source's premise: coarse scales with large receptive fields), and then because of that
# branch, not because of the multi-scale mixture. What the mixture adds is a *choice of weighting*
# between near and far context, learnable through $\mathbf{w}$. A large receptive field at limited
# depth needs large kernels, dilation, or attention (chapter 04). The source's analogy with
# attention heads of different ranges (some local, some global) is not checked here (—); chapter
# 06 measures what heads attend to.
#
# ### A.7 What LayerNorm outputs (§5.3.4, Eq. 5.3.7)
#
# **Claim check — "the output has mean 0 and standard deviation 1" ⚠.** True only for $\hat x$,
# *before* γ and β, as a mean and standard deviation *over the features of one token*, and only
# approximately: the standard deviation of $\hat x$ is $\sigma/\sqrt{\sigma^2 + \epsilon}$, close to 1 only when
# $\sigma^2 \gg \epsilon$. After γ and β the output has whatever mean and spread γ and β give it.
#
# **Claim check — "with γ = 1, β = 0 at initialisation, normalization affects the output little
# at first" ✗.** At initialisation LN(x) = $\hat x$: the normalization is fully in force; γ = 1,
# β = 0 only make the affine part the identity.
#
# **"ε is usually 10⁻⁶" ⚠ — a convention that varies.** PyTorch's `nn.LayerNorm` (and the course's
# `LayerNorm`) default to 10⁻⁵; any small ε works as long as $\sigma^2 \gg \epsilon$ (the first table).

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
ln = LayerNorm(16).double()
print("nn.LayerNorm's default eps:", nn.LayerNorm(16).eps, "  the course's:", ln.eps)
for sigma in (1.0, 0.01, 0.001):
    x16 = (
        torch.randn(1000, 16, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
        * sigma
        + 5
    )
    x_hat = ln(x16)  # gamma = 1, beta = 0: LN(x) = x_hat
    sd = x16.std(-1, unbiased=False)
    print(
        f"input std {sigma:6}: x_hat per-token |mean| < 1e-9: {bool(x_hat.mean(-1).abs().max() < 1e-9)}, "
        f"std {float(x_hat.std(-1, unbiased=False).mean()):.3f}"
        f"  (predicted sigma/sqrt(sigma^2 + eps) = {float((sd / torch.sqrt(sd**2 + ln.eps)).mean()):.3f})"
    )
with torch.no_grad():
    ln.weight.fill_(2.0)
    ln.bias.fill_(0.5)
y16 = ln(torch.randn(1000, 16, dtype=torch.float64) * 3)
print(
    f"with gamma = 2, beta = 0.5: per-token mean {float(y16.mean(-1).mean()):.2f}, std {float(y16.std(-1, unbiased=False).mean()):.2f}"
)
x_big = torch.randn(1000, 16, dtype=torch.float64) * 5 + 3
print(
    f"at initialisation: |LN(x) - x| / |x| = {float((LayerNorm(16).double()(x_big) - x_big).norm() / x_big.norm()):.2f}"
)

# %% [markdown] slideshow={"slide_type": "skip"}
# ### A.8 Invariances of the three norms (Eq. 5.3.9)
#
# **Claim check — Eq. (5.3.9), LN(ax + b) = LN(x) ⚠.** With $\mu_{ax+b} = a\mu + b$ and
# $\sigma_{ax+b} = |a|\sigma$, the normalised value is $\frac{a(x-\mu)}{\sqrt{a^2\sigma^2 + \epsilon}}$. So the identity holds
# **exactly when a is a scalar > 0 and b a scalar (the same for all features), and ε = 0**; with
# ε > 0 it holds approximately when $a^2\sigma^2 \gg \epsilon$. It fails for a < 0 ($\hat{x}$ flips
# sign), for a per-feature shift b or scale a, and for small a (ε takes over). The table compares
# the two sides (γ and β random: they act after normalization and change nothing), and does the
# same for the other two norms: RMSNorm is invariant to a scalar a > 0 but **not** to any shift, and
# RMSNorm(−x) = −RMSNorm(x); BatchNorm's invariance is per *channel*: $x_c \to a_c x_c + b_c$ with
# every $a_c > 0$.

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
g = torch.Generator().manual_seed(3)
x16 = (
    torch.randn(64, 16, generator=g, dtype=torch.float64) * 2 + 1
)  # (N, d) rows = tokens, columns = channels
vec_a = torch.rand(16, generator=g, dtype=torch.float64) + 0.5  # a per-feature scale (> 0)
vec_b = torch.randn(16, generator=g, dtype=torch.float64)  # a per-feature shift
transforms = {
    "a = 3 (scalar scale)": lambda t: 3 * t,
    "a = 3, b = -2 (scalars)": lambda t: 3 * t - 2,
    "a = 0.001, b = 5 (small a)": lambda t: 1e-3 * t + 5,
    "a = -3 (negative)": lambda t: -3 * t,
    "per-feature shift b": lambda t: t + vec_b,
    "per-feature scale a > 0": lambda t: t * vec_a,
}


def norms(eps):
    """LayerNorm, RMSNorm and BatchNorm (training) with the same random gamma (and beta)."""
    layers = [
        LayerNorm(16, eps=eps).double(),
        RMSNorm(16, eps=eps).double(),
        BatchNorm1d(16, eps=eps).double(),
    ]
    with torch.no_grad():
        for layer in layers:
            layer.weight.copy_(torch.randn(16, generator=torch.Generator().manual_seed(4)))
            if getattr(layer, "bias", None) is not None:
                layer.bias.copy_(torch.randn(16, generator=torch.Generator().manual_seed(5)))
    return layers


def show(v):
    return "0 (<1e-9)" if v < 1e-9 else f"{v:.0e}" if v < 1e-2 else f"{v:.2f}"


ln_eps, _, _ = norms(1e-5)
ln0, rms0, bn0 = norms(0.0)
print(
    f"{'max |N(ax + b) - N(x)|':27s} {'LN, eps 1e-5':>12} {'LN, eps 0':>10} {'RMS, eps 0':>10} {'BN, eps 0':>10}"
)
for name, f in transforms.items():
    z = f(x16)
    diffs = [(layer(z) - layer(x16)).abs().max() for layer in (ln_eps, ln0, rms0, bn0)]
    print(
        f"{name:27s} {show(float(diffs[0])):>12} "
        + " ".join(f"{show(float(v)):>10}" for v in diffs[1:])
    )

# %% [markdown] slideshow={"slide_type": "skip"}
# ### A.9 BatchNorm: which statistics, and padding (Eq. 5.3.8, §5.3.4)
#
# **Claim check — Eq. (5.3.8) ✓.** LayerNorm's statistics are per token over its features,
# BatchNorm's per channel over the batch (and positions), RMSNorm's per token without centring.
# The package's BatchNorm uses the biased variance in its output and the unbiased one in its
# running estimate, as PyTorch does.

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
xs = torch.randn(4, 6, 8, dtype=torch.float64) * 3 + torch.arange(
    8.0, dtype=torch.float64
)  # (B, T, d)
y_ln = LayerNorm(8).double()(xs)  # statistics per token, over its d = 8 features
y_bn = BatchNorm1d(8).double()(xs.transpose(1, 2)).transpose(1, 2)  # per channel, over B and T
y_rms = RMSNorm(8).double()(xs)
print(
    "LayerNorm: per token   max |mean over features| < 1e-12:",
    bool(y_ln.mean(-1).abs().max() < 1e-12),
    "  variance over features in",
    [round(float(v), 4) for v in y_ln.var(-1, unbiased=False).aminmax()],
)
print(
    "BatchNorm: per channel max |mean over (B, T)|   < 1e-12:",
    bool(y_bn.mean((0, 1)).abs().max() < 1e-12),
    "  variance over (B, T) in",
    [round(float(v), 4) for v in y_bn.var((0, 1), unbiased=False).aminmax()],
)
print(
    "RMSNorm:   per token   mean of squares over features in",
    [round(float(v), 4) for v in y_rms.pow(2).mean(-1).aminmax()],
    f"  (the mean is not removed: max |mean| = {float(y_rms.mean(-1).abs().max()):.2f})",
)

# %% [markdown] slideshow={"slide_type": "skip"}
# **Claim check — LayerNorm "does not depend on the batch size, works with a batch of 1,
# normalises each position independently (suits variable-length sequences), and needs no
# consistency between training and inference" ✓.** Section 4 showed the batch of one and the
# two modes. For variable lengths: a batch of sequences of lengths 6, 4 and 2 is padded with
# zeros to a common length. LayerNorm normalises every token by itself, so the real tokens come
# out the same whatever the padding. BatchNorm's per-channel statistics over (batch, time)
# **include the padding zeros**: pad the same sequences to length 12 instead of 6 and every real
# token's output changes. A masked BatchNorm (statistics over real tokens only) fixes that.

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
d = 8
sequences = [
    torch.randn(n, d, generator=torch.Generator().manual_seed(n), dtype=torch.float64) * 2 + 1
    for n in (6, 4, 2)
]


def pad(seqs, T):
    out = torch.zeros(len(seqs), T, d, dtype=torch.float64)  # (B, T, d)
    for i, s in enumerate(seqs):
        out[i, : len(s)] = s
    return out


def masked_batch_norm(x, lengths, eps=1e-5):
    """BatchNorm statistics over the real tokens only: x (B, T, d) -> (B, T, d)."""
    real = (torch.arange(x.shape[1])[None] < torch.tensor(lengths)[:, None])[..., None]  # (B, T, 1)
    count = real.sum()
    mu = (x * real).sum((0, 1)) / count  # (d,)
    var = (((x - mu) * real) ** 2).sum((0, 1)) / count  # (d,)
    return (x - mu) / torch.sqrt(var + eps)


lengths = [6, 4, 2]
outs = {}
for T in (6, 12):
    x_pad = pad(sequences, T)
    outs[T] = (
        LayerNorm(d).double()(x_pad),
        BatchNorm1d(d).double()(x_pad.transpose(1, 2)).transpose(1, 2),
        masked_batch_norm(x_pad, lengths),
    )
for i, name in enumerate(("LayerNorm", "BatchNorm", "masked BatchNorm")):
    diff = max(
        float((outs[6][i][b, :n] - outs[12][i][b, :n]).abs().max()) for b, n in enumerate(lengths)
    )
    shown = (
        "0 (< 1e-12)" if diff < 1e-12 else f"{diff:.2g}"
    )  # round-off is printed as 0: it varies with the CPU
    print(f"{name:17s}: max change of a real token's output, padding to 12 instead of 6 = {shown}")

# %% [markdown] slideshow={"slide_type": "skip"}
# The source also credits LayerNorm with curing "internal covariate shift" and allowing larger
# learning rates and steadier convergence. Not measured here (—): chapter 09 measures learning
# rate, warm-up and the placement of the norm in a Transformer.
#
# ### A.10 Cost: RMSNorm vs LayerNorm (Application 14.3.4's cost column)
#
# RMSNorm drops the mean (one reduction and one subtraction less) and β. Zhang & Sennrich (2019)
# report 7–64 % less running time than LayerNorm, depending on the model. Below, forward passes
# on 4096 tokens × 512 features, with their affine parameters, one thread: the package's
# from-scratch versions, and PyTorch's built-ins. The timings are this machine's (they differ from
# CPU to CPU and run to run). What does not depend on the machine is **which kernels each
# built-in runs**, listed by a `TorchDispatchMode` (PyTorch's hook that sees every kernel call): in
# the PyTorch version the course pins, `F.layer_norm` is one fused kernel (`native_layer_norm`),
# while `F.rms_norm` on the CPU is a chain of element-wise operations around a reduction (`pow`,
# `mean`, `add_`, `rsqrt`, `mul`), each reading and writing the whole tensor. So RMSNorm does less
# arithmetic — the from-scratch versions, built from the same operations, show the saving — but
# the built-in RMSNorm is not cheaper by construction: which built-in is faster depends on the CPU
# and the PyTorch build.


# %% slideshow={"slide_type": "skip"}
# NBVAL_IGNORE_OUTPUT
import time

from torch.utils._python_dispatch import TorchDispatchMode

from attncourse.threads import single_thread


def best_time(fn, x, repeats=15):
    fn(x)
    runs = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn(x)
        runs.append(time.perf_counter() - start)
    return 1000 * min(runs)


class KernelLog(TorchDispatchMode):
    """Records the name of every ATen kernel that PyTorch's dispatcher runs while it is active."""

    def __init__(self):
        super().__init__()
        self.names = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.names.append(func.overloadpacket.__name__)
        return func(*args, **(kwargs or {}))


def kernels(fn, x):
    """The ATen kernels that one call of fn(x) runs, in order."""
    with KernelLog() as log:
        fn(x)
    return log.names


tokens = torch.randn(4096, 512)
gamma, beta = torch.ones(512), torch.zeros(512)
variants = {
    "LayerNorm (from scratch)": LayerNorm(512),
    "RMSNorm (from scratch)": RMSNorm(512),
    "F.layer_norm (built-in)": lambda t: torch.nn.functional.layer_norm(t, (512,), gamma, beta),
    "F.rms_norm (built-in)": lambda t: torch.nn.functional.rms_norm(t, (512,), gamma),
}
with torch.no_grad(), single_thread():
    ms = {name: best_time(fn, tokens) for name, fn in variants.items()}
    ops = {name: kernels(variants[name], tokens) for name in list(variants)[2:]}
for name, value in ms.items():
    print(f"{name:26s} {value:7.2f} ms")
for name, names in ops.items():
    print(f"{name:26s} runs {len(names)} kernel(s): {', '.join(names)}")
# what the text rests on, in the pinned PyTorch version: one fused kernel against a chain
assert ops["F.layer_norm (built-in)"] == ["native_layer_norm"]
assert ops["F.rms_norm (built-in)"] == ["pow", "mean", "add_", "rsqrt", "mul", "mul"]
scratch = ms["RMSNorm (from scratch)"] / ms["LayerNorm (from scratch)"]
built_in = ms["F.rms_norm (built-in)"] / ms["F.layer_norm (built-in)"]
print(
    f"RMSNorm time / LayerNorm time on this machine: {scratch:.2f} from scratch, {built_in:.2f} built-in"
)

# %% [markdown] slideshow={"slide_type": "skip"}
# ### A.11 The information claims about residuals and normalization (source 000, §14.3.5)
#
# **Lemma 14.3.17, Eq. (14.3.31): $I(Z_{out}; X) \ge I(Z_{in}; X)$ for $Z_{out} = Z_{in} + F(Z_{in})$ ✗ — the
# inequality points the wrong way.** $Z_{out}$ is a function of $Z_{in}$, so $X \to Z_{in} \to Z_{out}$ is a
# Markov chain and the **data-processing inequality** gives $I(Z_{out}; X) \le I(Z_{in}; X)$, for a
# residual block as for any layer. Equality holds when $z \mapsto z + F(z)$ is injective on the values
# $Z_{in}$ takes; a sufficient condition is that F is a contraction, Lip(F) < 1 (the invertible
# residual networks of Behrmann et al. 2019). Counterexample to the printed direction: F(z) = −z
# gives $Z_{out} = 0$ and zero information. Below X is one of 8 equally likely symbols, $Z_{in}$ a
# distinct 2-D vector for each; the mutual information is computed exactly from the joint table.
#
# > **Glossary** · mutual information 互信息 · data-processing inequality 数据处理不等式 ·
# > injective 单射 · contraction 压缩映射 · Lipschitz constant 利普希茨常数 · Markov chain 马尔可夫链

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
from attncourse.metrics import mutual_information

symbols = torch.randn(
    8, 2, generator=torch.Generator().manual_seed(6), dtype=torch.float64
)  # Z_in for X = 0..7


def information_of(z):
    """I(Z; X) in bits for X uniform over the rows of z and Z = z[X], a deterministic function of X."""
    _, cls = torch.unique(
        torch.round(z * 1e9), dim=0, return_inverse=True
    )  # equal outputs, same class
    joint = torch.zeros(z.shape[0], int(cls.max()) + 1, dtype=torch.float64)
    joint[torch.arange(z.shape[0]), cls] = 1 / z.shape[0]  # p(x, z)
    return mutual_information(joint, 0, 1)


W = torch.tensor([[0.6, -0.8], [0.8, 0.6]], dtype=torch.float64)  # a rotation: |W|_2 = 1
branches = {
    "F(z) = 0": lambda z: torch.zeros_like(z),
    "F(z) = 0.5 tanh(zW) (Lip < 1)": lambda z: 0.5 * torch.tanh(z @ W),
    "F(z) = relu(z) - z": lambda z: torch.relu(z) - z,
    "F(z) = -z": lambda z: -z,
}
print(f"I(Z_in; X) = {information_of(symbols):.2f} bits")
for name, F in branches.items():
    print(f"{name:30s}: I(Z_out; X) = {information_of(symbols + F(symbols)):.2f} bits")

# %% [markdown] slideshow={"slide_type": "skip"}
# **Theorem 14.3.10, Eq. (14.3.32): $\lVert\partial\mathcal{L}/\partial Z_{in}\rVert \ge \lVert\partial\mathcal{L}/\partial Z_{out}\rVert - \lVert\partial\mathcal{L}/\partial F\rVert$ ✓,
# but it says nothing against vanishing gradients.** With $g = \partial\mathcal{L}/\partial Z_{out}$ and
# $J = \partial F/\partial Z_{in}$, Eq. (5.3.2) gives $\partial\mathcal{L}/\partial Z_{in} = g + gJ$. If "$\partial\mathcal{L}/\partial F$" is the gradient that
# flows back through the branch, $gJ$, (14.3.32) is the reverse triangle inequality
# $\lVert g + gJ\rVert \ge \lVert g\rVert - \lVert gJ\rVert$ — always true, and whenever the branch's gradient is at least
# as large as g its right side is ≤ 0 and it says nothing (F = −x: both sides are 0). If it is the
# gradient with respect to the branch's output, that equals g and the bound reads "≥ 0". The
# informative bound is A.1's $(1 - \lVert J\rVert_2)\lVert g\rVert$.
#
# **Corollary 14.3.5 ("information passes across layers losslessly, so hundreds of layers train")
# ⚠.** Lossless only when x + F(x) is injective (above); trainable at depth 100 — yes, with an
# identity-like initialisation (section 5), which is an empirical fact, not a consequence of
# (14.3.31).

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
g = torch.Generator().manual_seed(7)
n, d = 20_000, 5
W = (
    torch.randn(n, d, d, generator=g, dtype=torch.float64)
    * 3
    * torch.rand(n, 1, 1, generator=g, dtype=torch.float64)
)
b = torch.randn(n, d, generator=g, dtype=torch.float64)
z_in = torch.randn(n, d, generator=g, dtype=torch.float64)
up = torch.randn(n, d, generator=g, dtype=torch.float64)  # dL/dZ_out
pre = torch.einsum("nij,nj->ni", W, z_in) + b  # F(z) = tanh(W z + b), one block per row
J_F = (1 - torch.tanh(pre) ** 2)[:, :, None] * W  # (n, d, d) dF/dz
through_branch = torch.einsum("ni,nij->nj", up, J_F)  # the gradient that flows back through F
lhs = (up + through_branch).norm(dim=-1)  # |dL/dZ_in|   (Eq. 5.3.2)
rhs = up.norm(dim=-1) - through_branch.norm(dim=-1)
print(
    f"(14.3.32) held in all {n} random residual blocks:",
    bool((lhs >= rhs - 1e-12).all()),
    f"  right side <= 0 in {float((rhs <= 0).double().mean()):.0%} of them",
)
print("F = -x: |dL/dZ_in| = 0 and the bound's right side = |g| - |g| = 0")

# %% [markdown] slideshow={"slide_type": "skip"}
# **Definition 14.3.13, Eq. (14.3.33) ✓; Eq. (14.3.34) ⚠.** The statistics (14.3.33) are
# (5.3.7)'s; $\hat z = (z - \mu)/\sigma$ in (14.3.34) has no ε: it is undefined (0/0) for a constant
# vector. Eq. (5.3.7)'s $\sqrt{\sigma^2 + \epsilon}$ is the version to use.
#
# **Lemma 14.3.18, Eq. (14.3.35): $I(z_{l+1}; z_l) = H(z_{l+1}) - H(z_{l+1}\mid z_l)$ ✓, but it is only the
# definition of mutual information** and says nothing about a loss. LayerNorm is deterministic, so
# $H(z_{l+1}\mid z_l) = 0$ and $I = H(z_{l+1})$. What LN loses is exact: LN(x) = LN(x') if and only if
# x' = a·x + b·**1** with a > 0 (ε = 0, x not constant) — the per-token mean and scale, two numbers.
# RMSNorm loses one: the scale (x' = a·x with a > 0; a < 0 flips the sign, RMSNorm(−x) =
# −RMSNorm(x)). Section 4 showed the same two directions missing from LayerNorm's Jacobian. Below,
# 8 equally likely vectors: 4 base vectors and, for each, a copy x ↦ 2x + 1.
#
# **Theorem 14.3.11 (normalization as an information bottleneck)**: "removes the scale
# information (mean and variance)" ✓, exactly the two numbers above; "keeps the relative structure"
# ✓, $x = \sigma\hat x + \mu$; "**regularises by introducing randomness**" ✗ for LayerNorm — LN of a token
# is the same whatever else is in the batch. That randomness is **BatchNorm's**: in training, a
# sample's output depends on which other samples share its batch (the regularising noise of Ioffe &
# Szegedy 2015), measured below over 200 random batches.

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
constant = torch.full((1, 4), 2.5, dtype=torch.float64)
naive = (constant - constant.mean()) / constant.std(unbiased=False)  # Eq. (14.3.34), no eps
print(
    "Eq. (14.3.34) on a constant vector:",
    naive.tolist()[0],
    "  LN with eps:",
    LayerNorm(4).double()(constant).tolist()[0],
)

base = torch.randn(4, 6, generator=torch.Generator().manual_seed(8), dtype=torch.float64)
family = torch.cat([base, 2 * base + 1])  # (8, 6): X uniform on these 8 vectors
ln0, rms0 = LayerNorm(6, eps=0.0).double(), RMSNorm(6, eps=0.0).double()
print(
    f"H(X) = {information_of(family):.0f} bits,  I(LN(X); X) = {information_of(ln0(family)):.0f} bits,  "
    f"I(RMSNorm(X); X) = {information_of(rms0(family)):.0f} bits"
)
print(
    "RMSNorm merges x and 2x:",
    torch.allclose(rms0(base), rms0(2 * base)),
    "  but not x and -x:",
    torch.allclose(rms0(base), rms0(-base)),
    "  nor x and x + 1:",
    torch.allclose(rms0(base), rms0(base + 1)),
)

pool = torch.randn(1000, 8, generator=torch.Generator().manual_seed(9), dtype=torch.float64) * 2 + 1
sample = pool[:1]  # (1, 8) the sample we follow
g = torch.Generator().manual_seed(10)
ln, bn = LayerNorm(8).double(), BatchNorm1d(8).double()
ln_out, bn_out = [], []
for _ in range(200):
    companions = pool[1 + torch.randperm(999, generator=g)[:31]]  # 31 other samples
    batch = torch.cat([sample, companions])  # (32, 8)
    ln_out.append(ln(batch)[0])
    bn_out.append(bn(batch)[0])
print(
    f"std of the sample's output over 200 batches: LayerNorm {float(torch.stack(ln_out).std(0).max()):.1f}, "
    f"BatchNorm (training) {float(torch.stack(bn_out).std(0).mean()):.2f}"
)

# %% [markdown] slideshow={"slide_type": "skip"}
# **Application 14.3.4 (the normalization table).** The source rates information retention
# LayerNorm "high", BatchNorm "medium", RMSNorm "high", and cost O(d), O(B·d), O(d).
#
# **Claim check — App. 14.3.4, the information-retention column ✗.** Measured per token, the
# ranking is different: at evaluation BatchNorm is an invertible affine map per channel (it keeps
# everything: x is recovered exactly from its output below), LayerNorm drops two numbers per token
# (mean and scale), RMSNorm one (scale) — so RMSNorm keeps *more* than LayerNorm, not the same, and
# BatchNorm the most. In training BatchNorm also mixes in the batch (above).
#
# **Claim check — App. 14.3.4, the cost column ⚠.** It compares a batch (O(B·d) for BatchNorm) with
# a token (O(d)): per batch all three are O(B·d), per token all O(d). RMSNorm saves one reduction;
# whether that makes it faster depends on the implementation (A.10).

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
bn = BatchNorm1d(8).double()
for _ in range(20):
    bn(pool[torch.randperm(1000, generator=g)[:32]])  # learn running statistics
bn.eval()
y = bn(pool)
recovered = (y - bn.bias) / bn.weight * torch.sqrt(bn.running_var + bn.eps) + bn.running_mean
print(
    "BatchNorm (evaluation): every input recovered exactly from its output:",
    torch.allclose(recovered, pool),
)

# %% [markdown] slideshow={"slide_type": "skip"}
# ### A.12 Claim checks at a glance
#
# | source claim | verdict | correct statement / condition |
# |---|---|---|
# | Eq. (5.3.1): y = x + F(x) | ✓ | F = 0 gives the identity (A.1, A.3) |
# | Eq. (5.3.2): ∂L/∂x_l = ∂L/∂x_{l+1}(I + ∂F/∂x) | ✓ | the Jacobian of a residual block; over 50 blocks equal to autograd (section 2, A.1) |
# | §5.3.1: the gradient keeps "at least" the size of ∂L/∂x_{l+1}, passes "losslessly" | ✗ | (1 − ‖J‖₂)‖g‖ ≤ ‖g(I + J)‖ ≤ (1 + ‖J‖₂)‖g‖; F = −x gives 0; He-scaled branches explode (section 2, A.1) |
# | §5.3.1: in attention layers the residual carries the input when attention's gradient is small | ✓ | 12 attention layers: with the residual the gradient arrives at full size and the tokens stay distinct; without, it vanishes and the tokens collapse (Dong et al. 2021) (section 2, A.2) |
# | §5.3.1: feature reuse | ✓ | h_0 stays linearly recoverable through 50 residual or highway layers, not plain ones (A.3) |
# | §5.3.1: F = 0 gives the identity; the function space contains it | ✓ | a plain ReLU layer of the same width cannot be the identity (A.3) |
# | §5.3.1: a near-identity target is much easier to learn as a residual | ⚠ | two seeds: true near the identity; for a target far from it (−x + …) the residual form is slower than the plain network (A.3) |
# | Eq. (5.3.3)–(5.3.4): highway layer, T → 0 copies, T → 1 transforms | ✓ | tied C = 1 − T; untied gates can give x + H (A.4) |
# | §5.3.2: T(x) adapts to the input (simple → carry, complex → transform; relevant key–values pass) | — | an interpretation of training, not a property of Eq. (5.3.4); not checked (A.5) |
# | §5.3.2: highway is a simplified LSTM | ⚠ | one LSTM cell-state update (T ↔ input gate, C ↔ forget gate, x ↔ c_{t−1}); tied = coupled gates (CIFG); no output gate, no tanh on the state, gates read the state; its own weights per layer (A.5) |
# | Eq. (5.3.5): the highway Jacobian | ✗ | add the gate term diag(H − x) ∂T/∂x, ∂T/∂x = diag(T(1 − T)) W_Tᵀ (section 3, A.4) |
# | §5.3.2: gradients flow if g is not near 0 or 1 | ⚠ | through the layer T → 0 is best (Jacobian → I); for the layer's own weights it is worst (∂L/∂W_H ∝ T, ∂L/∂b_T ∝ (H − x)T(1 − T)); start with a small non-zero T, gate bias near −4 for section 3's 50-layer stack, nearer −1 for a shallower one (section 3, A.4) |
# | Eq. (5.3.6): multi-scale highway | ✓ | no carry gate: a residual block with a convex mixture of branches (A.6) |
# | §5.3.3: a large receptive field with limited depth | ⚠ | one block sees max_k R_k: large only when one branch is wide — mixing adds no reach beyond the widest branch; L blocks 1 + L(max_k R_k − 1) (A.6) |
# | §5.3.3: multi-scale ↔ heads with different ranges | — | an analogy, not checked (chapter 06 measures heads) (A.6) |
# | Eq. (5.3.7): LayerNorm | ✓ | per token over its features, biased variance; γ, β per feature (section 4) |
# | §5.3.4: ε "usually 10⁻⁶" | ⚠ | a convention: PyTorch's default is 10⁻⁵; any ε ≪ σ² works (A.7) |
# | §5.3.4: the LN output has mean 0, std 1 | ⚠ | only x̂ (before γ, β), per token, std σ/√(σ² + ε) < 1 (A.7) |
# | §5.3.4: γ = 1, β = 0 make the normalization's effect small at first | ✗ | LN(x) = x̂ at initialisation: fully normalised (A.7) |
# | Eq. (5.3.8): BatchNorm statistics | ✓ | per channel over N (and L); biased variance in the output, unbiased in the running estimate (section 4, A.9) |
# | §5.3.4: LN works with batch size 1, per token, the same in training and evaluation | ✓ | BatchNorm: refuses a batch of one vector in training, differs in evaluation, is polluted by padding (section 4, A.9) |
# | §5.3.4: LN counters covariate shift, allows larger learning rates | — | not measured here; chapter 09 measures learning rate and warm-up against the norm's placement |
# | Eq. (5.3.9): LN(ax + b) = LN(x) | ⚠ | scalar a > 0, scalar b, ε = 0 (≈ when a²σ² ≫ ε); fails for a < 0, per-feature a or b, small a; RMSNorm: scale only, a > 0 (section 4, A.8) |
# | Lemma 14.3.17, Eq. (14.3.31): I(Z_out; X) ≥ I(Z_in; X) | ✗ | ≤ (data processing); = when z ↦ z + F(z) is injective, e.g. Lip(F) < 1; F = −z gives 0 (A.11) |
# | Thm. 14.3.10, Eq. (14.3.32) | ✓ | true (reverse triangle inequality) but vacuous: the right side can be ≤ 0 (A.11) |
# | Cor. 14.3.5: lossless, hundreds of layers | ⚠ | lossless only if injective; depth 100 trains with identity-like initialisation (section 5, A.11) |
# | Def. 14.3.13, Eq. (14.3.33): μ_l, σ_l² | ✓ | the statistics of Eq. (5.3.7) (A.11) |
# | Def. 14.3.13, Eq. (14.3.34): ẑ = (z − μ)/σ | ⚠ | needs ε: 0/0 for a constant z (A.11) |
# | Lemma 14.3.18, Eq. (14.3.35) | ✓ | the definition of I; LN loses exactly the per-token mean and scale, RMSNorm the scale (A.11) |
# | Thm. 14.3.11: removes scale, keeps relative structure | ✓ | x = σx̂ + μ (A.11) |
# | Thm. 14.3.11: regularises through randomness | ✗ | LayerNorm is deterministic; the batch noise is BatchNorm's (A.11) |
# | App. 14.3.4: information retention LN high, BN medium, RMSNorm high | ✗ | per token: BatchNorm (evaluation) keeps everything, RMSNorm drops 1 number, LayerNorm 2 (A.11) |
# | App. 14.3.4: cost O(d), O(B·d), O(d) | ⚠ | per batch all O(B·d), per token all O(d); RMSNorm does less arithmetic, but PyTorch's `F.rms_norm` is not one fused kernel on the CPU, so which built-in is faster depends on the machine (A.10) |
# | Srivastava et al. 2015: deep plain nets fail, highway nets train | ✓ | reproduced at depth 100 (section 5) |
#
# **The source's listings.** Source 004, §5.3.1–5.3.4 prints no code. The one listing of source
# 000, §14.3.5 (Application 14.3.3, the encoder's information per layer) is about cross-attention's
# encoder and is run in chapter 02.
#
# **Errata in one place.** Wrong as printed: the "at least as large" reading of Eq. (5.3.2) (A.1);
# Eq. (5.3.5), which omits the gate term (A.4); "γ = 1, β = 0 make the normalization's effect
# small" (A.7); Lemma 14.3.17's inequality, which points the wrong way (A.11); Thm. 14.3.11's
# "randomness" for LayerNorm (A.11); Application 14.3.4's retention column (A.11). Right only under
# a condition: Eq. (5.3.9) (scalar a > 0, scalar b, ε → 0), "mean 0 and std 1" (x̂, per token),
# "gradients flow if g is not near 0 or 1" (a small non-zero T), "highway is a simplified LSTM" (the
# gating only), the receptive-field claim (the widest branch), the near-identity claim (near the
# identity only), Eq. (14.3.34) (needs ε), Cor. 14.3.5 (injective blocks) and the cost column (per
# token or per batch alike).
