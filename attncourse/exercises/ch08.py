"""Checks for chapter 08's exercises: the gradient through a residual stack, a highway layer and
its full Jacobian, LayerNorm, RMSNorm and BatchNorm statistics in training mode — each compared
with a reference on random and edge inputs, with the common mistakes named (declared as
``attncourse.exercises.engine.Exercise``).

The normalization exercises are from scratch: ``F.layer_norm``, ``F.rms_norm``, ``F.batch_norm``
(and the ``nn`` modules, and ``attncourse.norms``' own layers) fail the check. The Jacobian
exercise is by hand: automatic differentiation (``torch.autograd``, ``torch.func``,
``Tensor.backward``) fails it. Inputs come from a private generator; ``seed=`` gives hidden tests
other inputs.
"""

from __future__ import annotations

import functools
import math

import torch

from .. import guard
from ..blocks import Highway
from ..chapters.ch08_residual_highway_normalization import residual_gradient as _residual_gradient
from .engine import Case, Exercise, randn

_sigmoid = torch.sigmoid
_relu = torch.relu
_BuiltinCalledError = guard.BuiltinCalledError


# ------------------------------------------------------------------ gradient through a stack


def _residual_gradient_ref(g, jacobians):
    """Row l: ∂L/∂x_l = ∂L/∂x_{l+1} (I + J_l), row L: g   (Eq. 5.3.2, block by block)."""
    return _residual_gradient(g, jacobians)  # (L + 1, d)


def _without_identity(g, jacobians):
    """A plain stack's gradient: g J_{L-1} ... J_l, the identity left out."""
    rows = [g]
    for J in reversed(jacobians.unbind(0)):
        rows.append(rows[-1] @ J)
    return torch.stack(rows[::-1])


def _column_convention(g, jacobians):
    """(I + J) gᵀ instead of g (I + J): the Jacobian used the wrong way round."""
    rows = [g]
    for J in reversed(jacobians.unbind(0)):
        rows.append(rows[-1] + J @ rows[-1])
    return torch.stack(rows[::-1])


def _first_order(g, jacobians):
    """g + Σ_{k ≥ l} g J_k: the branch terms summed, their products dropped."""
    rows = [g]
    for J in reversed(jacobians.unbind(0)):
        rows.append(rows[-1] + g @ J)
    return torch.stack(rows[::-1])


def _residual_gradient_cases(g):
    """fn(g (d,), jacobians (L, d, d)) -> (L + 1, d), row l = ∂L/∂x_l of a residual stack."""

    def jacobians(L, d, scale=0.6, dtype=torch.float32):
        return randn(g, L, d, d, dtype=dtype, scale=scale / math.sqrt(d))

    cancelling = jacobians(4, 3)
    cancelling[2] = -torch.eye(3)  # block 2's branch is F(x) = -x: x_3 = 0 whatever x_2 is
    return [
        Case("d = 3, four blocks", (randn(g, 3), jacobians(4, 3))),
        Case(
            "float64, d = 5, six blocks",
            (randn(g, 5, dtype=torch.float64), jacobians(6, 5, dtype=torch.float64)),
        ),
        Case("one block (L = 1)", (randn(g, 4), jacobians(1, 4))),
        Case(
            "branches whose Jacobians are 0 (the gradient passes unchanged)",
            (randn(g, 4), torch.zeros(3, 4, 4)),
            hint="with J_l = 0 every block is the identity, so every row must equal g",
        ),
        Case(
            "large branch Jacobians, d = 4, five blocks",
            (randn(g, 4), jacobians(5, 4, scale=2.0)),
        ),
        Case(
            "block 2 of 4 is F(x) = -x (J_2 = -I): no gradient gets below it",
            (randn(g, 3), cancelling),
            hint="block 2 maps every x_2 to x_3 = 0, so ∂L/∂x_2 = ∂L/∂x_3 (I - I) = 0, "
            "and so are the rows below it",
        ),
        Case("d = 1, three blocks", (randn(g, 1), jacobians(3, 1))),
    ]


