"""Chapter 08's exercise checks pass correct solutions and name each common mistake specifically;
from-scratch checks refuse the built-ins, the Jacobian check refuses automatic differentiation."""

import pytest
import torch
import torch.nn.functional as F
from exercise_helpers import blank, fails
from torch import nn

import attncourse.norms
from attncourse.exercises.ch08 import (
    check_batch_norm_train,
    check_highway,
    check_highway_jacobian,
    check_layer_norm,
    check_rms_norm,
)

# ----------------------------------------------------------------------- correct solutions


def layer_norm(x, gamma, beta, eps=1e-5):
    mu = x.mean(-1, keepdim=True)
    var = ((x - mu) ** 2).mean(-1, keepdim=True)
    return (x - mu) / torch.sqrt(var + eps) * gamma + beta


def rms_norm(x, gamma, eps=1e-6):
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps) * gamma


def batch_norm_train(x, gamma, beta, eps=1e-5):
    dims = (0, 2) if x.dim() == 3 else (0,)
    shape = (1, -1, 1) if x.dim() == 3 else (1, -1)
    mu = x.mean(dims, keepdim=True)
    var = x.var(dims, unbiased=False, keepdim=True)
    return (x - mu) / torch.sqrt(var + eps) * gamma.view(shape) + beta.view(shape)


def highway(x, W_H, b_H, W_T, b_T):
    T = torch.sigmoid(x @ W_T + b_T)
    return torch.relu(x @ W_H + b_H) * T + x * (1 - T)


def highway_jacobian(x, W_H, b_H, W_T, b_T):
    z = x @ W_H + b_H
    T = torch.sigmoid(x @ W_T + b_T)
    H = torch.relu(z)
    return (
        torch.diag(T * (z > 0).to(x.dtype)) @ W_H.T
        + torch.diag(1 - T)
        + torch.diag((H - x) * T * (1 - T)) @ W_T.T
    )


CHECKS = [
    (check_layer_norm, layer_norm, 8),
    (check_rms_norm, rms_norm, 6),
    (check_batch_norm_train, batch_norm_train, 7),
    (check_highway, highway, 6),
    (check_highway_jacobian, highway_jacobian, 6),
]


@pytest.mark.parametrize("check, solution, count", CHECKS)
def test_a_correct_solution_passes_with_one_line(check, solution, count, capsys):
    assert check(solution) is None
    assert check(solution, seed=7) is None  # hidden tests draw other inputs
    assert (
        capsys.readouterr().out.splitlines()[0]
        == f"✓ {solution.__name__}: all {count} checks passed"
    )


@pytest.mark.parametrize("check", [c for c, _, _ in CHECKS])
def test_blank_none_and_wrong_type_fail_clearly(check):
    fails(check, blank, r"blank is not implemented yet: replace `raise NotImplementedError\(\)`")
    fails(check, lambda *a, **k: None, r"returned None: did you forget `return`\?")
    fails(check, lambda *a, **k: [1.0], r"returned a list of 1, expected a torch.Tensor")
    fails(check, None, r"this check needs your function, got NoneType")


def test_checks_leave_the_global_random_stream_alone():
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    for check, solution, _ in CHECKS:
        check(solution)
    assert torch.equal(torch.rand(3), expected)


# ------------------------------------------------------------------------------- LayerNorm


def test_layer_norm_mistakes_are_named():
    fails(
        check_layer_norm,
        lambda x, g, b, eps=1e-5: (
            (x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, keepdim=True) + eps) * g + b
        ),
        r"unbiased variance",
    )
    fails(
        check_layer_norm,
        lambda x, g, b, eps=1e-5: (
            (x - x.mean(-1, keepdim=True)) / (x.std(-1, unbiased=False, keepdim=True) + eps) * g + b
        ),
        r"eps was added to the standard deviation",
    )
    fails(check_layer_norm, lambda x, g, b, eps=1e-5: layer_norm(x, g, b, 0.0), r"no eps")
    fails(
        check_layer_norm,
        lambda x, g, b, eps=1e-5: (
            layer_norm(x.transpose(0, -1), 1.0, 0.0, eps).transpose(0, -1) * g + b
        ),
        r"statistics were taken over the wrong axis",
    )
    fails(
        check_layer_norm,
        lambda x, g, b, eps=1e-5: layer_norm(x, 1.0, 0.0, eps),
        r"γ and β are missing",
    )
    fails(
        check_layer_norm,
        lambda x, g, b, eps=1e-5: (layer_norm(x, 1.0, 0.0, eps) + b) * g,
        r"γ and β in the wrong order",
    )
    fails(
        check_layer_norm,
        lambda x, g, b, eps=1e-5: x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps) * g + b,
        r"the mean was not subtracted: that is RMSNorm",
    )
    fails(
        check_layer_norm,
        lambda x, g, b, eps=1e-5: layer_norm(x, g, b, 1e-5),
        r"eps = 0.5 given explicitly",
    )


