"""Training the chapter's model on a copy task with and without learning-rate warm-up (Xiong et
al. 2020, Fig. 2's effect), the update/data ratio of each step, DeepNorm's constants, and
makemore-style histograms of every block's activations and gradients.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch

from ...losses import cross_entropy
from ...threads import single_thread
from .model import CausalLM

# ------------------------------------------------------------------------------- the copy task


def copy_batch(batch: int, length: int, vocab: int, generator: torch.Generator):
    """Copy task: [a_1 … a_n, SEP, a_1 … a_n]; the model must predict the second half.

    Tokens a_i are uniform over ``vocab`` symbols (so a model that has learnt nothing predicts
    with loss ln(vocab)); SEP = ``vocab``. Returns inputs (B, 2n) and targets (B, 2n) with −100
    (ignored) before the copy starts.
    """
    a = torch.randint(vocab, (batch, length), generator=generator)  # (B, n)
    sep = torch.full((batch, 1), vocab)
    seq = torch.cat([a, sep, a], dim=1)  # (B, 2n + 1)
    inputs, targets = seq[:, :-1], seq[:, 1:].clone()  # (B, 2n)
    targets[:, :length] = -100  # only the copy is scored
    return inputs, targets


def copy_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy over the scored positions (targets != −100): (B, 2n, V), (B, 2n) -> ()."""
    scored = targets != -100  # (B, 2n)
    return cross_entropy(logits[scored], targets[scored])


def warmup_schedule(steps: int, peak_lr: float, warmup_steps: int) -> torch.Tensor:
    """Linear warm-up: lr_t = peak · min(1, (t + 1) / warmup) for t = 0 … steps−1.

    Constant (lr_t = peak) if warmup = 0.
    """
    t = torch.arange(steps, dtype=torch.float64)  # (steps,)
    if warmup_steps <= 0:
        return torch.full((steps,), float(peak_lr), dtype=torch.float64)
    return peak_lr * torch.clamp((t + 1) / warmup_steps, max=1.0)  # (steps,)


def update_data_ratio(before: torch.Tensor, after: torch.Tensor) -> torch.Tensor:
    """std(after − before) / std(before), makemore's update/data ratio: how large one optimiser
    step is relative to the weights."""
    return (after - before).std() / before.std()


def deepnorm_constants(num_layers: int) -> torch.Tensor:
    """DeepNorm's (α, β) for an N-layer decoder-only model such as the chapter's causal LM:
    ((2N)^¼, (8N)^−¼) (Wang et al. 2022, who write M for a decoder's depth; an encoder-only
    model uses the same constants, an encoder–decoder model others)."""
    return torch.tensor([(2 * num_layers) ** 0.25, (8 * num_layers) ** -0.25], dtype=torch.float64)


@dataclass
class Run:
    """One training run: curves per step, final accuracy, and update/data ratios per block."""

    norm: str
    num_layers: int
    lr: float
    warmup: int
    seed: int
    loss: np.ndarray
    accuracy: np.ndarray
    # (ratio_steps, N): log10 update/data
    ratio: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))

    @property
    def final_accuracy(self) -> float:
        return float(self.accuracy[-10:].mean())

    @property
    def final_loss(self) -> float:
        return float(self.loss[-10:].mean())


@single_thread()
def train_copy(
    norm: str,
    num_layers: int,
    lr: float,
    warmup: int,
    *,
    seed: int = 0,
    steps: int = 150,
    batch: int = 32,
    length: int = 6,
    vocab: int = 16,
    d_model: int = 32,
    num_heads: int = 4,
    ratio_steps: int = 0,
    model_out: list | None = None,
) -> Run:
    """Train a causal LM on the copy task with Adam(β = (0.9, 0.98)) and a linear warm-up.

    Loss and accuracy are those of the training batch at each step (fresh random data every
    step, so there is no overfitting to tell apart). For the first ``ratio_steps`` steps, also
    records per block log10 of the update/data ratio of its weight matrices (mean over them).
    """
    torch.manual_seed(seed)
    model = CausalLM(vocab + 1, d_model, num_heads, num_layers, norm=norm, max_len=2 * length + 1)
    # fused: one kernel a step
    opt = torch.optim.Adam(model.parameters(), lr=lr, betas=(0.9, 0.98), fused=True)
    schedule = warmup_schedule(steps, lr, warmup)
    g = torch.Generator().manual_seed(10_000 + seed)
    losses, accs, ratios = np.zeros(steps), np.zeros(steps), []
    mats = [[p for p in b.parameters() if p.ndim == 2] for b in model.blocks]
    for step in range(steps):
        for group in opt.param_groups:
            group["lr"] = float(schedule[step])
        inputs, targets = copy_batch(batch, length, vocab, g)
        logits = model(inputs)  # (B, 2n, vocab + 1)
        loss = copy_loss(logits, targets)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        record = step < ratio_steps
        before = [[p.detach().clone() for p in ps] for ps in mats] if record else None
        opt.step()
        if record:
            ratios.append(
                [
                    np.mean(
                        [
                            math.log10(float(update_data_ratio(b0, p.detach())) + 1e-30)
                            for b0, p in zip(bs, ps)
                        ]
                    )
                    for bs, ps in zip(before, mats)
                ]
            )
        scored = targets != -100
        losses[step] = float(loss.detach())
        accs[step] = float((logits.argmax(-1)[scored] == targets[scored]).float().mean())
    if model_out is not None:
        model_out.append(model)
    return Run(norm, num_layers, lr, warmup, seed, losses, accs, np.asarray(ratios))


def block_histograms(model: CausalLM, inputs: torch.Tensor, targets: torch.Tensor):
    """makemore-style per-block statistics: activations and gradients of every block's output.

    Returns a list (one per block) of dicts with ``act``/``grad`` histograms (density, bin
    centres) and their standard deviations.
    """
    logits = model(inputs)
    for x in model.stream:
        x.retain_grad()
    copy_loss(logits, targets).backward()
    out = []
    for x in model.stream[1:]:
        a, gr = x.detach().flatten().numpy(), x.grad.flatten().numpy()
        ha, ea = np.histogram(a, bins=50, density=True)
        hg, eg = np.histogram(gr, bins=50, density=True)
        out.append(
            {
                "act": (ha, (ea[1:] + ea[:-1]) / 2),
                "grad": (hg, (eg[1:] + eg[:-1]) / 2),
                "act_std": float(a.std()),
                "grad_std": float(gr.std()),
            }
        )
    model.zero_grad(set_to_none=True)
    return out
