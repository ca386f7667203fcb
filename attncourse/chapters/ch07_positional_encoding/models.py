"""Chapter 07's small Transformer with a choice of position information, its two tasks and its
training loop.

* ``PositionalTransformer``: token embedding (+ sinusoidal or learned absolute positions) →
  pre-LN blocks whose attention may rotate q and k (RoPE) or add ALiBi's biases → logits;
* ``marker_batch``: "the most recent marker" (Press et al. 2022's train-short-test-long effect at
  CPU scale): a causal task where position matters locally and at any length;
* ``sortedness_batch``: "is the sequence sorted?", with each sorted sequence paired with a shuffle
  of the same tokens: an order-sensitive task that no permutation-invariant model can learn;
* ``train_model`` (AdamW, one-cycle schedule, tqdm bar) and ``marker_accuracy``.
"""

from __future__ import annotations

import copy

import torch
from torch import nn

from ..._validation import require_choice, require_positive_int
from ...attention import scaled_dot_product_attention
from ...losses import cross_entropy
from ...norms import LayerNorm
from ...positional import (
    LearnedPositionalEmbedding,
    RotaryEmbedding,
    alibi_bias,
    sinusoidal_encoding,
)
from ...threads import side_by_side, single_thread

ENCODINGS = ("none", "sinusoidal", "learned", "rope", "alibi")


class PositionalSelfAttention(nn.Module):
    """Multi-head self-attention (source 000 Eq. 14.3.10) that takes positions in one of two ways,
    or not at all: ``rope`` rotates every head's queries and keys by their positions (Su et al.
    2021), ``alibi`` adds −m_h |i − j| to head h's scores (Press et al. 2022). ``forward(x (B, T,
    d), causal)`` returns (output (B, T, d), weights (B, H, T, T)).
    """

    def __init__(self, d_model: int, num_heads: int, encoding: str = "none"):
        super().__init__()
        require_choice("encoding", encoding, ENCODINGS)
        if d_model % num_heads:
            raise ValueError(f"d_model ({d_model}) must be divisible by num_heads ({num_heads})")
        self.d_model, self.num_heads, self.encoding = d_model, num_heads, encoding
        self.head_dim = d_model // num_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)
        self.rope = RotaryEmbedding(self.head_dim) if encoding == "rope" else None

    def forward(self, x: torch.Tensor, causal: bool = True):
        B, T, _ = x.shape
        qkv = self.qkv(x).view(B, T, 3, self.num_heads, self.head_dim)  # (B, T, 3, H, hd)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)  # each (B, H, T, hd)
        if self.rope is not None:
            q, k = self.rope(q), self.rope(k)  # (B, H, T, hd): rotated by m * theta_i
        bias = None
        if self.encoding == "alibi":
            bias = alibi_bias(self.num_heads, T, dtype=x.dtype, device=x.device)  # (H, T, T)
        out, weights = scaled_dot_product_attention(q, k, v, bias, causal=causal)  # (B, H, T, hd)
        return self.out(out.transpose(1, 2).reshape(B, T, self.d_model)), weights


class PositionalBlock(nn.Module):
    """Pre-LN block: x ← x + Attn(LN(x)); x ← x + FFN(LN(x)) (no FFN when dim_feedforward = 0)."""

    def __init__(self, d_model: int, num_heads: int, encoding: str, dim_feedforward: int):
        super().__init__()
        self.norm1 = LayerNorm(d_model)
        self.attn = PositionalSelfAttention(d_model, num_heads, encoding)
        self.ffn = None
        if dim_feedforward:
            self.norm2 = LayerNorm(d_model)
            self.ffn = nn.Sequential(
                nn.Linear(d_model, dim_feedforward), nn.ReLU(), nn.Linear(dim_feedforward, d_model)
            )

    def forward(self, x: torch.Tensor, causal: bool):
        attended, weights = self.attn(self.norm1(x), causal)  # (B, T, d), (B, H, T, T)
        x = x + attended  # (B, T, d)
        if self.ffn is not None:
            x = x + self.ffn(self.norm2(x))  # (B, T, d)
        return x, weights


