"""The measurements of chapter 07 that need no training (source 000 §14.3.6).

* permutation equivariance of attention without positions (and what breaks it);
* the sinusoidal encoding's relative-position structure (Lemma 14.3.21): shift matrices, the dot
  product as a function of p − q, wavelengths, distances between encodings;
* RoPE's long-distance decay: Su et al. 2021's relative upper bound and the score it bounds;
* how much a position encoding tells about the position (Def. 14.3.15, Thm. 14.3.14): distinct
  rows at a given precision, a binary code, decoding under noise;
* the transfer efficiency η (Def. 14.3.14) of a "selection" read-out and its decay with distance
  for each encoding (Thm. 14.3.12).
"""

from __future__ import annotations

import math

import torch

from ..._validation import require_choice, require_positive_int
from ...attention import MultiHeadAttention, softmax
from ...positional import RotaryEmbedding, alibi_slopes, sinusoidal_encoding
from .models import PositionalSelfAttention

DT = torch.float64


# ------------------------------------------------------------------ permutation equivariance


def permutation_gap(layer_fn, x: torch.Tensor, perm: torch.Tensor) -> float:
    """max |f(P x) − P f(x)| for a sequence map f (B, T, d) → (B, T, d) and a permutation of
    the T positions: 0 (up to round-off) exactly when f commutes with this reordering."""
    return float((layer_fn(x[:, perm]) - layer_fn(x)[:, perm]).abs().max())


@torch.no_grad()
def permutation_gaps(T: int = 12, d: int = 16, num_heads: int = 4, seed: int = 0) -> dict:
    """The permutation gap of one attention layer (float64) with each way of giving it positions:
    "none" (bidirectional), "none, causal mask", "sinusoidal" (added to the input, so the tokens
    move while the positions stay), "learned" (a random table, likewise), "rope", "alibi"."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(1, T, d, generator=g, dtype=DT)  # (1, T, d) no gradients needed
    perm = torch.randperm(T, generator=g)  # (T,)
    torch.manual_seed(seed)
    mha = MultiHeadAttention(d, num_heads).double()
    pe = sinusoidal_encoding(T, d, dtype=DT)  # (T, d)
    table = torch.randn(T, d, generator=g, dtype=DT)  # (T, d)
    gaps = {
        "none": permutation_gap(lambda z: mha(z)[0], x, perm),
        "none, causal mask": permutation_gap(lambda z: mha(z, causal=True)[0], x, perm),
        "sinusoidal": permutation_gap(lambda z: mha(z + pe)[0], x, perm),
        "learned": permutation_gap(lambda z: mha(z + table)[0], x, perm),
    }
    for encoding in ("rope", "alibi"):
        torch.manual_seed(seed)
        layer = PositionalSelfAttention(d, num_heads, encoding).double()
        gaps[encoding] = permutation_gap(lambda z, f=layer: f(z, causal=False)[0], x, perm)
    return gaps


# ------------------------------------------------------------------------ sinusoidal structure


def inverse_frequencies(dim: int, base: float = 10000.0) -> torch.Tensor:
    """theta_i = base^(−2i/dim), i = 0 … dim/2 − 1 (radians per position): (dim/2,) float64."""
    return base ** (-torch.arange(0, dim, 2, dtype=DT) / dim)


def wavelengths(dim: int, base: float = 10000.0) -> torch.Tensor:
    """2π / theta_i: positions per full turn of each (sin, cos) pair, 2π … 2π base^((dim−2)/dim)."""
    return 2 * math.pi / inverse_frequencies(dim, base)


def dot_product_profile(offsets, dim: int, base: float = 10000.0) -> torch.Tensor:
    """PE(p) · PE(p + k) = Σ_i cos(k theta_i), the same for every p: (len(offsets),) float64."""
    k = torch.as_tensor(offsets, dtype=DT)
    return torch.cos(k[:, None] * inverse_frequencies(dim, base)).sum(-1)


def shift_distance_profile(offsets, dim: int, base: float = 10000.0) -> torch.Tensor:
    """‖PE(p + k) − PE(p)‖ = sqrt(Σ_i 4 sin²(k theta_i / 2)), the same for every p."""
    k = torch.as_tensor(offsets, dtype=DT)
    return (4 * torch.sin(k[:, None] * inverse_frequencies(dim, base) / 2) ** 2).sum(-1).sqrt()


# --------------------------------------------------------------------------------- RoPE decay


def rope_partial_sums(distances, dim: int, base: float = 10000.0) -> torch.Tensor:
    """S_j(r) = Σ_{k<j} e^{i r theta_k}, j = 1 … dim/2 (Su et al. 2021, §3.4.3): (N, dim/2)
    complex128."""
    r = torch.as_tensor(distances, dtype=DT)
    phases = torch.polar(
        torch.ones(len(r), dim // 2, dtype=DT), r[:, None] * inverse_frequencies(dim, base)
    )
    return phases.cumsum(dim=-1)  # (N, dim/2)


def rope_relative_bound(distances, dim: int, base: float = 10000.0) -> torch.Tensor:
    """Su et al.'s relative upper bound (1/(d/2)) Σ_{j=1}^{d/2} |S_j(r)|: by Abel summation,
    |q^T R_r k| ≤ max_i |h_{i+1} − h_i| · Σ_j |S_j(r)| with h_i the pair products. (N,) float64.
    """
    return rope_partial_sums(distances, dim, base).abs().mean(dim=-1)


def rope_pair_products(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """h_i = (q_2i + i q_2i+1)(k_2i − i k_2i+1), so that q^T R_r k = Re Σ_i h_i e^{−i r theta_i}
    for RoPE's interleaved pairs with R_r a rotation by r theta_i: (..., d/2) complex128."""
    qc = torch.complex(q[..., 0::2].to(DT), q[..., 1::2].to(DT))
    kc = torch.complex(k[..., 0::2].to(DT), k[..., 1::2].to(DT))
    return qc * kc.conj()


