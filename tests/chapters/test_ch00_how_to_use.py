"""Chapter 00's first widget draws softmax(scores / temperature) as text bars."""

import torch

from attncourse.chapters.ch00_how_to_use import temperature_bars


def test_temperature_bars_shows_the_softmax_at_that_temperature():
    html = temperature_bars([2.0, 1.0, 0.5, -1.0], temperature=0.5)
    alpha = torch.softmax(torch.tensor([2.0, 1.0, 0.5, -1.0], dtype=torch.float64) / 0.5, -1)
    assert html.count("<div") == 4
    for i, a in enumerate(alpha.tolist()):
        assert f"key {i}: {'█' * int(40 * a)} {a:.3f}</div>" in html
    assert "key 0: " + "█" * 10 in temperature_bars(
        [0.0] * 4, temperature=3.0
    )  # uniform: 1/4 of 40
