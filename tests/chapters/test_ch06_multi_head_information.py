"""attncourse.chapters.ch06_multi_head_information (chapter 06): every quantity against an
independent computation — PyTorch's own attention and autograd, the chain rule written out,
exact tables, closed forms — plus the reproduction of Michel et al. 2019 and the widget."""

import itertools
import math

import pytest
import torch
from torch import nn
from torch.testing import assert_close

from attncourse.attention import MultiHeadAttention
from attncourse.chapters import ch06_multi_head_information as mh
from attncourse.guard import forbidden_builtins
from attncourse.losses import cross_entropy
from attncourse.metrics import co_information, entropy, mutual_information

DT = torch.float64


def g(seed):
    return torch.Generator().manual_seed(seed)


# ------------------------------------------------------------------ gated multi-head attention


def test_gated_attention_with_open_gates_is_torch_multihead_attention_forward_and_backward():
    torch.manual_seed(0)
    ref = nn.MultiheadAttention(12, 3, batch_first=True).double()
    gated = mh.gated_copy(MultiHeadAttention.from_torch(ref))
    x = torch.randn(2, 5, 12, dtype=DT, requires_grad=True)
    x_ref = x.detach().clone().requires_grad_(True)
    out, weights, _ = gated(x)
    out_ref, weights_ref = ref(x_ref, x_ref, x_ref, average_attn_weights=False)
    assert_close(out, out_ref)
    assert_close(weights, weights_ref)
    out.square().sum().backward()
    out_ref.square().sum().backward()
    assert_close(x.grad, x_ref.grad)


def test_a_closed_gate_removes_exactly_that_head_s_term():
    mha = MultiHeadAttention(12, 4).double()
    x = torch.randn(3, 6, 12, dtype=DT, generator=g(1))
    terms = mh.head_contributions(mha, x)  # (3, 4, 6, 12)
    assert_close(terms.sum(1) + mha.out_proj.bias, mha(x)[0])
    gated = mh.gated_copy(mha)
    gates = torch.tensor([[1.0, 0.0, 1.0, 0.5]] * 3, dtype=DT)  # per example (B, H)
    expected = mha(x)[0] - terms[:, 1] - 0.5 * terms[:, 3]
    assert_close(gated(x, gates)[0], expected)


def test_gated_attention_and_the_encoder_run_without_the_builtins():
    gated = mh.GatedMultiHeadAttention(8, 2)
    model = mh.chapter_model(0)
    x = torch.randn(2, 4, 8, requires_grad=True)
    tokens, target = mh.sort_batch(3, g(0))
    with forbidden_builtins():
        gated(x, torch.ones(2))[0].sum().backward()
        cross_entropy(model(tokens), target).backward()
    assert torch.isfinite(x.grad).all()


def test_gated_attention_rejects_a_bad_head_count():
    with pytest.raises(ValueError, match="divisible"):
        mh.GatedMultiHeadAttention(10, 3)


def test_encoder_head_mask_of_ones_is_no_mask_and_shapes_are_kept():
    model = mh.chapter_model(1).eval()
    tokens, _ = mh.sort_batch(4, g(2))
    assert_close(model(tokens, torch.ones(2, 16)), model(tokens))
    assert len(model.weights) == 2 and model.weights[0].shape == (4, 16, 8, 8)
    assert model.head_outputs[1].shape == (4, 16, 8, 4)


# ------------------------------------------------------------------ importance and pruning


def test_michel_importance_is_the_mean_absolute_per_example_gradient():
    model = mh.chapter_model(0).double().eval()
    x, y = mh.sort_batch(5, g(3))
    fast = mh.michel_importance(model, x, y, normalise=False)  # one backward pass
    per_example = []
    for b in range(5):  # one backward pass per example, the definition
        gates = torch.ones(2, 16, dtype=DT, requires_grad=True)
        loss = cross_entropy(model(x[b : b + 1], gates), y[b : b + 1])
        (grad,) = torch.autograd.grad(loss, gates)
        per_example.append(grad.abs())
    assert_close(fast, torch.stack(per_example).mean(0))
    normalised = mh.michel_importance(model, x, y)
    assert_close(normalised.norm(dim=1), torch.ones(2, dtype=DT))