check_residual_gradient = Exercise(
    _residual_gradient_ref,
    _residual_gradient_cases,
    reimplements=("autograd",),
    diagnoses=[
        (
            "the identity is missing: that is a plain stack's gradient g J_{L-1} ... J_l; through "
            "a residual block it is ∂L/∂x_{l+1} (I + J_l) (Eq. 5.3.2)",
            _without_identity,
        ),
        (
            "the Jacobian is used the wrong way round: J[i, j] = ∂F_i/∂x_j, so the row vector "
            "multiplies from the left, g (I + J) = g + g @ J, not (I + J) @ g",
            lambda g, Js: _column_convention(g, Js) if g.shape[-1] > 1 else None,
        ),
        (
            "the blocks were applied in the wrong order: the gradient comes down from the top, so "
            "∂L/∂x_{L-1} = g (I + J_{L-1}) uses the last block first",
            lambda g, Js: _residual_gradient(g, Js.flip(0)) if Js.shape[0] > 1 else None,
        ),
        (
            "the rows are upside down: row l must be ∂L/∂x_l, so row 0 is the gradient at the "
            "input x_0 and the last row is g itself",
            lambda g, Js: _residual_gradient(g, Js).flip(0),
        ),
        (
            "the branch terms were summed, g + Σ g J_k: the gradient through several blocks is "
            "the product g (I + J_{L-1}) ... (I + J_l), which also has the cross terms "
            "g J_{L-1} J_{L-2}, ...; multiply block by block",
            lambda g, Js: _first_order(g, Js) if Js.shape[0] > 1 else None,
        ),
        (
            "the branch term is missing: ∂L/∂x_l = ∂L/∂x_{l+1} (I + J_l) = ∂L/∂x_{l+1} + "
            "∂L/∂x_{l+1} J_l, not ∂L/∂x_{l+1} alone",
            lambda g, Js: g.expand(Js.shape[0] + 1, -1),
        ),
        (
            "the last row is missing: return L + 1 rows, ∂L/∂x_0 ... ∂L/∂x_L, the last being g",
            lambda g, Js: _residual_gradient(g, Js)[:-1],
        ),
        (
            "the first row is missing: return L + 1 rows, from ∂L/∂x_0 (the input) to ∂L/∂x_L = g",
            lambda g, Js: _residual_gradient(g, Js)[1:],
        ),
    ],
)


# ----------------------------------------------------------------------------------- LayerNorm


def _layer_norm_ref(x, gamma, beta, eps=1e-5):
    """(x − μ) / √(σ² + ε) · γ + β over the last dim, σ² the biased (1/d) variance   (Eq. 5.3.7)."""
    mu = x.mean(dim=-1, keepdim=True)  # (..., 1)
    var = ((x - mu) ** 2).mean(dim=-1, keepdim=True)  # (..., 1)
    return (x - mu) / torch.sqrt(var + eps) * gamma + beta  # (..., d)


