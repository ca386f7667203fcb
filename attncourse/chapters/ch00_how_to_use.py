"""Chapter 00's first widget: softmax at a temperature, drawn as text bars."""

import torch


def temperature_bars(scores, temperature: float = 1.0, width: int = 40) -> str:
    """The chapter-00 widget: softmax(scores / temperature) as rows of text bars, in HTML.

    scores: (S,). Returns one ``<div>`` per key, "key i: ████ 0.123" (Eq. 14.3.20's temperature).
    """
    from ..attention import softmax

    alpha = softmax(torch.as_tensor(scores, dtype=torch.float64), temperature=temperature)  # (S,)
    return "".join(
        f"<div style='font-family:monospace'>key {i}: {'█' * int(width * a)} {a:.3f}</div>"
        for i, a in enumerate(alpha.tolist())
    )
