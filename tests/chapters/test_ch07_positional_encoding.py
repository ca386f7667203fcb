"""attncourse.chapters.ch07_positional_encoding (chapter 07): every measurement against an
independent computation (PyTorch's own attention, plain-Python loops, closed forms, brute-force
entropies)."""

import cmath
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch.testing import assert_close

from attncourse.chapters import ch07_positional_encoding as pe7
from attncourse.chapters.ch07_positional_encoding.models import _train_short_test_long_run
from attncourse.chapters.ch07_positional_encoding.widget import MAX_DIM, WIDGET_POSITIONS
from attncourse.positional import RotaryEmbedding, alibi_bias, alibi_slopes, sinusoidal_encoding

DT = torch.float64


# ------------------------------------------------------------------ permutation equivariance


def test_attention_without_positions_is_permutation_equivariant_and_positions_break_it():
    gaps = pe7.permutation_gaps(T=10, d=8, num_heads=2, seed=3)
    assert gaps["none"] < 1e-12
    assert set(gaps) == {"none", "none, causal mask", "sinusoidal", "learned", "rope", "alibi"}
    assert all(gap > 1e-2 for name, gap in gaps.items() if name != "none")
    layer = lambda x: 2 * x  # noqa: E731  acts on each row alone
    x = torch.randn(1, 6, 3, dtype=DT)
    assert pe7.permutation_gap(layer, x, torch.randperm(6)) == 0


# --------------------------------------------------------------------------------- the model


def _torch_reference(layer, x, causal):
    """The same layer through F.scaled_dot_product_attention, RoPE and ALiBi applied by hand."""
    B, T, d = x.shape
    H, hd = layer.num_heads, layer.head_dim
    q, k, v = layer.qkv(x).view(B, T, 3, H, hd).permute(2, 0, 3, 1, 4)
    if layer.encoding == "rope":
        rope = RotaryEmbedding(hd)
        q, k = rope(q), rope(k)
    mask = torch.zeros(H, T, T, dtype=DT)
    if layer.encoding == "alibi":
        m = alibi_slopes(H, dtype=DT)
        i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
        mask = -m[:, None, None] * (i - j).abs().to(DT)
    if causal:
        mask = mask.masked_fill(~torch.ones(T, T, dtype=torch.bool).tril(), float("-inf"))
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    return layer.out(out.transpose(1, 2).reshape(B, T, d))


@pytest.mark.parametrize("encoding", ["none", "rope", "alibi"])
@pytest.mark.parametrize("causal", [True, False])
def test_positional_self_attention_equals_torch_attention(encoding, causal):
    torch.manual_seed(0)
    layer = pe7.PositionalSelfAttention(12, 3, encoding).double()
    x = torch.randn(2, 7, 12, dtype=DT)
    with torch.no_grad():
        out, weights = layer(x, causal)
        reference = _torch_reference(layer, x, causal)
    assert_close(out, reference)
    assert weights.shape == (2, 3, 7, 7)
    assert_close(weights.sum(-1), torch.ones(2, 3, 7, dtype=DT))
    if causal:
        assert float(weights.triu(1).abs().max()) == 0


def test_transformer_shapes_lengths_and_the_learned_tables_limit():
    torch.manual_seed(0)
    tokens = torch.randint(16, (3, 20))
    for encoding in pe7.ENCODINGS:
        model = pe7.PositionalTransformer(16, 4, encoding, max_len=20)
        assert model(tokens).shape == (3, 20, 4)
    pooled = pe7.PositionalTransformer(16, 2, "sinusoidal", pooled=True, causal=False)
    assert pooled(tokens).shape == (3, 2)
    assert pe7.PositionalTransformer(16, 4, "alibi")(torch.randint(16, (1, 200))).shape[1] == 200
    with pytest.raises(ValueError, match="cannot extrapolate"):
        pe7.PositionalTransformer(16, 4, "learned", max_len=20)(torch.randint(16, (1, 21)))
    with pytest.raises(ValueError, match="encoding must be one of"):
        pe7.PositionalTransformer(16, 4, "t5")
    with pytest.raises(ValueError, match="divisible"):
        pe7.PositionalSelfAttention(10, 3)


