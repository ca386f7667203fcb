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
# # Chapter 04 · RNN vs attention: gradient paths
# *循环网络与注意力：梯度路径* — source 001, §5.4.1–5.4.3 (Eq. 5.4.1–5.4.6, 5.4.9–5.4.10); source
# 000, §14.3.2 (Def. 14.3.5, Lemma 14.3.6, Thm. 14.3.2, Cor. 14.3.2, Eq. 14.3.8–14.3.9) and §14.3.6
# (Eq. 14.3.36–14.3.40, Lemma 14.3.19–14.3.20, Thm. 14.3.12). Eq. (5.4.7)–(5.4.8)'s two-layer relay
# and "shallow local, deep global" are chapter 05's.
#
# **After this chapter you can**
# - write the gradient of an RNN as a product of per-step Jacobians (Eq. 5.4.2) and predict from
#   the recurrent matrix whether it vanishes or explodes — and say why the *spectral radius* and the
#   *largest singular value* give different answers;
# - measure ‖∂h_T/∂x_t‖ against the distance T − t for linear and tanh RNNs and for self-attention;
# - state Pascanu et al.'s conditions for vanishing and exploding gradients, and fix explosions
#   with gradient-norm clipping;
# - measure path lengths (Eq. 5.4.5, Thm. 14.3.2), receptive fields, FLOPs and sequential
#   operations, i.e. rebuild Vaswani et al.'s Table 1 from measurements;
# - use the package metrics `effective_span` (Eq. 5.4.4) and `information_coverage` (Eq. 14.3.8) on
#   any attention tensor, and know what their thresholds do;
# - test inductive biases (permutation and shift equivariance, data efficiency on a local task)
#   and say what one attention layer can and cannot compute;
# - say which of the source's claims about long-range dependencies hold, which need conditions, and
#   which are wrong.
#
# **Prerequisites**: chapter 01; the chain rule for vectors (Jacobian matrices), eigenvalues and
# singular values at the level of "‖Wv‖ ≤ σ_max ‖v‖"; PyTorch autograd (`backward`, `.grad`).
#
# **Time**: about 100 minutes (65 reading and experimenting, 35 for the exercises).
#
# Marks used in the claim checks: **✓ holds** · **⚠ holds only under a condition** (stated) ·
# **✗ wrong as printed** (counterexample and correct statement given).

# %% slideshow={"slide_type": "skip"}
import copy
import math
import time

import matplotlib.pyplot as plt
import numpy as np
import torch

from attncourse.attention import MultiHeadAttention, scaled_dot_product_attention, softmax
from attncourse.chapters.ch04_gradient_paths import (
    GradientPathPlot,
    LocalAttention,
    LocalConv,
    RecallAttention,
    RecallRNN,
    attention_gradient_norms,
    attention_jacobian_profile,
    attention_stack,
    averaging_information,
    chapter_attention,
    chapter_inputs,
    chapter_rnn,
    conv_graph,
    conv_stack,
    exploding_training,
    gaussian_rnn_information,
    gradient_curves,
    gradient_widget,
    gradient_widget_update,
    input_jacobian,
    largest_singular_value,
    layer_costs,
    layers_to_connect,
    local_attention_graph,
    log_slope,
    path_lengths_from,
    permutation_gap,
    power_norms,
    recall_accuracy,
    recall_batch,
    receptive_field,
    rnn_gradient_norms,
    rnn_graph,
    rnn_jacobian_profile,
    scaled_orthogonal,
    shift_gap,
    shifted_identity,
    shortest_path_lengths,
    spectral_radius,
    train_local,
    train_recall,
)
from attncourse.metrics import effective_span, information_coverage
from attncourse.norms import LayerNorm
from attncourse.positional import alibi_bias, sinusoidal_encoding
from attncourse.rnn import VanillaRNN

torch.manual_seed(0)
np.random.seed(0)
torch.set_num_threads(2)
torch.set_flush_denormal(True)
torch.set_printoptions(precision=4, sci_mode=False)
plt.rcParams.update({"figure.dpi": 80, "figure.figsize": (7, 3)})

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 1. An RNN's gradient is a product of Jacobians (Eq. 5.4.1–5.4.2)
#
# A vanilla recurrent network updates its state with
#
# $$h_t = \tanh(W_{hh} h_{t-1} + W_{xh} x_t) \qquad (5.4.1)$$
#
# (`attncourse.rnn.VanillaRNN`, which also allows a bias and `relu` or `linear` instead of tanh).
# Information from step t reaches step T only through the T − t updates in between, so the chain
# rule turns the gradient into a product (the source writes it for x₁ and a loss L):
#
# $$\frac{\partial \mathcal{L}}{\partial x_1} = \frac{\partial \mathcal{L}}{\partial h_n}
# \frac{\partial h_n}{\partial h_{n-1}} \cdots \frac{\partial h_2}{\partial h_1}\frac{\partial h_1}{\partial x_1}
# \qquad (5.4.2)$$
#
# With $a_s = W_{hh}h_{s-1} + W_{xh}x_s$ and $D_s = \mathrm{diag}(f'(a_s))$ each factor is
# $\partial h_s/\partial h_{s-1} = D_s W_{hh}$, and
#
# $$\frac{\partial h_T}{\partial x_t} = D_T W_{hh}\, D_{T-1} W_{hh} \cdots D_{t+1} W_{hh}\, D_t W_{xh}.$$
#
# For tanh, $f'(a_s) = 1 - h_s^2$ can be read off the states. For a **linear** RNN every $D_s = I$
# and the product is a matrix power: $\partial h_T/\partial x_{T-k} = W_{hh}^{k} W_{xh}$. Throughout,
# **distance** k = T − t counts steps back from the last position (k = 0 is the newest input).
#
# > **Glossary** · recurrent neural network 循环神经网络 · hidden state 隐藏状态 · chain rule 链式法则 ·
# > Jacobian matrix 雅可比矩阵 · path length 路径长度 · distance 距离 · vanishing / exploding gradient
# > 梯度消失 / 梯度爆炸

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Claim check — Eq. (5.4.2) ✓.** Three independent computations of ∂h_T/∂x_t for a small tanh
# RNN (with bias): PyTorch's `torch.autograd.functional.jacobian`, the package's `input_jacobian`
# (one backward pass for the whole Jacobian) and the explicit product of Eq. (5.4.2), written out
# below from the states (no autograd at all). For the linear RNN, the matrix power.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
T, d = 12, 6
rnn = VanillaRNN(d, d, nonlinearity="tanh").double()  # with a bias b = bias_ih + bias_hh
x = torch.randn(T, d, dtype=torch.float64)  # (T, d)
J_torch = torch.autograd.functional.jacobian(lambda x: rnn(x[None])[0, -1], x)  # (d, T, d)
J_one_pass = input_jacobian(lambda xb: rnn(xb)[:, -1], x)  # (d, T, d)
print("autograd.functional.jacobian == input_jacobian:", torch.allclose(J_torch, J_one_pass))

states = rnn(x[None])[0].detach()  # (T, d) h_1..h_T
W_hh, W_xh = rnn.weight_hh.detach(), rnn.weight_ih.detach()
t = 3  # 0-based position of x_t
product = torch.diag(1 - states[t] ** 2) @ W_xh  # D_t W_xh
for s in range(t + 1, T):
    product = torch.diag(1 - states[s] ** 2) @ W_hh @ product  # D_s W_hh (...)   Eq. (5.4.2)
print(
    f"product of Eq. (5.4.2) == autograd for dh_T/dx_{t + 1}:",
    torch.allclose(product, J_torch[:, t]),
)

linear = VanillaRNN(d, d, nonlinearity="linear", bias=False).double()
J_lin = input_jacobian(lambda xb: linear(xb)[:, -1], x)  # (d, T, d)
W_lin = linear.weight_hh.detach()
powers_ok = all(
    torch.allclose(
        J_lin[:, T - 1 - k], torch.linalg.matrix_power(W_lin, k) @ linear.weight_ih.detach()
    )
    for k in range(T)
)
print("linear RNN: dh_T/dx_{T-k} == W_hh^k W_xh for every k:", powers_ok)
assert torch.allclose(J_torch, J_one_pass) and torch.allclose(product, J_torch[:, t]) and powers_ok

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 2. Which "λ_max"? Spectral radius vs largest singular value
#
# The source continues: *"let λ_max be the **largest singular value** of W_hh; then
# ‖∂h_t/∂h_{t−1}‖₂ ≈ λ_max (ignoring the activation); after n − 1 steps the gradient scales by
# about λ_max^{n−1}: it vanishes exponentially for λ_max < 1 and explodes for λ_max > 1."*
#
# Two different numbers hide in "λ_max":
# - the **largest singular value** σ_max(W) = ‖W‖₂, the most one step can stretch a vector. It gives
#   an **upper bound**, ‖W^k‖₂ ≤ σ_max^k, so σ_max < 1 guarantees vanishing;
# - the **spectral radius** ρ(W) = max |eigenvalue|, the **long-run rate**: ‖W^k‖^{1/k} → ρ(W)
#   (Gelfand's formula), and ‖W^k‖₂ ≥ ρ^k, so ρ > 1 guarantees explosion of the linear RNN.
#
# They agree for *normal* matrices (W Wᵀ = Wᵀ W, e.g. symmetric or scaled orthogonal), where
# ‖W^k‖₂ = ρ^k exactly. For non-normal matrices they can sit on opposite sides of 1:
# - W = [[0.5, 2], [0, 0.5]]: σ_max = 2.12 > 1, yet ρ = 0.5 and ‖W^k‖ → 0. "σ_max > 1 explodes" is false.
# - W = 0.9 I + 0.5 N (N the shift matrix, 16 × 16): ρ = 0.9 < 1, yet ‖W^k‖ first **grows** by nine
#   orders of magnitude before the eventual decay — over practical lengths this RNN explodes.
#
# > **Glossary** · singular value 奇异值 · spectral radius 谱半径 · eigenvalue 特征值 ·
# > normal matrix 正规矩阵 · non-normal 非正规 · transient growth 瞬态增长 · upper bound 上界

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
W_2x2 = torch.tensor([[0.5, 2.0], [0.0, 0.5]], dtype=torch.float64)
W_shift = shifted_identity(16, 0.9, 0.5)  # 0.9 I + 0.5 N
W_orth = scaled_orthogonal(
    16, 0.9, torch.Generator().manual_seed(0)
)  # normal: rho = sigma_max = 0.9
ks = [1, 5, 20, 50, 100, 200, 400, 800]
print(f"{'matrix':>16} {'rho':>5} {'s_max':>6} | " + " ".join(f"{'k=' + str(k):>9}" for k in ks))
for name, W in (
    ("0.9 x orthogonal", W_orth),
    ("[[.5, 2], [0, .5]]", W_2x2),
    ("0.9 I + 0.5 N", W_shift),
):
    norms = power_norms(W, ks)
    print(
        f"{name:>16} {spectral_radius(W):5.2f} {largest_singular_value(W):6.2f} | "
        + " ".join(f"{v:9.2e}" for v in norms)
    )
    assert all(
        v <= largest_singular_value(W) ** k * (1 + 1e-9) for v, k in zip(norms, ks)
    )  # the sigma_max bound
    assert all(
        v >= spectral_radius(W) ** k * (1 - 1e-9) for v, k in zip(norms, ks)
    )  # the rho bound
