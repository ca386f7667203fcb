"""What several chapters draw with: the attention heatmap."""

import matplotlib
import pytest
import torch

matplotlib.use("Agg")

from attncourse.viz import plot_attention  # noqa: E402


def test_plot_attention_draws_one_matrix_and_rejects_a_batch():
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    image = plot_attention(torch.softmax(torch.randn(1, 1, 4, 5), -1), ax=ax, title="w")
    assert image.get_array().shape == (4, 5)
    with pytest.raises(ValueError, match=r"\(T, S\)"):
        plot_attention(torch.rand(2, 3, 4, 5))
    plt.close(fig)
