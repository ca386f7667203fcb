"""attncourse.chapters.ch10_efficient_gated_attention (chapter 10): each measurement against an
independent computation (the masks, boolean matrix powers, the formulas written out, exact
enumeration), the source's listings' behaviour, the widget's numbers and budget, the cost and stage
tables."""

import math
import statistics
import time

import pytest
import torch
import torch.nn.functional as F
from torch.testing import assert_close

from attncourse.attention import GatedAttention, linear_attention, softmax
from attncourse.chapters import ch10_efficient_gated_attention as ch
from attncourse.chapters.ch10_efficient_gated_attention import costs, listings
from attncourse.masks import causal_mask

DT = torch.float64


# ------------------------------------------------------------------ tiles


def test_online_softmax_steps_over_every_tiling_give_softmax_attention():
    g = torch.Generator().manual_seed(11)
    scores = torch.randn(5, 23, generator=g, dtype=DT) * 4  # (T, S)
    values = torch.randn(23, 3, generator=g, dtype=DT)  # (S, d)
    expected = torch.softmax(scores, -1) @ values
    for tile in (1, 4, 23):
        m = torch.full((5, 1), -math.inf, dtype=DT)
        l = torch.zeros(5, 1, dtype=DT)  # noqa: E741
        acc = torch.zeros(5, 3, dtype=DT)
        for j0 in range(0, 23, tile):
            tile_scores, tile_values = scores[:, j0 : j0 + tile], values[j0 : j0 + tile]
            m, l, acc = ch.online_softmax_step(m, l, acc, tile_scores, tile_values)  # noqa: E741
        assert_close(acc / l, expected)
        assert_close(m, scores.amax(-1, keepdim=True))  # the running max ends at the row max
        assert_close(l, torch.exp(scores - m).sum(-1, keepdim=True))


def test_online_softmax_step_first_tile_and_large_scores():
    m, l, acc = ch.online_softmax_step(  # noqa: E741
        torch.full((2, 1), -math.inf),
        torch.zeros(2, 1),
        torch.zeros(2, 2),
        torch.tensor([[1000.0, 999.0], [0.0, 0.0]]),
        torch.eye(2),
    )
    assert torch.isfinite(acc).all() and torch.equal(m, torch.tensor([[1000.0], [0.0]]))
    assert_close(l, torch.tensor([[1 + math.exp(-1)], [2.0]]))


# ------------------------------------------------------------------ patterns


@pytest.mark.parametrize("kind", ch.KINDS)
@pytest.mark.parametrize("n", [1, 2, 9, 33])
@pytest.mark.parametrize("size", [1, 2, 3, 8])
def test_pair_count_and_fast_reach_match_the_mask(kind, n, size):
    mask = ch.pattern_mask(kind, n, size)
    assert ch.pair_count(kind, n, size) == int(mask.sum())
    fast = ch.reach_of_last(kind, n, size, 5)  # (5, n)
    for layers in range(1, 6):
        assert torch.equal(fast[layers - 1], ch.reach(mask, layers)[n - 1])


def test_reach_is_the_boolean_matrix_power_with_the_residual():
    mask = torch.zeros(5, 5, dtype=torch.bool)
    mask[torch.arange(1, 5), torch.arange(4)] = True  # i reads i - 1 only
    R = ch.reach(mask, 2)
    expected = torch.tensor(
        [[i - 2 <= j <= i for j in range(5)] for i in range(5)], dtype=torch.bool
    )
    assert torch.equal(R, expected)


@pytest.mark.parametrize("kind", ch.KINDS)
@pytest.mark.parametrize("n", [2, 17, 40])
@pytest.mark.parametrize("size", [1, 3, 8, 64])
def test_layers_to_reach_all_is_the_first_layer_that_reaches_every_key(kind, n, size):
    claimed = ch.layers_to_reach_all(kind, n, size)
    rows = ch.reach_of_last(kind, n, size, 45).all(dim=1)  # (45,) all keys reached after L
    first = int(rows.nonzero()[0]) + 1 if rows.any() else None
    assert claimed == first


