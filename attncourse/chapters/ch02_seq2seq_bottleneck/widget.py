"""The chapter-02 widget: ``decoding_traces`` (precomputed decoding steps), ``DecodingPlot``
(figure updated in place), ``decoding_widget_update`` (redraw) and ``decoding_widget`` (controls).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch

from ...i18n import say, speaking
from ...threads import single_thread
from ...viz import BlittedFigure, figure_widget
from .data import SQUARE_TASKS, make_target, source_position
from .model import greedy_decode


class DecodingTrace(NamedTuple):
    """One example decoded by one model, every step precomputed for the widget."""

    model: str
    task: str
    source: list  # (S,) token ids
    target: list  # (T,)
    output: list  # (T,) greedy tokens
    weights: np.ndarray  # (T, S) attention rows (zeros for "none")


@torch.no_grad()
def decoding_traces(models: dict, task: str, sources: torch.Tensor) -> dict:
    """Greedy-decode every source (B, S) with every model: {(model name, example index): trace}.

    The widget draws square alignments: ``task`` is copy or reverse."""
    if task not in SQUARE_TASKS:
        raise ValueError(f"the widget shows the square tasks {SQUARE_TASKS}, got {task!r}")
    target = make_target(task, sources)  # (B, S)
    traces = {}
    with single_thread():
        for name, model in models.items():
            tokens, weights = greedy_decode(model, sources)
            for b in range(sources.shape[0]):
                w = (
                    np.zeros((sources.shape[1], sources.shape[1]))
                    if weights is None
                    else weights[b].double().numpy()
                )
                traces[name, b] = DecodingTrace(
                    name, task, sources[b].tolist(), target[b].tolist(), tokens[b].tolist(), w
                )
    return traces


class DecodingPlot(BlittedFigure):
    """Left: the alignment matrix filled up to the current step t, with the true alignment
    outlined; right: row t (the weights α_t over source positions) as bars, the true source
    position marked. ``update(trace, t)`` only changes artists' data (blitting).
    """

    def __init__(self, length: int, pyplot: bool = False):
        super().__init__(pyplot, figsize=(9.0, 3.4), dpi=80)
        self.length = length
        fig = self.figure
        ax_m, ax_r = fig.add_subplot(1, 2, 1), fig.add_subplot(1, 2, 2)
        self._image = ax_m.imshow(
            np.zeros((length, length)),
            cmap="viridis",
            vmin=0,
            vmax=1,
            aspect="auto",
            interpolation="nearest",
        )
        ax_m.set(
            xlabel="source position j",
            ylabel="target step t",
            title="alignment alpha_tj (rows so far)",
        )
        (self._cursor,) = ax_m.plot([], [], color="w", lw=1.5)
        (self._truth,) = ax_m.plot([], [], "r+", ms=5, alpha=0.8)
        self._bars = list(ax_r.bar(range(length), [0.0] * length, color="tab:blue"))
        (self._true_pos,) = ax_r.plot([], [], "rv", ms=9)
        ax_r.set(
            xlim=(-0.6, length - 0.4),
            ylim=(0, 1.05),
            xlabel="source position j",
            title="row t: weights over the source",
        )
        fig.subplots_adjust(
            left=0.07, right=0.98, top=0.8 if pyplot else 0.9, bottom=0.15, wspace=0.25
        )
        self._title = fig.suptitle("", fontsize=9) if pyplot else None
        self._animate([self._image, self._cursor, self._truth, *self._bars, self._true_pos])

    def update(self, trace: DecodingTrace, t: int) -> None:
        n = len(trace.source)
        if n != self.length:
            raise ValueError(f"this plot shows length {self.length}, the trace has length {n}")
        if not 0 <= t < n:
            raise ValueError(f"step t must be in [0, {n}), got {t}")
        shown = np.zeros_like(trace.weights)
        shown[: t + 1] = trace.weights[: t + 1]
        self._image.set_data(shown)
        self._cursor.set_data([-0.5, n - 0.5], [t, t])
        truth = [source_position(trace.task, r, n) for r in range(n)]
        self._truth.set_data(truth, list(range(n)))
        for bar, h in zip(self._bars, trace.weights[t].tolist()):
            bar.set_height(h)
        self._true_pos.set_data([truth[t]], [1.0])
        if self._title is not None:
            with speaking("en"):  # a figure's text stays English (its fonts have no CJK glyphs)
                self._title.set_text(decoding_caption(trace, t))


# the widget's words, in the learner's language (``attncourse.i18n.say``; ``{...}``: filled in)
CAPTION = "{name}, step t = {t}: wrote {got} {mark} | {where} | sequence accuracy {correct}/{n}"
NO_ATTENTION = "no attention: the same fixed C at every step"
PEAK = "attention peak at j = {j} (weight {weight}), true position {true}"
CORRECT = "correct"
WRONG = "WRONG (want {want})"
SOURCE, TARGET, OUTPUT = "source: ", "target: ", "output: "
MODEL, EXAMPLE, STEP = "model", "example", "step t"
SENTENCES = (
    CAPTION,
    NO_ATTENTION,
    PEAK,
    CORRECT,
    WRONG,
    SOURCE,
    TARGET,
    OUTPUT,
    MODEL,
    EXAMPLE,
    STEP,
)


def decoding_caption(trace: DecodingTrace, t: int) -> str:
    """One line of text for step t: the token read, the token written, where attention peaks."""
    n = len(trace.source)
    j_true = source_position(trace.task, t, n)
    got, want = trace.output[t], trace.target[t]
    if trace.model == "none":
        where = say(NO_ATTENTION)
    else:
        j = int(np.argmax(trace.weights[t]))
        where = say(PEAK, j=j, weight=f"{trace.weights[t, j]:.2f}", true=j_true)
    mark = say(CORRECT) if got == want else say(WRONG, want=want)
    correct = sum(o == w for o, w in zip(trace.output, trace.target))
    name = trace.model if trace.task in trace.model else f"{trace.model}, {trace.task}"
    return say(CAPTION, name=name, t=t, got=got, mark=mark, where=where, correct=correct, n=n)


def decoding_widget_update(plot: DecodingPlot, traces: dict, model: str, example: int, t: int):
    """One widget update: look the trace up, move the artists, render -> (trace, png, caption).
    Nothing is computed here but the redraw; the benchmark times exactly this function."""
    trace = traces[model, example]
    plot.update(trace, t)
    return trace, plot.render_png(), decoding_caption(trace, t)


def decoding_widget(traces: dict, model: str | None = None, example: int = 0, t: int = 0):
    """The chapter-02 widget: choose a model and an example, step through greedy decoding and
    watch the alignment row move (all steps precomputed by ``decoding_traces``)."""
    import ipywidgets as widgets

    names = list(dict.fromkeys(name for name, _ in traces))
    examples = sorted({b for _, b in traces})
    model = names[0] if model is None else model
    length = len(traces[model, example].source)
    plot = DecodingPlot(length)
    style = {"description_width": "90px"}
    controls = {
        "model": widgets.ToggleButtons(
            options=names, value=model, description=say(MODEL), style=style
        ),
        "example": widgets.Dropdown(
            options=examples, value=example, description=say(EXAMPLE), style=style
        ),
        "t": widgets.IntSlider(
            value=t, min=0, max=length - 1, step=1, description=say(STEP), style=style
        ),
    }

    def update(plot, model, example, t):
        trace, png, caption = decoding_widget_update(plot, traces, model, example, t)
        return trace, png, sequences_html(trace, t) + "<br>" + caption

    return figure_widget(plot, update, controls, rows=[["model"], ["example", "t"]])


def sequences_html(trace: DecodingTrace, t: int) -> str:
    """Source, target and the output written up to step t (green right, red wrong, step t bold)."""
    cells = []
    for i, (o, w) in enumerate(zip(trace.output, trace.target)):
        color, weight = ("green" if o == w else "red"), ("bold" if i == t else "normal")
        cells.append(
            f"<span style='color:{color};font-weight:{weight}'>{o if i <= t else '·'}</span>"
        )
    return (
        say(SOURCE)
        + " ".join(str(x) for x in trace.source)
        + "<br>"
        + say(TARGET)
        + " ".join(str(x) for x in trace.target)
        + "<br>"
        + say(OUTPUT)
        + " ".join(cells)
    )