def _layer_norm_cases(g):
    """fn(x (..., d), gamma (d,), beta (d,), eps=1e-5) -> LayerNorm over the last dim, from
    scratch.
    """

    def affine(d, dtype=torch.float32):
        return 1 + randn(g, d, dtype=dtype, scale=0.5), randn(g, d, dtype=dtype, scale=0.5)

    constant = torch.full((2, 5), 3.0)
    constant[1] = torch.arange(5.0)
    cases = [  # the square batch first: a reduction without keepdim=True is named, not raised;
        # float64 next: a mistake about eps shows there, far above round-off
        Case(
            "a (5, 5) batch (as many tokens as features)", (randn(g, 5, 5, scale=2.0), *affine(5))
        ),
        Case(
            "float64 inputs",
            (randn(g, 3, 7, dtype=torch.float64, scale=4.0), *affine(7, torch.float64)),
        ),
        Case("a (4, 6) batch of token vectors", (randn(g, 4, 6, scale=3.0, shift=1.0), *affine(6))),
        Case("a (2, 3, 8) tensor (batch, time, features)", (randn(g, 2, 3, 8), *affine(8))),
        Case("eps = 0.5 given explicitly", (randn(g, 3, 4, scale=0.5), *affine(4)), {"eps": 0.5}),
        Case(
            "a constant row (σ = 0: the output must be β, not NaN)",
            (constant, *affine(5)),
            hint=(
                "a constant row has σ² = 0: add eps inside the square root, √(σ² + ε), "
                "so it gives (x − μ)·0 + β"
            ),
        ),
        Case(  # spread 30, so E[x²] − μ² (a correct formula, if a less careful one) keeps 13
            # digits in float64 and passes: precision is not this exercise's lesson
            "features around 1000",
            (
                randn(g, 3, 6, scale=30.0, shift=1000.0, dtype=torch.float64),
                *affine(6, torch.float64),
            ),
        ),
        Case("one feature (d = 1: x̂ = 0, the output is β)", (randn(g, 4, 1), *affine(1))),
    ]

    def keepdim_wrong(x, gamma, beta, eps=1e-5):
        if x.dim() != 2 or x.shape[0] != x.shape[1]:
            return None  # only a square batch broadcasts silently
        mu = x.mean(dim=-1)  # (n,) broadcast along the wrong axis
        var = ((x - mu) ** 2).mean(dim=-1)
        return (x - mu) / torch.sqrt(var + eps) * gamma + beta

    diagnoses = [
        (
            "used the unbiased variance (1/(d − 1), what torch.var gives by default): "
            "LayerNorm divides by d (Eq. 5.3.7); "
            "use ((x - mu)**2).mean(-1) or x.var(-1, unbiased=False)",
            lambda x, gamma, beta, eps=1e-5: (
                (x - x.mean(-1, keepdim=True))
                / torch.sqrt(x.var(-1, unbiased=True, keepdim=True) + eps)
                * gamma
                + beta
                if x.shape[-1] > 1
                else None
            ),
        ),
        # before 'no eps': where eps = 0.5 is given, 1e-5 and 0 may both match
        (
            "the eps argument was ignored: use the eps the function is given, not a fixed 1e-5",
            lambda x, gamma, beta, eps=1e-5: (
                _layer_norm_ref(x, gamma, beta, 1e-5) if eps != 1e-5 else None
            ),
        ),
        (
            "no eps: x̂ = (x − μ) / √(σ² + ε) needs ε, both for the value and for constant rows",
            lambda x, gamma, beta, eps=1e-5: _layer_norm_ref(x, gamma, beta, 0.0),
        ),
        # after 'no eps': where a small σ lets eps matter in float32, ε outside the root can be
        # as close to a missing eps as to the answer
        (
            "eps was added to the standard deviation; it belongs inside the square root: √(σ² + ε)",
            lambda x, gamma, beta, eps=1e-5: (
                (x - x.mean(-1, keepdim=True))
                / (x.var(-1, unbiased=False, keepdim=True).sqrt() + eps)
                * gamma
                + beta
            ),
        ),
        (
            "divided by the variance σ² + ε: divide by its square root, √(σ² + ε)",
            lambda x, gamma, beta, eps=1e-5: (
                (x - x.mean(-1, keepdim=True))
                / (x.var(-1, unbiased=False, keepdim=True) + eps)
                * gamma
                + beta
            ),
        ),
        (
            "the statistics were taken over the wrong axis: LayerNorm uses the last dimension "
            "(the features of each token), BatchNorm the batch",
            lambda x, gamma, beta, eps=1e-5: (
                (x - x.mean(0, keepdim=True))
                / torch.sqrt(x.var(0, unbiased=False, keepdim=True) + eps)
                * gamma
                + beta
                if x.dim() > 1 and x.shape[0] > 1
                else None
            ),
        ),
        (
            "γ and β are missing: y = γ · x̂ + β",
            lambda x, gamma, beta, eps=1e-5: _layer_norm_ref(x, 1.0, 0.0, eps),
        ),
        (
            "γ and β in the wrong order: y = γ · x̂ + β, not (x̂ + β) · γ",
            lambda x, gamma, beta, eps=1e-5: (_layer_norm_ref(x, 1.0, 0.0, eps) + beta) * gamma,
        ),
        (
            "γ and β are swapped: γ (gamma) scales x̂ and β (beta) shifts it, y = γ · x̂ + β",
            lambda x, gamma, beta, eps=1e-5: _layer_norm_ref(x, beta, gamma, eps),
        ),
        (
            "the mean was not subtracted: that is RMSNorm; LayerNorm centres first (x − μ)",
            lambda x, gamma, beta, eps=1e-5: (
                x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps) * gamma + beta
            ),
        ),
        (
            "a reduction without keepdim=True broadcast along the wrong axis: "
            "use x.mean(dim=-1, keepdim=True)",
            keepdim_wrong,
        ),
    ]
    return cases, diagnoses


check_layer_norm = Exercise(
    _layer_norm_ref,
    _layer_norm_cases,
    reimplements=("layer_norm", "rms_norm", "batch_norm"),
)


# ------------------------------------------------------------------------------------- RMSNorm


def _rms_norm_ref(x, gamma, eps=1e-6):
    """x / √(mean(x²) + ε) · γ over the last dim (Zhang & Sennrich 2019)."""
    return x / torch.sqrt((x * x).mean(dim=-1, keepdim=True) + eps) * gamma  # (..., d)


