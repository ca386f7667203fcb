"""Pre-LN vs Post-LN vs DeepNorm: a small causal language model built from
``attncourse.blocks.TransformerBlock``, its gradients at initialisation (Xiong et al. 2020, Thm. 1,
Fig. 3), training on a copy task with and without learning-rate warm-up (Xiong Fig. 2's effect),
makemore-style diagnostics, and the plain update function behind chapter 09's widget
(source 004 §5.3.5, Eq. 5.3.10–5.3.12).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from .._validation import require_choice
from ..blocks import TransformerBlock
from ..losses import cross_entropy
from ..norms import LayerNorm
from ..threads import single_thread
from ..viz import BlittedFigure, figure_widget

NORM_PLACEMENTS = TransformerBlock.NORM_PLACEMENTS  # ("post", "pre", "deepnorm")


class CausalLM(nn.Module):
    """Token + learned position embeddings → N TransformerBlocks (causal) → [final LN] → logits.

    ``norm``: "post" (Eq. 5.3.10), "pre" (Eq. 5.3.11, with the final LayerNorm that Pre-LN needs,
    as in Xiong et al. 2020) or "deepnorm" (Wang et al. 2022). Linear weights are Xavier-normal
    (DeepNorm blocks keep their own β-scaled init), biases 0, embeddings N(0, 1/d).
    ``forward`` returns logits (B, T, vocab) and keeps every block's output in ``self.stream``.
    """

    def __init__(
        self,
        vocab: int,
        d_model: int = 32,
        num_heads: int = 4,
        num_layers: int = 6,
        norm: str = "pre",
        max_len: int = 64,
        dim_feedforward: int | None = None,
    ):
        super().__init__()
        require_choice("norm", norm, NORM_PLACEMENTS)
        self.norm = norm
        self.tok = nn.Embedding(vocab, d_model)
        self.pos = nn.Embedding(max_len, d_model)
        self.blocks = nn.ModuleList(
            TransformerBlock(d_model, num_heads, dim_feedforward, norm=norm, num_layers=num_layers)
            for _ in range(num_layers)
        )
        self.final_norm = LayerNorm(d_model) if norm == "pre" else nn.Identity()
        self.head = nn.Linear(d_model, vocab)
        for name, module in self.named_modules():
            if isinstance(module, nn.Linear):
                if not (norm == "deepnorm" and name.startswith("blocks.")):
                    nn.init.xavier_normal_(module.weight)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
            elif isinstance(module, nn.Embedding):
                nn.init.normal_(module.weight, std=d_model**-0.5)
        self.stream: list[torch.Tensor] = []

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        T = tokens.shape[1]
        x = self.tok(tokens) + self.pos(torch.arange(T))  # (B, T, d)
        self.stream = [x]
        for block in self.blocks:
            x, _ = block(x, causal=True)  # (B, T, d)
            self.stream.append(x)
        return self.head(self.final_norm(x))  # (B, T, vocab)


# ------------------------------------------------------------------ gradients at initialisation


@single_thread()
def init_gradients(
    norm: str,
    num_layers: int,
    *,
    d_model: int = 64,
    num_heads: int = 4,
    vocab: int = 64,
    batch: int = 8,
    length: int = 32,
    seeds=(0, 1),
    final_norm: bool = True,
    through_branches: bool = True,
    dtype: torch.dtype = torch.float32,
) -> dict:
    """Gradients of a freshly initialised causal LM on random tokens (Xiong et al. 2020, Fig. 3).

    Returns (averaged over ``seeds``) ``w2``: ‖∂L/∂W^{2,l}‖_F for each layer's second FFN weight
    (the W^{2,L} of Thm. 1 is the last one), ``dx``: ‖∂L/∂x_l‖_F for the residual stream x_l
    (l = 0 … N; x_0 the embeddings, x_l block l's output) and ``rms``: the RMS of x_l (l = 0 … N).

    Two switches take Pre-LN apart (``norm="pre"`` only): ``final_norm=False`` drops the final
    LayerNorm before the output layer; ``through_branches=False`` keeps the forward pass but lets
    the backward pass reach x_l only along the identity paths (each sublayer reads a detached
    copy of the stream), so ∂L/∂x_l = ∂L/∂x_N: Eq. (5.3.12) without its ∂F/∂x term.
    """
    if (not final_norm or not through_branches) and norm != "pre":
        raise ValueError("final_norm and through_branches take a Pre-LN model apart: norm='pre'")
    w2, dx, rms = [], [], []
    for seed in seeds:
        torch.manual_seed(seed)
        model = CausalLM(vocab, d_model, num_heads, num_layers, norm=norm, max_len=length)
        model = model.to(dtype)
        if not final_norm:
            model.final_norm = nn.Identity()
        g = torch.Generator().manual_seed(1000 + seed)
        tokens = torch.randint(vocab, (batch, length + 1), generator=g)
        if through_branches:
            logits = model(tokens[:, :-1])  # (B, T, vocab)
        else:
            logits = _pre_ln_identity_backward(model, tokens[:, :-1])  # (B, T, vocab)
        for x in model.stream:
            x.retain_grad()
        cross_entropy(logits, tokens[:, 1:]).backward()
        w2.append([float(b.ffn[2].weight.grad.norm()) for b in model.blocks])
        dx.append([float(x.grad.norm()) for x in model.stream])
        rms.append([float(x.detach().pow(2).mean().sqrt()) for x in model.stream])
    mean = lambda rows: np.asarray(rows).mean(0)  # noqa: E731
    return {"w2": mean(w2), "dx": mean(dx), "rms": mean(rms)}


def _pre_ln_identity_backward(model: CausalLM, tokens: torch.Tensor) -> torch.Tensor:
    """``model(tokens)`` for a Pre-LN model, with every sublayer reading a detached copy of the
    stream: the same numbers forward, gradients to x_l only through the identity paths."""
    T = tokens.shape[1]
    x = model.tok(tokens) + model.pos(torch.arange(T))  # (B, T, d)
    model.stream = [x]
    for block in model.blocks:
        x = x + block.attn(block.norm1(x.detach()), causal=True)[0]  # (B, T, d)
        x = x + block.ffn(block.norm2(x.detach()))  # (B, T, d)
        model.stream.append(x)
    return model.head(model.final_norm(x))  # (B, T, vocab)


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
    """DeepNorm's (α, β) for an N-layer encoder-only model: ((2N)^¼, (8N)^−¼) (Wang et al. 2022)."""
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


# ---------------------------------------------------------------------------------- the widget


def grid_key(norm: str, num_layers: int, lr: float, warmup: int) -> tuple:
    return (norm, int(num_layers), float(lr), int(warmup))


def smooth(values: np.ndarray, width: int = 5) -> np.ndarray:
    """Moving average over ``width`` steps (same length; the first points average fewer)."""
    c = np.cumsum(np.insert(np.nan_to_num(values, nan=np.nan), 0, 0.0))
    n = np.arange(1, len(values) + 1)
    lo = np.maximum(n - width, 0)
    return (c[n] - c[lo]) / (n - lo)


class StabilityPlot(BlittedFigure):
    """Loss and accuracy curves of one grid cell (one line per seed and placement).

    Drawn once; ``update`` changes the lines' data and visibility in place (no new artists), and
    the widget's figure redraws only those lines (see ``BlittedFigure``).
    """

    COLORS = {"post": "tab:red", "pre": "tab:blue", "deepnorm": "tab:green"}

    def __init__(self, runs: dict, vocab: int = 16, pyplot: bool = False):
        super().__init__(pyplot, figsize=(9, 3), dpi=80)
        self.runs = runs
        self.seeds = max(len(v) for v in runs.values())
        steps = max(len(r.loss) for v in runs.values() for r in v)
        self.ax_loss, self.ax_acc = self.figure.subplots(1, 2)
        self.lines = {}
        for norm in sorted({k[0] for k in runs}, key=NORM_PLACEMENTS.index):
            for s in range(self.seeds):
                kw = {
                    "color": self.COLORS[norm],
                    "lw": 1.8 if s == 0 else 1.0,
                    "alpha": 1.0 if s == 0 else 0.6,
                    "label": norm if s == 0 else None,
                }
                (l1,) = self.ax_loss.plot([], [], **kw)
                (l2,) = self.ax_acc.plot([], [], **kw)
                self.lines[norm, s] = (l1, l2)
        self.ax_loss.axhline(math.log(vocab), ls="--", c="k", lw=1)
        self.ax_loss.text(
            steps * 0.55, math.log(vocab) + 0.1, f"ln {vocab}: uniform guess", fontsize=8
        )
        self.ax_loss.set(
            xlabel="step",
            ylabel="training loss",
            xlim=(0, steps - 1),
            ylim=(0, math.log(vocab) + 1.2),
        )
        self.ax_acc.set(
            xlabel="step", ylabel="copy accuracy", xlim=(0, steps - 1), ylim=(-0.02, 1.02)
        )
        self.ax_acc.legend(fontsize=8, loc="lower right")
        self.figure.subplots_adjust(
            left=0.08, right=0.98, bottom=0.17, top=0.85 if pyplot else 0.95, wspace=0.25
        )
        self._title = (
            self.figure.text(0.5, 0.97, "", ha="center", va="top", fontsize=9) if pyplot else None
        )
        self._animate(line for pair in self.lines.values() for line in pair)

    def update(self, num_layers: int, lr: float, warmup: int, norms=NORM_PLACEMENTS) -> dict:
        """Show the runs of (depth, lr, warm-up); ``norms`` selects which placements are visible.
        Returns {norm: mean final accuracy} of the visible ones."""
        summary = {}
        for (norm, s), (l1, l2) in self.lines.items():
            runs = self.runs.get(grid_key(norm, num_layers, lr, warmup), [])
            visible = norm in norms and s < len(runs)
            l1.set_visible(visible)
            l2.set_visible(visible)
            if visible:
                x = np.arange(len(runs[s].loss))
                l1.set_data(x, smooth(runs[s].loss))
                l2.set_data(x, smooth(runs[s].accuracy))
                summary[norm] = float(np.mean([r.final_accuracy for r in runs]))
        if self._title is not None:
            self._title.set_text(stability_caption(num_layers, lr, warmup, summary))
        return summary


def stability_caption(num_layers: int, lr: float, warmup: int, summary: dict) -> str:
    """One line: the grid cell and the final accuracy of each placement shown."""
    text = ", ".join(f"{n}: {a:.2f}" for n, a in summary.items()) or "not trained"
    return f"N={num_layers}, peak lr={lr:g}, warm-up={warmup}  |  final copy accuracy {text}"


def stability_widget_update(
    plot: StabilityPlot, norm: str, num_layers: int, lr: float, warmup: int
):
    """The widget's update: ``norm`` is one placement or "all" -> (accuracies, png, caption)."""
    summary = plot.update(num_layers, lr, warmup, NORM_PLACEMENTS if norm == "all" else (norm,))
    return summary, plot.render_png(), stability_caption(num_layers, lr, warmup, summary)


def stability_widget(runs: dict, vocab: int = 16):
    """The chapter-09 widget: norm placement, depth, peak learning rate and warm-up pick one cell
    of the precomputed ``runs``; its curves are redrawn at once (nothing is trained)."""
    import ipywidgets as widgets

    keys = list(runs)
    plot = StabilityPlot(runs, vocab)
    controls = {
        "norm": widgets.ToggleButtons(
            options=["all", *sorted({k[0] for k in keys}, key=NORM_PLACEMENTS.index)],
            value="all",
            description="norm",
        ),
        "num_layers": widgets.SelectionSlider(
            options=sorted({k[1] for k in keys}), description="layers N"
        ),
        "lr": widgets.SelectionSlider(options=sorted({k[2] for k in keys}), description="peak lr"),
        "warmup": widgets.SelectionSlider(
            options=sorted({k[3] for k in keys}), description="warm-up"
        ),
    }
    controls["num_layers"].value = max(controls["num_layers"].options)
    controls["lr"].value = max(controls["lr"].options)

    return figure_widget(
        plot, stability_widget_update, controls, rows=[["norm"], ["num_layers", "lr", "warmup"]]
    )
