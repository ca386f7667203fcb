"""Attention sinks and output gating at CPU scale (Qiu et al. 2025), on the bigram-backcopy task
of Guo et al. 2024: most tokens follow a bigram table (nothing to look up: an attention head has
nothing to do), but after a trigger token the next token repeats the token before the trigger
(the head must copy it). Without a gate, a head that must do nothing parks its softmax weight on
the first token (BOS), whose value it learns to make harmless: an attention sink. An output gate
can switch the head off instead."""

from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

import torch

from .models import TinyLM, train_lm

VOCAB, TRIGGERS, LENGTH = 32, 4, 24  # token 0 = BOS; tokens 1..TRIGGERS are triggers
POOL = 8192  # training sequences drawn once


def bigram_table(seed: int = 100) -> torch.Tensor:
    """A random (VOCAB, VOCAB) next-token table, peaked (logits 2 N(0, 1)), never to BOS."""
    g = torch.Generator().manual_seed(seed)
    logits = 2.0 * torch.randn(VOCAB, VOCAB, generator=g)  # (V, V)
    logits[:, 0] = float("-inf")
    p = torch.exp(logits - logits.amax(dim=-1, keepdim=True))  # (V, V)
    return p / p.sum(dim=-1, keepdim=True)  # rows sum to 1


def bigram_backcopy(count: int, generator: torch.Generator, table=None) -> torch.Tensor:
    """``count`` sequences (count, LENGTH): BOS, then tokens drawn from the bigram table, except
    that after a trigger token (from position 2 on) comes a copy of the token before the trigger."""
    table = bigram_table() if table is None else table
    cumulative = table.cumsum(dim=-1)  # (V, V)
    x = torch.zeros(count, LENGTH, dtype=torch.long)
    x[:, 1] = torch.randint(1, VOCAB, (count,), generator=generator)
    u = torch.rand(LENGTH, count, 1, generator=generator)
    for t in range(1, LENGTH - 1):
        drawn = torch.searchsorted(cumulative[x[:, t]], u[t]).squeeze(-1).clamp(1, VOCAB - 1)
        copies = (x[:, t] <= TRIGGERS) & (t >= 2)  # a trigger at t: x_{t+1} = x_{t-1}
        x[:, t + 1] = torch.where(copies, x[:, t - 1], drawn)
    return x


class SinkResult(NamedTuple):
    kind: str
    seed: int
    losses: list
    bos_dormant: float  # mean weight on BOS of queries at non-trigger tokens (the head idles)
    bos_active: float  # the same at trigger tokens (the head must copy)
    previous_active: float  # weight on the previous token at trigger tokens
    copy_accuracy: float  # next token right after a trigger
    gate_dormant: float  # mean output gate at non-trigger tokens (nan without a gate)
    gate_active: float


def sink_model(kind: str, seed: int) -> TinyLM:
    torch.manual_seed(seed)
    return TinyLM(
        VOCAB, LENGTH - 1, d=32, heads=1, layers=1, attention=kind, mlp=False, position_scale=0.1
    )


@torch.no_grad()
def sink_statistics(model: TinyLM, seed: int, data: torch.Tensor | None = None) -> SinkResult:
    """Attention on BOS and gates at trigger (active) and other (dormant) queries, positions >= 4
    (where a uniform head would give BOS at most 1/5, on average ``uniform_bos_share()``), on
    held-out sequences."""
    x = bigram_backcopy(256, torch.Generator().manual_seed(999)) if data is None else data
    inputs = x[:, :-1]  # (B, T)
    logits, (weights,) = model(inputs)  # (B, T, V), (B, 1, T, T)
    w = weights[:, 0]  # (B, T, T)
    T = inputs.shape[1]
    later = torch.arange(T) >= 4  # (T,)
    trigger = (inputs >= 1) & (inputs <= TRIGGERS) & later  # (B, T)
    dormant = ~((inputs >= 1) & (inputs <= TRIGGERS)) & later
    bos = w[..., 0]  # (B, T)
    previous = torch.diagonal(w, offset=-1, dim1=1, dim2=2)  # (B, T - 1) weight on i - 1
    previous = torch.cat([torch.zeros(w.shape[0], 1), previous], dim=1)  # (B, T)
    right = logits.argmax(dim=-1) == x[:, 1:]  # (B, T)
    if model.kind.startswith("gated"):
        g = model.gates(inputs)[:, 0].mean(dim=-1)  # (B, T) mean over the head's channels
        gate_dormant, gate_active = float(g[dormant].mean()), float(g[trigger].mean())
    else:
        gate_dormant = gate_active = float("nan")
    return SinkResult(
        model.kind,
        seed,
        [],
        float(bos[dormant].mean()),
        float(bos[trigger].mean()),
        float(previous[trigger].mean()),
        float(right[trigger].double().mean()),
        gate_dormant,
        gate_active,
    )


def uniform_bos_share() -> float:
    """The mean weight on BOS of a causal head that spreads evenly, 1 / (t + 1), over the query
    positions t = 4 .. LENGTH - 2 that ``sink_statistics`` averages."""
    return sum(1 / (t + 1) for t in range(4, LENGTH - 1)) / (LENGTH - 5)


@lru_cache(maxsize=1)
def training_pool() -> torch.Tensor:
    """The POOL training sequences (POOL, LENGTH), drawn once (seed 5) and shared by every run."""
    return bigram_backcopy(POOL, torch.Generator().manual_seed(5))


def train_sink(kind: str, seed: int, steps: int = 400, progress: bool = True):
    """A one-layer, one-head, attention-only model of ``kind`` ("softmax" or "gated-headwise" /
    "gated-elementwise") trained on the bigram-backcopy task (AdamW, lr 2e-2, weight decay 0.5,
    batch 32 from a pool of POOL sequences); returns (model, SinkResult)."""
    pool = training_pool()

    def batches(g):
        return pool[torch.randint(0, POOL, (32,), generator=g)]  # (32, LENGTH)

    model = sink_model(kind, seed)
    losses = train_lm(
        model,
        batches,
        steps,
        lr=2e-2,
        weight_decay=0.5,
        first_target=1,
        seed=seed,
        progress=progress,
        desc=f"sink, {kind}, seed {seed}",
    )
    return model, sink_statistics(model, seed)._replace(losses=losses)
