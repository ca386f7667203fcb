"""Chapter 02's figures: alignment matrices side by side (Bahdanau et al. 2015, Fig. 3) and
accuracy against source length (Fig. 2), drawn the same way in every section.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch

from .data import source_position, target_length

#: one colour and marker per chapter model, so that a model looks the same in every figure
STYLES = {
    "none": ("k", "o-"),
    "none, wide": ("0.5", "o--"),
    "additive": ("tab:red", "s-"),
    "dot": ("tab:blue", "^-"),
    "general": ("tab:green", "v-"),
    "concat": ("tab:purple", "d-"),
    "local-m": ("tab:orange", "x--"),
}


def show_alignments(
    panels: Mapping[str, torch.Tensor],
    tasks: Mapping[str, str] | None = None,
    title: str | None = None,
    size: float = 3.0,
):
    """A row of alignment matrices α_tj, one per entry of ``panels`` ({title: (T, S) weights}):
    target step t down, source position j across (both counted from 0), one colour scale from 0
    to 1. ``tasks`` ({title: "copy" / "reverse" / "duplicate"}) marks with red rings where the task
    says each step should read. Returns the figure (end the cell with ``plt.show()``)."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    tasks = dict(tasks or {})
    fig, axes = plt.subplots(1, len(panels), figsize=(size * len(panels) + 0.6, size + 0.4))
    axes = [axes] if len(panels) == 1 else list(axes)
    for ax, (name, w) in zip(axes, panels.items()):
        w = torch.as_tensor(w).detach().double()
        if w.dim() != 2:
            raise ValueError(f"panel {name!r}: one (T, S) matrix, got shape {tuple(w.shape)}")
        ax.imshow(w.numpy(), cmap="viridis", vmin=0, vmax=1, aspect="auto", interpolation="nearest")
        task = tasks.get(name)
        if task is not None:
            T, S = w.shape
            if target_length(task, S) != T:
                raise ValueError(f"panel {name!r}: {T} rows do not fit {task} on {S} positions")
            truth = [source_position(task, t, S) for t in range(T)]
            ax.plot(truth, range(T), "o", mfc="none", mec="red", ms=3.5, mew=0.8)
        ax.set(title=name, xlabel="source position j")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    axes[0].set_ylabel("target step t")
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def plot_accuracy(
    accuracy: Mapping[str, torch.Tensor],
    lengths: Sequence[int],
    num_tokens: int = 20,
    ax=None,
    title: str | None = None,
):
    """Token accuracy (%) against source length, one line per model ({name: (len(lengths),)}),
    with chance 1/V dotted. Returns the axes."""
    import matplotlib.pyplot as plt

    ax = plt.gca() if ax is None else ax
    for name, acc in accuracy.items():
        colour, marker = STYLES.get(name, STYLES.get(name.split(",")[0], ("0.3", ".-")))
        ax.plot(lengths, 100 * torch.as_tensor(acc).double(), marker, c=colour, label=name)
    ax.axhline(100 / num_tokens, ls=":", c="0.5", lw=1, label="chance (1/V)")
    ax.set(xlabel="source length n", ylabel="token accuracy (%)", ylim=(0, 103), title=title)
    ax.legend(fontsize=7, ncol=2)
    return ax


__all__ = ["STYLES", "plot_accuracy", "show_alignments"]
