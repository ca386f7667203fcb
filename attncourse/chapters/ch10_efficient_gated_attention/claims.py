"""Claim checks of source 000 §14.3.7-14.3.8 and source 002 §7-8: the source's listings run as
printed, and the information-theoretic statements computed exactly on small discrete examples
(every input enumerated, so each mutual information is exact)."""

from __future__ import annotations

import itertools
import math

import torch
import torch.nn.functional as F

from ...attention import GatedAttention, softmax
from ...metrics import entropy, mutual_information
from . import listings

# ------------------------------------------------------------------ running the listings

IMPORTS_A_READER_ADDS = "import torch\nimport torch.nn as nn\n"
ALL_IMPORTS = IMPORTS_A_READER_ADDS + "import math\nimport torch.nn.functional as F\n"
PRINTED_GATE_LINE = "gate = gate.unsqueeze(2).unsqueeze(4)  # [B, H, 1, 1, 1]"
FIXED_GATE_LINE = "gate = gate.transpose(1, 2).unsqueeze(-1)  # [B, H, T, 1]"


def run_listing(listing: str, imports: str = "") -> dict:
    """Execute a listing (with ``imports`` put before it) in a fresh namespace; return it."""
    namespace: dict = {}
    exec(compile(imports + listing, "<source listing>", "exec"), namespace)  # noqa: S102
    return namespace


def source_gated_attention(imports: str = ALL_IMPORTS, fixed: bool = False):
    """App. 14.3.7's ``GatedAttention`` class as printed (``fixed``: with its one wrong line,
    the gate's reshape, replaced by ``FIXED_GATE_LINE``)."""
    listing = listings.GATED_ATTENTION_14_3_7
    if fixed:
        assert PRINTED_GATE_LINE in listing
        listing = listing.replace(PRINTED_GATE_LINE, FIXED_GATE_LINE)
    return run_listing(listing, imports)["GatedAttention"]


def try_call(fn) -> str:
    """'runs' or the exception's type and first line."""
    try:
        fn()
    except Exception as error:  # what the listing does is the point
        return f"{type(error).__name__}: {str(error).splitlines()[0]}"
    return "runs"


def survey_source_gated_attention(sizes=(1, 2, 3, 4), head_dim: int = 4, fixed: bool = False):
    """Run the listing's forward for every batch B, length T and head count H in ``sizes``:
    {(B, T, H): 'runs' or the error}."""
    cls = source_gated_attention(fixed=fixed)
    outcomes = {}
    for B, T, H in itertools.product(sizes, repeat=3):
        torch.manual_seed(0)
        module = cls(H * head_dim, H)
        x = torch.randn(B, T, H * head_dim)
        outcomes[B, T, H] = try_call(lambda m=module, x=x: m(x))
    return outcomes


def package_gated_from_source(module) -> GatedAttention:
    """The package's ``GatedAttention`` with the listing's weights. The listing concatenates
    [q_h; k_h; v_h] head by head; the package concatenates [q; k; v] whole, so the gate's first
    layer gets its input columns permuted."""
    d, H = module.d_model, module.num_heads
    hd = d // H
    ours = GatedAttention(d, H)
    perm = [
        (f % d) // hd * 3 * hd + (f // d) * hd + f % hd for f in range(3 * d)
    ]  # package column f = (part, head, channel) <- listing column (head, part, channel)
    with torch.no_grad():
        for mine, theirs in (
            (ours.q_proj, module.w_q),
            (ours.k_proj, module.w_k),
            (ours.v_proj, module.w_v),
            (ours.out_proj, module.w_o),
        ):
            mine.weight.copy_(theirs.weight)
            mine.bias.copy_(theirs.bias)
        ours.gate[0].weight.copy_(module.gate_network[0].weight[:, perm])
        ours.gate[0].bias.copy_(module.gate_network[0].bias)
        ours.gate[2].weight.copy_(module.gate_network[2].weight)
        ours.gate[2].bias.copy_(module.gate_network[2].bias)
    return ours


def printed_learnable_sparse(
    scores: torch.Tensor, iterations: int = 10, temperature: float = 1.0, p: float = 0.5, seed=0
):
    """App. 14.3.6 line by line, with PyTorch's ``F.gumbel_softmax`` for "gumbel_softmax" (it
    normalises over the last dimension, the keys): per iteration t = 1..T_iter, the temperature
    T (1 - t / T_iter), the mask's row sums, and whether anything became NaN. Returns
    (rows of (t, tau, row sums, NaN?), the returned mask ``mask > 0.5``)."""
    torch.manual_seed(seed)
    logits = torch.bernoulli(torch.full(scores.shape, p))  # M_learnable ~ Bernoulli(p)
    rows = []
    mask = None
    for t in range(1, iterations + 1):
        tau = temperature * (1 - t / iterations)
        mask = F.gumbel_softmax(logits, tau=tau)  # (n, n), each row sums to 1
        alpha = softmax(mask * scores)  # alpha_sparse = softmax(mask * S)
        nan = bool(torch.isnan(mask).any() or torch.isnan(alpha).any())
        rows.append((t, tau, mask.sum(dim=-1), nan))
    return rows, mask > 0.5


# ------------------------------------------------------------------ exact information


def all_bit_vectors(n: int) -> torch.Tensor:
    """(2^n, n) float64: every vector of n bits, each equally likely."""
    return torch.tensor(list(itertools.product((0.0, 1.0), repeat=n)), dtype=torch.float64)


