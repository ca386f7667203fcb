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
# *残差连接、Highway 连接与归一化* — source 004, §5.3.1–5.3.4 (Eq. 5.3.1–5.3.9); source 000, §14.3.5
# (Lemma 14.3.17–14.3.18, Thm. 14.3.10–14.3.11, Cor. 14.3.5, Eq. 14.3.31–14.3.35, Application 14.3.4)
#
# **After this chapter you can**
# - write a residual block y = x + F(x) (Eq. 5.3.1), derive its Jacobian I + ∂F/∂x (Eq. 5.3.2) and
#   say what it does and does not guarantee for the gradient, measured layer by layer;
# - explain a highway layer's transform and carry gates (Eq. 5.3.3–5.3.4), what the gate bias
#   does, and write its full Jacobian (the source's Eq. 5.3.5 misses a term);
# - reproduce Srivastava et al. (2015): a 100-layer plain network does not train, a 100-layer
#   highway or residual network does;
# - compare LayerNorm, BatchNorm and RMSNorm (Eq. 5.3.7–5.3.8): which statistics, over which axis,
#   batch size 1, training vs evaluation, padding, cost — and state exactly when Eq. (5.3.9)'s
#   invariance holds;
# - say which of the source's information-theory claims about residuals and normalization hold;
# - implement LayerNorm, RMSNorm, training-mode BatchNorm, a highway layer and its Jacobian from
#   scratch (the graded exercises).
#
# **Prerequisites**: chapters 00–01; the chain rule and Jacobian matrices; the sigmoid and ReLU
# functions; mean and variance; PyTorch at the level of `x.mean(dim=-1, keepdim=True)`.
#
# **Time**: about 90 minutes (55 reading and experimenting, 35 for the exercises).
#
# Marks used in the claim checks: **✓ holds** · **⚠ holds only under a condition** (stated) ·
# **✗ wrong as printed** (counterexample and correct statement given).

# %% slideshow={"slide_type": "skip"}
import math
import time
import warnings

import matplotlib.pyplot as plt
import numpy as np
import torch
from torch import nn
from torch.autograd.functional import jacobian
from torch.utils._python_dispatch import TorchDispatchMode
from tqdm.auto import tqdm

from attncourse.blocks import Highway, MultiScaleHighway, Residual
from attncourse.chapters.ch08_residual_highway_normalization import (
    DeepStack,
    DepthPlot,
    attention_stack,
    depth_experiment,
    depth_widget,
    depth_widget_update,
    layer_statistics,
    near_identity_fit,
    teacher_task,
)
from attncourse.metrics import mutual_information
from attncourse.norms import BatchNorm1d, LayerNorm, RMSNorm
from attncourse.threads import single_thread

torch.manual_seed(0)
np.random.seed(0)
torch.set_num_threads(2)
torch.set_flush_denormal(True)
torch.set_printoptions(precision=4, sci_mode=False)
plt.rcParams.update({"figure.dpi": 80, "figure.figsize": (7, 3)})
# float(t) of a layer's output (which requires grad) is what we want when printing numbers
warnings.filterwarnings("ignore", message="Converting a tensor with requires_grad=True to a scalar")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 1. A residual block and its gradient (Eq. 5.3.1–5.3.2)
#
# A residual block adds its input to what its layers compute:
#
# $$\mathbf{y} = \mathbf{x} + \mathcal{F}(\mathbf{x}) \qquad (5.3.1)$$
#
# so the layers learn the *residual* $\mathcal{F}(\mathbf{x}) = \mathcal{H}(\mathbf{x}) - \mathbf{x}$
# of the wanted map $\mathcal{H}$ (He et al. 2016). In a stack $\mathbf{x}_{l+1} = \mathbf{x}_l +
# \mathcal{F}(\mathbf{x}_l)$ the chain rule gives, for the gradient as a row vector,
#
# $$\frac{\partial \mathcal{L}}{\partial \mathbf{x}_l} = \frac{\partial \mathcal{L}}{\partial \mathbf{x}_{l+1}}
# \left(\mathbf{I} + \frac{\partial \mathcal{F}(\mathbf{x}_l)}{\partial \mathbf{x}_l}\right) \qquad (5.3.2)$$
#
# The identity matrix is a path along which the gradient reaches layer l unchanged, whatever the
# layers in between do.
#
# > **Glossary** · residual connection 残差连接 · residual function 残差函数 · identity mapping 恒等映射 ·
# > shortcut 快捷路径 · Jacobian 雅可比矩阵 · chain rule 链式法则 · vanishing gradient 梯度消失 ·
# > exploding gradient 梯度爆炸

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
F_branch = nn.Sequential(nn.Linear(4, 4), nn.Tanh()).double()
block = Residual(F_branch)
x = torch.randn(4, dtype=torch.float64)
J = jacobian(block, x)  # (4, 4), J[i, j] = dy_i / dx_j
print(
    "Jacobian of x + F(x) equals I + dF/dx:",
    torch.allclose(J, torch.eye(4, dtype=torch.float64) + jacobian(F_branch, x)),
)

upstream = torch.randn(4, dtype=torch.float64)  # dL/dx_{l+1}
for name, c in (("F(x) = +x/2", 0.5), ("F(x) = -x/2", -0.5), ("F(x) = -x", -1.0)):
    linear = nn.Linear(4, 4, bias=False).double()
    with torch.no_grad():
        linear.weight.copy_(c * torch.eye(4))
    grad_l = upstream @ jacobian(Residual(linear), x)  # dL/dx_l   (Eq. 5.3.2)
    print(f"{name:12s}: |dL/dx_l| / |dL/dx_(l+1)| = {float(grad_l.norm() / upstream.norm()):.2f}")

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Claim check — Eq. (5.3.2) ✓; "the gradient keeps at least the size of ∂L/∂x_{l+1}" ✗.** The
# source reads (5.3.2) as a guarantee: thanks to I, the gradient at layer l is "at least" the
# gradient at layer l + 1. The equation is right; the guarantee is not. The branch's Jacobian can
# cancel the identity: F(x) = −x/2 halves the gradient, F(x) = −x kills it. **Correct statement**:
# for a row vector g and $J = \partial\mathcal{F}/\partial\mathbf{x}$,
#
# $$(1 - \lVert J\rVert_2)\,\lVert g\rVert \;\le\; \lVert g(\mathbf{I} + J)\rVert \;\le\; (1 + \lVert J\rVert_2)\,\lVert g\rVert,$$
#
# so the gradient is *nearly preserved when the branch is small* (‖J‖₂ ≪ 1), and nothing more.
# Checked below on 20 000 random (g, J) pairs with ‖J‖₂ anywhere in (0, 2).

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
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

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Layer by layer: plain vs residual vs highway at initialisation
#
# `layer_statistics` (from `attncourse.chapters.ch08_residual_highway_normalization`) builds a fresh stack of 50 layers of width 32, sends
# a random batch of 64 inputs through it, and back-propagates a cross-entropy loss. For every layer
# l it reports the size of the activations $h_l$, the gradient norm $\lVert\partial\mathcal{L}/\partial h_l\rVert$
# (Eq. 5.3.2 applied 50 times) and the **mean cosine similarity between the representations of
# different inputs** — 1 means every input looks the same at that layer.
#
# - *plain*: $h \leftarrow \mathrm{ReLU}(hW + b)$ with He initialisation (variance 2/width), which
#   keeps $\mathbb{E}\lVert h\rVert^2$ constant in expectation;
# - *residual*: $h \leftarrow h + \mathrm{ReLU}(h)W + b$ (a pre-activation branch), W either He-scaled or
#   He-scaled times $1/\sqrt{L}$;
# - *highway*: §3, with gate bias −6.