assert max(power_norms(W_shift, ks)) > 1e8 and power_norms(W_2x2, [20])[0] < 1e-3

# %% slideshow={"slide_type": "subslide"}
k_axis = list(range(0, 1001, 10))
fig, ax = plt.subplots(1, 2, figsize=(10, 3.2))
for name, W, c in (
    ("0.9 x orthogonal", W_orth, "tab:green"),
    ("[[.5, 2], [0, .5]]", W_2x2, "tab:purple"),
    ("0.9 I + 0.5 N", W_shift, "tab:red"),
):
    ax[0].semilogy(
        k_axis,
        power_norms(W, k_axis),
        c=c,
        label=f"{name}: rho={spectral_radius(W):.2f}, s_max={largest_singular_value(W):.2f}",
    )
ax[0].set(
    xlabel="k", ylabel="||W^k||_2", title="same rule? no: transient growth", ylim=(1e-60, 1e12)
)
ax[0].legend(fontsize=7)
k_short = list(range(0, 60))
ax[1].semilogy(k_short, power_norms(W_shift, k_short), c="tab:red", label="||W^k||, 0.9 I + 0.5 N")
ax[1].semilogy(
    k_short,
    [largest_singular_value(W_shift) ** k for k in k_short],
    "k--",
    lw=1,
    label="s_max^k (upper bound)",
)
ax[1].semilogy(k_short, [0.9**k for k in k_short], "k:", lw=1, label="rho^k (lower bound)")
ax[1].set(xlabel="k", title="between the two bounds")
ax[1].legend(fontsize=7)
plt.tight_layout()
plt.show()

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Claim check — "λ_max = largest singular value, ‖∂h_t/∂h_{t−1}‖₂ ≈ λ_max, scaling λ_max^{n−1}" ⚠ / ✗.**
# One step: ✓ for the linear RNN, ‖∂h_t/∂h_{t−1}‖₂ = ‖W‖₂ = σ_max exactly (with tanh, ≤ σ_max).
# Many steps: ✗ as an approximation — σ_max^{n−1} is only an **upper bound** on ‖W^{n−1}‖₂, and the
# long-run rate is the **spectral radius** ρ. So "σ_max < 1 ⇒ vanishing" ✓ (sufficient), but
# "σ_max > 1 ⇒ explosion" ✗ (the 2 × 2 example vanishes), and even "ρ < 1 ⇒ no explosion" fails at
# finite lengths (0.9 I + 0.5 N grows to 10⁹). **Correct statement**: ρ(W)^k ≤ ‖W^k‖₂ ≤ σ_max(W)^k,
# with equality on both sides for normal W. This chapter's experiments use W = ρ · orthogonal,
# where all three numbers coincide, so that "ρ" means one thing.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 3. Reproduction: gradient vs distance (Bengio et al. 1994; Pascanu et al. 2013)
#
# **Setup** (CPU, a few seconds): d = 64, T = 100, W_hh = ρ · (random orthogonal), W_xh = I, no
# bias, inputs 0.3 · N(0, I); 5 seeds for each ρ ∈ {0.9, 1.0, 1.2} and f ∈ {linear, tanh}. For
# attention: one causal self-attention layer (`MultiHeadAttention`, one head, default
# initialisation), the output at the last position, N(0, I) inputs, 20 seeds. The measured quantity
# is g(k) = ‖∂out_T/∂x_{T−k}‖_F: for the RNN from the full Jacobian (`input_jacobian`, equal to
# `torch.autograd.functional.jacobian`, §1); for attention from its closed form
# (`attention_jacobian_profile`, checked against the autograd Jacobian in the cell).
#
# **Expected** (Bengio et al. 1994; Pascanu et al. 2013, §2–3): for the linear RNN,
# g(k) = ρ^k √d exactly, a straight line of slope ln ρ on a log scale; tanh adds factors
# |f′| ≤ 1, so it vanishes faster, and saturation can stop the growth at ρ > 1; attention's path
# from any input to the output is one step long, so g does not depend on k.
#
# **Pass**: linear slope within 10⁻³ of ln ρ; tanh g(1)/g(50) > 10³ at ρ = 0.9 and 1.0, and still
# > 1 (decaying) at ρ = 1.2; attention g(1)/g(50) in [0.2, 5].

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
rhos, seeds = (0.9, 1.0, 1.2), range(5)
G = {
    (f, rho): torch.stack([rnn_gradient_norms(rho, f, T=100, d=64, seed=s) for s in seeds])
    for f in ("linear", "tanh")
    for rho in rhos
}  # (5 seeds, 100 distances) each
G_att = torch.stack(
    [
        attention_jacobian_profile(chapter_attention(64, s), chapter_inputs(100, 64, s))
        for s in range(20)
    ]
)  # (20, 100) closed form ...
assert torch.allclose(
    G_att[0], attention_gradient_norms(T=100, d=64, seed=0)
)  # ... = the autograd Jacobian

print(f"{'model':>8} {'rho':>4} | {'slope ln g':>10} {'ln rho':>7} | {'g(1)/g(50)':>10}")
for (f, rho), g in G.items():
    ratio = float((g[:, 1] / g[:, 50]).mean())
    print(
        f"{f:>8} {rho:4.1f} | {round(log_slope(g), 4) + 0.0:10.4f} {math.log(rho):7.4f} | {ratio:10.3g}"
    )
att_ratio = float(G_att[:, 1].mean() / G_att[:, 50].mean())
print(
    f"{'attention':>8}      | {round(log_slope(G_att), 4) + 0.0:10.4f} {'':>7} | {att_ratio:10.3g}"
)

for rho in rhos:
    assert abs(log_slope(G["linear", rho]) - math.log(rho)) < 1e-3
    assert torch.allclose(
        G["linear", rho][:, 10], torch.full((5,), rho**10 * 8.0, dtype=torch.float64)
    )  # rho^k sqrt(64)
assert float((G["tanh", 0.9][:, 1] / G["tanh", 0.9][:, 50]).mean()) > 1e3
assert float((G["tanh", 1.0][:, 1] / G["tanh", 1.0][:, 50]).mean()) > 1e3
assert float((G["tanh", 1.2][:, 1] / G["tanh", 1.2][:, 50]).mean()) > 1  # rho > 1, still decaying
assert 0.2 <= att_ratio <= 5

# %% slideshow={"slide_type": "subslide"}
k = np.arange(100)
fig, ax = plt.subplots(1, 2, figsize=(10, 3.4), sharey=True)
colors = {0.9: "tab:blue", 1.0: "tab:green", 1.2: "tab:red"}
for a_i, f in enumerate(("linear", "tanh")):
    for rho in rhos:
        g = G[f, rho].log().mean(0).exp()  # geometric mean over seeds
        ax[a_i].semilogy(k, g, c=colors[rho], label=f"{f} RNN, rho = {rho}")
    ax[a_i].semilogy(k, G_att.mean(0), c="tab:orange", lw=2, label="self-attention")
    ax[a_i].set(xlabel="distance k = T - t", title=f"{f} RNN vs attention", ylim=(1e-7, 1e6))
    ax[a_i].legend(fontsize=7)
ax[0].set_ylabel("||d out_T / d x_{T-k}||_F")
plt.tight_layout()
plt.show()

# %% [markdown] slideshow={"slide_type": "-"}
# The measurements match the paper's analysis: the linear RNN follows ρ^k to four decimals of its
# slope, tanh vanishes even at ρ = 1 (g(1)/g(50) of several thousand), and one attention layer
# gives a flat profile: its far inputs get as much gradient as its near ones.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 4. "λ_max > 1 means explosion" is necessary, not sufficient (Pascanu et al. 2013)
#
# Pascanu, Mikolov and Bengio (2013, §2.1, "The mechanics") prove, for h_t = W f(h_{t−1}) + … with |f′| ≤ γ
# (γ = 1 for tanh, ¼ for the sigmoid) and λ₁ the largest singular value of W:
# - **λ₁ < 1/γ is sufficient for vanishing**: ‖∂h_T/∂h_{T−k}‖ ≤ (γλ₁)^k → 0;
# - so **λ₁ > 1/γ is necessary for exploding** — but not sufficient: the factors D_s = diag f′ depend
#   on where the trajectory runs. The tanh RNN at ρ = 1.2 above *vanished*, because its states
#   saturate (|h| near 1, f′ near 0).
#
# The cell runs the same ρ = 1.2 tanh RNN (d = 64, T = 100) on inputs of shrinking size. Near the
# fixed point h = 0, tanh′ ≈ 1 and the RNN behaves like the linear one: the gradient explodes.
# With larger inputs it saturates and vanishes. Same W, opposite behaviour.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
rnn_12 = chapter_rnn(1.2, "tanh", d=64, seed=0)
W12, I64 = rnn_12.weight_hh.detach(), rnn_12.weight_ih.detach()
print(
    f"tanh RNN, rho = sigma_max = 1.2 > 1:   {'input scale':>11} | {'g(1)':>8} {'g(50)':>9} {'g(99)':>9} | behaviour"
)
for scale in (1e-8, 1e-4, 1e-2, 0.3, 1.0):
    g = rnn_jacobian_profile(W12, I64, chapter_inputs(100, 64, 0, scale), "tanh")  # (100,)
    verdict = "explodes" if g[99] > 10 * g[1] else "vanishes" if g[99] < g[1] / 10 else "neither"
    print(
        f"{'':37}{scale:11.0e} | {float(g[1]):8.2f} {float(g[50]):9.2e} {float(g[99]):9.2e} | {verdict}"
    )
    if scale == 1e-8:
        assert g[99] > 1e6 * g[1]
    if scale >= 0.3:
        assert g[99] < 1e-2 * g[1]