def test_pruning_curve_and_ablation_scores_agree_with_direct_evaluation():
    model = mh.chapter_model(2).eval()
    x, y = mh.sort_batch(32, g(4))
    order = [5, 17, 0, 31]
    acc, loss = mh.pruning_curve(model, order, x, y)
    mask = torch.ones(32)
    mask[[5, 17]] = 0
    assert (acc[2], loss[2]) == pytest.approx(mh.evaluate(model, x, y, mask.view(2, 16)))
    assert (acc[0], loss[0]) == pytest.approx(mh.evaluate(model, x, y))
    ablation = mh.ablation_scores(model, x, y)
    assert ablation.shape == (2, 16)
    one_off = torch.ones(32)
    one_off[20] = 0
    expected = mh.evaluate(model, x, y, one_off.view(2, 16))[1] - mh.evaluate(model, x, y)[1]
    assert ablation.flatten()[20].item() == pytest.approx(expected, abs=1e-6)  # nats


def test_information_scores_are_symmetric_and_net_is_direct_minus_overlaps():
    model = mh.chapter_model(0).eval()
    x, y = mh.sort_batch(64, g(5))
    scores = mh.information_scores(model, x, y, num_cells=8)
    assert_close(scores.pairs, scores.pairs.T)
    assert (scores.pairs.diagonal() == 0).all() and (scores.direct >= 0).all()
    assert_close(scores.net, scores.direct - scores.pairs.sum(1))
    assert float(scores.direct.max()) <= math.log2(8) + 0.2  # I(Z_h; Y) <= H(Y) (+ correction)


def test_order_by_puts_the_smallest_score_first():
    assert mh.order_by(torch.tensor([[0.3, 0.1], [0.2, 0.4]])) == [1, 2, 0, 3]


def test_prune_all_scores_orders_and_curves_every_head():
    """What ``prune_all`` returns, on an untrained model (the notebook trains two seeds and
    asserts the effect on both: Michel et al.'s order and ablation far above random, the
    net-information order not)."""
    model = mh.chapter_model(0)
    result = mh.prune_all(model, mh.sort_batch(16, g(7)), mh.sort_batch(16, g(8)), num_random=3)
    assert list(result.orders) == [mh.MICHEL, mh.ABLATION, mh.NET_INFORMATION]
    assert result.orders[mh.MICHEL] == mh.order_by(result.importance)
    assert result.orders[mh.ABLATION] == mh.order_by(result.ablation)
    assert result.orders[mh.NET_INFORMATION] == mh.order_by(result.information.net)
    assert all(sorted(order) == list(range(32)) for order in result.orders.values())
    assert result.random_accuracy.shape == (3, 33)
    assert_close(result.accuracy["random"], result.random_accuracy.mean(0))
    for name, order in result.orders.items():  # each curve removes its order's heads in turn
        acc, loss = mh.pruning_curve(model, order, *mh.sort_batch(16, g(8)))
        assert_close(result.accuracy[name], acc)
        assert_close(result.loss[name], loss)


# ------------------------------------------------------------------ estimators


def test_plugin_information_approaches_the_exact_value_and_the_correction_helps():
    table = torch.rand(4, 5, dtype=DT, generator=g(6)) ** 3
    table /= table.sum()
    exact = mutual_information(table, 0, 1)
    draws = mh.sample_joint(table, 200000, seed=1)
    assert mh.plugin_mutual_information(draws[:, 0], draws[:, 1]) == pytest.approx(exact, abs=3e-3)
    few = [mh.sample_joint(table, 300, seed=s) for s in range(20)]
    raw = sum(mh.plugin_mutual_information(d[:, 0], d[:, 1], correct=False) for d in few) / 20
    corrected = sum(mh.plugin_mutual_information(d[:, 0], d[:, 1]) for d in few) / 20
    assert abs(corrected - exact) < abs(raw - exact)  # Miller–Madow removes most of the bias