def test_causal_models_do_not_look_ahead():
    torch.manual_seed(1)
    x = torch.randint(16, (2, 12))
    x2 = x.clone()
    x2[:, 8:] = (x2[:, 8:] + 5) % 16
    for encoding in ("none", "sinusoidal", "rope", "alibi"):
        model = pe7.PositionalTransformer(16, 4, encoding).double()
        assert_close(model(x)[:, :8], model(x2)[:, :8])


def test_a_pooled_model_without_positions_cannot_tell_a_sequence_from_its_shuffle():
    torch.manual_seed(2)
    model = pe7.PositionalTransformer(16, 2, "none", num_layers=2, causal=False, pooled=True)
    tokens, labels = pe7.sortedness_batch(40, 8, torch.Generator().manual_seed(0))
    accuracy, loss, gap = pe7.sortedness_scores(model, 8, samples=40)
    assert gap < 1e-9 and loss >= math.log(2) - 1e-6
    with_positions = pe7.PositionalTransformer(16, 2, "sinusoidal", causal=False, pooled=True)
    assert pe7.sortedness_scores(with_positions, 8, samples=40)[2] > 1e-6


# ------------------------------------------------------------------------------------ tasks


def test_marker_targets_are_the_latest_marker_so_far():
    tokens, targets = pe7.marker_batch(20, 30, torch.Generator().manual_seed(0))
    assert tokens.shape == targets.shape == (20, 30)
    assert bool((tokens[:, 0] < pe7.NUM_MARKERS).all())  # every sequence starts with a marker
    for row, target in zip(tokens.tolist(), targets.tolist()):
        latest = None
        for t, token in enumerate(row):
            if token < pe7.NUM_MARKERS:
                latest = token
            assert target[t] == latest
    share = float((tokens[:, 1:] < pe7.NUM_MARKERS).double().mean())
    assert 0.08 < share < 0.25  # about 0.15


def test_sortedness_pairs_hold_the_same_tokens_in_two_orders():
    tokens, labels = pe7.sortedness_batch(64, 6, torch.Generator().manual_seed(1), vocab=3)
    assert labels.tolist() == [1, 0] * 32
    for a, b in zip(tokens[0::2], tokens[1::2]):
        assert sorted(a.tolist()) == a.tolist()  # the sorted member
        assert sorted(b.tolist()) == a.tolist()  # the same tokens ...
        assert sorted(b.tolist()) != b.tolist()  # ... not sorted
    with pytest.raises(ValueError, match="even"):
        pe7.sortedness_batch(5, 6, torch.Generator())
    with pytest.raises(ValueError, match="length must be >= 2"):
        pe7.sortedness_batch(4, 1, torch.Generator())


def test_training_lowers_the_loss_and_train_short_test_long_reports_every_run(monkeypatch):
    torch.manual_seed(0)
    model = pe7.PositionalTransformer(
        pe7.MARKER_VOCAB, pe7.NUM_MARKERS, "alibi", **pe7.MARKER_MODEL
    )
    losses = pe7.train_model(model, "marker", steps=60, progress=False)
    assert len(losses) == 60 and np.mean(losses[-10:]) < np.mean(losses[:10])
    accuracy = pe7.marker_accuracy(model, 40, samples=16)
    assert accuracy.shape == (40,) and bool(((accuracy >= 0) & (accuracy <= 1)).all())
    with pytest.raises(ValueError, match="task must be one of"):
        pe7.train_model(model, "copy", steps=2, progress=False)
    monkeypatch.setitem(pe7.MARKER_TRAINING, "steps", 3)
    results = pe7.train_short_test_long(
        ("alibi", "none"), seeds=(0,), test_lengths=(8, 16), progress=False
    )
    assert set(results) == {("alibi", 0), ("none", 0)}
    assert results["alibi", 0][16].shape == (16,)
    one_run = _train_short_test_long_run("none", 0, (8, 16))  # the same run, in this process
    assert all(torch.equal(one_run[n], results["none", 0][n]) for n in (8, 16))