# Pascanu's sufficient condition: gamma * sigma_max < 1  =>  ||dh_T/dx_{T-k}||_F <= sqrt(d) (gamma sigma_max)^k ||W_xh||_2
worst = 0.0
for seed in range(5):
    gen = torch.Generator().manual_seed(seed)
    W = torch.randn(32, 32, generator=gen, dtype=torch.float64)
    W = 0.95 * W / largest_singular_value(W)  # sigma_max = 0.95, tanh: gamma = 1
    for scale in (0.01, 0.3, 1.0):
        g = rnn_jacobian_profile(
            W, torch.eye(32, dtype=torch.float64), chapter_inputs(80, 32, seed, scale), "tanh"
        )
        bound = math.sqrt(32) * 0.95 ** torch.arange(80, dtype=torch.float64)
        worst = max(worst, float((g / bound).max()))
print(f"sigma_max = 0.95, tanh, 15 runs: largest g(k) / bound = {worst:.3f} <= 1")
assert worst <= 1 + 1e-9

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Claim check — Eq. (5.4.2)'s "λ_max > 1 ⇒ explosion" ⚠ necessary, not sufficient** (with
# nonlinearities; for the *linear* RNN, ρ > 1 ⇒ explosion holds). **Correct statement** (Pascanu et
# al. 2013): with |f′| ≤ γ and λ₁ = σ_max(W), λ₁ < 1/γ ⇒ the gradient vanishes exponentially; λ₁ > 1/γ
# is necessary for it to explode, and whether it does depends on the inputs and states (it did at
# input scale 10⁻⁸, it did not at 0.3).

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 5. Gradient clipping: Pascanu's fix for explosions
#
# Pascanu et al.'s Algorithm 1: compute the **global** gradient norm ‖g‖ over all parameters; if
# it exceeds a threshold c, rescale every gradient by c/‖g‖. The direction is kept, only the step
# length is capped (`attncourse.chapters.ch04_gradient_paths.clip_gradients`, `clip_grad_norm_`; you write it in
# Exercise 4). The demonstration: a **linear** RNN (hidden 16, T = 30) started in the exploding
# regime W_hh = 1.2 · orthogonal, trained for 100 steps with plain SGD (lr 0.1, batch 32) to output
# the input 3 steps back. At the start the gradient norm is about 2·10⁴.
#
# > **Glossary** · gradient clipping 梯度裁剪 · gradient norm 梯度范数 · threshold 阈值 ·
# > learning rate 学习率 · stochastic gradient descent 随机梯度下降 · cliff (loss surface) 悬崖

# %% slideshow={"slide_type": "-"}
# NBVAL_IGNORE_OUTPUT
loss_plain, norm_plain = exploding_training(clip=None)
loss_clip, norm_clip = exploding_training(clip=1.0)
first_nan = next(i for i, v in enumerate(loss_plain) if math.isnan(v))
print(f"gradient norm at step 0: {norm_plain[0]:.2e}")
print(f"no clipping  : loss {loss_plain[0]:.1f} -> not finite from step {first_nan} on")
print(
    f"clip at 1.0  : loss {loss_clip[0]:.1f} -> {np.mean(loss_clip[-10:]):.3f} (mean of the last 10 of "
    f"{len(loss_clip)} steps; predicting 0 scores 1.0)"
)
assert first_nan <= 3 and norm_plain[0] > 1e3
assert np.mean(loss_clip[-10:]) < 0.1 and all(math.isfinite(v) for v in loss_clip)

# %% slideshow={"slide_type": "subslide"}
fig, ax = plt.subplots(1, 2, figsize=(10, 3))
ax[0].semilogy(
    loss_plain, "o-", c="tab:red", ms=7, label=f"no clipping (nan from step {first_nan})"
)
ax[0].semilogy(loss_clip, c="tab:blue", label="clipped at ||g|| = 1")
ax[0].axhline(1.0, ls=":", c="k", lw=1, label="predict 0")
ax[0].set(xlabel="SGD step", ylabel="loss", title="linear RNN started at rho = 1.2")
ax[0].legend(fontsize=8)
ax[1].semilogy(norm_clip, c="tab:blue")
ax[1].axhline(1.0, ls="--", c="k", lw=1, label="threshold c = 1")
ax[1].set(
    xlabel="SGD step", ylabel="||g|| before clipping", title="the clipped run's raw gradient norm"
)
ax[1].legend(fontsize=8)
plt.tight_layout()
plt.show()

# %% [markdown] slideshow={"slide_type": "-"}
# Clipping does not make the gradient *right*: it only stops one huge step from throwing the
# parameters off the cliff. It does nothing for **vanishing** gradients — for those the remedies
# are architectural: gates (LSTM/GRU), residual paths (chapter 08), or attention's direct paths.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 6. Attention: every input one step from the output (Eq. 5.4.3, Thm. 14.3.2, Cor. 14.3.2)
#
# Self-attention computes each output directly from every value,
#
# $$o_i = \sum_{j=1}^{n} A_{ij} v_j \qquad (5.4.3)$$
#
# so ∂o_i/∂v_j = A_ij I: whatever the distance |i − j|, the path from v_j to o_i is one step long
# (Thm. 14.3.2: PathLength_self-attn = 1). That is why the attention profile of §3 is flat.
#
# But one step does not mean a *large* gradient. The size of that step is the weight A_ij (plus the
# scores' own path). When attention is peaked, most weights are tiny, and so is the gradient to the
# positions they belong to — whatever their distance. The cell scales the query projection by β
# (sharper attention) and reports how much of the sequence still gets gradient.
#
# > **Glossary** · direct dependence 直接依赖 · one-step path 一步路径 · peaked (sharp) attention 尖锐注意力 ·
# > saturation 饱和

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
base, x100 = chapter_attention(64, 0), chapter_inputs(100, 64, 0)
print(
    f"{'beta':>5} {'max weight':>10} | {'median g(k)/max g(k)':>20} {'share of positions below 1e-3 of max':>37}"
)
shares = {}
for beta in (1.0, 4.0, 16.0, 64.0):
    m = copy.deepcopy(base)
    with torch.no_grad():
        m.q_proj.weight.mul_(beta)
        m.q_proj.bias.mul_(beta)
    g = attention_jacobian_profile(m, x100)[
        1:
    ]  # (99,) k >= 1, closed form (= autograd, see the tests)
    w_max = float(m(x100[None, -1:], x100[None], x100[None])[1].detach().max())
    shares[beta] = float((g < 1e-3 * g.max()).double().mean())
    print(f"{beta:5.0f} {w_max:10.3f} | {float(g.median() / g.max()):20.2e} {shares[beta]:37.2f}")
assert shares[1.0] == 0 and shares[64.0] > 0.9

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Claim check — Thm. 14.3.2 (path length 1) ✓** for the *structure*: one attention layer connects
# every pair in one step (measured by breadth-first search in §7). **Cor. 14.3.2 ("shorter paths ⇒
# gradients avoid vanishing") ⚠**: the gradient through a one-step path is proportional to the
# weight on it, so it is distance-independent but **content-dependent**; peaked (saturated)
# attention starves most positions of gradient (β = 64: over 90 % below 10⁻³ of the largest).
# Chapter 03 treats saturation; chapter 07 adds positional biases that make attention decay with
# distance on purpose.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 7. Path lengths and complexity, measured (Eq. 5.4.5; Vaswani et al. 2017, Table 1)
#
# The source defines the distance between positions on the dependency graph of A, edge i → j when
# A_ij > ε:
#
# $$\mathrm{dist}(i, j) = \begin{cases} 0 & i = j \\ 1 & A_{ij} > \epsilon \\
# \min\{\text{path length}\} & \text{otherwise} \end{cases} \qquad (5.4.5)$$
#
# — a shortest path, found by **breadth-first search** (`shortest_path_lengths`,
# `path_lengths_from`; you write one in Exercise 3). The same search works on the one-step graph
# of any layer: an RNN step (i reads i − 1), a convolution of width k (i reads i ± (k−1)/2), a
# local attention window. For a stack of layers the number of **layers** needed to connect two
# positions is the path length (`layers_to_connect`). First, n = 64:
#
# > **Glossary** · breadth-first search 广度优先搜索 · graph 图 · receptive field 感受野 ·
# > dilated convolution 空洞卷积 · sequential operations 顺序操作数 · FLOPs 浮点运算次数 ·
# > complexity 复杂度 · restricted (local) attention 受限（局部）注意力

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
n = 64
x64 = torch.randn(n, 16, dtype=torch.float64)
_, A = scaled_dot_product_attention(x64, x64, x64)  # (64, 64) all weights > 0
dilated = layers_to_connect([conv_graph(n, 3, 2**layer) for layer in range(8)], source=0)  # (n,)
paths = {
    "RNN (chain)": path_lengths_from(rnn_graph(n), 0)[-1],
    "CNN, width 3": path_lengths_from(conv_graph(n, 3), 0)[-1],
    "CNN, width 3, dilation 2^l": dilated[-1],
    "self-attention (A > 0)": path_lengths_from(A > 0, 0)[-1],
    "local attention, window 8": path_lengths_from(local_attention_graph(n, 8), 0)[-1],
}
print(f"n = {n}: steps (or layers) for information at position 0 to reach position {n - 1}")
for name, steps in paths.items():
    print(f"  {name:28s} {float(steps):4.0f}")
all_pairs = shortest_path_lengths(A > 0)
print(
    f"self-attention, all pairs: max dist = {float(all_pairs.max()):.0f}, diagonal = {float(all_pairs.diagonal().max()):.0f}"
)
assert [float(v) for v in paths.values()] == [63, 63, 6, 1, 8]

