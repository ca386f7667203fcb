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

# %% [markdown]
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

# %%
import math
import time
import warnings

import matplotlib.pyplot as plt
import numpy as np
import torch
from torch import nn
from torch.autograd.functional import jacobian

from attncourse.blocks import Highway, MultiScaleHighway, Residual
from attncourse.chapters.ch08_residual_highway_normalization import (
    DeepStack,
    DepthPlot,
    depth_experiment,
    depth_widget,
    depth_widget_update,
    layer_statistics,
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

# %% [markdown]
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

# %%
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

# %% [markdown]
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

# %%
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

# %% [markdown]
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

# %%
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

# %% [markdown]
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


# %%
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

# %% [markdown]
# **Claim check — feature reuse ✓ (measured), identity in the function space ✓.** The plain
# stack loses the linear trace of its first layer within a few layers; the residual and highway
# stacks keep it to the end. (R² measures *linear* recoverability; the information-theoretic
# version, and where it fails, is §9.)
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
# the identity — which is exactly why it trains. Srivastava et al. used −1 to −3, more negative
# for deeper networks.
#
# > **Glossary** · highway network 高速公路网络 (Highway 网络) · transform gate 变换门 ·
# > carry gate 携带门 · gate bias 门偏置 · sigmoid S 型函数 · gating 门控

# %%
# NBVAL_CHECK_OUTPUT
print(f"{'gate bias':>9} {'mean T':>8} {'RMS h_50':>9} {'|g_0|/|g_50|':>13} {'cosine at h_50':>15}")
for bias in (-10.0, -6.0, -3.0, -1.0, 0.0, 2.0):
    s = layer_statistics("highway", L, gate_bias=bias)
    print(
        f"{bias:9.0f} {float(s.gate_mean.mean()):8.4f} {float(s.activation_rms[-1]):9.2g} "
        f"{float(s.gradient_norm[0] / s.gradient_norm[-1]):13.2g} {float(s.cosine[-1]):15.2f}"
    )

hw = Highway(6, gate_bias=-30.0)
x6 = torch.randn(5, 6)
print("gate bias -30 (T = 0): the layer copies its input:", torch.allclose(hw(x6), x6, atol=1e-6))
hw = Highway(6, gate_bias=30.0)
print(
    "gate bias +30 (T = 1): the layer is the plain layer H:",
    torch.allclose(hw(x6), hw.transform(x6), atol=1e-6),
)

# %% [markdown]
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

# %%
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

# %% [markdown]
# **Claim check — "gradients flow as long as g is not near 0 or 1" ⚠.** The gate bias table above
# says otherwise for one of the two ends: **T → 0 is the best case for depth**, not a bad one — the
# Jacobian tends to I (pure carry), gradient ratio ≈ 1, inputs stay distinguishable. Gates in the
# middle (bias −1 or 0) are the bad case at depth 50: the stack behaves like a plain network
# (cosine → 1, gradient down by 10³–10⁴). T → 1 *is* a plain layer. Correct statement: a highway
# layer passes the gradient well where its carry gate is open (T small); a deep stack must start
# there (negative gate bias) and can learn to open transform gates where it needs them.
#
# Also note that (5.3.3) with an *untied* carry gate C is not a convex mixture: with C ≈ 1 and T ≈ 1
# the layer returns x + H, a residual block; tying C = 1 − T is what makes T the only knob.
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


# %%
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

# %% [markdown]
# **Claim check — Eq. (5.3.6) ✓ as a formula** (softmax fusion weights sum to 1; the package is
# tested against it). **"A very large receptive field with limited depth" ✗.** Mixing scales does
# not add reach: one block sees as far as its widest branch ($\max_k R_k$ = 5 positions), and L blocks
# see $1 + L(\max_k R_k - 1)$ — linear in depth, exactly as a plain stack of width-5 convolutions.
# What the mixture adds is a *choice of weighting* between near and far context, learnable through
# $\mathbf{w}$. A large receptive field needs large kernels, dilation, or attention (chapter 04).
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

# %%
# NBVAL_IGNORE_OUTPUT
depth_widget(kind="plain", depth=50)

# %% [markdown]
# A static snapshot (for printed notes), and the cost of one widget update:

# %%
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

# %% [markdown]
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
# cost. The notebook runs seed 0; the test suite (`tests/test_depth.py`) repeats the experiment
# with seed 1 and asserts the same criteria.
#
# **Expected**: highway-100 ≤ 0.1; plain-100 at least 10 × highway-100; plain-100 at least
# 5 × plain-10.

# %%
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

# %%
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

# %%
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

# %% [markdown]
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

# %%
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

# %% [markdown]
# ### Batch size 1, and training vs evaluation
#
# The source: LayerNorm "does not depend on the batch size and can handle a batch of size 1", and
# "does not need to keep training and inference behaviour consistent". The first is a plain fact;
# the second is best read as: **LayerNorm computes the same function in both modes** (it has no
# running statistics), while BatchNorm does not.

# %%
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

# %% [markdown]
# ### Variable-length sequences and padding
#
# A batch of sequences of lengths 6, 4 and 2 is padded with zeros to a common length. LayerNorm
# normalises every token by itself, so the real tokens come out the same whatever the padding.
# BatchNorm's per-channel statistics over (batch, time) **include the padding zeros**: pad the same
# sequences to length 12 instead of 6 and every real token's output changes. A masked BatchNorm
# (statistics over real tokens only) would fix that — which is what "BatchNorm is not suited to
# variable-length sequences" means in practice.

# %%
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

# %% [markdown]
# ### Cost: RMSNorm vs LayerNorm
#
# RMSNorm drops the mean (one reduction and one subtraction less) and β. Zhang & Sennrich (2019)
# report 7–64 % less running time than LayerNorm, depending on the model. Below, forward passes
# of the package's from-scratch versions and of PyTorch's fused kernels on 4096 tokens × 512
# features (one thread; your numbers will differ).


# %%
# NBVAL_IGNORE_OUTPUT
def best_time(fn, x, repeats=15):
    fn(x)
    runs = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn(x)
        runs.append(time.perf_counter() - start)
    return 1000 * min(runs)


tokens = torch.randn(4096, 512)
ms = {}
with torch.no_grad(), single_thread():
    ms["LayerNorm (from scratch)"] = best_time(LayerNorm(512), tokens)
    ms["RMSNorm (from scratch)"] = best_time(RMSNorm(512), tokens)
    ms["F.layer_norm (fused)"] = best_time(
        lambda t: torch.nn.functional.layer_norm(t, (512,)), tokens
    )
    ms["F.rms_norm (fused)"] = best_time(lambda t: torch.nn.functional.rms_norm(t, (512,)), tokens)
for name, value in ms.items():
    print(f"{name:26s} {value:7.2f} ms")
print(
    f"RMSNorm saves {1 - ms['RMSNorm (from scratch)'] / ms['LayerNorm (from scratch)']:.0%} (from scratch), "
    f"{1 - ms['F.rms_norm (fused)'] / ms['F.layer_norm (fused)']:.0%} (fused kernels)"
)

# %% [markdown]
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

# %%
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

# %% [markdown]
# **Claim check — Eq. (5.3.9), LN(ax + b) = LN(x) ⚠.** With $\mu_{ax+b} = a\mu + b$ and
# $\sigma_{ax+b} = |a|\sigma$, the normalised value is $\frac{a(x-\mu)}{\sqrt{a^2\sigma^2 + \epsilon}}$. So the identity holds
# **exactly when a is a scalar > 0 and b a scalar (the same for all features), and ε = 0**; with
# ε > 0 it holds approximately when $a^2\sigma^2 \gg \epsilon$. It fails for a < 0 (the output flips
# sign), for a per-feature shift b or scale a, and for small a (ε takes over). The table compares
# the two sides (γ and β random: they act after normalization and change nothing), and does the
# same for the other two norms: RMSNorm is invariant to a scalar a > 0 but **not** to any shift;
# BatchNorm's invariance is per *channel*: $x_c \to a_c x_c + b_c$ with every $a_c > 0$.

# %%
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

# %% [markdown]
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

# %%
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

# %% [markdown]
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

# %%
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

# %% [markdown]
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

# %%
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

# %% [markdown]
# **Application 14.3.4 (the normalization table) ⚠ / ✗.** The source rates information retention
# LayerNorm "high", BatchNorm "medium", RMSNorm "high", and cost O(d), O(B·d), O(d). Measured per
# token, the ranking is different: at evaluation BatchNorm is an invertible affine map per channel
# (it keeps everything: x is recovered exactly from its output below), LayerNorm drops two numbers
# per token (mean and scale), RMSNorm one (scale) — so RMSNorm keeps *more* than LayerNorm, not
# the same. In training BatchNorm also mixes in the batch (above). The cost column compares a
# batch (O(B·d) for BatchNorm) with a token (O(d)): per batch all three are O(B·d); RMSNorm saves
# one reduction (timed in §7).

# %%
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

# %% [markdown]
# ## 10. Claim checks at a glance
#
# | source claim | verdict | correct statement / condition |
# |---|---|---|
# | Eq. (5.3.1) y = x + F(x) | ✓ | |
# | Eq. (5.3.2) ∂L/∂x_l = ∂L/∂x_{l+1}(I + ∂F/∂x) | ✓ | the Jacobian of a residual block |
# | §5.3.1: the gradient keeps "at least" the size of ∂L/∂x_{l+1} | ✗ | (1 − ‖J‖₂)‖g‖ ≤ ‖g(I + J)‖ ≤ (1 + ‖J‖₂)‖g‖; F = −x gives 0; He-scaled branches explode |
# | §5.3.1: feature reuse | ✓ | measured: h_0 stays linearly recoverable through 50 residual/highway layers, not plain |
# | §5.3.1: F = 0 gives the identity | ✓ | a plain ReLU layer of the same width cannot be the identity |
# | Eq. (5.3.3)–(5.3.4) highway layer, T → 0 copy, T → 1 transform | ✓ | tied C = 1 − T; untied gates can give x + H |
# | Eq. (5.3.5) highway Jacobian | ✗ | add the gate term (H − x)·∂T/∂x, ∂T/∂x = diag(T(1 − T)) W_Tᵀ |
# | §5.3.2: gradients flow if g is not near 0 or 1 | ⚠ | g → 0 (carry) is the best case for depth; gate bias −6 trains 100 layers, −1/0 behaves like a plain stack |
# | Eq. (5.3.6) multi-scale highway | ✓ | no carry gate: a residual block with a convex mix of branches |
# | §5.3.3: large receptive field with limited depth | ✗ | one block sees max_k R_k; L blocks 1 + L(max_k R_k − 1) |
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
# | Application 14.3.4 table | ⚠ / ✗ | per token: BN (eval) keeps all, RMSNorm drops 1 number, LN 2; all O(d) per token, RMSNorm cheapest |
# | Srivastava et al. 2015: deep plain nets fail, highway nets train | ✓ | reproduced at depth 100 (§6) |

# %% [markdown]
# ## 11. Exercises (graded)
#
# Five exercises, 12 points. Write your code between the lines marked for it, run the cell, then
# run the check cell under it: it tests your function on random and edge inputs and tells you
# precisely what is wrong. Use plain tensor operations (`mean`, `sum`, `sqrt`, `@`, `sigmoid`,
# `relu`, `diag`, ...): the normalization checks fail if you call `F.layer_norm`, `F.rms_norm`,
# `F.batch_norm`, the `nn` layers or `attncourse.norms`; the Jacobian check fails if you use
# automatic differentiation. When graded, more tests (hidden here) run on other inputs.

# %% [markdown]
# ### Exercise 1 (3 points) — LayerNorm from scratch, Eq. (5.3.7)
# `my_layer_norm(x, gamma, beta, eps=1e-5)`: x of shape (..., d), gamma and beta of shape (d,) →
# the same shape as x: $\gamma\,(x - \mu)/\sqrt{\sigma^2 + \epsilon} + \beta$ with μ and the *biased* variance σ²
# over the last dimension. A constant row must give β, not `nan`.


# %% nbgrader={"grade": false, "grade_id": "ch08_layer_norm", "locked": false, "schema_version": 3, "solution": true}
def my_layer_norm(x, gamma, beta, eps=1e-5):
    """x (..., d), gamma (d,), beta (d,) -> (..., d): LayerNorm over the last dimension."""
    ### BEGIN SOLUTION
    mu = x.mean(dim=-1, keepdim=True)  # (..., 1)
    var = ((x - mu) ** 2).mean(dim=-1, keepdim=True)  # (..., 1) biased: 1/d
    return (x - mu) / torch.sqrt(var + eps) * gamma + beta  # (..., d)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch08_layer_norm_test", "locked": true, "points": 3, "schema_version": 3, "solution": false}
from attncourse.exercises.ch08 import check_layer_norm

check_layer_norm(my_layer_norm)
### BEGIN HIDDEN TESTS
import importlib

import attncourse.exercises.ch08 as ex8
import attncourse.exercises.engine as engine
import attncourse.guard as guard

guard = importlib.reload(guard)  # fresh copies: a patched check or guard does not count
engine = importlib.reload(engine)
ex8 = importlib.reload(ex8)
ex8.check_layer_norm(my_layer_norm, seed=21)
_g = torch.Generator().manual_seed(121)
_x = torch.randn(3, 5, 9, generator=_g, dtype=torch.float64) * 4 + 2
_gamma, _beta = (
    torch.rand(9, generator=_g, dtype=torch.float64) + 0.5,
    torch.randn(9, generator=_g, dtype=torch.float64),
)
with guard.forbidden_builtins():
    _y = my_layer_norm(_x.clone(), _gamma, _beta)
assert torch.allclose(_y, torch.nn.functional.layer_norm(_x, (9,), _gamma, _beta, 1e-5)), (
    "differs from LayerNorm on random input"
)
assert torch.allclose(
    my_layer_norm(_x, _gamma, _beta, eps=0.1),
    torch.nn.functional.layer_norm(_x, (9,), _gamma, _beta, 0.1),
), "eps"
assert torch.allclose(
    my_layer_norm(3 * _x + 7, _gamma, _beta, eps=0.0), my_layer_norm(_x, _gamma, _beta, eps=0.0)
), "invariance (5.3.9)"
assert torch.allclose(
    my_layer_norm(torch.ones(2, 9, dtype=torch.float64), _gamma, _beta), _beta.expand(2, 9)
), "constant rows give beta"
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise 2 (2 points) — RMSNorm
# `my_rms_norm(x, gamma, eps=1e-6)`: x of shape (..., d), gamma of shape (d,) →
# $\gamma\,x/\sqrt{\frac1d\sum_j x_j^2 + \epsilon}$ over the last dimension (no mean subtraction, no β).


# %% nbgrader={"grade": false, "grade_id": "ch08_rms_norm", "locked": false, "schema_version": 3, "solution": true}
def my_rms_norm(x, gamma, eps=1e-6):
    """x (..., d), gamma (d,) -> (..., d): x / sqrt(mean(x^2) + eps) * gamma over the last dimension."""
    ### BEGIN SOLUTION
    ms = (x * x).mean(dim=-1, keepdim=True)  # (..., 1) mean of squares
    return x / torch.sqrt(ms + eps) * gamma  # (..., d)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch08_rms_norm_test", "locked": true, "points": 2, "schema_version": 3, "solution": false}
from attncourse.exercises.ch08 import check_rms_norm

check_rms_norm(my_rms_norm)
### BEGIN HIDDEN TESTS
import importlib

import attncourse.exercises.ch08 as ex8
import attncourse.exercises.engine as engine
import attncourse.guard as guard

guard = importlib.reload(guard)
engine = importlib.reload(engine)
ex8 = importlib.reload(ex8)
ex8.check_rms_norm(my_rms_norm, seed=22)
_g = torch.Generator().manual_seed(122)
_x = torch.randn(4, 7, generator=_g, dtype=torch.float64) * 3 + 1
_gamma = torch.rand(7, generator=_g, dtype=torch.float64) + 0.5
with guard.forbidden_builtins():
    _y = my_rms_norm(_x.clone(), _gamma)
assert torch.allclose(_y, torch.nn.functional.rms_norm(_x, (7,), _gamma, 1e-6)), (
    "differs from RMSNorm on random input"
)
assert torch.allclose(my_rms_norm(5 * _x, _gamma, eps=0.0), my_rms_norm(_x, _gamma, eps=0.0)), (
    "scale invariance"
)
assert not torch.allclose(my_rms_norm(_x + 1, _gamma), my_rms_norm(_x, _gamma)), (
    "RMSNorm must not remove the mean"
)
assert torch.equal(
    my_rms_norm(torch.zeros(2, 7, dtype=torch.float64), _gamma),
    torch.zeros(2, 7, dtype=torch.float64),
), "zero rows"
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise 3 (2 points) — BatchNorm in training mode, Eq. (5.3.8)
# `my_batch_norm_train(x, gamma, beta, eps=1e-5)`: x of shape (N, C) or (N, C, L), gamma and beta of
# shape (C,) → the same shape as x, each channel c normalised with the mean and the *biased*
# variance of all its values in the batch (over N, and over L when there is an L).


# %% nbgrader={"grade": false, "grade_id": "ch08_batch_norm", "locked": false, "schema_version": 3, "solution": true}
def my_batch_norm_train(x, gamma, beta, eps=1e-5):
    """x (N, C) or (N, C, L), gamma (C,), beta (C,) -> x's shape: training-mode BatchNorm."""
    ### BEGIN SOLUTION
    dims = (0, 2) if x.dim() == 3 else (0,)  # every dimension but the channels
    shape = (1, -1, 1) if x.dim() == 3 else (1, -1)  # (C,) broadcast against x
    mu = x.mean(dim=dims, keepdim=True)  # (1, C[, 1])
    var = ((x - mu) ** 2).mean(dim=dims, keepdim=True)  # (1, C[, 1]) biased
    return (x - mu) / torch.sqrt(var + eps) * gamma.view(shape) + beta.view(shape)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch08_batch_norm_test", "locked": true, "points": 2, "schema_version": 3, "solution": false}
from attncourse.exercises.ch08 import check_batch_norm_train

check_batch_norm_train(my_batch_norm_train)
### BEGIN HIDDEN TESTS
import importlib

import attncourse.exercises.ch08 as ex8
import attncourse.exercises.engine as engine
import attncourse.guard as guard

guard = importlib.reload(guard)
engine = importlib.reload(engine)
ex8 = importlib.reload(ex8)
ex8.check_batch_norm_train(my_batch_norm_train, seed=23)
_g = torch.Generator().manual_seed(123)
_gamma, _beta = (
    torch.rand(4, generator=_g, dtype=torch.float64) + 0.5,
    torch.randn(4, generator=_g, dtype=torch.float64),
)
for _x in (
    torch.randn(16, 4, generator=_g, dtype=torch.float64) * 3 + 2,
    torch.randn(5, 4, 6, generator=_g, dtype=torch.float64),
):
    with guard.forbidden_builtins():
        _y = my_batch_norm_train(_x.clone(), _gamma, _beta)
    _ref = torch.nn.functional.batch_norm(_x, None, None, _gamma, _beta, training=True, eps=1e-5)
    assert torch.allclose(_y, _ref), (
        f"differs from training-mode BatchNorm for shape {tuple(_x.shape)}"
    )
_x = torch.randn(8, 4, generator=_g, dtype=torch.float64)
assert torch.allclose(
    my_batch_norm_train(
        _x * torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=torch.float64) + 5, _gamma, _beta, eps=0.0
    ),
    my_batch_norm_train(_x, _gamma, _beta, eps=0.0),
), "per-channel affine invariance"
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise 4 (2 points) — a highway layer, Eq. (5.3.4)
# `my_highway(x, W_H, b_H, W_T, b_T)`: x of shape (B, d), weights (d, d) used as `x @ W`, biases (d,)
# → $y = H \cdot T + x \cdot (1 - T)$ with $H = \mathrm{ReLU}(xW_H + b_H)$ and $T = \sigma(xW_T + b_T)$.


