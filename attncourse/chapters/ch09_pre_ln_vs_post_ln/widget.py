"""The chapter's widget: placement, depth, peak learning rate and warm-up pick one cell of a
grid of training runs computed in the notebook, and its loss and accuracy curves are redrawn."""

from __future__ import annotations

import math

import numpy as np

from ...i18n import say, speaking
from ...viz import BlittedFigure, figure_widget
from .model import NORM_PLACEMENTS

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
            with speaking("en"):  # a figure's text stays English (its fonts have no CJK glyphs)
                self._title.set_text(stability_caption(num_layers, lr, warmup, summary))
        return summary


# the widget's words, in the learner's language (``attncourse.i18n.say``; ``{...}``: filled in)
CAPTION = "N={N}, peak lr={lr}, warm-up={warmup}  |  final copy accuracy {accuracies}"
NOT_TRAINED = "not trained"
ALL, NORM, LAYERS, PEAK_LR, WARMUP = "all", "norm", "layers N", "peak lr", "warm-up"
SENTENCES = (CAPTION, NOT_TRAINED, ALL, NORM, LAYERS, PEAK_LR, WARMUP)


def stability_caption(num_layers: int, lr: float, warmup: int, summary: dict) -> str:
    """One line: the grid cell and the final accuracy of each placement shown."""
    text = ", ".join(f"{n}: {a:.2f}" for n, a in summary.items()) or say(NOT_TRAINED)
    return say(CAPTION, N=num_layers, lr=f"{lr:g}", warmup=warmup, accuracies=text)


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
            options=[
                (say(ALL), ALL),
                *((n, n) for n in sorted({k[0] for k in keys}, key=NORM_PLACEMENTS.index)),
            ],
            value=ALL,
            description=say(NORM),
        ),
        "num_layers": widgets.SelectionSlider(
            options=sorted({k[1] for k in keys}), description=say(LAYERS)
        ),
        "lr": widgets.SelectionSlider(
            options=sorted({k[2] for k in keys}), description=say(PEAK_LR)
        ),
        "warmup": widgets.SelectionSlider(
            options=sorted({k[3] for k in keys}), description=say(WARMUP)
        ),
    }
    controls["num_layers"].value = max(controls["num_layers"].options)
    controls["lr"].value = max(controls["lr"].options)

    return figure_widget(
        plot, stability_widget_update, controls, rows=[["norm"], ["num_layers", "lr", "warmup"]]
    )
