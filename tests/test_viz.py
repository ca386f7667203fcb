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


def test_encode_png_is_a_png_of_exactly_the_pixels():
    import io

    import numpy as np
    from PIL import Image

    from attncourse.viz import encode_png

    rng = np.random.default_rng(0)
    opaque = rng.integers(0, 256, (7, 5, 4), dtype=np.uint8)
    opaque[:, :, 3] = 255
    image = Image.open(io.BytesIO(encode_png(opaque)))
    assert image.mode == "RGB" and (np.asarray(image) == opaque[:, :, :3]).all()
    clear = opaque.copy()
    clear[0, 0, 3] = 10
    image = Image.open(io.BytesIO(encode_png(clear)))
    assert image.mode == "RGBA" and (np.asarray(image) == clear).all()


def test_encode_png_costs_less_than_pillow_s_fastest_png():
    """The widgets' hot path: a chapter-sized figure, CPU time, interleaved runs."""
    import io
    import time

    import numpy as np
    from PIL import Image

    from attncourse.viz import encode_png

    plot = Dot()
    plot.figure.set_size_inches(8.4, 2.8)
    plot.figure.set_dpi(100)
    plot.render()
    rgba = np.asarray(plot.figure.canvas.buffer_rgba())

    def pillow():
        image = Image.frombuffer("RGBA", rgba.shape[1::-1], rgba, "raw", "RGBA", 0, 1)
        out = io.BytesIO()
        image.save(out, format="png", compress_level=1)
        return out.getvalue()

    spent = {"ours": 0.0, "pillow": 0.0}
    for _ in range(5):
        for name, encode in (("ours", lambda: encode_png(rgba)), ("pillow", pillow)):
            start = time.thread_time()
            for _ in range(10):
                encode()
            spent[name] += time.thread_time() - start
    assert spent["ours"] < spent["pillow"], spent
    assert len(encode_png(rgba)) < 1.5 * len(pillow())  # and files about as small


def test_a_widget_update_runs_on_one_thread_and_sends_the_image_last():
    import ipywidgets as widgets

    seen = []

    def update(plot, x):
        seen.append(torch.get_num_threads())
        return move(plot, x)

    box = figure_widget(Dot(), update, {"x": widgets.FloatSlider(value=0.2)}, [["x"]])
    readout, image = box.children[-2], box.children[-1]
    order = []
    readout.observe(lambda _: order.append("caption"), names="value")
    image.observe(lambda _: order.append("image"), names="value")
    threads = torch.get_num_threads()
    box.controls["x"].value = 0.7
    assert seen[-1] == 1 and torch.get_num_threads() == threads
    assert order == ["caption", "image"]
