"""Chapter 08's exercise checks: correct answers in every style a learner plausibly writes pass
the visible check and the notebook's hidden seeds; each common mistake fails with a message that
names it; built-ins, the course's own layers and automatic differentiation are refused, wherever
they are imported from."""

import math

import pytest
import torch
import torch.nn.functional as F
from exercise_helpers import (
    fails,
    fails_on_seeds,
    fails_when_unfinished,
    notebook_hidden_seeds,
    passes_on_seeds,
    styles_per_check,
)
from torch import nn
from torch.autograd.functional import jacobian  # the notebook imports it too
from torch.nn.functional import layer_norm as bound_layer_norm

import attncourse.chapters.ch08_residual_highway_normalization.stacks as chapter_stacks
import attncourse.norms
from attncourse.blocks import Highway
from attncourse.exercises.ch08 import (
    check_batch_norm_train,
    check_highway,
    check_highway_jacobian,
    check_layer_norm,
    check_residual_gradient,
    check_rms_norm,
)

# the visible seed, the notebook's hidden ones (ch08_*_test: 21 to 26), and a few more
HIDDEN_SEEDS = (0, 21, 22, 23, 24, 25, 26, 7, 2024)
COUNTS = {  # cases per seed
    check_residual_gradient: 7,
    check_layer_norm: 8,
    check_rms_norm: 6,
    check_batch_norm_train: 8,
    check_highway: 6,
    check_highway_jacobian: 6,
}
CHECKS = tuple(COUNTS)


# ------------------------------------------------------------- gradient through a residual stack


def residual_gradient(g, jacobians):
    rows = [g]
    for J in reversed(jacobians):
        rows.append(rows[-1] + rows[-1] @ J)
    return torch.stack(rows[::-1])


def residual_gradient_preallocated(g, jacobians):  # (I + J) with an identity in g's dtype
    L, d = jacobians.shape[0], g.shape[0]
    out = torch.empty(L + 1, d, dtype=g.dtype)
    out[L] = g
    eye = torch.eye(d, dtype=g.dtype)
    for layer in range(L - 1, -1, -1):
        out[layer] = out[layer + 1] @ (eye + jacobians[layer])
    return out


def residual_gradient_columns(g, jacobians):  # column vectors: (I + J)ᵀ gᵀ
    column = g[:, None]  # (d, 1)
    columns = [column]
    for J in jacobians.flip(0):
        column = (torch.eye(g.shape[0], dtype=g.dtype) + J).T @ column
        columns.append(column)
    return torch.cat(columns[::-1], dim=1).T


def residual_gradient_einsum(g, jacobians):
    rows = [g]
    for layer in range(jacobians.shape[0] - 1, -1, -1):
        rows.insert(0, rows[0] + torch.einsum("i,ij->j", rows[0], jacobians[layer]))
    return torch.stack(rows)


def residual_gradient_products(g, jacobians):  # each row from the top: g Π_{k ≥ l} (I + J_k)
    L, d = jacobians.shape[0], g.shape[0]
    eye = torch.eye(d, dtype=g.dtype)
    rows = []
    for layer in range(L + 1):
        product = eye
        for k in range(L - 1, layer - 1, -1):
            product = product @ (eye + jacobians[k])
        rows.append(g @ product)
    return torch.stack(rows)


def residual_gradient_in_float64(g, jacobians):
    rows = [g.double()]
    for J in reversed(jacobians.double()):
        rows.append(rows[-1] + rows[-1] @ J)
    return torch.stack(rows[::-1]).to(g.dtype)


# ------------------------------------------------------------------------------- LayerNorm


def layer_norm(x, gamma, beta, eps=1e-5):
    mu = x.mean(-1, keepdim=True)
    var = ((x - mu) ** 2).mean(-1, keepdim=True)
    return (x - mu) / torch.sqrt(var + eps) * gamma + beta


def layer_norm_var_mean(x, gamma, beta, eps=1e-5):
    var, mu = torch.var_mean(x, dim=-1, keepdim=True, correction=0)
    return (x - mu) * torch.rsqrt(var + eps) * gamma + beta


def layer_norm_in_float64(x, gamma, beta, eps=1e-5):
    y = x.double()
    centred = y - y.mean(-1, keepdim=True)
    var = centred.pow(2).mean(-1, keepdim=True)
    return (centred / (var + eps).sqrt() * gamma.double() + beta.double()).to(x.dtype)


def layer_norm_by_rows(x, gamma, beta, eps=1e-5):
    d = x.shape[-1]
    rows = []
    for row in x.reshape(-1, d):
        mu = row.sum() / d
        var = ((row - mu) ** 2).sum() / d
        rows.append(gamma * (row - mu) / (var + eps) ** 0.5 + beta)
    return torch.stack(rows).reshape(x.shape)


def layer_norm_one_pass(x, gamma, beta, eps=1e-5):  # Var = E[x²] − μ², in einsum
    d = x.shape[-1]
    mu = torch.einsum("...d->...", x).unsqueeze(-1) / d
    var = torch.einsum("...d,...d->...", x, x).unsqueeze(-1) / d - mu * mu
    return gamma * (x - mu) / torch.sqrt(var + eps) + beta


def layer_norm_std(x, gamma, beta, eps=1e-5):
    sigma = x.std(dim=-1, unbiased=False, keepdim=True)
    return torch.addcmul(beta, (x - x.mean(-1, keepdim=True)) / (sigma**2 + eps).sqrt(), gamma)


# --------------------------------------------------------------------------------- RMSNorm


