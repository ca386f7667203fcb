"""attncourse.chapters.ch05_information_flow (chapter 05): the tasks, models, relay measurements,
attributions, source 002's blocks and the widget, each against an independent computation
(plain loops, autograd, exact formulas) on small inputs; no test trains for long."""

import math
import time

import pytest
import torch
from torch.testing import assert_close

from attncourse.chapters import ch05_information_flow as ch
from attncourse.chapters.ch05_information_flow.source_002_text import SOURCE_BLOCKS
from attncourse.flow import attention_rollout, directional_flow, flow_statistics, reachability
from attncourse.masks import causal_mask

DT = torch.float64


def tiny(causal=False, block="full", layers=2, heads=2, vocab=ch.FILL_VOCAB + 1, length=16):
    torch.manual_seed(0)
    return ch.TinyTransformer(vocab, 16, heads, layers, length, causal=causal, block=block)


# ----------------------------------------------------------------------------------- tasks


def test_palindrome_batches_are_palindromes_with_masks_in_different_mirror_pairs():
    tokens, positions, targets = ch.palindrome_batch(50, torch.Generator().manual_seed(1), masks=3)
    assert tokens.shape == (50, 16) and positions.shape == targets.shape == (50, 3)
    restored = tokens.scatter(1, positions, targets)
    assert torch.equal(restored, restored.flip(1))  # a palindrome once restored
    assert (tokens.gather(1, positions) == ch.MASK).all()
    assert ((tokens == ch.MASK).sum(1) == 3).all()
    pairs = torch.minimum(positions, 15 - positions)
    assert all(len(set(row.tolist())) == 3 for row in pairs)  # never both halves of one pair


def test_induction_batches_follow_the_rule_and_the_loss_floor_is_exact():
    tokens, scored = ch.induction_batch(40, torch.Generator().manual_seed(2))
    assert tokens.shape == (40, 24) and scored.shape == (40, 23)
    first = tokens[:, :8]
    assert all(len(set(row.tolist())) == 8 for row in first)  # distinct
    queries, k = ch.induction_positions(tokens)
    for b in range(40):
        for p, t in enumerate(queries.tolist()):
            assert scored[b, t]
            assert tokens[b, t] == first[b, k[b, p]]  # the query's earlier copy
            assert tokens[b, t + 1] == first[b, k[b, p] + 1]  # "... A B ... A -> B"
    expected = (sum(math.log(16 - t) for t in range(1, 8)) + 8 * math.log(7)) / 23
    assert ch.lm_loss_floor() == pytest.approx(expected, abs=1e-12)


def test_the_loss_floor_matches_the_data_empirically():
    """What the floor assumes about the data: a pair's first token is uniform over r_0..r_6 (ln 7),
    and the first eight tokens are uniform among the unused ones (ln(16 - t))."""
    tokens, _ = ch.induction_batch(20000, torch.Generator().manual_seed(3))
    _, k = ch.induction_positions(tokens)
    freq = torch.bincount(k.flatten(), minlength=7).double() / k.numel()
    assert freq.shape == (7,)
    assert float(-(freq * freq.log()).sum()) == pytest.approx(math.log(7), abs=2e-3)
    counts = torch.bincount(tokens[:, 1], minlength=16).double()
    assert float(counts.std() / counts.mean()) < 0.05  # r_1 uniform over the tokens


# ---------------------------------------------------------------------------------- models


@pytest.mark.parametrize("block", ["full", "attention"])
def test_a_causal_model_never_reads_the_future_and_an_encoder_does(block):
    x, _ = ch.induction_batch(3, torch.Generator().manual_seed(4))
    changed = x.clone()
    changed[:, 10:] = (changed[:, 10:] + 3) % 16
    for causal in (True, False):
        model = tiny(causal=causal, block=block, vocab=16, length=24)
        with torch.no_grad():
            before, weights = model(x)
            after, _ = model(changed)
        assert len(weights) == 2 and weights[0].shape == (3, 2, 24, 24)
        assert torch.equal(before[:, :10], after[:, :10]) == causal
        if causal:
            assert torch.equal(directional_flow(weights[0]).backward, torch.zeros(3, 2))


def test_an_extra_mask_applies_to_every_layer():
    model = tiny()
    tokens, _, _ = ch.palindrome_batch(2, torch.Generator().manual_seed(5))
    with torch.no_grad():
        _, weights = model(tokens, mask=ch.chapter_mask("block", 16))
    for w in weights:
        assert (w[..., ~ch.chapter_mask("block", 16)] == 0).all()


