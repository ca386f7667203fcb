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
# *循环网络与注意力：梯度路径* — source 001, §5.4.1–5.4.3; source 000, §14.3.2 and §14.3.6
#
# Here is a task a child can do. You see ten random tokens from {0, 1, 2, 3}, then a question
# "k?", and must answer with the token k places before the question. A recurrent network with 64
# tanh units, trained on it for 250 steps, answers k = 1 almost always, and from about k = 6 on
# it is close to guessing. One self-attention layer, trained on the same data, answers every k.
# Both read the same tokens; the RNN even reads them in order. **What does the RNN lose between
# k = 1 and k = 6, and why does attention not lose it?** This chapter answers by following the gradient
# from the answer back to the token it needs: in an RNN it passes through one matrix per step,
# in attention through one step whatever the distance.
#
# **After this chapter you can**
# - write an RNN's gradient as a product of per-step Jacobians and predict from the recurrent
#   matrix whether it vanishes or explodes;
# - measure ‖∂h_T/∂x_t‖ against the distance T − t, and tame an explosion with gradient-norm
#   clipping;
# - explain why attention connects any two positions in one step, and measure path lengths with
#   breadth-first search;
# - measure how far a trained attention head reads, and say what attention pays for its short
#   paths: quadratic work and a weaker inductive bias.
#
# **Prerequisites**: chapter 01 (attention as a softmax-weighted average, the causal mask); the
# chain rule with Jacobian matrices; eigenvalues and singular values at the level of
# "‖Wv‖ ≤ σ_max ‖v‖"; PyTorch autograd (`backward`, `.grad`) and a training loop with Adam.
#
# **Time**: main path about 75 min, appendix about 35 min (by `scripts/reading_time.py`: prose
# at 150 words a minute, code at 20 lines a minute, and each exercise's stated time).
#
# **How to read it.** Sections 1–5 are the main path: each asks a question, gives the idea, lets
# you build it in an exercise, then uses it. The **appendix** checks every claim the source makes
# about this topic — some hold, some hold only under a condition, some are wrong — and can be
# skipped on a first reading.

# %% slideshow={"slide_type": "skip"}
import copy
import math

import matplotlib.pyplot as plt
import numpy as np
import torch

from attncourse.attention import scaled_dot_product_attention, softmax
from attncourse.chapters import ch04_gradient_paths as ch04
from attncourse.metrics import effective_span
from attncourse.rnn import VanillaRNN

torch.manual_seed(0)
np.random.seed(0)
torch.set_num_threads(2)
torch.set_flush_denormal(True)
torch.set_printoptions(precision=4, sci_mode=False)
plt.rcParams.update({"figure.dpi": 80, "figure.figsize": (7, 3)})

# %% [markdown] slideshow={"slide_type": "-"}
# Four examples of the task (`ch04.recall_batch`). The question token stands for the distance k;
# the answer is the token k places before it.

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
x_ex, y_ex, k_ex = ch04.recall_batch(4, torch.Generator().manual_seed(3))  # (4, 11), (4,), (4,)
for row, answer, k_ in zip(x_ex.tolist(), y_ex.tolist(), k_ex.tolist()):
    print(" ".join(map(str, row[:-1])), f"| k = {k_:2d}?  answer {answer}")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 1. A recurrence multiplies Jacobians
#
# A vanilla recurrent network reads one input per step and updates its state (source 001,
# Eq. 5.4.1):
#
# $$h_t = \tanh(W_{hh} h_{t-1} + W_{xh} x_t) \qquad (5.4.1)$$
#
# The token at step t reaches the state at step T only through the T − t updates in between. To
# learn the recall task, the answer's loss must tell the network how to store that token, so
# its gradient must travel the same way back. The chain rule makes it a product, one factor per
# step (Eq. 5.4.2):
#
# $$\frac{\partial h_T}{\partial x_t} = \frac{\partial h_T}{\partial h_{T-1}} \cdots
# \frac{\partial h_{t+1}}{\partial h_t}\,\frac{\partial h_t}{\partial x_t}, \qquad
# \frac{\partial h_s}{\partial h_{s-1}} = D_s W_{hh}, \quad D_s = \mathrm{diag}(1 - h_s^2),$$
#
# because tanh′(a) = 1 − tanh(a)². Each factor is a matrix, and the newest step stands on the
# left. For a **linear** RNN (no tanh) every $D_s = I$ and the product is a matrix power,
# $\partial h_T/\partial x_{T-k} = W_{hh}^{k} W_{xh}$. We call k = T − t the **distance** (k = 0
# is the newest input).
#
# > **Glossary** · recurrent neural network 循环神经网络 · hidden state 隐藏状态 · chain rule 链式法则 ·
# > Jacobian matrix 雅可比矩阵 · distance 距离 · vanishing / exploding gradient 梯度消失 / 梯度爆炸

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 1 · The RNN's gradient as a product of Jacobians
# **Difficulty** ●●○ · **Time** 12 min · **Points** 3 · **Practises** Eq. (5.4.2), the order of a
# product of Jacobians, tanh′ = 1 − tanh²
#
# Write `my_rnn_jacobian(W_hh, states, t)` for a tanh RNN
# $h_s = \tanh(W_{hh} h_{s-1} + W_{xh} x_s + b)$: `W_hh` (d, d); `states` (T, d) holds
# $h_1, \dots, h_T$ as rows (0-based: row s is $h_{s+1}$); `t` is a 0-based row. Return the
# derivative of the last row with respect to row t, the (d, d) matrix whose entry (a, b) is
# ∂`states[-1][a]`/∂`states[t][b]` (in the names above, ∂h_T/∂h_{t+1}) — the identity when t is
# the last row. Use only `W_hh` and the states (which states' derivatives appear?). Keep the
# states' dtype: float32 states give a float32 answer (make new tensors with
# `dtype=states.dtype`). Any formulation is fine (a loop, `torch.diag`, broadcasting, `einsum`);
# the check refuses autograd (`backward`, `torch.autograd.*`, `torch.func.*`) and the course's
# package: the point is to write the product yourself.


# %% nbgrader={"grade": false, "grade_id": "ch04_rnn_jacobian", "locked": false, "schema_version": 3, "solution": true} slideshow={"slide_type": "skip"}
def my_rnn_jacobian(W_hh, states, t):
    """W_hh (d, d), states (T, d) rows h_1..h_T, t a 0-based row -> d states[-1] / d states[t]."""
    ### BEGIN SOLUTION
    T, d = states.shape
    J = torch.eye(d, dtype=states.dtype)  # (d, d) dh_T/dh_T
    for s in range(T - 1, t, -1):  # newest step first: J = D_T W ... D_{t+1} W
        J = J @ ((1 - states[s] ** 2)[:, None] * W_hh)  # (d, d) times diag(1 - h_s^2) W_hh
    return J
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch04_rnn_jacobian_test", "locked": true, "points": 3, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"} tags=["raises-exception"]
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

# %% [markdown] slideshow={"slide_type": "-"}
# The product, written out from the states without autograd, against PyTorch's own Jacobian for
# a small tanh RNN (with a bias), and the matrix power for a linear one:

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
T, d = 12, 6
rnn = VanillaRNN(d, d, nonlinearity="tanh").double()
x = torch.randn(T, d, dtype=torch.float64)  # (T, d)
J_torch = torch.autograd.functional.jacobian(lambda x: rnn(x[None])[0, -1], x)  # (d, T, d)
states = rnn(x[None])[0].detach()  # (T, d) rows h_1..h_T
W_hh, W_xh = rnn.weight_hh.detach(), rnn.weight_ih.detach()
t = 3
product = torch.diag(1 - states[t] ** 2) @ W_xh  # dh_t/dx_t = D_t W_xh
for s in range(t + 1, T):
    product = torch.diag(1 - states[s] ** 2) @ W_hh @ product  # D_s W_hh (...)   Eq. (5.4.2)
print(
    f"the product of Eq. (5.4.2) == autograd's dh_T/dx_{t + 1}:",
    torch.allclose(product, J_torch[:, t]),
)

linear = VanillaRNN(d, d, nonlinearity="linear", bias=False).double()
J_lin = torch.autograd.functional.jacobian(lambda x: linear(x[None])[0, -1], x)  # (d, T, d)
W_lin = linear.weight_hh.detach()
power = [torch.linalg.matrix_power(W_lin, k) @ linear.weight_ih.detach() for k in range(T)]
print(
    "linear RNN: dh_T/dx_(T-k) == W_hh^k W_xh for every k:",
    all(torch.allclose(J_lin[:, T - 1 - k], power[k]) for k in range(T)),
)

# %% [markdown] slideshow={"slide_type": "-"}
# So the question "does the answer's gradient reach a token k steps back?" becomes "how large is
# a product of k matrices?". For $W_{hh} = \rho \cdot$ (an orthogonal matrix), the case this
# chapter measures, ‖W^k‖ = ρ^k exactly: the gradient shrinks like 0.9^k, stays at 1^k, or grows
# like 1.2^k. Exponentially, whichever way it goes.
#
# > **⚠ The source says** the gradient scales like $\lambda_{\max}^{n-1}$ with $\lambda_{\max}$ the
# > **largest singular value** of $W_{hh}$, vanishing for $\lambda_{\max} < 1$ and exploding for
# > $\lambda_{\max} > 1$. The largest singular value σ_max only **bounds** the product from above;
# > the long-run rate is the **spectral radius** ρ (the largest |eigenvalue|):
# > $\rho^k \le \|W^k\|_2 \le \sigma_{\max}^k$. The two agree for symmetric or scaled orthogonal
# > matrices, not in general: below, σ_max = 2.12 > 1 and yet the powers vanish. So σ_max < 1
# > guarantees vanishing, but σ_max > 1 does not guarantee explosion (appendix A.2 also shows a
# > matrix with ρ < 1 whose powers first grow a billionfold).

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
W_2x2 = torch.tensor([[0.5, 2.0], [0.0, 0.5]], dtype=torch.float64)
print(
    f"rho = {ch04.spectral_radius(W_2x2):.2f}, sigma_max = {ch04.largest_singular_value(W_2x2):.2f}"
)
print(
    "||W^k|| for k = 1, 5, 20, 50:", [f"{v:.1e}" for v in ch04.power_norms(W_2x2, [1, 5, 20, 50])]
)

# %% [markdown] slideshow={"slide_type": "-"}
# **Takeaway.** An RNN's gradient from a distance k is a product of k per-step Jacobians
# $D_s W_{hh}$; such products shrink or grow exponentially with k, at a rate set by the spectral
# radius.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 2. Measuring how fast a recurrence forgets
#
# Now measure it. Take an RNN with d = 64 units, $W_{hh} = \rho \cdot$ (random orthogonal),
# $W_{xh} = I$, no bias (`ch04.chapter_rnn`), feed it T = 100 inputs, and compute
# $g(k) = \|\partial h_T/\partial x_{T-k}\|_F$ for every distance k. One call to
# `torch.autograd.functional.jacobian` gives all of it: a (d, T, d) tensor whose slice `[:, t]`
# is ∂h_T/∂x_t.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
rnn_09 = ch04.chapter_rnn(0.9, "linear", d=64, seed=0)
x100 = ch04.chapter_inputs(100, 64, seed=0, scale=0.3)  # (T=100, d=64)
J = torch.autograd.functional.jacobian(lambda x: rnn_09(x[None])[0, -1], x100)  # (d, T, d)
g = J.pow(2).sum(dim=(0, 2)).sqrt().flip(0)  # (T,) g[k] = ||dh_T / dx_(T-k)||_F
for k_ in (0, 10, 50, 99):
    print(f"k = {k_:2d}: g(k) = {float(g[k_]):.3e},  rho^k sqrt(d) = {0.9**k_ * 8:.3e}")