def rms_norm(x, gamma, eps=1e-6):
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps) * gamma


def rms_norm_vector_norm(x, gamma, eps=1e-6):
    rms = torch.linalg.vector_norm(x, dim=-1, keepdim=True) / math.sqrt(x.shape[-1])
    return gamma * x / torch.sqrt(rms**2 + eps)


def rms_norm_in_float64(x, gamma, eps=1e-6):
    y = x.double()
    return (y / (y.pow(2).mean(-1, keepdim=True) + eps).sqrt() * gamma.double()).to(x.dtype)


def rms_norm_einsum(x, gamma, eps=1e-6):
    mean_square = torch.einsum("...d,...d->...", x, x)[..., None] / x.shape[-1]
    return torch.einsum("...d,d->...d", x / torch.sqrt(mean_square + eps), gamma)


def rms_norm_by_rows(x, gamma, eps=1e-6):
    out = torch.empty_like(x).reshape(-1, x.shape[-1])
    for i, row in enumerate(x.reshape(-1, x.shape[-1])):
        out[i] = row / math.sqrt(float((row**2).mean()) + eps) * gamma
    return out.reshape(x.shape)


# ------------------------------------------------------------------------------- BatchNorm


def batch_norm_train(x, gamma, beta, eps=1e-5):
    dims = (0, 2) if x.dim() == 3 else (0,)
    shape = (1, -1, 1) if x.dim() == 3 else (1, -1)
    mu = x.mean(dims, keepdim=True)
    var = x.var(dims, unbiased=False, keepdim=True)
    return (x - mu) / torch.sqrt(var + eps) * gamma.view(shape) + beta.view(shape)


def batch_norm_channels_first(x, gamma, beta, eps=1e-5):
    C = x.shape[1]
    per_channel = x.transpose(0, 1).reshape(C, -1)  # (C, N·L)
    mu, var = per_channel.mean(1), per_channel.var(1, correction=0)  # (C,), (C,)
    shape = [1, C] + [1] * (x.dim() - 2)
    scale = (gamma / torch.sqrt(var + eps)).view(shape)
    return (x - mu.view(shape)) * scale + beta.view(shape)


def batch_norm_by_channel(x, gamma, beta, eps=1e-5):
    channels = []
    for c in range(x.shape[1]):
        xc = x[:, c]  # (N,) or (N, L)
        mu = xc.mean()
        var = ((xc - mu) ** 2).mean()
        channels.append(gamma[c] * (xc - mu) / torch.sqrt(var + eps) + beta[c])
    return torch.stack(channels, dim=1)


def batch_norm_in_float64(x, gamma, beta, eps=1e-5):
    y = x.double() if x.dim() == 3 else x.double().unsqueeze(-1)  # (N, C, L)
    mu = y.mean((0, 2), keepdim=True)
    var = ((y - mu) ** 2).mean((0, 2), keepdim=True)
    out = (y - mu) / (var + eps).sqrt() * gamma.double()[:, None] + beta.double()[:, None]
    return (out if x.dim() == 3 else out.squeeze(-1)).to(x.dtype)


def batch_norm_mean_of_squares(x, gamma, beta, eps=1e-5):
    """The biased variance as E[x²] − μ²: correct, if less careful (it cancels when the variance
    is small next to μ²)."""
    dims, shape = ((0,), (1, -1)) if x.dim() == 2 else ((0, 2), (1, -1, 1))
    mu = x.mean(dim=dims, keepdim=True)
    var = (x * x).mean(dim=dims, keepdim=True) - mu * mu
    return (x - mu) / torch.sqrt(var + eps) * gamma.view(shape) + beta.view(shape)


def batch_norm_einsum(x, gamma, beta, eps=1e-5):
    y = x if x.dim() == 3 else x[..., None]  # (N, C, L)
    count = y.shape[0] * y.shape[2]
    mu = torch.einsum("ncl->c", y) / count
    centred = y - mu[None, :, None]
    var = torch.einsum("ncl,ncl->c", centred, centred) / count
    out = torch.einsum("ncl,c->ncl", centred, gamma / torch.sqrt(var + eps)) + beta[:, None]
    return out.reshape(x.shape)


# --------------------------------------------------------------------------------- highway


def highway(x, W_H, b_H, W_T, b_T):
    T = torch.sigmoid(x @ W_T + b_T)
    return torch.relu(x @ W_H + b_H) * T + x * (1 - T)


def highway_lerp(x, W_H, b_H, W_T, b_T):  # y = x + T (H − x)
    return torch.lerp(x, F.relu(torch.addmm(b_H, x, W_H)), torch.sigmoid(torch.addmm(b_T, x, W_T)))


def highway_einsum(x, W_H, b_H, W_T, b_T):
    H = torch.clamp(torch.einsum("bi,ij->bj", x, W_H) + b_H, min=0)
    T = 1 / (1 + torch.exp(-(torch.einsum("bi,ij->bj", x, W_T) + b_T)))
    C = 1 - T  # the carry gate
    return H * T + x * C


def highway_by_rows(x, W_H, b_H, W_T, b_T):
    rows = []
    for row in x:
        z = row @ W_H + b_H
        H = torch.where(z > 0, z, torch.zeros_like(z))
        T = torch.sigmoid(row @ W_T + b_T)
        rows.append(T * H + (1 - T) * row)
    return torch.stack(rows)