@pytest.mark.parametrize(
    "builtin",
    [
        lambda x, g, b, eps=1e-5: F.layer_norm(x, x.shape[-1:], g, b, eps),
        lambda x, g, b, eps=1e-5: torch.layer_norm(x, x.shape[-1:], g, b, eps),
        lambda x, g, b, eps=1e-5: (
            nn.functional.group_norm(x.reshape(-1, 1, x.shape[-1]), 1, eps=eps).reshape(x.shape) * g
            + b
        ),
        lambda x, g, b, eps=1e-5: (
            attncourse.norms.LayerNorm(x.shape[-1], eps=eps).to(x.dtype)(x) * g + b
        ),
    ],
)
def test_layer_norm_refuses_built_ins(builtin):
    fails(check_layer_norm, builtin, r"must be written from scratch")
    x = torch.randn(3, 4)
    torch.testing.assert_close(
        F.layer_norm(x, (4,)), layer_norm(x, 1.0, 0.0)
    )  # restored afterwards
    torch.testing.assert_close(attncourse.norms.LayerNorm(4)(x), layer_norm(x, 1.0, 0.0))


# --------------------------------------------------------------------------------- RMSNorm


def test_rms_norm_mistakes_are_named():
    fails(
        check_rms_norm,
        lambda x, g, eps=1e-6: layer_norm(x, g, 0.0, eps),
        r"the mean was subtracted: that is LayerNorm",
    )
    fails(
        check_rms_norm,
        lambda x, g, eps=1e-6: x / torch.sqrt((x * x).sum(-1, keepdim=True) + eps) * g,
        r"off by √d",
    )
    fails(
        check_rms_norm,
        lambda x, g, eps=1e-6: x / ((x * x).mean(-1, keepdim=True).sqrt() + eps) * g,
        r"outside the square root",
    )
    fails(
        check_rms_norm,
        lambda x, g, eps=1e-6: x / ((x * x).mean(-1, keepdim=True) + eps) * g,
        r"without the square root",
    )
    fails(
        check_rms_norm,
        lambda x, g, eps=1e-6: x / torch.sqrt((x * x).mean(0, keepdim=True) + eps) * g,
        r"wrong axis",
    )
    fails(check_rms_norm, lambda x, g, eps=1e-6: rms_norm(x, 1.0, eps), r"γ is missing")
    fails(
        check_rms_norm,
        lambda x, g, eps=1e-6: x / torch.sqrt((x * x).mean(-1, keepdim=True)) * g,
        r"no eps",
    )
    fails(
        check_rms_norm,
        lambda x, g, eps=1e-6: x / torch.sqrt((x * x).mean(-1, keepdim=True) + 1e-6) * g,
        r"eps = 0.25 given explicitly",
    )  # ignores the eps it is given


def test_rms_norm_refuses_built_ins():
    fails(
        check_rms_norm,
        lambda x, g, eps=1e-6: F.rms_norm(x, x.shape[-1:], g, eps),
        r"must be written from scratch",
    )
    fails(
        check_rms_norm,
        lambda x, g, eps=1e-6: nn.RMSNorm(x.shape[-1], eps=eps).to(x.dtype)(x) * g,
        r"must be written from scratch",
    )
    fails(
        check_rms_norm,
        lambda x, g, eps=1e-6: attncourse.norms.RMSNorm(x.shape[-1], eps=eps).to(x.dtype)(x) * g,
        r"must be written from scratch",
    )


# ------------------------------------------------------------------------------- BatchNorm


def test_batch_norm_mistakes_are_named():
    def per_sample(x, g, b, eps=1e-5):
        shape = (1, -1, 1) if x.dim() == 3 else (1, -1)
        mu, var = x.mean(1, keepdim=True), x.var(1, unbiased=False, keepdim=True)
        return (x - mu) / torch.sqrt(var + eps) * g.view(shape) + b.view(shape)

    def per_position(x, g, b, eps=1e-5):
        if x.dim() == 2:
            return batch_norm_train(x, g, b, eps)
        mu, var = x.mean(0, keepdim=True), x.var(0, unbiased=False, keepdim=True)
        return (x - mu) / torch.sqrt(var + eps) * g.view(1, -1, 1) + b.view(1, -1, 1)

    def unbiased(x, g, b, eps=1e-5):
        dims = (0, 2) if x.dim() == 3 else (0,)
        shape = (1, -1, 1) if x.dim() == 3 else (1, -1)
        return (x - x.mean(dims, keepdim=True)) / torch.sqrt(
            x.var(dims, keepdim=True) + eps
        ) * g.view(shape) + b.view(shape)

    fails(check_batch_norm_train, per_sample, r"that is LayerNorm")
    fails(check_batch_norm_train, per_position, r"over N and L together")
    fails(check_batch_norm_train, unbiased, r"unbiased variance")
    fails(
        check_batch_norm_train,
        lambda x, g, b, eps=1e-5: batch_norm_train(x, torch.ones_like(g), torch.zeros_like(b), eps),
        r"γ and β are missing",
    )