class PositionalTransformer(nn.Module):
    """Token embedding [+ positions] → ``num_layers`` pre-LN blocks → LN → linear read-out.

    ``encoding``: "none", "sinusoidal" (Vaswani et al. 2017, added to the embeddings, any length),
    "learned" (a table of ``max_len`` trained vectors, added; no longer sequences), "rope" or
    "alibi" (inside every attention layer, any length). ``pooled=False``: logits at every position
    (B, T, C); ``pooled=True``: the mean over positions, then the read-out (B, C).
    """

    def __init__(
        self,
        vocab: int,
        num_classes: int,
        encoding: str = "none",
        *,
        d_model: int = 32,
        num_heads: int = 4,
        num_layers: int = 1,
        causal: bool = True,
        pooled: bool = False,
        max_len: int = 64,
        dim_feedforward: int | None = None,
    ):
        super().__init__()
        require_choice("encoding", encoding, ENCODINGS)
        self.encoding, self.causal, self.pooled = encoding, causal, pooled
        self.embed = nn.Embedding(vocab, d_model)
        self.learned = (
            LearnedPositionalEmbedding(max_len, d_model, init_std=1.0)
            if encoding == "learned"
            else None
        )
        self.blocks = nn.ModuleList(
            PositionalBlock(
                d_model,
                num_heads,
                encoding,
                4 * d_model if dim_feedforward is None else dim_feedforward,
            )
            for _ in range(num_layers)
        )
        self.norm = LayerNorm(d_model)
        self.head = nn.Linear(d_model, num_classes)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embed(tokens)  # (B, T, d)
        if self.encoding == "sinusoidal":
            x = x + sinusoidal_encoding(tokens.shape[1], x.shape[-1], dtype=x.dtype)  # (B, T, d)
        elif self.learned is not None:
            x = self.learned(x)  # (B, T, d)
        for block in self.blocks:
            x, _ = block(x, self.causal)  # (B, T, d)
        x = self.norm(x)
        if self.pooled:
            x = x.mean(dim=1)  # (B, d)
        return self.head(x)  # (B, T, C) or (B, C)


# ------------------------------------------------------------------------------------ tasks

NUM_MARKERS, MARKER_VOCAB, MARKER_RATE = 4, 16, 0.15


def marker_batch(batch_size: int, length: int, generator: torch.Generator):
    """ "The most recent marker": tokens 0..3 are markers (each position one with probability
    0.15), 4..15 noise; the target at each position is the latest marker at or before it. The first
    token is always a marker. Returns (tokens (B, T) long, targets (B, T) long in 0..3).
    """
    noise = torch.randint(NUM_MARKERS, MARKER_VOCAB, (batch_size, length), generator=generator)
    marks = torch.randint(NUM_MARKERS, (batch_size, length), generator=generator)  # (B, T)
    is_marker = torch.rand(batch_size, length, generator=generator) < MARKER_RATE  # (B, T)
    is_marker[:, 0] = True
    tokens = torch.where(is_marker, marks, noise)  # (B, T)
    t = torch.arange(length).expand(batch_size, length)  # (B, T)
    last = torch.where(is_marker, t, torch.zeros_like(t)).cummax(dim=1).values  # (B, T)
    return tokens, tokens.gather(1, last)


def sortedness_batch(batch_size: int, length: int, generator: torch.Generator, vocab: int = 16):
    """ "Is the sequence sorted?": ``batch_size`` / 2 random multisets of ``length`` tokens (not all
    equal), each twice: sorted (label 1) and in a random order that is not sorted (label 0). The
    two members of a pair hold the same tokens, so only their order tells them apart. Returns
    (tokens (B, T) long, labels (B,) long), the pairs at rows 2i (sorted) and 2i + 1.
    """
    if batch_size % 2 or batch_size < 2:
        raise ValueError(f"batch_size must be even and >= 2 (pairs), got {batch_size}")
    if length < 2:
        raise ValueError(f"length must be >= 2 (a single token is always sorted), got {length}")
    half = batch_size // 2
    raw = torch.randint(vocab, (half, length), generator=generator)  # (B/2, T)
    flat = (raw == raw[:, :1]).all(dim=1)  # (B/2,) no unsorted order exists for these
    while bool(flat.any()):
        raw[flat] = torch.randint(vocab, (int(flat.sum()), length), generator=generator)
        flat = (raw == raw[:, :1]).all(dim=1)
    ordered = raw.sort(dim=1).values  # (B/2, T)
    shuffled = ordered.clone()
    redo = torch.ones(half, dtype=torch.bool)  # rows whose shuffle is still sorted
    while bool(redo.any()):
        keys = torch.rand(int(redo.sum()), length, generator=generator)  # random order per row
        shuffled[redo] = ordered[redo].gather(1, keys.argsort(dim=1))
        redo = (shuffled[:, 1:] >= shuffled[:, :-1]).all(dim=1)  # (B/2,) drawn sorted again
    tokens = torch.stack((ordered, shuffled), dim=1).reshape(batch_size, length)  # (B, T)
    labels = torch.tensor([1, 0]).repeat(half)  # (B,)
    return tokens, labels