def test_layers_to_connect_all_pairs():
    assert ch.layers_to_connect(ch.pattern_mask("strided", 256, 16)) == 2  # Child et al.
    assert ch.layers_to_connect(ch.pattern_mask("local", 64, 8)) == 8  # ceil(63 / 8)
    assert ch.layers_to_connect(ch.pattern_mask("block", 32, 8), max_layers=10) is None
    assert ch.layers_to_connect(ch.pattern_mask("dense", 20, 1)) == 1
    assert ch.layers_to_connect(ch.pattern_mask("local", 20, 3, causal=False)) == 7


def test_log_sparse_pattern_and_its_count():
    mask = ch.log_sparse_mask(9)
    assert mask[8].nonzero().flatten().tolist() == [0, 4, 6, 7, 8]  # gaps 8, 4, 2, 1, 0
    for n in (1, 2, 5, 64, 100):
        assert ch.pair_count("log-sparse", n) == int(ch.log_sparse_mask(n).sum())


def test_relevant_weight_is_the_softmax_of_one_raised_score():
    for n, gap in ((2, 0.0), (10, 1.5), (1000, 5.0)):
        scores = torch.zeros(n, dtype=DT)
        scores[3 % n] = gap
        assert math.isclose(ch.relevant_weight(n, gap), float(softmax(scores)[3 % n]))
    assert math.isclose(ch.relevant_weight(101, math.log(100)), 0.5)


# ------------------------------------------------------------------ linear attention


def test_three_forms_of_causal_linear_attention_agree():
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 30, 5, generator=g, dtype=DT) for _ in range(3))
    matrix, weights = ch.parallel_linear_attention(q, k, v)
    assert_close(ch.recurrent_linear_attention(q, k, v), matrix)
    assert_close(linear_attention(q, k, v, causal=True, eps=0.0)[0], matrix)
    kernel = ((F.elu(q) + 1) @ (F.elu(k) + 1).transpose(1, 2)).tril()
    assert_close(weights, kernel / kernel.sum(-1, keepdim=True))


def test_rank_and_trace_bounds_of_bidirectional_linear_attention():
    g = torch.Generator().manual_seed(1)
    for d in (2, 4, 8):
        keys = torch.randn(40, d, generator=g, dtype=DT)
        A = ch.linear_attention_matrix(keys, keys)
        assert ch.numerical_rank(A) <= d and float(A.trace()) <= d + 1e-9
        assert ch.numerical_rank(ch.linear_attention_matrix(keys, keys, causal=True)) == 40


def test_positive_random_features_are_unbiased_for_exp_q_dot_k():
    g = torch.Generator().manual_seed(2)
    q, k = (
        torch.randn(3, 4, generator=g, dtype=DT) / 2,
        torch.randn(5, 4, generator=g, dtype=DT) / 2,
    )
    W = torch.randn(4, 400_000, generator=g, dtype=DT)
    estimate = ch.positive_random_features(q, W) @ ch.positive_random_features(k, W).T
    assert ((estimate / torch.exp(q @ k.T)) - 1).abs().max() < 0.02


def test_total_variation():
    a = torch.tensor([[1.0, 0.0], [0.5, 0.5]])
    assert ch.total_variation(a, a) == 0.0
    assert math.isclose(ch.total_variation(a, a.flip(1)), 0.5)  # rows: 1 and 0


def test_recall_batch_and_model():
    keys, values, query, answer, index = ch.recall_batch(50, 6, torch.Generator().manual_seed(3))
    assert keys.shape == values.shape == (50, 6) and (keys < ch.NUM_KEYS).all()
    assert all(len(set(row)) == 6 for row in keys.tolist())  # distinct keys
    assert torch.equal(query, keys[torch.arange(50), index])
    assert torch.equal(answer, values[torch.arange(50), index])
    for kind in ("softmax", "linear"):
        model = ch.RecallModel(kind)
        assert model(keys, values, query).shape == (50, ch.NUM_VALUES)
        w = model.weights(keys, values, query)
        assert_close(w.sum(-1), torch.ones(50))
    with pytest.raises(ValueError, match="'softmax' or 'linear'"):
        ch.RecallModel("cosine")