# %% nbgrader={"grade": false, "grade_id": "ch08_highway", "locked": false, "schema_version": 3, "solution": true}
def my_highway(x, W_H, b_H, W_T, b_T):
    """x (B, d), W_H (d, d), b_H (d,), W_T (d, d), b_T (d,) -> y (B, d) = H T + x (1 - T)."""
    ### BEGIN SOLUTION
    H = torch.relu(x @ W_H + b_H)  # (B, d) transform
    T = torch.sigmoid(x @ W_T + b_T)  # (B, d) transform gate
    return H * T + x * (1 - T)  # (B, d) carry gate C = 1 - T
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch08_highway_test", "locked": true, "points": 2, "schema_version": 3, "solution": false}
from attncourse.exercises.ch08 import check_highway

check_highway(my_highway)
### BEGIN HIDDEN TESTS
import importlib

import attncourse.exercises.ch08 as ex8
import attncourse.exercises.engine as engine

engine = importlib.reload(engine)
ex8 = importlib.reload(ex8)
ex8.check_highway(my_highway, seed=24)
_hw = Highway(5, gate_bias=-1.5).double()
_x = torch.randn(6, 5, dtype=torch.float64)
_args = (_hw.transform[0].weight.T, _hw.transform[0].bias, _hw.gate.weight.T, _hw.gate.bias)
assert torch.allclose(my_highway(_x, *_args), _hw(_x)), "differs from attncourse.blocks.Highway"
assert torch.allclose(
    my_highway(_x, _args[0], _args[1], _args[2], torch.full((5,), -40.0, dtype=torch.float64)), _x
), "T = 0 must copy x"
_H = torch.relu(_x @ _args[0] + _args[1])
assert torch.allclose(
    my_highway(_x, _args[0], _args[1], _args[2], torch.full((5,), 40.0, dtype=torch.float64)), _H
), "T = 1 must give H"
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise 5 (3 points) — the full Jacobian of a highway layer (Eq. 5.3.5, corrected)
# `my_highway_jacobian(x, W_H, b_H, W_T, b_T)`: one input x of shape (d,), the same weights as
# exercise 4 → the (d, d) matrix J with **J[i, j] = ∂y_i/∂x_j**, by hand (no `torch.autograd`,
# `torch.func` or `.backward()`). All three terms of §3 are needed:
# $J = \mathrm{diag}(T)\,\partial H/\partial x + \mathrm{diag}(1 - T) + \mathrm{diag}(H - x)\,\partial T/\partial x$, with
# $\partial H_i/\partial x_j = \mathbb{1}[z_i > 0]\,W_H[j, i]$ for $z = xW_H + b_H$ and
# $\partial T_i/\partial x_j = T_i(1 - T_i)\,W_T[j, i]$. (Hint: `W.T` puts the index i first;
# `v[:, None] * M` scales row i of M by v_i.)