# %% [markdown] slideshow={"slide_type": "-"}
# **Reproduction** (Bengio et al. 1994; Pascanu et al. 2013, §2–3). Five seeds for each
# ρ ∈ {0.9, 1.0, 1.2}, linear and tanh, inputs 0.3 · N(0, I). **Expected**: for the linear RNN
# $g(k) = \rho^k \sqrt d$ exactly, a straight line of slope ln ρ on a log scale; tanh multiplies
# in factors 1 − h² ≤ 1, so it vanishes faster, and at ρ > 1 the states saturate (|h| near 1,
# tanh′ near 0), which can stop the growth. **Pass**: the linear slope within 10⁻³ of ln ρ;
# tanh g(1)/g(50) > 10³ at ρ = 0.9 and 1.0, and > 1 (still decaying) at ρ = 1.2.

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
rhos, seeds = (0.9, 1.0, 1.2), range(5)
G = {
    (f, rho): torch.stack([ch04.rnn_gradient_norms(rho, f, T=100, d=64, seed=s) for s in seeds])
    for f in ("linear", "tanh")
    for rho in rhos
}  # (5 seeds, 100 distances) each
print(f"{'model':>8} {'rho':>4} | {'slope of ln g':>13} {'ln rho':>7} | {'g(1)/g(50)':>10}")
for (f, rho), g in G.items():
    ratio = float((g[:, 1] / g[:, 50]).mean())
    slope = round(ch04.log_slope(g), 4) + 0.0
    print(f"{f:>8} {rho:4.1f} | {slope:13.4f} {math.log(rho):7.4f} | {ratio:10.3g}")
for rho in rhos:
    assert abs(ch04.log_slope(G["linear", rho]) - math.log(rho)) < 1e-3
    assert torch.allclose(
        G["linear", rho][:, 10], torch.full((5,), rho**10 * 8.0, dtype=torch.float64)
    )
assert float((G["tanh", 0.9][:, 1] / G["tanh", 0.9][:, 50]).mean()) > 1e3
assert float((G["tanh", 1.0][:, 1] / G["tanh", 1.0][:, 50]).mean()) > 1e3
assert float((G["tanh", 1.2][:, 1] / G["tanh", 1.2][:, 50]).mean()) > 1  # rho > 1, still decaying

# %% slideshow={"slide_type": "subslide"}
fig, ax = plt.subplots(1, 2, figsize=(10, 3.2), sharey=True)
colors = {0.9: "tab:blue", 1.0: "tab:green", 1.2: "tab:red"}
for a_i, f in enumerate(("linear", "tanh")):
    for rho in rhos:
        ax[a_i].semilogy(G[f, rho].log().mean(0).exp(), c=colors[rho], label=f"rho = {rho}")
    ax[a_i].set(xlabel="distance k = T - t", title=f"{f} RNN", ylim=(1e-7, 1e6))
    ax[a_i].legend(fontsize=8)
ax[0].set_ylabel("||dh_T / dx_(T-k)||_F")
plt.tight_layout()
plt.show()

# %% [markdown] slideshow={"slide_type": "-"}
# The linear RNN follows ρ^k to four decimals of its slope. The tanh RNN forgets even at ρ = 1,
# where the linear one keeps everything: each step's 1 − h² < 1 shaves the gradient. At ρ = 1.2
# the linear RNN **explodes**, 1.2^99 ≈ 7·10⁷. With tanh the same matrix vanishes here (the states
# saturate), yet explodes when the inputs are tiny and the states stay near 0 (try it in the widget
# of section 3): whether a tanh RNN explodes depends on its inputs, not on W alone (Pascanu et al.
# 2013; appendix A.3).
#
# An explosion is the more dangerous failure: one step of gradient descent with a gradient of
# norm 10⁴ throws the weights far away, and the loss becomes `nan`. Pascanu et al.'s fix is
# **gradient-norm clipping**: compute the global norm ‖g‖ of all gradients together; if it
# exceeds a threshold c, rescale every gradient by c/‖g‖. The direction is kept, only the step is
# capped.
#
# > **Glossary** · spectral radius 谱半径 · singular value 奇异值 · saturation 饱和 · gradient
# > clipping 梯度裁剪 · gradient norm 梯度范数 · threshold 阈值

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 2 · Gradient-norm clipping
# **Difficulty** ●○○ · **Time** 8 min · **Points** 2 · **Practises** the global gradient norm,
# Pascanu et al.'s rescaling rule
#
# Write `my_clip_grad_norm(grads, max_norm)`: `grads` is a tuple of gradient tensors of any
# shapes. Compute the **global** norm ‖g‖ = √(Σ over all tensors and entries of g²); if
# ‖g‖ > max_norm, return every tensor multiplied by max_norm/‖g‖, otherwise return them unchanged
# — a tuple, in the same order, each tensor in its own dtype (float32 in, float32 out). All-zero
# gradients must stay zero (no division by 0). Torch's convention max_norm/(‖g‖ + 10⁻⁶) passes
# too. Do not change the inputs in place; the check refuses `torch.nn.utils`' clipping functions
# (`clip_grad_norm_`, `clip_grad_value_`, `clip_grads_with_norm_`, `get_total_norm`) and the
# course's package.


# %% nbgrader={"grade": false, "grade_id": "ch04_clip_grad_norm", "locked": false, "schema_version": 3, "solution": true} slideshow={"slide_type": "skip"}
def my_clip_grad_norm(grads, max_norm):
    """grads: tuple of tensors, max_norm > 0 -> tuple of tensors rescaled to global norm <= max_norm."""
    ### BEGIN SOLUTION
    total = math.sqrt(sum(float((g.double() ** 2).sum()) for g in grads))  # the global norm
    scale = min(1.0, max_norm / (total + 1e-6))
    return tuple(g * scale for g in grads)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch04_clip_grad_norm_test", "locked": true, "points": 2, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"} tags=["raises-exception"]
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

# %% [markdown] slideshow={"slide_type": "-"}
# Clipping at work (`ch04.exploding_training`, which clips with the course's reference): a
# **linear** RNN (16 units, T = 30) started at W_hh = 1.2 · orthogonal, trained with plain SGD
# (lr 0.1, batch 32, 100 steps) to output the third-newest input. Without clipping the first
# gradient is in the tens of thousands and the loss is `nan` within a few steps; clipped at
# ‖g‖ = 1 it trains.

# %% slideshow={"slide_type": "subslide"}
# NBVAL_IGNORE_OUTPUT
loss_plain, norm_plain = ch04.exploding_training(clip=None)
loss_clip, norm_clip = ch04.exploding_training(clip=1.0)
first_nan = next(i for i, v in enumerate(loss_plain) if math.isnan(v))
print(f"gradient norm at step 0: {norm_plain[0]:.2e}")
print(f"no clipping : loss {loss_plain[0]:.1f} -> nan from step {first_nan} on")
print(
    f"clip at 1.0 : loss {loss_clip[0]:.1f} -> {np.mean(loss_clip[-10:]):.3f} (last 10 steps; predicting 0 scores 1.0)"
)
assert first_nan <= 3 and norm_plain[0] > 1e3
assert np.mean(loss_clip[-10:]) < 0.1 and all(math.isfinite(v) for v in loss_clip)
fig, ax = plt.subplots(figsize=(6, 3))
ax.semilogy(loss_plain, "o-", c="tab:red", ms=7, label=f"no clipping (nan from step {first_nan})")
ax.semilogy(loss_clip, c="tab:blue", label="clipped at ||g|| = 1")
ax.axhline(1.0, ls=":", c="k", lw=1, label="predict 0")
ax.set(xlabel="SGD step", ylabel="loss", title="linear RNN started at rho = 1.2")
ax.legend(fontsize=8)
plt.show()

# %% [markdown] slideshow={"slide_type": "-"}
# Clipping does nothing for **vanishing** gradients, and those are what the recall task meets:
# the tanh RNN's gradient from k = 50 is thousands of times smaller than from k = 1. The remedies
# are architectural: gates (LSTM, GRU), residual paths (chapter 08), or paths that do not pass
# through every step at all.
#
# **Takeaway.** Measured, an RNN's gradient falls (or grows) exponentially with the distance;
# clipping caps an explosion, nothing in the recurrence stops the vanishing.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 3. Attention: every input one step from the output
#
# Self-attention computes each output directly from every value (Eq. 5.4.3):
#
# $$o_i = \sum_{j=1}^{n} A_{ij} v_j \qquad (5.4.3)$$
#
# There is no chain of states in between: $\partial o_i/\partial v_j = A_{ij} I$ exactly (v_j
# does not enter the scores), and an input x_j reaches o_i through v_j and through the scores,
# whatever the distance |i − j|. The path from any input to any output is
# **one step** long (source 000 states it as PathLength = 1 for self-attention against n for an
# RNN, Eq. 14.3.9). Measure it exactly as in section 2: one causal self-attention layer
# (`ch04.chapter_attention`, d = 64, one head), the output at the last position, 20 seeds
# (`ch04.attention_jacobian_profile` computes the Jacobian in closed form; the cell checks it
# against autograd). **Pass** (the last part of the reproduction): g(1)/g(50) in [0.2, 5].

# %% slideshow={"slide_type": "subslide"}
# NBVAL_CHECK_OUTPUT
G_att = torch.stack(
    [
        ch04.attention_jacobian_profile(
            ch04.chapter_attention(64, s), ch04.chapter_inputs(100, 64, s)
        )
        for s in range(20)
    ]
)  # (20 seeds, 100 distances)
assert torch.allclose(G_att[0], ch04.attention_gradient_norms(T=100, d=64, seed=0))  # = autograd
att_ratio = float(G_att[:, 1].mean() / G_att[:, 50].mean())
print(
    f"attention: slope of ln g = {round(ch04.log_slope(G_att), 2) + 0.0:.2f} per step, g(1)/g(50) in [0.2, 5]: {0.2 <= att_ratio <= 5}"
)
assert 0.2 <= att_ratio <= 5
fig, ax = plt.subplots(figsize=(6, 3.2))
for rho in rhos:
    ax.semilogy(G["tanh", rho].log().mean(0).exp(), c=colors[rho], label=f"tanh RNN, rho = {rho}")
ax.semilogy(G_att.mean(0), c="tab:orange", lw=2, label="self-attention")
ax.set(xlabel="distance k", ylabel="||d out_T / d x_(T-k)||_F", ylim=(1e-7, 1e3))
ax.legend(fontsize=8)
plt.show()

