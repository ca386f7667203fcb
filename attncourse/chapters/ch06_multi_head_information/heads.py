"""Multi-head attention with a gate on every head (Michel et al. 2019), a small encoder built from
it, the sort task it is trained on, and evaluation under a head mask.

``GatedMultiHeadAttention`` is Eq. (14.3.10), MultiHead = W_O [ξ_1 z_1; …; ξ_h z_h]: the
package's ``MultiHeadAttention`` with a gate on each head before W_O (every gate ξ_h = 1 is plain
multi-head attention).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from ...attention import MultiHeadAttention
from ...losses import cross_entropy
from ...norms import LayerNorm
from ...positional import sinusoidal_encoding
from ...threads import single_thread


class GatedMultiHeadAttention(MultiHeadAttention):
    """MultiHead(x) = W_O [ξ_1 z_1; …; ξ_H z_H] + b_O,  z_h = Attention(x W_Q^h, x W_K^h, x W_V^h)
    (Eq. 14.3.10 with Michel et al.'s head gates ξ_h; ξ = 1 is plain multi-head attention).

    ``forward(x, gates=None, mask=None, causal=False)``: x (B, T, d); gates broadcastable to
    (B, H), e.g. (H,) or a per-example (B, H) tensor that requires grad. Returns
    (output (B, T, d), weights (B, H, T, T), head outputs z (B, H, T, d_h) before the gates).
    """

    def forward(self, x, gates=None, mask=None, causal: bool = False):
        z, weights = self.head_outputs(x, mask=mask, causal=causal)  # (B, H, T, d_h), (B, H, T, T)
        gated = (
            z if gates is None else z * gates.reshape(-1, self.num_heads, 1, 1)
        )  # (B, H, T, d_h)
        return self.merge_heads(gated), weights, z  # (B, T, d), (B, H, T, T), (B, H, T, d_h)


class HeadGatedEncoder(nn.Module):
    """Token embedding + sinusoidal positions → ``num_layers`` Pre-LN blocks
    [x + MHA(LN(x)), x + FFN(LN(x))] with gated heads → LN → logits for every position.

    ``forward(tokens, head_mask=None)``: tokens (B, T) long; head_mask broadcastable to
    (B, L, H) — 1 keeps a head, 0 removes it (fractional values scale it). Returns logits
    (B, T, V); ``self.weights`` and ``self.head_outputs`` keep each layer's (B, H, T, T) and
    (B, H, T, d_h) from the last call.
    """

    def __init__(
        self,
        vocab: int,
        num_classes: int,
        max_len: int,
        d_model: int = 64,
        num_heads: int = 8,
        num_layers: int = 2,
        ffn_mult: int = 2,
    ):
        super().__init__()
        self.vocab, self.num_classes = vocab, num_classes
        self.num_layers, self.num_heads = num_layers, num_heads
        self.embed = nn.Embedding(vocab, d_model)
        self.register_buffer("position", sinusoidal_encoding(max_len, d_model))
        self.norms1 = nn.ModuleList(LayerNorm(d_model) for _ in range(num_layers))
        self.attns = nn.ModuleList(
            GatedMultiHeadAttention(d_model, num_heads) for _ in range(num_layers)
        )
        self.norms2 = nn.ModuleList(LayerNorm(d_model) for _ in range(num_layers))
        self.ffns = nn.ModuleList(
            nn.Sequential(
                nn.Linear(d_model, ffn_mult * d_model),
                nn.ReLU(),
                nn.Linear(ffn_mult * d_model, d_model),
            )
            for _ in range(num_layers)
        )
        self.final_norm = LayerNorm(d_model)
        self.readout = nn.Linear(d_model, num_classes)
        self.weights: list[torch.Tensor] = []
        self.head_outputs: list[torch.Tensor] = []

    def forward(self, tokens: torch.Tensor, head_mask: torch.Tensor | None = None) -> torch.Tensor:
        B, T = tokens.shape
        x = (
            self.embed(tokens) * math.sqrt(self.embed.embedding_dim) + self.position[:T]
        )  # (B, T, d)
        if head_mask is not None:
            head_mask = head_mask.to(x.dtype).expand(
                B, self.num_layers, self.num_heads
            )  # (B, L, H)
        self.weights, self.head_outputs = [], []
        for layer in range(self.num_layers):
            gates = None if head_mask is None else head_mask[:, layer]  # (B, H)
            a, w, z = self.attns[layer](self.norms1[layer](x), gates)
            x = x + a  # (B, T, d)
            x = x + self.ffns[layer](self.norms2[layer](x))  # (B, T, d)
            self.weights.append(w)
            self.head_outputs.append(z)
        return self.readout(self.final_norm(x))  # (B, T, C)


# ------------------------------------------------------------------------------ the task


LENGTH, VOCAB = 8, 8  # the chapter's sort task
LAYERS, HEADS, WIDTH = 2, 16, 64  # the chapter's model: 2 layers x 16 heads of size 4


def sort_batch(
    batch_size: int, generator: torch.Generator, length: int = LENGTH, vocab: int = VOCAB
):
    """The sort task: x (B, T) random tokens, target (B, T) the same tokens in ascending order."""
    x = torch.randint(vocab, (batch_size, length), generator=generator)  # (B, T)
    return x, x.sort(dim=1).values


def chapter_model(seed: int = 0) -> HeadGatedEncoder:
    """The chapter's untrained model (2 layers x 16 heads, d = 64), initialised from ``seed``."""
    torch.manual_seed(seed)
    return HeadGatedEncoder(VOCAB, VOCAB, LENGTH, WIDTH, HEADS, LAYERS)


@single_thread()
def train_model(
    model: HeadGatedEncoder,
    steps: int = 400,
    lr: float = 3e-3,
    batch_size: int = 64,
    seed: int = 0,
    progress: bool = True,
    desc: str | None = None,
) -> list[float]:
    """AdamW (weight decay 0.01) with a one-cycle schedule peaking at ``lr``, gradient norm
    clipped at 1, on fresh ``sort_batch`` batches; returns the losses."""
    from tqdm.auto import tqdm

    g = torch.Generator().manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01, fused=True)
    schedule = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=steps)
    model.train()
    losses = []
    bar = tqdm(range(steps), desc=desc or "sort", disable=not progress, mininterval=0.5)
    for _ in bar:
        x, y = sort_batch(batch_size, g)
        loss = cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        schedule.step()
        losses.append(float(loss.detach()))
        bar.set_postfix(loss=f"{losses[-1]:.3f}", refresh=False)
    model.eval()
    return losses


