"""The majority task of chapter 03: a task where *diffuse* attention is the right answer, for the
entropy-collapse experiment (Zhai et al. 2023).

A sequence of ``n_bits`` random bits is preceded by a CLS token; the model must say whether the
bits hold more ones than zeros (ties are removed by flipping one bit). The CLS position is read
out, so the count has to travel through attention, and the ideal CLS attention is uniform over
the bits: its output is then exactly the fraction of ones. A model whose attention collapses onto
a few positions reads a few bits and is close to chance (loss log 2 ≈ 0.693).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import torch
from torch import nn

from ...blocks import TransformerBlock
from ...losses import cross_entropy
from ...metrics import attention_entropy
from ...norms import LayerNorm
from ...reparam import sigma_reparam
from ...threads import single_thread

CLS = 2  # token ids: 0 and 1 are bits, 2 is the CLS token


def majority_batch(batch: int, n_bits: int = 32, generator: torch.Generator | None = None):
    """(tokens (B, n_bits + 1) with CLS first, labels (B,) = 1 if more ones than zeros)."""
    bits = torch.randint(0, 2, (batch, n_bits), generator=generator)  # (B, n)
    if n_bits % 2 == 0:
        tie = bits.sum(-1) == n_bits // 2  # (B,)
        bits[:, 0] = torch.where(tie, 1 - bits[:, 0], bits[:, 0])  # flip one bit: no ties
    labels = (2 * bits.sum(-1) > n_bits).long()  # (B,)
    cls = torch.full((batch, 1), CLS, dtype=torch.long)
    return torch.cat([cls, bits], dim=1), labels  # (B, n + 1), (B,)


class MajorityTransformer(nn.Module):
    """Token + learned position embedding, ``num_layers`` Transformer blocks (``norm``: "pre" is
    Pre-LN, x ← x + F(LN(x))), a final LayerNorm and a linear read-out of the CLS position.

    ``forward(tokens (B, T))`` returns (logits (B, 2), [attention weights (B, H, T, T) per layer]).
    """

    def __init__(
        self,
        n_bits: int = 32,
        d_model: int = 64,
        num_layers: int = 4,
        num_heads: int = 1,
        dim_feedforward: int | None = None,
        norm: str = "pre",
    ):
        super().__init__()
        self.token = nn.Embedding(3, d_model)
        self.position = nn.Embedding(n_bits + 1, d_model)
        self.blocks = nn.ModuleList(
            TransformerBlock(d_model, num_heads, dim_feedforward, norm=norm)
            for _ in range(num_layers)
        )
        self.final_norm = LayerNorm(d_model)
        self.head = nn.Linear(d_model, 2)

    def forward(self, tokens: torch.Tensor):
        T = tokens.shape[1]
        x = self.token(tokens) + self.position(torch.arange(T, device=tokens.device))  # (B, T, d)
        weights = []
        for block in self.blocks:
            x, w = block(x)  # (B, T, d), (B, H, T, T)
            weights.append(w)
        return self.head(self.final_norm(x[:, 0])), weights  # (B, 2), list of (B, H, T, T)


def _weight(linear: nn.Module) -> torch.Tensor:
    """The weight a linear layer applies: W, or Ŵ = γ/σ(W)·W under σReparam."""
    effective = getattr(linear, "effective_weight", None)
    return effective() if effective is not None else linear.weight


@torch.no_grad()
def qk_spectral_norms(model: MajorityTransformer) -> list[float]:
    """‖W_Q W_Kᵀ‖₂ / √d_k of each layer (one head): the largest factor by which the bilinear score
    x_i W_Q W_Kᵀ x_jᵀ / √d_k can stretch unit inputs. Zhai et al. bound attention entropy from
    below by a function of this norm that falls as it grows."""
    norms = []
    for block in model.blocks:
        attn = block.attn
        wq, wk = _weight(attn.q_proj), _weight(attn.k_proj)  # (d, d) each, y = x Wᵀ
        norms.append(float(torch.linalg.matrix_norm(wq.T @ wk, ord=2)) / math.sqrt(attn.head_dim))
    return norms


def layer_entropies(weights) -> list[float]:
    """Mean attention entropy (nats) of each layer: over batch, heads and queries."""
    return [float(attention_entropy(w.detach()).mean()) for w in weights]


@dataclass
class CollapseRun:
    """What ``train_majority`` measured: per-step training loss and per-layer entropy, and the final
    loss, accuracy and per-layer entropy on a fixed evaluation set."""

    reparam: bool
    seed: int
    losses: list = field(default_factory=list)  # (steps,)
    entropies: list = field(default_factory=list)  # (steps, layers): mean entropy of each layer
    eval_loss: float = math.nan
    eval_accuracy: float = math.nan
    eval_entropies: list = field(default_factory=list)  # (layers,)
    qk_norms: list = field(default_factory=list)  # (layers,) ‖W_Q W_Kᵀ‖₂ / √d_k after training
    seconds: float = 0.0

    @property
    def min_entropy(self) -> float:
        """The smallest per-layer mean entropy on the evaluation set (the collapse criterion)."""
        return min(self.eval_entropies)


@single_thread()
def train_majority(
    reparam: bool = False,
    *,
    seed: int = 0,
    steps: int = 120,
    lr: float = 2e-2,
    batch: int = 64,
    n_bits: int = 32,
    d_model: int = 32,
    num_layers: int = 2,
    num_heads: int = 1,
    dim_feedforward: int | None = 64,
    eval_size: int = 512,
    progress: bool = True,
    model_out: list | None = None,
) -> CollapseRun:
    """Train a ``MajorityTransformer`` with Adam at ``lr``, without warm-up or weight decay.

    The defaults are chapter 03's CPU-sized setting (2 Pre-LN layers, d = 32, 120 steps, lr 2e-2,
    about a second or two a run); ``num_layers=4, d_model=64, dim_feedforward=None, steps=300,
    lr=1e-2`` is a larger setting in which the same collapse is seen.

    reparam: wrap every linear layer in σReparam (``attncourse.reparam.sigma_reparam``).
    Fresh random batches every step (``seed`` fixes the data, the initialisation and everything
    else). progress: a tqdm progress bar showing loss and the smallest layer entropy.
    Trains on one thread (``attncourse.threads.single_thread``): the fastest for a model this small.
    model_out: if a list is given, the trained model is appended to it.
    """
    torch.manual_seed(seed)
    model = MajorityTransformer(n_bits, d_model, num_layers, num_heads, dim_feedforward)
    if reparam:
        sigma_reparam(model)
    opt = torch.optim.Adam(model.parameters(), lr=lr, foreach=True)
    data = torch.Generator().manual_seed(1000 + seed)
    run = CollapseRun(reparam=reparam, seed=seed)
    bar = range(steps)
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(bar, desc=("σReparam" if reparam else "baseline") + f" seed {seed}", leave=True)
    start = time.perf_counter()
    model.train()
    for step in bar:
        tokens, labels = majority_batch(batch, n_bits, data)
        logits, weights = model(tokens)
        loss = cross_entropy(logits, labels)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        with torch.no_grad():
            ents = [float(attention_entropy(w.detach()).mean()) for w in weights]
        run.losses.append(float(loss.detach()))
        run.entropies.append(ents)
        if progress and step % 10 == 0:
            bar.set_postfix(loss=f"{float(loss.detach()):.3f}", min_H=f"{min(ents):.2f}")
    model.eval()
    tokens, labels = majority_batch(eval_size, n_bits, torch.Generator().manual_seed(99))
    with torch.no_grad():
        logits, weights = model(tokens)
    run.eval_loss = float(cross_entropy(logits, labels))
    run.eval_accuracy = float((logits.argmax(-1) == labels).float().mean())
    run.eval_entropies = layer_entropies(weights)
    run.qk_norms = qk_spectral_norms(model)
    run.seconds = time.perf_counter() - start
    if model_out is not None:
        model_out.append(model)
    return run


__all__ = [
    "CLS",
    "CollapseRun",
    "MajorityTransformer",
    "layer_entropies",
    "majority_batch",
    "qk_spectral_norms",
    "train_majority",
]