# %% [markdown] slideshow={"slide_type": "-"}
# The orange line is flat: the far inputs get as much gradient as the near ones.
#
# "One step" is a statement about a **graph**: draw an edge i → j when position i reads
# position j in one step, A_ij > ε (Eq. 5.4.5 uses a threshold ε). The **path length** from i to j
# is the fewest edges on a path from i to j; **breadth-first search** finds it for every j at once:
# start from i (distance 0), then everything one edge away gets distance 1, everything one edge
# from those and not yet reached gets 2, and so on until nothing new is reached. The same search
# works on any layer's graph: an RNN step (i reads i − 1), a width-3 convolution (i reads i − 1,
# i, i + 1), or softmax attention, where every weight is positive.
#
# > **Glossary** · path length 路径长度 · graph 图 · breadth-first search 广度优先搜索 ·
# > receptive field 感受野 · dilated convolution 空洞卷积

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 3 · Path lengths by breadth-first search
# **Difficulty** ●●○ · **Time** 12 min · **Points** 3 · **Practises** Eq. (5.4.5), a graph from
# attention weights, breadth-first search
#
# Write `my_path_lengths(weights, eps)`: weights (n, n) → dist (n, n), always **float64**,
# whatever the weights' dtype (a float, so that unreachable pairs can be `inf`; float64 as the
# one convention). There is an edge i → j when
# `weights[i, j] > eps` (strictly: a weight equal to eps is no edge). `dist[i, i] = 0`;
# `dist[i, j]` = the fewest edges on a path from i to j; `float("inf")` when there is no path.
# Loops over starts and steps are fine, so is a matrix form. The check refuses the course's path
# functions (`shortest_path_lengths`, `path_lengths_from`, `layers_to_connect`).


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


# %% nbgrader={"grade": true, "grade_id": "ch04_path_lengths_test", "locked": true, "points": 3, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"} tags=["raises-exception"]
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

# %% [markdown] slideshow={"slide_type": "-"}
# The course's search (`ch04.path_lengths_from`) on the one-step graphs of five layers, n = 64:
# how many steps (or stacked layers) does position 63 need to read position 0 — for the
# information at position 0 to reach position 63?

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
n = 64
x64 = torch.randn(n, 16, dtype=torch.float64)
_, A = scaled_dot_product_attention(x64, x64, x64)  # (64, 64): every weight > 0
dilated = ch04.layers_to_connect([ch04.conv_graph(n, 3, 2**layer) for layer in range(8)], source=0)
paths = {
    "RNN (chain)": ch04.path_lengths_from(ch04.rnn_graph(n), 0)[-1],
    "CNN, width 3": ch04.path_lengths_from(ch04.conv_graph(n, 3), 0)[-1],
    "CNN, width 3, dilation 2^l": dilated[-1],
    "self-attention (A > 0)": ch04.path_lengths_from(A > 0, 0)[-1],
    "local attention, window 8": ch04.path_lengths_from(ch04.local_attention_graph(n, 8), 0)[-1],
}
for name, steps in paths.items():
    print(f"  {name:28s} {float(steps):4.0f}")
assert [float(v) for v in paths.values()] == [63, 63, 6, 1, 8]

# %% [markdown] slideshow={"slide_type": "-"}
# The RNN needs 63 steps, a stack of width-3 convolutions 63 layers (each layer widens the
# receptive field by one position on each side; doubling dilations bring it down to 6), a local
# window of 8 needs 8 layers, dense attention one.
#
# One step does not mean a **large** gradient, though. The size of the step is the weight A_ij:
# when attention is peaked, most weights are tiny, and so is the gradient to their positions,
# near or far. Below, the query projection is scaled by β (sharper attention):

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
base, x_att = ch04.chapter_attention(64, 0), ch04.chapter_inputs(100, 64, 0)
print(f"{'beta':>5} | share of positions whose gradient is below 1e-3 of the largest")
shares = {}
for beta in (1.0, 4.0, 16.0, 64.0):
    sharp = copy.deepcopy(base)
    with torch.no_grad():
        sharp.q_proj.weight.mul_(beta)
        sharp.q_proj.bias.mul_(beta)
    g = ch04.attention_jacobian_profile(sharp, x_att)[1:]  # (99,) k >= 1
    shares[beta] = float((g < 1e-3 * g.max()).double().mean())
    print(f"{beta:5.0f} | {shares[beta]:.2f}")
assert shares[1.0] == 0 and shares[64.0] > 0.9

# %% [markdown] slideshow={"slide_type": "-"}
# The gradient through a one-step path is proportional to the weight on it: distance-free, but
# content-dependent. A saturated softmax starves most positions of gradient (chapter 03).
#
# **Play with it.** The RNN's spectral radius ρ ($W_{hh} = \rho \cdot$ orthogonal, d = 32), its
# nonlinearity, the length T and the input scale. Blue: the RNN's g(k), from the product of
# Eq. (5.4.2); dashed: the linear law ρ^k √d; orange: one self-attention layer. Try:
# 1. linear, ρ = 1.00: flat on the dashed law; ρ = 0.95 and 1.05: straight lines down and up.
# 2. tanh, ρ = 1.2, input scale 0.3: it decays (saturation); input scale 10⁻⁶: it explodes.
# 3. relu at ρ = 1: about half the units are off at each step, so it decays although ρ = 1.
# 4. Any setting: the orange line stays flat.

# %% slideshow={"slide_type": "slide"}
# NBVAL_IGNORE_OUTPUT
ch04.gradient_widget(rho=1.0, nonlinearity="tanh", length=100)

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Takeaway.** Attention puts every input one step from every output, so its gradient does not
# depend on the distance; how much gradient a position gets depends on its weight instead.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 4. The long-range recall task
#
# Back to the opening puzzle (`ch04.RecallRNN`, `ch04.RecallAttention`). **Models**: embedding
# (32), a tanh RNN with 64 units, a linear read-out of its last state; against embedding plus
# learned positions (32), **one** causal self-attention layer, a linear read-out at the question.
# Adam, lr 10⁻², batch 64; 250 steps for the RNN, 100 for attention; two seeds. **Expected**: the
# RNN's accuracy falls with k, since the token must survive k tanh steps and the gradient that
# teaches it to shrinks exponentially with k (section 2); attention reaches every k in one step.
# **Pass**: on both seeds the RNN ≥ 0.9 at k = 1, ≤ 0.5 on average for k ≥ 6, a drop of ≥ 0.4;
# attention ≥ 0.95 at every k. Chance is 0.25.
#
# > **Glossary** · recall 回忆 · token 词元 · accuracy 准确率 · chance level 随机水平 ·
# > effective dependency span 有效依赖跨度

# %% slideshow={"slide_type": "-"}
# NBVAL_IGNORE_OUTPUT
acc_rnn, acc_att, models = {}, {}, {}
for seed in (0, 1):
    torch.manual_seed(seed)
    models["rnn", seed] = ch04.RecallRNN()
    ch04.train_recall(models["rnn", seed], steps=250, lr=1e-2, seed=seed, desc=f"RNN, seed {seed}")
    torch.manual_seed(seed)
    models["att", seed] = ch04.RecallAttention()
    ch04.train_recall(
        models["att", seed], steps=100, lr=1e-2, seed=seed, desc=f"attention, seed {seed}"
    )
    acc_rnn[seed] = ch04.recall_accuracy(models["rnn", seed])
    acc_att[seed] = ch04.recall_accuracy(models["att", seed])

# %% slideshow={"slide_type": "subslide"}
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
fig, ax = plt.subplots(figsize=(6, 3))
for seed, style in ((0, "-"), (1, "--")):
    ax.plot(range(1, 11), acc_rnn[seed], "o" + style, c="tab:blue", label=f"RNN, seed {seed}")
    ax.plot(
        range(1, 11), acc_att[seed], "s" + style, c="tab:orange", label=f"attention, seed {seed}"
    )
ax.axhline(0.25, ls=":", c="k", lw=1, label="chance")
ax.set(xlabel="distance k", ylabel="accuracy", ylim=(0, 1.05), title="recall the token k back")
ax.legend(fontsize=7, ncol=2)
plt.show()

# %% [markdown] slideshow={"slide_type": "-"}
# That is the puzzle, reproduced: the RNN is accurate at k = 1 and near chance from about k = 6,
# attention is accurate at every distance. More training moves the RNN's boundary only a little:
# trained for 3,000 steps, twelve times as many, seed 0 still fell from 0.92 at k = 6 to 0.58 at
# k = 7 and to chance by k = 9 when this was written, while attention needed 100 steps for every
# k. Did the attention layer really learn to read k back, or something else? A trained head's weights say where it reads. The source's **effective
# dependency span** (Eq. 5.4.4) is the farthest position a query reads with a weight above a
# threshold ε:
#
# $$\mathrm{span}_{\mathrm{eff}}(i) = \max\{|i - j| : A_{ij} > \epsilon\} \qquad (5.4.4)$$
#
# For the question token, the span should be exactly the k it asks for.

# %% [markdown] slideshow={"slide_type": "skip"}
# ### Exercise 4 · The effective dependency span
# **Difficulty** ●○○ · **Time** 8 min · **Points** 2 · **Practises** Eq. (5.4.4), a table of
# distances |i − j| built once and broadcast over batch and heads
#
# Write `my_effective_span(weights, eps)`: weights (..., T, S) — any leading batch and head
# dimensions, query i over the rows and key j over the columns, both numbered 0, 1, … — →
# span (..., T), an **integer** tensor (`torch.long`) whatever the weights' dtype:
# span(i) = max{|i − j| : weights[..., i, j] > eps}, strictly greater, and **0** when no weight
# of the row exceeds eps. T and S may differ (cross-attention). No loops needed; loops are fine.
# The check refuses the course's `effective_span`.


# %% nbgrader={"grade": false, "grade_id": "ch04_effective_span", "locked": false, "schema_version": 3, "solution": true} slideshow={"slide_type": "skip"}
def my_effective_span(weights, eps):
    """weights (..., T, S), eps -> (..., T) long: max |i - j| over A_ij > eps (0 if none)."""
    ### BEGIN SOLUTION
    T, S = weights.shape[-2], weights.shape[-1]
    distance = (torch.arange(T)[:, None] - torch.arange(S)[None, :]).abs()  # (T, S)
    kept = torch.where(weights > eps, distance, torch.zeros_like(distance))  # (..., T, S)
    return kept.amax(dim=-1)  # (..., T)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "ch04_effective_span_test", "locked": true, "points": 2, "schema_version": 3, "solution": false} slideshow={"slide_type": "skip"} tags=["raises-exception"]
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

# %% [markdown] slideshow={"slide_type": "-"}
# The package's `effective_span` (`attncourse.metrics`, for any (B, H, T, S) attention tensor) on
# 500 fresh questions to the trained attention of seed 0, with ε = 0.5: at most one key can
# weigh more than 0.5.