def highway_in_float64(x, W_H, b_H, W_T, b_T):
    x64, (WH, bH, WT, bT) = x.double(), (p.double() for p in (W_H, b_H, W_T, b_T))
    T = torch.sigmoid(x64 @ WT + bT)
    return (T * torch.relu(x64 @ WH + bH) + (1 - T) * x64).to(x.dtype)


# ------------------------------------------------------------------------ highway Jacobian


def highway_jacobian(x, W_H, b_H, W_T, b_T):
    z = x @ W_H + b_H
    T = torch.sigmoid(x @ W_T + b_T)
    H = torch.relu(z)
    return (
        torch.diag(T * (z > 0).to(x.dtype)) @ W_H.T
        + torch.diag(1 - T)
        + torch.diag((H - x) * T * (1 - T)) @ W_T.T
    )


def highway_jacobian_loops(x, W_H, b_H, W_T, b_T):
    d = x.shape[0]
    z = x @ W_H + b_H
    H, T = torch.relu(z), torch.sigmoid(x @ W_T + b_T)
    J = torch.zeros(d, d, dtype=x.dtype)
    for i in range(d):
        for j in range(d):
            dH = W_H[j, i] if z[i] > 0 else 0.0  # ∂H_i/∂x_j
            dT = T[i] * (1 - T[i]) * W_T[j, i]  # ∂T_i/∂x_j
            J[i, j] = T[i] * dH + (1 - T[i]) * (i == j) + (H[i] - x[i]) * dT
    return J


def highway_jacobian_einsum(x, W_H, b_H, W_T, b_T):
    z = x @ W_H + b_H
    T = torch.sigmoid(x @ W_T + b_T)
    through_H = T * (z > 0).to(x.dtype)  # (d,)
    through_T = (torch.relu(z) - x) * T * (1 - T)  # (d,)
    return (
        torch.einsum("i,ji->ij", through_H, W_H)
        + torch.einsum("i,ji->ij", through_T, W_T)
        + torch.diag_embed(1 - T)
    )


def highway_jacobian_in_float64(x, W_H, b_H, W_T, b_T):
    x64, WH, bH, WT, bT = (t.double() for t in (x, W_H, b_H, W_T, b_T))
    z = x64 @ WH + bH
    T = torch.sigmoid(x64 @ WT + bT)
    rows = (
        T[:, None]
        * torch.heaviside(z, torch.zeros((), dtype=z.dtype)).to(x64.dtype)[:, None]
        * WH.T
    )
    rows = rows + ((torch.relu(z) - x64) * T * (1 - T))[:, None] * WT.T
    return (rows + torch.eye(x.shape[0], dtype=torch.float64) * (1 - T)).to(x.dtype)


def highway_jacobian_by_columns(x, W_H, b_H, W_T, b_T):  # column j: ∂y/∂x_j, one input at a time
    z = x @ W_H + b_H
    T = torch.sigmoid(x @ W_T + b_T)
    columns = []
    for j in range(x.shape[0]):
        e = torch.zeros_like(x)
        e[j] = 1.0
        dz, du = e @ W_H, e @ W_T  # how z and the gate's input move with x_j
        dH, dT = (z > 0).to(x.dtype) * dz, T * (1 - T) * du
        columns.append(T * dH + dT * torch.relu(z) + (1 - T) * e - dT * x)
    return torch.stack(columns, dim=1)


# -------------------------------------------------------------- correct styles, every seed

STYLES = [
    (check_residual_gradient, residual_gradient),
    (check_residual_gradient, residual_gradient_preallocated),
    (check_residual_gradient, residual_gradient_columns),
    (check_residual_gradient, residual_gradient_einsum),
    (check_residual_gradient, residual_gradient_products),
    (check_residual_gradient, residual_gradient_in_float64),
    (check_layer_norm, layer_norm),
    (check_layer_norm, layer_norm_var_mean),
    (check_layer_norm, layer_norm_in_float64),
    (check_layer_norm, layer_norm_by_rows),
    (check_layer_norm, layer_norm_one_pass),
    (check_layer_norm, layer_norm_std),
    (check_rms_norm, rms_norm),
    (check_rms_norm, rms_norm_vector_norm),
    (check_rms_norm, rms_norm_in_float64),
    (check_rms_norm, rms_norm_einsum),
    (check_rms_norm, rms_norm_by_rows),
    (check_batch_norm_train, batch_norm_train),
    (check_batch_norm_train, batch_norm_channels_first),
    (check_batch_norm_train, batch_norm_by_channel),
    (check_batch_norm_train, batch_norm_in_float64),
    (check_batch_norm_train, batch_norm_einsum),
    (check_batch_norm_train, batch_norm_mean_of_squares),
    (check_highway, highway),
    (check_highway, highway_lerp),
    (check_highway, highway_einsum),
    (check_highway, highway_by_rows),
    (check_highway, highway_in_float64),
    (check_highway_jacobian, highway_jacobian),
    (check_highway_jacobian, highway_jacobian_loops),
    (check_highway_jacobian, highway_jacobian_einsum),
    (check_highway_jacobian, highway_jacobian_in_float64),
    (check_highway_jacobian, highway_jacobian_by_columns),
]


@pytest.mark.parametrize("check, answer", STYLES, ids=lambda x: getattr(x, "__name__", ""))
def test_every_correct_style_passes_the_visible_and_the_hidden_seeds(check, answer, capsys):
    passes_on_seeds(check, answer, HIDDEN_SEEDS, capsys, cases=COUNTS[check])


