"""Position information for attention, which by itself ignores token order.

Absolute sinusoidal encodings (Vaswani et al. 2017; source 000 Lemma 14.3.21) and the fixed
rotation that shifts them (``sinusoidal_shift_matrix``), learned absolute position embeddings
(``LearnedPositionalEmbedding``; Gehring et al. 2017, BERT, GPT-2), rotary embeddings (RoPE, Su et
al. 2021, RoFormer) and ALiBi's linear distance biases (Press et al. 2022).
"""

import math

import torch
from torch import nn

from ._validation import require_float, require_ndim, require_positive, require_size


def _require_even(name: str, value: int) -> None:
    require_positive(name, value)
    if value % 2:
        raise ValueError(
            f"{name} must be even (features are used in (sin, cos) pairs), got {value}"
        )


def _inverse_frequencies(dim: int, base: float) -> torch.Tensor:
    """theta_i = base^(-2i/dim), i = 0 .. dim/2 - 1: from one turn per 2*pi positions down to
    ~1/base."""
    two_i = torch.arange(0, dim, 2, dtype=torch.float64)  # (dim/2,)
    return base ** (-two_i / dim)  # (dim/2,)


def sinusoidal_encoding(
    num_positions: int, dim: int, base: float = 10000.0, *, dtype=None, device=None
) -> torch.Tensor:
    """PE[pos, 2i] = sin(pos / base^(2i/dim)),  PE[pos, 2i+1] = cos(pos / base^(2i/dim))
    (source 000 Lemma 14.3.21).

    Returns (num_positions, dim), added to the token embeddings (Vaswani et al. 2017). Each
    (sin, cos) pair turns at its own frequency, so PE[pos + k] is a fixed rotation of PE[pos]
    that depends on k alone: relative offsets are a linear map of the encoding.
    Computed in float64, then cast to ``dtype`` (default: torch's default dtype).
    """
    require_positive("num_positions", num_positions)
    _require_even("dim", dim)
    require_positive("base", base)
    pos = torch.arange(num_positions, dtype=torch.float64).unsqueeze(1)  # (P, 1)
    angles = pos * _inverse_frequencies(dim, base)  # (P, dim/2)
    pe = torch.empty(num_positions, dim, dtype=torch.float64)  # (P, dim)
    pe[:, 0::2] = torch.sin(angles)  # (P, dim/2) even features
    pe[:, 1::2] = torch.cos(angles)  # (P, dim/2) odd features
    return pe.to(dtype=dtype or torch.get_default_dtype(), device=device)


def sinusoidal_shift_matrix(
    offset: int, dim: int, base: float = 10000.0, *, dtype=None, device=None
) -> torch.Tensor:
    """R_k with PE[pos + k] = R_k PE[pos] for every pos (source 000 Lemma 14.3.21): (dim, dim).

    Block diagonal; on the feature pair (sin, cos) of frequency theta_i = base^(-2i/dim),

        [sin (p+k) theta]   [ cos k theta   sin k theta] [sin p theta]
        [cos (p+k) theta] = [-sin k theta   cos k theta] [cos p theta]

    (the angle-sum formulas). R_k depends on the offset k alone, R_j R_k = R_(j+k), R_-k = R_k^T:
    a rotation by -k theta_i in each plane. ``offset`` may be any integer, negative included.
    Computed in float64, then cast to ``dtype`` (default: torch's default dtype).
    """
    if isinstance(offset, bool) or not isinstance(offset, int):
        raise ValueError(f"offset must be an int, got {offset!r}")
    _require_even("dim", dim)
    require_positive("base", base)
    angles = offset * _inverse_frequencies(dim, base)  # (dim/2,)
    cos, sin = torch.cos(angles), torch.sin(angles)  # (dim/2,), (dim/2,)
    blocks = torch.stack((torch.stack((cos, sin), -1), torch.stack((-sin, cos), -1)), -2)
    R = torch.block_diag(*blocks)  # (dim, dim) from dim/2 blocks (2, 2)
    return R.to(dtype=dtype or torch.get_default_dtype(), device=device)


class LearnedPositionalEmbedding(nn.Module):
    """Learned absolute positions: y = x + E[pos], one trained vector per position (Gehring et al.
    2017; BERT; GPT-2). ``E`` is a (num_positions, dim) parameter, initialised N(0, init_std^2).

    ``forward(x (..., T, dim), positions=None)``; positions is a (T,) integer tensor, default
    0 .. T-1. A table has no row for a position >= num_positions, so it cannot be used on
    sequences longer than those it was made for: that raises, it does not wrap around.
    """

    def __init__(self, num_positions: int, dim: int, init_std: float = 0.02):
        super().__init__()
        require_positive("num_positions", num_positions)
        require_positive("dim", dim)
        require_positive("init_std", init_std)
        self.num_positions, self.dim = num_positions, dim
        self.weight = nn.Parameter(torch.randn(num_positions, dim) * init_std)  # (P, dim)

    def forward(self, x: torch.Tensor, positions: torch.Tensor | None = None) -> torch.Tensor:
        require_float("x", x)
        require_ndim("x", x, (2, None), "(..., T, dim)")
        require_size("x", x, -1, self.dim, "feature size")
        T = x.shape[-2]
        if positions is None:
            if self.num_positions < T:
                raise ValueError(
                    f"x has length {T}, but the table has only {self.num_positions} positions: "
                    "learned absolute positions cannot extrapolate to longer sequences"
                )
            positions = torch.arange(T, device=x.device)  # (T,)
        else:
            _check_positions(positions, T)
            if positions.numel() and (
                int(positions.min()) < 0 or int(positions.max()) >= self.num_positions
            ):
                raise ValueError(
                    f"positions must lie in [0, {self.num_positions - 1}], got "
                    f"{int(positions.min())} .. {int(positions.max())}"
                )
        return x + self.weight[positions].to(x.dtype)  # (..., T, dim)

    def extra_repr(self) -> str:
        return f"num_positions={self.num_positions}, dim={self.dim}"