# %% slideshow={"slide_type": "subslide"}
# NBVAL_IGNORE_OUTPUT
xq, yq, kq = ch04.recall_batch(500, torch.Generator().manual_seed(7))
with torch.no_grad():
    _, weights = models["att", 0].attention(xq)  # (500, 1, 11, 11)
span_last = effective_span(weights, eps=0.5)[:, 0, -1]  # (500,) the question's span
print(f"span of the question == the distance k it asks for: {int((span_last == kq).sum())} of 500")
assert float((span_last == kq).double().mean()) > 0.95
fig, ax = plt.subplots(figsize=(5, 3))
ax.imshow(weights[:8, 0, -1].numpy(), cmap="Greys", vmin=0, vmax=1)
ax.set(xlabel="key position j", ylabel="question", title="where the question reads (8 examples)")
ax.set_yticks(range(8), [f"k = {k_}" for k_ in kq[:8].tolist()])
plt.show()

# %% [markdown] slideshow={"slide_type": "-"}
# Each question puts nearly all its weight on the one position k back: the layer has learned a
# lookup by distance, and its gradient reached position 0 as easily as position 9. The span
# depends on ε as much as on the weights (uniform attention over n positions has span 0 for any
# fixed ε ≥ 1/n): report the threshold with the number (appendix A.5).
#
# **Takeaway.** On a task that needs a token k steps back, the RNN fails as its gradient
# vanishes, and one attention layer learns to read exactly k back at every k.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 5. What attention pays: work, memory and inductive bias
#
# Short paths are not free. Vaswani et al. (2017, Table 1) compare one layer of each kind on n
# positions of width d: self-attention costs O(n²·d) operations, O(1) sequential steps and path
# length O(1); a recurrent layer O(n·d²), O(n) sequential steps, path O(n). The course measures
# the table (`ch04.layer_costs`): FLOPs counted from the matrix products actually executed, the
# sequential steps as the longest chain in the autograd graph (what no parallel hardware can
# overlap), and the path by breadth-first search.
#
# > **Glossary** · FLOPs 浮点运算次数 · sequential operations 顺序操作数 · complexity 复杂度 ·
# > inductive bias 归纳偏置 · permutation equivariance 置换等变性 · data efficiency 数据效率

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
costs = {n_: ch04.layer_costs(n_, 64) for n_ in (32, 512)}  # d = 64
print(f"{'d = 64':16} | {'FLOPs':^20} | {'sequential steps':^18} | path")
print(f"{'n':>16} | {32:>9} {512:>10} | {32:>8} {512:>9} | {512:>4}")
exponent = {}  # FLOPs ~ n^exponent
for name in ("self-attention", "recurrent", "convolutional"):
    a, b = costs[32][name], costs[512][name]
    exponent[name] = math.log(b["flops"] / a["flops"]) / math.log(16)
    print(
        f"{name:>16} | {a['flops']:9.3g} {b['flops']:10.3g} | {a['sequential']:8d}"
        f" {b['sequential']:9d} | {b['path']:4.0f}"
    )
assert abs(exponent["self-attention"] - 2) < 0.01 and abs(exponent["recurrent"] - 1) < 0.01
assert costs[512]["self-attention"]["sequential"] == costs[32]["self-attention"]["sequential"]
assert costs[512]["recurrent"]["sequential"] > 15 * costs[32]["recurrent"]["sequential"]
assert costs[32]["self-attention"]["flops"] < costs[32]["recurrent"]["flops"]  # n < d

# %% [markdown] slideshow={"slide_type": "-"}
# Attention's work grows as n², the RNN's as n; the RNN's sequential chain grows with n,
# attention's does not. At n = 32 < d = 64 attention's n × n core is even cheaper than the
# recurrence (n²d < nd²), the paper's remark; at n = 512 it is not. Like Table 1, the count
# leaves out attention's Q, K, V and output projections, another 8nd² FLOPs. Attention also stores an
# n × n weight matrix per head (262,144 numbers at n = 512), which chapter 10 learns to avoid.
#
# The second cost is **inductive bias**, what an architecture assumes before it sees data. An
# RNN assumes order (it reads step by step), a convolution locality (each output reads a small
# window, the same weights everywhere). Attention assumes almost nothing: without positions it
# cannot even tell orders apart. Permute its inputs and its outputs are permuted the same way —
# *permutation equivariance*:

# %% slideshow={"slide_type": "-"}
# NBVAL_CHECK_OUTPUT
attn_layer = ch04.chapter_attention(32, seed=11, num_heads=4)
tokens = torch.randn(2, 20, 32, generator=torch.Generator().manual_seed(11), dtype=torch.float64)
perm = torch.randperm(20, generator=torch.Generator().manual_seed(12))
with torch.no_grad():
    gap = ch04.permutation_gap(lambda x: attn_layer(x)[0], tokens, perm)
print("attention without positions: f(x permuted) == f(x) permuted:", gap < 1e-12)

# %% [markdown] slideshow={"slide_type": "-"}
# Every relation between positions must be learned from data. The source says such a "weak
# inductive bias" is general but may need more data; measure it on a purely local rule,
# $y_i = (x_{i-1} + x_i) \bmod 8$ on sequences of 16 tokens. `ch04.LocalConv` is a width-2 causal
# convolution (locality built in); `ch04.LocalAttention` is one causal attention layer with
# learned positions, which must discover that position i needs i − 1, at every i. Each is
# trained full-batch (Adam, lr 10⁻², 100 steps) on N fixed sequences and tested on 1,000 fresh
# ones, two seeds. **Pass** (both seeds): the convolution ≥ 0.95 from N = 32; attention ≤ 0.6 from
# N = 32 and ≥ 0.95 from N = 128. Chance is 1/8.

# %% slideshow={"slide_type": "-"}
# NBVAL_IGNORE_OUTPUT
data_acc = {}
for seed in (0, 1):
    for name, make, n_train in (
        ("convolution", ch04.LocalConv, 32),
        ("attention", ch04.LocalAttention, 32),
        ("attention", ch04.LocalAttention, 128),
    ):
        torch.manual_seed(seed)
        data_acc[name, n_train, seed] = ch04.train_local(
            make(), n_train, seed=seed, desc=f"{name}, N = {n_train}, seed {seed}"
        )
for (name, n_train, seed), a in data_acc.items():
    print(f"{name:>11}, N = {n_train:3d} training sequences, seed {seed}: test accuracy {a:.3f}")
for seed in (0, 1):
    assert data_acc["convolution", 32, seed] >= 0.95, seed
    assert data_acc["attention", 32, seed] <= 0.6 and data_acc["attention", 128, seed] >= 0.95, seed

# %% [markdown] slideshow={"slide_type": "-"}
# From 32 sequences the convolution learns the rule; attention gets a minority of fresh tokens
# right and needs four times the data to catch up. The bias cuts both ways: the convolution could
# never learn the recall task's k = 10 (its window is 2), attention can.
#
# **Takeaway.** Attention buys path length 1 with O(n²) work and memory, and with an inductive
# bias so weak that it must learn from data even that neighbours matter.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Summary
#
# - An RNN's gradient from distance k is a **product of k Jacobians** $D_s W_{hh}$ (Eq. 5.4.2):
#   for a linear RNN $W_{hh}^k W_{xh}$, which shrinks or grows like ρ^k, ρ the spectral radius;
#   the largest singular value only bounds it.
# - Measured: the linear RNN's ‖∂h_T/∂x_{T−k}‖ falls on the line ρ^k √d; tanh vanishes even at
#   ρ = 1; whether a tanh RNN explodes depends on its inputs.
# - **Gradient-norm clipping** rescales all gradients together when their global norm exceeds a
#   threshold; it stops explosions and does nothing for vanishing.
# - Attention connects every pair in **one step** (path length 1, Eq. 5.4.3): its gradient does
#   not depend on the distance, but it is proportional to the weight, so peaked attention starves
#   most positions.
# - On the recall task the RNN falls to chance by k ≈ 6 (250 steps; twelve times as many move that
#   by one or two), one attention layer is accurate at every k, and its learned span is the k each
#   question asks for.
# - The price: O(n²·d) work and an n × n matrix per head against the RNN's O(n·d²) (but O(n)
#   sequential steps), and a weak inductive bias that needs more data for a local rule.

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Check yourself**
#
# 1. A linear RNN has $W_{hh} = 0.95 \cdot$ (an orthogonal matrix). By what factor does
#    ‖∂h_T/∂x_{T−k}‖ change from k = 10 to k = 30?
# 2. A recurrent matrix has a largest singular value above 1. Must a linear RNN with it explode?
# 3. Clipping rescales the gradient to norm ≤ c. Why does it not help the RNN on the recall task?
# 4. In one causal self-attention layer, what is ∂o_i/∂x_j for j > i? How many steps does it take
#    for position 100 to read position 1?
# 5. Why could a width-2 convolution learn $y_i = (x_{i-1} + x_i) \bmod 8$ from fewer examples
#    than attention, and why could it not learn the recall task at all?
#
# <details><summary>Answers</summary>
#
# 1. By 0.95²⁰ ≈ 0.36: ‖W^k‖ = 0.95^k exactly for a scaled orthogonal matrix.
# 2. No: σ_max only bounds the growth from above; the spectral radius sets the rate. Section 1's
#    [[0.5, 2], [0, 0.5]] has σ_max = 2.12 and powers that vanish (its spectral radius is 0.5).
# 3. Its problem is a vanishing gradient: clipping only shrinks large gradients, it never
#    enlarges small ones.
# 4. Exactly 0: the causal mask gives j > i weight exactly 0, so x_j never reaches o_i. Position
#    100 reads position 1 in one step, as it reads every earlier position.
# 5. The convolution's weights are shared across positions and read exactly the window the rule
#    needs; attention must learn from data which position to read, at every position. The
#    recall task needs up to 10 positions back, outside the width-2 window.
# </details>
#
# **Next — chapter 05, bidirectional, causal and cross attention**: which positions may read
# which, how information flows through a stack of attention layers, and what two layers can do
# that one cannot.

# %% [markdown] slideshow={"slide_type": "skip"}
# ## Appendix · The source, checked
#
# Source 001, §5.4.1–5.4.3 and source 000, §14.3.2 and §14.3.6 state the ideas above as
# equations, definitions, lemmas and theorems. This appendix checks each one numerically. Marks:
# **✓ holds** · **⚠ holds only under a condition** (stated) · **✗ wrong as printed** (with a
# counterexample and the correct statement) · **→ ch. NN**: checked in chapter NN, which owns the
# verdict. A few terms (LayerNorm, Pre-LN and Post-LN, mutual information) are used here and
# defined where they first appear; the main path does not need them.
#
# ### A.1 The product of Jacobians
#
# **Claim check — Eq. (5.4.1)–(5.4.2) ✓.** The gradient is the product of the per-step
# Jacobians, each $D_s W_{hh}$ with $D_s = \mathrm{diag}(f'(a_s))$: section 1's cell writes the
# product from the states (no autograd) and matches `torch.autograd.functional.jacobian` for a
# tanh RNN with a bias; for the linear RNN, $\partial h_T/\partial x_{T-k} = W_{hh}^k W_{xh}$ at
# every k. The course's one-pass Jacobian (`ch04.input_jacobian`, one backward pass for all
# output coordinates) is the same tensor:

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
J_one_pass = ch04.input_jacobian(lambda xb: rnn(xb)[:, -1], x)  # (d, T, d), the section-1 RNN
print("autograd.functional.jacobian == input_jacobian:", torch.allclose(J_torch, J_one_pass))
assert torch.allclose(J_torch, J_one_pass) and torch.allclose(product, J_torch[:, t])