def test_attention_only_override_uses_the_given_weights():
    model = tiny(causal=True, block="attention", vocab=16, length=24)
    x, _ = ch.induction_batch(2, torch.Generator().manual_seed(6))
    eye = torch.eye(24).expand(2, 2, 24, 24)
    with torch.no_grad():
        logits, weights = model(x, override={0: eye})
    assert torch.equal(weights[0], eye)
    # reading only yourself in layer 1 = a layer 1 whose attention output is out_proj(v(LN(x)))
    block = model.blocks[0]
    with torch.no_grad():
        e = model.embed(x)
        expected = e + block.attn.out_proj(block.attn.v_proj(block.norm(e)))
        second, _ = model.blocks[1](expected, causal=True)
        assert_close(logits, model.head(model.norm(second)))


def test_training_reduces_the_loss_and_shows_no_bar_when_asked():
    model = tiny(vocab=ch.FILL_VOCAB + 1)
    losses = ch.train(model, ch.palindrome_batch, ch.fill_loss, 30, lr=1e-2, progress=False)
    assert len(losses) == 30 and sum(losses[-5:]) < sum(losses[:5])


# --------------------------------------------------------------------------- measurements


def test_fill_and_induction_accuracies_against_direct_counts():
    model = tiny(vocab=ch.FILL_VOCAB + 1)
    acc = ch.fill_accuracy(model, samples=200, seed=3)
    tokens, positions, targets = ch.palindrome_batch(200, torch.Generator().manual_seed(3), masks=1)
    with torch.no_grad():
        logits, _ = model(tokens)
    pred = logits[torch.arange(200), positions[:, 0]].argmax(-1)
    left = positions[:, 0] < 8
    correct = (pred == targets[:, 0]).double()
    assert acc["left"] == pytest.approx(float(correct[left].mean()))
    assert acc["right"] == pytest.approx(float(correct[~left].mean()))
    decoder = tiny(causal=True, block="attention", vocab=16, length=24, heads=1)
    forced = ch.induction_accuracy(decoder, samples=100, seed=4)
    generating = ch.generation_accuracy(decoder, samples=100, seed=4)
    assert forced == pytest.approx(generating, abs=0.02)  # causal: the same predictions


def test_relay_scores_read_the_weights_they_name():
    decoder = tiny(causal=True, block="attention", vocab=16, length=24, heads=1)
    scores = ch.relay_scores(decoder, samples=20, seed=8)
    tokens, _ = ch.induction_batch(20, torch.Generator().manual_seed(8))
    with torch.no_grad():
        _, (w1, w2) = decoder(tokens[:, :-1])
    prev = sum(float(w1[b, 0, i, i - 1]) for b in range(20) for i in range(1, 8)) / (20 * 7)
    assert scores["previous_token"][0] == pytest.approx(prev, rel=1e-5)
    queries, k = ch.induction_positions(tokens)
    ind = sum(
        float(w2[b, 0, t, k[b, p] + 1]) for b in range(20) for p, t in enumerate(queries.tolist())
    ) / (20 * len(queries))
    assert scores["induction"][0] == pytest.approx(ind, rel=1e-5)
    assert scores["previous_token_uniform"] == pytest.approx(
        sum(1 / (i + 1) for i in range(1, 8)) / 7
    )


def test_layer_one_patterns_are_the_named_distributions():
    patterns = ch.layer_one_patterns(6, 2)
    for p in patterns.values():
        assert p.shape == (1, 2, 6, 6)
        assert_close(p.sum(-1), torch.ones(1, 2, 6))
        assert (p[..., ~causal_mask(6)] == 0).all()
    assert torch.equal(patterns["itself"][0, 0], torch.eye(6))
    assert (
        patterns["previous token"][0, 0, 3, 2] == 1 and patterns["previous token"][0, 0, 0, 0] == 1
    )


def test_average_ranks_and_spearman_against_the_textbook_formula():
    g = torch.Generator().manual_seed(9)
    a, b = torch.randn(5, 12, generator=g, dtype=DT), torch.randn(5, 12, generator=g, dtype=DT)
    d = ch.average_ranks(a) - ch.average_ranks(b)
    n = 12
    textbook = 1 - 6 * (d**2).sum(-1) / (n * (n * n - 1))  # no ties
    assert_close(ch.spearman(a, b), textbook)
    assert ch.average_ranks(torch.tensor([3.0, 1.0, 3.0, 2.0])).tolist() == [3.5, 1.0, 3.5, 2.0]
    assert ch.spearman(a, a).tolist() == pytest.approx([1.0] * 5)