# %% [markdown] slideshow={"slide_type": "-"}
# **Receptive fields, measured.** The source says a width-3 convolution has a receptive field of
# about 2l + 1 after l layers, so covering n positions takes about n/2 layers. The cell stacks real
# `Conv1d` layers and finds, with autograd, which inputs the middle output depends on (non-zero
# gradient). With dilations 1, 2, 4, … (WaveNet-style) the field doubles each layer instead.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
fields = {n: receptive_field(conv_stack(n), 129) for n in range(1, 7)}
fields_dilated = {n: receptive_field(conv_stack(n, dilated=True), 129) for n in range(1, 7)}
print("layers l            :", list(fields))
print("width 3             :", list(fields.values()), "  (2l + 1)")
print("width 3, dilation 2^l:", list(fields_dilated.values()), "  (2^(l+1) - 1)")
assert all(v == 2 * n + 1 for n, v in fields.items())
assert all(v == 2 ** (n + 1) - 1 for n, v in fields_dilated.items())

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Claim check — "receptive field ≈ 2l + 1; covering n needs ≈ n/2 layers" (§5.4.2) ✓** for
# contiguous width-3 kernels (measured exactly 2l + 1; from the middle, (n − 1)/2 layers cover
# everything; from one end to the other, n − 1). The O(log_k n) in the convolutional row of
# Vaswani et al.'s Table 1 assumes **dilated** kernels; their text (§4) adds that contiguous
# kernels need O(n/k) layers.
#
# **The complexity table.** Per layer on n positions of width d: FLOPs counted from the matrix
# products actually executed (`count_flops`), sequential operations as the longest chain in the
# autograd graph (`autograd_depth`: the steps no amount of parallel hardware can overlap), and the
# first-to-last path length (breadth-first search). Attention is the n × n core softmax(qkᵀ/√d)v
# (projections excluded, as in the paper's table).

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
ns, d_model = (32, 128, 512), 64
costs = {n_: layer_costs(n_, d_model) for n_ in ns}
print(f"d = {d_model}   {'':16} " + "".join(f"{'n = ' + str(n_):>34}" for n_ in ns))
print(f"{'layer':16} {'':16} " + "".join(f"{'FLOPs':>14}{'sequential':>11}{'path':>9}" for _ in ns))
for layer in ("self-attention", "recurrent", "convolutional"):
    row = "".join(
        f"{costs[n_][layer]['flops']:14.3g}{costs[n_][layer]['sequential']:11d}{costs[n_][layer]['path']:9.0f}"
        for n_ in ns
    )
    print(f"{layer:16} {'':16} {row}")
print("fitted exponent of n (32 -> 512):")
exponents = {}
for layer in ("self-attention", "recurrent", "convolutional"):
    exponents[layer] = {
        key: math.log(costs[512][layer][key] / costs[32][layer][key]) / math.log(16)
        for key in ("flops", "sequential", "path")
    }
    print(
        f"  {layer:16}  FLOPs ~ n^{exponents[layer]['flops']:.2f}   sequential ~ n^{exponents[layer]['sequential']:.2f}"
        f"   path ~ n^{exponents[layer]['path']:.2f}"
    )
assert (
    abs(exponents["self-attention"]["flops"] - 2) < 0.01
    and abs(exponents["recurrent"]["flops"] - 1) < 0.01
)
assert abs(exponents["convolutional"]["flops"] - 1) < 0.01
assert (
    exponents["recurrent"]["sequential"] > 0.95 and exponents["self-attention"]["sequential"] == 0
)
assert (
    costs[32]["self-attention"]["flops"] < costs[32]["recurrent"]["flops"]
)  # n < d: attention is cheaper

# %% [markdown] slideshow={"slide_type": "-"}
# Measured, the three rows of Vaswani et al.'s Table 1 (self-attention O(n²·d) / O(1) / O(1);
# recurrent O(n·d²) / O(n) / O(n); convolutional O(k·n·d²) / O(1) / O(log_k n) — the table's path
# length assumes dilated kernels, and their text adds O(n/k) layers for contiguous ones):
# attention's FLOPs grow as n², the RNN's and the convolution's as n; only the RNN's sequential
# chain grows with n; the path is 1 for attention and n − 1 for the RNN and a width-3 convolution
# stack. At n = 32 < d = 64 attention is even the cheapest per layer (n²d < nd²), the paper's remark.
# Restricted attention with window r gives path ⌈(n − 1)/r⌉ (8 for r = 8, n = 64 above); its O(r·n·d)
# cost needs a banded implementation — a dense mask still computes all n² scores (chapter 10).
#
# **Claim check — Thm. 14.3.2, PathLength_RNN = n ✓ (up to one)**: from the first to the last of n
# positions the RNN needs n − 1 steps (measured), i.e. O(n).
#
# **Claim check — "the RNN's effective complexity for long-range dependencies is O(n²)" (§5.4.2) ✗.**
# The source argues the RNN needs "O(n) sequential steps, so O(n²) in total". Measured: its FLOPs
# grow as n¹ (exponent 1.00), O(n·d²) for the whole sequence, and that one pass already carries
# every position's information forward. What grows with n is the **sequential** chain (n steps that
# cannot run in parallel), not the total work. **Correct statement**: RNN O(n·d²) work in O(n)
# sequential steps; attention O(n²·d) work in O(1) sequential steps.
#
# **Claim check — "attention's memory access is regular, RNN's sequential" (§5.4.2) ⚠.** The part
# that matters is the dependency chain above (n sequential steps vs a constant). On memory,
# attention is the *worse* one: it materialises an n × n weight matrix per head (n = 512: 262,144
# entries against the RNN's 512 × 64 states), which is what chunked/flash attention avoids (chapter 10).
#
# **Claim check — Eq. (5.4.5), "A_ij is never exactly 0, so dist(i, j) = 1 for all i ≠ j" ✓ for
# ε = 0, ⚠ for ε > 0.** With a threshold, sharper attention drops edges, and the graph's
# diameter grows — or the graph falls apart (inf):

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
x32 = torch.randn(32, 16, dtype=torch.float64, generator=torch.Generator().manual_seed(4))
print(
    f"n = 32, eps = 0.01:  {'score scale':>11} | {'edges A > eps':>13} | {'diameter (max dist)':>19}"
)
diameters = {}
for scale in (0.1, 0.5, 1.0, 2.0, 4.0):
    _, A = scaled_dot_product_attention(x32, x32, x32, scale=scale / 4)  # (32, 32)
    dist = shortest_path_lengths(A > 0.01)
    diameters[scale] = float(dist.max())
    print(f"{'':20} {scale:11.1f} | {int((A > 0.01).sum()):13d} | {diameters[scale]:19.0f}")
assert diameters[0.1] == 1 and diameters[1.0] >= 2 and math.isinf(diameters[4.0])

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 8. A long-range recall task: the RNN fails with distance, attention does not
#
# **Task** (`recall_batch`): ten random tokens from {0, 1, 2, 3}, then a query token "k" with
# k ∈ {1, …, 10}; the answer is the token k positions before the query. Chance is 25 %.
# **Models**: `RecallRNN` — embedding (32), tanh `VanillaRNN` (64 units), linear read-out of the
# last state; `RecallAttention` — embedding + learned absolute positions (32), one causal
# self-attention layer, linear read-out at the query. Adam, lr 10⁻², batch 64; 250 steps for the
# RNN, 100 for attention; two seeds. **Expected**: the RNN's accuracy falls with k (the answer must
# survive k tanh steps; its gradient, §3, shrinks exponentially with k); attention reaches every
# distance in one step. **Pass**: on both seeds the RNN ≥ 0.9 at k = 1 and ≤ 0.5 on average for
# k ≥ 6, a drop of ≥ 0.4; attention ≥ 0.95 at every k.
#
# > **Glossary** · recall 回忆 · token 词元 · query token 查询词元 · accuracy 准确率 · chance level 随机水平 ·
# > progress bar 进度条

# %% slideshow={"slide_type": "-"}
# NBVAL_IGNORE_OUTPUT
acc_rnn, acc_att, models = {}, {}, {}
for seed in (0, 1):
    torch.manual_seed(seed)
    models["rnn", seed] = RecallRNN()
    train_recall(models["rnn", seed], steps=250, lr=1e-2, seed=seed, desc=f"RNN, seed {seed}")
    torch.manual_seed(seed)
    models["att", seed] = RecallAttention()
    train_recall(models["att", seed], steps=100, lr=1e-2, seed=seed, desc=f"attention, seed {seed}")
    acc_rnn[seed], acc_att[seed] = (
        recall_accuracy(models["rnn", seed]),
        recall_accuracy(models["att", seed]),
    )

# %% slideshow={"slide_type": "-"}
# NBVAL_IGNORE_OUTPUT
print(f"{'distance k':>16}: " + " ".join(f"{k_:5d}" for k_ in range(1, 11)))
for seed in (0, 1):
    print(
        f"{'RNN, seed ' + str(seed):>16}: " + " ".join(f"{a:5.2f}" for a in acc_rnn[seed].tolist())
    )
    print(
        f"{'attention, seed ' + str(seed):>16}: "
        + " ".join(f"{a:5.2f}" for a in acc_att[seed].tolist())
    )
for seed in (0, 1):
    near, far = float(acc_rnn[seed][0]), float(acc_rnn[seed][5:].mean())
    assert near >= 0.9 and far <= 0.5 and near - far >= 0.4, (seed, near, far)
    assert float(acc_att[seed].min()) >= 0.95, seed
print(
    "RNN: accurate at k = 1, near chance (0.25) from k = 6 on; attention: accurate at every distance"
)

# %% slideshow={"slide_type": "subslide"}
fig, ax = plt.subplots(figsize=(6, 3))
for seed, style in ((0, "-"), (1, "--")):
    ax.plot(range(1, 11), acc_rnn[seed], "o" + style, c="tab:blue", label=f"RNN, seed {seed}")
    ax.plot(
        range(1, 11), acc_att[seed], "s" + style, c="tab:orange", label=f"attention, seed {seed}"
    )
ax.axhline(0.25, ls=":", c="k", lw=1, label="chance")
ax.set(
    xlabel="distance k",
    ylabel="accuracy",
    ylim=(0, 1.05),
    title="recall the token k positions back",
)
ax.legend(fontsize=7, ncol=2)
plt.tight_layout()
plt.show()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 9. Effective dependency span and information coverage (Eq. 5.4.4, Def. 14.3.5, Lemma 14.3.6)
#
# Two threshold statistics of an attention matrix, now in `attncourse.metrics` for any tensor
# (B, H, T, S) — also another model's attention:
#
# $$\mathrm{span}_{\mathrm{eff}}(i) = \max\{|i - j| : A_{ij} > \epsilon\} \qquad (5.4.4) \qquad\qquad
# \mathcal{R}(i) = \{j : \alpha_{ij} > \tau\} \qquad (14.3.8)$$
#
# `effective_span(weights, eps)` returns the span per query (0 when no weight exceeds ε);
# `information_coverage(weights, tau)` returns |R(i)|. On the trained recall model of §8 the last
# query's span should be exactly the distance k it was asked for:
#
# > **Glossary** · effective dependency span 有效依赖跨度 · information coverage 信息覆盖范围 ·
# > threshold 阈值 · local / global attention 局部 / 全局注意力

# %% slideshow={"slide_type": "-"}
# NBVAL_IGNORE_OUTPUT
xq, yq, kq = recall_batch(500, torch.Generator().manual_seed(7))
with torch.no_grad():
    _, weights = models["att", 0].attention(xq)  # (500, 1, 11, 11)