def test_batch_norm_refuses_built_ins():
    fails(
        check_batch_norm_train,
        lambda x, g, b, eps=1e-5: F.batch_norm(x, None, None, g, b, training=True, eps=eps),
        r"must be written from scratch",
    )
    fails(
        check_batch_norm_train,
        lambda x, g, b, eps=1e-5: attncourse.norms.BatchNorm1d(x.shape[1], eps=eps).to(x.dtype)(x),
        r"must be written from scratch",
    )
    x = torch.randn(5, 3)
    torch.testing.assert_close(
        F.batch_norm(x, None, None, training=True),
        batch_norm_train(x, torch.ones(3), torch.zeros(3)),
    )


# --------------------------------------------------------------------------------- highway


def test_highway_mistakes_are_named():
    fails(
        check_highway,
        lambda x, WH, bH, WT, bT: (
            x * torch.sigmoid(x @ WT + bT)
            + torch.relu(x @ WH + bH) * (1 - torch.sigmoid(x @ WT + bT))
        ),
        r"the gates are swapped",
    )
    fails(
        check_highway,
        lambda x, WH, bH, WT, bT: (
            (x @ WH + bH) * torch.sigmoid(x @ WT + bT) + x * (1 - torch.sigmoid(x @ WT + bT))
        ),
        r"H has no ReLU",
    )
    fails(
        check_highway,
        lambda x, WH, bH, WT, bT: highway(x, WH.T, bH, WT.T, bT),
        r"the weights are transposed",
    )
    fails(
        check_highway,
        lambda x, WH, bH, WT, bT: torch.relu(x @ WH + bH) * torch.sigmoid(x @ WT + bT),
        r"no carry term",
    )
    fails(
        check_highway,
        lambda x, WH, bH, WT, bT: x + torch.relu(x @ WH + bH),
        r"that is a residual block",
    )


def test_highway_refuses_the_course_s_own_block():
    from attncourse.blocks import Highway

    def via_block(x, WH, bH, WT, bT):
        block = Highway(x.shape[-1]).to(x.dtype)
        with torch.no_grad():
            block.transform[0].weight.copy_(WH.T)
            block.transform[0].bias.copy_(bH)
            block.gate.weight.copy_(WT.T)
            block.gate.bias.copy_(bT)
        return block(x)

    fails(check_highway, via_block, r"must be written from scratch")


# ------------------------------------------------------------------------ highway Jacobian


def test_highway_jacobian_mistakes_are_named():
    def printed(x, WH, bH, WT, bT):  # Eq. (5.3.5) as printed
        z = x @ WH + bH
        T = torch.sigmoid(x @ WT + bT)
        return torch.diag(T * (z > 0).to(x.dtype)) @ WH.T + torch.diag(1 - T)

    def no_relu_derivative(x, WH, bH, WT, bT):
        T = torch.sigmoid(x @ WT + bT)
        H = torch.relu(x @ WH + bH)
        return torch.diag(T) @ WH.T + torch.diag(1 - T) + torch.diag((H - x) * T * (1 - T)) @ WT.T

    fails(
        check_highway_jacobian,
        printed,
        r"the gate-derivative term \(H − x\) · ∂T/∂x is missing: that is Eq. \(5.3.5\) as printed",
    )
    fails(check_highway_jacobian, lambda *a: highway_jacobian(*a).T, r"the Jacobian is transposed")
    fails(check_highway_jacobian, no_relu_derivative, r"ReLU's derivative is missing")
    fails(
        check_highway_jacobian,
        lambda *a: highway_jacobian(*a) - torch.diag(1 - torch.sigmoid(a[0] @ a[3] + a[4])),
        r"carry term's derivative",
    )


@pytest.mark.parametrize(
    "autodiff",
    [
        lambda x, *p: torch.autograd.functional.jacobian(lambda t: highway(t, *p), x),
        lambda x, *p: torch.func.jacrev(lambda t: highway(t, *p))(x),
        lambda x, *p: torch.func.jacfwd(lambda t: highway(t, *p))(x),
        lambda x, *p: torch.stack(
            [
                torch.autograd.grad(highway(x.requires_grad_(), *p)[i], x)[0]
                for i in range(x.shape[0])
            ]
        ),
    ],
)
def test_highway_jacobian_refuses_automatic_differentiation_and_restores_it(autodiff):
    fails(
        check_highway_jacobian,
        autodiff,
        r"must be written from scratch: line \d+ uses torch\.(autograd|func)\.\w+(\.\w+)?",
    )
    x = torch.randn(3, dtype=torch.float64, requires_grad=True)
    (grad,) = torch.autograd.grad((x**2).sum(), x)  # restored afterwards
    torch.testing.assert_close(grad, 2 * x.detach())
    torch.testing.assert_close(
        torch.autograd.functional.jacobian(lambda t: 3 * t, x.detach()),
        3 * torch.eye(3, dtype=torch.float64),
    )


def test_backward_is_refused_too():
    def by_backward(x, WH, bH, WT, bT):
        rows = []
        for i in range(x.shape[0]):
            t = x.detach().clone().requires_grad_()
            highway(t, WH, bH, WT, bT)[i].backward()
            rows.append(t.grad)
        return torch.stack(rows)

    fails(check_highway_jacobian, by_backward, r"uses \.backward\(\)")