# ---------------------------------------------------------------------------------- training


@single_thread()
def train_model(
    model: nn.Module,
    task: str,
    *,
    steps: int = 400,
    length: int = 32,
    batch_size: int = 32,
    lr: float = 3e-3,
    seed: int = 0,
    progress: bool = True,
    desc: str | None = None,
) -> list[float]:
    """AdamW with a one-cycle learning-rate schedule (peak ``lr``) on cross-entropy; ``task`` is
    "marker" (a loss at every position) or "sorted" (one per sequence); ``progress``: a tqdm bar.
    Returns the losses.
    """
    from tqdm.auto import tqdm

    require_choice("task", task, ("marker", "sorted"))
    require_positive_int("steps", steps)
    g = torch.Generator().manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, fused=True)  # one kernel a step
    schedule = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=steps)
    batch = marker_batch if task == "marker" else sortedness_batch
    bar = tqdm(total=steps, desc=desc or task, disable=not progress, mininterval=0.5)
    losses = []
    for _ in range(steps):
        tokens, targets = batch(batch_size, length, g)
        loss = cross_entropy(model(tokens), targets)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        schedule.step()
        losses.append(float(loss.detach()))
        bar.update(1)
        bar.set_postfix(loss=f"{losses[-1]:.3f}", refresh=False)
    bar.close()
    return losses


@torch.no_grad()
@single_thread()
def marker_accuracy(
    model: nn.Module, length: int, samples: int = 256, seed: int = 1234
) -> torch.Tensor:
    """Accuracy at each position 0..length-1 of fresh "most recent marker" sequences: (length,)."""
    tokens, targets = marker_batch(samples, length, torch.Generator().manual_seed(seed))
    return (model(tokens).argmax(dim=-1) == targets).double().mean(dim=0)  # (T,)


@torch.no_grad()
@single_thread()
def sortedness_scores(model: nn.Module, length: int, samples: int = 2000, seed: int = 99):
    """(accuracy, mean cross-entropy, largest |logit(sorted) − logit(its shuffle)|) on fresh
    pairs; the last in float64 (a copy of the model), so that "identical" means identical."""
    tokens, labels = sortedness_batch(samples, length, torch.Generator().manual_seed(seed))
    logits = model(tokens)  # (N, 2)
    accuracy = float((logits.argmax(dim=-1) == labels).double().mean())
    loss = float(cross_entropy(logits, labels))
    exact = copy.deepcopy(model).double()(tokens)  # (N, 2) float64
    gap = float((exact[0::2] - exact[1::2]).abs().max())
    return accuracy, loss, gap


MARKER_TRAINING = {"steps": 300, "length": 32, "batch_size": 32, "lr": 3e-3}
MARKER_MODEL = {"d_model": 32, "num_heads": 4, "num_layers": 1, "dim_feedforward": 0}


def _train_short_test_long_run(encoding: str, seed: int, test_lengths) -> dict:
    """One run of ``train_short_test_long``: {length: per-position accuracy (length,)}."""
    torch.manual_seed(seed)
    model = PositionalTransformer(MARKER_VOCAB, NUM_MARKERS, encoding, **MARKER_MODEL)
    train_model(model, "marker", seed=seed, progress=False, **MARKER_TRAINING)
    return {length: marker_accuracy(model, length) for length in test_lengths}


def train_short_test_long(
    encodings=("sinusoidal", "rope", "alibi", "none"),
    seeds=(0, 1),
    test_lengths=(32, 64, 128),
    progress: bool = True,
) -> dict:
    """Press et al. 2022's experiment at CPU scale: for each encoding and seed, a one-layer causal
    model (``MARKER_MODEL``) trained on "the most recent marker" at length 32
    (``MARKER_TRAINING``), then tested at every length in ``test_lengths``; the runs side by side,
    one per CPU core (``attncourse.threads.side_by_side``).

    Returns {(encoding, seed): {length: per-position accuracy (length,)}}.
    """
    runs = [(e, s) for s in seeds for e in encodings]
    calls = [(e, s, tuple(test_lengths)) for e, s in runs]
    accuracies = side_by_side(_train_short_test_long_run, calls, "train short", progress)
    return dict(zip(runs, accuracies))