span_last = effective_span(weights, eps=0.5)[:, 0, -1]  # (500,) the query position
cover_last = information_coverage(weights, tau=0.5)[:, 0, -1]  # (500,)
print("trained recall attention, eps = tau = 0.5:")
print(
    f"  span of the last query == asked distance k: {float((span_last == kq).double().mean()):.3f} of 500 queries"
)
print(
    f"  coverage |R(last)| = 1 (one position above 0.5): {float((cover_last == 1).double().mean()):.3f}"
)
assert float((span_last == kq).double().mean()) > 0.95

# %% [markdown] slideshow={"slide_type": "-"}
# **What the thresholds do.** Both metrics depend on ε (τ) as much as on the attention:
# - since the weights of a row sum to 1, at most ⌊1/τ⌋ of them can exceed τ, and strictly fewer than
#   1/τ: **|R(i)| < 1/τ**. Lemma 14.3.6's "ideally R(i) = {1, …, n}" is impossible for n ≥ 1/τ;
# - uniform attention over n positions has weights 1/n: with a fixed ε its span *drops to 0* once
#   n > 1/ε, although it reads everything equally. A threshold must scale with 1/n (e.g. ε = c/n).

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
dirichlet = torch.distributions.Dirichlet(torch.full((50,), 0.3, dtype=torch.float64))
w_random = dirichlet.sample((2000,))[None, None]  # (1, 1, 2000, 50) random attention rows
for tau in (0.05, 0.1, 0.3):
    cov = information_coverage(w_random, tau)
    print(
        f"tau = {tau:4}: max |R(i)| over 2000 random rows = {int(cov.max()):2d}  < 1/tau = {1 / tau:.1f}"
    )
    assert (cov < 1 / tau).all()
print(f"{'n':>6} {'span, eps = 0.01':>17} {'span, eps = 0.5/n':>18} {'coverage, tau = 0.01':>21}")
for n_ in (10, 50, 100, 200):
    uniform = torch.full((1, 1, n_, n_), 1 / n_, dtype=torch.float64)
    s_fixed, s_scaled = (
        effective_span(uniform, 0.01)[0, 0, -1],
        effective_span(uniform, 0.5 / n_)[0, 0, -1],
    )
    print(
        f"{n_:6d} {int(s_fixed):17d} {int(s_scaled):18d} {int(information_coverage(uniform, 0.01)[0, 0, -1]):21d}"
    )
local = softmax(
    torch.zeros(1, 1, 12, 12, dtype=torch.float64), mask=local_attention_graph(12, 2)
)  # window 2
print("local attention, window 2: span of each query =", effective_span(local, 0.01)[0, 0].tolist())
assert effective_span(local, 0.01).max() == 2

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Claim check — Eq. (5.4.4) and Def. 14.3.5 ✓ as definitions, ⚠ as measurements**: both are
# relative to the threshold. With ε = 0 every softmax row spans the whole sequence (all weights are
# positive), and with a fixed ε > 0 long uniform rows look like span 0. Report the threshold with
# the number, and scale it with 1/n. **Lemma 14.3.6 ⚠**: R(i) = all n positions holds for τ = 0
# (its proof's case) but is impossible whenever n ≥ 1/τ, because |R(i)| < 1/τ.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 10. Does information decay exponentially with distance? (Thm. 14.3.12, Eq. 14.3.36–14.3.40)
#
# Source 000 defines a transfer efficiency η_ij = I(z_i; z_j)/H(z_i) (14.3.36) and states as a
# theorem that η_ij ≈ exp(−d/λ) with d = |i − j| (14.3.38), in a section about attention. Two exact
# measurements:
# - **a linear RNN with Gaussian inputs** (x_t ~ N(0, I), h_0 = 0): h_T is Gaussian, so
#   I(h_T; x_{T−k}) can be computed exactly (`gaussian_rnn_information`). With W = ρ · orthogonal,
#   I(k) = (d/2) ln(s/(s − ρ^{2k})), s = Σ_m ρ^{2m}: exponential decay with λ = 1/(2 ln(1/ρ)) for
#   ρ < 1 — but **no decay at ρ = 1** and **growth** for ρ > 1;
# - **attention**: the gradient profile of §3 is flat (slope 0.0000 per step); nothing in
#   content-based attention decays with distance. A decay appears only when it is built in, e.g.
#   ALiBi's bias −m|i − j| (chapter 07), which makes equal-content weights exactly ∝ e^{−m d}.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
d_info, T_info, dists = 16, 60, list(range(0, 40, 5))
info = {}
for rho in (0.9, 1.0, 1.1):
    W = scaled_orthogonal(d_info, rho, torch.Generator().manual_seed(0))
    info[rho] = gaussian_rnn_information(W, torch.eye(d_info, dtype=torch.float64), T_info, dists)
    print(f"rho = {rho}: I(h_T; x_T-k) in nats for k = {dists}:", [f"{v:.3g}" for v in info[rho]])
slope_09 = np.polyfit(dists[2:], np.log(info[0.9][2:]), 1)[0]
print(
    f"rho = 0.9: slope of ln I = {slope_09:.4f} per step, 2 ln 0.9 = {2 * math.log(0.9):.4f}  (lambda = {-1 / slope_09:.2f})"
)
assert abs(slope_09 - 2 * math.log(0.9)) < 0.01
assert max(info[1.0]) - min(info[1.0]) < 1e-9 and info[1.1][-1] > info[1.1][0]

s_sum = sum(0.9 ** (2 * m) for m in range(T_info))
g_sq = [d_info * 0.9 ** (2 * k_) for k_ in dists]  # ||dh_T/dx_{T-k}||_F^2 = d rho^2k
print(
    "rho = 0.9: I(k) / (||g(k)||_F^2 / 2s) =",
    [f"{i_ / (g2 / (2 * s_sum)):.3f}" for i_, g2 in zip(info[0.9], g_sq)],
)
exact = [-d_info / 2 * math.log(1 - g2 / (d_info * s_sum)) for g2 in g_sq]
gap = max(abs(i_ - e_) for i_, e_ in zip(info[0.9], exact))
print(
    "rho = 0.9: I(k) == -(d/2) ln(1 - ||g(k)||^2 / (d s)) at every k, largest difference",
    "< 1e-12" if gap < 1e-12 else f"{gap:.1e}",
)
W_09 = scaled_orthogonal(d_info, 0.9, torch.Generator().manual_seed(0))
quiet = gaussian_rnn_information(
    W_09, 1e-3 * torch.eye(d_info, dtype=torch.float64), T_info, dists
)  # W_xh = 0.001 I: every gradient 1000 times smaller
same = max(abs(a_ - b_) for a_, b_ in zip(info[0.9], quiet)) < 1e-12
print("W_xh = 0.001 I (gradients 1000x smaller): the same information at every k:", same)
assert gap < 1e-12 and same

bias = alibi_bias(8, 1, 16, dtype=torch.float64)[
    0, 0
]  # (16,) head 0: -m |0 - j|, m = 1/2; j = distance d
w_alibi = softmax(bias)  # equal content scores: only the bias differs
ratios = (w_alibi[1:] / w_alibi[:-1]).tolist()
print(
    f"ALiBi head 0, equal contents: w(d+1)/w(d) = {min(ratios):.6f} .. {max(ratios):.6f} = exp(-1/2) = {math.exp(-0.5):.6f}"
)
assert max(abs(r - math.exp(-0.5)) for r in ratios) < 1e-12

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Claim check — Thm. 14.3.12 "η ≈ exp(−d/λ)" ✗ as a statement about attention**, ⚠ in general.
# It holds for *contractive* recurrences (linear Gaussian RNN with ρ < 1: slope of ln I = 2 ln ρ
# exactly), fails for the same RNN at ρ ≥ 1, and describes attention only when a distance penalty is
# put in by hand (ALiBi: exactly exp(−m d)). Content-based attention has no such decay (§3: flat
# gradient). Note also that for continuous z the H(z_i) in (14.3.36) is a differential entropy,
# which can be negative, so η is not a fraction in [0, 1] there.
#
# **Claim check — Eq. (14.3.39) ✓** (the multivariate chain rule) **and Lemma 14.3.20's "the
# importance of g_j is proportional to I(z_i; z_j)" ⚠**: the source never defines "importance".
# Read as the gradient's size ‖g‖, the linear Gaussian RNN gives an exact answer:
# I(k) = −(d/2) ln(1 − ‖g(k)‖²_F/(d s)), an **increasing** function of ‖g‖ (so the two rank
# distances the same way), but not proportional to it: I ≈ ‖g(k)‖²_F/(2s), the **square** (ratio → 1
# as the information gets small, printed above). And the scale s of everything that reaches h_T
# matters as much as g: shrinking W_xh a thousandfold shrinks every gradient a thousandfold and
# leaves every I(k) unchanged. **Correct statement** (for this model): information is a monotone
# function of the gradient relative to the total input scale, quadratic when small.
#
# **Eq. (14.3.40) ✓** for a stack of layers: the Jacobian is a sum over all paths of products of
# one-step Jacobians (for two attention layers with fixed weights, (A₂A₁)_ij = Σ_k (A₂)_ik (A₁)_kj).
# "Several paths keep the gradient alive if one is blocked" ⚠: paths add with signs, so they can
# also cancel.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 11. Inductive biases, the residual stream and what one layer computes (§5.4.2–5.4.3, Lemma 14.3.19)
#
# The rest of the two sections' claims, each checked below:
# - §5.4.2, **inductive biases**: an RNN assumes order, locality and the Markov property (the
#   future depends on the past only through h_t); a CNN locality and "translation invariance";
#   attention full connection, content-based weights and positions injected explicitly — a
#   "weak inductive bias" that is general but "may overfit without enough data".
# - §5.4.3, after Eq. (5.4.6): high-entropy heads "explore" the whole sequence, low-entropy heads
#   "focus"; and Lemma 14.3.19 (source 000, Eq. 14.3.37): under attention η_ij > 0 for every pair,
#   in an RNN η_ij ≈ 0 at long range.
# - §5.4.3, Eq. (5.4.9): with residual connections X^(L) = X^(0) + ΔX^(1) + … + ΔX^(L), so the
#   embedding survives to the last layer and the gradient reaches the first "without loss" — for
#   the stack the source itself writes with a LayerNorm after each sum, Eq. (5.4.8),
#   X^(l+1) = LayerNorm(X^(l) + Attention(X^(l))).
# - §5.4.3, Eq. (5.4.10): f(X) = A(X)·X W_V, a class of "global functions" that can model "any
#   long-range dependency pattern" given the right weights A_ij.
#
# > **Glossary** · inductive bias 归纳偏置 · permutation equivariance 置换等变 · translation
# > equivariance / invariance 平移等变 / 不变 · residual stream 残差流 · function class 函数类 ·
# > data efficiency 数据效率