def test_sample_joint_follows_the_table():
    table = torch.tensor([[0.1, 0.2], [0.3, 0.4]], dtype=DT)
    draws = mh.sample_joint(table, 100000, seed=0)
    counts = torch.zeros(2, 2, dtype=DT)
    counts.index_put_((draws[:, 0], draws[:, 1]), torch.ones(100000, dtype=DT), accumulate=True)
    assert_close(counts / 100000, table, atol=5e-3, rtol=0)


def test_kmeans_codes_find_separated_clusters():
    labels = torch.randint(5, (500,), generator=g(7))
    centres = 10 * torch.randn(5, 3, generator=g(8))
    points = centres[labels] + 0.01 * torch.randn(500, 3, generator=g(9))
    codes = mh.kmeans_codes(points, num_cells=5)
    assert mh.plugin_mutual_information(codes, labels, correct=False) == pytest.approx(
        entropy(torch.bincount(labels).double() / 500), abs=1e-9
    )
    assert torch.equal(codes, mh.kmeans_codes(points, num_cells=5))  # deterministic


# ------------------------------------------------------------------ exact information (toys)


def random_table(*shape, seed=0):
    t = torch.rand(*shape, dtype=DT, generator=g(seed))
    return t / t.sum()


def as_joint(table, names):
    return mh.JointTable(table, names, [list(range(s)) for s in table.shape])


def test_joint_table_enumerates_weighted_inputs():
    jt = mh.joint_table(
        mh.bits(2), {"a": lambda x: x[0], "s": lambda x: x[0] + x[1]}, weights=lambda x: 1 + x[1]
    )
    assert jt.values == ([0, 1], [0, 1, 2])
    assert_close(jt.table, torch.tensor([[1 / 6, 2 / 6, 0], [0, 1 / 6, 2 / 6]], dtype=DT))
    with pytest.raises(ValueError, match="no variable"):
        jt.dim("b")


@pytest.mark.parametrize("seed", range(3))
def test_chain_rule_contributions_add_up_and_complementarity_is_co_information(seed):
    jt = as_joint(random_table(2, 3, 2, 4, seed=seed), ("Z1", "Z2", "Z3", "Y"))
    heads = ["Z1", "Z2", "Z3"]
    assert sum(mh.marginal_contributions(jt, heads, "Y", printed=False)) == pytest.approx(
        mh.information(jt, heads, "Y"), abs=1e-12
    )
    t = jt.table.sum(2)  # (Z1, Z2, Y)
    two = as_joint(t, ("Z1", "Z2", "Y"))
    assert mh.complementarity(two, "Z1", "Z2", "Y") == pytest.approx(
        co_information(t, 0, 1, 2), abs=1e-12
    )
    # with each pair once, Eq. (14.3.11) is the two-head chain rule; as printed it counts it twice
    assert mh.pairwise_co_information_formula(two, ["Z1", "Z2"], "Y") == pytest.approx(
        mh.information(two, ["Z1", "Z2"], "Y"), abs=1e-12
    )
    assert mh.eq_14_3_11(two, ["Z1", "Z2"], "Y") == pytest.approx(
        mh.information(two, ["Z1", "Z2"], "Y") - co_information(t, 0, 1, 2), abs=1e-12
    )
    # Eq. (14.3.25) with the pair once is a lower bound for two heads
    assert (
        mh.eq_14_3_25(two, ["Z1", "Z2"], "Y", ordered=False)
        <= mh.information(two, ["Z1", "Z2"], "Y") + 1e-12
    )


@pytest.mark.parametrize("seed", range(3))
def test_eq_14_3_21_is_the_total_correlation(seed):
    jt = as_joint(random_table(3, 2, 4, seed=seed), ("Q", "K", "V"))
    tc = sum(entropy(jt.table, d) for d in range(3)) - entropy(jt.table)
    assert mh.eq_14_3_21(jt, "Q", "K", "V") == pytest.approx(tc, abs=1e-12)
    assert mh.total_correlation(jt, ["Q", "K", "V"]) == pytest.approx(tc, abs=1e-12)