# %% [markdown] slideshow={"slide_type": "skip"}
# ### A.2 Which "λ_max"? Spectral radius and largest singular value
#
# The source: *"let λ_max be the largest singular value of W_hh; then ‖∂h_t/∂h_{t−1}‖₂ ≈ λ_max
# (ignoring the activation); after n − 1 steps the gradient scales by about λ_max^{n−1}."* Two
# numbers hide in "λ_max": the **largest singular value** σ_max(W) = ‖W‖₂, the most one step can
# stretch a vector, which gives the upper bound ‖W^k‖₂ ≤ σ_max^k; and the **spectral radius**
# ρ(W) = max |eigenvalue|, the long-run rate: ‖W^k‖^{1/k} → ρ(W) (Gelfand's formula) and
# ‖W^k‖₂ ≥ ρ^k. They agree for *normal* matrices (W Wᵀ = Wᵀ W: symmetric, scaled orthogonal). For
# non-normal ones they can sit on opposite sides of 1: W = [[0.5, 2], [0, 0.5]] has σ_max = 2.12
# and vanishing powers; W = 0.9 I + 0.5 N (N the 16 × 16 shift matrix) has ρ = 0.9, yet its powers
# first grow by nine orders of magnitude (*transient growth*).
#
# > **Glossary** · normal matrix 正规矩阵 · non-normal 非正规 · transient growth 瞬态增长 · upper bound 上界

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
W_shift = ch04.shifted_identity(16, 0.9, 0.5)  # 0.9 I + 0.5 N
W_orth = ch04.scaled_orthogonal(16, 0.9, torch.Generator().manual_seed(0))  # rho = sigma = 0.9
ks = [1, 5, 20, 50, 100, 200, 400, 800]
matrices = {"0.9 x orthogonal": W_orth, "[[.5, 2], [0, .5]]": W_2x2, "0.9 I + 0.5 N": W_shift}
print(f"{'matrix':>18} {'rho':>5} {'s_max':>6} | " + " ".join(f"{'k=' + str(k_):>9}" for k_ in ks))
for name, W in matrices.items():
    norms = ch04.power_norms(W, ks)
    rho, s_max = ch04.spectral_radius(W), ch04.largest_singular_value(W)
    print(f"{name:>18} {rho:5.2f} {s_max:6.2f} | " + " ".join(f"{v:9.2e}" for v in norms))
    assert all(v <= s_max**k_ * (1 + 1e-9) for v, k_ in zip(norms, ks))  # the sigma_max bound
    assert all(v >= rho**k_ * (1 - 1e-9) for v, k_ in zip(norms, ks))  # the rho bound
assert max(ch04.power_norms(W_shift, ks)) > 1e8 and ch04.power_norms(W_2x2, [20])[0] < 1e-3

# %% slideshow={"slide_type": "skip"}
k_axis = list(range(0, 1001, 10))
fig, ax = plt.subplots(1, 2, figsize=(10, 3.2))
for (name, W), c in zip(matrices.items(), ("tab:green", "tab:purple", "tab:red")):
    label = f"{name}: rho={ch04.spectral_radius(W):.2f}, s_max={ch04.largest_singular_value(W):.2f}"
    ax[0].semilogy(k_axis, ch04.power_norms(W, k_axis), c=c, label=label)
ax[0].set(xlabel="k", ylabel="||W^k||_2", title="transient growth", ylim=(1e-60, 1e12))
ax[0].legend(fontsize=7)
k_short = list(range(0, 60))
s_shift = ch04.largest_singular_value(W_shift)
ax[1].semilogy(
    k_short, ch04.power_norms(W_shift, k_short), c="tab:red", label="||W^k||, 0.9 I + 0.5 N"
)
ax[1].semilogy(k_short, [s_shift**k_ for k_ in k_short], "k--", lw=1, label="s_max^k (upper bound)")
ax[1].semilogy(k_short, [0.9**k_ for k_ in k_short], "k:", lw=1, label="rho^k (lower bound)")
ax[1].set(xlabel="k", title="between the two bounds")
ax[1].legend(fontsize=7)
plt.tight_layout()
plt.show()

# %% [markdown] slideshow={"slide_type": "skip"}
# **Claim check — "λ_max = largest singular value, ‖∂h_t/∂h_{t−1}‖₂ ≈ λ_max, scaling
# λ_max^{n−1}" ⚠ / ✗.** One step: ✓ for the linear RNN, ‖∂h_t/∂h_{t−1}‖₂ = ‖W‖₂ = σ_max exactly
# (with tanh, ≤ σ_max). Many steps: ✗ as an approximation — σ_max^{n−1} is only an upper bound on
# ‖W^{n−1}‖₂, and the long-run rate is ρ. So "σ_max < 1 ⇒ vanishing" ✓ (sufficient), but "σ_max > 1
# ⇒ explosion" ✗ (the 2 × 2 example vanishes), and even "ρ < 1 ⇒ no explosion" fails at finite
# lengths (0.9 I + 0.5 N grows to 10⁹). **Correct statement**: ρ(W)^k ≤ ‖W^k‖₂ ≤ σ_max(W)^k, with
# equality on both sides for normal W. The chapter's experiments use W = ρ · orthogonal, where
# all three numbers coincide.

# %% [markdown] slideshow={"slide_type": "skip"}
# ### A.3 When does a tanh RNN vanish or explode? (Pascanu et al. 2013)
#
# Pascanu, Mikolov and Bengio (2013, §2.1) prove, for $h_t = W f(h_{t-1}) + \dots$ with
# |f′| ≤ γ (γ = 1 for tanh, ¼ for the sigmoid) and λ₁ the largest singular value of W:
# **λ₁ < 1/γ is sufficient for vanishing**, ‖∂h_T/∂h_{T−k}‖ ≤ (γλ₁)^k → 0; so **λ₁ > 1/γ is
# necessary for exploding**, but not sufficient, because the factors $D_s$ depend on where the
# trajectory runs. The cell runs section 2's tanh RNN at ρ = 1.2 on inputs of shrinking size:
# near the fixed point h = 0, tanh′ ≈ 1 and it behaves like the linear RNN (explodes); with larger
# inputs it saturates (vanishes). Then it checks the sufficient condition on 15 runs with
# σ_max = 0.95.

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
rnn_12 = ch04.chapter_rnn(1.2, "tanh", d=64, seed=0)
W12, I64 = rnn_12.weight_hh.detach(), rnn_12.weight_ih.detach()
print(
    f"tanh RNN, rho = sigma_max = 1.2:  {'input scale':>11} | {'g(1)':>8} {'g(50)':>9} {'g(99)':>9} | behaviour"
)
for scale in (1e-8, 1e-4, 1e-2, 0.3, 1.0):
    g = ch04.rnn_jacobian_profile(
        W12, I64, ch04.chapter_inputs(100, 64, 0, scale), "tanh"
    )  # (100,)
    verdict = "explodes" if g[99] > 10 * g[1] else "vanishes" if g[99] < g[1] / 10 else "neither"
    print(
        f"{'':33}{scale:11.0e} | {float(g[1]):8.2f} {float(g[50]):9.2e} {float(g[99]):9.2e} | {verdict}"
    )
    if scale == 1e-8:
        assert g[99] > 1e6 * g[1]
    if scale >= 0.3:
        assert g[99] < 1e-2 * g[1]