def rope_abel_bound(q: torch.Tensor, k: torch.Tensor, distances, base: float = 10000.0):
    """For each distance r: (|q^T R_r k| exactly, Su et al.'s bound max_i |h_{i+1} − h_i| ·
    Σ_j |S_j(r)| with h_{d/2} = 0), both (N,) float64. q, k: (d,)."""
    d = q.shape[-1]
    r = torch.as_tensor(distances)
    rotated = RotaryEmbedding(d, base)(k.to(DT).expand(len(r), d)[None], r.long())[0]  # (N, d)
    score = (rotated @ q.to(DT)).abs()  # (N,) |<q, R_r k>|
    h = torch.cat([rope_pair_products(q, k), torch.zeros(1, dtype=torch.complex128)])  # (d/2 + 1,)
    step = (h[1:] - h[:-1]).abs().max()
    bound = step * rope_partial_sums(r, d, base).abs().sum(dim=-1)  # (N,)
    return score, bound


# ---------------------------------------------------------------- information about positions


def entropy_bits_of_rows(table: torch.Tensor) -> float:
    """H(PE(pos)) in bits for pos uniform over the rows of ``table`` (P, d): equal rows merge.

    For a deterministic encoding this is I(PE; pos) (Def. 14.3.15); it is log2 P exactly when
    every row is different.
    """
    _, counts = torch.unique(table, dim=0, return_counts=True)
    p = counts.to(DT) / table.shape[0]
    return float(-(p * p.log2()).sum())


def sinusoidal_information(num_positions: int, dims, dtypes) -> dict:
    """{(dim, dtype): I(PE; pos) in bits} for the sinusoidal table stored in ``dtype``."""
    return {
        (dim, dtype): entropy_bits_of_rows(sinusoidal_encoding(num_positions, dim, dtype=dtype))
        for dim in dims
        for dtype in dtypes
    }


def binary_code(num_positions: int) -> torch.Tensor:
    """Each position as its ⌈log2 P⌉ binary digits in {−1, +1}: (P, ⌈log2 P⌉) float64."""
    bits = max(1, math.ceil(math.log2(num_positions)))
    p = torch.arange(num_positions)[:, None]
    return ((p >> torch.arange(bits)) & 1).to(DT) * 2 - 1  # (P, bits)


