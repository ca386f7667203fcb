"""What several chapters draw with: the widget figure base and an attention heatmap.

Every widget of the course is a thin shell around a plain function that tests and benchmarks call:
a ``BlittedFigure`` subclass draws its figure once and afterwards only updates its artists in place,
and ``figure_widget`` wires controls to it and shows the figure as a PNG image widget, which works
in JupyterLab, Notebook and Voila without any extra plotting extension. ``plot_attention`` draws
one (T, S) attention matrix.
"""

import base64
import struct
import zlib

import numpy as np
import torch
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure


class BlittedFigure:
    """Base of the widget figures: the static part is drawn once and cached; each update redraws
    only the moving artists (blitting), then ``render_png`` gives what the widget shows.

    ``pyplot=False`` (for widgets): a free-standing Agg figure, blitted. ``pyplot=True``: a figure
    made by ``matplotlib.pyplot``, redrawn whole, for a static snapshot shown with ``plt.show()``.
    A subclass draws on ``self.figure`` and names the artists that change with ``_animate``.
    """

    def __init__(self, pyplot: bool, figsize, dpi: int):
        if pyplot:
            import matplotlib.pyplot as plt

            self.figure = plt.figure(figsize=figsize, dpi=dpi)
        else:
            self.figure = Figure(figsize=figsize, dpi=dpi)
            FigureCanvasAgg(self.figure)
        self._blit, self._background, self._moving = not pyplot, None, ()

    def _animate(self, artists) -> None:
        """The artists that updates move: left out of the cached background when blitting."""
        self._moving = tuple(artists)
        if self._blit:
            for artist in self._moving:
                artist.set_animated(True)

    def render(self) -> None:
        """Bring the canvas up to date: the cached background plus the moving artists."""
        canvas = self.figure.canvas
        if not self._blit:
            canvas.draw()
            return
        if self._background is None:
            canvas.draw()  # everything static (animated artists are skipped)
            self._background = canvas.copy_from_bbox(self.figure.bbox)
        canvas.restore_region(self._background)
        renderer = canvas.get_renderer()
        for artist in self._moving:
            artist.draw(renderer)

    def render_png(self) -> bytes:
        """The up-to-date figure as PNG bytes (what the widget displays)."""
        self.render()
        return encode_png(np.asarray(self.figure.canvas.buffer_rgba()))


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def encode_png(rgba: np.ndarray) -> bytes:
    """An (H, W, 4) uint8 image as a PNG: RGB when every pixel is opaque (a figure's usual white
    background), else RGBA; rows unfiltered, deflated at level 1.

    It is the widgets' hot path: about half the CPU time of Pillow's PNG encoder at its fastest
    setting (Pillow chooses a filter for every row), for files of the same size. The pixels are
    copied one channel at a time: numpy copies RGBA to RGB in runs of 3 bytes otherwise, 2.6 ms
    instead of 0.3 for an 800 x 352 figure.
    """
    height, width, _ = rgba.shape
    opaque = bool(rgba[:, :, 3].min() == 255)
    channels = 3 if opaque else 4
    rows = np.empty((height, 1 + width * channels), np.uint8)  # filter byte 0 per row
    rows[:, 0] = 0
    pixels = rows[:, 1:].reshape(height, width, channels, copy=False)  # (H, W, C) view of rows
    for channel in range(channels):
        pixels[:, :, channel] = rgba[:, :, channel]
    header = struct.pack(">IIBBBBB", width, height, 8, 2 if opaque else 6, 0, 0, 0)
    return b"".join(
        (
            b"\x89PNG\r\n\x1a\n",
            _chunk(b"IHDR", header),
            _chunk(b"IDAT", zlib.compress(rows, 1)),
            _chunk(b"IEND", b""),
        )
    )


def figure_widget(plot: BlittedFigure, update, controls: dict, rows, font_size: str = "inherit"):
    """A widget of ``controls`` over ``plot``: every change calls ``update(plot, **values)``, which
    returns (numbers, png, caption), and shows the PNG and the caption at once.

    ``rows``: lists of control names, one ``HBox`` each. The box keeps ``controls`` and ``plot``
    (handles for tests and for driving the widget from code).
    """
    import ipywidgets as widgets

    from .threads import single_thread

    image, readout = widgets.Image(format="png"), widgets.HTML()

    def redraw(_change=None):
        # one intra-op thread: a widget's tensors are small, and on two cores a second thread
        # only competes with the kernel's messaging, the server and the browser
        with single_thread():
            _, png, text = update(plot, **{name: c.value for name, c in controls.items()})
        # the caption first, the image last: once the image is queued the kernel is done, and
        # its message leaves at once instead of waiting for the caption's turn
        readout.value = f"<code style='font-size:{font_size}'>{text}</code>"
        image.value = png

    for c in controls.values():
        c.observe(redraw, names="value")
    redraw()
    box = widgets.VBox(
        [*(widgets.HBox([controls[name] for name in row]) for row in rows), readout, image]
    )
    box.controls, box.plot = controls, plot
    widget_bundle = box._repr_mimebundle_

    def bundle_with_picture(**kwargs):
        """The widget view, and beside it the figure as it is now (a PNG) for viewers that
        cannot run widgets: a static page (``attncourse site``), GitHub, a notebook not yet run.
        JupyterLab and Voila show the widget.
        """
        data = widget_bundle(**kwargs)
        if data is not None and image.value:
            data["image/png"] = base64.b64encode(image.value).decode("ascii")
        return data

    box._repr_mimebundle_ = bundle_with_picture
    return box


def plot_attention(weights, ax=None, x_labels=None, y_labels=None, title=None, cmap="viridis"):
    """Heatmap of one attention matrix (T, S): rows are queries, columns are keys.

    Accepts any tensor whose last two dimensions are (T, S) after squeezing, e.g. one head of a
    (B, H, T, S) tensor: ``plot_attention(w[0, 0])``. Returns the matplotlib image.
    """
    import matplotlib.pyplot as plt

    w = torch.as_tensor(weights).detach().squeeze()
    if w.dim() != 2:
        raise ValueError(f"plot_attention takes one (T, S) matrix, got shape {tuple(w.shape)}")
    ax = plt.gca() if ax is None else ax
    image = ax.imshow(
        w.float().cpu().numpy(), cmap=cmap, vmin=0, vmax=max(float(w.max()), 1e-12), aspect="auto"
    )
    ax.set(xlabel="key j", ylabel="query i")
    if x_labels is not None:
        ax.set_xticks(range(len(x_labels)), x_labels)
    if y_labels is not None:
        ax.set_yticks(range(len(y_labels)), y_labels)
    if title:
        ax.set_title(title)
    ax.figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    return image