def _rms_norm_cases(g):
    """fn(x (..., d), gamma (d,), eps=1e-6) -> x / √(mean(x²) + ε) · γ over the last dim, from
    scratch.
    """

    def gamma(d, dtype=torch.float32):
        return 1 + randn(g, d, dtype=dtype, scale=0.5)

    zero = torch.zeros(2, 4)
    zero[1] = torch.tensor([1.0, -2.0, 0.5, 0.0])
    cases = [  # the square batch first: a reduction without keepdim=True is named, not raised
        Case("a (5, 5) batch (as many tokens as features)", (randn(g, 5, 5), gamma(5))),
        Case(
            "a (4, 6) batch with a non-zero mean", (randn(g, 4, 6, scale=2.0, shift=1.5), gamma(6))
        ),
        Case("a (2, 3, 8) tensor", (randn(g, 2, 3, 8, scale=3.0), gamma(8))),
        Case("float64 inputs", (randn(g, 3, 7, dtype=torch.float64), gamma(7, torch.float64))),
        Case("eps = 0.25 given explicitly", (randn(g, 3, 4, scale=0.3), gamma(4)), {"eps": 0.25}),
        Case(
            "a zero row (the output must be 0, not NaN)",
            (zero, gamma(4)),
            hint="a zero row has mean(x²) = 0: add eps inside the square root so 0 / √ε = 0",
        ),
    ]
    diagnoses = [
        (
            "the mean was subtracted: that is LayerNorm; "
            "RMSNorm only divides by the root mean square",
            lambda x, gamma, eps=1e-6: _layer_norm_ref(x, gamma, 0.0, eps),
        ),
        (
            "divided by the norm ‖x‖ instead of the root mean square √(mean x²): off by √d",
            lambda x, gamma, eps=1e-6: x / torch.sqrt((x * x).sum(-1, keepdim=True) + eps) * gamma,
        ),
        (
            "the eps argument was ignored: use the eps the function is given, not a fixed 1e-6",
            lambda x, gamma, eps=1e-6: _rms_norm_ref(x, gamma, 1e-6) if eps != 1e-6 else None,
        ),
        (
            "no eps: divide by √(mean(x²) + ε); ε matters for the value and keeps a zero row at 0",
            lambda x, gamma, eps=1e-6: _rms_norm_ref(x, gamma, 0.0),
        ),
        (
            "eps was added outside the square root; it belongs inside: √(mean(x²) + ε)",
            lambda x, gamma, eps=1e-6: x / ((x * x).mean(-1, keepdim=True).sqrt() + eps) * gamma,
        ),
        (
            "divided by mean(x²) without the square root",
            lambda x, gamma, eps=1e-6: x / ((x * x).mean(-1, keepdim=True) + eps) * gamma,
        ),
        (
            "the mean of squares was taken over the wrong axis: use the last dimension "
            "(each token's features)",
            lambda x, gamma, eps=1e-6: (
                x / torch.sqrt((x * x).mean(0, keepdim=True) + eps) * gamma
                if x.dim() > 1 and x.shape[0] > 1
                else None
            ),
        ),
        (
            "γ is missing: y = x / √(mean(x²) + ε) · γ",
            lambda x, gamma, eps=1e-6: _rms_norm_ref(x, 1.0, eps),
        ),
        (
            "a reduction without keepdim=True broadcast along the wrong axis: "
            "use (x * x).mean(dim=-1, keepdim=True)",
            lambda x, gamma, eps=1e-6: (
                x / torch.sqrt((x * x).mean(-1) + eps) * gamma
                if x.dim() == 2 and x.shape[0] == x.shape[1]
                else None
            ),
        ),
    ]
    return cases, diagnoses


check_rms_norm = Exercise(
    _rms_norm_ref,
    _rms_norm_cases,
    reimplements=("layer_norm", "rms_norm", "batch_norm"),
)


# ------------------------------------------------------------------------- BatchNorm, training


def _batch_dims(x):
    return (0, 2) if x.dim() == 3 else (0,)


def _batch_shape(x):
    return (1, -1, 1) if x.dim() == 3 else (1, -1)


def _batch_norm_ref(x, gamma, beta, eps=1e-5):
    """Training-mode BatchNorm: statistics per channel c over the batch (N, and L)   (Eq. 5.3.8)."""
    dims, shape = _batch_dims(x), _batch_shape(x)
    mu = x.mean(dim=dims, keepdim=True)  # (1, C[, 1])
    var = ((x - mu) ** 2).mean(dim=dims, keepdim=True)  # (1, C[, 1]) biased: 1/(N·L)
    return (x - mu) / torch.sqrt(var + eps) * gamma.view(shape) + beta.view(shape)


def _two_samples(g, c):
    """(2, c): per channel a centre and two samples 1 to about 3 apart around it."""
    centre, gap = randn(g, 1, c), 1 + randn(g, 1, c).abs()
    return torch.cat([centre - gap / 2, centre + gap / 2])


