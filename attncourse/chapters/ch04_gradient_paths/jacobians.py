"""Jacobians vs distance in recurrent networks and in attention (source 001 Eq. 5.4.2, source 000
Thm. 14.3.12).

``input_jacobian`` gives the full Jacobian ∂y/∂x of a sequence model's output with respect to
every input position in one backward pass; ``distance_profile`` turns it into
g(k) = ‖∂y_T/∂x_{T-k}‖_F; ``rnn_gradient_norms`` and ``attention_gradient_norms`` build the
chapter's RNN (W_hh = ρ · orthogonal) and attention layer. ``spectral_radius``,
``largest_singular_value``, ``power_norms`` and ``shifted_identity`` (a non-normal example) compare
the two meanings of the source's "λ_max". ``gaussian_rnn_information`` gives I(x_{T-k}; h_T),
exact for a linear RNN.

Distances are counted backwards from the last position: distance k means input position T-1-k of
a length-T sequence (0-based), so k = 0 is the newest input.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from ...attention import MultiHeadAttention
from ...rnn import VanillaRNN
from ...threads import single_thread

# ------------------------------------------------------------------------------ matrices


def scaled_orthogonal(
    d: int, rho: float, generator: torch.Generator | None = None, dtype=torch.float64
) -> torch.Tensor:
    """rho * Q with Q a random (Haar) orthogonal d x d matrix: every eigenvalue and every singular
    value has modulus rho, so spectral radius = largest singular value = rho. Returns (d, d)."""
    a = torch.randn(d, d, generator=generator, dtype=torch.float64)  # (d, d)
    q, r = torch.linalg.qr(a)  # (d, d), (d, d)
    q = q * torch.sign(torch.diagonal(r))  # sign fix: Haar-distributed
    return (rho * q).to(dtype)  # (d, d)


def spectral_radius(W: torch.Tensor) -> float:
    """max |eigenvalue| of a square matrix: the long-run growth rate.

    ||W^k||^(1/k) -> rho(W) as k grows (Gelfand's formula).
    """
    return float(torch.linalg.eigvals(W.detach().double()).abs().max())


def largest_singular_value(W: torch.Tensor) -> float:
    """sigma_max(W) = ||W||_2: the most W can stretch a vector in one step.

    ||W^k||_2 <= sigma_max^k.
    """
    return float(torch.linalg.matrix_norm(W.detach().double(), ord=2))


def shifted_identity(d: int, rho: float, coupling: float, dtype=torch.float64) -> torch.Tensor:
    """rho * I + coupling * N, N the shift (ones just above the diagonal): a non-normal matrix whose
    only eigenvalue is rho, but whose largest singular value is about rho + coupling. (d, d)."""
    return rho * torch.eye(d, dtype=dtype) + coupling * torch.diag(
        torch.ones(d - 1, dtype=dtype), 1
    )


def power_norms(W: torch.Tensor, powers: Sequence[int]) -> list[float]:
    """||W^k||_2 for each k in ``powers`` (float64)."""
    W = W.detach().double()
    return [float(torch.linalg.matrix_norm(torch.linalg.matrix_power(W, k), ord=2)) for k in powers]


# ------------------------------------------------------------------------------ Jacobians


def input_jacobian(fn: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor) -> torch.Tensor:
    """Full Jacobian of fn at one input sequence, in a single backward pass.

    fn maps a batch (B, T, d_in) to outputs (B, d_out) row by row (no mixing across the batch).
    x: (T, d_in). Returns J (d_out, T, d_in) with J[a, t, i] = d fn(x)[a] / d x[t, i], the same
    as ``torch.autograd.functional.jacobian(lambda x: fn(x[None])[0], x)``: the input is repeated
    d_out times and copy a back-propagates the a-th output coordinate only.
    """
    x = x.detach()
    with torch.no_grad():
        d_out = fn(x[None]).shape[-1]
    xb = x.expand(d_out, *x.shape).clone().requires_grad_(True)  # (d_out, T, d_in)
    y = fn(xb)  # (d_out, d_out): row a is fn of copy a
    (grad,) = torch.autograd.grad(y.diagonal().sum(), xb)  # (d_out, T, d_in): row a = d y_a / d x
    return grad


def distance_profile(jacobian: torch.Tensor) -> torch.Tensor:
    """g(k) = ||d y / d x_{T-1-k}||_F for k = 0 .. T-1 from a Jacobian (d_out, T, d_in): (T,)."""
    return jacobian.pow(2).sum(dim=(0, 2)).sqrt().flip(0)  # (T,) index = distance k


def chapter_rnn(
    rho: float, nonlinearity: str = "tanh", d: int = 64, seed: int = 0, dtype=torch.float64
) -> VanillaRNN:
    """The chapter's RNN: VanillaRNN(d, d) without bias, W_hh = rho * orthogonal, W_xh = I."""
    g = torch.Generator().manual_seed(seed)
    rnn = VanillaRNN(d, d, nonlinearity=nonlinearity, bias=False).to(dtype)
    with torch.no_grad():
        rnn.weight_hh.copy_(scaled_orthogonal(d, rho, g, dtype))
        rnn.weight_ih.copy_(torch.eye(d, dtype=dtype))
    return rnn


def chapter_inputs(
    T: int, d: int, seed: int = 0, scale: float = 1.0, dtype=torch.float64
) -> torch.Tensor:
    """scale * N(0, I) inputs (T, d) from their own generator.

    Seeded with seed + 1000, so they are independent of the weights drawn from ``seed``.
    """
    g = torch.Generator().manual_seed(seed + 1000)
    return torch.randn(T, d, generator=g, dtype=torch.float64).mul(scale).to(dtype)  # (T, d)


@single_thread()
def rnn_gradient_norms(
    rho: float,
    nonlinearity: str = "tanh",
    T: int = 100,
    d: int = 64,
    seed: int = 0,
    input_scale: float = 0.3,
) -> torch.Tensor:
    """g(k) = ||d h_T / d x_{T-k}||_F, k = 0..T-1, for ``chapter_rnn`` on ``chapter_inputs``: (T,).

    Computed in float64. Linear RNN: d h_T / d x_{T-k} = W_hh^k W_xh, so g(k) = rho^k sqrt(d)
    exactly (Eq. 5.4.2).
    """
    rnn = chapter_rnn(rho, nonlinearity, d, seed)
    x = chapter_inputs(T, d, seed, input_scale)
    return distance_profile(input_jacobian(lambda xb: rnn(xb)[:, -1], x))  # (T,)


def chapter_attention(
    d: int = 64, seed: int = 0, num_heads: int = 1, dtype=torch.float64
) -> MultiHeadAttention:
    """One self-attention layer (``MultiHeadAttention``, default initialisation) seeded without
    touching the global random stream."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return MultiHeadAttention(d, num_heads).to(dtype)


@single_thread()
def attention_gradient_norms(
    T: int = 100, d: int = 64, seed: int = 0, causal: bool = True
) -> torch.Tensor:
    """g(k) = ||d o_T / d x_{T-k}||_F for the last query of ``chapter_attention`` on N(0, I)
    inputs: (T,)."""
    mha = chapter_attention(d, seed)
    x = chapter_inputs(T, d, seed, 1.0)
    if causal:  # the last query alone: the output of causal self-attention at T-1, cheaper
        return distance_profile(input_jacobian(lambda xb: mha(xb[:, -1:], xb, xb)[0][:, 0], x))
    return distance_profile(input_jacobian(lambda xb: mha(xb)[0][:, -1], x))  # (T,)


def log_slope(g: torch.Tensor, start: int = 1) -> float:
    """Least-squares slope of ln g(k) vs k over k >= start (per step; ln rho for a linear RNN)."""
    k = torch.arange(start, g.shape[-1], dtype=torch.float64)  # (K,)
    y = g[..., start:].double().log()  # (..., K)
    if y.dim() > 1:
        y = y.mean(dim=tuple(range(y.dim() - 1)))  # average ln g over seeds
    kc = k - k.mean()
    return float((kc * (y - y.mean())).sum() / (kc * kc).sum())


# ------------------------------------------------------------------------------ information


def gaussian_rnn_information(
    W_hh: torch.Tensor, W_xh: torch.Tensor, T: int, distances: Sequence[int]
) -> list[float]:
    """I(h_T; x_{T-k}) in nats, exactly, for a linear RNN h_t = W_hh h_{t-1} + W_xh x_t, h_0 = 0,
    with i.i.d. N(0, I) inputs: h_T = sum_m A_m x_{T-m}, A_m = W_hh^m W_xh, so with
    S = sum_m A_m A_m^T, I = (log det S - log det(S - A_k A_k^T)) / 2."""
    W_hh, W_xh = W_hh.detach().double(), W_xh.detach().double()
    A = [W_xh]
    for _ in range(T - 1):
        A.append(W_hh @ A[-1])  # (d, d_in) A_m = W_hh^m W_xh
    S = sum(a @ a.T for a in A)  # (d, d)
    logdet = torch.linalg.slogdet(S)[1]
    return [float(0.5 * (logdet - torch.linalg.slogdet(S - A[k] @ A[k].T)[1])) for k in distances]