@torch.no_grad()
@single_thread()
def evaluate(model: HeadGatedEncoder, x, y, head_mask=None):
    """(accuracy over all target tokens, mean cross-entropy in nats) with ``head_mask`` applied."""
    logits = model(x, head_mask)  # (B, T, C)
    loss = cross_entropy(logits, y, reduction="none").double().mean()
    return float((logits.argmax(-1) == y).double().mean()), float(loss)


@torch.no_grad()
def evaluate_masks(model: HeadGatedEncoder, x, y, masks: torch.Tensor, chunk: int = 16):
    """``evaluate`` under each of K head masks (K, L, H), in a few large forward passes: tensors
    (K,) of accuracies and (K,) of mean cross-entropies."""
    B = x.shape[0]
    accuracy, loss = [], []
    for part in masks.split(chunk):  # (k, L, H)
        k = part.shape[0]
        logits = model(x.repeat(k, 1), part.repeat_interleave(B, dim=0))  # (k·B, T, C)
        logits = logits.view(k, B, *logits.shape[1:])  # (k, B, T, C)
        target = y.expand(k, *y.shape)  # (k, B, T)
        accuracy.append((logits.argmax(-1) == target).double().mean((1, 2)))
        loss.append(cross_entropy(logits, target, reduction="none").double().mean((1, 2)))
    return torch.cat(accuracy), torch.cat(loss)