def _batch_norm_train_cases(g):
    """fn(x (N, C) or (N, C, L), gamma (C,), beta (C,), eps=1e-5) -> BatchNorm output in
    training mode.
    """

    def affine(c, dtype=torch.float32):
        return 1 + randn(g, c, dtype=dtype, scale=0.5), randn(g, c, dtype=dtype, scale=0.5)

    offsets = torch.tensor([[-3.0, 0.0, 5.0]])  # (1, C) every channel its own mean
    cases = [
        Case(
            "a (8, 3) batch, channels with different means",
            (randn(g, 8, 3) * 2 + offsets, *affine(3)),
        ),
        Case(  # a mistake about eps shows here, far above round-off
            "float64 inputs",
            (randn(g, 6, 5, dtype=torch.float64, scale=3.0), *affine(5, torch.float64)),
        ),
        Case(
            "a (4, 4) batch (as many samples as channels)", (randn(g, 4, 4, scale=2.0), *affine(4))
        ),
        Case(  # L = C: a (C,) tensor against the wrong axis broadcasts, so the mistake is named
            "a (3, 4, 4) batch of sequences (N, C, L) with L = C",
            (randn(g, 3, 4, 4, scale=2.0) + torch.arange(4.0).view(1, 4, 1), *affine(4)),
        ),
        Case(
            "a (4, 3, 5) batch of sequences (N, C, L)", (randn(g, 4, 3, 5, shift=1.0), *affine(3))
        ),
        Case(  # the two samples at least 1 apart: nearly equal ones make a tiny variance,
            # which E[x²] − μ² (a correct formula) computes with few digits left; precision is
            # not this exercise's lesson, biased against unbiased is
            "two samples (N = 2)",
            (_two_samples(g, 3), *affine(3)),
        ),
        Case("eps = 0.5 given explicitly", (randn(g, 5, 2, scale=0.5), *affine(2)), {"eps": 0.5}),
        Case(
            "(2, 2, 6): statistics over N and L together",
            (randn(g, 2, 2, 6, scale=2.0), *affine(2)),
        ),
    ]

    def per_position(x, gamma, beta, eps=1e-5):  # statistics over N only, per (c, l)
        if x.dim() != 3:
            return None
        mu = x.mean(0, keepdim=True)
        var = ((x - mu) ** 2).mean(0, keepdim=True)
        return (x - mu) / torch.sqrt(var + eps) * gamma.view(1, -1, 1) + beta.view(1, -1, 1)

    def per_sample(x, gamma, beta, eps=1e-5):  # statistics over the channels of each sample
        mu = x.mean(1, keepdim=True)
        var = ((x - mu) ** 2).mean(1, keepdim=True)
        return (x - mu) / torch.sqrt(var + eps) * gamma.view(_batch_shape(x)) + beta.view(
            _batch_shape(x)
        )

    def unbiased(x, gamma, beta, eps=1e-5):
        n = x.numel() // x.shape[1]
        dims = _batch_dims(x)
        mu = x.mean(dim=dims, keepdim=True)
        var = ((x - mu) ** 2).sum(dim=dims, keepdim=True) / (n - 1)
        return (x - mu) / torch.sqrt(var + eps) * gamma.view(_batch_shape(x)) + beta.view(
            _batch_shape(x)
        )

    def along_last_axis(statistics, parameters, centred_by_misplaced_mean=False):
        """The (C,) statistics and/or parameters used without reshaping: against an (N, C, L)
        input with L = C they line up with L, not C (with L ≠ C they do not broadcast at all)."""

        def wrong(x, gamma, beta, eps=1e-5):
            if x.dim() != 3 or x.shape[1] != x.shape[2]:
                return None
            mu = x.mean(dim=(0, 2), keepdim=True)  # (1, C, 1)
            var = ((x - mu) ** 2).mean(dim=(0, 2), keepdim=True)  # (1, C, 1)
            if statistics:
                mu = mu.view(-1)  # (C,), against L
                var = ((x - mu) ** 2).mean((0, 2)) if centred_by_misplaced_mean else var.view(-1)
            shape = (-1,) if parameters else (1, -1, 1)
            return (x - mu) / torch.sqrt(var + eps) * gamma.view(shape) + beta.view(shape)

        return wrong

    keepdim_missing = (
        "the mean and variance of shape (C,) (a reduction without keepdim=True) line up with "
        "the last axis (L) of an (N, C, L) input, not the channels: reduce with keepdim=True, "
        "so they have shape (1, C, 1)"
    )

    def with_eps(wrong_eps, outside=False):
        def wrong(x, gamma, beta, eps=1e-5):
            if wrong_eps(eps) == eps and not outside:
                return None
            dims, shape = _batch_dims(x), _batch_shape(x)
            mu = x.mean(dim=dims, keepdim=True)
            var = ((x - mu) ** 2).mean(dim=dims, keepdim=True)
            std = var.sqrt() + wrong_eps(eps) if outside else torch.sqrt(var + wrong_eps(eps))
            return (x - mu) / std * gamma.view(shape) + beta.view(shape)

        return wrong

    diagnoses = [
        (
            "γ and β of shape (C,) were not reshaped: against an (N, C, L) input they line up "
            "with the last axis (L), not the channels; reshape them to (1, C, 1), e.g. "
            "gamma.view(1, -1, 1)",
            along_last_axis(statistics=False, parameters=True),
        ),
        *[
            (keepdim_missing, along_last_axis(True, parameters, centred))
            for parameters in (True, False)
            for centred in (False, True)
        ],
        (
            "the eps argument was ignored: use the eps the function is given, not a fixed 1e-5",
            with_eps(lambda eps: 1e-5),
        ),
        ("no eps: divide by √(σ² + ε)", with_eps(lambda eps: 0.0)),
        (
            "eps was added to the standard deviation; it belongs inside the square root: √(σ² + ε)",
            with_eps(lambda eps: eps, outside=True),
        ),
        (
            "statistics per sample over its channels: that is LayerNorm; BatchNorm takes, "
            "for every channel, the mean and variance over the batch (Eq. 5.3.8)",
            per_sample,
        ),
        (
            "for (N, C, L) inputs the statistics are over N and L together (every position of "
            "every sequence), not over N for each position separately",
            per_position,
        ),
        (
            "used the unbiased variance (1/(n − 1)): in training BatchNorm normalises with the "
            "biased batch variance, 1/n (the unbiased one only goes into the running estimate)",
            unbiased,
        ),
        (
            "γ and β are missing: y = γ_c · x̂ + β_c",
            lambda x, gamma, beta, eps=1e-5: _batch_norm_ref(
                x, torch.ones_like(gamma), torch.zeros_like(beta), eps
            ),
        ),
    ]
    return cases, diagnoses