def test_the_mean_of_squares_variance_passes_batch_norm_on_many_seeds(capsys):
    """Two nearly equal samples made a variance too small for E[x²] − μ² in float32 (seed 151
    failed): the check's two samples now lie at least 1 apart."""
    for seed in range(120, 200):
        check_batch_norm_train(batch_norm_mean_of_squares, seed=seed)
    assert capsys.readouterr().out.count("all 8 checks passed") == 80


def test_each_exercise_has_at_least_three_correct_styles():
    styles = styles_per_check(STYLES, CHECKS)
    assert min(styles.values()) >= 3, styles


@pytest.mark.parametrize("check", CHECKS, ids=lambda check: check.reference.__name__.strip("_"))
def test_blank_none_and_wrong_type_fail_clearly(check):
    fails_when_unfinished(check)
    fails(check, lambda *a, **k: [1.0], r"returned a list of 1, expected a torch.Tensor")
    fails(check, None, r"this check needs your function, got NoneType")


def test_checks_leave_the_global_random_stream_alone():
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    for check, answer in STYLES[::5]:
        check(answer)
    assert torch.equal(torch.rand(3), expected)


def test_module_exports_the_documented_checks():
    import attncourse.exercises.ch08 as ex8

    assert sorted(ex8.__all__) == [
        "check_batch_norm_train",
        "check_highway",
        "check_highway_jacobian",
        "check_layer_norm",
        "check_residual_gradient",
        "check_rms_norm",
    ]
    assert [getattr(ex8, name) for name in sorted(ex8.__all__)] == [
        check_batch_norm_train,
        check_highway,
        check_highway_jacobian,
        check_layer_norm,
        check_residual_gradient,
        check_rms_norm,
    ]


def test_the_notebook_s_hidden_tests_use_the_seeds_this_suite_checks():
    import attncourse.exercises.ch08 as ex8

    hidden = notebook_hidden_seeds("08_residual_highway_normalization", ex8)
    assert set(hidden) == set(CHECKS), hidden
    assert set(hidden.values()) <= set(HIDDEN_SEEDS), hidden


# ------------------------------------------------------------ common mistakes, every seed


def ln_unbiased(x, g, b, eps=1e-5):  # torch.var's default divides by d − 1
    return (x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, keepdim=True) + eps) * g + b


def ln_eps_outside(x, g, b, eps=1e-5):
    return (x - x.mean(-1, keepdim=True)) / (x.std(-1, unbiased=False, keepdim=True) + eps) * g + b


def ln_no_keepdim(x, g, b, eps=1e-5):
    mu = x.mean(-1)
    return (x - mu) / torch.sqrt(((x - mu) ** 2).mean(-1) + eps) * g + b


def rms_no_keepdim(x, g, eps=1e-6):
    return x / torch.sqrt((x * x).mean(-1) + eps) * g


def bn_unreshaped_parameters(x, g, b, eps=1e-5):  # right statistics, (C,) parameters against L
    dims = (0, 2) if x.dim() == 3 else (0,)
    mu, var = x.mean(dims, keepdim=True), x.var(dims, unbiased=False, keepdim=True)
    return (x - mu) / torch.sqrt(var + eps) * g + b


def bn_no_keepdim(x, g, b, eps=1e-5):
    dims = (0, 2) if x.dim() == 3 else (0,)
    mu, var = x.mean(dims), x.var(dims, unbiased=False)
    return (x - mu) / torch.sqrt(var + eps) * g + b


def bn_per_sample(x, g, b, eps=1e-5):
    shape = (1, -1, 1) if x.dim() == 3 else (1, -1)
    mu, var = x.mean(1, keepdim=True), x.var(1, unbiased=False, keepdim=True)
    return (x - mu) / torch.sqrt(var + eps) * g.view(shape) + b.view(shape)


def bn_per_position(x, g, b, eps=1e-5):
    shape = (1, -1, 1) if x.dim() == 3 else (1, -1)
    mu, var = x.mean(0, keepdim=True), x.var(0, unbiased=False, keepdim=True)
    return (x - mu) / torch.sqrt(var + eps) * g.view(shape) + b.view(shape)


def bn_unbiased(x, g, b, eps=1e-5):
    dims = (0, 2) if x.dim() == 3 else (0,)
    shape = (1, -1, 1) if x.dim() == 3 else (1, -1)
    mu, var = x.mean(dims, keepdim=True), x.var(dims, keepdim=True)
    return (x - mu) / torch.sqrt(var + eps) * g.view(shape) + b.view(shape)


def bn_eps_outside(x, g, b, eps=1e-5):
    dims = (0, 2) if x.dim() == 3 else (0,)
    shape = (1, -1, 1) if x.dim() == 3 else (1, -1)
    std = x.std(dims, unbiased=False, keepdim=True)
    return (x - x.mean(dims, keepdim=True)) / (std + eps) * g.view(shape) + b.view(shape)


def jacobian_printed(x, WH, bH, WT, bT):  # Eq. (5.3.5) as printed
    z = x @ WH + bH
    T = torch.sigmoid(x @ WT + bT)
    return torch.diag(T * (z > 0).to(x.dtype)) @ WH.T + torch.diag(1 - T)


def jacobian_no_relu_derivative(x, WH, bH, WT, bT):
    T, H = torch.sigmoid(x @ WT + bT), torch.relu(x @ WH + bH)
    return torch.diag(T) @ WH.T + torch.diag(1 - T) + torch.diag((H - x) * T * (1 - T)) @ WT.T


