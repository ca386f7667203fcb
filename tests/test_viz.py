"""What several chapters draw with: the attention heatmap, the widget figure."""

import base64

import matplotlib
import pytest
import torch

matplotlib.use("Agg")

from attncourse.viz import BlittedFigure, figure_widget, plot_attention  # noqa: E402


def test_plot_attention_draws_one_matrix_and_rejects_a_batch():
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    image = plot_attention(torch.softmax(torch.randn(1, 1, 4, 5), -1), ax=ax, title="w")
    assert image.get_array().shape == (4, 5)
    with pytest.raises(ValueError, match=r"\(T, S\)"):
        plot_attention(torch.rand(2, 3, 4, 5))
    plt.close(fig)


class Dot(BlittedFigure):
    def __init__(self):
        super().__init__(pyplot=False, figsize=(2, 2), dpi=50)
        ax = self.figure.add_subplot()
        (self.dot,) = ax.plot([0.5], [0.5], "o")
        ax.set(xlim=(0, 1), ylim=(0, 1))
        self._animate([self.dot])


def move(plot, x):
    plot.dot.set_data([x], [x])
    return x, plot.render_png(), f"x = {x}"


def test_a_figure_widget_also_offers_its_picture_to_viewers_without_a_kernel():
    import ipywidgets as widgets
    from IPython.core.formatters import DisplayFormatter

    box = figure_widget(Dot(), move, {"x": widgets.FloatSlider(value=0.2)}, [["x"]])
    image = box.children[-1]
    data, _ = DisplayFormatter().format(box)  # what a notebook stores for the cell
    assert "application/vnd.jupyter.widget-view+json" in data  # JupyterLab shows the widget
    first = base64.b64decode(data["image/png"])
    assert first.startswith(b"\x89PNG") and first == image.value
    box.controls["x"].value = 0.8  # the picture follows the widget's state
    data, _ = DisplayFormatter().format(box)
    assert base64.b64decode(data["image/png"]) == image.value != first