def _check_positions(positions, T: int) -> None:
    if (
        not isinstance(positions, torch.Tensor)
        or positions.is_floating_point()
        or positions.is_complex()
        or positions.dtype == torch.bool
    ):
        got = positions.dtype if isinstance(positions, torch.Tensor) else type(positions).__name__
        raise ValueError(f"positions must be an integer tensor (T,), got {got}")
    require_ndim("positions", positions, 1, "(T,)")
    require_size("positions", positions, 0, T, "length")


class RotaryEmbedding(nn.Module):
    """RoPE: rotate each feature pair (x_2i, x_2i+1) of the vector at position m by the angle
    m * theta_i, theta_i = base^(-2i/head_dim)   (Su et al. 2021, RoFormer, Sec. 3.2):

        [y_2i  ]   [cos m theta_i   -sin m theta_i] [x_2i  ]
        [y_2i+1] = [sin m theta_i    cos m theta_i] [x_2i+1]

    This is the paper's *interleaved* pairing (adjacent features); GPT-NeoX/LLaMA code pairs
    x_i with x_{i + d/2} instead ("rotate_half"), which is the same map up to a fixed
    permutation of the features. Applied to queries and keys, <R_m q, R_n k> = <q, R_{n-m} k>
    depends on the offset n - m alone. ``forward(x (..., T, head_dim), positions=None)``;
    positions is a (T,) integer tensor, default 0 .. T-1. Rotations preserve norms.
    """

    def __init__(self, head_dim: int, base: float = 10000.0):
        super().__init__()
        _require_even("head_dim", head_dim)
        require_positive("base", base)
        self.head_dim, self.base = head_dim, base

    def forward(self, x: torch.Tensor, positions: torch.Tensor | None = None) -> torch.Tensor:
        require_float("x", x)
        require_ndim("x", x, (2, None), "(..., T, head_dim)")
        require_size("x", x, -1, self.head_dim, "head_dim")
        T = x.shape[-2]
        if positions is None:
            positions = torch.arange(T, device=x.device)  # (T,)
        else:
            _check_positions(positions, T)
        # angles in float64 for float64 inputs, float32 otherwise: m * theta_i needs the precision
        angle_dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
        theta = _inverse_frequencies(self.head_dim, self.base).to(
            device=x.device, dtype=angle_dtype
        )  # (d/2,)
        angles = positions.to(angle_dtype).unsqueeze(-1) * theta  # (T, d/2)
        cos, sin = (
            torch.cos(angles).to(x.dtype),
            torch.sin(angles).to(x.dtype),
        )  # (T, d/2), (T, d/2)
        x_even, x_odd = x[..., 0::2], x[..., 1::2]  # (..., T, d/2), (..., T, d/2)
        y_even = x_even * cos - x_odd * sin  # (..., T, d/2)
        y_odd = x_even * sin + x_odd * cos  # (..., T, d/2)
        return torch.stack((y_even, y_odd), dim=-1).flatten(
            -2
        )  # (..., T, d) pairs interleaved again

    def extra_repr(self) -> str:
        return f"head_dim={self.head_dim}, base={self.base}"


def _power_of_two_slopes(n: int) -> list:
    return [2.0 ** (-8.0 * h / n) for h in range(1, n + 1)]


def alibi_slopes(num_heads: int, *, dtype=None, device=None) -> torch.Tensor:
    """ALiBi's head slopes m_h (Press et al. 2022): for H a power of two, m_h = 2^(-8h/H), h = 1..H.

    Otherwise, with n the largest power of two below H, the paper takes the n slopes for n
    heads followed by every other slope for 2n heads: slopes(2n)[0::2][:H - n]. Returns (H,).
    """
    require_positive("num_heads", num_heads)
    n = 2 ** int(math.floor(math.log2(num_heads)))
    slopes = _power_of_two_slopes(n)
    if n < num_heads:
        slopes += _power_of_two_slopes(2 * n)[0::2][: num_heads - n]
    return torch.tensor(slopes, dtype=dtype or torch.get_default_dtype(), device=device)  # (H,)


def alibi_bias(
    num_heads: int, T: int, S: int | None = None, *, dtype=None, device=None
) -> torch.Tensor:
    """bias[h, i, j] = -m_h * |i - j|, added to the attention scores (Press et al. 2022): (H, T, S).

    On the causal part j <= i this is the paper's -m_h (i - j); the |i - j| on j > i is a
    symmetric extension for bidirectional attention (with a causal mask those entries are
    dropped anyway). Positions start at 0 for queries and keys alike, as ``causal_mask``.
    Pass it as the float ``mask`` of ``scaled_dot_product_attention``.
    """
    S = T if S is None else S
    require_positive("T", T)
    require_positive("S", S)
    slopes = alibi_slopes(num_heads, dtype=dtype, device=device)  # (H,)
    i = torch.arange(T, device=device).unsqueeze(1)  # (T, 1) query positions
    j = torch.arange(S, device=device).unsqueeze(0)  # (1, S) key positions
    distance = (i - j).abs().to(slopes.dtype)  # (T, S)
    return -slopes.view(-1, 1, 1) * distance  # (H, T, S)