# %% nbgrader={"grade": false, "grade_id": "ch08_highway_jacobian", "locked": false, "schema_version": 3, "solution": true}
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


# %% nbgrader={"grade": true, "grade_id": "ch08_highway_jacobian_test", "locked": true, "points": 3, "schema_version": 3, "solution": false}
from attncourse.exercises.ch08 import check_highway_jacobian

check_highway_jacobian(my_highway_jacobian)
### BEGIN HIDDEN TESTS
import importlib

import attncourse.exercises.ch08 as ex8
import attncourse.exercises.engine as engine

engine = importlib.reload(engine)
ex8 = importlib.reload(ex8)
ex8.check_highway_jacobian(my_highway_jacobian, seed=25)
_hw = Highway(6, gate_bias=0.5).double()
_x = torch.randn(6, dtype=torch.float64)
_args = (_hw.transform[0].weight.T, _hw.transform[0].bias, _hw.gate.weight.T, _hw.gate.bias)
_J = jacobian(_hw, _x)
assert torch.allclose(my_highway_jacobian(_x.clone(), *_args), _J), (
    "differs from the autograd Jacobian of attncourse.blocks.Highway"
)
assert torch.allclose(
    my_highway_jacobian(
        _x, _args[0], _args[1], _args[2], torch.full((6,), -40.0, dtype=torch.float64)
    ),
    torch.eye(6, dtype=torch.float64),
), "T = 0: the Jacobian is the identity"
### END HIDDEN TESTS