# ------------------------------------------------------------------------ sinusoidal structure


def test_dot_product_and_distance_profiles_match_the_table_at_every_position():
    d = 20
    table = sinusoidal_encoding(120, d, dtype=DT)
    gram, dist = table @ table.T, torch.cdist(table, table)
    offsets = list(range(-15, 16))
    profile, distances = pe7.dot_product_profile(offsets, d), pe7.shift_distance_profile(offsets, d)
    for n, k in enumerate(offsets):
        assert_close(torch.diagonal(gram, k), profile[n].expand(120 - abs(k)))
        assert_close(torch.diagonal(dist, k), distances[n].expand(120 - abs(k)))
    assert torch.equal(profile, profile.flip(0))  # even in k
    assert_close(pe7.inverse_frequencies(8), torch.tensor([1, 0.1, 0.01, 0.001], dtype=DT))
    assert_close(pe7.wavelengths(8), 2 * math.pi / pe7.inverse_frequencies(8))


# --------------------------------------------------------------------------------- RoPE decay


def _python_bound(r, d, base=10000.0):
    theta = [base ** (-2 * i / d) for i in range(d // 2)]
    partial, total = 0j, 0.0
    for i in range(d // 2):
        partial += cmath.exp(1j * r * theta[i])
        total += abs(partial)
    return total / (d // 2)


def test_rope_relative_bound_is_su_et_al_formula():
    r = [0, 1, 7, 50, 300]
    expected = torch.tensor([_python_bound(v, 16) for v in r], dtype=DT)
    assert_close(pe7.rope_relative_bound(r, 16), expected)
    assert float(pe7.rope_relative_bound([0], 128)[0]) == pytest.approx(65 / 2)  # mean of 1..64


def test_rope_score_is_the_real_part_of_the_pair_products_and_the_abel_bound_holds():
    g = torch.Generator().manual_seed(0)
    q, k = torch.randn(16, generator=g, dtype=DT), torch.randn(16, generator=g, dtype=DT)
    h = pe7.rope_pair_products(q, k)  # (8,)
    theta = pe7.inverse_frequencies(16)
    rope = RotaryEmbedding(16)
    for r in (0, 3, 40):
        score = float(q @ rope(k[None], torch.tensor([r]))[0])  # <q, R_r k>
        assert score == pytest.approx(float((h * torch.exp(-1j * r * theta)).sum().real), abs=1e-12)
    scores, bounds = pe7.rope_abel_bound(q, k, range(0, 200))
    assert bool((scores <= bounds).all())
    assert float(scores[3]) == pytest.approx(abs(float(q @ rope(k[None], torch.tensor([3]))[0])))


def test_rope_relative_bound_falls_only_as_a_trend():
    """What the chapter says of the bound at d = 128: it rises in 115 of the 256 unit steps
    from r = 0 to 256, and ends below a quarter of its value at 0."""
    bound = pe7.rope_relative_bound(torch.arange(0, 257), 128)
    assert int((bound[1:] > bound[:-1]).sum()) == 115
    assert float(bound[256]) < float(bound[0]) / 4


def test_rope_self_score_weights_each_plane_by_its_squared_norm():
    """q^T R_r q = sum_i |q~_i|^2 cos(r theta_i): the sinusoidal curve only for equal pair norms."""
    dim, r = 32, torch.arange(0, 60)
    theta = pe7.inverse_frequencies(dim)
    q = torch.randn(dim, generator=torch.Generator().manual_seed(4), dtype=DT)
    self_score = RotaryEmbedding(dim)(q.expand(len(r), dim)[None], r)[0] @ q
    pair_norms = q[0::2] ** 2 + q[1::2] ** 2
    looped = torch.tensor(
        [sum(float(pair_norms[i]) * math.cos(int(m) * float(theta[i])) for i in range(dim // 2))
         for m in r], dtype=DT
    )  # fmt: skip
    assert_close(self_score, looped, atol=1e-10, rtol=1e-12)
    curve = pe7.dot_product_profile(r, dim)  # sum_i cos(r theta_i)
    assert float((self_score / self_score[0] - curve / curve[0]).abs().max()) > 0.05
    unit = torch.zeros(dim, dtype=DT)
    unit[0::2] = 1.0  # every pair of norm 1
    assert_close(RotaryEmbedding(dim)(unit.expand(len(r), dim)[None], r)[0] @ unit, curve)


def test_alibi_slopes_for_other_head_counts_are_appended():
    """Press et al.: the slopes of the power of two below H, then every other slope of twice
    that many heads appended (not interleaved)."""
    twelve = alibi_slopes(12, dtype=DT)
    assert_close(twelve[:8], alibi_slopes(8, dtype=DT))
    assert_close(twelve[8:], alibi_slopes(16, dtype=DT)[0::2][:4])
    assert bool((twelve[:8].diff() < 0).all()) and float(twelve[8]) > float(twelve[7])


def test_no_positions_dilute_with_length_but_do_not_decay_with_distance():
    previous = None
    for n in (16, 64, 256):
        eta = pe7.transfer_efficiency(pe7.position_only_weights("none", n))
        assert float(eta.max() - eta.min()) == 0.0
        assert previous is None or float(eta[0]) < float(previous) / 10
        previous = eta[0]


# ------------------------------------------------------------------------------- information


def _brute_force_information(alpha, V):
    """I(z; x) = H(z) − H(z | x) from the joint table, z = x w.p. alpha else uniform."""
    joint = np.zeros((V, V))
    for x in range(V):
        for z in range(V):
            joint[x, z] = (alpha * (z == x) + (1 - alpha) / V) / V
    pz, px = joint.sum(0), joint.sum(1)
    nz = joint > 0
    return float((joint[nz] * np.log2(joint[nz] / (px[:, None] * pz[None, :])[nz])).sum())


@pytest.mark.parametrize("V", [2, 5, 16])
def test_selection_information_against_the_joint_distribution(V):
    alphas = [0.0, 0.013, 0.3, 0.77, 1.0]
    got = pe7.selection_information_bits(torch.tensor(alphas, dtype=DT), V)
    expected = torch.tensor([_brute_force_information(a, V) for a in alphas], dtype=DT)
    assert_close(got, expected, atol=1e-12, rtol=1e-10)
    assert float(got[-1]) == pytest.approx(math.log2(V))
    eta = pe7.transfer_efficiency(torch.tensor(alphas, dtype=DT), V)
    assert bool(((eta >= 0) & (eta <= 1 + 1e-12)).all())


def test_selection_information_keeps_its_precision_for_tiny_weights():
    for alpha in (1e-3, 1e-6, 1e-9, 1e-12):
        got = float(pe7.selection_information_bits(torch.tensor(alpha, dtype=DT), 16))
        # series: KL = (V-1) a^2 / 2 · (1 + (V - 2) a / 3 · ... ), the first term dominates
        approx = 15 * alpha**2 / (2 * math.log(2))
        assert got == pytest.approx(approx, rel=10 * alpha + 1e-9)


def test_position_only_weights():
    T = 30
    assert_close(pe7.position_only_weights("none", T), torch.full((T,), 1 / T, dtype=DT))
    w = pe7.position_only_weights("alibi", T, head=1)  # m = 1/4
    assert_close(w[1:] / w[:-1], torch.full((T - 1,), math.exp(-0.25), dtype=DT))
    # RoPE on a vector with equal pairs (1, 0) gives the sinusoidal scores: sum_i cos(d theta_i)
    dim = 16
    u = torch.zeros(T, dim, dtype=DT)
    u[:, 0::2] = 1.0
    rotated = RotaryEmbedding(dim)(u)  # (T, dim) R_m u
    scores = 2.0 * rotated @ rotated[-1] / math.sqrt(dim)  # last query over keys T-1 .. 0
    expected = torch.softmax(scores.flip(0), dim=0)  # index = distance
    assert_close(pe7.position_only_weights("sinusoidal", T, dim=dim, sharpness=2.0), expected)
    assert_close(pe7.position_only_weights("rope", T, dim=dim, sharpness=2.0), expected)
    with pytest.raises(ValueError, match="encoding must be one of"):
        pe7.position_only_weights("learned", T)


def test_distinct_rows_binary_codes_and_decoding():
    table = torch.tensor([[0.0], [0.0], [1.0], [2.0]], dtype=DT)  # two rows merge
    assert pe7.entropy_bits_of_rows(table) == pytest.approx(1.5)
    code = pe7.binary_code(100)
    assert code.shape == (100, 7) and pe7.entropy_bits_of_rows(code) == pytest.approx(
        math.log2(100)
    )
    assert torch.equal(pe7.decode_positions(code, code), torch.arange(100))
    p, q = torch.tensor([3, 99, 50]), torch.tensor([90, 0, 50])
    assert pe7.offsets_from_pairs(code, p, q).tolist() == [-87, 99, 0]
    info = pe7.sinusoidal_information(1024, (2, 8), (torch.float16, torch.float64))
    assert info[8, torch.float64] == pytest.approx(10) and info[2, torch.float16] < 10
    exact = pe7.noisy_decoding_accuracy(64, (2, 16), noise=1e-9, samples=200)
    assert exact == {2: 1.0, 16: 1.0}


# ------------------------------------------------------------------------------------ widget


@pytest.mark.parametrize("encoding", pe7.WIDGET_ENCODINGS)
def test_encoding_view_numbers(encoding):
    view = pe7.encoding_view(encoding, dim=16, position=5, plane=3)
    P = WIDGET_POSITIONS
    assert view.offsets.shape == view.similarity.shape == (2 * P - 1,)
    assert view.rope_path.shape == (6, 2) and view.alibi_rows.shape == (pe7.ALIBI_HEADS, 6)
    assert_close(view.rope_path.norm(dim=-1), torch.ones(6, dtype=DT))
    assert_close(view.alibi_rows[:, -1], torch.zeros(pe7.ALIBI_HEADS, dtype=DT))
    assert_close(view.alibi_rows[0, 0], torch.tensor(-2.5, dtype=DT))  # -(1/2)(5 - 0)
    assert view.theta == pytest.approx(10000 ** (-6 / (16 if encoding != "learned" else 32)))
    at_zero = float(view.similarity[P - 1])  # q = p
    assert at_zero == pytest.approx(1.0)
    if encoding == "learned":
        assert view.spread > 0.1 and view.dim == 32
    else:
        assert view.spread < 1e-9  # depends on q - p alone


def test_encoding_view_values_against_the_mechanisms():
    view = pe7.encoding_view("sinusoidal", dim=8, position=12)
    table = sinusoidal_encoding(WIDGET_POSITIONS, 8, dtype=DT)
    assert_close(view.heatmap, table)
    P = WIDGET_POSITIONS
    assert_close(view.similarity[P - 1 + 4], table[12] @ table[16] / 4)
    assert torch.isnan(view.similarity[0])  # q = 12 - 63 < 0
    alibi = pe7.encoding_view("alibi", dim=8, position=12)
    bias = alibi_bias(8, P, dtype=DT)[0]
    assert_close(alibi.heatmap.tril(), bias.tril())
    assert_close(alibi.similarity[P - 1 - 3], torch.tensor(math.exp(-1.5), dtype=DT))


def test_learned_view_has_no_rows_beyond_its_table():
    table = torch.randn(5, 6, dtype=DT)
    inside = pe7.encoding_view("learned", dim=64, position=2, learned_table=table)
    assert inside.dim == 6 and int(torch.isfinite(inside.heatmap[:, 0]).sum()) == 5
    outside = pe7.encoding_view("learned", dim=64, position=9, learned_table=table)
    assert bool(torch.isnan(outside.similarity).all())
    assert "cannot extrapolate" in pe7.encoding_caption(outside)


def test_encoding_view_rejects_bad_settings():
    with pytest.raises(ValueError, match="dim must be an even int"):
        pe7.encoding_view("sinusoidal", dim=7)
    with pytest.raises(ValueError, match="dim must be an even int"):
        pe7.encoding_view("sinusoidal", dim=MAX_DIM + 2)
    with pytest.raises(ValueError, match="position must be an int"):
        pe7.encoding_view("rope", position=WIDGET_POSITIONS)
    with pytest.raises(ValueError, match="encoding must be one of"):
        pe7.encoding_view("none")
    assert pe7.encoding_view("rope", dim=4, plane=50).plane == 1  # clipped to dim/2 - 1


def test_widget_update_returns_a_png_and_a_caption_and_the_controls_redraw():
    plot = pe7.EncodingPlot()
    view, png, caption = pe7.encoding_widget_update(plot, "rope", 32, 20, 2)
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and "RoPE" in caption and view.position == 20
    _, png2, _ = pe7.encoding_widget_update(plot, "alibi", 32, 63, 0)
    assert png2 != png
    box = pe7.encoding_widget()
    before = box.children[-1].value
    box.controls["encoding"].value = "learned"
    assert box.children[-1].value != before
    box.controls["position"].value = 40
    assert "no row for position 40" in box.children[-2].value


def test_the_widget_s_titles_follow_the_encoding_and_the_plane_slider_its_dimension():
    """The heat map says what its rows and columns are for the encoding shown (ALiBi's is a
    query × key bias, its columns keys; the others a table of features), the similarity panel
    names its quantity on its axis, and RoPE's plane slider ends at d/2 − 1."""
    plot = pe7.EncodingPlot()
    shown = {}
    for encoding in pe7.WIDGET_ENCODINGS:
        pe7.encoding_widget_update(plot, encoding, 32, 20, 0)
        ax_heat, ax_sim = plot.axes[:2]
        shown[encoding] = (ax_heat.get_title(), ax_sim.get_ylabel())
        columns = [label.get_text() for label in ax_heat.get_xticklabels()]
        expected = ["key 0", "key 63"] if encoding == "alibi" else ["first feature", "last"]
        assert columns == expected, (encoding, columns)
    assert len({title for title, _ in shown.values()}) == len(pe7.WIDGET_ENCODINGS)
    assert all(("ALiBi" in title) == (e == "alibi") for e, (title, _) in shown.items())
    assert "query" in shown["alibi"][0] and "feature" in shown["rope"][0]
    assert shown["sinusoidal"][1] == "PE(p)·PE(q) / (d/2)" and "E[p]" in shown["learned"][1]
    # each encoding's texts are drawn into a background of its own, kept: back to RoPE after
    # the others, the picture is exactly a fresh plot's
    again = pe7.encoding_widget_update(plot, "rope", 32, 20, 0)[1]
    assert again == pe7.encoding_widget_update(pe7.EncodingPlot(), "rope", 32, 20, 0)[1]
    assert again != pe7.encoding_widget_update(plot, "sinusoidal", 32, 20, 0)[1]

    box = pe7.encoding_widget(dim=16, plane=20)
    plane = box.controls["plane"]
    assert (plane.max, plane.value) == (7, 7)
    box.controls["dim"].value = 64
    assert plane.max == 31
    plane.value = 30
    box.controls["dim"].value = 8
    assert (plane.max, plane.value) == (3, 3)
    assert "RoPE plane 3:" in box.children[-2].value