def jacobian_w_not_transposed(x, WH, bH, WT, bT):
    z = x @ WH + bH
    T, H = torch.sigmoid(x @ WT + bT), torch.relu(z)
    return torch.diag(T * (z > 0)) @ WH + torch.diag(1 - T) + torch.diag((H - x) * T * (1 - T)) @ WT


def jacobian_wt_not_transposed(x, WH, bH, WT, bT):  # only the gate's weight
    z = x @ WH + bH
    T, H = torch.sigmoid(x @ WT + bT), torch.relu(z)
    return (
        torch.diag(T * (z > 0)) @ WH.T + torch.diag(1 - T) + torch.diag((H - x) * T * (1 - T)) @ WT
    )


def jacobian_gate_term(factor, derivative=lambda T: T * (1 - T)):
    def answer(x, WH, bH, WT, bT):
        z = x @ WH + bH
        T, H = torch.sigmoid(x @ WT + bT), torch.relu(z)
        dT = torch.diag(derivative(T)) @ WT.T
        return torch.diag(T * (z > 0)) @ WH.T + torch.diag(1 - T) + torch.diag(factor(H, x)) @ dT

    return answer


def sigmoid(u):
    return 1 / (1 + torch.exp(-u))


def rg_without_identity(g, jacobians):
    rows = [g]
    for J in reversed(jacobians):
        rows.append(rows[-1] @ J)
    return torch.stack(rows[::-1])


def rg_column_convention(g, jacobians):
    rows = [g]
    for J in reversed(jacobians):
        rows.append(rows[-1] + J @ rows[-1])
    return torch.stack(rows[::-1])


def rg_bottom_up(g, jacobians):  # the loop runs over the blocks from the first one
    rows = [g]
    for J in jacobians:
        rows.append(rows[-1] + rows[-1] @ J)
    return torch.stack(rows[::-1])


def rg_first_order(g, jacobians):
    rows = [g]
    for J in reversed(jacobians):
        rows.append(rows[-1] + g @ J)
    return torch.stack(rows[::-1])


