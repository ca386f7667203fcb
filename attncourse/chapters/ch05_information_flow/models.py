"""The chapter's small Transformers: an encoder or decoder of ``TransformerBlock``s, or an
attention-only stack (Olsson et al. 2022), with learned absolute positions (sinusoidal ones at
d = 32 were seen to learn both chapter tasks more slowly); and one training loop.

Every model returns its logits and the attention weights of every layer, (B, H, T, T) each, so the
flow tools of ``attncourse.flow`` can read them.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from ...attention import MultiHeadAttention
from ...blocks import TransformerBlock
from ...masks import causal_mask, combine_masks
from ...norms import LayerNorm
from ...positional import LearnedPositionalEmbedding
from ...threads import single_thread


class AttentionOnlyBlock(nn.Module):
    """x + MultiHead(LN(x)): a Transformer block without its MLP (Olsson et al. 2022's
    attention-only models), the recurrence of source 001 Eq. (5.4.8) in its Pre-LN form.

    ``forward(x, mask=None, causal=False, weights=None)``: with ``weights`` (B, H, T, T) given,
    the block uses them instead of its own softmax(q kᵀ/√d) (an ablation: what happens to the
    model if this layer attended like that?). Returns (x, weights).
    """

    def __init__(self, d_model: int, num_heads: int):
        super().__init__()
        self.norm = LayerNorm(d_model)
        self.attn = MultiHeadAttention(d_model, num_heads)

    def forward(self, x, mask=None, causal: bool = False, weights=None):
        h = self.norm(x)  # (B, T, d)
        if weights is None:
            attended, weights = self.attn(h, mask=mask, causal=causal)  # (B, T, d), (B, H, T, T)
            return x + attended, weights
        attn = self.attn
        v = attn._split_heads(attn.v_proj(h), attn.num_heads)  # (B, H, T, hd)
        mixed = (weights @ v).transpose(1, 2).reshape(x.shape)  # (B, T, d)
        return x + attn.out_proj(mixed), weights


class TinyTransformer(nn.Module):
    """Token embedding + learned positions → ``num_layers`` blocks → LayerNorm → logits.

    ``block="full"``: ``attncourse.blocks.TransformerBlock`` (Pre-LN, attention + MLP);
    ``block="attention"``: ``AttentionOnlyBlock``. ``causal=True`` makes it a decoder (every
    layer causal), otherwise a bidirectional encoder. ``forward(tokens, mask=None,
    override=None)`` returns (logits (B, T, vocab), [weights (B, H, T, T) per layer]); ``mask``
    (bool, True = may attend) is added to every layer (and to the causal mask), ``override``
    ({layer: weights}) replaces layers' attention (attention-only blocks).
    """

    def __init__(
        self,
        vocab: int,
        d_model: int = 32,
        num_heads: int = 2,
        num_layers: int = 2,
        max_len: int = 32,
        causal: bool = False,
        block: str = "full",
    ):
        super().__init__()
        if block not in ("full", "attention"):
            raise ValueError(f"block must be 'full' or 'attention', got {block!r}")
        self.vocab, self.causal, self.block = vocab, causal, block
        self.tok = nn.Embedding(vocab, d_model)
        self.pos = LearnedPositionalEmbedding(max_len, d_model, init_std=0.5)
        make = (
            (lambda: TransformerBlock(d_model, num_heads, norm="pre"))
            if block == "full"
            else (lambda: AttentionOnlyBlock(d_model, num_heads))
        )
        self.blocks = nn.ModuleList(make() for _ in range(num_layers))
        self.norm = LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab)

    def embed(self, tokens: torch.Tensor) -> torch.Tensor:
        """Token + position embeddings: (B, T) long -> (B, T, d)."""
        return self.pos(self.tok(tokens))  # (B, T, d)

    def forward_embedded(self, x: torch.Tensor, mask=None, override=None):
        """The model from its input embeddings x (B, T, d) on (for input gradients)."""
        T = x.shape[1]
        mask = combine_masks(mask, causal_mask(T) if self.causal else None)
        weights = []
        for layer, block in enumerate(self.blocks):
            if override and layer in override:
                x, w = block(x, mask=mask, weights=override[layer])  # (B, T, d), (B, H, T, T)
            else:
                x, w = block(x, mask=mask)  # (B, T, d), (B, H, T, T)
            weights.append(w)
        return self.head(self.norm(x)), weights  # (B, T, vocab), L x (B, H, T, T)

    def forward(self, tokens: torch.Tensor, mask=None, override=None):
        return self.forward_embedded(self.embed(tokens), mask, override)


@single_thread()
def train(
    model: nn.Module,
    batch_fn: Callable,
    loss_fn: Callable,
    steps: int,
    lr: float = 1e-2,
    batch_size: int = 64,
    seed: int = 0,
    progress: bool = True,
    desc: str = "training",
) -> list[float]:
    """Adam with a one-cycle learning-rate schedule (peak ``lr``) for ``steps`` batches of
    ``batch_fn(batch_size, generator)``; ``loss_fn(model, batch)`` gives the loss (computed with
    ``attncourse.losses.cross_entropy``). Returns the losses; shows a tqdm bar."""
    from tqdm.auto import tqdm

    g = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr, fused=True)  # one kernel a step
    schedule = torch.optim.lr_scheduler.OneCycleLR(opt, lr, total_steps=steps)
    losses = []
    bar = tqdm(range(steps), desc=desc, disable=not progress, mininterval=0.5)
    for _ in bar:
        loss = loss_fn(model, batch_fn(batch_size, g))
        opt.zero_grad()
        loss.backward()
        opt.step()
        schedule.step()
        losses.append(float(loss.detach()))
        bar.set_postfix(loss=f"{losses[-1]:.3f}", refresh=False)
    return losses