# gamma * sigma_max < 1  =>  ||dh_T/dx_(T-k)||_F <= sqrt(d) (gamma sigma_max)^k ||W_xh||_2
worst = 0.0
for seed in range(5):
    W = torch.randn(32, 32, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    W = 0.95 * W / ch04.largest_singular_value(W)  # sigma_max = 0.95, tanh: gamma = 1
    for scale in (0.01, 0.3, 1.0):
        g = ch04.rnn_jacobian_profile(
            W, torch.eye(32, dtype=torch.float64), ch04.chapter_inputs(80, 32, seed, scale), "tanh"
        )
        bound = math.sqrt(32) * 0.95 ** torch.arange(80, dtype=torch.float64)
        worst = max(worst, float((g / bound).max()))
print(f"sigma_max = 0.95, tanh, 15 runs: largest g(k) / bound <= 1: {worst <= 1 + 1e-9}")
assert worst <= 1 + 1e-9

# %% [markdown] slideshow={"slide_type": "skip"}
# **Claim check — "λ_max < 1 ⇒ vanishing" (§5.4.1) ✓** with λ_max = σ_max and |f′| ≤ γ: γσ_max < 1
# suffices (15 runs, every g(k) under the bound).
#
# **Claim check — Eq. (5.4.2)'s "λ_max > 1 ⇒ explosion" ⚠ necessary, not sufficient** (with
# nonlinearities; for the *linear* RNN, ρ > 1 ⇒ explosion holds). **Correct statement** (Pascanu et
# al. 2013): with |f′| ≤ γ and λ₁ = σ_max(W), λ₁ < 1/γ ⇒ the gradient vanishes exponentially; λ₁ > 1/γ
# is necessary for it to explode, and whether it does depends on the inputs and states (it did at
# input scale 10⁻⁸, it did not at 0.3).

# %% [markdown] slideshow={"slide_type": "skip"}
# ### A.4 Path lengths, receptive fields and cost
#
# **Claim check — Thm. 14.3.2, Eq. (14.3.9): PathLength = 1 for self-attention, n for an RNN ✓**
# for the structure: breadth-first search on section 3's graphs gives 1 for dense attention and
# n − 1 from the first to the last of n positions for the RNN (the source's n, up to one). Eq.
# (5.4.3), o_i = Σ_j A_ij v_j, is the computation itself ✓.
#
# **Claim check — Cor. 14.3.2, "shorter paths ⇒ gradients avoid vanishing" ⚠.** The gradient
# through a one-step path is proportional to the weight on it: distance-independent but
# **content-dependent**. Peaked attention starves most positions of gradient (section 3: at
# β = 64 over 90 % of the positions get less than 10⁻³ of the largest gradient). Chapter 03
# treats saturation; chapter 07 adds positional biases that make attention decay with distance on
# purpose.
#
# **Receptive fields, measured.** The source says a width-3 convolution has a receptive field of
# about 2l + 1 after l layers, so covering n positions takes about n/2 layers. The cell stacks real
# `Conv1d` layers and finds, with autograd, which inputs the middle output depends on (non-zero
# gradient); with dilations 1, 2, 4, … (WaveNet-style) the field doubles each layer instead.

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
fields = {n_: ch04.receptive_field(ch04.conv_stack(n_), 129) for n_ in range(1, 7)}
fields_dilated = {
    n_: ch04.receptive_field(ch04.conv_stack(n_, dilated=True), 129) for n_ in range(1, 7)
}
print("layers l             :", list(fields))
print("width 3              :", list(fields.values()), "  (2l + 1)")
print("width 3, dilation 2^l:", list(fields_dilated.values()), "  (2^(l+1) - 1)")
assert all(v == 2 * n_ + 1 for n_, v in fields.items())
assert all(v == 2 ** (n_ + 1) - 1 for n_, v in fields_dilated.items())
seq_exp = {
    layer: math.log(
        max(costs[512][layer]["sequential"], 1) / max(costs[32][layer]["sequential"], 1)
    )
    / math.log(16)
    for layer in costs[32]
}
print("sequential steps ~ n^e, e =", {k_: round(v, 2) for k_, v in seq_exp.items()})
print(
    "FLOPs ~ n^e, e =",
    {k_: round(v, 2) for k_, v in exponent.items()},
    "(convolutional: 1, Table 1)",
)
assert seq_exp["recurrent"] > 0.95 and seq_exp["self-attention"] == 0
assert abs(exponent["convolutional"] - 1) < 0.01

# %% [markdown] slideshow={"slide_type": "skip"}
# **Claim check — "receptive field ≈ 2l + 1; covering n needs ≈ n/2 layers" (§5.4.2) ✓** for
# contiguous width-3 kernels (exactly 2l + 1; from the middle, (n − 1)/2 layers cover everything;
# from one end to the other, n − 1). The O(log_k n) in the convolutional row of Vaswani et al.'s
# Table 1 assumes **dilated** kernels; their text (§4) adds that contiguous kernels need O(n/k)
# layers.
#
# **Claim check — "the RNN's effective complexity for long-range dependencies is O(n²)" (§5.4.2) ✗.**
# The source argues the RNN needs "O(n) sequential steps, so O(n²) in total". Measured (section 5):
# its FLOPs grow as n¹, O(n·d²) for the whole sequence, and that one pass already carries every
# position's information forward. What grows with n is the **sequential** chain (n steps that
# cannot run in parallel), not the total work. **Correct statement**: an RNN does O(n·d²) work in
# O(n) sequential steps; attention O(n²·d) work in O(1) sequential steps.
#
# **Claim check — "attention's memory access is regular, the RNN's sequential" (§5.4.2) ⚠.** The
# part that matters is the dependency chain (n sequential steps against a constant). On memory,
# attention is the *worse* one: it materialises an n × n weight matrix per head (n = 512: 262,144
# entries against the RNN's 512 × 64 states), which chunked attention avoids (chapter 10).
#
# **Claim check — Eq. (5.4.5), "A_ij is never exactly 0, so dist(i, j) = 1 for all i ≠ j" ✓ for
# ε = 0, ⚠ for ε > 0.** With a threshold, sharper attention drops edges, and the graph's diameter
# grows — or the graph falls apart (inf):

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
x32 = torch.randn(32, 16, dtype=torch.float64, generator=torch.Generator().manual_seed(4))
print(
    f"n = 32, eps = 0.01:  {'score scale':>11} | {'edges A > eps':>13} | {'diameter (max dist)':>19}"
)
diameters = {}
for scale in (0.1, 0.5, 1.0, 2.0, 4.0):
    _, A = scaled_dot_product_attention(x32, x32, x32, scale=scale / 4)  # (32, 32)
    diameters[scale] = float(ch04.shortest_path_lengths(A > 0.01).max())
    print(f"{'':20} {scale:11.1f} | {int((A > 0.01).sum()):13d} | {diameters[scale]:19.0f}")
assert diameters[0.1] == 1 and diameters[1.0] >= 2 and math.isinf(diameters[4.0])

# %% [markdown] slideshow={"slide_type": "skip"}
# ### A.5 Span and coverage depend on their thresholds (Eq. 5.4.4, Def. 14.3.5, Lemma 14.3.6)
#
# Source 000 defines the *information coverage* of position i as $\mathcal{R}(i) = \{j :
# \alpha_{ij} > \tau\}$ (Eq. 14.3.8), `attncourse.metrics.information_coverage` returns |R(i)|.
# Both it and the span depend on the threshold as much as on the attention:
# - the weights of a row sum to 1, so fewer than 1/τ of them can exceed τ: **|R(i)| < 1/τ**.
#   Lemma 14.3.6's "ideally R(i) = {1, …, n}" is impossible for n ≥ 1/τ;
# - uniform attention over n positions has weights 1/n: with a fixed ε its span *drops to 0* once
#   n ≥ 1/ε, although it reads everything equally. A threshold must scale with 1/n (e.g. ε = c/n).

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
from attncourse.metrics import information_coverage

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
    s_fixed = int(effective_span(uniform, 0.01)[0, 0, -1])
    s_scaled = int(effective_span(uniform, 0.5 / n_)[0, 0, -1])
    print(
        f"{n_:6d} {s_fixed:17d} {s_scaled:18d} {int(information_coverage(uniform, 0.01)[0, 0, -1]):21d}"
    )
local = softmax(
    torch.zeros(1, 1, 12, 12, dtype=torch.float64), mask=ch04.local_attention_graph(12, 2)
)
print("local attention, window 2: span of each query =", effective_span(local, 0.01)[0, 0].tolist())
assert effective_span(local, 0.01).max() == 2

# %% [markdown] slideshow={"slide_type": "skip"}
# **Claim check — Eq. (5.4.4) ✓ as a definition, ⚠ as a measurement**: relative to its threshold.
# With ε = 0 every softmax row spans the whole sequence (all weights are positive), and with a
# fixed ε > 0 long uniform rows look like span 0. Report the threshold with the number, and scale
# it with 1/n.
#
# **Claim check — Def. 14.3.5, Eq. (14.3.8) ✓** as a definition; |R(i)| < 1/τ always.
#
# **Claim check — Lemma 14.3.6 ⚠**: R(i) = all n positions holds for τ = 0 (its proof's case), or for
# τ < 1/n with near-uniform weights, but is impossible whenever n ≥ 1/τ, because |R(i)| < 1/τ.

# %% [markdown] slideshow={"slide_type": "skip"}
# ### A.6 Does information decay exponentially with distance? (source 000, §14.3.6)
#
# Source 000 defines a transfer efficiency η_ij = I(z_i; z_j)/H(z_i) (Def. 14.3.14, Eq. 14.3.36),
# with the **mutual information** I(a; b) — how much knowing one variable tells about the other,
# ≥ 0 — and states that η_ij ≈ exp(−d/λ) with d = |i − j| (Thm. 14.3.12, Eq. 14.3.38). Chapter 07
# owns these claims and checks them from the side of positional encodings; this section adds the
# evidence from recurrences, exactly:
# - **a linear RNN with Gaussian inputs** (x_t ~ N(0, I), h_0 = 0): h_T is Gaussian, so
#   I(h_T; x_{T−k}) is exact (`ch04.gaussian_rnn_information`). With W = ρ · orthogonal,
#   I(k) = (d/2) ln(s/(s − ρ^{2k})), s = Σ_m ρ^{2m}: exponential decay with λ = 1/(2 ln(1/ρ)) for
#   ρ < 1, but **no decay at ρ = 1** and **growth** for ρ > 1;
# - **attention**: section 3's gradient profile is flat; content-based attention has no decay
#   built in. It appears only when one is put in, e.g. ALiBi's bias −m|i − j| (chapter 07), which
#   makes equal-content weights exactly ∝ e^{−m d}.

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
from attncourse.positional import alibi_bias

d_info, T_info, dists = 16, 60, list(range(0, 40, 5))
info = {}
for rho in (0.9, 1.0, 1.1):
    W = ch04.scaled_orthogonal(d_info, rho, torch.Generator().manual_seed(0))
    info[rho] = ch04.gaussian_rnn_information(
        W, torch.eye(d_info, dtype=torch.float64), T_info, dists
    )
    print(f"rho = {rho}: I(h_T; x_T-k) in nats for k = {dists}:", [f"{v:.3g}" for v in info[rho]])
slope_09 = np.polyfit(dists[2:], np.log(info[0.9][2:]), 1)[0]
print(f"rho = 0.9: slope of ln I = {slope_09:.4f} per step, 2 ln 0.9 = {2 * math.log(0.9):.4f}")
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
    "rho = 0.9: I(k) == -(d/2) ln(1 - ||g(k)||^2 / (d s)) at every k, largest difference < 1e-12:",
    gap < 1e-12,
)
W_09 = ch04.scaled_orthogonal(d_info, 0.9, torch.Generator().manual_seed(0))
quiet = ch04.gaussian_rnn_information(
    W_09, 1e-3 * torch.eye(d_info, dtype=torch.float64), T_info, dists
)
same = max(abs(a_ - b_) for a_, b_ in zip(info[0.9], quiet)) < 1e-12
print("W_xh = 0.001 I (gradients 1000x smaller): the same information at every k:", same)
assert gap < 1e-12 and same

bias = alibi_bias(8, 1, 16, dtype=torch.float64)[0, 0]  # (16,) head 0: -m |0 - j|, m = 1/2
w_alibi = softmax(bias)  # equal content scores: only the bias differs
ratios = (w_alibi[1:] / w_alibi[:-1]).tolist()
print(
    f"ALiBi head 0, equal contents: w(d+1)/w(d) = {min(ratios):.6f} .. {max(ratios):.6f} = exp(-1/2) = {math.exp(-0.5):.6f}"
)
assert max(abs(r - math.exp(-0.5)) for r in ratios) < 1e-12

# %% [markdown] slideshow={"slide_type": "skip"}
# **Claim check — Thm. 14.3.12, η ≈ exp(−d/λ) → chapter 07**, which owns the verdict (a decay that
# only a linear distance bias such as ALiBi produces). The evidence from this chapter agrees: the
# decay holds for *contractive* recurrences (linear Gaussian RNN with ρ < 1: slope of ln I = 2 ln ρ
# exactly), fails for the same RNN at ρ ≥ 1, and describes attention only when a distance penalty
# is put in by hand (ALiBi: exactly exp(−m d)); content-based attention has no such decay
# (section 3). For continuous z, H(z_i) in Eq. (14.3.36) is a differential entropy, which can be
# negative, so η is not a fraction in [0, 1] there (Def. 14.3.14 → chapter 07).
#
# **Claim check — Lemma 14.3.20, "the importance of g_j is proportional to I(z_i; z_j)" → chapter
# 07**, which finds the information proportional to the **square** of the gradient for an
# averaged read-out. The linear Gaussian RNN gives the same answer exactly: read as the gradient's
# size ‖g‖, I(k) = −(d/2) ln(1 − ‖g(k)‖²_F/(d s)), an increasing function of ‖g‖ (the two rank
# distances the same way) but not proportional to it: I ≈ ‖g(k)‖²_F/(2s), the square (the ratio
# → 1 as the information gets small, printed above). And the total input scale s matters as much
# as g: shrinking W_xh a thousandfold shrinks every gradient a thousandfold and leaves every I(k)
# unchanged. Its Eq. (14.3.39) is the chain rule, and Thm. 14.3.13's Eq. (14.3.40), the Jacobian of
# a stack as a sum over paths of products of one-step Jacobians, holds for fixed weights (two
# attention layers: (A₂A₁)_ij = Σ_k (A₂)_ik (A₁)_kj); "several paths keep the gradient alive if
# one is blocked" needs a condition, since paths add with signs and can cancel (both → chapter 07).