def test_short_trainings_run_and_report():
    torch.manual_seed(0)
    model = ch.RecallModel("linear")
    losses = ch.train_recall(model, 8, steps=5, progress=False)
    accuracy, weight = ch.recall_scores(model, 8, samples=100)
    assert len(losses) == 5 and 0 <= accuracy <= 1 and 0 < weight <= 1
    model, losses = ch.train_copy("linear", 4, steps=5, progress=False)
    assert len(losses) == 5 and 0 <= ch.copy_accuracy(model, 4, samples=50) <= 1
    assert ch.steps_to_loss([1.0] * 5 + [0.01] * 20) == 5 and ch.steps_to_loss([1.0] * 30) is None


# ------------------------------------------------------------------ learnable mask, sink


def test_true_pattern_and_printed_sparse_attention():
    mask = ch.true_pattern(10, torch.Generator().manual_seed(4))
    assert ((mask.sum(-1) >= 1) & (mask.sum(-1) <= 3)).all()
    q, k, v = (torch.randn(4, 5, dtype=DT) for _ in range(3))
    m = torch.ones(4, 4, dtype=DT).tril()
    out, w = ch.printed_sparse_attention(q, k, v, m)
    assert_close(w, torch.softmax(m * (q @ k.T) / math.sqrt(5), -1))
    assert (w[~causal_mask(4)] > 0).all()  # the printed formula keeps weight on masked keys


def test_learning_a_mask_short_run():
    r = ch.learn_sparse_mask(0, steps=20, T=6, progress=False)
    assert r.learned.shape == r.true.shape == (6, 6) and len(r.losses) == len(r.temperatures) == 20
    assert r.temperatures[0] == 1.0 and math.isclose(r.temperatures[-1], 0.05)
    with pytest.raises(ValueError, match="'corrected' or 'printed'"):
        ch.learn_sparse_mask(0, form="other")


def test_bigram_backcopy_copies_after_triggers():
    x = ch.bigram_backcopy(200, torch.Generator().manual_seed(5))
    assert (x[:, 0] == 0).all() and (x[:, 1:] > 0).all()
    t = torch.arange(2, x.shape[1] - 1)
    trigger = x[:, t] <= 4  # a trigger at t
    assert torch.equal(x[:, t + 1][trigger], x[:, t - 1][trigger])
    assert 0.05 < trigger.double().mean() < 0.5


class AlwaysBOS:
    """A stand-in model: every query puts all its weight on BOS, every logit favours token 7."""

    kind = "softmax"

    def __call__(self, x):
        B, T = x.shape
        weights = torch.zeros(B, 1, T, T)
        weights[..., 0] = 1.0
        logits = torch.zeros(B, T, ch.sink.VOCAB)
        logits[..., 7] = 1.0
        return logits, (weights,)


def test_sink_statistics_of_a_model_that_always_attends_bos():
    x = ch.bigram_backcopy(64, torch.Generator().manual_seed(6))
    stats = ch.sink_statistics(AlwaysBOS(), 0, data=x)
    assert stats.bos_dormant == 1.0 and stats.bos_active == 1.0 and stats.previous_active == 0.0
    after_trigger = x[:, 1:][(x[:, :-1] >= 1) & (x[:, :-1] <= 4) & (torch.arange(23) >= 4)]
    assert math.isclose(stats.copy_accuracy, float((after_trigger == 7).double().mean()))
    assert math.isnan(stats.gate_dormant)
    assert 0.0 < ch.uniform_bos_share() < 0.2


def test_sink_training_short_run_gated():
    model, stats = ch.train_sink("gated-headwise", 0, steps=5, progress=False)
    assert len(stats.losses) == 5 and 0 <= stats.gate_dormant <= 1 and 0 <= stats.bos_dormant <= 1


# ------------------------------------------------------------------ the listings


def test_listings_are_the_sources_verbatim_code():
    assert "class GatedAttention(nn.Module):" in listings.GATED_ATTENTION_14_3_7
    assert ch.PRINTED_GATE_LINE in listings.GATED_ATTENTION_14_3_7
    assert "gumbel_softmax(M_learnable" in listings.LEARNABLE_SPARSE_14_3_6


