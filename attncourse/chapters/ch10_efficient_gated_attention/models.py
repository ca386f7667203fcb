"""The small models the chapter trains: a causal language model whose attention is softmax,
linear (Katharopoulos et al. 2020) or output-gated (Qiu et al. 2025), and its training loop."""

from __future__ import annotations

import torch
from torch import nn

from ...attention import MultiHeadAttention, OutputGatedAttention, linear_attention
from ...losses import cross_entropy
from ...norms import LayerNorm
from ...threads import single_thread

ATTENTION_KINDS = ("softmax", "linear", "gated-headwise", "gated-elementwise")


class LinearSelfAttention(MultiHeadAttention):
    """``MultiHeadAttention`` with the softmax replaced by causal linear attention, phi = elu + 1
    (source 000 Def. 14.3.18, Eq. 14.3.46). Returns (output, None): no weights are formed."""

    def forward(self, x, mask=None, causal: bool = True):
        self._check_inputs(x, x, x)
        q, k, v = (
            self._split_heads(p(x), self.num_heads) for p in (self.q_proj, self.k_proj, self.v_proj)
        )  # (B, H, T, hd) each
        out, _ = linear_attention(q, k, v, causal=causal)  # (B, H, T, hd)
        return self.merge_heads(out), None  # (B, T, d_model)


def make_attention(kind: str, d: int, heads: int) -> nn.Module:
    if kind == "softmax":
        return MultiHeadAttention(d, heads)
    if kind == "linear":
        return LinearSelfAttention(d, heads)
    if kind in ("gated-headwise", "gated-elementwise"):
        return OutputGatedAttention(d, heads, headwise=kind == "gated-headwise")
    raise ValueError(f"attention kind must be one of {ATTENTION_KINDS}, got {kind!r}")


class TinyLM(nn.Module):
    """Token + learned position embeddings -> ``layers`` Pre-LN blocks (causal self-attention of
    ``attention`` kind, then an optional GELU MLP) -> LayerNorm -> logits.

    ``forward(x)`` returns (logits (B, T, vocab), [attention weights (B, H, T, T) per layer, or
    None for linear attention]).
    """

    def __init__(
        self,
        vocab: int,
        length: int,
        d: int = 32,
        heads: int = 2,
        layers: int = 1,
        attention: str = "softmax",
        mlp: bool = True,
        position_scale: float = 0.5,
    ):
        super().__init__()
        self.vocab, self.length, self.kind = vocab, length, attention
        self.embed = nn.Embedding(vocab, d)
        self.position = nn.Parameter(position_scale * torch.randn(length, d))
        self.blocks = nn.ModuleList()
        for _ in range(layers):
            block = nn.ModuleDict(
                {"norm1": LayerNorm(d), "attention": make_attention(attention, d, heads)}
            )
            if mlp:
                block["norm2"] = LayerNorm(d)
                block["mlp"] = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))
            self.blocks.append(block)
        self.norm = LayerNorm(d)
        self.out = nn.Linear(d, vocab)

    def forward(self, x):
        h = self.embed(x) + self.position[: x.shape[1]]  # (B, T, d)
        weights = []
        for block in self.blocks:
            a, w = block["attention"](block["norm1"](h), causal=True)  # (B, T, d)
            h = h + a
            weights.append(w)
            if "mlp" in block:
                h = h + block["mlp"](block["norm2"](h))
        return self.out(self.norm(h)), weights  # (B, T, vocab)

    def gates(self, x, layer: int = -1) -> torch.Tensor:
        """The output gates of one layer's attention (B, H, T, 1 or d_h), for gated kinds."""
        target = layer % len(self.blocks)
        h = self.embed(x) + self.position[: x.shape[1]]
        for i, block in enumerate(self.blocks):
            if i == target:
                return block["attention"].gates(block["norm1"](h))
            h = h + block["attention"](block["norm1"](h), causal=True)[0]
            if "mlp" in block:
                h = h + block["mlp"](block["norm2"](h))
        raise AssertionError("unreachable")


@single_thread()
def train_lm(
    model: TinyLM,
    batches,
    steps: int,
    lr: float = 3e-3,
    weight_decay: float = 0.0,
    first_target: int = 0,
    seed: int = 0,
    progress: bool = True,
    desc: str | None = None,
) -> list[float]:
    """AdamW on next-token cross-entropy: ``batches(generator)`` gives (B, T + 1) token
    sequences; positions from ``first_target`` on are scored. Returns the loss of every step."""
    from tqdm.auto import tqdm

    g = torch.Generator().manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
    losses = []
    bar = tqdm(range(steps), desc=desc or model.kind, disable=not progress, mininterval=0.5)
    for _ in bar:
        x = batches(g)  # (B, T + 1)
        logits, _ = model(x[:, :-1])  # (B, T, V)
        targets = x[:, 1 + first_target :]  # (B, T - first_target)
        loss = cross_entropy(logits[:, first_target:].reshape(-1, model.vocab), targets.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
        bar.set_postfix(loss=f"{losses[-1]:.3f}", refresh=False)
    return losses