# %% [markdown] slideshow={"slide_type": "-"}
# **Biases you can measure exactly.** Attention without positions commutes with any reordering of
# its inputs (permute the tokens, the outputs are permuted the same way); with sinusoidal
# positions added it does not. A convolution commutes with shifts (away from the borders), and
# becomes shift-*invariant* only after pooling over positions (circular padding, maximum).

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
gen = torch.Generator().manual_seed(11)
with torch.random.fork_rng(devices=[]):
    torch.manual_seed(11)
    mha_32 = MultiHeadAttention(32, 4).double()
    conv = torch.nn.Conv1d(8, 8, 3, padding=1, padding_mode="circular").double()
tokens = torch.randn(2, 20, 32, generator=gen, dtype=torch.float64)  # (B, T, d)
perm = torch.randperm(20, generator=gen)
pe = sinusoidal_encoding(20, 32, dtype=torch.float64)  # (T, d)
signal = torch.randn(2, 8, 40, generator=gen, dtype=torch.float64)  # (B, channels, T)
shifted = torch.roll(signal, 5, dims=-1)
with torch.no_grad():
    gaps = {
        "attention, no positions": permutation_gap(lambda x: mha_32(x)[0], tokens, perm),
        "attention + sinusoidal positions": permutation_gap(
            lambda x: mha_32(x + pe)[0], tokens, perm
        ),
        "convolution, shift by 5": shift_gap(conv, signal, 5),
        "convolution, no pooling (invariance?)": float((conv(shifted) - conv(signal)).abs().max()),
        "convolution + max pool, shift by 5 (invariance)": float(
            (conv(shifted).amax(dim=-1) - conv(signal).amax(dim=-1)).abs().max()
        ),  # pooled over positions
    }
for name, gap in gaps.items():
    print(f"{name:>48}: max difference {'< 1e-12' if gap < 1e-12 else f'{gap:.2f}'}")
assert gaps["attention, no positions"] < 1e-12 and gaps["attention + sinusoidal positions"] > 0.01
assert gaps["convolution, shift by 5"] < 1e-12
assert gaps["convolution, no pooling (invariance?)"] > 0.1
assert gaps["convolution + max pool, shift by 5 (invariance)"] < 1e-12

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Claim check — the inductive biases (§5.4.2).** Attention is permutation-**equivariant** without
# positions ✓: it cannot tell orders apart, so position information must be injected (the source's
# 位置编码假设; chapter 07). A convolution is translation-**equivariant** ✓ — the source's
# "平移不变性" (invariance) ⚠ holds only after pooling over positions; the convolution itself moves
# its output with the input. The RNN's order, locality and Markov property ✓ by construction:
# h_t = f(h_{t−1}, x_t) (Eq. 5.4.1), so everything the past tells the future passes through h_t —
# the product of Jacobians of §1. "Weak bias needs more data" is a claim about learning: the next
# cell measures it.
#
# **Data efficiency on a local task.** y_i = (x_{i−1} + x_i) mod 8 on sequences of 16 tokens — a
# purely local rule. `LocalConv` (a width-2 causal convolution: locality and weight sharing built
# in) against `LocalAttention` (one causal attention layer with learned absolute positions and
# the same kind of read-out: it must *learn* that position i needs i − 1, at every i), each trained
# full-batch (Adam, lr 10⁻², 100 steps) on N = 32 fixed sequences, attention also on N = 128,
# tested on 1,000 fresh ones, two seeds. **Pass** (both seeds): the convolution ≥ 95 % from 32
# sequences; attention ≤ 60 % from 32 and ≥ 95 % from 128 (chance 1/8).

# %% slideshow={"slide_type": "-"}
# NBVAL_IGNORE_OUTPUT
data_acc = {}
for seed in (0, 1):
    for name, make, n_train in (
        ("convolution", LocalConv, 32),
        ("attention", LocalAttention, 32),
        ("attention", LocalAttention, 128),
    ):
        torch.manual_seed(seed)
        data_acc[name, n_train, seed] = train_local(
            make(), n_train, seed=seed, desc=f"{name}, N = {n_train}, seed {seed}"
        )

# %% slideshow={"slide_type": "-"}
# NBVAL_IGNORE_OUTPUT
print("test accuracy on y_i = (x_(i-1) + x_i) mod 8, chance 0.125")
for (name, n_train, seed), a in data_acc.items():
    print(f"  {name:>11}, N = {n_train:3d} training sequences, seed {seed}: {a:.3f}")
for seed in (0, 1):
    assert data_acc["convolution", 32, seed] >= 0.95, seed
    assert data_acc["attention", 32, seed] <= 0.6 and data_acc["attention", 128, seed] >= 0.95, seed

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Claim check — "a weak inductive bias needs more data" ✓ (measured, at this scale).** From 32
# sequences the convolution learns the local rule on both seeds; attention, which has to learn
# from the data which position to read, gets only a minority of fresh tokens right, and needs
# four times the data to catch up. The bias is not free either way: the convolution could not
# learn a rule that needs a far position at all (its receptive field, §7), attention can.
#
# **What a high-entropy head carries, and Lemma 14.3.19.** For o = Σ_j α_j v_j with independent
# Gaussian values v_j ~ N(0, I_d), the information the output keeps about one position is exact
# (`averaging_information`): I(o; v_j) = (d/2) ln(Σ_k α_k² / (Σ_k α_k² − α_j²)). The cell sharpens a
# softmax over n = 32 random scores with β and reports the entropy H(α) (Eq. 5.4.6), the most
# and the least information about any one position (d = 16).

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
scores_32 = torch.randn(32, generator=torch.Generator().manual_seed(12), dtype=torch.float64)
print(
    f"{'beta':>5} | {'H(alpha) nats':>13} (max ln 32 = {math.log(32):.2f}) | {'max_j I(o; v_j)':>15} | {'min_j I(o; v_j)':>15}"
)
head_info = {}
for beta in (0.0, 1.0, 4.0, 16.0):
    alpha = softmax(beta * scores_32)  # (32,)
    info_j = averaging_information(alpha, d=16)  # (32,) nats
    entropy_alpha = float(-(alpha * alpha.log()).sum())
    head_info[beta] = (entropy_alpha, float(info_j.max()), float(info_j.min()))
    print(
        f"{beta:5.0f} | {entropy_alpha:13.3f} {'':>17} | {float(info_j.max()):15.3g} | {float(info_j.min()):15.3g}"
    )
assert all(v[2] > 0 for v in head_info.values())  # every position keeps some information
assert abs(head_info[0.0][1] - 8 * math.log(32 / 31)) < 1e-12  # uniform: (d/2) ln(n/(n-1))
assert head_info[16.0][1] > 10 * head_info[0.0][1] and head_info[16.0][2] < 1e-6
print(
    f"linear Gaussian RNN at rho = 1 (section 10): I(h_T; x_T-k) for k = {dists[0]}..{dists[-1]}:",
    f"{min(info[1.0]):.3f} .. {max(info[1.0]):.3f} nats, the same at every distance",
)

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Claim check — "high-entropy heads explore the whole sequence" (§5.4.3) ⚠.** The uniform head
# (β = 0, the largest entropy) reads every position, but what it outputs is an average, and about
# any one position it keeps only (d/2) ln(n/(n − 1)) ≈ d/(2n) nats — about 0.25 here; the sharp head
# (β = 16) keeps far more about the positions it reads and next to nothing about the rest. A
# high-entropy head pools (counts, averages); nothing is explored at inference — "explore" is a
# metaphor for spread weights, and entropy says nothing about *which* positions matter.
#
# **Claim check — Lemma 14.3.19 (Eq. 14.3.37) ⚠: the attention half ✓, the RNN half ✗ as a general
# statement.** Softmax weights are all positive, so I(o; v_j) > 0 for every pair (printed: the
# minimum is positive at every β) — but it can be vanishingly small (about 5·10⁻¹⁴ nats at β = 4,
# 10⁻⁵⁶ at β = 16), so "η > 0" says little about how much gets through. For the RNN, "η ≈ 0 at long range" holds
# for contractive recurrences (ρ < 1: exponential decay, §10) and fails at ρ = 1, where the linear
# Gaussian RNN keeps the same information about every past input (§10, printed again above);
# gated RNNs (LSTM/GRU) are built to keep information too. **Correct statement**: the distance
# dependence of an RNN's information is set by its recurrence, not by the architecture's name.

# %% [markdown] slideshow={"slide_type": "-"}
# **The residual stream, Eq. (5.4.9), against the source's own Eq. (5.4.8).** Three attention layers
# (d = 32, 4 heads), once with Post-LN (Eq. 5.4.8) and once with Pre-LN. If Eq. (5.4.9) held with
# ΔX^(l) the layers' attention outputs, X^(L) − X^(0) − Σ_l ΔX^(l) would be 0. Then the attention
# is switched off (W_O = 0, so every ΔX^(l) = 0): Eq. (5.4.9) says X^(L) = X^(0), "the embedding
# survives".

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
with torch.random.fork_rng(devices=[]):
    torch.manual_seed(13)
    stack = [MultiHeadAttention(32, 4).double() for _ in range(3)]
    norms = [LayerNorm(32).double() for _ in range(3)]
x0 = 2.0 + 3.0 * torch.randn(
    2, 10, 32, generator=torch.Generator().manual_seed(14), dtype=torch.float64
)
residual_gap = {}
with torch.no_grad():
    for norm in ("post", "pre"):
        states, updates = attention_stack(x0, stack, norms, norm)
        residual_gap[norm] = float((states[-1] - x0 - sum(updates)).abs().max())
    silent = copy.deepcopy(stack)
    for layer in silent:
        layer.out_proj.weight.zero_()
        layer.out_proj.bias.zero_()
    kept = {
        norm: float((attention_stack(x0, silent, norms, norm)[0][-1] - x0).abs().max())
        for norm in ("post", "pre")
    }
    ln_x0 = float((attention_stack(x0, silent, norms, "post")[0][-1] - norms[0](x0)).abs().max())
for norm in ("post", "pre"):
    r, k_ = residual_gap[norm], kept[norm]
    print(
        f"{norm:>4}-LN: max |X^(L) - X^(0) - sum dX| = {'< 1e-12' if r < 1e-12 else f'{r:.2f}'}; "
        f"attention off: max |X^(L) - X^(0)| = {'< 1e-12' if k_ < 1e-12 else f'{k_:.2f}'}"
    )