def test_gradient_attribution_is_the_autograd_gradient_norm_and_blank_out_counts_drops():
    model = tiny(vocab=ch.FILL_VOCAB + 1)
    tokens, positions, _ = ch.palindrome_batch(3, torch.Generator().manual_seed(10), masks=1)
    positions = positions[:, 0]
    grads, predicted = ch.gradient_attribution(model, tokens, positions)
    for b in range(3):
        e = model.embed(tokens[b : b + 1]).detach().requires_grad_(True)
        logits, _ = model.forward_embedded(e)
        log_p = torch.log_softmax(logits[0, positions[b]], -1)
        assert int(log_p.argmax()) == int(predicted[b])
        (g,) = torch.autograd.grad(log_p[predicted[b]], e)
        assert_close(grads[b], g[0].norm(dim=-1))
    drops = ch.blank_out_attribution(model, tokens, positions, predicted)
    assert drops.shape == (3, 16)
    assert (drops[torch.arange(3), positions] == 0).all()  # blanking the mask changes nothing


def test_attention_explanations_are_rows_of_the_flow_tools():
    model = tiny(vocab=ch.FILL_VOCAB + 1)
    tokens, positions, _ = ch.palindrome_batch(2, torch.Generator().manual_seed(11), masks=1)
    positions = positions[:, 0]
    rows = ch.attention_explanations(model, tokens, positions)
    with torch.no_grad():
        _, weights = model(tokens)
    r = torch.arange(2)
    assert_close(rows["raw L2"], weights[1].mean(1)[r, positions].double())
    assert_close(rows["rollout"], attention_rollout(weights)[r, positions].double())
    assert (rows["flow"] <= 1 + 1e-9).all() and rows["flow"].shape == (2, 16)
    summary = ch.compare_explanations(model, samples=4, seed=1)
    assert set(summary) >= {"raw L1", "raw L2", "rollout", "flow", "_blank_top_is_mirror"}


# ------------------------------------------------------------------------------- graphs


def test_chapter_masks_and_the_reach_table():
    cross = ch.cross_mask(8)
    assert cross[:, :4].all() and not cross[:, 4:].any()
    log_sparse = ch.log_sparse_mask(9)
    assert log_sparse[8].nonzero().flatten().tolist() == [0, 4, 6, 7, 8]  # 8 back, 4, 2, 1, itself
    table = ch.reach_table(16)
    assert set(table) == set(ch.MASK_KINDS)
    for kind, row in table.items():
        mask = ch.chapter_mask(kind, 16)
        assert row["edges_per_query"] == pytest.approx(float(mask.sum()) / 16)
        assert row["reach"][2] == pytest.approx(float(reachability(mask, 2).double().mean()))
    with pytest.raises(ValueError, match="kind"):
        ch.chapter_mask("diagonal")


def test_dense_masks_reach_all_they_ever_will_in_one_layer_and_sparse_ones_need_depth():
    """What section 1 teaches from the reach table: depth adds nothing to a dense (or block) mask's
    reach; a local window of 2 grows by up to 2 positions per side per layer until layer 8; the
    strided pattern is complete after 2 layers."""
    T = 16
    for kind in ch.MASK_KINDS:
        mask = ch.chapter_mask(kind, T)
        reach = [reachability(mask, L) for L in range(1, T + 1)]
        final = reach[-1]
        first_complete = next(L for L, r in enumerate(reach, start=1) if torch.equal(r, final))
        expected = {"local": 8, "strided": 2}.get(kind, 1)
        assert first_complete == expected, kind
        assert ch.reach_table(T)[kind]["depth"] == expected
    local = ch.chapter_mask("local", T)
    assert [int(reachability(local, L)[4].sum()) for L in (1, 2, 3)] == [5, 9, 11]
    assert [int(reachability(local, L)[8].sum()) for L in (1, 2, 3)] == [5, 9, 13]


def test_encoder_decoder_reachability_matches_a_layer_by_layer_simulation():
    # simulate with explicit dependency sets
    S, T = 4, 3
    R = ch.encoder_decoder_reachability(S, T, encoder_layers=1, decoder_layers=2)
    enc = [set(range(S)) for _ in range(S)]  # one bidirectional layer: every encoder input
    dec = [{S + i} for i in range(T)]
    for _ in range(2):
        dec = [set().union(*(dec[k] for k in range(i + 1))) | set().union(*enc) for i in range(T)]
    expected = torch.tensor([[j in dec[i] for j in range(S + T)] for i in range(T)])
    assert torch.equal(R, expected)


