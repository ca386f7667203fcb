"""Masks as information-flow graphs (source 002 §1 and §8; source 000 Def. 14.3.12): the chapter's
catalogue of masks, what each lets through one layer and a stack of layers, an encoder–decoder's
one-way flow, and what sparse patterns cost.
"""

from __future__ import annotations

import math
import time

import torch

from ...attention import MultiHeadAttention, scaled_dot_product_attention
from ...flow import layers_to_reach, reachability
from ...masks import block_mask, causal_mask, local_mask, strided_mask
from ...rnn import VanillaRNN
from ...threads import single_thread

MASK_KINDS = ("bidirectional", "causal", "cross", "local", "strided", "block")


def cross_mask(T: int) -> torch.Tensor:
    """Cross-attention on the concatenation [encoder; decoder] of two halves (source 000
    Def. 14.3.12, Z_cross = Attention(Q_dec, K_enc, V_enc)): every position reads the encoder half
    only; the encoder half reads itself bidirectionally. (T, T) bool."""
    j = torch.arange(T).unsqueeze(0)  # (1, T)
    return (j < T // 2).expand(T, T).clone()  # (T, T)


def log_sparse_mask(T: int) -> torch.Tensor:
    """LogSparse attention (Li et al. 2019): query i reads itself and the keys 1, 2, 4, 8, …
    positions back, about log₂ T keys each (causal). (T, T) bool."""
    i = torch.arange(T).unsqueeze(1)  # (T, 1)
    j = torch.arange(T).unsqueeze(0)  # (1, T)
    back = i - j  # (T, T)
    power_of_two = (back > 0) & ((back & (back - 1)) == 0)
    return (back == 0) | power_of_two


def chapter_mask(kind: str, T: int = 16, window: int = 2, stride: int = 4, block: int = 4):
    """The chapter's masks by name (``MASK_KINDS``), (T, T) bool, True = may attend. ``local``:
    |i − j| ≤ window; ``strided``: Child et al.'s causal pattern with ``stride``; ``block``:
    blocks of ``block`` positions; ``cross``: ``cross_mask``."""
    if kind == "bidirectional":
        return torch.ones(T, T, dtype=torch.bool)
    if kind == "causal":
        return causal_mask(T)
    if kind == "cross":
        return cross_mask(T)
    if kind == "local":
        return local_mask(T, window)
    if kind == "strided":
        return strided_mask(T, stride)
    if kind == "block":
        return block_mask(T, block)
    raise ValueError(f"kind must be one of {MASK_KINDS}, got {kind!r}")


def reach_table(T: int = 16, layers=(1, 2, 3, 4)) -> dict:
    """For every mask of ``MASK_KINDS``: edges per query, the share of the T² (output i, input j)
    pairs connected after each number of layers (``reachability``, residual paths included), and
    the depth after which nothing new is reached with the pairs never reached
    (``layers_to_reach``)."""
    table = {}
    for kind in MASK_KINDS:
        mask = chapter_mask(kind, T)
        hops = layers_to_reach(mask)  # (T, T)
        finite = hops[torch.isfinite(hops)]
        table[kind] = {
            "edges_per_query": float(mask.sum()) / T,
            "reach": {L: float(reachability(mask, L).double().mean()) for L in layers},
            "depth": int(finite.max()),
            "never": int(torch.isinf(hops).sum()),
        }
    return table


def encoder_decoder_reachability(
    source_length: int, target_length: int, encoder_layers: int, decoder_layers: int
) -> torch.Tensor:
    """Which inputs an encoder–decoder's decoder outputs can depend on: (T, S + T) bool, columns
    = [encoder inputs; decoder inputs]. The encoder is bidirectional; each decoder layer is a
    residual causal self-attention plus cross-attention to the encoder's *final* states
    (Vaswani et al. 2017; source 000 Eq. 14.3.28)."""
    S, T = source_length, target_length
    encoder = reachability(torch.ones(S, S, dtype=torch.bool), encoder_layers)  # (S, S)
    self_step = (causal_mask(T) | torch.eye(T, dtype=torch.bool)).double()  # (T, T)
    cross = torch.ones(T, S, dtype=torch.double)  # (T, S) every decoder query reads the encoder
    from_decoder = torch.eye(T, dtype=torch.double)  # (T, T) decoder state <- decoder inputs
    from_encoder = torch.zeros(T, S, dtype=torch.double)  # (T, S) decoder state <- encoder inputs
    for _ in range(decoder_layers):
        from_decoder = ((self_step @ from_decoder) > 0).double()
        from_encoder = (((self_step @ from_encoder) + cross @ encoder.double()) > 0).double()
    return torch.cat([from_encoder, from_decoder], dim=1) > 0  # (T, S + T)


def sparse_pair_counts(lengths=(256, 512, 1024, 2048), window: int = 8) -> dict:
    """How many (query, key) pairs each pattern lets through at sequence length n: dense n²,
    local (|i − j| ≤ window), strided with stride ⌊√n⌋ (Child et al. 2019), blocks of ⌊√n⌋ and
    LogSparse; with the exponent p of n^p fitted between the first and last length."""
    patterns = {
        "dense": lambda n: torch.ones(n, n, dtype=torch.bool),
        f"local (window {window})": lambda n: local_mask(n, window),
        "strided (stride sqrt n)": lambda n: strided_mask(n, math.isqrt(n)),
        "block (size sqrt n)": lambda n: block_mask(n, math.isqrt(n)),
        "LogSparse": log_sparse_mask,
    }
    counts = {name: [int(make(n).sum()) for n in lengths] for name, make in patterns.items()}
    span = math.log(lengths[-1] / lengths[0])
    exponents = {name: math.log(c[-1] / c[0]) / span for name, c in counts.items()}
    return {"lengths": list(lengths), "counts": counts, "exponents": exponents}


@single_thread()
def masked_attention_times(n: int = 1024, d: int = 64, repeats: int = 5) -> dict:
    """Median milliseconds of ``scaled_dot_product_attention`` on (1, 4, n, d) inputs with no
    mask, the strided mask and the local mask: a boolean mask removes pairs from the softmax,
    not from the computation (every n² score is still computed)."""
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 4, n, d, generator=g) for _ in range(3))
    masks = {
        "none": None,
        "strided": strided_mask(n, math.isqrt(n)),
        "local": local_mask(n, 8),
    }
    times = {}
    for name, mask in masks.items():
        runs = []
        for _ in range(repeats):
            start = time.perf_counter()
            scaled_dot_product_attention(q, k, v, mask)
            runs.append(1000 * (time.perf_counter() - start))
        times[name] = sorted(runs)[len(runs) // 2]
    return times


@single_thread()
def training_step_times(length: int = 256, d: int = 64, batch: int = 16, repeats: int = 3):
    """Median milliseconds of one forward + backward pass of a tanh ``VanillaRNN`` layer and of a
    ``MultiHeadAttention`` layer (4 heads, bidirectional) on (batch, length, d) inputs, on one
    thread (a second thread is no fair help to either on a busy machine)."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(batch, length, d, generator=g)
    layers = {"RNN": VanillaRNN(d, d), "attention": MultiHeadAttention(d, 4)}
    calls = {
        "RNN": lambda: layers["RNN"](x),
        "attention": lambda: layers["attention"](x)[0],
    }
    times = {}
    for name, call in calls.items():
        runs = []
        for _ in range(repeats + 1):
            start = time.perf_counter()
            call().square().mean().backward()
            runs.append(1000 * (time.perf_counter() - start))
        times[name] = sorted(runs[1:])[repeats // 2]  # the first run warms up
    return times