# %% [markdown]
# ## Summary
#
# - A residual block y = x + F(x) has Jacobian **I + ∂F/∂x** (Eq. 5.3.2): the gradient is nearly
#   preserved when the branch is small, bounded by (1 ± ‖J‖₂)‖g‖ — not "at least as large". Branches
#   must start small (1/√L scale, zero init, or normalization), otherwise a residual stack explodes.
# - A deep **plain** ReLU stack at He initialisation mostly fails by **collapsing** its inputs to one
#   direction; residual and highway stacks start near the identity and keep the input recoverable.
# - A **highway** layer mixes transform and input with a learned gate; a negative gate bias starts
#   it as the identity, which is what lets 100 layers train (Srivastava et al. 2015, reproduced).
#   Its Jacobian has a gate term that Eq. (5.3.5) omits.
# - **LayerNorm** normalises each token over its features, **BatchNorm** each channel over the batch
#   (training ≠ evaluation, fails at batch size 1, polluted by padding, noisy — which is its
#   regularisation), **RMSNorm** each token's scale only (cheaper). LN(ax + b) = LN(x) needs a
#   scalar a > 0, a scalar b and ε = 0.
# - Residual connections do not *add* information (data processing: I(Z_out; X) ≤ I(Z_in; X));
#   they can at best keep it, when x + F(x) is injective.
#
# **Next — chapter 09, Pre-LN vs Post-LN stability**: where the LayerNorm goes in a Transformer
# block (Eq. 5.3.10 vs 5.3.11) decides whether the gradients at initialisation are well-scaled
# across depth, whether a learning-rate warm-up is needed, and how DeepNorm makes Post-LN trainable.