def test_xor_is_synergy_and_the_printed_formulas_miss_it():
    jt = mh.joint_table(
        mh.bits(2), {"Z1": lambda x: x[0], "Z2": lambda x: x[1], "Y": lambda x: x[0] ^ x[1]}
    )
    assert mh.information(jt, ["Z1", "Z2"], "Y") == 1.0
    assert mh.eq_14_3_11(jt, ["Z1", "Z2"], "Y") == 2.0
    assert mh.eq_14_3_25(jt, ["Z1", "Z2"], "Y") == 0.0
    assert mh.complementarity(jt, "Z1", "Z2", "Y") == -1.0
    assert mh.marginal_contributions(jt, ["Z1", "Z2"], "Y") == [0.0, 0.0]
    assert mh.marginal_contributions(jt, ["Z1", "Z2"], "Y", printed=False) == [0.0, 1.0]


def test_pattern_redundancy_scores_identical_heads_zero():
    seqs = list(itertools.product(range(3), repeat=3))
    jt = mh.joint_table(
        seqs,
        {
            "a": lambda x: x.index(max(x)),
            "b": lambda x: x.index(max(x)),
            "c": lambda x: x.index(min(x)),
        },
    )
    assert mh.eq_14_3_12(jt, ["a", "b"]) == 0.0
    assert mh.eq_14_3_12(jt, ["a", "c"]) > 0
    h_a = entropy(jt.table, jt.dim("a"))
    assert mh.mean_pattern_information(jt, ["a", "b"]) == pytest.approx(2 * h_a / 4)


def test_one_shot_net_contribution_prunes_both_copies_and_recomputing_does_not():
    jt = mh.joint_table(
        mh.bits(3),
        {
            "A": lambda x: x[0],
            "B": lambda x: x[0],
            "D": lambda x: x[1],
            "Y": lambda x: (x[0], x[1] ^ x[2]),
        },
        weights=lambda x: 0.3 if x[2] else 0.7,
    )
    net = mh.net_contributions(jt, ["A", "B", "D"], "Y")
    assert net["A"] == net["B"] == 0.0
    assert net["D"] == pytest.approx(1 + 0.3 * math.log2(0.3) + 0.7 * math.log2(0.7))
    assert mh.prune_by_net_contribution(jt, ["A", "B", "D"], "Y", 2) == ["A", "B"]
    assert mh.prune_by_net_contribution(jt, ["A", "B", "D"], "Y", 2, recompute=True) == ["A", "D"]
    assert mh.best_heads_to_keep(jt, ["A", "B", "D"], "Y", 1) == (["A"], 1.0)


def test_alg_14_3_1_as_printed_scores_only_the_last_head_and_fails_on_a_ratio():
    jt = mh.joint_table(
        mh.bits(2), {"A": lambda x: x[0], "B": lambda x: x[0], "Y": lambda x: x[0] ^ x[1]}
    )
    with pytest.raises(TypeError):
        mh.alg_14_3_1_as_printed(["A", "B"], jt, "Y", low_score_ratio=0.5)
    candidates, scores = mh.alg_14_3_1_as_printed(["A", "B"], jt, "Y", low_score_ratio=1)
    assert list(scores) == ["B"] and candidates == []
    assert scores["B"] == pytest.approx(-1.0, abs=1e-12)  # 0 direct + 0 marginal - 1 redundancy


def test_alg_14_3_1_repaired_scores_every_head_and_prunes_a_share():
    jt = mh.joint_table(
        mh.bits(3),
        {
            "A": lambda x: x[0],
            "B": lambda x: x[0],
            "D": lambda x: x[1],
            "Y": lambda x: (x[0], x[1] ^ x[2]),
        },
        weights=lambda x: 0.3 if x[2] else 0.7,
    )
    d_bits = 1 + 0.3 * math.log2(0.3) + 0.7 * math.log2(0.7)
    candidates, scores = mh.alg_14_3_1_repaired(["A", "B", "D"], jt, "Y", prune_ratio=2 / 3)
    assert candidates == ["A", "B"]  # the copies: direct 1 + marginal 0 - redundancy 1 = 0
    assert scores == pytest.approx({"A": 0.0, "B": 0.0, "D": 2 * d_bits}, abs=1e-12)
    only_direct, _ = mh.alg_14_3_1_repaired(["A", "B", "D"], jt, "Y", 1 / 3, lam=(1, 0, 0))
    assert only_direct == ["D"]