# %% slideshow={"slide_type": "subslide"}
# NBVAL_CHECK_OUTPUT
L = 50
configs = {
    "plain (He)": {"kind": "plain"},
    "residual (He)": {"kind": "residual"},
    "residual (He / sqrt L)": {"kind": "residual", "branch_scale": 1 / math.sqrt(L)},
    "highway (gate bias -6)": {"kind": "highway", "gate_bias": -6.0},
}
stats = {name: layer_statistics(depth=L, **kw) for name, kw in configs.items()}
print(
    f"{'depth 50':24s} {'RMS h_L':>9} {'|g_0|/|g_L|':>12} {'layers with |g_l| < |g_l+1|':>28} {'cosine at h_L':>14}"
)
for name, s in stats.items():
    g_norm = s.gradient_norm
    shrinking = int((g_norm[:-1] < g_norm[1:]).sum())
    print(
        f"{name:24s} {float(s.activation_rms[-1]):9.2g} {float(g_norm[0] / g_norm[-1]):12.2g} "
        f"{shrinking:>22d} of {L} {float(s.cosine[-1]):14.2f}"
    )

fig, axes = plt.subplots(1, 3, figsize=(11, 3))
for name, s in stats.items():
    layers = range(L + 1)
    axes[0].semilogy(layers, s.activation_rms, label=name)
    axes[1].semilogy(layers, s.gradient_norm, label=name)
    axes[2].plot(layers, s.cosine, label=name)
axes[0].set(xlabel="layer l", title="activation RMS of h_l")
axes[1].set(xlabel="layer l", title="gradient norm |dL/dh_l|")
axes[2].set(xlabel="layer l", title="cosine between inputs at h_l", ylim=(-0.05, 1.05))
axes[2].legend(fontsize=7)
plt.tight_layout()
plt.show()

# %% [markdown] slideshow={"slide_type": "subslide"}
# What the measurement says, beyond the source:
#
# 1. **The plain stack loses its inputs.** He initialisation keeps $\mathbb{E}\lVert h\rVert^2$ constant *on
#    average over initialisations*, but a single network of width 32 is not the average: the log of
#    the norm takes a random walk with a downward drift of order 1/width per layer (Hanin & Nica
#    2019), so activations and gradients shrink over 50 layers. The sharper failure is the
#    **cosine**: by layer 50 the representations of different inputs point the same way, so the
#    output hardly depends on the input and the gradient carries little information about it (the
#    "shattered gradients" of Balduzzi et al. 2017). §2 measures the same loss as recoverability.
# 2. **A residual stack with He-scaled branches explodes**: each block adds a branch as large as
#    its input, so $\mathbb{E}\lVert h_{l+1}\rVert^2 \approx 2\,\mathbb{E}\lVert h_l\rVert^2$ and both activations and
#    gradients grow like $2^{l/2}$. The identity path keeps the gradient from *vanishing*, not from
#    exploding. Branches scaled by $1/\sqrt{L}$ (or zero-initialised, or normalization — §7 and
#    chapter 09) give $\mathbb{E}\lVert h_L\rVert^2 \approx (1 + 1/L)^L\,\mathbb{E}\lVert h_0\rVert^2 \le e\,\mathbb{E}\lVert h_0\rVert^2$.
# 3. Even the well-scaled residual stack has layers where the gradient shrinks: "at least as large"
#    is false layer by layer, as the bound above allows.
#
# ### In attention layers
#
# The source goes on: in a Transformer's attention layers, the residual connection makes sure
# that the input's information still gets through **even when attention's gradient becomes very
# small**. The stacks above were MLPs; here are 12 self-attention layers
# (`attncourse.attention.MultiHeadAttention`, d = 32, 4 heads, 16 tokens, no FFN, no norm, float64),
# $x_{l+1} = x_l + s\,A_l(x_l)$ with the residual and $x_{l+1} = s\,A_l(x_l)$ without, where s scales
# every output projection: s = 0.01 makes attention's own gradient small. Two numbers per stack:
# the gradient that reaches the input, $\lVert\partial\mathcal{L}/\partial x_0\rVert / \lVert\partial\mathcal{L}/\partial x_{12}\rVert$ for a random
# upstream gradient, and the **token spread** $\lVert x - \bar x\rVert / \lVert x\rVert$ ($\bar x$ = the mean over the
# 16 tokens; 0 means every token has become the same vector).


# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
def tiny(v, floor=1e-12):
    """Round-off is printed as a threshold: it varies with the CPU."""
    return f"< {floor:.0e}" if v < floor else f"{v:.2g}"


print(f"{'12 attention layers':26s} {'|dL/dx_0| / |dL/dx_12|':>24} {'token spread in -> out':>24}")
for s_branch in (1.0, 0.01):
    for residual in (True, False):
        a = attention_stack(residual, s_branch)
        name = f"{'x + s A(x)' if residual else 's A(x)'}, s = {s_branch:g}"
        print(
            f"{name:26s} {tiny(a.gradient_ratio):>24} {a.spread_in:11.2f} -> {tiny(a.spread_out):>9}"
        )
        if residual:
            assert 0.5 < a.gradient_ratio < 2 and a.spread_out > 0.5
        else:
            assert a.gradient_ratio < 1e-6 and a.spread_out < 1e-9

# %% [markdown] slideshow={"slide_type": "slide"}
# **Claim check — "in attention layers the residual carries the input even when attention's
# gradient is small" ✓** (with §1's caveat). With the residual, the gradient reaches the input at
# about its full size and the tokens stay as distinct as they came in, for s = 1 and s = 0.01
# alike. Without it the gradient vanishes — already at s = 1 — and, which is particular to
# attention, **the tokens collapse into one vector**: an attention layer outputs weighted averages
# of its value vectors, and averaging again and again drives all tokens to the same point (pure
# attention loses rank doubly exponentially with depth, Dong, Cordonnier & Loukas 2021; the skip
# connection is what stops it). The caveat of §1 stands: a branch that cancels its input can still
# remove the gradient; the identity path guarantees nothing more than a term of size 1.
#
# ## 2. Feature reuse and the identity in the function space (§5.3.1)
#
# Unrolling (5.3.1) gives $\mathbf{x}_L = \mathbf{x}_0 + \sum_{l<L}\mathcal{F}(\mathbf{x}_l)$: the input is
# still *in* the last layer's representation, plus corrections. The source concludes that low-level
# features are reused by later layers. One measurable version: **how much of the first layer's
# representation $h_0$ can a linear map recover from $h_l$** (R² of a least-squares fit, 512 inputs)?
#
# The source's second point: with $\mathcal{F} = 0$ a residual block *is* the identity, so adding
# blocks can start from "do nothing". A plain block ReLU(xW + b) of the same width cannot be the
# identity: its output is never negative.
#
# > **Glossary** · feature reuse 特征重用 · representation 表示 · least squares 最小二乘 ·
# > coefficient of determination R² 决定系数 · function space 函数空间


