"""Inductive biases, the residual stream and what one attention layer computes (source 001
§5.4.2-5.4.3, Eq. 5.4.6-5.4.10; source 000 Lemma 14.3.19, Eq. 14.3.37).

* ``permutation_gap`` / ``shift_gap``: how far a sequence map is from commuting with a
  permutation or a shift of its positions (attention without positions, a convolution);
* ``attention_stack``: an attention-only stack with Post-LN (Eq. 5.4.8) or Pre-LN, returning
  every X^(l) and every layer's attention output, to test the decomposition of Eq. (5.4.9);
* ``averaging_information``: I(o; v_j) exactly, for o = Σ_j α_j v_j with Gaussian values;
* the local task (``local_batch``), its two models (``LocalConv``, ``LocalAttention``) and
  ``train_local``, for "weak inductive bias needs more data".
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch import nn

from ...attention import MultiHeadAttention
from ...losses import cross_entropy
from ...threads import single_thread

# ------------------------------------------------------------------------------ equivariance


def permutation_gap(fn: Callable, x: torch.Tensor, perm: torch.Tensor) -> float:
    """max |fn(x[:, perm]) - fn(x)[:, perm]| for a map of sequences (B, T, d) -> (B, T, d'):
    0 (up to round-off) when fn is permutation-equivariant."""
    return float((fn(x[:, perm]) - fn(x)[:, perm]).detach().abs().max())


def shift_gap(fn: Callable, x: torch.Tensor, shift: int, border: int = 0) -> float:
    """max |fn(roll(x)) - roll(fn(x))| over positions at least ``border`` away from both ends
    (and from the wrap-around), for fn: (B, d, T) -> (B, d', T) and a shift along the last dim."""
    T = x.shape[-1]
    diff = fn(torch.roll(x, shift, dims=-1)) - torch.roll(fn(x), shift, dims=-1)  # (B, d', T)
    diff = diff.detach()
    lo, hi = max(shift, 0) + border, T + min(shift, 0) - border
    return float(diff[..., lo:hi].abs().max())


# ------------------------------------------------------------------------------ residual stream


def attention_stack(
    x: torch.Tensor, layers: Sequence[MultiHeadAttention], norms: Sequence[nn.Module], norm: str
):
    """Run an attention-only stack on x (B, T, d) and return (states, updates).

    ``norm="post"``: X^(l+1) = LayerNorm(X^(l) + Attention(X^(l))), source 001 Eq. (5.4.8);
    ``norm="pre"``: X^(l+1) = X^(l) + Attention(LayerNorm(X^(l))). ``states`` = [X^(0), ..., X^(L)],
    ``updates`` = the L attention outputs, the ΔX^(l) of Eq. (5.4.9) if it held.
    """
    if norm not in ("post", "pre"):
        raise ValueError(f"norm must be 'post' or 'pre', got {norm!r}")
    if len(layers) != len(norms):
        raise ValueError(f"need one norm per layer, got {len(layers)} layers, {len(norms)} norms")
    states, updates = [x], []
    for attn, ln in zip(layers, norms):
        h = states[-1]  # (B, T, d)
        if norm == "post":
            update = attn(h)[0]  # (B, T, d)
            states.append(ln(h + update))  # Eq. (5.4.8)
        else:
            update = attn(ln(h))[0]  # (B, T, d)
            states.append(h + update)
        updates.append(update)
    return states, updates


# ------------------------------------------------------------------------------ information


def averaging_information(weights: torch.Tensor, d: int = 1) -> torch.Tensor:
    """I(o; v_j) in nats for o = Σ_j α_j v_j with independent values v_j ~ N(0, I_d), exactly:
    (d/2) ln(Σ_k α_k² / (Σ_k α_k² − α_j²)) — positive iff α_j > 0, inf when o = v_j.

    weights (..., n), rows summing to 1 -> (..., n) float64.
    """
    a2 = weights.double() ** 2  # (..., n)
    share = a2 / a2.sum(dim=-1, keepdim=True)  # (..., n) α_j² / Σ α_k²
    return -0.5 * d * torch.log1p(-share)  # (..., n), accurate for tiny shares too


# ------------------------------------------------------------------------------ the local task


def local_batch(
    batch_size: int, length: int = 16, num_tokens: int = 8, generator=None
) -> tuple[torch.Tensor, torch.Tensor]:
    """A local task: y_i = (x_{i-1} + x_i) mod V (x_{-1} = 0). Returns (x, y), both (B, T)."""
    x = torch.randint(num_tokens, (batch_size, length), generator=generator)  # (B, T)
    previous = torch.cat([torch.zeros_like(x[:, :1]), x[:, :-1]], dim=1)  # (B, T)
    return x, (previous + x) % num_tokens


class LocalConv(nn.Module):
    """Embedding -> causal convolution of width 2 (one linear map of each [e_{i-1}; e_i], shared
    by every position) -> ReLU -> linear: locality and weight sharing built in."""

    def __init__(self, num_tokens: int = 8, d: int = 16):
        super().__init__()
        self.embed = nn.Embedding(num_tokens, d)
        self.conv = nn.Linear(2 * d, 2 * d)  # the width-2 kernel
        self.out = nn.Linear(2 * d, num_tokens)

    def forward(self, x):
        e = self.embed(x)  # (B, T, d)
        previous = nn.functional.pad(e, (0, 0, 1, 0))[:, :-1]  # (B, T, d): e_{-1} = 0
        return self.out(torch.relu(self.conv(torch.cat([previous, e], dim=-1))))  # (B, T, V)


class LocalAttention(nn.Module):
    """Embedding + learned absolute positions -> one causal self-attention layer -> ReLU MLP:
    no locality built in, positions must be learned."""

    def __init__(self, num_tokens: int = 8, length: int = 16, d: int = 16):
        super().__init__()
        self.embed = nn.Embedding(num_tokens, d)
        self.position = nn.Parameter(0.5 * torch.randn(length, d))
        self.attn = MultiHeadAttention(d, 1)
        self.hidden = nn.Linear(2 * d, 2 * d)
        self.out = nn.Linear(2 * d, num_tokens)

    def forward(self, x):
        h = self.embed(x) + self.position[: x.shape[1]]  # (B, T, d)
        a, _ = self.attn(h, causal=True)  # (B, T, d)
        return self.out(torch.relu(self.hidden(torch.cat([h, a], dim=-1))))  # (B, T, V)


@single_thread()
def train_local(
    model: nn.Module,
    num_examples: int,
    steps: int = 100,
    lr: float = 1e-2,
    seed: int = 0,
    test_examples: int = 1000,
    progress: bool = True,
    desc: str | None = None,
) -> float:
    """Adam on ``num_examples`` fixed training sequences of ``local_batch`` (full batch), then the
    token accuracy on ``test_examples`` fresh ones. Returns the test accuracy."""
    from tqdm.auto import tqdm

    g = torch.Generator().manual_seed(seed)
    x, y = local_batch(num_examples, generator=g)  # (N, T)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    bar = tqdm(range(steps), desc=desc or type(model).__name__, disable=not progress)
    for _ in bar:
        loss = cross_entropy(model(x).flatten(0, 1), y.flatten())
        opt.zero_grad()
        loss.backward()
        opt.step()
    x_test, y_test = local_batch(test_examples, generator=torch.Generator().manual_seed(10_000))
    with torch.no_grad():
        return float((model(x_test).argmax(-1) == y_test).double().mean())