def test_source_gated_attention_fails_as_printed_and_runs_after_one_line():
    assert ch.try_call(lambda: ch.run_listing(listings.GATED_ATTENTION_14_3_7)).startswith(
        "NameError"
    )
    outcomes = ch.survey_source_gated_attention(sizes=(1, 2))
    assert [k for k, v in outcomes.items() if v == "runs"] == [(1, 1, 1)]
    assert all(v == "runs" for v in ch.survey_source_gated_attention((1, 2), fixed=True).values())


def test_fixed_listing_is_the_package_gated_attention():
    torch.manual_seed(6)
    fixed = ch.source_gated_attention(fixed=True)(12, 3).double()
    ours = ch.package_gated_from_source(fixed).double()
    assert isinstance(ours, GatedAttention)
    x = torch.randn(2, 7, 12, dtype=DT)
    mask = causal_mask(7)
    with torch.no_grad():
        assert_close(fixed(x, mask), ours(x, mask)[0])


def test_printed_learnable_sparse_normalises_rows_and_ends_in_nan():
    rows, returned = ch.printed_learnable_sparse(torch.randn(16, 16), iterations=5)
    assert [round(tau, 6) for _, tau, _, _ in rows] == [0.8, 0.6, 0.4, 0.2, 0.0]
    assert all(((sums - 1).abs() < 1e-5).all() for _, _, sums, _ in rows[:-1])
    assert [nan for *_, nan in rows] == [False] * 4 + [True]
    assert returned.dtype == torch.bool


def test_source_002_listings_run_and_return_their_tables():
    for name in ("bidirectional_advantages", "bidirectional_challenges", "compare_attention_types"):
        table = ch.run_listing(getattr(listings, "SOURCE_002_" + name.upper()))[name]()
        assert isinstance(table, dict) and len(table) == 4


# ------------------------------------------------------------------ exact information


def test_information_of_attention_layers_on_bits():
    x = ch.all_bit_vectors(4)
    assert x.shape == (16, 4)
    binomial = [1, 4, 6, 4, 1]
    h_binomial = -sum(c / 16 * math.log2(c / 16) for c in binomial)
    dense = torch.ones(4, 4, dtype=torch.bool)
    assert math.isclose(ch.information(ch.attend(x, dense)), h_binomial, abs_tol=1e-12)
    assert ch.information(ch.attend(x, torch.eye(4, dtype=torch.bool))) == pytest.approx(4.0)
    y = (x[:, :1] != x[:, 1:2]).double()  # XOR of the first two bits
    assert ch.information(x, y) == pytest.approx(1.0)
    assert ch.information(x[:, 2:], y) == pytest.approx(0.0)


def test_mask_table_and_best_masks():
    rows = ch.mask_information_table(2)
    assert len(rows) == 9  # each of 2 queries keeps 1, 2 or 3 of {key 0, key 1} subsets
    best = ch.best_masks(rows, 0.1)
    assert {b[1] for b in best} == {2} and all(b[2] == pytest.approx(2.0) for b in best)


def test_gate_information():
    levels = torch.arange(8, dtype=DT)
    assert ch.erasure_information(3.0, 0.25) == 0.75
    # large noise: I ≈ g² var(A) / (2 ln 2 σ²)
    small = ch.gaussian_channel_information(levels, 0.01)
    assert small == pytest.approx(
        0.01**2 * float(levels.var(unbiased=False)) / (2 * math.log(2)), rel=0.01
    )
    # no noise limit: 8 well-separated levels carry about 3 bits
    assert ch.gaussian_channel_information(levels, 50.0) == pytest.approx(3.0, abs=1e-3)


def test_source_002_exact_properties():
    assert ch.permutation_equivariance_error() < 1e-12
    assert_close(ch.causal_positions_from_counting(5), 1 / torch.arange(1, 6, dtype=DT))


# ------------------------------------------------------------------ costs and the widget


def test_the_cost_table_is_complete_and_plausible():
    table = costs.load_table()
    assert set(table) == set(costs.grid())
    plain = costs.series(table, "plain", column=1)
    chunked = costs.series(table, "chunked", column=1)
    assert plain[-1] > 500 and chunked[-1] < 100  # O(n²) vs O(n) at n = 16384
    assert plain[-1] / plain[-3] > 8  # n 4x -> the stored weights 16x
    assert all(ms > 0 for ms, _ in table.values())