# %% [markdown] slideshow={"slide_type": "skip"}
# ### A.7 Inductive biases (§5.4.2)
#
# The source lists an RNN's biases as order, locality and the Markov property (the future depends
# on the past only through h_t); a CNN's as locality, "translation invariance" and hierarchy;
# attention's as full connection, content-based weights and positions injected explicitly — a
# "weak inductive bias" that is general but "may overfit without enough data". The exact ones:
# attention without positions commutes with any reordering of its inputs, with sinusoidal
# positions added it does not; a convolution commutes with shifts (away from the borders), and
# becomes shift-*invariant* only after pooling over positions (circular padding, maximum).

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
from attncourse.positional import sinusoidal_encoding

with torch.random.fork_rng(devices=[]):
    torch.manual_seed(11)
    conv = torch.nn.Conv1d(8, 8, 3, padding=1, padding_mode="circular").double()
pe = sinusoidal_encoding(20, 32, dtype=torch.float64)  # (T, d)
signal = torch.randn(2, 8, 40, generator=torch.Generator().manual_seed(13), dtype=torch.float64)
shifted = torch.roll(signal, 5, dims=-1)  # (B, channels, T)
with torch.no_grad():
    gaps = {
        "attention, no positions": ch04.permutation_gap(lambda x: attn_layer(x)[0], tokens, perm),
        "attention + sinusoidal positions": ch04.permutation_gap(
            lambda x: attn_layer(x + pe)[0], tokens, perm
        ),
        "convolution, shift by 5": ch04.shift_gap(conv, signal, 5),
        "convolution, no pooling (invariance?)": float((conv(shifted) - conv(signal)).abs().max()),
        "convolution + max pool, shift by 5": float(
            (conv(shifted).amax(-1) - conv(signal).amax(-1)).abs().max()
        ),
    }
for name, gap_ in gaps.items():
    print(f"{name:>40}: max difference {'< 1e-12' if gap_ < 1e-12 else '> 0.01'}")
assert gaps["attention, no positions"] < 1e-12 and gaps["attention + sinusoidal positions"] > 0.01
assert (
    gaps["convolution, shift by 5"] < 1e-12 and gaps["convolution, no pooling (invariance?)"] > 0.1
)
assert gaps["convolution + max pool, shift by 5"] < 1e-12

# %% [markdown] slideshow={"slide_type": "skip"}
# **Claim check — the RNN's biases: order, locality, Markov property (§5.4.2) ✓** by construction:
# h_t = f(h_{t−1}, x_t) (Eq. 5.4.1), so everything the past tells the future passes through h_t — the
# product of Jacobians of section 1.
#
# **Claim check — a CNN's "translation invariance" (平移不变性, §5.4.2) ⚠.** A convolution is
# translation-**equivariant** ✓ (exact, away from the borders): its output moves with its input.
# It is invariant only after pooling over positions.
#
# **Claim check — attention needs positions injected (位置编码假设, §5.4.2) ✓.** Without positions
# it is permutation-equivariant (exact): it cannot tell orders apart; sinusoidal positions break it
# (chapter 07).
#
# **Claim check — "a weak inductive bias needs more data" (§5.4.2) ✓ (measured, at this scale).**
# Section 5: from 32 sequences the convolution learns the local rule on both seeds; attention needs
# four times the data. The bias is not free either way: the convolution could not learn a rule
# that needs a far position at all, attention can.

# %% [markdown] slideshow={"slide_type": "skip"}
# ### A.8 What a high-entropy head keeps, and "η_ij > 0 for every pair" (Lemma 14.3.19)
#
# After Eq. (5.4.6), H(A_i) = −Σ_j A_ij log A_ij (the entropy of chapter 01), the source says
# high-entropy heads "explore" the whole sequence and low-entropy heads "focus". For o = Σ_j α_j v_j
# with independent Gaussian values v_j ~ N(0, I_d), the information the output keeps about one
# position is exact (`ch04.averaging_information`):
# I(o; v_j) = (d/2) ln(Σ_k α_k² / (Σ_k α_k² − α_j²)). The cell sharpens a softmax over n = 32
# random scores with β and reports the entropy, the most and the least information about any one
# position (d = 16). It then checks, for this chapter's causal attention layer, what a causal mask
# does to the positions after the query.

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
scores_32 = torch.randn(32, generator=torch.Generator().manual_seed(12), dtype=torch.float64)
print(
    f"{'beta':>5} | {'H(alpha) nats':>13} (max ln 32 = {math.log(32):.2f}) | {'max_j I(o; v_j)':>15} | {'min_j I(o; v_j)':>15}"
)
head_info = {}
for beta in (0.0, 1.0, 4.0, 16.0):
    alpha = softmax(beta * scores_32)  # (32,)
    info_j = ch04.averaging_information(alpha, d=16)  # (32,) nats
    entropy_alpha = float(-(alpha * alpha.log()).sum())
    head_info[beta] = (entropy_alpha, float(info_j.max()), float(info_j.min()))
    print(
        f"{beta:5.0f} | {entropy_alpha:13.3f} {'':>17} | {float(info_j.max()):15.3g} | {float(info_j.min()):15.3g}"
    )
assert all(v[2] > 0 for v in head_info.values())  # every allowed position keeps some information
assert abs(head_info[0.0][1] - 8 * math.log(32 / 31)) < 1e-12  # uniform: (d/2) ln(n/(n-1))
assert head_info[16.0][1] > 10 * head_info[0.0][1] and head_info[16.0][2] < 1e-6

causal_layer = ch04.chapter_attention(16, seed=5)
x_c = torch.randn(8, 16, generator=torch.Generator().manual_seed(6), dtype=torch.float64)
J_c = torch.autograd.functional.jacobian(lambda x: causal_layer(x[None], causal=True)[0][0], x_c)
J_c = J_c.pow(2).sum(dim=(1, 3))  # (8 outputs i, 8 inputs j): ||d o_i / d x_j||_F^2
with torch.no_grad():
    w_c = causal_layer(x_c[None], causal=True)[1][0, 0]  # (8, 8) causal weights
later = torch.ones(8, 8, dtype=torch.bool).triu(1)  # j > i
info_c = ch04.averaging_information(w_c, d=16)  # (8, 8) I(o_i; v_j)
print(
    "causal layer, j > i: every weight, gradient and I(o_i; v_j) exactly 0:",
    bool((w_c[later] == 0).all() and (J_c[later] == 0).all() and (info_c[later] == 0).all()),
)
print(
    "causal layer, j <= i: every gradient and I(o_i; v_j) > 0:",
    bool((J_c[~later] > 0).all() and (info_c[~later] > 0).all()),
)
assert (J_c[later] == 0).all() and (info_c[later] == 0).all() and (info_c[~later] > 0).all()

# %% [markdown] slideshow={"slide_type": "skip"}
# **Claim check — "high-entropy heads explore the whole sequence" (§5.4.3) ⚠.** The uniform head
# (β = 0, the largest entropy) reads every position, but what it outputs is an average, and about
# any one position it keeps only (d/2) ln(n/(n − 1)) ≈ d/(2n) nats, about 0.25 here; the sharp head
# (β = 16) keeps far more about the positions it reads and next to nothing about the rest. A
# high-entropy head pools (counts, averages); nothing is explored at inference — "explore" is a
# metaphor for spread weights, and entropy says nothing about *which* positions matter.
#
# **Claim check — Lemma 14.3.19 (Eq. 14.3.37), "η_ij > 0 for every pair (i, j) under
# self-attention, η_ij ≈ 0 in an RNN at long range" → chapter 07**, which owns the verdict: ⚠ —
# the attention half holds **for the pairs the mask allows**. Without a mask every softmax weight is
# positive and I(o; v_j) > 0 for every pair (the minimum above is positive at every β), though it
# can be vanishingly small (the least information about a position is below 10⁻⁶ nats at β = 16).
# Under the causal mask of this chapter's own attention, η_ij = 0 **exactly** for j > i: the
# weights, the gradient ∂o_i/∂x_j and I(o_i; v_j) are all exactly 0 (the cell). The RNN half holds
# for contractive recurrences (ρ < 1: exponential decay, A.6) and fails at ρ = 1, where the linear
# Gaussian RNN keeps the same information about every past input; gated RNNs (LSTM, GRU) are built
# to keep information too.

# %% [markdown] slideshow={"slide_type": "skip"}
# ### A.9 The residual highway (Eq. 5.4.9) against the source's own stack (Eq. 5.4.8)
#
# The source writes a stack of attention layers with a residual connection and a **LayerNorm**
# after each sum, $X^{(l+1)} = \mathrm{LayerNorm}(X^{(l)} + \mathrm{Attention}^{(l)})$ (Eq. 5.4.8).
# LayerNorm (chapter 08) subtracts each position's mean over its d features, divides by their
# standard deviation, and applies a learned scale and shift. Putting it *after* the sum is called
# **Post-LN**; putting it *before* the sublayer, $X^{(l+1)} = X^{(l)} + \mathrm{Attention}^{(l)}
# (\mathrm{LayerNorm}(X^{(l)}))$, is **Pre-LN** (chapter 09 compares the two in training). The
# source then claims $X^{(L)} = X^{(0)} + \Delta X^{(1)} + \dots + \Delta X^{(L)}$ (Eq. 5.4.9): the
# embedding survives to the last layer and the gradient reaches the first "without loss".
#
# The cell builds three attention layers (d = 32, 4 heads), once Post-LN and once Pre-LN
# (`ch04.attention_stack`). If Eq. (5.4.9) held with ΔX^(l) the layers' attention outputs,
# X^(L) − X^(0) − Σ_l ΔX^(l) would be 0. Then the attention is switched off (W_O = 0, so every
# ΔX^(l) = 0): Eq. (5.4.9) says X^(L) = X^(0).

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
from attncourse.norms import LayerNorm

stack = [ch04.chapter_attention(32, seed=13 + i, num_heads=4) for i in range(3)]
norms = [LayerNorm(32).double() for _ in range(3)]
x0 = 2.0 + 3.0 * torch.randn(
    2, 10, 32, generator=torch.Generator().manual_seed(14), dtype=torch.float64
)
residual_gap, kept = {}, {}
with torch.no_grad():
    silent = copy.deepcopy(stack)
    for sublayer in silent:
        sublayer.out_proj.weight.zero_()
        sublayer.out_proj.bias.zero_()
    for norm in ("post", "pre"):
        states_l, updates = ch04.attention_stack(x0, stack, norms, norm)
        residual_gap[norm] = float((states_l[-1] - x0 - sum(updates)).abs().max())
        kept[norm] = float((ch04.attention_stack(x0, silent, norms, norm)[0][-1] - x0).abs().max())
    ln_x0 = float(
        (ch04.attention_stack(x0, silent, norms, "post")[0][-1] - norms[0](x0)).abs().max()
    )