def test_argmax_and_argmin_positions_take_the_first_of_ties():
    assert mh.argmax_position((1, 3, 0, 3)) == 1 and mh.argmin_position((1, 3, 0, 0)) == 2
    assert mh.argmax_position((2, 2)) == 0 and mh.argmin_position((2, 2)) == 0


def test_only_the_corners_of_a_key_grid_win_an_arg_max():
    keys = mh.grid_keys(3, 2)
    won = mh.argmax_selectable_keys(keys)
    corners = ((keys == 0) | (keys == 2)).all(1)
    assert torch.equal(won, corners)
    angles = torch.arange(12, dtype=DT) * 2 * math.pi / 12
    assert mh.argmax_selectable_keys(torch.stack([angles.cos(), angles.sin()], 1)).all()


def test_binned_self_information_is_log2_of_the_bins():
    for k in (10, 100, 1000):
        assert mh.binned_self_information(100000, k) == pytest.approx(math.log2(k), abs=1e-12)


# ------------------------------------------------------------------ subspaces and ranks


def test_two_heads_copy_both_neighbours_and_one_head_cannot_beat_the_bound():
    x = torch.randn(128, 6, 3, dtype=DT, generator=g(10))
    target = mh.neighbour_targets(x)
    assert_close(target[:, 2], torch.cat([x[:, 1], x[:, 3]], -1))
    assert_close(target[:, 0, :3], x[:, -1])  # circular
    assert mh.relative_error(mh.two_head_copy(x), target) < 1e-20
    bound = mh.one_head_error_bound(target, 3)
    assert 0.4 < bound < 0.5
    head = mh.train_one_head(x, steps=60, d_k=8)
    assert mh.relative_error(head(x).detach(), target) >= bound - 1e-9


@pytest.mark.parametrize("rank", [1, 2, 4])
def test_a_pattern_needs_exactly_the_rank_of_its_centred_log(rank):
    A, B = torch.randn(7, rank, dtype=DT, generator=g(rank)), torch.randn(7, rank, dtype=DT)
    shift = torch.randn(7, 1, dtype=DT)
    P = torch.softmax(A @ B.T + shift, dim=-1)  # a row shift does not count
    assert mh.pattern_rank(P) == rank
    Q, K = mh.head_for_pattern(P, rank)
    assert_close(mh.pattern_of(Q, K), P)
    if rank > 1:
        Q, K = mh.head_for_pattern(P, rank - 1)
        assert (mh.pattern_of(Q, K) - P).abs().max() > 1e-6
    assert mh.pattern_rank(mh.random_pattern(6, seed=rank)) == 5
    assert mh.pattern_rank(torch.full((4, 4), 0.25, dtype=DT)) == 0


# ------------------------------------------------------------------ regularisers


def printed_diversity_loss(attention_weights):  # source App. 14.3.5, as printed
    entropy_per_head = []
    for h in range(attention_weights.shape[1]):
        alpha = attention_weights[:, h, :, :]
        alpha = alpha + 1e-8
        alpha = alpha / alpha.sum(dim=-1, keepdim=True)
        entropy = -torch.sum(alpha * torch.log(alpha), dim=(-1, -2))
        entropy_per_head.append(entropy)
    entropy_tensor = torch.stack(entropy_per_head, dim=1)
    return torch.var(entropy_tensor, dim=1).mean()


def test_diversity_loss_is_the_printed_code_and_is_blind_to_where_heads_look():
    w = torch.softmax(torch.randn(3, 4, 5, 6, dtype=DT, generator=g(11)), -1)
    assert_close(mh.diversity_attention_loss(w), printed_diversity_loss(w))
    same = w[:, :1].expand(-1, 4, -1, -1)
    rolled = torch.stack([w[:, 0].roll(k, dims=-1) for k in range(4)], 1)
    assert float(mh.diversity_attention_loss(same)) < 1e-12
    assert float(mh.diversity_attention_loss(rolled)) < 1e-12
    assert float(mh.overlap_loss(same)) > float(mh.overlap_loss(rolled))


