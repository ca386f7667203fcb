"""Chapter 01's widget: its plain functions compute the right weights, entropy and output."""

import math

import matplotlib
import pytest
import torch
from torch.testing import assert_close

matplotlib.use("Agg")

from attncourse.chapters.ch01_attention_as_selection import (  # noqa: E402
    KEYS_2D,
    VALUES_2D,
    SelectionPlot,
    query_from_polar,
    query_selection,
    selection_caption,
    selection_sweep,
    selection_widget,
    selection_widget_update,
)


def direct(q, keys, values, scale, temperature):
    """Eq. (14.3.1)-(14.3.4) written out with torch's built-in softmax, independently."""
    scores = keys @ q * scale / temperature  # (S,)
    w = torch.softmax(scores, dim=-1)
    return w, -(w * w.log()).sum(), w @ values


@pytest.mark.parametrize(
    "angle, norm, temperature, scaled",
    [
        (0.0, 1.0, 1.0, True),
        (135.0, 3.5, 0.3, True),
        (-60.0, 6.0, 2.0, False),
        (90.0, 0.0, 1.0, True),
    ],
)
def test_query_selection_matches_the_formula(angle, norm, temperature, scaled):
    state = query_selection(angle, norm, temperature=temperature, scaled=scaled)
    q = torch.tensor(
        [norm * math.cos(math.radians(angle)), norm * math.sin(math.radians(angle))],
        dtype=torch.float64,
    )
    assert_close(state.query, q)
    w, h, out = direct(q, KEYS_2D, VALUES_2D, 1 / math.sqrt(2) if scaled else 1.0, temperature)
    assert_close(state.weights, w)
    assert state.entropy == pytest.approx(float(h))
    assert_close(state.output, out)
    assert state.max_entropy == pytest.approx(math.log(6))
    assert_close(state.scores.softmax(-1), w)


def test_zero_query_gives_uniform_weights_max_entropy_and_the_mean_value():
    state = query_selection(30.0, 0.0)
    assert_close(state.weights, torch.full((6,), 1 / 6, dtype=torch.float64))
    assert state.entropy == pytest.approx(math.log(6))
    assert_close(state.output, VALUES_2D.mean(0))


def test_long_query_selects_the_aligned_key_and_entropy_falls_to_zero():
    keys = torch.tensor([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]], dtype=torch.float64)
    values = torch.tensor([[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]], dtype=torch.float64)
    state = query_selection(90.0, 200.0, keys, values)
    assert state.weights[1] > 1 - 1e-12 and state.entropy < 1e-9
    assert_close(state.output, values[1])
    assert_close(query_from_polar(90.0, 2.0), torch.tensor([0.0, 2.0], dtype=torch.float64))


def test_interior_key_never_gets_the_largest_weight():
    """Key F lies inside the hull of A..E: argmax over a full sweep of queries never hits it."""
    for norm in (0.5, 2.0, 6.0):
        tops = {int(query_selection(a, norm).weights.argmax()) for a in range(-180, 180, 2)}
        assert 5 not in tops and tops == {0, 1, 2, 3, 4}


def test_widget_update_moves_the_artists_and_renders_png():
    plot = SelectionPlot()
    state, png, text = selection_widget_update(plot, 45.0, 3.0, temperature=0.5)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert [b.get_height() for b in plot._bars] == pytest.approx(state.weights.tolist())
    assert plot._out_dot.get_data()[0][0] == pytest.approx(float(state.output[0]))
    assert plot._h_bar.get_width() == pytest.approx(state.entropy)
    assert f"H = {state.entropy:.3f}" in text and text == selection_caption(state)
    state2, png2, _ = selection_widget_update(plot, -120.0, 3.0)
    assert png2 != png and not torch.equal(state2.weights, state.weights)
    # blitting leaves no stale pixels: the same state renders the same image as a fresh plot
    assert selection_widget_update(SelectionPlot(), -120.0, 3.0)[1] == png2


def test_widget_sliders_drive_the_image():
    box = selection_widget()
    image = box.children[-1]
    before = image.value
    box.controls["angle_deg"].value = -90.0
    assert image.value != before and "key E" in box.children[-2].value


def test_selection_sweep_equals_query_selection_row_by_row():
    angles = torch.tensor([-170.0, -45.0, 0.0, 33.0, 120.0])
    for norm, temperature, scaled in ((2.5, 1.0, True), (4.0, 0.4, False)):
        w, h, out = selection_sweep(angles, norm, temperature=temperature, scaled=scaled)
        assert w.shape == (5, 6) and h.shape == (5,) and out.shape == (5, 2)
        for i, a in enumerate(angles.tolist()):
            state = query_selection(a, norm, temperature=temperature, scaled=scaled)
            assert_close(w[i], state.weights)
            assert float(h[i]) == pytest.approx(state.entropy)
            assert_close(out[i], state.output)
    w, _, _ = selection_sweep(30.0, torch.tensor([0.0, 1.0, 2.0]))  # norms vary, angle fixed
    assert_close(w[0], torch.full((6,), 1 / 6, dtype=torch.float64))


# ---------------------------------------------------------------- the running example


def test_each_word_is_a_vector_of_length_2_along_its_kind():
    from attncourse.chapters.ch01_attention_as_selection import (
        FEATURES,
        SENTENCE,
        sentence_embeddings,
    )

    x = sentence_embeddings()
    assert x.shape == (len(SENTENCE), len(FEATURES))
    assert_close(x.norm(dim=-1), torch.full((len(SENTENCE),), 2.0, dtype=torch.float64))
    assert x[SENTENCE.index("cat"), FEATURES.index("animal")] == 2.0
    assert x[SENTENCE.index("it"), FEATURES.index("pronoun")] == 2.0


def test_the_hand_made_projections_let_it_and_tired_read_cat():
    """What section 4 tells the learner: 'it' and 'tired' read 'cat', the actions split between
    the two nouns, the function words (which ask for nothing) read uniformly."""
    from attncourse.chapters.ch01_attention_as_selection import (
        SENTENCE,
        hand_made_projections,
        sentence_embeddings,
    )

    x = sentence_embeddings()
    w_q, w_k, w_v = hand_made_projections()
    weights = torch.softmax((x @ w_q) @ (x @ w_k).T / math.sqrt(w_q.shape[1]), dim=-1)
    cat, mat = SENTENCE.index("cat"), SENTENCE.index("mat")
    for word in ("it", "tired"):
        assert weights[SENTENCE.index(word)].argmax() == cat
        assert weights[SENTENCE.index(word), cat] > 0.8
    for word in ("sat", "was"):
        row = weights[SENTENCE.index(word)]
        assert_close(row[cat], row[mat])
        assert float(row[cat] + row[mat]) > 0.9
    assert_close(weights[SENTENCE.index("the")], torch.full((10,), 0.1, dtype=torch.float64))
    assert torch.equal(w_v, torch.eye(6, dtype=torch.float64))


def test_show_weights_labels_the_words_on_a_fixed_colour_scale():
    import matplotlib.pyplot as plt

    from attncourse.chapters.ch01_attention_as_selection import SENTENCE, show_weights

    fig, ax = plt.subplots()
    image = show_weights(torch.full((10, 10), 0.1), ax=ax)
    assert image.get_clim() == (0.0, 1.0)
    assert [t.get_text() for t in ax.get_xticklabels()] == list(SENTENCE)
    plt.close(fig)