MISTAKES = [
    # gradient through a residual stack
    (check_residual_gradient, rg_without_identity, "the identity is missing"),
    (check_residual_gradient, rg_column_convention, "the Jacobian is used the wrong way round"),
    (check_residual_gradient, rg_bottom_up, "the blocks were applied in the wrong order"),
    (
        check_residual_gradient,
        lambda g, J: residual_gradient(g, J).flip(0),
        "the rows are upside down",
    ),
    (check_residual_gradient, rg_first_order, "the branch terms were summed"),
    (
        check_residual_gradient,
        lambda g, J: g.expand(J.shape[0] + 1, -1).clone(),
        "the branch term is missing",
    ),
    (
        check_residual_gradient,
        lambda g, J: residual_gradient(g, J)[:-1],
        "the last row is missing",
    ),
    (
        check_residual_gradient,
        lambda g, J: residual_gradient(g, J)[1:],
        "the first row is missing",
    ),
    (
        check_residual_gradient,
        lambda g, J: residual_gradient(g.double(), J.double()),
        "returned dtype torch.float64, expected torch.float32: keep the input's dtype",
    ),
    # LayerNorm
    (check_layer_norm, ln_unbiased, "used the unbiased variance (1/(d − 1)"),
    (check_layer_norm, ln_eps_outside, "eps was added to the standard deviation"),
    (check_layer_norm, lambda x, g, b, eps=1e-5: layer_norm(x, g, b, 0.0), "no eps"),
    (check_layer_norm, lambda x, g, b, eps=1e-5: layer_norm(x, g, b), "eps argument was ignored"),
    (
        check_layer_norm,
        lambda x, g, b, eps=1e-5: (
            layer_norm(x.transpose(0, -1), 1.0, 0.0, eps).transpose(0, -1) * g + b
        ),
        "statistics were taken over the wrong axis",
    ),
    (check_layer_norm, ln_no_keepdim, "without keepdim=True broadcast along the wrong axis"),
    (
        check_layer_norm,
        lambda x, g, b, eps=1e-5: layer_norm(x, 1.0, 0.0, eps),
        "γ and β are missing",
    ),
    (
        check_layer_norm,
        lambda x, g, b, eps=1e-5: (layer_norm(x, 1.0, 0.0, eps) + b) * g,
        "γ and β in the wrong order",
    ),
    (check_layer_norm, lambda x, g, b, eps=1e-5: layer_norm(x, b, g, eps), "γ and β are swapped"),
    (
        check_layer_norm,
        lambda x, g, b, eps=1e-5: x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps) * g + b,
        "the mean was not subtracted: that is RMSNorm",
    ),
    (
        check_layer_norm,
        lambda x, g, b, eps=1e-5: (
            (x - x.mean(-1, keepdim=True)) / (x.var(-1, unbiased=False, keepdim=True) + eps) * g + b
        ),
        "divide by its square root",
    ),
    (
        check_layer_norm,
        lambda x, g, b, eps=1e-5: layer_norm(x.float(), g.float(), b.float(), eps),
        "returned dtype torch.float32, expected torch.float64: keep the input's dtype",
    ),
    # RMSNorm
    (
        check_rms_norm,
        lambda x, g, eps=1e-6: layer_norm(x, g, 0.0, eps),
        "the mean was subtracted: that is LayerNorm",
    ),
    (
        check_rms_norm,
        lambda x, g, eps=1e-6: x / torch.sqrt((x * x).sum(-1, keepdim=True) + eps) * g,
        "off by √d",
    ),
    (check_rms_norm, lambda x, g, eps=1e-6: rms_norm(x, g, 0.0), "no eps"),
    (check_rms_norm, lambda x, g, eps=1e-6: rms_norm(x, g), "eps argument was ignored"),
    (
        check_rms_norm,
        lambda x, g, eps=1e-6: x / ((x * x).mean(-1, keepdim=True).sqrt() + eps) * g,
        "eps was added outside the square root",
    ),
    (
        check_rms_norm,
        lambda x, g, eps=1e-6: x / ((x * x).mean(-1, keepdim=True) + eps) * g,
        "divided by mean(x²) without the square root",
    ),
    (
        check_rms_norm,
        lambda x, g, eps=1e-6: x / torch.sqrt((x * x).mean(0, keepdim=True) + eps) * g,
        "the mean of squares was taken over the wrong axis",
    ),
    (check_rms_norm, rms_no_keepdim, "without keepdim=True broadcast along the wrong axis"),
    (check_rms_norm, lambda x, g, eps=1e-6: rms_norm(x, 1.0, eps), "γ is missing"),
    (
        check_rms_norm,
        lambda x, g, eps=1e-6: rms_norm(x.float(), g.float(), eps),
        "returned dtype torch.float32, expected torch.float64",
    ),
    # BatchNorm
    (check_batch_norm_train, bn_unreshaped_parameters, "γ and β of shape (C,) were not reshaped"),
    (check_batch_norm_train, bn_no_keepdim, "a reduction without keepdim=True"),
    (check_batch_norm_train, bn_per_sample, "statistics per sample over its channels"),
    (check_batch_norm_train, bn_per_position, "over N and L together"),
    (check_batch_norm_train, bn_unbiased, "used the unbiased variance (1/(n − 1))"),
    (check_batch_norm_train, bn_eps_outside, "eps was added to the standard deviation"),
    (
        check_batch_norm_train,
        lambda x, g, b, eps=1e-5: batch_norm_train(x, g, b, 0.0),
        "no eps",
    ),
    (
        check_batch_norm_train,
        lambda x, g, b, eps=1e-5: batch_norm_train(x, g, b),
        "eps argument was ignored",
    ),
    (
        check_batch_norm_train,
        lambda x, g, b, eps=1e-5: batch_norm_train(x, torch.ones_like(g), torch.zeros_like(b), eps),
        "γ and β are missing",
    ),
    (
        check_batch_norm_train,
        lambda x, g, b, eps=1e-5: batch_norm_train(x.float(), g.float(), b.float(), eps),
        "returned dtype torch.float32, expected torch.float64",
    ),
    # highway
    (
        check_highway,
        lambda x, WH, bH, WT, bT: highway(x, WH, bH, -WT, -bT),  # T and 1 − T swapped
        "the gates are swapped",
    ),
    (
        check_highway,
        lambda x, WH, bH, WT, bT: (
            (x @ WH + bH) * torch.sigmoid(x @ WT + bT) + x * (1 - torch.sigmoid(x @ WT + bT))
        ),
        "H has no ReLU",
    ),
    (
        check_highway,
        lambda x, WH, bH, WT, bT: highway(x, WH.T, bH, WT.T, bT),
        "the weights are transposed",
    ),
    (
        check_highway,
        lambda x, WH, bH, WT, bT: torch.relu(x @ WH + bH) * torch.sigmoid(x @ WT + bT),
        "no carry term",
    ),
    (
        check_highway,
        lambda x, WH, bH, WT, bT: x + torch.relu(x @ WH + bH),
        "that is a residual block",
    ),
    (
        check_highway,
        lambda x, WH, bH, WT, bT: (
            torch.tanh(x @ WH + bH) * sigmoid(x @ WT + bT) + x * (1 - sigmoid(x @ WT + bT))
        ),
        "H uses tanh",
    ),
    (
        check_highway,
        lambda x, WH, bH, WT, bT: torch.relu(x @ WH + bH) * (x @ WT + bT) + x * (1 - (x @ WT + bT)),
        "T has no sigmoid",
    ),
    (
        check_highway,
        lambda x, WH, bH, WT, bT: highway(x, WH, 0.0, WT, 0.0),
        "the biases are missing",
    ),
    (check_highway, lambda x, WH, bH, WT, bT: highway(x, WH, bH, WT, 0.0), "b_T is missing"),
    (
        check_highway,
        lambda x, WH, bH, WT, bT: highway(
            x.float(), WH.float(), bH.float(), WT.float(), bT.float()
        ),
        "returned dtype torch.float32, expected torch.float64",
    ),
    # highway Jacobian
    (
        check_highway_jacobian,
        jacobian_printed,
        "the gate-derivative term",
    ),
    (
        check_highway_jacobian,
        lambda *a: highway_jacobian(*a).T,
        "the Jacobian is transposed",
    ),
    (check_highway_jacobian, jacobian_no_relu_derivative, "ReLU's derivative is missing"),
    (
        check_highway_jacobian,
        lambda *a: highway_jacobian(*a) - torch.diag(1 - torch.sigmoid(a[0] @ a[3] + a[4])),
        "the carry term's derivative (1 − T) · I is missing",
    ),
    (check_highway_jacobian, jacobian_w_not_transposed, "W where Wᵀ belongs"),
    (check_highway_jacobian, jacobian_wt_not_transposed, "W where Wᵀ belongs"),
    (
        check_highway_jacobian,
        jacobian_gate_term(lambda H, x: x - H),
        "the gate term's sign is flipped",
    ),
    (
        check_highway_jacobian,
        jacobian_gate_term(lambda H, x: H),
        "∂/∂T [T H + (1 − T) x] = H − x (the carry term depends on T too)",
    ),
    (
        check_highway_jacobian,
        jacobian_gate_term(lambda H, x: H - x, derivative=lambda T: T),
        "the sigmoid's derivative is σ'(u) = T (1 − T), not T",
    ),
    (
        check_highway_jacobian,
        lambda *a: highway_jacobian(*(t.float() for t in a)),
        "returned dtype torch.float32, expected torch.float64",
    ),
]