def test_overlap_loss_is_one_for_identical_one_hot_heads_and_zero_for_disjoint_ones():
    one_hot = torch.eye(4, dtype=DT)[None, :, None, :].expand(2, 4, 3, 4)  # head h reads key h
    assert float(mh.overlap_loss(one_hot)) == 0.0
    identical = torch.eye(4, dtype=DT)[None, :1, None, :].expand(2, 4, 3, 4)
    assert float(mh.overlap_loss(identical)) == 1.0


def test_descending_the_losses_does_what_the_chapter_says():
    scores = 1.5 * torch.randn(2, 4, 6, 6, dtype=DT, generator=g(3))
    start, equalised = mh.descend(scores, mh.diversity_attention_loss, steps=200, lr=0.5)
    assert float(mh.head_entropies(equalised).std()) < 0.1 * float(mh.head_entropies(start).std())
    _, sharp = mh.descend(scores, mh.entropy_loss, steps=200, lr=10.0)
    assert float(mh.entropy_loss(sharp)) < 0.5 * float(mh.entropy_loss(start))
    _, flat = mh.descend(scores, mh.entropy_loss, steps=200, lr=10.0, sign=-1.0)
    assert float(mh.entropy_loss(flat)) > 0.95 * math.log(6)


# ------------------------------------------------------------------ training


def test_training_reduces_the_loss():
    model = mh.chapter_model(3)
    losses = mh.train_model(model, steps=40, seed=3, progress=False)
    assert sum(losses[-5:]) / 5 < sum(losses[:5]) / 5 - 0.1
    x, y = mh.sort_batch(8, g(0))
    assert torch.equal(y, x.sort(dim=1).values)


# ------------------------------------------------------------------ widget


def test_head_mask_combines_toggles_and_an_order():
    mask = mh.head_mask(2, 4, removed=[(1, 2)], order=[0, 5, 7], k=2)
    assert mask.tolist() == [[0, 1, 1, 1], [1, 0, 0, 1]]


def test_widget_state_and_update_match_the_model_and_return_a_png():
    model = mh.chapter_model(0).eval()
    data = mh.sort_batch(16, g(12))
    mask = mh.head_mask(2, 16, removed=[(0, 3), (1, 7)])
    state = mh.head_mask_state(model, *data, mask)
    assert (state.accuracy, state.loss) == pytest.approx(mh.evaluate(model, *data, mask))
    assert state.patterns.shape == (2, 16, 8, 8) and torch.equal(state.tokens, data[0][0])
    curves = {"Michel et al.": torch.linspace(1, 0, 33), "random": torch.linspace(1, 0.1, 33)}
    plot = mh.HeadMaskPlot(2, 16, 8, curves)
    state, png, caption = mh.head_mask_widget_update(
        plot, model, data, removed=[(0, 3)], order=[1, 2], k=2
    )
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and "3 of 32 heads removed" in caption
    xs, _ = plot._crosses.get_data()
    assert len(xs) == 3 * 6  # two strokes (and their breaks) per removed head


def test_pattern_mosaic_places_each_head_in_its_tile():
    patterns = torch.arange(2 * 3 * 2 * 2, dtype=DT).view(2, 3, 2, 2)
    mask = torch.ones(2, 3)
    mask[1, 2] = 0
    mosaic = mh.pattern_mosaic(patterns, mask, faded=0.5)
    assert mosaic.shape == (5, 8)
    assert_close(mosaic[0:2, 3:5], patterns[0, 1])
    assert_close(mosaic[3:5, 6:8], 0.5 * patterns[1, 2])
    assert torch.isnan(mosaic[2]).all() and torch.isnan(mosaic[:, 2]).all()


def test_widget_toggles_redraw():
    model = mh.chapter_model(0).eval()
    data = mh.sort_batch(8, g(13))
    curves = {"random": torch.linspace(1, 0, 33)}
    box = mh.head_mask_widget(model, data, curves, {"random": list(range(32))})
    assert box.controls["L0H3"].description == "1.4"  # labels count layers and heads from 1
    assert box.controls["L1H15"].description == "2.16"
    readout = box.children[-2]
    before = readout.value
    box.controls["L0H3"].value = False
    assert "1 of 32 heads removed" in readout.value and readout.value != before
    box.controls["k"].value = 5
    assert "5 of 32 heads removed" in readout.value  # heads 0-4, head 3 already off