check_batch_norm_train = Exercise(
    _batch_norm_ref,
    _batch_norm_train_cases,
    reimplements=("layer_norm", "rms_norm", "batch_norm"),
)


# ------------------------------------------------------------------------------------- highway


def _highway_ref(x, W_H, b_H, W_T, b_T):
    """y = H · T + x · (1 − T), H = ReLU(x W_H + b_H), T = sigmoid(x W_T + b_T)   (Eq. 5.3.4)."""
    H = _relu(x @ W_H + b_H)  # (..., d)
    T = _sigmoid(x @ W_T + b_T)  # (..., d)
    return H * T + x * (1 - T)


def _highway_cases(g, batch=True):
    def params(d, dtype=torch.float32, gate=0.0):
        return (
            randn(g, d, d, dtype=dtype, scale=1 / math.sqrt(d)),
            randn(g, d, dtype=dtype, scale=0.5),
            randn(g, d, d, dtype=dtype, scale=1 / math.sqrt(d)),
            randn(g, d, dtype=dtype, scale=0.5, shift=gate),
        )

    def x(*shape, dtype=torch.float32):
        return randn(g, *shape, dtype=dtype) if batch else randn(g, *shape[1:], dtype=dtype)

    return [
        Case("d = 4, a batch of 3" if batch else "d = 4", (x(3, 4), *params(4))),
        Case(
            "d = 6, float64" if batch else "d = 6, float64",
            (x(2, 6, dtype=torch.float64), *params(6, torch.float64)),
        ),
        Case("d = 5, gate bias near -2 (mostly carry)", (x(4, 5), *params(5, gate=-2.0))),
        Case("d = 3, gate bias near +2 (mostly transform)", (x(2, 3), *params(3, gate=2.0))),
        Case("d = 1", (x(3, 1), *params(1))),
    ]