@pytest.mark.parametrize(
    "check, answer, message", MISTAKES, ids=[message[:48] for _, _, message in MISTAKES]
)
def test_common_mistakes_fail_with_their_name_on_every_seed(check, answer, message):
    fails_on_seeds(check, answer, HIDDEN_SEEDS[:6], message)


def test_each_exercise_names_at_least_five_mistakes():
    named = {check: sum(c is check for c, _, _ in MISTAKES) for check in CHECKS}
    assert min(named.values()) >= 5, named


def test_a_failure_names_the_mistake_the_case_and_its_inputs():
    with pytest.raises(AssertionError) as info:
        check_batch_norm_train(bn_unreshaped_parameters)
    assert str(info.value) == (
        "bn_unreshaped_parameters: γ and β of shape (C,) were not reshaped: against an (N, C, L) "
        "input they line up with the last axis (L), not the channels; reshape them to (1, C, 1), "
        "e.g. gamma.view(1, -1, 1)\n  (case 4 of 8: a (3, 4, 4) batch of sequences (N, C, L) "
        "with L = C; inputs: a torch.float32 tensor of shape (3, 4, 4), a torch.float32 tensor of "
        "shape (4,), a torch.float32 tensor of shape (4,))"
    )


def test_an_error_on_an_unbroadcastable_case_gets_a_hint_from_the_error():
    def raises_without_keepdim(x, g, b, eps=1e-5):  # passes the L = C case, raises on L ≠ C
        if x.dim() == 3 and x.shape[1] == x.shape[2]:
            return batch_norm_train(x, g, b, eps)
        return bn_no_keepdim(x, g, b, eps)

    fails(
        check_batch_norm_train,
        raises_without_keepdim,
        r"raised RuntimeError: The size of tensor a \(5\) must match .*\(case 5 of 8: a \(4, 3, 5\)"
        r"(.|\n)*hint: .*keepdim=True.*\(C,\) parameter needs reshaping",
    )


# ---------------------------------------------------- built-ins and the course's own layers


def via_course_highway(x, WH, bH, WT, bT):
    block = Highway(x.shape[-1]).to(x.dtype)
    with torch.no_grad():
        block.transform[0].weight.copy_(WH.T)
        block.transform[0].bias.copy_(bH)
        block.gate.weight.copy_(WT.T)
        block.gate.bias.copy_(bT)
    return block(x)


def via_chapter_layer_norm(x, g, b, eps=1e-5):  # the chapter's module re-exports the course's
    return chapter_stacks.LayerNorm(x.shape[-1], eps=eps).to(x.dtype)(x) * g + b


def layer_norm_module(x, g, b, eps=1e-5):
    norm = nn.LayerNorm(x.shape[-1], eps=eps, dtype=x.dtype)
    with torch.no_grad():
        norm.weight.copy_(g)
        norm.bias.copy_(b)
    return norm(x).detach()


def swallows_the_refusal(x, g, b, eps=1e-5):
    try:
        return bound_layer_norm(x, x.shape[-1:], g, b, eps)
    except Exception:
        return layer_norm(x, g, b, eps)