def test_sparse_pair_counts_are_mask_sums():
    counts = ch.sparse_pair_counts((64, 256))
    assert counts["counts"]["dense"] == [64 * 64, 256 * 256]
    assert counts["counts"]["LogSparse"][0] == int(ch.log_sparse_mask(64).sum())
    assert counts["exponents"]["dense"] == pytest.approx(2.0)


def test_the_timing_helpers_return_positive_milliseconds():
    times = ch.masked_attention_times(n=64, d=8, repeats=1)
    assert set(times) == {"none", "strided", "local"} and min(times.values()) > 0
    steps = ch.training_step_times(length=16, d=8, batch=2, repeats=1)
    assert set(steps) == {"RNN", "attention"} and min(steps.values()) > 0


# ----------------------------------------------------------------------------- source 002


def test_the_source_blocks_are_all_there_and_fail_as_the_notebook_says():
    assert len(SOURCE_BLOCKS) == 16 and set(ch.SECTIONS) == set(SOURCE_BLOCKS)
    run = ch.run_source_block(
        "bidirectional_attention", lambda ns: ns["bidirectional_attention"](["a"])
    )
    assert not run.ok and run.error == "NameError: name 'zeros' is not defined"
    run = ch.run_source_block(
        "compute_attention_weights",
        lambda ns: ns["compute_attention_weights"](*[torch.randn(1, 3, 4)] * 3),
        extra={"torch": torch, "math": math},
    )
    assert run.ok and run.printed.count("\n") == 9


def test_the_source_statistics_with_the_missing_entropy_equal_the_package():
    A = torch.softmax(torch.randn(5, 5, dtype=DT), -1)
    run = ch.run_source_block(
        "analyze_flow_statistics",
        lambda ns: ns["analyze_flow_statistics"](A),
        extra={"calculate_attention_entropy": ch.source_entropy},
    )
    stats = flow_statistics(A)
    assert float(run.result["前向信息流"]) == pytest.approx(float(stats.forward))
    assert float(run.result["后向信息流"]) == pytest.approx(float(stats.backward))
    assert float(run.result["注意力分布熵"]) == pytest.approx(float(stats.entropy))


def test_the_seaborn_stand_in_draws_on_cell_edges_and_restores_the_module():
    import sys

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    before = sys.modules.get("seaborn")
    with ch.seaborn_stand_in():
        import seaborn

        ax = seaborn.heatmap([[0.1, 0.9], [0.5, 0.5]], xticklabels=["a", "b"], annot=True)
        assert ax.get_xlim() == (0.0, 2.0) and ax.get_ylim() == (2.0, 0.0)
    assert sys.modules.get("seaborn") is before
    plt.close("all")


# ---------------------------------------------------------------------------------- widget


def test_widget_views_and_update_within_budget():
    import matplotlib

    matplotlib.use("Agg")
    model = tiny(layers=3, vocab=ch.FILL_VOCAB + 1)
    tokens, _, _ = ch.palindrome_batch(1, torch.Generator().manual_seed(9), masks=1)
    views = ch.flow_views(model, tokens)
    assert set(views) == set(ch.MASK_KINDS)
    view = ch.flow_view(views, "causal", 2, "mean", 5)
    assert view.shares[1] == 0  # a causal head has no backward flow
    assert view.reachable == 6  # positions 0..5
    roll = attention_rollout([torch.from_numpy(w[None]) for w in views["causal"]["weights"][:2]])
    assert_close(torch.from_numpy(view.rollout), roll[0, 5])
    head = ch.flow_view(views, "bidirectional", 1, "2", 0)
    assert_close(
        torch.from_numpy(head.weights), torch.from_numpy(views["bidirectional"]["weights"][0, 1])
    )
    with pytest.raises(ValueError, match="layer"):
        ch.flow_view(views, "causal", 4, "mean", 0)
    plot = ch.FlowPlot(16)
    ch.flow_widget_update(plot, views, "local", 1, "mean", 3)
    times = []
    for step in range(10):
        start = time.perf_counter()
        _, png, caption = ch.flow_widget_update(
            plot, views, ch.MASK_KINDS[step % 6], 1 + step % 3, "1", step
        )
        times.append(time.perf_counter() - start)
    assert png[:4] == b"\x89PNG" and "query 9" in caption
    assert sorted(times)[len(times) // 2] < 0.5  # generous: the budget is 0.1 s on a quiet machine
    box = ch.flow_widget(model, tokens, query=2)
    box.controls["kind"].value = "block"
    box.controls["layer"].value = 3
    assert "block mask, layer 3" in box.children[-2].value