def _highway_layer_cases(g):
    """fn(x (B, d), W_H (d, d), b_H (d,), W_T (d, d), b_T (d,)) -> y (B, d), a highway layer
    (Eq. 5.3.4).
    """
    cases = _highway_cases(g)
    cases.append(
        Case(
            "gate bias -30: T = 0, the layer must copy its input",
            (
                randn(g, 2, 4),
                randn(g, 4, 4),
                torch.zeros(4),
                randn(g, 4, 4) * 0.1,
                torch.full((4,), -30.0),
            ),
            hint="with T = 0 the carry gate C = 1 − T = 1 passes x through unchanged: y = x",
        )
    )
    diagnoses = [
        (
            "the gates are swapped: T multiplies the transform H and C = 1 − T the input x "
            "(Eq. 5.3.4)",
            lambda x, W_H, b_H, W_T, b_T: (
                x * _sigmoid(x @ W_T + b_T) + _relu(x @ W_H + b_H) * (1 - _sigmoid(x @ W_T + b_T))
            ),
        ),
        (
            "H has no ReLU: H = ReLU(x W_H + b_H)",
            lambda x, W_H, b_H, W_T, b_T: (
                (x @ W_H + b_H) * _sigmoid(x @ W_T + b_T) + x * (1 - _sigmoid(x @ W_T + b_T))
            ),
        ),
        (
            "the weights are transposed: this layer computes x @ W (W is (d_in, d_out)), "
            "not x @ W.T",
            lambda x, W_H, b_H, W_T, b_T: (
                _highway_ref(x, W_H.T, b_H, W_T.T, b_T) if x.shape[-1] > 1 else None
            ),
        ),
        (
            "no carry term: y = H · T + x · (1 − T); "
            "the second term lets x through where T is small",
            lambda x, W_H, b_H, W_T, b_T: _relu(x @ W_H + b_H) * _sigmoid(x @ W_T + b_T),
        ),
        (
            "that is a residual block, y = x + H: a highway layer weighs H and x by T and 1 − T",
            lambda x, W_H, b_H, W_T, b_T: x + _relu(x @ W_H + b_H),
        ),
        (
            "H uses tanh: this layer's transform is H = ReLU(x W_H + b_H) (Eq. 5.3.4)",
            lambda x, W_H, b_H, W_T, b_T: (
                torch.tanh(x @ W_H + b_H) * _sigmoid(x @ W_T + b_T)
                + x * (1 - _sigmoid(x @ W_T + b_T))
            ),
        ),
        (
            "T has no sigmoid: the gate is T = σ(x W_T + b_T), a number in (0, 1) per feature",
            lambda x, W_H, b_H, W_T, b_T: (
                _relu(x @ W_H + b_H) * (x @ W_T + b_T) + x * (1 - (x @ W_T + b_T))
            ),
        ),
        (
            "the biases are missing: H = ReLU(x W_H + b_H) and T = σ(x W_T + b_T)",
            lambda x, W_H, b_H, W_T, b_T: _highway_ref(x, W_H, 0.0, W_T, 0.0),
        ),
        (
            "b_T is missing: the gate is T = σ(x W_T + b_T), and b_T sets how much it carries",
            lambda x, W_H, b_H, W_T, b_T: _highway_ref(x, W_H, b_H, W_T, 0.0),
        ),
    ]
    return cases, diagnoses


check_highway = Exercise(
    _highway_ref,
    _highway_layer_cases,
    refuse=(Highway.forward, Highway.transform_gate),
)


# ------------------------------------------------------------------------- highway Jacobian


def _highway_jacobian_ref(x, W_H, b_H, W_T, b_T):
    """J[i, j] = ∂y_i/∂x_j
    = T_i 1[z_i > 0] W_H[j, i] + (1 − T_i) δ_ij + (H_i − x_i) T_i (1 − T_i) W_T[j, i].
    """
    z = x @ W_H + b_H  # (d,)
    H, T = _relu(z), _sigmoid(x @ W_T + b_T)  # (d,), (d,)
    dH = (z > 0).to(x.dtype)[:, None] * W_H.T  # (d, d) ∂H_i/∂x_j
    dT = (T * (1 - T))[:, None] * W_T.T  # (d, d) ∂T_i/∂x_j
    return T[:, None] * dH + torch.diag(1 - T) + (H - x)[:, None] * dT


def _highway_jacobian_printed(x, W_H, b_H, W_T, b_T):
    """Eq. (5.3.5) as printed: T · ∂H/∂x + (1 − T) · I, without the gate-derivative term."""
    z = x @ W_H + b_H
    T = _sigmoid(x @ W_T + b_T)
    return T[:, None] * (z > 0).to(x.dtype)[:, None] * W_H.T + torch.diag(1 - T)


def _highway_jacobian_without_relu_derivative(x, W_H, b_H, W_T, b_T):
    """The full Jacobian with ∂H/∂x = W_Hᵀ, as if H had no ReLU (a mistake, for the diagnosis)."""
    H, T = _relu(x @ W_H + b_H), _sigmoid(x @ W_T + b_T)
    return T[:, None] * W_H.T + torch.diag(1 - T) + ((H - x) * T * (1 - T))[:, None] * W_T.T