def test_plot_costs_draws_each_method_from_the_table():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    axes = costs.plot_costs(["plain", "local"], size=32)
    time_lines = {line.get_label(): line for line in axes[0].get_lines()}
    assert set(time_lines) == {"plain", "local (window 32)", "∝ n²"}
    assert list(time_lines["local (window 32)"].get_ydata()) == costs.series(
        costs.load_table(), "local", 32, 0
    )
    assert list(axes[1].get_lines()[0].get_ydata()) == costs.series(
        costs.load_table(), "plain", 0, 1
    )
    plt.close("all")


def test_the_stage_table_is_complete_and_its_stages_are_the_forward_pass():
    stages = costs.load_stages()
    assert set(stages) == set(costs.LENGTHS)
    names = {"whole forward", "outer", "prefix sum", "read-out", "prefix sum, positions last"}
    assert all(set(row) == names and all(ms > 0 for ms in row.values()) for row in stages.values())
    big = stages[16384]
    assert big["prefix sum"] > 0.5 * big["whole forward"]  # the chapter's reading of the table
    assert big["prefix sum"] > 2 * big["prefix sum, positions last"]


def test_causal_linear_stages_times_the_package_s_steps():
    stages = ch.causal_linear_stages(64, d=8, repeats=1)
    assert set(stages) == {
        "whole forward",
        "outer",
        "prefix sum",
        "read-out",
        "prefix sum, positions last",
    }
    assert all(ms >= 0 for ms in stages.values())


def test_crossover():
    table = {(m, n, 0): (t, 0.0) for n in costs.LENGTHS for m, t in (("a", n), ("b", 1000))}
    assert costs.crossover(table, "b", "a") == 1024  # 1000 < n from n = 1024 on
    assert costs.crossover(table, "a", "b") is None


def test_measure_in_a_fresh_process():
    ms, mb = costs.measure("local", 512, 16)
    assert ms > 0 and 0 <= mb < 50
    assert costs.attention_call("block", 8)(
        *(torch.randn(1, 1, 20, 4) for _ in range(3))
    ).shape == (
        1,
        1,
        20,
        4,
    )
    with pytest.raises(ValueError, match="method must be one of"):
        costs.attention_call("dense", 0)


def test_mask_corner_is_the_pattern_pooled():
    for method in ("local", "strided", "block"):
        for corner, size in ((64, 16), (256, 64), (1024, 256)):
            full = ch.pattern_mask(method, corner, size).double()
            cell = corner // 64
            expected = full[cell // 2 :: cell].reshape(64, 64, cell).mean(-1)
            assert torch.equal(ch.mask_corner(method, corner, size), expected)


def test_widget_numbers():
    s = ch.sparsity_numbers(4096, "strided", 16, 64, 16)
    assert s.size == 64 and s.pairs == ch.pair_count("strided", 4096, 64)
    assert s.reached[1] == 4096 and s.layers_to_all == 2
    assert s.costs["strided"] == costs.load_table()["strided", 4096, 64]
    assert set(s.costs) == {"plain", "chunked", "linear", "strided"}
    assert "strided, stride 64" in ch.sparsity_caption(s)
    with pytest.raises(ValueError, match="one of"):
        ch.sparsity_numbers(1000)
    with pytest.raises(ValueError, match="one of"):
        ch.sparsity_numbers(4096, "local", window=20)
    with pytest.raises(ValueError, match="method"):
        ch.sparsity_numbers(4096, "dense")


def test_widget_update_within_budget():
    plot = ch.SparsityPlot()
    ch.sparsity_widget_update(plot)  # draws the static background
    times = []
    for i in range(30):
        setting = (costs.LENGTHS[i % 7], ("local", "strided", "block")[i % 3], 16, 32, 64)
        start = time.perf_counter()
        numbers, png, caption = ch.sparsity_widget_update(plot, *setting)
        times.append(time.perf_counter() - start)
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and numbers.n == setting[0]
    assert statistics.median(times) < 0.3  # 100 ms on an idle 2-core machine; slack for load


def test_widget_controls_drive_the_figure():
    box = ch.sparsity_widget()
    controls = box.controls
    assert set(controls) == {"n", "method", "window", "stride", "block_size"}
    controls["method"].value = "block"
    controls["block_size"].value = 32
    controls["n"].value = 1024