def decode_positions(table: torch.Tensor, codes: torch.Tensor) -> torch.Tensor:
    """Nearest row of ``table`` (P, d) for each code (N, d): the decoded positions (N,)."""
    return torch.cdist(codes, table).argmin(dim=-1)


def offsets_from_pairs(table: torch.Tensor, p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """p − q read back from the two encodings alone (decode each, subtract): (N,) long."""
    return decode_positions(table, table[p]) - decode_positions(table, table[q])


def noisy_decoding_accuracy(
    num_positions: int, dims, noise: float, samples: int = 2000, seed: int = 0
) -> dict:
    """{dim: share of positions recovered} from sinusoidal PE(pos) + N(0, noise²) per coordinate,
    by the nearest row of the table: how the dimension buys precision under noise."""
    out = {}
    for dim in dims:
        g = torch.Generator().manual_seed(seed)
        table = sinusoidal_encoding(num_positions, dim, dtype=DT)  # (P, d)
        pos = torch.randint(num_positions, (samples,), generator=g)  # (N,)
        codes = table[pos] + noise * torch.randn(samples, dim, generator=g, dtype=DT)  # (N, d)
        out[dim] = float((decode_positions(table, codes) == pos).double().mean())
    return out


# --------------------------------------------------------------- η and distance (Thm. 14.3.12)


def _excess(x: torch.Tensor) -> torch.Tensor:
    """(1 + x) ln(1 + x) − x ≥ 0 for x ≥ −1, without cancellation near x = 0 (a series there)."""
    small = x.abs() < 1e-2
    xs = torch.where(small, x, 0.0)
    series = sum((-1) ** n * xs**n / (n * (n - 1)) for n in range(2, 10))
    xl = torch.where(small, 0.5, x)
    direct = torch.where(xl > -1, (1 + xl) * torch.log1p(xl.clamp_min(-1 + 1e-300)), 0.0) - xl
    return torch.where(small, series, direct)


def selection_information_bits(alpha, vocab: int) -> torch.Tensor:
    """I(z; x_j) in bits when the read-out z copies x_j with probability alpha and otherwise a
    token independent of x_j, all tokens uniform over ``vocab``: log2 V − H(p), p the mixture
    alpha δ_{x_j} + (1 − alpha) U (Def. 14.3.14's η is this over H(z) = log2 V).

    Computed as KL(p ‖ U) term by term, so that tiny alpha (I ≈ (V − 1) alpha² / (2 ln 2)) keeps
    its relative precision instead of cancelling to 0.
    """
    a = torch.as_tensor(alpha, dtype=DT)
    kl_nats = (_excess(a * (vocab - 1)) + (vocab - 1) * _excess(-a)) / vocab
    return kl_nats / math.log(2)


def position_only_weights(
    encoding: str, length: int, dim: int = 64, head: int = 0, sharpness: float = 1.0
):
    """The last query's attention weights over keys at distance d = 0 … length−1 when every
    token has the same content, so that only positions differ: (length,) float64, index = d.

    "none": uniform. "sinusoidal": scores sharpness · PE(i)·PE(j)/sqrt(dim) (identity
    projections). "rope": q = k = u, every pair of u equal to (1, 0), rotated by RoPE: scores
    sharpness · (R_i u)·(R_j u)/sqrt(dim) — the same numbers, since both are
    Σ_i cos(d theta_i). "alibi": −m_h d with the slopes of 8 heads, ``head`` chooses m_h.
    """
    require_choice("encoding", encoding, ("none", "sinusoidal", "rope", "alibi"))
    require_positive_int("length", length)
    d = torch.arange(length, dtype=DT)  # distance of each key from the last query
    if encoding == "none":
        scores = torch.zeros(length, dtype=DT)
    elif encoding == "alibi":
        scores = -alibi_slopes(8, dtype=DT)[head] * d
    else:
        scores = sharpness * dot_product_profile(d, dim) / math.sqrt(dim)
    return softmax(scores, dim=-1)  # (length,)


def transfer_efficiency(weights: torch.Tensor, vocab: int = 16) -> torch.Tensor:
    """η = I(z; x_j) / H(z) (Eq. 14.3.36) for the selection read-out with these weights."""
    return selection_information_bits(weights, vocab) / math.log2(vocab)