def ids(rows: torch.Tensor, decimals: int = 9) -> torch.Tensor:
    """(N,) long: equal rows (after rounding) get equal ids."""
    rows = rows.reshape(rows.shape[0], -1)
    keys = [tuple(round(v, decimals) + 0.0 for v in row) for row in rows.tolist()]
    index: dict = {}
    return torch.tensor([index.setdefault(k, len(index)) for k in keys])


def joint_table(*columns: torch.Tensor) -> torch.Tensor:
    """The joint distribution of discrete variables given as id columns of N equally likely
    outcomes: a tensor with one dimension per variable."""
    sizes = [int(c.max()) + 1 for c in columns]
    table = torch.zeros(sizes, dtype=torch.float64)
    for row in zip(*(c.tolist() for c in columns)):
        table[row] += 1.0
    return table / table.sum()


def information(z: torch.Tensor, y: torch.Tensor | None = None) -> float:
    """Bits: H(Z) (= I(X; Z) for Z a function of a uniform X) when ``y`` is None, else I(Z; Y)."""
    if y is None:
        return entropy(joint_table(ids(z)))
    return mutual_information(joint_table(ids(z), ids(y)), 0, 1)


def attend(x: torch.Tensor, mask: torch.Tensor, scores: torch.Tensor | None = None):
    """One attention layer on scalar values: y_i = sum_j alpha_ij x_j with alpha = softmax over
    the keys the mask allows (uniform when ``scores`` is None). x (N, n) -> (N, n)."""
    n = mask.shape[-1]
    scores = torch.zeros(n, n, dtype=x.dtype) if scores is None else scores.to(x.dtype)
    weights = softmax(scores, mask=mask)  # (n, n)
    return x @ weights.T  # (N, n)


def mask_information_table(n: int = 3, scores: torch.Tensor | None = None):
    """Every mask of n queries x n keys that leaves each query at least one key: (mask, kept
    pairs, I(X; Y_M) in bits) for uniform bits X and Y_M = attention under M."""
    x = all_bit_vectors(n)
    rows = []
    for bits in itertools.product((False, True), repeat=n * n):
        mask = torch.tensor(bits).view(n, n)
        if not bool(mask.any(dim=-1).all()):
            continue
        rows.append((mask, int(mask.sum()), information(attend(x, mask, scores))))
    return rows


def best_masks(rows, penalty: float):
    """The masks minimising the source's objective I(X;Y_dense) - I(X;Y_M) (Eq. 14.3.45) plus
    ``penalty`` x kept pairs: (objective, kept pairs, information, mask) of the best, ties kept."""
    dense = max(r[1] for r in rows)
    dense_info = next(r[2] for r in rows if r[1] == dense)
    scored = [
        (round(dense_info - info + penalty * kept, 9), kept, info, m) for m, kept, info in rows
    ]
    best = min(s[0] for s in scored)
    return [s for s in scored if s[0] == best]


def gaussian_channel_information(levels: torch.Tensor, gain: float, noise: float = 1.0) -> float:
    """I(X; g A + N) in bits for A uniform on ``levels`` and N ~ N(0, noise²), by quadrature
    (4001 points over ±12 noise; the integrand is smooth, so the result is exact to 1e-8):
    h(Z) - h(N) with Z a mixture of Gaussians."""
    z = torch.linspace(
        -12 * noise + gain * float(levels.min()),
        12 * noise + gain * float(levels.max()),
        4_001,
        dtype=torch.float64,
    )
    density = torch.exp(-((z[:, None] - gain * levels[None, :]) ** 2) / (2 * noise**2)).mean(1)
    density = density / (noise * math.sqrt(2 * math.pi))  # (Z,) mixture density
    dz = float(z[1] - z[0])
    h_z = float(-(torch.where(density > 0, density * torch.log(density), 0.0)).sum() * dz)
    h_n = 0.5 * math.log(2 * math.pi * math.e * noise**2)
    return (h_z - h_n) / math.log(2)


def erasure_information(bits: float, gain: float) -> float:
    """I(X; Z) when Z = A with probability g and 'erased' otherwise: g I(A; X) exactly."""
    return gain * bits


# ------------------------------------------------------------------ source 002 §7


def permutation_equivariance_error(seed: int = 0, n: int = 6, d: int = 4) -> float:
    """max |attn(P x) - P attn(x)| for bidirectional self-attention without positions."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g, dtype=torch.float64)
    W = [torch.randn(d, d, generator=g, dtype=torch.float64) for _ in range(3)]
    perm = torch.randperm(n, generator=g)

    def layer(x):
        q, k, v = (x @ w for w in W)
        return softmax(q @ k.T / math.sqrt(d)) @ v

    return float((layer(x[perm]) - layer(x)[perm]).abs().max())


def causal_positions_from_counting(n: int = 6):
    """A causal layer that spreads evenly over the prefix, on BOS = 1 followed by n - 1 zeros
    (identical tokens, no position encoding): output i = 1 / (i + 1), a different number at
    each position, so position can be read off."""
    x = torch.zeros(n, 1, dtype=torch.float64)
    x[0] = 1.0
    mask = torch.ones(n, n, dtype=torch.bool).tril()
    return attend(x.T, mask)[0]  # (n,)