REFUSED = [
    (
        check_residual_gradient,
        lambda g, J: torch.autograd.functional.vjp(lambda x: x + x @ J[0], torch.zeros_like(g), g)[
            1
        ][None].expand(2, -1),
        "torch.autograd.functional.vjp",
    ),
    (
        check_layer_norm,
        lambda x, g, b, eps=1e-5: F.layer_norm(x, x.shape[-1:], g, b, eps),
        "torch.nn.functional.layer_norm",
    ),
    (
        check_layer_norm,
        lambda x, g, b, eps=1e-5: torch.layer_norm(x, x.shape[-1:], g, b, eps),
        "torch.layer_norm",
    ),
    (
        check_layer_norm,
        lambda x, g, b, eps=1e-5: bound_layer_norm(x, x.shape[-1:], g, b, eps),
        "layer_norm",
    ),
    (check_layer_norm, layer_norm_module, "torch.nn.LayerNorm"),
    (check_layer_norm, swallows_the_refusal, "layer_norm"),
    (
        check_layer_norm,
        lambda x, g, b, eps=1e-5: (
            F.group_norm(x.reshape(-1, 1, x.shape[-1]), 1, eps=eps).reshape(x.shape) * g + b
        ),
        "group_norm",
    ),
    (
        check_layer_norm,
        lambda x, g, b, eps=1e-5: (
            attncourse.norms.LayerNorm(x.shape[-1], eps=eps).to(x.dtype)(x) * g + b
        ),
        "course's own attncourse.norms",
    ),
    (check_layer_norm, via_chapter_layer_norm, "course's own attncourse."),
    (check_rms_norm, lambda x, g, eps=1e-6: F.rms_norm(x, x.shape[-1:], g, eps), "rms_norm"),
    (
        check_rms_norm,
        lambda x, g, eps=1e-6: nn.RMSNorm(x.shape[-1], eps=eps).to(x.dtype)(x) * g,
        "torch.nn.RMSNorm",
    ),
    (
        check_rms_norm,
        lambda x, g, eps=1e-6: attncourse.norms.RMSNorm(x.shape[-1], eps=eps).to(x.dtype)(x) * g,
        "course's own attncourse.norms",
    ),
    (
        check_rms_norm,
        lambda x, g, eps=1e-6: F.layer_norm(x, x.shape[-1:], eps=eps) * g,
        "layer_norm",
    ),
    (
        check_batch_norm_train,
        lambda x, g, b, eps=1e-5: F.batch_norm(x, None, None, g, b, training=True, eps=eps),
        "batch_norm",
    ),
    (
        check_batch_norm_train,
        lambda x, g, b, eps=1e-5: nn.BatchNorm1d(x.shape[1], eps=eps).to(x.dtype)(x),
        "torch.nn.BatchNorm1d",
    ),
    (
        check_batch_norm_train,
        lambda x, g, b, eps=1e-5: attncourse.norms.BatchNorm1d(x.shape[1], eps=eps).to(x.dtype)(x),
        "course's own attncourse.norms",
    ),
    (
        check_batch_norm_train,
        lambda x, g, b, eps=1e-5: F.instance_norm(x.transpose(0, 1)[None]).squeeze(0),
        "instance_norm",
    ),
    (check_highway, via_course_highway, "Highway"),
    (
        check_highway_jacobian,
        lambda x, *p: torch.autograd.functional.jacobian(lambda t: highway(t[None], *p)[0], x),
        "torch.autograd.functional.jacobian",
    ),
    (
        check_highway_jacobian,
        lambda x, *p: jacobian(lambda t: highway(t[None], *p)[0], x),
        "torch.autograd.functional.jacobian",
    ),
    (
        check_highway_jacobian,
        lambda x, *p: torch.func.jacrev(lambda t: highway(t[None], *p)[0])(x),
        "torch.func.jacrev",
    ),
    (
        check_highway_jacobian,
        lambda x, *p: torch.func.jacfwd(lambda t: highway(t[None], *p)[0])(x),
        "torch.func.jacfwd",
    ),
    (
        check_highway_jacobian,
        lambda x, *p: torch.stack(
            [
                torch.autograd.grad(highway(x[None].requires_grad_(), *p)[0][i], x)[0]
                for i in range(x.shape[0])
            ]
        ),
        "torch.autograd.grad",
    ),
]


@pytest.mark.parametrize("check, answer, called", REFUSED, ids=[c for _, _, c in REFUSED])
def test_built_ins_and_the_course_s_own_layers_are_refused(check, answer, called):
    with pytest.raises(AssertionError) as info:
        check(answer)
    assert "must be written from scratch" in str(info.value) and called in str(info.value)


def test_a_refused_built_in_comes_before_the_dtype_check():
    fails(
        check_layer_norm,
        lambda x, g, b, eps=1e-5: F.layer_norm(x.float(), x.shape[-1:], g.float(), b.float(), eps),
        r"must be written from scratch",
    )


def test_the_refused_functions_work_again_afterwards():
    for check, answer, _ in REFUSED:
        with pytest.raises(AssertionError):
            check(answer)
    x = torch.randn(3, 4)
    torch.testing.assert_close(F.layer_norm(x, (4,)), layer_norm(x, 1.0, 0.0))
    torch.testing.assert_close(attncourse.norms.LayerNorm(4)(x), layer_norm(x, 1.0, 0.0))
    torch.testing.assert_close(
        F.batch_norm(x, None, None, training=True),
        batch_norm_train(x, torch.ones(4), torch.zeros(4)),
    )
    t = torch.randn(3, dtype=torch.float64, requires_grad=True)
    (grad,) = torch.autograd.grad((t**2).sum(), t)
    torch.testing.assert_close(grad, 2 * t.detach())
    torch.testing.assert_close(jacobian(lambda u: 3 * u, t.detach()), 3 * torch.eye(3).double())
    assert Highway(4)(torch.randn(2, 4)).shape == (2, 4)


def test_backward_is_refused_too():
    def by_backward(x, WH, bH, WT, bT):
        rows = []
        for i in range(x.shape[0]):
            t = x.detach().clone().requires_grad_()
            highway(t[None], WH, bH, WT, bT)[0, i].backward()
            rows.append(t.grad)
        return torch.stack(rows)

    fails(check_highway_jacobian, by_backward, r"uses \.backward\(\)")


@pytest.mark.parametrize(
    "check, source, called",
    [
        (
            check_layer_norm,
            "def hidden(x, g, b, eps=1e-5):\n    return F.layer_norm(x, x.shape[-1:], g, b, eps)\n",
            "torch.nn.functional.layer_norm was called",
        ),
        (
            check_rms_norm,
            "def hidden(x, g, eps=1e-6):\n    return norms.RMSNorm(x.shape[-1], eps).double()(x)\n",
            "attncourse.norms.RMSNorm.forward was called",
        ),
        (check_highway, "def hidden(x, *p):\n    return Highway(x.shape[-1])(x)\n", "Highway"),
        (
            check_highway_jacobian,
            "def hidden(x, *p):\n    return torch.func.jacrev(torch.sin)(x)\n",
            "torch.func.jacrev was called",
        ),
    ],
)
def test_an_answer_without_readable_source_is_refused_at_run_time(check, source, called):
    namespace = {}
    exec(source, {"F": F, "norms": attncourse.norms, "Highway": Highway, "torch": torch}, namespace)
    fails(check, namespace["hidden"], rf"must be written from scratch, but .*{called}")