print(f"Post-LN, attention off: X^(L) == LayerNorm(X^(0)) up to LayerNorm's eps: {ln_x0 < 1e-4}")
J_post = torch.autograd.functional.jacobian(
    lambda v: norms[2](norms[1](norms[0](v))), x0[0, 0]
)  # (32, 32): one position of the Post-LN stack with the attention off
ones = torch.ones(32, dtype=torch.float64)
print(
    f"Post-LN, attention off: gradient along the all-ones direction of X^(0): {'< 1e-12' if float((J_post @ ones).abs().max()) < 1e-12 else 'not 0'}"
)
assert residual_gap["pre"] < 1e-12 and residual_gap["post"] > 0.1
assert kept["pre"] < 1e-12 and kept["post"] > 1 and ln_x0 < 1e-4
assert float((J_post @ ones).abs().max()) < 1e-12

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Claim check — Eq. (5.4.9) ✗ for the source's Post-LN stack (5.4.8), ✓ for Pre-LN.** With a
# LayerNorm after every sum the stack is not a sum of updates (the gap above), and with the
# attention switched off the output is LayerNorm(X^(0)), not X^(0): each position's mean and scale
# are gone, and the gradient along the all-ones direction is exactly 0 — not "lossless". Only the
# Pre-LN form X^(l+1) = X^(l) + F(LN(X^(l))) keeps an identity path, and there Eq. (5.4.9) holds
# exactly with ΔX^(l) = F(LN(X^(l))). (Chapter 09 measures what this does to training.)
#
# **Eq. (5.4.10) and "global functions".** One head without W_O computes f(X) = A(X) X W_V: the cell
# checks it against `MultiHeadAttention` (one head, the output projection undone). Each output row
# is a weighted **average** of the value rows, so one layer cannot count: feed it the same token n
# times, for any n, and every output is the same.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
with torch.random.fork_rng(devices=[]):
    torch.manual_seed(15)
    one_head = MultiHeadAttention(16, 1, bias=False).double()
X_in = torch.randn(1, 12, 16, generator=torch.Generator().manual_seed(16), dtype=torch.float64)
W_Q, W_K, W_V = (w.weight.T for w in (one_head.q_proj, one_head.k_proj, one_head.v_proj))
with torch.no_grad():
    A_X = softmax(X_in @ W_Q @ W_K.T @ X_in.transpose(1, 2) / math.sqrt(16))  # (1, 12, 12)
    f_X = A_X @ X_in @ W_V  # (1, 12, 16) Eq. (5.4.10)
    print(
        "Eq. (5.4.10) f(X) = A(X) X W_V == one attention head:",
        torch.allclose(one_head.out_proj(f_X), one_head(X_in)[0]),
    )
    token = torch.randn(1, 1, 16, generator=torch.Generator().manual_seed(17), dtype=torch.float64)
    outs = {n_: one_head(token.expand(1, n_, 16))[0][0, -1] for n_ in (1, 4, 16, 64)}
    spread = max(float((o - outs[1]).abs().max()) for o in outs.values())
print(
    f"the same token n = 1, 4, 16, 64 times: outputs differ by {'< 1e-12' if spread < 1e-12 else spread}"
)
assert torch.allclose(one_head.out_proj(f_X), one_head(X_in)[0]) and spread < 1e-12

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Claim check — Eq. (5.4.10) ✓ as an identity; "global functions … any long-range dependency
# pattern" ⚠.** Global ✓: every output depends on every input (all weights positive; §3's flat
# gradient). But one layer's outputs are convex combinations of its values: it selects and
# averages, it does not add up. It cannot count the copies of a token, compute a sum or a
# parity over positions, whatever A_ij is. Those need position information, more layers, or a
# feed-forward block after the averaging. **Correct statement**: one attention layer can route
# information from any position to any other (paths of length 1); what it computes per output is
# a weighted average of value vectors.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 12. Widget: gradient vs distance, RNN and attention side by side
#
# Controls: the RNN's **spectral radius** ρ (W_hh = ρ · orthogonal, d = 32), its **nonlinearity**,
# the sequence **length** T and the **input scale**. Blue: the RNN's ‖∂h_T/∂x_{T−k}‖_F, computed from
# the product of Eq. (5.4.2) (`rnn_jacobian_profile`); dashed: the linear law ρ^k √d; orange: one
# self-attention layer (last query). Things to try:
# 1. linear, ρ = 1.00: a flat line on the dashed law; ρ = 0.95 / 1.05: straight lines down / up.
# 2. tanh, ρ = 1.2, input scale 0.3: decays (saturation); move the input scale down to 10⁻⁶: explodes.
# 3. relu at ρ = 1: roughly half the units are off at each step, so it decays although ρ = 1.
# 4. Any setting: the orange line stays flat — attention's path is one step long.
#
# Behind the widget: `gradient_curves` (the numbers) and `gradient_widget_update` (numbers +
# redraw); the tests call both.

# %% slideshow={"slide_type": "slide"}
# NBVAL_IGNORE_OUTPUT
gradient_widget(rho=1.0, nonlinearity="tanh", length=100)

# %% [markdown] slideshow={"slide_type": "subslide"}
# A static snapshot (for printed notes) and the cost of one widget update:

# %% slideshow={"slide_type": "subslide"}
# NBVAL_IGNORE_OUTPUT
snapshot = GradientPathPlot(pyplot=True)
snapshot.update(gradient_curves(1.2, "tanh", 200, input_scale=1e-6))
plt.show()
timing_plot = GradientPathPlot()
gradient_widget_update(timing_plot, 1.0, "tanh", 100)  # first draw caches the static background
times = []
for step in range(20):
    start = time.perf_counter()
    gradient_widget_update(
        timing_plot, 0.8 + 0.02 * step, ("linear", "tanh", "relu")[step % 3], 200 - 10 * (step % 5)
    )
    times.append(time.perf_counter() - start)
median_ms = 1000 * float(np.median(times))
print(
    f"one widget update (compute + redraw + PNG): median {median_ms:.1f} ms over 20 moves "
    f"({'within' if median_ms <= 100 else 'OVER'} the 100 ms budget)"
)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 13. Claim checks at a glance
#
# | source claim | verdict | correct statement / condition |
# |---|---|---|
# | Eq. (5.4.1)–(5.4.2): ∂L/∂x₁ = product of step Jacobians | ✓ | each factor is D_s W_hh, D_s = diag f′(a_s); checked against autograd |
# | §5.4.1: λ_max (largest singular value), ‖∂h_t/∂h_{t−1}‖₂ ≈ λ_max, scaling λ_max^{n−1} | ⚠ / ✗ | one step ✓ (linear); over k steps ρ(W)^k ≤ ‖W^k‖₂ ≤ σ_max^k: σ_max is a bound, ρ the rate; they differ for non-normal W |
# | §5.4.1: λ_max < 1 ⇒ vanishing | ✓ | with σ_max and \|f′\| ≤ γ: γσ_max < 1 suffices (Pascanu et al. 2013) |
# | Eq. (5.4.2): λ_max > 1 ⇒ explosion | ⚠ | necessary (λ₁ > 1/γ), not sufficient: tanh at ρ = 1.2 vanishes at input scale 0.3, explodes at 10⁻⁸ |
# | Eq. (5.4.3), Thm. 14.3.2: attention path length 1 | ✓ | measured by BFS; RNN n − 1 (the source's n, up to one) |
# | Cor. 14.3.2: short paths ⇒ no vanishing gradients | ⚠ | gradient ∝ weight on the path: distance-free but content-dependent; peaked attention starves most positions |
# | Eq. (5.4.4): effective dependency span | ✓ / ⚠ | a definition; meaningful only with ε > 0 scaled with 1/n |
# | Eq. (5.4.5): A_ij > 0 so dist = 1 for all i ≠ j | ✓ / ⚠ | for ε = 0; with ε > 0 sharper attention lengthens paths or disconnects them |
# | §5.4.2: CNN receptive field 2l + 1, ≈ n/2 layers | ✓ | measured; Vaswani's Table 1 O(log_k n) needs dilated kernels (their text: O(n/k) contiguous) |
# | §5.4.2: RNN's effective complexity O(n²) | ✗ | O(n·d²) work in O(n) sequential steps (FLOPs measured ∝ n) |
# | §5.4.2: attention's memory access more efficient | ⚠ | the gain is O(1) sequential depth; attention stores n × n weights per head (ch. 10) |
# | Def. 14.3.5, Eq. (14.3.8): coverage R(i) | ✓ | \|R(i)\| < 1/τ always |
# | Lemma 14.3.6: ideally R(i) = all positions | ⚠ | only for τ = 0 (or τ < 1/n with near-uniform weights) |
# | Thm. 14.3.12: η ≈ exp(−d/λ) | ✗ (attention) / ⚠ | exact for a contractive linear RNN (slope 2 ln ρ); none at ρ ≥ 1; attention decays only with a built-in bias (ALiBi) |
# | Eq. (14.3.39)–(14.3.40): chain rule, sum over paths | ✓ | paths add with signs, so they can cancel too |
# | Lemma 14.3.20: importance of g_j ∝ I(z_i; z_j) | ⚠ | "importance" undefined; linear Gaussian RNN: I = −(d/2) ln(1 − ‖g‖²/(d s)), monotone in ‖g‖, ≈ ‖g‖²/(2s) (the square), and blind to a common scale of g |
# | §5.4.2: RNN biases — order, locality, Markov | ✓ | by construction, h_t = f(h_{t−1}, x_t): the past reaches the future only through h_t (§1) |
# | §5.4.2: CNN "translation invariance" | ⚠ | a convolution is shift-*equivariant* (exact, away from borders); invariant only after pooling over positions (§11) |
# | §5.4.2: attention needs positions injected | ✓ | without positions it is permutation-equivariant (exact); sinusoidal positions break it (§11) |
# | §5.4.2: weak inductive bias needs more data | ✓ (this scale) | local task, two seeds: a convolution learns it from 32 sequences, attention needs 128 (§11) |
# | §5.4.3: high-entropy heads "explore" the sequence | ⚠ | they average: about each position the output keeps ≈ d/(2n) nats; entropy says nothing about which positions matter (§11) |
# | Lemma 14.3.19 (Eq. 14.3.37): η_ij > 0 under attention, ≈ 0 in an RNN at long range | ⚠ | attention ✓ (all weights > 0, but the least information about a position can be vanishingly small: about 5·10⁻¹⁴ nats at β = 4, 10⁻⁵⁶ at β = 16, §11); RNN ✗ in general: the ρ = 1 linear Gaussian RNN keeps the same information at every distance (§10, §11) |
# | Eq. (5.4.9): X^(L) = X^(0) + Σ ΔX^(l) | ✗ / ✓ | false for the source's Post-LN stack (5.4.8): attention off gives LayerNorm(X^(0)), the mean direction gets no gradient; exact for Pre-LN (§11) |
# | Eq. (5.4.10): f(X) = A(X) X W_V; "global functions, any dependency pattern" | ✓ / ⚠ | the identity ✓; global ✓; but one layer only averages values: it cannot count (n copies of a token give the same output for every n) (§11) |

