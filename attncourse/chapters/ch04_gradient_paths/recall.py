"""The long-range recall task of chapter 04: a token seen k steps ago must be recalled.

``recall_batch``, ``RecallRNN``, ``RecallAttention``, ``train_recall`` and ``recall_accuracy``
(accuracy per distance).
"""

from __future__ import annotations

import torch
from torch import nn

from ...attention import MultiHeadAttention
from ...losses import cross_entropy
from ...rnn import VanillaRNN
from ...threads import single_thread


def recall_batch(
    batch_size: int,
    generator: torch.Generator | None = None,
    num_tokens: int = 4,
    max_distance: int = 10,
):
    """The long-range recall task: ``max_distance`` random tokens in 0..num_tokens-1, then a query
    token num_tokens + k - 1 asking for the token k positions back (k uniform in 1..max_distance).

    Returns (x (B, max_distance + 1) long, target (B,) long, k (B,) long), with
    target = x[:, max_distance - k].
    """
    seq = torch.randint(num_tokens, (batch_size, max_distance), generator=generator)  # (B, K)
    k = torch.randint(1, max_distance + 1, (batch_size,), generator=generator)  # (B,)
    x = torch.cat([seq, (num_tokens + k - 1)[:, None]], dim=1)  # (B, K + 1)
    return x, seq[torch.arange(batch_size), max_distance - k], k


class RecallRNN(nn.Module):
    """Embedding -> VanillaRNN (tanh) -> linear read-out of the last state (the answer)."""

    def __init__(self, num_tokens: int = 4, max_distance: int = 10, d: int = 32, hidden: int = 64):
        super().__init__()
        self.num_tokens, self.max_distance = num_tokens, max_distance
        self.embed = nn.Embedding(num_tokens + max_distance, d)
        self.rnn = VanillaRNN(d, hidden, nonlinearity="tanh")
        self.out = nn.Linear(hidden, num_tokens)

    def forward(self, x):
        return self.out(self.rnn(self.embed(x))[:, -1])  # (B, num_tokens)


class RecallAttention(nn.Module):
    """Embedding + learned absolute positions -> one self-attention layer -> linear read-out at the
    last (query) position. ``forward`` returns logits; ``attention(x)`` the weights (B, H, T, T)."""

    def __init__(
        self, num_tokens: int = 4, max_distance: int = 10, d: int = 32, num_heads: int = 1
    ):
        super().__init__()
        self.num_tokens, self.max_distance = num_tokens, max_distance
        self.embed = nn.Embedding(num_tokens + max_distance, d)
        self.position = nn.Parameter(0.5 * torch.randn(max_distance + 1, d))
        self.attn = MultiHeadAttention(d, num_heads)
        self.out = nn.Linear(d, num_tokens)

    def attention(self, x):
        return self.attn(self.embed(x) + self.position, causal=True)  # (B, T, d), (B, H, T, T)

    def forward(self, x):
        return self.out(self.attention(x)[0][:, -1])  # (B, num_tokens)


@single_thread()
def train_recall(
    model: nn.Module,
    steps: int = 250,
    lr: float = 1e-2,
    batch_size: int = 64,
    seed: int = 0,
    progress: bool = True,
    desc: str | None = None,
) -> list[float]:
    """Adam on cross-entropy for ``steps`` batches of ``recall_batch``; returns the losses."""
    from tqdm.auto import tqdm

    g = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    losses = []
    bar = tqdm(
        range(steps), desc=desc or type(model).__name__, disable=not progress, mininterval=0.5
    )
    for _ in bar:
        x, y, _ = recall_batch(batch_size, g, model.num_tokens, model.max_distance)
        logits = model(x)  # (B, V)
        loss = cross_entropy(logits, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
        bar.set_postfix(loss=f"{losses[-1]:.3f}", refresh=False)
    return losses


@torch.no_grad()
@single_thread()
def recall_accuracy(model: nn.Module, samples: int = 4000, seed: int = 999) -> torch.Tensor:
    """Accuracy per distance k = 1..max_distance on fresh sequences: (max_distance,)."""
    x, y, k = recall_batch(
        samples, torch.Generator().manual_seed(seed), model.num_tokens, model.max_distance
    )
    correct = (model(x).argmax(dim=-1) == y).double()  # (samples,)
    return torch.stack([correct[k == j].mean() for j in range(1, model.max_distance + 1)])