# %% slideshow={"slide_type": "-"}
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
stacks = {
    "plain": DeepStack("plain", L, 32),
    "residual (1/sqrt L)": DeepStack("residual", L, 32, branch_scale=1 / math.sqrt(L)),
    "highway": DeepStack("highway", L, 32),
}
shown = (0, 5, 10, 25, 50)
print(f"{'R² of h_0 from h_l':22s}", "  ".join(f"l={layer:<3d}" for layer in shown))
for name, stack in stacks.items():
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

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Claim check — feature reuse ✓ (measured), identity in the function space ✓.** The plain
# stack loses the linear trace of its first layer within a few layers; the residual and highway
# stacks keep it to the end. (R² measures *linear* recoverability; the information-theoretic
# version, and where it fails, is §9.)
#
# ### "A near-identity target is much easier to learn as a residual"
#
# The source's last argument for (5.3.1): if the wanted map $\mathcal{H}^*$ is close to the
# identity, learning $\mathcal{F}^* = \mathcal{H}^* - \mathbf{x}$ is much easier than learning $\mathcal{H}^*$. Measured with
# one network G (16 → 64 → 16, ReLU, PyTorch's default initialisation), trained as G(x) (plain) and
# as x + G(x) (residual), full-batch Adam (lr 0.01) for 200 steps on 256 points, on two targets
# that are equally simple:
#
# - **near** the identity: $\mathcal{H}^*(\mathbf{x}) = \mathbf{x} + 0.1\tanh(2\mathbf{x}A)$;
# - its **mirror** image, far from the identity: $\mathcal{H}^*(\mathbf{x}) = -\mathbf{x} + 0.1\tanh(2\mathbf{x}A)$.
#
# The error is relative (MSE / variance of the target: 1 = no better than predicting the mean);
# two seeds; the outcome of training, so the numbers move a little from CPU to CPU and the cell
# asserts the effect with margins.