def _highway_jacobian_terms(
    x,
    W_H,
    b_H,
    W_T,
    b_T,
    transpose_H=True,
    transpose_T=True,
    gate_factor=lambda H, x: H - x,
    sigmoid_derivative=lambda T: T * (1 - T),
):
    """The full Jacobian with one part changed (the mistakes, for the diagnoses); None where the
    change makes no difference (d = 1)."""
    if x.shape[-1] == 1 and not (transpose_H and transpose_T):
        return None
    z = x @ W_H + b_H
    H, T = _relu(z), _sigmoid(x @ W_T + b_T)
    dH = (z > 0).to(x.dtype)[:, None] * (W_H.T if transpose_H else W_H)
    dT = sigmoid_derivative(T)[:, None] * (W_T.T if transpose_T else W_T)
    return T[:, None] * dH + torch.diag(1 - T) + gate_factor(H, x)[:, None] * dT


def _highway_jacobian_cases(g):
    """fn(x (d,), W_H, b_H, W_T, b_T) -> J (d, d), J[i, j] = ∂y_i/∂x_j of a highway layer, by hand.

    The full Jacobian has three terms: T · ∂H/∂x + (1 − T) · I + (H − x) · ∂T/∂x; the source's
    Eq. (5.3.5) prints only the first two.
    """
    cases = _highway_cases(g, batch=False)
    d = 4
    cases.append(
        Case(
            "gate bias -30 (T = 0): J = I",
            (randn(g, d), randn(g, d, d), torch.zeros(d), randn(g, d, d), torch.full((d,), -30.0)),
        )
    )

    def gate_term_missing_where_relu_is_off(x, W_H, b_H, W_T, b_T):
        """Where every H_i = 0, a missing gate term and one without −x give the same J."""
        if bool((x @ W_H + b_H > 0).any()):
            return None
        return _highway_jacobian_printed(x, W_H, b_H, W_T, b_T)

    diagnoses = [
        (
            "the gate-derivative term is missing or lacks −x: on this input every H_i = 0 (ReLU "
            "off), so the term is −x_i T_i (1 − T_i) W_T[j, i]; in general it is "
            "(H_i − x_i) T_i (1 − T_i) W_T[j, i], since ∂/∂T [T H + (1 − T) x] = H − x "
            "(the carry term depends on T too)",
            gate_term_missing_where_relu_is_off,
        ),
        (
            "the gate-derivative term (H − x) · ∂T/∂x is missing: that is Eq. (5.3.5) as printed, "
            "which treats T as a constant; T depends on x through sigmoid(x W_T + b_T), "
            "so add (H_i − x_i) T_i (1 − T_i) W_T[j, i]",
            _highway_jacobian_printed,
        ),
        (
            "the Jacobian is transposed: row i is output y_i, column j input x_j "
            "(J[i, j] = ∂y_i/∂x_j)",
            lambda *a: _highway_jacobian_ref(*a).T if a[0].shape[-1] > 1 else None,
        ),
        (
            "ReLU's derivative is missing: ∂H_i/∂x_j = 1[z_i > 0] W_H[j, i] with z = x W_H + b_H",
            _highway_jacobian_without_relu_derivative,
        ),
        (
            "the carry term's derivative (1 − T) · I is missing",
            lambda *a: _highway_jacobian_ref(*a) - torch.diag(1 - _sigmoid(a[0] @ a[3] + a[4])),
        ),
        *[
            (
                "W where Wᵀ belongs: z_i = Σ_j x_j W[j, i], so ∂z_i/∂x_j = W[j, i] "
                "(row i of J uses column i of W, i.e. row i of Wᵀ)",
                functools.partial(_highway_jacobian_terms, transpose_H=h, transpose_T=t),
            )
            for h, t in ((False, False), (False, True), (True, False))
        ],
        (
            "the gate term's sign is flipped: ∂/∂T [T H + (1 − T) x] = H − x, not x − H",
            functools.partial(_highway_jacobian_terms, gate_factor=lambda H, x: x - H),
        ),
        (
            "the gate term lacks −x: ∂/∂T [T H + (1 − T) x] = H − x (the carry term depends on T "
            "too)",
            functools.partial(_highway_jacobian_terms, gate_factor=lambda H, x: H),
        ),
        (
            "the sigmoid's derivative is σ'(u) = T (1 − T), not T",
            functools.partial(_highway_jacobian_terms, sigmoid_derivative=lambda T: T),
        ),
    ]
    return cases, diagnoses


check_highway_jacobian = Exercise(
    _highway_jacobian_ref,
    _highway_jacobian_cases,
    reimplements=("autograd",),
    refuse=(Highway.forward, Highway.transform_gate),
)


__all__ = [
    "check_batch_norm_train",
    "check_highway",
    "check_highway_jacobian",
    "check_layer_norm",
    "check_residual_gradient",
    "check_rms_norm",
]