# %% [markdown] slideshow={"slide_type": "skip"}
# ## 14. Exercises (graded)
#
# Four exercises, 10 points. Write your code between the lines marked for it, run the cell, then
# run the check cell under it: it tests your function on random and edge inputs and tells you
# precisely what is wrong. When graded, more tests (hidden here) run on other inputs, so make your
# function correct in general, not just for the visible checks. Exercises 2–4 are from scratch:
# the checks fail if you call the package's `effective_span`, its path functions, or PyTorch's
# `clip_grad_norm_`.

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 1 (3 points) — the RNN Jacobian product, Eq. (5.4.2)
# `my_rnn_jacobian(W_hh, states, t)`: for a tanh RNN h_s = tanh(W_hh h_{s−1} + W_xh x_s + b),
# `states` (T, d) holds h_1, …, h_T as rows (0-based: row s is h_{s+1}) and `t` is a 0-based row.
# Return ∂h_T/∂h_t, the (d, d) matrix whose entry (a, b) is ∂states[−1][a]/∂states[t][b]. Use only
# W_hh and the states (hint: tanh′(a_s) = 1 − h_s²; which states' derivatives appear?).


# %% nbgrader={"grade": false, "grade_id": "ch04_rnn_jacobian", "locked": false, "schema_version": 3, "solution": true} slideshow={"slide_type": "skip"}
def my_rnn_jacobian(W_hh, states, t):
    """W_hh (d, d), states (T, d) rows h_1..h_T, t a 0-based row -> dh_T/dh_t (d, d)."""
    ### BEGIN SOLUTION
    T, d = states.shape
    J = torch.eye(d, dtype=states.dtype)  # (d, d) dh_T/dh_T
    for s in range(T - 1, t, -1):  # newest step first: J = D_T W ... D_{t+1} W
        J = J @ ((1 - states[s] ** 2)[:, None] * W_hh)  # (d, d) times diag(1 - h_s^2) W_hh
    return J
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch04_rnn_jacobian_test", "locked": true, "points": 3, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"}
from attncourse.exercises.ch04 import check_rnn_jacobian

check_rnn_jacobian(my_rnn_jacobian)
### BEGIN HIDDEN TESTS
import importlib

import attncourse.exercises.ch04 as ex
import attncourse.exercises.engine as engine

engine = importlib.reload(engine)  # fresh copies: a patched check does not count
ex = importlib.reload(ex)
ex.check_rnn_jacobian(my_rnn_jacobian, seed=21)
### END HIDDEN TESTS

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 2 (2 points) — effective dependency span, Eq. (5.4.4)
# `my_effective_span(weights, eps)`: weights (..., T, S) with query i and key j at positions 0, 1, …
# → (..., T) **integer** (torch.long) tensor, span(i) = max{|i − j| : A_ij > eps}, and 0 when no
# weight exceeds eps. Use plain tensor operations (no loops needed: build the |i − j| table once).


# %% nbgrader={"grade": false, "grade_id": "ch04_effective_span", "locked": false, "schema_version": 3, "solution": true} slideshow={"slide_type": "skip"}
def my_effective_span(weights, eps):
    """weights (..., T, S), eps -> (..., T) long: max |i - j| over A_ij > eps (0 if none)."""
    ### BEGIN SOLUTION
    T, S = weights.shape[-2], weights.shape[-1]
    distance = (torch.arange(T)[:, None] - torch.arange(S)[None, :]).abs()  # (T, S)
    kept = torch.where(weights > eps, distance, torch.zeros_like(distance))  # (..., T, S)
    return kept.amax(dim=-1)  # (..., T)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch04_effective_span_test", "locked": true, "points": 2, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"}
from attncourse.exercises.ch04 import check_effective_span

check_effective_span(my_effective_span)
### BEGIN HIDDEN TESTS
import importlib

import attncourse.exercises.ch04 as ex
import attncourse.exercises.engine as engine

engine = importlib.reload(engine)  # fresh copies: a patched check does not count
ex = importlib.reload(ex)
ex.check_effective_span(my_effective_span, seed=22)
### END HIDDEN TESTS

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 3 (3 points) — path lengths on an attention graph, Eq. (5.4.5)
# `my_path_lengths(weights, eps)`: weights (n, n) → dist (n, n) **float64**. There is an edge i → j
# when weights[i, j] > eps (i reads j in one step). dist[i, i] = 0; dist[i, j] = the fewest edges on
# a path from i to j; `float("inf")` when there is no path. Breadth-first search from every start
# (a Python loop over starts and steps is fine; so is a matrix form).


# %% nbgrader={"grade": false, "grade_id": "ch04_path_lengths", "locked": false, "schema_version": 3, "solution": true} slideshow={"slide_type": "skip"}
def my_path_lengths(weights, eps):
    """weights (n, n), eps -> dist (n, n) float64 by breadth-first search on edges weights > eps."""
    ### BEGIN SOLUTION
    n = weights.shape[0]
    edges = weights > eps  # (n, n) edge i -> j
    dist = torch.full((n, n), float("inf"), dtype=torch.float64)
    for start in range(n):
        dist[start, start] = 0.0
        frontier = torch.zeros(n, dtype=torch.bool)
        frontier[start] = True
        step = 0
        while frontier.any():
            step += 1
            reached = edges[frontier].any(dim=0) & torch.isinf(dist[start])  # (n,) new this step
            dist[start, reached] = float(step)
            frontier = reached
    return dist
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch04_path_lengths_test", "locked": true, "points": 3, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"}
from attncourse.exercises.ch04 import check_path_lengths

check_path_lengths(my_path_lengths)
### BEGIN HIDDEN TESTS
import importlib

import attncourse.exercises.ch04 as ex
import attncourse.exercises.engine as engine

engine = importlib.reload(engine)  # fresh copies: a patched check does not count
ex = importlib.reload(ex)
ex.check_path_lengths(my_path_lengths, seed=23)
### END HIDDEN TESTS

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 4 (2 points) — gradient-norm clipping (Pascanu et al. 2013)
# `my_clip_grad_norm(grads, max_norm)`: grads is a tuple of gradient tensors of any shapes. Compute
# the **global** norm ‖g‖ = √(Σ over all tensors and entries of g²); if ‖g‖ > max_norm, return every
# tensor multiplied by max_norm/‖g‖, otherwise return them unchanged (as a tuple, same order). Do not
# change the inputs in place, and do not call `torch.nn.utils.clip_grad_norm_`.


# %% nbgrader={"grade": false, "grade_id": "ch04_clip_grad_norm", "locked": false, "schema_version": 3, "solution": true} slideshow={"slide_type": "skip"}
def my_clip_grad_norm(grads, max_norm):
    """grads: tuple of tensors, max_norm > 0 -> tuple of tensors rescaled to global norm <= max_norm."""
    ### BEGIN SOLUTION
    total = math.sqrt(sum(float((g.double() ** 2).sum()) for g in grads))  # the global norm
    scale = min(1.0, max_norm / (total + 1e-6))
    return tuple(g * scale for g in grads)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch04_clip_grad_norm_test", "locked": true, "points": 2, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"}
from attncourse.exercises.ch04 import check_clip_gradients

check_clip_gradients(my_clip_grad_norm)
### BEGIN HIDDEN TESTS
import importlib

import attncourse.exercises.ch04 as ex
import attncourse.exercises.engine as engine

engine = importlib.reload(engine)  # fresh copies: a patched check does not count
ex = importlib.reload(ex)
ex.check_clip_gradients(my_clip_grad_norm, seed=24)
### END HIDDEN TESTS

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Summary
#
# - An RNN's gradient is a **product** of per-step Jacobians D_s W_hh (Eq. 5.4.2). Over k steps,
#   ρ(W)^k ≤ ‖W^k‖₂ ≤ σ_max(W)^k: the spectral radius is the rate, the largest singular value a bound;
#   for non-normal W they differ (transient growth of 10⁹ at ρ = 0.9).
# - Measured (Bengio et al. 1994; Pascanu et al. 2013): linear RNN g(k) = ρ^k √d (slope ln ρ to 10⁻⁴);
#   tanh vanishes even at ρ = 1 (g(1)/g(50) in the thousands) and at ρ = 1.2 with ordinary inputs;
#   "λ > 1 ⇒ explosion" is necessary, not sufficient. Gradient-norm **clipping** tames explosions.
# - Attention connects every pair in **one step** (path length 1, flat gradient profile), but the
#   size of that step is the weight: peaked attention starves most positions of gradient.
# - Vaswani et al.'s Table 1, measured: FLOPs n²d vs nd², sequential O(1) vs O(n), path 1 vs n − 1;
#   a width-3 CNN has receptive field 2l + 1 (log-depth only with dilation). The source's "RNN is
#   effectively O(n²)" is wrong.
# - On a recall task the RNN's accuracy falls to chance by distance 6 while one attention layer is
#   perfect at every distance.
# - `attncourse.metrics.effective_span` (Eq. 5.4.4) and `information_coverage` (Eq. 14.3.8) work on any
#   (B, H, T, S) attention tensor; both depend on their threshold (|R(i)| < 1/τ).
# - Thm. 14.3.12's exponential decay is a property of contractive recurrences (and of biases like
#   ALiBi), not of attention; an RNN at ρ = 1 keeps the same information at every distance, so
#   Lemma 14.3.19's "η ≈ 0 for an RNN at long range" is not general either.
# - Inductive biases, measured: attention without positions is permutation-equivariant, a
#   convolution shift-equivariant; on a local rule the convolution learns from a quarter of the
#   data attention needs. One attention layer averages (it cannot count); a high-entropy head keeps
#   little about any one position; Eq. (5.4.9)'s residual sum holds for Pre-LN, not for the Post-LN
#   stack the source writes.
#
# **Next — chapter 05, bidirectional, causal and cross attention**: which positions may read which
# (masks), how information flows forward and backward through a stack of attention layers, and
# whether attention really turns from local to global with depth (measured, not assumed).