# %% slideshow={"slide_type": "-"}
# NBVAL_IGNORE_OUTPUT
fits = {
    (target, residual, seed): near_identity_fit(target, residual, seed=seed)
    for target, residual, seed in tqdm(
        [(t, r, s) for t in ("near", "mirror") for r in (True, False) for s in (0, 1)],
        desc="fits",
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

# %% [markdown] slideshow={"slide_type": "slide"}
# **Claim check — "a near-identity target is much easier to learn as a residual" ⚠ (true for
# targets near the identity, and only for them).** On the near target the residual network starts
# close (x + G(x) with a small G is already near x), reaches 1 % error in a small fraction of the
# plain network's steps and ends several times lower. On the mirror target the same residual form
# *hurts*: x + G(x) must learn G = −2x + …, starts worse than predicting the mean, and stays behind
# the plain network, which does not care which of the two targets it gets. So the identity path is
# a prior — "the layer probably changes its input only a little" — that pays when it is true, as
# it is for most blocks of a deep stack, which is why residual branches start small (§1).
#
# ## 3. Highway layers: transform gate, carry gate, gate bias (Eq. 5.3.3–5.3.5)
#
# A highway layer (Srivastava et al. 2015) lets the layer decide, per unit and per input, how much
# to transform and how much to carry:
#
# $$\mathbf{y} = \mathbf{H}(\mathbf{x}, \mathbf{W}_H)\cdot\mathbf{T}(\mathbf{x}, \mathbf{W}_T) + \mathbf{x}\cdot\mathbf{C}(\mathbf{x}, \mathbf{W}_C) \qquad (5.3.3)$$
#
# with the transform gate $\mathbf{T} = \sigma(\mathbf{x}\mathbf{W}_T + \mathbf{b}_T) \in (0, 1)$ and, in the usual
# tied form, the carry gate $\mathbf{C} = 1 - \mathbf{T}$:
#
# $$\mathbf{y} = \mathbf{H}\cdot\mathbf{T} + \mathbf{x}\cdot(1 - \mathbf{T}) \qquad (5.3.4)$$
#
# T ≈ 0 copies the input, T ≈ 1 is a plain layer. The **gate bias** $\mathbf{b}_T$ sets where every
# layer starts: with $b_T = -6$, T ≈ σ(−6) ≈ 0.0025 and a deep highway stack begins as (almost)
# the identity. Srivastava et al. suggest −1 to −3, more negative for deeper networks. The table
# below gives, for a 50-layer stack at initialisation and each gate bias, the numbers of §1 and two
# more: the smallest gradient, over the 50 layers, of a layer's **own** parameters W_H and b_T —
# what a layer learns from, as opposed to the gradient that passes through it.
#
# > **Glossary** · highway network 高速公路网络 (Highway 网络) · transform gate 变换门 ·
# > carry gate 携带门 · gate bias 门偏置 · sigmoid S 型函数 · gating 门控

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
print(
    f"{'gate bias':>9} {'mean T':>8} {'RMS h_50':>9} {'|g_0|/|g_50|':>13} {'cosine at h_50':>15}"
    f" {'min_l |dL/dW_H|':>16} {'min_l |dL/db_T|':>16}"
)
smallest = {}  # gate bias -> min over the 50 layers of |dL/dW_H|
for bias in (-10.0, -8.0, -6.0, -4.0, -3.0, -2.0, -1.0, 0.0, 2.0):
    s = layer_statistics("highway", L, gate_bias=bias)
    smallest[bias] = float(s.weight_gradient.min())
    print(
        f"{bias:9.0f} {float(s.gate_mean.mean()):8.4f} {float(s.activation_rms[-1]):9.2g} "
        f"{float(s.gradient_norm[0] / s.gradient_norm[-1]):13.2g} {float(s.cosine[-1]):15.2f}"
        f" {smallest[bias]:16.2g} {float(s.gate_bias_gradient.min()):16.2g}"
    )
# the trade-off: the smallest W_H gradient peaks between the ends and falls on both sides
assert smallest[-4.0] > 10 * max(smallest[-10.0], smallest[0.0], smallest[2.0])

hw = Highway(6, gate_bias=-30.0)
x6 = torch.randn(5, 6)
copies = torch.allclose(hw(x6), x6, atol=1e-6)
print("gate bias -30 (T = 0): the layer copies its input:", copies)
hw = Highway(6, gate_bias=30.0)
plain = torch.allclose(hw(x6), hw.transform(x6), atol=1e-6)
print("gate bias +30 (T = 1): the layer is the plain layer H:", plain)
assert copies and plain

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Claim check — Eq. (5.3.3)–(5.3.4) ✓** (the package's `Highway` is tested against the formula),
# and the two limits T → 0 (identity) and T → 1 (plain layer) as the source says.
#
# **Claim check — Eq. (5.3.5) ✗ (a term is missing).** The source differentiates
# $\mathbf{y} = \mathbf{H}(\mathbf{x})\,\mathbf{g} + \mathbf{x}(1 - \mathbf{g})$ treating the gate $\mathbf{g} = \mathbf{T}(\mathbf{x})$ as a
# constant and prints $\partial\mathbf{y}/\partial\mathbf{x} = \frac{\partial\mathbf{H}}{\partial\mathbf{x}}\mathbf{g} + \mathbf{I}(1 - \mathbf{g})$.
# But T depends on x. By the product rule the full Jacobian is
#
# $$\frac{\partial\mathbf{y}}{\partial\mathbf{x}} = \mathrm{diag}(\mathbf{T})\,\frac{\partial\mathbf{H}}{\partial\mathbf{x}} + \mathrm{diag}(1 - \mathbf{T}) + \mathrm{diag}(\mathbf{H} - \mathbf{x})\,\frac{\partial\mathbf{T}}{\partial\mathbf{x}},
# \qquad \frac{\partial\mathbf{T}}{\partial\mathbf{x}} = \mathrm{diag}\big(\mathbf{T}(1 - \mathbf{T})\big)\,\mathbf{W}_T^\top$$
#
# (for $\mathbf{T} = \sigma(\mathbf{x}\mathbf{W}_T + \mathbf{b}_T)$). The third term vanishes only where H = x or where
# the gate is saturated. Exercise 5 asks you to write this Jacobian.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
hw = Highway(4, transform=nn.Sequential(nn.Linear(4, 4), nn.Tanh()), gate_bias=0.0).double()
x4 = torch.randn(4, dtype=torch.float64)
with torch.no_grad():
    T, H = hw.transform_gate(x4), hw.transform(x4)  # (4,), (4,)
dH, dT = jacobian(hw.transform, x4), jacobian(hw.transform_gate, x4)  # (4, 4) each
printed = torch.diag(T) @ dH + torch.diag(1 - T)  # Eq. (5.3.5) as printed
full = printed + torch.diag(H - x4) @ dT  # + (H - x) dT/dx
J = jacobian(hw, x4)  # autograd, the ground truth
print(f"max |J - Eq. (5.3.5) as printed| = {float((J - printed).abs().max()):.3f}")
print(f"max |J - full Jacobian|          < 1e-12: {bool((J - full).abs().max() < 1e-12)}")
assert torch.allclose(J, full) and (J - printed).abs().max() > 1e-2

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Claim check — "gradients flow as long as g is not near 0 or 1" ⚠.** Two different gradients
# are at stake, and the two ends of the gate fail for different ones.
#
# - The gradient **through** the layer, ∂y/∂x ≈ diag(T) ∂H/∂x + diag(1 − T): as T → 0 it tends to
#   I (pure carry). In the table, gate biases −10 … −6 keep |g_0|/|g_50| near 1 and the inputs
#   distinguishable; gates in the middle (bias −1 or 0) make the 50-layer stack behave like a plain
#   one (cosine → 1, gradient down by 10³–10⁴); T → 1 *is* a plain layer.
# - The gradient **of the layer's own parameters**: y depends on W_H only through H·T, and on the
#   gate bias through T, so
#
# $$\frac{\partial \mathcal{L}}{\partial \mathbf{W}_H} = \mathbf{x}^\top\Big(g \odot \mathbf{T} \odot \mathbb{1}[\mathbf{z} > 0]\Big), \qquad
# \frac{\partial \mathcal{L}}{\partial \mathbf{b}_T} = g \odot (\mathbf{H} - \mathbf{x}) \odot \mathbf{T}(1 - \mathbf{T})$$
#
#   for an upstream gradient g (row vector) and $\mathbf{z} = \mathbf{x}\mathbf{W}_H + \mathbf{b}_H$. Both carry a factor T: as
#   T → 0 the layer becomes an exact identity that **cannot learn** to be anything else. The last two
#   columns of the table show the trade-off: the smallest per-layer gradient of W_H and b_T is
#   largest at a moderately negative bias (around −4 at depth 50) and falls on both sides — towards
#   −10 in proportion to T, towards 0 because the gradient no longer gets through the stack.
#
# The cell below checks the two formulas against autograd on one layer, with the same weights at
# four gate biases.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
x6 = torch.randn(5, 6, generator=torch.Generator().manual_seed(12), dtype=torch.float64)
up6 = torch.randn(5, 6, generator=torch.Generator().manual_seed(13), dtype=torch.float64)  # dL/dy
print(f"{'gate bias':>9} {'mean T':>8} {'|dL/dW_H|':>10} {'|dL/db_T|':>10}  formulas = autograd")
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
    print(
        f"{bias:9.0f} {float(T.mean()):8.1e} {float(dW_H.norm()):10.1e} {float(db_T.norm()):10.1e}  {ok}"
    )
    assert ok

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Correct statement**: a deep highway stack should start with a **small but non-zero T** — gate
# bias ≈ −1 … −6, more negative the deeper the stack (Srivastava et al. suggest −1 to −3; for their
# depth experiment they searched −1 … −10) — so that the gradient passes through the carry gates
# *and* still reaches each layer's own weights; training then opens transform gates where they
# help. Neither end is safe: T ≈ 1 blocks the gradient through depth, T ≈ 0 blocks learning.
#
# Also note that (5.3.3) with an *untied* carry gate C is not a convex mixture: with C ≈ 1 and T ≈ 1
# the layer returns x + H, a residual block; tying C = 1 − T is what makes T the only knob.
#
# ### "Highway is a simplified LSTM" (§5.3.2)
#
# The source calls a highway layer a simplified LSTM unrolled into a feed-forward network. An LSTM
# cell updates its state as $\mathbf{c}_t = \mathbf{f}_t\odot\mathbf{c}_{t-1} + \mathbf{i}_t\odot\mathbf{g}_t$ and outputs
# $\mathbf{h}_t = \mathbf{o}_t\odot\tanh(\mathbf{c}_t)$, with forget, input and output gates f, i, o and candidate
# $\mathbf{g}_t = \tanh(\cdot)$, all computed from the input $\mathbf{x}_t$ and $\mathbf{h}_{t-1}$. Below, PyTorch's
# `nn.LSTMCell` is fed the highway layer's input x as its input, with $\mathbf{h}_{t-1} = 0$ and
# $\mathbf{c}_{t-1} = \mathbf{x}$.

# %% slideshow={"slide_type": "-"}
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

# %% [markdown] slideshow={"slide_type": "slide"}
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
# ## 4. Multi-scale highway (Eq. 5.3.6)
#
# $$\mathbf{y} = \mathbf{x} + \sum_{k=1}^{K}\mathbf{w}_k\,\mathbf{H}_k(\mathbf{x}, \mathbf{W}_k), \qquad \mathbf{w} = \mathrm{softmax}(\text{fusion logits}) \qquad (5.3.6)$$
#
# In `attncourse.blocks.MultiScaleHighway` each $\mathbf{H}_k$ is a ReLU convolution along the sequence
# with its own kernel size (its receptive field $R_k$), here 1, 3 and 5. Despite the name, (5.3.6)
# has **no gate on the identity**: x always passes with weight 1, so it is a residual block whose
# branch is a convex mixture of scales.
#
# The source claims that "even with limited depth, MHC achieves a very large effective receptive
# field". Below: which input positions can change output position 16 — the non-zero entries of the
# gradient of $y_{16}$ with respect to the input sequence — for 1, 2 and 3 stacked blocks.
#
# > **Glossary** · multi-scale 多尺度 · receptive field 感受野 · convolution 卷积 · kernel size 卷积核大小 ·
# > fusion weight 融合权重 · convex mixture 凸组合


# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
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

# %% [markdown] slideshow={"slide_type": "slide"}
# **Claim check — Eq. (5.3.6) ✓ as a formula** (softmax fusion weights sum to 1; the package is
# tested against it). **"A very large receptive field with limited depth" ⚠ — only as large as the
# widest branch: mixing adds no reach beyond it.** One block sees as far as its widest branch
# ($\max_k R_k$ = 5 positions here), and L blocks see $1 + L(\max_k R_k - 1)$ — linear in depth,
# exactly as a plain stack of the widest convolution alone. So the claim holds when one branch is
# wide (the source's premise: coarse scales with large receptive fields), and then because of that
# branch, not because of the multi-scale mixture. What the mixture adds is a *choice of weighting*
# between near and far context, learnable through $\mathbf{w}$. A large receptive field at limited
# depth needs large kernels, dilation, or attention (chapter 04).
#
# ## 5. Widget: depth, layer kind, gate bias, normalization
#
# The three panels of §1 for any stack you choose: **layer** kind, **depth** (1–100), **norm** at the
# input of every branch (none, LayerNorm, RMSNorm, BatchNorm — §7), the highway **gate bias**, and
# for residual stacks the **1/√depth** branch scale. Every change re-initialises the stack and
# re-runs one forward and backward pass of 64 random inputs. Things to try:
# 1. plain, depth 1 → 100: the cosine climbs to 1, the activation RMS drifts down.
# 2. residual without the 1/√depth box: activations and gradients explode (the log axes clip at
#    10¹²; the numbers above the figure are exact). Tick the box: bounded at every depth.
# 3. residual, LayerNorm: bounded too — normalization is the other cure (chapter 09 compares
#    where to put it).
# 4. highway, gate bias from −10 to +2 at depth 50: watch the stack turn into a plain one.
# 5. plain with LayerNorm or BatchNorm: the forward signal is tamed (cosine stays below 1), but look
#    at the gradient at the first layers — normalization does not make a deep plain stack's
#    backward pass well-behaved (for BatchNorm this gradient explosion is Yang et al. 2019's result).
#
# Behind the widget are two plain functions, `layer_statistics` (the numbers) and
# `depth_widget_update` (numbers + redraw); the tests call them.

# %% slideshow={"slide_type": "slide"}
# NBVAL_IGNORE_OUTPUT
depth_widget(kind="plain", depth=50)

# %% [markdown] slideshow={"slide_type": "subslide"}
# A static snapshot (for printed notes), and the cost of one widget update:

# %% slideshow={"slide_type": "subslide"}
# NBVAL_IGNORE_OUTPUT
snapshot = DepthPlot(pyplot=True)
snapshot.update(layer_statistics("residual", 50, norm="layer"))
plt.show()
timing_plot = DepthPlot()
depth_widget_update(timing_plot, "plain", 10)  # first draw caches the static background
settings = [
    (kind, depth, norm)
    for depth in (30, 100)
    for kind in ("plain", "residual", "highway")
    for norm in ("none", "layer", "batch")
]
times = []
for kind, depth, norm in settings:
    start = time.perf_counter()
    depth_widget_update(timing_plot, kind, depth, norm=norm)
    times.append(time.perf_counter() - start)
median_ms, worst_ms = 1000 * float(np.median(times)), 1000 * max(times)
print(
    f"one widget update (statistics + redraw + PNG): median {median_ms:.1f} ms, slowest {worst_ms:.1f} ms over "
    f"{len(times)} settings ({'within' if median_ms <= 100 else 'OVER'} the 100 ms budget)"
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 6. Reproduction: Srivastava et al. 2015, Fig. 1 — depth kills plain networks, not highway ones
#
# The paper trains plain and highway networks of 10 to 100 layers on MNIST: plain networks get
# worse with depth and stop training at 50–100 layers; highway networks of 100 layers train as
# well as shallow ones, more than two orders of magnitude below the plain ones in training loss.
#
# **CPU version (about 20 s).** A teacher task: 2000 points x ~ N(0, I₂₀), 10 classes from a random
# tanh teacher (`teacher_task`: of 6667 draws, the 2000 farthest from the teacher's decision
# boundaries are kept, so a 10-layer network fits them within 150 steps and depth, not difficulty,
# decides). Plain ReLU layers (He initialisation), residual layers (branch He × 1/√L) and highway
# layers (gate bias −6), at depth 10 and 100; widths 34, 34 and 24, so every layer has about the
# same number of weights (≈ 1150), as in the paper. SGD with momentum 0.9, batch 200, 150 steps;
# for each network the best final training loss over the learning rates {0.01, 0.03, 0.1, 0.3}.
# All the learning rates of one network train side by side in one batched model (`DeepStack`
# keeps a member dimension; each member is exactly the network it would be alone).
#
# A fuller sweep (depths 10, 20, 50, 100; 300 steps) shows the same picture at several times the
# cost. The notebook runs seed 0; the test suite
# (`tests/chapters/test_ch08_residual_highway_normalization.py`) repeats the experiment with seed 1
# and asserts the same criteria.
#
# **Expected**: highway-100 ≤ 0.1; plain-100 at least 10 × highway-100; plain-100 at least
# 5 × plain-10.

# %% slideshow={"slide_type": "-"}
# NBVAL_IGNORE_OUTPUT
start = time.perf_counter()
results = depth_experiment(kinds=("plain", "residual", "highway"), depths=(10, 100), seeds=(0,))
print(
    f"trained {sum(r.final_loss.numel() for r in results.values())} networks in {time.perf_counter() - start:.1f} s\n"
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
_, labels = teacher_task()
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

# %% [markdown] slideshow={"slide_type": "slide"}
# The plain 100-layer network barely moves below the loss of predicting the class frequencies;
# the highway and residual networks of 100 layers train as fast as their 10-layer versions. §1
# showed why at initialisation: the plain stack maps all inputs to nearly the same direction,
# the other two start near the identity.
#
# ## 7. LayerNorm, BatchNorm, RMSNorm (Eq. 5.3.7–5.3.8)
#
# All three standardise activations and then rescale with learnable γ (and shift with β); they
# differ in **which numbers the statistics are taken over**:
#
# | | statistics over | per | uses the batch? |
# |---|---|---|---|
# | LayerNorm (5.3.7) | the d features of one token: $\mu = \frac1d\sum_i x_i$, $\sigma^2 = \frac1d\sum_i(x_i-\mu)^2$, $y_i = \gamma_i\frac{x_i-\mu}{\sqrt{\sigma^2+\epsilon}}+\beta_i$ | token | no |
# | BatchNorm (5.3.8) | one channel c over the N samples (and L positions) of the batch | channel | yes (training); running averages (evaluation) |
# | RMSNorm (Zhang & Sennrich 2019) | the d features of one token, without centring: $y_i = \gamma_i\,x_i/\sqrt{\frac1d\sum_j x_j^2+\epsilon}$ | token | no |
#
# > **Glossary** · layer normalization 层归一化 · batch normalization 批归一化 · RMS normalization 均方根归一化 ·
# > running statistics 滑动统计量 · training / evaluation mode 训练 / 推理模式 · padding 填充 ·
# > biased variance 有偏方差 · affine parameters γ, β 仿射参数

# %% slideshow={"slide_type": "-"}
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
    "  (the mean is not removed: max |mean| =",
    f"{float(y_rms.mean(-1).abs().max()):.2f})",
)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Batch size 1, and training vs evaluation
#
# The source: LayerNorm "does not depend on the batch size and can handle a batch of size 1", and
# "does not need to keep training and inference behaviour consistent". The first is a plain fact;
# the second is best read as: **LayerNorm computes the same function in both modes** (it has no
# running statistics), while BatchNorm does not.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
bn = BatchNorm1d(8).double()
ln = LayerNorm(8).double()
batch = torch.randn(32, 8, dtype=torch.float64) * 2 + 1
for _ in range(5):
    bn(batch[torch.randperm(32)[:16]])  # a few training batches update the running statistics
one = batch[:1]  # a batch of one sample
try:
    bn(one)
except ValueError as error:
    print(
        "BatchNorm, training, batch of 1 -> ValueError:", str(error).split(": ")[1].split(" (")[0]
    )
print(
    "LayerNorm, batch of 1 equals the same sample inside a batch of 32:",
    torch.allclose(ln(one), ln(batch)[:1]),
)
bn.eval()
print("BatchNorm, evaluation, batch of 1 works (running statistics):", tuple(bn(one).shape))
ln.eval()
print(
    "LayerNorm: training mode == evaluation mode:", torch.equal(ln.train()(batch), ln.eval()(batch))
)
print(
    f"BatchNorm: max |training - evaluation output| = {float((bn.train()(batch) - bn.eval()(batch)).abs().max()):.2f}"
)

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Variable-length sequences and padding
#
# A batch of sequences of lengths 6, 4 and 2 is padded with zeros to a common length. LayerNorm
# normalises every token by itself, so the real tokens come out the same whatever the padding.
# BatchNorm's per-channel statistics over (batch, time) **include the padding zeros**: pad the same
# sequences to length 12 instead of 6 and every real token's output changes. A masked BatchNorm
# (statistics over real tokens only) would fix that — which is what "BatchNorm is not suited to
# variable-length sequences" means in practice.

# %% slideshow={"slide_type": "-"}
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

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Cost: RMSNorm vs LayerNorm
#
# RMSNorm drops the mean (one reduction and one subtraction less) and β. Zhang & Sennrich (2019)
# report 7–64 % less running time than LayerNorm, depending on the model. Below, forward passes
# on 4096 tokens × 512 features, with their affine parameters (γ, β for LayerNorm, γ for RMSNorm),
# one thread: the package's from-scratch versions, and PyTorch's built-ins. The timings are this
# machine's (they differ from CPU to CPU and run to run). What does not depend on the machine is
# **which kernels each built-in runs**, listed by a `TorchDispatchMode` (PyTorch's hook that sees
# every kernel call): in the PyTorch version the course pins,
# `F.layer_norm` is one fused kernel (`native_layer_norm`), while `F.rms_norm` on the CPU is a chain
# of element-wise operations around a reduction (`pow`, `mean`, `add_`, `rsqrt`, `mul`), each
# reading and writing the whole tensor. So RMSNorm does less arithmetic — the from-scratch versions,
# built from the same operations, show the saving — but the built-in RMSNorm is not cheaper by
# construction: which built-in is faster depends on the CPU and the PyTorch build (compare the two
# ratios printed below).


# %% slideshow={"slide_type": "-"}
# NBVAL_IGNORE_OUTPUT
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
    f"RMSNorm time / LayerNorm time on this machine: {scratch:.2f} from scratch, "
    f"{built_in:.2f} built-in"
)


# %% [markdown] slideshow={"slide_type": "slide"}
# ## 8. What does LayerNorm output, and what is it invariant to? (Eq. 5.3.7, 5.3.9)
#
# **"The output has mean 0 and standard deviation 1" (§5.3.4) ⚠.** True only for $\hat x$, *before*
# γ and β, as a mean and standard deviation *over the features of one token*, and only
# approximately: the standard deviation of $\hat x$ is $\sigma/\sqrt{\sigma^2 + \epsilon}$, close to 1 only when
# $\sigma^2 \gg \epsilon$. After γ and β the output has whatever mean and spread γ and β give it.
#
# **"With γ = 1, β = 0 at initialisation, normalization affects the output little at first" ✗.** At
# initialisation LN(x) = $\hat x$: the normalization is fully in force; γ = 1, β = 0 only make the
# affine part the identity.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
ln = LayerNorm(16).double()
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

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Claim check — Eq. (5.3.9), LN(ax + b) = LN(x) ⚠.** With $\mu_{ax+b} = a\mu + b$ and
# $\sigma_{ax+b} = |a|\sigma$, the normalised value is $\frac{a(x-\mu)}{\sqrt{a^2\sigma^2 + \epsilon}}$. So the identity holds
# **exactly when a is a scalar > 0 and b a scalar (the same for all features), and ε = 0**; with
# ε > 0 it holds approximately when $a^2\sigma^2 \gg \epsilon$. It fails for a < 0 (the output flips
# sign), for a per-feature shift b or scale a, and for small a (ε takes over). The table compares
# the two sides (γ and β random: they act after normalization and change nothing), and does the
# same for the other two norms: RMSNorm is invariant to a scalar a > 0 but **not** to any shift;
# BatchNorm's invariance is per *channel*: $x_c \to a_c x_c + b_c$ with every $a_c > 0$.

# %% slideshow={"slide_type": "-"}
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

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 9. The information claims about residuals and normalization (§14.3.5)
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

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
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

# %% [markdown] slideshow={"slide_type": "-"}
# **Theorem 14.3.10, Eq. (14.3.32): $\lVert\partial\mathcal{L}/\partial Z_{in}\rVert \ge \lVert\partial\mathcal{L}/\partial Z_{out}\rVert - \lVert\partial\mathcal{L}/\partial F\rVert$ ✓,
# but it says nothing against vanishing gradients.** With $g = \partial\mathcal{L}/\partial Z_{out}$ and
# $J = \partial F/\partial Z_{in}$, Eq. (5.3.2) gives $\partial\mathcal{L}/\partial Z_{in} = g + gJ$. If "$\partial\mathcal{L}/\partial F$" is the gradient that
# flows back through the branch, $gJ$, (14.3.32) is the reverse triangle inequality
# $\lVert g + gJ\rVert \ge \lVert g\rVert - \lVert gJ\rVert$ — always true, and whenever the branch's gradient is at least
# as large as g its right side is ≤ 0 and it says nothing (F = −x: both sides are 0). If it is the
# gradient with respect to the branch's output, that equals g and the bound reads "≥ 0". The
# informative bound is §1's $(1 - \lVert J\rVert_2)\lVert g\rVert$.
#
# **Corollary 14.3.5 ("information passes across layers losslessly, so hundreds of layers train")
# ⚠.** Lossless only when x + F(x) is injective (above); trainable at depth 100 — yes, at the right
# initialisation (§6), which is an empirical fact, not a consequence of (14.3.31).

# %% slideshow={"slide_type": "-"}
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

# %% [markdown] slideshow={"slide_type": "-"}
# **Definition 14.3.13, Eq. (14.3.33)–(14.3.34) ⚠.** $\hat z = (z - \mu)/\sigma$ has no ε: it is undefined
# (0/0) for a constant vector. Eq. (5.3.7)'s $\sqrt{\sigma^2 + \epsilon}$ is the version to use.
#
# **Lemma 14.3.18, Eq. (14.3.35): $I(z_{l+1}; z_l) = H(z_{l+1}) - H(z_{l+1}\mid z_l)$ ✓, but it is only the
# definition of mutual information** and says nothing about a loss. LayerNorm is deterministic, so
# $H(z_{l+1}\mid z_l) = 0$ and $I = H(z_{l+1})$. What LN loses is exact: LN(x) = LN(x') if and only if
# x' = a·x + b·**1** with a > 0 (ε = 0, x not constant) — the per-token mean and scale, two numbers.
# RMSNorm loses one: the scale (x' = a·x). Below, 8 equally likely vectors: 4 base vectors and,
# for each, a copy x ↦ 2x + 1.
#
# **Theorem 14.3.11 (normalization as an information bottleneck)**: "removes the scale
# information (mean and variance)" ✓, exactly the two numbers above; "keeps the relative structure"
# ✓, $x = \sigma\hat x + \mu$; "**regularises by introducing randomness**" ✗ for LayerNorm — LN of a token
# is the same whatever else is in the batch. That randomness is **BatchNorm's**: in training, a
# sample's output depends on which other samples share its batch (the regularising noise of Ioffe &
# Szegedy 2015), measured below over 200 random batches.

# %% slideshow={"slide_type": "-"}
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
    "  but not x and x + 1:",
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

# %% [markdown] slideshow={"slide_type": "-"}
# **Application 14.3.4 (the normalization table) ⚠ / ✗.** The source rates information retention
# LayerNorm "high", BatchNorm "medium", RMSNorm "high", and cost O(d), O(B·d), O(d). Measured per
# token, the ranking is different: at evaluation BatchNorm is an invertible affine map per channel
# (it keeps everything: x is recovered exactly from its output below), LayerNorm drops two numbers
# per token (mean and scale), RMSNorm one (scale) — so RMSNorm keeps *more* than LayerNorm, not
# the same. In training BatchNorm also mixes in the batch (above). The cost column compares a
# batch (O(B·d) for BatchNorm) with a token (O(d)): per batch all three are O(B·d); RMSNorm saves
# one reduction (timed in §7).

# %% slideshow={"slide_type": "-"}
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

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 10. Claim checks at a glance
#
# | source claim | verdict | correct statement / condition |
# |---|---|---|
# | Eq. (5.3.1) y = x + F(x) | ✓ | |
# | Eq. (5.3.2) ∂L/∂x_l = ∂L/∂x_{l+1}(I + ∂F/∂x) | ✓ | the Jacobian of a residual block |
# | §5.3.1: the gradient keeps "at least" the size of ∂L/∂x_{l+1} | ✗ | (1 − ‖J‖₂)‖g‖ ≤ ‖g(I + J)‖ ≤ (1 + ‖J‖₂)‖g‖; F = −x gives 0; He-scaled branches explode |
# | §5.3.1: in attention layers the residual carries the input when attention's gradient is small | ✓ | measured on 12 attention layers: with the residual the gradient arrives at full size and the tokens stay distinct; without, it vanishes and the tokens collapse into one vector (Dong et al. 2021); a cancelling branch can still remove it (§1) |
# | §5.3.1: feature reuse | ✓ | measured: h_0 stays linearly recoverable through 50 residual/highway layers, not plain |
# | §5.3.1: F = 0 gives the identity | ✓ | a plain ReLU layer of the same width cannot be the identity |
# | §5.3.1: a near-identity target is much easier to learn as a residual | ⚠ | measured, two seeds: true near the identity (1 % error in a fraction of the plain network's steps); for a target far from it (−x + …) the residual form is slower than the plain network |
# | Eq. (5.3.3)–(5.3.4) highway layer, T → 0 copy, T → 1 transform | ✓ | tied C = 1 − T; untied gates can give x + H |
# | §5.3.2: highway is a simplified LSTM | ⚠ | one LSTM cell-state update (T ↔ input gate, C ↔ forget gate, x ↔ c_{t−1}); tied = coupled gates (CIFG); no output gate, no tanh on the state, gates read the state; its own weights per layer |
# | Eq. (5.3.5) highway Jacobian | ✗ | add the gate term (H − x)·∂T/∂x, ∂T/∂x = diag(T(1 − T)) W_Tᵀ |
# | §5.3.2: gradients flow if g is not near 0 or 1 | ⚠ | through the layer, T → 0 is best (Jacobian → I); for the layer's own weights it is worst (∂L/∂W_H ∝ T, ∂L/∂b_T ∝ (H − x)T(1 − T)); start with a small non-zero T, bias ≈ −1 … −6 by depth |
# | Eq. (5.3.6) multi-scale highway | ✓ | no carry gate: a residual block with a convex mix of branches |
# | §5.3.3: large receptive field with limited depth | ⚠ | one block sees max_k R_k: large only when one branch is wide — mixing adds no reach beyond the widest branch; L blocks 1 + L(max_k R_k − 1) |
# | Eq. (5.3.7) LayerNorm | ✓ | |
# | §5.3.4: LN output has mean 0, std 1 | ⚠ | only x̂ (before γ, β), per token, std σ/√(σ² + ε) < 1 |
# | §5.3.4: γ = 1, β = 0 make the normalization's effect small at first | ✗ | LN(x) = x̂ at initialisation: fully normalised |
# | Eq. (5.3.8) BatchNorm statistics | ✓ | biased variance in the output; unbiased in the running estimate |
# | §5.3.4: LN works with batch size 1, per token, same in training and evaluation | ✓ | BatchNorm: error at batch 1 in training, different in evaluation, polluted by padding |
# | Eq. (5.3.9) LN(ax + b) = LN(x) | ⚠ | scalar a > 0, scalar b, ε = 0 (≈ when a²σ² ≫ ε); fails for a < 0, per-feature a or b, small a |
# | Lemma 14.3.17, Eq. (14.3.31) I(Z_out; X) ≥ I(Z_in; X) | ✗ | ≤ (data processing); = when z ↦ z + F(z) is injective, e.g. Lip(F) < 1; F = −z gives 0 |
# | Thm. 14.3.10, Eq. (14.3.32) | ✓ | true (reverse triangle inequality) but vacuous: the right side can be ≤ 0 |
# | Cor. 14.3.5: lossless, hundreds of layers | ⚠ | lossless only if injective; depth 100 trains with identity-like initialisation (§6) |
# | Def. 14.3.13, Eq. (14.3.34) ẑ = (z − μ)/σ | ⚠ | needs ε: 0/0 for a constant z |
# | Lemma 14.3.18, Eq. (14.3.35) | ✓ | the definition of I; LN loses exactly the per-token mean and scale |
# | Thm. 14.3.11: removes scale, keeps relative structure | ✓ | |
# | Thm. 14.3.11: regularises through randomness | ✗ | LayerNorm is deterministic; the batch noise is BatchNorm's |
# | Application 14.3.4 table | ⚠ / ✗ | per token: BN (eval) keeps all, RMSNorm drops 1 number, LN 2; all O(d) per token; RMSNorm does less arithmetic (cheaper from scratch), but PyTorch's built-in `F.rms_norm` is not one fused kernel on the CPU, so which built-in is faster depends on the machine (§7) |
# | Srivastava et al. 2015: deep plain nets fail, highway nets train | ✓ | reproduced at depth 100 (§6) |

# %% [markdown] slideshow={"slide_type": "skip"}
# ## 11. Exercises (graded)
#
# Five exercises, 12 points. Write your code between the lines marked for it, run the cell, then
# run the check cell under it: it tests your function on random and edge inputs and tells you
# precisely what is wrong. Use plain tensor operations (`mean`, `sum`, `sqrt`, `@`, `sigmoid`,
# `relu`, `diag`, ...): the normalization checks fail if you call `F.layer_norm`, `F.rms_norm`,
# `F.batch_norm`, the `nn` layers or `attncourse.norms`; the Jacobian check fails if you use
# automatic differentiation. When graded, more tests (hidden here) run on other inputs.

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 1 (3 points) — LayerNorm from scratch, Eq. (5.3.7)
# `my_layer_norm(x, gamma, beta, eps=1e-5)`: x of shape (..., d), gamma and beta of shape (d,) →
# the same shape as x: $\gamma\,(x - \mu)/\sqrt{\sigma^2 + \epsilon} + \beta$ with μ and the *biased* variance σ²
# over the last dimension. A constant row must give β, not `nan`.


# %% nbgrader={"grade": false, "grade_id": "ch08_layer_norm", "locked": false, "schema_version": 3, "solution": true} slideshow={"slide_type": "skip"}
def my_layer_norm(x, gamma, beta, eps=1e-5):
    """x (..., d), gamma (d,), beta (d,) -> (..., d): LayerNorm over the last dimension."""
    ### BEGIN SOLUTION
    mu = x.mean(dim=-1, keepdim=True)  # (..., 1)
    var = ((x - mu) ** 2).mean(dim=-1, keepdim=True)  # (..., 1) biased: 1/d
    return (x - mu) / torch.sqrt(var + eps) * gamma + beta  # (..., d)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch08_layer_norm_test", "locked": true, "points": 3, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"}
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

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 2 (2 points) — RMSNorm
# `my_rms_norm(x, gamma, eps=1e-6)`: x of shape (..., d), gamma of shape (d,) →
# $\gamma\,x/\sqrt{\frac1d\sum_j x_j^2 + \epsilon}$ over the last dimension (no mean subtraction, no β).


# %% nbgrader={"grade": false, "grade_id": "ch08_rms_norm", "locked": false, "schema_version": 3, "solution": true} slideshow={"slide_type": "skip"}
def my_rms_norm(x, gamma, eps=1e-6):
    """x (..., d), gamma (d,) -> (..., d): x / sqrt(mean(x^2) + eps) * gamma over the last dimension."""
    ### BEGIN SOLUTION
    ms = (x * x).mean(dim=-1, keepdim=True)  # (..., 1) mean of squares
    return x / torch.sqrt(ms + eps) * gamma  # (..., d)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch08_rms_norm_test", "locked": true, "points": 2, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"}
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

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 3 (2 points) — BatchNorm in training mode, Eq. (5.3.8)
# `my_batch_norm_train(x, gamma, beta, eps=1e-5)`: x of shape (N, C) or (N, C, L), gamma and beta of
# shape (C,) → the same shape as x, each channel c normalised with the mean and the *biased*
# variance of all its values in the batch (over N, and over L when there is an L).


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


# %% nbgrader={"grade": true, "grade_id": "ch08_batch_norm_test", "locked": true, "points": 2, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"}
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

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 4 (2 points) — a highway layer, Eq. (5.3.4)
# `my_highway(x, W_H, b_H, W_T, b_T)`: x of shape (B, d), weights (d, d) used as `x @ W`, biases (d,)
# → $y = H \cdot T + x \cdot (1 - T)$ with $H = \mathrm{ReLU}(xW_H + b_H)$ and $T = \sigma(xW_T + b_T)$.


# %% nbgrader={"grade": false, "grade_id": "ch08_highway", "locked": false, "schema_version": 3, "solution": true} slideshow={"slide_type": "skip"}
def my_highway(x, W_H, b_H, W_T, b_T):
    """x (B, d), W_H (d, d), b_H (d,), W_T (d, d), b_T (d,) -> y (B, d) = H T + x (1 - T)."""
    ### BEGIN SOLUTION
    H = torch.relu(x @ W_H + b_H)  # (B, d) transform
    T = torch.sigmoid(x @ W_T + b_T)  # (B, d) transform gate
    return H * T + x * (1 - T)  # (B, d) carry gate C = 1 - T
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch08_highway_test", "locked": true, "points": 2, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"}
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

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 5 (3 points) — the full Jacobian of a highway layer (Eq. 5.3.5, corrected)
# `my_highway_jacobian(x, W_H, b_H, W_T, b_T)`: one input x of shape (d,) and the weights of
# exercise 4, in the row-vector convention $z = xW_H + b_H$, $H = \mathrm{ReLU}(z)$,
# $T = \sigma(xW_T + b_T)$, $y = T \odot H + (1 - T) \odot x$ → the (d, d) matrix J with
# **J[i, j] = ∂y_i/∂x_j**, by hand (no `torch.autograd`, `torch.func` or `.backward()`).
#
# Derive it yourself: apply the product rule to $y_i = T_i H_i + (1 - T_i)\,x_i$ — every factor
# that depends on x contributes a term, and §3 showed that Eq. (5.3.5) as printed keeps only two
# of them. Work out $\partial H_i/\partial x_j$ and $\partial T_i/\partial x_j$ entry by entry (which
# index of $W$ meets $x_j$?), then assemble J (loops or broadcasting, both are fine). Two sanity
# checks before you run the check: with the gate shut ($b_T = -30$, so T = 0) J must be the
# identity, and with $W_T = 0$ the term you added to Eq. (5.3.5) must vanish.


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


# %% nbgrader={"grade": true, "grade_id": "ch08_highway_jacobian_test", "locked": true, "points": 3, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"}
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

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Summary
#
# - A residual block y = x + F(x) has Jacobian **I + ∂F/∂x** (Eq. 5.3.2): the gradient is nearly
#   preserved when the branch is small, bounded by (1 ± ‖J‖₂)‖g‖ — not "at least as large". Branches
#   must start small (1/√L scale, zero init, or normalization), otherwise a residual stack explodes.
# - A deep **plain** ReLU stack at He initialisation mostly fails by **collapsing** its inputs to one
#   direction; residual and highway stacks start near the identity and keep the input recoverable.
# - A **highway** layer mixes transform and input with a learned gate; a negative gate bias starts
#   it near the identity, which is what lets 100 layers train (Srivastava et al. 2015, reproduced)
#   — near, not at: the layer's own gradients carry a factor T, so at T = 0 it cannot learn. Its
#   Jacobian has a gate term that Eq. (5.3.5) omits; it is one LSTM cell-state update with coupled
#   gates, not a whole LSTM.
# - The identity path is a prior, not a free gain: a near-identity map is learnt far faster as
#   x + F(x), a map far from the identity slower. In attention stacks it also keeps the tokens
#   from collapsing into one vector.
# - **LayerNorm** normalises each token over its features, **BatchNorm** each channel over the batch
#   (training ≠ evaluation, fails at batch size 1, polluted by padding, noisy — which is its
#   regularisation), **RMSNorm** each token's scale only (less arithmetic; PyTorch's built-in is not
#   faster on every machine). LN(ax + b) = LN(x) needs a scalar a > 0, a scalar b and ε = 0.
# - Residual connections do not *add* information (data processing: I(Z_out; X) ≤ I(Z_in; X));
#   they can at best keep it, when x + F(x) is injective.
#
# **Next — chapter 09, Pre-LN vs Post-LN stability**: where the LayerNorm goes in a Transformer
# block (Eq. 5.3.10 vs 5.3.11) decides whether the gradients at initialisation are well-scaled
# across depth, whether a learning-rate warm-up is needed, and how DeepNorm makes Post-LN trainable.