for norm in ("post", "pre"):
    print(
        f"{norm:>4}-LN: X^(L) == X^(0) + sum of updates: {residual_gap[norm] < 1e-12};  attention off: X^(L) == X^(0): {kept[norm] < 1e-12}"
    )
print(f"Post-LN, attention off: X^(L) == LayerNorm(X^(0)) up to LayerNorm's eps: {ln_x0 < 1e-4}")
J_post = torch.autograd.functional.jacobian(
    lambda v: norms[2](norms[1](norms[0](v))), x0[0, 0]
)  # (32, 32)
along_ones = float((J_post @ torch.ones(32, dtype=torch.float64)).abs().max())
print(
    f"Post-LN, attention off: the gradient along the all-ones direction of X^(0) < 1e-12: {along_ones < 1e-12}"
)
assert residual_gap["pre"] < 1e-12 and residual_gap["post"] > 0.1
assert kept["pre"] < 1e-12 and kept["post"] > 1 and ln_x0 < 1e-4 and along_ones < 1e-12

# %% [markdown] slideshow={"slide_type": "skip"}
# **Claim check — Eq. (5.4.9) ⚠ holds for Pre-LN, not for the source's own Post-LN stack (5.4.8).**
# With a LayerNorm after every sum the stack is not a sum of updates (the gap above), and with the
# attention switched off the output is LayerNorm(X^(0)), not X^(0): each position's mean and scale
# are gone, and the gradient along the all-ones direction is exactly 0 — not "lossless". In the
# Pre-LN form X^(l+1) = X^(l) + F(LN(X^(l))) the identity path is kept, and Eq. (5.4.9) holds
# exactly with ΔX^(l) = F(LN(X^(l))). (Chapter 05 links here; chapter 09 measures what the
# placement does to training.)
#
# ### A.10 What one attention layer computes (Eq. 5.4.10)
#
# The source: f(X) = A(X)·X W_V, a class of "global functions" that can model "any long-range
# dependency pattern" given the right weights A_ij. The cell checks the identity against a
# one-head `MultiHeadAttention` (the output projection applied after it). Each output row is a
# weighted **average** of the value rows, so one layer cannot count: feed it the same token n
# times, for any n, and every output is the same.

# %% slideshow={"slide_type": "skip"}
# NBVAL_CHECK_OUTPUT
from attncourse.attention import MultiHeadAttention

with torch.random.fork_rng(devices=[]):
    torch.manual_seed(15)
    one_head = MultiHeadAttention(16, 1, bias=False).double()
X_in = torch.randn(1, 12, 16, generator=torch.Generator().manual_seed(16), dtype=torch.float64)
W_Q, W_K, W_V = (w.weight.T for w in (one_head.q_proj, one_head.k_proj, one_head.v_proj))
with torch.no_grad():
    A_X = softmax(X_in @ W_Q @ W_K.T @ X_in.transpose(1, 2) / math.sqrt(16))  # (1, 12, 12)
    f_X = A_X @ X_in @ W_V  # (1, 12, 16) Eq. (5.4.10)
    same_layer = torch.allclose(one_head.out_proj(f_X), one_head(X_in)[0])
    token = torch.randn(1, 1, 16, generator=torch.Generator().manual_seed(17), dtype=torch.float64)
    outs = {n_: one_head(token.expand(1, n_, 16))[0][0, -1] for n_ in (1, 4, 16, 64)}
    spread = max(float((o - outs[1]).abs().max()) for o in outs.values())
print("Eq. (5.4.10) f(X) = A(X) X W_V == one attention head:", same_layer)
print("the same token n = 1, 4, 16, 64 times: the outputs differ by < 1e-12:", spread < 1e-12)
assert same_layer and spread < 1e-12

# %% [markdown] slideshow={"slide_type": "skip"}
# **Claim check — Eq. (5.4.10) ✓ as an identity; "global functions … any long-range dependency
# pattern" ⚠.** Global ✓: every output depends on every input (all weights positive; section 3's
# flat gradient). But one layer's outputs are convex combinations of its values: it selects and
# averages, it does not add up. It cannot count the copies of a token, compute a sum or a parity
# over positions, whatever A_ij is. Those need position information, more layers, or a
# feed-forward block after the averaging. **Correct statement**: one attention layer can route
# information from any position to any other (paths of length 1); what it computes per output is
# a weighted average of value vectors.
#
# ### A.11 Claim checks at a glance
#
# | source claim | verdict | correct statement / condition |
# |---|---|---|
# | Eq. (5.4.1)–(5.4.2): ∂L/∂x₁ = product of step Jacobians | ✓ | each factor is D_s W_hh, D_s = diag f′(a_s); checked against autograd (section 1, A.1) |
# | §5.4.1: λ_max (largest singular value), ‖∂h_t/∂h_{t−1}‖₂ ≈ λ_max, scaling λ_max^{n−1} | ⚠ / ✗ | one step ✓ (linear); over k steps ρ(W)^k ≤ ‖W^k‖₂ ≤ σ_max^k: σ_max is a bound, ρ the rate; they differ for non-normal W (section 1, A.2) |
# | §5.4.1: λ_max < 1 ⇒ vanishing | ✓ | with σ_max and \|f′\| ≤ γ: γσ_max < 1 suffices (Pascanu et al. 2013; A.3) |
# | Eq. (5.4.2): λ_max > 1 ⇒ explosion | ⚠ | necessary (λ₁ > 1/γ), not sufficient: tanh at ρ = 1.2 vanishes at input scale 0.3, explodes at 10⁻⁸ (A.3) |
# | Thm. 14.3.2, Eq. (14.3.9): path length 1 for attention, n for an RNN | ✓ | measured by breadth-first search; the RNN's is n − 1 from first to last (section 3, A.4) |
# | Eq. (5.4.3): o_i = Σ_j A_ij v_j, every input one step from every output | ✓ | ∂o_i/∂v_j = A_ij I; attention's gradient profile is flat in the distance (section 3) |
# | Cor. 14.3.2: short paths ⇒ no vanishing gradients | ⚠ | gradient ∝ weight on the path: distance-free but content-dependent; peaked attention starves most positions (section 3, A.4) |
# | Eq. (5.4.4): effective dependency span | ✓ / ⚠ | a definition; meaningful only with ε > 0 scaled with 1/n (section 4, A.5) |
# | Eq. (5.4.5): A_ij > 0 so dist = 1 for all i ≠ j | ✓ / ⚠ | for ε = 0; with ε > 0 sharper attention lengthens paths or disconnects them (A.4) |
# | §5.4.2: CNN receptive field 2l + 1, ≈ n/2 layers | ✓ | measured; Vaswani's Table 1 O(log_k n) needs dilated kernels (their text: O(n/k) contiguous) (A.4) |
# | §5.4.2: RNN's effective complexity O(n²) | ✗ | O(n·d²) work in O(n) sequential steps (FLOPs measured ∝ n; section 5, A.4) |
# | §5.4.2: attention's memory access more efficient | ⚠ | the gain is O(1) sequential depth; attention stores n × n weights per head (ch. 10) (A.4) |
# | Def. 14.3.5, Eq. (14.3.8): coverage R(i) | ✓ | \|R(i)\| < 1/τ always (A.5) |
# | Lemma 14.3.6: ideally R(i) = all positions | ⚠ | only for τ = 0 (or τ < 1/n with near-uniform weights) (A.5) |
# | Def. 14.3.14, Eq. (14.3.36): η_ij = I(z_i; z_j)/H(z_i) | → ch. 07 | see chapter 07; for continuous z, H is a differential entropy and η not a fraction (A.6) |
# | Thm. 14.3.12: η ≈ exp(−d/λ) | → ch. 07 | see chapter 07; here: exact for a contractive linear RNN (slope 2 ln ρ), none at ρ ≥ 1, attention decays only with a built-in bias such as ALiBi (A.6) |
# | Lemma 14.3.20, Eq. (14.3.39): g_j by the chain rule | → ch. 07 | see chapter 07; the chain rule (A.6) |
# | Thm. 14.3.13, Eq. (14.3.40): sum over paths; several paths keep the gradient alive | → ch. 07 | see chapter 07; exact for fixed weights, but paths add with signs and can cancel (A.6) |
# | Lemma 14.3.20: importance of g_j ∝ I(z_i; z_j) | → ch. 07 | see chapter 07; linear Gaussian RNN: I = −(d/2) ln(1 − ‖g‖²/(d s)), ≈ ‖g‖²/(2s) (the square), and blind to a common scale of g (A.6) |
# | §5.4.2: RNN biases — order, locality, Markov | ✓ | by construction, h_t = f(h_{t−1}, x_t): the past reaches the future only through h_t (A.7) |
# | §5.4.2: CNN "translation invariance" | ⚠ | a convolution is shift-*equivariant* (exact, away from borders); invariant only after pooling over positions (A.7) |
# | §5.4.2: attention needs positions injected | ✓ | without positions it is permutation-equivariant (exact); sinusoidal positions break it (section 5, A.7) |
# | §5.4.2: weak inductive bias needs more data | ✓ (this scale) | local task, two seeds: a convolution learns it from 32 sequences, attention needs 128 (section 5) |
# | §5.4.3: high-entropy heads "explore" the sequence | ⚠ | they average: about each position the output keeps ≈ d/(2n) nats; entropy says nothing about which positions matter (A.8) |
# | Lemma 14.3.19 (Eq. 14.3.37): η_ij > 0 under attention, ≈ 0 in an RNN at long range | → ch. 07 | see chapter 07 (⚠ there): attention's half holds for the pairs the mask allows; under this chapter's causal mask η_ij = 0 exactly for j > i; the RNN half fails at ρ = 1 (A.6, A.8) |
# | Eq. (5.4.9): X^(L) = X^(0) + Σ ΔX^(l), gradient "without loss" | ⚠ | holds for Pre-LN, not for the source's own Post-LN stack (5.4.8): attention off gives LayerNorm(X^(0)), the all-ones direction gets no gradient (A.9) |
# | Eq. (5.4.10): f(X) = A(X) X W_V; "global functions, any dependency pattern" | ✓ / ⚠ | the identity ✓; global ✓; but one layer only averages values: it cannot count (A.10) |
#
# **The source's listings.** Source 001, §5.4.1–5.4.3 and source 000, §14.3.2 and §14.3.6 print no
# code; every equation above is run in this chapter or in the chapter that owns it.
#
# **Errata in one place.** "λ_max = the largest singular value" confuses a bound with a rate (A.2);
# "λ_max > 1 ⇒ explosion" is necessary, not sufficient (A.3); "the RNN's effective complexity is
# O(n²)" mixes total work with sequential steps (A.4); a convolution is translation-equivariant,
# not invariant (A.7); Eq. (5.4.9) does not hold for the Post-LN stack of Eq. (5.4.8) (A.9);
# Lemma 14.3.6's R(i) = all positions is impossible for n ≥ 1/τ (A.5).
